#include "fastrank/perceptron.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "fastrank/errors.hpp"
#include "fastrank/interrupt.hpp"
#include "fastrank/parallel.hpp"

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#define FASTRANK_X86_DISPATCH 1
#endif

namespace fastrank {

namespace {

// ---- dot product with a run-time AVX2/FMA path (the build itself targets baseline x86-64) ----
double dot_plain(const double* a, const double* b, Index n) {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  Index i = 0;
  for (; i + 4 <= n; i += 4) {
    s0 += a[i] * b[i];
    s1 += a[i + 1] * b[i + 1];
    s2 += a[i + 2] * b[i + 2];
    s3 += a[i + 3] * b[i + 3];
  }
  for (; i < n; ++i) s0 += a[i] * b[i];
  return (s0 + s1) + (s2 + s3);
}

#ifdef FASTRANK_X86_DISPATCH
__attribute__((target("avx2,fma"))) double dot_avx2(const double* a, const double* b, Index n) {
  __m256d s0 = _mm256_setzero_pd(), s1 = _mm256_setzero_pd(), s2 = _mm256_setzero_pd(), s3 = _mm256_setzero_pd();
  Index i = 0;
  for (; i + 16 <= n; i += 16) {
    s0 = _mm256_fmadd_pd(_mm256_loadu_pd(a + i), _mm256_loadu_pd(b + i), s0);
    s1 = _mm256_fmadd_pd(_mm256_loadu_pd(a + i + 4), _mm256_loadu_pd(b + i + 4), s1);
    s2 = _mm256_fmadd_pd(_mm256_loadu_pd(a + i + 8), _mm256_loadu_pd(b + i + 8), s2);
    s3 = _mm256_fmadd_pd(_mm256_loadu_pd(a + i + 12), _mm256_loadu_pd(b + i + 12), s3);
  }
  for (; i + 4 <= n; i += 4) s0 = _mm256_fmadd_pd(_mm256_loadu_pd(a + i), _mm256_loadu_pd(b + i), s0);
  s0 = _mm256_add_pd(_mm256_add_pd(s0, s1), _mm256_add_pd(s2, s3));
  alignas(32) double buf[4];
  _mm256_store_pd(buf, s0);
  double s = (buf[0] + buf[1]) + (buf[2] + buf[3]);
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}
#endif

using DotFn = double (*)(const double*, const double*, Index);

DotFn pick_dot() {
#ifdef FASTRANK_X86_DISPATCH
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return dot_avx2;
#endif
  return dot_plain;
}

inline double dot(const double* a, const double* b, Index n) {
  static const DotFn fn = pick_dot();  // chosen once, read-only afterwards
  return fn(a, b, n);
}

// w += g * x, two roundings per element exactly like numpy's ``w + g * x`` (no fused multiply-add).
void axpy_plain(double g, const double* x, double* w, Index n) {
  for (Index i = 0; i < n; ++i) w[i] += g * x[i];
}

#ifdef FASTRANK_X86_DISPATCH
__attribute__((target("avx2"))) void axpy_avx2(double g, const double* x, double* w, Index n) {
  const __m256d gv = _mm256_set1_pd(g);
  Index i = 0;
  for (; i + 4 <= n; i += 4)
    _mm256_storeu_pd(w + i, _mm256_add_pd(_mm256_loadu_pd(w + i), _mm256_mul_pd(gv, _mm256_loadu_pd(x + i))));
  for (; i < n; ++i) w[i] += g * x[i];
}
#endif

using AxpyFn = void (*)(double, const double*, double*, Index);

AxpyFn pick_axpy() {
#ifdef FASTRANK_X86_DISPATCH
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2")) return axpy_avx2;
#endif
  return axpy_plain;
}

inline void axpy(double g, const double* x, double* w, Index n) {
  static const AxpyFn fn = pick_axpy();
  fn(g, x, w, n);
}

// Software prefetch of a row a few examples ahead (the stream is read once, from memory).
inline void prefetch_row(const double* x, Index d) {
#if defined(__GNUC__)
  const char* p = reinterpret_cast<const char*>(x);
  const Index bytes = d * static_cast<Index>(sizeof(double));
  for (Index off = 0; off < bytes; off += 64) __builtin_prefetch(p + off, 0, 0);
#else
  (void)x;
  (void)d;
#endif
}

// Algorithm 1 lines 3-11 (the mistake branch): a(r) = l(r) where (s - c(r)) l(r) <= 0, with
// l(r) = -1 if y <= r else +1; c <- c - a.  Returns sum_r a(r) (the weight step); adds a(r) to acc.
inline int prank_update(double s, double* c, int y, int k, std::int64_t* acc) {
  int g = 0;
  for (int r = 1; r <= k - 1; ++r) {
    const int l = (y <= r) ? -1 : 1;
    if ((s - c[r - 1]) * l <= 0.0) {
      c[r - 1] -= l;
      g += l;
      if (acc) acc[r - 1] += l;
    }
  }
  return g;
}

void check_common(IndexVectorCRef y, Index T, const OapParams& p, Index N, RowMatrixRef C, IndexVectorRef V) {
  require(p.k >= 2, "need at least 2 ranks");
  require(p.tau > 0.0 && p.tau <= 1.0, "tau must be in (0, 1]");
  require(N >= 1, "need at least one member");
  require(y.size() == T, "y must have one rank per row of X");
  require(C.rows() == N && C.cols() == p.k - 1, "thresholds must be (n_members, k - 1)");
  require(V.size() == N, "counts must have one entry per member");
  for (Index t = 0; t < T; ++t) require(y[t] >= 1 && y[t] <= p.k, "ranks must lie in 1..k");
  // example times t0 + t and vote counts (one per example at most) stay within int64
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  require(p.t0 >= 0 && p.t0 <= kMax - T, "t0 must lie in [0, 2**63 - 1 - n_rows]");
  require(V.minCoeff() >= 0 && V.maxCoeff() <= kMax - T, "vote counts must lie in [0, 2**63 - 1 - n_rows]");
}

inline int round_mean_rank(std::int64_t num, std::int64_t den) {
  // floor(num / den + 1/2) for den > 0, num >= 0.
  return static_cast<int>((2 * num + den) / (2 * den));
}

struct WorkerBuffers {
  std::vector<std::int64_t> A;   // len x (k-1): sum_j a_j,t(r)  (BPM)
  std::vector<std::int64_t> H;   // len: sum_j h_j(x_t)          (Bagging/Voted)
  std::vector<std::int64_t> HV;  // len: sum_j v_j h_j(x_t)      (Voted)
  std::vector<std::int64_t> VV;  // len: sum_j v_j               (Voted)
  void reset(Index len, int k, OapVariant variant) {
    if (variant == OapVariant::BPM) {
      A.assign(static_cast<size_t>(len * (k - 1)), 0);
    } else {
      H.assign(static_cast<size_t>(len), 0);
      if (variant == OapVariant::Voted) {
        HV.assign(static_cast<size_t>(len), 0);
        VV.assign(static_cast<size_t>(len), 0);
      }
    }
  }
};

// One member's step on example t given its score s: tallies its vote for the Bagg/VP ensemble
// rules, and when the example is presented to it (the Bernoulli draw succeeded) applies PRank's
// mistake-driven threshold update, counting correct predictions in v (OAP-VP's v_j).  Returns the
// weight step g (0: no update).  Shared by the linear and the kernel ensembles.
inline int oap_member_step(double s, double* c, int k, int yt, bool presented, OapVariant variant,
                           WorkerBuffers& buf, Index t, std::int64_t& v) {
  const int pred = prank_rank(s, c, k);
  const bool bpm = variant == OapVariant::BPM;
  if (!bpm) {
    buf.H[t] += pred;
    if (variant == OapVariant::Voted) {
      buf.HV[t] += v * pred;
      buf.VV[t] += v;
    }
  }
  if (!presented) return 0;
  if (pred == yt) {
    ++v;
    return 0;
  }
  return prank_update(s, c, yt, k, bpm ? buf.A.data() + t * (k - 1) : nullptr);
}

// The ensemble's own prediction for non-BPM variants from the integer sums.
inline int vote_prediction(OapVariant variant, std::int64_t H, std::int64_t HV, std::int64_t VV, Index N) {
  if (variant == OapVariant::Voted && VV > 0) return round_mean_rank(HV, VV);
  return round_mean_rank(H, static_cast<std::int64_t>(N));
}

// The Bagg/VP ensemble's prediction for example t: the workers' integer vote sums, combined.
inline int ensemble_vote(const std::vector<WorkerBuffers>& bufs, Index t, OapVariant variant, Index N) {
  std::int64_t H = 0, HV = 0, VV = 0;
  for (const auto& b : bufs) {
    H += b.H[t];
    if (variant == OapVariant::Voted) {
      HV += b.HV[t];
      VV += b.VV[t];
    }
  }
  return vote_prediction(variant, H, HV, VV, N);
}

constexpr Index kChunk = 8192;  // examples per parallel section (bounds buffer memory)
constexpr Index kTile = 8;      // examples per cache tile inside a worker (stays in L1 for d ~ 300)
constexpr Index kPollExamples = 4096;  // a sequential pass checks for an interrupt this often (a clock read)

// A score w.x beyond float64 (features near 1e154 or more) ranks by inf or NaN and updates by that: refused.
void require_finite_scores(bool finite) {
  if (!finite)
    throw std::invalid_argument("the perceptron scores w.x overflow float64 (features of magnitude near 1e154 or "
                                "more); rescale X");
}

// A non-finite score or weight of Widrow-Hoff: a fixed eta beyond the stable step, or (normalised steps, which never
// overshoot) rows whose scores leave float64.
[[noreturn]] void widrow_hoff_diverged(const std::string& what, bool normalized) {
  throw std::invalid_argument("Widrow-Hoff diverged (non-finite " + what + "); " +
                              (normalized ? "the scores of X overflow float64: rescale X"
                                          : "use a smaller eta, below 2 / max ||x||^2, or eta='auto'"));
}

}  // namespace

IntVector oap_linear_fit(RowMatrixCRef X, IndexVectorCRef y, const OapParams& p, RowMatrixRef W, RowMatrixRef C,
                         IndexVectorRef V) {
  const Index T = X.rows(), d = X.cols(), N = W.rows();
  const int k = p.k;
  check_common(y, T, p, N, C, V);
  require(W.cols() == d, "weights have the wrong number of features");
  IntVector loss(T);
  if (T == 0) return loss;
  const bool bpm = p.variant == OapVariant::BPM;
  const std::uint64_t thr = oap_tau_threshold(p.tau);
  const bool always = thr >= (std::uint64_t(1) << 53);  // tau = 1: every draw succeeds
  std::vector<std::uint64_t> keys(static_cast<size_t>(N));
  for (Index j = 0; j < N; ++j) keys[j] = oap_member_key(p.seed, j);
  if (N == 1) {
    // A single member is its own ensemble (all variants agree): one loop, no replay.
    double* w = W.data();
    double* c = C.data();
    std::int64_t v = V[0];
    for (Index t = 0; t < T; ++t) {
      if (t % kPollExamples == 0) interrupt::poll();
      const double* x = X.data() + t * X.outerStride();
      if (t + 8 < T) prefetch_row(x + 8 * X.outerStride(), d);
      const double s = dot(w, x, d);
      require_finite_scores(std::isfinite(s));
      const int pred = prank_rank(s, c, k);
      const int yt = static_cast<int>(y[t]);
      loss[t] = std::abs(pred - yt);
      if (!always && !oap_draw(keys[0], p.t0 + t, thr)) continue;
      if (pred == yt) {
        ++v;
        continue;
      }
      const int g = prank_update(s, c, yt, k, nullptr);
      if (g != 0) axpy(static_cast<double>(g), x, w, d);
    }
    V[0] = v;
    return loss;
  }
  const int workers = static_cast<int>(std::max<Index>(1, std::min<Index>(std::max(1, p.n_threads), N)));
  // Members are handed out in blocks through an atomic counter (dynamic scheduling keeps both
  // cores busy when one is shared with other work).  Which worker runs a member never changes the
  // result: members are independent and the cross-member sums are integers.
  const Index block_size = workers == 1 ? N : std::max<Index>(1, (N + 2 * workers - 1) / (2 * workers));
  const Index n_blocks = (N + block_size - 1) / block_size;
  std::vector<WorkerBuffers> bufs(static_cast<size_t>(workers));
  Vector wsum(d), csum(k - 1);
  std::atomic<bool> finite{true};

  for (Index c0 = 0; c0 < T; c0 += kChunk) {
    interrupt::poll();
    const Index len = std::min(kChunk, T - c0);
    if (bpm) {  // the averaged rule (times N) at the start of the chunk, summed in member order
      wsum.setZero();
      csum.setZero();
      for (Index j = 0; j < N; ++j) {
        wsum += W.row(j).transpose();
        csum += C.row(j).transpose();
      }
    }
    for (auto& b : bufs) b.reset(len, k, p.variant);
    std::atomic<Index> next_block{0};
    parallel_for(0, workers, workers, 1, [&](Index wlo, Index whi) {
      for (Index w_id = wlo; w_id < whi; ++w_id) {
        WorkerBuffers& buf = bufs[static_cast<size_t>(w_id)];
        for (Index blk; (blk = next_block.fetch_add(1)) < n_blocks;) {
          interrupt::poll();
          const Index mlo = blk * block_size, mhi = std::min(N, mlo + block_size);
          for (Index ts = 0; ts < len; ts += kTile) {
            const Index te = std::min(len, ts + kTile);
            for (Index t = te; t < std::min(len, te + kTile); ++t) prefetch_row(X.data() + (c0 + t) * X.outerStride(), d);
            for (Index j = mlo; j < mhi; ++j) {
              double* w = W.data() + j * W.outerStride();
              double* c = C.data() + j * C.outerStride();
              std::int64_t v = V[j];
              const std::uint64_t key = keys[static_cast<size_t>(j)];
              for (Index t = ts; t < te; ++t) {
                const bool b = always || oap_draw(key, p.t0 + c0 + t, thr);
                if (!b && bpm) continue;
                const double* x = X.data() + (c0 + t) * X.outerStride();
                const double s = dot(w, x, d);
                if (!std::isfinite(s)) finite.store(false, std::memory_order_relaxed);
                const int g = oap_member_step(s, c, k, static_cast<int>(y[c0 + t]), b, p.variant, buf, t, v);
                if (g != 0) axpy(static_cast<double>(g), x, w, d);
              }
              V[j] = v;
            }
          }
        }
      }
    });
    require_finite_scores(finite.load());
    // The ensemble's on-line prediction for each example (before its label was used).
    if (bpm) {
      std::vector<std::int64_t> A(static_cast<size_t>(len * (k - 1)), 0);
      for (const auto& b : bufs)
        for (size_t i = 0; i < A.size(); ++i) A[i] += b.A[i];
      for (Index t = 0; t < len; ++t) {
        const double* x = X.data() + (c0 + t) * X.outerStride();
        const double s = dot(wsum.data(), x, d);
        require_finite_scores(std::isfinite(s));
        const int pred = prank_rank(s, csum.data(), k);
        loss[c0 + t] = std::abs(pred - static_cast<int>(y[c0 + t]));
        std::int64_t G = 0;
        for (int r = 0; r < k - 1; ++r) {
          const std::int64_t a = A[t * (k - 1) + r];
          G += a;
          csum[r] -= static_cast<double>(a);
        }
        if (G != 0) axpy(static_cast<double>(G), x, wsum.data(), d);
      }
    } else {
      for (Index t = 0; t < len; ++t) {
        loss[c0 + t] = std::abs(ensemble_vote(bufs, t, p.variant, N) - static_cast<int>(y[c0 + t]));
      }
    }
  }
  return loss;
}

IntVector oap_kernel_fit(RowMatrixCRef X, IndexVectorCRef y, IndexVectorCRef src, const OapParams& p,
                         const KernelSpec& spec, bool precomputed, std::int64_t budget, KernelOapState& state,
                         RowMatrixRef C, IndexVectorRef V) {
  const Index T = X.rows(), d = X.cols(), N = C.rows();
  const int k = p.k;
  check_common(y, T, p, N, C, V);
  require(budget >= 0, "budget must be >= 0");
  Index S = state.sv_time.size();
  require(state.A.rows() == N && state.A.cols() == S, "coefficients must be (n_members, n_support)");
  if (precomputed) {
    require(src.size() == T, "src must have one column index per example");
    require(state.sv_src.size() == S, "support columns missing");
    for (Index t = 0; t < T; ++t) require(src[t] >= 0 && src[t] < X.cols(), "precomputed kernel: too few columns");
    for (Index s = 0; s < S; ++s)
      require(state.sv_src[s] >= 0 && state.sv_src[s] < X.cols(), "precomputed kernel: too few columns");
  } else {
    require(state.sv_X.rows() == S && (S == 0 || state.sv_X.cols() == d), "support features have the wrong shape");
  }
  IntVector loss(T);
  const bool bpm = p.variant == OapVariant::BPM;
  const std::uint64_t thr = oap_tau_threshold(p.tau);
  const bool always = thr >= (std::uint64_t(1) << 53);  // tau = 1: every draw succeeds
  std::vector<std::uint64_t> keys(static_cast<size_t>(N));
  for (Index j = 0; j < N; ++j) keys[j] = oap_member_key(p.seed, j);

  // Working copies: per-member coefficient rows, support times/sources/features as vectors.
  std::vector<std::vector<double>> coef(static_cast<size_t>(N));
  for (Index j = 0; j < N; ++j) coef[j].assign(state.A.row(j).data(), state.A.row(j).data() + S);
  std::vector<std::int64_t> sv_time(state.sv_time.data(), state.sv_time.data() + S);
  std::vector<std::int64_t> sv_src(S);
  for (Index s = 0; s < S; ++s) sv_src[s] = precomputed ? state.sv_src[s] : -1;
  std::vector<double> sv_x;
  if (!precomputed) {
    sv_x.resize(static_cast<size_t>(S * d));
    for (Index s = 0; s < S; ++s)
      for (Index f = 0; f < d; ++f) sv_x[s * d + f] = state.sv_X(s, f);
  }
  const int workers = static_cast<int>(std::max<Index>(1, std::min<Index>(std::max(1, p.n_threads), N)));
  // Members are handed out in blocks through an atomic counter (dynamic scheduling keeps both
  // cores busy when one is shared with other work).  Which worker runs a member never changes the
  // result: members are independent and the cross-member sums are integers.
  const Index block_size = workers == 1 ? N : std::max<Index>(1, (N + 2 * workers - 1) / (2 * workers));
  const Index n_blocks = (N + block_size - 1) / block_size;
  const Index B = 256;
  std::vector<std::int64_t> gblk(static_cast<size_t>(N * B));  // member j's step at block example u
  std::vector<WorkerBuffers> bufs(static_cast<size_t>(workers));

  for (Index b0 = 0; b0 < T; b0 += B) {
    interrupt::poll();
    const Index len = std::min(B, T - b0);
    const std::int64_t tb = p.t0 + b0;
    // Drop support examples no longer inside any future window.
    if (budget > 0) {
      Index drop = 0;
      while (drop < S && sv_time[drop] < tb - budget) ++drop;
      if (drop > 0) {
        for (auto& cj : coef) cj.erase(cj.begin(), cj.begin() + drop);
        sv_time.erase(sv_time.begin(), sv_time.begin() + drop);
        sv_src.erase(sv_src.begin(), sv_src.begin() + drop);
        if (!precomputed) sv_x.erase(sv_x.begin(), sv_x.begin() + drop * d);
        S -= drop;
      }
    }
    // Kernel columns: Kb(:, t) = K(z, x_t) for z = support examples then this block's examples.
    const Index Z = S + len;
    Matrix Kb(Z, len);
    if (precomputed) {
      for (Index t = 0; t < len; ++t) {
        for (Index s = 0; s < S; ++s) Kb(s, t) = X(b0 + t, sv_src[s]);
        for (Index u = 0; u < len; ++u) Kb(S + u, t) = X(b0 + t, src[b0 + u]);
      }
    } else {
      RowMatrix Zx(Z, d);
      for (Index s = 0; s < S; ++s)
        for (Index f = 0; f < d; ++f) Zx(s, f) = sv_x[s * d + f];
      Zx.bottomRows(len) = X.middleRows(b0, len);
      kernel_cross_rowwise(spec, Zx, X.middleRows(b0, len), Kb, p.n_threads);  // chunking-independent values
    }
    // First support index inside the window of example t (times increase along the support).
    std::vector<Index> lo(static_cast<size_t>(len), 0);
    if (budget > 0) {
      Index l = 0;
      for (Index t = 0; t < len; ++t) {
        while (l < S && sv_time[l] < tb + t - budget) ++l;
        lo[t] = l;
      }
    }
    std::fill(gblk.begin(), gblk.end(), 0);
    for (auto& b : bufs) b.reset(len, k, p.variant);
    std::atomic<Index> next_block{0};
    parallel_for(0, workers, workers, 1, [&](Index wlo, Index whi) {
      for (Index w_id = wlo; w_id < whi; ++w_id) {
        WorkerBuffers& buf = bufs[static_cast<size_t>(w_id)];
        for (Index blk; (blk = next_block.fetch_add(1)) < n_blocks;) {
          const Index mlo = blk * block_size, mhi = std::min(N, mlo + block_size);
          std::vector<Index> ups;
          for (Index j = mlo; j < mhi; ++j) {
            const double* a = coef[j].data();
            double* c = C.data() + j * C.outerStride();
            std::int64_t* g = gblk.data() + j * B;
            std::int64_t v = V[j];
            const std::uint64_t key = keys[static_cast<size_t>(j)];
            ups.clear();
            for (Index t = 0; t < len; ++t) {
              const std::int64_t tg = tb + t;
              const bool b = always || oap_draw(key, tg, thr);
              if (!b && bpm) continue;
              const double* kc = Kb.col(t).data();
              // One sum in time order, term by term: a member's zero coefficients (rows only other members
              // updated) add exact zeros, so s is the sum over its own updates in stream order wherever a call
              // began.  A blocked dot's order follows the support's length at the call's blocks, and an update
              // at an exact tie of s with a threshold would then follow where the stream was cut.
              double s = 0.0;
              for (Index q = lo[t]; q < S; ++q) s += a[q] * kc[q];
              for (Index u : ups)
                if (budget == 0 || tb + u >= tg - budget) s += static_cast<double>(g[u]) * kc[S + u];
              const int gt = oap_member_step(s, c, k, static_cast<int>(y[b0 + t]), b, p.variant, buf, t, v);
              if (gt != 0) {
                g[t] = gt;
                ups.push_back(t);
              }
            }
            V[j] = v;
          }
        }
      }
    });
    // Ensemble on-line predictions.
    if (bpm) {
      std::vector<double> asum(static_cast<size_t>(S), 0.0);
      for (Index j = 0; j < N; ++j)
        for (Index s = 0; s < S; ++s) asum[s] += coef[j][s];
      // csum: current summed thresholds = sum_j C(j,:) minus this block's updates (already applied).
      std::vector<std::int64_t> A(static_cast<size_t>(len * (k - 1)), 0);
      for (const auto& b : bufs)
        for (size_t i = 0; i < A.size(); ++i) A[i] += b.A[i];
      std::vector<double> csum(static_cast<size_t>(k - 1), 0.0);
      for (Index j = 0; j < N; ++j)
        for (int r = 0; r < k - 1; ++r) csum[r] += C(j, r);
      for (Index t = 0; t < len; ++t)
        for (int r = 0; r < k - 1; ++r) csum[r] += static_cast<double>(A[t * (k - 1) + r]);  // undo c -= a
      std::vector<std::int64_t> G(static_cast<size_t>(len), 0);
      for (Index j = 0; j < N; ++j)
        for (Index u = 0; u < len; ++u) G[u] += gblk[j * B + u];
      for (Index t = 0; t < len; ++t) {
        const std::int64_t tg = tb + t;
        const double* kc = Kb.col(t).data();
        double s = 0.0;  // in time order, term by term, as the members' scores
        for (Index q = lo[t]; q < S; ++q) s += asum[q] * kc[q];
        for (Index u = 0; u < t; ++u)
          if (G[u] != 0 && (budget == 0 || tb + u >= tg - budget)) s += static_cast<double>(G[u]) * kc[S + u];
        const int pred = prank_rank(s, csum.data(), k);
        loss[b0 + t] = std::abs(pred - static_cast<int>(y[b0 + t]));
        for (int r = 0; r < k - 1; ++r) csum[r] -= static_cast<double>(A[t * (k - 1) + r]);
      }
    } else {
      for (Index t = 0; t < len; ++t) {
        loss[b0 + t] = std::abs(ensemble_vote(bufs, t, p.variant, N) - static_cast<int>(y[b0 + t]));
      }
    }
    // Append the block examples on which some member updated.
    for (Index u = 0; u < len; ++u) {
      bool any = false;
      for (Index j = 0; j < N && !any; ++j) any = gblk[j * B + u] != 0;
      if (!any) continue;
      for (Index j = 0; j < N; ++j) coef[j].push_back(static_cast<double>(gblk[j * B + u]));
      sv_time.push_back(tb + u);
      sv_src.push_back(precomputed ? src[b0 + u] : -1);
      if (!precomputed) {
        const double* x = X.data() + (b0 + u) * X.outerStride();
        sv_x.insert(sv_x.end(), x, x + d);
      }
      ++S;
    }
  }
  // Write the state back (a final window trim so stored support never exceeds the budget).
  Index drop = 0;
  if (budget > 0)
    while (drop < S && sv_time[drop] < p.t0 + T - budget) ++drop;
  const Index S2 = S - drop;
  state.A.resize(N, S2);
  for (Index j = 0; j < N; ++j)
    for (Index s = 0; s < S2; ++s) state.A(j, s) = coef[j][drop + s];
  state.sv_time.resize(S2);
  state.sv_src.resize(S2);
  for (Index s = 0; s < S2; ++s) {
    state.sv_time[s] = sv_time[drop + s];
    state.sv_src[s] = sv_src[drop + s];
  }
  if (!precomputed) {
    state.sv_X.resize(S2, d);
    for (Index s = 0; s < S2; ++s)
      for (Index f = 0; f < d; ++f) state.sv_X(s, f) = sv_x[(drop + s) * d + f];
  } else {
    state.sv_X.resize(0, 0);
  }
  return loss;
}

IntVector widrow_hoff_fit(RowMatrixCRef X, IndexVectorCRef y, int k, double eta, bool fit_intercept,
                          Eigen::Ref<Vector> w, double& b, bool normalized) {
  const Index T = X.rows(), d = X.cols();
  require(k >= 2, "need at least 2 ranks");
  require(std::isfinite(eta) && eta > 0.0, "eta must be positive and finite");
  require(w.size() == d, "weights have the wrong number of features");
  require(y.size() == T, "y must have one rank per row of X");
  IntVector loss(T);
  for (Index t = 0; t < T; ++t) {
    if (t % kPollExamples == 0) interrupt::poll();
    const double* x = X.data() + t * X.outerStride();
    const double s = dot(w.data(), x, d) + b;
    if (!std::isfinite(s)) widrow_hoff_diverged("score at example " + std::to_string(t), normalized);
    const double r = std::floor(s + 0.5);
    const int pred = r < 1.0 ? 1 : (r > k ? k : static_cast<int>(r));
    const int yt = static_cast<int>(y[t]);
    loss[t] = std::abs(pred - yt);
    const double norm = normalized ? dot(x, x, d) + (fit_intercept ? 1.0 : 0.0) : 1.0;
    if (normalized && norm != 0.0 && !(norm >= 0x1p-900 && norm <= 0x1p900)) {
      // ||x||^2 overflows (the step was 0: nothing learnt) or underflows (an infinite step): the same step in units
      // of c = 2^e ~ max |x| (exact scaling), w += eta (r - s) / (c q) (x / c) with q = ||x / c||^2 (+ 1 / c^2)
      double big = fit_intercept ? 1.0 : 0.0;
      for (Index j = 0; j < d; ++j) big = std::max(big, std::fabs(x[j]));
      int e2 = 0;
      std::frexp(big, &e2);
      double q = fit_intercept ? std::ldexp(1.0, -2 * e2) : 0.0;
      for (Index j = 0; j < d; ++j) q += std::ldexp(x[j], -e2) * std::ldexp(x[j], -e2);
      const double g = eta * (static_cast<double>(yt) - s) / q;
      for (Index j = 0; j < d; ++j) w[j] += std::ldexp(g * std::ldexp(x[j], -e2), -e2);
      if (fit_intercept) b += std::ldexp(g, -2 * e2);
      continue;
    }
    const double e = norm > 0.0 ? eta / norm * (static_cast<double>(yt) - s) : 0.0;
    axpy(e, x, w.data(), d);
    if (fit_intercept) b += e;
  }
  // The last updates can overflow w or b with no score after them to show it.
  if (!(std::isfinite(b) && w.allFinite())) widrow_hoff_diverged("weights after example " + std::to_string(T - 1),
                                                                  normalized);
  return loss;
}

}  // namespace fastrank
