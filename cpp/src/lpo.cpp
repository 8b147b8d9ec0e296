#include "fastrank/lpo.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <string>

#include "fastrank/errors.hpp"
#include "fastrank/holdout_inverse.hpp"
#include "fastrank/pair_disagreement.hpp"
#include "fastrank/lapack.hpp"
#include "fastrank/parallel.hpp"

namespace fastrank::cv {

namespace {

// C <- op(A) op(B) for Eigen column-major operands (no aliasing).
Matrix mul(char ta, char tb, MatrixCRef a, MatrixCRef b, double alpha = 1.0) {
  const Index m = (ta == 'N') ? a.rows() : a.cols();
  const Index k = (ta == 'N') ? a.cols() : a.rows();
  const Index n = (tb == 'N') ? b.cols() : b.rows();
  Matrix c(m, n);
  if (m == 0 || n == 0) return c;
  if (k == 0) {
    c.setZero();
    return c;
  }
  lapack::gemm(ta, tb, m, n, k, alpha, a.data(), a.outerStride(), b.data(), b.outerStride(), 0.0, c.data(),
               c.rows());
  return c;
}

// S Y for one group block structure (copy).
Matrix sqrt_laplacian_times(const GroupStructure& g, MatrixCRef Y) {
  Matrix out = Y;
  apply_sqrt_laplacian(g, out);
  return out;
}

IndexVector row_groups(const GroupStructure& g) {
  IndexVector grp(g.n_rows());
  for (Index q = 0; q < g.n_groups(); ++q) grp.segment(g.offsets[q], g.group_size(q)).setConstant(q);
  return grp;
}

void check_square(MatrixCRef A, Index m, const char* what) {
  require(A.rows() == m && A.cols() == m, std::string(what) + " must be m x m");
}

// Spectral factor: V is m x r with orthonormal columns (r = m for the dual eigendecomposition,
// r = rank for the primal/low-rank path), sigma its r eigenvalues; P (if given) is m x r.
void check_factor(MatrixCRef V, VectorCRef sigma, Index m) {
  require(V.rows() == m && V.cols() == sigma.size() && V.cols() >= 1 && V.cols() <= m,
          "V must be m x r with one eigenvalue per column");
}

// Rows idx of A (|idx| x A.cols()).
Matrix gather_rows(MatrixCRef A, const std::vector<Index>& idx) {
  Matrix out(static_cast<Index>(idx.size()), A.cols());
  for (Index c = 0; c < A.cols(); ++c)
    for (Index r = 0; r < out.rows(); ++r) out(r, c) = A(idx[r], c);
  return out;
}

// Training predictions f = K S V diag(scale/(scale sigma + alpha)) V^T S Y of the model with
// Laplacian scale*L, computed without the 1/alpha amplification of K a: the centred part from
// S f = V diag(scale sigma/(scale sigma + alpha)) V^T S Y (bounded factors) and the group means
// from means(K S V) (rows of E^T K S V / n_q, supplied as G x m).
Matrix stable_predictions(const GroupStructure& g, MatrixCRef V, VectorCRef sigma, double scale, double alpha,
                          MatrixCRef VtSY, MatrixCRef meanKSV) {
  Matrix coef = VtSY, cmean = VtSY;
  for (Index i = 0; i < sigma.size(); ++i) {
    const double den = scale * sigma[i] + alpha;
    coef.row(i) *= scale * sigma[i] / den;
    cmean.row(i) *= scale / den;
  }
  Matrix F = mul('N', 'N', V, coef);  // S f
  Matrix means = mul('N', 'N', meanKSV, cmean);  // G x v
  for (Index q = 0; q < g.n_groups(); ++q) {
    const Index o = g.offsets[q], n = g.group_size(q);
    F.middleRows(o, n) /= g.scale[q];
    F.middleRows(o, n).rowwise() += means.row(q);
  }
  return F;
}

}  // namespace

double pair_weight(const GroupStructure& g, Index q) {
  const double s = g.scale[q];
  return s * s / static_cast<double>(g.group_size(q));
}

void spectral(MatrixCRef K, const GroupStructure& g, Matrix& V, Vector& sigma, int n_threads) {
  const Index m = g.n_rows();
  check_square(K, m, "K");
  V = K;
  apply_sqrt_laplacian_both(g, V, n_threads);
  lapack::syevd(V, sigma);
  for (Index i = 0; i < sigma.size(); ++i) sigma[i] = std::max(sigma[i], 0.0);
}

Matrix ksv(MatrixCRef K, const GroupStructure& g, MatrixCRef V) {
  const Index m = g.n_rows();
  check_square(K, m, "K");
  check_square(V, m, "V");
  Matrix SK = K;
  apply_sqrt_laplacian(g, SK);     // S K
  return mul('T', 'N', SK, V);     // (S K)^T V = K S V
}

Matrix predictions_from_p(MatrixCRef P, MatrixCRef V, VectorCRef sigma, const GroupStructure& g, double alpha,
                          MatrixCRef Y) {
  check_factor(V, sigma, g.n_rows());
  require(P.rows() == V.rows() && P.cols() == V.cols(), "P must have the shape of V");
  const Matrix VtSY = mul('T', 'N', V, sqrt_laplacian_times(g, Y));
  Matrix meanKSV(g.n_groups(), P.cols());
  for (Index q = 0; q < g.n_groups(); ++q)
    meanKSV.row(q) = P.middleRows(g.offsets[q], g.group_size(q)).colwise().mean();
  return stable_predictions(g, V, sigma, 1.0, alpha, VtSY, meanKSV);
}

PairBlocks object_prepare(MatrixCRef K, MatrixCRef V, VectorCRef sigma, double c, double alpha, MatrixCRef Y) {
  const Index m = K.rows();
  require(m >= 3, "leave-pair-out needs at least 3 inputs");
  check_square(K, m, "K");
  check_factor(V, sigma, m);
  require(Y.rows() == m, "object_prepare: size mismatch");
  const Index r = V.cols();
  const double s2 = c * static_cast<double>(m), s = std::sqrt(s2);
  const double rho = static_cast<double>(m - 2) / static_cast<double>(m);
  IndexVector offs(2);
  offs << 0, m;
  GroupStructure g;
  g.offsets = offs;
  g.scale = Vector::Constant(1, s);

  PairBlocks out;
  // M = V diag(sigma / (rho sigma + alpha)) V^T / s^2  (paper's Q, eq. 39), lower triangle.
  Matrix W = V;
  for (Index k = 0; k < r; ++k) W.col(k) *= std::sqrt(sigma[k] / (rho * sigma[k] + alpha) / s2);
  Matrix M(m, m);
  lapack::syrk_lower('N', m, r, 1.0, W.data(), m, 0.0, M.data(), m);
  lapack::symmetrize_from_lower(M);
  W.resize(0, 0);
  out.M.push_back(std::move(M));

  const Vector dinv = (rho * sigma.array() + alpha).inverse().matrix();
  // mu = V diag(1/(rho sigma + alpha)) V^T S K 1 / (m s);  w = V^T S K 1.
  Matrix k1 = K.rowwise().sum();
  apply_sqrt_laplacian(g, k1);
  Matrix w = mul('T', 'N', V, k1);
  Matrix meanKSV = w.transpose() / static_cast<double>(m);  // 1^T K S V / m
  // h = f(alpha / rho) - y.
  const Matrix VtSY = mul('T', 'N', V, sqrt_laplacian_times(g, Y));
  out.h = stable_predictions(g, V, sigma, rho, alpha, VtSY, meanKSV);
  out.h -= Y;
  for (Index i = 0; i < r; ++i) w(i, 0) *= dinv[i] / (static_cast<double>(m) * s);
  out.mu = mul('N', 'N', V, w).col(0);
  return out;
}

PairBlocks group_prepare(MatrixCRef P, MatrixCRef V, VectorCRef sigma, const GroupStructure& g, double alpha,
                         MatrixCRef Y) {
  const Index m = g.n_rows();
  check_factor(V, sigma, m);
  require(P.rows() == m && P.cols() == V.cols(), "P must have the shape of V");
  require(Y.rows() == m, "group_prepare: size mismatch");
  const Index r = V.cols();
  const Index v = Y.cols();
  PairBlocks out;
  const Matrix F = predictions_from_p(P, V, sigma, g, alpha, Y);
  const Vector D = (sigma.array() + alpha).inverse().matrix();
  out.mu = Vector::Zero(m);
  out.h = Matrix::Zero(m, v);
  out.M.resize(g.n_groups());
  for (Index q = 0; q < g.n_groups(); ++q) {
    const Index o = g.offsets[q], n = g.group_size(q);
    if (n < 2) continue;
    const double s = g.scale[q], c = pair_weight(g, q);
    Matrix PD = P.middleRows(o, n) * D.asDiagonal();
    Matrix T(n, n);
    // T = R C restricted to G: (1/s) P_G D V_G^T.
    lapack::gemm('N', 'T', n, n, r, 1.0 / s, PD.data(), n, V.data() + o, V.outerStride(), 0.0, T.data(), n);
    Matrix A = Matrix::Identity(n, n) - 2.0 * c * T;
    Matrix B(n, n + v);
    B.leftCols(n) = T;
    B.rightCols(v) = F.middleRows(o, n) - Y.middleRows(o, n);
    lapack::gesv(A, B);  // B <- Z [T, d]
    Matrix J = B.leftCols(n);
    const Eigen::RowVectorXd cm = J.colwise().mean();
    out.mu.segment(o, n) = cm.transpose();
    J.rowwise() -= cm;
    out.M[q] = std::move(J);
    out.h.middleRows(o, n) = B.rightCols(v);
  }
  return out;
}

namespace {

// The O(1)-per-pair core shared by lpo_pairs and lpo_disagreement.  make_sink() builds one
// per-chunk sink with emit(p, k, f_first, f_second) and flush().
template <class MakeSink>
void pair_loop(const GroupStructure& g, const std::vector<const double*>& M, VectorCRef mu, MatrixCRef h,
               MatrixCRef Y, PairMatrixCRef pairs, int n_threads, MakeSink make_sink) {
  const Index m = g.n_rows(), v = Y.cols(), np = pairs.rows();
  require(pairs.cols() == 2 || np == 0, "pairs must have shape (n_pairs, 2)");
  require(mu.size() == m && h.rows() == m && Y.rows() == m && h.cols() == v, "lpo_pairs: size mismatch");
  require(static_cast<Index>(M.size()) == g.n_groups(), "lpo_pairs: one block per group");
  const IndexVector grp = row_groups(g);
  // Diagonals of the blocks, contiguous: reading M_bb in place would touch one page per pair.
  Vector diag(m);
  for (Index q = 0; q < g.n_groups(); ++q) {
    const Index o = g.offsets[q], n = g.group_size(q);
    if (n < 3) continue;
    for (Index k = 0; k < n; ++k) diag[o + k] = M[q][k + k * n];
  }
  Vector wq(g.n_groups());  // f_q = 1 / (c_q n_q (n_q - 2)): W^-1 = f_q [[n-1, -1], [-1, n-1]]
  for (Index q = 0; q < g.n_groups(); ++q) {
    const double dn = static_cast<double>(g.group_size(q));
    wq[q] = g.group_size(q) > 2 ? 1.0 / (pair_weight(g, q) * dn * (dn - 2.0)) : 0.0;
  }
  Matrix hbar(g.n_groups(), v);  // group means of h
  for (Index q = 0; q < g.n_groups(); ++q) {
    const Index n = g.group_size(q);
    if (n > 0) hbar.row(q) = h.middleRows(g.offsets[q], n).colwise().mean();
    else hbar.row(q).setZero();
  }
  parallel_for(0, np, n_threads, 4096, [&](Index lo, Index hi) {
    auto sink = make_sink();
    for (Index p = lo; p < hi; ++p) {
      if ((p - lo) % 4096 == 0) interrupt::poll();  // a clock read per 4096 pairs
      const Index a = pairs(p, 0), b = pairs(p, 1);
      if (a < 0 || a >= m || b < 0 || b >= m || a == b)
        throw std::invalid_argument("pair " + std::to_string(p) + " is invalid (index out of range or i == j)");
      const Index q = grp[a];
      if (grp[b] != q) throw std::invalid_argument("pair " + std::to_string(p) + " crosses groups");
      const Index o = g.offsets[q], n = g.offsets[q + 1] - o;
      if (n == 2) {  // the group keeps no pair: only the shift term remains
        for (Index k = 0; k < v; ++k) {
          const double ya = Y(a, k), yb = Y(b, k);
          sink.emit(p, k, ya + h(a, k), yb + h(b, k), ya, yb);
        }
        continue;
      }
      const double* Mq = M[q];
      const Index la = a - o, lb = b - o;
      const double maa = diag[a], mbb = diag[b];
      const double mab = Mq[std::max(la, lb) + std::min(la, lb) * n];
      const double f = wq[q], fd = f * static_cast<double>(n - 1);
      const double n00 = fd - maa, n11 = fd - mbb, n01 = -f - mab;
      const double det = n00 * n11 - n01 * n01;
      if (!(std::abs(det) > 0.0)) throw LinAlgError("leave-pair-out: singular 2x2 system");
      const double r = 1.0 / det;
      const double i00 = n11 * r, i11 = n00 * r, i01 = -n01 * r;
      const double j00 = maa + mu[a], j01 = mab + mu[b], j10 = mab + mu[a], j11 = mbb + mu[b];
      const double k00 = j00 * i00 + j01 * i01, k01 = j00 * i01 + j01 * i11;
      const double k10 = j10 * i00 + j11 * i01, k11 = j10 * i01 + j11 * i11;
      for (Index k = 0; k < v; ++k) {
        const double ha = h(a, k), hb = h(b, k), hm = hbar(q, k);
        const double r0 = ha - hm, r1 = hb - hm, ya = Y(a, k), yb = Y(b, k);
        sink.emit(p, k, ya + ha + k00 * r0 + k01 * r1, yb + hb + k10 * r0 + k11 * r1, ya, yb);
      }
    }
    sink.flush();
  });
}

}  // namespace

RowMatrix lpo_pairs(const GroupStructure& g, const std::vector<const double*>& M, VectorCRef mu, MatrixCRef h,
                    MatrixCRef Y, PairMatrixCRef pairs, int n_threads) {
  const Index v = Y.cols();
  RowMatrix out(pairs.rows(), 2 * v);
  struct Writer {
    RowMatrix* out;
    Index v;
    void emit(Index p, Index k, double fa, double fb, double, double) {
      double* row = out->data() + p * 2 * v;
      row[k] = fa;
      row[v + k] = fb;
    }
    void flush() {}
  };
  pair_loop(g, M, mu, h, Y, pairs, n_threads, [&] { return Writer{&out, v}; });
  return out;
}

Vector lpo_disagreement(const GroupStructure& g, const std::vector<const double*>& M, VectorCRef mu, MatrixCRef h,
                        MatrixCRef Y, PairMatrixCRef pairs, int n_threads) {
  PairDisagreement total(Y.cols());
  pair_loop(g, M, mu, h, Y, pairs, n_threads, [&] { return total.counter(); });
  return total.result();
}

namespace {

// C_S V (the columns of V centred per group, rows in group order) without forming it: V and the group
// means of its rows.
struct CentredFactor {
  MatrixCRef V;
  const GroupStructure& g;
  IndexVector grp;
  Matrix Vbar;  // groups x r

