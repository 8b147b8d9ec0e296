// Query groups: the one encoding of "which rows belong together" every group-aware algorithm reads.
//
// `order` lists the caller's rows group by group (a permutation of 0..m-1); group g is
// order[offsets[g] .. offsets[g+1]).  Algorithms that work on group-contiguous data read position
// p of such data as caller row order[p]; algorithms that keep the caller's row order look rows up
// through `order` or through the per-row group of row_groups().  Per-group weights travel beside
// a GroupIndex (see GroupStructure in fastrank/laplacian.hpp), never as a second encoding.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "fastrank/types.hpp"

namespace fastrank {

struct GroupIndex {
  IndexVector order;    // m rows, group by group
  IndexVector offsets;  // n_groups + 1: 0 = offsets[0] <= ... <= offsets[n_groups] = m

  Index n_rows() const { return offsets.size() == 0 ? 0 : offsets[offsets.size() - 1]; }
  Index n_groups() const { return offsets.size() == 0 ? 0 : offsets.size() - 1; }
  Index group_size(Index g) const { return offsets[g + 1] - offsets[g]; }

  // A validated copy of (order, offsets) for m rows, O(m): offsets start at 0, never decrease and
  // end at m; order is a permutation of 0..m-1.  Throws std::invalid_argument otherwise.
  static GroupIndex from_arrays(IndexVectorCRef order, IndexVectorCRef offsets, Index m);
  // Object ranking: every row in one group, identity order.
  static GroupIndex one_group(Index m);
  // From dense group codes 0..n_groups-1 (one per row, each code used): a stable counting sort,
  // O(m + n_groups), so each group lists its rows in increasing order.
  static GroupIndex from_codes(const std::int64_t* codes, Index m, Index n_groups);
  // From integer ids in lo..hi (a modest range: a table of hi - lo + 1 entries): the groups are the
  // distinct ids in increasing order, written to `labels`, and row i's group to codes[i] (both
  // resized); ids -> codes -> (order, offsets) in two passes, O(m + hi - lo), rows stable within a group.
  static GroupIndex from_ids(const std::int64_t* ids, Index m, std::int64_t lo, std::int64_t hi,
                             IndexVector& codes, IndexVector& labels);

  bool is_identity() const;
  // The group of every row, in the caller's row order, O(m).
  std::vector<std::int64_t> row_groups() const;
  // out.row(order[p]) = A.row(p): rows of group-ordered A back in the caller's row order.
  Matrix to_row_order(MatrixCRef A) const;
};

}  // namespace fastrank
