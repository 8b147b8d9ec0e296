#include "fastrank/lapack.hpp"

#include <climits>
#include <cmath>
#include <stdexcept>
#include <memory>
#include <string>
#include <vector>

#include "fastrank/errors.hpp"
#include "fastrank/huge_pages.hpp"
#include "fastrank/interrupt.hpp"

namespace fastrank::lapack {

namespace {
Table g_table;  // written once at import (before any call), read-only afterwards

const Table& checked() {
  if (g_table.dgemm == nullptr || g_table.dpotrf == nullptr || g_table.dsyevd == nullptr)
    throw std::runtime_error("fastrank: LAPACK table not installed (import fastrank first)");
  return g_table;
}
}  // namespace

void install(const Table& table) { g_table = table; }
const Table& table() { return checked(); }

int to_int(Index n) {
  if (n > static_cast<Index>(INT_MAX))
    throw std::length_error("fastrank: size " + std::to_string(n) + " exceeds LAPACK's 32-bit index range");
  return static_cast<int>(n);
}

void gemm(char transa, char transb, Index m, Index n, Index k, double alpha, const double* a, Index lda,
          const double* b, Index ldb, double beta, double* c, Index ldc) {
  if (m == 0 || n == 0) return;
  const int im = to_int(m), in = to_int(n), ik = to_int(k);
  const int ilda = to_int(std::max<Index>(1, lda)), ildb = to_int(std::max<Index>(1, ldb)),
            ildc = to_int(std::max<Index>(1, ldc));
  if (k == 0) {  // BLAS would still scale C by beta; do it explicitly for clarity
    for (Index j = 0; j < n; ++j)
      for (Index i = 0; i < m; ++i) c[i + j * ldc] = (beta == 0.0) ? 0.0 : beta * c[i + j * ldc];
    return;
  }
  checked().dgemm(&transa, &transb, &im, &in, &ik, &alpha, a, &ilda, b, &ildb, &beta, c, &ildc);
}

void syrk_lower(char trans, Index n, Index k, double alpha, const double* a, Index lda, double beta, double* c,
                Index ldc) {
  if (n == 0) return;
  const char uplo = 'L';
  const int ik = to_int(k), ilda = to_int(std::max<Index>(1, lda)), ildc = to_int(ldc);
  // Column panels of width b (dsyrk on the diagonal block, one dgemm below it) of about 2^35 flops each (a quarter
  // second on 2 cores): the same level-3 kernels as one call, with an interrupt check between panels.  Smaller
  // products stay one call.
  const double panel = std::ldexp(1.0, 35) / (static_cast<double>(n) * static_cast<double>(std::max<Index>(1, k)));
  const Index b = std::max<Index>(256, static_cast<Index>(std::min(panel, static_cast<double>(n))));
  // Row (trans 'N', A n x k) or column ('T', A k x n) i of A.
  auto row = [&](Index i) { return trans == 'N' ? a + i : a + i * lda; };
  const char ta = trans == 'N' ? 'N' : 'T', tb = trans == 'N' ? 'T' : 'N';
  for (Index j = 0; j < n; j += b) {
    interrupt::poll();
    const int jb = to_int(std::min(b, n - j)), below = to_int(n - j - jb);
    checked().dsyrk(&uplo, &trans, &jb, &ik, &alpha, row(j), &ilda, &beta, c + j + j * ldc, &ildc);
    if (below > 0)
      checked().dgemm(&ta, &tb, &below, &jb, &ik, &alpha, row(j + jb), &ilda, row(j), &ilda, &beta,
                      c + (j + jb) + j * ldc, &ildc);
  }
}

void symmetrize_from_lower(MatrixRef a) {
  const Index n = a.rows();
  // Blocked copy keeps both the read and the write cache-friendly for large n.
  constexpr Index B = 64;
  for (Index jb = 0; jb < n; jb += B) {
    interrupt::poll();  // the copy is memory-bound: a large one takes a noticeable time
    for (Index ib = jb; ib < n; ib += B)
      for (Index j = jb; j < std::min(n, jb + B); ++j)
        for (Index i = std::max(ib, j + 1); i < std::min(n, ib + B); ++i) a(j, i) = a(i, j);
  }
}

void gemm(char transa, char transb, double alpha, MatrixCRef a, MatrixCRef b, double beta, MatrixRef c) {
  const Index m = (transa == 'N') ? a.rows() : a.cols();
  const Index k = (transa == 'N') ? a.cols() : a.rows();
  const Index n = (transb == 'N') ? b.cols() : b.rows();
  if (c.rows() != m || c.cols() != n) throw std::invalid_argument("gemm: output has the wrong shape");
  gemm(transa, transb, m, n, k, alpha, a.data(), a.outerStride(), b.data(), b.outerStride(), beta, c.data(),
       c.outerStride());
}

namespace {
// One dpotrf call on the order-n diagonal block at `a` (leading dimension lda); info > 0 when the
// block is not numerically positive definite.
int potrf_block(double* a, int n, int lda) {
  const char uplo = 'L';
  int info = 0;
  checked().dpotrf(&uplo, &n, a, &lda, &info);
  if (info < 0) throw std::logic_error("dpotrf: illegal argument " + std::to_string(-info));
  return info;
}
}  // namespace

bool potrf_lower(MatrixRef a) {
  const Index n = a.rows();
  const int lda = to_int(std::max<Index>(1, a.outerStride()));
  if (n <= kCholeskyPanel) return potrf_block(a.data(), to_int(n), lda) == 0;
  // Right-looking blocked Cholesky (Golub & Van Loan, Matrix Computations, Alg. 4.2.2) with
  // panels of order kCholeskyPanel: A11 = L11 L11^T (dpotrf), L21 = A21 L11^-T (dtrsm),
  // A22 <- A22 - L21 L21^T (dsyrk).  SciPy's bundled OpenBLAS dpotrf segfaults with 2 threads from
  // n ~ 15,900 (its internal threaded syrk update overruns a work buffer); its dtrsm and dsyrk
  // called directly do not, so every dpotrf call here stays far below that size while the O(n^3)
  // work runs in the same level-3 BLAS kernels at the same speed.
  const Table& t = checked();
  const double one = 1.0, minus_one = -1.0;
  const char side = 'R', lower = 'L', trans = 'T', notrans = 'N', nonunit = 'N';
  double* base = a.data();
  for (Index k = 0; k < n; k += kCholeskyPanel) {
    const int kb = to_int(std::min<Index>(kCholeskyPanel, n - k));
    double* a11 = base + k + k * Index(lda);
    if (potrf_block(a11, kb, lda) != 0) return false;
    const Index rest = n - k - kb;
    if (rest == 0) break;
    const int r = to_int(rest);
    double* a21 = a11 + kb;
    double* a22 = base + (k + kb) + (k + kb) * Index(lda);
    t.dtrsm(&side, &lower, &trans, &nonunit, &r, &kb, &one, a11, &lda, a21, &lda);
    // The trailing update in column blocks (dsyrk on the diagonal block, dgemm below it): the same level-3
    // work, with an interrupt check between blocks instead of one O(n^2 kb) call.
    for (Index c = 0; c < rest; c += kCholeskyPanel) {
      interrupt::poll();
      const int cb = to_int(std::min<Index>(kCholeskyPanel, rest - c)), below = to_int(rest - c - cb);
      double* diag = a22 + c + c * Index(lda);
      t.dsyrk(&lower, &notrans, &cb, &kb, &minus_one, a21 + c, &lda, &one, diag, &lda);
      if (below > 0)
        t.dgemm(&notrans, &trans, &below, &cb, &kb, &minus_one, a21 + c + cb, &lda, a21 + c, &lda, &one, diag + cb,
                &lda);
    }
  }
  return true;
}

void potrs_lower(MatrixCRef factor, MatrixRef b) {
  const char uplo = 'L';
  const int n = to_int(factor.rows()), nrhs = to_int(b.cols()), lda = to_int(std::max<Index>(1, factor.outerStride())),
            ldb = to_int(std::max<Index>(1, b.outerStride()));
  int info = 0;
  if (nrhs == 0 || n == 0) return;
  checked().dpotrs(&uplo, &n, &nrhs, factor.data(), &lda, b.data(), &ldb, &info);
  if (info != 0) throw std::logic_error("dpotrs failed with info " + std::to_string(info));
}

double pocon_lower(MatrixCRef factor, double anorm) {
  const char uplo = 'L';
  const int n = to_int(factor.rows()), lda = to_int(std::max<Index>(1, factor.outerStride()));
  if (n == 0) return 1.0;
  double rcond = 0.0;
  std::vector<double> work(3 * static_cast<size_t>(n));
  std::vector<int> iwork(static_cast<size_t>(n));
  int info = 0;
  checked().dpocon(&uplo, &n, factor.data(), &lda, &anorm, &rcond, work.data(), iwork.data(), &info);
  if (info != 0) throw std::logic_error("dpocon failed with info " + std::to_string(info));
  return rcond;
}

void syevd(MatrixRef a, Vector& w) {
  const char jobz = 'V', uplo = 'L';
  const Index n = a.rows();
  w.resize(n);
  if (n == 0) return;
  for (Index j = 0; j < n; ++j)
    if (!a.col(j).allFinite())
      throw LinAlgError("symmetric eigendecomposition: the matrix contains NaN or infinity (inputs, targets or "
                        "pair weights overflow float64); rescale them");
  const int in = to_int(n), lda = to_int(std::max<Index>(1, a.outerStride()));
  // Workspace query, then the real call.
  int info = 0, lwork = -1, liwork = -1, iwork_query = 0;
  double work_query = 0.0;
  checked().dsyevd(&jobz, &uplo, &in, a.data(), &lda, w.data(), &work_query, &lwork, &iwork_query, &liwork,
                   &info);
  if (info != 0) throw LinAlgError("dsyevd workspace query failed");
  // dsyevd needs 1 + 6n + 2n^2 doubles; check it fits LAPACK's int before allocating.
  const double need = std::max(work_query, 1.0 + 6.0 * n + 2.0 * double(n) * double(n));
  if (need > double(INT_MAX))
    throw std::length_error("fastrank: eigendecomposition of size " + std::to_string(n) +
                            " needs a LAPACK workspace beyond 32-bit indexing");
  lwork = static_cast<int>(need);
  liwork = std::max(iwork_query, 3 + 5 * in);
  // 2n^2 doubles that LAPACK writes before reading: left uninitialised (zeroing them cost a pass over 58 MB at
  // n = 1900) and advised onto huge pages.
  std::unique_ptr<double[]> work(new double[static_cast<size_t>(lwork)]);
  advise_huge_pages(work.get(), sizeof(double) * static_cast<size_t>(lwork));
  std::vector<int> iwork(static_cast<size_t>(liwork));
  checked().dsyevd(&jobz, &uplo, &in, a.data(), &lda, w.data(), work.get(), &lwork, iwork.data(), &liwork,
                   &info);
  if (info != 0)
    throw LinAlgError("symmetric eigendecomposition (dsyevd) did not converge (info=" + std::to_string(info) +
                      "); this happens when the matrix holds values near the float64 limits (inputs, targets or "
                      "pair magnitudes below about 1e-150 or above 1e150): rescale them");
}

void gesv(MatrixRef a, MatrixRef b) {
  const int n = to_int(a.rows()), nrhs = to_int(b.cols()), lda = to_int(std::max<Index>(1, a.outerStride())),
            ldb = to_int(std::max<Index>(1, b.outerStride()));
  if (n == 0) return;
  std::vector<int> ipiv(static_cast<size_t>(n));
  int info = 0;
  checked().dgesv(&n, &nrhs, a.data(), &lda, ipiv.data(), b.data(), &ldb, &info);
  if (info > 0) throw LinAlgError("linear system is exactly singular (dgesv info=" + std::to_string(info) + ")");
  if (info < 0) throw std::logic_error("dgesv: illegal argument " + std::to_string(-info));
}

void trsm_lower_left(char trans, MatrixCRef a, MatrixRef b) {
  const char side = 'L', uplo = 'L', diag = 'N';
  const int m = to_int(b.rows()), n = to_int(b.cols()), lda = to_int(std::max<Index>(1, a.outerStride())),
            ldb = to_int(std::max<Index>(1, b.outerStride()));
  if (m == 0 || n == 0) return;
  const double one = 1.0;
  checked().dtrsm(&side, &uplo, &trans, &diag, &m, &n, &one, a.data(), &lda, b.data(), &ldb);
}

void potri_lower(MatrixRef a) {
  const char uplo = 'L';
  const int n = to_int(a.rows()), lda = to_int(std::max<Index>(1, a.outerStride()));
  if (n == 0) return;
  int info = 0;
  if (checked().dpotri == nullptr) throw std::runtime_error("fastrank: dpotri not installed");
  g_table.dpotri(&uplo, &n, a.data(), &lda, &info);
  if (info > 0) throw LinAlgError("matrix inverse from the Cholesky factor failed (dpotri info=" +
                                  std::to_string(info) + ")");
  if (info < 0) throw std::logic_error("dpotri: illegal argument " + std::to_string(-info));
}

void sytrd_lower(MatrixRef a, Vector& d, Vector& e, Vector& tau) {
  const char uplo = 'L';
  const Index n = a.rows();
  d.resize(n);
  e.resize(std::max<Index>(0, n - 1));
  tau.resize(std::max<Index>(0, n - 1));
  if (n == 0) return;
  if (checked().dsytrd == nullptr) throw std::runtime_error("fastrank: dsytrd not installed");
  const int in = to_int(n), lda = to_int(std::max<Index>(1, a.outerStride()));
  int info = 0, lwork = -1;
  double query = 0.0;
  // e/tau need at least one element for LAPACK even when n == 1.
  Vector e1(std::max<Index>(1, n - 1)), tau1(std::max<Index>(1, n - 1));
  g_table.dsytrd(&uplo, &in, a.data(), &lda, d.data(), e1.data(), tau1.data(), &query, &lwork, &info);
  if (info != 0) throw std::logic_error("dsytrd workspace query failed");
  lwork = std::max(1, static_cast<int>(query));
  std::vector<double> work(static_cast<size_t>(lwork));
  g_table.dsytrd(&uplo, &in, a.data(), &lda, d.data(), e1.data(), tau1.data(), work.data(), &lwork, &info);
  if (info != 0) throw std::logic_error("dsytrd failed with info " + std::to_string(info));
  e = e1.head(n - 1);
  tau = tau1.head(n - 1);
}

void ormtr_lower_left(char trans, MatrixCRef a, const Vector& tau, MatrixRef c) {
  const char side = 'L', uplo = 'L';
  const Index n = a.rows();
  require(c.rows() == n && a.cols() == n, "ormtr: shape mismatch");
  if (n <= 1 || c.cols() == 0) return;
  if (checked().dormtr == nullptr) throw std::runtime_error("fastrank: dormtr not installed");
  const int im = to_int(n), inc = to_int(c.cols()), lda = to_int(std::max<Index>(1, a.outerStride())),
            ldc = to_int(std::max<Index>(1, c.outerStride()));
  int info = 0, lwork = -1;
  double query = 0.0;
  g_table.dormtr(&side, &uplo, &trans, &im, &inc, a.data(), &lda, tau.data(), c.data(), &ldc, &query, &lwork,
                 &info);
  if (info != 0) throw std::logic_error("dormtr workspace query failed");
  lwork = std::max(1, static_cast<int>(query));
  std::vector<double> work(static_cast<size_t>(lwork));
  g_table.dormtr(&side, &uplo, &trans, &im, &inc, a.data(), &lda, tau.data(), c.data(), &ldc, work.data(), &lwork,
                 &info);
  if (info != 0) throw std::logic_error("dormtr failed with info " + std::to_string(info));
}

}  // namespace fastrank::lapack
