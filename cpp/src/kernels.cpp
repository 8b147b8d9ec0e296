#include "fastrank/kernels.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <sstream>
#include <string>

#include "fastrank/errors.hpp"
#include "fastrank/finite.hpp"
#include "fastrank/huge_pages.hpp"
#include "fastrank/interrupt.hpp"
#include "fastrank/lapack.hpp"
#include "fastrank/parallel.hpp"

namespace fastrank {

namespace {

constexpr double kEps = std::numeric_limits<double>::epsilon();
// A Gaussian value whose exponent is below -kUnderflow is 0 in float64 (exp(-746) == 0).
constexpr double kUnderflow = 746.0;
// Largest relative error of a Gaussian value accepted from the expansion |z|^2 + |x|^2 - 2 z.x;
// entries that could be worse are recomputed from the differences directly.
constexpr double kExpansionTol = 1e-11;

// Problems found while mapping inner products; reported after the (threaded) pass.
enum KernelFlag : int { kDistanceOverflow = 1, kNegativeBase = 2, kNonFinite = 4 };

// Rows of Z and X as the elementwise map sees them: for the Gaussian kernel both are centred by
// the same vector (the mean of the training rows X), with their squared norms.
struct Operands {
  const double* z = nullptr;  // row-major, row stride ldz
  Index ldz = 0;
  const double* x = nullptr;
  Index ldx = 0;
  Index d = 0;
  const double* z_sq = nullptr;
  const double* x_sq = nullptr;
};

double exact_sq_distance(const double* a, const double* b, Index d) {
  double s = 0.0;
  for (Index f = 0; f < d; ++f) {
    const double t = a[f] - b[f];
    s += t * t;
  }
  return s;
}

// Bound on the rounding error of |z|^2 + |x|^2 - 2 z.x relative to s = |z|^2 + |x|^2 (a dot
// product of length d is accurate to about sqrt(d) eps |z||x| in practice, d eps in the worst case).
double expansion_error_factor(Index d) { return (4.0 + std::sqrt(static_cast<double>(d))) * kEps; }

// Applies the kernel's elementwise map to entries i in [i0, i0 + len) of column j, which hold the
// inner products z_i . x_j on entry.  Returns KernelFlag bits.
int transform_segment(const KernelSpec& spec, const Operands& op, Index i0, Index j, double* col, Index len) {
  int flags = 0;
  if (spec.type == KernelType::RBF) {
    // Translation invariance: the inputs were centred, so the norms are those of the data's spread,
    // not of its offset.  Entries where the expansion could still lose more than kExpansionTol of
    // the value (points far from the centre compared with their distance, relative to 1/gamma)
    // are recomputed from the differences in O(d).
    const double g = spec.gamma, c = expansion_error_factor(op.d), xs = op.x_sq[j];
    const double* xr = op.x + j * op.ldx;
    for (Index k = 0; k < len; ++k) {
      const Index i = i0 + k;
      const double s = op.z_sq[i] + xs;
      double d2 = s - 2.0 * col[k];
      const double err = c * s;
      if (!(std::isfinite(d2)) || (g * err > kExpansionTol && g * (d2 - err) < kUnderflow)) {
        d2 = exact_sq_distance(op.z + i * op.ldz, xr, op.d);
        if (!std::isfinite(d2)) flags |= kDistanceOverflow;
      }
      col[k] = std::exp(-g * std::max(0.0, d2));
    }
  } else if (spec.type == KernelType::Polynomial) {
    const double g = spec.gamma, c0 = spec.coef0, deg = spec.degree;
    const bool integral = deg == std::floor(deg);
    // Only small integral degrees use repeated products; the int conversion happens only then.
    const int ideg = integral && deg <= 16.0 ? static_cast<int>(deg) : -1;
    for (Index k = 0; k < len; ++k) {
      const double base = g * col[k] + c0;
      double r;
      if (ideg >= 0) {
        r = 1.0;
        for (int e = 0; e < ideg; ++e) r *= base;
      } else if (integral || base >= 0.0) {
        r = std::pow(base, deg);  // pow of a negative base is defined for integral exponents
      } else {
        flags |= kNegativeBase;
        r = std::numeric_limits<double>::quiet_NaN();
      }
      if (!std::isfinite(r)) flags |= kNonFinite;
      col[k] = r;
    }
  }
  return flags;
}

std::string fmt(double v) {
  std::ostringstream s;
  s.precision(6);
  s << v;
  return s.str();
}

void raise_flags(const KernelSpec& spec, int flags) {
  if (flags == 0) return;
  const std::string params = spec.type == KernelType::RBF
                                 ? "gamma=" + fmt(spec.gamma)
                                 : "gamma=" + fmt(spec.gamma) + ", degree=" + fmt(spec.degree) +
                                       ", coef0=" + fmt(spec.coef0);
  if (flags & kDistanceOverflow)
    throw std::invalid_argument("Gaussian kernel (" + params +
                                "): squared distances between rows of X overflow float64; rescale X");
  if (flags & kNegativeBase)
    throw std::invalid_argument("polynomial kernel (" + params +
                                "): gamma * x.z + coef0 is negative for some pairs of rows and the degree is "
                                "not an integer, so (gamma * x.z + coef0) ** degree is undefined; use an integer "
                                "degree or a coef0 large enough to keep gamma * x.z + coef0 >= 0");
  if (flags & kNonFinite) {
    if (spec.type == KernelType::Linear)
      throw std::invalid_argument("linear kernel: inner products of rows of X overflow float64; rescale X");
    throw std::invalid_argument("polynomial kernel (" + params +
                                "): kernel values overflow float64; use a smaller gamma, degree or coef0, or "
                                "rescale X");
  }
}

// G holds inner products z_i . x_j on entry; applies the kernel's elementwise map in place.
int transform_inner_products(const KernelSpec& spec, const Operands& op, MatrixRef G, int n_threads) {
  const Index p = G.rows();
  if (spec.type == KernelType::Linear)
    return all_finite(G.data(), G.size(), n_threads) ? 0 : kNonFinite;  // G is contiguous (ld == p)
  std::atomic<int> flags{0};
  parallel_for(0, G.cols(), n_threads, std::max<Index>(1, 16384 / std::max<Index>(1, p)), [&](Index lo, Index hi) {
    int f = 0;
    for (Index j = lo; j < hi; ++j) {
      interrupt::poll();
      f |= transform_segment(spec, op, 0, j, G.col(j).data(), p);
    }
    flags.fetch_or(f);
  });
  return flags.load();
}

// Same on the lower triangle (diagonal included) of a square G.  Columns j and m-1-j are paired
// so every work unit has m+1 entries and the threads stay balanced.
int transform_lower(const KernelSpec& spec, const Operands& op, MatrixRef G, int n_threads) {
  if (spec.type == KernelType::Linear) return 0;  // checked after mirroring
  const Index m = G.rows();
  const Index half = (m + 1) / 2;
  std::atomic<int> flags{0};
  parallel_for(0, half, n_threads, std::max<Index>(1, 8192 / std::max<Index>(1, m)), [&](Index lo, Index hi) {
    int f = 0;
    auto column = [&](Index j) { f |= transform_segment(spec, op, j, j, G.col(j).data() + j, m - j); };
    for (Index k = lo; k < hi; ++k) {
      interrupt::poll();
      column(k);
      if (m - 1 - k != k) column(m - 1 - k);  // the middle column of an odd m only once
    }
    flags.fetch_or(f);
  });
  return flags.load();
}

void check_spec(const KernelSpec& spec) {
  require(spec.type == KernelType::Linear || spec.type == KernelType::RBF || spec.type == KernelType::Polynomial,
          "unknown kernel type");
  if (spec.type != KernelType::Linear)
    require(std::isfinite(spec.gamma) && spec.gamma > 0.0, "kernel gamma must be positive and finite");
  if (spec.type == KernelType::Polynomial) {
    require(std::isfinite(spec.degree) && spec.degree >= 0.0, "polynomial kernel degree must be finite and >= 0");
    require(std::isfinite(spec.coef0), "polynomial kernel coef0 must be finite");
  }
}

// Column means, summed serially in row order so the result never depends on the thread count.
Vector column_mean(RowMatrixCRef X) {
  Vector mu = Vector::Zero(X.cols());
  for (Index i = 0; i < X.rows(); ++i) mu += X.row(i).transpose();
  if (X.rows() > 0) mu /= static_cast<double>(X.rows());
  return mu;
}

RowMatrix centred(RowMatrixCRef A, const Vector& mu) {
  RowMatrix C = A;
  C.rowwise() -= mu.transpose();
  return C;
}

// out <- K(Z, X) for operands already centred (Gaussian) or as given (linear, polynomial).
void cross_prepared(const KernelSpec& spec, RowMatrixCRef Z, const Vector& z_sq, RowMatrixCRef X,
                    const Vector& x_sq, MatrixRef out, int n_threads) {
  const Index p = Z.rows(), m = X.rows(), d = X.cols();
  // Row-major Z (p x d) is column-major Z^T (d x p, ld = d): out = (Z^T)^T (X^T).
  lapack::gemm('T', 'N', p, m, d, 1.0, Z.data(), Z.outerStride(), X.data(), X.outerStride(), 0.0, out.data(),
               out.outerStride());
  Operands op{Z.data(), Z.outerStride(), X.data(), X.outerStride(), d, z_sq.data(), x_sq.data()};
  int flags;
  if (spec.type == KernelType::Linear && out.outerStride() != p) {
    flags = 0;
    for (Index j = 0; j < m; ++j)
      if (!all_finite(out.col(j).data(), p, 1)) flags = kNonFinite;
  } else {
    flags = transform_inner_products(spec, op, out, n_threads);
  }
  raise_flags(spec, flags);
}

}  // namespace

void kernel_cross(const KernelSpec& spec, RowMatrixCRef Z, RowMatrixCRef X, MatrixRef out, int n_threads) {
  check_spec(spec);
  require(Z.cols() == X.cols(), "kernel: inputs have different numbers of features");
  require(out.rows() == Z.rows() && out.cols() == X.rows(), "kernel: output has the wrong shape");
  if (Z.rows() == 0 || X.rows() == 0) return;
  if (spec.type == KernelType::RBF) {
    // Both sides centred by the mean of X (the training or basis rows), as kernel_train does.
    const Vector mu = column_mean(X);
    const RowMatrix Zc = centred(Z, mu), Xc = centred(X, mu);
    cross_prepared(spec, Zc, Zc.rowwise().squaredNorm(), Xc, Xc.rowwise().squaredNorm(), out, n_threads);
  } else {
    cross_prepared(spec, Z, Vector(), X, Vector(), out, n_threads);
  }
}

namespace {

// Sums over the features of one tile of rows of Z (rows i0 .. i0 + ni of the column-major copy Zc) against row x:
// squared differences (Gaussian) or products, each entry in the order f = 0, 1, ... (the vector runs over the tile,
// and no fused multiply-add is used, so every machine path gives the same value).
template <Index kN>
inline void tile_sums_fixed(const double* __restrict__ Zc, Index ldz, const double* __restrict__ x, Index d,
                            bool squared_distance, double* __restrict__ out) {
  double acc[kN] = {};  // a compile-time tile: the sums stay in registers over the features
  for (Index f = 0; f < d; ++f) {
    const double xf = x[f];
    const double* zf = Zc + f * ldz;
    if (squared_distance) {
      for (Index i = 0; i < kN; ++i) {
        const double t = zf[i] - xf;
        acc[i] += t * t;
      }
    } else {
      for (Index i = 0; i < kN; ++i) acc[i] += zf[i] * xf;
    }
  }
  for (Index i = 0; i < kN; ++i) out[i] = acc[i];
}

#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__)
__attribute__((target_clones("avx2", "default")))
#endif
void tile_sums(const double* __restrict__ Zc, Index ldz, Index ni, const double* __restrict__ x, Index d,
               bool squared_distance, double* __restrict__ out) {
  Index i = 0;
  for (; i + 16 <= ni; i += 16) tile_sums_fixed<16>(Zc + i, ldz, x, d, squared_distance, out + i);
  for (; i + 4 <= ni; i += 4) tile_sums_fixed<4>(Zc + i, ldz, x, d, squared_distance, out + i);
  for (; i < ni; ++i) tile_sums_fixed<1>(Zc + i, ldz, x, d, squared_distance, out + i);
}

}  // namespace

void kernel_cross_rowwise(const KernelSpec& spec, RowMatrixCRef Z, RowMatrixCRef X, MatrixRef out, int n_threads) {
  check_spec(spec);
  require(Z.cols() == X.cols(), "kernel: inputs have different numbers of features");
  require(out.rows() == Z.rows() && out.cols() == X.rows(), "kernel: output has the wrong shape");
  const Index p = Z.rows(), m = X.rows(), d = X.cols();
  if (p == 0 || m == 0) return;
  const Matrix Zc = Z;  // column-major copy: feature f of a tile of rows is contiguous
  const bool rbf = spec.type == KernelType::RBF;
  constexpr Index kTile = 32;  // rows of Z whose sums stay in registers while one row of X streams past
  std::atomic<int> flags{0};
  parallel_for(0, m, n_threads, std::max<Index>(1, 16384 / std::max<Index>(1, p * d)), [&](Index lo, Index hi) {
    const Operands none;
    int found = 0;
    for (Index i0 = 0; i0 < p; i0 += kTile) {
      interrupt::poll();
      const Index ni = std::min(kTile, p - i0);
      for (Index j = lo; j < hi; ++j) {
        const double* x = X.data() + j * X.outerStride();
        double* col = out.col(j).data() + i0;
        tile_sums(Zc.data() + i0, Zc.outerStride(), ni, x, d, rbf, col);
      }
    }
    for (Index j = lo; j < hi; ++j) {
      double* col = out.col(j).data();
      if (rbf) {
        for (Index i = 0; i < p; ++i) {
          if (!std::isfinite(col[i])) found |= kDistanceOverflow;
          col[i] = std::exp(-spec.gamma * col[i]);
        }
      } else if (spec.type == KernelType::Polynomial) {
        found |= transform_segment(spec, none, 0, j, col, p);
      } else if (!all_finite(col, p, 1)) {
        found |= kNonFinite;
      }
    }
    flags.fetch_or(found);
  });
  raise_flags(spec, flags.load());
}

Matrix kernel_cross(const KernelSpec& spec, RowMatrixCRef Z, RowMatrixCRef X, int n_threads) {
  Matrix out(Z.rows(), X.rows());
  advise_huge_pages(out.data(), sizeof(double) * static_cast<size_t>(out.size()));
  kernel_cross(spec, Z, X, out, n_threads);
  return out;
}

void kernel_train(const KernelSpec& spec, RowMatrixCRef X, MatrixRef out, int n_threads) {
  check_spec(spec);
  const Index m = X.rows(), d = X.cols();
  require(out.rows() == m && out.cols() == m, "kernel: output has the wrong shape");
  if (m == 0) return;
  RowMatrix Xc;
  Vector sq;
  const bool rbf = spec.type == KernelType::RBF;
  if (rbf) {
    Xc = centred(X, column_mean(X));  // distances are translation invariant; inner products are not
    sq = Xc.rowwise().squaredNorm();
  }
  const double* a = rbf ? Xc.data() : X.data();
  const Index lda = rbf ? Xc.outerStride() : X.outerStride();
  // Half the work of the cross kernel: SYRK fills the lower triangle, the map runs on it, and a
  // blocked copy mirrors it, so K is exactly symmetric (the solvers rely on it).
  // Pages first touched by the threads here, not inside BLAS: the panels of syrk_lower fault them in 1.5 times slower.
  parallel_for(0, m, n_threads, 64, [&](Index lo, Index hi) {
    for (Index j = lo; j < hi; ++j) {
      if ((j - lo) % 64 == 0) interrupt::poll();
      out.col(j).setZero();
    }
  });
  lapack::syrk_lower('T', m, d, 1.0, a, lda, 0.0, out.data(), out.outerStride());
  Operands op{a, lda, a, lda, d, sq.data(), sq.data()};
  int flags = transform_lower(spec, op, out, n_threads);
  if (rbf)
    for (Index i = 0; i < m; ++i) out(i, i) = 1.0;  // exactly 1 on the diagonal
  lapack::symmetrize_from_lower(out);
  if (spec.type == KernelType::Linear) {
    for (Index j = 0; j < m && flags == 0; ++j)
      if (!all_finite(out.col(j).data(), m, 1)) flags = kNonFinite;
  }
  raise_flags(spec, flags);
}

Matrix kernel_train(const KernelSpec& spec, RowMatrixCRef X, int n_threads) {
  Matrix out(X.rows(), X.rows());
  advise_huge_pages(out.data(), sizeof(double) * static_cast<size_t>(out.size()));
  kernel_train(spec, X, out, n_threads);
  return out;
}

Matrix kernel_predict(const KernelSpec& spec, RowMatrixCRef Z, RowMatrixCRef X, MatrixCRef coef, int n_threads) {
  check_spec(spec);
  require(coef.rows() == X.rows(), "kernel_predict: coefficient rows must match training inputs");
  require(Z.cols() == X.cols(), "kernel: inputs have different numbers of features");
  const Index p = Z.rows(), m = X.rows();
  Matrix out = Matrix::Zero(p, coef.cols());
  if (p == 0 || m == 0) return out;
  const Index block = std::max<Index>(64, (Index(1) << 22) / std::max<Index>(1, m));  // ~32 MB of kernel
  const Matrix coef_copy = coef;  // contiguous column-major for BLAS (v is small)
  // The Gaussian centre is the mean of the training rows, computed once for every block.
  const bool rbf = spec.type == KernelType::RBF;
  Vector mu, x_sq;
  RowMatrix Xc;
  if (rbf) {
    mu = column_mean(X);
    Xc = centred(X, mu);
    x_sq = Xc.rowwise().squaredNorm();
  }
  Matrix K;
  for (Index start = 0; start < p; start += block) {
    interrupt::poll();
    const Index rows = std::min(block, p - start);
    K.resize(rows, m);
    if (rbf) {
      const RowMatrix Zc = centred(Z.middleRows(start, rows), mu);
      cross_prepared(spec, Zc, Zc.rowwise().squaredNorm(), Xc, x_sq, K, n_threads);
    } else {
      cross_prepared(spec, Z.middleRows(start, rows), Vector(), X, Vector(), K, n_threads);
    }
    Matrix part(rows, coef.cols());
    lapack::gemm('N', 'N', 1.0, K, coef_copy, 0.0, part);
    out.middleRows(start, rows) = part;
  }
  return out;
}

Matrix kernel_predict_rowwise(const KernelSpec& spec, RowMatrixCRef Z, RowMatrixCRef X, MatrixCRef coef,
                              int n_threads) {
  require(coef.rows() == X.rows(), "kernel_predict: coefficient rows must match training inputs");
  const Index p = Z.rows(), m = X.rows(), v = coef.cols();
  Matrix out = Matrix::Zero(p, v);
  if (p == 0 || m == 0) return out;
  const Index block = std::max<Index>(64, (Index(1) << 22) / std::max<Index>(1, m));  // ~32 MB of kernel
  const RowMatrix C = coef;  // row s: the coefficients of support row s for every output
  Matrix K;
  for (Index start = 0; start < p; start += block) {
    const Index rows = std::min(block, p - start);
    K.resize(rows, m);
    kernel_cross_rowwise(spec, Z.middleRows(start, rows), X, K, n_threads);
    parallel_for(0, rows, n_threads, 16, [&](Index lo, Index hi) {
      Vector acc(v);
      for (Index i = lo; i < hi; ++i) {
        acc.setZero();
        for (Index s = 0; s < m; ++s) {  // term by term in support order, each product rounded on its own
          const double k = K(i, s);
          const double* c = C.data() + s * C.outerStride();
          for (Index j = 0; j < v; ++j) acc[j] += k * c[j];
        }
        out.row(start + i) = acc.transpose();
      }
    });
  }
  return out;
}

}  // namespace fastrank
