#include <pybind11/eigen.h>
#include <pybind11/pybind11.h>

#include <string>

#include "fastrank/errors.hpp"
#include "fastrank/rankboost.hpp"
#include "groups_arg.hpp"

namespace py = pybind11;
using namespace fastrank;

namespace {
py::tuple to_python(const RankBoostResult& r) {
  auto vec = [](const auto& v) {
    using T = typename std::decay_t<decltype(v)>::value_type;
    return Eigen::Matrix<T, Eigen::Dynamic, 1>(Eigen::Map<const Eigen::Matrix<T, Eigen::Dynamic, 1>>(v.data(), v.size()));
  };
  return py::make_tuple(vec(r.features), vec(r.thresholds), vec(r.alphas), vec(r.r), vec(r.qdef), vec(r.eps_plus),
                        vec(r.eps_minus), vec(r.z));
}

// alpha_rule "exact" or "freund"; on_round: None or a Python callable taking the rounds done,
// called between rounds with the GIL held.
RankBoostRule make_rule(const std::string& alpha_rule, double smoothing, const py::object& on_round) {
  require(alpha_rule == "exact" || alpha_rule == "freund", "alpha_rule must be 'exact' or 'freund'");
  require(smoothing > 0.0, "smoothing must be > 0");
  RankBoostRule rule;
  rule.exact_alpha = alpha_rule == "exact";
  rule.smoothing = smoothing;
  if (!on_round.is_none())
    rule.on_round = [on_round](Index t) {
      py::gil_scoped_acquire hold;
      on_round(t);
    };
  return rule;
}
}  // namespace

void bind_rankboost(py::module_& m) {
  m.def(
      "rankboost_fit_graded",
      [](RowMatrixCRef X, VectorCRef y, IndexVectorCRef order, IndexVectorCRef offsets, VectorCRef group_weight,
         Index n_rounds, Index n_thresholds, int n_threads, const std::string& alpha_rule, double smoothing,
         const py::object& on_round) {
        require(y.size() == X.rows(), "y must have one entry per row");
        const GroupIndex groups = bindings::group_index(order, offsets, X.rows());
        require(group_weight.size() == groups.n_groups(), "group_weight must have one entry per group");
        const RankBoostRule rule = make_rule(alpha_rule, smoothing, on_round);
        RankBoostResult res;
        {
          py::gil_scoped_release release;
          const RankBoostCandidates cand = rankboost_candidates(X, n_thresholds, n_threads);
          res = rankboost_fit_graded(X, cand, y.data(), groups, group_weight.data(), n_rounds, n_threads, rule);
        }
        return to_python(res);
      },
      py::arg("X").noconvert(), py::arg("y"), py::arg("order"), py::arg("offsets"), py::arg("group_weight"),
      py::arg("n_rounds"), py::arg("n_thresholds"), py::arg("n_threads"), py::arg("alpha_rule") = "freund",
      py::arg("smoothing") = 1e-10, py::arg("on_round") = py::none(),
      "RankBoost on graded feedback (levels inside groups). Returns (features, thresholds, alphas, r, qdef, "
      "eps_plus, eps_minus, z).");
  m.def(
      "rankboost_fit_graph",
      [](RowMatrixCRef X, const IndexVector& head, const IndexVector& tail, Index n_rounds, Index n_thresholds,
         int n_threads, const std::string& alpha_rule, double smoothing, const py::object& on_round) {
        require(head.size() == tail.size(), "head and tail must have the same length");
        const RankBoostRule rule = make_rule(alpha_rule, smoothing, on_round);
        RankBoostResult res;
        {
          py::gil_scoped_release release;
          const RankBoostCandidates cand = rankboost_candidates(X, n_thresholds, n_threads);
          res = rankboost_fit_graph(X, cand, head.data(), tail.data(), head.size(), n_rounds, n_threads, rule);
        }
        return to_python(res);
      },
      py::arg("X").noconvert(), py::arg("head"), py::arg("tail"), py::arg("n_rounds"), py::arg("n_thresholds"),
      py::arg("n_threads"), py::arg("alpha_rule") = "freund", py::arg("smoothing") = 1e-10,
      py::arg("on_round") = py::none(),
      "RankBoost on an explicit preference multigraph (head preferred over tail). Returns (features, "
      "thresholds, alphas, r, qdef, eps_plus, eps_minus, z).");
}