  CentredFactor(MatrixCRef V_, const GroupStructure& g_)
      : V(V_), g(g_), grp(row_groups(g_)), Vbar(g_.n_groups(), V_.cols()) {
    for (Index q = 0; q < g.n_groups(); ++q) {
      const Index n = g.group_size(q);
      if (n > 0) Vbar.row(q) = V.middleRows(g.offsets[q], n).colwise().mean();
      else Vbar.row(q).setZero();
    }
  }
  Matrix rows(const std::vector<Index>& idx) const {  // (C_S V)_idx
    Matrix W = gather_rows(V, idx);
    for (Index k = 0; k < W.rows(); ++k) W.row(k) -= Vbar.row(grp[idx[static_cast<size_t>(k)]]);
    return W;
  }
  Matrix times(MatrixCRef x) const {  // C_S V x
    Matrix out = mul('N', 'N', V, x);
    const Matrix means = mul('N', 'N', Vbar, x);
    for (Index q = 0; q < g.n_groups(); ++q) out.middleRows(g.offsets[q], g.group_size(q)).rowwise() -= means.row(q);
    return out;
  }
  // G_c restricted to rows and columns idx: Vc_idx diag(d) Vc_idx^T (d > 0; one SYRK).
  Matrix block(const Vector& d, const std::vector<Index>& idx) const {
    Matrix W = rows(idx);
    W.array().rowwise() *= d.cwiseSqrt().transpose().array();
    const Index n = W.rows();
    Matrix B(n, n);
    if (n == 0) return B;
    lapack::syrk_lower('N', n, W.cols(), 1.0, W.data(), n, 0.0, B.data(), n);
    lapack::symmetrize_from_lower(B);
    return B;
  }
};

// Object-ranking sets from the spectral factor: G_c(alpha') = Vc diag(1/(sigma + alpha')) Vc^T per set size;
// VtSK1 = V^T S K 1 (r x 1).
Matrix object_sets_spectral(MatrixCRef V, VectorCRef sigma, double s, double alpha, MatrixCRef Y,
                            const IndexVector& rows, const IndexVector& fold_offsets, MatrixCRef VtSK1) {
  const Index m = V.rows(), v = Y.cols();
  const double dm = static_cast<double>(m);
  const auto by_size = sets_by_size(rows, fold_offsets, m);
  IndexVector offs(2);
  offs << 0, m;
  GroupStructure g;
  g.offsets = offs;
  g.scale = Vector::Constant(1, s);
  const CentredFactor Vc(V, g);
  const Matrix Vt = mul('T', 'N', V, sqrt_laplacian_times(g, Y));  // (C_S V)^T t = V^T t (t = S Y is centred)
  Matrix out(rows.size(), v);
  for (const auto& [u, sets] : by_size) {
    const Vector d = (sigma.array() + alpha * dm / (dm - static_cast<double>(u))).inverse().matrix();
    SetInverse inv;
    inv.Gt = Vc.times(d.asDiagonal() * Vt);
    inv.kappa = Vc.times(d.asDiagonal() * VtSK1);
    inv.fbar = VtSK1.transpose() * d.asDiagonal() * Vt / dm;
    inv.block = [&Vc, &d](const std::vector<Index>& idx) { return Vc.block(d, idx); };
    object_sets(inv, s, alpha, Y, rows, fold_offsets, sets, out);
  }
  return out;
}

void check_full_factor(MatrixCRef V, VectorCRef sigma, Index m) {
  check_factor(V, sigma, m);
  require(V.cols() == m, "hold-out sets need the full spectral factor of S K S (V m x m)");
}

}  // namespace

Matrix object_holdout(MatrixCRef K, MatrixCRef V, VectorCRef sigma, double c, double alpha, MatrixCRef Y,
                      const IndexVector& rows, const IndexVector& fold_offsets) {
  const Index m = K.rows();
  check_square(K, m, "K");
  check_full_factor(V, sigma, m);
  require(Y.rows() == m, "object_holdout: size mismatch");
  const double s = std::sqrt(c * static_cast<double>(m));
  Matrix k1 = K.rowwise().sum();
  k1 *= s;
  k1.array() -= k1.mean();  // S K 1
  return object_sets_spectral(V, sigma, s, alpha, Y, rows, fold_offsets, mul('T', 'N', V, k1));
}

Matrix group_holdout(MatrixCRef P, MatrixCRef V, VectorCRef sigma, const GroupStructure& g, double alpha,
                     MatrixCRef Y, const IndexVector& rows, const IndexVector& fold_offsets) {
  const Index m = g.n_rows(), ng = g.n_groups(), v = Y.cols();
  check_full_factor(V, sigma, m);
  require(P.rows() == m && P.cols() == V.cols(), "P must have the shape of V");
  require(Y.rows() == m, "group_holdout: size mismatch");
  if (ng == 1)  // V^T S K 1 = (K S V)^T 1
    return object_sets_spectral(V, sigma, g.scale[0], alpha, Y, rows, fold_offsets, P.colwise().sum().transpose());
  const CentredFactor Vc(V, g);
  const Vector d = (sigma.array() + alpha).inverse().matrix();
  const Matrix dVt = d.asDiagonal() * mul('T', 'N', V, sqrt_laplacian_times(g, Y));  // D V^T t
  Matrix Pbar(ng, P.cols());  // group means of K S V
  for (Index q = 0; q < ng; ++q) Pbar.row(q) = P.middleRows(g.offsets[q], g.group_size(q)).colwise().mean();
  SetInverse inv;
  inv.Gt = Vc.times(dVt);
  inv.fbar = mul('N', 'N', Pbar, dVt);  // group means of K S G t
  inv.block = [&Vc, &d](const std::vector<Index>& idx) { return Vc.block(d, idx); };
  // kappa_q,A^T z / n_q = 1_q^T K S G_c E_A z / n_q = Pbar_q D Vc_A^T z
  inv.mean_shift = [&](const std::vector<Index>& touched, const std::vector<Index>& A, MatrixCRef z) {
    const Matrix w = d.asDiagonal() * mul('T', 'N', Vc.rows(A), z);
    Matrix shift(static_cast<Index>(touched.size()), v);
    for (Index i = 0; i < shift.rows(); ++i) shift.row(i) = Pbar.row(touched[static_cast<size_t>(i)]) * w;
    return shift;
  };
  return group_sets(inv, g, alpha, Y, rows, fold_offsets);
}

}  // namespace fastrank::cv

