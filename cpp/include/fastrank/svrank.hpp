// SVRank (Cortes, Mohri, Rastogi, "Magnitude-preserving ranking algorithms", 000 §2.4, eq. 9 with
// the epsilon-insensitive cost (7), n = 1):
//
//   minimise  F(w) = ||w||^2 + (C / N) * sum_{q} sum_{i, j in q} max(0, |(f_j - f_i) - (y_j - y_i)| - eps)
//
// over ORDERED pairs (i, j) of rows of the same group q (i = j included; it costs 0), f = X w
// (linear) or f = K beta with ||w||^2 = beta^T K beta (kernel, representer form).  N = sum_q n_q^2
// is the number of ordered pairs, so one group gives the paper's C / m^2.
//
// The pair term depends on residual differences only: with r = f - y it is
// L(r) = sum_{i,j} h(r_j - r_i), h(t) = max(0, |t| - eps).  After sorting the residuals of a
// group, for row k let A_k = #{j : r_k - r_j > eps} and B_k = #{j : r_j - r_k > eps}; then
//   L = 2 sum_k sum_{j : r_k - r_j > eps} (r_k - r_j - eps)   and   g_k = dL/dr_k = 2 (A_k - B_k)
// (h' chosen 0 at its kinks), both in one two-pointer pass with prefix sums: O(m log m).
//
// Solver: cutting planes on the one-slack form (Joachims 2006; Teo et al.'s bundle method):
// R(w) = (C/N) L(Xw - y) is convex piecewise linear, so R(w) >= a_t . w + b_t at every
// linearisation point.  The model min_w ||w||^2 + max_t (a_t . w + b_t) is solved exactly in its
// dual over the simplex, max_lambda b^T lambda - 1/4 lambda^T Q lambda (Q = Gram matrix of the
// planes, w = -1/2 sum_t lambda_t a_t), by an active-set method warm-started from the previous
// lambda, with the OCAS line search (Franc & Sonnenburg 2009) between the best point and the
// model minimiser.  The dual value is a lower bound on min F; the loop stops when
// best F - best lower bound <= tol * min(best F, F(0) - lower bound) (scale-free; see cutting_plane
// in svrank.cpp).  Where every pair fits inside the tube at a large C, an exact solve of the
// tube's edges ends it (hard_tube_finish).
#pragma once
#include <cstdint>
#include <vector>

#include "fastrank/types.hpp"

namespace fastrank {

// Pairwise epsilon-insensitive loss of residuals r (rows grouped contiguously, group q is
// [offsets[q], offsets[q+1])), summed over ordered pairs inside each group, and its subgradient
// g (length m) with respect to r.  Returns L.
double svrank_pair_loss(const double* r, Index m, const std::int64_t* offsets, Index n_groups, double eps,
                        double* g, int n_threads);

// The squared epsilon-insensitive cost of 000 §2.2 with n = 2, h2(t) = max(0, |t| - eps)^2, summed
// over ordered pairs inside groups: L2(r) = sum_{i,j} h2(r_j - r_i).  It is differentiable with
// g_k = dL2/dr_k = 2 sum_j h2'(r_k - r_j) = 4 [sum_{r_k - r_j > eps} (r_k - r_j - eps)
//                                            - sum_{r_j - r_k > eps} (r_j - r_k - eps)],
// and its generalised Hessian is 4 times the Laplacian of the graph of pairs outside the tube:
// (H v)_k = 4 [c_k v_k - sum_{j : |r_k - r_j| > eps} v_j],  c_k = #{j : |r_k - r_j| > eps}.
// One sort per group and prefix sums (Welford's running mean and squared deviations for the loss,
// which does not cancel): O(m log m).  Writes g (length m) and, when v is given, hv = H v.
double svrank_squared_pair_loss(const double* r, Index m, const std::int64_t* offsets, Index n_groups, double eps,
                                double* g, const double* v, double* hv, int n_threads);

struct SvrankOptions {
  double C = 1.0;
  double eps = 0.1;
  double tol = 1e-6;     // cutting-plane gap relative to min(F, F(0) - lower bound)
  Index max_iter = 1000;  // oracle calls
  int n_threads = 1;
  Vector w0;              // warm start: w (linear) or beta (kernel); empty: w = 0
  // Warm start of the cut model: planes (g_t, m x k), their Delta_t and master weights, as returned
  // in SvrankResult by a solve on the same X, y, groups and epsilon with any C (empty: none).
  Matrix warm_planes;
  Vector warm_deltas, warm_weights;
};

struct SvrankResult {
  Vector coef;            // w (linear, n) or beta (kernel, m)
  Index n_iter = 0;
  bool converged = false;
  double objective = 0;   // F at coef
  double lower_bound = 0; // certified lower bound on min F
  std::vector<double> gap_history;  // (best F - lower bound) / min(best F, F(0) - lower bound) per iteration
  Matrix planes;          // the final cut model: subgradients g_t of the pair loss (m x k), their
  Vector deltas, weights; // Delta_t and master weights (SvrankOptions::warm_planes)
};

// Linear SVRank; X (m x n, C order), y (m), rows grouped by offsets.
SvrankResult svrank_linear(const RowMatrixCRef& X, const VectorCRef& y, const IndexVectorCRef& offsets,
                           const SvrankOptions& opt);
// Kernel SVRank in the representer form f = K beta; K (m x m, symmetric PSD).
SvrankResult svrank_kernel(const MatrixCRef& K, const VectorCRef& y, const IndexVectorCRef& offsets,
                           const SvrankOptions& opt);

// One evaluation of R(w) = (C/N) L(Xw - y) and its subgradient X^T (C/N) g (benchmarks, tests).
double svrank_linear_oracle(const RowMatrixCRef& X, const VectorCRef& y, const VectorCRef& w,
                            const IndexVectorCRef& offsets, double C, double eps, Vector& grad, int n_threads);

// Exact solution of max_lambda b^T lambda - 1/4 lambda^T Q lambda over the probability simplex
// (Q symmetric PSD, k x k), warm-started from lambda (feasible).  Returns the maximum.  The
// active-set loop stops once a step moves no lambda by more than step_tol (or phi no longer
// decreases); the cutting-plane solver loosens it while its own gap is large.
double simplex_qp(const MatrixCRef& Q, const VectorCRef& b, Vector& lambda, double step_tol = 1e-14);

}  // namespace fastrank
