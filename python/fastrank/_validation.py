"""Input validation shared by every estimator and function, and the grouping of rows by query id (the C++ core re-checks
only cheap shape invariants)."""

from __future__ import annotations

import functools
import math
import numbers
import os
import reprlib
from collections.abc import Hashable

import numpy as np
import scipy.sparse
from sklearn.utils import check_random_state
from sklearn.utils.validation import column_or_1d

from . import _core
from ._threads import compute_region, cpu_budget

__all__ = ["as_float_matrix", "as_float_vector", "as_targets", "check_alpha", "check_alphas", "check_int",
           "check_bool", "check_group_ids", "check_n_jobs", "check_pair_arrays", "check_precomputed_kernel",
           "GroupIndex", "group_index", "target_column", "unordered_labels", "whole_numbers"]

# Largest value a C++ ``int`` argument can take (thread counts, cutoffs, iteration limits).
INT_MAX = 2**31 - 1
_TINY = float(np.finfo(np.float64).tiny)  # smallest normal float64


def _asarray(x, name):
    """np.asarray, with numpy's errors (ragged lists, unconvertible objects) naming the argument; a scipy.sparse matrix
    (which numpy makes a 0-d object array) refused by name."""
    if scipy.sparse.issparse(x):
        raise TypeError(f"{name} is a scipy.sparse {type(x).__name__} of shape {x.shape}; it must be dense: call "
                        f"{name}.toarray()")
    try:
        return np.asarray(x)
    except (ValueError, TypeError) as exc:
        raise ValueError(f"{name} must be a rectangular array of numbers ({exc})") from None


def as_ids(groups, name="groups"):
    """``groups`` as an array of ids; a sequence mixing numbers and strings stays objects (numpy made [1, "1"] the
    strings "1", "1": two ids merged into one), so that the mixed types are refused as in an object array."""
    ids = _asarray(groups, name)
    if ids.dtype.kind in "US" and not isinstance(groups, np.ndarray):
        given = np.asarray(groups, dtype=object)
        if given.shape == ids.shape and not all(isinstance(v, (str, bytes)) for v in given.flat):
            return given
    return ids


def check_seed(random_state, name="random_state"):
    """A numpy RandomState from ``random_state`` (scikit-learn's check_random_state), refused by name."""
    try:
        return check_random_state(random_state)
    except ValueError:  # scikit-learn's message names the value only
        raise ValueError(f"{name} must be None, an int in [0, 2**32 - 1] or a numpy.random.RandomState, got "
                         f"{random_state!r}") from None


def one_of(value, options):
    """Whether ``value`` is one of ``options``; an array is none of them (``in`` compares it elementwise and raised
    numpy's "truth value of an array is ambiguous" instead of the caller's message)."""
    return isinstance(value, Hashable) and value in options


def _to_float(a, name, what="numeric", first_row=0):
    """``a`` as a numeric array (:func:`_asarray`); strings, non-numeric objects and complex values refused by name
    (rows counted from ``first_row``)."""
    a = _asarray(a, name)
    if a.dtype == object:
        try:
            try:
                a = a.astype(np.float64)
            except TypeError:  # pandas' NA has no float value: a missing value, NaN (as numpy makes None)
                missing = np.asarray(np.frompyfunc(_missing, 1, 1)(a), dtype=bool)  # 0-d input: a Python bool
                a = np.where(missing, np.nan, a).astype(np.float64)
        except (TypeError, ValueError, OverflowError):  # OverflowError: an int beyond float64 (10**400)
            raise _not_a_number(a, name, what, first_row) from None
    if np.iscomplexobj(a):
        raise ValueError(f"Complex data not supported: {name} has dtype {a.dtype}")
    if not (np.issubdtype(a.dtype, np.number) or a.dtype == bool):
        if a.dtype.kind in "US" and a.size:  # text (a list mixing numbers and strings becomes text too)
            try:
                a.astype(np.float64)
            except ValueError:
                raise _not_a_number(a.astype(object), name, what, first_row) from None
            raise ValueError(f"{name} must be {what}, got numbers as text (dtype {a.dtype}); convert them, e.g. "
                             f"np.asarray({name}, dtype=float)")
        raise ValueError(f"{name} must be {what}, got dtype {a.dtype}")
    return a


