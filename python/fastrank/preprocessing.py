"""Feature preprocessing for ranking data, as scikit-learn transformers.  Raw learning-to-rank features (LETOR / MSLR:
term counts, BM25, lengths, PageRank) differ in scale by orders of magnitude, and their level varies from query to
query; a ranking model only compares documents of one query, so LETOR normalises inside each query ("QueryLevelNorm"):
:class:`QueryNormalizer`.  :class:`Log1pScaler` is a global log1p + z-score for heavy-tailed features;
:func:`make_normalizer` builds the transformer of ``fastrank train --normalize NAME``.

Groups reach :class:`QueryNormalizer` in a :class:`~sklearn.pipeline.Pipeline` through metadata routing (it requests
``groups`` for ``fit`` and ``transform`` by default)::

    sklearn.set_config(enable_metadata_routing=True)
    pipe = make_pipeline(QueryNormalizer(), RankRLS().set_fit_request(groups=True))
    pipe.fit(X, y, groups=qid)
    scores = pipe.predict(X_test, groups=qid_test)     # normalised inside each test query

Without routing, ``pipe.fit(X, y, querynormalizer__groups=qid, rankrls__groups=qid)`` fits, and test features must be
normalised explicitly by the fitted step (``pipe[-1].predict(pipe[0].transform(X_test, groups=qid_test))``) because
``Pipeline.predict`` then passes no groups to transformers (a transform without groups after a fit on several queries
emits :class:`fastrank.exceptions.MissingGroupsWarning`).
"""

from __future__ import annotations

import reprlib
import warnings

import numpy as np
import scipy.sparse
from sklearn.base import BaseEstimator, OneToOneFeatureMixin, TransformerMixin
from sklearn.preprocessing import StandardScaler
from sklearn.utils.validation import check_is_fitted, validate_data

from ._base import _unchanged_on_error
from ._docs import with_param_docs
from ._memory import densified
from ._validation import _to_float, block_sums, check_bool, group_index, one_of
from .exceptions import MissingGroupsWarning, user_stacklevel

__all__ = ["QueryNormalizer", "Log1pScaler", "make_normalizer", "NORMALIZERS"]

NORMALIZERS = ("none", "zscore", "query-minmax", "query-zscore", "log1p-zscore")

# numpydoc entries the transformers' methods share (``%(X)s`` placeholders)
_DOCS = {
    "X": """X : {array-like, sparse matrix} of shape (n_samples, n_features)
    The features; a sparse matrix is densified (every normalisation here shifts zeros).""",
    "y": "y : None\n    Ignored (scikit-learn's place for targets).",
    "groups": """groups : array-like of shape (n_samples,) or None, default=None
    Query id of each row: each query is normalised with its own statistics.  None: all rows are one query
    (:class:`fastrank.exceptions.MissingGroupsWarning` after a fit on several queries).""",
    "X_new": """X_new : ndarray of shape (n_samples, n_features)
    The transformed features.""",
}


