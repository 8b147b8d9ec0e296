#include "fastrank/sparse_rls.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

#include "fastrank/errors.hpp"
#include "fastrank/lapack.hpp"
#include "fastrank/parallel.hpp"

namespace fastrank {

void apply_sqrt_laplacian_rows(MatrixRef Y, const GroupStructure& g, int n_threads) {
  require(Y.rows() == g.n_rows(), "apply_sqrt_laplacian_rows: row count mismatch");
  const std::int64_t* order = g.order.data();
  parallel_for(0, Y.cols(), n_threads, 1, [&](Index lo, Index hi) {
    for (Index j = lo; j < hi; ++j) {
      double* col = Y.col(j).data();
      for (Index q = 0; q < g.n_groups(); ++q) {
        const Index o = g.offsets[q], e = g.offsets[q + 1];
        double mean = 0.0;
        for (Index p = o; p < e; ++p) mean += col[order[p]];
        mean /= static_cast<double>(e - o);
        for (Index p = o; p < e; ++p) col[order[p]] = g.scale[q] * (col[order[p]] - mean);
      }
    }
  });
}

namespace {

// A = (H + alpha K_RR)^-1 g through eq. 42; H and g are consumed.
SubsetDecomposition decompose_gram(Matrix H, Matrix g, MatrixCRef KRR) {
  const Index r = H.rows();
  require(H.cols() == r && g.rows() == r, "H must be r x r and g must have r rows");
  require(KRR.rows() == r && KRR.cols() == r, "K_RR must be r x r");
  require(r >= 1, "the basis must hold at least one vector");
  SubsetDecomposition d;
  Matrix Z = KRR;
  const double anorm = KRR.cwiseAbs().colwise().sum().maxCoeff();
  if (lapack::potrf_lower(Z)) {
    d.rcond = lapack::pocon_lower(Z, anorm);
    Z.triangularView<Eigen::StrictlyUpper>().setZero();
    // C = Z^-1 H Z^-T: H1 = Z^-1 H; C = Z^-1 H1^T (H symmetric).
    lapack::trsm_lower_left('N', Z, H);
    Matrix C = H.transpose();
    lapack::trsm_lower_left('N', Z, C);
    C = 0.5 * (C + C.transpose()).eval();
    lapack::syevd(C, d.sigma);  // C now holds V
    lapack::trsm_lower_left('N', Z, g);  // g <- Z^-1 G^T t
    d.c.resize(C.cols(), g.cols());
    lapack::gemm('T', 'N', 1.0, C, g, 0.0, d.c);
    lapack::trsm_lower_left('T', Z, C);  // C <- Z^-T V
    d.U = std::move(C);
    d.cholesky = true;
  } else {
    Matrix E = KRR;
    E = 0.5 * (E + E.transpose()).eval();
    Vector e;
    lapack::syevd(E, e);
    const double emax = e.size() ? e.maxCoeff() : 0.0;
    const double cut = static_cast<double>(r) * std::numeric_limits<double>::epsilon() * std::max(emax, 0.0);
    std::vector<Index> keep;
    for (Index k = 0; k < r; ++k)
      if (e[k] > cut && e[k] > 0.0) keep.push_back(k);
    if (keep.empty()) throw LinAlgError("the basis kernel matrix K_RR is zero; choose other basis vectors");
    const Index rp = static_cast<Index>(keep.size());
    d.rcond = e[keep.front()] / emax;  // syevd sorts ascending: the smallest eigenvalue kept
    Matrix B(r, rp);
    for (Index k = 0; k < rp; ++k) B.col(k) = E.col(keep[k]) / std::sqrt(e[keep[k]]);
    Matrix HB(r, rp), C(rp, rp);
    lapack::gemm('N', 'N', 1.0, H, B, 0.0, HB);
    lapack::gemm('T', 'N', 1.0, B, HB, 0.0, C);
    C = 0.5 * (C + C.transpose()).eval();
    lapack::syevd(C, d.sigma);
    Matrix Btg(rp, g.cols());
    lapack::gemm('T', 'N', 1.0, B, g, 0.0, Btg);
    d.c.resize(rp, g.cols());
    lapack::gemm('T', 'N', 1.0, C, Btg, 0.0, d.c);
    d.U.resize(r, rp);
    lapack::gemm('N', 'N', 1.0, B, C, 0.0, d.U);
    d.cholesky = false;
  }
  // Rounding can leave tiny negative eigenvalues of the PSD matrix C.
  d.sigma = d.sigma.cwiseMax(0.0);
  return d;
}

// A = (G^T G + alpha K_RR)^-1 G^T t: H = G^T G (lower triangle by syrk), g = G^T t.
SubsetDecomposition decompose(MatrixCRef G, const Matrix& T, MatrixCRef KRR) {
  const Index r = G.cols(), rows = G.rows();
  require(T.rows() == rows, "targets and design rows differ");
  Matrix H(r, r);
  lapack::syrk_lower('T', r, rows, 1.0, G.data(), G.outerStride(), 0.0, H.data(), r);
  lapack::symmetrize_from_lower(H);
  Matrix g(r, T.cols());
  lapack::gemm('T', 'N', r, T.cols(), rows, 1.0, G.data(), G.outerStride(), T.data(), T.rows(), 0.0, g.data(), r);
  return decompose_gram(std::move(H), std::move(g), KRR);
}

}  // namespace

SubsetDecomposition sparse_rls_decompose_gram(MatrixCRef H, MatrixCRef g, MatrixCRef KRR) {
  return decompose_gram(H, g, KRR);
}

SubsetDecomposition sparse_rls_decompose_groups(MatrixRef KRt, MatrixCRef Y, const GroupStructure& groups,
                                                MatrixCRef KRR, int n_threads) {
  require(Y.rows() == KRt.rows(), "targets must have one row per input");
  apply_sqrt_laplacian_rows(KRt, groups, n_threads);
  Matrix T = Y;
  apply_sqrt_laplacian_rows(T, groups, 1);
  return decompose(KRt, T, KRR);
}

SubsetDecomposition sparse_rls_decompose_graph(MatrixCRef KRt, const PreferenceGraph& graph, MatrixCRef KRR,
                                               int n_threads) {
  (void)n_threads;
  graph.validate();
  require(graph.n_vertices == KRt.rows(), "the graph's vertex count differs from the number of inputs");
  const Matrix G = graph_incidence_transpose_times(graph, KRt);  // l x r
  Matrix T = graph.target;                                        // N_e = w_e z_e
  for (Index e = 0; e < graph.n_edges(); ++e) T.row(e) *= graph.weight[e];
  return decompose(G, T, KRR);
}

Matrix sparse_rls_coef(const SubsetDecomposition& d, double alpha) {
  require(std::isfinite(alpha) && alpha > 0.0, "alpha must be finite and > 0");
  Matrix scaled = d.c;
  for (Index k = 0; k < scaled.rows(); ++k) scaled.row(k) /= (d.sigma[k] + alpha);
  Matrix A(d.U.rows(), d.c.cols());
  lapack::gemm('N', 'N', 1.0, d.U, scaled, 0.0, A);
  return A;
}

}  // namespace fastrank
