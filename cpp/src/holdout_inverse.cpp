#include "fastrank/holdout_inverse.hpp"

#include <Eigen/Cholesky>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <mutex>
#include <string>

#include "fastrank/errors.hpp"
#include "fastrank/huge_pages.hpp"
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

// B X = R in place for a group's SPD block B (lower triangle read, destroyed).  Blocks below
// kSmallBlock use Eigen's kernels (safe in fastrank's worker threads), larger ones LAPACK.
void solve_group_block(MatrixRef B, MatrixRef R) {
  if (B.rows() < kSmallBlock) {
    Eigen::LLT<Eigen::Ref<Matrix>> llt(B);
    if (llt.info() != Eigen::Success) throw LinAlgError("leave-group-out: a group's block of the inverse is singular");
    llt.solveInPlace(R);
  } else {
    if (!lapack::potrf_lower(B)) throw LinAlgError("leave-group-out: a group's block of the inverse is singular");
    lapack::potrs_lower(B, R);
  }
}

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
  solve_group_block(B, r);
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
      if ((p - lo) % 4096 == 0) interrupt::poll();  // a clock read per 4096 pairs
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
      // The block scales as 1 / (kernel scale): its determinant, formed unscaled, under- or overflows at kernel
      // values near 2^(+-600) where the inverse itself is representable.
      const double rt = 1.0 / std::max(maa, mbb), a_ = maa * rt, b_ = mbb * rt, c_ = mab * rt;
      const double det = a_ * b_ - c_ * c_;
      if (!(det > 0.0)) throw LinAlgError("leave-pair-out: a 2x2 block of the inverse is singular");
      const double u = rt / det, i00 = b_ * u, i11 = a_ * u, i01 = -c_ * u;
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