class _DenseTransformer(OneToOneFeatureMixin, TransformerMixin, BaseEstimator):
    """A transformer of dense or scipy.sparse rows; every normalisation here shifts zeros, so a sparse result would be
    dense anyway.  A failed fit leaves the transformer as it was: validate_data records n_features_in_ and the
    column names before it checks the values."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for name in ("fit", "fit_transform"):
            if name in cls.__dict__:
                setattr(cls, name, _unchanged_on_error(cls.__dict__[name]))

    def _dense_float(self, X, *, reset):
        if np.isscalar(X) or X is None or getattr(X, "ndim", None) == 0:  # a str reached numpy's conversion text
            raise ValueError(f"Expected 2D array, got scalar array instead: X={reprlib.repr(X)}; pass the features as "
                             "an array of shape (n_samples, n_features)")
        if not scipy.sparse.issparse(X):  # the learners' check: validate_data let numpy's or Python's conversion
            _to_float(X, "X")  # errors through for text, categorical or interval columns and read datetimes as numbers
        return densified(validate_data(self, X, accept_sparse="csr", dtype=np.float64, reset=reset),
                         f"copy of the sparse X ({type(self).__name__})",
                         advice="The normalisation shifts zeros, so it densifies X: skip it for large sparse data "
                                "(fastrank train --normalize none) or raise FASTRANK_MAX_DENSE_BYTES.")

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags


def _std(centred, offsets, sizes):
    return np.sqrt(block_sums(centred * centred, offsets) / sizes[:, None])


class QueryNormalizer(_DenseTransformer):
    """Normalise every feature inside each query (LETOR's QueryLevelNorm).

    Each query is normalised with its own statistics, those of the rows passed to ``transform`` (a test query by itself,
    as LETOR normalises every split), so ``fit`` learns only the number of features and ``transform`` needs the query id
    of each row (``groups``; None: all rows are one query, as for fastrank's estimators).  So a subset of rows is
    normalised by its own statistics: scikit-learn's ``check_methods_subset_invariance`` fails, by design.

    Parameters
    ----------
    method : {"minmax", "zscore"}, default="minmax"
        "minmax": ``(x - min_q) / (max_q - min_q)`` per query q and feature, in [0, 1] (LETOR 3.0/4.0 and MSLR's
        QueryLevelNorm); "zscore": ``(x - mean_q) / std_q`` (population std). A feature that is constant inside a query
        becomes 0 there (LETOR's convention).

    Attributes
    ----------
    n_features_in_ : int
    n_fit_groups_ : int
        The number of queries in ``fit``'s ``groups`` (1 without): after a fit on several, ``transform`` without groups
        emits :class:`fastrank.exceptions.MissingGroupsWarning` (its rows would be normalised as one query).
    """

    __metadata_request__fit = {"groups": True}
    __metadata_request__transform = {"groups": True}

    _METHODS = ("minmax", "zscore")

    def __init__(self, method="minmax"):
        self.method = method

    @with_param_docs(_DOCS)
    def fit(self, X, y=None, groups=None):
        """Check X and record its number of features and of query groups (the statistics are per query, at
        transform).

        Parameters
        ----------
        %(X)s
        y : None
            Ignored (scikit-learn's place for targets): the query ids go to ``groups=``, also in ``fit_transform``.
        groups : array-like of shape (n_samples,) or None, default=None
            Query id of each row; only their number is kept (``n_fit_groups_``).  None: one query.

        Returns
        -------
        self : object
            The fitted transformer.
        """
        self._checked_method()
        n_rows = self._dense_float(X, reset=True).shape[0]  # X first: a scalar X has no rows to count
        self.n_fit_groups_ = 1 if groups is None else group_index(groups, n_rows).n_groups
        return self

    def _checked_method(self):  # also at transform: set_params after fit could name no method (read as "zscore")
        if not one_of(self.method, self._METHODS):
            raise ValueError(f"method must be one of {self._METHODS}, got {self.method!r}")

    @with_param_docs(_DOCS)
    def transform(self, X, groups=None):
        """X normalised inside each query of ``groups``.

        %(Parameters)s %(X)s %(groups)s %(Returns)s
        X_new : ndarray of shape (n_samples, n_features)
            X normalised inside each query (a feature constant inside a query is 0 there); a range or variance that
            overflows float64 raises ValueError.
        """
        check_is_fitted(self, "n_features_in_")
        self._checked_method()
        X = self._dense_float(X, reset=False)
        n_fit_groups = getattr(self, "n_fit_groups_", 1)
        if groups is None and n_fit_groups > 1:
            warnings.warn(f"QueryNormalizer.transform was called without groups although fit was given {n_fit_groups} "
                          "query groups: the rows are normalised as one query. Pass groups= (in a Pipeline under "
                          "metadata routing: pipe.predict(X, groups=...))", MissingGroupsWarning,
                          stacklevel=user_stacklevel())
        gi = group_index(groups, X.shape[0])
        with np.errstate(over="ignore", invalid="ignore"):  # overflow is reported in _normalised (as a decorator,
            return self._normalised(X, gi)  # numpy's frame took the user's line in the warning above)

    def _normalised(self, X, gi):
        """X normalised inside each group of ``gi`` (transform's computation)."""
        Xs = gi.take(X)
        starts, sizes = gi.offsets[:-1], gi.sizes
        # reduceat along the rows of the transpose: along axis 0 over many short queries it is 4x slower than the copy
        XsT = np.ascontiguousarray(Xs.T)
        lo, hi = np.minimum.reduceat(XsT, starts, axis=1).T, np.maximum.reduceat(XsT, starts, axis=1).T
        del XsT
        if self.method == "zscore":  # each query's columns in units of a power of two near their largest magnitude
            # (exact, z-scores unchanged): subnormal features kept few digits of their mean, and features near 1e300
            # overflowed the variance; a pass over X that magnitudes between 2^-400 and 2^400 do not need
            magnitude = np.maximum(np.abs(lo), np.abs(hi))
            if not np.all(((magnitude > 2.0**-400) & (magnitude < 2.0**400)) | (magnitude == 0)):
                _, exponent = np.frexp(magnitude)
                Xs = np.ldexp(Xs, -np.repeat(exponent, sizes, axis=0))
        shift = lo if self.method == "minmax" else block_sums(Xs, gi.offsets) / sizes[:, None]
        centred = Xs - np.repeat(shift, sizes, axis=0)
        if self.method == "zscore":  # a second pass: the rounded mean left n eps |mean| / std in every z-score
            centred -= np.repeat(block_sums(centred, gi.offsets) / sizes[:, None], sizes, axis=0)
        if self.method == "minmax":
            scale = hi - lo
        else:
            scale = _std(centred, gi.offsets, sizes)
            if not np.all((scale > 1e-140) | (hi == lo)):
                # the squares underflowed: each query's deviations in units of a power of two near their largest
                # magnitude (exact: centred / scale unchanged; robustness.md, "Costs at extreme scales")
                _, exponent = np.frexp(np.maximum.reduceat(np.abs(centred), starts, axis=0))
                centred = np.ldexp(centred, -np.repeat(exponent, sizes, axis=0))
                scale = _std(centred, gi.offsets, sizes)
        if not (np.isfinite(shift).all() and np.isfinite(scale).all()):  # was NaN, or 0 for an infinite range
            raise ValueError("X is too large to normalise: a feature's range or variance inside a query overflows "
                             "float64; rescale X (e.g. divide it by its largest absolute value)")
        # a feature constant inside a query (tested exactly: min == max, since a rounded mean leaves
        # a std of ~1e-16) carries no ranking information there: 0, LETOR's convention
        scale = np.where(hi > lo, scale, np.inf)
        centred /= np.repeat(scale, sizes, axis=0)
        return gi.untake(centred)

    @with_param_docs(_DOCS)
    def fit_transform(self, X, y=None, groups=None):
        """``fit(X, y, groups).transform(X, groups)``.

        %(Parameters)s %(X)s %(y)s %(groups)s %(Returns)s %(X_new)s
        """
        return self.fit(X, y, groups).transform(X, groups)


class Log1pScaler(_DenseTransformer):
    """``sign(x) log(1 + |x|)`` per entry (``log1p`` on non-negative features: values spanning orders of magnitude
    compressed to a few units, order kept; monotone and defined for negative values), then optionally a z-score.

    Parameters
    ----------
    zscore : bool, default=True
        Standardise the log-transformed features with the training data's mean and standard deviation (features constant
        in training become 0, as do those varying only in their last bits, which StandardScaler reads as constant).

    Attributes
    ----------
    mean_, scale_ : ndarray of shape (n_features,) (``zscore=True`` only)
    n_features_in_ : int
    """

    def __init__(self, zscore=True):
        self.zscore = zscore

    @staticmethod
    def _log(X):
        return np.sign(X) * np.log1p(np.abs(X))

    @with_param_docs(_DOCS)
    def fit(self, X, y=None):
        """Learn the mean and standard deviation of the log-transformed training features.

        %(Parameters)s %(X)s %(y)s %(Returns)s
        self : object
            The fitted transformer.
        """
        check_bool(self.zscore, "zscore")
        return self._fit_logged(self._log(self._dense_float(X, reset=True)))

    @with_param_docs(_DOCS)
    def fit_transform(self, X, y=None):
        """``fit(X).transform(X)``, the logarithm taken once.

        %(Parameters)s %(X)s %(y)s %(Returns)s %(X_new)s
        """
        check_bool(self.zscore, "zscore")
        L = self._log(self._dense_float(X, reset=True))
        return self._fit_logged(L)._standardised(L)

    def _fit_logged(self, L):
        if self.zscore:
            # each column taken in units of a power of two near its largest magnitude (exact): the variance of a feature
            # of 1e-170 underflowed to 0, which StandardScaler reads as constant (scale 1: left unstandardised)
            _, exponent = np.frexp(np.abs(L).max(axis=0, initial=0.0))
            scaler = StandardScaler().fit(np.ldexp(L, -exponent))
            constant = scaler.scale_ != np.sqrt(scaler.var_)  # StandardScaler's scale 1 of a constant feature stays 1
            scale = np.where(constant, 1.0, np.ldexp(scaler.scale_, exponent))
            subnormal = np.flatnonzero(scale < np.finfo(np.float64).tiny)
            if subnormal.size:  # a scale_ of fewer than 53 bits, or 0 (a z-score of inf and NaN)
                raise ValueError(f"feature {subnormal[0]} varies by less than 2.2e-308 (subnormal numbers): its "
                                 "standard deviation cannot be stored to float64's precision; rescale X")
            self.mean_, self.scale_ = np.ldexp(scaler.mean_, exponent), scale
        else:  # a refit without the z-score forgets the previous one
            self.__dict__.pop("mean_", None)
            self.__dict__.pop("scale_", None)
        return self

    @with_param_docs(_DOCS)
    def transform(self, X):
        """``sign(x) log(1 + |x|)`` per entry, then the z-score learnt by ``fit`` (if it learnt one).

        %(Parameters)s %(X)s %(Returns)s %(X_new)s
        """
        check_is_fitted(self, "n_features_in_")
        return self._standardised(self._log(self._dense_float(X, reset=False)))

    def _standardised(self, L):
        if "mean_" in self.__dict__:  # the fitted z-score: a zscore set after fit takes effect at the next fit
            L = (L - self.mean_) / self.scale_
        return L


class _ZScore(Log1pScaler):
    """StandardScaler's z-score (no log) in :class:`Log1pScaler`'s power-of-two units: features of 1e-170 are
    standardised (StandardScaler's variance underflows and it leaves them unscaled) and those of 1e155 too (theirs
    overflows to NaN); at ordinary scales the same mean_ and scale_ to the bit."""

    @staticmethod
    def _log(X):
        return X


def make_normalizer(name):
    """The transformer for a ``--normalize`` name, or None for "none".

    Parameters
    ----------
    name : {"none", "zscore", "query-minmax", "query-zscore", "log1p-zscore"}
        "zscore": StandardScaler's z-score at any feature scale; "query-minmax" / "query-zscore":
        :class:`QueryNormalizer`; "log1p-zscore": :class:`Log1pScaler`.  Another name raises ValueError.

    Returns
    -------
    transformer : QueryNormalizer, Log1pScaler or None
        A new unfitted transformer (a :class:`Log1pScaler` subclass for "zscore"), or None for "none".
    """
    if not one_of(name, NORMALIZERS):
        raise ValueError(f"normalization must be one of {', '.join(NORMALIZERS)}, got {name!r}")
    return {"none": None, "zscore": _ZScore(), "query-minmax": QueryNormalizer("minmax"),
            "query-zscore": QueryNormalizer("zscore"), "log1p-zscore": Log1pScaler()}[name]
