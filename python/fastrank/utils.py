"""Conversions between the query-group conventions of learning-to-rank tools.

* fastrank (and scikit-learn's ``groups``): one id per row, any order, any orderable type; rows of a query need not be
  contiguous.
* LightGBM (``group=`` / ``.query`` files, also ``XGBRanker(group=...)`` in old versions): the sizes of consecutive
  blocks of rows, e.g. ``[10, 20, 5]`` for rows 0-9, 10-29, 30-34.
* XGBoost (``qid=``) and svmlight/LETOR files (``qid:``): one integer id per row; XGBoost wants the rows of a query
  contiguous and the ids non-decreasing.

Examples
--------
>>> import numpy as np
>>> from fastrank.utils import groups_from_sizes, sizes_from_groups, qid_from_groups
>>> g = groups_from_sizes([3, 2])
>>> g
array([0, 0, 0, 1, 1])
>>> sizes_from_groups(g)
array([3, 2])
>>> qid_from_groups(np.array(["q7", "q7", "q2"]))
array([0, 0, 1])
"""

from __future__ import annotations

import numbers

import numpy as np

from ._docs import with_param_docs
from ._validation import _asarray, as_ids, check_group_ids, check_int, whole_numbers

__all__ = ["groups_from_sizes", "sizes_from_groups", "groups_from_qid", "qid_from_groups", "group_order"]

# numpydoc entries shared by the functions below (``%(groups)s`` in their docstrings)
_DOCS = {
    "groups": """groups : array-like of shape (n_samples,)
    Query id of each row: numbers or strings (also a pandas object column of either); a missing id (None, NaN,
    pandas' NA, NaT) or an infinite one raises ValueError, other types TypeError.""",
}


def _ids(groups, name):
    g = as_ids(groups, name)
    if g.ndim != 1:
        raise ValueError(f"{name} must be 1-D with one id per row, got shape {g.shape}")
    check_group_ids(g, name)  # missing ids (None, NaN, pandas' NA, NaT) named with their row, as the estimators do
    if g.dtype == object:  # pandas' object columns: of strings, or of numbers
        values = g.tolist()
        if all(isinstance(v, str) for v in values):
            g = g.astype(str)
        elif all(isinstance(v, numbers.Number) and not isinstance(v, complex) for v in values):
            g = np.asarray(values)
    if g.dtype == object or g.dtype.kind == "c":
        raise TypeError(f"{name} must be an array of numbers or strings, got dtype {g.dtype}")
    return g


def _block_sizes(groups, hint):
    """Sizes of the blocks of equal consecutive ids of ``groups``; ValueError (ending with ``hint``) if the rows of a
    query are not contiguous."""
    g = _ids(groups, "groups")
    starts = np.flatnonzero(np.r_[True, g[1:] != g[:-1]]) if g.size else np.zeros(0, dtype=np.int64)
    uniq, counts = np.unique(g[starts], return_counts=True)
    if uniq.size != starts.size:
        bad = uniq[np.argmax(counts > 1)].item()
        rows = np.flatnonzero(g == bad)
        gap = int(np.argmax(np.diff(rows) > 1))
        raise ValueError(f"groups: the rows of query {bad!r} are not contiguous (row {int(rows[gap])} is followed by a "
                         f"different query, and the query appears again at row {int(rows[gap + 1])}); {hint}")
    return np.diff(np.append(starts, g.size)).astype(np.int64)


