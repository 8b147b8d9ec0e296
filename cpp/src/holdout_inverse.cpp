#include "fastrank/holdout_inverse.hpp"

#include <Eigen/Cholesky>

#include <algorithm>
#include <cmath>
#include <limits>
#include <mutex>
#include <string>

#include "fastrank/errors.hpp"
#include "fastrank/pair_disagreement.hpp"
#include "fastrank/lapack.hpp"
#include "fastrank/parallel.hpp"

namespace fastrank::cv {

std::vector<Matrix> inverse_diagonal_blocks(MatrixCRef Lc, const GroupStructure& g) {
  const Index m = g.n_rows(), ng = g.n_groups();
  std::vector<Matrix> out(static_cast<size_t>(ng));
  const Index panel = 512;
  Index q0 = 0;
  while (q0 < ng) {
    Index q1 = q0 + 1;
    while (q1 < ng && g.offsets[q1] - g.offsets[q0] < panel) ++q1;
    const Index o = g.offsets[q0], w = g.offsets[q1] - o;
    Matrix Z = Matrix::Zero(m - o, w);
    Z.topRows(w).setIdentity();
    lapack::trsm_lower_left('N', Lc.bottomRightCorner(m - o, m - o), Z);  // (L^-1)_{o:, panel}
    for (Index q = q0; q < q1; ++q) {
      const Index oq = g.offsets[q], n = g.group_size(q), r = oq - o;
      Matrix B(n, n);
      lapack::gemm('T', 'N', 1.0, Z.block(r, r, m - oq, n), Z.block(r, r, m - oq, n), 0.0, B);
      out[static_cast<size_t>(q)] = std::move(B);
    }
    q0 = q1;
  }
  return out;
}


namespace {

[[noreturn]] void not_pd(const char* what) {
  throw LinAlgError(std::string(what) +
                    ": S K S + alpha I is not numerically positive definite (the kernel is not positive "
                    "semidefinite, or alpha is below rounding level for the kernel's scale); increase alpha");
}

// tau: the mean diagonal of Kz (1 if Kz vanishes), the eigenvalue given to each group's constant
// vector so that the factor is as well scaled as Kz itself.
double null_shift(MatrixCRef Kz) {
  const double mean = Kz.diagonal().sum() / static_cast<double>(std::max<Index>(1, Kz.rows()));
  return (mean > 0.0 && std::isfinite(mean)) ? mean : 1.0;
}

// Kz + alpha I + tau sum_q 1_q 1_q^T / n_q, factored in place (lower Cholesky).
void shift_and_factor(Matrix& A, const GroupStructure& g, double alpha, double tau, const char* what) {
  A.diagonal().array() += alpha;
  for (Index q = 0; q < g.n_groups(); ++q) {
    const Index o = g.offsets[q], n = g.group_size(q);
    A.block(o, o, n, n).array() += tau / static_cast<double>(n);
  }
  if (!lapack::potrf_lower(A)) not_pd(what);
}


IndexVector row_groups(const GroupStructure& g) {
  IndexVector grp(g.n_rows());
  for (Index q = 0; q < g.n_groups(); ++q) grp.segment(g.offsets[q], g.group_size(q)).setConstant(q);
  return grp;
}

// Everything the group formulas need from one factorization.
struct GroupInverse {
  Matrix Gt;                 // G_c t (m x v)
  Matrix kappa;              // G_c S K 1_q (m x q)
  Matrix F;                  // full-data predictions (m x v)
  std::vector<Matrix> Gc;    // diagonal blocks of G_c
};

GroupInverse group_inverse(MatrixCRef K, const GroupStructure& g, double alpha, MatrixCRef Y, int n_threads,
                           const char* what) {
  const Index m = g.n_rows(), ng = g.n_groups();
  require(K.rows() == m && K.cols() == m, "K must be m x m");
  require(Y.rows() == m, "Y must have m rows");
  require(std::isfinite(alpha) && alpha > 0.0, "alpha must be finite and > 0");
  GroupInverse out;
  Matrix src(m, ng);  // S K 1_q
  for (Index q = 0; q < ng; ++q) src.col(q) = K.middleCols(g.offsets[q], g.group_size(q)).rowwise().sum();
  apply_sqrt_laplacian(g, src);
  out.Gt = Y;
  apply_sqrt_laplacian(g, out.Gt);  // t = S y
  Matrix A = K;
  apply_sqrt_laplacian_both(g, A, n_threads);
  const double tau = null_shift(A);
  shift_and_factor(A, g, alpha, tau, what);
  // t and S K 1_q are centred per group, so the shifted inverse acts on them as G_c.
  lapack::potrs_lower(A, out.Gt);
  lapack::potrs_lower(A, src);
  out.kappa = std::move(src);
  Matrix a = out.Gt;
  apply_sqrt_laplacian(g, a);  // dual coefficients S G t
  out.F.resize(m, Y.cols());
  lapack::gemm('N', 'N', 1.0, K, a, 0.0, out.F);
  out.Gc = inverse_diagonal_blocks(A, g);
  for (Index q = 0; q < ng; ++q) {
    const double n = static_cast<double>(g.group_size(q));
    out.Gc[static_cast<size_t>(q)].array() -= 1.0 / (n * (alpha + tau));
  }
  return out;
}

// Blocks below this size are factored with Eigen (no BLAS call from a worker thread).
constexpr Index kSmallBlock = 256;

// Leave-group-out prediction of group q's rows (n x v) from its block Gc of G_c, G_c t, the
// group's rows of kappa_q = G_c S K 1_q and the full-data predictions F: G_c,qq r = (G_c t)_q on
// the centred space.
Matrix group_out_rows(const GroupStructure& g, Index q, const Matrix& Gc, MatrixCRef Gt, VectorCRef kappa_q,
                      MatrixCRef F, MatrixCRef Y) {
  const Index o = g.offsets[q], n = g.group_size(q), v = Y.cols();
  const double s = g.scale[q], dn = static_cast<double>(n);
  // Adding the projector on 1 (scaled like G_c) makes the block nonsingular without changing the
  // centred solution.
  const double shift = std::max(Gc.diagonal().mean(), std::numeric_limits<double>::min());
  Matrix B = Gc;
  B.array() += shift / dn;
  Matrix r = Gt.middleRows(o, n);
  if (n < kSmallBlock) {  // Eigen's kernels: safe in fastrank's worker threads
    Eigen::LLT<Eigen::Ref<Matrix>> llt(B);
    if (llt.info() != Eigen::Success) throw LinAlgError("leave-group-out: a group's block of the inverse is singular");
    llt.solveInPlace(r);
  } else {
    if (!lapack::potrf_lower(B)) throw LinAlgError("leave-group-out: a group's block of the inverse is singular");
    lapack::potrs_lower(B, r);
  }
  const Eigen::RowVectorXd ybar = Y.middleRows(o, n).colwise().mean();
  const Eigen::RowVectorXd fbar = F.middleRows(o, n).colwise().mean();
  const Eigen::RowVectorXd shiftmean = kappa_q.transpose() * r / dn;
  Matrix out(n, v);
  for (Index i = 0; i < n; ++i) out.row(i) = Y.row(o + i) - ybar - r.row(i) / s + fbar - shiftmean;
  return out;
}

Matrix group_out_rows(const GroupStructure& g, const GroupInverse& gi, Index q, MatrixCRef Y) {
  return group_out_rows(g, q, gi.Gc[static_cast<size_t>(q)], gi.Gt,
                        gi.kappa.col(q).segment(g.offsets[q], g.group_size(q)), gi.F, Y);
}

void check_holdout_leaves_pairs(const GroupStructure& g) {
  const double total = n_relevant_pairs(g);
  for (Index q = 0; q < g.n_groups(); ++q) {
    const double n = static_cast<double>(g.group_size(q));
    require(total - n * (n - 1.0) / 2.0 > 0.5, "holding out a group leaves no training pairs");
  }
}

}  // namespace

InversePairBlocks object_prepare_inverse(MatrixCRef K, double c, double alpha, MatrixCRef Y, int n_threads) {
  const Index m = K.rows(), v = Y.cols();
  require(m >= 3, "leave-pair-out needs at least 3 inputs");
  require(K.cols() == m && Y.rows() == m, "K must be m x m and Y must have m rows");
  require(std::isfinite(c) && c > 0.0, "the pair weight must be finite and > 0");
  require(std::isfinite(alpha) && alpha > 0.0, "alpha must be finite and > 0");
  const double dm = static_cast<double>(m);
  const double s = std::sqrt(c * dm);
  const double alpha1 = alpha * dm / (dm - 2.0);  // the step-1 model: L scaled by rho = (m-2)/m
  GroupStructure g;
  g.offsets.resize(2);
  g.offsets << 0, m;
  g.scale = Vector::Constant(1, s);

  InversePairBlocks out;
  Matrix src = K.rowwise().sum();
  apply_sqrt_laplacian(g, src);  // S K 1
  out.b = Y;
  apply_sqrt_laplacian(g, out.b);  // t
  const Matrix t = out.b;
  Matrix A = K;
  apply_sqrt_laplacian_both(g, A, n_threads);
  const double tau = null_shift(A);
  shift_and_factor(A, g, alpha1, tau, "leave-pair-out");
  lapack::potrs_lower(A, out.b);  // G_c t
  lapack::potrs_lower(A, src);    // kappa = G_c S K 1
  out.k = src.col(0);
  lapack::potri_lower(A);
  const double null_part = 1.0 / (dm * (alpha1 + tau));
  for (Index j = 0; j < m; ++j) A.col(j).tail(m - j).array() -= null_part;
  out.M.push_back(std::move(A));
  // Mean prediction of the alpha/rho model: 1^T K S G t / m = kappa^T t / m.
  const Eigen::RowVectorXd fbar = (out.k.transpose() * t) / dm;
  const Eigen::RowVectorXd ybar = Y.colwise().mean();
  out.base = Y;
  out.base.rowwise() += fbar - ybar;
  out.lgo = Matrix::Zero(m, v);
  return out;
}

InversePairBlocks group_prepare_inverse(MatrixCRef K, const GroupStructure& g, double alpha, MatrixCRef Y,
                                        int n_threads) {
  const Index m = g.n_rows(), ng = g.n_groups(), v = Y.cols();
  const GroupInverse gi = group_inverse(K, g, alpha, Y, n_threads, "leave-pair-out");
  InversePairBlocks out;
  out.M.resize(static_cast<size_t>(ng));
  out.b = Matrix::Zero(m, v);
  out.k = Vector::Zero(m);
  out.base = Matrix::Zero(m, v);
  out.lgo = Matrix::Zero(m, v);
  for (Index q = 0; q < ng; ++q) {
    const Index o = g.offsets[q], n = g.group_size(q);
    if (n < 2) continue;
    if (n == 2) {
      out.lgo.middleRows(o, n) = group_out_rows(g, gi, q, Y);
      continue;
    }
    const double dn = static_cast<double>(n), gamma = 2.0 * alpha / (dn - 2.0);
    const Matrix& Gc = gi.Gc[static_cast<size_t>(q)];
    Matrix B = gamma * Gc;
    B.diagonal().array() += 1.0;  // I + gamma G_c,qq: eigenvalues >= 1
    Matrix rhs(n, n + v + 1);
    rhs.leftCols(n) = Gc;
    rhs.middleCols(n, v) = gi.Gt.middleRows(o, n);
    rhs.col(n + v) = gi.kappa.col(q).segment(o, n);
    if (!lapack::potrf_lower(B)) throw LinAlgError("leave-pair-out: I + gamma G_qq is not positive definite");
    lapack::potrs_lower(B, rhs);
    Matrix M = 0.5 * (rhs.leftCols(n) + rhs.leftCols(n).transpose());
    out.M[static_cast<size_t>(q)] = std::move(M);
    out.b.middleRows(o, n) = rhs.middleCols(n, v);
    out.k.segment(o, n) = rhs.col(n + v);
    const Eigen::RowVectorXd ybar = Y.middleRows(o, n).colwise().mean();
    const Eigen::RowVectorXd fbar = gi.F.middleRows(o, n).colwise().mean();
    const Eigen::RowVectorXd fbar1 =
        fbar - (2.0 * alpha / (dn * (dn - 2.0))) * (gi.kappa.col(q).segment(o, n).transpose() * rhs.middleCols(n, v));
    for (Index i = 0; i < n; ++i) out.base.row(o + i) = Y.row(o + i) - ybar + fbar1;
  }
  return out;
}

namespace {

template <class MakeSink>
void inverse_pair_loop(const GroupStructure& g, const InversePairBlocks& bl, MatrixCRef Y, PairMatrixCRef pairs,
                       int n_threads, MakeSink make_sink) {
  const Index m = g.n_rows(), v = Y.cols(), np = pairs.rows();
  require(pairs.cols() == 2 || np == 0, "pairs must have shape (n_pairs, 2)");
  require(Y.rows() == m && bl.b.rows() == m && bl.b.cols() == v && bl.k.size() == m && bl.base.rows() == m,
          "leave-pair-out: size mismatch");
  require(static_cast<Index>(bl.M.size()) == g.n_groups(), "leave-pair-out: one block per group");
  const IndexVector grp = row_groups(g);
  // Diagonals of the blocks, contiguous: reading M_aa in place would touch one page per pair.
  Vector diag = Vector::Zero(m);
  for (Index q = 0; q < g.n_groups(); ++q) {
    const Index o = g.offsets[q], n = g.group_size(q);
    if (n < 3) continue;
    const Matrix& M = bl.M[static_cast<size_t>(q)];
    require(M.rows() == n && M.cols() == n, "leave-pair-out: block has the wrong size");
    diag.segment(o, n) = M.diagonal();
  }
  parallel_for(0, np, n_threads, 4096, [&](Index lo, Index hi) {
    auto sink = make_sink();
    for (Index p = lo; p < hi; ++p) {
      const Index a = pairs(p, 0), b = pairs(p, 1);
      if (a < 0 || a >= m || b < 0 || b >= m || a == b)
        throw std::invalid_argument("pair " + std::to_string(p) + " is invalid (index out of range or i == j)");
      const Index q = grp[a];
      if (grp[b] != q) throw std::invalid_argument("pair " + std::to_string(p) + " crosses groups");
      const Index o = g.offsets[q], n = g.offsets[q + 1] - o;
      if (n == 2) {  // the group keeps no pair: its leave-group-out prediction
        for (Index k = 0; k < v; ++k) sink.emit(p, k, bl.lgo(a, k), bl.lgo(b, k), Y(a, k), Y(b, k));
        continue;
      }
      const Matrix& M = bl.M[static_cast<size_t>(q)];
      const Index la = a - o, lb = b - o;
      const double maa = diag[a], mbb = diag[b];
      const double mab = M.data()[std::max(la, lb) + std::min(la, lb) * n];
      const double det = maa * mbb - mab * mab;
      if (!(det > 0.0)) throw LinAlgError("leave-pair-out: a 2x2 block of the inverse is singular");
      const double i00 = mbb / det, i11 = maa / det, i01 = -mab / det;
      const double dn = static_cast<double>(n), s = g.scale[q], ka = bl.k[a], kb = bl.k[b];
      for (Index k = 0; k < v; ++k) {
        const double ba = bl.b(a, k), bb = bl.b(b, k);
        const double e0 = i00 * ba + i01 * bb, e1 = i01 * ba + i11 * bb;
        const double em = (e0 + e1) / dn, shift = (ka * e0 + kb * e1) / dn;
        sink.emit(p, k, bl.base(a, k) - (e0 - em) / s - shift, bl.base(b, k) - (e1 - em) / s - shift, Y(a, k),
                  Y(b, k));
      }
    }
    sink.flush();
  });
}

}  // namespace

RowMatrix lpo_pairs_inverse(const GroupStructure& g, const InversePairBlocks& blocks, MatrixCRef Y,
                            PairMatrixCRef pairs, int n_threads) {
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
  inverse_pair_loop(g, blocks, Y, pairs, n_threads, [&] { return Writer{&out, v}; });
  return out;
}

Vector lpo_disagreement_inverse(const GroupStructure& g, const InversePairBlocks& blocks, MatrixCRef Y,
                                PairMatrixCRef pairs, int n_threads) {
  PairDisagreement total(Y.cols());
  inverse_pair_loop(g, blocks, Y, pairs, n_threads, [&] { return total.counter(); });
  return total.result();
}

Matrix leave_group_out_inverse(MatrixCRef K, const GroupStructure& g, double alpha, MatrixCRef Y, int n_threads) {
  check_holdout_leaves_pairs(g);
  const GroupInverse gi = group_inverse(K, g, alpha, Y, n_threads, "leave-group-out");
  Matrix out = gi.F;
  for (Index q = 0; q < g.n_groups(); ++q) {
    if (g.group_size(q) < 2) continue;
    out.middleRows(g.offsets[q], g.group_size(q)) = group_out_rows(g, gi, q, Y);
  }
  return out;
}

Matrix leave_group_out_path(MatrixCRef K, const GroupStructure& g, const Vector& alphas, MatrixCRef Y,
                            int n_threads) {
  check_holdout_leaves_pairs(g);
  const Index m = g.n_rows(), ng = g.n_groups(), v = Y.cols(), na = alphas.size();
  require(K.rows() == m && K.cols() == m, "K must be m x m");
  require(Y.rows() == m, "Y must have m rows");
  for (Index a = 0; a < na; ++a) require(std::isfinite(alphas[a]) && alphas[a] > 0.0, "alphas must be finite and > 0");
  Matrix src(m, ng);  // S K 1_q
  for (Index q = 0; q < ng; ++q) src.col(q) = K.middleCols(g.offsets[q], g.group_size(q)).rowwise().sum();
  apply_sqrt_laplacian(g, src);
  Matrix t = Y;
  apply_sqrt_laplacian(g, t);  // t = S y
  Matrix V = K;
  apply_sqrt_laplacian_both(g, V, n_threads);
  const double tau = null_shift(V);
  for (Index q = 0; q < ng; ++q) {
    const Index o = g.offsets[q], n = g.group_size(q);
    V.block(o, o, n, n).array() += tau / static_cast<double>(n);
  }
  Vector sigma;
  lapack::syevd(V, sigma);  // S K S + tau E = V diag(sigma) V^T
  // t and S K 1_q are centred per group (orthogonal to E), so G_c acts on them as V diag(1/(sigma +
  // alpha)) V^T; the diagonal blocks of G_c subtract E's term 1 1^T / (n (alpha + tau)).
  Matrix Vtt(m, v), Vsrc(m, ng);
  lapack::gemm('T', 'N', 1.0, V, t, 0.0, Vtt);
  lapack::gemm('T', 'N', 1.0, V, src, 0.0, Vsrc);
  const Matrix Vt = V.transpose();  // group q's rows of V as contiguous columns
  Matrix dinv(m, na);
  for (Index k = 0; k < na; ++k) {
    if ((sigma.array() + alphas[k]).minCoeff() <= 0.0) not_pd("leave-group-out");
    dinv.col(k) = (sigma.array() + alphas[k]).inverse().matrix();
  }
  // every alpha's G_c t and full-data predictions in one pass over V and K (memory-bound at this size)
  Matrix scaled(m, na * v);
  for (Index k = 0; k < na; ++k) scaled.middleCols(k * v, v) = dinv.col(k).asDiagonal() * Vtt;
  Matrix Gt(m, na * v), F(m, na * v);
  lapack::gemm('N', 'N', 1.0, V, scaled, 0.0, Gt);
  Matrix a = Gt;
  apply_sqrt_laplacian(g, a);
  lapack::gemm('N', 'N', 1.0, K, a, 0.0, F);
  Matrix out = F;
  // per group, all alphas while its rows of V are in cache: small groups in fastrank's threads
  auto one_group = [&](Index q) {
    const Index o = g.offsets[q], n = g.group_size(q);
    if (n < 2) return;
    const auto Vq = Vt.middleCols(o, n);
    Matrix Gc(n, n), Wq(m, n);
    for (Index k = 0; k < na; ++k) {
      const double alpha = alphas[k];
      Wq.noalias() = dinv.col(k).asDiagonal() * Vq;
      Gc.noalias() = Vq.transpose() * Wq;
      Gc.array() -= 1.0 / (static_cast<double>(n) * (alpha + tau));
      const Vector kappa_q = Wq.transpose() * Vsrc.col(q);
      out.block(o, k * v, n, v) = group_out_rows(g, q, Gc, Gt.middleCols(k * v, v), kappa_q,
                                                 F.middleCols(k * v, v), Y);
    }
  };
  std::vector<Index> small;
  for (Index q = 0; q < ng; ++q) {
    if (g.group_size(q) >= kSmallBlock) {
      one_group(q);
    } else {
      small.push_back(q);
    }
  }
  parallel_for(0, static_cast<Index>(small.size()), n_threads, 2, [&](Index lo, Index hi) {
    for (Index k = lo; k < hi; ++k) one_group(small[static_cast<size_t>(k)]);
  });
  return out;
}

}  // namespace fastrank::cv