namespace {

// Each group's centred vectors in an orthonormal basis, from one Householder reflector per group:
// H_q = I - 2 w w^T / (w^T w), w = 1_q / sqrt(n) + e_1, maps 1_q / sqrt(n) to -e_1, so its other
// n - 1 columns Q_q are an orthonormal basis of the vectors orthogonal to 1_q and the centring is
// C_q = Q_q Q_q^T.  With Q = blockdiag(Q_q) (m x m', m' = m - number of non-empty groups) and
// Qs = blockdiag(s_q Q_q), S = Q Qs^T and S K S = Q (Qs^T K Qs) Q^T: the null space of S (one
// constant vector per group) drops out of the eigenproblem instead of being shifted away.
// Group q's n_q - 1 reduced coordinates start at the returned offset q.
IndexVector reduced_offsets(const GroupStructure& g) {
  IndexVector ro(g.n_groups() + 1);
  ro[0] = 0;
  for (Index q = 0; q < g.n_groups(); ++q) ro[q + 1] = ro[q] + std::max<Index>(0, g.group_size(q) - 1);
  return ro;
}

// Qs^T x for one column x (m) into r (m'): for a group's part x of the column, (H x)_i = x_i -
// (x_0 + sum(x) / sqrt(n)) / (sqrt(n) + 1) for i = 1..n-1, times s_q.
void reflect_rows(const GroupStructure& g, const IndexVector& ro, VectorCRef x, double* r) {
  for (Index q = 0; q < g.n_groups(); ++q) {
    const Index o = g.offsets[q], n = g.group_size(q);
    if (n < 2) continue;
    const double rn = std::sqrt(static_cast<double>(n));
    const auto xq = x.segment(o, n);
    const double wx = (xq[0] + xq.sum() / rn) / (rn + 1.0), s = g.scale[q];
    Eigen::Map<Vector>(r + ro[q], n - 1) = s * (xq.tail(n - 1).array() - wx).matrix();
  }
}

// Qs^T A (m' x c), columns in fastrank's threads (Eigen only).
Matrix reduce_rows(const GroupStructure& g, const IndexVector& ro, MatrixCRef A, int n_threads) {
  Matrix out(ro[g.n_groups()], A.cols());
  parallel_for(0, A.cols(), n_threads, 64, [&](Index lo, Index hi) {
    for (Index c = lo; c < hi; ++c) reflect_rows(g, ro, A.col(c), out.col(c).data());
  });
  return out;
}

// Qs^T K Qs (m' x m') and K1 = [K 1_q] (m x n_groups) in one pass over K: each group's columns
// are summed and reflected (K Qs, the row reflection applied to the group's columns) and each
// reflected column's rows reflected at once, while it is in cache.  Groups in fastrank's threads
// (Eigen only).
Matrix reduce_kernel(const GroupStructure& g, const IndexVector& ro, MatrixCRef K, Matrix& K1, int n_threads) {
  const Index m = K.rows(), ng = g.n_groups();
  Matrix out(ro[ng], ro[ng]);
  advise_huge_pages(out.data(), sizeof(double) * static_cast<size_t>(out.size()));
  K1.resize(m, ng);
  parallel_for(0, ng, n_threads, 4, [&](Index lo, Index hi) {
    Vector col(m), wx(m);
    for (Index q = lo; q < hi; ++q) {
      const Index o = g.offsets[q], n = g.group_size(q);
      K1.col(q) = K.middleCols(o, n).rowwise().sum();
      if (n < 2) continue;
      const double rn = std::sqrt(static_cast<double>(n)), s = g.scale[q];
      wx = (K.col(o) + K1.col(q) / rn) / (rn + 1.0);
      for (Index i = 1; i < n; ++i) {
        col = s * (K.col(o + i) - wx);
        reflect_rows(g, ro, col, out.col(ro[q] + i - 1).data());
      }
    }
  });
  return out;
}

// Q_q z for one group (n x c from (n-1) x c): H [0; z] has first row -sum(z) / sqrt(n) and rows
// z_i - sum(z) / (sqrt(n) (sqrt(n) + 1)).
Matrix expand_group(Index n, MatrixCRef z) {
  const double rn = std::sqrt(static_cast<double>(n));
  const Eigen::RowVectorXd sum = z.colwise().sum();
  Matrix x(n, z.cols());
  x.row(0) = -sum / rn;
  x.bottomRows(n - 1) = z.rowwise() - sum / (rn * (rn + 1.0));
  return x;
}

// Khatri-Rao product rows of a group with n' = n_q - 1 reduced coordinates: n'(n'+1)/2 pairs and
// n' kappa rows (see leave_group_out_path).
Index khatri_rao_rows(Index n1) { return n1 * (n1 + 1) / 2 + n1; }

// Group q's held-out rows (n x v) for one alpha, from B (n' x n', lower triangle read, destroyed):
// the group's block of G_c in the basis Q_q, z = Q_q^T (G_c t)_q and kap = Q_q^T (G_c S K 1_q)_q.
// G_c,qq r = (G_c t)_q on the centred space is B z' = z with r = Q_q z' (B is the block of an SPD
// matrix: no shift needed), and
//     f'_q = y_q - ybar_q - r / s_q + fbar_q - kap^T z' / n_q.
Matrix group_path_rows(const GroupStructure& g, Index q, MatrixRef B, Matrix z, VectorCRef kap,
                       const Eigen::RowVectorXd& fbar_minus_ybar, MatrixCRef Y) {
  const Index o = g.offsets[q], n = g.group_size(q);
  solve_group_block(B, z);
  const Eigen::RowVectorXd shiftmean = kap.transpose() * z / static_cast<double>(n);
  Matrix pred = expand_group(n, z) / (-g.scale[q]);
  pred.rowwise() += fbar_minus_ybar - shiftmean;
  return Y.middleRows(o, n) + pred;
}

}  // namespace

