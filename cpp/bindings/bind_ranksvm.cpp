// RankSVM: the pair-free oracle (exposed for tests) and the linear / kernel solvers.  Inputs
// arrive validated from python/fastrank/_ranksvm.py; X, K and the CSR arrays are used without
// copies.
#include <pybind11/eigen.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <optional>

#include "csr_view.hpp"
#include "fastrank/errors.hpp"
#include "fastrank/ranksvm.hpp"
#include "groups_arg.hpp"

namespace py = pybind11;
using namespace fastrank;

namespace {

using DoubleArray = py::array_t<double, py::array::c_style>;

// Groups (y, order, offsets) or a preference graph (head, tail, weight).
PairwiseHingeLoss make_pairs(Index m, const std::optional<Vector>& y, const std::optional<IndexVector>& order,
                             const std::optional<IndexVector>& offsets, const std::optional<IndexVector>& head,
                             const std::optional<IndexVector>& tail, const std::optional<Vector>& weight,
                             const std::optional<Vector>& row_margin) {
  if (y) {
    require(y->size() == m, "y must have one entry per row");
    const std::optional<GroupIndex> g = bindings::optional_group_index(order, offsets, m);
    require(g.has_value(), "targets y need groups (order, offsets)");
    PairwiseHingeLoss P = PairwiseHingeLoss::from_groups(*y, g->order, g->offsets);
    if (row_margin) P.set_row_margins(*row_margin);
    return P;
  }
  require(!row_margin, "per-pair margins y_i - y_j need targets, not a preference graph");
  require(head && tail, "give either (y, order, offsets) or a preference graph (head, tail)");
  const Vector w = weight ? *weight : Vector::Ones(head->size());
  return PairwiseHingeLoss::from_graph(m, *head, *tail, w);
}

RankSvmOptions make_options(double C, int loss, double tol, Index max_iter, int n_threads) {
  require(loss == 0 || loss == 1, "loss code must be 0 (squared hinge) or 1 (hinge)");
  RankSvmOptions o;
  o.C = C;
  o.loss = static_cast<SvmLoss>(loss);
  o.tol = tol;
  o.max_iter = max_iter;
  o.n_threads = n_threads;
  return o;
}

py::dict pack(RankSvmResult&& r) {
  py::dict d;
  d["coef"] = std::move(r.coef);
  d["objective"] = r.objective;
  d["loss"] = r.loss;
  d["n_iter"] = r.n_iter;
  d["n_newton"] = r.n_newton;
  d["n_inner"] = r.n_inner;
  d["converged"] = r.converged;
  d["stalled"] = r.stalled;
  d["criterion"] = r.criterion;
  d["grad0"] = r.grad0;
  return d;
}


}  // namespace

#define FASTRANK_PAIR_ARGS                                                                             \
  py::arg("y") = py::none(), py::arg("order") = py::none(), py::arg("offsets") = py::none(),           \
      py::arg("head") = py::none(), py::arg("tail") = py::none(), py::arg("weight") = py::none(),  \
      py::arg("row_margin") = py::none()
#define FASTRANK_PAIR_PARAMS                                                                             \
  const std::optional<Vector>&y, const std::optional<IndexVector>&order, const std::optional<IndexVector>&offsets, \
      const std::optional<IndexVector>&head, const std::optional<IndexVector>&tail,                      \
      const std::optional<Vector>&weight, const std::optional<Vector>&row_margin

