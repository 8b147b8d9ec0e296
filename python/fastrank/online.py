"""On-line ordinal learners: PRank, the OAP-BPM family and Widrow-Hoff (Harrington 2003), and the on-line (gradient)
version of MPRank (Cortes, Mohri & Rastogi, section 2.5).

The ordinal learners share one streaming API: ``fit(X, y)`` restarts and makes ``n_epochs`` passes (reshuffled each
pass when ``shuffle=True``, reported on stderr with ``verbose``); ``partial_fit(X, y, classes=None)`` continues the
stream, and a stream cut into several calls gives exactly the model of one call on the concatenation (same
``random_state``).  ``predict`` returns labels, ``decision_function`` real scores.  ``average_rank_loss_`` is the
paper's learning-curve measure (1/T) sum_t |yhat_t - y_t| of the on-line predictions (each made before its label was
seen), ``rank_loss_curve()`` its value after every example, in rank steps between positions in ``classes_``
(``metrics.mean_rank_loss(..., scale="positions", classes=classes_)``).

Labels are any orderable values, mapped to the ranks 1..k of the sorted ``classes_``; an ordered pandas categorical (as
``y`` or ``classes=``) gives its categories in their declared order instead (``classes_`` = every category, lowest
first: "low" < "mid" < "high" is no alphabetical order); numbers in an object array (a pandas object column) are the
labels of the same numbers in a numeric array.  ``fit`` rejects continuous-looking float targets
(scikit-learn's convention); fractional rating scales (0, 0.2, ..., 1) go through ``partial_fit(..., classes=...)``,
which checks every label against that set.  The whole state is numpy arrays and Python ints on the estimator, so
``pickle`` and ``sklearn.clone`` work mid-stream.
"""

from __future__ import annotations

import numbers
import operator
import warnings

import numpy as np
import scipy.linalg
import scipy.sparse.linalg
from sklearn.base import ClassifierMixin, clone
from sklearn.utils import check_random_state
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from . import _core
from ._base import N_JOBS, NONNEG_REAL, POSITIVE_REAL, FastrankEstimator, Interval, KernelMixin, Ranker, StrOptions, \
    in_compute_region, positive_int, ranking_accuracy, require_finite_scores, warn_if_scores_underflow
from ._kernels import _KIND, KernelSpec, by_distinct_rows, row_products
from ._memory import check_dense_memory, densified
from ._problem import centred_in_groups, features_without_group_offsets, require_preferences
from ._progress import progress, resolve_verbose, stage, write_line
from ._sparse import as_csr, issparse
from ._registry import register_estimator
from ._threads import compute_region
from ._validation import _all_finite, _asarray, _not_finite, as_float_matrix, check_group_ids, check_int, \
    check_n_jobs, check_precomputed_kernel, group_index, target_column, unordered_labels
from .exceptions import ConvergenceWarning, user_stacklevel
from .metrics import _declines_groups, _warn_missing_groups

__all__ = ["PRank", "PRankVP", "OAPBPM", "WidrowHoff", "OnlineMPRank"]

_VARIANTS = {"bpm": 0, "bagging": 1, "voted": 2}
# WidrowHoff(eta="auto"): each update removes this fraction of its example's error; of 0.02 ... 1 it gave the lowest
# test mean rank loss on the bundled LETOR sample, standardised (0.706; 0.781 at 0.1, 0.831 at 1; training median 0.75)
_NLMS_STEP = 0.2


def _as_X(X):
    """scipy.sparse rows are validated and densified for this call only, behind the memory guard: the perceptron
    updates touch every weight anyway, and a sparse stream goes through ``partial_fit`` in chunks (same model)."""
    if X is None:
        raise ValueError("X must be an array, got None")
    if issparse(X):
        as_csr(X, "X")
        X = densified(X, "dense copy of this call's sparse rows (pass them through partial_fit in chunks)")
    return as_float_matrix(X)


def _check_labels(y, n_rows, *, label_set_fixed=False):
    """(1-D labels, their ordered classes: sorted, or an ordered categorical's); continuous-looking floats are rejected
    (scikit-learn's classifier convention) unless the ordered label set is fixed (``classes=`` / an ongoing stream),
    where every label is checked against it instead — so e.g. ratings 0, 0.2, ..., 1 work through ``partial_fit``."""
    y_in, y = y, target_column(y)
    if y.ndim != 1:
        raise ValueError(f"y must be 1-D, got shape {y.shape}")
    if y.shape[0] != n_rows:
        raise ValueError(f"Found input variables with inconsistent numbers of samples: [{n_rows}, {y.shape[0]}]")
    if y.dtype.kind == "f" and not np.isfinite(y).all():
        raise _not_finite(y, "y")
    if y.dtype.kind == "c":  # complex values have no order
        raise ValueError(f"y must hold ordered class labels (integers, reals or strings), got dtype {y.dtype}")
    check_group_ids(y, "y", what="label")  # None, NaN, pandas' NA among objects, NaT: with the row
    y = _as_labels(y, "y")
    classes = _sorted_classes(y, "y")  # orderability first: a clear message for mixed types
    # integers are grades also where numpy keeps them as objects (beyond int64), which scikit-learn calls "unknown"
    if not label_set_fixed and not all(isinstance(v, numbers.Integral) for v in classes.tolist()):
        try:
            check_classification_targets(y)
        except ValueError:  # scikit-learn's "Unknown label type: continuous (or unknown) ... classifier" text
            if y.dtype == object:  # objects other than strings and integers (Decimal, Fraction, ...)
                example = next(v for v in classes.tolist() if not isinstance(v, str))
                what = f"objects of type {type(example).__name__} (e.g. {example!r}), neither strings nor integers"
            else:
                example = next((v for v in classes.tolist() if float(v) != round(float(v))), None)
                what = f"continuous values{'' if example is None else f' (e.g. {example!r})'}"
            raise ValueError(f"Unknown label type: y holds {what}: the on-line ordinal learners rank into ordered "
                             "classes; give integer or string grades, fix the ordered label set with "
                             "partial_fit(..., classes=...), or use a ranker of real-valued targets (RankRLS, "
                             "RankSVM)") from None
    return y, _declared_order(y_in, classes)


def _declared_order(values, default):
    """The categories of an ordered pandas categorical ``values`` in their declared order, else ``default``."""
    dtype = getattr(values, "dtype", None)
    if getattr(dtype, "ordered", False) and hasattr(dtype, "categories"):
        return np.array(dtype.categories.tolist())  # numpy dtypes (str, int), as np.unique gives them
    return default


def _label_set(values, name="classes"):
    """The ordered label set ``classes_``: the declared order of an ordered categorical, else the sorted values."""
    order = _declared_order(values, None)
    return _sorted_classes(values, name) if order is None else order


def _as_labels(values, name):
    """``values`` as an array; an object array of real numbers (a pandas object column) as numpy stores the same
    numbers (int64, float64, bool), so that its labels and ``classes_`` are those of a numeric array."""
    values = _asarray(values, name)  # a scipy.sparse matrix refused by name
    if values.dtype == object and all(isinstance(v, numbers.Real) for v in values.flat):
        numeric = np.asarray(values.tolist())
        values = values if numeric.dtype == object else numeric  # ints beyond int64 stay objects
    return values


def _sorted_classes(values, name="classes"):
    try:
        values = _as_labels(values, name)
    except ValueError:  # nested lists of unequal lengths
        values = np.empty((0, 0))
    if values.ndim != 1:  # a string or scalar is no label set; a 2-D one is ambiguous
        raise ValueError(f"{name} must be a 1-D list of the ordered labels, got {values.ndim} dimensions")
    try:  # NaN is the only value not equal to itself
        nan = values.dtype.kind in "fcO" and bool(np.any(values != values))
    except (TypeError, ValueError):  # a value whose comparison is no bool (pandas.NA, an array): not NaN
        nan = False
    if nan:
        raise ValueError(f"{name} contains NaN; class labels must be orderable values (NaN has no place in an order)")
    if values.dtype.kind == "f" and np.isinf(values).any():  # as in y: an infinite label is refused
        raise ValueError(f"{name} contains an infinite value; class labels must be finite")
    try:
        return np.unique(values)
    except (TypeError, ValueError):  # ValueError: an array among the labels has no truth value
        raise unordered_labels(values, name) from None