Matrix leave_group_out_path(MatrixCRef K, const GroupStructure& g, const Vector& alphas, MatrixCRef Y,
                            int n_threads) {
  check_holdout_leaves_pairs(g);
  const Index m = g.n_rows(), ng = g.n_groups(), v = Y.cols(), na = alphas.size();
  require(K.rows() == m && K.cols() == m, "K must be m x m");
  require(Y.rows() == m, "Y must have m rows");
  for (Index a = 0; a < na; ++a) require(std::isfinite(alphas[a]) && alphas[a] > 0.0, "alphas must be finite and > 0");
  const Index nav = na * v;
  const IndexVector ro = reduced_offsets(g);
  const Index mr = ro[ng];
  // Qs^T K Qs = U diag(lambda) U^T (order m'), so on range(S) G_c = Q U diag(dinv) U^T Q^T with
  // dinv = 1 / (lambda + alpha).
  Matrix K1;  // K 1_q
  Matrix U = reduce_kernel(g, ro, K, K1, n_threads);
  Vector lambda;
  lapack::syevd(U, lambda);
  Matrix dinv(mr, na);
  for (Index k = 0; k < na; ++k) {
    if (mr > 0 && lambda.minCoeff() + alphas[k] <= 0.0) not_pd("leave-group-out");
    dinv.col(k) = (lambda.array() + alphas[k]).inverse().matrix();
  }
  Matrix Ut(mr, v), Us(mr, ng);  // U^T Q^T t and U^T Q^T S K 1_q (t = S y, Q^T S = diag(s) Q^T)
  lapack::gemm('T', 'N', 1.0, U, reduce_rows(g, ro, Y, 1), 0.0, Ut);
  lapack::gemm('T', 'N', 1.0, U, reduce_rows(g, ro, K1, n_threads), 0.0, Us);
  // every alpha's Q^T G_c t (m' x n_alphas v) and dual coefficients S G_c t (m x n_alphas v)
  Matrix scaled(mr, nav);
  for (Index k = 0; k < na; ++k) scaled.middleCols(k * v, v) = dinv.col(k).asDiagonal() * Ut;
  Matrix Gt(mr, nav);
  lapack::gemm('N', 'N', 1.0, U, scaled, 0.0, Gt);
  Matrix out(m, 2 * nav);
  auto coef = out.rightCols(nav);
  coef.setZero();
  for (Index q = 0; q < ng; ++q) {
    const Index n = g.group_size(q);
    if (n >= 2) coef.middleRows(g.offsets[q], n) = g.scale[q] * expand_group(n, Gt.middleRows(ro[q], n - 1));
  }
  // group means of the full-data predictions K S G_c t; rows of one-row groups keep these predictions
  Matrix fbar(ng, nav);
  lapack::gemm('T', 'N', 1.0, K1, coef, 0.0, fbar);
  for (Index q = 0; q < ng; ++q) {
    const Index o = g.offsets[q], n = g.group_size(q);
    fbar.row(q) /= static_cast<double>(std::max<Index>(1, n));
    if (n == 1) out.row(o).head(nav) = K.row(o) * coef;
  }
  auto n1_of = [&](Index q) { return std::max<Index>(0, g.group_size(q) - 1); };
  auto fbar_minus_ybar = [&](Index q, Index k) -> Eigen::RowVectorXd {
    const Index o = g.offsets[q], n = g.group_size(q);
    return fbar.row(q).segment(k * v, v) - Y.middleRows(o, n).colwise().mean();
  };
  // Every alpha's group blocks at once, from Khatri-Rao rows: for group q (reduced rows U_q,
  // n' = n_q - 1) the rows U_q,i o U_q,j (i <= j) and U_q,i o (U^T Q^T S K 1_q), so that a GEMM
  // with dinv (m' x n_alphas) gives every alpha's lower triangle of U_q diag(dinv) U_q^T and rows
  // of U_q diag(dinv) U^T Q^T S K 1_q (the same flops as one product per alpha and group, in one
  // large BLAS call).  Groups are taken in segments whose results R (rows x n_alphas) take at most
  // the memory of one m x m' matrix; the rows are formed in panels of about kPanel rows (in
  // fastrank's threads, Eigen only), each followed by one BLAS GEMM on the calling thread; the
  // per-group solves run in fastrank's threads.  A group too large for one segment takes one BLAS
  // product per alpha.
  constexpr Index kPanel = 512;
  const Index max_rows = std::max<Index>(8 * kPanel, m * mr / std::max<Index>(1, na));
  std::vector<Index> first;  // each segment group's first row of R
  struct Unit {              // rows of R: pairs (i, j >= i) of group q, or (i = n') its kappa rows
    Index q, i, row;
  };
  std::vector<Unit> units;
  // One buffer for the Khatri-Rao panels, grown to the largest panel: a fresh allocation per panel would
  // page-fault (and the kernel zero) the whole product matrix, about m' * sum n_q^2 / 2 doubles.
  std::vector<double> kr_buffer;
  Index q0 = 0;
  while (q0 < ng) {
    const Index o0 = g.offsets[q0], n0 = g.group_size(q0);
    if (n0 < 2) {
      ++q0;
      continue;
    }
    if (khatri_rao_rows(n0 - 1) > max_rows) {
      const Index r = ro[q0], n1 = n0 - 1;
      const auto Uq = U.middleRows(r, n1);
      Matrix W(n1, mr), B(n1, n1);
      for (Index k = 0; k < na; ++k) {
        W.noalias() = Uq * dinv.col(k).cwiseSqrt().asDiagonal();
        lapack::syrk_lower('N', n1, mr, 1.0, W.data(), n1, 0.0, B.data(), n1);  // U_q diag(dinv) U_q^T
        const Vector kap = Uq * dinv.col(k).cwiseProduct(Us.col(q0));
        out.block(o0, k * v, n0, v) =
            group_path_rows(g, q0, B, Gt.block(r, k * v, n1, v), kap, fbar_minus_ybar(q0, k), Y);
      }
      ++q0;
      continue;
    }
    Index q1 = q0, rows = 0;
    first.clear();
    units.clear();
    while (q1 < ng && rows + khatri_rao_rows(n1_of(q1)) <= max_rows) {
      first.push_back(rows);
      const Index n1 = n1_of(q1);
      for (Index i = 0; i < n1; ++i) {
        units.push_back({q1, i, rows});
        rows += n1 - i;
      }
      if (n1 > 0) {
        units.push_back({q1, n1, rows});
        rows += n1;
      }
      ++q1;
    }
    Matrix R(rows, na);
    for (size_t u0 = 0; u0 < units.size();) {
      size_t u1 = u0 + 1;
      const Index row0 = units[u0].row;
      auto end_row = [&](size_t u) { return u < units.size() ? units[u].row : rows; };
      while (u1 < units.size() && end_row(u1 + 1) - row0 <= kPanel) ++u1;
      const Index prows = end_row(u1) - row0;
      if (kr_buffer.size() < static_cast<size_t>(prows * mr)) {
        kr_buffer = std::vector<double>();
        kr_buffer.reserve(static_cast<size_t>(prows * mr));
        advise_huge_pages(kr_buffer.data(), sizeof(double) * kr_buffer.capacity());
        kr_buffer.resize(static_cast<size_t>(prows * mr));
      }
      Eigen::Map<Matrix> KR(kr_buffer.data(), prows, mr);  // column k: products of entries of column k of U
      parallel_for(0, mr, n_threads, 64, [&](Index lo, Index hi) {
        for (Index k = lo; k < hi; ++k) {
          const double* uk = U.data() + k * mr;
          double* p = KR.data() + k * prows;
          for (size_t t = u0; t < u1; ++t) {
            const Index q = units[t].q, i = units[t].i, n1 = n1_of(q), r = ro[q];
            const double f = i < n1 ? uk[r + i] : Us(k, q);
            const Index j0 = i < n1 ? i : 0;
            Eigen::Map<Vector>(p, n1 - j0) = f * Eigen::Map<const Vector>(uk + r + j0, n1 - j0);
            p += n1 - j0;
          }
        }
      });
      auto Rp = R.middleRows(row0, prows);
      lapack::gemm('N', 'N', 1.0, KR, dinv, 0.0, Rp);
      u0 = u1;
    }
    parallel_for(q0, q1, n_threads, 2, [&](Index lo, Index hi) {
      for (Index q = lo; q < hi; ++q) {
        const Index o = g.offsets[q], n = g.group_size(q), n1 = n - 1, r = ro[q];
        if (n < 2) continue;
        Matrix B(n1, n1);
        for (Index k = 0; k < na; ++k) {
          Index p = first[static_cast<size_t>(q - q0)];
          for (Index i = 0; i < n1; ++i)
            for (Index j = i; j < n1; ++j) B(j, i) = R(p++, k);
          out.block(o, k * v, n, v) = group_path_rows(g, q, B, Gt.block(r, k * v, n1, v), R.col(k).segment(p, n1),
                                                      fbar_minus_ybar(q, k), Y);
        }
      }
    });
    q0 = q1;
  }
  return out;
}

}  // namespace fastrank::cv