namespace fastrank::cv {

Matrix leave_group_out_cholesky(MatrixCRef K, const GroupStructure& g, double alpha, MatrixCRef Y, int n_threads) {
  const Index m = g.n_rows(), v = Y.cols(), ng = g.n_groups();
  require(K.rows() == m && K.cols() == m, "K must be m x m");
  require(Y.rows() == m, "Y must have m rows");
  const double total = n_relevant_pairs(g);
  for (Index q = 0; q < ng; ++q) {
    const double n = static_cast<double>(g.group_size(q));
    require(total - n * (n - 1.0) / 2.0 > 0.5, "holding out a group leaves no training pairs");
  }
  Matrix Lc = K;
  apply_sqrt_laplacian_both(g, Lc, n_threads);
  Lc.diagonal().array() += alpha;
  if (!lapack::potrf_lower(Lc))
    throw LinAlgError("leave-group-out: S K S + alpha I is not numerically positive definite; increase alpha");
  // Full fit: a = S G S Y, f = K a.
  Matrix a = Y;
  apply_sqrt_laplacian(g, a);
  lapack::potrs_lower(Lc, a);
  apply_sqrt_laplacian(g, a);
  Matrix F(m, v);
  lapack::gemm('N', 'N', 1.0, K, a, 0.0, F);
  // W = G S K E (column q: G S K 1_{G_q}).
  Matrix KE(m, ng);
  for (Index q = 0; q < ng; ++q) KE.col(q) = K.middleCols(g.offsets[q], g.group_size(q)).rowwise().sum();
  apply_sqrt_laplacian(g, KE);
  lapack::potrs_lower(Lc, KE);
  Matrix out = F;
  const std::vector<Matrix> G = inverse_diagonal_blocks(Lc, g);  // G_GG of (S K S + alpha I)^-1
  for (Index q = 0; q < ng; ++q) {
    const Index oq = g.offsets[q], n = g.group_size(q);
    if (n < 2) continue;
    const double s = g.scale[q], s2 = s * s;
    Matrix A = alpha * G[static_cast<size_t>(q)];
    Vector mu = KE.col(q).segment(oq, n) / (static_cast<double>(n) * s);
    mu.array() -= mu.mean();  // C mu
    for (Index c = 0; c < n; ++c) A.col(c).array() -= s2 * mu[c];
    Matrix rhs = F.middleRows(oq, n) - Y.middleRows(oq, n);
    lapack::gesv(A, rhs);
    out.middleRows(oq, n) = Y.middleRows(oq, n) + rhs;
  }
  return out;
}

}  // namespace fastrank::cv
