"""Input validation shared by every estimator and function, and the grouping of rows by query id
(the C++ core re-checks only cheap shape invariants)."""

from __future__ import annotations

import numbers
import os

import numpy as np

from . import _core

__all__ = [
    "as_float_matrix",
    "as_targets",
    "check_alpha",
    "check_n_jobs",
    "GroupIndex",
    "group_index",
]


def as_float_matrix(X, name="X", *, min_rows=1, allow_nan=False):
    """A C-contiguous float64 2-D array (one copy at most), finite, with at least ``min_rows`` rows."""
    if hasattr(X, "toarray") and not isinstance(X, np.ndarray):
        raise TypeError(
            f"{name} is a sparse matrix; this estimator needs dense input (call X.toarray(); "
            "RankRLS takes sparse X with solver='cg' or basis_vectors)."
        )
    X = np.asarray(X)
    if X.dtype == object:
        try:
            X = X.astype(np.float64)  # TypeError for non-numbers is numpy's own, kept as is
        except ValueError as exc:
            raise ValueError(f"{name} must be numeric: {exc}") from None
    if np.iscomplexobj(X):
        raise ValueError(f"Complex data not supported: {name} has dtype {X.dtype}")
    if not (np.issubdtype(X.dtype, np.number) or X.dtype == bool):
        raise ValueError(f"{name} must be numeric, got dtype {X.dtype}")
    if X.ndim != 2:
        raise ValueError(
            f"Expected 2D array for {name}, got {X.ndim}D array instead. Reshape your data "
            "either using X.reshape(-1, 1) if it has a single feature or X.reshape(1, -1) if it "
            "contains a single sample."
        )
    X = np.ascontiguousarray(X, dtype=np.float64)
    if X.shape[0] < min_rows:
        raise ValueError(
            f"Found array with {X.shape[0]} sample(s) (shape={X.shape}) while a minimum of "
            f"{min_rows} is required."
        )
    if X.shape[1] < 1:
        raise ValueError(
            f"Found array with 0 feature(s) (shape={X.shape}) while a minimum of 1 is required."
        )
    if not allow_nan and not _all_finite(X):
        raise ValueError(f"Input {name} contains NaN or infinity.")
    return X


def _all_finite(A):
    """Whether every entry of a contiguous float64 array is finite: one threaded C++ pass (about
    twice as fast as ``np.isfinite(A).all()``, and no temporary the size of A)."""
    return _core.all_finite(A, os.cpu_count() or 1)


