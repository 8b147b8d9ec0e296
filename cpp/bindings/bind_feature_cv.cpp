// Feature-space leave-group-out / leave-pair-out (fastrank/feature_cv.hpp).
#include <pybind11/eigen.h>
#include <pybind11/pybind11.h>

#include "fastrank/feature_cv.hpp"
#include "groups_arg.hpp"

namespace py = pybind11;
using namespace fastrank;

void bind_feature_cv(py::module_& m) {
  m.def(
      "cv_feature_leave_group_out",
      [](RowMatrixCRef Phi, RowMatrixCRef Y, IndexVectorCRef order, IndexVectorCRef offsets, VectorCRef weight,
         double alpha, int n_threads) {
        require(Phi.cols() > 0 && Y.cols() > 0, "Phi and Y must have at least one column");
        const GroupIndex g = bindings::group_index(order, offsets, Phi.rows());
        double rcond = 0.0;
        RowMatrix out = cv::feature_leave_group_out(&rcond, Phi, Y, g.order, g.offsets, weight, alpha, n_threads);
        return std::make_pair(std::move(out), rcond);
      },
      py::arg("Phi").noconvert(), py::arg("Y").noconvert(), py::arg("order"), py::arg("offsets"), py::arg("weight"),
      py::arg("alpha"), py::arg("n_threads"), py::call_guard<py::gil_scoped_release>(),
      "Leave-one-group-out predictions (m, v) in Phi's row order from p x p systems (Woodbury per group), and the "
      "reciprocal condition number of the full-data system.");
  m.def(
      "cv_feature_leave_pair_out",
      [](RowMatrixCRef Phi, RowMatrixCRef Y, IndexVectorCRef order, IndexVectorCRef offsets, VectorCRef weight,
         double alpha, cv::PairMatrixCRef pairs, int n_threads) {
        require(Phi.cols() > 0 && Y.cols() > 0, "Phi and Y must have at least one column");
        const GroupIndex g = bindings::group_index(order, offsets, Phi.rows());
        double rcond = 0.0;
        RowMatrix out = cv::feature_leave_pair_out(&rcond, Phi, Y, g.order, g.offsets, weight, alpha, pairs, n_threads);
        return std::make_pair(std::move(out), rcond);
      },
      py::arg("Phi").noconvert(), py::arg("Y").noconvert(), py::arg("order"), py::arg("offsets"), py::arg("weight"),
      py::arg("alpha"), py::arg("pairs").noconvert(), py::arg("n_threads"), py::call_guard<py::gil_scoped_release>(),
      "Leave-pair-out predictions (n_pairs, 2 v) from p x p systems, pairs positions in order; and the full-data "
      "system's reciprocal condition number.");
  m.def(
      "cv_feature_leave_all_pairs_out",
      [](RowMatrixCRef Phi, RowMatrixCRef Y, IndexVectorCRef order, IndexVectorCRef offsets, VectorCRef weight,
         double alpha, int n_threads) {
        require(Phi.cols() > 0 && Y.cols() > 0, "Phi and Y must have at least one column");
        const GroupIndex g = bindings::group_index(order, offsets, Phi.rows());
        double rcond = 0.0;
        RowMatrix out = cv::feature_leave_all_pairs_out(&rcond, Phi, Y, g.order, g.offsets, weight, alpha, n_threads);
        return std::make_pair(std::move(out), rcond);
      },
      py::arg("Phi").noconvert(), py::arg("Y").noconvert(), py::arg("order"), py::arg("offsets"), py::arg("weight"),
      py::arg("alpha"), py::arg("n_threads"), py::call_guard<py::gil_scoped_release>(),
      "Leave-pair-out predictions (n_pairs, 2 v) of all rows i < j inside each group, lexicographic; and the "
      "full-data system's reciprocal condition number.");
}
