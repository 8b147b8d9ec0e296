// Zero-copy CSR views of SciPy's data/indices/indptr arrays, shared by the bindings that take
// sparse input.  Validates the cheap invariants here; the Python layer (_sparse.as_csr) has
// already checked values and index ranges.
#pragma once
#include <pybind11/numpy.h>

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
  return v;
}

}  // namespace fastrank::bindings