def _at(shape, k, first_row=0):
    """Where the entry of flat index ``k`` of an array of ``shape`` stands: " at row i" (", column j" in a matrix),
    rows counted from ``first_row``."""
    index = np.unravel_index(k, shape)
    return "".join(f"{sep}{int(i) + offset}" for sep, i, offset in zip((" at row ", ", column "), index,
                                                                         (first_row, 0)))


def _not_a_number(a, name, what, first_row=0):
    """The error for the object array ``a`` that float64 cannot hold, naming its first entry that is no number: a
    TypeError for an object of another type (scikit-learn's check_dtype_object matches its text), else ValueError."""
    for k, v in enumerate(a.flat):
        cause = None
        if isinstance(v, (list, tuple, np.ndarray)):  # float() of a one-entry array would pass (DeprecationWarning)
            cause = ValueError, "is a sequence, not a number"
        elif not _missing(v):
            try:
                float(v)
            except TypeError:
                cause = TypeError, "is no number (every argument must be a string or a real number)"
            except ValueError:
                cause = ValueError, "is not a number"
            except OverflowError:
                cause = ValueError, "is beyond float64's range (1.8e308)"
        if cause:
            error, text = cause
            return error(f"{name} must be {what}: {reprlib.repr(v)} ({type(v).__name__}){_at(a.shape, k, first_row)} "
                         f"{text}")
    return ValueError(f"{name} must be {what}: numpy cannot convert its entries to float64")


def _not_finite(A, name):
    """The ValueError for the float array ``A`` holding NaN or infinity, naming the first such entry."""
    k = int(np.argmax(~np.isfinite(A)))  # C order: the lowest row first
    return ValueError(f"Input {name} contains NaN or infinity ({A.flat[k]}{_at(A.shape, k)}).")


def as_real_array(a, name):
    """``a`` as a float64 array of any shape; complex, string and object values refused by name (no ComplexWarning)."""
    return np.asarray(_to_float(a, name, "real-valued numbers"), dtype=np.float64)


def as_float_matrix(X, name="X", *, min_rows=1, allow_nan=False):
    """A C-contiguous float64 2-D array (one copy at most), finite, with at least ``min_rows`` rows."""
    if hasattr(X, "toarray") and not isinstance(X, np.ndarray):
        raise TypeError(f"{name} is a sparse matrix; this estimator needs dense input (call X.toarray(); RankRLS takes "
                        "sparse X with solver='cg' or basis_vectors).")
    X = _to_float(X, name)
    if X.ndim != 2:
        raise ValueError(f"Expected 2D array for {name}, got {X.ndim}D array instead. Reshape your data either using "
                         "X.reshape(-1, 1) if it has a single feature or X.reshape(1, -1) if it contains a single "
                         "sample.")
    X = np.ascontiguousarray(X, dtype=np.float64)
    if X.shape[0] < min_rows:
        raise ValueError(f"Found array with {X.shape[0]} sample(s) (shape={X.shape}) while a minimum of {min_rows} is "
                         "required.")
    if X.shape[1] < 1:
        raise ValueError(f"Found array with 0 feature(s) (shape={X.shape}) while a minimum of 1 is required.")
    if not allow_nan and not _all_finite(X):
        raise _not_finite(X, name)
    return X


def _all_finite(A):
    """Whether a contiguous float64 array is all finite: one threaded C++ pass (2x np.isfinite, no temporary), in a
    compute region where it starts threads (2^20 values a thread)."""
    if A.size < 1 << 21:
        return _core.all_finite(A, 1)
    threads = cpu_budget()
    with compute_region(threads):
        return _core.all_finite(A, threads)


def target_column(y):
    """``y`` as an array, a column vector (m, 1) raveled with scikit-learn's DataConversionWarning; None refused."""
    if y is None:
        raise ValueError("This estimator requires y to be passed, but the target y is None")
    y = _asarray(y, "y")
    return column_or_1d(y, warn=True) if y.ndim == 2 and y.shape[1] == 1 else y


