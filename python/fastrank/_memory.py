"""Memory guard for dense allocations: every dense O(m^2) or O(n^2) allocation of fastrank is announced here first, so
that a problem too large for the machine raises a clear :class:`MemoryError` (pointing to the CG and
subset-of-regressors solvers) instead of swapping or dying with ``std::bad_alloc``."""

from __future__ import annotations

import contextlib
import os
import re

import numpy as np
import scipy.sparse as sp

__all__ = ["available_memory", "dense_memory_limit", "check_dense_memory", "densified", "ENV_LIMIT"]

ENV_LIMIT = "FASTRANK_MAX_DENSE_BYTES"


def available_memory():
    """Bytes of memory available now (``MemAvailable`` of /proc/meminfo, else sysconf), or None."""
    with contextlib.suppress(OSError), open("/proc/meminfo") as fh:
        for line in fh:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return None


def _parse_bytes(text):
    """Bytes of ``2000000000``, ``512M``, ``8G``, ``8GB`` or ``8GiB`` (K/M/G/T: powers of 1024); None for 0."""
    number, unit = re.fullmatch(r"(.*?)([KMGT]?)I?B?", str(text).strip().upper()).groups()
    try:
        value = float(number) * 2.0 ** (10 * " KMGT".index(unit))
    except ValueError:
        raise ValueError(f"{ENV_LIMIT}={text!r} is not a byte count (examples: 2000000000, 512M, 8G)") from None
    if value == 0:  # 0, 00, 0.0, 0B: no limit, as "0"
        return None
    if not (np.isfinite(value) and value >= 1):
        raise ValueError(f"{ENV_LIMIT}={text!r} must be a finite byte count of at least 1 (or 0 / none: no limit)")
    return value


def dense_memory_limit():
    """The largest dense allocation (bytes) the dense solvers may make: ``FASTRANK_MAX_DENSE_BYTES`` (bytes, or with a
    K/M/G/T suffix; ``0``/``none`` disables the guard, None) if set, else half of :func:`available_memory`."""
    env = os.environ.get(ENV_LIMIT)
    if env and env.strip():
        return None if env.strip().lower() in ("0", "none", "off", "inf", "infinity") else _parse_bytes(env)
    avail = available_memory()
    return None if avail is None else 0.5 * avail


def _fmt_bytes(b):
    for unit, size in (("TB", 2**40), ("GB", 2**30), ("MB", 2**20), ("KB", 2**10)):
        if b >= size:
            return f"{b / size:.1f} {unit}"
    return f"{int(b)} B"


_RANKRLS_ADVICE = ("For large data use RankRLS(solver='cg') (linear kernel, sparse or dense X: O(nnz + m) memory) or "
                   "RankRLS(basis_vectors=<int or indices>) (subset-of-regressors approximation, O(m |R|) memory).")


def check_dense_memory(n_rows, n_matrices=1, what="kernel matrix", *, n_cols=None, advice=_RANKRLS_ADVICE):
    """Raise :class:`MemoryError` before allocating ``n_matrices`` dense float64 ``n_rows x n_cols`` matrices
    (``n_cols`` defaults to ``n_rows``: an m x m kernel or n x n covariance) when they would exceed
    :func:`dense_memory_limit`; ``advice``: what the caller can do instead.  Returns the byte count."""
    n_cols = n_rows if n_cols is None else n_cols
    need = 8.0 * float(n_rows) * float(n_cols) * float(n_matrices)
    limit = dense_memory_limit()
    if limit is not None and need > limit:
        count = f"{round(float(n_matrices), 2):g} x " if n_matrices != 1 else ""  # counts may be fractional (1.2)
        raise MemoryError(f"fastrank: this step would allocate {count}a dense {int(n_rows)} x {int(n_cols)} {what} "
                          f"({_fmt_bytes(need)}), more than the limit of {_fmt_bytes(limit)} (half of the available "
                          f"memory unless {ENV_LIMIT} is set). {advice}")
    return need


def densified(X, what="copy of the sparse input X", advice=_RANKRLS_ADVICE):
    """A scipy.sparse X as a C-ordered float64 array, behind the memory guard; dense X unchanged."""
    if not sp.issparse(X):
        return X
    check_dense_memory(X.shape[0], 1, what, n_cols=X.shape[1], advice=advice)
    return np.ascontiguousarray(X.toarray(), dtype=np.float64)
