"""The base every fastrank learner stands on: :class:`FastrankEstimator` (parameter constraints declared once per family
as a ``_parameter_constraints`` dict of scikit-learn's ``Interval`` / ``StrOptions``, checked by ``_validate_params``
before anything reaches the compiled core; integers bounded by the C++ ``int`` range, so an out-of-range value is a
``ValueError`` naming the parameter; the shared parameter descriptions :data:`fastrank._docs.PARAM_DOCS` filled into
the class docstrings and their methods), :class:`Ranker` (scikit-learn regressor-style rankers with the one
pairwise ``score`` and the prediction-input checks) and :class:`KernelMixin` (the four kernel parameters, resolved
into a ``KernelSpec``)."""

from __future__ import annotations

import contextvars
import functools
import inspect
import numbers
import warnings

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils._param_validation import Interval, InvalidParameterError, StrOptions, validate_parameter_constraints

from ._docs import fill_param_docs
from ._kernels import KernelSpec, by_distinct_rows, predict_basis, resolve_kernel, row_products
from ._problem import check_features, crucial_pairs
from ._progress import progress
from ._sparse import issparse
from ._threads import compute_region, kernel_blas_threads, threads_for_kernel
from ._validation import (INT_MAX, as_targets, check_alphas, check_n_jobs, check_precomputed_kernel,
                          group_index, target_column)
from .exceptions import ConstantModelWarning, user_stacklevel
from .metrics import (_declines_groups, _over_outputs, _warn_missing_groups, pairwise_disagreement,
                      warn_unrouted_groups)

__all__ = ["FastrankEstimator", "Ranker", "KernelMixin", "ranking_accuracy", "Interval", "StrOptions", "positive_int",
           "NONNEG_REAL", "POSITIVE_REAL", "N_JOBS", "crucial_pairs", "c_path", "feature_names",
           "warn_if_constant", "warn_if_scores_underflow"]


def positive_int(high=INT_MAX, low=1):
    """Integers in ``[low, high]``; the default upper bound is what a C++ ``int`` holds."""
    return Interval(numbers.Integral, low, high, closed="both")


NONNEG_REAL = Interval(numbers.Real, 0, None, closed="left")
POSITIVE_REAL = Interval(numbers.Real, 0, None, closed="neither")
# resolved by ``_validation.check_n_jobs`` (None, -1 = every core, k threads)
N_JOBS = [None, Interval(numbers.Integral, -INT_MAX, INT_MAX, closed="both")]


def c_path(Cs, kernel, name, verbose, params):
    """``Cs`` as a flat float64 array and its indices in increasing order (with progress per value): the visiting order
    of the warm-started linear paths ``ranksvm_path`` and ``svrank_path``, their other model parameters ``params``."""
    if "C" in params:
        raise TypeError(f"{name} takes C from Cs; remove C={params['C']!r} from its parameters")
    Cs = check_alphas(Cs, "Cs")  # booleans refused (True was C=1.0), as RankSVM(C=True) is
    if kernel != "linear":
        raise ValueError(f"{name} fits linear models; got kernel={kernel!r}")
    return Cs, progress.iterate(np.argsort(Cs, kind="stable"), desc=name, unit="C", verbose=verbose)


def _unchanged_on_error(method):
    """``method`` restoring every attribute of the estimator when it raises, and the state of a numpy RandomState given
    as ``random_state`` (a seed drawn before the call failed would change the next fit's draws).  Fits replace their
    state arrays, never write into them: a shallow copy suffices."""
    @functools.wraps(method)
    def call(self, *args, **kwargs):
        saved = dict(self.__dict__)
        rng = saved.get("random_state")
        rng_state = rng.get_state() if isinstance(rng, np.random.RandomState) else None
        try:
            return method(self, *args, **kwargs)
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(saved)
            if rng_state is not None:
                rng.set_state(rng_state)
            raise
    return call