def _to_ranks(classes, y):
    """1-based positions of the labels ``y`` in ``classes`` (sorted, or in a declared order)."""
    sorter = np.argsort(classes, kind="stable")
    try:
        idx = np.searchsorted(classes, y, sorter=sorter)
    except TypeError:
        idx = None
    if idx is None:  # outside the except clause: no numpy text chained to the message
        check_group_ids(y, "y", what="label")  # a missing label first (score's y is checked here only)
        raise unordered_labels(y, "y", classes)
    idx_c = sorter[np.clip(idx, 0, classes.size - 1)]
    bad = classes[idx_c] != y
    if np.any(bad):
        raise ValueError(f"y contains labels not in classes_ {classes.tolist()!r}: {np.unique(y[bad]).tolist()!r}; "
                         "pass the complete ordered label set as classes= to the first partial_fit call")
    return (idx_c + 1).astype(np.int64)


def _seed_from(random_state):
    return int(check_random_state(random_state).randint(0, 2**62, dtype=np.int64))


# splitmix64 and its inverse, to key blocks of OAP-BPM members (see OAPBPM.member_blocks)
_MASK64 = (1 << 64) - 1
_GOLDEN, _MIX = 0x9E3779B97F4A7C15, ((30, 0xBF58476D1CE4E5B9), (27, 0x94D049BB133111EB))


def _splitmix64(z):
    z = (z + _GOLDEN) & _MASK64
    for shift, mul in _MIX:
        z = ((z ^ (z >> shift)) * mul) & _MASK64
    return z ^ (z >> 31)


