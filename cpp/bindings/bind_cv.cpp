// Leave-pair-out / leave-group-out / hold-out shortcuts (fastrank/lpo.hpp).
#include <pybind11/eigen.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cmath>
#include <tuple>

#include "fastrank/errors.hpp"
#include "fastrank/holdout_inverse.hpp"
#include "fastrank/lpo.hpp"

namespace py = pybind11;
using namespace fastrank;

namespace {

GroupStructure make_groups(const IndexVector& offsets, const Vector& scale) {
  require(offsets.size() >= 2 && offsets[0] == 0, "group offsets must start at 0 and name at least one group");
  require(scale.size() == offsets.size() - 1, "one scale per group");
  for (Index q = 0; q + 1 < offsets.size(); ++q) {
    require(offsets[q + 1] >= offsets[q] + 1, "every group must contain at least one row");
    require(scale[q] > 0.0 && std::isfinite(scale[q]), "group scales must be positive");
  }
  GroupStructure g;
  g.offsets = offsets;
  g.scale = scale;
  return g;
}

GroupStructure one_group(Index m, double c) {
  IndexVector offs(2);
  offs << 0, m;
  return make_groups(offs, Vector::Constant(1, std::sqrt(c * static_cast<double>(m))));
}

}  // namespace

void bind_feature_cv(py::module_& m);  // bind_feature_cv.cpp

