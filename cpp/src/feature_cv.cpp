#include "fastrank/feature_cv.hpp"

#include <Eigen/Cholesky>
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "fastrank/errors.hpp"
#include "fastrank/huge_pages.hpp"
#include "fastrank/lapack.hpp"
#include "fastrank/parallel.hpp"

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#define FASTRANK_X86_DISPATCH 1
#endif

namespace fastrank::cv {

namespace {

// G = Z^T Z (n x n, column-major, both triangles) of a p x n column-major block Z: the Gram matrix
// of a group's solved rows.  The build targets baseline x86-64; an AVX2/FMA path is chosen at run
// time (four columns against one per pass, no horizontal sum per product).
void gram_plain(const double* Z, Index p, Index n, double* G) {
  const Eigen::Map<const Matrix> Zm(Z, p, n);
  for (Index j = 0; j < n; ++j) {
    for (Index i = j; i < n; ++i) G[i + j * n] = G[j + i * n] = Zm.col(i).dot(Zm.col(j));
  }
}

#ifdef FASTRANK_X86_DISPATCH
// The four sums of the lanes of s0 .. s3, in that order.
__attribute__((target("avx2,fma"))) inline __m256d lane_sums(__m256d s0, __m256d s1, __m256d s2, __m256d s3) {
  const __m256d h01 = _mm256_hadd_pd(s0, s1), h23 = _mm256_hadd_pd(s2, s3);
  return _mm256_add_pd(_mm256_permute2f128_pd(h01, h23, 0x20), _mm256_permute2f128_pd(h01, h23, 0x31));
}

// Columns j, j + 1 against four columns i .. i + 3 per pass (eight sums in registers, six loads
// per eight products), then the remaining columns of the pair, then a last single column.
__attribute__((target("avx2,fma"))) void gram_avx2(const double* Z, Index p, Index n, double* G) {
  const Index p4 = p - p % 4;
  auto put = [&](Index i, Index j, double d) { G[i + j * n] = G[j + i * n] = d; };
  Index j = 0;
  for (; j + 2 <= n; j += 2) {
    const double *b0 = Z + j * p, *b1 = b0 + p;
    Index i = j;
    for (; i + 4 <= n; i += 4) {
      const double *a0 = Z + i * p, *a1 = a0 + p, *a2 = a1 + p, *a3 = a2 + p;
      __m256d s00 = _mm256_setzero_pd(), s01 = s00, s02 = s00, s03 = s00, s10 = s00, s11 = s00, s12 = s00,
              s13 = s00;
      for (Index k = 0; k < p4; k += 4) {
        const __m256d c0 = _mm256_loadu_pd(b0 + k), c1 = _mm256_loadu_pd(b1 + k);
        __m256d a = _mm256_loadu_pd(a0 + k);
        s00 = _mm256_fmadd_pd(a, c0, s00);
        s10 = _mm256_fmadd_pd(a, c1, s10);
        a = _mm256_loadu_pd(a1 + k);
        s01 = _mm256_fmadd_pd(a, c0, s01);
        s11 = _mm256_fmadd_pd(a, c1, s11);
        a = _mm256_loadu_pd(a2 + k);
        s02 = _mm256_fmadd_pd(a, c0, s02);
        s12 = _mm256_fmadd_pd(a, c1, s12);
        a = _mm256_loadu_pd(a3 + k);
        s03 = _mm256_fmadd_pd(a, c0, s03);
        s13 = _mm256_fmadd_pd(a, c1, s13);
      }
      alignas(32) double d0[4], d1[4];
      _mm256_store_pd(d0, lane_sums(s00, s01, s02, s03));
      _mm256_store_pd(d1, lane_sums(s10, s11, s12, s13));
      const double* as[4] = {a0, a1, a2, a3};
      for (Index t = 0; t < 4; ++t) {
        for (Index k = p4; k < p; ++k) {
          d0[t] += as[t][k] * b0[k];
          d1[t] += as[t][k] * b1[k];
        }
        put(i + t, j, d0[t]);
        put(i + t, j + 1, d1[t]);
      }
    }
    for (; i < n; ++i) {
      const double* a = Z + i * p;
      __m256d s0 = _mm256_setzero_pd(), s1 = s0;
      for (Index k = 0; k < p4; k += 4) {
        const __m256d av = _mm256_loadu_pd(a + k);
        s0 = _mm256_fmadd_pd(av, _mm256_loadu_pd(b0 + k), s0);
        s1 = _mm256_fmadd_pd(av, _mm256_loadu_pd(b1 + k), s1);
      }
      alignas(32) double d[4];
      _mm256_store_pd(d, lane_sums(s0, s1, s0, s1));
      for (Index k = p4; k < p; ++k) {
        d[0] += a[k] * b0[k];
        d[1] += a[k] * b1[k];
      }
      put(i, j, d[0]);
      put(i, j + 1, d[1]);
    }
  }
  if (j < n) {  // the last column: its diagonal entry (the others are filled by symmetry)
    const double* b = Z + j * p;
    __m256d s0 = _mm256_setzero_pd();
    for (Index k = 0; k < p4; k += 4) s0 = _mm256_fmadd_pd(_mm256_loadu_pd(b + k), _mm256_loadu_pd(b + k), s0);
    alignas(32) double d[4];
    _mm256_store_pd(d, s0);
    double sum = (d[0] + d[1]) + (d[2] + d[3]);
    for (Index k = p4; k < p; ++k) sum += b[k] * b[k];
    G[j + j * n] = sum;
  }
}
#endif

using GramFn = void (*)(const double*, Index, Index, double*);

GramFn pick_gram() {
#ifdef FASTRANK_X86_DISPATCH
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return gram_avx2;
#endif
  return gram_plain;
}

void gram(const double* Z, Index p, Index n, double* G) {
  static const GramFn fn = pick_gram();  // chosen once, read-only afterwards
  fn(Z, p, n, G);
}

// Groups at least this large are handled on the calling thread with (threaded) BLAS; smaller
// ones in fastrank's threads with Eigen's kernels (no BLAS call from a worker thread).
constexpr Index kBlasGroup = 256;

[[noreturn]] void not_pd(const char* what) {
  throw LinAlgError(std::string(what) +
                    ": the p x p system X^T L X + alpha I is not numerically positive definite; increase alpha");
}

void check_input(RowMatrixCRef Phi, RowMatrixCRef Y, IndexVectorCRef order, IndexVectorCRef offsets,
                 VectorCRef weight, double alpha) {
  const Index m = Phi.rows(), ng = offsets.size() - 1;
  require(ng >= 1 && offsets[0] == 0 && offsets[ng] == m, "group offsets must run from 0 to m");
  require(order.size() == m && Y.rows() == m, "order and Y must have one entry per row of Phi");
  require(weight.size() == ng, "one pair weight per group");
  require(std::isfinite(alpha) && alpha > 0.0, "alpha must be finite and > 0");
  for (Index q = 0; q < ng; ++q) {
    require(offsets[q + 1] > offsets[q], "every group must contain at least one row");
    require(weight[q] >= 0.0 && std::isfinite(weight[q]), "pair weights must be finite and >= 0");
  }
  for (Index i = 0; i < m; ++i) require(order[i] >= 0 && order[i] < m, "order must index the rows");
}

// Centred data in group order and the full-data system (header comment).
// Reciprocal condition number (1-norm) of the symmetric p x p system whose lower triangle is A: 0 when it is not
// numerically positive definite.  One extra factor, O(p^3 / 3), against the O(m p^2) of forming A.
double system_rcond(const Matrix& A) {
  const Matrix full = A.selfadjointView<Eigen::Lower>();
  Matrix L = A;
  if (!lapack::potrf_lower(L)) return 0.0;
  return lapack::pocon_lower(L, full.cwiseAbs().colwise().sum().maxCoeff());
}

struct Centred {
  Index m = 0, p = 0, v = 0, ng = 0;
  Matrix Xt;    // p x m: column i = centred features of position i
  Matrix Yc;    // m x v: centred targets
  Matrix mu;    // p x ng: group means of the features
  Matrix A;     // p x p (lower triangle): sum_q c_q n_q Xc_q^T Xc_q + alpha I
  Matrix b;     // p x v
  IndexVector offsets;
  Vector weight;

