// Pairwise disagreement of held-out pair predictions, accumulated per output by the threaded pair
// loops of the leave-pair-out routes (spectral and Cholesky): each thread emits into its own
// Counter and flushes it once under a lock.  A pair with equal targets is not a preference and
// is skipped; tied predictions count 1/2 (the README's convention).
#pragma once
#include <limits>
#include <mutex>

#include "fastrank/types.hpp"

namespace fastrank {

class PairDisagreement {
 public:
  explicit PairDisagreement(Index n_outputs)
      : wrong_(Vector::Zero(n_outputs)), valid_(Vector::Zero(n_outputs)) {}

  struct Counter {
    Vector wrong, valid;
    PairDisagreement* total;
    void emit(Index, Index k, double fa, double fb, double ya, double yb) {
      const double dt = ya - yb;
      if (dt == 0.0) return;
      valid[k] += 1.0;
      const double dp = fa - fb;
      // signs, not the product dp * dt: that underflows to 0 for differences near 1e-200
      wrong[k] += (dp == 0.0) ? 0.5 : ((dp < 0.0) != (dt < 0.0) ? 1.0 : 0.0);
    }
    void flush() {
      std::lock_guard<std::mutex> guard(total->lock_);
      total->wrong_ += wrong;
      total->valid_ += valid;
    }
  };

  Counter counter() { return Counter{Vector::Zero(wrong_.size()), Vector::Zero(wrong_.size()), this}; }

  // Fraction wrong per output (NaN where no pair has different targets).
  Vector result() const {
    Vector out(wrong_.size());
    for (Index k = 0; k < out.size(); ++k)
      out[k] = valid_[k] > 0 ? wrong_[k] / valid_[k] : std::numeric_limits<double>::quiet_NaN();
    return out;
  }

 private:
  Vector wrong_, valid_;
  std::mutex lock_;
};

}  // namespace fastrank
