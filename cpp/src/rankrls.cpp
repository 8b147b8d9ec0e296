#include "fastrank/rankrls.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <vector>
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

[[noreturn]] void not_positive_definite(double alpha, double scale) {
  throw LinAlgError(
      "the RankRLS system S K S + alpha I is not numerically positive definite for alpha=" + format_number(alpha) +
      " (largest diagonal entry of S K S: " + format_number(scale) +
      "). Causes: features on very different scales (raw counts, lengths or BM25 scores next to values in "
      "[0, 1]): standardise them (fastrank.preprocessing, sklearn's StandardScaler, fastrank train "
      "--normalize) or raise alpha to about 1e-12 x that entry or more; a precomputed kernel that is not "
      "positive semidefinite; or inputs whose common offset is large compared with their spread, which costs "
      "a linear or polynomial kernel its precision (centre X by X - X.mean(axis=0); a linear ranking model is "
      "unchanged by it)");
}

// The primal system X^T L X + alpha I is n x n and often well-conditioned without alpha: refused only when singular
// to working precision, where its features are linearly dependent on the pairs.
[[noreturn]] void primal_singular(double alpha, double scale) {
  throw LinAlgError(
      "the linear RankRLS system X^T L X + alpha I is singular to working precision for alpha=" +
      format_number(alpha) + " (largest diagonal entry of X^T L X: " + format_number(scale) +
      "): the columns of X are linearly dependent over the pairs (duplicate or constant columns, or columns that "
      "differ only by a per-query offset), or on very different scales (standardise them: fastrank.preprocessing, "
      "sklearn's StandardScaler, fastrank train --normalize); drop the dependent columns or raise alpha to about "
      "1e-12 x that entry or more");
}

// A non-finite system means overflow upstream (huge inputs, or pair weights 1/g of tiny magnitudes),
// not a convergence or definiteness problem: say so before LAPACK reports something misleading.
void require_finite_system(MatrixCRef G) {
  for (Index j = 0; j < G.cols(); ++j)
    if (!G.col(j).allFinite())
      throw LinAlgError(
          "the RankRLS system contains NaN or infinity: the kernel, targets or pair weights overflow float64 "
          "(e.g. inputs near 1e154 or larger, or magnitudes near 1e-300 with cost='normalized'); rescale them");
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
  return solve_shifted_system(G, R, alphas, report, false);
}

Matrix solve_shifted_system(MatrixRef G, MatrixCRef R, const Vector& alphas, SolveReport* report, bool primal) {
  check_alphas(alphas);
  const Index r = G.rows(), v = R.cols();
  require(G.cols() == r && R.rows() == r, "solve_shifted_system: shape mismatch");
  const double singular_rcond = static_cast<double>(r) * std::numeric_limits<double>::epsilon();
  if (alphas.size() == 1) {
    const double alpha = alphas[0];
    require_finite_system(G);
    const double scale = G.diagonal().maxCoeff();
    auto refuse = [&]() { primal ? primal_singular(alpha, scale) : not_positive_definite(alpha, scale); };
    // As on the eigendecomposition route below: alpha under the rounding level of S K S (max diagonal <= largest
    // eigenvalue; singular on S's null space) regularizes nothing, whatever the factorization says.
    if (!primal && alpha <= scale * std::numeric_limits<double>::epsilon()) refuse();
    G.diagonal().array() += alpha;
    const double anorm = one_norm_symmetric(G);
    if (!lapack::potrf_lower(G)) refuse();
    const double rcond = lapack::pocon_lower(G, anorm);
    if (primal && rcond <= singular_rcond) refuse();
    Matrix U = R;
    lapack::potrs_lower(G, U);
    if (report) report->rcond = rcond;
    return U;
  }
  // One eigendecomposition serves every alpha (eq. 31, symmetric form).
  Vector sigma;
  require_finite_system(G);
  const double scale = G.diagonal().maxCoeff();
  lapack::syevd(G, sigma);  // G now holds the eigenvectors V
  // Rounding can leave tiny negative eigenvalues of a PSD matrix; they are zero.
  const double sigma_max = std::max(0.0, sigma.maxCoeff());
  sigma = sigma.cwiseMax(0.0);
  // S K S is singular (S's null space): its smallest eigenvalue counts as 0; the primal's is its own.
  const double sigma_min = primal ? sigma.minCoeff() : 0.0;
  double rc = 1.0;
  for (Index k = 0; k < alphas.size(); ++k) {
    const double rc_k = (sigma_min + alphas[k]) / (sigma_max + alphas[k]);
    if (primal ? rc_k <= singular_rcond : alphas[k] <= sigma_max * std::numeric_limits<double>::epsilon())
      primal ? primal_singular(alphas[k], scale) : not_positive_definite(alphas[k], scale);
    rc = std::min(rc, rc_k);
  }
  if (report) report->rcond = rc;
  Matrix T(r, v);
  lapack::gemm('T', 'N', 1.0, G, R, 0.0, T);  // T = V^T R
  const Matrix B = shifted_inverse_blocks(sigma, T, alphas);
  Matrix U(r, B.cols());
  lapack::gemm('N', 'N', 1.0, G, B, 0.0, U);  // all alphas in one GEMM
  return U;
}

