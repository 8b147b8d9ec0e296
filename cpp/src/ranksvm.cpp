#include "fastrank/ranksvm.hpp"

#include <Eigen/LU>
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <type_traits>
#include <utility>

#include "fastrank/errors.hpp"
#include "fastrank/interrupt.hpp"
#include "fastrank/lapack.hpp"
#include "fastrank/parallel.hpp"
#include "fastrank/segment_search.hpp"

namespace fastrank {

namespace {

// Below this many rows the oracle runs on the calling thread (thread start-up would dominate): linear fits in groups
// of 10-300 rows took 1.1-1.3 times as long on two threads as on one at 3,000 rows, 0.76-0.94 times at 5,000-10,000.
constexpr Index kSerialRows = 5000;

// Counts, sums of f and sums of f^2 of the inserted rows per target level, with prefix queries.
struct LevelFenwick {
  struct Node {
    double cnt = 0.0, sum = 0.0, sq = 0.0;
  };
  std::vector<Node> t;
  Node total;
  Index K = 0;
  void reset(Index k) {
    K = k;
    t.assign(static_cast<size_t>(k + 1), Node());
    total = Node();
  }
  void add(Index level, double c, double s, double q) {
    total.cnt += c;
    total.sum += s;
    total.sq += q;
    for (Index i = level + 1; i <= K; i += i & (-i)) {
      t[i].cnt += c;
      t[i].sum += s;
      t[i].sq += q;
    }
  }
  // Sums over levels 0 .. level-1.
  Node below(Index level) const {
    Node r;
    for (Index i = level; i > 0; i -= i & (-i)) {
      r.cnt += t[i].cnt;
      r.sum += t[i].sum;
      r.sq += t[i].sq;
    }
    return r;
  }
  // Sums over levels level+1 .. K-1.
  Node above(Index level) const {
    Node b = below(level + 1), r;
    r.cnt = total.cnt - b.cnt;
    r.sum = total.sum - b.sum;
    r.sq = total.sq - b.sq;
    return r;
  }
};

struct GroupWork {
  std::vector<std::pair<double, std::int32_t>> keyed;
  std::vector<double> fv, vv;
  LevelFenwick fen;
};

}  // namespace

// ---------------------------------------------------------------------------------------------
// The pair-free oracle
// ---------------------------------------------------------------------------------------------

PairwiseHingeLoss PairwiseHingeLoss::from_groups(VectorCRef y, IndexVectorCRef order, IndexVectorCRef offsets) {
  PairwiseHingeLoss P;
  P.kind_ = Kind::Groups;
  const Index m = y.size();
  P.m_ = m;
  require(order.size() == m, "group order must list every row once");
  require(offsets.size() >= 2 && offsets[0] == 0 && offsets[offsets.size() - 1] == m,
          "group offsets must run from 0 to the number of rows");
  std::vector<char> seen(static_cast<size_t>(m), 0);
  for (Index s = 0; s < m; ++s) {
    const std::int64_t r = order[s];
    require(r >= 0 && r < m && !seen[r], "group order must be a permutation of the rows");
    seen[r] = 1;
  }
  const Index q = offsets.size() - 1;
  P.order_.assign(order.data(), order.data() + m);
  P.offsets_.assign(offsets.data(), offsets.data() + q + 1);
  P.level_.assign(static_cast<size_t>(m), 0);
  P.n_levels_.assign(static_cast<size_t>(q), 0);
  std::vector<std::pair<double, Index>> buf;
  for (Index g = 0; g < q; ++g) {
    const Index a = P.offsets_[g], b = P.offsets_[g + 1];
    require(b >= a, "group offsets must be non-decreasing");
    buf.clear();
    for (Index s = a; s < b; ++s) buf.emplace_back(y[P.order_[s]], s);
    std::sort(buf.begin(), buf.end());
    std::int32_t level = -1;
    double run = 0.0, sumsq = 0.0;
    for (size_t r = 0; r < buf.size(); ++r) {
      if (r == 0 || buf[r].first != buf[r - 1].first) {
        sumsq += run * run;
        run = 0.0;
        ++level;
      }
      run += 1.0;
      P.level_[buf[r].second] = level;
    }
    sumsq += run * run;
    P.n_levels_[g] = level + 1;
    const double n = static_cast<double>(b - a);
    P.n_pairs_ += 0.5 * (n * n - sumsq);
  }
  P.sorted_.assign(static_cast<size_t>(m), 0);
  return P;
}

PairwiseHingeLoss PairwiseHingeLoss::from_graph(Index m, IndexVectorCRef head, IndexVectorCRef tail,
                                                VectorCRef weight) {
  PairwiseHingeLoss P;
  P.kind_ = Kind::Graph;
  P.m_ = m;
  const Index l = head.size();
  require(tail.size() == l && weight.size() == l, "preference arrays must have one entry per edge");
  for (Index e = 0; e < l; ++e) {
    require(head[e] >= 0 && head[e] < m && tail[e] >= 0 && tail[e] < m, "preference pair refers to a missing row");
    require(head[e] != tail[e], "a preference pair is a self-loop");
    require(std::isfinite(weight[e]) && weight[e] >= 0.0, "preference weights must be finite and >= 0");
    P.n_pairs_ += weight[e];
  }
  P.head_.assign(head.data(), head.data() + l);
  P.tail_.assign(tail.data(), tail.data() + l);
  P.weight_.assign(weight.data(), weight.data() + l);
  P.edge_active_.assign(static_cast<size_t>(l), 0);
  return P;
}

void PairwiseHingeLoss::set_row_margins(VectorCRef y) {
  require(kind_ == Kind::Groups, "per-pair margins y_i - y_j need targets, not a preference graph");
  require(y.size() == m_, "row margins need one target per row");
  row_margin_.assign(y.data(), y.data() + m_);
  margin_ = 0.0;
}

double PairwiseHingeLoss::margin_scale() const {
  if (row_margin_.empty()) return margin_;
  double mean = 0.0, sq = 0.0;
  for (double v : row_margin_) mean += v;
  mean /= static_cast<double>(m_);
  for (double v : row_margin_) sq += (v - mean) * (v - mean);
  return std::sqrt(sq / static_cast<double>(m_));
}

double PairwiseHingeLoss::evaluate(SvmLoss loss, const double* f, double* grad, double* active, int n_threads) {
  interrupt::poll();  // every step of every solver (Newton, line searches, cutting planes) passes here
  double value;
  if (!row_margin_.empty()) {
    shifted_.resize(static_cast<size_t>(m_));
    for (Index i = 0; i < m_; ++i) shifted_[i] = f[i] - row_margin_[i];
    double* g = grad;
    if (active && !g) {
      grad_buffer_.resize(static_cast<size_t>(m_));
      g = grad_buffer_.data();
    }
    value = evaluate_groups(loss, shifted_.data(), g, nullptr, n_threads);
    if (active) {  // sum over active pairs of (y_i - y_j) = L + sum_active (f_i - f_j) = L - g^T f (hinge)
      double gf = 0.0;
      for (Index i = 0; i < m_; ++i) gf += g[i] * f[i];
      *active = value - gf;
    }
  } else {
    value = kind_ == Kind::Groups ? evaluate_groups(loss, f, grad, active, n_threads)
                                  : evaluate_graph(loss, f, grad, active);
  }
  hessian_ready_ = true;  // the squared hinge's generalized Hessian at this f: its active pairs are the hinge's
  grad_magnitude_ = 0.0;
  if (track_rows_ && grad && loss == SvmLoss::SquaredHinge)  // the hinge's gradient counts pairs: exact
    for (double r : row_magnitude_) grad_magnitude_ += r * r;
  grad_magnitude_ = std::sqrt(grad_magnitude_);
  return value;
}

double PairwiseHingeLoss::evaluate_like(const PairwiseHingeLoss& sorted, SvmLoss loss, const double* f, double* grad,
                                        double* active, int n_threads) {
  const bool reuse = kind_ == Kind::Groups && sorted.kind_ == Kind::Groups && sorted.m_ == m_ &&
                     sorted.fv_cache_.size() == static_cast<size_t>(m_);
  presorted_ = reuse ? &sorted : nullptr;
  const double value = evaluate(loss, f, grad, active, n_threads);
  presorted_ = nullptr;
  return value;
}

double PairwiseHingeLoss::evaluate_groups(SvmLoss loss, const double* f, double* grad, double* active_out,
                                          int n_threads) {
  const Index q = static_cast<Index>(n_levels_.size());
  std::vector<double> group_loss(static_cast<size_t>(q), 0.0), group_active(static_cast<size_t>(q), 0.0),
      group_magnitude(static_cast<size_t>(q), 0.0);
  if (fv_cache_.size() != static_cast<size_t>(m_)) fv_cache_.assign(static_cast<size_t>(m_), 0.0);
  if (track_rows_ && grad) row_magnitude_.assign(static_cast<size_t>(m_), 0.0);
  const bool squared = (loss == SvmLoss::SquaredHinge);
  const int threads = m_ < kSerialRows ? 1 : n_threads;
  // Two instantiations of the sweeps: the magnitudes' bookkeeping costs nothing where it is not tracked.
  auto sweeps = [&](auto tracked) {
    parallel_for(0, q, threads, 1, [&](Index glo, Index ghi) {
      constexpr bool track = decltype(tracked)::value;
      const bool track_rows = track && track_rows_ && grad;
      GroupWork w;
      for (Index g = glo; g < ghi; ++g) {
        const Index a = offsets_[g], n = offsets_[g + 1] - a;
        std::int32_t* sorted = sorted_.data() + a;
        double* fv = fv_cache_.data() + a;
        const std::int32_t* lev = level_.data() + a;
        const std::int64_t* rows = order_.data() + a;
        if (n_levels_[g] < 2) {  // no pair inside this group
          for (Index s = 0; s < n; ++s) {
            sorted[s] = static_cast<std::int32_t>(s);
            if (grad) grad[rows[s]] = 0.0;
          }
          continue;
        }
        if (presorted_) {  // the same scores, sorted (and shifted) by another oracle's last evaluation
          std::copy_n(presorted_->sorted_.data() + a, n, sorted);
          std::copy_n(presorted_->fv_cache_.data() + a, n, fv);
        } else {
          w.keyed.resize(static_cast<size_t>(n));
          for (Index s = 0; s < n; ++s) w.keyed[s] = {f[rows[s]], static_cast<std::int32_t>(s)};
          std::sort(w.keyed.begin(), w.keyed.end(),
                    [](const auto& x, const auto& y) { return x.first < y.first; });
          // Losses depend on differences only: shifting by a member's value (exact for the
          // integer-valued f of the tests) keeps the expanded squares from cancelling digits.
          const double shift = w.keyed[n / 2].first;
          for (Index r = 0; r < n; ++r) {
            sorted[r] = w.keyed[r].second;
            fv[w.keyed[r].second] = w.keyed[r].first - shift;
          }
        }
        LevelFenwick& fen = w.fen;
        double L = 0.0, act = 0.0, mag = 0.0;
        // Sweep 1, rows s as the preferred row: partners t with level_t < level_s and
        // f_t > f_s - 1, inserted in decreasing f as the threshold f_s - 1 decreases.
        fen.reset(n_levels_[g]);
        Index ptr = n - 1;
        for (Index r = n - 1; r >= 0; --r) {
          const Index s = sorted[r];
          const double thr = fv[s] - margin_;
          while (ptr >= 0 && fv[sorted[ptr]] > thr) {
            const double x = fv[sorted[ptr]];
            fen.add(lev[sorted[ptr]], 1.0, x, squared ? x * x : 0.0);
            --ptr;
          }
          const LevelFenwick::Node b = fen.below(lev[s]);
          const double c = margin_ - fv[s];  // margin of pair (s, t) is c + f_t
          act += b.cnt;
          if (squared) {
            L += b.cnt * c * c + 2.0 * c * b.sum + b.sq;
            if constexpr (track) mag += b.cnt * c * c + 2.0 * std::abs(c * b.sum) + b.sq;
            if (grad) grad[rows[s]] = -2.0 * (b.cnt * c + b.sum);
            if (track_rows) row_magnitude_[rows[s]] = 2.0 * (b.cnt * std::abs(c) + std::abs(b.sum));
          } else {
            L += b.cnt * c + b.sum;
            if constexpr (track) mag += b.cnt * std::abs(c) + std::abs(b.sum);
            if (grad) grad[rows[s]] = -b.cnt;
          }
        }
        // Sweep 2, rows s as the less preferred row: partners t with level_t > level_s and
        // f_t - 1 < f_s (the same predicate as sweep 1), inserted in increasing f.
        fen.reset(n_levels_[g]);
        ptr = 0;
        for (Index r = 0; r < n; ++r) {
          const Index s = sorted[r];
          while (ptr < n && fv[sorted[ptr]] - margin_ < fv[s]) {
            fen.add(lev[sorted[ptr]], 1.0, fv[sorted[ptr]], 0.0);
            ++ptr;
          }
          const LevelFenwick::Node u = fen.above(lev[s]);
          if (grad) {
            if (squared) {
              grad[rows[s]] += 2.0 * (u.cnt * (margin_ + fv[s]) - u.sum);
              if (track_rows) row_magnitude_[rows[s]] += 2.0 * (u.cnt * std::abs(margin_ + fv[s]) + std::abs(u.sum));
            } else {
              grad[rows[s]] += u.cnt;
            }
          }
        }
        group_loss[g] = L;
        group_active[g] = act;
        group_magnitude[g] = mag;
      }
    });
  };
  if (track_magnitudes_)
    sweeps(std::true_type{});
  else
    sweeps(std::false_type{});
  double total = 0.0, act = 0.0;
  value_magnitude_ = 0.0;
  for (Index g = 0; g < q; ++g) {  // fixed order: results do not depend on n_threads
    total += group_loss[g];
    act += group_active[g];
    value_magnitude_ += group_magnitude[g];
  }
  if (active_out) *active_out = act;
  return total;
}

double PairwiseHingeLoss::evaluate_graph(SvmLoss loss, const double* f, double* grad, double* active_out) {
  const Index l = static_cast<Index>(head_.size());
  if (grad) std::fill(grad, grad + m_, 0.0);
  const bool track = track_magnitudes_, track_rows = track_rows_ && grad;
  if (track_rows) row_magnitude_.assign(static_cast<size_t>(m_), 0.0);
  double total = 0.0, act = 0.0;
  value_magnitude_ = 0.0;
  const bool squared = (loss == SvmLoss::SquaredHinge);
  for (Index e = 0; e < l; ++e) {
    const Index h = head_[e], t = tail_[e];
    const double z = margin_ - (f[h] - f[t]), we = weight_[e];
    const bool on = z > 0.0 && we > 0.0;
    edge_active_[e] = on;
    if (!on) continue;
    act += we;
    const double size = track ? std::abs(z) + std::abs(f[h]) + std::abs(f[t]) : 0.0;  // z: rounding of f_h - f_t
    if (squared) {
      total += we * z * z;
      value_magnitude_ += we * size * size;
      if (grad) {
        grad[h] -= 2.0 * we * z;
        grad[t] += 2.0 * we * z;
      }
      if (track_rows) {
        row_magnitude_[h] += 2.0 * we * size;
        row_magnitude_[t] += 2.0 * we * size;
      }
    } else {
      total += we * z;
      value_magnitude_ += we * size;
      if (grad) {
        grad[h] -= we;
        grad[t] += we;
      }
    }
  }
  if (active_out) *active_out = act;
  return total;
}

namespace {

// Band pairs of every level visited per row at most: beyond it the band's pairs cost more than the sweeps.
constexpr Index kBandVisits = 16;

// The band (f_r - margin, f_r - lowered] of every position r of a group sorted by f (f_at(k) increasing in k), the
// predicate of laplacian_times: visit(r, lo, hi) with the window [lo, hi) of positions inside it, which moves up with
// r.  Stops, returning false, when visit does.
template <class FAt, class Visit>
bool band_windows(FAt f_at, Index n, double margin, double lowered, Visit visit) {
  Index lo = 0, hi = 0;
  for (Index r = 0; r < n; ++r) {
    while (lo < n && !(f_at(lo) > f_at(r) - margin)) ++lo;
    if (hi < lo) hi = lo;
    while (hi < n && !(f_at(hi) > f_at(r) - lowered)) ++hi;
    if (!visit(r, lo, hi)) return false;
  }
  return true;
}

// The rows (of every level) inside the band of each row, summed over the rows, for scores fs sorted increasingly.
Index band_visits(const double* fs, Index n, double margin, double lowered) {
  Index visits = 0;
  band_windows([fs](Index k) { return fs[k]; }, n, margin, lowered, [&](Index, Index lo, Index hi) {
    visits += hi - lo;
    return true;
  });
  return visits;
}

}  // namespace

bool PairwiseHingeLoss::huber_band(double h, const double* f, double* grad, double* smooth, double* grad_error,
                                   int n_threads) const {
  interrupt::poll();
  constexpr double u = std::numeric_limits<double>::epsilon();
  std::vector<double> add(static_cast<size_t>(m_), 0.0), err(static_cast<size_t>(m_), 0.0);
  double total = 0.0;
  // The band's upper end as the copy with the lowered margin tests it (HuberTerm): every pair is
  // counted by exactly one of that copy's hinge and the band.
  const double lowered = margin_ - h;
  if (kind_ == Kind::Graph) {
    for (Index e = 0; e < static_cast<Index>(head_.size()); ++e) {
      const Index i = head_[e], j = tail_[e];
      const double z = margin_ - (f[i] - f[j]), we = weight_[e];
      if (!(z > 0.0 && !(lowered - (f[i] - f[j]) > 0.0) && we > 0.0)) continue;
      const double theta = std::min(1.0, z / h);
      const double e_ij = 2.0 * u * (std::abs(f[i]) + std::abs(f[j]) + std::abs(margin_)) / h;
      add[i] -= we * theta;
      add[j] += we * theta;
      err[i] += we * e_ij;
      err[j] += we * e_ij;
      total += we * z * (1.0 - theta);
    }
  } else {
    require(fv_cache_.size() == static_cast<size_t>(m_), "huber_band needs an evaluation first");
    const Index q = static_cast<Index>(n_levels_.size());
    std::vector<double> group_total(static_cast<size_t>(q), 0.0);
    std::vector<char> group_ok(static_cast<size_t>(q), 1);
    const int threads = m_ < kSerialRows ? 1 : n_threads;
    parallel_for(0, q, threads, 1, [&](Index glo, Index ghi) {
      std::vector<double> fs, acc, acc_err;  // scores, l_h' sums and their rounding in sorted order (contiguous)
      std::vector<std::int32_t> ls;
      for (Index g = glo; g < ghi; ++g) {
        const Index a = offsets_[g], n = offsets_[g + 1] - a;
        if (n_levels_[g] < 2) continue;
        const std::int32_t* sorted = sorted_.data() + a;
        const std::int64_t* rows = order_.data() + a;
        fs.resize(static_cast<size_t>(n));
        ls.resize(static_cast<size_t>(n));
        for (Index k = 0; k < n; ++k) {
          fs[k] = fv_cache_[a + sorted[k]];
          ls[k] = level_[a + sorted[k]];
        }
        group_ok[g] = band_visits(fs.data(), n, margin_, lowered) <= kBandVisits * n;
        if (!group_ok[g]) continue;
        acc.assign(static_cast<size_t>(n), 0.0);
        acc_err.assign(static_cast<size_t>(n), 0.0);
        double sum = 0.0;
        // s in increasing f; its band partners t (level below s) have f_s - margin < f_t <= f_s - lowered
        band_windows([&fs](Index k) { return fs[k]; }, n, margin_, lowered, [&](Index r, Index lo, Index hi) {
          for (Index k = lo; k < hi; ++k) {
            if (ls[k] >= ls[r]) continue;
            const double z = std::min(h, std::max(0.0, margin_ - (fs[r] - fs[k]))), theta = z / h;
            const double e_rk = 2.0 * u * (std::abs(fs[r]) + std::abs(fs[k]) + std::abs(margin_)) / h;
            acc[r] -= theta;
            acc[k] += theta;
            acc_err[r] += e_rk;
            acc_err[k] += e_rk;
            sum += z * (1.0 - theta);
          }
          return true;
        });
        for (Index k = 0; k < n; ++k) {
          add[rows[sorted[k]]] = acc[k];
          err[rows[sorted[k]]] = acc_err[k];
        }
        group_total[g] = sum;
      }
    });
    for (Index g = 0; g < q; ++g) {
      if (!group_ok[g]) return false;
      total += group_total[g];
    }
  }
  double e2 = 0.0;
  for (Index i = 0; i < m_; ++i) {
    grad[i] += add[i];
    e2 += err[i] * err[i];
  }
  *smooth = total;
  *grad_error = std::sqrt(e2);
  return true;
}

bool PairwiseHingeLoss::band_hessian_times(double h, const double* v, double* out, int n_threads) const {
  require(hessian_ready_, "band_hessian_times needs an evaluation first");
  interrupt::poll();
  if (kind_ == Kind::Graph) return false;
  laplacian_times(margin_ - h, 1.0 / h, v, out, n_threads);  // the lowered copy's margin, rounded alike
  return true;
}

bool PairwiseHingeLoss::band_pairs(double h, Index limit, std::vector<std::int64_t>& pairs) const {
  pairs.clear();
  if (kind_ != Kind::Groups || !hessian_ready_ || fv_cache_.size() != static_cast<size_t>(m_)) return false;
  const double lowered = margin_ - h;
  Index visited = 0;
  for (Index g = 0; g < static_cast<Index>(n_levels_.size()); ++g) {
    if (n_levels_[g] < 2) continue;
    const Index a = offsets_[g], n = offsets_[g + 1] - a;
    const std::int32_t* sorted = sorted_.data() + a;
    const double* fv = fv_cache_.data() + a;
    const std::int32_t* lev = level_.data() + a;
    const std::int64_t* rows = order_.data() + a;
    // the partners t of s with level_t < level_s in the band
    const bool listed = band_windows([&](Index k) { return fv[sorted[k]]; }, n, margin_, lowered,
                                     [&](Index r, Index lo, Index hi) {
      visited += hi - lo;
      if (visited > 4 * limit) return false;  // a wide window of tied levels: conjugate gradients
      const Index s = sorted[r];
      for (Index k = lo; k < hi; ++k) {
        const Index t = sorted[k];
        if (lev[t] >= lev[s]) continue;
        pairs.push_back(rows[s]);
        pairs.push_back(rows[t]);
      }
      return static_cast<Index>(pairs.size()) <= 2 * limit;
    });
    if (!listed) return false;
  }
  return true;
}

bool PairwiseHingeLoss::pairs_at_margin(const double* f, double delta, Index limit, std::vector<std::int64_t>& pairs,
                                        std::vector<double>& weights) {
  pairs.clear();
  weights.clear();
  if (!row_margin_.empty()) return false;
  if (kind_ == Kind::Groups) {
    const double c = margin_;
    margin_ = c + delta;  // the band [margin - h, margin) of band_pairs
    const bool listed = band_pairs(2.0 * delta, limit, pairs);
    margin_ = c;
    weights.assign(pairs.size() / 2, 1.0);
    return listed;
  }
  for (Index e = 0; e < static_cast<Index>(head_.size()); ++e) {
    const double d = f[head_[e]] - f[tail_[e]];
    if (!(weight_[e] > 0.0 && d >= margin_ - delta && d < margin_ + delta)) continue;
    if (static_cast<Index>(weights.size()) >= limit) return false;
    pairs.push_back(head_[e]);
    pairs.push_back(tail_[e]);
    weights.push_back(weight_[e]);
  }
  return true;
}

void PairwiseHingeLoss::hessian_times(const double* v, double* out, int n_threads) const {
  require(hessian_ready_, "hessian_times needs an evaluation first");
  interrupt::poll();  // once per conjugate-gradient step
  if (kind_ == Kind::Graph) {
    std::fill(out, out + m_, 0.0);
    for (Index e = 0; e < static_cast<Index>(head_.size()); ++e) {
      if (!edge_active_[e]) continue;
      const Index h = head_[e], t = tail_[e];
      const double d = 2.0 * weight_[e] * (v[h] - v[t]);
      out[h] += d;
      out[t] -= d;
    }
    return;
  }
  laplacian_times(-std::numeric_limits<double>::infinity(), 2.0, v, out, n_threads);
}

// out = factor * L v, L the Laplacian of the pairs active at margin_ but not at `lowered` (every
// active pair for lowered = -inf), at the sort of the last evaluation: the pairs enter a Fenwick
// tree over the target levels as the sweep passes the margin and leave it as it passes `lowered`.
void PairwiseHingeLoss::laplacian_times(double lowered, double factor, const double* v, double* out,
                                        int n_threads) const {
  const Index q = static_cast<Index>(n_levels_.size());
  const int threads = m_ < kSerialRows ? 1 : n_threads;
  parallel_for(0, q, threads, 1, [&](Index glo, Index ghi) {
    GroupWork w;
    for (Index g = glo; g < ghi; ++g) {
      const Index a = offsets_[g], n = offsets_[g + 1] - a;
      const std::int64_t* rows = order_.data() + a;
      if (n_levels_[g] < 2) {
        for (Index s = 0; s < n; ++s) out[rows[s]] = 0.0;
        continue;
      }
      const std::int32_t* sorted = sorted_.data() + a;
      const double* fv = fv_cache_.data() + a;
      const std::int32_t* lev = level_.data() + a;
      w.vv.resize(static_cast<size_t>(n));
      w.fv.resize(static_cast<size_t>(n));
      double* res = w.vv.data();  // the sum of v over partners, per local row
      double* cnt = w.fv.data();  // the number of partners
      LevelFenwick& fen = w.fen;
      // Sweep 1: partners t below s with fv_s - margin < fv_t (and not fv_s - lowered < fv_t).
      fen.reset(n_levels_[g]);
      Index in = n - 1, out_ptr = n - 1;
      for (Index r = n - 1; r >= 0; --r) {
        const Index s = sorted[r];
        while (in >= 0 && fv[sorted[in]] > fv[s] - margin_) {
          fen.add(lev[sorted[in]], 1.0, v[rows[sorted[in]]], 0.0);
          --in;
        }
        while (out_ptr >= 0 && fv[sorted[out_ptr]] > fv[s] - lowered) {
          fen.add(lev[sorted[out_ptr]], -1.0, -v[rows[sorted[out_ptr]]], 0.0);
          --out_ptr;
        }
        const LevelFenwick::Node b = fen.below(lev[s]);
        res[s] = b.sum;
        cnt[s] = b.cnt;
      }
      // Sweep 2: partners t above s with fv_t - margin < fv_s (and not fv_t - lowered < fv_s).
      fen.reset(n_levels_[g]);
      in = 0;
      out_ptr = 0;
      for (Index r = 0; r < n; ++r) {
        const Index s = sorted[r];
        while (in < n && fv[sorted[in]] - margin_ < fv[s]) {
          fen.add(lev[sorted[in]], 1.0, v[rows[sorted[in]]], 0.0);
          ++in;
        }
        while (out_ptr < n && fv[sorted[out_ptr]] - lowered < fv[s]) {
          fen.add(lev[sorted[out_ptr]], -1.0, -v[rows[sorted[out_ptr]]], 0.0);
          ++out_ptr;
        }
        const LevelFenwick::Node u = fen.above(lev[s]);
        res[s] += u.sum;
        cnt[s] += u.cnt;
      }
      for (Index s = 0; s < n; ++s) out[rows[s]] = factor * (cnt[s] * v[rows[s]] - res[s]);
    }
  });
}

// ---------------------------------------------------------------------------------------------
// Models: f = X w (dense or CSR) or f = K beta, threaded matrix-vector products
// ---------------------------------------------------------------------------------------------

namespace {

// H = I + c D^T D (lower triangle) for D the differences x_i - x_j of the (i, j) in `pairs` (flattened), which
// difference(i, j, column) writes: blocks of 256 differences, one level-3 rank update (dsyrk) each.
template <class Difference>
void difference_gram(Index n, const std::vector<std::int64_t>& pairs, double c, Matrix& H, Difference&& difference) {
  constexpr Index kBlock = 256;
  const Index k = static_cast<Index>(pairs.size() / 2);
  H.setIdentity(n, n);
  Matrix D(n, std::min(k, kBlock));
  for (Index e = 0; e < k; e += kBlock) {
    const Index b = std::min(kBlock, k - e);
    for (Index t = 0; t < b; ++t) difference(pairs[2 * (e + t)], pairs[2 * (e + t) + 1], D.col(t));
    lapack::syrk_lower('N', n, b, c, D.data(), n, 1.0, H.data(), n);
  }
}

class DenseModel {
 public:
  DenseModel(RowMatrixCRef X, int n_threads) : X_(X), threads_(std::max(1, n_threads)) {}
  Index rows() const { return X_.rows(); }
  Index dim() const { return X_.cols(); }
  double frobenius() const { return X_.stableNorm(); }
  void times(const Vector& w, Vector& f) const {
    f.resize(X_.rows());
    parallel_for(0, X_.rows(), threads(), 4096, [&](Index lo, Index hi) {
      f.segment(lo, hi - lo).noalias() = X_.middleRows(lo, hi - lo) * w;
    });
  }
  void ttimes(const Vector& g, Vector& out) const {
    const Index m = X_.rows(), n = X_.cols();
    // chunks of 4096 rows (at most 64) whatever the threads, added in order: bit-identical for every n_jobs
    const int parts = static_cast<int>(std::min<Index>(64, std::max<Index>(1, m / 4096)));
    partial_.resize(static_cast<size_t>(parts));
    parallel_for(0, parts, threads(), 1, [&](Index lo, Index hi) {
      for (Index p = lo; p < hi; ++p) {
        const Index a = m * p / parts, b = m * (p + 1) / parts;
        partial_[p].noalias() = X_.middleRows(a, b - a).transpose() * g.segment(a, b - a);
      }
    });
    out = partial_[0];
    for (int p = 1; p < parts; ++p) out += partial_[p];
    (void)n;
  }

