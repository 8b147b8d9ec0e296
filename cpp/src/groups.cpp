#include "fastrank/groups.hpp"

#include <cstdint>
#include <string>

#include "fastrank/errors.hpp"
#include "fastrank/huge_pages.hpp"

namespace fastrank {

namespace {

// An uninitialised vector of n entries advised onto huge pages.
IndexVector large_vector(Index n) {
  IndexVector v(n);
  advise_huge_pages(v.data(), static_cast<std::size_t>(n) * sizeof(std::int64_t));
  return v;
}

}  // namespace

GroupIndex GroupIndex::from_arrays(IndexVectorCRef order, IndexVectorCRef offsets, Index m) {
  require(order.size() == m,
          "groups: order has " + std::to_string(order.size()) + " entries for " + std::to_string(m) + " rows");
  require(offsets.size() >= 2 && offsets[0] == 0, "groups: offsets must start at 0 and name at least one group");
  require(offsets[offsets.size() - 1] == m, "groups: offsets must end at the number of rows");
  for (Index g = 0; g + 1 < offsets.size(); ++g)
    require(offsets[g + 1] >= offsets[g], "groups: offsets must be non-decreasing");
  std::vector<char> seen(static_cast<size_t>(m), 0);
  for (Index p = 0; p < m; ++p) {
    const std::int64_t i = order[p];
    require(i >= 0 && i < m && !seen[static_cast<size_t>(i)], "groups: order must be a permutation of the rows");
    seen[static_cast<size_t>(i)] = 1;
  }
  GroupIndex gi;
  gi.order = order;
  gi.offsets = offsets;
  return gi;
}

GroupIndex GroupIndex::from_codes(const std::int64_t* codes, Index m, Index n_groups) {
  require(n_groups >= 1, "groups: at least one group");
  GroupIndex gi;
  gi.offsets = IndexVector::Zero(n_groups + 1);
  for (Index i = 0; i < m; ++i) {
    require(codes[i] >= 0 && codes[i] < n_groups, "groups: codes must lie in 0..n_groups-1");
    ++gi.offsets[codes[i] + 1];
  }
  for (Index g = 0; g < n_groups; ++g) {
    require(gi.offsets[g + 1] > 0, "groups: every code 0..n_groups-1 must be used");
    gi.offsets[g + 1] += gi.offsets[g];
  }
  IndexVector next = gi.offsets.head(n_groups);
  gi.order = large_vector(m);
  for (Index i = 0; i < m; ++i) gi.order[next[codes[i]]++] = i;
  return gi;
}

GroupIndex GroupIndex::from_ids(const std::int64_t* ids, Index m, std::int64_t lo, std::int64_t hi,
                                 IndexVector& codes, IndexVector& labels) {
  require(m >= 1 && hi >= lo, "groups: at least one row and lo <= hi");
  // the table slot of an id, lo + v -> v, in unsigned arithmetic (ids outside lo..hi land beyond the table)
  const auto slot = [lo](std::int64_t id) { return static_cast<std::uint64_t>(id) - static_cast<std::uint64_t>(lo); };
  const std::uint64_t span = slot(hi) + 1;
  require(span <= static_cast<std::uint64_t>(4 * m + 1024), "groups: id range too wide for a table");
  // count[v] rows with id lo + v, then code[v] = rank of id lo + v among the ids present
  IndexVector count = IndexVector::Zero(static_cast<Index>(span));
  for (Index i = 0; i < m; ++i) {
    const std::uint64_t v = slot(ids[i]);
    require(v < span, "groups: ids must lie in lo..hi");
    ++count[static_cast<Index>(v)];
  }
  Index n_groups = 0;
  for (Index v = 0; v < count.size(); ++v) n_groups += count[v] > 0;
  GroupIndex gi;
  gi.offsets.resize(n_groups + 1);
  gi.offsets[0] = 0;
  labels.resize(n_groups);
  IndexVector& code = count;  // reused: count -> code, after the sizes are read into offsets
  for (Index v = 0, g = 0; v < code.size(); ++v) {
    if (code[v] == 0) continue;
    gi.offsets[g + 1] = gi.offsets[g] + code[v];
    labels[g] = lo + static_cast<std::int64_t>(v);
    code[v] = g++;
  }
  IndexVector next = gi.offsets.head(n_groups);
  gi.order = large_vector(m);
  codes = large_vector(m);
  for (Index i = 0; i < m; ++i) {
    const std::int64_t c = code[static_cast<Index>(slot(ids[i]))];
    codes[i] = c;
    gi.order[next[c]++] = i;
  }
  return gi;
}

GroupIndex GroupIndex::one_group(Index m) {
  GroupIndex gi;
  gi.order = large_vector(m);
  for (Index i = 0; i < m; ++i) gi.order[i] = i;
  gi.offsets.resize(2);
  gi.offsets << 0, m;
  return gi;
}

bool GroupIndex::is_identity() const {
  for (Index p = 0; p < order.size(); ++p)
    if (order[p] != p) return false;
  return true;
}

std::vector<std::int64_t> GroupIndex::row_groups() const {
  std::vector<std::int64_t> group(static_cast<size_t>(n_rows()));
  for (Index g = 0; g < n_groups(); ++g)
    for (Index p = offsets[g]; p < offsets[g + 1]; ++p) group[static_cast<size_t>(order[p])] = g;
  return group;
}

Matrix GroupIndex::to_row_order(MatrixCRef A) const {
  require(A.rows() == order.size(), "groups: row count mismatch");
  Matrix out(A.rows(), A.cols());
  for (Index j = 0; j < A.cols(); ++j)
    for (Index p = 0; p < A.rows(); ++p) out(order[p], j) = A(p, j);
  return out;
}

}  // namespace fastrank
