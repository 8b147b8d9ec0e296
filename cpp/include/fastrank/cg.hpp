// Conjugate-gradient linear RankRLS for large sparse data (Pahikkala et al. 2009, Sect. 4.3).
//
// Primal system (n unknowns per output):  (X^T L X + alpha I) w = X^T b,
//   scoring setting (cost (21)):   b = L y,  L = blockdiag_q c_q (n_q I - 1 1^T)   (eq. 25),
//   preference graph (eq. 12-13):  b = M N,  L = M M^T.
// The operator is applied as X^T (L (X p)) + alpha p, never forming X^T L X, L or a pair list:
//   * groups: rows stay in their ORIGINAL order; the group of every row (from the GroupIndex) gives
//     (L u)_i = c_q (n_q u_i - sum_{j in q} u_j) with one O(m) pass of per-group sums;
//     object ranking is the single group; c_q = 1 (unweighted, the paper) or a per-group weight;
//   * graph: (L u) = M (M^T u), four scalar updates per edge, O(l).
// One iteration costs O(nnz + m + l) per output.  Every output column runs its own CG (own step
// sizes and stopping); the products are batched over the still-active columns and threaded.
// For one output in the scoring setting on CSR, L is folded into the two product loops (the X p
// loop accumulates the group sums, the X^T u loop forms (L X p)_i on the fly).
//
// Jacobi preconditioner: diag(X^T L X) + alpha, in O(nnz) (O(nnz + l * row nnz) for graphs):
//   groups: d_k = sum_q c_q ( n_q sum_{i in q} X_ik^2 - (sum_{i in q} X_ik)^2 ),
//   graph:  d_k = sum_e w_e^2 (X_{h_e k} - X_{t_e k})^2.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "fastrank/csr.hpp"
#include "fastrank/laplacian.hpp"
#include "fastrank/types.hpp"

namespace fastrank {

// The implicit Laplacian of a ranking task over rows in original order.
struct RankingLaplacian {
  enum class Kind { Groups, Graph };
  Kind kind = Kind::Groups;
  Index m = 0;
  // Groups: the rows of every group, the group of every row, size n_q and pair weight c_q.
  GroupIndex rows;
  std::vector<std::int64_t> codes;
  Vector group_size;
  Vector pair_weight;
  // Graph.
  PreferenceGraph graph;

  static RankingLaplacian groups(GroupIndex groups, VectorCRef pair_weight);
  static RankingLaplacian preferences(PreferenceGraph graph);

  // out = L U (m x v, row-major).
  void apply(const RowMatrix& U, RowMatrix& out) const;
  // The right-hand side before X^T: L Y (groups, Y m x v) or M N (graph; Y ignored).
  RowMatrix target_vector(const RowMatrix& Y) const;
  Index n_outputs(const RowMatrix& Y) const;
};

struct CgOptions {
  double alpha = 1.0;
  double tol = 1e-6;        // stop column j when ||r_j|| <= tol * ||X^T b_j||
  Index max_iter = 1000;
  bool jacobi = false;      // diagonal preconditioner
  int n_threads = 1;
  bool transpose_copy = false;  // sparse only: build X^T once instead of per-thread partial sums
  bool fixed_iterations = false;  // benchmark mode: run exactly max_iter iterations
};

struct CgResult {
  RowMatrix coef;                              // n x v
  Eigen::Matrix<std::int64_t, Eigen::Dynamic, 1> n_iter;  // v
  Eigen::Matrix<std::int8_t, Eigen::Dynamic, 1> converged;  // v
  Matrix residual_history;                     // (iterations + 1) x v, relative residual norms
                                               // ||r||/||X^T b||; NaN after a column stopped
  Vector rhs_norm;                             // ||X^T b_j||
};

// Called after every iteration with (iteration, relative residual norms); return true to stop.
using CgCallback = std::function<bool(Index, const Vector&)>;

// x0: optional n x v warm start (nullptr -> zeros).
CgResult cg_rankrls_csr32(const CsrView<std::int32_t>& X, const RankingLaplacian& L, const RowMatrix& Y,
                          const RowMatrix* x0, const CgOptions& options, const CgCallback& callback);
CgResult cg_rankrls_csr64(const CsrView<std::int64_t>& X, const RankingLaplacian& L, const RowMatrix& Y,
                          const RowMatrix* x0, const CgOptions& options, const CgCallback& callback);
CgResult cg_rankrls_dense(RowMatrixCRef X, const RankingLaplacian& L, const RowMatrix& Y, const RowMatrix* x0,
                          const CgOptions& options, const CgCallback& callback);

// diag(X^T L X) (length n), exposed for tests.
Vector cg_jacobi_diagonal_csr32(const CsrView<std::int32_t>& X, const RankingLaplacian& L);
Vector cg_jacobi_diagonal_csr64(const CsrView<std::int64_t>& X, const RankingLaplacian& L);
Vector cg_jacobi_diagonal_dense(RowMatrixCRef X, const RankingLaplacian& L);

}  // namespace fastrank
