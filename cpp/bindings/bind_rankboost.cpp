#include <pybind11/eigen.h>
#include <pybind11/pybind11.h>

#include "fastrank/errors.hpp"
#include "fastrank/rankboost.hpp"

namespace py = pybind11;
using namespace fastrank;

namespace {
py::tuple to_python(const RankBoostResult& r) {
  auto vec = [](const auto& v) {
    using T = typename std::decay_t<decltype(v)>::value_type;
    return Eigen::Matrix<T, Eigen::Dynamic, 1>(Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, 1>>(v.data(), v.size()));
  };
  return py::make_tuple(vec(r.features), vec(r.thresholds), vec(r.alphas), vec(r.r), vec(r.qdef));
}
}  // namespace

void bind_rankboost(py::module_& m) {
  m.def(
      "rankboost_fit_graded",
      [](RowMatrixCRef X, const IndexVector& block, const IndexVector& group_blocks, const Vector& group_weight,
         Index n_rounds, Index n_thresholds, int n_threads) {
        require(block.size() == X.rows(), "block must have one entry per row");
        require(group_blocks.size() == group_weight.size() + 1, "group_blocks must have n_groups + 1 entries");
        RankBoostResult res;
        {
          py::gil_scoped_release release;
          const RankBoostCandidates cand = rankboost_candidates(X, n_thresholds, n_threads);
          res = rankboost_fit_graded(X, cand, block.data(), group_blocks.data(), group_weight.size(),
                                     group_weight.data(), n_rounds, n_threads);
        }
        return to_python(res);
      },
      py::arg("X").noconvert(), py::arg("block"), py::arg("group_blocks"), py::arg("group_weight"),
      py::arg("n_rounds"), py::arg("n_thresholds"), py::arg("n_threads"),
      "RankBoost on graded feedback (levels inside groups). Returns (features, thresholds, alphas, r, qdef).");
  m.def(
      "rankboost_fit_graph",
      [](RowMatrixCRef X, const IndexVector& head, const IndexVector& tail, Index n_rounds, Index n_thresholds,
         int n_threads) {
        require(head.size() == tail.size(), "head and tail must have the same length");
        RankBoostResult res;
        {
          py::gil_scoped_release release;
          const RankBoostCandidates cand = rankboost_candidates(X, n_thresholds, n_threads);
          res = rankboost_fit_graph(X, cand, head.data(), tail.data(), head.size(), n_rounds, n_threads);
        }
        return to_python(res);
      },
      py::arg("X").noconvert(), py::arg("head"), py::arg("tail"), py::arg("n_rounds"), py::arg("n_thresholds"),
      py::arg("n_threads"),
      "RankBoost on an explicit preference multigraph (head preferred over tail). Returns (features, "
      "thresholds, alphas, r, qdef).");
}