def as_targets(y, n_rows, name="y"):
    """Targets as a float64 (m, v) array, C- or Fortran-contiguous as given (C when neither), plus a flag telling
    whether y was 1-D."""
    if y is None:
        raise ValueError("This estimator requires y to be passed, but the target y is None")
    y = _to_float(y, name, "real-valued numbers")
    if y.ndim == 0 or y.ndim > 2:
        raise ValueError(f"{name} must be 1-D (m,) or 2-D (m, v), got shape {y.shape}")
    one_d = y.ndim == 1
    Y = y.reshape(-1, 1) if one_d else y
    if Y.shape[0] != n_rows:
        raise ValueError(f"Found input variables with inconsistent numbers of samples: [{n_rows}, {Y.shape[0]}]")
    if Y.shape[1] < 1:
        raise ValueError(f"{name} has no columns")
    if Y.dtype.kind in "iu" and Y.dtype.itemsize == 8:
        _check_integers_stay_distinct(Y, name)
    Y = np.asarray(Y, dtype=np.float64)
    Y = Y if Y.flags.c_contiguous or Y.flags.f_contiguous else np.ascontiguousarray(Y)
    if not _all_finite(Y):
        raise _not_finite(Y[:, 0] if one_d else Y, name)
    return Y, one_d


def _check_integers_stay_distinct(Y, name):
    """Refuse 64-bit integer targets that float64 merges: beyond 2**53 neighbours round to one value, and a pair
    y_i > y_j would become a tie silently."""
    for column in Y.T:
        big = (column > 2**53) | (column < -(2**53))
        if big.any():
            values = np.unique(column)
            merged = np.flatnonzero(np.diff(values.astype(np.float64)) == 0)
            if merged.size:
                a, b = values[merged[0]], values[merged[0] + 1]
                raise ValueError(f"{name} holds the distinct integers {a} and {b}, which float64 (53 bits) cannot "
                                 "tell apart: the pair would be a tie; subtract a common offset (e.g. "
                                 f"{name} - {name}.min()) or pass their ranks")


def check_alpha(alpha, name="alpha"):
    """A regularization value: a normal (not subnormal), finite, positive float (``alpha >= 2.2e-308`` and
    ``<= 1e300``).  The solvers refuse alpha at the rounding level of their own matrix (``fastrank.LinAlgError``)."""
    if isinstance(alpha, (bool, np.bool_)) or not isinstance(alpha, numbers.Real):
        raise TypeError(f"{name} must be a positive real number, got {alpha!r}")
    try:
        alpha = float(alpha)
    except OverflowError:  # an int beyond float64
        alpha = np.inf
    if not np.isfinite(alpha) or alpha <= 0.0:
        raise ValueError(f"{name} must be finite and > 0, got {alpha!r}")
    if alpha < _TINY:
        raise ValueError(f"{name}={alpha!r} is a subnormal float64 (below 2.2e-308): products with it lose all "
                         "precision. Use a value of the order of the kernel's scale (e.g. 1e-6 to 1e6 for a Gaussian "
                         "kernel).")
    if alpha > 1e300:
        raise ValueError(f"{name}={alpha!r} is too large: " + (
            "C times the loss overflows float64 (C weighs the loss against 1/2 ||w||^2). Use a smaller C."
            if name.startswith("C") else f"coefficients ~ y / {name} underflow. Use a value of the order of the "
            "kernel's scale."))
    return alpha


def mprank_alpha(C, m):
    """RankRLS's alpha = m^2 / (2 C) for MPRank's C on m rows (the same minimiser), within :func:`check_alpha`'s
    range."""
    alpha = m * m / (2.0 * C)
    if not alpha <= 1e300:
        raise ValueError(f"C={C!r} is too small for {m} rows: MPRank is RankRLS at alpha = m^2 / (2 C) = {alpha:.3g}, "
                         "beyond 1e300, where coefficients ~ y / alpha underflow. Use a larger C.")
    return alpha


