// Leave-pair-out / leave-group-out / hold-out shortcuts (fastrank/lpo.hpp).
#include <pybind11/eigen.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cmath>
#include <tuple>

#include "fastrank/errors.hpp"
#include "groups_arg.hpp"
#include "fastrank/holdout_inverse.hpp"
#include "fastrank/lpo.hpp"

namespace py = pybind11;
using namespace fastrank;

namespace {

GroupStructure one_group(Index m, double c) {
  return GroupStructure::from_index(GroupIndex::one_group(m), Vector::Constant(1, c));
}

}  // namespace

void bind_feature_cv(py::module_& m);  // bind_feature_cv.cpp

void bind_cv(py::module_& m) {
  bind_feature_cv(m);
  m.def(
      "cv_spectral",
      [](MatrixCRef K, IndexVectorCRef order, IndexVectorCRef offsets, const Vector& pair_weight, int n_threads) {
        Matrix V;
        Vector sigma;
        cv::spectral(K, bindings::scaled_groups(order, offsets, pair_weight, K.rows()), V, sigma, n_threads);
        return std::make_tuple(std::move(V), std::move(sigma));
      },
      py::arg("K").noconvert(), py::arg("order"), py::arg("offsets"), py::arg("pair_weight"), py::arg("n_threads"),
      py::call_guard<py::gil_scoped_release>(), "(V, sigma) with S K S = V diag(sigma) V^T.");
  m.def(
      "cv_ksv",
      [](MatrixCRef K, IndexVectorCRef order, IndexVectorCRef offsets, const Vector& pair_weight, MatrixCRef V) {
        return cv::ksv(K, bindings::scaled_groups(order, offsets, pair_weight, K.rows()), V);
      },
      py::arg("K").noconvert(), py::arg("order"), py::arg("offsets"), py::arg("pair_weight"), py::arg("V").noconvert(),
      py::call_guard<py::gil_scoped_release>(), "P = K S V.");
  m.def(
      "cv_object_prepare",
      [](MatrixCRef K, MatrixCRef V, const Vector& sigma, double c, double alpha, MatrixCRef Y) {
        cv::PairBlocks b = cv::object_prepare(K, V, sigma, c, alpha, Y);
        return std::make_tuple(std::move(b.M[0]), std::move(b.mu), std::move(b.h));
      },
      py::arg("K").noconvert(), py::arg("V").noconvert(), py::arg("sigma"), py::arg("c"), py::arg("alpha"),
      py::arg("Y").noconvert(), py::call_guard<py::gil_scoped_release>(),
      "(M, mu, h) of object leave-pair-out (M lower triangle valid).");
  m.def(
      "cv_object_lpo_pairs",
      [](MatrixCRef M, const Vector& mu, MatrixCRef h, MatrixCRef Y, double c, cv::PairMatrixCRef pairs,
         int n_threads) {
        const Index mm = Y.rows();
        require(M.rows() == mm && M.cols() == mm, "M must be m x m");
        std::vector<const double*> blocks{M.data()};
        require(M.outerStride() == mm, "M must be contiguous");
        return cv::lpo_pairs(one_group(mm, c), blocks, mu, h, Y, pairs, n_threads);
      },
      py::arg("M").noconvert(), py::arg("mu"), py::arg("h").noconvert(), py::arg("Y").noconvert(), py::arg("c"),
      py::arg("pairs").noconvert(), py::arg("n_threads"), py::call_guard<py::gil_scoped_release>(),
      "Pair phase of object leave-pair-out: (n_pairs, 2 v) held-out predictions.");
  m.def(
      "cv_query_lpo",
      [](MatrixCRef P, MatrixCRef V, const Vector& sigma, IndexVectorCRef order, IndexVectorCRef offsets,
         const Vector& pair_weight, double alpha, MatrixCRef Y, cv::PairMatrixCRef pairs, int n_threads) {
        const GroupStructure g = bindings::scaled_groups(order, offsets, pair_weight, Y.rows());
        cv::PairBlocks b = cv::group_prepare(P, V, sigma, g, alpha, Y);
        std::vector<const double*> blocks;
        for (const auto& M : b.M) blocks.push_back(M.data());
        return cv::lpo_pairs(g, blocks, b.mu, b.h, Y, pairs, n_threads);
      },
      py::arg("P").noconvert(), py::arg("V").noconvert(), py::arg("sigma"), py::arg("order"), py::arg("offsets"),
      py::arg("pair_weight"), py::arg("alpha"), py::arg("Y").noconvert(), py::arg("pairs").noconvert(),
      py::arg("n_threads"), py::call_guard<py::gil_scoped_release>(),
      "Leave-pair-out inside query groups: (n_pairs, 2 v).");
  m.def(
      "cv_object_holdout",
      [](MatrixCRef K, MatrixCRef V, const Vector& sigma, double c, double alpha, MatrixCRef Y,
         const IndexVector& rows, const IndexVector& fold_offsets) {
        return cv::object_holdout(K, V, sigma, c, alpha, Y, rows, fold_offsets);
      },
      py::arg("K").noconvert(), py::arg("V").noconvert(), py::arg("sigma"), py::arg("c"), py::arg("alpha"),
      py::arg("Y").noconvert(), py::arg("rows"), py::arg("fold_offsets"), py::call_guard<py::gil_scoped_release>(),
      "Hold-out predictions for index sets in object ranking.");
  m.def(
      "cv_group_holdout",
      [](MatrixCRef P, MatrixCRef V, const Vector& sigma, IndexVectorCRef order, IndexVectorCRef offsets,
         const Vector& pair_weight, double alpha, MatrixCRef Y, const IndexVector& rows,
         const IndexVector& fold_offsets) {
        const GroupStructure g = bindings::scaled_groups(order, offsets, pair_weight, Y.rows());
        return cv::group_holdout(P, V, sigma, g, alpha, Y, rows, fold_offsets);
      },
      py::arg("P").noconvert(), py::arg("V").noconvert(), py::arg("sigma"), py::arg("order"), py::arg("offsets"),
      py::arg("pair_weight"), py::arg("alpha"), py::arg("Y").noconvert(), py::arg("rows"), py::arg("fold_offsets"),
      py::call_guard<py::gil_scoped_release>(), "Hold-out predictions for index sets with query groups (eq. 33).");
  m.def(
      "cv_leave_group_out_cholesky",
      [](MatrixCRef K, IndexVectorCRef order, IndexVectorCRef offsets, const Vector& pair_weight, double alpha,
         MatrixCRef Y, int n_threads) {
        const GroupStructure g = bindings::scaled_groups(order, offsets, pair_weight, Y.rows());
        return g.to_row_order(cv::leave_group_out_cholesky(K, g, alpha, Y, n_threads));
      },
      py::arg("K").noconvert(), py::arg("order"), py::arg("offsets"), py::arg("pair_weight"), py::arg("alpha"),
      py::arg("Y").noconvert(), py::arg("n_threads"), py::call_guard<py::gil_scoped_release>(),
      "Leave-one-group-out predictions (caller's row order) for one alpha via a Cholesky factor.");
  m.def(
      "cv_object_lpo_disagreement",
      [](MatrixCRef M, const Vector& mu, MatrixCRef h, MatrixCRef Y, double c, cv::PairMatrixCRef pairs,
         int n_threads) {
        const Index mm = Y.rows();
        require(M.rows() == mm && M.cols() == mm && M.outerStride() == mm, "M must be a contiguous m x m matrix");
        std::vector<const double*> blocks{M.data()};
        return cv::lpo_disagreement(one_group(mm, c), blocks, mu, h, Y, pairs, n_threads);
      },
      py::arg("M").noconvert(), py::arg("mu"), py::arg("h").noconvert(), py::arg("Y").noconvert(), py::arg("c"),
      py::arg("pairs").noconvert(), py::arg("n_threads"), py::call_guard<py::gil_scoped_release>(),
      "Pairwise disagreement (v,) of object leave-pair-out predictions against Y.");
  m.def(
      "cv_query_lpo_disagreement",
      [](MatrixCRef P, MatrixCRef V, const Vector& sigma, IndexVectorCRef order, IndexVectorCRef offsets,
         const Vector& pair_weight, double alpha, MatrixCRef Y, cv::PairMatrixCRef pairs, int n_threads) {
        const GroupStructure g = bindings::scaled_groups(order, offsets, pair_weight, Y.rows());
        cv::PairBlocks b = cv::group_prepare(P, V, sigma, g, alpha, Y);
        std::vector<const double*> blocks;
        for (const auto& M : b.M) blocks.push_back(M.data());
        return cv::lpo_disagreement(g, blocks, b.mu, b.h, Y, pairs, n_threads);
      },
      py::arg("P").noconvert(), py::arg("V").noconvert(), py::arg("sigma"), py::arg("order"), py::arg("offsets"),
      py::arg("pair_weight"), py::arg("alpha"), py::arg("Y").noconvert(), py::arg("pairs").noconvert(),
      py::arg("n_threads"), py::call_guard<py::gil_scoped_release>(),
      "Pairwise disagreement (v,) of query leave-pair-out predictions.");

  // ---- one alpha from a Cholesky factor (fastrank/holdout_inverse.hpp) ----------------------
  m.def(
      "cv_object_lpo_inverse",
      [](MatrixCRef K, double c, double alpha, MatrixCRef Y, cv::PairMatrixCRef pairs, int n_threads) {
        const cv::InversePairBlocks b = cv::object_prepare_inverse(K, c, alpha, Y, n_threads);
        return cv::lpo_pairs_inverse(one_group(K.rows(), c), b, Y, pairs, n_threads);
      },
      py::arg("K").noconvert(), py::arg("c"), py::arg("alpha"), py::arg("Y").noconvert(),
      py::arg("pairs").noconvert(), py::arg("n_threads"), py::call_guard<py::gil_scoped_release>(),
      "Object leave-pair-out for one alpha via dpotrf + dpotri (no eigendecomposition): (n_pairs, 2 v).");
  m.def(
      "cv_object_lpo_inverse_disagreement",
      [](MatrixCRef K, double c, double alpha, MatrixCRef Y, cv::PairMatrixCRef pairs, int n_threads) {
        const cv::InversePairBlocks b = cv::object_prepare_inverse(K, c, alpha, Y, n_threads);
        return cv::lpo_disagreement_inverse(one_group(K.rows(), c), b, Y, pairs, n_threads);
      },
      py::arg("K").noconvert(), py::arg("c"), py::arg("alpha"), py::arg("Y").noconvert(),
      py::arg("pairs").noconvert(), py::arg("n_threads"), py::call_guard<py::gil_scoped_release>(),
      "Pairwise disagreement (v,) of cv_object_lpo_inverse's predictions against Y.");
  m.def(
      "cv_query_lpo_inverse",
      [](MatrixCRef K, IndexVectorCRef order, IndexVectorCRef offsets, const Vector& pair_weight, double alpha,
         MatrixCRef Y, cv::PairMatrixCRef pairs, int n_threads) {
        const GroupStructure g = bindings::scaled_groups(order, offsets, pair_weight, Y.rows());
        const cv::InversePairBlocks b = cv::group_prepare_inverse(K, g, alpha, Y, n_threads);
        return cv::lpo_pairs_inverse(g, b, Y, pairs, n_threads);
      },
      py::arg("K").noconvert(), py::arg("order"), py::arg("offsets"), py::arg("pair_weight"), py::arg("alpha"),
      py::arg("Y").noconvert(), py::arg("pairs").noconvert(), py::arg("n_threads"),
      py::call_guard<py::gil_scoped_release>(),
      "Leave-pair-out inside query groups for one alpha via a Cholesky factor: (n_pairs, 2 v).");
  m.def(
      "cv_query_lpo_inverse_disagreement",
      [](MatrixCRef K, IndexVectorCRef order, IndexVectorCRef offsets, const Vector& pair_weight, double alpha,
         MatrixCRef Y, cv::PairMatrixCRef pairs, int n_threads) {
        const GroupStructure g = bindings::scaled_groups(order, offsets, pair_weight, Y.rows());
        const cv::InversePairBlocks b = cv::group_prepare_inverse(K, g, alpha, Y, n_threads);
        return cv::lpo_disagreement_inverse(g, b, Y, pairs, n_threads);
      },
      py::arg("K").noconvert(), py::arg("order"), py::arg("offsets"), py::arg("pair_weight"), py::arg("alpha"),
      py::arg("Y").noconvert(), py::arg("pairs").noconvert(), py::arg("n_threads"),
      py::call_guard<py::gil_scoped_release>(),
      "Pairwise disagreement (v,) of cv_query_lpo_inverse's predictions against Y.");
  m.def(
      "cv_object_holdout_inverse",
      [](MatrixCRef K, double c, double alpha, MatrixCRef Y, const IndexVector& rows, const IndexVector& fold_offsets,
         int n_threads) { return cv::object_holdout_inverse(K, c, alpha, Y, rows, fold_offsets, n_threads); },
      py::arg("K").noconvert(), py::arg("c"), py::arg("alpha"), py::arg("Y").noconvert(), py::arg("rows"),
      py::arg("fold_offsets"), py::arg("n_threads"), py::call_guard<py::gil_scoped_release>(),
      "Hold-out predictions for index sets in object ranking, one Cholesky factor per set size.");
  m.def(
      "cv_group_holdout_inverse",
      [](MatrixCRef K, IndexVectorCRef order, IndexVectorCRef offsets, const Vector& pair_weight, double alpha,
         MatrixCRef Y, const IndexVector& rows, const IndexVector& fold_offsets, int n_threads) {
        const GroupStructure g = bindings::scaled_groups(order, offsets, pair_weight, Y.rows());
        return cv::group_holdout_inverse(K, g, alpha, Y, rows, fold_offsets, n_threads);
      },
      py::arg("K").noconvert(), py::arg("order"), py::arg("offsets"), py::arg("pair_weight"), py::arg("alpha"),
      py::arg("Y").noconvert(), py::arg("rows"), py::arg("fold_offsets"), py::arg("n_threads"),
      py::call_guard<py::gil_scoped_release>(),
      "Hold-out predictions for index sets (grouped positions) with query groups, one Cholesky factor.");
  m.def(
      "cv_leave_group_out_inverse",
      [](MatrixCRef K, IndexVectorCRef order, IndexVectorCRef offsets, const Vector& pair_weight, double alpha,
         MatrixCRef Y, int n_threads) {
        const GroupStructure g = bindings::scaled_groups(order, offsets, pair_weight, Y.rows());
        return g.to_row_order(cv::leave_group_out_inverse(K, g, alpha, Y, n_threads));
      },
      py::arg("K").noconvert(), py::arg("order"), py::arg("offsets"), py::arg("pair_weight"), py::arg("alpha"),
      py::arg("Y").noconvert(), py::arg("n_threads"), py::call_guard<py::gil_scoped_release>(),
      "Leave-one-group-out predictions (caller's row order) for one alpha, small-alpha stable form.");
  m.def(
      "cv_leave_group_out_path",
      [](MatrixCRef K, IndexVectorCRef order, IndexVectorCRef offsets, const Vector& pair_weight,
         const Vector& alphas, MatrixCRef Y, int n_threads) {
        const GroupStructure g = bindings::scaled_groups(order, offsets, pair_weight, Y.rows());
        return g.to_row_order(cv::leave_group_out_path(K, g, alphas, Y, n_threads));
      },
      py::arg("K").noconvert(), py::arg("order"), py::arg("offsets"), py::arg("pair_weight"), py::arg("alphas"),
      py::arg("Y").noconvert(), py::arg("n_threads"), py::call_guard<py::gil_scoped_release>(),
      "Leave-one-group-out predictions (caller's row order, m x n_alphas v, alpha-major) for a grid of alphas from one "
      "eigendecomposition, followed by every alpha's full-data dual coefficients (m x n_alphas v).");
}
