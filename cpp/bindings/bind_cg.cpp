// Conjugate-gradient RankRLS on CSR (zero copy over SciPy's data/indices/indptr) or dense X.
#include <pybind11/eigen.h>
#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "fastrank/cg.hpp"
#include "csr_view.hpp"
#include "fastrank/errors.hpp"
#include "groups_arg.hpp"

namespace py = pybind11;
using namespace fastrank;

namespace {

using DoubleArray = py::array_t<double, py::array::c_style>;
using Int64Array = py::array_t<std::int64_t, py::array::c_style>;



// The implicit Laplacian: groups (order, offsets) or a preference graph (head, tail, weight, targets).
RankingLaplacian make_laplacian(Index m, const std::optional<IndexVector>& order,
                                const std::optional<IndexVector>& offsets, const std::optional<Vector>& pair_weight,
                                const std::optional<Int64Array>& head, const std::optional<Int64Array>& tail,
                                const std::optional<DoubleArray>& weight, const std::optional<RowMatrix>& targets) {
  if (std::optional<GroupIndex> groups = bindings::optional_group_index(order, offsets, m)) {
    const Index q = groups->n_groups();
    return RankingLaplacian::groups(std::move(*groups), pair_weight ? *pair_weight : Vector::Ones(q));
  }
  require(head && tail && weight && targets, "give either groups (order, offsets) or a preference graph");
  const Index l = head->shape(0);
  PreferenceGraph g = PreferenceGraph::from_edges(m, Eigen::Map<const IndexVector>(head->data(), l),
                                                  Eigen::Map<const IndexVector>(tail->data(), tail->shape(0)),
                                                  Eigen::Map<const Vector>(weight->data(), weight->shape(0)), *targets);
  return RankingLaplacian::preferences(std::move(g));
}

CgCallback wrap_callback(const py::object& cb) {
  if (cb.is_none()) return CgCallback();
  return [cb](Index iter, const Vector& rel) -> bool {
    py::gil_scoped_acquire gil;
    py::object out = cb(iter, py::array_t<double>(rel.size(), rel.data()));
    return !out.is_none() && out.cast<bool>();
  };
}

py::tuple pack(CgResult&& r) {
  return py::make_tuple(std::move(r.coef), std::move(r.n_iter), r.converged.cast<bool>().eval(),
                        std::move(r.residual_history), std::move(r.rhs_norm));
}

CgOptions make_options(double alpha, double tol, Index max_iter, bool jacobi, int n_threads, bool transpose_copy,
                       bool fixed_iterations) {
  CgOptions o;
  o.alpha = alpha;
  o.tol = tol;
  o.max_iter = max_iter;
  o.jacobi = jacobi;
  o.n_threads = n_threads;
  o.transpose_copy = transpose_copy;
  o.fixed_iterations = fixed_iterations;
  return o;
}

}  // namespace

