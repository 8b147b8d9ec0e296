#include "fastrank/measures.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <utility>

#include "fastrank/errors.hpp"
#include "fastrank/huge_pages.hpp"
#include "fastrank/parallel.hpp"

namespace fastrank {

namespace {


inline std::uint64_t double_bits(double v) {
  if (v == 0.0) v = 0.0;  // -0.0 and 0.0 are one value
  std::uint64_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

inline std::int64_t pairs_of(std::int64_t n) { return n * (n - 1) / 2; }

// Above this many distinct labels in a group, a merge sort replaces the Fenwick tree (whose
// random accesses stop fitting in cache).
constexpr Index kFenwickMaxLabels = 1 << 14;

// "How many inserted labels rank above r, and their sum" for many labels: a Fenwick tree.
template <bool Weighted>
struct FenwickCounter {
  Index K;
  std::int64_t* cnt;
  double* sum;
  std::int64_t total = 0;
  double total_sum = 0.0;
  FenwickCounter(Index k, std::vector<std::int64_t>& c, std::vector<double>& s) : K(k) {
    if (static_cast<Index>(c.size()) < K + 1) c.assign(K + 1, 0);
    if (Weighted && static_cast<Index>(s.size()) < K + 1) s.assign(K + 1, 0.0);
    cnt = c.data();
    sum = Weighted ? s.data() : nullptr;
  }
  inline void query(std::int32_t r, std::int64_t& c, double& s) const {
    std::int64_t cle = 0;
    double sle = 0.0;
    for (Index i = r + 1; i > 0; i -= i & (-i)) {
      cle += cnt[i];
      if (Weighted) sle += sum[i];
    }
    c = total - cle;
    s = Weighted ? total_sum - sle : 0.0;
  }
  inline void insert(std::int32_t r, double v) {
    ++total;
    if (Weighted) total_sum += v;
    for (Index i = r + 1; i <= K; i += i & (-i)) {
      ++cnt[i];
      if (Weighted) sum[i] += v;
    }
  }
  // Zero the tree again: the touched paths for a small group, everything for a big one.
  template <class Acc>
  void reset(const Acc& A, Index n) {
    if (n * 8 > K) {
      std::fill(cnt, cnt + K + 1, 0);
      if (Weighted) std::fill(sum, sum + K + 1, 0.0);
    } else {
      for (Index t = 0; t < n; ++t)
        for (Index i = A.r(t) + 1; i <= K; i += i & (-i)) {
          cnt[i] = 0;
          if (Weighted) sum[i] = 0.0;
        }
    }
  }
};

struct Scratch {
  std::vector<std::int64_t> fen_cnt;
  std::vector<double> fen_sum;
  std::vector<std::int64_t> hist;        // label counts inside a group
  std::vector<std::int64_t> hist_block;  // label counts inside a tied block
  std::vector<std::int32_t> local;       // group-local ranks
  std::vector<double> local_values;
  std::vector<std::int32_t> tmp;
};

template <bool Weighted, class Ctr, class Acc>
void sweep(const Acc& A, const double* vals, Index n, Ctr& ct, Scratch& sc,
           std::int64_t& disc, std::int64_t& tied_rel, double& wdisc, double& wtied) {
  std::int64_t* hb = sc.hist_block.data();
  Index s = 0;
  while (s < n) {
    const double fv = A.f(s);
    Index e = s + 1;
    while (e < n && A.f(e) == fv) ++e;
    if (e < n && A.f(e) < fv) throw std::invalid_argument("f_order does not sort f ascending");
    A.prefetch(e + 16, n);
    if (e == s + 1) {  // the common case: no tie
      const std::int32_t r = A.r(s);
      std::int64_t c;
      double sg;
      ct.query(r, c, sg);
      disc += c;
      if (Weighted) wdisc += sg - static_cast<double>(c) * vals[r];
      ct.insert(r, vals[r]);
      s = e;
      continue;
    }
    for (Index t = s; t < e; ++t) {
      std::int64_t c;
      double sg;
      ct.query(A.r(t), c, sg);
      disc += c;
      if (Weighted) wdisc += sg - static_cast<double>(c) * vals[A.r(t)];
    }
    const Index b = e - s;
    std::int64_t same_b = 0;
    for (Index t = s; t < e; ++t) same_b += hb[A.r(t)]++;
    for (Index t = s; t < e; ++t) hb[A.r(t)] = 0;
    tied_rel += pairs_of(b) - same_b;
    if (Weighted) {
      sc.tmp.resize(b);
      for (Index t = s; t < e; ++t) sc.tmp[t - s] = A.r(t);
      std::sort(sc.tmp.begin(), sc.tmp.end());
      double acc = 0.0;
      for (Index t = 0; t < b; ++t) acc += vals[sc.tmp[t]] * static_cast<double>(2 * t - b + 1);
      wtied += acc;
    }
    for (Index t = s; t < e; ++t) ct.insert(A.r(t), vals[A.r(t)]);
    s = e;
  }
}

// Few labels (K <= 32): per tied block only the block's label histogram is built per element;
// queries and inserts are O(K) per block.  Untied rows go through the per-row update.
template <bool Weighted, class Acc>
void sweep_direct(const Acc& A, const double* vals, Index K, Index n,
                  std::int64_t& same, std::int64_t& disc, std::int64_t& tied_rel, double& wdisc, double& wtied) {
  std::int64_t gt[33] = {0};   // inserted rows with rank > r
  double gs[33] = {0.0};       // their label sum
  std::int64_t hb[33] = {0};   // histogram of the current block
  std::int64_t total[33] = {0};
  Index s = 0;
  while (s < n) {
    const double fv = A.f(s);
    Index e = s + 1;
    while (e < n && A.f(e) == fv) ++e;
    if (e < n && A.f(e) < fv) throw std::invalid_argument("f_order does not sort f ascending");
    A.prefetch(e + 16, n);
    const Index b = e - s;
    if (b * 2 < K) {  // short block: row by row
      for (Index t = s; t < e; ++t) {
        const std::int32_t r = A.r(t);
        disc += gt[r];
        if (Weighted) wdisc += gs[r] - static_cast<double>(gt[r]) * vals[r];
      }
      if (b > 1) {
        std::int64_t same_b = 0;
        for (Index t = s; t < e; ++t) same_b += hb[A.r(t)]++;
        tied_rel += pairs_of(b) - same_b;
        if (Weighted) {
          std::int64_t cb = 0;
          double sb = 0.0, acc = 0.0;
          for (Index r = 0; r < K; ++r) {
            acc += static_cast<double>(hb[r]) * (vals[r] * static_cast<double>(cb) - sb);
            cb += hb[r];
            sb += static_cast<double>(hb[r]) * vals[r];
          }
          wtied += acc;
        }
        for (Index t = s; t < e; ++t) hb[A.r(t)] = 0;
      }
      for (Index t = s; t < e; ++t) {
        const std::int32_t r = A.r(t);
        ++total[r];
        for (std::int32_t u = 0; u < r; ++u) ++gt[u];
        if (Weighted)
          for (std::int32_t u = 0; u < r; ++u) gs[u] += vals[r];
      }
    } else {  // long block: histogram first
      for (Index t = s; t < e; ++t) ++hb[A.r(t)];
      std::int64_t same_b = 0, cb = 0;
      double sb = 0.0, acc = 0.0;
      for (Index r = 0; r < K; ++r) {
        const std::int64_t h = hb[r];
        same_b += pairs_of(h);
        disc += h * gt[r];
        if (Weighted) {
          wdisc += static_cast<double>(h) * (gs[r] - static_cast<double>(gt[r]) * vals[r]);
          acc += static_cast<double>(h) * (vals[r] * static_cast<double>(cb) - sb);
          sb += static_cast<double>(h) * vals[r];
        }
        cb += h;
      }
      tied_rel += pairs_of(b) - same_b;
      if (Weighted) wtied += acc;
      std::int64_t above = 0;
      double above_sum = 0.0;
      for (Index r = K - 1; r >= 0; --r) {
        gt[r] += above;
        if (Weighted) gs[r] += above_sum;
        above += hb[r];
        if (Weighted) above_sum += static_cast<double>(hb[r]) * vals[r];
        total[r] += hb[r];
        hb[r] = 0;
      }
    }
    s = e;
  }
  same = 0;
  for (Index r = 0; r < K; ++r) same += pairs_of(total[r]);
}

// Many labels and a big group: ranks in score order (each tied-score block sorted by rank, so
// that pairs tied in the scores are never inversions), then a merge sort that counts strict
// inversions (= discordant pairs) and their label-difference sums.  O(n log n), sequential memory.
template <bool Weighted, class Acc>
void sweep_merge(const Acc& A, const double* vals, Index n, Scratch& sc, std::int64_t& same, std::int64_t& disc,
                 std::int64_t& tied_rel, double& wdisc, double& wtied) {
  std::vector<std::int32_t> buf_a(n), buf_b(n);
  std::int32_t* a = buf_a.data();
  std::int32_t* b = buf_b.data();
  Index s = 0;
  while (s < n) {
    const double fv = A.f(s);
    a[s] = A.r(s);
    Index e = s + 1;
    A.prefetch(s + 16, n);
    while (e < n && A.f(e) == fv) {
      a[e] = A.r(e);
      ++e;
    }
    if (e < n && A.f(e) < fv) throw std::invalid_argument("f_order does not sort f ascending");
    const Index bl = e - s;
    if (bl > 1) {
      std::sort(a + s, a + e);
      std::int64_t same_b = 0;
      Index run = 1;
      double acc = 0.0;
      for (Index t = s + 1; t <= e; ++t) {
        if (t < e && a[t] == a[t - 1]) {
          ++run;
        } else {
          same_b += pairs_of(run);
          run = 1;
        }
      }
      if (Weighted)
        for (Index t = 0; t < bl; ++t) acc += vals[a[s + t]] * static_cast<double>(2 * t - bl + 1);
      tied_rel += pairs_of(bl) - same_b;
      wtied += acc;
    }
    s = e;
  }
  (void)sc;
  constexpr Index RUN = 16;
  for (Index lo = 0; lo < n; lo += RUN) {  // insertion sort: each shift is one inversion
    const Index hi = std::min(lo + RUN, n);
    for (Index i = lo + 1; i < hi; ++i) {
      const std::int32_t x = a[i];
      Index j = i;
      while (j > lo && a[j - 1] > x) {
        a[j] = a[j - 1];
        if (Weighted) wdisc += vals[a[j]] - vals[x];
        --j;
      }
      disc += i - j;
      a[j] = x;
    }
  }
  for (Index width = RUN; width < n; width *= 2) {
    for (Index lo = 0; lo < n; lo += 2 * width) {
      const Index mid = std::min(lo + width, n), hi = std::min(lo + 2 * width, n);
      Index i = lo, j = mid, k = lo;
      if (Weighted) {
        double lsum = 0.0;
        for (Index t = lo; t < mid; ++t) lsum += vals[a[t]];
        while (i < mid && j < hi) {
          if (a[j] < a[i]) {
            disc += mid - i;
            wdisc += lsum - static_cast<double>(mid - i) * vals[a[j]];
            b[k++] = a[j++];
          } else {
            lsum -= vals[a[i]];
            b[k++] = a[i++];
          }
        }
      } else {
        std::int64_t inv = 0;
        while (i < mid && j < hi) {
          const std::int32_t li = a[i], rj = a[j];
          const bool take_r = rj < li;
          b[k++] = take_r ? rj : li;
          inv += take_r ? (mid - i) : 0;
          j += take_r;
          i += !take_r;
        }
        disc += inv;
      }
      while (i < mid) b[k++] = a[i++];
      while (j < hi) b[k++] = a[j++];
    }
    std::swap(a, b);
  }
  same = 0;
  Index run = 1;
  for (Index t = 1; t <= n; ++t) {
    if (t < n && a[t] == a[t - 1]) {
      ++run;
    } else {
      same += pairs_of(run);
      run = 1;
    }
  }
}

// Row k of a group: score A.f(k) (ascending in k), label rank A.r(k) in [0, K).
struct Access {
  const std::int64_t* ord;
  const double* fp;
  const std::int32_t* yr;
  double f(Index k) const { return fp[ord[k]]; }
  std::int32_t r(Index k) const { return yr[ord[k]]; }
  void prefetch(Index k, Index n) const {
    if (k < n) {
      __builtin_prefetch(fp + ord[k]);
      __builtin_prefetch(yr + ord[k]);
    }
  }
};
struct ContigAccess {  // rows already gathered in order
  const double* fp;
  const std::int32_t* rp;
  double f(Index k) const { return fp[k]; }
  std::int32_t r(Index k) const { return rp[k]; }
  void prefetch(Index, Index) const {}
};

// One group; vals[r] = label of rank r.
template <class Acc>
void sweep_group(const Acc& A, const double* vals, Index K, Index n, bool weighted, Scratch& sc, double* out) {
  for (int c = 0; c < kNumPairStats; ++c) out[c] = 0.0;
  if (n < 2) return;
  std::int64_t same = 0, disc = 0, tied_rel = 0;
  double wdisc = 0.0, wtied = 0.0;
  if (K <= 32) {
    if (weighted)
      sweep_direct<true>(A, vals, K, n, same, disc, tied_rel, wdisc, wtied);
    else
      sweep_direct<false>(A, vals, K, n, same, disc, tied_rel, wdisc, wtied);
  } else if (K > kFenwickMaxLabels) {
    if (weighted)
      sweep_merge<true>(A, vals, n, sc, same, disc, tied_rel, wdisc, wtied);
    else
      sweep_merge<false>(A, vals, n, sc, same, disc, tied_rel, wdisc, wtied);
  } else {
    if (static_cast<Index>(sc.hist.size()) < K) {
      sc.hist.assign(K, 0);
      sc.hist_block.assign(K, 0);
    }
    // Labels tied with each other: same = sum_r C(count_r, 2).
    std::int64_t* h = sc.hist.data();
    for (Index t = 0; t < n; ++t) same += h[A.r(t)]++;
    for (Index t = 0; t < n; ++t) h[A.r(t)] = 0;
    if (weighted) {
      FenwickCounter<true> ct(K, sc.fen_cnt, sc.fen_sum);
      sweep<true>(A, vals, n, ct, sc, disc, tied_rel, wdisc, wtied);
      ct.reset(A, n);
    } else {
      FenwickCounter<false> ct(K, sc.fen_cnt, sc.fen_sum);
      sweep<false>(A, vals, n, ct, sc, disc, tied_rel, wdisc, wtied);
      ct.reset(A, n);
    }
  }
  out[kPairs] = static_cast<double>(pairs_of(n));
  out[kRelevant] = static_cast<double>(pairs_of(n) - same);
  out[kDiscordant] = static_cast<double>(disc);
  out[kTiedRelevant] = static_cast<double>(tied_rel);
  out[kWeightedDiscordant] = wdisc;
  out[kWeightedTied] = wtied;
}

}  // namespace

bool dense_ranks_small(const double* y, Index m, Index max_distinct, std::int32_t* rank, std::vector<double>& values) {
  values.clear();
  if (m == 0) return true;
  // Integer-valued labels in a modest range: a direct table.
  double l4[4] = {y[0], y[0], y[0], y[0]}, h4[4] = {y[0], y[0], y[0], y[0]};
  Index i0 = 0;
  for (; i0 + 4 <= m; i0 += 4)
    for (int u = 0; u < 4; ++u) {
      l4[u] = y[i0 + u] < l4[u] ? y[i0 + u] : l4[u];
      h4[u] = y[i0 + u] > h4[u] ? y[i0 + u] : h4[u];
    }
  for (; i0 < m; ++i0) {
    l4[0] = std::min(l4[0], y[i0]);
    h4[0] = std::max(h4[0], y[i0]);
  }
  const double lo = std::min(std::min(l4[0], l4[1]), std::min(l4[2], l4[3]));
  const double hi = std::max(std::max(h4[0], h4[1]), std::max(h4[2], h4[3]));
  const double span = hi - lo;
  if (span < static_cast<double>(std::max<Index>(4 * m, 1 << 16)) && span < 1e9 && std::fabs(lo) < 1e15) {
    const Index width = static_cast<Index>(span) + 1;
    std::vector<std::int32_t> table(width, 0);
    bool integral = true;
    for (Index i = 0; i < m; ++i) {
      // y - lo rounds (lo = -1e-16 sent 1 and 1 - 1e-16 to one rank): a label takes the table only when it is
      // lo + t exactly, so distinct labels never share a rank.
      const double d = y[i] - lo;
      const std::int64_t t = static_cast<std::int64_t>(d);
      integral &= static_cast<double>(t) == d && lo + static_cast<double>(t) == y[i];
      rank[i] = static_cast<std::int32_t>(t);
    }
    if (integral) {
      for (Index i = 0; i < m; ++i) table[rank[i]] = 1;
      std::int32_t r = 0;
      for (Index t = 0; t < width; ++t) {
        if (table[t]) {
          values.push_back(lo + static_cast<double>(t));
          table[t] = r++;
        }
      }
      for (Index i = 0; i < m; ++i) rank[i] = table[rank[i]];
      return true;
    }
  }
  // A small open-addressing hash set of the bit patterns (at most m distinct values).
  max_distinct = std::min(max_distinct, m);
  Index cap = 16;
  while (cap < 4 * max_distinct) cap *= 2;
  std::vector<std::uint64_t> keys(cap, 0);
  std::vector<std::int32_t> slot_rank(cap, -1);
  std::vector<double> distinct;
  const std::uint64_t mask = static_cast<std::uint64_t>(cap - 1);
  auto find = [&](std::uint64_t key) -> Index {
    std::uint64_t h = (key * 0x9E3779B97F4A7C15ULL) >> 20;
    for (;;) {
      const Index p = static_cast<Index>(h & mask);
      if (slot_rank[p] < 0 || keys[p] == key) return p;
      ++h;
    }
  };
  for (Index i = 0; i < m; ++i) {
    const std::uint64_t key = double_bits(y[i]);
    const Index p = find(key);
    if (slot_rank[p] < 0) {
      if (static_cast<Index>(distinct.size()) >= max_distinct) return false;
      keys[p] = key;
      slot_rank[p] = static_cast<std::int32_t>(distinct.size());
      distinct.push_back(y[i] == 0.0 ? 0.0 : y[i]);
    }
    rank[i] = slot_rank[p];  // insertion index for now
  }
  const Index K = static_cast<Index>(distinct.size());
  std::vector<std::int32_t> perm(K);
  for (Index t = 0; t < K; ++t) perm[t] = static_cast<std::int32_t>(t);
  std::sort(perm.begin(), perm.end(), [&](std::int32_t a, std::int32_t b) { return distinct[a] < distinct[b]; });
  std::vector<std::int32_t> remap(K);
  values.resize(K);
  for (Index t = 0; t < K; ++t) {
    remap[perm[t]] = static_cast<std::int32_t>(t);
    values[t] = distinct[perm[t]];
  }
  for (Index i = 0; i < m; ++i) rank[i] = remap[rank[i]];
  return true;
}

void dense_ranks_from_order(const double* y, const std::int64_t* order, Index m, std::int32_t* rank,
                            std::vector<double>& values) {
  values.clear();
  values.reserve(static_cast<std::size_t>(std::min<Index>(m, 1 << 20)));
  std::fill(rank, rank + m, -1);  // a repeated index would leave another row unranked
  std::int32_t r = -1;
  double prev = 0.0;
  for (Index k = 0; k < m; ++k) {
    if (k + 16 < m) {
      const std::int64_t jn = order[k + 16];
      if (jn >= 0 && jn < m) {
        __builtin_prefetch(y + jn);
        __builtin_prefetch(rank + jn, 1);
      }
    }
    const std::int64_t j = order[k];
    require(j >= 0 && j < m && rank[j] < 0, "order is not a permutation");
    const double v = y[j];
    if (k > 0) require(!(v < prev), "order does not sort y ascending");
    if (k == 0 || v != prev) {
      ++r;
      values.push_back(v == 0.0 ? 0.0 : v);
      prev = v;
    }
    rank[j] = r;
  }
}

RowMatrix pair_statistics(const double* f, const std::int64_t* f_order, const std::int32_t* yrank,
                          const double* values, Index K, const GroupIndex& groups, const std::int64_t* row_group,
                          bool weighted, int n_threads) {
  const Index m = groups.n_rows(), n_groups = groups.n_groups();
  require(n_groups == 1 || row_group != nullptr, "pair_statistics: the group of every row is needed");
  RowMatrix out = RowMatrix::Zero(n_groups, kNumPairStats);
  if (m == 0) return out;
  // One group: the sweep streams through f_order (no copies).  Several groups: rows gathered
  // into (group, f) order by a counting sort of f_order, into buffers every entry of which is written.
  std::unique_ptr<double[]> fs;
  std::unique_ptr<std::int32_t[]> rk;
  const IndexVector& offsets = groups.offsets;
  // one group: no per-row group codes, the sweep streams through f_order
  const std::int64_t* codes = n_groups > 1 ? row_group : nullptr;
  if (codes == nullptr) {
    for (Index k = 0; k < m; ++k) require(f_order[k] >= 0 && f_order[k] < m, "f_order is not a permutation");
  } else {
    std::vector<Index> pos(offsets.data(), offsets.data() + n_groups);
    fs.reset(new double[static_cast<size_t>(m)]);
    rk.reset(new std::int32_t[static_cast<size_t>(m)]);
    advise_huge_pages(fs.get(), sizeof(double) * static_cast<size_t>(m));
    advise_huge_pages(rk.get(), sizeof(std::int32_t) * static_cast<size_t>(m));
    constexpr Index ahead = 16;  // prefetching never faults, so an index is checked only when it is used
    for (Index k = 0; k < m; ++k) {
      if (k + ahead < m) {
        const std::int64_t jn = f_order[k + ahead];
        __builtin_prefetch(f + jn);
        __builtin_prefetch(yrank + jn);
        __builtin_prefetch(codes + jn);
      }
      const std::int64_t j = f_order[k];
      require(j >= 0 && j < m, "f_order is not a permutation");
      const Index p = pos[codes[j]]++;
      fs[p] = f[j];
      rk[p] = yrank[j];
    }
  }
  parallel_for(0, n_groups, n_threads, 1, [&](Index q0, Index q1) {
    Scratch sc;
    for (Index q = q0; q < q1; ++q) {
      const Index lo = offsets[q], n = offsets[q + 1] - lo;
      double* row = out.data() + q * kNumPairStats;
      if (codes == nullptr) {  // one group: stream through the sort order, no copies
        Access A{f_order, f, yrank};
        sweep_group(A, values, K, n, weighted, sc, row);
      } else if (n >= 2 && K > 32 && K > 4 * n) {
        // Small group in a large label set: group-local dense ranks.
        sc.tmp.assign(rk.get() + lo, rk.get() + lo + n);
        std::sort(sc.tmp.begin(), sc.tmp.end());
        sc.tmp.erase(std::unique(sc.tmp.begin(), sc.tmp.end()), sc.tmp.end());
        const Index kg = static_cast<Index>(sc.tmp.size());
        sc.local_values.resize(kg);
        for (Index t = 0; t < kg; ++t) sc.local_values[t] = values[sc.tmp[t]];
        sc.local.resize(n);
        for (Index t = 0; t < n; ++t)
          sc.local[t] = static_cast<std::int32_t>(std::lower_bound(sc.tmp.begin(), sc.tmp.end(), rk[lo + t]) -
                                                  sc.tmp.begin());
        ContigAccess A{fs.get() + lo, sc.local.data()};
        sweep_group(A, sc.local_values.data(), kg, n, weighted, sc, row);
      } else {
        ContigAccess A{fs.get() + lo, rk.get() + lo};
        sweep_group(A, values, K, n, weighted, sc, row);
      }
    }
  });
  return out;
}

RowMatrix dcg_statistics(const double* y, const double* f, const GroupIndex& groups, const std::int64_t* row_group,
                         Index k, int gain, int n_threads) {
  const Index m = groups.n_rows(), n_groups = groups.n_groups();
  require(n_groups == 1 || row_group != nullptr, "dcg_statistics: the group of every row is needed");
  RowMatrix out = RowMatrix::Zero(n_groups, 2);
  // Group blocks in group order; each block holds (score, gain) pairs.
  const IndexVector& offsets = groups.offsets;
  // 2^v - 1: exact for integer grades; below 1 by expm1, where exp2(v) - 1 cancels (a grade of 1e-17 had gain 0, its
  // group counted as having no relevant row)
  auto g = [gain](double v) {
    return gain != 1 ? v : std::fabs(v) < 1.0 ? std::expm1(v * 0.693147180559945309417) : std::exp2(v) - 1.0;
  };
  struct ScoreGain {
    double score, gain;  // score = -f: ascending = best first
  };
  std::unique_ptr<ScoreGain[]> items(new ScoreGain[static_cast<size_t>(m)]);  // every entry written below
  advise_huge_pages(items.get(), sizeof(ScoreGain) * static_cast<size_t>(m));
  if (row_group == nullptr) {
    for (Index i = 0; i < m; ++i) items[i] = {-f[i], g(y[i])};
  } else {
    // rows read in order and placed at the next slot of their group (the group order, which keeps rows in
    // increasing order inside a group): several times faster than gathering through `order`
    std::vector<Index> next(offsets.data(), offsets.data() + n_groups);
    for (Index i = 0; i < m; ++i) items[next[row_group[i]]++] = {-f[i], g(y[i])};
  }
  Index max_n = 0;
  for (Index q = 0; q < n_groups; ++q) max_n = std::max<Index>(max_n, offsets[q + 1] - offsets[q]);
  const Index cut = k <= 0 ? max_n : std::min<Index>(k, max_n);
  std::vector<double> disc(cut);
  for (Index p = 0; p < cut; ++p) disc[p] = 1.0 / std::log2(static_cast<double>(p) + 2.0);
  parallel_for(0, n_groups, n_threads, 64, [&](Index q0, Index q1) {
    std::vector<double> gains;
    for (Index q = q0; q < q1; ++q) {
      const Index lo = offsets[q], n = offsets[q + 1] - lo;
      if (n == 0) continue;
      ScoreGain* it = items.get() + lo;
      // only the order of the scores matters; gains inside a tie are averaged below
      std::sort(it, it + n, [](const ScoreGain& a, const ScoreGain& b) { return a.score < b.score; });
      double dcg = 0.0;
      Index s = 0;
      while (s < n && s < cut) {
        Index e = s + 1;
        while (e < n && it[e].score == it[s].score) ++e;
        double gsum = 0.0, dsum = 0.0;
        for (Index t = s; t < e; ++t) {
          gsum += it[t].gain;
          if (t < cut) dsum += disc[t];
        }
        dcg += gsum / static_cast<double>(e - s) * dsum;
        s = e;
      }
      gains.resize(n);
      for (Index t = 0; t < n; ++t) gains[t] = it[t].gain;
      const Index top = std::min<Index>(n, cut);
      std::partial_sort(gains.begin(), gains.begin() + top, gains.end(), std::greater<double>());
      double ideal = 0.0;
      for (Index t = 0; t < top; ++t) ideal += gains[t] * disc[t];
      out(q, 0) = dcg;
      out(q, 1) = ideal;
    }
  });
  return out;
}

namespace {

// A tree node or merge-sort prefix: the six sums of the elements below a point, and the sums of |a|, |b| and |a b| that
// bound the magnitude of the expanded terms (the second six output columns: a rounding scale for every sum).
constexpr int kAbsA = kNumDominance, kAbsB = kNumDominance + 1, kAbsAB = kNumDominance + 2, kNode = kNumDominance + 3;

struct DomNode {
  double v[kNode];
};

inline void node_terms(double ca, double cb, double* v) {
  v[kDomCount] = 1.0;
  v[kDomA] = ca;
  v[kDomB] = cb;
  v[kDomAA] = ca * ca;
  v[kDomBB] = cb * cb;
  v[kDomAB] = ca * cb;
  v[kAbsA] = std::fabs(ca);
  v[kAbsB] = std::fabs(cb);
  v[kAbsAB] = std::fabs(ca * cb);
}

// The pair sums of one point (ai, bi) with the elements S below it, expanded, into acc[0..5], and the magnitudes of
// the expanded terms into acc[6..11]: a sum whose magnitude exceeds it by 1e6 or more has lost digits.
inline void add_pairs(const double* S, double ai, double bi, double* acc) {
  const double cnt = S[kDomCount], aa = std::fabs(ai), ab = std::fabs(bi);
  acc[kDomCount] += cnt;
  acc[kDomA] += cnt * ai - S[kDomA];
  acc[kDomB] += cnt * bi - S[kDomB];
  acc[kDomAA] += cnt * ai * ai - 2.0 * ai * S[kDomA] + S[kDomAA];
  acc[kDomBB] += cnt * bi * bi - 2.0 * bi * S[kDomB] + S[kDomBB];
  acc[kDomAB] += cnt * ai * bi - ai * S[kDomB] - bi * S[kDomA] + S[kDomAB];
  double* mag = acc + kNumDominance;
  mag[kDomCount] += cnt;
  mag[kDomA] += cnt * aa + S[kAbsA];
  mag[kDomB] += cnt * ab + S[kAbsB];
  mag[kDomAA] += cnt * aa * aa + 2.0 * aa * S[kAbsA] + S[kDomAA];
  mag[kDomBB] += cnt * ab * ab + 2.0 * ab * S[kAbsB] + S[kDomBB];
  mag[kDomAB] += cnt * aa * ab + aa * S[kAbsB] + ab * S[kAbsA] + S[kAbsAB];
}

struct PointAB {
  double a, b;    // the values compared (uncentred)
  double ca, cb;  // the values summed (centred)
};

// Dominance sums of one group by merge sort: points in increasing a (equal a: decreasing b, so
// that a pair with equal a is never counted), then a bottom-up merge sort by b in which every
// element taken from a right half pairs with the left-half elements already taken (strictly
// smaller b); their six running sums give the pair sums of the element.
void dominance_merge(const std::vector<double>& ra, const std::vector<double>& rb, const std::vector<double>& ac,
                     const std::vector<double>& bc, std::vector<PointAB>& pts, std::vector<PointAB>& tmp,
                     double* out) {
  const Index n = static_cast<Index>(ac.size());
  pts.resize(n);
  tmp.resize(n);
  for (Index t = 0; t < n; ++t) pts[t] = {ra[t], rb[t], ac[t], bc[t]};
  std::sort(pts.begin(), pts.end(), [](const PointAB& x, const PointAB& y) {
    return x.a < y.a || (x.a == y.a && x.b > y.b);
  });
  double acc[2 * kNumDominance] = {};
  PointAB* src = pts.data();
  PointAB* dst = tmp.data();
  for (Index width = 1; width < n; width *= 2) {
    for (Index lo = 0; lo < n; lo += 2 * width) {
      const Index mid = std::min(lo + width, n), hi = std::min(lo + 2 * width, n);
      Index i = lo, j = mid, k = lo;
      double L[kNode] = {};  // left elements already taken
      auto take_right = [&](const PointAB& r) {
        add_pairs(L, r.ca, r.cb, acc);
        dst[k++] = r;
      };
      while (i < mid && j < hi) {
        if (src[i].b < src[j].b) {
          const PointAB& l = src[i++];
          double v[kNode];
          node_terms(l.ca, l.cb, v);
          for (int c = 0; c < kNode; ++c) L[c] += v[c];
          dst[k++] = l;
        } else {
          take_right(src[j++]);
        }
      }
      while (j < hi) take_right(src[j++]);
      while (i < mid) dst[k++] = src[i++];
    }
    std::swap(src, dst);
  }
  for (int c = 0; c < 2 * kNumDominance; ++c) out[c] = acc[c];
}

inline std::int32_t* brank_buf(std::vector<std::int32_t>& r, Index n) {
  r.resize(static_cast<size_t>(n));
  return r.data();
}

}  // namespace

RowMatrix dominance_sums(const double* a, const double* b, const GroupIndex& groups, int n_threads,
                         const double* b_less) {
  const Index m = groups.n_rows(), n_groups = groups.n_groups();
  RowMatrix out = RowMatrix::Zero(n_groups, 2 * kNumDominance);
  if (m == 0) return out;
  const IndexVector& offsets = groups.offsets;
  const IndexVector& idx = groups.order;
  parallel_for(0, n_groups, n_threads, 1, [&](Index q0, Index q1) {
    std::vector<double> ra, rb, ac, bc, sa, mid, rs;
    std::vector<Index> ord;
    std::vector<std::int32_t> brank;
    std::vector<Index> rcount;
    std::vector<DomNode> tree;
    std::vector<std::pair<double, Index>> keyed;
    std::vector<PointAB> pts, pts_tmp;
    for (Index q = q0; q < q1; ++q) {
      const Index lo = offsets[q], n = offsets[q + 1] - lo;
      if (n < 2) continue;
      ra.resize(n);
      rb.resize(n);
      ac.resize(n);
      bc.resize(n);
      for (Index t = 0; t < n; ++t) {
        ra[t] = a[idx[lo + t]];
        rb[t] = b[idx[lo + t]];
      }
      // The sums use values less their median (translation invariance, for accuracy; the expanded squares of values
      // near the centre cancel no digits), the comparisons the values as given: centring rounds distinct values near
      // 0 (0 and 1e-18 beside a centre of 3) to one, which drops a dominance pair.  Not the mean: one outlying value
      // (a score of 1e17 among scores of 1) moves it, and the pairs of the others lost every digit.
      auto median = [&](const std::vector<double>& v) {
        mid.assign(v.begin(), v.end());
        std::nth_element(mid.begin(), mid.begin() + n / 2, mid.end());
        return mid[n / 2];
      };
      if (b_less) {  // b - b_less, each less its median first: a group's offset (labels near 2^40) rounds nothing away
        rs.resize(n);
        for (Index t = 0; t < n; ++t) rs[t] = b_less[idx[lo + t]];
        const double m1 = median(rb), m2 = median(rs);
        for (Index t = 0; t < n; ++t) rb[t] = (rb[t] - m1) - (rs[t] - m2);
      }
      // The condition is symmetric in a and b: sweep in increasing order of one of them and keep
      // the Fenwick tree over the dense ranks of the other, the one with fewer distinct values
      // (labels usually), so that the tree is small and stays in cache.
      // Few distinct values are ranked by a hash table (no sort); otherwise by sorting.
      constexpr Index kSmall = 4096;
      bool tree_on_a = dense_ranks_small(ra.data(), n, kSmall, brank_buf(brank, n), sa);
      if (!tree_on_a && !dense_ranks_small(rb.data(), n, kSmall, brank_buf(brank, n), sa)) {
        // Many distinct values in both: a Fenwick tree of n nodes would be cache-bound, so a
        // merge sort instead (sequential memory).
        const double ma = median(ra), mb = median(rb);
        for (Index t = 0; t < n; ++t) {
          ac[t] = ra[t] - ma;
          bc[t] = rb[t] - mb;
        }
        dominance_merge(ra, rb, ac, bc, pts, pts_tmp, &out(q, 0));
        continue;
      }
      const std::vector<double>& sv = tree_on_a ? rb : ra;  // sweep dimension
      const std::vector<double>& tu = sa;                   // distinct values of the tree dimension
      const Index K = static_cast<Index>(tu.size());
      tree.assign(static_cast<size_t>(K + 1), DomNode{});
      keyed.resize(n);
      for (Index t = 0; t < n; ++t) keyed[t] = {sv[t], t};
      std::sort(keyed.begin(), keyed.end(),
                [](const std::pair<double, Index>& x, const std::pair<double, Index>& y) { return x.first < y.first; });
      ord.resize(n);
      for (Index t = 0; t < n; ++t) ord[t] = keyed[t].second;
      // The medians (the n/2-th smallest value, as nth_element gives it) from the order and the ranks already made:
      // the sweep value at position n/2, the tree value whose cumulative rank count first exceeds n/2.
      rcount.assign(static_cast<size_t>(K), 0);
      for (Index t = 0; t < n; ++t) ++rcount[brank[t]];
      Index r = 0, below = rcount[0];
      while (below <= n / 2) below += rcount[++r];
      const double sweep_median = keyed[n / 2].first, tree_median = tu[r];
      const double ma = tree_on_a ? tree_median : sweep_median, mb = tree_on_a ? sweep_median : tree_median;
      for (Index t = 0; t < n; ++t) {
        ac[t] = ra[t] - ma;
        bc[t] = rb[t] - mb;
      }
      double acc[2 * kNumDominance] = {};
      Index s = 0;
      while (s < n) {
        Index e = s + 1;
        while (e < n && keyed[e].first == keyed[s].first) ++e;
        for (Index t = s; t < e; ++t) {  // query: inserted rows are strictly smaller in the sweep value
          const Index i = ord[t];
          double S[kNode] = {};
          for (Index p = brank[i]; p > 0; p -= p & (-p))  // ranks < brank[i]: strictly smaller tree value
            for (int c = 0; c < kNode; ++c) S[c] += tree[p].v[c];
          add_pairs(S, ac[i], bc[i], acc);
        }
        for (Index t = s; t < e; ++t) {
          const Index i = ord[t];
          double v[kNode];
          node_terms(ac[i], bc[i], v);
          for (Index p = brank[i] + 1; p <= K; p += p & (-p))
            for (int c = 0; c < kNode; ++c) tree[p].v[c] += v[c];
        }
        s = e;
      }
      for (int c = 0; c < 2 * kNumDominance; ++c) out(q, c) = acc[c];
    }
  });
  return out;
}

RowMatrix threshold_pair_sums(const double* z, const GroupIndex& groups, double eps, int n_threads) {
  const Index m = groups.n_rows(), n_groups = groups.n_groups();
  require(eps >= 0.0, "eps must be >= 0");
  RowMatrix out = RowMatrix::Zero(n_groups, 5);
  if (m == 0) return out;
  const IndexVector& offsets = groups.offsets;
  const IndexVector& idx = groups.order;
  parallel_for(0, n_groups, n_threads, 1, [&](Index q0, Index q1) {
    std::vector<double> zs, s1, s2, a1;
    for (Index q = q0; q < q1; ++q) {
      const Index lo = offsets[q], n = offsets[q + 1] - lo;
      if (n < 2) continue;
      zs.resize(n);
      double mz = 0.0;
      for (Index t = 0; t < n; ++t) mz += z[idx[lo + t]];
      mz /= static_cast<double>(n);
      for (Index t = 0; t < n; ++t) zs[t] = z[idx[lo + t]] - mz;
      std::sort(zs.begin(), zs.end());
      // suffix sums: s1[p] = sum_{j >= p} z_j, s2[p] = sum_{j >= p} z_j^2
      s1.assign(n + 1, 0.0);
      s2.assign(n + 1, 0.0);
      a1.assign(n + 1, 0.0);
      for (Index p = n - 1; p >= 0; --p) {
        s1[p] = s1[p + 1] + zs[p];
        s2[p] = s2[p + 1] + zs[p] * zs[p];
        a1[p] = a1[p + 1] + std::abs(zs[p]);
      }
      // the expanded terms cancel where z_j - t is small beside z_j and t (a wide eps): their magnitudes (columns 3,
      // 4) let the caller see the digits lost and sum those groups' pairs directly
      double cnt = 0.0, sum1 = 0.0, sum2 = 0.0, mag1 = 0.0, mag2 = 0.0;
      Index p = 0;
      for (Index i = 0; i < n; ++i) {
        const double t = zs[i] + eps;  // partners j with z_j - z_i > eps, i.e. z_j > t (j > i)
        if (p < i + 1) p = i + 1;
        while (p < n && !(zs[p] > t)) ++p;
        const double c = static_cast<double>(n - p);
        cnt += c;
        sum1 += s1[p] - c * t;
        sum2 += s2[p] - 2.0 * t * s1[p] + c * t * t;
        mag1 += a1[p] + c * std::abs(t);
        mag2 += s2[p] + 2.0 * std::abs(t) * a1[p] + c * t * t;
      }
      out(q, 0) = cnt;
      out(q, 1) = sum1;
      out(q, 2) = sum2;
      out(q, 3) = mag1;
      out(q, 4) = mag2;
    }
  });
  return out;
}

}  // namespace fastrank
