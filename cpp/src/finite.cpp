#include "fastrank/finite.hpp"

#include <atomic>

#include "fastrank/parallel.hpp"

namespace fastrank {

bool all_finite(const double* data, Index size, int n_threads) {
  std::atomic<bool> ok{true};
  parallel_for(0, size, n_threads, Index(1) << 20, [&](Index lo, Index hi) {
    constexpr Index block = 4096;  // check in blocks so a bad value stops the scan early
    for (Index b = lo; b < hi && ok.load(std::memory_order_relaxed); b += block) {
      const Index e = std::min(hi, b + block);
      // x - x is 0 for a finite x and NaN for NaN or +-inf; eight independent sums let the compiler vectorize
      // without reassociating (twice the speed of a compare-and-or loop, which it does not vectorize)
      double lanes[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      Index i = b;
      for (; i + 8 <= e; i += 8)
        for (int k = 0; k < 8; ++k) lanes[k] += data[i + k] - data[i + k];
      double sum = 0;
      for (; i < e; ++i) sum += data[i] - data[i];
      for (const double lane : lanes) sum += lane;
      if (!(sum == 0)) ok.store(false, std::memory_order_relaxed);
    }
  });
  return ok.load();
}

}  // namespace fastrank