 private:
  RowMatrixCRef X_;
  int threads_;
  mutable std::vector<Vector> partial_;

  // One thread below 2^19 entries of X: at 10,000 rows of 20 features, threaded products made linear fits in groups
  // 1.16-1.24 times as long on two threads as on one.
  int threads() const { return X_.size() < (Index(1) << 19) ? 1 : threads_; }

 public:
  Index entries() const { return X_.size(); }
  // H = I + c sum over the (i, j) of `pairs` of (x_i - x_j)(x_i - x_j)^T, lower triangle.
  void pair_gram(const std::vector<std::int64_t>& pairs, double c, Matrix& H) const {
    difference_gram(X_.cols(), pairs, c, H, [&](Index i, Index j, Eigen::Ref<Vector> d) { difference(i, j, d); });
  }
  void difference(Index i, Index j, Eigen::Ref<Vector> d) const { d = X_.row(i).transpose() - X_.row(j).transpose(); }
  double max_row_norm() const { return X_.rows() == 0 ? 0.0 : X_.rowwise().norm().maxCoeff(); }
};

template <class I>
class CsrModel {
 public:
  CsrModel(const CsrView<I>& X, int n_threads) : X_(X), chunks_(product_chunks(X, n_threads)) {}
  Index rows() const { return X_.rows; }
  Index dim() const { return X_.cols; }
  Index entries() const { return X_.nnz(); }
  // As DenseModel's, each pair's difference scattered into a dense column.
  void pair_gram(const std::vector<std::int64_t>& pairs, double c, Matrix& H) const {
    difference_gram(X_.cols, pairs, c, H, [&](Index i, Index j, Eigen::Ref<Vector> d) { difference(i, j, d); });
  }
  double max_row_norm() const {
    double most = 0.0;
    for (Index i = 0; i < X_.rows; ++i) {
      double sq = 0.0;
      for (Index k = X_.begin(i); k < X_.end(i); ++k) sq += X_.data[k] * X_.data[k];
      most = std::max(most, sq);
    }
    return std::sqrt(most);
  }
  void difference(Index i, Index j, Eigen::Ref<Vector> d) const {
    d.setZero();
    for (Index k = X_.begin(i); k < X_.end(i); ++k) d[X_.indices[k]] += X_.data[k];
    for (Index k = X_.begin(j); k < X_.end(j); ++k) d[X_.indices[k]] -= X_.data[k];
  }
  double frobenius() const {
    const Index a = X_.begin(0);
    return X_.rows == 0 ? 0.0 : Eigen::Map<const Vector>(X_.data + a, X_.nnz()).stableNorm();
  }
  void times(const Vector& w, Vector& f) const {
    P_ = Eigen::Map<const RowMatrix>(w.data(), w.size(), 1);
    csr_times(X_, P_, out_, chunks_);
    f = Eigen::Map<const Vector>(out_.data(), out_.rows());
  }
  void ttimes(const Vector& g, Vector& out) const {
    P_ = Eigen::Map<const RowMatrix>(g.data(), g.size(), 1);
    csr_transpose_times(X_, P_, out_, chunks_, buffers_);
    out = Eigen::Map<const Vector>(out_.data(), out_.rows());
  }

