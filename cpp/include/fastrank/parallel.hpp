// A small parallel_for on std::thread: static contiguous chunks, the first exception thrown by
// any worker is rethrown in the caller, and small work runs serially on the calling thread.  The
// workers see an interrupt of the calling thread (interrupt::poll throws in them too).
#pragma once
#include <algorithm>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

#include "fastrank/interrupt.hpp"
#include "fastrank/types.hpp"

namespace fastrank {

// n_jobs semantics follow scikit-learn: None/0 -> 1 ... here <= 0 means "all cores".
inline int resolve_threads(int n_jobs) {
  if (n_jobs > 0) return n_jobs;
  unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

// Calls body(lo, hi) on disjoint chunks covering [begin, end).
template <class Body>
void parallel_for(Index begin, Index end, int n_threads, Index min_chunk, Body&& body) {
  const Index n = end - begin;
  if (n <= 0) return;
  n_threads = std::max(1, n_threads);
  const Index max_useful = std::max<Index>(1, n / std::max<Index>(1, min_chunk));
  const int workers = static_cast<int>(std::min<Index>(n_threads, max_useful));
  if (workers <= 1) {
    body(begin, end);
    return;
  }
  std::exception_ptr error;
  std::mutex error_mutex;
  std::vector<std::thread> pool;
  pool.reserve(workers - 1);
  std::atomic<bool>* const cancel = interrupt::flag_for_workers();
  auto run = [&](int w) {
    const Index lo = begin + n * w / workers;
    const Index hi = begin + n * (w + 1) / workers;
    try {
      body(lo, hi);
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!error) error = std::current_exception();
    }
  };
  for (int w = 1; w < workers; ++w)
    pool.emplace_back([&, w] {
      interrupt::adopt(cancel);
      run(w);
    });
  run(0);
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace fastrank
