// Subset-of-regressors RankRLS (eqs. 40-42): decomposition + regularization path.
#include <pybind11/eigen.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <optional>

#include "fastrank/errors.hpp"
#include "fastrank/sparse_rls.hpp"
#include "groups_arg.hpp"

namespace py = pybind11;
using namespace fastrank;

namespace {
using Int64Array = py::array_t<std::int64_t, py::array::c_style>;
using DoubleArray = py::array_t<double, py::array::c_style>;
using MatrixMutRef = Eigen::Ref<Matrix>;

py::tuple path_result(const SubsetDecomposition& d, const DoubleArray& alphas) {
  const Index r = d.U.rows(), v = d.c.cols(), k = alphas.shape(0);
  py::array_t<double> out({k, r, v});
  auto o = out.mutable_unchecked<3>();
  for (Index a = 0; a < k; ++a) {
    const Matrix A = sparse_rls_coef(d, alphas.at(a));
    for (Index i = 0; i < r; ++i)
      for (Index j = 0; j < v; ++j) o(a, i, j) = A(i, j);
  }
  return py::make_tuple(out, d.cholesky, d.sigma, d.rcond);
}
}  // namespace

void bind_sparse_rls(py::module_& m) {
  m.def(
      "sparse_rls_path_groups",
      [](MatrixMutRef KRt, MatrixCRef Y, IndexVectorCRef order, IndexVectorCRef offsets, const Vector& pair_weight,
         MatrixCRef KRR, const DoubleArray& alphas, int n_threads) {
        const GroupStructure groups = bindings::scaled_groups(order, offsets, pair_weight, KRt.rows());
        require(alphas.ndim() == 1 && alphas.shape(0) >= 1, "alphas must be a non-empty 1-D array");
        SubsetDecomposition d;
        {
          py::gil_scoped_release release;
          d = sparse_rls_decompose_groups(KRt, Y, groups, KRR, n_threads);
        }
        return path_result(d, alphas);
      },
      py::arg("KRt").noconvert(), py::arg("Y"), py::arg("order"), py::arg("offsets"),
      py::arg("pair_weight"), py::arg("KRR"), py::arg("alphas"), py::arg("n_threads"),
      "Scoring setting. KRt (m, r) Fortran-ordered is overwritten with S K_R^T. Returns "
      "(coefs (n_alphas, r, v), cholesky_used, eigenvalues, rcond of K_RR).");
  m.def(
      "sparse_rls_path_graph",
      [](MatrixCRef KRt, const Int64Array& head, const Int64Array& tail, const DoubleArray& weight,
         MatrixCRef targets, MatrixCRef KRR, const DoubleArray& alphas, int n_threads) {
        require(alphas.ndim() == 1 && alphas.shape(0) >= 1, "alphas must be a non-empty 1-D array");
        const PreferenceGraph g = PreferenceGraph::from_edges(
            KRt.rows(), Eigen::Map<const IndexVector>(head.data(), head.shape(0)),
            Eigen::Map<const IndexVector>(tail.data(), tail.shape(0)),
            Eigen::Map<const Vector>(weight.data(), weight.shape(0)), targets);
        SubsetDecomposition d;
        {
          py::gil_scoped_release release;
          d = sparse_rls_decompose_graph(KRt, g, KRR, n_threads);
        }
        return path_result(d, alphas);
      },
      py::arg("KRt"), py::arg("head").noconvert(), py::arg("tail").noconvert(), py::arg("weight").noconvert(),
      py::arg("targets"), py::arg("KRR"), py::arg("alphas"), py::arg("n_threads"),
      "Preference-graph setting. Returns (coefs (n_alphas, r, v), cholesky_used, eigenvalues, rcond of K_RR).");
  m.def(
      "sparse_rls_path_gram",
      [](MatrixCRef H, MatrixCRef g, MatrixCRef KRR, const DoubleArray& alphas) {
        require(alphas.ndim() == 1 && alphas.shape(0) >= 1, "alphas must be a non-empty 1-D array");
        SubsetDecomposition d;
        {
          py::gil_scoped_release release;
          d = sparse_rls_decompose_gram(H, g, KRR);
        }
        return path_result(d, alphas);
      },
      py::arg("H"), py::arg("g"), py::arg("KRR"), py::arg("alphas"),
      "From assembled blocks H = K_R^T L K_R (r, r) and g = K_R^T L y (r, v). Returns "
      "(coefs (n_alphas, r, v), cholesky_used, eigenvalues, rcond of K_RR).");
}