def _named_for(method, owner, name):
    """An inherited ``method`` as ``owner.name``: a call with wrong arguments names the public class and the method's
    parameters, not the private base that defines it (``PRank.fit(X, y): got an unexpected keyword argument
    'groups'``, where Python would name ``_OnlineOrdinal.fit``).  The binding is checked only once a call has failed."""
    @functools.wraps(method)
    def call(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except TypeError:
            signature = inspect.signature(method)
            try:
                signature.bind(self, *args, **kwargs)
            except TypeError as binding:
                shown = signature.replace(parameters=list(signature.parameters.values())[1:])
                raise TypeError(f"{owner}.{name}{shown}: {binding}") from None
            raise
    call.__qualname__ = f"{owner}.{name}"
    call.__named_from__ = method
    return call


def in_compute_region(method):
    """``method`` in a compute region of the estimator's ``n_jobs`` cores (``_threads``): the learners whose C++ calls
    start threads of their own, which fits from several Python threads would otherwise run beside each other's."""
    @functools.wraps(method)
    def call(self, *args, **kwargs):
        with compute_region(check_n_jobs(getattr(self, "n_jobs", None))):
            return method(self, *args, **kwargs)
    return call


def feature_names(X):
    """The column names of a DataFrame ``X`` when every one is a string, None when none is (scikit-learn's rule);
    TypeError when they mix, as scikit-learn refuses them: such columns could be neither recorded nor checked."""
    columns = getattr(X, "columns", None)
    if columns is None:
        return None
    strings = [isinstance(c, str) for c in columns]
    if all(strings):
        return np.array(list(columns), dtype=str)
    if any(strings):
        kinds = sorted({type(c).__name__ for c in columns})
        raise TypeError(f"X has column names of the types {kinds}: give every column a string name "
                        "(X.columns = X.columns.astype(str)), so that they can be checked by name, or none")
    return None


# Set while a method wrapped by _with_feature_names runs: the methods it calls (a search's best_estimator_.predict,
# WidrowHoff.predict's decision_function) see the X it checked, and warned of, already.
_NAMES_CHECKED = contextvars.ContextVar("fastrank_feature_names_checked", default=False)


def _with_feature_names(method, name):
    """``method(X, ...)`` recording the DataFrame column names of X as ``feature_names_in_`` (a fitting method: "fit",
    "fit_preferences", the first "partial_fit"), else refusing X whose names differ from them: the columns of X in
    another order would be scored with the wrong weights, silently."""
    @functools.wraps(method)
    def call(self, X, *args, **kwargs):
        reset = name in ("fit", "fit_preferences") or name == "partial_fit" and "n_features_in_" not in self.__dict__
        fitted, names = self.__dict__.get("feature_names_in_"), feature_names(X)
        check = not reset and not _NAMES_CHECKED.get()  # a checked method's callees see the X it checked
        if check and fitted is not None and names is not None and not np.array_equal(fitted, names):
            raise ValueError(f"X has the columns {names.tolist()}, but {type(self).__name__} was fitted with "
                             f"{fitted.tolist()}; give them in that order (X[model.feature_names_in_])")
        if check and fitted is not None and names is None:  # scikit-learn's warning: columns cannot be checked
            warnings.warn(f"X does not have valid feature names, but {type(self).__name__} was fitted with feature "
                          "names", UserWarning, stacklevel=user_stacklevel())
        if check and fitted is None and names is not None and "n_features_in_" in self.__dict__:
            warnings.warn(f"X has feature names, but {type(self).__name__} was fitted without feature names",
                          UserWarning, stacklevel=user_stacklevel())
        checked = _NAMES_CHECKED.set(True)
        try:
            out = method(self, X, *args, **kwargs)
        finally:
            _NAMES_CHECKED.reset(checked)
        if reset and names is None:
            self.__dict__.pop("feature_names_in_", None)
        elif reset:
            self.feature_names_in_ = names
            best = self.__dict__.get("best_estimator_")  # a search's model refitted on these same columns
            if best is not None:
                best.feature_names_in_ = names
        return out
    return call


def require_finite_scores(model, scores, method=None):
    """``scores`` unless they overflowed float64: finite X far larger than the training features overflows w.x or
    K(x, .) beta to inf or NaN, which would rank (and choose labels) silently by garbage.  ``model``: the estimator
    or its class name."""
    if isinstance(scores, np.ndarray) and scores.dtype.kind == "f" and not np.isfinite(scores).all():
        name = (model if isinstance(model, str) else type(model).__name__) + ("" if method is None else f".{method}")
        raise ValueError(f"{name}: the scores of X overflow float64 (inf or NaN); X is far larger than the model's "
                         "scale: rescale X as for fit")
    return scores


def _finite_scores(method):
    """``method(X, ...)`` through :func:`require_finite_scores`."""
    @functools.wraps(method)
    def call(self, X, *args, **kwargs):
        return require_finite_scores(self, method(self, X, *args, **kwargs), method.__name__)
    return call


_USER_METHODS = ("fit", "partial_fit", "fit_preferences", "predict", "decision_function", "staged_predict", "score",
                 "predict_proba", "transform")


class FastrankEstimator(BaseEstimator):
    """Parameter validation from ``_parameter_constraints`` (merged along the class hierarchy); a failed fit leaves
    the model as it was; DataFrame column names recorded by fit and checked by predict."""

    _parameter_constraints: dict = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.__doc__ = fill_param_docs(cls.__dict__.get("__doc__"))
        # Every fitting method a class defines restores the estimator when it raises: also when the error comes late
        # (a ConvergenceWarning raised as an error after part of the new state was stored, an interrupt, a diverging
        # Widrow-Hoff pass, a first partial_fit batch with a label outside classes=).
        for name in ("fit", "partial_fit", "fit_preferences"):
            if name in cls.__dict__:
                setattr(cls, name, _unchanged_on_error(_with_feature_names(cls.__dict__[name], name)))
        for name in ("predict", "staged_predict", "decision_function"):
            if name in cls.__dict__:
                setattr(cls, name, _finite_scores(_with_feature_names(cls.__dict__[name], name)))
        for name in () if cls.__name__.startswith("_") else _USER_METHODS:
            method = getattr(cls, name, None)
            if inspect.isfunction(method) and name not in cls.__dict__:
                setattr(cls, name, _named_for(getattr(method, "__named_from__", method), cls.__name__, name))
        for method in cls.__dict__.values():  # after the wrapping: help() shows the wrappers' docstrings
            method = getattr(method, "__func__", method)
            if inspect.isfunction(method):
                method.__doc__ = fill_param_docs(method.__doc__)

    def _record_feature_names(self, X):
        """Self, fitted on X outside ``fit`` (the paths), with X's DataFrame column names recorded as ``fit`` does."""
        names = feature_names(X)
        if names is not None:
            self.feature_names_in_ = names
        return self

    def _precomputed(self):
        kernel = getattr(self, "kernel", None)
        return isinstance(kernel, str) and kernel == "precomputed"  # another type is refused by resolve_kernel

    def _fitted_precomputed(self):
        """Whether the fitted model predicts from kernel values: fit's kernel (:meth:`KernelMixin._freeze_kernel`),
        not one set_params named since."""
        frozen = self.__dict__.get("_fitted_kernel")
        return self._precomputed() if frozen is None else frozen[0] == "precomputed"

    @classmethod
    def _get_param_names(cls):
        return list(_constructor_parameters(cls))

    def _store_params(self, values):
        """``__init__``'s body: every argument in the constructor's ``locals()`` stored unchanged under its own name."""
        for name in self._get_param_names():
            setattr(self, name, values[name])

    def _validate_params(self):
        """Check every constrained constructor parameter; bools are refused where a number is expected
        (``isinstance(True, numbers.Integral)`` holds, but ``max_iter=True`` is a mistake)."""
        params = self.get_params(deep=False)
        for name, value in params.items():  # float(10**400) raised a bare "int too large to convert to float"
            if isinstance(value, numbers.Integral) and abs(int(value)) > float(np.finfo(np.float64).max):
                raise ValueError(f"{name} of {type(self).__name__} is an int beyond float64's range (1.8e308)")
        constraints = {k: v for k, v in _merged_constraints(type(self)).items() if k in params}
        for name, options in constraints.items():
            value = params[name]
            if isinstance(value, (bool, np.bool_)) and "boolean" not in options and \
                    any(isinstance(c, Interval) for c in options):
                raise InvalidParameterError(f"The {name!r} parameter of {type(self).__name__} must be a number, not a "
                                            f"bool. Got {value!r} instead.")
        validate_parameter_constraints(constraints, params, caller_name=type(self).__name__)


# Read once per class: reading the constructor's signature (inspect.signature) and merging the constraints along the
# class hierarchy on every call took a third of a one-row partial_fit (benchmarks/RESULTS.md).
@functools.lru_cache(maxsize=None)
def _constructor_parameters(cls):
    return tuple(BaseEstimator._get_param_names.__func__(cls))


@functools.lru_cache(maxsize=None)
def _merged_constraints(cls):
    """The ``_parameter_constraints`` of ``cls`` merged along its hierarchy, after those of the model a search
    checks under its own name (``_searched``)."""
    constraints = {}
    searched = getattr(cls, "_searched", object)
    for klass in (*reversed(searched.__mro__), *reversed(cls.__mro__)):
        constraints.update(getattr(klass, "_parameter_constraints", {}) or {})
    return constraints


class KernelMixin:
    """The kernel parameters (kernel, gamma, degree, coef0), checked and resolved by :func:`_kernels.resolve_kernel`."""

    def _kernel_spec(self, n_features):
        return resolve_kernel(self.kernel, self.gamma, self.degree, self.coef0, n_features)

    def _freeze_kernel(self, n_features):
        """Keep the kernel this fit used: predictions and model files read it, so parameters set after fit take effect
        at the next fit (as on the on-line learners), never on coefficients fitted with another kernel."""
        spec = self._kernel_spec(n_features)
        self._fitted_kernel = (spec.kind, spec.gamma, spec.degree, spec.coef0)

    def _fitted_spec(self):
        frozen = self.__dict__.get("_fitted_kernel")  # absent from model files written before fits kept it
        return self._kernel_spec(self.n_features_in_) if frozen is None else KernelSpec(*frozen)

    def _expansion_predict(self, X):
        """Scores of checked test input X: ``X @ coef_`` (linear weights), else ``K(X, X_fit_) @ dual_coef_`` with X the
        kernel values themselves when precomputed (of a basis model, ``basis_indices_``: the columns of its rows).
        Identical rows tie: products in a fixed order per row, a kernel once per distinct row."""
        if self._fitted_precomputed():
            basis = getattr(self, "basis_indices_", None)
            return row_products(X if basis is None else X[:, basis], self.dual_coef_)
        if self.coef_ is not None:
            return row_products(X, self.coef_)
        return by_distinct_rows(self._kernel_scores, X)

    def _kernel_threads(self, entries, n_features, blas_threads=None, prediction=False):
        """Threads for a kernel fit or prediction of ``entries`` kernel values: ``n_jobs``'s, fewer where the work is
        too small for more to pay (:func:`_threads.threads_for_kernel`)."""
        return min(check_n_jobs(getattr(self, "n_jobs", None)),
                   threads_for_kernel(entries, n_features, blas_threads, prediction))

    def _prediction_threads(self, n_rows):
        """(threads, BLAS threads) of a kernel prediction of ``n_rows`` rows against ``X_fit_``."""
        blas = kernel_blas_threads(self.X_fit_.shape[1])
        return self._kernel_threads(n_rows * self.X_fit_.shape[0], self.X_fit_.shape[1], blas, True), blas

    def _kernel_scores(self, X):
        n_threads, blas = self._prediction_threads(X.shape[0])
        with compute_region(n_threads, blas):
            return predict_basis(X, self.X_fit_, self.dual_coef_, self._fitted_spec(), n_threads)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = self._precomputed()
        return tags


def _recording_groups(fit, batches):
    """``fit(X, y, groups=None)`` recording ``n_fit_groups_``, the number of query groups it learnt from (on-line
    ``batches``: the most of any batch), by which :meth:`Ranker.score` and the scorers warn of missing groups."""
    @functools.wraps(fit)
    def call(self, X, y, groups=None):
        out = fit(self, X, y, groups)
        n = 1 if groups is None else group_index(groups, np.shape(X)[0]).n_groups
        self.n_fit_groups_ = max(n, getattr(self, "n_fit_groups_", 1)) if batches else n
        return out
    return call


def _forgetting_groups(fit_preferences):
    """``fit_preferences`` dropping the ``n_fit_groups_`` of an earlier ``fit``: a preference graph has no query groups,
    so the refitted model scores without groups as one fitted on the graph alone does (no MissingGroupsWarning)."""
    @functools.wraps(fit_preferences)
    def call(self, *args, **kwargs):
        out = fit_preferences(self, *args, **kwargs)
        self.__dict__.pop("n_fit_groups_", None)
        return out
    return call


class Ranker(RegressorMixin, FastrankEstimator):
    """A learner whose ``predict`` returns ranking scores (higher ranks higher)."""

    _sparse_input = False  # scipy.sparse X accepted (never with a precomputed kernel)
    _multi_output = False  # y of shape (m, v) accepted

    def __init_subclass__(cls, **kwargs):
        for name in ("fit", "partial_fit"):  # inside FastrankEstimator's restore-on-error wrapper
            if name in cls.__dict__:
                setattr(cls, name, _recording_groups(cls.__dict__[name], name == "partial_fit"))
        if "fit_preferences" in cls.__dict__:
            setattr(cls, "fit_preferences", _forgetting_groups(cls.__dict__["fit_preferences"]))
        super().__init_subclass__(**kwargs)

    def __sklearn_clone__(self):
        warn_unrouted_groups(self)  # the one step of a search that runs in the caller's process whatever its n_jobs
        return super().__sklearn_clone__()

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = self._sparse_input and not self._precomputed()
        tags.target_tags.multi_output = self._multi_output
        return tags

    def _check_fit_X(self, X, *, allow_sparse=False):
        return check_features(X, precomputed=self._precomputed(), allow_sparse=allow_sparse, min_rows=2)

    def _check_target_vector(self, y, n_rows):
        """One real-valued target per row as a finite float64 vector; a column vector is used as ``y.ravel()`` with
        scikit-learn's DataConversionWarning."""
        y = target_column(y)
        if y.ndim != 1:
            raise ValueError(f"{type(self).__name__} takes one target column: y must be 1-D (m,), got shape {y.shape}")
        Y, _ = as_targets(y, n_rows)
        return np.ascontiguousarray(Y[:, 0])

    def _check_predict_X(self, X, *, allow_sparse=True):
        """Test input: the (p, m) kernel against the m training rows for a precomputed kernel (``fit`` saw (m, m), so
        m = ``n_features_in_``), else a dense (or CSR) matrix with the number of features seen in ``fit``."""
        if self._fitted_precomputed():
            return check_precomputed_kernel(X.toarray() if issparse(X) else X, n_train=self.n_features_in_,
                                            owner=type(self).__name__)
        X = check_features(X, allow_sparse=allow_sparse, min_rows=1)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but {type(self).__name__} is expecting "
                             f"{self.n_features_in_} features as input.")
        return X

    def score(self, X, y, groups=None, sample_weight=None):
        """Pairwise ranking accuracy, ``1 - pairwise_disagreement(y, predict(X), groups, tied_scores="half",
        sample_weight=sample_weight)``: higher is better; the AUC for binary ``y`` without groups; not R^2.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Test rows (for a precomputed kernel, the (n_samples, n_train) kernel against the training rows).
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            True scores or relevance labels; pairs tied in ``y`` are ignored; several outputs: the mean over outputs.
        groups : array-like of shape (n_samples,) or None, default=None
            Query id of each row: only pairs inside a query count, averaged per query.  Without ``groups`` on rows
            that evidently come from several queries it emits :class:`fastrank.exceptions.MissingGroupsWarning`,
            unless metadata routing declined them (``set_score_request(groups=False)``, as for the ranking scorers).
        sample_weight : array-like of shape (n_samples,) or None, default=None
            Row weights; a pair weighs w_i w_j.

        Returns
        -------
        score : float
            The fraction of the pairs with different targets that the predictions order correctly (tied scores count
            half an error).
        """
        if groups is None and not _declines_groups(self):
            _warn_missing_groups(self, f"{type(self).__name__}.score")
        return ranking_accuracy(y, self.predict(X), groups, sample_weight)


