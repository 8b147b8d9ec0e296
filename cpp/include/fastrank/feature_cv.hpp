// Exact leave-group-out and leave-pair-out for RankRLS with a finite feature map (linear kernel,
// or the subset-of-regressors features of fastrank/_holdout.py) through p x p systems only
// (Pahikkala et al. 2009, 004 eqs. 28-30 and 33-39, rederived in feature space).
//
// Notation.  Phi (m x p) features, groups q with n_q rows, pair weight c_q; Xc the rows centred by
// their group's mean mu_q, Yc likewise.  The scoring Laplacian L = blockdiag(c_q (n_q I - 1 1^T))
// gives X^T L X = sum_q c_q n_q Xc_q^T Xc_q (eq. 30), so the model is
//     w = A^-1 b,  A = sum_q c_q n_q Xc_q^T Xc_q + alpha I,  b = sum_q c_q n_q Xc_q^T Yc_q.
// Removing rows U of group q (every pair touching them) with k = n_q - |U| rows kept changes the
// group's term to c_q k (Xc_T^T Xc_T - s_T s_T^T / k) (centring with the full group's mean
// leaves the kept rows' Laplacian term unchanged; s_T = -s_U), i.e. A and b lose a term of rank
// <= |U| + 1:  A' = A_0 - U D U^T,  b' = b_0 - U D Yc_U  (U = Xc_U^T).  With B0 = A_0^-1,
// G = U^T B0 U, g = U^T B0 b_0, the retrained predictions of the held-out rows P = Phi_U^T are
//     P^T w' = f0_U + (G + 1 kappa^T) ((I - D G)^-1 D r - D Yc_U),   r = g - G D Yc_U,
// (Woodbury), f0 = Phi w0 the predictions of (A_0, b_0) and kappa = Xc_U B0 mu_q.
//   * leave-group-out: A_0 = A, D = c_q n_q I (|U| = n_q; k = 0);  O(n_q^2 p + n_q^3) per group
//     after one Cholesky factor of A (groups with n_q >= p retrain their p x p system directly);
//   * leave-pair-out {a, b} in group q of size n (k = n - 2): A_0 = A - 2 c_q Xc_q^T Xc_q (the
//     group scaled by (n-2)/n, one factor per group), D = c_q [[k+1, 1], [1, k+1]], and every
//     pair costs O(v) from the entries G_ab = z_a . z_b of Z = Xc_q L_0^-T (formed once per group
//     as the n x n "hat" block when the group's pairs are dense, else one dot product per pair).
// Everything is exact (no eigendecomposition, no m x m matrix unless a group's pairs are dense).
#pragma once
#include "fastrank/lpo.hpp"
#include "fastrank/types.hpp"

namespace fastrank::cv {

// Rows of group q are Phi.row(order[offsets[q] .. offsets[q+1])); weight[q] = c_q >= 0.  *rcond receives the
// reciprocal condition number of the full-data system X^T L X + alpha I (the fit's), for the caller's checks.
// Leave-one-group-out predictions (m x v) in Phi's row order; a group of one row (no pairs) keeps
// the full-data prediction.
RowMatrix feature_leave_group_out(double* rcond, RowMatrixCRef Phi, RowMatrixCRef Y, IndexVectorCRef order,
                                  IndexVectorCRef offsets, VectorCRef weight, double alpha, int n_threads);

// Leave-pair-out predictions (n_pairs x 2v: [first outputs, second outputs]); pairs are positions
// in `order` (both inside one group of at least two rows).
RowMatrix feature_leave_pair_out(double* rcond, RowMatrixCRef Phi, RowMatrixCRef Y, IndexVectorCRef order,
                                 IndexVectorCRef offsets, VectorCRef weight, double alpha, PairMatrixCRef pairs,
                                 int n_threads);

// Leave-pair-out predictions of every pair of rows inside each group, never listing the pairs:
// rows i < j of the caller's order, lexicographic (order must list each group's rows in increasing
// order, as a stable sort by group does), (n_pairs x 2v).  The hat block of a group is formed a
// block of columns at a time and each row's pairs are computed in one vectorizable loop.
RowMatrix feature_leave_all_pairs_out(double* rcond, RowMatrixCRef Phi, RowMatrixCRef Y, IndexVectorCRef order,
                                      IndexVectorCRef offsets, VectorCRef weight, double alpha, int n_threads);

}  // namespace fastrank::cv
