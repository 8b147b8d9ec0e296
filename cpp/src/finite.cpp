#include "fastrank/finite.hpp"

#include <atomic>
#include <cfloat>
#include <cmath>

#include "fastrank/parallel.hpp"

namespace fastrank {

bool all_finite(const double* data, Index size, int n_threads) {
  std::atomic<bool> ok{true};
  parallel_for(0, size, n_threads, Index(1) << 20, [&](Index lo, Index hi) {
    constexpr Index block = 4096;  // check in blocks so a bad value stops the scan early
    for (Index b = lo; b < hi && ok.load(std::memory_order_relaxed); b += block) {
      const Index e = std::min(hi, b + block);
      int bad = 0;
      for (Index i = b; i < e; ++i) bad |= !(std::fabs(data[i]) <= DBL_MAX);  // NaN fails too
      if (bad) ok.store(false, std::memory_order_relaxed);
    }
  });
  return ok.load();
}

}  // namespace fastrank
