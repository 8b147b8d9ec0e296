"""Cohen, Schapire & Singer's greedy ordering ("Learning to order things", JAIR 10, 1999; slides 003, "Cohen's
algorithm").  The order maximising AGREE(rho, PREF) = sum_{u before v} PREF(u, v), PREF(u, v) in [0, 1], is NP-hard to
find; :func:`greedy_order` picks by net preference pi(v) = sum_u PREF(v, u) - PREF(u, v), in O(n^2), with at least half
the optimal agreement."""

from __future__ import annotations

import numbers

import numpy as np
import scipy.sparse as sp

from ._memory import check_dense_memory
from ._validation import _to_float, as_real_array, check_bool, check_real

__all__ = ["greedy_order"]

_PAIRWISE = ("step", "sigmoid")

_ADVICE = ("Order fewer items, or order them by a ranker's scores directly (np.argsort(-model.predict(X)): O(n log n), "
           "no n x n matrix).")


def _refuse_unused(route, **given):
    """Refuse the arguments (value, default) of ``given`` that the preference's ``route`` does not read."""
    for name, (value, default) in given.items():
        scalar = isinstance(value, (str, numbers.Number))
        if value is not default and not (scalar and value == default):
            raise ValueError(f"{f'{name}={value!r}' if scalar else name} does not apply to {route}; drop it")


def _net_preference_matrix(preference, X, n_items, pairwise, temperature):
    """D = PREF - PREF^T (antisymmetric, D[v, u] = PREF(v, u) - PREF(u, v)), the only n x n matrix the greedy loop
    needs; each route announces the n x n float64 matrices it allocates."""
    what = "preference matrix (greedy_order)"
    ranking = {"pairwise": (pairwise, "step"), "temperature": (temperature, 1.0)}  # read with a ranker only
    if hasattr(preference, "predict"):
        _refuse_unused("a fitted ranker (the items are the rows of X)", n_items=(n_items, None))
        if X is None:
            raise ValueError("greedy_order with a fitted ranker needs X, the items to order")
        # decision_function where there is one: the ordinal learners' predict gives labels (strings, or codes in a
        # declared order), not scores
        method = "decision_function" if hasattr(preference, "decision_function") else "predict"
        s = as_real_array(getattr(preference, method)(X), f"the ranker's {method}(X)")  # complex: refused, not cut
        if s.ndim != 1:
            raise ValueError(f"the ranker's {method}(X) must return one score per item, got shape {s.shape}")
        if not np.isfinite(s).all():
            raise ValueError("the ranker's scores contain NaN or infinity")
        if pairwise not in _PAIRWISE:
            raise ValueError(f"pairwise must be one of {_PAIRWISE}, got {pairwise!r}")
        if pairwise == "sigmoid":
            check_real(temperature, "temperature", "a finite number > 0", lambda v: v > 0)
        check_dense_memory(s.size, 1, what, advice=_ADVICE)
        with np.errstate(over="ignore"):  # s_u - s_v beyond float64 is +-inf: its sign and tanh are exact
            D = np.subtract.outer(s, s)
        if pairwise == "step":  # PREF = 1, 1/2, 0 for d > 0, = 0, < 0: PREF - PREF^T = sign(d)
            return np.sign(D, out=D)
        # PREF = 1 / (1 + exp(-d / T)) = (1 + tanh(d / 2T)) / 2, so PREF - PREF^T = tanh(d / 2T)
        with np.errstate(over="ignore"):
            D /= float(temperature)  # then halved: 2 T overflowed to inf for T >= 9e307, making every PREF 1/2
            D *= 0.5
        return np.tanh(D, out=D)
    if callable(preference):
        _refuse_unused("a callable preference", X=(X, None), **ranking)
        n = check_real(n_items, "n_items", "a non-negative integer (a callable preference needs the number of items)",
                       lambda v: v >= 0, numbers.Integral)
        check_dense_memory(n, 2, what, advice=_ADVICE)  # PREF and PREF - PREF^T
        P = np.empty((n, n))
        for u in range(n):
            for v in range(n):
                value = 0.0 if u == v else preference(u, v)
                if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Real, np.ndarray)) or (
                        isinstance(value, np.ndarray) and (value.ndim != 0 or value.dtype.kind not in "iuf")):
                    raise TypeError(f"the preference callable returned {value!r} for (u, v) = ({u}, {v}); it must "
                                    "return a number in [0, 1] for every pair of item indices")
                P[u, v] = value
        name = "preference(u, v)"
    else:
        if sp.issparse(preference):
            raise TypeError("preference must be a dense (n, n) matrix (a scipy.sparse matrix: preference.toarray())")
        _refuse_unused("a preference matrix (its shape gives the items)", X=(X, None), n_items=(n_items, None),
                       **ranking)
        try:  # numbers held as objects (pandas' nullable Float64 / Int64 columns) become float64
            P = _to_float(preference, "preference")
        except (TypeError, ValueError):  # ragged lists, text, complex values
            raise TypeError("preference must be an (n, n) matrix of numbers in [0, 1], a callable f(u, v) with "
                            "n_items, or a fitted ranker with X") from None
        if P.ndim != 2 or P.shape[0] != P.shape[1]:
            raise ValueError(f"a preference matrix must be square (n, n), got shape {P.shape}")
        check_dense_memory(P.shape[0], 2, what, advice=_ADVICE)  # a float64 copy and PREF - PREF^T
        P = np.array(P, dtype=np.float64)  # a copy: the diagonal is ignored and overwritten
        name = "preference"
    np.fill_diagonal(P, 0.0)
    lo, hi = P.min(initial=0.0), P.max(initial=0.0)  # NaN propagates through min/max; 0 is on the diagonal
    if not (np.isfinite(lo) and np.isfinite(hi)):
        raise ValueError(f"{name} contains NaN or infinity")
    if lo < 0.0 or hi > 1.0:
        raise ValueError(f"{name} values must lie in [0, 1] (PREF(u, v) is a degree of preference)")
    return P - P.T


