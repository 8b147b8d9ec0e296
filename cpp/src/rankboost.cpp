#include "fastrank/rankboost.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <utility>

#include "fastrank/errors.hpp"
#include "fastrank/interrupt.hpp"
#include "fastrank/parallel.hpp"

namespace fastrank {

namespace {

// Two candidates whose |r| differ by less than this (relative) are a tie, kept by the first in
// the scan order (feature ascending, threshold descending): rounding in the prefix sums must
// not decide between weak rankers that are equally good in exact arithmetic.
constexpr double kTieRelative = 1e-9;
// No weak ranker with |r| above this: no edge left, boosting stops.
constexpr double kNoEdge = 1e-12;
// |r| above 1 - kSaturated: the weak ranker orders every weighted pair correctly; alpha is
// taken at the clipped r (alpha ~ 11.9) and boosting stops (D would not change any more).
constexpr double kSaturated = 1e-10;

inline bool better(double candidate_abs, double best_abs) {
  return candidate_abs > best_abs * (1.0 + kTieRelative);
}

double log_sum_exp_shift(double a, double b) {  // log(e^a + e^b), -inf aware
  if (a == -INFINITY) return b;
  if (b == -INFINITY) return a;
  const double mx = std::max(a, b);
  return mx + std::log(std::exp(a - mx) + std::exp(b - mx));
}

// Best threshold of K complete features (no missing values) scanned together: K independent
// prefix sums interleave in the pipeline (one feature alone is bound by the latency of its
// serial additions).  Per feature the additions and comparisons are exactly those of a scan of
// that feature alone, so the result does not depend on the grouping.
template <int K>
void scan_complete(const RankBoostCandidates& cand, const Index* fs, const double* pi, double* feat_r,
                   Index* feat_pos) {
  const Index m = cand.m;
  const std::int32_t* o[K];
  const std::uint8_t* c[K];
  double s[K], best_abs[K], best[K];
  Index pos[K];
  for (int k = 0; k < K; ++k) {
    o[k] = cand.order.data() + fs[k] * m;
    c[k] = cand.cut.data() + fs[k] * m;
    s[k] = best_abs[k] = best[k] = 0.0;
    pos[k] = -1;
  }
  for (Index i = 0; i < m; ++i) {
    for (int k = 0; k < K; ++k) {
      s[k] += pi[o[k][i]];
      if (c[k][i] && better(std::abs(s[k]), best_abs[k])) {
        best_abs[k] = std::abs(s[k]);
        best[k] = s[k];
        pos[k] = i;
      }
    }
  }
  for (int k = 0; k < K; ++k) {
    feat_r[fs[k]] = best[k];
    feat_pos[fs[k]] = pos[k];
  }
}

// The boosting loop shared by graded and graph feedback.  potential(F, pi) fills pi for the
// normalised D_t of the current F and returns false if D_t cannot be formed.
// split(h) returns (eps+, eps-): the mass under the D_t of the last potential() of the pairs
// (x0, x1) with h(x0) = 0, h(x1) = 1 (ordered correctly) and h(x0) = 1, h(x1) = 0 (wrongly).
template <class Potential, class Split>
RankBoostResult boost(const RowMatrixCRef& X, const RankBoostCandidates& cand, Index n_rounds,
                      int n_threads, const RankBoostRule& rule, Potential&& potential, Split&& split) {
  require(n_rounds >= 0, "n_rounds must be >= 0");
  const Index m = cand.m, n = cand.n;
  RankBoostResult res;
  std::vector<std::uint8_t> h(m, 0);
  std::vector<double> F(m, 0.0), pi(m, 0.0), feat_r(n, 0.0);
  std::vector<Index> feat_pos(n, -1);
  std::vector<std::uint8_t> feat_q(n, 0);
  for (Index t = 0; t < n_rounds; ++t) {
    interrupt::poll();
    if (!potential(F, pi)) break;
    // r(theta) = sum_{x_f > theta} pi(x) (+ sum of pi over rows missing x_f when q_def = 1): a
    // prefix sum along the decreasing order of the rows that have x_f.
    // A thread scans at least 65,536 entries of X a round: starting one per round for less cost more than it saved
    // (m = 2000, 20 features, 100 rounds: 21.7 ms on one thread, 26.5 ms on two with one feature a chunk)
    parallel_for(0, n, n_threads, std::max<Index>(1, 65536 / m), [&](Index lo, Index hi) {
      Index batch[4];
      int nb = 0;
      for (Index f = lo; f < hi; ++f) {
        if (cand.n_defined[f] == m) {  // complete features: scanned four at a time
          feat_q[f] = 0;
          batch[nb++] = f;
          if (nb == 4) {
            scan_complete<4>(cand, batch, pi.data(), feat_r.data(), feat_pos.data());
            nb = 0;
          }
          continue;
        }
        const std::int32_t* o = cand.order.data() + f * m;
        const std::uint8_t* c = cand.cut.data() + f * m;
        const Index n_def = cand.n_defined[f];
        double missing = 0.0;
        for (Index i = n_def; i < m; ++i) missing += pi[o[i]];
        double s = 0.0, best_abs = 0.0, best = 0.0;
        Index pos = -1;
        std::uint8_t q = 0;
        if (missing == 0.0) {  // no missing values (or their pi cancels): q_def = 0 ties q_def = 1
          for (Index i = 0; i < n_def; ++i) {
            s += pi[o[i]];
            if (c[i] && better(std::abs(s), best_abs)) {
              best_abs = std::abs(s);
              best = s;
              pos = i;
            }
          }
        } else {
          for (Index i = 0; i < n_def; ++i) {
            s += pi[o[i]];
            if (!c[i]) continue;
            if (better(std::abs(s), best_abs)) {
              best_abs = std::abs(s);
              best = s;
              pos = i;
              q = 0;
            }
            const double s1 = s + missing;
            if (better(std::abs(s1), best_abs)) {
              best_abs = std::abs(s1);
              best = s1;
              pos = i;
              q = 1;
            }
          }
        }
        feat_r[f] = best;
        feat_pos[f] = pos;
        feat_q[f] = q;
      }
      for (int k = 0; k < nb; ++k) scan_complete<1>(cand, batch + k, pi.data(), feat_r.data(), feat_pos.data());
    });
    Index bf = -1;
    double best_abs = 0.0;
    for (Index f = 0; f < n; ++f) {
      if (feat_pos[f] >= 0 && better(std::abs(feat_r[f]), best_abs)) {
        best_abs = std::abs(feat_r[f]);
        bf = f;
      }
    }
    if (bf < 0 || best_abs <= kNoEdge) break;
    const double r = feat_r[bf];
    const bool saturated = best_abs > 1.0 - kSaturated;
    const Index pos = feat_pos[bf];
    const Index n_def = cand.n_defined[bf];
    const std::int32_t* o = cand.order.data() + bf * m;
    std::fill(h.begin(), h.end(), std::uint8_t{0});
    for (Index i = 0; i <= pos; ++i) h[o[i]] = 1;
    if (feat_q[bf])
      for (Index i = n_def; i < m; ++i) h[o[i]] = 1;
    const std::pair<double, double> eps = split(F, h);
    // Freund et al.: minimises the bound sqrt(1 - r^2) on Z_t
    const double rc = std::max(-1.0 + kSaturated, std::min(1.0 - kSaturated, r));
    double alpha = 0.5 * std::log((1.0 + rc) / (1.0 - rc));
    if (rule.exact_alpha) {
      // slides 003: argmin_alpha eps0 + eps+ e^-alpha + eps- e^alpha = 1/2 ln(eps+/eps-).  With
      // eps+ or eps- floored the value can fall between 0 and Freund's alpha, which lies between
      // 0 and the minimiser (eps+/eps- >= (2 eps+ + eps0)/(2 eps- + eps0) for r > 0); Z_t
      // decreases towards the minimiser, so the one farther from 0 is kept: Z_t <= sqrt(1 - r^2).
      const double exact =
          0.5 * std::log(std::max(eps.first, rule.smoothing) / std::max(eps.second, rule.smoothing));
      if (std::abs(exact) >= std::abs(alpha)) alpha = exact;
    }
    const double eps0 = std::max(0.0, 1.0 - eps.first - eps.second);
    double theta = -INFINITY;  // pos = n_def - 1: every row that has the feature is above
    if (pos + 1 < n_def) {
      const double hi_v = X(o[pos], bf), lo_v = X(o[pos + 1], bf);
      theta = 0.5 * lo_v + 0.5 * hi_v;  // midpoint, kept in [lo, hi) so h is exact on X
      if (!(theta < hi_v) || theta < lo_v) theta = lo_v;
    }
    for (Index i = 0; i <= pos; ++i) F[o[i]] += alpha;
    if (feat_q[bf])
      for (Index i = n_def; i < m; ++i) F[o[i]] += alpha;
    res.features.push_back(bf);
    res.thresholds.push_back(theta);
    res.alphas.push_back(alpha);
    res.r.push_back(r);
    res.qdef.push_back(feat_q[bf]);
    res.eps_plus.push_back(eps.first);
    res.eps_minus.push_back(eps.second);
    res.z.push_back(eps0 + eps.first * std::exp(-alpha) + eps.second * std::exp(alpha));
    if (rule.on_round) rule.on_round(t + 1);
    if (saturated) break;
  }
  return res;
}

}  // namespace

RankBoostCandidates rankboost_candidates(const RowMatrixCRef& X, Index n_thresholds, int n_threads) {
  const Index m = X.rows(), n = X.cols();
  require(m >= 2 && n >= 1, "RankBoost needs at least 2 rows and 1 feature");
  require(m <= std::numeric_limits<std::int32_t>::max(), "RankBoost supports at most 2^31 - 1 rows");
  require(n_thresholds >= 0 && n_thresholds <= std::numeric_limits<std::int32_t>::max(),
          "n_thresholds must lie in [0, 2^31 - 1] (0: every distinct value)");
  RankBoostCandidates c;
  c.m = m;
  c.n = n;
  c.order.resize(static_cast<std::size_t>(m * n));
  c.cut.assign(static_cast<std::size_t>(m * n), 0);
  c.n_defined.assign(static_cast<std::size_t>(n), 0);
  parallel_for(0, n, n_threads, 1, [&](Index lo, Index hi) {
    std::vector<Index> bounds;
    // (value, row) pairs sorted in place: contiguous, unlike an indirect sort of strided X.
    std::vector<std::pair<double, std::int32_t>> col(m);
    for (Index f = lo; f < hi; ++f) {
      interrupt::poll();
      std::int32_t* o = c.order.data() + f * m;
      std::uint8_t* cu = c.cut.data() + f * m;
      for (Index i = 0; i < m; ++i) col[i] = {X(i, f), static_cast<std::int32_t>(i)};
      // decreasing value, ties in row order, missing (NaN) rows last
      std::sort(col.begin(), col.end(), [](const auto& a, const auto& b) {
        const bool an = std::isnan(a.first), bn = std::isnan(b.first);
        if (an != bn) return bn;
        if (!an && a.first != b.first) return a.first > b.first;
        return a.second < b.second;
      });
      Index n_def = 0;
      for (Index i = 0; i < m; ++i) {
        o[i] = col[i].second;
        n_def += std::isnan(col[i].first) ? 0 : 1;
      }
      c.n_defined[f] = n_def;
      bounds.clear();
      for (Index i = 0; i + 1 < n_def; ++i)
        if (col[i].first != col[i + 1].first) bounds.push_back(i);
      for (std::size_t k = 0; k < bounds.size(); ++k) {
        bool keep = true;
        if (n_thresholds > 0 && k + 1 < bounds.size()) {
          // c = i + 1 rows above; keep the last threshold of each quantile bin
          const Index bin = (bounds[k] + 1) * n_thresholds / m;
          const Index next_bin = (bounds[k + 1] + 1) * n_thresholds / m;
          keep = bin != next_bin;
        }
        if (keep) cu[bounds[k]] = 1;
      }
      // with missing rows, "every row that has the feature" vs q_def is a weak ranker too
      if (n_def >= 1 && n_def < m) cu[n_def - 1] = 1;
    }
  });
  return c;
}

namespace {

// Level blocks of graded feedback: the rows of group g with one y value form a block; the blocks
// of group g are group_blocks[g] .. group_blocks[g+1]-1 in increasing y.  Returns the block of
// every row.
std::vector<std::int64_t> level_blocks(const double* y, const GroupIndex& groups,
                                       std::vector<std::int64_t>& group_blocks) {
  std::vector<std::int64_t> block(static_cast<size_t>(groups.n_rows())), rows;
  group_blocks.assign(static_cast<size_t>(groups.n_groups() + 1), 0);
  std::int64_t n_blocks = 0;
  for (Index g = 0; g < groups.n_groups(); ++g) {
    group_blocks[g] = n_blocks;
    rows.assign(groups.order.data() + groups.offsets[g], groups.order.data() + groups.offsets[g + 1]);
    std::stable_sort(rows.begin(), rows.end(), [y](std::int64_t a, std::int64_t b) { return y[a] < y[b]; });
    for (size_t t = 0; t < rows.size(); ++t) {
      if (t == 0 || y[rows[t]] != y[rows[t - 1]]) ++n_blocks;
      block[rows[t]] = n_blocks - 1;
    }
  }
  group_blocks.back() = n_blocks;
  return block;
}

}  // namespace

RankBoostResult rankboost_fit_graded(const RowMatrixCRef& X, const RankBoostCandidates& cand, const double* y,
                                     const GroupIndex& groups, const double* group_weight, Index n_rounds,
                                     int n_threads, const RankBoostRule& rule) {
  const Index m = cand.m, n_groups = groups.n_groups();
  require(n_groups >= 1 && groups.n_rows() == m, "groups must cover the rows of X");
  std::vector<std::int64_t> group_blocks;
  const std::vector<std::int64_t> block = level_blocks(y, groups, group_blocks);
  const Index n_blocks = group_blocks[n_groups];
  for (Index g = 0; g < n_groups; ++g) require(group_weight[g] > 0.0, "group weights must be > 0");
  // Log-domain block sums: F grows with the rounds and e^F would overflow.
  std::vector<double> mx(n_blocks), mn(n_blocks), logU(n_blocks), logW(n_blocks), logA(n_blocks),
      logB(n_blocks), sU(n_blocks), sW(n_blocks);
  double logZ = 0.0;  // of the last potential()
  auto potential = [&](const std::vector<double>& F, std::vector<double>& pi) {
    std::fill(mx.begin(), mx.end(), -INFINITY);
    std::fill(mn.begin(), mn.end(), INFINITY);
    for (Index x = 0; x < m; ++x) {
      const Index b = block[x];
      mx[b] = std::max(mx[b], F[x]);
      mn[b] = std::min(mn[b], F[x]);
    }
    std::fill(sU.begin(), sU.end(), 0.0);
    std::fill(sW.begin(), sW.end(), 0.0);
    for (Index x = 0; x < m; ++x) {
      const Index b = block[x];
      sU[b] += std::exp(F[x] - mx[b]);
      sW[b] += std::exp(mn[b] - F[x]);
    }
    for (Index b = 0; b < n_blocks; ++b) {
      logU[b] = sU[b] > 0 ? mx[b] + std::log(sU[b]) : -INFINITY;
      logW[b] = sW[b] > 0 ? -mn[b] + std::log(sW[b]) : -INFINITY;
    }
    // log A_b = log c_g sum_{a<b} U_a, log B_b = log c_g sum_{c>b} W_c; log Z = log sum W_b A_b
    logZ = -INFINITY;
    for (Index g = 0; g < n_groups; ++g) {
      const double lc = std::log(group_weight[g]);
      double acc = -INFINITY;
      for (Index b = group_blocks[g]; b < group_blocks[g + 1]; ++b) {
        logA[b] = acc == -INFINITY ? -INFINITY : lc + acc;
        acc = log_sum_exp_shift(acc, logU[b]);
      }
      acc = -INFINITY;
      for (Index b = group_blocks[g + 1] - 1; b >= group_blocks[g]; --b) {
        logB[b] = acc == -INFINITY ? -INFINITY : lc + acc;
        acc = log_sum_exp_shift(acc, logW[b]);
      }
      for (Index b = group_blocks[g]; b < group_blocks[g + 1]; ++b)
        if (logA[b] != -INFINITY && logW[b] != -INFINITY) logZ = log_sum_exp_shift(logZ, logW[b] + logA[b]);
    }
    if (!std::isfinite(logZ)) return false;
    for (Index b = 0; b < n_blocks; ++b) {
      logA[b] -= logZ;
      logB[b] -= logZ;
    }
    // pi(x) = sum_x' D(x', x) - sum_x' D(x, x') = w(x) A_b - u(x) B_b  (normalised)
    for (Index x = 0; x < m; ++x) {
      const Index b = block[x];
      pi[x] = std::exp(logA[b] - F[x]) - std::exp(logB[b] + F[x]);
    }
    return true;
  };
  // mass(lo, hi) = sum over groups of c_g sum_{x0 in level a, x1 in level b > a, h(x0) = lo,
  // h(x1) = hi} e^{F(x0) - F(x1)} / Z_t: the log-sums of e^F over the rows with h = lo per block
  // (mx, sU reused), their prefix over the lower levels of the group, times e^{-F(x1)}.
  auto mass = [&](const std::vector<double>& F, const std::vector<std::uint8_t>& h, std::uint8_t lo,
                  std::uint8_t hi) {
    std::fill(mx.begin(), mx.end(), -INFINITY);
    std::fill(sU.begin(), sU.end(), 0.0);
    for (Index x = 0; x < m; ++x)
      if (h[x] == lo) mx[block[x]] = std::max(mx[block[x]], F[x]);
    for (Index x = 0; x < m; ++x)
      if (h[x] == lo) sU[block[x]] += std::exp(F[x] - mx[block[x]]);
    for (Index g = 0; g < n_groups; ++g) {
      const double lc = std::log(group_weight[g]) - logZ;
      double acc = -INFINITY;
      for (Index b = group_blocks[g]; b < group_blocks[g + 1]; ++b) {
        logA[b] = acc == -INFINITY ? -INFINITY : lc + acc;
        acc = log_sum_exp_shift(acc, sU[b] > 0 ? mx[b] + std::log(sU[b]) : -INFINITY);
      }
    }
    double total = 0.0;
    for (Index x = 0; x < m; ++x)
      if (h[x] == hi && logA[block[x]] != -INFINITY) total += std::exp(logA[block[x]] - F[x]);
    return total;
  };
  auto split = [&](const std::vector<double>& F, const std::vector<std::uint8_t>& h) {
    return std::make_pair(mass(F, h, 0, 1), mass(F, h, 1, 0));
  };
  return boost(X, cand, n_rounds, n_threads, rule, potential, split);
}

RankBoostResult rankboost_fit_graph(const RowMatrixCRef& X, const RankBoostCandidates& cand,
                                    const std::int64_t* head, const std::int64_t* tail, Index n_edges,
                                    Index n_rounds, int n_threads, const RankBoostRule& rule) {
  const Index m = cand.m;
  require(n_edges >= 1, "pairs is empty: a preference graph needs at least one preference");
  for (Index e = 0; e < n_edges; ++e) {
    require(head[e] >= 0 && head[e] < m && tail[e] >= 0 && tail[e] < m, "pair refers to a row out of range");
    require(head[e] != tail[e], "pair is a self-loop");
  }
  std::vector<double> D(n_edges);
  auto potential = [&](const std::vector<double>& F, std::vector<double>& pi) {
    // D_t(e) ∝ exp(F(x0) - F(x1)) with x1 = head (preferred), x0 = tail; shifted by its max.
    double mxl = -INFINITY;
    for (Index e = 0; e < n_edges; ++e) {
      D[e] = F[tail[e]] - F[head[e]];
      mxl = std::max(mxl, D[e]);
    }
    double Z = 0.0;
    for (Index e = 0; e < n_edges; ++e) {
      D[e] = std::exp(D[e] - mxl);
      Z += D[e];
    }
    if (!(Z > 0.0) || !std::isfinite(Z)) return false;
    std::fill(pi.begin(), pi.end(), 0.0);
    for (Index e = 0; e < n_edges; ++e) {
      D[e] /= Z;  // D_t(e)
      pi[head[e]] += D[e];
      pi[tail[e]] -= D[e];
    }
    return true;
  };
  auto split = [&](const std::vector<double>&, const std::vector<std::uint8_t>& h) {
    double plus = 0.0, minus = 0.0;
    for (Index e = 0; e < n_edges; ++e) {
      if (h[head[e]] && !h[tail[e]]) plus += D[e];
      if (h[tail[e]] && !h[head[e]]) minus += D[e];
    }
    return std::make_pair(plus, minus);
  };
  return boost(X, cand, n_rounds, n_threads, rule, potential, split);
}

}  // namespace fastrank