 private:
  CsrView<I> X_;
  RowChunks chunks_;
  mutable RowMatrix P_, out_;
  mutable std::vector<RowMatrix> buffers_;
};

// K p for a symmetric column-major K: column blocks give contiguous dot products (K^T p = K p).
class KernelOperator {
 public:
  KernelOperator(MatrixCRef K, int n_threads) : K_(K), threads_(std::max(1, n_threads)) {}
  Index rows() const { return K_.rows(); }
  void times(const Vector& p, Vector& out) const {
    out.resize(K_.cols());
    // One thread below 2^21 entries of K: a second one's start cost more than its half of the product saved (squared
    // hinge, Gaussian, m = 1000: 0.105 s on one thread, 0.125 s on two)
    parallel_for(0, K_.cols(), K_.size() < (Index(1) << 21) ? 1 : threads_, 256, [&](Index lo, Index hi) {
      out.segment(lo, hi - lo).noalias() = K_.middleCols(lo, hi - lo).transpose() * p;
    });
  }
  double operator()(Index i, Index j) const { return K_(i, j); }
  double max_row_norm() const { return K_.rows() == 0 ? 0.0 : K_.colwise().norm().maxCoeff(); }  // K symmetric

 private:
  MatrixCRef K_;
  int threads_;
};

void check_options(const RankSvmOptions& o) {
  require(std::isfinite(o.C) && o.C > 0.0, "C must be finite and > 0");
  require(std::isfinite(o.tol) && o.tol >= 0.0, "tol must be finite and >= 0");
  require(o.max_iter >= 1, "max_iter must be >= 1");
}

constexpr double kArmijo = 1e-4;  // sufficient-decrease constant of the line searches

// Conjugate-gradient cap per Newton step (the exact step needs at most `dim` steps).
Index cg_cap(Index dim) { return std::max<Index>(20, std::min<Index>(2 * dim, 2000)); }

// Armijo backtracking along w + t d, where phi(t) returns the objective at step t (and leaves the
// oracle's state at that point); returns the accepted t or 0 when no decrease is possible.  also(t, Ft)
// may accept a step the Armijo test on F refuses.
template <class Phi, class Also>
double backtrack(double F0, double slope, Phi&& phi, double* F_out, Also&& also) {
  double t = 1.0;
  for (int k = 0; k < 60; ++k) {
    const double Ft = phi(t);
    if (Ft <= F0 + kArmijo * t * slope || also(t, Ft)) {
      *F_out = Ft;
      return t;
    }
    t *= 0.5;
  }
  return 0.0;
}

template <class Phi>
double backtrack(double F0, double slope, Phi&& phi, double* F_out) {
  return backtrack(F0, slope, phi, F_out, [](double, double) { return false; });
}

// The Newton step can no longer decrease F measurably (predicted decrease below a few ulps of F)
// although the gradient test is not met: tol was below what double precision resolves.  The
// point is then optimal to working precision provided the gradient already fell by 1e-6 (converged
// only if the criterion also reached tol).
bool at_precision_floor(double F, double slope, double gnorm, double g0) {
  return -slope <= 8.0 * std::numeric_limits<double>::epsilon() * std::abs(F) && gnorm <= 1e-6 * g0;
}

// The smooth pairwise losses Newton minimises: value and gradient in f, and generalized-Hessian
// products at the f of the last evaluation.
class SquaredHingeTerm {
 public:
  explicit SquaredHingeTerm(PairwiseHingeLoss& P) : P_(P) {}
  double evaluate(const double* f, double* g, int nt) { return P_.evaluate(SvmLoss::SquaredHinge, f, g, nullptr, nt); }
  void hessian_times(const double* v, double* out, int nt) const { P_.hessian_times(v, out, nt); }
  template <class Model>
  bool newton_matrix(const Model&, double, Matrix&) const { return false; }  // conjugate gradients
  void record_cg_steps(Index) {}
  double rounding() const { return 0.0; }  // Armijo on F alone

 private:
  PairwiseHingeLoss& P_;
};

// The Huber-smoothed hinge of width h: l_h(z) = z^2 / (2h) on [0, h], z - h/2 above, 0 below, is
// (max(0, z)^2 - max(0, z - h)^2) / (2h): the squared hinges of the pairs at margin c and at the
// lowered margin c - h (a second oracle), so value, gradient and Hessian products are two runs of
// the squared-hinge sweeps.  l_h'(z) = min(1, z^+ / h).  At a narrow band those two sums keep too few
// digits of their difference; there the band's pairs are formed one by one (band_value).
class HuberTerm {
 public:
  // precision: the rounding of a value beyond which the band's pairs are formed one by one (where few).
  // cg_steps: the conjugate-gradient steps of the last Newton step before this term (newton_matrix).
  HuberTerm(PairwiseHingeLoss& P, PairwiseHingeLoss& lowered, double h, double precision = 0.0, Index cg_steps = 4)
      : P_(P), Q_(lowered), h_(h), precision_(precision), cg_steps_(cg_steps) {
    Q_.set_margin(P.margin() - h);
  }
  double evaluate(const double* f, double* g, int nt) {
    double value = 0.0;
    banded_ = g && band_wanted_ && band_value(f, g, nt, &value);
    if (banded_) return value;
    buf_.resize(static_cast<size_t>(P_.n_rows()));
    const double a = P_.evaluate(SvmLoss::SquaredHinge, f, g, nullptr, nt);
    const double b = Q_.evaluate_like(P_, SvmLoss::SquaredHinge, f, g ? buf_.data() : nullptr, nullptr, nt);
    if (g)
      for (Index i = 0; i < P_.n_rows(); ++i) g[i] = (g[i] - buf_[i]) / (2.0 * h_);
    // The rounding of two sums over the rows (typical growth sqrt(n) u sum |x_i|), amplified by 1 / (2h).
    const double u = std::sqrt(static_cast<double>(P_.n_rows())) * std::numeric_limits<double>::epsilon();
    rounding_ = u * (a + b) / (2.0 * h_);
    // The same growth on the expanded terms the sweeps added (what a certificate may rely on).
    value_error_ = u * (P_.value_magnitude() + Q_.value_magnitude()) / (2.0 * h_);
    grad_error_ = g ? u * (P_.grad_magnitude() + Q_.grad_magnitude()) / (2.0 * h_) : 0.0;
    value = (a - b) / (2.0 * h_);
    if (g && !band_wanted_ && value_error_ > precision_) {
      // the band's pairs from here on, this value included: a line search compares values formed alike
      band_wanted_ = true;
      banded_ = band_value(f, g, nt, &value);
    }
    return value;
  }
  // Rounding scale of the last evaluated value: changes below it are noise.
  double rounding() const { return rounding_; }
  // Error bounds of the last value and of its gradient (2-norm over the rows; from the expanded sums only where
  // their per-row terms were tracked).
  double value_error() const { return value_error_; }
  double grad_error() const { return grad_error_; }
  // Whether the last evaluation formed the band's pairs one by one.
  bool banded() const { return banded_; }
  void hessian_times(const double* v, double* out, int nt) const {
    if (P_.band_hessian_times(h_, v, out, nt)) return;
    buf_.resize(static_cast<size_t>(P_.n_rows()));
    P_.hessian_times(v, out, nt);
    Q_.hessian_times(v, buf_.data(), nt);
    for (Index i = 0; i < P_.n_rows(); ++i) out[i] = (out[i] - buf_[i]) / (2.0 * h_);
  }
  double width() const { return h_; }
  // The Newton matrix I + (C/h) sum over the band's pairs of (x_i - x_j)(x_i - x_j)^T, formed where that costs less
  // than conjugate gradients.  At a narrow band it is the identity plus a matrix of the band's rank k, on which
  // conjugate gradients take up to min(k, p) steps of two products with X each, 2 nnz(X) multiply-adds a step.
  // Formed from the pairs and factored it costs k p^2 / 2 + p^3 / 6 multiply-adds of level-3 BLAS, which ran 4-7
  // times as fast per multiply-add as the products (dsyrk and two products at m = 10,000 x 700 and 20,000 x 136, 2
  // cores): it is taken while it costs less than 4 times as many conjugate-gradient steps as the last solve took (4
  // before any), with at most 2m pairs (their list: 32 bytes a row) and 4096 features (the p x p matrix: 128 MB).
  template <class Model>
  bool newton_matrix(const Model& X, double C, Matrix& H) const {
    const double p = static_cast<double>(X.dim()), budget = 4.0 * static_cast<double>(cg_steps_) * 2.0 * X.entries();
    const double limit = std::min((budget - p * p * p / 6.0) / (0.5 * p * p), 2.0 * X.rows());
    if (p > 4096 || limit < 1.0 || !P_.band_pairs(h_, static_cast<Index>(limit), pairs_)) return false;
    X.pair_gram(pairs_, C / h_, H);
    return true;
  }
  // The conjugate-gradient steps of the last Newton step that took them (newton_matrix's yardstick).
  void record_cg_steps(Index k) { cg_steps_ = std::max<Index>(1, k); }
  Index cg_steps() const { return cg_steps_; }