namespace fastrank::cv {

namespace {

std::string alpha_text(double alpha) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", alpha);
  return buf;
}

// G_c of one alpha with both triangles, G_c t (m x v) and kappa = G_c X for centred columns X
// (m x p): the factor of Kz + alpha I + tau sum_q 1_q 1_q^T / n_q (A, destroyed), dpotrs for the
// right-hand sides, dpotri, then the null part 1_q 1_q^T / (n_q (alpha + tau)) off each group block.
struct FullInverse {
  Matrix Gc, Gt, kappa;
};

// user_alpha: the caller's alpha, named in the error (object sets factor at alpha m / (m - u), 004 eqs. 36-37).
FullInverse full_inverse(Matrix A, const GroupStructure& g, double alpha, double tau, MatrixCRef t, MatrixCRef X,
                         double user_alpha) {
  A.diagonal().array() += alpha;
  for (Index q = 0; q < g.n_groups(); ++q) {
    const Index o = g.offsets[q], n = g.group_size(q);
    A.block(o, o, n, n).array() += tau / static_cast<double>(n);
  }
  if (!lapack::potrf_lower(A))
    throw LinAlgError("hold-out sets: S K S + alpha I is not numerically positive definite at alpha=" +
                      alpha_text(user_alpha) +
                      " (the kernel is not positive semidefinite, or alpha is below rounding level for the "
                      "kernel's scale); increase alpha");
  FullInverse out;
  out.Gt = t;
  lapack::potrs_lower(A, out.Gt);
  out.kappa = X;
  if (X.cols() > 0) lapack::potrs_lower(A, out.kappa);
  lapack::potri_lower(A);
  for (Index q = 0; q < g.n_groups(); ++q) {
    const Index o = g.offsets[q], n = g.group_size(q);
    const double null_part = 1.0 / (static_cast<double>(n) * (alpha + tau));
    for (Index j = o; j < o + n; ++j) A.col(j).segment(j, o + n - j).array() -= null_part;
  }
  lapack::symmetrize_from_lower(A);
  out.Gc = std::move(A);
  return out;
}

// B X = R in place for a hold-out set's symmetric positive definite system (destroyed): Eigen's
// kernels below kSmallBlock rows, LAPACK above.
void solve_set_system(MatrixRef B, MatrixRef R, Index set, double alpha) {
  bool ok;
  if (B.rows() < kSmallBlock) {
    Eigen::LLT<Eigen::Ref<Matrix>> llt(B);
    ok = llt.info() == Eigen::Success;
    if (ok) llt.solveInPlace(R);
  } else {
    ok = lapack::potrf_lower(B);
    if (ok) lapack::potrs_lower(B, R);
  }
  if (!ok)
    throw LinAlgError("hold-out set " + std::to_string(set) + ": its block of (S K S + alpha I)^-1 is not "
                      "numerically positive definite at alpha=" + alpha_text(alpha) + "; increase alpha");
}

void check_sets(const IndexVector& rows, const IndexVector& fold_offsets, Index m) {
  require(fold_offsets.size() >= 1 && fold_offsets[0] == 0 && fold_offsets[fold_offsets.size() - 1] == rows.size(),
          "fold_offsets must run from 0 to len(rows)");
  for (Index k = 0; k + 1 < fold_offsets.size(); ++k)
    require(fold_offsets[k + 1] >= fold_offsets[k], "fold_offsets must be non-decreasing");
  for (Index k = 0; k < rows.size(); ++k) require(rows[k] >= 0 && rows[k] < m, "hold-out index out of range");
}

}  // namespace