def warn_if_constant(model, constant, cause="no feature separates the rows of any preference pair (constant "
                                             "features, or pairs of identical rows)"):
    """:class:`fastrank.exceptions.ConstantModelWarning` when the fitted ``model`` is ``constant`` (scores every row
    alike) at its optimum: the answer the data give, but a model that ranks nothing should not pass silently (a solve
    stopped short warns of that instead)."""
    if constant:
        warnings.warn(f"{type(model).__name__} scores every row alike, so its predictions rank nothing: {cause}",
                      ConstantModelWarning, stacklevel=user_stacklevel())


def warn_if_scores_underflow(model, X, coef):
    """:class:`fastrank.exceptions.ConstantModelWarning` when non-zero linear weights ``coef`` give training scores
    ``X @ coef`` that underflow float64 (every |score| below the smallest normal number, e.g. features near 1e-200
    against weights near 1e-199: products near 1e-400 are 0): the predictions tie or keep a few bits.  About 1,000
    rows' products when any of them is normal (the usual case), O(nnz(X)) otherwise."""
    if coef is None or not np.any(coef):
        return
    c, tiny = np.asarray(coef), np.finfo(np.float64).tiny

    def largest_score(rows):  # on this thread: a BLAS product right after the solver's threads waited for them
        scores = np.asarray(rows @ c) if issparse(rows) else np.einsum("ij,j...->i...", rows, c)
        return float(np.abs(scores).max(initial=0.0))

    if largest_score(X[::max(1, X.shape[0] // 1024)]) >= tiny or largest_score(X) >= tiny:
        return
    values = X.data[:X.nnz] if issparse(X) else X  # CSR storage past indptr[-1] is unused
    warn_scores_underflow(model, largest_score(X), float(np.abs(values).max(initial=0.0)), c)


def warn_scores_underflow(model, score_top, x_top, coef):
    """The warning of :func:`warn_if_scores_underflow`: the largest |training score| ``score_top`` is below float64's
    smallest normal number, from features up to ``x_top`` and the weights ``coef``."""
    warnings.warn(f"{type(model).__name__}'s scores X @ coef_ underflow float64 on the training rows (largest |score| "
                  f"{score_top:.3g}, from features up to {x_top:.3g} and weights up to "
                  f"{float(np.abs(coef).max()):.3g}): its predictions tie or keep a few bits, so they rank little or "
                  "nothing.  Rescale X (e.g. sklearn.preprocessing.StandardScaler).", ConstantModelWarning,
                  stacklevel=user_stacklevel())


def ranking_accuracy(y, pred, groups=None, sample_weight=None):
    """``1 - pairwise_disagreement`` of predictions ``pred`` (p,) or (p, v) against targets ``y`` (the mean over outputs
    for several): the score of every fastrank ranker."""
    return _over_outputs(lambda yk, fk: 1.0 - pairwise_disagreement(yk, fk, groups, sample_weight=sample_weight),
                         y, pred)