 private:
  // l_h(z) = (z^+ + (z - h)^+) / 2 - [0 < z <= h] z (1 - z / h) / 2: two hinge sums (cancelling digits of f's size,
  // not amplified by 1 / h) and the band's pairs formed one by one; the gradient: the pairs above the band counted
  // exactly, the band's z / h.  False (and nothing changed) where the band holds too many pairs at f.
  bool band_value(const double* f, double* g, int nt, double* value) {
    const double S = P_.evaluate(SvmLoss::Hinge, f, nullptr, nullptr, nt), S_mag = P_.value_magnitude();
    buf_.resize(static_cast<size_t>(P_.n_rows()));
    const double S_low = Q_.evaluate_like(P_, SvmLoss::Hinge, f, buf_.data(), nullptr, nt);
    double band = 0.0, band_error = 0.0;
    if (!P_.huber_band(h_, f, buf_.data(), &band, &band_error, nt)) return false;
    std::copy(buf_.begin(), buf_.end(), g);
    const double u = std::sqrt(static_cast<double>(P_.n_rows())) * std::numeric_limits<double>::epsilon();
    rounding_ = u * (S_mag + Q_.value_magnitude());
    value_error_ = rounding_ + 0.5 * h_ * std::sqrt(static_cast<double>(P_.n_rows())) * band_error;
    grad_error_ = band_error;
    *value = 0.5 * (S + S_low - band);
    return true;
  }

  PairwiseHingeLoss& P_;
  PairwiseHingeLoss& Q_;
  double h_, precision_, rounding_ = 0.0, value_error_ = 0.0, grad_error_ = 0.0;
  bool band_wanted_ = false, banded_ = false;
  Index cg_steps_;
  mutable std::vector<double> buf_;
  mutable std::vector<std::int64_t> pairs_;
};

// ---- squared hinge: truncated Newton with line search (Lee & Lin 2014, Sect. 4) ----------------
//
// F(w) = 1/2 w^T w + C L(X w), grad = w + C X^T g_f, H = I + C X^T H_f X with H_f the generalized
// Hessian of the pairwise loss.  CG stops at ||r|| <= eta ||grad||, eta = min(0.5, sqrt(||grad||
// / ||grad_0||)) (superlinear local rate); X d accumulates inside CG so the line search touches X
// never: phi(t) = 1/2 ||w + t d||^2 + C L(f + t X d) costs one sort and two sweeps.  The same
// iteration minimises the Huber-smoothed hinge (Term = HuberTerm), then also stopping once
// ||grad|| <= gabs; a caller that knows ||grad|| at w = 0 passes it as g0_known (>= 0) and saves an
// evaluation.  grad_f (optional) receives d loss / d f at the returned coef.
template <class Model, class Term>
RankSvmResult newton_linear(const Model& X, Term& P, const RankSvmOptions& o, double gabs = 0.0,
                            double g0_known = -1.0, Vector* grad_f = nullptr) {
  const Index m = X.rows(), n = X.dim();
  const int nt = o.n_threads;
  RankSvmResult res;
  Vector w = Vector::Zero(n), f = Vector::Zero(m), gf(m), g = Vector::Zero(n), ft(m), gft(m);
  double L = 0.0;
  if (!(g0_known >= 0.0 && o.w0.size() == n)) {
    L = P.evaluate(f.data(), gf.data(), nt);
    X.ttimes(gf, g);
    g *= o.C;
  }
  // The stopping test stays relative to the gradient at w = 0 when warm started.
  const double g0 = g0_known >= 0.0 ? g0_known : g.stableNorm();  // stableNorm: no underflow or overflow
  res.grad0 = o.C > 0.0 ? g0 / o.C : -1.0;
  if (o.w0.size() == n && g0 > 0.0) {
    w = o.w0;
    X.times(w, f);
    L = P.evaluate(f.data(), gf.data(), nt);
    X.ttimes(gf, g);
    g *= o.C;
    g += w;
  }
  double gnorm = g.stableNorm();
  if (!std::isfinite(g0)) {  // C X^T grad overflows: the caller rescales (see _ranksvm.py)
    res.coef = Vector::Zero(n);
    res.criterion = std::numeric_limits<double>::infinity();
    return res;
  }
  Vector d(n), r(n), p(n), q(n), Xp(m), Xd(m), HXp(m);
  Matrix H;
  Index iter = 0;
  while (true) {
    // Two tests, both relative to tol.  ||grad|| against its value at w = 0 alone passed with F 79 % above its
    // minimum where C ||x_i - x_j||^2 is large (features of scale 1e3), so the duality gap is certified as well: at
    // the dual point the optimality conditions map w to (alpha_k = 2 C c_k r_k for a pair of weight c_k and
    // residual r_k) it is exactly 1/2 ||grad||^2.  The gap alone would accept w = 0 at a tiny C (F and the gap
    // scale as C and C^2), where the gradient test takes the step to w* = -C X^T grad(0).
    const double F = 0.5 * w.squaredNorm() + o.C * L, gap = 0.5 * gnorm * gnorm;
    res.criterion = std::max(g0 > 0.0 ? gnorm / g0 : 0.0, F > 0.0 ? gap / F : 0.0);
    if ((gnorm <= o.tol * g0 && gap <= o.tol * F) || gnorm <= gabs || g0 == 0.0) {
      res.converged = true;
      break;
    }
    if (iter >= o.max_iter) break;
    const double eta = std::min(0.5, std::sqrt(gnorm / g0));
    d.setZero();
    Xd.setZero();
    r = -g;
    p = r;
    double rr = r.squaredNorm();
    if (P.newton_matrix(X, o.C, H) && lapack::potrf_lower(H)) {  // the exact Newton step (H: I plus a Gram matrix)
      d = r;
      lapack::potrs_lower(H, d);
      X.times(d, Xd);
      ++res.n_inner;
      rr = 0.0;  // no conjugate gradients
    }
    Index cg = 0;
    for (Index k = 0; rr > 0.0 && k < cg_cap(n); ++k) {
      X.times(p, Xp);
      P.hessian_times(Xp.data(), HXp.data(), nt);
      X.ttimes(HXp, q);
      q *= o.C;
      q += p;
      const double pq = p.dot(q);
      ++res.n_inner;
      ++cg;
      if (!(pq > 0.0)) break;
      const double alpha = rr / pq;
      d += alpha * p;
      Xd += alpha * Xp;
      r -= alpha * q;
      const double rr_new = r.squaredNorm();
      if (std::sqrt(rr_new) <= eta * gnorm) break;
      p = r + (rr_new / rr) * p;
      rr = rr_new;
    }
    if (cg > 0) P.record_cg_steps(cg);
    if (d.isZero(0.0)) {  // CG broke down at once: fall back to steepest descent
      d = -g;
      X.times(d, Xd);
    }
    const double F0 = F;  // w and L are those of the stopping test
    const bool floor = at_precision_floor(F0, g.dot(d), gnorm, g0);
    const double ww = w.squaredNorm(), wd = w.dot(d), dd = d.squaredNorm();
    double Lt = 0.0, Fnew = 0.0, t = 0.0;
    if (!floor) {
      // Near the optimum of a narrow Huber band F changes by less than its rounding, and Armijo on F takes or
      // refuses steps by noise (tiny steps, then the Newton cap).  A step Armijo refuses whose largest possible
      // decrease t |phi'(0)| (phi convex) lies below half that rounding, and its observed change of F below it, is
      // taken on the approximate Armijo condition phi'(t) <= (1 - 2 c) |phi'(0)| (Hager & Zhang 2005; exact for a
      // quadratic), whose derivative phi'(t) = w.d + t d.d + C (X d).grad_f carries no such cancellation.
      const double slope = g.dot(d);
      t = backtrack(F0, slope, [&](double s) {
        ft = f + s * Xd;
        Lt = P.evaluate(ft.data(), gft.data(), nt);
        return 0.5 * (ww + 2.0 * s * wd + s * s * dd) + o.C * Lt;
      }, &Fnew, [&](double s, double Fs) {
        const double noise = o.C * P.rounding();
        return 2.0 * s * -slope <= noise && std::abs(Fs - F0) <= noise &&
               wd + s * dd + o.C * Xd.dot(gft) <= -(1.0 - 2.0 * kArmijo) * slope;
      });
      ++iter;
    }
    if (t == 0.0 && gabs == 0.0) {
      // F cannot resolve the step's decrease (F ~ C L(0) at a small C carries rounding above the gain): the full
      // Newton step of the convex piecewise quadratic is kept when it measurably shrinks the gradient, which the
      // stopping test reads (a fit at C = 0.01 stopped at criterion 6e-8 against tol 1e-10)
      ft = f + Xd;
      Lt = P.evaluate(ft.data(), gft.data(), nt);
      X.ttimes(gft, q);
      q *= o.C;
      q += w + d;
      if (q.stableNorm() < gnorm) {
        t = 1.0;
        iter += floor ? 1 : 0;
      }
    }
    if (t == 0.0) {  // no decrease at working precision
      // the squared hinge reports whether tol was reached (the caller warns otherwise); the Huber path's caller
      // certifies the hinge itself
      if (floor) res.converged = gabs > 0.0 || res.criterion <= o.tol;
      break;
    }
    w += t * d;
    f.swap(ft);
    gf.swap(gft);
    L = Lt;
    X.ttimes(gf, g);
    g *= o.C;
    g += w;
    gnorm = g.stableNorm();
  }
  // The last evaluation may belong to a rejected trial point, and f = X w drifts by the step
  // updates: recompute at w, unless no step was taken (f = X w and L, gf evaluated there).
  if (iter > 0 || o.w0.size() != n || !(g0 > 0.0)) {
    X.times(w, f);
    if (grad_f) grad_f->resize(m);
    L = P.evaluate(f.data(), grad_f ? grad_f->data() : nullptr, nt);
  } else if (grad_f) {
    *grad_f = gf;
  }
  res.loss = L;
  res.objective = 0.5 * w.squaredNorm() + o.C * res.loss;
  res.coef = std::move(w);
  res.n_iter = iter;
  return res;
}

// Kernel form: F(beta) = 1/2 beta^T K beta + C L(K beta); grad = K rho with rho = beta + C g_f;
// Hessian K (I + C H_f K).  The Newton system K (I + C H_f K) d = -K rho is solved by CG
// preconditioned with K itself (M = K, so the preconditioned residual is rho-space s with
// K s the true residual; Kuo, Lee & Lin 2014): one K-product per CG step, K p and K d are carried
// along by the recurrences.
RankSvmResult newton_kernel(const KernelOperator& K, PairwiseHingeLoss& P, const RankSvmOptions& o) {
  const Index m = K.rows();
  const int nt = o.n_threads;
  RankSvmResult res;
  Vector beta = Vector::Zero(m), f = Vector::Zero(m), gf(m), rho(m), Krho(m), ft(m), gft(m);
  double L = P.evaluate(SvmLoss::SquaredHinge, f.data(), gf.data(), nullptr, nt);
  rho = o.C * gf;
  K.times(rho, Krho);
  const double g0 = Krho.stableNorm();
  double gnorm = g0;
  Vector d(m), Kd(m), s(m), Ks(m), p(m), Kp(m), h(m), Kh(m);
  Index iter = 0;
  while (true) {
    // The two tests of newton_linear; the gap is 1/2 ||grad||^2 in the kernel's feature space, where the gradient
    // is rho (grad = K rho in beta) and its squared norm rho^T K rho.
    const double F = 0.5 * beta.dot(f) + o.C * L, gap = 0.5 * std::max(0.0, rho.dot(Krho));
    res.criterion = std::max(g0 > 0.0 ? gnorm / g0 : 0.0, F > 0.0 ? gap / F : 0.0);
    if ((gnorm <= o.tol * g0 && gap <= o.tol * F) || g0 == 0.0) {
      res.converged = true;
      break;
    }
    if (iter >= o.max_iter) break;
    const double eta = std::min(0.5, std::sqrt(gnorm / g0));
    d.setZero();
    Kd.setZero();
    s = -rho;
    Ks = -Krho;
    p = s;
    Kp = Ks;
    double gamma = s.dot(Ks);
    for (Index k = 0; k < cg_cap(m) && gamma > 0.0; ++k) {
      P.hessian_times(Kp.data(), h.data(), nt);
      K.times(h, Kh);
      ++res.n_inner;
      const double pAp = p.dot(Kp) + o.C * Kp.dot(h);
      if (!(pAp > 0.0)) break;
      const double alpha = gamma / pAp;
      d += alpha * p;
      Kd += alpha * Kp;
      s -= alpha * (p + o.C * h);
      Ks -= alpha * (Kp + o.C * Kh);
      if (Ks.stableNorm() <= eta * gnorm) break;
      const double gamma_new = s.dot(Ks);
      const double b = gamma_new / gamma;
      p = s + b * p;
      Kp = Ks + b * Kp;
      gamma = gamma_new;
    }
    if (d.isZero(0.0)) {
      d = -rho;
      Kd = -Krho;
    }
    const double bf = beta.dot(f), df = d.dot(f), dKd = d.dot(Kd);
    const double F0 = F;  // beta and L are those of the stopping test
    const bool floor = at_precision_floor(F0, Krho.dot(d), gnorm, g0);
    double Lt = 0.0, Fnew = 0.0, t = 0.0;
    if (!floor) {
      t = backtrack(F0, Krho.dot(d), [&](double st) {
        ft = f + st * Kd;
        Lt = P.evaluate(SvmLoss::SquaredHinge, ft.data(), gft.data(), nullptr, nt);
        return 0.5 * bf + st * df + 0.5 * st * st * dKd + o.C * Lt;
      }, &Fnew);
      ++iter;
    }
    if (t == 0.0) {  // F cannot resolve the decrease: the full step when it shrinks the gradient (newton_linear)
      ft = f + Kd;
      Lt = P.evaluate(SvmLoss::SquaredHinge, ft.data(), gft.data(), nullptr, nt);
      h = beta + d + o.C * gft;
      K.times(h, Kh);
      if (Kh.stableNorm() < gnorm) {
        t = 1.0;
        iter += floor ? 1 : 0;
      }
    }
    if (t == 0.0) {
      if (floor) res.converged = res.criterion <= o.tol;  // false: tol below what double precision resolves
      break;
    }
    beta += t * d;
    f.swap(ft);
    gf.swap(gft);
    L = Lt;
    rho = beta + o.C * gf;
    K.times(rho, Krho);
    gnorm = Krho.stableNorm();
  }
  K.times(beta, f);
  res.loss = P.evaluate(SvmLoss::SquaredHinge, f.data(), nullptr, nullptr, nt);
  res.objective = 0.5 * beta.dot(f) + o.C * res.loss;
  res.coef = std::move(beta);
  res.n_iter = iter;
  return res;
}

// ---- hinge: 1-slack cutting planes (Joachims 2006) over the pair-free oracle -------------------
//
// Why cutting planes: the hinge problem is a QP whose dual has one variable per pair; the 1-slack
// reformulation  min 1/2 ||w||^2 + C xi,  xi >= b_c - a_c^T w  for every subset c of pairs
// (b_c = weight of c, a_c = sum_{(i,j) in c} (x_i - x_j)) has the same optimum, and the most
// violated constraint at w is the set of pairs with margin < 1, i.e. exactly what the oracle
// returns (b = active weight, a = X^T kappa with kappa_s = -grad_s).  The master problem over the
// cuts found so far is a small QP solved exactly in its dual
//   max_lambda  b^T lambda - 1/2 lambda^T G lambda,  lambda >= 0,  sum lambda <= C,  G = (a_s^T a_t),
// with w = sum lambda_t a_t.  Every feasible lambda gives a lower bound on the true optimum and
// every w an upper bound, so the method stops on a certified relative duality gap; the hinge is
// polyhedral, so the cut model becomes exact at the optimum after finitely many cuts.

// The Cholesky factor of the free block of an active-set method's SPD matrix, kept across its steps: a
// variable joins by one triangular solve and leaves by Givens rotations, O(k^2) each where refactoring the
// (k+1) x (k+1) KKT system cost O(k^3) per step (hundreds of cuts with a kernel: most of a fit's time).
class FreeFactor {
 public:
  Index size() const { return k_; }
  // Appends a variable with H(F[a], new) = h[a] (a < size()) and H(new, new) = d; false, unchanged, if the
  // new pivot is not positive at working precision.
  bool append(const Vector& h, double d) {
    if (k_ + 1 > L_.rows()) {
      const Index cap = std::max<Index>(16, 2 * (k_ + 1));
      Matrix grown = Matrix::Zero(cap, cap);
      grown.topLeftCorner(k_, k_) = L_.topLeftCorner(k_, k_);
      L_.swap(grown);
    }
    Vector row = h.head(k_);
    L_.topLeftCorner(k_, k_).triangularView<Eigen::Lower>().solveInPlace(row);
    const double pivot = d - row.squaredNorm();
    if (!(pivot > 1e-14 * d)) return false;
    L_.row(k_).head(k_) = row.transpose();
    L_(k_, k_) = std::sqrt(pivot);
    ++k_;
    return true;
  }
  // Removes the variable at position p (the rows below move up one).
  void remove(Index p) {
    for (Index i = p; i + 1 < k_; ++i) L_.row(i).head(i + 2) = L_.row(i + 1).head(i + 2);
    for (Index j = p; j + 1 < k_; ++j) {  // zero the entry (j, j + 1) the shift left above the diagonal
      const double a = L_(j, j), b = L_(j, j + 1), r = std::hypot(a, b);
      const double c = a / r, s = b / r;
      for (Index i = j; i + 1 < k_; ++i) {
        const double x = L_(i, j), y = L_(i, j + 1);
        L_(i, j) = c * x + s * y;
        L_(i, j + 1) = -s * x + c * y;
      }
    }
    --k_;
  }
  // (max / min pivot)^2: a lower bound on the condition number of H_FF
  double condition() const {
    if (k_ == 0) return 1.0;
    const auto d = L_.diagonal().head(k_);
    const double ratio = d.maxCoeff() / d.minCoeff();
    return ratio * ratio;
  }
  // x := H_FF^{-1} x
  void solve(Vector& x) const {
    const auto L = L_.topLeftCorner(k_, k_);
    L.triangularView<Eigen::Lower>().solveInPlace(x);
    L.transpose().triangularView<Eigen::Upper>().solveInPlace(x);
  }