std::map<Index, std::vector<Index>> sets_by_size(const IndexVector& rows, const IndexVector& fold_offsets, Index m) {
  check_sets(rows, fold_offsets, m);
  std::map<Index, std::vector<Index>> by_size;
  for (Index f = 0; f + 1 < fold_offsets.size(); ++f) {
    const Index u = fold_offsets[f + 1] - fold_offsets[f];
    if (u == 0) continue;
    require(m - u >= 2, "a hold-out set leaves fewer than 2 training inputs (no training pairs)");
    by_size[u].push_back(f);
  }
  return by_size;
}

void object_sets(const SetInverse& inv, double s, double alpha, MatrixCRef Y, const IndexVector& rows,
                 const IndexVector& fold_offsets, const std::vector<Index>& sets, Matrix& out) {
  const Index m = Y.rows(), v = Y.cols();
  const double dm = static_cast<double>(m);
  const Eigen::RowVectorXd ybar = Y.colwise().mean();
  for (Index f : sets) {
    const Index lo = fold_offsets[f], u = fold_offsets[f + 1] - lo;
    const std::vector<Index> U(rows.data() + lo, rows.data() + lo + u);
    Matrix B = inv.block(U), e(u, v);
    for (Index k = 0; k < u; ++k) e.row(k) = inv.Gt.row(U[k]);
    solve_set_system(B, e, f, alpha);
    Eigen::RowVectorXd shift = Eigen::RowVectorXd::Zero(v);
    for (Index k = 0; k < u; ++k) shift += inv.kappa(U[k], 0) * e.row(k);
    const Eigen::RowVectorXd emean = e.colwise().sum() / dm;
    for (Index k = 0; k < u; ++k)
      out.row(lo + k) = Y.row(U[k]) - ybar - (e.row(k) - emean) / s + inv.fbar.row(0) - shift / dm;
  }
}

