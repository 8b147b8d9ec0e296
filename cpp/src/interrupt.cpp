#include "fastrank/interrupt.hpp"

namespace fastrank::interrupt {

namespace {
hook_t installed_hook = nullptr;
thread_local std::atomic<bool> own_flag{false};
thread_local std::atomic<bool>* callers_flag = nullptr;  // set in parallel_for workers
thread_local std::chrono::steady_clock::time_point next_hook{};
}  // namespace

void install(hook_t hook) { installed_hook = hook; }

void poll() {
  if (callers_flag) {
    if (callers_flag->load(std::memory_order_relaxed)) throw Interrupted();
    return;
  }
  if (!installed_hook) return;
  const auto now = std::chrono::steady_clock::now();
  if (now < next_hook) return;
  next_hook = now + kHookPeriod;
  if (installed_hook()) {
    own_flag.store(true, std::memory_order_relaxed);  // stops the workers of a running parallel section
    throw Interrupted();
  }
}

std::atomic<bool>* flag_for_workers() {
  if (callers_flag) return callers_flag;
  own_flag.store(false, std::memory_order_relaxed);
  return &own_flag;
}

void adopt(std::atomic<bool>* flag) { callers_flag = flag; }

}  // namespace fastrank::interrupt
