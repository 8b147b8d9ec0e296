// Dense BLAS/LAPACK through function pointers installed once at import time.
//
// Eigen's own dense decompositions are several times slower than an optimized LAPACK on this
// class of machine (SelfAdjointEigenSolver ~7x numpy's eigh at m=2000), so every O(m^3) step
// goes through here.  The pointers come from SciPy's `scipy.linalg.cython_lapack` /
// `cython_blas` capsules (its bundled OpenBLAS, LP64 ints); the bindings layer fills the table,
// the core never sees Python.  All matrices are column-major (Eigen's default).
#pragma once
#include "fastrank/types.hpp"

namespace fastrank::lapack {

using dgemm_t = void (*)(const char*, const char*, const int*, const int*, const int*, const double*,
                         const double*, const int*, const double*, const int*, const double*, double*,
                         const int*);
using dsyrk_t = void (*)(const char*, const char*, const int*, const int*, const double*, const double*,
                         const int*, const double*, double*, const int*);
using dpotrf_t = void (*)(const char*, const int*, double*, const int*, int*);
using dpotrs_t = void (*)(const char*, const int*, const int*, const double*, const int*, double*,
                          const int*, int*);
using dsyevd_t = void (*)(const char*, const char*, const int*, double*, const int*, double*, double*,
                          const int*, int*, const int*, int*);
using dgesv_t = void (*)(const int*, const int*, double*, const int*, int*, double*, const int*, int*);
using dtrsm_t = void (*)(const char*, const char*, const char*, const char*, const int*, const int*,
                         const double*, const double*, const int*, double*, const int*);
using dpocon_t = void (*)(const char*, const int*, const double*, const int*, const double*, double*,
                          double*, int*, int*);
using dpotri_t = void (*)(const char*, const int*, double*, const int*, int*);
using dsytrd_t = void (*)(const char*, const int*, double*, const int*, double*, double*, double*, double*,
                          const int*, int*);
using dormtr_t = void (*)(const char*, const char*, const char*, const int*, const int*, const double*,
                          const int*, const double*, double*, const int*, double*, const int*, int*);

struct Table {
  dgemm_t dgemm = nullptr;
  dsyrk_t dsyrk = nullptr;
  dtrsm_t dtrsm = nullptr;
  dpotrf_t dpotrf = nullptr;
  dpotrs_t dpotrs = nullptr;
  dsyevd_t dsyevd = nullptr;
  dgesv_t dgesv = nullptr;
  dpocon_t dpocon = nullptr;
  dpotri_t dpotri = nullptr;
  dsytrd_t dsytrd = nullptr;
  dormtr_t dormtr = nullptr;
};

// Installed once by the bindings at import; read-only afterwards.
void install(const Table& table);
const Table& table();

// Checked narrowing to LAPACK's 32-bit int; throws std::length_error for larger sizes.
int to_int(Index n);

// C (m x n) = alpha * op(A) op(B) + beta * C, column-major raw storage.
void gemm(char transa, char transb, Index m, Index n, Index k, double alpha, const double* a, Index lda,
          const double* b, Index ldb, double beta, double* c, Index ldc);
// Same on Eigen column-major views (no copies; strides passed through).
void gemm(char transa, char transb, double alpha, MatrixCRef a, MatrixCRef b, double beta, MatrixRef c);
// Lower triangle of C (n x n) = alpha * op(A) op(A)^T + beta * C.  trans='N': A is n x k; 'T': k x n.
// Large products run as tiles with interrupt::poll() between them.
void syrk_lower(char trans, Index n, Index k, double alpha, const double* a, Index lda, double beta, double* c,
                Index ldc);
// Copies the lower triangle of a square matrix into its upper triangle.
void symmetrize_from_lower(MatrixRef a);

// Largest order handed to one LAPACK dpotrf call; larger matrices are factorized by blocks.
inline constexpr Index kCholeskyPanel = 2048;
// In-place Cholesky A = L L^T (lower).  Returns false if A is not numerically positive definite.
// Orders above kCholeskyPanel go through a blocked factorization (dpotrf panels + dtrsm + dsyrk):
// SciPy's bundled OpenBLAS dpotrf crashes on large orders with several threads.
bool potrf_lower(MatrixRef a);
// Solves A X = B given potrf_lower's factor; B is overwritten with X.
void potrs_lower(MatrixCRef factor, MatrixRef b);
// Reciprocal condition number estimate of A from its Cholesky factor and its 1-norm.
double pocon_lower(MatrixCRef factor, double anorm);
// Symmetric eigendecomposition (divide and conquer, as numpy.linalg.eigh): on return `a` holds
// the eigenvectors as columns and `w` the ascending eigenvalues.  Throws LinAlgError on failure.
void syevd(MatrixRef a, Vector& w);
// General solve A X = B (LU with partial pivoting); A and B are overwritten.  Throws LinAlgError
// if A is exactly singular.
void gesv(MatrixRef a, MatrixRef b);
// B <- alpha * op(A)^-1 B, A lower triangular (side 'L').
void trsm_lower_left(char trans, MatrixCRef a, MatrixRef b);
// Given potrf_lower's factor in `a`, overwrites its lower triangle with that of A^-1 (dpotri).
// Throws LinAlgError if the factor has a zero diagonal entry.
void potri_lower(MatrixRef a);
// Householder tridiagonal reduction A = Q T Q^T (dsytrd, lower): `a` keeps the reflectors below
// the subdiagonal, d/e receive T's diagonal and subdiagonal, tau the reflector scalars.
void sytrd_lower(MatrixRef a, Vector& d, Vector& e, Vector& tau);
// C <- Q C (trans 'N') or Q^T C (trans 'T') with Q from sytrd_lower's `a`/`tau` (dormtr, blocked).
void ormtr_lower_left(char trans, MatrixCRef a, const Vector& tau, MatrixRef c);

}  // namespace fastrank::lapack