Matrix group_sets(const SetInverse& inv, const GroupStructure& g, double alpha, MatrixCRef Y, const IndexVector& rows,
                  const IndexVector& fold_offsets) {
  const Index m = g.n_rows(), ng = g.n_groups(), v = Y.cols();
  check_sets(rows, fold_offsets, m);
  const IndexVector grp = row_groups(g);
  const double total_pairs = n_relevant_pairs(g);
  Matrix ybar(ng, v);
  for (Index q = 0; q < ng; ++q) ybar.row(q) = Y.middleRows(g.offsets[q], g.group_size(q)).colwise().mean();
  Matrix out(rows.size(), v);
  const Index nf = fold_offsets.size() - 1;
  std::vector<Index> held(static_cast<size_t>(m), -1);  // position in the set, or -1
  for (Index f = 0; f < nf; ++f) {
    const Index lo = fold_offsets[f], u = fold_offsets[f + 1] - lo;
    if (u == 0) continue;
    std::vector<Index> touched;
    for (Index k = 0; k < u; ++k) {
      const Index r = rows[lo + k];
      require(held[r] < 0, "hold-out set contains a repeated index");
      held[r] = k;
      if (std::find(touched.begin(), touched.end(), grp[r]) == touched.end()) touched.push_back(grp[r]);
    }
    std::sort(touched.begin(), touched.end());
    // A = rows of the touched groups (contiguous per group), their held counts
    std::vector<Index> A, at, kept;
    double removed = 0.0;
    for (Index q : touched) {
      const Index o = g.offsets[q], n = g.group_size(q);
      at.push_back(static_cast<Index>(A.size()));
      Index k = 0;
      for (Index r = o; r < o + n; ++r) {
        A.push_back(r);
        k += held[r] < 0 ? 1 : 0;
      }
      kept.push_back(k);
      const double dn = static_cast<double>(n), dk = static_cast<double>(k);
      removed += dn * (dn - 1.0) / 2.0 - dk * (dk - 1.0) / 2.0;
    }
    require(total_pairs - removed > 0.5, "hold-out set " + std::to_string(f) + " leaves no training pairs");
    const Index na = static_cast<Index>(A.size());
    Matrix M = inv.block(A), z(na, v);
    for (Index b = 0; b < na; ++b) z.row(b) = inv.Gt.row(A[b]);
    // + (k / (alpha u)) P_K per partly held group; + beta 1_q 1_q^T / n_q per touched group (1_q is a
    // null vector of the system and the right-hand side is centred: z is unchanged).
    for (size_t i = 0; i < touched.size(); ++i) {
      const Index q = touched[i], o = g.offsets[q], n = g.group_size(q), k = kept[i];
      if (k == 0) continue;
      const double d = static_cast<double>(k) / (alpha * static_cast<double>(n - k)), dk = static_cast<double>(k);
      for (Index b = 0; b < n; ++b) {
        if (held[o + b] >= 0) continue;
        for (Index a = 0; a < n; ++a)
          if (held[o + a] < 0) M(at[i] + a, at[i] + b) += (a == b ? d : 0.0) - d / dk;
      }
    }
    // A group of one row has no centred vector: its z is 0 (an identity row).
    double diag_sum = 0.0, diag_rows = 0.0;
    for (size_t i = 0; i < touched.size(); ++i) {
      const Index n = g.group_size(touched[i]);
      if (n < 2) continue;
      diag_sum += M.diagonal().segment(at[i], n).sum();
      diag_rows += static_cast<double>(n);
    }
    const double beta = diag_rows > 0.0 ? std::max(diag_sum / diag_rows, std::numeric_limits<double>::min()) : 1.0;
    for (size_t i = 0; i < touched.size(); ++i) {
      const Index n = g.group_size(touched[i]);
      if (n < 2) {
        M.row(at[i]).setZero();
        M.col(at[i]).setZero();
        M(at[i], at[i]) = 1.0;
        z.row(at[i]).setZero();
      } else {
        M.block(at[i], at[i], n, n).array() += beta / static_cast<double>(n);
      }
    }
    solve_set_system(M, z, f, alpha);
    const Matrix shift = inv.mean_shift(touched, A, z);  // kappa_q,A^T z / n_q per touched group
    for (size_t i = 0; i < touched.size(); ++i) {
      const Index q = touched[i], o = g.offsets[q], n = g.group_size(q);
      const Eigen::RowVectorXd base = inv.fbar.row(q) - ybar.row(q) - shift.row(static_cast<Index>(i));
      for (Index r = o; r < o + n; ++r)
        if (held[r] >= 0) out.row(lo + held[r]) = Y.row(r) + base - z.row(at[i] + (r - o)) / g.scale[q];
    }
    for (Index k = 0; k < u; ++k) held[rows[lo + k]] = -1;
  }
  return out;
}

