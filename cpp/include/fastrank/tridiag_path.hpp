// Regularization paths through one Householder tridiagonal reduction (004 Section 3.2, eq. 31).
//
// Eq. (31) shares one eigendecomposition G = V diag(sigma) V^T over every alpha.  Only the
// solutions (G + alpha I)^-1 R are needed, not the spectrum, so the eigenvectors can be skipped:
// with G = Q T Q^T (T tridiagonal, Q a product of Householder reflectors, LAPACK dsytrd)
//     (G + alpha I)^-1 R = Q (T + alpha I)^-1 Q^T R,
// and T + alpha I is a symmetric positive definite tridiagonal matrix, solved by its LDL^T
// factorization in O(r v) per alpha.  Q is applied once to all alphas' solutions together
// (dormtr: blocked reflectors, GEMM speed).  Cost: the reduction (~4/3 r^3, the first stage of an
// eigendecomposition) + 2 r^2 (n_alphas v) for Q^T R and Q Z, instead of the reduction plus the
// tridiagonal eigensolver plus the back-transformation of r eigenvectors (dsyevd).
// The eigendecomposition stays where every alpha needs the whole hat matrix (leave-pair-out over
// a grid: fastrank/lpo.hpp).
#pragma once
#include "fastrank/laplacian.hpp"
#include "fastrank/rankrls.hpp"
#include "fastrank/types.hpp"

namespace fastrank {

// Same contract as solve_shifted_system for several alphas: returns U (r x n_alphas v), alpha-major;
// G (symmetric PSD, lower triangle read) is overwritten by the reflectors.  report->rcond is
// alpha_min / (lambda_max + alpha_min) with lambda_max the largest eigenvalue of T (Sturm
// bisection), as on the eigendecomposition path.  Throws LinAlgError if a shifted system is not
// numerically positive definite.
Matrix solve_shifted_system_tridiag(MatrixRef G, MatrixCRef R, const Vector& alphas, SolveReport* report);
// With ``primal``: solve_shifted_system's rule for a primal system X^T L X.
Matrix solve_shifted_system_tridiag(MatrixRef G, MatrixCRef R, const Vector& alphas, SolveReport* report,
                                    bool primal);

// rankrls_dual_scores through the tridiagonal path (same inputs and result).
Matrix rankrls_dual_scores_tridiag(MatrixRef K, const GroupStructure& groups, MatrixCRef Y, const Vector& alphas,
                                   int n_threads, SolveReport* report);

// Largest eigenvalue of the symmetric tridiagonal matrix (d, e) by Sturm-count bisection.
double tridiagonal_max_eigenvalue(const Vector& d, const Vector& e);

}  // namespace fastrank