def check_alphas(alphas, name="alphas"):
    """A non-empty 1-D float64 array of values that each pass :func:`check_alpha`."""
    if isinstance(alphas, (str, bytes)):
        raise TypeError(f"{name} must be a positive number or a 1-D sequence of them, got {alphas!r}")
    arr = np.atleast_1d(np.asarray(_to_float(alphas, name, "positive real numbers"), dtype=np.float64))
    if any(isinstance(a, (bool, np.bool_)) for a in np.asarray(alphas, dtype=object).ravel()):  # True was alpha 1
        raise TypeError(f"{name} must be positive real numbers, not booleans, got {alphas!r}")
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D sequence of positive numbers, got shape {arr.shape}")
    for a in arr:
        check_alpha(float(a), name)
    return arr


def whole_numbers(a):
    """Whether the array ``a`` can hold row indices: an integer dtype, or floats, or objects (a pandas object column),
    that are all finite whole numbers (bools and strings are no indices)."""
    if a.dtype == object:
        return all(isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_))
                   and (isinstance(v, numbers.Integral) or math.isfinite(v) and v == round(v)) for v in a.flat)
    return np.issubdtype(a.dtype, np.integer) or (
        np.issubdtype(a.dtype, np.floating) and bool(np.all(np.isfinite(a))) and bool(np.all(a == np.round(a))))


def check_bool(value, name):
    """A Python or numpy bool: a truthy string such as "no" must not pass for True."""
    if not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"{name} must be True or False, got {value!r}")
    return bool(value)


def file_name(path, name="path"):
    """``path`` (str, bytes or path-like) as a str file name."""
    if not isinstance(path, (str, bytes, os.PathLike)):
        raise TypeError(f"{name} must be a file name (str or path-like), got {path!r}")
    if not os.fspath(path):
        raise ValueError(f"{name} is empty: give a file name")
    return os.fsdecode(path)


