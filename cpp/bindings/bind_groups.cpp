// Query groups (fastrank/groups.hpp): the (order, offsets) every group-aware binding takes.
#include <pybind11/eigen.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "fastrank/errors.hpp"
#include "fastrank/groups.hpp"

namespace py = pybind11;
using namespace fastrank;

void bind_groups(py::module_& m) {
  m.def(
      "group_order",
      [](const py::array_t<std::int64_t, py::array::c_style>& codes, Index n_groups) {
        require(codes.ndim() == 1, "codes must be 1-D");
        GroupIndex gi;
        {
          py::gil_scoped_release release;
          gi = GroupIndex::from_codes(codes.data(), codes.shape(0), n_groups);
        }
        return py::make_tuple(std::move(gi.order), std::move(gi.offsets));
      },
      py::arg("codes").noconvert(), py::arg("n_groups"),
      "(order, offsets) of dense group codes 0..n_groups-1 by a stable counting sort, O(m).");
}
