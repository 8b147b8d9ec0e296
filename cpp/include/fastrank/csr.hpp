// Zero-copy CSR view over SciPy's (data, indices, indptr) arrays and threaded sparse products.
//
// The view never owns memory: the Python layer keeps the arrays alive for the duration of the
// call.  Index type I is std::int32_t or std::int64_t (SciPy's two index dtypes).  Unsorted
// column indices and duplicate entries are fine for every product here (duplicates add up, as
// SciPy defines them); code that needs per-entry values (squares) merges a row first.
//
// Products are row-partitioned with chunk boundaries balanced by non-zeros.  X^T U is computed
// either with per-thread partial sums (T buffers of n x v, then a parallel reduction) or, when a
// transposed copy is built once (O(nnz) extra memory), as a row-parallel gather on X^T.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "fastrank/parallel.hpp"
#include "fastrank/types.hpp"

namespace fastrank {

template <class I>
struct CsrView {
  Index rows = 0;
  Index cols = 0;
  const double* data = nullptr;
  const I* indices = nullptr;
  const I* indptr = nullptr;

  Index nnz() const { return rows == 0 ? 0 : static_cast<Index>(indptr[rows]) - static_cast<Index>(indptr[0]); }
  Index begin(Index i) const { return static_cast<Index>(indptr[i]); }
  Index end(Index i) const { return static_cast<Index>(indptr[i + 1]); }
};

// An owned CSR matrix (used for the optional transposed copy).
template <class J>
struct CsrOwned {
  Index rows = 0, cols = 0;
  std::vector<J> indptr;
  std::vector<J> indices;
  std::vector<double> data;
  CsrView<J> view() const {
    CsrView<J> v;
    v.rows = rows;
    v.cols = cols;
    v.data = data.data();
    v.indices = indices.data();
    v.indptr = indptr.data();
    return v;
  }
};

// Row boundaries of `parts` chunks with about equal non-zeros (plus rows, so empty rows count).
template <class I>
std::vector<Index> balanced_row_chunks(const CsrView<I>& A, int parts) {
  parts = std::max(1, parts);
  std::vector<Index> bounds(parts + 1, A.rows);
  bounds[0] = 0;
  const double total = static_cast<double>(A.nnz() + A.rows);
  Index i = 0;
  for (int p = 1; p < parts; ++p) {
    const double target = total * p / parts;
    while (i < A.rows && static_cast<double>(A.begin(i + 1) - A.begin(0) + (i + 1)) < target) ++i;
    bounds[p] = std::max(bounds[p - 1], i);
  }
  return bounds;
}

// Row chunks of a threaded product and the threads that run them.  Products that add per-chunk partial sums (A^T U)
// add them in chunk order, so the number of chunks depends on the matrix only, never on the threads: results are
// bit-identical for every n_jobs.  About 20,000 non-zeros a chunk, at most 16 chunks, and at most 1 + nnz / (8 cols)
// of them (zeroing and adding a chunk's `cols` sums then costs a small part of its scattered products).
struct RowChunks {
  std::vector<Index> bounds;
  int threads = 1;
};

template <class I>
RowChunks product_chunks(const CsrView<I>& A, int n_threads) {
  const Index nnz = A.nnz();
  const Index parts = std::min<Index>({Index(16), std::max<Index>(1, nnz / 20000),
                                       1 + nnz / std::max<Index>(1, 8 * static_cast<Index>(A.cols))});
  // One thread below 2^17 non-zeros: conjugate gradients on 10,000 rows of 200 features at 5% density (100,000
  // non-zeros) took 1.2 times as long on two threads as on one; 200,000 non-zeros 0.92 times.
  const int threads = nnz < (Index(1) << 17) ? 1 : std::max(1, n_threads);
  return RowChunks{balanced_row_chunks(A, static_cast<int>(parts)), threads};
}

// Runs body(p, row_lo, row_hi) on the chunks, on up to chunks.threads threads.
template <class Body>
void run_chunks(const RowChunks& chunks, Body&& body) {
  const auto& bounds = chunks.bounds;
  const int parts = static_cast<int>(bounds.size()) - 1;
  parallel_for(0, parts, chunks.threads, 1, [&](Index lo, Index hi) {
    for (Index p = lo; p < hi; ++p) body(static_cast<int>(p), bounds[p], bounds[p + 1]);
  });
}

// out (rows x v, row-major) = A P with P (cols x v, row-major).
template <class I>
void csr_times(const CsrView<I>& A, const RowMatrix& P, RowMatrix& out, const RowChunks& chunks) {
  const Index v = P.cols();
  out.resize(A.rows, v);
  run_chunks(chunks, [&](int, Index lo, Index hi) {
    if (v == 1) {
      const double* p = P.data();
      for (Index i = lo; i < hi; ++i) {
        double s = 0.0;
        for (Index t = A.begin(i); t < A.end(i); ++t) s += A.data[t] * p[A.indices[t]];
        out(i, 0) = s;
      }
    } else {
      for (Index i = lo; i < hi; ++i) {
        auto row = out.row(i);
        row.setZero();
        for (Index t = A.begin(i); t < A.end(i); ++t) row += A.data[t] * P.row(static_cast<Index>(A.indices[t]));
      }
    }
  });
}

// out (cols x v) = A^T U via per-chunk partial sums; `buffers` is reusable workspace.
template <class I>
void csr_transpose_times(const CsrView<I>& A, const RowMatrix& U, RowMatrix& out, const RowChunks& chunks,
                         std::vector<RowMatrix>& buffers) {
  const Index v = U.cols(), n = A.cols;
  const int parts = static_cast<int>(chunks.bounds.size()) - 1;
  out.resize(n, v);
  buffers.resize(std::max(0, parts - 1));
  run_chunks(chunks, [&](int p, Index lo, Index hi) {
    RowMatrix& buf = (p == 0) ? out : buffers[p - 1];
    buf.setZero(n, v);
    if (v == 1) {
      double* b = buf.data();
      const double* u = U.data();
      for (Index i = lo; i < hi; ++i) {
        const double ui = u[i];
        if (ui == 0.0) continue;
        for (Index t = A.begin(i); t < A.end(i); ++t) b[A.indices[t]] += A.data[t] * ui;
      }
    } else {
      for (Index i = lo; i < hi; ++i)
        for (Index t = A.begin(i); t < A.end(i); ++t) buf.row(static_cast<Index>(A.indices[t])) += A.data[t] * U.row(i);
    }
  });
  // Reduce the partial sums into out, parallel over contiguous stretches of the n*v entries.
  const Index total = n * v;
  if (parts <= 1) return;
  parallel_for(0, total, chunks.threads, 131072, [&](Index lo, Index hi) {
    double* o = out.data();
    for (int p = 0; p + 1 < parts; ++p) {
      const double* b = buffers[p].data();
      for (Index k = lo; k < hi; ++k) o[k] += b[k];
    }
  });
}

// The transpose as an owned CSR matrix (counting sort; duplicates are kept and still add up).
// J must hold nnz and the row count (checked by the caller).
template <class J, class I>
CsrOwned<J> csr_transpose(const CsrView<I>& A) {
  CsrOwned<J> T;
  T.rows = A.cols;
  T.cols = A.rows;
  const Index nnz = A.nnz();
  T.indptr.assign(A.cols + 1, 0);
  T.indices.resize(nnz);
  T.data.resize(nnz);
  for (Index i = 0; i < A.rows; ++i)
    for (Index t = A.begin(i); t < A.end(i); ++t) ++T.indptr[static_cast<Index>(A.indices[t]) + 1];
  for (Index k = 0; k < A.cols; ++k) T.indptr[k + 1] += T.indptr[k];
  std::vector<J> fill(T.indptr.begin(), T.indptr.end() - 1);
  for (Index i = 0; i < A.rows; ++i)
    for (Index t = A.begin(i); t < A.end(i); ++t) {
      const Index k = static_cast<Index>(A.indices[t]);
      const J pos = fill[k]++;
      T.indices[pos] = static_cast<J>(i);
      T.data[pos] = A.data[t];
    }
  return T;
}

}  // namespace fastrank
