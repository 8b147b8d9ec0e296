// The one boundary convention for query groups: every binding that takes groups takes `order` and
// `offsets`, the int64 arrays of fastrank._validation.group_index: read-only views of a
// _core.GroupIndex built (and so validated) once by C++.  GroupsArg reads the object behind such
// views in place, with no copy and no check (the measures, called once per score); group_index and
// scaled_groups validate a copy of any (order, offsets), O(m) beside a learner's fit.  Per-group
// pair weights travel beside them.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "fastrank/errors.hpp"
#include "fastrank/laplacian.hpp"

namespace fastrank::bindings {

namespace py = pybind11;

// _core.GroupIndex: a GroupIndex with the group of every row (row_group[i], the codes it was built
// from; empty for one group) and the group labels (the distinct integer ids, or 0..n_groups-1).
// Immutable once built.
struct BoundGroupIndex {
  GroupIndex index;
  IndexVector row_group;
  IndexVector labels;
};

// The BoundGroupIndex whose read-only views `order` and `offsets` are, or nullptr.
inline const BoundGroupIndex* bound_group_index(py::handle order, py::handle offsets) {
  if (!py::isinstance<py::array>(order) || !py::isinstance<py::array>(offsets)) return nullptr;
  const auto* o = py::detail::array_proxy(order.ptr());
  const auto* s = py::detail::array_proxy(offsets.ptr());
  if (o->base == nullptr || o->base != s->base || !py::isinstance<BoundGroupIndex>(o->base)) return nullptr;
  const auto& b = py::handle(o->base).cast<const BoundGroupIndex&>();
  const auto is_view = [](const auto* a, const IndexVector& v) {
    return a->nd == 1 && a->dimensions[0] == v.size() && a->strides[0] == sizeof(std::int64_t) &&
           reinterpret_cast<const std::int64_t*>(a->data) == v.data();
  };
  return is_view(o, b.index.order) && is_view(s, b.index.offsets) ? &b : nullptr;
}

// The GroupIndex of (order, offsets) for m rows: the _core.GroupIndex behind them, or a validated copy.
class GroupsArg {
 public:
  GroupsArg(py::handle order, py::handle offsets, Index m) : bound_(bound_group_index(order, offsets)) {
    if (bound_ != nullptr) {
      require(bound_->index.n_rows() == m, "groups: the group index has " + std::to_string(bound_->index.n_rows()) +
                                               " rows for " + std::to_string(m) + " rows of data");
      return;
    }
    const auto o = py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>::ensure(order);
    const auto s = py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>::ensure(offsets);
    require(o && s && o.ndim() == 1 && s.ndim() == 1, "groups: order and offsets must be 1-D integer arrays");
    own_ = GroupIndex::from_arrays(Eigen::Map<const IndexVector>(o.data(), o.shape(0)),
                                   Eigen::Map<const IndexVector>(s.data(), s.shape(0)), m);
  }
  const GroupIndex& index() const { return bound_ != nullptr ? bound_->index : *own_; }
  // The group of every row (kept by a _core.GroupIndex, else derived, O(m)), nullptr for one group; no
  // GIL needed.
  const std::int64_t* row_group_if_several() {
    if (index().n_groups() <= 1) return nullptr;
    if (bound_ != nullptr) return bound_->row_group.data();
    if (rows_.empty()) rows_ = own_->row_groups();
    return rows_.data();
  }

 private:
  const BoundGroupIndex* bound_;
  std::optional<GroupIndex> own_;
  std::vector<std::int64_t> rows_;
};

inline GroupIndex group_index(IndexVectorCRef order, IndexVectorCRef offsets, Index m) {
  return GroupIndex::from_arrays(order, offsets, m);
}

// Bindings that take either groups or a preference graph: groups when `order` and `offsets` are given.
inline std::optional<GroupIndex> optional_group_index(const std::optional<IndexVector>& order,
                                                      const std::optional<IndexVector>& offsets, Index m) {
  require(order.has_value() == offsets.has_value(), "groups need both order and offsets");
  if (!order) return std::nullopt;
  return GroupIndex::from_arrays(*order, *offsets, m);
}

// Groups with the scale s_q = sqrt(c_q n_q) of S for group-ordered data of m rows.
inline GroupStructure scaled_groups(IndexVectorCRef order, IndexVectorCRef offsets, VectorCRef pair_weight, Index m) {
  return GroupStructure::from_index(GroupIndex::from_arrays(order, offsets, m), pair_weight);
}

}  // namespace fastrank::bindings