def greedy_order(preference, X=None, *, n_items=None, pairwise="step", temperature=1.0, return_scores=False):
    """Order items by Cohen et al.'s greedy net-preference algorithm (most preferred first): O(n^2) with O(n) updates
    (docs/design/large-margin-and-boosting.md) and n x n float64 work matrices, one for a ranker, two for a matrix or
    callable (checked against ``FASTRANK_MAX_DENSE_BYTES`` first).

    Parameters
    ----------
    preference : array (n, n), callable, or fitted ranker
        * an (n, n) matrix with PREF[u, v] in [0, 1], the degree to which u should be ranked above v (the diagonal is
          ignored; PREF[u, v] + PREF[v, u] = 1 is not required);
        * a callable ``f(u, v) -> float in [0, 1]`` on item indices, with ``n_items``;
        * any fitted estimator with ``predict`` (every fastrank ranker), with ``X``: its scores s (``decision_function``
          where it has one, as the ordinal learners' ``predict`` gives labels) give PREF[u, v] = 1, 1/2, 0 for
          s_u >, ==, < s_v (``pairwise="step"``), or the logistic 1 / (1 + exp(-(s_u - s_v) / temperature))
          (``pairwise="sigmoid"``).
    X : array-like, sparse matrix or None, default=None
        The items to score, with a ranker (whatever its ``predict`` takes; one row per item).
    n_items : int or None, default=None
        The number of items, with a callable.
    pairwise : {"step", "sigmoid"}, default="step"
        How a ranker's scores become pairwise preferences (above).
    temperature : float > 0, default=1.0
        The scale of the differences in ``pairwise="sigmoid"``.
    return_scores : bool, default=False
        Also return the net preference pi of each item at the moment it was picked.

    Returns
    -------
    order : ndarray of int64, shape (n,)
        Item indices, most preferred first (ties in pi go to the lowest index).
    picked_scores : ndarray of shape (n,)
        Only if ``return_scores``.
    """
    return_scores = check_bool(return_scores, "return_scores")
    D = _net_preference_matrix(preference, X, n_items, pairwise, temperature)
    n = D.shape[0]
    pi = D.sum(axis=1)
    # Ties to the lowest index also where rounding split them (PREF = 0.1, 0.3, ...): a running sum pi(x) takes at
    # most 2n roundings of partial sums below n max|D|, so values within twice n^2 eps max|D| count as tied
    tol = 2.0 * n * n * np.finfo(np.float64).eps * float(D.max(initial=0.0))
    order = np.empty(n, dtype=np.int64)
    picked = np.empty(n)
    for t in range(n):
        v = int(np.argmax(pi >= pi.max() - tol))  # removed items hold -inf, which the updates keep
        order[t] = v
        picked[t] = pi[v]
        pi[v] = -np.inf
        pi += D[v]  # pi(x) += PREF(v, x) - PREF(x, v)
    return (order, picked) if return_scores else order