def _unxorshift(z, s):
    x = z
    for _ in range(64 // s + 1):
        x = z ^ (x >> s)
    return x & _MASK64


def _splitmix64_inverse(z):
    z = _unxorshift(z, 31)
    for shift, mul in reversed(_MIX):
        z = _unxorshift((z * pow(mul, -1, 1 << 64)) & _MASK64, shift)
    return (z - _GOLDEN) & _MASK64


def _block_seed(seed, first_member):
    """A seed whose member j draws exactly what member ``first_member + j`` draws under ``seed``:
    fastrank keys member j by splitmix64(splitmix64(seed) + j) (cpp/include/fastrank/perceptron.hpp),
    and splitmix64 is a bijection, so the block's seed is splitmix64^-1(splitmix64(seed) + first)."""
    return _splitmix64_inverse((_splitmix64(int(seed)) + int(first_member)) & _MASK64)


def _rank_from_scores(scores, thresholds):
    """Smallest r with s - c(r) < 0 (rank k when no threshold exceeds s), as 1-based ranks."""
    below = (scores[..., None] - thresholds) < 0
    return np.where(below.any(axis=-1), below.argmax(axis=-1) + 1, thresholds.shape[-1] + 1).astype(np.int64)


def _vote(R, v):
    """(sum of the ranks R (p, N) weighted by the counts v (N,), or unweighted while every count is 0; its normaliser),
    the vote H(x) of OAP-VP and PRank-VP (OAP-Bagg: v = 1)."""
    den = int(v.sum())
    return (R @ v, den) if den > 0 else (R.sum(axis=1), R.shape[1])


def _appended(log, values):
    """``log`` (int32, 1-D) followed by ``values`` in amortised O(len(values)) (joining the whole history on every
    call cost O(T^2) over a stream of T examples): ``log`` is the start of a buffer of doubling capacity whose last
    two int32 hold, as one int64, how far it is written.  Only a view that ends there appends in place; a shallow
    copy of the estimator, or the state a failed call restored, copies first, so no other view's entries change."""
    n, k = log.size, values.size
    buffer = log.base
    if not (isinstance(buffer, np.ndarray) and buffer.dtype == np.int32 and buffer.ndim == 1
            and buffer.size - 2 >= n + k and buffer[-2:].view(np.int64)[0] == n
            and log.__array_interface__["data"][0] == buffer.__array_interface__["data"][0]):
        buffer = np.empty(max(2 * (n + k), 1024) + 2, dtype=np.int32)
        buffer[:n] = log
    buffer[n:n + k] = values
    buffer[-2:].view(np.int64)[0] = n + k
    return buffer[:n + k]


class _OnlineOrdinal(ClassifierMixin, FastrankEstimator):
    """The streaming API of the ordinal learners (module docstring).  A subclass defines
    ``_reset_model`` (its zero state), ``_stream`` (one compiled pass over a chunk), ``_finish``
    (the predicting rule from the state) and ``decision_function`` / ``predict``."""

    _parameter_constraints = {"n_epochs": [positive_int()], "shuffle": ["boolean"], "random_state": ["random_state"]}

    def _reset(self, classes, n_features, *, streaming=False):
        if classes.size < 2:
            raise ValueError(f"y has {classes.size} class ({classes.tolist()!r}); need at least 2 distinct labels: "
                             "the on-line ordinal learners rank into k >= 2 ordered classes" + (
                                 " (a first partial_fit batch with fewer labels: pass the complete ordered label set "
                                 "with classes=)" if streaming else ""))
        self._reset_model(classes.size, n_features)
        self.classes_ = classes
        self.n_features_in_ = n_features
        self.seed_ = _seed_from(self.random_state)
        self.n_seen_ = 0  # stream position t (examples processed, over all passes)
        self.n_samples_seen_ = 0  # distinct examples passed to partial_fit (precomputed kernel columns)
        self._losses = np.zeros(0, dtype=np.int32)

    def _check_continuation(self):
        """Refuse to continue a stream whose model set_params has changed in shape since it began."""

    def _append_losses(self, losses):
        self.n_seen_ += losses.size
        self._losses = _appended(self._losses, losses)

    def _finish(self, X=None):
        pass

    def _check_X(self, X, *, reset=False):
        if not reset:
            check_is_fitted(self, "classes_")
        X = _as_X(X)
        if not reset and X.shape[1] != self.n_features_in_ and getattr(self, "_kernel_kind", None) != "precomputed":
            raise ValueError(f"X has {X.shape[1]} features, but {type(self).__name__} is expecting "
                             f"{self.n_features_in_} features as input (fixed by the first fit/partial_fit call)")
        return X

    def fit(self, X, y):
        """Restart the stream and make ``n_epochs`` passes over (X, y).

        With ``shuffle=False`` and ``n_epochs=1`` this is exactly ``partial_fit`` on (X, y) from a fresh state.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The stream's rows, or the (n_samples, n_samples) kernel matrix of the training rows for
            ``kernel="precomputed"``.
        y : array-like of shape (n_samples,)
            Ordered class labels: their sorted distinct values (an ordered categorical's categories in order) are the
            ranks 1..k; at least 2 distinct labels, and continuous-looking floats raise ValueError.

        Returns
        -------
        %(fitted_self)s
        """
        self._validate_params()
        X = self._check_X(X, reset=True)
        y, classes = _check_labels(y, X.shape[0])
        if self._precomputed() and X.shape[0] != X.shape[1]:
            raise ValueError(f"precomputed kernel: fit needs the square (m, m) kernel matrix, got {X.shape}")
        self._reset(classes, X.shape[1])
        ranks = _to_ranks(self.classes_, y)
        rng = np.random.default_rng(self.seed_)
        m = X.shape[0]
        for _ in progress.iterate(range(self.n_epochs), desc=f"{type(self).__name__} passes", unit="pass",
                                  verbose=self.verbose):
            order = rng.permutation(m) if self.shuffle else np.arange(m)
            self._stream(X[order] if self.shuffle else X, ranks[order], order)  # row selections are C-contiguous copies
        self.n_samples_seen_ = m
        self._finish(X)
        return self

    def partial_fit(self, X, y, classes=None):
        """Continue the stream with (X, y), one example at a time in the given order.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The batch's rows.  For a precomputed kernel, column i holds kernel values against the i-th example passed to
            ``partial_fit`` (this batch included), so X needs at least ``n_samples_seen_ + len(X)`` columns.
        y : array-like of shape (n_samples,)
            Ordered labels, each in the label set (a label outside it raises ValueError).
        classes : array-like or None, default=None
            All ordered labels (sorted, or an ordered categorical's categories in order), on the first call; None: the
            first batch's labels fix the label set.  Given on a later call, it must equal ``classes_``.

        Returns
        -------
        %(fitted_self)s
        """
        first = not hasattr(self, "classes_")
        self._validate_params()  # set_params may have changed them since the stream began
        if not first:
            self._check_continuation()
        declared = _declared_order(y, None)
        X = self._check_X(X, reset=first)
        y, y_classes = _check_labels(y, X.shape[0], label_set_fixed=not first or classes is not None)
        if first:
            cls = y_classes if classes is None else _label_set(classes)
        elif classes is not None or declared is not None:  # a label order given again must be the model's
            given, name = (_label_set(classes), "classes") if classes is not None else (declared, "y's categories")
            if not np.array_equal(given, self.classes_):
                raise ValueError(f"{name}={given.tolist()!r} differs from classes_ fixed by the first partial_fit "
                                 f"call: {self.classes_.tolist()!r}")
        ranks = _to_ranks(cls if first else self.classes_, y)
        # WidrowHoff files written before it recorded n_samples_seen_ lack it; only kernels read it
        n0 = 0 if first else getattr(self, "n_samples_seen_", 0)
        if self._precomputed() and X.shape[1] < n0 + X.shape[0]:
            raise ValueError(f"precomputed kernel: partial_fit needs X with at least n_samples_seen_ + len(X) = "
                             f"{n0 + X.shape[0]} columns (kernel values against every example of the stream so far, "
                             f"this batch included), got {X.shape[1]}")
        if first:  # the stream's first state, once the batch has passed every check
            self._reset(cls, X.shape[1], streaming=True)
        self._stream(X, ranks, np.arange(n0, n0 + X.shape[0], dtype=np.int64))
        self.n_samples_seen_ = n0 + X.shape[0]
        self._finish(X)
        return self

    def score(self, X, y, groups=None, sample_weight=None):
        """Pairwise ranking accuracy of ``decision_function(X)`` against the positions of the labels in ``classes_``.

        ``1 - pairwise_disagreement`` as every fastrank ranker scores, not scikit-learn's classification accuracy; the
        paper's own measure is :func:`fastrank.metrics.mean_rank_loss`.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Test rows (for a precomputed kernel, their kernel against the stored examples).
        y : array-like of shape (n_samples,)
            True labels; labels outside ``classes_`` raise ValueError; pairs tied in ``y`` are ignored.
        groups : array-like of shape (n_samples,) or None, default=None
            Query id of each row: only pairs inside a query count.
        sample_weight : array-like of shape (n_samples,) or None, default=None
            Row weights; a pair weighs w_i w_j.

        Returns
        -------
        score : float
            The fraction of pairs ordered correctly (tied scores count half an error).
        """
        check_is_fitted(self, "classes_")
        positions = _to_ranks(self.classes_, target_column(y))
        if groups is None and not _declines_groups(self):
            _warn_missing_groups(self, f"{type(self).__name__}.score")
        return ranking_accuracy(positions, self.decision_function(X), groups, sample_weight)

    @property
    def average_rank_loss_(self):
        """(1/T) sum_t |yhat_t - y_t| over the on-line predictions on the whole stream so far."""
        check_is_fitted(self, "classes_")
        # NaN also where the losses of part of the stream are unknown (a model joined by from_members, continued)
        return float(self._losses.mean()) if self._losses.size and self._losses.size == self.n_seen_ else float("nan")

    def rank_loss_curve(self):
        """Cumulative average rank loss after each example of the stream (the paper's Fig. 2 curve).

        Returns
        -------
        curve : ndarray of shape (n_seen_,)
            Entry t: the mean rank loss of the on-line predictions on the first t + 1 examples; NaN where the losses of
            the stream before it are unknown (a model joined by :meth:`OAPBPM.from_members`).
        """
        check_is_fitted(self, "classes_")
        if self._losses.size != self.n_seen_:
            return np.full(self.n_seen_, np.nan)
        return np.cumsum(self._losses, dtype=np.float64) / np.arange(1, self._losses.size + 1)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = not self._precomputed()  # rows densified per call
        return tags


# ----------------------------------------------------------------------------------------------
# PRank / OAP family
# ----------------------------------------------------------------------------------------------
# the fitted arrays of the linear form (weights) and of the kernel forms (expansion over stored examples)
_FORM_ATTRS = ("members_coef_", "coef_", "vote_coef_", "dual_coef_", "support_vectors_", "support_time_",
               "support_index_", "vote_n_support_")


class _OAPBase(KernelMixin, _OnlineOrdinal):
    """Shared machinery of PRank and OAPBPM (PRank is the one-member, tau = 1 ensemble)."""

    _parameter_constraints = {"budget": [None, positive_int()], "n_jobs": N_JOBS}
    _STATE_DTYPES = {"V": np.int64, "svt": np.int64, "svs": np.int64}  # of the member arrays; float64 otherwise

    def _reset_model(self, k, n_features):
        spec = self._kernel_spec(n_features)
        N = self._members_tau_variant()[0]
        for attr in _FORM_ATTRS:  # a refit with another kernel form keeps none of the previous form's arrays
            self.__dict__.pop(attr, None)
        self._kernel_kind = spec.kind
        self._kernel_args = (spec.gamma, spec.degree, spec.coef0)
        shapes = {"C": (N, k - 1), "V": N, "W": (N, n_features), "A": (N, 0), "svt": 0, "svs": 0,
                  "svX": (0, 0 if spec.precomputed else n_features)}
        # n_estimators = 2**31 - 1 passed the parameter check and met numpy's raw MemoryError (80 GiB on 3 features)
        check_dense_memory(N, 1, "array of the members' thresholds, counts and weights", advice="Lower n_estimators.",
                           n_cols=k + (n_features if spec.kind == "linear" else 0))
        for key, attr in self._state_attrs().items():
            setattr(self, attr, np.zeros(shapes[key], dtype=self._STATE_DTYPES.get(key, np.float64)))

    def _check_continuation(self):
        members, spec = self._members_tau_variant()[0], self._kernel_spec(self.n_features_in_)
        was = (self.members_thresholds_.shape[0], self._kernel_kind, tuple(self._kernel_args))
        if (members, spec.kind, (spec.gamma, spec.degree, spec.coef0)) != was:  # the members' arrays and kernel
            raise ValueError(f"partial_fit continues the stream's {was[0]} member(s) and {was[1]} kernel (gamma, "
                             f"degree, coef0 = {was[2]}), but set_params changed n_estimators or the kernel since; "
                             "call fit to start again with them")

    def _state_attrs(self):
        """{name in the compiled passes' state: the member array holding it}."""
        kernel = {"A": "dual_coef_", "svX": "support_vectors_", "svt": "support_time_", "svs": "support_index_"}
        return {"C": "members_thresholds_", "V": "members_counts_",
                **({"W": "members_coef_"} if self._kernel_kind == "linear" else kernel)}

    def _state(self):
        """Copies of the member arrays, as the compiled passes read and update them."""
        return {k: np.array(getattr(self, a), dtype=self._STATE_DTYPES.get(k, np.float64), order="C")
                for k, a in self._state_attrs().items()}

    def _compiled_pass(self, st, X, ranks, src, *, t0, tau, variant, n_threads, budget):
        """Algorithm 2 (Algorithm 1: one member, tau = 1) over (X, ranks) from state ``st``, which
        it updates; returns the on-line rank losses.  ``src``: the examples' stream columns."""
        k = self.classes_.size
        if self._kernel_kind == "linear":
            return _core.oap_linear_fit(X, ranks, k, tau, self.seed_, t0, _VARIANTS[variant], n_threads, st["W"],
                                        st["C"], st["V"])
        pre = self._kernel_kind == "precomputed"
        losses, st["A"], svX, st["svt"], st["svs"] = _core.oap_kernel_fit(
            X, ranks, np.ascontiguousarray(src, dtype=np.int64), k, tau, self.seed_, t0, _VARIANTS[variant],
            n_threads, 0 if pre else _KIND[self._kernel_kind], *self._kernel_args, pre, budget, st["A"], st["svX"],
            st["svt"], st["svs"], st["C"], st["V"])
        if not pre:
            st["svX"] = svX
        return losses

    @in_compute_region
    def _stream(self, X, ranks, src):
        _, tau, variant = self._members_tau_variant()
        st = self._state()
        losses = self._compiled_pass(st, X, ranks, src, t0=self.n_seen_, tau=tau, variant=variant,
                                     n_threads=check_n_jobs(getattr(self, "n_jobs", None)),
                                     budget=0 if self.budget is None else int(self.budget))
        for k, attr in self._state_attrs().items():
            setattr(self, attr, st[k])
        self._append_losses(losses)

    def _finish(self, X=None):
        # The averaged rule (Algorithm 2, line 16): averaged weights and averaged thresholds.
        self.thresholds_ = self.members_thresholds_.mean(axis=0)
        if self._kernel_kind == "linear":
            with np.errstate(over="ignore", invalid="ignore"):  # refused below, naming the cause
                self.coef_ = self.members_coef_.mean(axis=0)
            # a last update can overflow a member's weights (no score after it shows it), and the sum of the
            # members' finite weights can overflow: the votes' passes never score with it as "bpm"'s do
            if not _all_finite(self.coef_):
                one = self.members_coef_.shape[0] == 1
                raise ValueError(f"the {'' if one else 'summed '}perceptron weights{'' if one else ' of the members'} "
                                 f"overflow float64 (features of magnitude near 1e308{'' if one else ' / n_estimators'}"
                                 "); rescale X")
            if X is not None:  # scores of features near 1e-300 are 0: every row ties, and the passes ranked by that
                warn_if_scores_underflow(self, X, self.coef_)

    # -- prediction --
    def _support_columns(self, X):
        """Precomputed kernel: X's columns of the stored examples (one column per training example)."""
        need = int(self.support_index_.max()) + 1 if self.support_index_.size else 0
        if X.shape[1] < need:
            raise ValueError(f"precomputed kernel: X needs at least {need} columns (one per training "
                             f"example), got {X.shape[1]}")
        return X[:, self.support_index_]

    @in_compute_region
    def _member_scores(self, X, which):
        """which='mean': scores of the averaged rule, (p,); 'sum': N times them, from the summed members (exact sums
        for integer features, as the compiled passes compare them); 'all': every member's score, (p, N)."""
        mean = which != "all"  # the averaged rule's scores tie for identical rows, as the in-memory learners' do
        product = row_products if mean else operator.matmul  # (scipy.sparse X too)
        if self._kernel_kind == "linear":
            with np.errstate(over="ignore", invalid="ignore"):  # refused below, naming the cause
                out = product(X, self.members_coef_.T if not mean else self.coef_ if which == "mean" else
                              self.members_coef_.sum(axis=0))
        else:
            coef = getattr(self.dual_coef_, which)(axis=0)[:, None] if mean else self.dual_coef_.T
            if self._kernel_kind == "precomputed":
                out = product(self._support_columns(X), coef)
            else:  # also right with no stored example yet: the kernel routines return zeros
                spec = KernelSpec(self._kernel_kind, *self._kernel_args)
                n_threads = check_n_jobs(getattr(self, "n_jobs", None))

                def kernel_scores(Z):
                    return spec.predict_rowwise(Z, self.support_vectors_, coef, n_threads)

                out = by_distinct_rows(kernel_scores, X) if mean else kernel_scores(X)
            out = out[:, 0] if mean else out
        return require_finite_scores(self, out)  # predict's ranks come from these scores too

    def _voting(self):
        return self._members_tau_variant()[2] != "bpm"

    def _votes(self, X):
        """(sum of the members' ranks, count-weighted for OAP-VP; its normaliser)."""
        R = _rank_from_scores(self._member_scores(X, "all"), self.members_thresholds_)  # (p, N)
        voted = self._members_tau_variant()[2] == "voted"
        return _vote(R, self.members_counts_.astype(np.int64) if voted else np.ones(R.shape[1], dtype=np.int64))

    def decision_function(self, X):
        """Real-valued scores.

        %(Parameters)s %(X_stored)s %(Returns)s
        scores : ndarray of shape (n_test,)
            The averaged rule's w~.x (PRank, OAP-BPM); for OAP-Bagg, OAP-VP and PRank-VP the vote H(x) (the members'
            or hypotheses' mean rank) on the 1..k scale.
        """
        X = self._check_X(X)
        if not self._voting():
            return self._member_scores(X, "mean")
        H, den = self._votes(X)
        return H / den

    def predict(self, X):
        """Labels: the averaged rule's rank (PRank, OAP-BPM), or the vote H(x) rounded to the nearest rank.

        %(Parameters)s %(X_stored)s %(Returns)s
        labels : ndarray of shape (n_test,)
            Values of ``classes_``; a vote rounds halves up, floor(H + 1/2).
        """
        X = self._check_X(X)
        if not self._voting():  # Algorithm 2, line 16, on the members' sums: the mean's rounding can break a tie
            ranks = _rank_from_scores(self._member_scores(X, "sum"), self.members_thresholds_.sum(axis=0))
        else:
            H, den = self._votes(X)
            ranks = (2 * H + den) // (2 * den)
        return self.classes_[ranks - 1]


@register_estimator
class PRank(_OAPBase):
    """PRank, the perceptron ranking algorithm (Crammer & Singer; Harrington 2003, Algorithm 1).

    Weights w and ordered thresholds c(1) <= ... <= c(k-1), c(k) = +inf; predicts the smallest rank
    r with w.x - c(r) < 0; on a mistake every violated threshold r moves by a(r) = l(r) in {-1, +1}
    (c <- c - a) and w <- w + (sum_r a(r)) x.  Starts from w = 0, c = 0.

    Parameters
    ----------
    %(kernel)s
        The kernel forms keep the representer expansion f(x) = sum_t alpha_t K(x_t, x) with
        alpha_t = sum_r a_t(r) (section 3 end).
    %(gamma)s
    degree : float, default=2
        Polynomial degree.
    %(coef0)s
    budget : int or None, default=None
        Kernel forms only: the expansion keeps only the stream examples of the last ``budget`` rounds (a sliding-window
        truncation in the spirit of Kivinen, Smola & Williamson 2001; memory stays bounded and the result still depends
        only on the stream, not on how it is cut into ``partial_fit`` calls).  None: unbounded.  Ignored for "linear".
    n_epochs : int, default=1
        Passes over the data in ``fit``.
    shuffle : bool, default=False
        Reshuffle the rows before each pass of ``fit``.
    random_state : int, RandomState or None, default=None
        Seed of the shuffles.
    %(verbose)s
    """

    def __init__(self, *, kernel="linear", gamma=None, degree=2, coef0=1.0, budget=None, n_epochs=1,
                 shuffle=False, random_state=None, verbose=0):
        self._store_params(locals())

    def _members_tau_variant(self):
        return 1, 1.0, "bpm"

    @property
    def weights_(self):
        return self.coef_


@register_estimator
class PRankVP(PRank):
    """PRank-VP: one PRank whose intermediate hypotheses vote (Harrington 2003, Sect. 3.1 and 4.1;
    the voted perceptron of Freund & Schapire applied to PRank).

    Training is exactly :class:`PRank` (the same compiled update).  Update i = 1..u creates the hypothesis h_i (weights
    w_i, thresholds c_i; h_0 is w = 0, c = 0), which survives v_i examples ranked correctly before the next update (over
    the whole stream).  ``decision_function`` is the vote H(x) = sum_i v_i h_i(x) / sum_i v_i with h_i(x) =
    min{r : w_i . x - c_i(r) < 0} (the plain mean while every v_i = 0); ``predict`` rounds it to the nearest rank,
    halves up, as OAP-VP does.  ``average_rank_loss_`` and ``rank_loss_curve()`` are the underlying PRank's losses.

    Memory: one weight vector (linear kernel) or one threshold vector and a support count (kernel forms) per update;
    kernel forms replay the updates one at a time to record the thresholds (O(u^2) kernel evaluations for u updates).

    There is no ``budget``: a sliding window would change a hypothesis between updates.

    Parameters
    ----------
    %(kernel)s %(gamma)s
    degree : float, default=2
        Polynomial degree.
    %(coef0)s
    n_epochs : int, default=1
        Passes over the data in ``fit``.
    shuffle : bool, default=False
        Reshuffle the rows before each pass of ``fit``.
    random_state : int, RandomState or None, default=None
        Seed of the shuffles.
    %(verbose)s

    Attributes
    ----------
    vote_counts_ : ndarray of int of shape (u + 1,)
        Survival times v_0..v_u.
    vote_thresholds_ : ndarray of shape (u + 1, k - 1)
        Thresholds c_i.
    vote_coef_ : ndarray of shape (u + 1, n_features)
        Weights w_i (linear kernel only).
    vote_n_support_ : ndarray of int of shape (u + 1,)
        Kernel forms: h_i uses the first ``vote_n_support_[i]`` entries of ``support_vectors_`` / ``dual_coef_``.
    """

    budget = None  # not a parameter: see the class docstring

    def __init__(self, *, kernel="linear", gamma=None, degree=2, coef0=1.0, n_epochs=1, shuffle=False,
                 random_state=None, verbose=0):
        self._store_params(locals())

    def _reset_model(self, k, n_features):
        super()._reset_model(k, n_features)
        self.vote_counts_ = np.zeros(1, dtype=np.int64)
        self.vote_thresholds_ = np.zeros((1, k - 1))
        if self._kernel_kind == "linear":
            self.vote_coef_ = np.zeros((1, n_features))
        else:
            self.vote_n_support_ = np.zeros(1, dtype=np.int64)

    def _stream(self, X, ranks, src):
        t0, before = self.n_seen_, self._state()  # the state before this chunk, for the replay
        super()._stream(X, ranks, src)  # the whole chunk in one compiled pass
        # PRank updates exactly on its mistakes (Algorithm 1, line 2)
        upd = np.flatnonzero(self._losses[self._losses.size - X.shape[0]:] > 0)
        counts = np.diff(np.concatenate([[-1], upd, [X.shape[0]]])) - 1  # correct predictions between updates
        linear = self._kernel_kind == "linear"
        new_c = np.empty((upd.size, self.classes_.size - 1))
        new_h = np.empty((upd.size, X.shape[1])) if linear else np.empty(upd.size, dtype=np.int64)
        for i, p in enumerate(upd):
            # the same compiled PRank step, one example at a time from the state before it
            self._compiled_pass(before, np.ascontiguousarray(X[p:p + 1]), np.ascontiguousarray(ranks[p:p + 1]),
                                src[p:p + 1], t0=t0 + int(p), tau=1.0, variant="bpm", n_threads=1, budget=0)
            new_c[i] = before["C"][0]
            new_h[i] = before["W"][0] if linear else before["svt"].size
        self.vote_counts_ = np.concatenate([self.vote_counts_[:-1], [self.vote_counts_[-1] + counts[0]],
                                            counts[1:]]).astype(np.int64)
        self.vote_thresholds_ = np.vstack([self.vote_thresholds_, new_c])
        hypotheses = "vote_coef_" if linear else "vote_n_support_"  # (u + 1, d) weights or (u + 1,) support counts
        setattr(self, hypotheses, np.concatenate([getattr(self, hypotheses), new_h]))

    @in_compute_region
    def _hypothesis_scores(self, X):
        """Scores w_i . x of every hypothesis, (p, u + 1)."""
        if self._kernel_kind == "linear":
            with np.errstate(over="ignore", invalid="ignore"):  # refused below, naming the cause
                return require_finite_scores(self, np.asarray(X @ self.vote_coef_.T))  # the votes' ranks come from them
        # f_i(x) = sum over the first n_i support entries of alpha_s K(x_s, x): prefix sums
        if self._kernel_kind == "precomputed":
            K = self._support_columns(X)
        else:
            spec = KernelSpec(self._kernel_kind, *self._kernel_args)
            K = spec.cross_rowwise(X, self.support_vectors_, check_n_jobs(None))
        pref = np.concatenate([np.zeros((K.shape[0], 1)), np.cumsum(K * self.dual_coef_[0], axis=1)], axis=1)
        return pref[:, self.vote_n_support_]

    def _voting(self):
        return True

    def _votes(self, X):
        v = self.vote_counts_
        H = np.empty(X.shape[0], dtype=np.int64)
        # blocks of rows: the (rows, hypotheses, k - 1) comparison stays small
        step = max(1, int(4_000_000 // max(1, v.size * max(1, self.classes_.size - 1))))
        for lo in range(0, X.shape[0], step):
            R = _rank_from_scores(self._hypothesis_scores(X[lo:lo + step]), self.vote_thresholds_)  # (b, u + 1)
            H[lo:lo + step], den = _vote(R, v)
        return H, den


@register_estimator
class OAPBPM(_OAPBase):
    """OAP-BPM: Online Aggregate PRank - Bayes Point Machine (Harrington 2003, Algorithm 2, Sect. 3.1).

    ``n_estimators`` (N) PRank members run in parallel; for every example t and member j an
    independent Bernoulli(tau) draw b(j, t) decides whether member j trains on it.

    Parameters
    ----------
    n_estimators : int, default=100
        The number N of members.
    tau : float in (0, 1], default=0.3
        The training probability.
    variant : {"bpm", "bagging", "voted"}, default="bpm"
        "bpm" (Algorithm 2) predicts with the averaged weights w~ = sum_j w_j / N and thresholds c~ = sum_j c_j / N
        (averaging keeps their order); "bagging" (OAP-Bagg) with H(x) = sum_j h_j(x) / N, the members' mean rank;
        "voted" (OAP-VP) with H(x) = sum_j v_j h_j(x) / sum_j v_j, v_j the number of correct predictions member j made
        on the examples presented to it (the plain mean before any).  ``predict`` rounds that H (the
        ``decision_function``) to the nearest rank, halves up: floor(H + 1/2), always within 1..k.
    %(kernel)s
        Each member has its own coefficients on a shared list of stored examples (those on which any member updated).
    %(gamma)s
    degree : float, default=2
        Polynomial degree.
    %(coef0)s
    budget : int or None, default=None
        As for :class:`PRank`.
    n_epochs : int, default=1
        Passes over the data in ``fit``.
    shuffle : bool, default=False
        Reshuffle the rows before each pass of ``fit``.
    random_state : int, RandomState or None, default=None
        Fixes the Bernoulli draws (counter-based splitmix64 hashing of (seed, j, t)) and the shuffles.
    %(n_jobs)s
        Threads run over the members; the GIL is released and the model never depends on it.
    %(verbose)s
    """

    def __init__(self, n_estimators=100, tau=0.3, *, variant="bpm", kernel="linear", gamma=None, degree=2,
                 coef0=1.0, budget=None, n_epochs=1, shuffle=False, random_state=None, n_jobs=None, verbose=0):
        self._store_params(locals())

    _parameter_constraints = {"n_estimators": [positive_int()], "tau": [Interval(numbers.Real, 0, 1, closed="right")],
                              "variant": [StrOptions(set(_VARIANTS))]}

    def _members_tau_variant(self):
        return int(self.n_estimators), float(self.tau), self.variant

    # -- member blocks: the ensemble trained as independent streams (e.g. fastrank.dask) --
    def member_blocks(self, n_blocks, classes, n_features):
        """Untrained OAP-BPMs holding consecutive blocks of this ensemble's members.

        Each block is trained as a separate stream (``partial_fit`` on the same rows in the same order) and the blocks
        are joined by :meth:`from_members` into exactly the model ``fit`` gives (``shuffle=False``, linear kernel): a
        block's seed (:func:`_block_seed`) makes its members draw what the ensemble's members draw.

        Parameters
        ----------
        n_blocks : int
            The number of blocks (at most ``n_estimators``).
        classes : array-like
            All ordered labels of the stream.
        n_features : int
            The number of features of the stream.

        Returns
        -------
        blocks : list of OAPBPM
            Untrained, in member order.
        """
        self._validate_params()
        if self.kernel != "linear":
            raise ValueError("member blocks need the linear kernel (kernel members share a support list)")
        N = int(self.n_estimators)
        classes = _label_set(classes)
        seed = _seed_from(self.random_state)
        bounds = np.linspace(0, N, min(check_int(n_blocks, "n_blocks", low=1), N) + 1).round().astype(int)
        n_features = check_int(n_features, "n_features", low=1)
        blocks = []
        for first, stop in zip(bounds[:-1], bounds[1:]):
            block = clone(self).set_params(n_estimators=int(stop - first))
            block._reset(classes, n_features)
            block.seed_ = _block_seed(seed, first)
            block.ensemble_seed_ = seed
            blocks.append(block)
        return blocks

    @classmethod
    def from_members(cls, blocks):
        """The ensemble of trained member blocks.

        ``average_rank_loss_`` is not available (NaN): the ensemble's own on-line prediction needs every member at every
        step.

        Parameters
        ----------
        blocks : list of OAPBPM
            Every block of one :meth:`member_blocks` call, in member order, each trained on the same stream.

        Returns
        -------
        estimator : OAPBPM
            The joined ensemble.
        """
        if not isinstance(blocks, (list, tuple)) or not all(isinstance(b, cls) and hasattr(b, "ensemble_seed_")
                                                             for b in blocks):
            raise TypeError(f"blocks must be a list of the {cls.__name__} blocks made by member_blocks")
        if len(blocks) == 0:
            raise ValueError("from_members needs at least one trained member block (made by member_blocks)")
        first, start = blocks[0], 0
        for b in blocks:  # a block's seed says which members it holds (_block_seed): none skipped or reordered
            if (b.seed_ != _block_seed(first.ensemble_seed_, start) or b.n_seen_ != first.n_seen_
                    or b.n_features_in_ != first.n_features_in_ or not np.array_equal(b.classes_, first.classes_)):
                raise ValueError("from_members joins every block of one member_blocks call, in member order, each "
                                 "trained by partial_fit on the same stream (same classes, features, examples seen)")
            start += int(b.n_estimators)
        est = cls(**{**first.get_params(deep=False), "n_estimators": start})  # start: all blocks' members
        for attr in ("classes_", "n_features_in_", "_kernel_kind", "_kernel_args", "n_seen_", "n_samples_seen_"):
            setattr(est, attr, getattr(first, attr))
        est.seed_ = first.ensemble_seed_
        for attr in est._state_attrs().values():  # the member arrays
            setattr(est, attr, np.concatenate([getattr(b, attr) for b in blocks]))
        est._losses = np.zeros(0, dtype=np.int32)
        est._finish()
        return est


# ----------------------------------------------------------------------------------------------
# Widrow-Hoff
# ----------------------------------------------------------------------------------------------
@register_estimator
class WidrowHoff(_OnlineOrdinal):
    """Widrow-Hoff (LMS) on-line least-squares regression on the ranks (Harrington 2003, section 4).

    s = w.x + b; after predicting, w <- w + eta (r - s) x and b <- b + eta (r - s) with r the rank (1..k) of the label;
    predictions round s to the nearest rank, clipped to 1..k.  An update multiplies its own example's error by
    1 - eta (||x||^2 + 1), so a fixed eta >= 2 / (||x||^2 + 1) diverges (:class:`fastrank.exceptions.ConvergenceWarning`
    when a row of X allows it, an error on overflow): eta = 0.1 diverges on 136 standardised features.

    Parameters
    ----------
    eta : float > 0 or "auto", default="auto"
        A float is the fixed step; "auto" is normalised LMS, the step 0.2 / (||x_t||^2 + fit_intercept), which
        multiplies its example's error by 0.8 (never overshoots) whatever the feature scale and however the stream is
        cut into ``partial_fit`` calls.
    fit_intercept : bool, default=True
        Learn b (else b = 0).
    n_epochs : int, default=1
        Passes over the data in ``fit``.
    shuffle : bool, default=False
        Reshuffle the rows before each pass of ``fit``.
    random_state : int, RandomState or None, default=None
        Seed of the shuffles.
    %(verbose)s
    """

    def __init__(self, eta="auto", *, fit_intercept=True, n_epochs=1, shuffle=False, random_state=None, verbose=0):
        self._store_params(locals())

    _parameter_constraints = {"eta": [POSITIVE_REAL, StrOptions({"auto"})], "fit_intercept": ["boolean"]}

    def _reset_model(self, k, n_features):
        self.coef_ = np.zeros(n_features)
        self.intercept_ = 0.0

    def _stream(self, X, ranks, src):
        w = np.array(self.coef_, dtype=np.float64)
        auto = isinstance(self.eta, str)
        if not auto and X.shape[0]:
            with np.errstate(over="ignore"):
                largest = float(np.max(np.einsum("ij,ij->i", X, X))) + bool(self.fit_intercept)
            if float(self.eta) * largest >= 2.0:  # that row's update multiplies its error by 1 - eta (||x||^2 + 1)
                warnings.warn(f"WidrowHoff: eta={float(self.eta):.3g} is at least 2 / (||x||^2 + "
                              f"{int(self.fit_intercept)}) = {2.0 / largest:.3g} for the largest row of X: its updates "
                              "overshoot and the weights may diverge; use eta='auto' (normalised LMS) or a smaller eta",
                              ConvergenceWarning, stacklevel=user_stacklevel())
        losses, b = _core.widrow_hoff_fit(X, ranks, self.classes_.size, _NLMS_STEP if auto else float(self.eta),
                                          bool(self.fit_intercept), w, float(self.intercept_), normalized=auto)
        self.coef_, self.intercept_ = w, float(b)
        self._append_losses(losses)

    def decision_function(self, X):
        """The regression score w.x + b on the rank scale 1..k.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_test, n_features)
            Rows to score.

        Returns
        -------
        scores : ndarray of shape (n_test,)
            The score w.x + b.
        """
        return row_products(self._check_X(X), self.coef_) + self.intercept_

    def predict(self, X):
        """Labels: the score rounded to the nearest rank (halves up), clipped to 1..k.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_test, n_features)
            Rows to label.

        Returns
        -------
        labels : ndarray of shape (n_test,)
            Values of ``classes_``.
        """
        r = np.clip(np.floor(self.decision_function(X) + 0.5), 1, self.classes_.size).astype(np.int64)
        return self.classes_[r - 1]


# ----------------------------------------------------------------------------------------------
# On-line MPRank
# ----------------------------------------------------------------------------------------------
def _group_sqrt_laplacian(A, gi):
    """St A for St = blockdiag(sqrt(n_q / m) (I - 1 1^T / n_q)), rows of A in the caller's order."""
    A = np.asarray(A, dtype=np.float64)
    scale = np.sqrt(gi.sizes / A.shape[0])[gi.codes]  # sqrt(n_q / m) of each row's group
    return scale.reshape((-1,) + (1,) * (A.ndim - 1)) * centred_in_groups(A, gi)


@register_estimator
class OnlineMPRank(KernelMixin, Ranker):
    """On-line (gradient) MPRank (Cortes, Mohri & Rastogi, section 2.5).

    Solves min ||w||^2 + C/m^2 sum_{i,j} ((h(x_j) - h(x_i)) - (y_j - y_i))^2 (eq. 15) through its dual (eq. 16) without
    a matrix inversion: with the centred kernel Kt = H K H and yt = y - mean(y), "sequential" (the paper's pseudo-code)
    sweeps the points one by one, a_i <- a_i + eta [2 (yt_i - (Kt a)_i) - (m/C) a_i], and "gradient" takes full steps
    a <- a + eta [2 (yt - Kt a) - (m/C) a].  Passes (sweeps over the m points) stop when that step direction, the dual's
    gradient g = 2 B (a* - a) with B = Kt + m/(2C) I, is below 2 ``tol`` |Kt a| (it bounds the training predictions'
    error by half its norm), or C |Kt g| / m is below ``tol`` |Kt a| (a bound that leaves out the parts of a no
    prediction sees, which decay slowly with a linear kernel of few features and a large C), or after ``max_iter``
    passes with :class:`fastrank.exceptions.ConvergenceWarning` (``n_iter_``, ``converged_``, ``cost_history_``: the
    primal cost of eq. 15 after each pass).  The fixed point is eq. 13, a = (Kt + m/(2C) I)^-1 yt: the model of
    ``fastrank.MPRank`` (RankRLS, alpha = m^2 / (2C)); the training predictions come within about ``tol`` of its
    (relative).  The paper stops when the cost changes by less than 1e-4: on nearly collinear features that was 9.5e-2
    away from the fixed point, as slow passes change the cost little.  With the linear kernel and fewer features than
    points, Kt = Xc Xc^T for the centred features Xc is never formed: the passes keep w = Xc^T a (the same iterates to
    rounding, O(m d) time each and no m x m matrix).

    ``predict(x) = sum_i a_i (K(x, x_i) - mean_k K(x, x_k))`` (eq. 13): only differences of scores are meaningful;
    ``y_mean_`` puts them on the scale of y.  ``score`` is the pairwise ranking accuracy.  ``partial_fit`` appends
    points and continues from the current coefficients (new points start at 0), iterating over all points kept so far.

    Parameters
    ----------
    C : float > 0, default=1.0
        The weight of the pair loss.
    %(kernel)s %(gamma)s %(degree)s %(coef0)s
    eta : float > 0 or None, default=None
        None picks a safe step: 1 / (2 max_i Kt_ii + m/C) (sequential; exact coordinate steps for a constant diagonal)
        or 1 / (2.2 lambda_max(Kt) + m/C) with lambda_max from power iteration (gradient).
    algorithm : {"sequential", "gradient"}, default="sequential"
        The update rule above.
    max_iter : int, default=1000
        The pass limit.
    tol : float, default=1e-4
        The stop rule: the bound on the training predictions' error above, relative to their norm.
    %(n_jobs)s
        Threads of the kernel evaluations.
    %(verbose)s
        Reports the passes' duration and number, the final cost and convergence.
    """

    _sparse_input = True  # rows densified per call (see _as_X)

    def __init__(self, C=1.0, *, kernel="linear", gamma=None, degree=3, coef0=1.0, eta=None,
                 algorithm="sequential", max_iter=1000, tol=1e-4, n_jobs=None, verbose=0):
        self._store_params(locals())

    _parameter_constraints = {"C": [POSITIVE_REAL], "eta": [None, POSITIVE_REAL],
                              "algorithm": [StrOptions({"sequential", "gradient"})],
                              "max_iter": [positive_int(low=0)], "tol": [NONNEG_REAL], "n_jobs": N_JOBS}

    def _solve(self, X, y, alpha0, groups, spec):
        """Iterate from ``alpha0`` on the points (X, y); only pairs inside a group count with ``groups``."""
        m = X.shape[0]  # a kernel's work: its m x m entries
        n_threads = check_n_jobs(self.n_jobs) if spec.linear else self._kernel_threads(
            m * m, 0 if spec.precomputed else X.shape[1])
        with compute_region(n_threads):  # fastrank's threads and BLAS's share the cores
            return self._solve_in_region(X, y, alpha0, groups, spec, n_threads)

    def _solve_in_region(self, X, y, alpha0, groups, spec, n_threads):
        gi = group_index(groups, X.shape[0])
        require_preferences(y, gi, "OnlineMPRank")
        m = X.shape[0]
        # linear: Kt below is (S X)(S X)^T (S = H, or St with groups), the same from columns centred in every group
        # (where a large common or query-level offset would cancel digits in S (X X^T) S); X^T (S a) likewise
        Xk = features_without_group_offsets(X, gi) if spec.linear and not issparse(X) else X
        # fewer features than points: the passes run on the centred features Xc = S Xk (Kt = Xc Xc^T, never formed),
        # O(m d) each instead of O(m^2)
        features = spec.linear and Xk.shape[1] < m
        if features:
            with np.errstate(over="ignore", invalid="ignore"):  # norms near 1e308: refused below
                Xc = np.ascontiguousarray(_group_sqrt_laplacian(Xk, gi))
                diag = np.einsum("ij,ij->i", Xc, Xc)  # Kt's diagonal; its largest entry is the largest |Kt|
            Kt = scipy.sparse.linalg.LinearOperator((m, m), matvec=lambda v: Xc @ (Xc.T @ v), dtype=np.float64)
            overflow, largest = not _all_finite(diag), lambda: np.einsum("ij,ij->i", Xk, Xk).max()
        else:
            # Peak: K, the centred Kt and the temporaries of (Kt + Kt.T) / 2 and its Fortran copy (the
            # C++ iteration works on that copy): 5 m x m matrices.
            check_dense_memory(m, 5, "kernel matrix of OnlineMPRank (and its centred copies)")
            K = check_precomputed_kernel(X) if spec.precomputed else spec.train(Xk, n_threads)
            with np.errstate(over="ignore", invalid="ignore"):  # entries near 1e308 (numpy's warnings): refused below
                if groups is None:
                    rmean = K.mean(axis=1)
                    Kt = K - rmean[:, None] - rmean[None, :] + rmean.mean()
                else:
                    # Pairs inside groups (as fastrank.MPRank with groups): L = blockdiag(n_q I - 1 1^T) and
                    # alpha = m^2 / (2C), i.e. (St K St + m/(2C) I) a = St y with St = blockdiag(sqrt(n_q / m)
                    # (I - 1 1^T / n_q)) -- the paper's H K H when there is one group -- and A = St a.
                    Kt = _group_sqrt_laplacian(_group_sqrt_laplacian(K, gi).T, gi)
                Kt = np.asfortranarray((Kt + Kt.T) / 2)
            diag = np.diag(Kt)
            overflow, largest = not _all_finite(Kt), lambda: np.abs(K).max()  # one threaded pass, no m x m temporary
        if overflow:
            raise ValueError(f"OnlineMPRank: the centred kernel matrix overflows float64 (largest |K| = "
                             f"{float(largest()):.3g}); rescale X or the kernel")
        ymean = float(y.mean())
        yt = np.ascontiguousarray(y - ymean if groups is None else _group_sqrt_laplacian(y, gi))
        C = float(self.C)
        if not np.isfinite(m / C):  # the ridge m/C of every update: inf * 0 made the coefficients NaN
            raise ValueError(f"OnlineMPRank: C={self.C!r} is too small for {m} points (m/C overflows float64); use a "
                             "larger C")
        sequential = self.algorithm == "sequential"
        if self.eta is not None:
            eta = float(self.eta)
            # the passes minimise a^T Kt a - 2 yt^T a + m / (2C) a^T a: a step beyond 2 / (its curvature) oscillates
            # at a constant cost (and "converged" there) or diverges without overflowing for many passes
            if sequential:
                lam = np.max(diag)
            elif features:  # lambda_max(Xc Xc^T) = lambda_max(Xc^T Xc), d x d
                lam = np.linalg.eigvalsh(Xc.T @ Xc)[-1]
            else:
                try:
                    lam = scipy.sparse.linalg.eigsh(Kt, k=1, which="LA", tol=1e-10, return_eigenvectors=False)[0]
                except scipy.sparse.linalg.ArpackError:  # Kt = 0 (all rows alike) or no convergence: dense, rare
                    lam = scipy.linalg.eigvalsh(Kt, subset_by_index=[m - 1, m - 1])[0]
            curvature = 2.0 * float(lam) + m / C
            if eta * curvature >= 2.0 * (1.0 - 1e-9):
                raise ValueError(f"OnlineMPRank: eta={eta:.6g} is at or beyond the step that keeps the "
                                 f"{self.algorithm} passes stable, 2 / (2 lambda_max + m / C) = {2.0 / curvature:.6g} "
                                 "(lambda_max: of the centred kernel matrix, its diagonal for 'sequential'); "
                                 "use a smaller eta, or eta=None for the automatic step")
        elif sequential:
            eta = 1.0 / (2.0 * max(float(np.max(diag)), 0.0) + m / C)
        else:
            v = np.random.default_rng(0).normal(size=m)
            lam = 0.0
            with np.errstate(over="ignore", invalid="ignore"):  # a non-finite lam is refused below as eta
                for _ in range(30):
                    u = Kt @ v
                    nrm = np.linalg.norm(u)
                    if np.isinf(nrm):  # sum u_i^2 beyond float64 (|Kt| ~ 1e200): the norm of u scaled to max 1
                        big = float(np.abs(u).max())
                        nrm = big * np.linalg.norm(u / big)
                    if nrm == 0:
                        break
                    lam = float(v @ u / (v @ v))
                    v = u / nrm
            eta = 1.0 / (2.2 * max(lam, 0.0) + m / C)
        if not (np.isfinite(eta) and eta > 0):
            largest = np.max(diag) if features else np.abs(Kt).max()
            raise ValueError(f"OnlineMPRank: no usable step size (eta={eta!r}) for this kernel matrix (its entries "
                             f"are too large, largest |Kt| = {float(largest):.3g}); rescale X or the kernel, "
                             "or pass eta")
        with np.errstate(over="ignore"):
            spread = np.abs(yt).max() ** 2 * m  # bounds sum_i yt_i^2, the scale of the pair cost
        if not np.isfinite(spread):
            raise ValueError(f"OnlineMPRank: the squared differences of y overflow float64 (largest centred |y| = "
                             f"{float(np.abs(yt).max()):.3g}); rescale y")
        if not np.isfinite(2.0 * C / m * float(yt @ yt)):  # the pair cost at a = 0, which every pass lowers
            raise ValueError(f"OnlineMPRank: C={self.C!r} is too large for these targets (the pair cost (2C/m) "
                             "sum_i yt_i^2 overflows float64); use a smaller C or rescale y")
        # the passes in units of a power of two at max |yt|, scaled back (a is linear in yt, the cost quadratic; all
        # exact): the cost of targets near 1e-170 underflowed to 0, which the stopping rule read as converged
        exponent = int(np.frexp(np.max(np.abs(yt), initial=0.0))[1])
        alpha = np.ldexp(np.array(alpha0, dtype=np.float64), -exponent)
        with stage(f"OnlineMPRank {self.algorithm} passes (m={m}, eta={eta:.3g})", verbose=self.verbose):
            solve, operand = (_core.mprank_online_linear, Xc) if features else (_core.mprank_online, Kt)
            n_iter, converged, costs = solve(operand, np.ldexp(yt, -exponent), C, eta, sequential, int(self.max_iter),
                                             float(self.tol), alpha)
        alpha, costs = np.ldexp(alpha, exponent), np.ldexp(np.asarray(costs), 2 * exponent)
        if resolve_verbose(self.verbose):
            write_line(f"[fastrank] OnlineMPRank: {int(n_iter)} passes, cost "
                       f"{float(costs[-1]) if len(costs) else 0.0:.10g}, converged={bool(converged)}")
        if not converged:
            warnings.warn(
                f"OnlineMPRank stopped after max_iter={int(self.max_iter)} passes before the relative gradient "
                f"reached tol={self.tol}; increase max_iter or tol.", ConvergenceWarning, stacklevel=user_stacklevel())
        self.dual_coef_ = alpha
        # the expansion f(x) = sum_i expansion_coef_i K(x, x_i) (eq. 13: H a without groups)
        self.expansion_coef_ = alpha - alpha.mean() if groups is None else _group_sqrt_laplacian(alpha, gi)
        self.eta_, self.n_iter_, self.converged_, self.cost_history_ = eta, n_iter, bool(converged), costs
        self._y, self._spec = y, spec
        self._groups = None if groups is None else np.asarray(groups)
        self.y_mean_, self.n_features_in_, self.X_fit_ = ymean, X.shape[1], X
        self.coef_ = Xk.T @ self.expansion_coef_ if spec.linear else None
        if spec.linear:
            warn_if_scores_underflow(self, X, self.coef_)
        return self

    def fit(self, X, y, groups=None):
        """Iterate to the MPRank solution on (X, y) from a = 0.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training rows, or the (n_samples, n_samples) kernel matrix for ``kernel="precomputed"``.
        y : array-like of shape (n_samples,)
            Real-valued scores.
        groups : array-like of shape (n_samples,) or None, default=None
            Query id of each row: only pairs inside a query count, as in :class:`fastrank.MPRank`.

        Returns
        -------
        %(fitted_self)s
        """
        self._validate_params()
        X = _as_X(X)
        if X.shape[0] < 2:
            raise ValueError(f"OnlineMPRank needs at least 2 samples (a ranking compares pairs), got n_samples="
                             f"{X.shape[0]}")
        y = self._check_target_vector(y, X.shape[0])
        return self._solve(X, y, np.zeros(X.shape[0]), groups, self._kernel_spec(X.shape[1]))

    def partial_fit(self, X, y, groups=None):
        """Append (X, y) to the points kept so far and continue the iteration (warm start).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The new rows.  Before any fit the call is ``fit(X, y, groups)``; after one, a precomputed kernel raises
            ValueError (call ``fit`` with the full matrix).
        y : array-like of shape (n_samples,)
            Their scores.
        groups : array-like of shape (n_samples,) or None, default=None
            Their query ids: given exactly when the model was fitted with groups (else ValueError).

        Returns
        -------
        %(fitted_self)s
        """
        if not hasattr(self, "X_fit_"):
            return self.fit(X, y, groups)
        self._validate_params()  # set_params may have changed them since fit
        if (groups is None) != (getattr(self, "_groups", None) is None):
            raise ValueError("partial_fit must get groups exactly when the model was fitted with groups")
        if self._spec.precomputed:
            raise ValueError("partial_fit is not available with a precomputed kernel; call fit with the full matrix")
        if self._kernel_spec(self.n_features_in_)._args() != self._spec._args():  # the iteration's kernel matrix
            raise ValueError(f"partial_fit continues the kernel of fit ({self._spec.kind}, gamma={self._spec.gamma:g}, "
                             f"degree={self._spec.degree:g}, coef0={self._spec.coef0:g}), but set_params changed the "
                             "kernel parameters since; call fit to start again with them")
        X = self._check_predict_X(_as_X(X))
        y = self._check_target_vector(y, X.shape[0])
        if groups is not None:
            group_index(groups, X.shape[0])  # one id per row of this batch, checked before the ids are joined
            # and against fit's ids as they are: np.concatenate read the int id 1 and the str "1" as one query
            joined = np.concatenate([np.asarray(self._groups, dtype=object), np.asarray(groups, dtype=object)])
            group_index(joined, joined.size)
        return self._solve(np.ascontiguousarray(np.vstack([self.X_fit_, X])), np.concatenate([self._y, y]),
                           np.concatenate([self.dual_coef_, np.zeros(X.shape[0])]),
                           None if groups is None else np.concatenate([self._groups, np.asarray(groups)]), self._spec)

    def predict(self, X):
        """Ranking scores h(x) of eq. 13.

        %(Parameters)s %(X_predict)s %(Returns)s
        scores : ndarray of shape (n_test,)
            Higher ranks higher; defined up to a constant (no intercept).
        """
        check_is_fitted(self, "dual_coef_")
        X = self._check_predict_X(_as_X(X))
        # identical rows tie (the measures count a tie 1/2): products in a fixed order per row, a kernel row once per
        # distinct row (KernelMixin._expansion_predict)
        if self._spec.linear:
            return row_products(X, self.coef_)
        if self._spec.precomputed:
            return row_products(X, self.expansion_coef_)
        n_threads, blas = self._prediction_threads(X.shape[0])
        with compute_region(n_threads, blas):
            return by_distinct_rows(lambda Z: self._spec.cross(Z, self.X_fit_, n_threads) @ self.expansion_coef_, X)
