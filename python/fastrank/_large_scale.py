"""Large-scale RankRLS: conjugate gradient on sparse data and subset-of-regressors RankRLS.

Pahikkala et al. (2009), Sect. 4.3 (conjugate gradient, O(nnz + m) per iteration without pairs)
and Sect. 3.5, eqs. 40-42 (sparse RankRLS over basis vectors, O(m |R|^2), regularization path in
O(|R|^2) per extra alpha).  These are the functions :class:`fastrank.RankRLS` dispatches to for
``solver="cg"`` and ``basis_vectors=...``; they are usable on their own as well.

Sparse input is a ``scipy.sparse`` matrix; CSR is mapped with zero copy (``data``, ``indices`` and
``indptr`` go to C++ as they are, int32 or int64 indices).  Unsorted column indices and duplicate
entries are accepted and mean what SciPy means (duplicates add up); empty rows and columns are
fine.  Other sparse formats are converted to CSR once.

Design notes.  CG runs in the primal (n unknowns) only: its iteration count is bounded by the rank
of X^T L X <= min(m, n) in exact arithmetic, so n >> m data still stop within about m iterations
(RLScore's rank_train: m=100, n=195,098, 60 iterations to tol=1e-6), and each iteration costs
O(nnz + m + n).  For one output in the scoring setting the Laplacian is folded into the two CSR
product loops (group sums accumulated during X p, (L X p)_i formed inside X^T u).  X^T u uses per-thread partial sums (measured faster than a transposed copy of X,
which is kept as the option ``transpose_copy=True``); a one-pass fused X^T D X p operator was
measured too and gave no gain (the products are latency-bound, not bandwidth-bound).

The memory guard :func:`check_dense_memory` refuses dense allocations larger than a limit
(default: half of the available memory, override with the environment variable
``FASTRANK_MAX_DENSE_BYTES``, e.g. ``8G``) with a :class:`MemoryError` that points to
``solver="cg"`` or ``basis_vectors``.
"""

from __future__ import annotations

import numbers
import os
import warnings
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp

from . import _core
from ._validation import check_alpha, check_alphas, check_n_jobs, group_index as _group_index
from .exceptions import ConvergenceWarning

__all__ = [
    "CsrParts",
    "CGResult",
    "as_csr",
    "available_memory",
    "dense_memory_limit",
    "check_dense_memory",
    "fit_cg",
    "select_basis",
    "kernel_block",
    "fit_basis",
    "predict_basis",
    "basis_primal_weights",
    "default_max_iter",
]


# ----------------------------------------------------------------------------------------------
# Memory guard (issue 4, item 5)
# ----------------------------------------------------------------------------------------------

