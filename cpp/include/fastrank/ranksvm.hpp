// RankSVM without a list of pairs (Joachims 2002; Airola, Pahikkala & Salakoski 2011; Lee & Lin,
// "Large-scale linear RankSVM", Neural Computation 26, 2014).
//
// Problem:  min_w  1/2 ||w||^2 + C sum_{(i,j) in P} weight_ij * l(1 - (f_i - f_j)),   f = X w,
// with l(z) = max(0, z)^2 (squared hinge, "L2") or max(0, z) (hinge, "L1"); P = the pairs with
// y_i > y_j inside each query group (object ranking: one group), or an explicit weighted edge list.
// Kernel form: f = K beta and ||w||^2 = beta^T K beta (representer theorem), m unknowns.
//
// Pair-free oracle (Lee & Lin 2014, Sect. 3): with rows of a group sorted by f, the active pairs of
// row s as the preferred row are {t : y_t < y_s, f_t > f_s - 1} and as the less preferred row
// {t : y_t > y_s, f_t < f_s + 1}.  A sweep over the sorted rows inserts rows into a Fenwick tree
// indexed by the group's target level (k distinct levels) and reads counts, sums of f and sums of
// f^2 over the levels below/above: loss, gradient and generalized-Hessian products cost
// O(m log m) for the sort plus O(m log k) per sweep.  Both sweeps use the one predicate
// (f_s - 1) < f_t for "pair (s over t) is active", so the Hessian is exactly symmetric.
#pragma once
#include <cstdint>
#include <vector>

#include "fastrank/csr.hpp"
#include "fastrank/types.hpp"

namespace fastrank {

enum class SvmLoss : int { SquaredHinge = 0, Hinge = 1 };

class PairwiseHingeLoss {
 public:
  // Scoring setting: y in original row order; `order` lists the rows group by group and
  // offsets[q]..offsets[q+1] delimits group q in that order (object ranking: one group).
  static PairwiseHingeLoss from_groups(VectorCRef y, IndexVectorCRef order, IndexVectorCRef offsets);
  // Explicit preference multigraph: row head[e] preferred over row tail[e], weight[e] > 0.
  static PairwiseHingeLoss from_graph(Index m, IndexVectorCRef head, IndexVectorCRef tail, VectorCRef weight);

  Index n_rows() const { return m_; }
  // Number of preference pairs (total weight for a graph).
  double n_pairs() const { return n_pairs_; }

  // Loss value sum_P weight * l(1 - (f_i - f_j)) at f (m values, original row order).  grad
  // (optional, m values): d loss / d f for the squared hinge; for the hinge the subgradient that
  // takes 0 at margin exactly 1.  active (optional): total weight of pairs with margin < 1.
  // The squared hinge keeps the active structure for hessian_times.
  double evaluate(SvmLoss loss, const double* f, double* grad, double* active, int n_threads);
  // evaluate() at the f of `sorted`'s last evaluation (same groups): reuses its sort of the scores.
  double evaluate_like(const PairwiseHingeLoss& sorted, SvmLoss loss, const double* f, double* grad, double* active,
                       int n_threads);
  // out = H v, H = 2 sum_{active} weight (e_i - e_j)(e_i - e_j)^T, the generalized Hessian of the
  // squared-hinge loss at the f of the last evaluate() (either loss: the active pairs are the same).
  void hessian_times(const double* v, double* out, int n_threads) const;
  // out = (H - H_h) v / (2h), H_h the Hessian at the margin lowered by h (see set_margin): the
  // Huber-smoothed hinge's generalized Hessian (1/h) sum over the pairs with 0 < z <= h, in one pair
  // of sweeps (the band enters and leaves a Fenwick tree).  Groups only (returns false for a graph).
  bool band_hessian_times(double h, const double* v, double* out, int n_threads) const;
  // The pairs of that band at the f of the last evaluate() (groups), as (preferred row, other row) in `pairs`, in the
  // groups' order; false (and `pairs` incomplete) for a graph or beyond `limit` pairs.
  bool band_pairs(double h, Index limit, std::vector<std::int64_t>& pairs) const;
  // The pairs with c - delta <= f_i - f_j < c + delta (c the margin) at f (for groups, the f of the last evaluate()),
  // as (preferred row, other row) in `pairs`, with their weights; false beyond `limit` pairs or with row margins.
  bool pairs_at_margin(const double* f, double delta, Index limit, std::vector<std::int64_t>& pairs,
                       std::vector<double>& weights);
  // The pairs in the Huber band 0 < z <= h at f (for groups, the f of the last evaluate()), each
  // z = margin - (f_i - f_j) formed directly rather than from expanded sums: adds their
  // l_h'(z) = z / h to grad (with the sign of d / df_i), and returns the sum of z (1 - z / h) in
  // *smooth and a bound of the rounding grad received (2-norm over the rows) in *grad_error.  Returns
  // false, with grad unchanged, where a group would visit more than 16 partners per row.
  bool huber_band(double h, const double* f, double* grad, double* smooth, double* grad_error, int n_threads) const;

  // Per-pair margins y_i - y_j instead of 1 (002 Sect. 5.2.1, the hinge ranking loss
  // (|y_i - y_j| - (f_i - f_j))_+ of the learner A_h): l((y_i - y_j) - (f_i - f_j)) is the unit-
  // free loss l(0 - (g_i - g_j)) at g = f - y, so the oracle runs at g with margin 0 (groups only).
  // `active` then reports the summed margins of the active pairs (the cutting planes' b).
  void set_row_margins(VectorCRef y);