  Index size(Index q) const { return offsets[q + 1] - offsets[q]; }
};

Centred centre(RowMatrixCRef Phi, RowMatrixCRef Y, IndexVectorCRef order, IndexVectorCRef offsets,
               VectorCRef weight, double alpha, int n_threads) {
  check_input(Phi, Y, order, offsets, weight, alpha);
  Centred c;
  c.m = Phi.rows();
  c.p = Phi.cols();
  c.v = Y.cols();
  c.ng = offsets.size() - 1;
  c.offsets = offsets;
  c.weight = weight;
  c.Xt.resize(c.p, c.m);
  c.Yc.resize(c.m, c.v);
  c.mu.resize(c.p, c.ng);
  Matrix St(c.p, c.m), Sy(c.m, c.v);  // rows scaled by sqrt(c_q n_q): A = St St^T, b = St Sy
  parallel_for(0, c.ng, n_threads, 16, [&](Index lo, Index hi) {
    for (Index q = lo; q < hi; ++q) {
      const Index o = offsets[q], n = c.size(q);
      Vector mx = Vector::Zero(c.p);
      Eigen::RowVectorXd my = Eigen::RowVectorXd::Zero(c.v);
      for (Index i = 0; i < n; ++i) {
        mx += Phi.row(order[o + i]).transpose();
        my += Y.row(order[o + i]);
      }
      mx /= static_cast<double>(n);
      my /= static_cast<double>(n);
      c.mu.col(q) = mx;
      const double s = std::sqrt(weight[q] * static_cast<double>(n));
      for (Index i = 0; i < n; ++i) {
        c.Xt.col(o + i) = Phi.row(order[o + i]).transpose() - mx;
        c.Yc.row(o + i) = Y.row(order[o + i]) - my;
        St.col(o + i) = s * c.Xt.col(o + i);
        Sy.row(o + i) = s * c.Yc.row(o + i);
      }
    }
  });
  c.A = Matrix::Zero(c.p, c.p);
  c.A.diagonal().setConstant(alpha);
  lapack::syrk_lower('N', c.p, c.m, 1.0, St.data(), c.p, 1.0, c.A.data(), c.p);
  c.b.resize(c.p, c.v);
  lapack::gemm('N', 'N', 1.0, St, Sy, 0.0, c.b);
  return c;
}

}  // namespace

// A cancellation bound for forming X^T L X from the uncentred rows: with r_j = s^2 (X^T X)_jj / A_jj,
// the rounding error of A_ij = s^2 (X^T X - sum_q n_q mu_q mu_q^T)_ij + alpha delta_ij relative to
// sqrt(A_ii A_jj) is at most sqrt(r_i r_j) times that of the centred product (Cauchy-Schwarz), and
// of b_j = s^2 (X^T Yc)_j (as 1^T Yc_q = 0) at most sqrt(r_j) times; past this bound the centred
// rows are formed (at most 4 bits lost to the identity; on LightGBM's LETOR-like rank.train sample,
// normalized pairs, entries of features with r <= 16 agreed with the centred product to 3e-14 relative,
// those with r > 100 only to 2e-12).
constexpr double kMaxCancellation = 16.0;

// Leave-group-out.  The rows scaled by s_q = sqrt(c_q n_q), X^_q = s_q Xc_q, give A = X^ X^^T + alpha I
// and b = X^ (s Yc).  When every group with pairs has one c_q n_q = s^2 (unit-normalized pairs, or
// equal groups), A and b come from the rows as given, A = s^2 (X^T X - sum_q n_q mu_q mu_q^T) +
// alpha I and b = s^2 X^T Yc (no centred copy; kMaxCancellation).  After the Cholesky factor
// A = L L^T each group is solved in cache, a block of groups at a time: the block holds, per
// group, [X^_q, mu_q, b / s_q] (gathered and centred), one GEMM with L^-1 turns it into
// [Z^_q, L^-1 mu_q, u / s_q] (Z^ = L^-1 X^, u = L^-1 b = L^T w), and one Gram product of those
// columns gives G^ = Z^_q^T Z^_q = c_q n_q G, k^ = Z^_q^T L^-1 mu_q = s_q kappa and the centred
// full-data predictions g = Z^_q^T u / s_q = Xc_q w.  The header's update with D = c_q n_q I reads
//     t' = (I - G^)^-1 (g - G^ Yc_q) - Yc_q,   P^T w' = f0_q + G^ t' + 1 s_q k^^T t'.
RowMatrix feature_leave_group_out(double* rcond, RowMatrixCRef Phi, RowMatrixCRef Y, IndexVectorCRef order,
                                  IndexVectorCRef offsets, VectorCRef weight, double alpha, int n_threads) {
  check_input(Phi, Y, order, offsets, weight, alpha);
  const Index m = Phi.rows(), p = Phi.cols(), v = Y.cols(), ng = offsets.size() - 1;
  auto size = [&](Index q) { return offsets[q + 1] - offsets[q]; };
  Matrix Yc(m, v), mu(p, ng), bterms(p, ng * v);  // Yc in group order; X_q^T Yc_q in columns q v ..
  Vector scale(ng);
  const Index ld = Phi.outerStride();
  Vector squares = Vector::Zero(p);  // (X^T X)_jj
  {  // one thread: two threads made this pass over the rows slower (wall and CPU time, m = 2000)
    Vector mx(p), my(v);
    for (Index q = 0; q < ng; ++q) {
      const Index o = offsets[q], n = size(q);
      mx.setZero();
      my.setZero();
      for (Index i = 0; i < n; ++i) {
        const double* x = Phi.data() + order[o + i] * ld;
        for (Index k = 0; k < p; ++k) {
          mx[k] += x[k];
          squares[k] += x[k] * x[k];
        }
        for (Index j = 0; j < v; ++j) my[j] += Y(order[o + i], j);
      }
      mx /= static_cast<double>(n);
      my /= static_cast<double>(n);
      mu.col(q) = mx;
      scale[q] = std::sqrt(weight[q] * static_cast<double>(n));
      bterms.middleCols(q * v, v).setZero();
      for (Index i = 0; i < n; ++i) {  // X_q^T Yc_q while the group's rows are in cache
        const double* x = Phi.data() + order[o + i] * ld;
        for (Index j = 0; j < v; ++j) {
          const double yc = Y(order[o + i], j) - my[j];
          Yc(o + i, j) = yc;
          double* bj = bterms.col(q * v + j).data();
          for (Index k = 0; k < p; ++k) bj[k] += x[k] * yc;
        }
      }
    }
  }
  // one s^2 = c_q n_q for every group with pairs (a single row is its own mean: no term), to a
  // few roundings ((1 / n) n need not be 1 exactly)
  double s2 = -1.0;
  bool uniform = true;
  for (Index q = 0; q < ng && uniform; ++q) {
    if (size(q) < 2) continue;
    const double sq = weight[q] * static_cast<double>(size(q));
    if (s2 < 0.0) s2 = sq;
    uniform = std::abs(sq - s2) <= 8.0 * std::numeric_limits<double>::epsilon() * s2;
  }
  if (s2 < 0.0) s2 = 0.0;
  Matrix A = Matrix::Zero(p, p), b(p, v);
  bool formed = false;
  if (uniform && s2 > 0.0) {  // the bound from A's diagonal, known from the sums before any product
    Vector within = squares;
    for (Index q = 0; q < ng; ++q) within -= static_cast<double>(size(q)) * mu.col(q).cwiseAbs2();
    formed = (s2 * squares.array() <= kMaxCancellation * (s2 * within.array() + alpha)).all();
  }
  if (formed) {
    lapack::syrk_lower('N', p, m, s2, Phi.data(), ld, 0.0, A.data(), p);
    Matrix Mn(p, ng);  // sqrt(n_q) mu_q
    for (Index q = 0; q < ng; ++q) Mn.col(q) = std::sqrt(static_cast<double>(size(q))) * mu.col(q);
    lapack::syrk_lower('N', p, ng, -s2, Mn.data(), p, 1.0, A.data(), p);
    A.diagonal().array() += alpha;
    b.setZero();  // summed in group order: the same for every thread count
    for (Index q = 0; q < ng; ++q) b += bterms.middleCols(q * v, v);
    b *= s2;
  }
  if (!formed) {  // the centred rows, scaled
    Matrix Xs(p, m), Ys(m, v);
    parallel_for(0, ng, n_threads, 16, [&](Index lo, Index hi) {
      for (Index q = lo; q < hi; ++q) {
        const Index o = offsets[q], n = size(q);
        for (Index i = 0; i < n; ++i) Xs.col(o + i) = scale[q] * (Phi.row(order[o + i]).transpose() - mu.col(q));
        Ys.middleRows(o, n) = scale[q] * Yc.middleRows(o, n);
      }
    });
    A.setZero();
    A.diagonal().setConstant(alpha);
    lapack::syrk_lower('N', p, m, 1.0, Xs.data(), p, 1.0, A.data(), p);
    lapack::gemm('N', 'N', 1.0, Xs, Ys, 0.0, b);
  }
  *rcond = system_rcond(A);
  Matrix L = A;
  if (!lapack::potrf_lower(L)) not_pd("leave-group-out");
  L.triangularView<Eigen::StrictlyUpper>().setZero();
  Matrix w = b;
  lapack::potrs_lower(L, w);
  const Matrix muw = mu.transpose() * w;  // ng x v
  Matrix Linv = Matrix::Identity(p, p);
  lapack::trsm_lower_left('N', L, Linv);
  // Retrained predictions of group q without its rows from the p x p system directly (A' = A -
  // c_q n_q Xc_q^T Xc_q), the better-conditioned form where the group dominates some direction.
  auto direct = [&](Index q) {
    const Index o = offsets[q], n = size(q);
    const double cn = weight[q] * static_cast<double>(n);
    Matrix Xq(p, n);
    for (Index i = 0; i < n; ++i) Xq.col(i) = Phi.row(order[o + i]).transpose() - mu.col(q);
    Matrix Aq = A.selfadjointView<Eigen::Lower>();
    Aq.noalias() -= cn * Xq * Xq.transpose();
    Matrix bq = b;
    bq.noalias() -= cn * Xq * Yc.middleRows(o, n);
    Eigen::LLT<Matrix> llt(Aq);
    if (llt.info() != Eigen::Success) not_pd("leave-group-out");
    const Matrix wq = llt.solve(bq);
    Matrix out = Xq.transpose() * wq;
    out.rowwise() += mu.col(q).transpose() * wq;
    return out;
  };
  RowMatrix out(m, v);
  auto put = [&](Index q, const Matrix& pred) {
    const Index o = offsets[q];
    for (Index i = 0; i < pred.rows(); ++i) out.row(order[o + i]) = pred.row(i);
  };
  // Group q from its columns E = [Z^_q, L^-1 mu_q, u / s_q] (p x (n + 1 + v)) of a solved block.
  struct Work {
    Matrix E, N;
    Vector t, pred;
  };
  auto woodbury = [&](Index q, const double* Zx, Work& wk) {
    const Index o = offsets[q], n = size(q), ne = n + 1 + v;
    const double s = scale[q];
    wk.E.resize(ne, ne);
    gram(Zx, p, ne, wk.E.data());
    const auto G = wk.E.topLeftCorner(n, n);
    const auto kappa = wk.E.col(n).head(n);
    wk.N = -G;
    wk.N.diagonal().array() += 1.0;
    // I - G^ is SPD (A' is); a tiny pivot: retrain directly
    if (Eigen::internal::llt_inplace<double, Eigen::Lower>::blocked(wk.N) >= 0 ||
        wk.N.diagonal().minCoeff() <= 1e-4) {
      put(q, direct(q));
      return;
    }
    const auto Nl = wk.N.triangularView<Eigen::Lower>();
    wk.t.resize(n);
    wk.pred.resize(n);
    for (Index j = 0; j < v; ++j) {  // one output at a time: vector kernels, no work arrays
      const auto g = wk.E.col(n + 1 + j).head(n);
      const auto yq = Yc.col(j).segment(o, n);
      wk.t = g;
      wk.t.noalias() -= G * yq;
      Nl.solveInPlace(wk.t);
      Nl.adjoint().solveInPlace(wk.t);
      wk.t -= yq;
      wk.pred = g;
      wk.pred.noalias() += G * wk.t;
      const double shift = muw(q, j) + s * kappa.dot(wk.t);
      for (Index i = 0; i < n; ++i) out(order[o + i], j) = wk.pred[i] + shift;
    }
  };
  // blocks of about 256 KB: the block and its solve stay in cache (one thread: keeping every solved
  // block for threads over groups cost more CPU time than the threads saved, measured at m = 2e4, 2e5)
  const Index block_cols = std::max<Index>(512, 32768 / std::max<Index>(p, 1));
  Matrix in(p, block_cols + p + 1 + v), solved(p, block_cols + p + 1 + v);
  std::vector<Index> members, start;
  Work wk;
  auto flush = [&](Index cols) {
    // L^-1 is lower triangular: rows [0, h) need only the first h rows of the block (3/4 of the flops)
    const Index h = p / 2;
    lapack::gemm('N', 'N', h, cols, h, 1.0, Linv.data(), p, in.data(), p, 0.0, solved.data(), p);
    lapack::gemm('N', 'N', p - h, cols, p, 1.0, Linv.data() + h, p, in.data(), p, 0.0, solved.data() + h, p);
    for (size_t k = 0; k < members.size(); ++k) woodbury(members[k], solved.col(start[k]).data(), wk);
    members.clear();
    start.clear();
  };
  Index cols = 0;
  for (Index q = 0; q < ng; ++q) {
    const Index o = offsets[q], n = size(q);
    const double s = scale[q];
    if (n < 2 || s == 0.0) {  // no pair leaves: the full-data predictions
      Matrix pred(n, v);
      for (Index i = 0; i < n; ++i) pred.row(i) = Phi.row(order[o + i]) * w;
      put(q, pred);
      continue;
    }
    if (n >= p) {
      put(q, direct(q));
      continue;
    }
    members.push_back(q);
    start.push_back(cols);
    const double* mq = mu.col(q).data();
    for (Index i = 0; i < n; ++i) {
      const double* x = Phi.data() + order[o + i] * ld;
      double* z = in.col(cols + i).data();
      for (Index k = 0; k < p; ++k) z[k] = s * (x[k] - mq[k]);
    }
    in.col(cols + n) = mu.col(q);
    in.middleCols(cols + n + 1, v) = b / s;
    cols += n + 1 + v;
    if (cols >= block_cols) {
      flush(cols);
      cols = 0;
    }
  }
  if (cols > 0) flush(cols);
  return out;
}

namespace {

// Per group with pairs: the (n-2)/n-scaled system A_0 = A - 2 c_q Xc_q^T Xc_q, b_0 likewise
// (header comment), its factor L_0, and per row z = L_0^-1 xc (a column of Zt), kappa = z . L_0^-1
// mu_q, the full-data predictions f of (A_0, b_0) and the residuals e = Xc w_0 - Yc.  With them a
// pair {a, b} costs O(v): t = (I - D G)^-1 D e_U (the header's t, as D r - (I - D G) D Yc_U =
// D e_U) and P^T w' = f_U + (G + 1 kappa^T) t.
struct PairPieces {
  Matrix Zt, e, f;
  Vector kappa, zz;  // zz = G_aa = |z_a|^2

