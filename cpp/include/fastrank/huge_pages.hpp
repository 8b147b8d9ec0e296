// Transparent huge pages for large fresh outputs (Linux).  With THP in "madvise" mode a large
// malloc'd block is first touched 4 KiB at a time; a 32 MB leave-pair-out output then spends more
// time in page faults than in its arithmetic.  numpy advises its own large arrays the same way.
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace fastrank {

// Advises the 2 MiB-aligned interior of [data, data + bytes) for huge pages before it is written;
// a hint only (no effect elsewhere or when refused).
inline void advise_huge_pages(void* data, std::size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  constexpr std::uintptr_t kHuge = std::uintptr_t{1} << 21;
  if (bytes < 2 * kHuge) return;
  const auto begin = reinterpret_cast<std::uintptr_t>(data);
  const std::uintptr_t lo = (begin + kHuge - 1) & ~(kHuge - 1), hi = (begin + bytes) & ~(kHuge - 1);
  if (hi > lo) madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_HUGEPAGE);
#else
  (void)data;
  (void)bytes;
#endif
}

}  // namespace fastrank