  // The margin every pair must reach (1; 0 with row margins, where the pair's own margin is carried by
  // y).  The hinge solver's Huber smoothing evaluates a copy whose margin is lowered by the smoothing
  // width (see hinge_huber in ranksvm.cpp).
  double margin() const { return margin_; }
  void set_margin(double margin) { margin_ = margin; }
  // Typical size of a pair's margin: 1, or the standard deviation of y with row margins.
  double margin_scale() const;
  // The size of the terms the last evaluate() added, whose rounding its results carry: the sums of
  // |terms| of the value and, per row, of the gradient (its 2-norm over the rows; 0 without grad).  The
  // sweeps expand each pair's term ((c + f_t)^2 = c^2 + 2 c f_t + f_t^2), so a value far below these
  // (a narrow Huber band) keeps only their last digits.
  // Tracked only while track_magnitudes(true), the gradient's with rows = true as well (a few percent of an
  // evaluation's time).
  double value_magnitude() const { return value_magnitude_; }
  double grad_magnitude() const { return grad_magnitude_; }
  void track_magnitudes(bool values, bool rows = false) {
    track_magnitudes_ = values;
    track_rows_ = values && rows;
  }

 private:
  enum class Kind { Groups, Graph };
  Kind kind_ = Kind::Groups;
  Index m_ = 0;
  double n_pairs_ = 0.0;
  // Groups.
  std::vector<std::int64_t> order_, offsets_;
  std::vector<std::int32_t> level_;    // dense rank of y inside its group, grouped order
  std::vector<std::int32_t> n_levels_;  // per group
  std::vector<std::int32_t> sorted_;    // per group segment: local positions sorted by f (cached)
  std::vector<double> fv_cache_;        // per grouped position: f minus the group's shift (cached)
  // Graph.
  std::vector<std::int64_t> head_, tail_;
  std::vector<double> weight_;
  std::vector<char> edge_active_;  // cached
  bool hessian_ready_ = false;
  double margin_ = 1.0;                // the margin of every pair (0 with row margins)
  std::vector<double> row_margin_;     // y per row (empty: unit margins)
  std::vector<double> shifted_, grad_buffer_;
  const PairwiseHingeLoss* presorted_ = nullptr;  // during evaluate_like only
  bool track_magnitudes_ = false, track_rows_ = false;
  double value_magnitude_ = 0.0, grad_magnitude_ = 0.0;
  std::vector<double> row_magnitude_;

  double evaluate_groups(SvmLoss loss, const double* f, double* grad, double* active, int n_threads);
  double evaluate_graph(SvmLoss loss, const double* f, double* grad, double* active);
  void laplacian_times(double lowered, double factor, const double* v, double* out, int n_threads) const;
};

struct RankSvmOptions {
  double C = 1.0;
  SvmLoss loss = SvmLoss::SquaredHinge;
  double tol = 1e-6;       // squared hinge: ||grad|| <= tol ||grad at 0||; hinge: relative duality gap
  Index max_iter = 1000;   // Newton iterations (squared hinge) or cutting planes (hinge)
  int n_threads = 1;
  Vector w0;               // squared hinge, linear: warm start (empty: w = 0)
  double grad0 = -1.0;     // with w0: ||X^T dL/df at f = 0|| of the same X and pairs (a neighbouring C's), or < 0
};

struct RankSvmResult {
  Vector coef;             // w (n) for a linear model, beta (m) for a kernel model
  double objective = 0.0;  // 1/2 ||w||^2 + C * loss at coef
  double loss = 0.0;
  Index n_iter = 0;        // Newton iterations or cutting planes (both: the linear hinge's fallback)
  Index n_newton = 0;      // linear hinge: the smoothed Newton steps n_iter includes when cutting planes followed
  Index n_inner = 0;       // conjugate-gradient steps (squared hinge) or master QP steps (hinge)
  bool converged = false;
  bool stalled = false;    // hinge: stopped because the gap did not shrink by 0.1% within 100 cuts
  double criterion = 0.0;  // final relative gradient norm or relative duality gap
  double grad0 = -1.0;     // squared hinge, linear: ||X^T dL/df at f = 0||, the gradient of F at w = 0 over C
};

// Linear RankSVM on dense X (m x n, row-major), CSR X, or a kernel matrix K (m x m, symmetric).
RankSvmResult ranksvm_dense(RowMatrixCRef X, PairwiseHingeLoss& pairs, const RankSvmOptions& options);
RankSvmResult ranksvm_csr32(const CsrView<std::int32_t>& X, PairwiseHingeLoss& pairs, const RankSvmOptions& options);
RankSvmResult ranksvm_csr64(const CsrView<std::int64_t>& X, PairwiseHingeLoss& pairs, const RankSvmOptions& options);
RankSvmResult ranksvm_kernel(MatrixCRef K, PairwiseHingeLoss& pairs, const RankSvmOptions& options);

// Benchmark/diagnostic helper: loss and gradient in w of the linear model (f = X w, X^T grad_f).
double ranksvm_dense_loss_gradient(RowMatrixCRef X, PairwiseHingeLoss& pairs, SvmLoss loss, const Vector& w,
                                   Vector& grad, int n_threads);

}  // namespace fastrank