namespace {

// G_c's rows and columns idx from the explicit inverse.
Matrix gather_block(const Matrix& Gc, const std::vector<Index>& idx) {
  const Index n = static_cast<Index>(idx.size());
  Matrix B(n, n);
  for (Index b = 0; b < n; ++b)
    for (Index a = 0; a < n; ++a) B(a, b) = Gc(idx[a], idx[b]);
  return B;
}

}  // namespace

Matrix object_holdout_inverse(MatrixCRef K, double c, double alpha, MatrixCRef Y, const IndexVector& rows,
                              const IndexVector& fold_offsets, int n_threads) {
  const Index m = K.rows(), v = Y.cols();
  require(K.cols() == m && Y.rows() == m, "K must be m x m and Y must have m rows");
  require(std::isfinite(c) && c > 0.0, "the pair weight must be finite and > 0");
  require(std::isfinite(alpha) && alpha > 0.0, "alpha must be finite and > 0");
  const auto by_size = sets_by_size(rows, fold_offsets, m);
  const double dm = static_cast<double>(m), s = std::sqrt(c * dm);
  GroupStructure g;
  g.offsets.resize(2);
  g.offsets << 0, m;
  g.scale = Vector::Constant(1, s);
  Matrix t = Y;
  apply_sqrt_laplacian(g, t);
  Matrix src = K.rowwise().sum();
  apply_sqrt_laplacian(g, src);  // S K 1
  Matrix Kz = K;
  apply_sqrt_laplacian_both(g, Kz, n_threads);
  const double tau = null_shift(Kz);
  Matrix out(rows.size(), v);
  Index left = static_cast<Index>(by_size.size());
  for (const auto& [u, sets] : by_size) {
    const double alpha1 = alpha * dm / (dm - static_cast<double>(u));  // L scaled by rho = (m - u) / m
    Matrix A;  // the last size takes Kz itself (no third m x m matrix)
    if (--left == 0) A = std::move(Kz);
    else A = Kz;
    FullInverse fi = full_inverse(std::move(A), g, alpha1, tau, t, src, alpha);
    SetInverse inv;
    inv.fbar = fi.kappa.col(0).transpose() * t / dm;  // mean prediction of the alpha' model
    inv.Gt = std::move(fi.Gt);
    inv.kappa = std::move(fi.kappa);
    inv.block = [&fi](const std::vector<Index>& idx) { return gather_block(fi.Gc, idx); };
    object_sets(inv, s, alpha, Y, rows, fold_offsets, sets, out);
  }
  return out;
}

