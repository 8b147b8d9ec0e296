#include "fastrank/kernels.hpp"

#include <algorithm>
#include <cmath>

#include "fastrank/errors.hpp"
#include "fastrank/lapack.hpp"
#include "fastrank/parallel.hpp"

namespace fastrank {

namespace {

Vector squared_norms(RowMatrixCRef X) { return X.rowwise().squaredNorm(); }

// Applies the kernel's elementwise map to one column segment of inner products.
inline void transform_segment(const KernelSpec& spec, const double* z_sq, double x_sq_j, double* col, Index len) {
  if (spec.type == KernelType::RBF) {
    const double g = spec.gamma;
    for (Index i = 0; i < len; ++i) {
      // |z - x|^2 = |z|^2 + |x|^2 - 2 z.x, clipped at 0 against rounding.
      const double d = std::max(0.0, z_sq[i] + x_sq_j - 2.0 * col[i]);
      col[i] = std::exp(-g * d);
    }
  } else if (spec.type == KernelType::Polynomial) {
    const double g = spec.gamma, c0 = spec.coef0, deg = spec.degree;
    const bool integral = deg == std::floor(deg) && deg >= 0 && deg <= 16;
    const int ideg = static_cast<int>(deg);
    for (Index i = 0; i < len; ++i) {
      const double base = g * col[i] + c0;
      if (integral) {
        double r = 1.0;
        for (int k = 0; k < ideg; ++k) r *= base;
        col[i] = r;
      } else {
        col[i] = std::pow(base, deg);
      }
    }
  }
}

// G holds inner products z_i . x_j on entry; applies the kernel's elementwise map in place.
void transform_inner_products(const KernelSpec& spec, const Vector& z_sq, const Vector& x_sq, MatrixRef G,
                              int n_threads) {
  if (spec.type == KernelType::Linear) return;
  const Index p = G.rows();
  parallel_for(0, G.cols(), n_threads, std::max<Index>(1, 16384 / std::max<Index>(1, p)), [&](Index lo, Index hi) {
    for (Index j = lo; j < hi; ++j)
      transform_segment(spec, z_sq.size() ? z_sq.data() : nullptr, x_sq.size() ? x_sq[j] : 0.0, G.col(j).data(), p);
  });
}

// Same on the lower triangle (diagonal included) of a square G.  Columns j and m-1-j are paired
// so every work unit has m+1 entries and the threads stay balanced.
void transform_lower(const KernelSpec& spec, const Vector& sq, MatrixRef G, int n_threads) {
  if (spec.type == KernelType::Linear) return;
  const Index m = G.rows();
  const Index half = (m + 1) / 2;
  parallel_for(0, half, n_threads, std::max<Index>(1, 8192 / std::max<Index>(1, m)), [&](Index lo, Index hi) {
    auto column = [&](Index j) {
      transform_segment(spec, sq.size() ? sq.data() + j : nullptr, sq.size() ? sq[j] : 0.0, G.col(j).data() + j,
                        m - j);
    };
    for (Index k = lo; k < hi; ++k) {
      column(k);
      if (m - 1 - k != k) column(m - 1 - k);  // the middle column of an odd m only once
    }
  });
}

void check_spec(const KernelSpec& spec) {
  require(spec.type == KernelType::Linear || spec.type == KernelType::RBF || spec.type == KernelType::Polynomial,
          "unknown kernel type");
  if (spec.type != KernelType::Linear) require(std::isfinite(spec.gamma), "kernel gamma must be finite");
}

}  // namespace

void kernel_cross(const KernelSpec& spec, RowMatrixCRef Z, RowMatrixCRef X, MatrixRef out, int n_threads) {
  check_spec(spec);
  require(Z.cols() == X.cols(), "kernel: inputs have different numbers of features");
  require(out.rows() == Z.rows() && out.cols() == X.rows(), "kernel: output has the wrong shape");
  const Index p = Z.rows(), m = X.rows(), d = X.cols();
  if (p == 0 || m == 0) return;
  // Row-major Z (p x d) is column-major Z^T (d x p, ld = d): out = (Z^T)^T (X^T).
  lapack::gemm('T', 'N', p, m, d, 1.0, Z.data(), Z.outerStride(), X.data(), X.outerStride(), 0.0, out.data(),
               out.outerStride());
  if (spec.type == KernelType::RBF) {
    transform_inner_products(spec, squared_norms(Z), squared_norms(X), out, n_threads);
  } else {
    transform_inner_products(spec, Vector(), Vector(), out, n_threads);
  }
}

Matrix kernel_cross(const KernelSpec& spec, RowMatrixCRef Z, RowMatrixCRef X, int n_threads) {
  Matrix out(Z.rows(), X.rows());
  kernel_cross(spec, Z, X, out, n_threads);
  return out;
}

void kernel_train(const KernelSpec& spec, RowMatrixCRef X, MatrixRef out, int n_threads) {
  check_spec(spec);
  const Index m = X.rows(), d = X.cols();
  require(out.rows() == m && out.cols() == m, "kernel: output has the wrong shape");
  if (m == 0) return;
  // Half the work of the cross kernel: SYRK fills the lower triangle, the map runs on it, and a
  // blocked copy mirrors it, so K is exactly symmetric (the solvers rely on it).
  lapack::syrk_lower('T', m, d, 1.0, X.data(), X.outerStride(), 0.0, out.data(), out.outerStride());
  transform_lower(spec, spec.type == KernelType::RBF ? squared_norms(X) : Vector(), out, n_threads);
  if (spec.type == KernelType::RBF)
    for (Index i = 0; i < m; ++i) out(i, i) = 1.0;  // exactly 1 on the diagonal
  lapack::symmetrize_from_lower(out);
}

Matrix kernel_train(const KernelSpec& spec, RowMatrixCRef X, int n_threads) {
  Matrix out(X.rows(), X.rows());
  kernel_train(spec, X, out, n_threads);
  return out;
}

Matrix kernel_predict(const KernelSpec& spec, RowMatrixCRef Z, RowMatrixCRef X, MatrixCRef coef, int n_threads) {
  require(coef.rows() == X.rows(), "kernel_predict: coefficient rows must match training inputs");
  const Index p = Z.rows(), m = X.rows();
  Matrix out(p, coef.cols());
  if (p == 0) return out;
  const Index block = std::max<Index>(64, (Index(1) << 22) / std::max<Index>(1, m));  // ~32 MB of kernel
  const Matrix coef_copy = coef;  // contiguous column-major for BLAS (v is small)
  Matrix K;
  for (Index start = 0; start < p; start += block) {
    const Index rows = std::min(block, p - start);
    K.resize(rows, m);
    kernel_cross(spec, Z.middleRows(start, rows), X, K, n_threads);
    Matrix part(rows, coef.cols());
    lapack::gemm('N', 'N', 1.0, K, coef_copy, 0.0, part);
    out.middleRows(start, rows) = part;
  }
  return out;
}

}  // namespace fastrank