 private:
  Matrix L_;
  Index k_ = 0;
};

// The master problem above, solved in its dual.
class CutMaster {
 public:
  void add(double b, const Vector& gram_row_with_new) {  // gram row includes the new diagonal last
    const Index T = static_cast<Index>(b_.size()) + 1;
    if (T > G_.rows()) {  // room for half as many cuts again: no copy of the whole Gram matrix per cut
      Matrix G(T + T / 2 + 32, T + T / 2 + 32);
      G.topLeftCorner(T - 1, T - 1) = gram();
      G_.swap(G);
    }
    G_.row(T - 1).head(T) = gram_row_with_new.head(T).transpose();
    G_.col(T - 1).head(T) = gram_row_with_new.head(T);
    b_.push_back(b);
    lambda_.conservativeResize(T);
    lambda_[T - 1] = 0.0;
    grad_.conservativeResize(T);
    grad_[T - 1] = gram().row(T - 1).dot(lambda_) - b;
  }
  Index size() const { return static_cast<Index>(b_.size()); }
  const Vector& lambda() const { return lambda_; }
  // Dual objective b^T lambda - 1/2 lambda^T G lambda (a lower bound on the true optimum).
  double lower_bound() const {
    double v = 0.0;
    for (Index t = 0; t < size(); ++t) v += lambda_[t] * (b_[t] - 0.5 * (grad_[t] + b_[t]));
    return v;
  }
  // The master's own duality gap at lambda (Frank-Wolfe gap over the simplex with slack):
  // sum_t lambda_t g_t - C min(0, min_t g_t), g = G lambda - b.
  double own_gap(double C) const {
    double gl = 0.0, gmin = 0.0;
    for (Index t = 0; t < size(); ++t) {
      gl += lambda_[t] * grad_[t];
      gmin = std::min(gmin, grad_[t]);
    }
    return gl - C * gmin;
  }
  // Solves the master to an own gap <= `gap`.  Why not SMO: G has rank <= n_features (linear) and
  // many cuts, and SMO crawls on such degenerate problems.  Instead: proximal-point rounds
  // min q(lambda) + eps/2 ||lambda - lambda_k||^2 (strictly convex for any eps > 0), each solved
  // exactly by a primal active-set method on the simplex {lambda >= 0, slack >= 0, sum = C}
  // whose equality subproblems are (|F|+1) KKT systems.  Returns active-set iterations.
  Index solve(double C, double gap, int max_rounds = 50) {
    const Index T = size();
    if (T == 0) return 0;
    const double eps = 1e-10 * std::max(1e-300, gram().diagonal().maxCoeff());
    // Variables 0..T-1 are lambda, T is the slack (zero row and column in G, b = 0).
    Vector v(T + 1);
    v.head(T) = lambda_;
    v[T] = std::max(0.0, C - lambda_.sum());
    Index total = 0;
    double previous = std::numeric_limits<double>::infinity();
    for (int round = 0; round < max_rounds; ++round) {
      interrupt::poll();
      refresh();
      const double current = own_gap(C);
      // Done, or stalled at the rounding level of the KKT solves (the lower bound stays valid).  A factor updated
      // over many steps carries more rounding than a fresh one (a low-rank kernel stalled on it): one more round
      // refactorises first.
      if (current <= gap) break;
      if (current > 0.5 * previous) {
        if (!factor_reused_) break;
        factor_eps_ = -1.0;
      }
      previous = current;
      const Vector center = v;
      total += active_set(C, eps, center, v);
      lambda_ = v.head(T);
    }
    refresh();
    return total;
  }

 private:
  Matrix G_;  // the cuts' Gram matrix in its top-left size() x size() corner
  std::vector<double> b_;

  // The free block's factor at the end of the last active-set solve, its variables (-1: the slack) and eps
  FreeFactor factor_;
  std::vector<Index> factor_vars_;
  double factor_eps_ = -1.0;
  bool factor_reused_ = false;  // by the last active-set solve

  Eigen::Block<const Matrix> gram() const { return G_.topLeftCorner(size(), size()); }
  Vector lambda_, grad_;