def check_int(value, name, *, low=None, high=INT_MAX):
    """An integer (Python or numpy, not bool) in ``[low, high]``; ``high`` defaults to the C++ int limit so nothing out
    of range reaches a binding (which would fail with a signature dump)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {value!r}")
    value = int(value)
    if (low is not None and value < low) or (high is not None and value > high):
        lo, hi = ("-inf" if low is None else low), ("inf" if high is None else high)
        raise ValueError(f"{name} must be an integer in [{lo}, {hi}], got {value}")
    return value


def check_real(value, name, need, ok=lambda v: True, kind=numbers.Real):
    """``float(value)`` (``int`` for ``kind=numbers.Integral``) for a finite number of ``kind``, not a bool, with
    ``ok(value)``, else a ValueError saying ``need``."""
    try:
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, kind) or not ok(value) \
                or not isinstance(value, numbers.Integral) and not np.isfinite(float(value)):
            raise ValueError(f"{name} must be {need}, got {value!r}")
        return int(value) if kind is numbers.Integral else float(value)
    except OverflowError:  # float() of an int beyond float64 (10**400)
        raise ValueError(f"{name} must be {need}, got an int beyond float64's range (1.8e308)") from None


def as_float_vector(v, name, n=None):
    """A finite 1-D float64 array (with ``n`` entries when given), errors naming the argument."""
    a = _to_float(v, name)
    if a.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {a.shape}")
    if n is not None and a.shape[0] != n:
        raise ValueError(f"{name} must have {n} entries, got {a.shape[0]}")
    if a.dtype.kind in "iu" and a.dtype.itemsize == 8:
        _check_integers_stay_distinct(a[:, None], name)
    a = np.ascontiguousarray(a, dtype=np.float64)
    if not np.isfinite(a).all():
        raise _not_finite(a, name)
    return a


def check_n_jobs(n_jobs):
    """Threads for fastrank's C++ kernels: None or -1 -> every usable core (:func:`fastrank._threads.cpu_budget`), -2 ->
    all but one, k > 0 -> k, capped at 4 x the core count (more threads only add overhead; results never depend on the
    thread count)."""
    cores = cpu_budget()
    if n_jobs is None:
        return cores
    if isinstance(n_jobs, (bool, np.bool_)) or not isinstance(n_jobs, numbers.Integral) or n_jobs == 0:
        raise ValueError(f"n_jobs must be None or a non-zero integer, got {n_jobs!r}")
    n_jobs = int(n_jobs)
    if abs(n_jobs) > INT_MAX:
        raise ValueError(f"n_jobs={n_jobs} is out of range; use -1 for every core or a thread count <= {cores}")
    return max(1, cores + 1 + n_jobs) if n_jobs < 0 else min(n_jobs, 4 * cores)


def check_precomputed_kernel(K, name="X (precomputed kernel)", *, n_train=None, min_rows=1, owner="the model"):
    """The one validation of user-supplied kernel matrices (docs/design/robustness.md, "Kernels"): a training kernel
    (``n_train=None``) finite, square, symmetric to 1e-10 relative to its largest entry, with at least ``min_rows``
    rows, returned as ``(K + K^T) / 2`` in Fortran order; a test kernel (``n_train=m``) finite (p, m).  Positive
    semidefiniteness is left to the factorizations (O(m^3) to check)."""
    K = as_float_matrix(K, name, min_rows=min_rows)
    if n_train is not None:
        if K.shape[1] != n_train:
            raise ValueError(f"X has {K.shape[1]} features, but {owner} is expecting {n_train} features as input: a "
                             f"precomputed test kernel {name} has one column per training row, shape (n_samples, "
                             f"{n_train}), got {K.shape}")
        return K
    if K.shape[0] != K.shape[1]:
        raise ValueError(f"A precomputed kernel {name} must be square (m, m), got shape {K.shape}")
    scale = max(1.0, float(np.abs(K).max()))
    with np.errstate(over="ignore"):  # entries beyond half the float64 range: K - K.T and K + K.T may overflow
        if not np.allclose(K, K.T, rtol=1e-10, atol=1e-12 * scale):
            err = float(np.abs(K - K.T).max())
            raise ValueError(f"A precomputed kernel matrix {name} must be symmetric (largest |K - K.T| = {err:.3g}, "
                             f"largest |K| = {scale:.3g}); pass (K + K.T) / 2 if the asymmetry is rounding")
        S = 0.5 * (K + K.T)
    if scale > 0.25 * np.finfo(np.float64).max and not _all_finite(S):
        S = 0.5 * K + 0.5 * K.T  # halved first: finite (and exact for entries this large)
    return np.asfortranarray(S)


def check_pair_arrays(pair_predictions, pair_targets):
    """Validated (n_pairs, 2) or (n_pairs, 2, v) prediction and target arrays of held-out pairs (as returned by
    ``leave_pair_out``): numeric, finite, same shape, at least one pair."""
    P, T = (np.asarray(_to_float(A, name), dtype=np.float64)
            for name, A in (("pair_predictions", pair_predictions), ("pair_targets", pair_targets)))
    for name, A in (("pair_predictions", P), ("pair_targets", T)):
        if A.ndim not in (2, 3) or A.shape[1] != 2:
            raise ValueError(f"{name} must have shape (n_pairs, 2) or (n_pairs, 2, v), got {A.shape}")
        if A.shape[0] == 0:
            raise ValueError(f"{name} has no pairs")
        if not np.isfinite(A).all():
            raise _not_finite(A, name)
    if P.shape != T.shape:
        raise ValueError(f"pair_predictions and pair_targets must have the same shape, got {P.shape} and {T.shape}")
    return P, T


def pairwise_disagreement(pair_predictions, pair_targets):
    """Fraction of pairs with different targets ordered wrongly by the predictions (ties in the predictions count 1/2;
    pairs with equal targets are ignored).

    Parameters
    ----------
    pair_predictions : array-like of shape (n_pairs, 2) or (n_pairs, 2, v)
        The predictions for the two members of each pair (e.g. ``leave_pair_out``'s).
    pair_targets : array-like of the same shape
        The targets of the two members.

    Returns
    -------
    disagreement : float or ndarray of shape (v,)
        A float, or one value per output for 3-D input (NaN where no pair has different targets)."""
    P, T = check_pair_arrays(pair_predictions, pair_targets)
    dp, dt = P[:, 0] - P[:, 1], T[:, 0] - T[:, 1]
    valid = dt != 0
    # opposite signs, not dp * dt < 0: the product of differences near 1e-200 underflows to 0 (every pair "right"),
    # near 1e200 it overflows
    wrong = np.where(np.sign(dp) * np.sign(dt) < 0, 1.0, 0.0) + np.where(dp == 0, 0.5, 0.0)
    n = valid.sum(axis=0)
    res = np.where(n > 0, (wrong * valid).sum(axis=0) / np.maximum(n, 1), np.nan)
    return float(res) if np.ndim(res) == 0 else res


pair_disagreement = pairwise_disagreement  # the exact-CV engine's name (model_selection exports the function)


def block_sums(A, offsets, rows=None):
    """The sums over the non-empty row blocks ``offsets[q]:offsets[q+1]`` of ``A[rows]`` (``rows``: A's own order by
    default), one sparse product adding in row order: ``np.add.reduceat`` along axis 0 runs 20x slower over many
    short blocks (m = 2e5 rows of 30 columns in 33,000 blocks: 0.16 s against 0.008 s)."""
    m = int(offsets[-1])
    rows = np.arange(m) if rows is None else rows
    summing = scipy.sparse.csr_array((np.ones(m), rows, offsets), shape=(offsets.size - 1, A.shape[0]))
    return summing @ A


class GroupIndex:
    """Rows reordered so that every group is a contiguous block.

    ``order`` lists the original row indices group by group (stable, so rows keep their relative order inside a group);
    ``offsets[q]:offsets[q+1]`` is group ``q`` in that order; ``labels`` are the distinct group ids in sorted order;
    ``inverse`` maps position in the grouped order back to the original row.  Ids need not be sorted, contiguous or
    numeric."""

    def __init__(self, order, offsets, labels, codes):
        self.order, self.offsets, self.labels, self.codes = order, offsets, labels, codes
        self.sizes = np.diff(offsets)

    @functools.cached_property
    def inverse(self):
        inverse = np.empty_like(self.order)
        inverse[self.order] = np.arange(self.order.size, dtype=self.order.dtype)
        return inverse

    @functools.cached_property
    def is_identity(self):
        return bool(np.array_equal(self.order, np.arange(self.order.size)))

    @property
    def n_groups(self):
        return self.offsets.size - 1

    def rows(self):
        """The row indices of every group, in increasing order (the grouped order is stable)."""
        return np.split(self.order, self.offsets[1:-1])

    def sums(self, A):
        """Each group's sum of the rows of ``A`` (rows as given), (n_groups,) + A.shape[1:]."""
        return block_sums(A, self.offsets, self.order)

    def take(self, A, axis=0):
        """A's rows in grouped order (no copy when the order is the identity)."""
        return A if self.is_identity else np.take(A, self.order, axis=axis)

    def untake(self, A, axis=0):
        """Inverse of :meth:`take`."""
        return A if self.is_identity else np.take(A, self.inverse, axis=axis)


def _missing(v):
    """Whether a value is missing: None, or NaN-like (not equal to itself; pandas' NA has no truth value at all)."""
    try:
        return v is None or bool(v != v)
    except TypeError:
        return True
    except ValueError:  # an array: no single truth value, but present
        return False


def _id_state(v):
    """1 for a missing id (:func:`_missing`), 2 for an infinite float, else 0."""
    return 1 if _missing(v) else 2 if isinstance(v, (float, np.floating)) and math.isinf(v) else 0


def check_group_ids(groups, name="groups", first_row=0, what="group id"):
    """Refuse the ids (``what``: also labels) of the 1-D array ``groups`` that name no group, with the first one's row:
    NaN or infinite floats, NaT, and None / NaN / pandas' NA / infinite numbers among objects (a NaN there breaks
    np.unique's sort: the rows of one id became two groups)."""
    kind = groups.dtype.kind
    if kind == "O":  # one pass over the objects: 1 missing, 2 an infinite number
        state = np.frompyfunc(_id_state, 1, 1)(groups).astype(np.int8)
        missing, infinite = state == 1, state == 2
    else:
        missing = np.isnan(groups) if kind == "f" else np.isnat(groups) if kind in "mM" else None
        infinite = np.isinf(groups) if kind == "f" else None
    if missing is not None and missing.any():
        i = int(np.argmax(missing))
        # str: nan, <NA>, NaT, None (repr would show numpy's np.float64(nan))
        raise ValueError(f"{name} contains a missing {what} ({groups[i]} at row {first_row + i}); give every row a "
                         f"{what}")
    if infinite is not None and infinite.any():
        i = int(np.argmax(infinite))
        raise ValueError(f"{name} contains an infinite {what} ({groups[i]} at row {first_row + i}); give every row a "
                         f"finite {what}")


def incomparable_ids(groups, name):
    """The TypeError for ids ``groups`` that np.unique cannot sort (numbers next to strings)."""
    kinds = sorted({type(v).__name__ for v in groups.ravel()})
    return TypeError(f"{name} must be mutually comparable, all numbers or all strings; got the types {kinds}: give "
                     "one type (e.g. groups.astype(str))")


def unordered_labels(labels, name, reference=None, reference_name="classes_"):
    """The ValueError for the 1-D labels that np.unique / np.searchsorted cannot order: the first row whose label
    does not compare with the first label, or with the labels ``reference`` (e.g. ``classes_``)."""
    values = labels.tolist()
    ref = values[0] if reference is None else reference[0]
    other = f"row 0's label {reprlib.repr(ref)} ({type(ref).__name__})" if reference is None else \
        f"{reference_name} {reprlib.repr(reference.tolist())}"
    for i, v in enumerate(values):
        try:
            bool(v < ref), bool(ref < v)
        except (TypeError, ValueError):  # ValueError: an array has no truth value
            return ValueError(f"{name} must be orderable labels of one kind (all numbers or all strings): "
                              f"{reprlib.repr(v)} ({type(v).__name__}) at row {i} does not compare with {other}; give "
                              "labels of one type")
    kinds = sorted({type(v).__name__ for v in values})
    return ValueError(f"{name} must be orderable labels of one kind (all numbers or all strings), got the types "
                      f"{kinds}")


def group_index(groups, n_rows):
    """Build a :class:`GroupIndex`; ``groups=None`` means one group with every row."""
    # order, offsets and codes are read-only views of a _core.GroupIndex, built (validated) once in C++: the
    # group-aware bindings read it behind them in place
    if groups is None:
        core = _core.GroupIndex.one_group(n_rows)  # no per-row codes: all 0 (zero pages until read)
        return GroupIndex(core.order, core.offsets, np.array([0]), np.zeros(n_rows, dtype=np.int64))
    groups = as_ids(groups)
    if groups.ndim != 1:
        raise ValueError(f"groups must be 1-D with one id per row, got shape {groups.shape}")
    if groups.shape[0] != n_rows:
        raise ValueError(f"groups has {groups.shape[0]} entries but X has {n_rows} rows; give one group id per row")
    if groups.dtype.kind == "c":
        raise ValueError(f"Complex data not supported: groups has dtype {groups.dtype} (give integer or string ids)")
    check_group_ids(groups)
    if n_rows == 0:
        return GroupIndex(np.zeros(0, np.int64), np.zeros(1, np.int64), groups[:0].copy(), np.zeros(0, np.int64))
    lo, hi = (int(groups.min()), int(groups.max())) if groups.dtype.kind in "iu" else (0, -1)
    if -(2**63) <= lo <= hi < 2**63 and hi - lo <= 4 * n_rows + 1024:
        # integer ids in a modest range: ids -> codes -> order by a table, no sort
        core = _core.GroupIndex.from_ids(np.ascontiguousarray(groups, dtype=np.int64), lo, hi)
        labels = core.labels.astype(groups.dtype)
    else:
        try:
            labels, codes = np.unique(groups, return_inverse=True)
        except TypeError:
            raise incomparable_ids(groups, "group ids") from None
        core = _core.GroupIndex.from_codes(np.ascontiguousarray(codes.reshape(-1), dtype=np.int64), labels.size)
    return GroupIndex(core.order, core.offsets, labels, core.codes)
