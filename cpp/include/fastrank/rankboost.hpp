// RankBoost (Freund, Iyer, Schapire & Singer, JMLR 4, 2003) with threshold weak rankers
// h(x) = [x_f > theta] on single features, h in {0, 1}.
//
// Notation of the paper: a crucial pair (x0, x1) means x1 should be ranked above x0; D_t is a
// distribution over crucial pairs, F_t = sum_s alpha_s h_s the combined ranker, and
//   D_{t+1}(x0, x1) = D_1(x0, x1) exp(F_t(x0) - F_t(x1)) / Z_t            (Fig. 1 unrolled).
// The paper's threshold weak learner (on one feature, h in {0, 1}) maximises |r| with
//   r = sum D(x0, x1) (h(x1) - h(x0)) = sum_x h(x) pi(x),  pi(x) = sum_x' D(x', x) - D(x, x'),
// and alpha = 1/2 ln((1 + r) / (1 - r)) (the minimiser of the bound Z <= sqrt(1 - r^2) in
// the paper's discussion of choosing alpha_t).
//
// The alternative rule of the lecture slides (003, "Weights of the weak rankers"): with
// eps+ / eps- / eps0 the D_t-mass of the pairs h orders correctly / wrongly / ties,
//   Z_t(alpha) = eps0 + eps+ e^-alpha + eps- e^alpha,
// whose exact minimiser is alpha = 1/2 ln(eps+ / eps-), Z_t = eps0 + 2 sqrt(eps+ eps-).  The two
// rules coincide when eps0 = 0 (then r = eps+ - eps- and eps+ + eps- = 1).  eps+ or eps- below
// `smoothing` is raised to it (the minimiser is at infinity otherwise), and the smoothed alpha
// is never closer to 0 than Freund's, so Z_t <= sqrt(1 - r^2) under either rule.  The weak
// ranker is chosen by |r| = |eps+ - eps-| under either rule.
//
// The pair distribution is never formed.  Graded feedback (levels inside groups, every pair of
// different levels of a group crucial, D_1 = c_g on the pairs of group g) factorises per level
// pair:  D_t(x0, x1) = c_g u(x0) w(x1) with u = e^F, w = e^-F  (the paper's efficient
// implementation for bipartite feedback, extended to any number of levels), so for x in level
// b of group g
//   pi(x) = w(x) * c_g sum_{a < b} U_a  -  u(x) * c_g sum_{c > b} W_c,    U_a = sum_{x in a} u,
// O(m) per round.  An explicit preference multigraph keeps D per edge (O(#edges) per round).
// Then r for every threshold of feature f is a prefix sum of pi over the rows sorted by
// decreasing x_f: O(m n) per round after one sort per feature.
#pragma once
#include <cstdint>
#include <functional>
#include <vector>

#include "fastrank/groups.hpp"
#include "fastrank/types.hpp"

namespace fastrank {

// The candidate weak rankers, from one sort per feature.
struct RankBoostCandidates {
  Index m = 0, n = 0;
  std::vector<std::int32_t> order;  // order[f*m + i]: row of rank i by decreasing x_f (stable)
  std::vector<std::uint8_t> cut;    // cut[f*m + i] = 1: threshold between ranks i and i+1
  std::vector<Index> n_defined;     // rows with x_f not NaN; they come first in the order
};

// Missing values (NaN) follow the paper's weak ranker with a default: h(x) = q_def in {0, 1}
// when x_f is missing, q_def chosen with the threshold to maximise |r|; the extra candidate
// theta = -inf ("has the feature" vs q_def) exists when a feature has missing values.
// n_thresholds <= 0: every distinct value gives a threshold.  Otherwise, with c = i + 1 rows
// above a threshold and bin(c) = floor(c * n_thresholds / m), only the last threshold of each
// bin is kept (at most n_thresholds per feature, spread over quantiles).
RankBoostCandidates rankboost_candidates(const RowMatrixCRef& X, Index n_thresholds, int n_threads);

struct RankBoostResult {
  std::vector<std::int64_t> features;
  std::vector<double> thresholds, alphas, r;  // per round; r is the weighted correlation
  std::vector<std::int64_t> qdef;             // per round: h on rows missing the feature
  // per round: D_t-mass of the pairs h_t orders correctly, wrongly, and Z_t at the alpha used
  std::vector<double> eps_plus, eps_minus, z;
};

// How alpha_t is set from the chosen weak ranker, and what is reported after each round.
struct RankBoostRule {
  bool exact_alpha = false;  // false: 1/2 ln((1+r)/(1-r)); true: 1/2 ln(eps+/eps-) (slides 003)
  double smoothing = 0.0;    // floor on eps+ and eps- in the exact rule (> 0)
  std::function<void(Index)> on_round;  // called with the number of rounds done (may be empty)
};

// Graded feedback y (m): the crucial pairs are the pairs of one group with different y, the rows
// of a group with one y value form a level block; group_weight[g] = c_g (> 0).
RankBoostResult rankboost_fit_graded(const RowMatrixCRef& X, const RankBoostCandidates& cand, const double* y,
                                     const GroupIndex& groups, const double* group_weight, Index n_rounds,
                                     int n_threads, const RankBoostRule& rule = {});

// Explicit preferences: row head[e] is preferred over row tail[e] (x1 = head, x0 = tail),
// D_1 uniform over the l edges (repeated edges count repeatedly).
RankBoostResult rankboost_fit_graph(const RowMatrixCRef& X, const RankBoostCandidates& cand,
                                    const std::int64_t* head, const std::int64_t* tail, Index n_edges,
                                    Index n_rounds, int n_threads, const RankBoostRule& rule = {});

}  // namespace fastrank
