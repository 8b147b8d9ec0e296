// SVRank: O(m log m) pairwise epsilon-insensitive loss and a cutting-plane solver (see svrank.hpp).
#include "fastrank/svrank.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include <Eigen/Cholesky>
#include <Eigen/LU>

#include "fastrank/errors.hpp"
#include "fastrank/interrupt.hpp"
#include "fastrank/lapack.hpp"
#include "fastrank/parallel.hpp"
#include "fastrank/segment_search.hpp"

namespace fastrank {

namespace {

// Threads for the pair sums over groups: one where m log2(m / groups), the sorts' work, is below 45,000.  Linear fits
// (C = 100, 20 features) on two threads against one: 2,000 rows in groups of 10 took 2.6 times as long, 5,000 in
// groups of 30 1.15 times; 10,000 rows in groups of 30 / 100 0.88 / 0.76 times, 20,000 in groups of 10 0.92 times.
int pair_sum_threads(Index m, Index n_groups, int n_threads) {
  const double per_group = std::max(2.0, static_cast<double>(m) / static_cast<double>(std::max<Index>(1, n_groups)));
  return static_cast<double>(m) * std::log2(per_group) < 45000.0 ? 1 : n_threads;
}

// Order-preserving map of a double's float32 rounding to an unsigned integer.  Rounding to float
// is monotone (r < r' implies float(r) <= float(r')), so sorting by this key orders the residuals
// up to runs of equal keys, which are then sorted by their exact double values.
inline std::uint32_t sort_key(double v) {
  const float f = static_cast<float>(v);
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return (u >> 31) ? ~u : (u | 0x80000000u);
}

// Scratch of one group (slices of the evaluator's buffers).
struct SortBuffers {
  std::uint32_t* key;
  std::uint32_t* idx;
  std::uint32_t* key2;
  std::uint32_t* idx2;
  double* val;
};

// Sorts the rows of one group by residual: LSD radix sort of (32-bit key, row) on 11-bit digits
// (3 passes after one histogram pass; passes whose digit is constant are skipped), then exact
// sorting inside runs of equal keys.  O(n) for the bulk instead of n log n comparisons: the sort
// is the oracle's dominant cost.  On return val[k] is the k-th smallest residual, idx[k] its row.
void sort_residuals(const double* r, SortBuffers b, Index n) {
  if (n < 512) {  // small groups: the radix histograms would cost more than comparisons
    for (Index i = 0; i < n; ++i) b.idx[i] = static_cast<std::uint32_t>(i);
    std::sort(b.idx, b.idx + n, [r](std::uint32_t x, std::uint32_t y) { return r[x] < r[y]; });
    for (Index i = 0; i < n; ++i) b.val[i] = r[b.idx[i]];
    return;
  }
  for (Index i = 0; i < n; ++i) {
    b.key[i] = sort_key(r[i]);
    b.idx[i] = static_cast<std::uint32_t>(i);
  }
  constexpr int kBits = 11, kRadix = 1 << kBits, kPasses = 3;
  std::uint32_t hist[kPasses][kRadix] = {};
  for (Index i = 0; i < n; ++i) {
    const std::uint32_t k = b.key[i];
    ++hist[0][k & (kRadix - 1)];
    ++hist[1][(k >> kBits) & (kRadix - 1)];
    ++hist[2][k >> (2 * kBits)];
  }
  std::uint32_t *ks = b.key, *kd = b.key2, *is = b.idx, *id = b.idx2;
  for (int p = 0; p < kPasses; ++p) {
    std::uint32_t* h = hist[p];
    const int shift = p * kBits;
    if (h[(ks[0] >> shift) & (kRadix - 1)] == static_cast<std::uint32_t>(n)) continue;
    std::uint32_t sum = 0;
    for (int d = 0; d < kRadix; ++d) {
      const std::uint32_t c = h[d];
      h[d] = sum;
      sum += c;
    }
    for (Index i = 0; i < n; ++i) {
      const std::uint32_t pos = h[(ks[i] >> shift) & (kRadix - 1)]++;
      kd[pos] = ks[i];
      id[pos] = is[i];
    }
    std::swap(ks, kd);
    std::swap(is, id);
  }
  if (is != b.idx) std::copy(is, is + n, b.idx);
  for (Index i = 0; i < n; ++i) b.val[i] = r[b.idx[i]];
  // Exact order inside runs of residuals that round to the same float.
  for (Index i = 0; i < n;) {
    Index j = i + 1;
    while (j < n && ks[j] == ks[i]) ++j;
    if (j - i > 1) {
      if (j - i <= 32) {
        for (Index a = i + 1; a < j; ++a) {
          const double v = b.val[a];
          const std::uint32_t x = b.idx[a];
          Index c = a;
          for (; c > i && b.val[c - 1] > v; --c) {
            b.val[c] = b.val[c - 1];
            b.idx[c] = b.idx[c - 1];
          }
          b.val[c] = v;
          b.idx[c] = x;
        }
      } else {
        std::vector<std::pair<double, std::uint32_t>> run(j - i);
        for (Index a = i; a < j; ++a) run[a - i] = {b.val[a], b.idx[a]};
        std::sort(run.begin(), run.end(),
                  [](const auto& x, const auto& y) { return x.first < y.first; });
        for (Index a = i; a < j; ++a) {
          b.val[a] = run[a - i].first;
          b.idx[a] = run[a - i].second;
        }
      }
    }
    i = j;
  }
}

// Sorts the residuals of group [lo, hi) into b (see sort_residuals) and returns their mean, which
// the prefix sums subtract so that they do not cancel badly.
double sort_group(const double* r, Index lo, Index hi, SortBuffers b) {
  double shift = 0.0;
  for (Index k = lo; k < hi; ++k) shift += r[k];
  sort_residuals(r + lo, b, hi - lo);
  return shift / static_cast<double>(hi - lo);
}

// One group [lo, hi): loss (ordered pairs) and g on its rows; `b` points at the group's slices.
// *outside counts the unordered pairs outside the tube (sum_k A_k).
double group_pair_loss(const double* r, Index lo, Index hi, double eps, double* g, SortBuffers b, double* outside) {
  const Index n = hi - lo;
  *outside = 0.0;
  if (n < 2) {
    for (Index k = lo; k < hi; ++k) g[k] = 0.0;
    return 0.0;
  }
  const double shift = sort_group(r, lo, hi, b);
  const double* s = b.val;
  // Comparisons use the raw residuals (exactly the brute-force predicates r_k - r_j > eps); the
  // sums use residuals minus the group mean so that A_k s_k - prefix does not cancel badly.
  Index p = 0, q = 0;
  double prefix = 0.0, loss = 0.0;
  for (Index k = 0; k < n; ++k) {
    const double sk = s[k];
    while (p < n && sk - s[p] > eps) {
      prefix += s[p] - shift;
      ++p;
    }
    if (q < k) q = k;
    while (q < n && !(s[q] - sk > eps)) ++q;
    loss += static_cast<double>(p) * ((sk - shift) - eps) - prefix;
    g[lo + b.idx[k]] = 2.0 * static_cast<double>(p - (n - q));
    *outside += static_cast<double>(p);
  }
  return 2.0 * loss;
}

// One group [lo, hi) of the squared cost (see svrank.hpp): loss over ordered pairs, g and, when v
// is given, hv = H v on its rows.
double group_squared_pair_loss(const double* r, Index lo, Index hi, double eps, double* g, const double* v,
                               double* hv, SortBuffers b) {
  const Index n = hi - lo;
  if (n < 2) {
    for (Index k = lo; k < hi; ++k) {
      g[k] = 0.0;
      if (v) hv[k] = 0.0;
    }
    return 0.0;
  }
  const double shift = sort_group(r, lo, hi, b);
  const double* s = b.val;
  std::vector<double> P1(n + 1, 0.0), PV(v ? n + 1 : 0, 0.0);
  for (Index k = 0; k < n; ++k) {
    P1[k + 1] = P1[k] + (s[k] - shift);
    if (v) PV[k + 1] = PV[k] + v[lo + b.idx[k]];
  }
  Index p = 0, q = 0;
  double mean = 0.0, m2 = 0.0, loss = 0.0;  // Welford over the rows below: s[0 .. p)
  for (Index k = 0; k < n; ++k) {
    const double sk = s[k];
    while (p < n && sk - s[p] > eps) {
      const double t = s[p] - shift;
      ++p;
      const double d = t - mean;
      mean += d / static_cast<double>(p);
      m2 += d * (t - mean);
    }
    if (q < k) q = k;
    while (q < n && !(s[q] - sk > eps)) ++q;
    const double a = (sk - shift) - eps;
    const double dp = static_cast<double>(p), dq = static_cast<double>(n - q);
    // sum_{j < p} (a - t_j)^2 = p (a - mean)^2 + m2;  sum_{j < p} (a - t_j) = p (a - mean)
    if (p > 0) loss += dp * (a - mean) * (a - mean) + m2;
    const double below = p > 0 ? dp * (a - mean) : 0.0;
    const double above = (P1[n] - P1[q]) - dq * ((sk - shift) + eps);
    const Index row = lo + b.idx[k];
    g[row] = 4.0 * (below - above);
    if (v) hv[row] = 4.0 * ((dp + dq) * v[row] - PV[p] - (PV[n] - PV[q]));
  }
  return 2.0 * loss;
}

void check_offsets(const std::int64_t* offsets, Index n_groups, Index m) {
  require(n_groups >= 1, "svrank: need at least one group");
  require(offsets[0] == 0 && offsets[n_groups] == m, "svrank: group offsets must run from 0 to m");
  for (Index q = 0; q < n_groups; ++q) require(offsets[q + 1] >= offsets[q], "svrank: group offsets must be sorted");
}

// Sum over groups of n_q^2: the number of ordered pairs (diagonal included) of eq. (9).
double ordered_pairs(const std::int64_t* offsets, Index n_groups, bool* has_pair) {
  double total = 0.0;
  *has_pair = false;
  for (Index q = 0; q < n_groups; ++q) {
    const double n = static_cast<double>(offsets[q + 1] - offsets[q]);
    total += n * n;
    if (n >= 2) *has_pair = true;
  }
  return total;
}

class PairLoss {
 public:
  PairLoss(Index m, const std::int64_t* offsets, Index n_groups, double eps, int n_threads)
      : offsets_(offsets), n_groups_(n_groups), eps_(eps), threads_(pair_sum_threads(m, n_groups, n_threads)),
        key_(m), key2_(m), idx_(m), idx2_(m), val_(m), group_loss_(n_groups), group_outside_(n_groups) {
    require(m < (Index(1) << 32), "svrank: more than 2^32 rows");
  }

