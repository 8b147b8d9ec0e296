// Exact leave-pair-out and leave-group-out for ONE alpha from a Cholesky factor, in a form that
// stays accurate for small alpha (Pahikkala et al. 2009, 004 Sections 3.3-3.4, eqs. 33-39,
// rederived on the symmetric S K S system).
//
// Notation as in fastrank/lpo.hpp: rows in group order, S = blockdiag(s_q C_q), t = S y,
// Kz = S K S, and G_c = (Kz + alpha I)^+ restricted to range(S) (the per-group centred vectors).
// G_c is obtained as (Kz + alpha I + tau sum_q 1_q 1_q^T / n_q)^-1 - sum_q 1_q 1_q^T/(n_q (alpha +
// tau)): the shift tau (the mean diagonal of Kz) replaces the 1/alpha eigenvalue of every group's
// constant vector by 1/(alpha + tau), so the factor never carries the null space of S.
//
// Virtual targets.  Holding out inputs changes the Laplacian to L' = S N S with N = I - E,
// E supported on the rows of the touched groups (every retained pair keeps its weight).  The
// retrained model is the full model trained on t~ = t - E r, r = t - Z w' (the retrained
// residual in S-space), so r solves (I - H E) r = alpha G t with H = I - alpha G -- eq. (33)
// written with G instead of the hat matrix.  Two cases:
//   * whole group q (leave-group-out): E = I_q and  G_c,qq r = (G_c t)_q  (the ratio form of
//     the LOO identity; no 1 - H cancellation), then
//         f'_q = y_q - ybar_q - r / s_q + fbar_q - (1/n_q) kappa_q^T r,
//     kappa_q = G_c S K 1_q (the mean of the retrained predictions moves by it).
//   * pair {a, b} in group q of size n >= 3: removing the pair's 2n - 3 edges is
//     L'_q = rho L_q - c C E_U W E_U^T C with rho = (n-2)/n, W = (n-2) I + 1 1^T (eq. 36/37 in
//     this notation).  Step 1 scales group q by rho: its block of the new inverse is
//     (I + gamma G_c,qq)^-1 G_c,qq / rho, gamma = 2 alpha / (n - 2) (Woodbury; SPD with
//     eigenvalues >= 1, no cancellation).  Step 2 removes the rank-2 term; with
//     M = (I + gamma G_c,qq)^-1 G_c,qq, b = (I + gamma G_c,qq)^-1 (G_c t)_q,
//     k = (I + gamma G_c,qq)^-1 kappa_q:
//         e = M_UU^-1 b_U,  r_a = e_a - (e_a + e_b)/n,
//         f'_a = y_a - ybar_q - r_a / s_q + fbar1_q - (k_a e_a + k_b e_b) / n,
//     fbar1_q = fbar_q - 2 alpha / (n (n-2)) kappa_q^T b  (mean prediction of the step-1 model).
//     O(v) per pair after O(n^3) per group.
//   * object ranking (one group, n = m): step 1 is the whole problem with alpha / rho, so M, b,
//     k and fbar1 come directly from the factor of Kz + (alpha/rho) I (dpotrf + dpotri, ~m^3
//     flops; no eigendecomposition).
// A group of two rows loses all its pairs with the pair: its pair prediction is its
// leave-group-out prediction.
#pragma once
#include <functional>
#include <map>
#include <vector>

#include "fastrank/laplacian.hpp"
#include "fastrank/lpo.hpp"
#include "fastrank/types.hpp"

