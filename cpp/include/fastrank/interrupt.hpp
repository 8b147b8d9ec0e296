// Interruption of long computations (Ctrl-C).  Iterative loops call interrupt::poll(), which
// throws fastrank::Interrupted once an interrupt is pending.  The bindings install the hook that
// knows about interrupts (Python's signal check, which needs the GIL and works only in Python's
// main thread); the core never sees Python.  Only the thread that called into the core consults
// the hook, at most once per kHookPeriod; parallel_for's workers read their caller's flag.
#pragma once
#include <atomic>
#include <chrono>
#include <exception>

namespace fastrank {

// Thrown by poll() on an interrupt; the bindings turn it into the pending Python exception.
struct Interrupted : std::exception {
  const char* what() const noexcept override { return "interrupted"; }
};

namespace interrupt {

// Returns true if the computation must stop.  Called only from the thread that called into the core.
using hook_t = bool (*)();
// Installed once by the bindings at import; read-only afterwards.
void install(hook_t hook);

// Taking the GIL costs up to Python's switch interval (5 ms) when another Python thread runs:
// consulted this rarely, the hook costs nothing measurable, and Ctrl-C still acts at once.
inline constexpr std::chrono::milliseconds kHookPeriod{100};

// Cheap enough for a loop whose iterations take a microsecond (a clock read; a flag read in a worker).
void poll();

// The flag that cancels the current computation's parallel_for workers: the calling thread's own,
// cleared when it starts a parallel section, or, in a worker, its caller's.
std::atomic<bool>* flag_for_workers();
// Makes a parallel_for worker thread poll `flag` for its lifetime.
void adopt(std::atomic<bool>* flag);

}  // namespace interrupt
}  // namespace fastrank