  // Returns L(r), writes g = dL/dr and (if `outside` is given) the number of unordered pairs
  // outside the tube, P.  On the linear piece active at r, L(r') = g . r' - 2 eps P for all r'
  // (each outside pair contributes 2 (|r_j - r_i| - eps)), and that piece is below L everywhere.
  double operator()(const double* r, double* g, double* outside = nullptr) {
    interrupt::poll();  // every step of the cutting planes and their line search passes here
    parallel_for(0, n_groups_, threads_, 16, [&](Index lo, Index hi) {
      for (Index q = lo; q < hi; ++q) {
        const Index o = offsets_[q];
        SortBuffers b{key_.data() + o, idx_.data() + o, key2_.data() + o, idx2_.data() + o, val_.data() + o};
        group_loss_[q] = group_pair_loss(r, o, offsets_[q + 1], eps_, g, b, &group_outside_[q]);
      }
    });
    double total = 0.0, out = 0.0;
    for (Index q = 0; q < n_groups_; ++q) {  // fixed order: independent of the thread count
      total += group_loss_[q];
      out += group_outside_[q];
    }
    if (outside) *outside = out;
    return total;
  }

 private:
  const std::int64_t* offsets_;
  Index n_groups_;
  double eps_;
  int threads_;  // the pair sums' threads (pair_sum_threads), fixed by the groups
  std::vector<std::uint32_t> key_, key2_, idx_, idx2_;
  std::vector<double> val_;
  std::vector<double> group_loss_, group_outside_;
};

// f = X w and a = X^T c: matrix-vector products (Eigen's kernels; BLAS dgemm with one column
// packs X first and was 3x slower than a plain pass here).
void x_times(const RowMatrixCRef& X, const Vector& w, Vector& f) { f.noalias() = X * w; }
void xt_times(const RowMatrixCRef& X, const Vector& c, Vector& a) { a.noalias() = X.transpose() * c; }

// The solvers work in scaled coordinates u, w = kappa u (see cutting_plane).  A model stores the
// scaled planes a~_t = phi X^T g_t (linear, in R^n) or their coefficients phi g_t and K phi g_t
// (kernel, representer form), and maps u to fu = X u (or K u).

// Linear model: planes a~_t in R^n.
class LinearModel {
 public:
  explicit LinearModel(const RowMatrixCRef& X) : X_(X), A_(X.cols(), 16) {}
  Index dim() const { return X_.cols(); }
  // Largest |(X^T g)_j| (scale of the first plane before scaling).
  double plane_scale(const Vector& g) {
    xt_times(X_, g, a_);
    return a_.size() ? a_.cwiseAbs().maxCoeff() * std::sqrt(static_cast<double>(a_.size())) : 0.0;
  }
  void fu(const Vector& u, Vector& out) const { x_times(X_, u, out); }
  // Stores the plane phi X^T g; qcol = Gram column against all planes.
  void add(const Vector& g, double phi, Vector& qcol) {
    xt_times(X_, g, a_);
    a_ *= phi;
    if (k_ == A_.cols()) A_.conservativeResize(Eigen::NoChange, 2 * A_.cols());
    A_.col(k_) = a_;
    ++k_;
    qcol.noalias() = A_.leftCols(k_).transpose() * a_;
  }
  // Minimiser of the cut model: u = -1/2 sum_t lambda_t a~_t, and fu = X u.
  void combine(const Vector& lam, Vector& u, Vector& f) const {
    u.noalias() = -0.5 * (A_.leftCols(k_) * lam);
    x_times(X_, u, f);
  }
  double inner(const Vector& u1, const Vector&, const Vector& u2, const Vector&) const { return u1.dot(u2); }
  // Keeps the planes listed in `keep` (increasing), in that order.
  void compact(const std::vector<Index>& keep) {
    for (Index j = 0; j < static_cast<Index>(keep.size()); ++j) A_.col(j) = A_.col(keep[j]);
    k_ = static_cast<Index>(keep.size());
  }