void bind_cv(py::module_& m) {
  bind_feature_cv(m);
  m.def(
      "cv_spectral",
      [](MatrixCRef K, const IndexVector& offsets, const Vector& scale, int n_threads) {
        Matrix V;
        Vector sigma;
        cv::spectral(K, make_groups(offsets, scale), V, sigma, n_threads);
        return std::make_tuple(std::move(V), std::move(sigma));
      },
      py::arg("K").noconvert(), py::arg("offsets"), py::arg("scale"), py::arg("n_threads"),
      py::call_guard<py::gil_scoped_release>(), "(V, sigma) with S K S = V diag(sigma) V^T.");
  m.def(
      "cv_ksv",
      [](MatrixCRef K, const IndexVector& offsets, const Vector& scale, MatrixCRef V) {
        return cv::ksv(K, make_groups(offsets, scale), V);
      },
      py::arg("K").noconvert(), py::arg("offsets"), py::arg("scale"), py::arg("V").noconvert(),
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
      [](MatrixCRef P, MatrixCRef V, const Vector& sigma, const IndexVector& offsets, const Vector& scale,
         double alpha, MatrixCRef Y, cv::PairMatrixCRef pairs, int n_threads) {
        const GroupStructure g = make_groups(offsets, scale);
        cv::PairBlocks b = cv::group_prepare(P, V, sigma, g, alpha, Y);
        std::vector<const double*> blocks;
        for (const auto& M : b.M) blocks.push_back(M.data());
        return cv::lpo_pairs(g, blocks, b.mu, b.h, Y, pairs, n_threads);
      },
      py::arg("P").noconvert(), py::arg("V").noconvert(), py::arg("sigma"), py::arg("offsets"), py::arg("scale"),
      py::arg("alpha"), py::arg("Y").noconvert(), py::arg("pairs").noconvert(), py::arg("n_threads"),
      py::call_guard<py::gil_scoped_release>(), "Leave-pair-out inside query groups: (n_pairs, 2 v).");
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
      [](MatrixCRef P, MatrixCRef V, const Vector& sigma, const IndexVector& offsets, const Vector& scale,
         double alpha, MatrixCRef Y, const IndexVector& rows, const IndexVector& fold_offsets) {
        return cv::group_holdout(P, V, sigma, make_groups(offsets, scale), alpha, Y, rows, fold_offsets);
      },
      py::arg("P").noconvert(), py::arg("V").noconvert(), py::arg("sigma"), py::arg("offsets"), py::arg("scale"),
      py::arg("alpha"), py::arg("Y").noconvert(), py::arg("rows"), py::arg("fold_offsets"),
      py::call_guard<py::gil_scoped_release>(), "Hold-out predictions for index sets with query groups (eq. 33).");
  m.def(
      "cv_leave_group_out_cholesky",
      [](MatrixCRef K, const IndexVector& offsets, const Vector& scale, double alpha, MatrixCRef Y, int n_threads) {
        return cv::leave_group_out_cholesky(K, make_groups(offsets, scale), alpha, Y, n_threads);
      },
      py::arg("K").noconvert(), py::arg("offsets"), py::arg("scale"), py::arg("alpha"), py::arg("Y").noconvert(),
      py::arg("n_threads"), py::call_guard<py::gil_scoped_release>(),
      "Leave-one-group-out predictions (group order) for one alpha via a Cholesky factor.");
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
      [](MatrixCRef P, MatrixCRef V, const Vector& sigma, const IndexVector& offsets, const Vector& scale,
         double alpha, MatrixCRef Y, cv::PairMatrixCRef pairs, int n_threads) {
        const GroupStructure g = make_groups(offsets, scale);
        cv::PairBlocks b = cv::group_prepare(P, V, sigma, g, alpha, Y);
        std::vector<const double*> blocks;
        for (const auto& M : b.M) blocks.push_back(M.data());
        return cv::lpo_disagreement(g, blocks, b.mu, b.h, Y, pairs, n_threads);
      },
      py::arg("P").noconvert(), py::arg("V").noconvert(), py::arg("sigma"), py::arg("offsets"), py::arg("scale"),
      py::arg("alpha"), py::arg("Y").noconvert(), py::arg("pairs").noconvert(), py::arg("n_threads"),
      py::call_guard<py::gil_scoped_release>(), "Pairwise disagreement (v,) of query leave-pair-out predictions.");

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
      [](MatrixCRef K, const IndexVector& offsets, const Vector& scale, double alpha, MatrixCRef Y,
         cv::PairMatrixCRef pairs, int n_threads) {
        const GroupStructure g = make_groups(offsets, scale);
        const cv::InversePairBlocks b = cv::group_prepare_inverse(K, g, alpha, Y, n_threads);
        return cv::lpo_pairs_inverse(g, b, Y, pairs, n_threads);
      },
      py::arg("K").noconvert(), py::arg("offsets"), py::arg("scale"), py::arg("alpha"), py::arg("Y").noconvert(),
      py::arg("pairs").noconvert(), py::arg("n_threads"), py::call_guard<py::gil_scoped_release>(),
      "Leave-pair-out inside query groups for one alpha via a Cholesky factor: (n_pairs, 2 v).");
  m.def(
      "cv_query_lpo_inverse_disagreement",
      [](MatrixCRef K, const IndexVector& offsets, const Vector& scale, double alpha, MatrixCRef Y,
         cv::PairMatrixCRef pairs, int n_threads) {
        const GroupStructure g = make_groups(offsets, scale);
        const cv::InversePairBlocks b = cv::group_prepare_inverse(K, g, alpha, Y, n_threads);
        return cv::lpo_disagreement_inverse(g, b, Y, pairs, n_threads);
      },
      py::arg("K").noconvert(), py::arg("offsets"), py::arg("scale"), py::arg("alpha"), py::arg("Y").noconvert(),
      py::arg("pairs").noconvert(), py::arg("n_threads"), py::call_guard<py::gil_scoped_release>(),
      "Pairwise disagreement (v,) of cv_query_lpo_inverse's predictions against Y.");
  m.def(
      "cv_leave_group_out_inverse",
      [](MatrixCRef K, const IndexVector& offsets, const Vector& scale, double alpha, MatrixCRef Y, int n_threads) {
        return cv::leave_group_out_inverse(K, make_groups(offsets, scale), alpha, Y, n_threads);
      },
      py::arg("K").noconvert(), py::arg("offsets"), py::arg("scale"), py::arg("alpha"), py::arg("Y").noconvert(),
      py::arg("n_threads"), py::call_guard<py::gil_scoped_release>(),
      "Leave-one-group-out predictions (group order) for one alpha, small-alpha stable form.");
  m.def(
      "cv_leave_group_out_path",
      [](MatrixCRef K, const IndexVector& offsets, const Vector& scale, const Vector& alphas, MatrixCRef Y,
         int n_threads) { return cv::leave_group_out_path(K, make_groups(offsets, scale), alphas, Y, n_threads); },
      py::arg("K").noconvert(), py::arg("offsets"), py::arg("scale"), py::arg("alphas"), py::arg("Y").noconvert(),
      py::arg("n_threads"), py::call_guard<py::gil_scoped_release>(),
      "Leave-one-group-out predictions (group order, m x n_alphas v, alpha-major) for a grid of alphas from one "
      "eigendecomposition.");
}
