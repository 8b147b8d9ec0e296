// Exact fast cross-validation for RankRLS in the scoring setting (Pahikkala et al. 2009, 004
// Sections 3.3-3.4, Lemma 2, eqs. 33-39), generalised to query groups.
//
// Notation.  Rows are in group order; group q is the block G = [o_q, o_q + n_q) with pair weight
// c_q, L = blockdiag(c_q (n_q I - 1 1^T)) and S = L^{1/2} = blockdiag(s_q C_q), s_q^2 = c_q n_q.
// Everything starts from ONE eigendecomposition S K S = V diag(sigma) V^T (dsyevd) that is
// reused for every alpha.  With R = (L + alpha K^-1)^-1 (limit form, so singular K is fine),
// full-data predictions f = R L y = K S V diag(1/(sigma+alpha)) V^T S y.
//
// Hold-out identity (Lemma 2 + Woodbury).  Removing the inputs U (all edges incident to them)
// changes L by Delta supported on the groups A touched by U, with Delta 1_r = 0 per group, so
//     f^{-U}_A = y_A + (I + T_A Delta)^{-1} (f_A - y_A),   T = R C = K S V D V^T diag(1/s)   (*)
// which is eq. (33) in a form without K^-1 (O(|A|^2 m + |A|^3) per hold-out set).
//
// Pairs.  For U = {i, j} inside group G (size n, weight c),
//     Delta = -2c C_G - Bh W Bh^T,  Bh = C_G [e_i e_j],  W = c [[n-1, 1], [1, n-1]],
// so with Z = (I - 2c T_GG)^-1, J = Z T_GG, h = Z (f_G - y_G), M = C J (symmetric), mu = 1^T J / n:
//     f^{-ij}_{ij} = y + h + J_UU (W^-1 - M_UU)^-1 (h_U - mean(h))        (2 x 2, O(1) per pair).
// For object ranking (one group) Z is explicit: J = R'C with R' the model with alpha/rho,
// rho = (m-2)/m, hence M = V diag(sigma/(rho sigma + alpha)) V^T / s^2 (one m x m product per
// alpha, the paper's Q of eq. 39) and h = f(alpha/rho) - y; no per-pair work depends on m.
#pragma once
#include <cstdint>
#include <vector>

#include "fastrank/laplacian.hpp"
#include "fastrank/types.hpp"

namespace fastrank::cv {

using PairMatrix = Eigen::Matrix<std::int64_t, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using PairMatrixCRef = Eigen::Ref<const PairMatrix>;

// V, sigma of S K S (sigma clipped at 0).  K is m x m symmetric in group order.
void spectral(MatrixCRef K, const GroupStructure& g, Matrix& V, Vector& sigma, int n_threads);
// P = K S V (m x m), alpha-independent.
Matrix ksv(MatrixCRef K, const GroupStructure& g, MatrixCRef V);
// Full-data predictions f = P diag(1/(sigma + alpha)) V^T S Y with P = K S V.
Matrix predictions_from_p(MatrixCRef P, MatrixCRef V, VectorCRef sigma, const GroupStructure& g, double alpha,
                          MatrixCRef Y);

// Pair weight of group q: c_q = s_q^2 / n_q.
double pair_weight(const GroupStructure& g, Index q);

// Precomputed per-group pair quantities (see header comment).
struct PairBlocks {
  std::vector<Matrix> M;  // per group: C J (n_q x n_q); only the lower triangle is read
  Vector mu;              // m: column means of J
  Matrix h;               // m x v
};

// Object ranking (one group of m rows, pair weight c, s^2 = c m): paper's eqs. 36-39.
PairBlocks object_prepare(MatrixCRef K, MatrixCRef V, VectorCRef sigma, double c, double alpha, MatrixCRef Y);
// Query groups: O(m sum n_q^2 + sum n_q^3) after the decomposition.
PairBlocks group_prepare(MatrixCRef P, MatrixCRef V, VectorCRef sigma, const GroupStructure& g,
                         double alpha, MatrixCRef Y);

// Held-out predictions for pairs (grouped positions, both in one group); row p of the result is
// [f(first, 0..v-1), f(second, 0..v-1)].  O(v) per pair, threaded.
RowMatrix lpo_pairs(const GroupStructure& g, const std::vector<const double*>& M, VectorCRef mu,
                    MatrixCRef h, MatrixCRef Y, PairMatrixCRef pairs, int n_threads);

// Pairwise disagreement of the held-out predictions against the targets Y per output, without
// materialising them: pairs with Y_a == Y_b are skipped, ties in predictions count 1/2; NaN for
// an output without a comparable pair.
Vector lpo_disagreement(const GroupStructure& g, const std::vector<const double*>& M, VectorCRef mu, MatrixCRef h,
                        MatrixCRef Y, PairMatrixCRef pairs, int n_threads);

// Hold-out sets (rows = concatenated sets in grouped positions, set k = rows[fold_offsets[k] ..
// fold_offsets[k+1])).  Result: one row per entry of rows.  Not through (*), which loses digits as alpha
// falls below sigma_max (T = K S G amplifies by sigma_max / alpha), but through the G form of eq. 33 of
// fastrank/holdout_inverse.hpp with G_c = C_S V diag(1/(sigma + alpha)) V^T C_S (C_S the per-group
// centring; V must be the full m x m factor): O(m r) per alpha (object: per set size), then
// O(|U|^2 r) (object) or O(|A|^2 r) (groups, A the touched groups' rows) per set.
Matrix object_holdout(MatrixCRef K, MatrixCRef V, VectorCRef sigma, double c, double alpha, MatrixCRef Y,
                      const IndexVector& rows, const IndexVector& fold_offsets);
Matrix group_holdout(MatrixCRef P, MatrixCRef V, VectorCRef sigma, const GroupStructure& g,
                     double alpha, MatrixCRef Y, const IndexVector& rows, const IndexVector& fold_offsets);

}  // namespace fastrank::cv

namespace fastrank::cv {

// Leave-one-group-out for ONE alpha from a Cholesky factor instead of an eigendecomposition:
// with G = (S K S + alpha I)^-1 = L^-T L^-1,  C T_GG = (I - alpha G_GG) / s^2 and the column
// means of T_GG come from w_q = G S K 1_G, so (*) becomes
//     f^{-G}_G = y_G + (alpha G_GG - s^2 1 (C mu)^T)^-1 (f_G - y_G),
// needing only the diagonal blocks G_GG (trailing triangular solves, ~m^3/3 flops in total) and
// one solve with q right-hand sides.  Groups of one row: the prediction of the full fit.
Matrix leave_group_out_cholesky(MatrixCRef K, const GroupStructure& g, double alpha, MatrixCRef Y, int n_threads);

}  // namespace fastrank::cv
