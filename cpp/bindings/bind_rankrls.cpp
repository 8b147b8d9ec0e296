// RankRLS dense solvers.  Arrays arrive validated from python/fastrank/_solvers.py (K and Y in group
// order); K is a writable Fortran-ordered buffer the solver overwrites.
#include <pybind11/eigen.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <utility>

#include "fastrank/laplacian.hpp"
#include "fastrank/rankrls.hpp"
#include "fastrank/tridiag_path.hpp"
#include "groups_arg.hpp"

namespace py = pybind11;
using namespace fastrank;

void bind_rankrls(py::module_& m) {
  m.def(
      "solve_shifted_system",
      [](Eigen::Ref<Matrix> G, MatrixCRef R, const Vector& alphas, bool primal) {
        require(G.rows() > 0 && G.rows() == G.cols() && R.rows() == G.rows(),
                "G must be square and non-empty, and R must have G's rows");
        SolveReport report;
        Matrix U = solve_shifted_system(G, R, alphas, &report, primal);
        return std::make_pair(std::move(U), report.rcond);
      },
      py::arg("G").noconvert(), py::arg("R"), py::arg("alphas"), py::arg("primal") = false,
      py::call_guard<py::gil_scoped_release>(),
      "Solves (G + alpha_k I) U_k = R for every alpha (Cholesky for one, eigh for several); G (symmetric "
      "PSD, Fortran-ordered) is overwritten. Returns (U stacked alpha-major, rcond).");
  m.def(
      "rankrls_dual_scores",
      [](Eigen::Ref<Matrix> K, IndexVectorCRef order, IndexVectorCRef offsets, const Vector& pair_weight, MatrixCRef Y,
         const Vector& alphas, int n_threads) {
        SolveReport report;
        const GroupStructure g = bindings::scaled_groups(order, offsets, pair_weight, K.rows());
        Matrix A = rankrls_dual_scores(K, g, Y, alphas, n_threads, &report);
        return std::make_pair(g.to_row_order(A), report.rcond);
      },
      py::arg("K").noconvert(), py::arg("order"), py::arg("offsets"), py::arg("pair_weight"), py::arg("Y"),
      py::arg("alphas"), py::arg("n_threads"), py::call_guard<py::gil_scoped_release>(),
      "Dual RankRLS in the scoring setting; K and Y in group order, K is overwritten. Returns (A, rcond), A in the "
      "caller's row order, stacked alpha-major.");
  m.def(
      "rankrls_dual_graph",
      [](Eigen::Ref<Matrix> K, const IndexVector& head, const IndexVector& tail, const Vector& weight,
         const Matrix& target, const Vector& alphas, int n_threads) {
        SolveReport report;
        Matrix A = rankrls_dual_graph(K, PreferenceGraph::from_edges(K.rows(), head, tail, weight, target), alphas, n_threads, &report);
        return std::make_pair(std::move(A), report.rcond);
      },
      py::arg("K").noconvert(), py::arg("head"), py::arg("tail"), py::arg("weight"), py::arg("target"),
      py::arg("alphas"), py::arg("n_threads"), py::call_guard<py::gil_scoped_release>(),
      "Dual RankRLS from a preference graph; K is overwritten. Returns (A, rcond).");
  m.def(
      "rankrls_primal_scores",
      [](RowMatrixCRef X, IndexVectorCRef order, IndexVectorCRef offsets, const Vector& pair_weight, RowMatrixCRef Y,
         const Vector& alphas, int n_threads) {
        require(X.cols() > 0 && Y.cols() > 0, "X and Y must have at least one column");
        SolveReport report;
        const GroupStructure g = bindings::scaled_groups(order, offsets, pair_weight, X.rows());
        const IndexVector order_or_identity = g.is_identity() ? IndexVector() : g.order;  // empty: no permutation
        Matrix W = rankrls_primal_scores(X, order_or_identity, g, Y, alphas, n_threads, &report);
        return std::make_pair(std::move(W), report.rcond);
      },
      py::arg("X").noconvert(), py::arg("order"), py::arg("offsets"), py::arg("pair_weight"), py::arg("Y"),
      py::arg("alphas"), py::arg("n_threads"), py::call_guard<py::gil_scoped_release>(),
      "Primal (linear) RankRLS in the scoring setting. Returns (W, rcond).");
  m.def(
      "rankrls_primal_graph",
      [](RowMatrixCRef X, const IndexVector& head, const IndexVector& tail, const Vector& weight,
         const Matrix& target, const Vector& alphas, int n_threads) {
        SolveReport report;
        Matrix W = rankrls_primal_graph(X, PreferenceGraph::from_edges(X.rows(), head, tail, weight, target), alphas, n_threads,
                                        &report);
        return std::make_pair(std::move(W), report.rcond);
      },
      py::arg("X").noconvert(), py::arg("head"), py::arg("tail"), py::arg("weight"), py::arg("target"),
      py::arg("alphas"), py::arg("n_threads"), py::call_guard<py::gil_scoped_release>(),
      "Primal (linear) RankRLS from a preference graph. Returns (W, rcond).");
  m.def(
      "solve_shifted_system_tridiag",
      [](Eigen::Ref<Matrix> G, MatrixCRef R, const Vector& alphas, bool primal) {
        require(G.rows() > 0 && G.rows() == G.cols() && R.rows() == G.rows(),
                "G must be square and non-empty, and R must have G's rows");
        SolveReport report;
        Matrix U = solve_shifted_system_tridiag(G, R, alphas, &report, primal);
        return std::make_pair(std::move(U), report.rcond);
      },
      py::arg("G").noconvert(), py::arg("R"), py::arg("alphas"), py::arg("primal") = false,
      py::call_guard<py::gil_scoped_release>(),
      "Solves (G + alpha_k I) U_k = R for every alpha through one tridiagonal reduction G = Q T Q^T "
      "(dsytrd, LDL^T of T + alpha I per alpha, one dormtr for all). G (symmetric PSD, Fortran-ordered) is "
      "overwritten. Returns (U stacked alpha-major, rcond).");
  m.def(
      "rankrls_dual_scores_tridiag",
      [](Eigen::Ref<Matrix> K, IndexVectorCRef order, IndexVectorCRef offsets, const Vector& pair_weight, MatrixCRef Y,
         const Vector& alphas, int n_threads) {
        SolveReport report;
        const GroupStructure g = bindings::scaled_groups(order, offsets, pair_weight, K.rows());
        Matrix A = rankrls_dual_scores_tridiag(K, g, Y, alphas, n_threads, &report);
        return std::make_pair(g.to_row_order(A), report.rcond);
      },
      py::arg("K").noconvert(), py::arg("order"), py::arg("offsets"), py::arg("pair_weight"), py::arg("Y"),
      py::arg("alphas"), py::arg("n_threads"), py::call_guard<py::gil_scoped_release>(),
      "rankrls_dual_scores through one tridiagonal reduction (same inputs and result); K is overwritten.");
}
