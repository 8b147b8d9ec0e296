// Query groups (fastrank/groups.hpp): _core.GroupIndex, built once from group ids or codes; its
// read-only arrays are the (order, offsets) every group-aware binding takes (groups_arg.hpp).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "fastrank/errors.hpp"
#include "fastrank/groups.hpp"
#include "groups_arg.hpp"

namespace py = pybind11;
using namespace fastrank;
using bindings::BoundGroupIndex;

namespace {

using I64Arr = py::array_t<std::int64_t, py::array::c_style>;

// A read-only int64 view of v that keeps `owner` (the _core.GroupIndex holding v) alive.
py::array readonly_view(const IndexVector& v, py::handle owner) {
  py::array a(py::dtype::of<std::int64_t>(), {v.size()}, {static_cast<py::ssize_t>(sizeof(std::int64_t))}, v.data(),
              owner);
  py::detail::array_proxy(a.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
  return a;
}

const BoundGroupIndex& bound(const py::object& self) { return self.cast<const BoundGroupIndex&>(); }

const std::int64_t* vector_data(const I64Arr& a, const char* name) {
  require(a.ndim() == 1 && a.shape(0) >= 1, std::string(name) + " must be 1-D with at least one row");
  return a.data();
}

}  // namespace

void bind_groups(py::module_& m) {
  py::class_<BoundGroupIndex>(m, "GroupIndex",
                              "Query groups, validated once: read-only int64 arrays order (rows group by group), "
                              "offsets (group g is order[offsets[g]:offsets[g+1]]), codes (the group of every "
                              "row; empty from one_group) and labels (the group ids, or 0..n_groups-1 when built "
                              "from codes).")
      .def_static(
          "from_ids",
          [](const I64Arr& ids, std::int64_t lo, std::int64_t hi) {
            const std::int64_t* p = vector_data(ids, "ids");
            BoundGroupIndex b;
            {
              py::gil_scoped_release release;
              b.index = GroupIndex::from_ids(p, ids.shape(0), lo, hi, b.row_group, b.labels);
            }
            return b;
          },
          py::arg("ids").noconvert(), py::arg("lo"), py::arg("hi"),
          "Groups of integer ids in lo..hi (hi - lo at most 4 m + 1024): labels the distinct ids in increasing "
          "order; one pass to count, one to code and place every row, O(m + hi - lo).")
      .def_static(
          "from_codes",
          [](const I64Arr& codes, Index n_groups) {
            const std::int64_t* p = vector_data(codes, "codes");
            // every group is used, so there are at most m (and n_groups + 1 offsets cannot overflow)
            require(n_groups >= 0 && n_groups <= codes.shape(0), "n_groups must lie in [0, len(codes)]");
            BoundGroupIndex b;
            {
              py::gil_scoped_release release;
              b.index = GroupIndex::from_codes(p, codes.shape(0), n_groups);
              b.row_group = Eigen::Map<const IndexVector>(p, codes.shape(0));
              b.labels = IndexVector::LinSpaced(n_groups, 0, n_groups - 1);
            }
            return b;
          },
          py::arg("codes").noconvert(), py::arg("n_groups"),
          "Groups of dense codes 0..n_groups-1, each used: a stable counting sort, O(m + n_groups).")
      .def_static(
          "one_group",
          [](Index n_rows) {
            require(n_rows >= 0, "n_rows must be >= 0");
            BoundGroupIndex b;
            b.index = GroupIndex::one_group(n_rows);  // codes stay empty: every row is in group 0
            b.labels = IndexVector::Zero(1);
            return b;
          },
          py::arg("n_rows"), "Every row in one group, identity order.")
      .def_property_readonly("order", [](py::object self) { return readonly_view(bound(self).index.order, self); })
      .def_property_readonly("offsets", [](py::object self) { return readonly_view(bound(self).index.offsets, self); })
      .def_property_readonly("codes", [](py::object self) { return readonly_view(bound(self).row_group, self); })
      .def_property_readonly("labels", [](py::object self) { return readonly_view(bound(self).labels, self); });
}