namespace fastrank::cv {

// Pair-phase data: per group q with n_q >= 3 the n_q x n_q matrix M_q (lower triangle read);
// per row b (m x v), k (m), base (m x v) = y - ybar + fbar1; rows of two-row groups: lgo (m x v).
struct InversePairBlocks {
  std::vector<Matrix> M;
  Matrix b;
  Vector k;
  Matrix base;
  Matrix lgo;
};

// Object ranking (one group of m rows, pair weight c): pairs of any two rows.
InversePairBlocks object_prepare_inverse(MatrixCRef K, double c, double alpha, MatrixCRef Y, int n_threads);
// Query groups (rows in group order): pairs inside one group.
InversePairBlocks group_prepare_inverse(MatrixCRef K, const GroupStructure& g, double alpha, MatrixCRef Y,
                                        int n_threads);

// Held-out predictions (n_pairs x 2v: [first outputs, second outputs]) / pairwise disagreement per
// output (as lpo_disagreement).  O(v) per pair, threaded.
RowMatrix lpo_pairs_inverse(const GroupStructure& g, const InversePairBlocks& blocks, MatrixCRef Y,
                            PairMatrixCRef pairs, int n_threads);
Vector lpo_disagreement_inverse(const GroupStructure& g, const InversePairBlocks& blocks, MatrixCRef Y,
                                PairMatrixCRef pairs, int n_threads);

// Leave-one-group-out predictions (m x v, group order); groups of one row keep the full-data
// prediction.  One Cholesky factor, the diagonal blocks of its inverse (~m^3/3 flops) and one
// solve with q + v right-hand sides.
Matrix leave_group_out_inverse(MatrixCRef K, const GroupStructure& g, double alpha, MatrixCRef Y, int n_threads);

// Leave-one-group-out predictions for every alpha of a grid, exact for each alpha as
// leave_group_out_inverse, and the dual coefficients S G_c t of the model on all the data for
// every alpha (one call serves the selection and the refit): m x 2 n_alphas v, group order,
// columns [predictions alpha-major | dual coefficients alpha-major].  S K S is eigendecomposed only
// on the centred vectors of each group (one Householder reflector per group maps the group's
// constant vector, S's null space, to one coordinate): Q^T S K S Q = U diag(lambda) U^T of order
// m - (number of groups); each alpha then costs O(m^2 n_mean) for its group blocks of G_c =
// Q U diag(1/(lambda + alpha)) U^T Q^T, all alphas' blocks from one GEMM per panel of groups.
Matrix leave_group_out_path(MatrixCRef K, const GroupStructure& g, const Vector& alphas, MatrixCRef Y,
                            int n_threads);

// Hold-out sets for ONE alpha from Cholesky factors (no eigendecomposition), accurate at small alpha.
// Rows = concatenated sets in grouped positions, set k = rows[fold_offsets[k] .. fold_offsets[k+1]);
// result: one row per entry of rows.  Virtual targets (eq. 33 written with G, see above) for a set U:
// inside a touched group q (n rows, u held, k = n - u kept) the retained pairs give
// L'_q = c (k I_K - 1_K 1_K^T) = s_q^2 (k/n) P_K on the centred space, P_K the centring on the kept
// rows, so E = I - N has E^-1 - I = (k/u) P_K there (0 for a group held out whole).  With
// z = E r, (I - H E) r = alpha G t becomes the symmetric positive definite system
//     (G_c,AA + sum_q (k_q / (alpha u_q)) P_Kq) z = (G_c t)_A        (A = rows of the touched groups)
// and, as r_U = z_U (P_K vanishes on held rows),
//     f'_U = y_U - ybar_q - z_U / s_q + fbar_q - kappa_q,A^T z / n_q,   kappa_q = G_c S K 1_q.
// Object ranking (one group, m rows): L' = rho L - c C E_U (k I + 1 1^T) E_U^T C with rho = k/m
// (eqs. 36-37 for |U| = 2), so the retrained model is the alpha' = alpha m / k model with a rank-u
// removal, whose 1 1^T terms cancel against G's null part: with G_c of alpha',
//     G_c,UU e = (G_c t)_U,  r = e - (1^T e / m) 1,  f'_U = y_U - ybar - r / s + fbar(alpha') - kappa_U^T e / m.
// One factor (dpotrf + dpotri) per distinct set size (object) or per call (groups); per set a
// |U| x |U| (object) or |A| x |A| (groups) Cholesky solve.  The spectral forms (object_holdout,
// group_holdout in fastrank/lpo.hpp) take the same per-set phase with G_c = C_S V D V^T C_S.
Matrix object_holdout_inverse(MatrixCRef K, double c, double alpha, MatrixCRef Y, const IndexVector& rows,
                              const IndexVector& fold_offsets, int n_threads);
Matrix group_holdout_inverse(MatrixCRef K, const GroupStructure& g, double alpha, MatrixCRef Y,
                             const IndexVector& rows, const IndexVector& fold_offsets, int n_threads);

// G_c of one alpha (alpha' per set size in object ranking) as the per-set phase reads it.
struct SetInverse {
  std::function<Matrix(const std::vector<Index>&)> block;  // G_c restricted to rows and columns idx
  Matrix Gt;                                               // G_c t (m x v)
  Matrix kappa;                                            // object ranking: G_c S K 1 (m x 1)
  Matrix fbar;  // object: mean prediction of the alpha' model (1 x v); groups: group means of the full fit (q x v)
  // groups: kappa_q,A^T z / n_q (one row per touched group q) for z on the touched rows A (whole groups, in order)
  std::function<Matrix(const std::vector<Index>& touched, const std::vector<Index>& A, MatrixCRef z)> mean_shift;
};
// Object ranking: the sets (indices into fold_offsets) of each size u, checked.
std::map<Index, std::vector<Index>> sets_by_size(const IndexVector& rows, const IndexVector& fold_offsets, Index m);
// Object ranking: the held-out rows of `sets` (all of one size, inv of its alpha') into out.
void object_sets(const SetInverse& inv, double s, double alpha, MatrixCRef Y, const IndexVector& rows,
                 const IndexVector& fold_offsets, const std::vector<Index>& sets, Matrix& out);
// Query groups: every set's held-out rows.
Matrix group_sets(const SetInverse& inv, const GroupStructure& g, double alpha, MatrixCRef Y, const IndexVector& rows,
                  const IndexVector& fold_offsets);

// Diagonal blocks of (L L^T)^-1 for every group from the lower Cholesky factor L (group order):
// columns of L^-1 for consecutive groups batched into panels of >= 512 columns, so the trailing
// triangular solves run as BLAS-3.
std::vector<Matrix> inverse_diagonal_blocks(MatrixCRef Lc, const GroupStructure& g);

}  // namespace fastrank::cv