  void refresh() {
    grad_.noalias() = gram() * lambda_;
    for (Index t = 0; t < size(); ++t) grad_[t] -= b_[t];
  }
  double H(Index s, Index t, double eps) const {
    const Index T = size();
    return (s < T && t < T ? G_(s, t) : 0.0) + (s == t ? eps : 0.0);
  }
  double lin(Index t, double eps, const Vector& center) const {
    return (t < size() ? b_[t] : 0.0) + eps * center[t];
  }
  // min 1/2 v^T (G + eps I) v - (b + eps center)^T v over {v >= 0, sum v = C}; v feasible on entry.
  Index active_set(double C, double eps, const Vector& center, Vector& v) {
    const Index N = v.size(), T = size();
    std::vector<Index> F;
    for (Index t = 0; t < N; ++t)
      if (v[t] > 0.0) F.push_back(t);
    if (F.empty()) {  // cannot happen with sum v = C > 0, but stay feasible
      v.setZero();
      v[N - 1] = C;
      F.push_back(N - 1);
    }
    Index it = 0;
    const Index cap = 10 * N + 100;
    // H_FF's factor, kept up to date as F changes; a pivot lost to rounding leaves the rest to the KKT matrix's LU
    FreeFactor& factor = factor_;
    auto column = [&](Index t) {
      Vector h(static_cast<Index>(F.size()));
      for (Index a = 0; a < h.size(); ++a) h[a] = H(F[a], t, eps);
      return h;
    };
    bool factored = false;
    auto join = [&](Index t) {  // t becomes free: F grows by it, and the factor while it holds
      if (factored) factored = factor.append(column(t), H(t, t, eps));
      F.push_back(t);
    };
    auto rebuild = [&]() {
      factor = FreeFactor();
      factored = true;
      std::vector<Index> all;
      all.swap(F);
      for (Index t : all) join(t);
    };
    // The factor of the last call, whose free set is mostly this one: its variables no longer free leave it and the
    // new ones join (F in the factor's order), instead of refactorising H_FF at every round and every cut.  A removal
    // costs O(k^2): beyond half the factor, a rebuild is cheaper; and a factor whose pivots spread by more than 10^3
    // (a low-rank kernel) is rebuilt, its updates' rounding too close to what the KKT solves can refine away.
    if (factor_eps_ == eps && static_cast<Index>(factor_vars_.size()) == factor.size() && factor.condition() <= 1e6) {
      std::vector<char> is_free(static_cast<size_t>(N), 0);
      for (Index t : F) is_free[t] = 1;
      auto var = [&](Index p) { return factor_vars_[p] < 0 ? N - 1 : factor_vars_[p]; };  // the slack is last
      Index gone = 0;
      for (Index p = 0; p < factor.size(); ++p) gone += is_free[var(p)] ? 0 : 1;
      if (2 * gone <= factor.size()) {
        std::vector<Index> kept;
        for (Index p = factor.size() - 1; p >= 0; --p) {  // last first: the positions below stay valid
          if (is_free[var(p)])
            kept.push_back(var(p));
          else
            factor.remove(p);
        }
        std::reverse(kept.begin(), kept.end());
        for (Index t : kept) is_free[t] = 0;
        F.swap(kept);
        factored = true;
        for (Index t = 0; t < N; ++t)
          if (is_free[t]) join(t);
      }
    }
    factor_reused_ = factored;
    if (!factored) {
      std::sort(F.begin(), F.end());
      rebuild();
    }
    for (; it < cap; ++it) {
      interrupt::poll();  // hundreds of cuts with a kernel
      const Index k = static_cast<Index>(F.size());
      Vector sol(k + 1);
      if (factored) {
        // Schur complement of the KKT system: z = H^{-1} (lin - s 1), 1^T z = C.  H is as ill-conditioned as
        // eps / max diag(G) where the cuts outnumber the model's dimensions (a low-rank kernel): there two steps of
        // iterative refinement on the KKT residual restore what the factor's rounding loses (a linear kernel of
        // rank 4 stalled without them).
        Vector lin_F(k), x2 = Vector::Ones(k), r(k);
        for (Index a = 0; a < k; ++a) lin_F[a] = lin(F[a], eps, center);
        Vector x1 = lin_F;
        factor.solve(x2);
        sol.setZero();
        double r_sum = C;
        const int refinements = factor.condition() > 1e6 ? 2 : 0;
        for (int refine = 0; refine <= refinements; ++refine) {
          if (refine > 0) {  // residual of H z + s 1 = lin, 1^T z = C
            for (Index a = 0; a < k; ++a) {
              double hz = 0.0;
              for (Index c = 0; c < k; ++c) hz += H(F[a], F[c], eps) * sol[c];
              r[a] = lin_F[a] - hz - sol[k];
            }
            r_sum = C - sol.head(k).sum();
            x1 = r;
          }
          factor.solve(x1);
          const double s = (x1.sum() - r_sum) / x2.sum();
          sol.head(k) += x1 - s * x2;
          sol[k] += s;
        }
      } else {
        Matrix KKT = Matrix::Zero(k + 1, k + 1);
        Vector rhs(k + 1);
        for (Index a = 0; a < k; ++a) {
          for (Index c = 0; c < k; ++c) KKT(a, c) = H(F[a], F[c], eps);
          KKT(a, k) = 1.0;
          KKT(k, a) = 1.0;
          rhs[a] = lin(F[a], eps, center);
        }
        rhs[k] = C;
        sol = KKT.partialPivLu().solve(rhs);  // sol = (z_F, nu) with H z - lin = -nu
      }
      bool feasible = true;
      for (Index a = 0; a < k; ++a)
        if (!(sol[a] >= 0.0)) feasible = false;
      if (feasible) {
        v.setZero();
        for (Index a = 0; a < k; ++a) v[F[a]] = sol[a];
        // Multiplier: on F the gradient equals mu = -sol[k]; outside F it must be >= mu.
        const double mu = -sol[k];
        Index add = -1;
        double worst = -1e-13 * (1.0 + std::abs(mu));
        std::vector<char> inF(static_cast<size_t>(N), 0);
        for (Index t : F) inF[t] = 1;
        // The gradient off F, G_{:,F} v_F - lin (eps touches the diagonal only), by columns of G: the pricing of
        // hundreds of cuts at every step.
        Vector Gv = Vector::Zero(T);
        for (Index a = 0; a < k; ++a)
          if (F[a] < T) Gv.noalias() += v[F[a]] * G_.col(F[a]).head(T);
        for (Index t = 0; t < N; ++t) {
          if (inF[t]) continue;
          const double g = (t < T ? Gv[t] : 0.0) - lin(t, eps, center);
          if (g - mu < worst) {
            worst = g - mu;
            add = t;
          }
        }
        if (add < 0) break;
        join(add);
      } else {
        // Step from v towards z until the first free variable reaches zero, then drop it.
        double step = 1.0;
        for (Index a = 0; a < k; ++a)
          if (sol[a] < 0.0) step = std::min(step, v[F[a]] / (v[F[a]] - sol[a]));
        std::vector<Index> keep;
        for (Index a = k - 1; a >= 0; --a) {  // last first: the factor's positions below stay valid
          const double x = v[F[a]] + step * (sol[a] - v[F[a]]);
          v[F[a]] = x > 0.0 ? x : 0.0;
          if (x > 1e-300)
            keep.push_back(F[a]);
          else if (factored)
            factor.remove(a);
        }
        std::reverse(keep.begin(), keep.end());
        if (keep.empty()) {
          v[N - 1] = C;
          keep.push_back(N - 1);
        }
        F.swap(keep);
        if (factored && factor.size() != static_cast<Index>(F.size())) rebuild();
      }
    }
    factor_eps_ = factored ? eps : -1.0;
    factor_vars_.clear();
    if (factored)
      for (Index t : F) factor_vars_.push_back(t == N - 1 ? -1 : t);
    // Restore exact feasibility (rounding).
    for (Index t = 0; t < N; ++t) v[t] = std::max(0.0, v[t]);
    const double total = v.sum();
    if (total > 0.0) v *= C / total;
    return it;
  }
};


// Cut storage and products of the linear model: cuts a_t = X^T kappa_t in feature space.
template <class Model>
class LinearCuts {
 public:
  explicit LinearCuts(const Model& X) : X_(X) {}
  Index rows() const { return X_.rows(); }
  Index dim() const { return X_.dim(); }
  // Adds the cut of subgradient gf (kappa = -gf); row = Gram products with every cut, new last.
  void add(const Vector& gf, Vector& row) {
    Vector a;
    X_.ttimes(gf, a);
    a = -a;
    row.resize(static_cast<Index>(cuts_.size()) + 1);
    for (size_t t = 0; t < cuts_.size(); ++t) row[t] = cuts_[t].dot(a);
    row[cuts_.size()] = a.squaredNorm();
    cuts_.push_back(std::move(a));
  }
  void combine(const Vector& lambda, Vector& coef, Vector& f) const {
    coef.setZero(dim());
    for (size_t t = 0; t < cuts_.size(); ++t)
      if (lambda[t] != 0.0) coef += lambda[t] * cuts_[t];
    X_.times(coef, f);
  }
  // <w1, w2> of models given by (coef, f).
  double inner(const Vector& c1, const Vector&, const Vector& c2, const Vector&) const { return c1.dot(c2); }
  void scores(const Vector& coef, Vector& f) const { X_.times(coef, f); }
  bool last_is_zero() const { return cuts_.back().isZero(0.0); }  // exactly, not by an underflowing norm

 private:
  const Model& X_;
  std::vector<Vector> cuts_;
};

// Kernel model: cuts kappa_t in coefficient space, with K kappa_t kept (one K-product per cut).
class KernelCuts {
 public:
  explicit KernelCuts(const KernelOperator& K) : K_(K) {}
  Index rows() const { return K_.rows(); }
  Index dim() const { return K_.rows(); }
  void add(const Vector& gf, Vector& row) {
    Vector kap = -gf, Kkap;
    K_.times(kap, Kkap);
    row.resize(static_cast<Index>(kappas_.size()) + 1);
    for (size_t t = 0; t < kappas_.size(); ++t) row[t] = kappas_[t].dot(Kkap);
    row[kappas_.size()] = kap.dot(Kkap);
    kappas_.push_back(std::move(kap));
    Kkappas_.push_back(std::move(Kkap));
  }
  void combine(const Vector& lambda, Vector& coef, Vector& f) const {
    coef.setZero(dim());
    f.setZero(rows());
    for (size_t t = 0; t < kappas_.size(); ++t)
      if (lambda[t] != 0.0) {
        coef += lambda[t] * kappas_[t];
        f += lambda[t] * Kkappas_[t];
      }
  }
  double inner(const Vector& c1, const Vector&, const Vector&, const Vector& f2) const { return c1.dot(f2); }
  void scores(const Vector& coef, Vector& f) const { K_.times(coef, f); }
  bool last_is_zero() const { return Kkappas_.back().isZero(0.0); }

