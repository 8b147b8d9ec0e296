// Ranking measures: pair counting in O(m log m) (the sort is done once, by the caller) and
// per-query NDCG.  Pure C++17; the Python layer (fastrank.metrics) validates inputs, sorts with
// numpy's argsort (SIMD-accelerated where available) and reduces the per-group statistics.
//
// Pair statistics of a labelled score vector (y, f), computed per group (query):
//   pairs          C(n, 2), all unordered pairs of the group
//   relevant       pairs with y_i != y_j                                   (004 eq. 1: the edges)
//   discordant     pairs with y_i > y_j and f_i < f_j                      (wrongly ordered)
//   tied_relevant  pairs with y_i != y_j and f_i == f_j                    (ties in the scores)
//   w_discordant   sum of |y_i - y_j| over discordant pairs                (002 eq. 2)
//   w_tied         sum of |y_i - y_j| over pairs with f_i == f_j           (002 eq. 2)
// Algorithm: rows in (group, f)-order (one group: the caller's argsort of f, streamed; several:
// a counting sort of it by group code); a sweep over each group in increasing f, blocks of tied
// f queried before they are inserted, against a "count (and sum) of labels greater than r"
// structure over the dense label ranks: direct tables for K <= 32 labels (per tied block only a
// histogram), a Fenwick tree up to 2^14 labels (group-local ranks for small groups), and above
// that a merge sort of the ranks in score order counting strict inversions.  O(m log K) or
// O(m log m) after the sort, K = distinct labels in the group.
#pragma once
#include <cstdint>
#include <vector>

#include "fastrank/groups.hpp"
#include "fastrank/types.hpp"

namespace fastrank {

enum PairStat : int {
  kPairs = 0,
  kRelevant = 1,
  kDiscordant = 2,
  kTiedRelevant = 3,
  kWeightedDiscordant = 4,
  kWeightedTied = 5,
  kNumPairStats = 6
};

// Dense ranks (0..K-1, increasing value) of y without sorting y, when y takes at most
// max_distinct distinct values (integer-valued y through a direct table, otherwise a small hash
// set).  Returns false (outputs unspecified) when there are more distinct values.  -0.0 == 0.0.
bool dense_ranks_small(const double* y, Index m, Index max_distinct, std::int32_t* rank,
                       std::vector<double>& values);

// Dense ranks of y given any order that sorts y ascending.
void dense_ranks_from_order(const double* y, const std::int64_t* order, Index m, std::int32_t* rank,
                            std::vector<double>& values);

// Per-group pair statistics, an (n_groups, kNumPairStats) matrix.
//   f:        scores (m)
//   f_order:  a permutation sorting f ascending (ties in any order)
//   yrank:    dense ranks of y (m), values: y value of each rank (K)
//   groups:   the query groups of the m rows (one group: every row)
//   row_group: the group of every row (m; GroupIndex::row_groups()), or nullptr for one group
//   weighted: also compute the |y_i - y_j|-weighted columns (else they are 0)
RowMatrix pair_statistics(const double* f, const std::int64_t* f_order, const std::int32_t* yrank,
                          const double* values, Index K, const GroupIndex& groups, const std::int64_t* row_group,
                          bool weighted, int n_threads);

// Per-group DCG and ideal DCG (n_groups, 2) of the m = groups.n_rows() rows.
// gain: 0 -> linear (g = y), 1 -> exponential (g = 2^y - 1).  Discount 1/log2(position + 1),
// positions 1..k (k <= 0: no cutoff).  Ties in the scores: the gains of a tied block are averaged
// over the block's positions (the expectation over all orderings of the tie, as scikit-learn).
// row_group: the group of every row (m), or nullptr for one group.
RowMatrix dcg_statistics(const double* y, const double* f, const GroupIndex& groups, const std::int64_t* row_group,
                         Index k, int gain, int n_threads);

// Per-group sums over the "dominance" pairs of two score vectors (a, b): the unordered pairs
// {i, j} of a group with a_i > a_j and b_i > b_j (both strict), an (n_groups, kNumDominance)
// matrix of
//   count, sum (a_i - a_j), sum (b_i - b_j), sum (a_i - a_j)^2, sum (b_i - b_j)^2,
//   sum (a_i - a_j)(b_i - b_j).
// These give the pairwise costs of Cortes et al. (000 eqs. 4, 6: mis-ordered pairs are the
// dominance pairs of (y, -f)) and the hinge and gamma losses of Agarwal & Niyogi (002 Sect. 4,
// 5.2.1: pairs with y_i > y_j and y_i - f_i > y_j - f_j) without a pair list.  Algorithm: per
// group, values centred for the sums (compared as given); the condition being symmetric,
// a sweep in increasing order of the coordinate with more distinct values (tied blocks queried
// before they are inserted) against a Fenwick tree over the dense ranks of the other one (the
// labels, typically: a small tree that stays in cache) holding the six running sums; when both
// coordinates have more than 4096 distinct values, a merge sort by b of the points in a-order
// instead.  O(n_g log n_g) per group.
enum DominanceStat : int {
  kDomCount = 0,
  kDomA = 1,
  kDomB = 2,
  kDomAA = 3,
  kDomBB = 4,
  kDomAB = 5,
  kNumDominance = 6
};
// With b_less, a pair's second values are b_i - b_less_i, formed per group from b and b_less each less its median.
// The result is (n_groups, 12): the six sums, then for each the sum of the magnitudes of the terms it expands into
// (values less the medians), the scale of its rounding.
RowMatrix dominance_sums(const double* a, const double* b, const GroupIndex& groups, int n_threads,
                         const double* b_less = nullptr);

// Per-group sums over the unordered pairs {i, j} of a group with |z_i - z_j| > eps (eps >= 0),
// an (n_groups, 5) matrix of count, sum (|z_i - z_j| - eps), sum (|z_i - z_j| - eps)^2 (the
// epsilon-insensitive cost of 000 eq. 7) and the magnitudes of the expanded terms of the two sums.  Per group: sort, then prefix sums of z and z^2 and a
// moving lower bound.  O(n_g log n_g).
RowMatrix threshold_pair_sums(const double* z, const GroupIndex& groups, double eps, int n_threads);

}  // namespace fastrank