  PairPieces(const Centred& c, const std::vector<char>& used, int n_threads)
      : Zt(Matrix::Zero(c.p, c.m)), e(Matrix::Zero(c.m, c.v)), f(Matrix::Zero(c.m, c.v)),
        kappa(Vector::Zero(c.m)), zz(Vector::Zero(c.m)) {
    std::vector<Index> small;
    for (Index q = 0; q < c.ng; ++q) {
      if (!used[static_cast<size_t>(q)]) continue;
      if (c.size(q) >= kBlasGroup) {
        group(c, q, true);
      } else {
        small.push_back(q);
      }
    }
    parallel_for(0, static_cast<Index>(small.size()), n_threads, 8, [&](Index lo, Index hi) {
      for (Index k = lo; k < hi; ++k) group(c, small[static_cast<size_t>(k)], false);
    });
  }

  void group(const Centred& c, Index q, bool blas) {
    const Index o = c.offsets[q], n = c.size(q), p = c.p, v = c.v;
    const double cq = c.weight[q];
    const auto Xq = c.Xt.middleCols(o, n);
    Matrix L = c.A;
    Matrix b = c.b;
    if (blas) {
      lapack::syrk_lower('N', p, n, -2.0 * cq, Xq.data(), p, 1.0, L.data(), p);
      lapack::gemm('N', 'N', -2.0 * cq, Xq, c.Yc.middleRows(o, n), 1.0, b);
      if (!lapack::potrf_lower(L)) not_pd("leave-pair-out");
      L.triangularView<Eigen::StrictlyUpper>().setZero();
    } else {
      L.selfadjointView<Eigen::Lower>().rankUpdate(Xq, -2.0 * cq);
      b.noalias() -= 2.0 * cq * Xq * c.Yc.middleRows(o, n);
      Eigen::LLT<Eigen::Ref<Matrix>> llt(L);
      if (llt.info() != Eigen::Success) not_pd("leave-pair-out");
      L.triangularView<Eigen::StrictlyUpper>().setZero();
    }
    const auto Lv = L.triangularView<Eigen::Lower>();
    Matrix w = Lv.solve(b);
    L.transpose().triangularView<Eigen::Upper>().solveInPlace(w);
    auto Zq = Zt.middleCols(o, n);
    Zq = Xq;
    if (blas) {
      lapack::trsm_lower_left('N', L, Zq);
    } else {
      Lv.solveInPlace(Zq);
    }
    const Vector nu = Lv.solve(c.mu.col(q));
    kappa.segment(o, n).noalias() = Zq.transpose() * nu;
    zz.segment(o, n) = Zq.colwise().squaredNorm().transpose();
    Matrix gq(n, v);  // centred predictions Xc_q w_0
    if (blas) {
      lapack::gemm('T', 'N', 1.0, Xq, w, 0.0, gq);
    } else {
      gq.noalias() = Xq.transpose() * w;
    }
    e.middleRows(o, n) = gq - c.Yc.middleRows(o, n);
    f.middleRows(o, n) = gq;
    f.middleRows(o, n).rowwise() += c.mu.col(q).transpose() * w;
  }
};

// The pair {a, b} of group q (D = c_q [[k+1, 1], [1, k+1]], k = n_q - 2; PairPieces comment):
// writes the retrained predictions of a to out_a[j] and of b to out_b[j], j < v.
struct PairKernel {
  const PairPieces& pp;
  double d0, d1;
  Index v;