void bind_ranksvm(py::module_& m) {
  m.def(
      "ranksvm_pairwise_loss",
      [](const Vector& f, int loss, int n_threads, FASTRANK_PAIR_PARAMS) {
        PairwiseHingeLoss P = make_pairs(f.size(), y, order, offsets, head, tail, weight, row_margin);
        require(loss == 0 || loss == 1, "loss code must be 0 (squared hinge) or 1 (hinge)");
        Vector grad(f.size());
        double active = 0.0, value;
        {
          py::gil_scoped_release release;
          value = P.evaluate(static_cast<SvmLoss>(loss), f.data(), grad.data(), &active, n_threads);
        }
        return py::make_tuple(value, grad, active, P.n_pairs());
      },
      py::arg("f"), py::arg("loss"), py::arg("n_threads") = 1, FASTRANK_PAIR_ARGS,
      "Pair-free RankSVM loss at scores f: (loss, d loss / d f, active pair weight, number of pairs).");
  m.def(
      "ranksvm_hessian_times",
      [](const Vector& f, const Vector& v, int n_threads, FASTRANK_PAIR_PARAMS) {
        PairwiseHingeLoss P = make_pairs(f.size(), y, order, offsets, head, tail, weight, row_margin);
        require(v.size() == f.size(), "v must have one entry per row");
        Vector out(f.size());
        py::gil_scoped_release release;
        P.evaluate(SvmLoss::SquaredHinge, f.data(), nullptr, nullptr, n_threads);
        P.hessian_times(v.data(), out.data(), n_threads);
        return out;
      },
      py::arg("f"), py::arg("v"), py::arg("n_threads") = 1, FASTRANK_PAIR_ARGS,
      "Generalized Hessian of the squared-hinge pairwise loss at f, times v.");
  m.def(
      "ranksvm_fit_dense",
      [](RowMatrixCRef X, double C, int loss, double tol, Index max_iter, int n_threads, FASTRANK_PAIR_PARAMS,
         const std::optional<Vector>& w0, double grad0) {
        PairwiseHingeLoss P = make_pairs(X.rows(), y, order, offsets, head, tail, weight, row_margin);
        RankSvmOptions o = make_options(C, loss, tol, max_iter, n_threads);
        require(!w0 || w0->size() == X.cols(), "w0 must have one entry per feature");
        if (w0) o.w0 = *w0;
        o.grad0 = grad0;
        RankSvmResult r;
        {
          py::gil_scoped_release release;
          r = ranksvm_dense(X, P, o);
        }
        return pack(std::move(r));
      },
      py::arg("X").noconvert(), py::arg("C"), py::arg("loss"), py::arg("tol"), py::arg("max_iter"),
      py::arg("n_threads"), FASTRANK_PAIR_ARGS, py::arg("w0") = py::none(), py::arg("grad0") = -1.0,
      "Linear RankSVM on dense X (C-contiguous float64); w0: warm start of the squared hinge, grad0: its result's "
      "grad0 for the same X and pairs at another C.");
  m.def(
      "ranksvm_fit_csr",
      [](const DoubleArray& data, const py::array& indices, const py::array& indptr, Index n_rows, Index n_cols,
         double C, int loss, double tol, Index max_iter, int n_threads, FASTRANK_PAIR_PARAMS,
         const std::optional<Vector>& w0, double grad0) {
        require(indices.dtype().is(indptr.dtype()), "CSR indices and indptr must share one dtype");
        PairwiseHingeLoss P = make_pairs(n_rows, y, order, offsets, head, tail, weight, row_margin);
        RankSvmOptions o = make_options(C, loss, tol, max_iter, n_threads);
        require(!w0 || w0->size() == n_cols, "w0 must have one entry per feature");
        if (w0) o.w0 = *w0;
        o.grad0 = grad0;
        RankSvmResult r;
        if (indices.dtype().is(py::dtype::of<std::int32_t>())) {
          const auto X = bindings::csr_view<std::int32_t>(data, indices, indptr, n_rows, n_cols);
          py::gil_scoped_release release;
          r = ranksvm_csr32(X, P, o);
        } else if (indices.dtype().is(py::dtype::of<std::int64_t>())) {
          const auto X = bindings::csr_view<std::int64_t>(data, indices, indptr, n_rows, n_cols);
          py::gil_scoped_release release;
          r = ranksvm_csr64(X, P, o);
        } else {
          throw std::invalid_argument("CSR indices must be int32 or int64");
        }
        return pack(std::move(r));
      },
      py::arg("data").noconvert(), py::arg("indices"), py::arg("indptr"), py::arg("n_rows"), py::arg("n_cols"),
      py::arg("C"), py::arg("loss"), py::arg("tol"), py::arg("max_iter"), py::arg("n_threads"), FASTRANK_PAIR_ARGS,
      py::arg("w0") = py::none(), py::arg("grad0") = -1.0,
      "Linear RankSVM on CSR X (zero copy); w0, grad0: warm start of the squared hinge (as ranksvm_fit_dense).");
  m.def(
      "ranksvm_fit_kernel",
      [](MatrixCRef K, double C, int loss, double tol, Index max_iter, int n_threads, FASTRANK_PAIR_PARAMS) {
        PairwiseHingeLoss P = make_pairs(K.rows(), y, order, offsets, head, tail, weight, row_margin);
        const RankSvmOptions o = make_options(C, loss, tol, max_iter, n_threads);
        RankSvmResult r;
        {
          py::gil_scoped_release release;
          r = ranksvm_kernel(K, P, o);
        }
        return pack(std::move(r));
      },
      py::arg("K").noconvert(), py::arg("C"), py::arg("loss"), py::arg("tol"), py::arg("max_iter"),
      py::arg("n_threads"), FASTRANK_PAIR_ARGS,
      "Kernel RankSVM (representer form) on a symmetric Fortran-ordered kernel matrix.");
  m.def(
      "ranksvm_oracle",
      [](const Vector& y, IndexVectorCRef order, IndexVectorCRef offsets) {
        const GroupIndex g = bindings::group_index(order, offsets, y.size());
        auto P = std::make_shared<PairwiseHingeLoss>(PairwiseHingeLoss::from_groups(y, g.order, g.offsets));
        return py::cpp_function(
            [P](RowMatrixCRef X, const Vector& w, int loss, int n_threads) {
              require(loss == 0 || loss == 1, "loss must be 0 (squared hinge) or 1 (hinge)");
              Vector grad;
              double value;
              {
                py::gil_scoped_release release;
                value = ranksvm_dense_loss_gradient(X, *P, static_cast<SvmLoss>(loss), w, grad, n_threads);
              }
              return py::make_tuple(value, grad);
            },
            py::arg("X").noconvert(), py::arg("w"), py::arg("loss"), py::arg("n_threads") = 1);
      },
      py::arg("y"), py::arg("order"), py::arg("offsets"),
      "Benchmark helper: a callable (X, w, loss, n_threads) -> (loss, X^T grad) with the group "
      "structure built once.");
}
