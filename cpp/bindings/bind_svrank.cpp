// SVRank: the O(m log m) pair-loss oracle and the cutting-plane solvers.  Arrays arrive validated
// and in group order from python/fastrank/_svrank.py, with the GroupIndex (order, offsets).
#include <pybind11/eigen.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <utility>

#include "fastrank/errors.hpp"
#include "fastrank/svrank.hpp"
#include "groups_arg.hpp"

namespace py = pybind11;
using namespace fastrank;

namespace {

SvrankOptions make_options(double C, double eps, double tol, Index max_iter, int n_threads) {
  SvrankOptions o;
  o.C = C;
  o.eps = eps;
  o.tol = tol;
  o.max_iter = max_iter;
  o.n_threads = n_threads;
  return o;
}

py::tuple pack(SvrankResult&& r) {
  Vector history = Eigen::Map<const Vector>(r.gap_history.data(), static_cast<Index>(r.gap_history.size()));
  return py::make_tuple(std::move(r.coef), r.n_iter, r.converged, r.objective, r.lower_bound, std::move(history));
}

}  // namespace

void bind_svrank(py::module_& m) {
  m.def(
      "svrank_pair_loss",
      [](const Vector& r, IndexVectorCRef order, IndexVectorCRef offsets, double eps, int n_threads) {
        const GroupIndex gi = bindings::group_index(order, offsets, r.size());
        Vector g(r.size());
        double L;
        {
          py::gil_scoped_release release;
          L = svrank_pair_loss(r.data(), r.size(), gi.offsets.data(), gi.n_groups(), eps, g.data(), n_threads);
        }
        return std::make_pair(L, std::move(g));
      },
      py::arg("r"), py::arg("order"), py::arg("offsets"), py::arg("eps"), py::arg("n_threads"),
      "sum over ordered pairs inside groups of max(0, |r_j - r_i| - eps) and its subgradient in r. "
      "Returns (loss, g).");
  m.def(
      "svrank_squared_pair_loss",
      [](const Vector& r, IndexVectorCRef order, IndexVectorCRef offsets, double eps, int n_threads,
         std::optional<Vector> v) {
        const GroupIndex gi = bindings::group_index(order, offsets, r.size());
        require(!v || v->size() == r.size(), "svrank: v and r have different lengths");
        Vector g(r.size()), hv(v ? r.size() : 0);
        double L;
        {
          py::gil_scoped_release release;
          L = svrank_squared_pair_loss(r.data(), r.size(), gi.offsets.data(), gi.n_groups(), eps, g.data(),
                                       v ? v->data() : nullptr, v ? hv.data() : nullptr, n_threads);
        }
        return py::make_tuple(L, std::move(g), v ? py::cast(std::move(hv)) : py::none());
      },
      py::arg("r"), py::arg("order"), py::arg("offsets"), py::arg("eps"), py::arg("n_threads"),
      py::arg("v") = py::none(),
      "sum over ordered pairs inside groups of max(0, |r_j - r_i| - eps)^2, its gradient in r and (v given) "
      "the generalised Hessian times v. Returns (loss, g, Hv or None).");
  m.def(
      "svrank_linear_oracle",
      [](RowMatrixCRef X, VectorCRef y, VectorCRef w, IndexVectorCRef order, IndexVectorCRef offsets, double C,
         double eps, int n_threads) {
        const GroupIndex gi = bindings::group_index(order, offsets, X.rows());
        Vector grad;
        double R;
        {
          py::gil_scoped_release release;
          R = svrank_linear_oracle(X, y, w, gi.offsets, C, eps, grad, n_threads);
        }
        return std::make_pair(R, std::move(grad));
      },
      py::arg("X").noconvert(), py::arg("y").noconvert(), py::arg("w").noconvert(), py::arg("order"),
      py::arg("offsets"), py::arg("C"), py::arg("eps"), py::arg("n_threads"),
      "R(w) = C/N * pair loss of Xw - y and its subgradient X^T (C/N) g. Returns (R, grad).");
  m.def(
      "svrank_linear",
      [](RowMatrixCRef X, VectorCRef y, IndexVectorCRef order, IndexVectorCRef offsets, double C, double eps,
         double tol, Index max_iter, int n_threads, std::optional<py::dict> warm) {
        const GroupIndex gi = bindings::group_index(order, offsets, X.rows());
        SvrankResult r;
        SvrankOptions o = make_options(C, eps, tol, max_iter, n_threads);
        if (warm && warm->contains("w0")) {  // in/out: a neighbouring C's solution and cut model
          const char* what = "warm must map w0, planes, deltas and weights to float64 arrays";
          for (const char* key : {"planes", "deltas", "weights"}) require(warm->contains(key), what);
          try {
            o.w0 = (*warm)["w0"].cast<Vector>();
            o.warm_planes = (*warm)["planes"].cast<Matrix>();
            o.warm_deltas = (*warm)["deltas"].cast<Vector>();
            o.warm_weights = (*warm)["weights"].cast<Vector>();
          } catch (const py::cast_error&) {
            throw std::invalid_argument(what);
          }
          const Index n_planes = o.warm_planes.cols();
          require(o.w0.size() == X.cols(), "warm['w0'] must have one entry per feature");
          require(o.warm_planes.rows() == X.rows() && o.warm_deltas.size() == n_planes &&
                      o.warm_weights.size() == n_planes,
                  "warm['planes'] must be (n_rows, n_planes) with one entry of deltas and weights per plane");
        }
        {
          py::gil_scoped_release release;
          r = svrank_linear(X, y, gi.offsets, o);
        }
        if (warm) {
          (*warm)["w0"] = r.coef;
          (*warm)["planes"] = std::move(r.planes);
          (*warm)["deltas"] = std::move(r.deltas);
          (*warm)["weights"] = std::move(r.weights);
        }
        return pack(std::move(r));
      },
      py::arg("X").noconvert(), py::arg("y").noconvert(), py::arg("order"), py::arg("offsets"), py::arg("C"),
      py::arg("eps"), py::arg("tol"), py::arg("max_iter"), py::arg("n_threads"), py::arg("warm") = py::none(),
      "Linear SVRank by cutting planes (warm: a dict carrying w0 and the cut model from C to C, updated). "
      "Returns (w, n_iter, converged, objective, lower_bound, gap_history).");
  m.def(
      "svrank_kernel",
      [](MatrixCRef K, VectorCRef y, IndexVectorCRef order, IndexVectorCRef offsets, double C, double eps, double tol,
         Index max_iter, int n_threads) {
        const GroupIndex gi = bindings::group_index(order, offsets, K.rows());
        SvrankResult r;
        {
          py::gil_scoped_release release;
          r = svrank_kernel(K, y, gi.offsets, make_options(C, eps, tol, max_iter, n_threads));
        }
        return pack(std::move(r));
      },
      py::arg("K").noconvert(), py::arg("y").noconvert(), py::arg("order"), py::arg("offsets"), py::arg("C"),
      py::arg("eps"), py::arg("tol"), py::arg("max_iter"), py::arg("n_threads"),
      "Kernel SVRank (f = K beta) by cutting planes. Returns (beta, n_iter, converged, objective, lower_bound, "
      "gap_history).");
  m.def(
      "simplex_qp",
      [](MatrixCRef Q, VectorCRef b, Vector lam) {
        require(b.size() > 0, "b must have at least one entry (the simplex of no planes is empty)");
        double v = simplex_qp(Q, b, lam);
        return std::make_pair(v, std::move(lam));
      },
      py::arg("Q"), py::arg("b"), py::arg("lam"),
      "max b^T l - 1/4 l^T Q l over the simplex, warm-started from lam. Returns (value, l).");
}
