#include "fastrank/rankrls.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "fastrank/errors.hpp"
#include "fastrank/lapack.hpp"
#include "fastrank/parallel.hpp"

namespace fastrank {

namespace {

void check_alphas(const Vector& alphas) {
  require(alphas.size() >= 1, "at least one regularization value is needed");
  for (Index k = 0; k < alphas.size(); ++k)
    require(std::isfinite(alphas[k]) && alphas[k] > 0.0, "regularization values must be finite and > 0");
}

double one_norm_symmetric(MatrixCRef G) {
  double best = 0.0;
  for (Index j = 0; j < G.cols(); ++j) best = std::max(best, G.col(j).cwiseAbs().sum());
  return best;
}

[[noreturn]] void not_positive_definite(double alpha) {
  throw LinAlgError("the RankRLS system is not numerically positive definite for alpha=" + std::to_string(alpha) +
                    " (alpha is too small relative to the kernel's scale, or the kernel is not positive "
                    "semidefinite); increase alpha");
}

// Stacks diag(1/(sigma + alpha_k)) T for every alpha_k.
Matrix shifted_inverse_blocks(const Vector& sigma, const Matrix& T, const Vector& alphas) {
  const Index r = T.rows(), v = T.cols();
  Matrix B(r, alphas.size() * v);
  for (Index k = 0; k < alphas.size(); ++k) {
    const Vector inv = (sigma.array() + alphas[k]).inverse();
    B.middleCols(k * v, v) = inv.asDiagonal() * T;
  }
  return B;
}

}  // namespace

Matrix solve_shifted_system(MatrixRef G, MatrixCRef R, const Vector& alphas, SolveReport* report) {
  check_alphas(alphas);
  const Index r = G.rows(), v = R.cols();
  require(G.cols() == r && R.rows() == r, "solve_shifted_system: shape mismatch");
  if (alphas.size() == 1) {
    const double alpha = alphas[0];
    G.diagonal().array() += alpha;
    const double anorm = one_norm_symmetric(G);
    if (!lapack::potrf_lower(G)) not_positive_definite(alpha);
    Matrix U = R;
    lapack::potrs_lower(G, U);
    if (report) report->rcond = lapack::pocon_lower(G, anorm);
    return U;
  }
  // One eigendecomposition serves every alpha (eq. 31, symmetric form).
  Vector sigma;
  lapack::syevd(G, sigma);  // G now holds the eigenvectors V
  // Rounding can leave tiny negative eigenvalues of a PSD matrix; they are zero.
  const double sigma_max = std::max(0.0, sigma.maxCoeff());
  sigma = sigma.cwiseMax(0.0);
  if (report) {
    double rc = 1.0;
    for (Index k = 0; k < alphas.size(); ++k) rc = std::min(rc, alphas[k] / (sigma_max + alphas[k]));
    report->rcond = rc;
  }
  for (Index k = 0; k < alphas.size(); ++k)
    if (alphas[k] <= sigma_max * std::numeric_limits<double>::epsilon()) not_positive_definite(alphas[k]);
  Matrix T(r, v);
  lapack::gemm('T', 'N', 1.0, G, R, 0.0, T);  // T = V^T R
  const Matrix B = shifted_inverse_blocks(sigma, T, alphas);
  Matrix U(r, B.cols());
  lapack::gemm('N', 'N', 1.0, G, B, 0.0, U);  // all alphas in one GEMM
  return U;
}

Matrix rankrls_dual_scores(MatrixRef K, const GroupStructure& groups, MatrixCRef Y, const Vector& alphas,
                           int n_threads, SolveReport* report) {
  const Index m = groups.n_rows();
  require(K.rows() == m && K.cols() == m, "kernel matrix must be m x m");
  require(Y.rows() == m, "targets must have one row per input");
  apply_sqrt_laplacian_both(groups, K, n_threads);  // K <- S K S
  Matrix c = Y;
  apply_sqrt_laplacian(groups, c);                   // c = S y
  Matrix A = solve_shifted_system(K, c, alphas, report);
  apply_sqrt_laplacian(groups, A);                   // A = S u
  return A;
}

Matrix rankrls_dual_graph(MatrixRef K, const PreferenceGraph& graph, const Vector& alphas, int n_threads,
                          SolveReport* report) {
  graph.validate();
  const Index m = graph.n_vertices, l = graph.n_edges();
  require(K.rows() == m && K.cols() == m, "kernel matrix must be m x m");
  (void)n_threads;
  if (l <= m) {
    // F = M: G = M^T K M (l x l), c = N.
    Matrix KMt(m, l);  // column e = K M e_e = w_e (K[:, head] - K[:, tail])
    for (Index e = 0; e < l; ++e) KMt.col(e) = graph.weight[e] * (K.col(graph.head[e]) - K.col(graph.tail[e]));
    Matrix G = graph_incidence_transpose_times(graph, KMt);  // M^T (K M), l x l
    G = 0.5 * (G + G.transpose()).eval();
    Matrix N = graph.target;
    for (Index e = 0; e < l; ++e) N.row(e) *= graph.weight[e];
    const Matrix U = solve_shifted_system(G, N, alphas, report);
    return graph_incidence_times(graph, U);
  }
  // l > m: factor the Laplacian, F = U_+ D_+^{1/2}.
  Matrix L = graph_laplacian(graph);
  Vector d;
  lapack::syevd(L, d);
  const double d_max = std::max(0.0, d.maxCoeff());
  const double tol = d_max * static_cast<double>(m) * std::numeric_limits<double>::epsilon();
  Index first = 0;
  while (first < m && d[first] <= tol) ++first;  // eigenvalues ascend; skip the null space
  const Index r = m - first;
  require(r >= 1, "the preference graph has no edges with non-zero weight");
  Matrix F = L.rightCols(r);
  const Vector sqrt_d = d.tail(r).cwiseSqrt();
  F = F * sqrt_d.asDiagonal();
  const Matrix b = graph_incidence_times_targets(graph);
  Matrix c(r, b.cols());
  lapack::gemm('T', 'N', 1.0, L.rightCols(r), b, 0.0, c);
  c = sqrt_d.cwiseInverse().asDiagonal() * c;
  Matrix KF(m, r);
  lapack::gemm('N', 'N', 1.0, K, F, 0.0, KF);
  Matrix G(r, r);
  lapack::gemm('T', 'N', 1.0, F, KF, 0.0, G);
  G = 0.5 * (G + G.transpose()).eval();
  const Matrix U = solve_shifted_system(G, c, alphas, report);
  Matrix A(m, U.cols());
  lapack::gemm('N', 'N', 1.0, F, U, 0.0, A);
  return A;
}

Matrix rankrls_primal_scores(RowMatrixCRef X, IndexVectorCRef order, const GroupStructure& groups, MatrixCRef Y,
                             const Vector& alphas, int n_threads, SolveReport* report) {
  (void)n_threads;
  const Index m = X.rows(), n = X.cols(), v = Y.cols();
  require(groups.n_rows() == m, "groups must cover every row of X");
  require(Y.rows() == m, "targets must have one row per input");
  const bool identity = order.size() == 0;
  require(identity || order.size() == m, "row order must have one entry per row");
  // Accumulate G = (S X)^T (S X) and R = (S X)^T (S Y) over chunks of whole groups; a group larger
  // than a chunk is streamed with its mean computed in a first pass.
  const Index chunk_rows = std::max<Index>(256, std::min<Index>(m, (Index(1) << 21) / std::max<Index>(1, n)));
  Matrix G = Matrix::Zero(n, n);
  Matrix R = Matrix::Zero(n, v);
  Matrix B(chunk_rows, n);    // centred, scaled rows of X (column-major for BLAS)
  Matrix BY(chunk_rows, v);   // matching rows of S Y
  Index filled = 0;
  auto row_of = [&](Index pos) { return identity ? pos : static_cast<Index>(order[pos]); };
  auto flush = [&]() {
    if (filled == 0) return;
    lapack::syrk_lower('T', n, filled, 1.0, B.data(), B.rows(), 1.0, G.data(), G.rows());
    lapack::gemm('T', 'N', n, v, filled, 1.0, B.data(), B.rows(), BY.data(), BY.rows(), 1.0, R.data(), R.rows());
    filled = 0;
  };
  for (Index q = 0; q < groups.n_groups(); ++q) {
    const Index o = groups.offsets[q], size = groups.group_size(q);
    const double s = groups.scale[q];
    if (size < 2) continue;  // a singleton group has no pairs: its centred row is zero
    Eigen::RowVectorXd mean = Eigen::RowVectorXd::Zero(n);
    Eigen::RowVectorXd ymean = Eigen::RowVectorXd::Zero(v);
    for (Index p = o; p < o + size; ++p) {
      mean += X.row(row_of(p));
      ymean += Y.row(p);
    }
    mean /= static_cast<double>(size);
    ymean /= static_cast<double>(size);
    for (Index p = o; p < o + size; ++p) {
      if (filled == chunk_rows) flush();
      B.row(filled) = s * (X.row(row_of(p)) - mean);
      BY.row(filled) = s * (Y.row(p) - ymean);
      ++filled;
    }
  }
  flush();
  lapack::symmetrize_from_lower(G);
  return solve_shifted_system(G, R, alphas, report);
}

Matrix rankrls_primal_graph(RowMatrixCRef X, const PreferenceGraph& graph, const Vector& alphas, int n_threads,
                            SolveReport* report) {
  (void)n_threads;
  graph.validate();
  const Index m = X.rows(), n = X.cols();
  require(graph.n_vertices == m, "the preference graph must have one vertex per row of X");
  // L X = M M^T X, O(l n): each edge adds w^2 (x_h - x_t) to row h and subtracts it from row t.
  Matrix LX = Matrix::Zero(m, n);
  for (Index e = 0; e < graph.n_edges(); ++e) {
    const Index h = graph.head[e], t = graph.tail[e];
    const double w2 = graph.weight[e] * graph.weight[e];
    const Eigen::RowVectorXd diff = w2 * (X.row(h) - X.row(t));
    LX.row(h) += diff;
    LX.row(t) -= diff;
  }
  Matrix G(n, n);
  // X^T (L X): X row-major (m x n) is column-major X^T (n x m, ld = n).
  lapack::gemm('N', 'N', n, n, m, 1.0, X.data(), X.outerStride(), LX.data(), LX.rows(), 0.0, G.data(), G.rows());
  G = 0.5 * (G + G.transpose()).eval();
  const Matrix b = graph_incidence_times_targets(graph);
  Matrix R(n, b.cols());
  lapack::gemm('N', 'N', n, b.cols(), m, 1.0, X.data(), X.outerStride(), b.data(), b.rows(), 0.0, R.data(), R.rows());
  return solve_shifted_system(G, R, alphas, report);
}

}  // namespace fastrank