Matrix rankrls_dual_scores(MatrixRef K, const GroupStructure& groups, MatrixCRef Y, const Vector& alphas,
                           int n_threads, SolveReport* report, ShiftedSolver solve) {
  const Index m = groups.n_rows();
  require(K.rows() == m && K.cols() == m, "kernel matrix must be m x m");
  require(Y.rows() == m, "targets must have one row per input");
  apply_sqrt_laplacian_both(groups, K, n_threads);  // K <- S K S
  Matrix c = Y;
  apply_sqrt_laplacian(groups, c);                   // c = S y
  const ShiftedSolver cholesky_or_eigh = solve_shifted_system;  // the dual's overload (S K S is singular)
  Matrix A = (solve ? solve : cholesky_or_eigh)(K, c, alphas, report);
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

Matrix rankrls_primal_scores(RowMatrixCRef X, IndexVectorCRef order, const GroupStructure& groups, RowMatrixCRef Y,
                             const Vector& alphas, int n_threads, SolveReport* report) {
  const Index m = X.rows(), n = X.cols(), v = Y.cols(), q = groups.n_groups();
  require(groups.n_rows() == m, "groups must cover every row of X");
  require(Y.rows() == m, "targets must have one row per input");
  const bool identity = order.size() == 0;
  require(identity || order.size() == m, "row order must have one entry per row");
  auto row_of = [&](Index pos) { return identity ? pos : static_cast<Index>(order[pos]); };
  // Below 2^20 entries of X the passes run on the calling thread: starting threads for them cost more than they saved
  // (m = 2,000 and 20,000 rows of 20 features in groups: a fit of 0.60 / 2.15 ms on one thread took 0.88 / 2.30 ms
  // on two).
  const int threads = m * n < (Index(1) << 20) ? 1 : std::max(1, n_threads);

  // Group means of X (q x n), then the means of the rows less them (a second pass: the rounded first mean of a
  // feature with offset c and spread s leaves ~eps c in every centred row, n (eps c)^2 in (S X)^T (S X), 1e-6
  // relative at c / s = 1e13).  Y is not centred: L 1_q = 0 cancels a constant per group, and the caller's targets
  // are centred in their groups already, so no large offset meets the rounding of the centred rows' sums.  Few large
  // groups: rows split across threads; many groups: groups split.
  RowMatrix x_mean = RowMatrix::Zero(q, n), x_corr = RowMatrix::Zero(q, n);
  // Adds rows lo..hi of group k (less its first mean in the second pass) to sums in row order, without temporaries.
  auto add_rows = [&](Index k, Index lo, Index hi, bool second, double* sums) {
    const double* mean = x_mean.row(k).data();
    for (Index p = lo; p < hi; ++p) {
      const double* x = X.data() + row_of(p) * X.outerStride();
      for (Index j = 0; j < n; ++j) sums[j] += second ? x[j] - mean[j] : x[j];
    }
  };
  auto mean_of_group = [&](Index k, int threads, bool second) {
    const Index o = groups.offsets[k], size = groups.group_size(k);
    auto mean = (second ? x_corr : x_mean).row(k);
    if (threads == 1) {
      add_rows(k, o, o + size, second, mean.data());
    } else {  // a large group: rows split across threads, the chunks' sums added in row order (the same bits each run)
      std::mutex lock;
      std::map<Index, Eigen::RowVectorXd> chunk_sums;
      parallel_for(o, o + size, threads, 4096, [&](Index lo, Index hi) {
        Eigen::RowVectorXd sums = Eigen::RowVectorXd::Zero(n);
        add_rows(k, lo, hi, second, sums.data());
        std::lock_guard<std::mutex> guard(lock);
        chunk_sums.emplace(lo, std::move(sums));
      });
      for (const auto& chunk : chunk_sums) mean += chunk.second;
    }
    mean /= static_cast<double>(size);
  };
  for (const bool second : {false, true}) {
    if (q < 4 * static_cast<Index>(threads)) {
      for (Index k = 0; k < q; ++k) mean_of_group(k, threads, second);
    } else {
      parallel_for(0, q, threads, 16, [&](Index lo, Index hi) {
        for (Index k = lo; k < hi; ++k) mean_of_group(k, 1, second);
      });
    }
  }
  std::vector<Index> group_of(static_cast<size_t>(m));
  for (Index k = 0; k < q; ++k)
    for (Index p = groups.offsets[k]; p < groups.offsets[k + 1]; ++p) group_of[p] = k;

  // Accumulate G = (S X)^T (S X) and R = (S X)^T (S Y) (eq. 30) over row chunks of S X and S Y, held
  // row-major so each centred row is written contiguously (a column-major S Y chunk took one cache miss per
  // target: 0.14 s of 0.17 for 100 columns of 1e5 rows); as column-major they are (S X)_chunk^T (n x rows) and
  // (S Y)_chunk^T (v x rows), which SYRK/GEMM take directly.
  const Index chunk_rows = std::max<Index>(256, std::min<Index>(m, (Index(1) << 21) / std::max<Index>(1, n + v)));
  RowMatrix B(chunk_rows, n);
  RowMatrix BY(chunk_rows, v);
  Matrix G = Matrix::Zero(n, n);
  Matrix R = Matrix::Zero(n, v);
  for (Index start = 0; start < m; start += chunk_rows) {
    const Index rows = std::min(chunk_rows, m - start);
    parallel_for(0, rows, threads, 512, [&](Index lo, Index hi) {
      for (Index r = lo; r < hi; ++r) {
        const Index p = start + r, k = group_of[p];
        const double s = groups.scale[k];
        B.row(r) = s * ((X.row(row_of(p)) - x_mean.row(k)) - x_corr.row(k));
        BY.row(r) = s * Y.row(row_of(p));
      }
    });
    lapack::syrk_lower('N', n, rows, 1.0, B.data(), n, 1.0, G.data(), G.rows());
    lapack::gemm('N', 'T', n, v, rows, 1.0, B.data(), n, BY.data(), v, 1.0, R.data(), R.rows());
  }
  lapack::symmetrize_from_lower(G);
  return solve_shifted_system(G, R, alphas, report, true);
}

Matrix rankrls_primal_graph(RowMatrixCRef X, const PreferenceGraph& graph, const Vector& alphas, int n_threads,
                            SolveReport* report) {
  (void)n_threads;
  graph.validate();
  const Index m = X.rows(), n = X.cols();
  require(graph.n_vertices == m, "the preference graph must have one vertex per row of X");
  // L X = M M^T X, O(l n): each edge adds w^2 (x_h - x_t) to row h and subtracts it from row t.  Row-major, so
  // that an edge touches two contiguous rows (column-major rows cost a cache miss per feature).
  RowMatrix LX = RowMatrix::Zero(m, n);
  const Index ldx = X.outerStride();
  for (Index e = 0; e < graph.n_edges(); ++e) {
    const Index h = graph.head[e], t = graph.tail[e];
    const double w2 = graph.weight[e] * graph.weight[e];
    const double *xh = X.data() + h * ldx, *xt = X.data() + t * ldx;
    double *lh = LX.data() + h * n, *lt = LX.data() + t * n;
    for (Index k = 0; k < n; ++k) {
      const double diff = w2 * (xh[k] - xt[k]);
      lh[k] += diff;
      lt[k] -= diff;
    }
  }
  Matrix G(n, n);
  // X^T (L X): row-major X (m x n) and L X are column-major X^T and (L X)^T (n x m).
  lapack::gemm('N', 'T', n, n, m, 1.0, X.data(), ldx, LX.data(), std::max<Index>(1, n), 0.0, G.data(), G.rows());
  G = 0.5 * (G + G.transpose()).eval();
  const Matrix b = graph_incidence_times_targets(graph);
  Matrix R(n, b.cols());
  lapack::gemm('N', 'N', n, b.cols(), m, 1.0, X.data(), X.outerStride(), b.data(), b.rows(), 0.0, R.data(), R.rows());
  return solve_shifted_system(G, R, alphas, report, true);
}

}  // namespace fastrank
