// Input checks that must be cheap on large arrays.
#pragma once
#include "fastrank/types.hpp"

namespace fastrank {

// Whether every value of a contiguous float64 buffer is finite.  One threaded pass of sums of
// x - x (0, or NaN for a non-finite x) in independent lanes, which the compiler vectorizes
// without reassociating floating-point sums.  (A BLAS product with ones would be as fast but
// leaves OpenBLAS's worker threads spinning, which slows the threaded kernels that follow.)
bool all_finite(const double* data, Index size, int n_threads);

}  // namespace fastrank