Matrix group_holdout_inverse(MatrixCRef K, const GroupStructure& g, double alpha, MatrixCRef Y,
                             const IndexVector& rows, const IndexVector& fold_offsets, int n_threads) {
  const Index m = g.n_rows(), ng = g.n_groups(), v = Y.cols();
  require(K.rows() == m && K.cols() == m, "K must be m x m");
  require(Y.rows() == m, "Y must have m rows");
  require(std::isfinite(alpha) && alpha > 0.0, "alpha must be finite and > 0");
  if (ng == 1) return object_holdout_inverse(K, pair_weight(g, 0), alpha, Y, rows, fold_offsets, n_threads);
  Matrix t = Y;
  apply_sqrt_laplacian(g, t);
  Matrix src(m, ng);  // S K 1_q
  for (Index q = 0; q < ng; ++q) src.col(q) = K.middleCols(g.offsets[q], g.group_size(q)).rowwise().sum();
  apply_sqrt_laplacian(g, src);
  Matrix Kz = K;
  apply_sqrt_laplacian_both(g, Kz, n_threads);
  const double tau = null_shift(Kz);
  const FullInverse fi = full_inverse(std::move(Kz), g, alpha, tau, t, Matrix(m, 0), alpha);
  SetInverse inv;
  inv.Gt = fi.Gt;
  inv.fbar.resize(ng, v);  // group means of the full-data predictions: (S K 1_q)^T G_c t / n_q
  lapack::gemm('T', 'N', 1.0, src, fi.Gt, 0.0, inv.fbar);
  for (Index q = 0; q < ng; ++q) inv.fbar.row(q) /= static_cast<double>(g.group_size(q));
  inv.block = [&fi](const std::vector<Index>& idx) { return gather_block(fi.Gc, idx); };
  // kappa_q,A^T z / n_q = (S K 1_q)^T G_c[:, A] z / n_q (A: whole groups, contiguous)
  inv.mean_shift = [&](const std::vector<Index>& touched, const std::vector<Index>& /*A*/, MatrixCRef z) {
    Matrix GAz = Matrix::Zero(m, v);
    for (Index i = 0, at = 0; i < static_cast<Index>(touched.size()); ++i) {
      const Index n = g.group_size(touched[i]);
      lapack::gemm('N', 'N', 1.0, fi.Gc.middleCols(g.offsets[touched[i]], n), z.middleRows(at, n), 1.0, GAz);
      at += n;
    }
    Matrix shift(static_cast<Index>(touched.size()), v);
    for (Index i = 0; i < shift.rows(); ++i)
      shift.row(i) = src.col(touched[i]).transpose() * GAz / static_cast<double>(g.group_size(touched[i]));
    return shift;
  };
  return group_sets(inv, g, alpha, Y, rows, fold_offsets);
}

}  // namespace fastrank::cv
