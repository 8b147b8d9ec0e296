// Sparse (subset-of-regressors) RankRLS, Pahikkala et al. 2009, Sect. 3.5, eqs. 40-42.
//
// f(x) = sum_{i in R} a_i k(x, x_i)                                       (eq. 40)
// A = (K_R M M^T K_R^T + alpha K_RR)^-1 K_R M N                           (eq. 41)
// with K_R the |R| x m kernel block between basis vectors and training inputs.  Both settings are
// written as a least-squares problem over a design G and a target t:
//   scoring (cost (21)): M M^T = L = S^2, S the block-centering square root (rows in ORIGINAL
//                        order, groups read through the GroupIndex), G = S K_R^T (m x r), t = S y;
//   preference graph:    G = M^T K_R^T (l x r, row e = w_e (K_h - K_t)), t = N (N_e = w_e z_e);
// so A = (G^T G + alpha K_RR)^-1 G^T t.  G^T G is one syrk, O(m r^2).
//
// Regularization path (eq. 42): K_RR = Z Z^T (Cholesky), Z^-1 G^T G Z^-T = V diag(s) V^T, and
//   A(alpha) = Z^-T V diag(1 / (s + alpha)) V^T Z^-1 G^T t,
// O(r^2 v) per alpha once U = Z^-T V and c = V^T Z^-1 G^T t are known.  If K_RR is not
// numerically positive definite (duplicate basis points, a linear kernel with r > n features),
// Z^-T is replaced by B = U_+ E_+^-1/2 from the eigendecomposition K_RR = U E U^T restricted to
// eigenvalues above r * eps * max(E): coefficients in the null space of K_RR do not change f.
#pragma once
#include <cstdint>

#include "fastrank/laplacian.hpp"
#include "fastrank/types.hpp"

namespace fastrank {

struct SubsetDecomposition {
  Matrix U;       // r x r' : A(alpha) = U diag(1 / (sigma + alpha)) c
  Vector sigma;   // r'
  Matrix c;       // r' x v
  bool cholesky = true;  // false: K_RR was rank deficient, the eigen fallback was used
  // Reciprocal condition number of K_RR (LAPACK's 1-norm estimate), or of its kept eigenvalues on the
  // fallback: f is only as accurate as K_RR's rounding allows, up to about 400 eps / rcond relative in the
  // predictions measured against 40-digit solves of eq. 41.
  double rcond = 1.0;
};

// Y <- S Y for rows in the caller's (original) order, column-parallel, O(m v).
void apply_sqrt_laplacian_rows(MatrixRef Y, const GroupStructure& groups, int n_threads);

// Scoring setting.  KRt (m x r) is overwritten with S K_R^T.
SubsetDecomposition sparse_rls_decompose_groups(MatrixRef KRt, MatrixCRef Y, const GroupStructure& groups,
                                                MatrixCRef KRR, int n_threads);
// Preference graph setting.
SubsetDecomposition sparse_rls_decompose_graph(MatrixCRef KRt, const PreferenceGraph& graph, MatrixCRef KRR,
                                               int n_threads);
// From assembled blocks H = G^T G (r x r) and g = G^T t (r x v), e.g. summed over the partitions
// of distributed data.
SubsetDecomposition sparse_rls_decompose_gram(MatrixCRef H, MatrixCRef g, MatrixCRef KRR);
// A(alpha), r x v.
Matrix sparse_rls_coef(const SubsetDecomposition& d, double alpha);

}  // namespace fastrank