 private:
  const RowMatrixCRef& X_;
  Matrix A_;
  Index k_ = 0;
  Vector a_;
};

// Kernel model: plane t is phi sum_i g_i Phi(x_i); stored as c_t = phi g_t and K c_t.
class KernelModel {
 public:
  explicit KernelModel(const MatrixCRef& K) : K_(K), C_(K.rows(), 16), U_(K.rows(), 16) {}
  Index dim() const { return K_.rows(); }
  double plane_scale(const Vector& g) {  // ||sum_i g_i Phi(x_i)|| = sqrt(g^T K g)
    const Vector Kg = K_ * g;
    return std::sqrt(std::max(0.0, g.dot(Kg)));
  }
  void fu(const Vector& u, Vector& out) const { out.noalias() = K_ * u; }
  void add(const Vector& g, double phi, Vector& qcol) {
    if (k_ == C_.cols()) {
      C_.conservativeResize(Eigen::NoChange, 2 * C_.cols());
      U_.conservativeResize(Eigen::NoChange, 2 * U_.cols());
    }
    C_.col(k_) = phi * g;
    U_.col(k_).noalias() = K_ * C_.col(k_);  // matrix-vector: BLAS dgemm would pack K on every call
    ++k_;
    qcol.noalias() = C_.leftCols(k_).transpose() * U_.col(k_ - 1);
  }
  void combine(const Vector& lam, Vector& u, Vector& f) const {
    u.noalias() = -0.5 * (C_.leftCols(k_) * lam);
    f.noalias() = -0.5 * (U_.leftCols(k_) * lam);
  }
  double inner(const Vector& u1, const Vector&, const Vector&, const Vector& f2) const { return u1.dot(f2); }
  void compact(const std::vector<Index>& keep) {
    for (Index j = 0; j < static_cast<Index>(keep.size()); ++j) {
      C_.col(j) = C_.col(keep[j]);
      U_.col(j) = U_.col(keep[j]);
    }
    k_ = static_cast<Index>(keep.size());
  }

 private:
  const MatrixCRef& K_;
  Matrix C_, U_;
  Index k_ = 0;
};

// The objective measured from w = 0, in the scaled coordinates u of cutting_plane:
//   F^(u) = (F(kappa u) - F(0)) / kappa^2 = <u, u> + phi (g . fu + Delta / kappa),
//   Delta = -(g - g_0) . y - 2 eps (P - P_0),
// where (g, P) is the linear piece of the pair loss active at u (PairLoss::operator()) and
// (g_0, P_0) the one at 0.  Written this way F^ never subtracts two copies of F(0): its terms are
// of the size of the decrease itself, however small that is next to F(0).
class ScaledOracle {
 public:
  ScaledOracle(PairLoss& loss, const VectorCRef& y, const Vector& g0, double P0, double eps, double kappa, double phi)
      : g(y.size()), loss_(loss), y_(y), g0_(g0), P0_(P0), eps_(eps), kappa_(kappa), phi_(phi), r_(y.size()) {}

  // F^ at (u, fu) given <u, u>; leaves the active piece in (g, P).
  double operator()(double uu, const Vector& fu) {
    r_ = kappa_ * fu - y_;
    loss_(r_.data(), g.data(), &P);
    // Size of the terms summed (for the rounding floor of the gap).
    scale = uu + phi_ * (g.cwiseAbs().dot(fu.cwiseAbs()) +
                         ((g - g0_).cwiseAbs().dot(y_.cwiseAbs()) + 2.0 * eps_ * std::abs(P - P0_)) / kappa_);
    return uu + phi_ * g.dot(fu) + plane_offset();
  }
  // b^ = phi Delta / kappa of the piece (g, P) last evaluated.
  double plane_offset() const { return phi_ * delta() / kappa_; }
  // Delta = -(g - g_0) . y - 2 eps (P - P_0) of that piece: independent of C, kappa and phi.
  double delta() const { return -(g - g0_).dot(y_) - 2.0 * eps_ * (P - P0_); }

  Vector g;
  double P = 0.0, scale = 0.0;

 private:
  PairLoss& loss_;
  const VectorCRef& y_;
  const Vector& g0_;
  double P0_, eps_, kappa_, phi_;
  Vector r_;
};

// The relative gap of the stopping test (cutting_plane): F - lower over the smaller of the achievable decrease
// F(0) - lower and F itself (F's rounding, next to F(0), the least); 0 where the decrease is not positive.
double gap_scale(double decrease, double F, double F0) {
  return std::min(decrease, std::max(F, 64.0 * std::numeric_limits<double>::epsilon() * F0));
}
double gap_of(double gap_abs, double decrease, double F, double F0) {
  return decrease > 0.0 ? std::max(0.0, gap_abs) / gap_scale(decrease, F, F0) : 0.0;
}

// ---- the hard tube: a large C where no pair leaves the tube ----------------------------------------
//
// Why: with fewer rows than features (every y fits) and a large C, no pair lies outside the tube at the optimum, and
// the pairs on its edges are many (m = 40 x 60: 399 of 1,560 ordered pairs); the cutting planes had stopped 0.4-1.6%
// above F* after 1,000 planes.  Over ordered pairs F(w) = ||w||^2 + 2c sum_{(j,k)} max(0, r_k - r_j - eps)
// (c = C/N; h(t) = max(0, |t| - eps) of a pair is the hinges of its two orders), whose dual over alpha_jk in [0, 2c]
// is D(alpha) = -||w||^2 - sum_{(j,k)} alpha_jk (y_k - y_j + eps) at w = -1/2 sum_{(j,k)} alpha_jk (x_k - x_j).  D
// depends on alpha only through the flows g = sum alpha_jk (e_k - e_j) (zero sum per group; w = -1/2 X^T g) and
// sum alpha, and the least sum alpha giving g is sum g+, sent in proportion (alpha_jk = g_j- g_k+ / sum g+), which
// stays within [0, 2c] unless c is small.  Where it does, max D is the QP in m flows
//   min 1/4 g^T K g + g . y + eps/2 ||g||_1   subject to   sum_{k in q} g_k = 0 for every group q,
// whose optimality conditions put r = f - y in a band of width eps around an offset nu_q per group (an eps/2-tube
// regression with an offset): rows with g > 0 on its upper edge, g < 0 on its lower one.  A primal active-set method
// solves it (hard_tube_finish).  The result certifies itself: D at its flows sent in proportion (where they fit
// within 2c) is a lower bound on F*, and F at its w an upper one.
// Rows: a step costs O(m^2) (K's scores, the KKT inverse's update) and a solve up to 3 m steps; at m = 2000 a try
// that did not certify (Gaussian kernel, C = 1e6) cost 14 s against the planes' 1 s; a Gaussian fit of 500 rows that
// it certified took 0.35 s in all.
constexpr Index kTubeRows = 500;
constexpr Index kTubeFeatures = 4096;   // the linear model's w = -1/2 X^T g, formed at every step

// The hard tube's two models: coefficients w with f = X w, sum_i g_i x_i and K_ij = x_i . x_j; or beta with
// f = K beta, ||h||^2 = beta^T K beta and sum_i g_i e_i = g.
struct LinearSide {
  const RowMatrixCRef& X;
  bool fits() const { return X.cols() <= kTubeFeatures; }
  bool any_target() const { return X.cols() >= X.rows(); }  // X w = any y (X of full row rank, as data are)
  void scores(const Vector& coef, Vector& f) const { x_times(X, coef, f); }
  void sum_rows(const Vector& g, Vector& coef) const { xt_times(X, g, coef); }
  double squared_norm(const Vector& coef, const Vector&) const { return coef.squaredNorm(); }
  double gram(Index i, Index j) const { return X.row(i).dot(X.row(j)); }
};

struct KernelSide {
  const MatrixCRef& K;
  bool fits() const { return true; }
  bool any_target() const { return false; }  // unknown without K's rank
  void scores(const Vector& coef, Vector& f) const { f.noalias() = K * coef; }
  void sum_rows(const Vector& g, Vector& coef) const { coef = g; }
  double squared_norm(const Vector& coef, const Vector& f) const { return coef.dot(f); }
  double gram(Index i, Index j) const { return K(i, j); }
};

// A bound of the rounding of F = ||h||^2 + c L(r) with L summed from its pieces: g = dL/dr, n_out pairs outside the
// tube (PairLoss::operator()).
double objective_rounding(double ww, double cn, const Vector& g, const Vector& r, double eps, double n_out) {
  const double u = static_cast<double>(r.size()) * std::numeric_limits<double>::epsilon();
  return u * (ww + cn * (g.cwiseAbs().dot(r.cwiseAbs()) + 2.0 * eps * n_out));
}

// A point of SVRank in its own units: coefficients, scores f = X w (or K beta), F and the best lower bound on F*.
struct TubePoint {
  Vector coef, f;
  double F = 0.0, F_round = 0.0, lower = 0.0;  // F_round: a bound of F's rounding
  double ww = 0.0;                              // ||h||^2, F's first term
};

// The KKT matrix of the hard tube's active set, M = [K_SS / 2, A^T; A, 0] (A: the rows' group indicators; one
// variable per row on an edge and one multiplier per group with such rows), and its inverse, kept by bordering as rows
// join and leave: O(size^2) a change where a fresh factorisation costs O(size^3).  Rebuilt from M every kRefresh
// changes (the updates' rounding accumulates).
template <class Side>
class TubeKkt {
 public:
  TubeKkt(const Side& X, const std::vector<Index>& group_of, Index n_groups)
      : X_(X), group_of_(group_of), row_pos_(group_of.size(), -1), group_pos_(static_cast<size_t>(n_groups), -1),
        group_rows_(static_cast<size_t>(n_groups), 0) {}
  Index size() const { return static_cast<Index>(var_.size()); }
  // The variable at a position: a row k >= 0, or -1 - q for group q's multiplier.
  Index var(Index p) const { return var_[p]; }
  Index group_position(Index q) const { return group_pos_[q]; }
  // Row k joins (and its group's multiplier if it is the group's first row); false, unchanged, where M would be
  // singular at working precision (more rows than K's rank).
  bool join(Index k) {
    const Index q = group_of_[k], n = size();
    Vector b(n);
    for (Index p = 0; p < n; ++p) b[p] = var_[p] >= 0 ? 0.5 * X_.gram(var_[p], k) : (var_[p] == -1 - q ? 1.0 : 0.0);
    if (!append(b, 0.5 * X_.gram(k, k))) return false;
    var_.push_back(k);
    row_pos_[k] = n;
    if (group_rows_[q] == 0) {
      Vector e = Vector::Zero(n + 1);
      e[n] = 1.0;
      if (!append(e, 0.0)) {
        remove(n);
        return false;
      }
      var_.push_back(-1 - q);
      group_pos_[q] = n + 1;
    }
    ++group_rows_[q];
    ++changes_;
    return true;
  }
  void leave(Index k) {
    const Index q = group_of_[k];
    remove(row_pos_[k]);
    if (--group_rows_[q] == 0) remove(group_pos_[q]);
    ++changes_;
  }
  // M^-1 rhs, rebuilding the inverse first where it has seen kRefresh changes.
  Vector solve(const Vector& rhs) {
    if (changes_ >= kRefresh) rebuild();
    return inv_.topLeftCorner(size(), size()) * rhs;
  }