_ENV_LIMIT = "FASTRANK_MAX_DENSE_BYTES"
_SUFFIX = {"": 1, "B": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def available_memory():
    """Bytes of memory available now (``MemAvailable`` of /proc/meminfo, else sysconf), or None."""
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return None


def _parse_bytes(text):
    s = str(text).strip().upper()
    for tail in ("IB", "B"):
        if s.endswith(tail) and len(s) > len(tail):
            s = s[: -len(tail)]
            break
    unit = s[-1] if s and s[-1] in _SUFFIX else ""
    number = s[:-1] if unit else s
    try:
        value = float(number) * _SUFFIX[unit]
    except ValueError:
        raise ValueError(f"{_ENV_LIMIT}={text!r} is not a byte count (examples: 2000000000, 512M, 8G)") from None
    if not np.isfinite(value) or value <= 0:
        raise ValueError(f"{_ENV_LIMIT}={text!r} must be positive")
    return value


def dense_memory_limit():
    """The largest dense allocation (bytes) the dense solvers may make, or None for no limit.

    ``FASTRANK_MAX_DENSE_BYTES`` (bytes, or with a K/M/G/T suffix; ``0``/``none`` disables the
    guard) if set, else half of :func:`available_memory`.
    """
    env = os.environ.get(_ENV_LIMIT)
    if env is not None and env.strip() != "":
        if env.strip().lower() in ("0", "none", "off", "inf"):
            return None
        return _parse_bytes(env)
    avail = available_memory()
    return None if avail is None else 0.5 * avail


def _fmt_bytes(b):
    for unit, size in (("TB", 2**40), ("GB", 2**30), ("MB", 2**20), ("KB", 2**10)):
        if b >= size:
            return f"{b / size:.1f} {unit}"
    return f"{int(b)} B"


def check_dense_memory(n_rows, n_matrices=1, what="kernel matrix", *, n_cols=None, limit=None):
    """Raise :class:`MemoryError` before allocating ``n_matrices`` dense float64 ``n_rows x n_cols``
    matrices (``n_cols`` defaults to ``n_rows``: an m x m kernel or n x n covariance) when they would
    exceed ``limit`` bytes (default :func:`dense_memory_limit`).  Returns the byte count."""
    n_cols = n_rows if n_cols is None else n_cols
    need = 8.0 * float(n_rows) * float(n_cols) * float(n_matrices)
    limit = dense_memory_limit() if limit is None else float(limit)
    if limit is not None and need > limit:
        shape = f"{int(n_rows)} x {int(n_cols)}"
        count = f"{int(n_matrices)} x " if n_matrices != 1 else ""
        raise MemoryError(
            f"fastrank: this solver would allocate {count}a dense {shape} {what} ({_fmt_bytes(need)}), more than "
            f"the limit of {_fmt_bytes(limit)} (half of the available memory unless {_ENV_LIMIT} is set). "
            "For large data use RankRLS(solver='cg') (linear kernel, sparse or dense X: O(nnz + m) memory) or "
            "RankRLS(basis_vectors=<int or indices>) (subset-of-regressors approximation, O(m |R|) memory)."
        )
    return need


# ----------------------------------------------------------------------------------------------
# Sparse input
# ----------------------------------------------------------------------------------------------


class CsrParts(NamedTuple):
    """A validated CSR matrix as the arrays C++ maps without copying."""

    data: np.ndarray
    indices: np.ndarray
    indptr: np.ndarray
    shape: tuple

    @property
    def nnz(self):
        return int(self.indptr[-1])


def as_csr(X, name="X", *, n_features=None):
    """Validate a ``scipy.sparse`` matrix and return its CSR arrays (:class:`CsrParts`).

    No copy for a float64 CSR matrix with int32 or int64 indices (whatever their order, with or
    without duplicates).  float32/int data are converted (a copy of ``data`` only); other formats
    are converted to CSR once.  Raises ValueError on non-finite values, malformed index arrays
    (out-of-range column indices, decreasing ``indptr``) or a feature-count mismatch.
    """
    if not sp.issparse(X):
        raise TypeError(f"{name} must be a scipy.sparse matrix, got {type(X).__name__}")
    if X.ndim != 2:
        raise ValueError(f"{name} must be 2-D, got {X.ndim}-D")
    if X.format != "csr":
        X = X.tocsr()
    m, n = X.shape
    if m < 1 or n < 1:
        raise ValueError(f"{name} has shape {X.shape}; at least one row and one column are needed")
    if n_features is not None and n != n_features:
        raise ValueError(f"{name} has {n} features, but the model was fitted with {n_features} features")
    data = X.data
    if np.iscomplexobj(data) or not (np.issubdtype(data.dtype, np.number) or data.dtype == bool):
        raise ValueError(f"{name} must be real-valued, got dtype {data.dtype}")
    data = np.ascontiguousarray(data, dtype=np.float64)
    indices, indptr = X.indices, X.indptr
    if indices.dtype not in (np.int32, np.int64) or indptr.dtype != indices.dtype:
        indices = indices.astype(np.int64)
        indptr = indptr.astype(np.int64)
    indices = np.ascontiguousarray(indices)
    indptr = np.ascontiguousarray(indptr)
    if indptr.ndim != 1 or indptr.size != m + 1:
        raise ValueError(f"{name}.indptr must have {m + 1} entries, got {indptr.size}")
    if indptr[0] != 0:
        raise ValueError(f"{name}.indptr must start at 0")
    nnz = int(indptr[-1])
    if nnz > indices.size or nnz > data.size:
        raise ValueError(f"{name}.indptr[-1] = {nnz} exceeds the stored entries ({min(indices.size, data.size)})")
    if m > 0 and np.any(np.diff(indptr) < 0):
        raise ValueError(f"{name}.indptr must be non-decreasing")
    if nnz:
        used = indices[:nnz]
        if used.min() < 0 or used.max() >= n:
            raise ValueError(f"{name} has column indices outside [0, {n})")
        if not np.isfinite(data[:nnz]).all():
            raise ValueError(f"Input {name} contains NaN or infinity.")
    return CsrParts(data, indices, indptr, (int(m), int(n)))


def _canonical_csr(X):
    """A CSR copy with sorted indices and no duplicates (only copies when needed)."""
    X = X.tocsr() if X.format != "csr" else X
    if not X.has_canonical_format:
        X = X.copy()
        X.sum_duplicates()
    if X.dtype != np.float64:
        X = X.astype(np.float64)
    return X


# ----------------------------------------------------------------------------------------------
# Conjugate gradient (Sect. 4.3)
# ----------------------------------------------------------------------------------------------


class CGResult(NamedTuple):
    """coef (n, v); n_iter (v,); converged (v,) bool; residual_history (k + 1, v): relative
    residuals ||X^T b - A w|| / ||X^T b|| per iteration (NaN after a column stopped)."""

    coef: np.ndarray
    n_iter: np.ndarray
    converged: np.ndarray
    residual_history: np.ndarray


def default_max_iter(n_features):
    """``max_iter=None`` means ``min(10 * n, 5000)`` iterations (CG is exact after n in exact arithmetic)."""
    return int(max(1, min(10 * int(n_features), 5000)))


def _check_tol(tol):
    if isinstance(tol, (bool, np.bool_)) or not isinstance(tol, numbers.Real) or not np.isfinite(tol) or tol < 0:
        raise ValueError(f"tol must be a finite number >= 0, got {tol!r}")
    return float(tol)


def _check_max_iter(max_iter, n_features):
    if max_iter is None:
        return default_max_iter(n_features)
    if isinstance(max_iter, (bool, np.bool_)) or not isinstance(max_iter, numbers.Integral) or max_iter < 1:
        raise ValueError(f"max_iter must be None or a positive integer, got {max_iter!r}")
    return int(max_iter)


def _check_preconditioner(preconditioner):
    if preconditioner is None or preconditioner is False:
        return False
    if isinstance(preconditioner, str) and preconditioner.lower() in ("jacobi", "diagonal"):
        return True
    raise ValueError(f"preconditioner must be None or 'jacobi', got {preconditioner!r}")


def _graph_args(graph, m):
    """(head, tail, weight, target (l, v)) from a tuple or an object with those attributes."""
    if isinstance(graph, (tuple, list)):
        head, tail, weight, target = graph
    else:
        head, tail, weight, target = graph.head, graph.tail, graph.weight, graph.target
    head = np.ascontiguousarray(head, dtype=np.int64).reshape(-1)
    tail = np.ascontiguousarray(tail, dtype=np.int64).reshape(-1)
    weight = np.ascontiguousarray(weight, dtype=np.float64).reshape(-1)
    target = np.asarray(target, dtype=np.float64)
    if target.ndim == 1:
        target = target.reshape(-1, 1)
    l = head.size
    if tail.size != l or weight.size != l or target.shape[0] != l:
        raise ValueError("preference graph arrays must have one entry per edge")
    if l == 0:
        raise ValueError("the preference graph has no edges")
    if head.min() < 0 or tail.min() < 0 or head.max() >= m or tail.max() >= m:
        raise ValueError(f"preference pairs refer to rows outside [0, {m})")
    return head, tail, weight, np.ascontiguousarray(target)


def _laplacian_kwargs(m, group_index, normalized, graph):
    if graph is not None:
        head, tail, weight, target = _graph_args(graph, m)
        return dict(head=head, tail=tail, weight=weight, targets=target), target.shape[1]
    gi = group_index if group_index is not None else _group_index(None, m)
    if gi.codes.size != m:
        raise ValueError(f"group_index covers {gi.codes.size} rows but X has {m}")
    return dict(codes=np.ascontiguousarray(gi.codes, dtype=np.int64), n_groups=int(gi.n_groups),
                normalized=bool(normalized)), None


def fit_cg(X, Y=None, *, group_index=None, normalized=False, graph=None, alpha=1.0, tol=1e-6, max_iter=None,
           x0=None, preconditioner=None, n_jobs=None, callback=None, transpose_copy=False, warn=True):
    """Linear RankRLS by conjugate gradient in the primal (Sect. 4.3):
    ``(X^T L X + alpha I) w = X^T b`` with ``b = L y`` (scoring setting, cost (21)) or ``b = M N``
    (preference graph, eqs. 12-13).  L is applied implicitly, never formed.

    Parameters
    ----------
    X : scipy.sparse matrix (CSR mapped with zero copy) or dense (m, n) array.
    Y : (m,) or (m, v) targets for the scoring setting (ignored with ``graph``).
    group_index : :class:`fastrank._validation.GroupIndex` (rows in ORIGINAL order; only its
        per-row ``codes`` are used) or None for object ranking (one group).
    normalized : pair weight 1/n_q inside group q ("normalized" group weighting).
    graph : ``(head, tail, weight, target)`` (or an object with those attributes): edge e says
        row head[e] is preferred over tail[e], with weight w_e and target z_e ((l,) or (l, v)).
    alpha, tol : regularization; stop when ``||X^T b - A w|| <= tol * ||X^T b||`` per output.
    max_iter : None -> :func:`default_max_iter`.
    x0 : (n,) or (n, v) warm start.
    preconditioner : None or "jacobi" (diag(X^T L X) + alpha, computed in O(nnz)).
    n_jobs : threads for the sparse products.
    callback : ``callback(iteration, relative_residuals)``; return True to stop early.
    transpose_copy : build X^T once (O(nnz) extra memory) instead of per-thread partial sums.
    warn : emit :class:`~fastrank.exceptions.ConvergenceWarning` when an output did not converge.

    Returns :class:`CGResult` (coef is (n, v) even for one output).
    """
    alpha = check_alpha(alpha)
    tol = _check_tol(tol)
    precond = _check_preconditioner(preconditioner)
    n_threads = check_n_jobs(n_jobs)
    if callback is not None and not callable(callback):
        raise TypeError("callback must be callable or None")
    sparse = sp.issparse(X)
    if sparse:
        parts = as_csr(X)
        m, n = parts.shape
    else:
        from ._validation import as_float_matrix

        X = as_float_matrix(X)
        m, n = X.shape
    max_iter = _check_max_iter(max_iter, n)
    lap, v_graph = _laplacian_kwargs(m, group_index, normalized, graph)
    if graph is None:
        if Y is None:
            raise ValueError("targets Y are required unless a preference graph is given")
        Y = np.asarray(Y, dtype=np.float64)
        if Y.ndim == 1:
            Y = Y.reshape(-1, 1)
        if Y.ndim != 2 or Y.shape[0] != m:
            raise ValueError(f"Y must have {m} rows, got shape {Y.shape}")
        if not np.isfinite(Y).all():
            raise ValueError("Input y contains NaN or infinity.")
        Y = np.ascontiguousarray(Y)
        v = Y.shape[1]
    else:
        v = v_graph
        Y = np.zeros((m, v))
    if x0 is not None:
        x0 = np.asarray(x0, dtype=np.float64)
        if x0.ndim == 1:
            x0 = x0.reshape(-1, 1)
        if x0.shape != (n, v):
            raise ValueError(f"warm start has shape {x0.shape}, expected ({n}, {v})")
        if not np.isfinite(x0).all():
            raise ValueError("warm start contains NaN or infinity")
        x0 = np.ascontiguousarray(x0)
    common = dict(x0=x0, alpha=alpha, tol=tol, max_iter=max_iter, jacobi=precond, n_threads=n_threads,
                  callback=callback, **lap)
    if sparse:
        coef, n_iter, converged, history, _ = _core.cg_rankrls_csr(
            parts.data, parts.indices, parts.indptr, m, n, Y, transpose_copy=bool(transpose_copy), **common)
    else:
        coef, n_iter, converged, history, _ = _core.cg_rankrls_dense(X, Y, **common)
    converged = np.asarray(converged, dtype=bool).reshape(-1)
    n_iter = np.asarray(n_iter, dtype=np.int64).reshape(-1)
    if warn and not converged.all():
        bad = np.flatnonzero(~converged)
        last = history[-1, bad] if history.shape[0] else np.array([np.nan])
        warnings.warn(
            f"RankRLS conjugate gradient did not converge for {bad.size} of {v} output(s) within "
            f"{int(n_iter.max())} iterations (relative residual {np.nanmax(last):.3g} > tol={tol:g}); "
            "increase max_iter, loosen tol, raise alpha or try preconditioner='jacobi'.",
            ConvergenceWarning,
            stacklevel=2,
        )
    return CGResult(np.asarray(coef), n_iter, converged, np.asarray(history))


# ----------------------------------------------------------------------------------------------
# Subset-of-regressors RankRLS (Sect. 3.5, eqs. 40-42)
# ----------------------------------------------------------------------------------------------


def select_basis(n_rows, basis_vectors, random_state=None):
    """Basis indices (sorted, unique int64) from an int (that many rows chosen uniformly at random
    without replacement with ``random_state``; random selection is as good as greedier schemes
    for subset of regressors, Rifkin et al. 2003, cited in Sect. 3.5) or an explicit index list."""
    if isinstance(basis_vectors, (bool, np.bool_)):
        raise TypeError("basis_vectors must be an int or a sequence of row indices")
    if isinstance(basis_vectors, numbers.Integral):
        r = int(basis_vectors)
        if r < 1 or r > n_rows:
            raise ValueError(f"basis_vectors={r} must be between 1 and the number of training rows ({n_rows})")
        if r == n_rows:
            return np.arange(n_rows, dtype=np.int64)
        from sklearn.utils import check_random_state

        rng = check_random_state(random_state)
        return np.sort(rng.choice(n_rows, size=r, replace=False)).astype(np.int64)
    idx = np.asarray(basis_vectors)
    if idx.dtype == bool:
        if idx.shape != (n_rows,):
            raise ValueError("a boolean basis_vectors mask must have one entry per training row")
        idx = np.flatnonzero(idx)
    if idx.ndim != 1 or idx.size == 0 or not np.issubdtype(idx.dtype, np.integer):
        raise ValueError("basis_vectors must be a positive int or a non-empty 1-D array of row indices")
    idx = idx.astype(np.int64)
    if idx.min() < -n_rows or idx.max() >= n_rows:
        raise ValueError(f"basis_vectors indices must lie in [0, {n_rows})")
    idx = np.where(idx < 0, idx + n_rows, idx)
    if np.unique(idx).size != idx.size:
        raise ValueError("basis_vectors contains duplicate indices")
    return idx


def _row_sq_norms(Z):
    if sp.issparse(Z):
        return np.asarray(Z.multiply(Z).sum(axis=1)).reshape(-1)
    return np.einsum("ij,ij->i", Z, Z)


def kernel_block(spec, Z, XR, n_threads=1):
    """K(Z, XR) as a Fortran-ordered (p, r) array; Z and XR dense arrays or scipy.sparse matrices
    (never densified: inner products are sparse x sparse, Gaussian distances use row norms)."""
    if not sp.issparse(Z) and not sp.issparse(XR):
        return spec.cross(np.ascontiguousarray(Z, dtype=np.float64), np.ascontiguousarray(XR, dtype=np.float64),
                          n_threads)
    Zc = _canonical_csr(Z) if sp.issparse(Z) else np.ascontiguousarray(Z, dtype=np.float64)
    Xc = _canonical_csr(XR) if sp.issparse(XR) else np.ascontiguousarray(XR, dtype=np.float64)
    G = Zc @ Xc.T
    G = G.toarray(order="F") if sp.issparse(G) else np.asfortranarray(G)
    G = np.asfortranarray(G, dtype=np.float64)
    if spec.kind == "rbf":
        zn, xn = _row_sq_norms(Zc), _row_sq_norms(Xc)
        G *= -2.0
        G += zn[:, None]
        G += xn[None, :]
        np.maximum(G, 0.0, out=G)
        G *= -spec.gamma
        np.exp(G, out=G)
    elif spec.kind == "poly":
        G *= spec.gamma
        G += spec.coef0
        if spec.degree == int(spec.degree):
            G[...] = G ** int(spec.degree)
        else:
            np.power(G, spec.degree, out=G)
    return G


def _take_rows(X, idx):
    return X[idx] if sp.issparse(X) else np.ascontiguousarray(np.asarray(X)[idx])


def fit_basis(X, Y=None, *, group_index=None, normalized=False, graph=None, alphas=1.0, kernel_spec,
              basis_indices, n_jobs=None):
    """Sparse RankRLS coefficients over the basis rows for each alpha (eqs. 41-42).

    X : (m, d) dense or scipy.sparse training inputs (or the (m, m) kernel matrix when
        ``kernel_spec.precomputed``).  Y : (m,) or (m, v) (scoring setting) or None with ``graph``.
    Returns an array (n_alphas, r, v): A(alpha) with f(x) = k(x, X[basis]) A.
    """
    alphas = check_alphas(alphas)
    n_threads = check_n_jobs(n_jobs)
    basis = np.asarray(basis_indices, dtype=np.int64)
    m = X.shape[0]
    r = basis.size
    check_dense_memory(m, 2 if graph is None else 1, "kernel block K(X, X_R)", n_cols=r)
    if kernel_spec.precomputed:
        K = X.toarray() if sp.issparse(X) else np.asarray(X, dtype=np.float64)
        if K.ndim != 2 or K.shape[0] != K.shape[1]:
            raise ValueError(f"a precomputed kernel must be square (m, m), got shape {K.shape}")
        KRt = np.asfortranarray(K[:, basis], dtype=np.float64)
    else:
        KRt = kernel_block(kernel_spec, X, _take_rows(X, basis), n_threads)
    KRR = KRt[basis]
    KRR = np.asfortranarray(0.5 * (KRR + KRR.T))
    if graph is not None:
        head, tail, weight, target = _graph_args(graph, m)
        coefs, _chol, _sigma = _core.sparse_rls_path_graph(KRt, head, tail, weight, target, KRR, alphas, n_threads)
        return coefs
    if Y is None:
        raise ValueError("targets Y are required unless a preference graph is given")
    Y = np.asarray(Y, dtype=np.float64)
    if Y.ndim == 1:
        Y = Y.reshape(-1, 1)
    if Y.shape[0] != m:
        raise ValueError(f"Y must have {m} rows, got {Y.shape[0]}")
    gi = group_index if group_index is not None else _group_index(None, m)
    codes = np.ascontiguousarray(gi.codes, dtype=np.int64)
    coefs, _chol, _sigma = _core.sparse_rls_path_groups(KRt, np.asfortranarray(Y), codes, int(gi.n_groups),
                                                        bool(normalized), KRR, alphas, n_threads)
    return coefs


def predict_basis(Z, X_basis, coef, kernel_spec, n_jobs=None, *, basis_indices=None, block_bytes=2**25):
    """Predictions ``K(Z, X_basis) @ coef``: O(|R|) kernel evaluations per input, in row blocks so
    at most ``block_bytes`` of kernel values exist at once; sparse Z stays sparse.  With a
    precomputed kernel, Z is (p, m) against all training rows and ``basis_indices`` selects columns."""
    n_threads = check_n_jobs(n_jobs)
    coef = np.asarray(coef, dtype=np.float64)
    one_d = coef.ndim == 1
    C = coef.reshape(coef.shape[0], -1)
    if kernel_spec.precomputed:
        Zk = Z[:, basis_indices]
        out = np.asarray(Zk @ C)
        return out.reshape(-1) if one_d else out
    if not sp.issparse(Z) and not sp.issparse(X_basis):
        out = kernel_spec.predict(np.ascontiguousarray(Z, dtype=np.float64),
                                  np.ascontiguousarray(X_basis, dtype=np.float64), C, n_threads)
        return out.reshape(-1) if one_d else out
    p, r = Z.shape[0], C.shape[0]
    block = max(1, int(block_bytes // (8 * max(1, r))))
    out = np.empty((p, C.shape[1]))
    Xb = _canonical_csr(X_basis) if sp.issparse(X_basis) else X_basis
    Zc = _canonical_csr(Z) if sp.issparse(Z) else Z
    for start in range(0, p, block):
        K = kernel_block(kernel_spec, Zc[start:start + block], Xb, n_threads)
        out[start:start + block] = K @ C
    return out.reshape(-1) if one_d else out


def basis_primal_weights(X_basis, coef):
    """Linear kernel only: w = X_R^T A ((n,) or (n, v)), so predictions are ``Z @ w`` in O(nnz)."""
    W = X_basis.T @ np.asarray(coef)
    return np.asarray(W)


# ----------------------------------------------------------------------------------------------
# Estimator glue: what fastrank.RankRLS calls for solver="cg", basis_vectors=... and sparse X
# ----------------------------------------------------------------------------------------------


def issparse(X):
    """``scipy.sparse.issparse`` (for the estimator's prediction dispatch)."""
    return sp.issparse(X)


def use_large_scale(est, X):
    """True when :class:`fastrank.RankRLS` must take this module's path: sparse X,
    ``solver="cg"`` or ``basis_vectors`` set."""
    return sp.issparse(X) or getattr(est, "solver", None) == "cg" or getattr(est, "basis_vectors", None) is not None


def _choose_large_mode(est, X, spec):
    """"sparse" (basis vectors), "cg", or "dense" (sparse X densified for the dense solvers)."""
    solver = est.solver
    if est.basis_vectors is not None:
        if solver in ("cg", "primal"):
            raise ValueError(f"basis_vectors (sparse approximation) cannot be combined with solver={solver!r}; "
                             "use solver='auto' or 'dual'")
        return "sparse"
    if solver in ("cg", "auto") and spec.linear:
        return "cg"
    if solver == "cg":
        raise ValueError("solver='cg' solves the linear RankRLS (kernel='linear'); for other kernels on large "
                         "data use basis_vectors=<int or indices> (subset-of-regressors approximation)")
    return "dense"


def _densify(X):
    """Sparse X for an explicitly dense solver (solver="dual"/"primal", or a nonlinear kernel
    without basis vectors), behind the memory guard."""
    check_dense_memory(X.shape[0], 1, "dense copy of the sparse input X", n_cols=X.shape[1])
    return X.toarray()


def _check_X_any(X, name="X", min_rows=2):
    if sp.issparse(X):
        X = X if X.format == "csr" else X.tocsr()
        as_csr(X, name)  # validation only; fit_cg maps the arrays itself
        if X.shape[0] < min_rows:
            raise ValueError(f"Found array with {X.shape[0]} sample(s) while a minimum of {min_rows} is required.")
        return X
    from ._validation import as_float_matrix

    return as_float_matrix(X, name, min_rows=min_rows)


def _warm_start(est, n, v):
    if not getattr(est, "warm_start", False) or getattr(est, "fit_mode_", None) != "cg":
        return None
    W = getattr(est, "coef_", None)
    if W is None:
        return None
    W = np.asarray(W).reshape(W.shape[0], -1)
    return W if W.shape == (n, v) else None


def _set_cg_fitted(est, X, res, one_d):
    sq = (lambda a: a[:, 0]) if one_d else (lambda a: a)
    est.fit_mode_ = "cg"
    est.n_features_in_ = X.shape[1]
    est._single_output = one_d
    est.coef_ = sq(np.ascontiguousarray(res.coef))
    est.dual_coef_ = None
    est.X_fit_ = None
    est.basis_indices_ = None
    est.n_iter_ = int(res.n_iter[0]) if one_d else res.n_iter
    est.converged_ = bool(res.converged[0]) if one_d else res.converged
    est.residual_history_ = sq(res.residual_history)
    return est


def _set_sparse_fitted(est, X, spec, basis, A, one_d):
    sq = (lambda a: a[:, 0]) if one_d else (lambda a: a)
    est.fit_mode_ = "sparse"
    est.n_features_in_ = X.shape[1]
    est._single_output = one_d
    est.basis_indices_ = basis
    est.dual_coef_ = sq(np.ascontiguousarray(A))
    est.X_fit_ = None if spec.precomputed else _take_rows(X, basis)  # the basis rows only
    est.coef_ = sq(basis_primal_weights(est.X_fit_, A)) if spec.linear else None
    for attr in ("n_iter_", "converged_", "residual_history_"):
        if hasattr(est, attr):
            delattr(est, attr)
    return est


def _check_fit_input(est, X):
    """Training input of the large-scale paths: a dense (m, m) matrix for a precomputed kernel,
    otherwise dense or sparse features."""
    if est.kernel == "precomputed":
        if sp.issparse(X):
            raise ValueError("a precomputed kernel must be a dense (m, m) array")
        return est._check_fit_X(X)
    return _check_X_any(X)


def fit_scores(est, X, y, groups=None):
    """RankRLS.fit for the large-scale paths (scoring setting)."""
    from ._rankrls import _check_informative_targets
    from ._validation import as_targets

    alpha = check_alpha(est.alpha)
    normalized = est._normalized()
    X = _check_fit_input(est, X)
    Y, one_d = as_targets(y, X.shape[0])
    gi = _group_index(groups, X.shape[0])
    _check_informative_targets(Y, gi)
    spec = est._kernel_spec(X.shape[1])
    mode = _choose_large_mode(est, X, spec)
    if mode == "dense":
        return type(est).fit(est, _densify(X), y, groups)
    if mode == "cg":
        res = fit_cg(X, Y, group_index=gi, normalized=normalized, alpha=alpha, tol=est.tol, max_iter=est.max_iter,
                     x0=_warm_start(est, X.shape[1], Y.shape[1]), preconditioner=est.preconditioner,
                     n_jobs=est.n_jobs)
        return _set_cg_fitted(est, X, res, one_d)
    basis = select_basis(X.shape[0], est.basis_vectors, est.random_state)
    A = fit_basis(X, Y, group_index=gi, normalized=normalized, alphas=[alpha], kernel_spec=spec,
                  basis_indices=basis, n_jobs=est.n_jobs)[0]
    return _set_sparse_fitted(est, X, spec, basis, A, one_d)


def fit_preferences(est, X, pairs, magnitudes=None, cost=None):
    """RankRLS.fit_preferences for the large-scale paths (preference graph, costs (20)-(22))."""
    from ._rankrls import _preference_graph

    alpha = check_alpha(est.alpha)
    X = _check_fit_input(est, X)
    head, tail, weight, target = _preference_graph(pairs, magnitudes, cost, X.shape[0])
    graph = (head, tail, weight, np.ascontiguousarray(target))
    spec = est._kernel_spec(X.shape[1])
    mode = _choose_large_mode(est, X, spec)
    if mode == "dense":
        return type(est).fit_preferences(est, _densify(X), pairs, magnitudes, cost)
    if mode == "cg":
        res = fit_cg(X, graph=graph, alpha=alpha, tol=est.tol, max_iter=est.max_iter,
                     x0=_warm_start(est, X.shape[1], 1), preconditioner=est.preconditioner, n_jobs=est.n_jobs)
        return _set_cg_fitted(est, X, res, True)
    basis = select_basis(X.shape[0], est.basis_vectors, est.random_state)
    A = fit_basis(X, graph=graph, alphas=[alpha], kernel_spec=spec, basis_indices=basis, n_jobs=est.n_jobs)[0]
    return _set_sparse_fitted(est, X, spec, basis, A, True)


def decision(est, X):
    """Predictions of a fitted RankRLS for sparse X (any fit mode) or a sparse-approximation
    model (any X); sparse X is never densified."""
    n_threads = check_n_jobs(est.n_jobs)
    if est.kernel == "precomputed":
        from ._validation import as_float_matrix

        K = X.toarray() if sp.issparse(X) else as_float_matrix(X, "X (precomputed kernel)")
        if est.fit_mode_ == "sparse":
            m = est.basis_indices_.max() + 1
            if K.shape[1] < m:
                raise ValueError(f"A precomputed test kernel must have one column per training row, got {K.shape}")
            return K[:, est.basis_indices_] @ est.dual_coef_
        return K @ est.dual_coef_
    X = _check_X_any(X, min_rows=1)
    if X.shape[1] != est.n_features_in_:
        raise ValueError(f"X has {X.shape[1]} features, but {type(est).__name__} is expecting "
                         f"{est.n_features_in_} features as input.")
    if est.coef_ is not None:
        return np.asarray(X @ est.coef_)
    spec = est._kernel_spec(est.n_features_in_)
    return predict_basis(X, est.X_fit_, est.dual_coef_, spec, n_threads)


class LargeScalePath:
    """Regularization path of the large-scale paths (returned by :func:`fastrank.rankrls_path`
    when the estimator uses ``basis_vectors``, ``solver="cg"`` or X is sparse).

    * ``fit_mode == "sparse"``: one Cholesky + eigendecomposition (eq. 42), O(|R|^2 v) per alpha;
      ``dual_coef_`` (n_alphas, |R|, v) over ``basis_indices_``.
    * ``fit_mode == "cg"``: one CG per alpha, in decreasing alpha order, each warm-started from
      the previous solution; ``coef_`` (n_alphas, n, v), ``n_iter_`` (n_alphas, v).
    """

    def __init__(self, estimator, alphas, fit_mode, one_d):
        self.estimator = estimator
        self.alphas = alphas
        self.fit_mode = fit_mode
        self._one_d = one_d
        self.coef_ = None
        self.dual_coef_ = None
        self.basis_indices_ = None
        self.X_fit_ = None
        self.n_iter_ = None
        self.converged_ = None

    def __len__(self):
        return self.alphas.size

    def fitted_estimator(self, k):
        """A fitted :class:`fastrank.RankRLS` for ``alphas[k]`` (no refit)."""
        est = type(self.estimator)(**{**self.estimator.get_params(deep=False), "alpha": float(self.alphas[k])})
        sq = (lambda a: a[:, 0]) if self._one_d else (lambda a: a)
        est.fit_mode_ = self.fit_mode
        est.n_features_in_ = self._n_features
        est._single_output = self._one_d
        est.X_fit_ = self.X_fit_
        est.basis_indices_ = self.basis_indices_
        est.coef_ = None if self.coef_ is None else sq(self.coef_[k])
        est.dual_coef_ = None if self.dual_coef_ is None else sq(self.dual_coef_[k])
        if self.fit_mode == "cg":
            est.n_iter_ = int(self.n_iter_[k, 0]) if self._one_d else self.n_iter_[k]
            est.converged_ = bool(self.converged_[k, 0]) if self._one_d else self.converged_[k]
        return est

    def predict(self, X):
        """Scores for every alpha: (n_alphas, p) or (n_alphas, p, v)."""
        return np.stack([self.fitted_estimator(k).predict(X) for k in range(len(self))])


def path(est, X, y, alphas, groups=None):
    """:func:`fastrank.rankrls_path` for the large-scale paths (see :class:`LargeScalePath`)."""
    from ._rankrls import _check_informative_targets
    from ._validation import as_targets

    alphas = check_alphas(alphas)
    normalized = est._normalized()
    X = _check_fit_input(est, X)
    Y, one_d = as_targets(y, X.shape[0])
    gi = _group_index(groups, X.shape[0])
    _check_informative_targets(Y, gi)
    spec = est._kernel_spec(X.shape[1])
    mode = _choose_large_mode(est, X, spec)
    if mode == "dense":
        from ._rankrls import rankrls_path

        return rankrls_path(_densify(X), y, alphas, groups=groups, estimator=est)
    out = LargeScalePath(est, alphas, mode, one_d)
    out._n_features = X.shape[1]
    if mode == "sparse":
        basis = select_basis(X.shape[0], est.basis_vectors, est.random_state)
        A = fit_basis(X, Y, group_index=gi, normalized=normalized, alphas=alphas, kernel_spec=spec,
                      basis_indices=basis, n_jobs=est.n_jobs)
        out.basis_indices_ = basis
        out.dual_coef_ = A
        out.X_fit_ = None if spec.precomputed else _take_rows(X, basis)
        if spec.linear:
            out.coef_ = np.stack([basis_primal_weights(out.X_fit_, a) for a in A])
        return out
    n, v = X.shape[1], Y.shape[1]
    coefs = np.empty((alphas.size, n, v))
    n_iter = np.empty((alphas.size, v), dtype=np.int64)
    conv = np.empty((alphas.size, v), dtype=bool)
    x0 = None
    for k in np.argsort(-alphas, kind="stable"):  # large alpha converges fast; warm-start smaller ones
        res = fit_cg(X, Y, group_index=gi, normalized=normalized, alpha=float(alphas[k]), tol=est.tol,
                     max_iter=est.max_iter, x0=x0, preconditioner=est.preconditioner, n_jobs=est.n_jobs)
        coefs[k], n_iter[k], conv[k] = res.coef, res.n_iter, res.converged
        x0 = res.coef
    out.coef_, out.n_iter_, out.converged_ = coefs, n_iter, conv
    return out