void bind_cg(py::module_& m) {
  m.def(
      "cg_rankrls_csr",
      [](const DoubleArray& data, const py::array& indices, const py::array& indptr, Index n_rows, Index n_cols,
         const RowMatrix& Y, const std::optional<IndexVector>& order, const std::optional<IndexVector>& offsets,
         const std::optional<Vector>& pair_weight,
         const std::optional<Int64Array>& head, const std::optional<Int64Array>& tail,
         const std::optional<DoubleArray>& weight, const std::optional<RowMatrix>& targets,
         const std::optional<RowMatrix>& x0, double alpha, double tol, Index max_iter, bool jacobi, int n_threads,
         bool transpose_copy, bool fixed_iterations, const py::object& callback) {
        require(indices.dtype().is(indptr.dtype()), "CSR indices and indptr must share one dtype");
        RankingLaplacian L = make_laplacian(n_rows, order, offsets, pair_weight, head, tail, weight, targets);
        const CgOptions o = make_options(alpha, tol, max_iter, jacobi, n_threads, transpose_copy, fixed_iterations);
        const CgCallback cb = wrap_callback(callback);
        const RowMatrix* w0 = x0 ? &*x0 : nullptr;
        CgResult r;
        if (bindings::is_int32(indices)) {
          const auto X = bindings::csr_view<std::int32_t>(data, indices, indptr, n_rows, n_cols);
          py::gil_scoped_release release;
          r = cg_rankrls_csr32(X, L, Y, w0, o, cb);
        } else if (bindings::is_int64(indices)) {
          const auto X = bindings::csr_view<std::int64_t>(data, indices, indptr, n_rows, n_cols);
          py::gil_scoped_release release;
          r = cg_rankrls_csr64(X, L, Y, w0, o, cb);
        } else {
          throw std::invalid_argument("CSR indices must be int32 or int64");
        }
        return pack(std::move(r));
      },
      py::arg("data").noconvert(), py::arg("indices"), py::arg("indptr"), py::arg("n_rows"), py::arg("n_cols"),
      py::arg("Y"), py::arg("order") = py::none(), py::arg("offsets") = py::none(), py::arg("pair_weight") = py::none(),
      py::arg("head").noconvert() = py::none(), py::arg("tail").noconvert() = py::none(),
      py::arg("weight").noconvert() = py::none(), py::arg("targets") = py::none(), py::arg("x0") = py::none(),
      py::arg("alpha") = 1.0, py::arg("tol") = 1e-6, py::arg("max_iter") = 1000, py::arg("jacobi") = false,
      py::arg("n_threads") = 1, py::arg("transpose_copy") = false, py::arg("fixed_iterations") = false,
      py::arg("callback") = py::none(),
      "Primal CG RankRLS on CSR X (zero copy). Returns (coef (n, v), n_iter (v,), converged (v,), "
      "relative residual history (k+1, v), ||X^T b|| (v,)).");

  m.def(
      "cg_rankrls_dense",
      [](RowMatrixCRef X, const RowMatrix& Y, const std::optional<IndexVector>& order,
         const std::optional<IndexVector>& offsets, const std::optional<Vector>& pair_weight,
         const std::optional<Int64Array>& head, const std::optional<Int64Array>& tail,
         const std::optional<DoubleArray>& weight, const std::optional<RowMatrix>& targets,
         const std::optional<RowMatrix>& x0, double alpha, double tol, Index max_iter, bool jacobi, int n_threads,
         const py::object& callback) {
        require(X.cols() > 0 && Y.cols() > 0, "X and Y must have at least one column");
        RankingLaplacian L = make_laplacian(X.rows(), order, offsets, pair_weight, head, tail, weight, targets);
        const CgOptions o = make_options(alpha, tol, max_iter, jacobi, n_threads, false, false);
        const CgCallback cb = wrap_callback(callback);
        const RowMatrix* w0 = x0 ? &*x0 : nullptr;
        CgResult r;
        {
          py::gil_scoped_release release;
          r = cg_rankrls_dense(X, L, Y, w0, o, cb);
        }
        return pack(std::move(r));
      },
      py::arg("X").noconvert(), py::arg("Y"), py::arg("order") = py::none(), py::arg("offsets") = py::none(),
      py::arg("pair_weight") = py::none(), py::arg("head").noconvert() = py::none(), py::arg("tail").noconvert() = py::none(),
      py::arg("weight").noconvert() = py::none(), py::arg("targets") = py::none(), py::arg("x0") = py::none(),
      py::arg("alpha") = 1.0, py::arg("tol") = 1e-6, py::arg("max_iter") = 1000, py::arg("jacobi") = false,
      py::arg("n_threads") = 1, py::arg("callback") = py::none(), "Primal CG RankRLS on dense X.");

  m.def(
      "cg_jacobi_diagonal",
      [](const py::object& X, Index n_rows, Index n_cols, const std::optional<IndexVector>& order,
         const std::optional<IndexVector>& offsets, const std::optional<Vector>& pair_weight,
         const std::optional<Int64Array>& head, const std::optional<Int64Array>& tail,
         const std::optional<DoubleArray>& weight) -> Vector {
        std::optional<RowMatrix> targets;
        if (head) targets = RowMatrix::Zero(head->shape(0), 1);
        RankingLaplacian L = make_laplacian(n_rows, order, offsets, pair_weight, head, tail, weight, targets);
        if (py::isinstance<py::tuple>(X)) {
          py::tuple t = X.cast<py::tuple>();
          DoubleArray data = t[0].cast<DoubleArray>();
          py::array indices = t[1].cast<py::array>(), indptr = t[2].cast<py::array>();
          if (bindings::is_int32(indices)) return cg_jacobi_diagonal_csr32(bindings::csr_view<std::int32_t>(data, indices, indptr, n_rows, n_cols), L);
          return cg_jacobi_diagonal_csr64(bindings::csr_view<std::int64_t>(data, indices, indptr, n_rows, n_cols), L);
        }
        RowMatrix D = X.cast<RowMatrix>();
        return cg_jacobi_diagonal_dense(D, L);
      },
      py::arg("X"), py::arg("n_rows"), py::arg("n_cols"), py::arg("order") = py::none(), py::arg("offsets") = py::none(),
      py::arg("pair_weight") = py::none(), py::arg("head") = py::none(), py::arg("tail") = py::none(),
      py::arg("weight") = py::none(), "diag(X^T L X); X is (data, indices, indptr) or a dense array.");
}