 private:
  const KernelOperator& K_;
  std::vector<Vector> kappas_, Kkappas_;
};

// Cutting planes with the OCAS line search (Franc & Sonnenburg, JMLR 10, 2009): besides the master
// solution w_c, keep the best point w_b; each round moves w_b to the minimiser of F on the segment
// towards w_c and places the next cut at (1 - mu) w_b + mu w_c.  Plain cutting planes (mu = 1
// without line search) need hundreds to thousands of cuts for large C; this needs tens.  The line
// search runs in score space (f_b + t (f_c - f_b)), so it never touches X or K: phi'(t) =
// <w_b, D> + t ||D||^2 + C g(t) . (f_c - f_b) is monotone and is bracketed then bisected.
constexpr Index kStallCuts = 100;

// A start for the cutting planes: the best point w (f = X w) and the scores of earlier points, where
// the hinge's cuts go first (a master that starts with cuts near the optimum).
struct HingeStart {
  Vector w, f;
  std::vector<Vector> points;
};

template <class Cuts>
RankSvmResult cutting_plane(Cuts& cuts, PairwiseHingeLoss& P, const RankSvmOptions& o,
                            const HingeStart* start = nullptr) {
  const Index m = cuts.rows(), n = cuts.dim();
  const int nt = o.n_threads;
  const double u = std::sqrt(static_cast<double>(m)) * std::numeric_limits<double>::epsilon();
  constexpr double mu = 0.1;
  RankSvmResult res;
  CutMaster master;
  const bool warm = start && start->w.size() == n && !start->points.empty();
  Vector wb = warm ? start->w : Vector::Zero(n), fb = warm ? start->f : Vector::Zero(m), wc(n), fc(m), gf(m),
         g2(m), row, fD(m), ft(m);
  Vector wcut = wb, fcut = fb;
  double active = 0.0, bmax = 0.0;
  Vector gb(m);  // the loss's gradient at the best point
  double Lb = P.evaluate(SvmLoss::Hinge, fb.data(), gb.data(), warm ? nullptr : &active, nt);
  double Fb = 0.5 * cuts.inner(wb, fb, wb, fb) + o.C * Lb;
  if (!warm) gf = gb;  // the first cut is at the start
  if (warm) {  // every start cut but the last here; the last one is the loop's first
    const size_t k = start->points.size();
    for (size_t t = 0; t < k; ++t) {
      P.evaluate(SvmLoss::Hinge, start->points[t].data(), gf.data(), &active, nt);
      if (t + 1 == k) break;
      cuts.add(gf, row);
      master.add(active, row);
      bmax = std::max(bmax, active);
    }
  }
  Index iter = 0, mark_iter = 0;
  double mark_gap = std::numeric_limits<double>::infinity();
  while (true) {
    // gf / active hold the oracle at the cut point.
    cuts.add(gf, row);
    if (iter == 0 && !warm && cuts.last_is_zero()) {
      // The loss's gradient at w = 0 is orthogonal to the model (identical rows, a kernel that
      // cannot separate the pairs): w = 0 is the exact optimum, with a zero gap.
      res.converged = true;
      break;
    }
    if (iter == 0 && !warm) {
      // Small C: if every pair is still active (margin < its target) at w = C a, the hinge is
      // linear around that point, its gradient is the one at 0, and w = C a solves the optimality
      // condition w = -C X^T grad exactly (no master QP, whose Gram entries could underflow).
      Vector one = Vector::Constant(1, o.C);
      cuts.combine(one, wc, fc);
      const double Lc = P.evaluate(SvmLoss::Hinge, fc.data(), g2.data(), nullptr, nt);
      if (g2 == gf) {
        wb = wc;
        fb = fc;
        Lb = Lc;
        gb = g2;
        Fb = 0.5 * cuts.inner(wb, fb, wb, fb) + o.C * Lc;
        res.converged = true;
        iter = 1;
        break;
      }
    }
    master.add(active, row);
    bmax = std::max(bmax, active);
    // Certify the master to a tenth of the requested gap (and never below rounding level).
    res.n_inner += master.solve(o.C, std::max(0.1 * o.tol * Fb, 1e-15 * (Fb + o.C * bmax)));
    ++iter;
    cuts.combine(master.lambda(), wc, fc);
    const double lower = master.lower_bound();
    // Line search from w_b towards w_c.
    const Vector D = wc - wb;
    fD = fc - fb;
    const double bD = cuts.inner(wb, fb, D, fD), DD = cuts.inner(D, fD, D, fD);
    struct Probe {
      double t, v, slope, L;
      Vector g;
    };
    const double wbwb = cuts.inner(wb, fb, wb, fb);
    auto probe = [&](double t) {
      ft = fb + t * fD;
      const double L = P.evaluate(SvmLoss::Hinge, ft.data(), g2.data(), nullptr, nt);
      return Probe{t, 0.5 * wbwb + t * bD + 0.5 * t * t * DD + o.C * L, bD + t * DD + o.C * g2.dot(fD), L, g2};
    };
    // At t = 0 the value and the gradient are w_b's own, known without an oracle call.
    const Probe at0{0.0, Fb, bD + o.C * gb.dot(fD), Lb, Vector()};
    if (DD > 0.0 && at0.slope < 0.0) {
      // w_b need not be exact: F on the segment to 1e-5 of the gap before the search.  Looser stops (1e-4 of the
      // gap, or 1e-3 of the gap tol accepts) left 6 of 1,200 low-rank linear-kernel fits at tol 1e-8 / 1e-9
      // stalled above tol, against 2 with this one or with bisection to a fixed width.
      const Probe p = convex_segment_minimum(at0, probe, 1e-5 * (Fb - lower), 30, 1e-7);
      if (p.v < Fb) {
        Fb = p.v;
        Lb = p.L;
        wb += p.t * D;
        fb += p.t * fD;
        gb = p.g;
      }
    }
    res.criterion = Fb > 0.0 ? (Fb - lower) / Fb : 0.0;
    if (Fb - lower <= o.tol * Fb) {
      // Before convergence is claimed, F_b at scores formed afresh (the line searches carry f_b along, and C
      // amplifies its drift), with the rounding of the loss's expanded sums counted: hard-margin fits of scale 1024
      // at C = 1000 reported F up to 6e-7 below its value and claimed convergence up to 1.5e-6 above the optimum.
      // Where the rounding alone keeps the gap above tol, more cuts cannot lower it: the solve stops there (the
      // linear model's exact finish follows; else a warning names double precision's rounding).
      cuts.scores(wb, fb);
      P.track_magnitudes(true);
      Lb = P.evaluate(SvmLoss::Hinge, fb.data(), gb.data(), nullptr, nt);
      const double rounding = o.C * u * P.value_magnitude();
      P.track_magnitudes(false);
      Fb = 0.5 * cuts.inner(wb, fb, wb, fb) + o.C * Lb;
      res.criterion = (Fb - lower + rounding) / Fb;
      if (Fb - lower + rounding <= o.tol * Fb) {
        res.converged = true;
        break;
      }
      if (Fb - lower <= o.tol * Fb) break;
    }
    if (iter >= o.max_iter) break;
    // Stall limit: the gap F_b - lower must shrink by 0.1% within every kStallCuts cuts (the master grows with
    // the cuts, so a stalled run would only get slower); the caller warns with the gap reached.  The absolute gap,
    // not the relative one: at large C the first hundreds of cuts cut F_b by orders of magnitude while the lower
    // bound stays near 0, so that the relative gap stays near 1 (stopped there, a fit of m = 400, C = 552 kept
    // F = 4540 where 448 cuts reach the optimum 186.4).  And 0.1%, not 10%: F_b can stay put for a hundred cuts
    // while the lower bound rises (a gap shrinking by 2% in 100 cuts, then closing within 250 more), where a
    // degenerate problem (X x 1e200) closes 1e-10 of its gap in 100 cuts.
    if (!(Fb - lower < 0.999 * mark_gap)) {
      if (iter - mark_iter >= kStallCuts) {
        res.stalled = true;
        break;
      }
    } else {
      mark_gap = Fb - lower;
      mark_iter = iter;
    }
    wcut = (1.0 - mu) * wb + mu * wc;
    fcut = (1.0 - mu) * fb + mu * fc;
    const double Lcut = P.evaluate(SvmLoss::Hinge, fcut.data(), gf.data(), &active, nt);
    const double Fcut = 0.5 * cuts.inner(wcut, fcut, wcut, fcut) + o.C * Lcut;
    if (Fcut < Fb) {
      Fb = Fcut;
      Lb = Lcut;
      wb = wcut;
      fb = fcut;
      gb = gf;
    }
  }
  res.coef = std::move(wb);
  res.loss = Lb;
  res.objective = Fb;
  res.n_iter = iter;
  return res;
}

template <class Model>
RankSvmResult cutting_plane_linear(const Model& X, PairwiseHingeLoss& P, const RankSvmOptions& o,
                                   const HingeStart* start = nullptr) {
  LinearCuts<Model> cuts(X);
  return cutting_plane(cuts, P, o, start);
}

RankSvmResult cutting_plane_kernel(const KernelOperator& K, PairwiseHingeLoss& P, const RankSvmOptions& o) {
  KernelCuts cuts(K);
  return cutting_plane(cuts, P, o);
}

// ---- hinge, linear: Huber continuation with a certified duality gap ---------------------------
//
// Why: cutting planes need ever more cuts as the hinge problem approaches an LP (large C, many
// pairs: hundreds of cuts without reaching the gap at m = 20,000 with 2e8 pairs).  Instead minimise
// the Huber-smoothed objective F_h(w) = 1/2 ||w||^2 + C sum_p l_h(z_p) (z_p = c_p - (f_i - f_j),
// l_h as in HuberTerm) by Newton for a decreasing width h, and certify every solve with a dual
// point of the HINGE problem.  Its dual is  D(alpha) = sum_p alpha_p c_p - 1/2 ||sum_p alpha_p
// (x_i - x_j)||^2  over 0 <= alpha_p <= C (Joachims 2002), and alpha_p = C l_h'(z_p) is feasible at
// any w.  With v = sum_p alpha_p (x_i - x_j) = w - grad F_h(w) and sum_p alpha_p z_p =
// C (2 H_h - S_low) (H_h = sum l_h, S_low = sum (z_p - h)^+, the hinge at the lowered margin):
//   F(w) - D(alpha) = 1/2 ||grad F_h(w)||^2 + C sum_p [z_p^+ - 2 l_h(z_p) + (z_p - h)^+],
// whose second term is C sum over the pairs with 0 < z_p < h of z_p (1 - z_p / h) <= C h / 4 each:
// a Newton solve to a small gradient at a small enough h closes the gap, and F(w) - gap is a
// certified lower bound.  Both terms are sums of non-negative parts (no cancellation of F against
// D), but the sweeps form them from expanded sums whose digits cancel at a narrow band: the
// certificate adds their rounding, or forms the band's few pairs one by one (huber_band).  The gap's
// smoothing term shrinks like h^2 for densely spread pairs: each level picks the next h from the
// measured term.  Whatever this cannot certify is left to the cutting planes, started from the best
// point with the hinge's cuts at every level's point.
template <class Model>
bool hinge_huber(const Model& X, PairwiseHingeLoss& P, const RankSvmOptions& o, RankSvmResult& res,
                 HingeStart& start) {
  const Index m = X.rows(), n = X.dim();
  const int nt = o.n_threads;
  struct Tracking {  // the rounding of P's sums, which the certificates count, for this solve only
    PairwiseHingeLoss& P;
    explicit Tracking(PairwiseHingeLoss& p) : P(p) { P.track_magnitudes(true); }
    ~Tracking() { P.track_magnitudes(false); }
  } tracking(P);
  PairwiseHingeLoss lowered = P;
  Vector w = Vector::Zero(n), f = Vector::Zero(m), gf(m), g(n);
  double F = o.C * P.evaluate(SvmLoss::Hinge, f.data(), nullptr, nullptr, nt);
  const double F_zero = F;
  if (!(std::isfinite(F) && F > 0.0)) return false;
  const double scale = P.margin_scale();
  if (!(scale > 0.0 && std::isfinite(scale))) return false;
  // Start wide (from w = 0 a narrow band is nearly the hinge itself, and Newton crawls there).
  double h = 1.0 * scale, g0 = -1.0, h_prev = 0.0, smooth_prev = 0.0;
  // At most 200 Newton steps, or up to half of max_iter (at most 500) while the smoothing term's decay over the last
  // level, at that level's steps, predicts the certificate within them and the certified gap still falls (not two
  // levels in a row without).  Past that, Newton no longer reaches the smoothed optimum a certificate needs, or the
  // certificate is far (a tight tol), and cutting planes certify sooner after 200 (m = 10,000 x 700 stops at 195;
  // 300 rows of 200 features at C = 10, tol = 1e-8 converged in 1555 steps after 200 Newton steps, and was still
  // unconverged at 2000 after 592).  At tol = 1e-6 that fit and its C = 100 twin, unconverged at max_iter = 1000
  // after 200 Newton steps, converge in 389-404 steps.
  const Index cap = std::min<Index>(o.max_iter, 200), extended = std::max(cap, std::min<Index>(o.max_iter / 2, 500));
  Index reach = cap, stale = 0;
  double best_gap = std::numeric_limits<double>::infinity();
  Index newton = 0, cg = 0, cg_steps = 4;
  const double x_norm = X.frobenius();
  for (int level = 0; level < 30 && newton < reach && h > 1e-12 * scale; ++level) {
    HuberTerm term(P, lowered, h, 0.01 * o.tol * F / o.C, cg_steps);
    RankSvmOptions lo = o;
    lo.tol = 0.0;
    lo.max_iter = std::min<Index>(50, reach - newton);
    if (level > 0) lo.w0 = w;
    // The Newton part of the gap, 1/2 ||grad||^2, to half the target (the smoothing aims at a quarter).
    const RankSvmResult r = newton_linear(X, term, lo, std::sqrt(o.tol * F), g0, &gf);
    newton += r.n_iter;
    cg += r.n_inner;
    cg_steps = term.cg_steps();
    res.n_newton = newton;
    // the error bounds of newton_linear's last evaluation, H_h and gf at w (before the g0 below evaluates at 0)
    double H_error = term.value_error(), gf_term_error = term.grad_error();
    bool banded = term.banded();  // else the gradient's error is not yet counted
    if (!(r.coef.allFinite())) return false;
    if (g0 < 0.0) {  // ||grad F_h(0)|| = C ||X^T grad hinge(0)|| for every h below the margins
      Vector gz, fz = Vector::Zero(m), g_at0(m);
      term.evaluate(fz.data(), g_at0.data(), nt);
      X.ttimes(g_at0, gz);
      g0 = o.C * gz.stableNorm();
    }
    w = r.coef;
    X.times(w, f);
    start.points.push_back(f);
    if (start.points.size() > 8) start.points.erase(start.points.begin());  // m scores each: the last 8 levels
    // newton_linear's last evaluation was H_h and gf at w, except after a warm solve without a step
    double Hh = r.loss;
    if (r.n_iter == 0 && level > 0) {
      Hh = term.evaluate(f.data(), gf.data(), nt);
      H_error = term.value_error();
      gf_term_error = term.grad_error();
      banded = term.banded();
    }
    const double S = P.evaluate(SvmLoss::Hinge, f.data(), nullptr, nullptr, nt), S_mag = P.value_magnitude();
    const double S_low = lowered.evaluate_like(P, SvmLoss::Hinge, f.data(), nullptr, nullptr, nt);
    const double S_low_mag = lowered.value_magnitude();
    F = 0.5 * w.squaredNorm() + o.C * S;
    const double target = o.tol * std::min(F, F_zero - F);
    // The certificate counts the rounding of the sums it is made of: the smoothing term's three sums and the
    // gradient's (||X^T e|| <= ||X||_F ||e||).  At a narrow band the sweeps' expanded terms exceed the smoothing term
    // itself (a certificate of 7.9e-7 for a true gap of 1.6e-6 without these); where the rounding alone keeps the gap
    // above the target, the band's pairs are formed one by one instead.
    const double u = std::sqrt(static_cast<double>(m)) * std::numeric_limits<double>::epsilon();
    double smooth = o.C * std::max(0.0, S + S_low - 2.0 * Hh);
    double rounding = o.C * (2.0 * H_error + u * (S_mag + S_low_mag));
    auto gap_of = [&](const Vector& grad_f, double grad_f_error) {
      X.ttimes(grad_f, g);
      g *= o.C;
      g += w;  // grad F_h(w)
      const double bound = g.stableNorm() + o.C * x_norm * grad_f_error;
      return 0.5 * bound * bound + smooth + rounding;
    };
    double gap = gap_of(gf, banded ? gf_term_error : 0.0);
    if (!banded && F < F_zero && gap <= target) {
      // before the gap may certify, its gradient's rounding: the squared sums' per-row terms at w (tracked for this
      // evaluation only; the sort of P is at f again after it)
      P.track_magnitudes(true, true);
      lowered.track_magnitudes(true, true);
      Hh = term.evaluate(f.data(), gf.data(), nt);
      P.track_magnitudes(true);
      lowered.track_magnitudes(true);
      smooth = o.C * std::max(0.0, S + S_low - 2.0 * Hh);
      rounding = o.C * (2.0 * term.value_error() + u * (S_mag + S_low_mag));
      gap = gap_of(gf, term.grad_error());
    }
    if (F < F_zero && gap > target && gap - 0.5 * g.squaredNorm() - smooth > 0.1 * target) {
      Vector g_band(m);  // the pairs above the band, counted exactly by the hinge at the lowered margin, and the band
      double band = 0.0, band_error = 0.0;
      lowered.evaluate_like(P, SvmLoss::Hinge, f.data(), g_band.data(), nullptr, nt);
      if (P.huber_band(h, f.data(), g_band.data(), &band, &band_error, nt)) {
        smooth = o.C * band;
        rounding = o.C * h * std::sqrt(static_cast<double>(m)) * band_error;
        gap = gap_of(g_band, band_error);
      }
    }
    if (!std::isfinite(gap)) return false;
    const bool best = F < F_zero && !(res.coef.size() > 0 && F >= res.objective);
    if (best) {  // the best certified point below F(0), kept should max_iter stop the solve here
      start.w = w;
      start.f = f;
      res.coef = w;
      res.loss = S;
      res.objective = F;
      res.n_inner = cg;
      res.criterion = gap / F;
    }
    // Relative to the decrease from w = 0 too: a decrease far below the rounding of F(0) (tiny
    // C ||X||^2) is left to the cutting planes, which solve that case exactly.
    if (F < F_zero && gap <= o.tol * std::min(F, F_zero - F)) {
      res.n_iter = newton;
      res.n_newton = 0;
      res.converged = true;
      return true;
    }
    // The smoothing term falls like h^p, p = 2 for densely spread pairs and p = 1 for pairs held at
    // the kink (ties, discrete targets): p is measured from the last two levels (2 at first), and
    // h aims at a quarter of the target, shrinking by 3x to 100x; by 3x only when Newton did not
    // finish (a narrower band from a poor start makes it crawl), and by at most 1 / (0.01 n) after
    // a level of n Newton steps: a level that took many steps is followed by a near one.  Against
    // shrinking by up to 100x whatever the level took: eleven fits 5.4 -> 2.8 s, ties in groups at
    // m = 5000 x 50, C = 10 488 -> 93 steps, one query at m = 300 x 100 686 -> 190, at m = 20,000 x 50
    // 18 -> 20 (docs/design/large-margin-and-boosting.md).
    double p = 2.0;
    if (smooth_prev > 0.0 && smooth > 0.0 && h_prev > h)
      p = std::min(2.0, std::max(1.0, std::log(smooth_prev / smooth) / std::log(h_prev / h)));
    const double ratio = smooth > 0.0 ? std::pow(0.25 * o.tol * F / smooth, 1.0 / p) : 0.3;
    const double fall = smooth_prev > smooth && smooth > 0.0 ? smooth_prev / smooth : 1.0;
    const double levels = smooth > target ? std::log(smooth / target) / std::log(fall) : 0.0;
    stale = gap < best_gap ? 0 : stale + 1;
    best_gap = std::min(best_gap, gap);
    reach = stale < 2 && fall > 1.0 && newton + levels * static_cast<double>(r.n_iter) <= extended ? extended : cap;
    h_prev = h;
    smooth_prev = smooth;
    const double near = std::min(0.3, std::max(1e-2, 0.01 * static_cast<double>(r.n_iter)));
    h *= r.converged ? std::min(0.3, std::max(near, ratio)) : 0.3;
  }
  return false;
}

// ---- hinge: the exact finish on the pairs at the margin (linear and kernel) -----------------------
//
// Why: where C ||x_i - x_j||^2 is large (a large C, or features of scale 1e3: scaling X by s is scaling C by s^2),
// the cutting planes' lower bound reaches the optimum while their best point does not.  F pays C for every unit of
// margin a pair misses, and the master's w_c is only within sqrt(2 (F* - lower)) of w*, so that its pairs miss their
// margins by ||x_i - x_j|| times that (m = 32 x 80 of scale 3e3, C = 100: stalled at a relative gap of 1e-4 with the
// lower bound exact to 1e-12).  Near the optimum the pairs split into those with margin below 1 - delta (alpha = C w,
// w the pair's weight), within delta of 1 (the band) and above (alpha = 0).  The hinge's dual over the band's alphas,
// the others held there, is a QP of the band's size (the cutting-plane master's solver, its sum bound loose) whose
// solution is the optimum where the split is right.  Right or not, it certifies itself: alpha is feasible, so
// D(alpha) is a lower bound, and F at w = sum_p alpha_p (x_i - x_j) an upper one.  w is scaled by 1 + eps (eps above
// the margins' rounding, the smallest F) so that margins at 1 up to rounding pay nothing, at a cost of 2 eps F.
constexpr Index kFinishPairs = 256;  // the master's active-set steps cost up to k^2 each
constexpr Index kFinishFeatures = 4096;

// The finish's two models.  Linear: coefficients w, a pair's direction x_i - x_j (columns of D).  Kernel: f = K beta,
// a pair's direction e_i - e_j in beta, their Gram entries read from K.
template <class Model>
struct LinearFinish {
  const Model& X;
  Index rows() const { return X.rows(); }
  bool fits() const { return X.dim() <= kFinishFeatures; }
  void scores(const Vector& coef, Vector& f) const { X.times(coef, f); }
  void sum_below(const Vector& g, Vector& coef) const {  // sum over the pairs g counts of their directions
    X.ttimes(g, coef);
    coef = -coef;
  }
  double squared_norm(const Vector& coef, const Vector&) const { return coef.squaredNorm(); }
  void directions(const std::vector<std::int64_t>& pairs, Matrix& D, Matrix& G) const {
    const Index k = static_cast<Index>(pairs.size() / 2);
    D.resize(X.dim(), k);
    for (Index e = 0; e < k; ++e) X.difference(pairs[2 * e], pairs[2 * e + 1], D.col(e));
    G.resize(k, k);
    lapack::gemm('T', 'N', 1.0, D, D, 0.0, G);
  }
  void add_directions(const Matrix& D, const std::vector<std::int64_t>&, const Vector& a, Vector& coef) const {
    coef.noalias() += D * a;
  }
  Index dim() const { return X.dim(); }
  double max_row_norm() const { return X.max_row_norm(); }
};

struct KernelFinish {
  const KernelOperator& K;
  Index rows() const { return K.rows(); }
  bool fits() const { return true; }
  void scores(const Vector& coef, Vector& f) const { K.times(coef, f); }
  void sum_below(const Vector& g, Vector& coef) const { coef = -g; }
  double squared_norm(const Vector& coef, const Vector& f) const { return coef.dot(f); }
  void directions(const std::vector<std::int64_t>& pairs, Matrix& D, Matrix& G) const {
    const Index k = static_cast<Index>(pairs.size() / 2);
    D.resize(0, 0);
    G.resize(k, k);
    for (Index a = 0; a < k; ++a)
      for (Index b = 0; b <= a; ++b) {
        const Index i = pairs[2 * a], j = pairs[2 * a + 1], s = pairs[2 * b], t = pairs[2 * b + 1];
        G(a, b) = G(b, a) = K(i, s) - K(i, t) - K(j, s) + K(j, t);
      }
  }
  void add_directions(const Matrix&, const std::vector<std::int64_t>& pairs, const Vector& a, Vector& coef) const {
    for (Index e = 0; e < a.size(); ++e) {
      coef[pairs[2 * e]] += a[e];
      coef[pairs[2 * e + 1]] -= a[e];
    }
  }
  Index dim() const { return K.rows(); }
  double max_row_norm() const { return K.max_row_norm(); }
};

template <class Finish>
void hinge_finish(const Finish& X, PairwiseHingeLoss& P, const RankSvmOptions& o, RankSvmResult& res) {
  const Index m = X.rows();
  const double c = P.margin();
  // Only near the optimum (the stalls above: relative gaps of 1e-4), where the split is nearly right.
  if (res.converged || res.coef.size() == 0 || !(c > 0.0) || !X.fits() || !(res.objective > 0.0) ||
      !(res.criterion <= 1e-3))
    return;
  const int nt = o.n_threads;
  const double u = std::sqrt(static_cast<double>(m)) * std::numeric_limits<double>::epsilon();
  double lower = res.objective * (1.0 - res.criterion);
  // a bound of the rounding of a margin f_i - f_j over ||coef||: |f_i| carries at most n u ||x_i|| ||w||
  // (Cauchy-Schwarz; for a kernel, K's rows and beta)
  const double rounding_per_norm = 2.0 * static_cast<double>(X.dim()) * std::numeric_limits<double>::epsilon() *
                                   X.max_row_norm();
  Vector f, g(m), v, w, fw, ft, fixed_f;  // f: the best point's scores; fw: the candidate's
  X.scores(res.coef, f);
  P.track_magnitudes(true);
  for (double delta : {1e-2 * c, 1e-1 * c}) {
    P.evaluate(SvmLoss::Hinge, f.data(), nullptr, nullptr, nt);  // the sort pairs_at_margin reads
    std::vector<std::int64_t> pairs;
    std::vector<double> weight;
    const bool listed = P.pairs_at_margin(f.data(), delta, kFinishPairs, pairs, weight);
    const Index k = static_cast<Index>(pairs.size() / 2);
    if (!listed || k == 0) continue;
    PairwiseHingeLoss below = P;  // the pairs below the band, alpha = C w: their weighted sum of differences and weight
    below.set_margin(c - delta);
    double n_below = 0.0;
    below.evaluate_like(P, SvmLoss::Hinge, f.data(), g.data(), &n_below, nt);
    Vector bound(k);  // alpha_p <= C w_p
    for (Index e = 0; e < k; ++e) bound[e] = o.C * weight[e];
    X.sum_below(g, v);
    v *= o.C;
    Matrix D, G;
    X.directions(pairs, D, G);
    Vector alpha = Vector::Zero(k);
    std::vector<char> at_C(static_cast<size_t>(k), 0);
    for (int round = 0; round < 10; ++round) {  // band pairs whose alpha exceeds C are held at C, and again
      Vector held = Vector::Zero(k), fixed = v;
      std::vector<Index> free;
      for (Index e = 0; e < k; ++e) {
        if (at_C[e]) held[e] = bound[e];
        else free.push_back(e);
      }
      X.add_directions(D, pairs, held, fixed);
      X.scores(fixed, fixed_f);  // the margins the held pairs give the band
      CutMaster master;
      Vector row(static_cast<Index>(free.size()));
      for (size_t a = 0; a < free.size(); ++a) {
        for (size_t b = 0; b <= a; ++b) row[static_cast<Index>(b)] = G(free[a], free[b]);
        master.add(c - (fixed_f[pairs[2 * free[a]]] - fixed_f[pairs[2 * free[a] + 1]]), row);
      }
      // To rounding level (its own gap 0), in at most two proximal rounds: one where the split is right (hard
      // margins: as many active-set steps as pairs), where a wrong one can cycle through thousands.
      res.n_inner += master.solve(bound.sum(), 0.0, 2);
      bool settled = true;
      alpha = held;
      for (size_t a = 0; a < free.size(); ++a) {
        const Index e = free[a];
        const double l = master.lambda()[static_cast<Index>(a)];
        if (l > bound[e]) {
          at_C[e] = 1;
          settled = false;
        }
        alpha[e] = std::min(bound[e], std::max(0.0, l));
      }
      if (settled) break;
    }
    w = v;
    X.add_directions(D, pairs, alpha, w);
    X.scores(w, fw);
    const double ww = X.squared_norm(w, fw);
    lower = std::max(lower, c * (o.C * n_below + alpha.sum()) - 0.5 * ww);  // D(alpha), alpha feasible
    // eps from above the rounding of a margin, in decades
    double F = std::numeric_limits<double>::infinity(), F_upper = F, L = 0.0, scale = 1.0;
    const double eps0 = std::max(1e-16, rounding_per_norm * w.norm() / c);
    for (double eps = eps0; eps <= std::max(1e-7, eps0); eps *= 10.0) {
      const double t = 1.0 + eps;
      ft = t * fw;
      const double Lt = P.evaluate(SvmLoss::Hinge, ft.data(), nullptr, nullptr, nt);
      const double Ft = 0.5 * t * t * ww + o.C * Lt;
      if (Ft < F) {
        F = Ft;
        F_upper = Ft + o.C * u * P.value_magnitude();
        L = Lt;
        scale = t;
      }
    }
    if (!(F < res.objective)) continue;  // the best point stays
    res.coef = scale * w;
    res.objective = F;
    res.loss = L;
    res.criterion = (F_upper - lower) / F;
    f = scale * fw;
    if (F_upper - lower <= o.tol * F) {
      res.converged = true;
      res.stalled = false;
      break;
    }
  }
  P.track_magnitudes(false);
}

template <class Model>
RankSvmResult hinge_linear(const Model& X, PairwiseHingeLoss& P, const RankSvmOptions& o) {
  RankSvmResult huber;
  HingeStart start;
  if (hinge_huber(X, P, o, huber, start)) return huber;
  // The cutting planes (from the best Newton point, with the hinge's cuts at every smoothed solve's point, else from
  // w = 0) get what the Newton steps left of max_iter: n_iter counts both.
  RankSvmOptions rest = o;
  rest.max_iter = o.max_iter - huber.n_newton;
  if (rest.max_iter < 1 && huber.coef.size() > 0) {  // max_iter spent: the last certified Newton point
    huber.n_iter = huber.n_newton;
    huber.n_newton = 0;
    hinge_finish(LinearFinish<Model>{X}, P, o, huber);
    return huber;
  }
  rest.max_iter = std::max<Index>(1, rest.max_iter);
  RankSvmResult res = cutting_plane_linear(X, P, rest, &start);
  hinge_finish(LinearFinish<Model>{X}, P, o, res);
  res.n_iter += huber.n_newton;
  res.n_newton = huber.n_newton;
  return res;
}

template <class Model>
RankSvmResult solve_linear(const Model& X, PairwiseHingeLoss& P, const RankSvmOptions& o) {
  check_options(o);
  require(P.n_rows() == X.rows(), "the ranking structure has " + std::to_string(P.n_rows()) + " rows but X has " +
                                      std::to_string(X.rows()));
  if (o.loss == SvmLoss::Hinge) return hinge_linear(X, P, o);
  SquaredHingeTerm term(P);
  // A warm start whose caller knows the gradient at w = 0 (independent of C but for the factor C) saves its evaluation
  const bool known = o.w0.size() == X.dim() && o.grad0 >= 0.0;
  return newton_linear(X, term, o, 0.0, known ? o.C * o.grad0 : -1.0);
}

}  // namespace

RankSvmResult ranksvm_dense(RowMatrixCRef X, PairwiseHingeLoss& pairs, const RankSvmOptions& options) {
  return solve_linear(DenseModel(X, options.n_threads), pairs, options);
}

RankSvmResult ranksvm_csr32(const CsrView<std::int32_t>& X, PairwiseHingeLoss& pairs, const RankSvmOptions& options) {
  return solve_linear(CsrModel<std::int32_t>(X, options.n_threads), pairs, options);
}

RankSvmResult ranksvm_csr64(const CsrView<std::int64_t>& X, PairwiseHingeLoss& pairs, const RankSvmOptions& options) {
  return solve_linear(CsrModel<std::int64_t>(X, options.n_threads), pairs, options);
}

RankSvmResult ranksvm_kernel(MatrixCRef K, PairwiseHingeLoss& pairs, const RankSvmOptions& options) {
  check_options(options);
  require(K.rows() == K.cols(), "the kernel matrix must be square");
  require(pairs.n_rows() == K.rows(), "the ranking structure and the kernel matrix disagree in size");
  KernelOperator op(K, options.n_threads);
  if (options.loss == SvmLoss::SquaredHinge) return newton_kernel(op, pairs, options);
  RankSvmResult res = cutting_plane_kernel(op, pairs, options);
  hinge_finish(KernelFinish{op}, pairs, options, res);
  return res;
}

double ranksvm_dense_loss_gradient(RowMatrixCRef X, PairwiseHingeLoss& pairs, SvmLoss loss, const Vector& w,
                                   Vector& grad, int n_threads) {
  require(w.size() == X.cols(), "w must have one entry per feature");
  require(pairs.n_rows() == X.rows(), "the ranking structure and X disagree in rows");
  DenseModel model(X, n_threads);
  Vector f, gf(X.rows());
  model.times(w, f);
  const double L = pairs.evaluate(loss, f.data(), gf.data(), nullptr, n_threads);
  model.ttimes(gf, grad);
  return L;
}

}  // namespace fastrank
