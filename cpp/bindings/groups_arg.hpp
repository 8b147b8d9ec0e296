// The one boundary convention for query groups: every binding that takes groups takes `order` and
// `offsets`, the int64 arrays of fastrank._validation.group_index (read in place when contiguous
// int64), validated once into a GroupIndex.  Per-group pair weights travel beside them.
#pragma once
#include <optional>

#include "fastrank/errors.hpp"
#include "fastrank/laplacian.hpp"

namespace fastrank::bindings {

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