 private:
  static constexpr Index kRefresh = 64;
  const Side& X_;
  const std::vector<Index>& group_of_;
  std::vector<Index> var_, row_pos_, group_pos_, group_rows_;
  Matrix inv_;
  Index changes_ = 0;

  void place(Index p, Index v) {
    var_[p] = v;
    (v >= 0 ? row_pos_[v] : group_pos_[-1 - v]) = p;
  }
  // Bordering: M' = [M, b; b^T, d], with s = d - b^T M^-1 b, has the inverse
  // [M^-1 + M^-1 b b^T M^-1 / s, -M^-1 b / s; -b^T M^-1 / s, 1 / s].
  bool append(const Vector& b, double d) {
    const Index n = size();
    const Vector Mb = inv_.topLeftCorner(n, n) * b;
    const double schur = d - b.dot(Mb);
    if (!(std::abs(schur) > 1e-11 * (std::abs(d) + b.cwiseAbs().dot(Mb.cwiseAbs())))) return false;
    if (n + 1 > inv_.rows()) {
      Matrix grown = Matrix::Zero(2 * n + 16, 2 * n + 16);
      grown.topLeftCorner(n, n) = inv_.topLeftCorner(n, n);
      inv_.swap(grown);
    }
    inv_.topLeftCorner(n, n).noalias() += (Mb / schur) * Mb.transpose();
    inv_.col(n).head(n) = -Mb / schur;
    inv_.row(n).head(n) = -Mb.transpose() / schur;
    inv_(n, n) = 1.0 / schur;
    return true;
  }
  // Removes the variable at position p: swapped with the last, then M^-1 without it is A - c c^T / alpha.
  void remove(Index p) {
    const Index last = size() - 1, gone = var_[p];
    if (p != last) {
      inv_.row(p).head(last + 1).swap(inv_.row(last).head(last + 1));
      inv_.col(p).head(last + 1).swap(inv_.col(last).head(last + 1));
      place(p, var_[last]);
      var_[last] = gone;
    }
    (gone >= 0 ? row_pos_[gone] : group_pos_[-1 - gone]) = -1;
    var_.pop_back();
    const Vector c = inv_.col(last).head(last);
    inv_.topLeftCorner(last, last).noalias() -= (c / inv_(last, last)) * c.transpose();
  }
  void rebuild() {
    const Index n = size();
    Matrix M = Matrix::Zero(n, n);
    for (Index a = 0; a < n; ++a)
      for (Index b = 0; b <= a; ++b) {
        const Index u = var_[a], v = var_[b];
        double x = 0.0;
        if (u >= 0 && v >= 0) x = 0.5 * X_.gram(u, v);
        else if (u >= 0 && v < 0) x = group_of_[u] == -1 - v ? 1.0 : 0.0;
        else if (u < 0 && v >= 0) x = group_of_[v] == -1 - u ? 1.0 : 0.0;
        M(a, b) = M(b, a) = x;
      }
    inv_.topLeftCorner(n, n) = M.partialPivLu().inverse();
    changes_ = 0;
  }
};

template <class Side>
bool hard_tube_finish(const Side& X, PairLoss& loss, const VectorCRef& y, const IndexVectorCRef& offsets,
                      const SvrankOptions& opt, double cn, double F0, TubePoint& p) {
  const Index m = y.size(), n_groups = offsets.size() - 1;
  if (!X.fits() || m > kTubeRows || !(p.F - p.lower > 0.0)) return false;
  const double half = 0.5 * opt.eps, u = static_cast<double>(m) * std::numeric_limits<double>::epsilon();
  std::vector<Index> group_of(static_cast<size_t>(m));
  for (Index q = 0; q < n_groups; ++q)
    for (Index k = offsets[q]; k < offsets[q + 1]; ++k) group_of[k] = q;
  // A primal active-set method (Nocedal & Wright, Sect. 16.5) from g = 0: the rows S on an edge (sign edge_k, g_k of
  // that sign) solve the KKT system of the equality-constrained QP; a step that would turn some g_k's sign stops at
  // the first such row, which leaves S; at the minimiser on S the row farthest outside the band joins (its
  // multiplier is negative, so the next step moves its g the right way while K_SS is positive definite).  The QP's
  // value falls at every step; at most 3 m + 20 steps.
  Vector r = -y, g = Vector::Zero(m), nu(n_groups), coef, f, sol;
  std::vector<signed char> edge(static_cast<size_t>(m), 0);
  auto centre = [&](Index q) {  // nu of a group without rows on an edge: the middle of its residuals
    const auto rq = r.segment(offsets[q], offsets[q + 1] - offsets[q]);
    nu[q] = rq.size() ? 0.5 * (rq.maxCoeff() + rq.minCoeff()) : 0.0;
  };
  for (Index q = 0; q < n_groups; ++q) centre(q);
  const double r_tol = 1e-12 * (half + y.cwiseAbs().maxCoeff());
  TubeKkt<Side> kkt(X, group_of, n_groups);
  bool at_minimum = true, settled = false;
  Index joined = -1;
  double max_diag = 0.0;
  for (Index k = 0; k < m; ++k) max_diag = std::max(max_diag, X.gram(k, k));
  // rounding (a group's only row gets g = +-1e-17): flows below 1e-12 of one that moves r by max |y| count as 0
  const double g_floor = 1e-12 * (half + y.cwiseAbs().maxCoeff()) / std::max(max_diag, 1e-300);
  auto from_flows = [&](const Vector& flows, Vector& coef_out, Vector& f_out) {  // w = -1/2 X^T g and f = X w
    X.sum_rows(flows, coef_out);
    coef_out *= -0.5;
    X.scores(coef_out, f_out);
  };
  Vector dg(m);
  for (Index step = 0; step < 3 * m + 20; ++step) {
    if (at_minimum) {  // the row farthest outside the band joins, or none is outside: optimal
      Index far = -1;
      double excess = r_tol;
      for (Index k = 0; k < m; ++k) {
        const double d = std::abs(r[k] - nu[group_of[k]]) - half;
        if (edge[k] == 0 && d > excess) {
          excess = d;
          far = k;
        }
      }
      settled = far < 0;
      if (settled || !kkt.join(far)) break;
      edge[far] = r[far] - nu[group_of[far]] > 0.0 ? 1 : -1;
      joined = far;
    }
    const Index n = kkt.size();
    Vector rhs = Vector::Zero(n);  // [K_SS / 2, A^T; A, 0] [g_S; nu] = [-y_S - edge eps / 2; 0]
    for (Index a = 0; a < n; ++a)
      if (kkt.var(a) >= 0) rhs[a] = -y[kkt.var(a)] - edge[kkt.var(a)] * half;
    sol = kkt.solve(rhs);
    if (!sol.allFinite()) break;
    double t = 1.0, g_max = 0.0;
    Index blocking = -1;
    for (Index a = 0; a < n; ++a)
      if (kkt.var(a) >= 0) g_max = std::max(g_max, std::abs(sol[a]));
    const double g_tol = std::max(1e-13 * g_max, g_floor);
    for (Index a = 0; a < n; ++a) {  // the ratio test: g_k keeps its sign
      const Index k = kkt.var(a);
      if (k >= 0 && edge[k] * sol[a] < -g_tol) {
        const double tk = g[k] / (g[k] - sol[a]);
        if (tk < t) {
          t = tk;
          blocking = k;
        }
      }
    }
    if (blocking == joined && t <= 0.0) break;  // the row that joined cannot move (K_SS singular): no progress
    dg.setZero();
    for (Index a = 0; a < n; ++a) {
      const Index k = kkt.var(a);
      if (k < 0) continue;
      const double next = edge[k] * (g[k] + t * (sol[a] - g[k])) < 0.0 ? 0.0 : g[k] + t * (sol[a] - g[k]);
      dg[k] = next - g[k];  // within g_tol of the sign: 0
      g[k] = next;
    }
    at_minimum = blocking < 0;
    if (!at_minimum) {
      dg[blocking] -= g[blocking];
      g[blocking] = 0.0;
      edge[blocking] = 0;
      kkt.leave(blocking);
    }
    joined = -1;
    from_flows(dg, coef, f);  // r moves by -1/2 K dg
    r += f;
    for (Index q = 0; q < n_groups; ++q) {
      const Index at = kkt.group_position(q);
      if (at < 0) centre(q);
      else if (at_minimum) nu[q] = sol[at];  // at the minimiser on S: r_S = nu + edge eps / 2
    }
  }
  // the point reached, its scores formed afresh
  from_flows(g, coef, f);
  r = f - y;
  // D at the flows sent in proportion: the positive parts scaled to the negative ones' sum, so that every group's
  // flows sum to zero; valid where no alpha_jk = g_j- g_k+ / sum g+ exceeds 2c
  bool within = true;
  for (Index q = 0; q < n_groups; ++q) {
    const Index lo = offsets[q], n = offsets[q + 1] - lo;
    double pos = 0.0, neg = 0.0, pos_max = 0.0, neg_max = 0.0;
    for (Index k = lo; k < lo + n; ++k) {
      pos += std::max(0.0, g[k]);
      neg += std::max(0.0, -g[k]);
      pos_max = std::max(pos_max, g[k]);
      neg_max = std::max(neg_max, -g[k]);
    }
    if (!(pos > 0.0) || !(neg > 0.0)) {
      g.segment(lo, n).setZero();
      continue;
    }
    for (Index k = lo; k < lo + n; ++k)
      if (g[k] > 0.0) g[k] *= neg / pos;
    within = within && pos_max * (neg / pos) * neg_max <= 2.0 * cn * neg;
  }
  Vector coef_d, f_d;
  from_flows(g, coef_d, f_d);
  if (within) {
    const double ww = X.squared_norm(coef_d, f_d), sent = 0.5 * g.lpNorm<1>();
    const double dual = -ww - g.dot(y) - opt.eps * sent;
    p.lower = std::max(p.lower, dual - u * (ww + g.cwiseAbs().dot(y.cwiseAbs()) + opt.eps * sent));
  }
  // F at the last solve's w, kept where it is lower
  Vector gw(m);
  auto consider = [&](Vector& coef_t, Vector& f_t) {
    const Vector r_t = f_t - y;
    double n_out = 0.0;
    const double ww = X.squared_norm(coef_t, f_t);
    const double Fw = ww + cn * loss(r_t.data(), gw.data(), &n_out);
    if (!(Fw < p.F)) return;
    p.F = Fw;
    p.F_round = objective_rounding(ww, cn, gw, r_t, opt.eps, n_out);
    p.coef.swap(coef_t);
    p.f.swap(f_t);
  };
  // At a large c every pair that misses an edge by rounding pays c: the same active set solved for a band narrower by
  // tau on each side (tau by decades from a bound of the residuals' rounding) puts them inside, at a cost of O(tau)
  // in ||w||^2.
  const double tau0 =
      8.0 * std::numeric_limits<double>::epsilon() * (f.cwiseAbs().maxCoeff() + y.cwiseAbs().maxCoeff());
  consider(coef, f);
  for (double tau = tau0; settled && tau > 0.0 && tau <= 1e-4 * half; tau *= 10.0) {
    const Index n = kkt.size();
    Vector rhs = Vector::Zero(n), g_tau = Vector::Zero(m);
    for (Index a = 0; a < n; ++a)
      if (kkt.var(a) >= 0) rhs[a] = -y[kkt.var(a)] - edge[kkt.var(a)] * (half - tau);
    sol = kkt.solve(rhs);
    for (Index a = 0; a < n; ++a)
      if (kkt.var(a) >= 0) g_tau[kkt.var(a)] = sol[a];
    from_flows(g_tau, coef, f);
    consider(coef, f);
  }
  return gap_of(p.F + p.F_round - p.lower, F0 - p.lower, p.F, F0) <= opt.tol;
}

// Cutting planes on the one-slack form with the OCAS line search (Franc & Sonnenburg, JMLR 10,
// 2009), in scaled coordinates.
//
// Scaling.  With (g, P) the piece active at a point, R(w) >= (C/N)(g . (Xw - y) - 2 eps P) for
// every w, with equality there.  Measured from w = 0 and with w = kappa u, the model becomes
//   F^(u) = <u, u> + max_t (a~_t . u + b^_t),  a~_t = phi X^T g_t,  b^_t = phi Delta_t / kappa,
// phi = (C/N) / kappa.  kappa = min((C/N) ||X^T g_0||, sqrt((C/N) L(-y))) bounds ||w*|| (the
// optimum is -1/2 of a convex combination of the planes, and ||w*||^2 <= F(0)), so u stays of
// order one for any scale of X, y and C: X * 1e-200, y * 1e150 or C = 1e-100 leave an optimum
// whose decrease F(0) - F* is far below the rounding of F(0), and F^ still resolves it.
//
// Stopping.  The dual of the cut model gives a lower bound lb^ <= F^*, and F^(0) = 0, so
// F(0) - min F <= -kappa^2 lb^.  The loop stops when the gap F^_best - lb^ is at most tol times
// the smaller of that achievable decrease, -lb^, and F_best itself (gap_of).  The decrease cannot
// vanish unless w = 0 is optimal (the first plane alone gives -lb^ >= ||a~_0||^2 / 4 > 0), so w = 0
// is never reported as converged merely because the decrease is small next to F(0); F_best bounds
// the error relative to F* where F(0) is far above it (a large C: F(0) / F* = 1e5 at m = 40,
// C = 1e5, where a gap relative to the decrease alone accepted a model 0.8% above F*).
//
// OCAS: besides the model minimiser u_c keep the best point u_b; each round moves u_b to the
// minimiser of F on the segment towards u_c (bisection on the slope, in score space: no product
// with X or K) and places the next cut at (1 - mu) u_b + mu u_c.  Plain cutting planes need
// hundreds to thousands of cuts at large C; this needs tens.
template <class Model, class Side>
SvrankResult cutting_plane(Model& model, const Side& side, const VectorCRef& y, const IndexVectorCRef& offsets,
                           const SvrankOptions& opt) {
  const Index m = y.size();
  const Index n_groups = offsets.size() - 1;
  require(offsets.size() >= 2, "svrank: group offsets need at least two entries");
  check_offsets(offsets.data(), n_groups, m);
  require(opt.C > 0 && std::isfinite(opt.C), "svrank: C must be finite and > 0");
  require(opt.eps >= 0 && std::isfinite(opt.eps), "svrank: epsilon must be finite and >= 0");
  require(opt.tol >= 0, "svrank: tol must be >= 0");
  require(opt.max_iter >= 1, "svrank: max_iter must be >= 1");
  bool has_pair = false;
  const double n_pairs = ordered_pairs(offsets.data(), n_groups, &has_pair);
  require(has_pair, "svrank: no pair of rows shares a group; every group has a single row");
  const double cn = opt.C / n_pairs;
  const Index n = model.dim();

  PairLoss pair_loss(m, offsets.data(), n_groups, opt.eps, opt.n_threads);
  SvrankResult res;
  Vector g0(m);
  double P0 = 0.0;
  const Vector minus_y = -y;
  const double L0 = pair_loss(minus_y.data(), g0.data(), &P0);
  res.n_iter = 1;
  if (!(L0 > 0.0)) {  // every target difference is within epsilon: w = 0 is optimal, F = 0
    res.coef = Vector::Zero(n);
    res.converged = true;
    res.gap_history.push_back(0.0);
    return res;
  }
  const double sa = model.plane_scale(g0);
  double kappa = std::sqrt(cn * L0);
  if (sa > 0.0) kappa = std::min(kappa, cn * sa);
  require(kappa > 0.0 && std::isfinite(kappa),
          "svrank: C, X and y are too far apart in scale for double precision; rescale X or y");
  const double phi = cn / kappa;
  ScaledOracle oracle(pair_loss, y, g0, P0, opt.eps, kappa, phi);

  constexpr double mu = 0.1;
  Vector ub = Vector::Zero(n), fb = Vector::Zero(m), uc(n), fc(m), ucut = ub, fcut = fb, D, fD, ft(m), qcol;
  Vector gcut = g0, gb = g0;  // the pieces at the cut point and at the best point u_b
  double bcut = 0.0, dcut = 0.0;   // b^ and Delta of the plane at 0
  double Fb = 0.0;     // F^(0) = 0
  double Fb_scale = 0.0;
  if (opt.w0.size() == n && opt.w0.allFinite()) {
    // Warm start (a neighbouring C's solution): the first plane and the best point at w0 instead
    // of at 0 when w0 is the better point.  Exactness is untouched: every plane is a tangent of R,
    // and the gap test is the same.
    ucut = opt.w0 / kappa;
    model.fu(ucut, fcut);
    const double Fw = oracle(model.inner(ucut, fcut, ucut, fcut), fcut);
    if (Fw < 0.0) {
      gcut = oracle.g;
      bcut = oracle.plane_offset();
      dcut = oracle.delta();
      Fb = Fw;
      Fb_scale = oracle.scale;
      ub = ucut;
      fb = fcut;
      gb = gcut;
    }
  }
  Matrix Q(16, 16);
  Vector b(16), lam;
  // Planes unused (lambda = 0) for kPrune consecutive iterations are dropped: the working set
  // stays small.  best_lb keeps the largest bound seen (every model was a lower bound when solved).
  constexpr Index kPrune = 20;
  std::vector<Index> idle;
  Index k = 0;
  double best_lb = -std::numeric_limits<double>::infinity();
  double last_gap = 1.0;
  const double F0_scaled = cn * L0 / (kappa * kappa);  // F(0) in the units of F^
  const double tiny = std::numeric_limits<double>::epsilon();
  // The planes' pieces (g_t, Delta_t) are kept unscaled: they are tangents of the pair loss L
  // itself, valid for every C, and seed the model of a neighbouring C (opt.warm_planes).
  std::vector<Vector> plane_g;
  std::vector<double> plane_delta;
  auto add_plane = [&](const Vector& gt, double delta, double weight) {
    if (k == Q.cols()) {
      Q.conservativeResize(2 * k, 2 * k);
      b.conservativeResize(2 * k);
    }
    b[k] = phi * delta / kappa;
    model.add(gt, phi, qcol);
    Q.col(k).head(k + 1) = qcol;
    Q.row(k).head(k + 1) = qcol.transpose();
    lam.conservativeResize(k + 1);
    lam[k] = weight;
    idle.push_back(0);
    plane_g.push_back(gt);
    plane_delta.push_back(delta);
    ++k;
  };
  const Index n_warm = opt.warm_planes.cols();
  if (n_warm > 0 && opt.warm_planes.rows() == m && opt.warm_deltas.size() == n_warm &&
      opt.warm_weights.size() == n_warm && opt.warm_weights.sum() > 0.0)
    for (Index j = 0; j < n_warm; ++j) add_plane(opt.warm_planes.col(j), opt.warm_deltas[j], opt.warm_weights[j]);
  if (k > 0) lam /= lam.sum();
  (void)bcut;
  // The best point in F's own units, for the hard tube (hard_tube_finish).
  double best_point_F = 0.0;
  auto best_point = [&]() {
    TubePoint p;
    p.coef = kappa * ub;
    p.f = kappa * fb;
    const Vector r = p.f - y;
    Vector g(m);
    double out = 0.0;
    const double ww = p.ww = kappa * kappa * model.inner(ub, fb, ub, fb);
    p.F = best_point_F = ww + cn * pair_loss(r.data(), g.data(), &out);
    p.F_round = objective_rounding(ww, cn, g, r, opt.eps, out);
    p.lower = cn * L0 + kappa * kappa * best_lb;
    return p;
  };
  TubePoint finish;
  bool finished = false, hard_tube_tried = false;
  for (Index t = 1;; ++t) {
    res.n_iter = t;
    add_plane(gcut, dcut, k == 0 ? 1.0 : 0.0);
    // The model minimiser is needed to about the precision of the current gap (first order).
    const double step_tol = std::min(1e-6, std::max(1e-14, 1e-3 * last_gap));
    best_lb = std::max(best_lb, simplex_qp(Q.topLeftCorner(k, k), b.head(k), lam, step_tol));
    model.combine(lam, uc, fc);
    // Line search from u_b towards u_c: phi(s) = F^(u_b + s D) is convex; its slope is
    // 2 <u_b, D> + 2 s <D, D> + phi g(s) . fD.
    D = uc - ub;
    fD = fc - fb;
    const double bD = model.inner(ub, fb, D, fD), DD = model.inner(D, fD, D, fD);
    bool improved = false;
    const double ubub = model.inner(ub, fb, ub, fb);
    auto value = [&](double s) {
      ft = fb + s * fD;
      return oracle(ubub + 2.0 * s * bD + s * s * DD, ft);
    };
    struct Probe {
      double t, v, slope, scale;
      Vector g;
    };
    auto probe = [&](double s) {
      const double v = value(s);
      return Probe{s, v, 2.0 * bD + 2.0 * s * DD + phi * oracle.g.dot(fD), oracle.scale, oracle.g};
    };
    // At s = 0 the value and the piece are u_b's own, known without an oracle call.
    const Probe at0{0.0, Fb, 2.0 * bD + phi * gb.dot(fD), Fb_scale, Vector()};
    if (DD > 0.0 && at0.slope < 0.0) {
      // u_b need not be exact: F^ on the segment to a ten-thousandth of the gap before the search, or a
      // thousandth of the gap tol accepts, or rounding.
      const double accepted = opt.tol * gap_scale(-best_lb, F0_scaled + Fb, F0_scaled);
      const double enough =
          std::max({1e-4 * (Fb - best_lb), 1e-3 * accepted, 64.0 * tiny * (Fb_scale + std::abs(best_lb))});
      const Probe p = convex_segment_minimum(at0, probe, enough, 60, 1e-15);
      if (p.v < Fb) {
        Fb = p.v;
        Fb_scale = p.scale;
        gb = p.g;
        ub += p.t * D;
        fb += p.t * fD;
        improved = true;
      }
    }
    // F^_b and lb^ are sums of terms of the size of phi |g . fu| and |b^|; the gap cannot be
    // resolved below their rounding.
    const double decrease = -best_lb;
    const double floor_abs = 64.0 * tiny * (Fb_scale + std::abs(best_lb));
    const double gap_abs = Fb - best_lb;
    const double gap = gap_of(gap_abs, decrease, F0_scaled + Fb, F0_scaled);
    res.gap_history.push_back(gap);
    last_gap = gap;
    if (decrease <= 0.0 || gap <= opt.tol) {
      res.converged = true;
      break;
    }
    // The gap cannot be resolved below the rounding of F^ and lb^: no plane can certify tol any more (converged
    // false: the caller warns), unless the hard tube does.
    const bool at_floor = gap_abs <= floor_abs;
    // The hard tube (hard_tube_finish): its QP does not depend on the planes, nor do their lower bounds reach F*
    // where it is needed.  Tried once: at 16 planes where X has at least as many features as rows (every y fits);
    // else the best point is evaluated afresh at 16, 32, 64, ... planes and the hard tube tried once its pair term
    // is at most 1% of F (it is 0 at the hard tube's optimum); else at max_iter or at the rounding floor.
    const bool last = t >= opt.max_iter || at_floor;
    if (!hard_tube_tried && (last || (t >= 16 && (t & (t - 1)) == 0))) {
      finish = best_point();
      if (last || side.any_target() || finish.F - finish.ww <= 1e-2 * finish.F) {
        hard_tube_tried = true;
        const bool certified = hard_tube_finish(side, pair_loss, y, offsets, opt, cn, cn * L0, finish);
        if (certified || (last && finish.F < best_point_F)) {  // at the end: the better point
          res.converged = certified;
          finished = true;
          break;
        }
      }
    }
    if (at_floor) break;
    if (t >= opt.max_iter) break;
    // A round without progress of u_b cuts at the model minimiser itself (plain cutting planes),
    // which always adds information; otherwise OCAS's point between the two.
    const double mu_t = improved ? mu : 1.0;
    ucut = (1.0 - mu_t) * ub + mu_t * uc;
    fcut = (1.0 - mu_t) * fb + mu_t * fc;
    const double Fcut = oracle(model.inner(ucut, fcut, ucut, fcut), fcut);
    gcut = oracle.g;
    dcut = oracle.delta();
    if (Fcut < Fb) {
      Fb = Fcut;
      Fb_scale = oracle.scale;
      ub = ucut;
      fb = fcut;
      gb = gcut;
    }
    bool prune = false;
    for (Index j = 0; j < k; ++j) {
      idle[j] = lam[j] > 0.0 ? 0 : idle[j] + 1;
      prune = prune || idle[j] > kPrune;
    }
    if (prune) {
      std::vector<Index> keep;
      for (Index j = 0; j < k; ++j)
        if (idle[j] <= kPrune) keep.push_back(j);
      const Index nk = static_cast<Index>(keep.size());
      for (Index a = 0; a < nk; ++a) {
        for (Index c2 = 0; c2 < nk; ++c2) Q(a, c2) = Q(keep[a], keep[c2]);  // keep[a] >= a: in place
        b[a] = b[keep[a]];
        lam[a] = lam[keep[a]];
        idle[a] = idle[keep[a]];
        plane_g[a].swap(plane_g[keep[a]]);
        plane_delta[a] = plane_delta[keep[a]];
      }
      plane_g.resize(nk);
      plane_delta.resize(nk);
      lam.conservativeResize(nk);
      idle.resize(nk);
      model.compact(keep);
      k = nk;
    }
  }
  if (finished) {  // the finish's point, and its certified gap
    res.coef = std::move(finish.coef);
    res.objective = finish.F;
    res.lower_bound = finish.lower;
    res.gap_history.back() = gap_of(finish.F - finish.lower, cn * L0 - finish.lower, finish.F, cn * L0);
  } else {  // the reported objective is F itself at w = kappa u_b, evaluated directly
    res.coef = kappa * ub;
    const Vector r = kappa * fb - y;
    Vector g(m);
    const double Lb = pair_loss(r.data(), g.data());
    res.objective = kappa * kappa * model.inner(ub, fb, ub, fb) + cn * Lb;
    res.lower_bound = cn * L0 + kappa * kappa * best_lb;
  }
  res.planes.resize(m, k);
  for (Index j = 0; j < k; ++j) res.planes.col(j) = plane_g[j];
  res.deltas = Eigen::Map<const Vector>(plane_delta.data(), k);
  res.weights = lam.head(k);
  return res;
}
}  // namespace

double svrank_pair_loss(const double* r, Index m, const std::int64_t* offsets, Index n_groups, double eps, double* g,
                        int n_threads) {
  check_offsets(offsets, n_groups, m);
  require(eps >= 0 && std::isfinite(eps), "svrank: epsilon must be finite and >= 0");
  PairLoss loss(m, offsets, n_groups, eps, n_threads);
  return loss(r, g);
}

double svrank_squared_pair_loss(const double* r, Index m, const std::int64_t* offsets, Index n_groups, double eps,
                                double* g, const double* v, double* hv, int n_threads) {
  check_offsets(offsets, n_groups, m);
  require(eps >= 0 && std::isfinite(eps), "svrank: epsilon must be finite and >= 0");
  require(m < (Index(1) << 32), "svrank: more than 2^32 rows");
  std::vector<std::uint32_t> key(m), key2(m), idx(m), idx2(m);
  std::vector<double> val(m), group_loss(n_groups);
  parallel_for(0, n_groups, pair_sum_threads(m, n_groups, n_threads), 16, [&](Index lo, Index hi) {
    for (Index q = lo; q < hi; ++q) {
      const Index o = offsets[q];
      SortBuffers b{key.data() + o, idx.data() + o, key2.data() + o, idx2.data() + o, val.data() + o};
      group_loss[q] = group_squared_pair_loss(r, o, offsets[q + 1], eps, g, v, hv, b);
    }
  });
  double total = 0.0;
  for (Index q = 0; q < n_groups; ++q) total += group_loss[q];  // fixed order: thread-count independent
  return total;
}

double svrank_linear_oracle(const RowMatrixCRef& X, const VectorCRef& y, const VectorCRef& w,
                            const IndexVectorCRef& offsets, double C, double eps, Vector& grad, int n_threads) {
  const Index m = X.rows();
  require(y.size() == m && w.size() == X.cols(), "svrank: shapes of X, y and w disagree");
  require(offsets.size() >= 2, "svrank: group offsets need at least two entries");
  const Index n_groups = offsets.size() - 1;
  check_offsets(offsets.data(), n_groups, m);
  bool has_pair = false;
  const double scale = C / ordered_pairs(offsets.data(), n_groups, &has_pair);
  Vector f, g(m), wv = w;
  x_times(X, wv, f);
  f -= y;
  PairLoss loss(m, offsets.data(), n_groups, eps, n_threads);
  const double L = loss(f.data(), g.data());
  g *= scale;
  xt_times(X, g, grad);
  return scale * L;
}

SvrankResult svrank_linear(const RowMatrixCRef& X, const VectorCRef& y, const IndexVectorCRef& offsets,
                           const SvrankOptions& opt) {
  require(y.size() == X.rows(), "svrank: X and y have different numbers of rows");
  LinearModel model(X);
  return cutting_plane(model, LinearSide{X}, y, offsets, opt);
}

SvrankResult svrank_kernel(const MatrixCRef& K, const VectorCRef& y, const IndexVectorCRef& offsets,
                           const SvrankOptions& opt) {
  require(K.rows() == K.cols(), "svrank: the kernel matrix must be square");
  require(y.size() == K.rows(), "svrank: K and y have different numbers of rows");
  KernelModel model(K);
  return cutting_plane(model, KernelSide{K}, y, offsets, opt);
}

// Primal active-set method on the simplex for min phi(l) = 1/4 l^T Q l - b^T l.  The working set
// W holds the variables free to move; each step takes the proximal point of the current l on
// {l_W : sum = 1},  z = argmin phi(z) + delta/2 ||z - l_W||^2  (one Cholesky factorisation of
// Q_WW / 2 + delta I, positive definite for delta > 0 although Q is only PSD: planes are linearly
// dependent once there are more of them than dimensions), and searches exactly along p = z - l_W
// on phi itself, cut at the first bound.  With delta = 1e-10 max diag(Q_WW / 2) the step is
// Newton's where phi is curved and a long steepest-descent step (to a bound) where it is flat.
// Cholesky costs f^3 / 3 against the ~9 f^3 of the eigendecomposition it replaced: the working
// set reaches hundreds of planes for grouped kernel problems at large C.

double simplex_qp(const MatrixCRef& Q, const VectorCRef& b, Vector& lam, double step_tol) {
  const Index k = b.size();
  require(Q.rows() == k && Q.cols() == k && lam.size() == k, "simplex_qp: sizes disagree");
  if (k == 1) {
    lam.setOnes(1);
    return b[0] - 0.25 * Q(0, 0);
  }
  lam = lam.cwiseMax(0.0);
  lam /= lam.sum();
  std::vector<char> in_w(k);
  for (Index i = 0; i < k; ++i) in_w[i] = lam[i] > 0.0;
  // The newest plane (last) is the cut just added: it is violated by the previous solution, so it
  // enters the working set at once instead of after a first, wasted optimality check.
  in_w[k - 1] = 1;
  Vector grad(k), ql(k), gw, p, qp, rhs, hc;
  Matrix M;
  std::vector<Index> idx;
  const Index max_steps = 50 * k + 500;
  for (Index step = 0; step < max_steps; ++step) {
    interrupt::poll();
    ql.noalias() = Q * lam;
    grad = 0.5 * ql - b;
    idx.clear();
    for (Index i = 0; i < k; ++i)
      if (in_w[i]) idx.push_back(i);
    const Index f = static_cast<Index>(idx.size());
    gw.resize(f);
    for (Index a = 0; a < f; ++a) gw[a] = grad[idx[a]];
    const double nu = gw.mean();
    const double phi_scale = std::max({std::abs(b.dot(lam)), 0.25 * lam.dot(ql), 1e-300});
    bool stationary = true;
    if (f > 1) {
      // Proximal step p = argmin phi(l + p) + delta/2 ||p||^2 over sum(p) = 0, in the basis
      // p = Z d, Z = [I; -1^T] (the last free variable absorbs the sum): Z^T H Z d = -Z^T g_W with
      // H = Q_WW / 2 + delta I, positive definite.
      const Index l = f - 1;
      double dmax = 0.0;
      for (Index a = 0; a < f; ++a) dmax = std::max(dmax, 0.5 * Q(idx[a], idx[a]));
      const double delta = std::max(1e-10 * dmax, 1e-300);
      auto H = [&](Index a, Index c) { return 0.5 * Q(idx[a], idx[c]) + (a == c ? delta : 0.0); };
      M.resize(l, l);
      rhs.resize(l);
      const double hll = H(l, l);
      for (Index a = 0; a < l; ++a) {
        const double hal = H(a, l);
        for (Index c = 0; c <= a; ++c) M(a, c) = H(a, c) - hal - H(l, c) + hll;
        rhs[a] = gw[l] - gw[a];
      }
      Eigen::LLT<Matrix> llt(M.selfadjointView<Eigen::Lower>());
      hc = llt.solve(rhs);
      p.resize(f);
      p.head(l) = hc;
      p[l] = -hc.sum();
      p.array() -= p.mean();  // stay on sum(l) = 1 despite rounding
      const double slope = gw.dot(p);
      // Stop on a step that no longer moves l (the primal point -1/2 sum l_t a_t needs l itself to
      // full precision, not only the value of phi).
      if (slope < 0.0 && (slope < -1e-15 * phi_scale || p.cwiseAbs().maxCoeff() > step_tol)) {
        stationary = false;
        qp.setZero(f);
        for (Index a = 0; a < f; ++a)
          for (Index c = 0; c < f; ++c) qp[a] += 0.5 * Q(idx[a], idx[c]) * p[c];
        const double curv = p.dot(qp);
        const double a_line = curv > 0.0 ? -slope / curv : std::numeric_limits<double>::infinity();
        double a_bound = std::numeric_limits<double>::infinity();
        Index blocking = -1;
        for (Index a = 0; a < f; ++a)
          if (p[a] < 0.0) {
            const double s = -lam[idx[a]] / p[a];
            if (s < a_bound) {
              a_bound = s;
              blocking = a;
            }
          }
        const double alpha = std::min(a_line, a_bound);
        for (Index a = 0; a < f; ++a) lam[idx[a]] += alpha * p[a];
        if (a_bound <= a_line && blocking >= 0) {
          lam[idx[blocking]] = 0.0;
          in_w[idx[blocking]] = 0;
        }
        for (Index a = 0; a < f; ++a)
          if (lam[idx[a]] <= 0.0) {
            lam[idx[a]] = 0.0;
            in_w[idx[a]] = 0;
          }
        lam /= lam.sum();
      }
    }
    if (!stationary) continue;
    // Optimal on the working set: add the variable with the most negative reduced cost.
    const double gscale = std::max(grad.cwiseAbs().maxCoeff(), 1e-300);
    Index best = -1;
    double best_cost = -1e-13 * gscale;
    for (Index i = 0; i < k; ++i)
      if (!in_w[i] && grad[i] - nu < best_cost) {
        best_cost = grad[i] - nu;
        best = i;
      }
    if (best < 0) break;
    in_w[best] = 1;
  }
  return b.dot(lam) - 0.25 * lam.dot(Q * lam);
}

}  // namespace fastrank
