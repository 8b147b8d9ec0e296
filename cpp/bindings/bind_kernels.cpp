#include <pybind11/eigen.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "fastrank/finite.hpp"
#include "fastrank/kernels.hpp"

namespace py = pybind11;
using namespace fastrank;

namespace {
KernelSpec make_spec(int kind, double gamma, double degree, double coef0) {
  KernelSpec s;
  s.type = static_cast<KernelType>(kind);
  s.gamma = gamma;
  s.degree = degree;
  s.coef0 = coef0;
  return s;
}
}  // namespace

void bind_kernels(py::module_& m) {
  m.def(
      "all_finite",
      [](const py::array_t<double, py::array::forcecast>& a, int n_threads) {
        if (!(a.flags() & (py::array::c_style | py::array::f_style)))
          throw std::invalid_argument("all_finite needs a contiguous array");
        const double* p = a.data();
        const Index n = a.size();
        py::gil_scoped_release release;
        return all_finite(p, n, n_threads);
      },
      py::arg("a").noconvert(), py::arg("n_threads"), "Whether every value of a contiguous float64 array is finite.");
  m.def(
      "kernel_train",
      [](int kind, double gamma, double degree, double coef0, RowMatrixCRef X, int n_threads) {
        return kernel_train(make_spec(kind, gamma, degree, coef0), X, n_threads);
      },
      py::arg("kind"), py::arg("gamma"), py::arg("degree"), py::arg("coef0"), py::arg("X").noconvert(),
      py::arg("n_threads"), py::call_guard<py::gil_scoped_release>(),
      "K(X, X) as an (m, m) Fortran-ordered array.");
  m.def(
      "kernel_cross",
      [](int kind, double gamma, double degree, double coef0, RowMatrixCRef Z, RowMatrixCRef X, int n_threads) {
        return kernel_cross(make_spec(kind, gamma, degree, coef0), Z, X, n_threads);
      },
      py::arg("kind"), py::arg("gamma"), py::arg("degree"), py::arg("coef0"), py::arg("Z").noconvert(),
      py::arg("X").noconvert(), py::arg("n_threads"), py::call_guard<py::gil_scoped_release>(),
      "K(Z, X) as a (p, m) Fortran-ordered array.");
  m.def(
      "kernel_cross_rowwise",
      [](int kind, double gamma, double degree, double coef0, RowMatrixCRef Z, RowMatrixCRef X, int n_threads) {
        Matrix out(Z.rows(), X.rows());
        kernel_cross_rowwise(make_spec(kind, gamma, degree, coef0), Z, X, out, n_threads);
        return out;
      },
      py::arg("kind"), py::arg("gamma"), py::arg("degree"), py::arg("coef0"), py::arg("Z").noconvert(),
      py::arg("X").noconvert(), py::arg("n_threads"), py::call_guard<py::gil_scoped_release>(),
      "K(Z, X) (p, m), each value from its two rows alone (as the on-line learners' passes form it).");
  m.def(
      "kernel_predict_rowwise",
      [](int kind, double gamma, double degree, double coef0, RowMatrixCRef Z, RowMatrixCRef X, MatrixCRef coef,
         int n_threads) {
        return kernel_predict_rowwise(make_spec(kind, gamma, degree, coef0), Z, X, coef, n_threads);
      },
      py::arg("kind"), py::arg("gamma"), py::arg("degree"), py::arg("coef0"), py::arg("Z").noconvert(),
      py::arg("X").noconvert(), py::arg("coef"), py::arg("n_threads"), py::call_guard<py::gil_scoped_release>(),
      "K(Z, X) @ coef summed term by term in the order of X's rows (the on-line learners' scores).");
  m.def(
      "kernel_predict",
      [](int kind, double gamma, double degree, double coef0, RowMatrixCRef Z, RowMatrixCRef X, MatrixCRef coef,
         int n_threads) { return kernel_predict(make_spec(kind, gamma, degree, coef0), Z, X, coef, n_threads); },
      py::arg("kind"), py::arg("gamma"), py::arg("degree"), py::arg("coef0"), py::arg("Z").noconvert(),
      py::arg("X").noconvert(), py::arg("coef"), py::arg("n_threads"), py::call_guard<py::gil_scoped_release>(),
      "K(Z, X) @ coef without holding more than a block of K.");
}
