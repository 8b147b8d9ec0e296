"""scipy.sparse input: CSR arrays validated once and handed to C++ without copies (``data``/``indices``/``indptr`` as
they are, int32 or int64 indices).  Unsorted column indices and duplicate entries are accepted and mean what SciPy
means (duplicates add up); empty rows and columns are fine; other formats are converted to CSR once."""

from __future__ import annotations

from collections import namedtuple

import numpy as np
import scipy.sparse as sp

__all__ = ["CsrParts", "as_csr", "canonical_csr", "issparse", "take_rows", "row_sq_norms"]

issparse = sp.issparse

# A validated CSR matrix as the arrays C++ maps without copying.
CsrParts = namedtuple("CsrParts", ["data", "indices", "indptr", "shape"])


def as_csr(X, name="X"):
    """The CSR arrays (:class:`CsrParts`) of a ``scipy.sparse`` matrix: no copy for float64 CSR data (other data: a copy
    of ``data`` only).  ValueError on non-finite values or malformed index arrays (out-of-range column indices,
    decreasing ``indptr``)."""
    if X.ndim != 2:
        raise ValueError(f"{name} must be 2-D, got {X.ndim}-D")
    X = X.tocsr()
    m, n = X.shape
    if m < 1 or n < 1:
        raise ValueError(f"{name} has shape {X.shape}; at least one row and one column are needed")
    data = X.data
    if np.iscomplexobj(data) or not (np.issubdtype(data.dtype, np.number) or data.dtype == bool):
        raise ValueError(f"{name} must be real-valued, got dtype {data.dtype}")
    data = np.ascontiguousarray(data, dtype=np.float64)
    indices, indptr = X.indices, X.indptr
    if indices.dtype not in (np.int32, np.int64) or indptr.dtype != indices.dtype:
        indices, indptr = indices.astype(np.int64), indptr.astype(np.int64)
    indices, indptr = np.ascontiguousarray(indices), np.ascontiguousarray(indptr)
    if indptr.ndim != 1 or indptr.size != m + 1:
        raise ValueError(f"{name}.indptr must have {m + 1} entries, got {indptr.size}")
    if indptr[0] != 0:
        raise ValueError(f"{name}.indptr must start at 0")
    nnz = int(indptr[-1])
    if nnz > indices.size or nnz > data.size:
        raise ValueError(f"{name}.indptr[-1] = {nnz} exceeds the stored entries ({min(indices.size, data.size)})")
    if np.any(np.diff(indptr) < 0):
        raise ValueError(f"{name}.indptr must be non-decreasing")
    if nnz:
        used = indices[:nnz]
        if used.min() < 0 or used.max() >= n:
            raise ValueError(f"{name} has column indices outside [0, {n})")
        if not np.isfinite(data[:nnz]).all():
            raise ValueError(f"Input {name} contains NaN or infinity.")
    return CsrParts(data, indices, indptr, (int(m), int(n)))


def canonical_csr(X):
    """A CSR matrix with sorted indices, no duplicates, no storage past ``indptr[-1]`` and float64 data (copies only
    when needed)."""
    X = X.tocsr()
    if not X.has_canonical_format or X.data.size != X.nnz or X.indices.size != X.nnz:
        X = X.copy()
        X.prune()  # data and indices may be longer than indptr[-1]: SciPy reads only the first nnz entries
        X.sum_duplicates()
    if X.dtype != np.float64:
        X = X.astype(np.float64)
    return X


def take_rows(X, idx):
    return X[idx] if sp.issparse(X) else np.ascontiguousarray(np.asarray(X)[idx])


def row_sq_norms(Z):
    return np.asarray(Z.multiply(Z).sum(axis=1)).reshape(-1) if sp.issparse(Z) else np.einsum("ij,ij->i", Z, Z)