  void operator()(Index a, Index b, double gab, double* out_a, double* out_b) const {
    const double gaa = pp.zz[a], gbb = pp.zz[b], ka = pp.kappa[a], kb = pp.kappa[b];
    const double n00 = 1.0 - (d0 * gaa + d1 * gab), n01 = -(d0 * gab + d1 * gbb);
    const double n10 = -(d1 * gaa + d0 * gab), n11 = 1.0 - (d1 * gab + d0 * gbb);
    const double inv_det = 1.0 / (n00 * n11 - n01 * n10);
    for (Index j = 0; j < v; ++j) {
      const double ea = pp.e(a, j), eb = pp.e(b, j);
      const double ua = d0 * ea + d1 * eb, ub = d1 * ea + d0 * eb;
      const double ta = (n11 * ua - n01 * ub) * inv_det, tb = (n00 * ub - n10 * ua) * inv_det;
      out_a[j] = pp.f(a, j) + (gaa + ka) * ta + (gab + kb) * tb;
      out_b[j] = pp.f(b, j) + (gab + ka) * ta + (gbb + kb) * tb;
    }
  }

  // Row a against the rows b = a+1 .. a+len of its group, G_ab = gcol[b - a - 1]; pair s of the
  // row goes to out[s * 2v ...] (RowMatrix rows [first outputs, second outputs]).  The one-output
  // case is a flat loop over b that the compiler vectorizes.
  void row(Index a, Index len, const double* __restrict gcol, double* __restrict out) const {
    if (v != 1) {
      for (Index s = 0; s < len; ++s) (*this)(a, a + 1 + s, gcol[s], out + 2 * v * s, out + 2 * v * s + v);
      return;
    }
    const double d0 = this->d0, d1 = this->d1;  // locals: no reload after each store to out
    const double gaa = pp.zz[a], ka = pp.kappa[a], ea = pp.e(a, 0), fa = pp.f(a, 0);
    const double* __restrict zz = pp.zz.data() + a + 1;
    const double* __restrict kap = pp.kappa.data() + a + 1;
    const double* __restrict e = pp.e.data() + a + 1;
    const double* __restrict f = pp.f.data() + a + 1;
    const double c00 = 1.0 - d0 * gaa, c10 = -d1 * gaa, uea0 = d0 * ea, uea1 = d1 * ea;
    for (Index s = 0; s < len; ++s) {
      const double gab = gcol[s], gbb = zz[s], eb = e[s];
      const double n00 = c00 - d1 * gab, n01 = -(d0 * gab + d1 * gbb);
      const double n10 = c10 - d0 * gab, n11 = 1.0 - (d1 * gab + d0 * gbb);
      const double inv_det = 1.0 / (n00 * n11 - n01 * n10);
      const double ua = uea0 + d1 * eb, ub = uea1 + d0 * eb;
      const double ta = (n11 * ua - n01 * ub) * inv_det, tb = (n00 * ub - n10 * ua) * inv_det;
      out[2 * s] = fa + (gaa + ka) * ta + (gab + kap[s]) * tb;
      out[2 * s + 1] = f[s] + (gab + ka) * ta + (gbb + kap[s]) * tb;
    }
  }
};

PairKernel kernel_for(const Centred& c, const PairPieces& pp, Index q) {
  const double cq = c.weight[q], k = static_cast<double>(c.size(q) - 2);
  return PairKernel{pp, cq * (k + 1.0), cq, c.v};
}

}  // namespace

RowMatrix feature_leave_pair_out(double* rcond, RowMatrixCRef Phi, RowMatrixCRef Y, IndexVectorCRef order,
                                 IndexVectorCRef offsets, VectorCRef weight, double alpha, PairMatrixCRef pairs,
                                 int n_threads) {
  const Centred c = centre(Phi, Y, order, offsets, weight, alpha, n_threads);
  *rcond = system_rcond(c.A);
  const Index m = c.m, v = c.v, ng = c.ng, np = pairs.rows();
  require(pairs.cols() == 2, "pairs must have two columns");
  IndexVector grp(m);
  for (Index q = 0; q < ng; ++q) grp.segment(c.offsets[q], c.size(q)).setConstant(q);
  std::vector<Index> count(static_cast<size_t>(ng), 0);
  for (Index k = 0; k < np; ++k) {
    const Index a = pairs(k, 0), b = pairs(k, 1);
    require(a >= 0 && a < m && b >= 0 && b < m && a != b, "pair positions must be distinct rows");
    require(grp[a] == grp[b], "both rows of a pair must lie in one group");
    ++count[static_cast<size_t>(grp[a])];
  }
  std::vector<char> used(static_cast<size_t>(ng));
  for (Index q = 0; q < ng; ++q) used[static_cast<size_t>(q)] = count[static_cast<size_t>(q)] > 0;
  const PairPieces pp(c, used, n_threads);
  // dense blocks Z_q^T Z_q (lower) where a group's pairs are dense, else one dot product per pair
  std::vector<Matrix> M(static_cast<size_t>(ng));
  for (Index q = 0; q < ng; ++q) {
    const Index o = c.offsets[q], n = c.size(q);
    const double dn = static_cast<double>(n);
    if (16.0 * static_cast<double>(count[static_cast<size_t>(q)]) < dn * dn || dn > 5792.0) continue;
    Matrix Mq(n, n);
    lapack::syrk_lower('T', n, c.p, 1.0, pp.Zt.col(o).data(), c.p, 0.0, Mq.data(), n);
    M[static_cast<size_t>(q)] = std::move(Mq);
  }
  RowMatrix out(np, 2 * v);
  parallel_for(0, np, n_threads, 4096, [&](Index lo, Index hi) {
    for (Index k = lo; k < hi; ++k) {
      if ((k - lo) % 4096 == 0) interrupt::poll();  // a clock read per 4096 pairs
      const Index a = pairs(k, 0), b = pairs(k, 1), q = ng == 1 ? 0 : grp[a], o = c.offsets[q];
      const Matrix& Mq = M[static_cast<size_t>(q)];
      const double gab = Mq.size() == 0 ? pp.Zt.col(a).dot(pp.Zt.col(b))
                                         : (a > b ? Mq(a - o, b - o) : Mq(b - o, a - o));
      kernel_for(c, pp, q)(a, b, gab, &out(k, 0), &out(k, v));
    }
  });
  return out;
}

RowMatrix feature_leave_all_pairs_out(double* rcond, RowMatrixCRef Phi, RowMatrixCRef Y, IndexVectorCRef order,
                                      IndexVectorCRef offsets, VectorCRef weight, double alpha, int n_threads) {
  const Centred c = centre(Phi, Y, order, offsets, weight, alpha, n_threads);
  *rcond = system_rcond(c.A);
  const Index m = c.m, p = c.p, v = c.v, ng = c.ng;
  // Output row of each row's first pair: rows in the caller's order, each followed by its later
  // group members (positions t+1 .. in group order, increasing rows as order is increasing there).
  IndexVector start(m + 1);
  std::vector<char> used(static_cast<size_t>(ng));
  for (Index q = 0; q < ng; ++q) {
    const Index o = c.offsets[q], n = c.size(q);
    used[static_cast<size_t>(q)] = n >= 2;
    for (Index t = o; t < o + n; ++t) {
      require(t == o || order[t] > order[t - 1], "order must list each group's rows in increasing order");
      start[order[t] + 1] = o + n - 1 - t;
    }
  }
  start[0] = 0;
  for (Index i = 0; i < m; ++i) start[i + 1] += start[i];
  const PairPieces pp(c, used, n_threads);
  RowMatrix out(start[m], 2 * v);
  advise_huge_pages(out.data(), sizeof(double) * static_cast<size_t>(out.size()));
  const Index width = 2 * v;
  // small groups: one worker each, hat block Z_q^T Z_q with Eigen (no BLAS in worker threads)
  std::vector<Index> small, large;
  for (Index q = 0; q < ng; ++q) {
    if (c.size(q) >= 2) (c.size(q) >= kBlasGroup ? large : small).push_back(q);
  }
  parallel_for(0, static_cast<Index>(small.size()), n_threads, 8, [&](Index lo, Index hi) {
    Matrix Mq;
    for (Index k = lo; k < hi; ++k) {
      const Index q = small[static_cast<size_t>(k)], o = c.offsets[q], n = c.size(q);
      const auto Zq = pp.Zt.middleCols(o, n);
      Mq.resize(n, n);
      Mq.noalias() = Zq.transpose() * Zq;
      const PairKernel kern = kernel_for(c, pp, q);
      for (Index t = 0; t + 1 < n; ++t) {
        kern.row(o + t, n - 1 - t, &Mq(t + 1, t), out.data() + start[order[o + t]] * width);
      }
    }
  });
  // large groups: a few column blocks of the hat block with BLAS on this thread (at most 8 MB each:
  // few hand-overs between BLAS and the pair threads), each block's rows of pairs in threads, split
  // into ranges of about equal pair counts (column t has n - 1 - t pairs)
  const Index parts = 4 * static_cast<Index>(std::max(1, n_threads));
  std::vector<Index> cut(static_cast<size_t>(parts) + 1);
  for (Index q : large) {
    const Index o = c.offsets[q], n = c.size(q);
    const PairKernel kern = kernel_for(c, pp, q);
    const Index nb = std::clamp<Index>((Index{1} << 20) / n, 64, n);
    Matrix Mb(n, std::min(nb, n - 1));
    for (Index lo = 0; lo + 1 < n; lo += nb) {
      const Index hi = std::min(n - 1, lo + nb), rows = n - lo;
      // Mb(s - lo, t - lo) = z_s . z_t for s >= lo, lo <= t < hi
      lapack::gemm('T', 'N', rows, hi - lo, p, 1.0, pp.Zt.col(o + lo).data(), p, pp.Zt.col(o + lo).data(), p, 0.0,
                   Mb.data(), n);
      const double total = 0.5 * static_cast<double>(hi - lo) * static_cast<double>(2 * n - 1 - lo - hi);
      double acc = 0.0;
      Index t = lo;
      cut[0] = lo;
      for (Index k = 1; k <= parts; ++k) {
        while (t < hi && acc < total * static_cast<double>(k) / static_cast<double>(parts)) {
          acc += static_cast<double>(n - 1 - t);
          ++t;
        }
        cut[static_cast<size_t>(k)] = k == parts ? hi : t;
      }
      parallel_for(0, parts, n_threads, 1, [&](Index klo, Index khi) {
        for (Index t0 = cut[static_cast<size_t>(klo)]; t0 < cut[static_cast<size_t>(khi)]; ++t0) {
          kern.row(o + t0, n - 1 - t0, &Mb(t0 + 1 - lo, t0 - lo), out.data() + start[order[o + t0]] * width);
        }
      });
    }
  }
  return out;
}

}  // namespace fastrank::cv
