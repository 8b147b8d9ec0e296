// Zero-copy CSR views of SciPy's data/indices/indptr arrays, shared by the bindings that take
// sparse input.  The Python layer (_sparse.as_csr) has already checked values and index ranges;
// the structure is checked again here (O(rows + nnz), a min/max pass) because the products write
// through the column indices: a direct call with a bad index must raise, not corrupt the heap.
#pragma once
#include <pybind11/numpy.h>

#include <algorithm>
#include <cstdint>

#include "fastrank/csr.hpp"
#include "fastrank/errors.hpp"

namespace fastrank::bindings {

using DoubleArray = pybind11::array_t<double, pybind11::array::c_style>;

inline bool is_int32(const pybind11::array& a) { return a.dtype().is(pybind11::dtype::of<std::int32_t>()); }
inline bool is_int64(const pybind11::array& a) { return a.dtype().is(pybind11::dtype::of<std::int64_t>()); }

template <class I>
CsrView<I> csr_view(const DoubleArray& data, const pybind11::array& indices, const pybind11::array& indptr,
                    Index rows, Index cols) {
  require(indices.ndim() == 1 && indptr.ndim() == 1 && data.ndim() == 1, "CSR arrays must be 1-D");
  require((indices.flags() & pybind11::array::c_style) && (indptr.flags() & pybind11::array::c_style),
          "CSR index arrays must be contiguous");
  require(indices.dtype().is(pybind11::dtype::of<I>()) && indptr.dtype().is(pybind11::dtype::of<I>()),
          "CSR indices and indptr must share one integer dtype (int32 or int64)");
  require(rows >= 0 && cols >= 1, "CSR shape must have n_rows >= 0 and n_cols >= 1");
  require(indptr.shape(0) == rows + 1, "CSR indptr must have n_rows + 1 entries");
  CsrView<I> v;
  v.rows = rows;
  v.cols = cols;
  v.data = data.data();
  v.indices = static_cast<const I*>(indices.data());
  v.indptr = static_cast<const I*>(indptr.data());
  require(v.indptr[0] == 0, "CSR indptr must start at 0");
  require(static_cast<Index>(v.indptr[rows]) <= data.shape(0) && static_cast<Index>(v.indptr[rows]) <= indices.shape(0),
          "CSR indptr[-1] exceeds the number of stored entries");
  bool ordered = true;
  for (Index r = 0; r < rows; ++r) ordered &= v.indptr[r] <= v.indptr[r + 1];
  require(ordered, "CSR indptr must be non-decreasing");
  I lo = 0, hi = 0;
  const I nnz = v.indptr[rows];
  if (nnz > 0) lo = hi = v.indices[0];
  for (I t = 1; t < nnz; ++t) {
    lo = std::min(lo, v.indices[t]);
    hi = std::max(hi, v.indices[t]);
  }
  require(nnz == 0 || (lo >= 0 && static_cast<Index>(hi) < cols), "CSR column indices must lie in [0, n_cols)");
  return v;
}

}  // namespace fastrank::bindings