def groups_from_sizes(sizes, n_samples=None):
    """Per-row query ids 0, 1, ... from LightGBM-style group sizes of consecutive blocks.

    Parameters
    ----------
    sizes : array-like of shape (n_groups,)
        Positive integers (whole floats too), the rows of each consecutive block: LightGBM's ``group``, the lines of
        a ``.query`` file.
    n_samples : int or None, default=None
        The number of rows the sizes must add up to (else ValueError); None: not checked.

    Returns
    -------
    groups : ndarray of shape (sum(sizes),), dtype int64
        Group k's rows get id k.
    """
    s = _asarray(sizes, "sizes")
    if s.ndim != 1:
        raise ValueError(f"sizes must be a 1-D array of group sizes, got shape {s.shape}")
    if s.size and s.dtype.kind in "fuO":  # uint64 above 2**63 wrapped to negative sizes; objects: a pandas column
        if not whole_numbers(s) or np.any(np.abs(s) >= 2.0**63):  # no int64 overflow
            raise ValueError("sizes must be whole numbers (the number of rows in each group) below 2**63")
    elif s.size and s.dtype.kind not in "iu":
        raise TypeError(f"sizes must be integers, got dtype {s.dtype}")
    s = s.astype(np.int64)
    if np.any(s < 1):
        k = int(np.argmax(s < 1))
        raise ValueError(f"sizes must be positive: sizes[{k}] = {int(s[k])} (a query needs at least one row)")
    total = sum(s.tolist())  # Python ints: an int64 sum would wrap around for huge sizes
    if n_samples is not None and total != check_int(n_samples, "n_samples", low=0, high=None):
        raise ValueError(f"the group sizes add up to {total} rows but there are {int(n_samples)} rows "
                         "(n_samples); each row must belong to exactly one group")
    try:
        return np.repeat(np.arange(s.size, dtype=np.int64), s)
    except (MemoryError, ValueError):  # numpy's "Unable to allocate" / "negative dimensions" (int64 overflow)
        raise MemoryError(f"sizes add up to {total} rows, too many for one group id per row in memory") from None


@with_param_docs(_DOCS)
def sizes_from_groups(groups):
    """LightGBM-style sizes of the consecutive blocks of rows of each query.

    Parameters
    ----------
    %(groups)s
        The rows of each query must be contiguous, else ValueError (fastrank itself does not need that; sort them with
        ``order = group_order(groups)``, then ``X[order]``, ``y[order]``, ``groups[order]``); the ids may be in any
        order (e.g. qids sorted as strings, "10, 1001, 101").

    Returns
    -------
    sizes : ndarray of shape (n_groups,), dtype int64
        The size of each block, in row order.
    """
    return _block_sizes(groups, "sort the rows with order = fastrank.utils.group_order(groups) (X[order], "
                                "y[order], groups[order]) first")


def groups_from_qid(qid):
    """fastrank ``groups`` from XGBoost/svmlight-style per-row query ids.

    Parameters
    ----------
    qid : array-like of shape (n_samples,)
        One id per row: integers (whole floats too), below 2**63 in magnitude, or strings; no missing or NaN ids.
        Unlike XGBoost's, they need not be sorted or contiguous.

    Returns
    -------
    groups : ndarray of shape (n_samples,)
        The validated ids: an int64 copy of integer ids, a copy of string ids unchanged.
    """
    q = _ids(qid, "qid")
    if q.dtype.kind == "f":  # int64 ids, no overflow (compared in float64: 2**63 overflows float16)
        bad = np.any((q != np.round(q)) | (np.abs(q.astype(np.float64)) >= 2.0**63))
    else:  # uint64 ids from 2**63 up were wrapped to negative ones
        bad = q.dtype.kind == "u" and q.size and q.max() > np.iinfo(np.int64).max
    if bad:
        raise ValueError("qid must be whole numbers (query ids) below 2**63 in magnitude")
    return q.astype(np.int64) if q.dtype.kind in "fiub" else q.copy()


@with_param_docs(_DOCS)
def qid_from_groups(groups):
    """XGBoost-style ``qid`` from per-row group ids.

    Parameters
    ----------
    %(groups)s
        The rows of each query must be contiguous, else ValueError (sort them with :func:`group_order` first).

    Returns
    -------
    qid : ndarray of shape (n_samples,), dtype int64
        Non-decreasing integers 0, 1, ..., as ``XGBRanker.fit(qid=...)`` requires: queries numbered in order of first
        appearance.
    """
    return groups_from_sizes(_block_sizes(groups, "XGBoost needs each query's rows together: sort the rows with "
                                                  "order = fastrank.utils.group_order(groups) first"))


@with_param_docs(_DOCS)
def group_order(groups):
    """A stable permutation that makes the rows of each query contiguous.

    %(Parameters)s %(groups)s %(Returns)s
    order : ndarray of shape (n_samples,), dtype int64
        Queries in order of first appearance, rows inside a query in their order: ``X[order]``, ``y[order]``.
    """
    g = _ids(groups, "groups")
    _, first, codes = np.unique(g, return_index=True, return_inverse=True)
    rank = np.empty(first.size, dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(first.size)
    return np.argsort(rank[codes], kind="stable").astype(np.int64)