def as_targets(y, n_rows, name="y"):
    """Targets as a float64 Fortran-ordered (m, v) array plus a flag telling whether y was 1-D."""
    if y is None:
        raise ValueError("This estimator requires y to be passed, but the target y is None")
    y = np.asarray(y)
    if y.dtype == object:
        try:
            y = y.astype(np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{name} must be numeric: {exc}") from None
    if np.iscomplexobj(y):
        raise ValueError(f"Complex data not supported: {name} has dtype {y.dtype}")
    if not (np.issubdtype(y.dtype, np.number) or y.dtype == bool):
        raise ValueError(f"{name} must be real-valued numbers, got dtype {y.dtype}")
    if y.ndim == 0 or y.ndim > 2:
        raise ValueError(f"{name} must be 1-D (m,) or 2-D (m, v), got shape {y.shape}")
    one_d = y.ndim == 1
    Y = y.reshape(-1, 1) if one_d else y
    if Y.shape[0] != n_rows:
        raise ValueError(
            f"Found input variables with inconsistent numbers of samples: [{n_rows}, {Y.shape[0]}]"
        )
    if Y.shape[1] < 1:
        raise ValueError(f"{name} has no columns")
    Y = np.asfortranarray(Y, dtype=np.float64)
    if not _all_finite(Y):
        raise ValueError(f"Input {name} contains NaN or infinity.")
    return Y, one_d


def check_alpha(alpha, name="alpha"):
    """A finite positive float; alpha <= 0 makes the RankRLS system singular."""
    if isinstance(alpha, (bool, np.bool_)) or not isinstance(alpha, numbers.Real):
        raise TypeError(f"{name} must be a positive real number, got {alpha!r}")
    alpha = float(alpha)
    if not np.isfinite(alpha) or alpha <= 0.0:
        raise ValueError(f"{name} must be finite and > 0, got {alpha!r}")
    return alpha


def check_alphas(alphas, name="alphas"):
    arr = np.atleast_1d(np.asarray(alphas, dtype=np.float64))
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D sequence of positive numbers")
    for a in arr:
        check_alpha(float(a), name)
    return arr


def check_n_jobs(n_jobs):
    """Threads for fastrank's C++ kernels: None -> every core (as BLAS/LAPACK already do),
    -1 -> every core, -2 -> all but one, k > 0 -> k."""
    if n_jobs is None:
        return os.cpu_count() or 1
    if isinstance(n_jobs, (bool, np.bool_)) or not isinstance(n_jobs, numbers.Integral) or n_jobs == 0:
        raise ValueError(f"n_jobs must be None or a non-zero integer, got {n_jobs!r}")
    n_jobs = int(n_jobs)
    if n_jobs < 0:
        return max(1, (os.cpu_count() or 1) + 1 + n_jobs)
    return n_jobs


class GroupIndex:
    """Rows reordered so that every group is a contiguous block.

    ``order`` lists the original row indices group by group (stable, so rows keep their
    relative order inside a group); ``offsets[q]:offsets[q+1]`` is group ``q`` in that order;
    ``labels`` are the distinct group ids in sorted order; ``inverse`` maps position in the
    grouped order back to the original row.  Ids need not be sorted, contiguous or numeric.
    """

    __slots__ = ("order", "offsets", "labels", "sizes", "inverse", "codes", "is_identity")

    def __init__(self, order, offsets, labels, codes):
        self.order = order
        self.offsets = offsets
        self.labels = labels
        self.codes = codes
        self.sizes = np.diff(offsets)
        self.inverse = np.empty_like(order)
        self.inverse[order] = np.arange(order.size, dtype=order.dtype)
        self.is_identity = bool(np.array_equal(order, np.arange(order.size)))

    @property
    def n_groups(self):
        return self.offsets.size - 1

    def take(self, A, axis=0):
        """A's rows in grouped order (no copy when the order is the identity)."""
        return A if self.is_identity else np.take(A, self.order, axis=axis)

    def untake(self, A, axis=0):
        """Inverse of :meth:`take`."""
        return A if self.is_identity else np.take(A, self.inverse, axis=axis)


def group_index(groups, n_rows):
    """Build a :class:`GroupIndex`; ``groups=None`` means one group with every row."""
    if groups is None:
        order = np.arange(n_rows, dtype=np.int64)
        return GroupIndex(order, np.array([0, n_rows], dtype=np.int64), np.array([0]),
                          np.zeros(n_rows, dtype=np.int64))
    groups = np.asarray(groups)
    if groups.ndim != 1:
        raise ValueError(f"groups must be 1-D with one id per row, got shape {groups.shape}")
    if groups.shape[0] != n_rows:
        raise ValueError(
            f"groups has {groups.shape[0]} entries but X has {n_rows} rows; give one group id per row"
        )
    if groups.dtype.kind == "f" and not np.isfinite(groups).all():
        raise ValueError("groups contains NaN or infinity")
    try:
        labels, codes = np.unique(groups, return_inverse=True)
    except TypeError as exc:
        raise TypeError(f"group ids must be mutually comparable: {exc}") from None
    codes = codes.reshape(-1).astype(np.int64)
    order = np.argsort(codes, kind="stable").astype(np.int64)
    counts = np.bincount(codes, minlength=labels.size)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return GroupIndex(order, offsets, labels, codes)
