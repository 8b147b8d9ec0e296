// RankRLS dense solvers (Pahikkala et al. 2009).
//
// The dual solution (eq. 17) A = (L K + alpha I)^-1 b, b = M N, is never formed through the
// non-symmetric L K.  Because b lies in range(L), so does A, and for any factor L = F F^T with
// b = F c the substitution A = F u turns (17) into the symmetric positive definite system
//     (F^T K F + alpha I) u = c,
// solved by Cholesky (one alpha) or by one eigendecomposition for a whole regularization path
// (the symmetric form of eq. 31: each extra alpha costs O(r^2 v), all of them one GEMM).
//   * scoring setting (eq. 23, 25): F = S = L^{1/2} (block centering, laplacian.hpp), c = S y;
//     F^T K F = S K S is formed in place in O(m^2).
//   * preference graph with l <= m edges: F = M (weighted incidence, eq. 12), c = N (eq. 13).
//   * preference graph with l > m: F = U_+ D_+^{1/2} from the eigendecomposition L = U D U^T,
//     c = D_+^{-1/2} U_+^T b.
// The primal solution (eq. 28) W = (X^T L X + alpha I)^-1 X^T b uses X^T L X = (S X)^T (S X)
// (eq. 30), accumulated by SYRK over row chunks of the centred data, never forming S X whole.
//
// Every solver accepts several alphas and multiple outputs: the returned matrix stacks the
// solutions alpha-major, columns [k v, (k+1) v) belong to alphas[k].
#pragma once
#include "fastrank/laplacian.hpp"
#include "fastrank/types.hpp"

namespace fastrank {

struct SolveReport {
  // Smallest reciprocal condition number of (G + alpha I) over the alphas (1-norm estimate for a
  // Cholesky solve, exact eigenvalue ratio on a path).
  double rcond = 1.0;
};

// Solves (G + alpha_k I) U_k = R for every alpha_k.  G (r x r, symmetric PSD) is overwritten by
// its Cholesky factor (one alpha) or its eigenvectors (several).  Throws LinAlgError if a
// system is not numerically positive definite.
Matrix solve_shifted_system(MatrixRef G, MatrixCRef R, const Vector& alphas, SolveReport* report);
// The same for a primal system X^T L X (``primal``): refused only when singular to working precision (reciprocal
// condition number <= r eps), not for an alpha below its rounding level, which a full-rank system does not need.
Matrix solve_shifted_system(MatrixRef G, MatrixCRef R, const Vector& alphas, SolveReport* report, bool primal);

// A solver of the shifted systems (G + alpha_k I) U_k = R (solve_shifted_system, or the
// tridiagonal path of tridiag_path.hpp).
using ShiftedSolver = Matrix (*)(MatrixRef G, MatrixCRef R, const Vector& alphas, SolveReport* report);

// Scoring setting, dual.  K (m x m kernel, rows/cols in group order) is overwritten; Y is m x v
// in group order.  Returns A (m x n_alphas v) in group order.  `solve` defaults to
// solve_shifted_system (Cholesky for one alpha, one eigendecomposition for several).
Matrix rankrls_dual_scores(MatrixRef K, const GroupStructure& groups, MatrixCRef Y, const Vector& alphas,
                           int n_threads, SolveReport* report, ShiftedSolver solve = nullptr);

// Preference graph, dual.  K (m x m) is overwritten.  Returns A (m x n_alphas v).
Matrix rankrls_dual_graph(MatrixRef K, const PreferenceGraph& graph, const Vector& alphas, int n_threads,
                          SolveReport* report);

// Scoring setting, primal (linear kernel).  X (m x n) and Y (m x v) are in ORIGINAL row order, row-major; order
// lists the rows group by group (empty = identity).  Y's constant per group does not change the model (L 1_q = 0):
// pass targets centred in their groups, so that a large offset cancels no digits.  Returns W (n x n_alphas v).
Matrix rankrls_primal_scores(RowMatrixCRef X, IndexVectorCRef order, const GroupStructure& groups, RowMatrixCRef Y,
                             const Vector& alphas, int n_threads, SolveReport* report);

// Preference graph, primal (linear kernel), O(l n + m n^2 + n^3).  Returns W (n x n_alphas v).
Matrix rankrls_primal_graph(RowMatrixCRef X, const PreferenceGraph& graph, const Vector& alphas, int n_threads,
                            SolveReport* report);

}  // namespace fastrank
