// On-line ordinal learners (Harrington 2003, "Online Ranking/Collaborative filtering using the
// Perceptron Algorithm"): PRank (Algorithm 1, Crammer & Singer), the OAP ensemble of N PRanks fed
// by independent Bernoulli(tau) draws (Algorithm 2, OAP-BPM, and the section 3.1 variants OAP-Bagg
// and OAP-VP), their kernel forms (representer expansion, section 3 end), and Widrow-Hoff (section 4).
//
// The core is stateless: the caller owns the state arrays (member weights W, thresholds C,
// correct-prediction counts V) and passes them in; they are updated in place.  Ranks are 1..k.
//
// Reproducibility: the Bernoulli draw b(j, t) of member j at stream position t is a pure function
// of (seed, j, t) (splitmix64 counter-based hashing), so results never depend on the thread count
// and a stream cut into several calls gives exactly what one call on the whole stream gives.
// Members are independent, so threads split the members; the only cross-member quantities (the
// ensemble's own on-line prediction, used for the cumulative rank loss) are sums of integers
// (update directions a_j(r) in {-1,0,1}, predicted ranks, counts), hence exact in any order.
#pragma once
#include <cmath>
#include <cstdint>

#include "fastrank/kernels.hpp"
#include "fastrank/types.hpp"

namespace fastrank {

using RowMatrixRef = Eigen::Ref<RowMatrix>;
using IndexVectorRef = Eigen::Ref<IndexVector>;
using IntVector = Eigen::Matrix<std::int32_t, Eigen::Dynamic, 1>;

enum class OapVariant : int { BPM = 0, Bagging = 1, Voted = 2 };

// splitmix64 finaliser.
inline std::uint64_t splitmix64(std::uint64_t z) {
  z += 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}
// Per-member key; b(j, t) = [ (splitmix64(key_j ^ t) >> 11) < tau * 2^53 ].
inline std::uint64_t oap_member_key(std::uint64_t seed, std::int64_t j) {
  return splitmix64(splitmix64(seed) + static_cast<std::uint64_t>(j));
}
// tau * 2^53 (exact for tau = 1: every draw succeeds).
inline std::uint64_t oap_tau_threshold(double tau) {
  return static_cast<std::uint64_t>(tau * 9007199254740992.0);
}
inline bool oap_draw(std::uint64_t key, std::int64_t t, std::uint64_t threshold53) {
  return (splitmix64(key ^ static_cast<std::uint64_t>(t)) >> 11) < threshold53;
}

struct OapParams {
  int k = 2;               // number of ranks
  double tau = 1.0;        // Bernoulli probability, (0, 1]
  std::uint64_t seed = 0;  // master seed
  std::int64_t t0 = 0;     // stream position of the first example of this call
  OapVariant variant = OapVariant::BPM;
  int n_threads = 1;
};

// Linear OAP ensemble (N = W.rows() members; PRank is N = 1, tau = 1), one pass over (X, y).
// W: N x d weights, C: N x (k-1) thresholds, V: N counts of correct predictions on presented
// examples (OAP-VP's v_j).  All updated in place.  Returns |yhat_t - y_t| of the ensemble's
// prediction made before seeing y_t (BPM: averaged weights and thresholds; Bagging: rounded mean
// of the members' ranks; Voted: rounded count-weighted mean).
IntVector oap_linear_fit(RowMatrixCRef X, IndexVectorCRef y, const OapParams& p, RowMatrixRef W, RowMatrixRef C,
                         IndexVectorRef V);

// Kernel OAP ensemble through the representer expansion f_j(x) = sum_s A(j, s) K(x_s, x).
// The expansion examples ("support") are listed by stream time `sv_time` (increasing) and either
// their features (`sv_X`, S x d) or, for a precomputed kernel, their column `sv_src` in the rows of X.
// `src` gives, per example of this call, its own column in X (precomputed) — unused otherwise.
// `budget` > 0 keeps only support examples with t - time <= budget (the last `budget` rounds) in every
// member's expansion (a sliding-window truncation; 0 = unbounded).  Returns the per-example ensemble losses and the
// new support state (appended examples are those on which at least one member updated).
struct KernelOapState {
  RowMatrix A;          // N x S coefficients
  RowMatrix sv_X;       // S x d (empty for precomputed)
  IndexVector sv_time;  // S
  IndexVector sv_src;   // S (precomputed column, else -1)
};
IntVector oap_kernel_fit(RowMatrixCRef X, IndexVectorCRef y, IndexVectorCRef src, const OapParams& p,
                         const KernelSpec& spec, bool precomputed, std::int64_t budget, KernelOapState& state,
                         RowMatrixRef C, IndexVectorRef V);

// Widrow-Hoff (LMS) regression on the ranks: s = w.x + b, w += eta (y - s) x, b += eta (y - s);
// the on-line prediction is s rounded to the nearest rank in 1..k.  Returns |yhat_t - y_t|.
// normalized: the step of example t is eta / (||x_t||^2 + fit_intercept) (normalised LMS: the update
// multiplies that example's error by 1 - eta, so 0 < eta < 2 never diverges, whatever the scale of x).
IntVector widrow_hoff_fit(RowMatrixCRef X, IndexVectorCRef y, int k, double eta, bool fit_intercept,
                          Eigen::Ref<Vector> w, double& b, bool normalized = false);

// Rank of a score against ordered thresholds c(1..k-1): smallest r with s - c(r) < 0, else k.
inline int prank_rank(double s, const double* c, int k) {
  for (int r = 0; r < k - 1; ++r)
    if (s - c[r] < 0.0) return r + 1;
  return k;
}

}  // namespace fastrank
