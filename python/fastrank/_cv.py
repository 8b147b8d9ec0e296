"""RankRLSCV: regularization chosen by exact fast cross-validation (004 Sections 3.2-3.4)."""

from __future__ import annotations

import inspect
import warnings

import numpy as np
from sklearn.utils.validation import check_is_fitted

from ._base import KernelMixin, Ranker
from ._problem import check_features
from ._rankrls import MPRank, RankRLS
from ._registry import register_estimator
from .metrics import (Measure, RankingScorer, discrete_ranking_loss, get_measure, m1d, magnitude_preserving_cost,
                      mean_rank_loss, measure_names, msd, stability_ranking_loss)
from ._exactcv import check_folds, engine_for, resolve_folds
from ._solvers import one_conditioning_warning
from ._progress import progress
from ._validation import check_alphas, group_index, mprank_alpha
from .exceptions import IllConditionedWarning, LinAlgError

try:  # scikit-learn's scorers share this private base: refused by name below, where it exists
    from sklearn.metrics._scorer import _BaseScorer
except ImportError:
    _BaseScorer = ()

__all__ = ["RankRLSCV", "MPRankCV"]


def holdout_score(pred, Y, sets, codes, scoring):
    """The cross-validation score of hold-out predictions, averaged over outputs: the measure of each hold-out unit --
    the rows of one set inside one query group (codes=None: the whole set), which one trained model ranks -- with every
    unit weighing the same, ``measure(y, pred, groups=unit)``.  For folds of whole queries the units are the queries;
    predictions of different models are never compared; units where the measure is undefined are skipped, as the
    measures skip such groups."""
    scoring = _check_scoring(scoring) if isinstance(scoring, str) else scoring
    rows = np.concatenate(sets)
    unit = np.repeat(np.arange(len(sets), dtype=np.int64), [len(s) for s in sets])
    if codes is not None:
        unit = unit * (int(codes.max()) + 1) + codes[rows]
    if np.unique(unit).size == unit.size:  # the measures would score every unit alike (1 or undefined)
        raise ValueError("every hold-out unit (the rows of one hold-out set inside one group) is a single row, so no "
                         "model ranks two held-out rows and every alpha would score alike: use fewer, larger folds "
                         "(cv=k with k < n_samples, or folds of whole groups) or cv='lpo'")
    values = []
    for k in range(Y.shape[1]):
        try:
            values.append(scoring(Y[rows, k], pred[rows, k], unit))
        except ValueError as exc:
            y = Y[rows, k]
            order = np.lexsort((y, unit))
            if np.any((np.diff(unit[order]) == 0) & (np.diff(y[order]) != 0)):  # not for want of an untied pair
                raise
            column = f" of output column {k}" if Y.shape[1] > 1 else ""
            raise ValueError(f"no hold-out unit (the rows of one hold-out set inside one group) holds two rows with "
                             f"different targets{column}, so no alpha can be scored ({exc}): use folds that mix target "
                             "values, or cv='lpo'") from None
    for v in values:  # float() would take True as 1 and fail with its own message on None, strings or arrays
        if np.ndim(v) != 0 or np.asarray(v).dtype.kind not in "fiu":
            raise TypeError(f"scoring must return one real number (higher is better), got {v!r}")
    return float(np.mean([float(v) for v in values]))


def _check_scoring(scoring):
    """``scoring`` (the forms ``usage`` lists; None: "auc") as a :class:`fastrank.metrics.Measure` or a callable
    (y, pred, groups) -> higher is better."""
    if scoring is None:
        return get_measure("auc")
    if isinstance(scoring, RankingScorer):
        return scoring.score_predictions
    usage = (f"scoring is a measure name ({', '.join(measure_names())}; ndcg@k, map@k, precision@k, mrr@k, err@k "
             "with k >= 1, e.g. 'ndcg@10'), a scorer of fastrank.metrics.make_ranking_scorer, or a callable "
             "scoring(y_true, y_pred, groups) -> float (higher is better)")
    if isinstance(scoring, _BaseScorer):  # called scorer(estimator, X, y): numpy arrays have no estimator's methods
        raise TypeError(f"scoring={scoring!r} is a scikit-learn scorer (estimator, X, y), which cannot score hold-out "
                        f"predictions; {usage}")
    if isinstance(scoring, (str, Measure)):
        try:
            return get_measure(scoring)
        except ValueError as exc:
            raise ValueError(f"scoring={scoring!r}: {exc}. {usage}") from None
    if callable(scoring):
        try:  # else Python's "takes 2 positional arguments" from the first alpha's score
            inspect.signature(scoring).bind(None, None, None)
        except TypeError:
            raise TypeError(f"scoring={scoring!r} cannot be called as scoring(y_true, y_pred, groups); "
                            f"{usage}") from None
        except ValueError:  # no signature to read (some builtins): called as it is
            pass
        return scoring
    raise ValueError(f"{usage}; got {scoring!r}")


def _cost_degree(given, scoring):
    """The degree d of a table cost, by name or by a scorer of ``make_ranking_scorer`` with any keywords: it scales as
    |y|^d when y and the predictions are scaled together (000 eqs. 4-7 and 67-68, 002's losses, 001's rank loss).  0
    for measures of order only and any other scoring, and for "svr" with an epsilon, which does not scale."""
    measure, kwargs = (given._measure, given._kwargs) if isinstance(given, RankingScorer) else (scoring, {})
    if not isinstance(measure, Measure):
        return 0
    kw = {**measure.kwargs, **kwargs}
    if measure.func is magnitude_preserving_cost:
        return 0 if kw.get("cost") == "svr" and kw.get("epsilon", 0.0) else kw.get("power", 2)
    if measure.func is stability_ranking_loss:
        return {"0-1": 0, "squared": 2}.get(kw.get("loss", "hinge"), 1)
    if measure.func is mean_rank_loss:  # "positions" counts steps in the ordered set of labels and predictions
        return 0 if kw.get("scale") == "positions" else 1
    return {msd: 2, m1d: 1, discrete_ranking_loss: 1}.get(measure.func, 0)


def _table_measure(given, scoring):
    """(measure, sign) of a scoring by name (sign 1) or by a scorer of ``make_ranking_scorer`` without extra keywords
    (its sign, losses negated; it scores exactly as the name does); None for any other scoring."""
    if isinstance(given, RankingScorer):
        if given._kwargs or not isinstance(given._measure, Measure):  # e.g. tied_scores="wrong", k=5
            return None
        return given._measure, given._sign
    return (scoring, 1) if isinstance(scoring, Measure) else None


def _grid_value_error(name, value, exc):
    return LinAlgError(f"{name}={float(value):.6g}: {exc}; leave this value out of the grid")


class _ExactCVSearch(KernelMixin, Ranker):
    """A parameter grid scored by exact cross-validation, then the best model solved from the same factorization."""

    def _engine(self, name, grid, X, y, groups, min_rows):
        """The searched estimator with this search's model parameters (``verbose`` stays with the search) at
        ``name=grid[0]``, and its exact-CV engine on (X, y, groups)."""
        self._validate_params()
        names = set(self._searched._get_param_names()) - {"verbose"}
        base = self._searched(**{k: v for k, v in self.get_params(deep=False).items() if k in names})
        base.set_params(**{name: float(grid[0])})
        return base, engine_for(base, X, y, groups, min_rows=min_rows, verbose=self.verbose)

    def _search(self, engine, base, name, grid, score, what, greater_is_better=False, exponent=0):
        """``score(k)`` for every value ``grid[k]``, with progress (a numerical breakdown names the value); keeps the
        best value as ``<name>_``, its score and ``base`` at it, solved from ``engine``.  Scores in units of
        ``2^exponent`` are compared in them and reported times ``2^exponent``.  Returns (scores, best)."""
        scores = np.empty(grid.size)
        for k in progress.iterate(range(grid.size), desc=type(self).__name__, unit=name, verbose=self.verbose):
            try:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    scores[k] = score(k)
            except np.linalg.LinAlgError as exc:  # numpy's class too: the documented one is fastrank's
                raise _grid_value_error(name, grid[k], exc) from None
            for w in caught:  # the engine's warnings speak of alpha: MPRank's is m_train^2 / (2 C)
                message = w.message
                if name == "C" and issubclass(w.category, IllConditionedWarning):
                    message = IllConditionedWarning(f"C={float(grid[k]):.6g}: {message} (MPRank retrains at alpha = "
                                                    "m_train^2 / (2 C): alpha falls as C grows)")
                warnings.warn_explicit(message, w.category, w.filename, w.lineno)
        with np.errstate(over="ignore"):  # inf where a cost exceeds float64 in the units of y
            reported = np.ldexp(scores, exponent)
        if not np.all(np.isfinite(reported)):  # the values as numbers, not numpy's wrapped array print
            bad = ", ".join(f"{float(v):.6g}" for v in grid[~np.isfinite(reported)])
            raise ValueError(f"{what} is not finite for {name} in [{bad}]")
        best = int(np.argmax(scores)) if greater_is_better else int(np.argmin(scores))
        self._scores_in_units = scores  # what fastrank.dask compares across its searches (reported may underflow)
        setattr(self, name + "_", float(grid[best]))
        self.best_score_ = float(reported[best])
        model = base.set_params(**{name: float(grid[best])})
        self.best_estimator_ = model._apply_engine_fit(engine, model._cv_spec().alpha_for(engine.m))
        self.n_features_in_ = self.best_estimator_.n_features_in_
        return reported, best

    def predict(self, X):
        """Scores of the best model (higher ranks higher).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            The rows to score (sparse: RankRLSCV only), or their (n_samples, n_train) kernel against the training rows
            for ``kernel="precomputed"``.

        Returns
        -------
        scores : ndarray of shape (n_samples,) or (n_samples, n_outputs)
            ``best_estimator_.predict(X)``.
        """
        check_is_fitted(self, "best_estimator_")
        try:
            return self.best_estimator_.predict(X)
        except ValueError as exc:  # its input checks name the model the user called ("X has 2 features, but ...")
            inner = f"but {type(self.best_estimator_).__name__} is expecting"
            if inner not in str(exc):
                raise
            raise ValueError(str(exc).replace(inner, f"but {type(self).__name__} is expecting", 1)) from None


@register_estimator
class RankRLSCV(_ExactCVSearch):
    """RankRLS with ``alpha`` chosen by exact fast cross-validation, then solved on all data.

    One eigendecomposition of ``S K S`` is shared by every alpha; each extra alpha costs one m x m product (object
    leave-pair-out: the paper's Q of eq. 39) or O(m sum n_q^2) (groups) plus the hold-out phase -- never a
    refactorisation (004 Section 3.2 with Sections 3.3-3.4).

    Parameters
    ----------
    alphas : float, array-like of shape (n_alphas,) or None, default=None
        The values of alpha to score, each > 0; None: ``np.logspace(-3, 3, 13)``.
    cv : None, "lpo", "lgo", int, array-like of shape (n_samples,), sequence of index arrays or splitter, default=None
        The hold-out scheme.  None: leave-one-group-out with ``groups`` (judged on unseen queries), else
        leave-pair-out.  "lpo": leave-pair-out over all pairs (with ``groups``: pairs inside a group, the rest of the
        group still trained on -- optimistic for new queries); "lgo": leave-one-group-out (needs ``groups``); an int k:
        k folds (whole groups with ``groups``); fold labels, one per row; index arrays, one per hold-out set; a
        scikit-learn splitter (e.g. ``GroupKFold``): its test folds, given ``y`` and ``groups``, or its (train, test)
        pairs as a list; each training part must be the rest of the rows (not ``TimeSeriesSplit``).  A generator of
        splits is consumed by the first fit, as in scikit-learn: pass a list to fit again.
    scoring : str, RankingScorer, callable or None, default=None
        None: "auc" (= 1 - pairwise disagreement with tied predictions 1/2).  Any name of
        :func:`fastrank.metrics.measure_names` ("auc", "disagreement", "ndcg@10", "map", "err@5", ...), minimised or
        maximised as the table says; "lpo" scores held-out pairs and takes "auc" or "disagreement" only (the pooled
        LPO-AUC; by name or as their scorers).  Hold-out sets are scored by :func:`holdout_score`.  A scorer of
        :func:`fastrank.metrics.make_ranking_scorer` (the same scores as the name; losses negated) or a callable
        ``scoring(y_true, y_pred, groups)`` (higher is better) gets the targets and hold-out predictions with each
        row's unit as groups.
    %(kernel)s %(gamma)s %(degree)s %(coef0)s %(group_weighting)s %(exclude_ties)s
        Every alpha is then scored exactly through one Cholesky factor of ``S K S + alpha I`` (S the tie-excluding
        Laplacian's root) and an update per hold-out set or pair of tie cells (docs/design/exact-cv.md; no spectral
        factor is shared across alphas).
    %(n_jobs)s
    store_cv_predictions : bool, default=True
        Keep the cross-validated predictions of the chosen alpha (``cv_predictions_``).
    %(verbose)s
        Reports progress per alpha.

    Attributes
    ----------
    alpha_ : float
        The chosen alpha.
    best_score_ : float
        Its cross-validation score.
    best_estimator_ : RankRLS
        The model on all data at ``alpha_``, solved from the factorization the scores used (no refit).
    cv_results_ : dict
        "alphas" and "scores" (one per alpha), "scoring", "greater_is_better" (the direction in which the best score
        was taken) and "cv" (the scheme).
    cv_predictions_ : ndarray
        Hold-out schemes: (m,) or (m, v) predictions of each row by the model trained without its fold (NaN for rows in
        no fold); "lpo": (n_pairs, 2[, v]) held-out pair predictions, with the pairs in ``cv_pairs_``.
    """

    def __init__(self, alphas=None, *, cv=None, scoring=None, kernel="linear", gamma=None, degree=3, coef0=1.0,
                 group_weighting="unweighted", exclude_ties=False, n_jobs=None, store_cv_predictions=True, verbose=0):
        self._store_params(locals())

    _parameter_constraints = {"store_cv_predictions": ["boolean"]}

    _searched = RankRLS
    _sparse_input = True
    _multi_output = True  # y (m, v): every output scored, alpha shared

    def _check_cv(self):
        """What fit checks of cv without the data (the fold count against the data and 'lgo' against the groups are
        checked by fit)."""
        if isinstance(self.cv, str):
            if self.cv not in ("lpo", "lgo"):
                raise ValueError(f"cv must be None, 'lpo', 'lgo', an int, fold labels, index sets or a splitter; "
                                 f"got {self.cv!r}")
        elif self.cv is not None:
            check_folds(self.cv)

    @one_conditioning_warning
    def fit(self, X, y, groups=None):
        """Score every alpha by exact cross-validation, keep the best, solve on all data.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training rows, or their (n_samples, n_samples) kernel for ``kernel="precomputed"``.
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            Real scores; every output is scored, with one alpha shared.
        groups : array-like of shape (n_samples,) or None, default=None
            One id per row: restricts the pairs to queries and, with the default ``cv=None`` and at least two ids, makes
            the estimate leave-one-query-out.

        Returns
        -------
        self : object
            Fitted estimator.
        """
        alphas = check_alphas(np.logspace(-3, 3, 13) if self.alphas is None else self.alphas)
        scoring = _check_scoring(self.scoring)
        self._check_cv()
        cv = self.cv
        if cv is None:
            cv = "lgo" if groups is not None and group_index(groups, np.size(groups)).n_groups >= 2 else "lpo"
        is_lpo = isinstance(cv, str) and cv == "lpo"
        table = _table_measure(self.scoring, scoring)
        if is_lpo and (table is None or table[0].name not in ("auc", "disagreement")):
            raise ValueError(f"scoring={self.scoring!r} needs hold-out sets (cv='lgo', folds or a splitter), not "
                             "leave-pair-out, which scores pairs ('auc' or 'disagreement')")
        base, prob = self._engine("alpha", alphas, X, y, groups, 3 if is_lpo else 2)
        lgo_path = not is_lpo and isinstance(cv, str)  # leave-group-out: every alpha from one engine call
        if not lgo_path:
            prob.prepare_grid(alphas.size)
        degree = e = 0  # the scores in units of 2^(degree e); leave-pair-out's are fractions of pairs
        if is_lpo:
            pairs = prob.training_pairs(required=True, scored="cv='lpo'")
            name, sign = table[0].name, table[1]

            def score(k):
                d = float(np.mean(prob.lpo_disagreement(pairs, float(alphas[k]))))
                return sign * (1.0 - d if name == "auc" else d)
        else:
            if lgo_path and prob.groups.n_groups < 2:  # groups=None: one group
                raise ValueError("cv='lgo' needs groups with at least two distinct ids")
            sets = prob.groups.rows() if lgo_path else resolve_folds(cv, prob, groups)
            path = None
            if lgo_path and prob.shares_leave_group_out_path(alphas.size):
                try:
                    path = prob.leave_group_out_path(alphas)
                except np.linalg.LinAlgError as exc:
                    raise _grid_value_error("alpha", alphas.min(), exc) from None

            def predictions(k):  # rows in no hold-out set stay NaN; the group sets cover every row
                if path is not None:
                    return np.array(path[k])
                if lgo_path:
                    return prob.leave_group_out_path(alphas[k:k + 1])[0]
                return prob.holdout_rows(sets, float(alphas[k]))

            # a cost of degree d in (y, predictions) scales by 2^(d e) with both: compared in units of 2^(d e),
            # 2^e ~ max |y| (exact; robustness.md, "Costs at extreme scales")
            degree = _cost_degree(self.scoring, scoring)
            e = int(np.frexp(np.nanmax(np.abs(prob.Y)))[1]) if degree else 0
            Y = np.ldexp(prob.Y, -e)

            def score(k):  # without groups every code is 0: the units are the sets
                return holdout_score(np.ldexp(predictions(k), -e), Y, sets, prob.groups.codes, scoring)
        greater_is_better = scoring.greater_is_better if isinstance(scoring, Measure) else True
        what = "the cross-validation score" + (" (a cost in units of y: rescale y if it overflows float64)"
                                                if degree else "")
        scores, best = self._search(prob, base, "alpha", alphas, score, what, greater_is_better, degree * e)
        if isinstance(self.scoring, RankingScorer):  # its repr, e.g. make_ranking_scorer('ndcg'): not its method's name
            name = repr(self.scoring)
        else:
            name = scoring.name if isinstance(scoring, Measure) else getattr(scoring, "__name__", "callable")
        scheme = cv if isinstance(cv, str) else type(cv).__name__
        self.cv_results_ = {"alphas": alphas.copy(), "scores": scores, "scoring": name,
                            "greater_is_better": greater_is_better, "cv": scheme}
        for stale in ("cv_pairs_", "cv_predictions_"):  # a previous fit's, for other data or another scheme
            self.__dict__.pop(stale, None)
        if self.store_cv_predictions and is_lpo:
            self.cv_pairs_ = pairs
            self.cv_predictions_ = prob.lpo(pairs, self.alpha_)
        elif self.store_cv_predictions:
            self.cv_predictions_ = prob.shaped(predictions(best))
        return self


@register_estimator
class MPRankCV(_ExactCVSearch):
    """MPRank with ``C`` chosen by the exact leave-one-out of Cortes, Mohri & Rastogi (000 Sect. 2.6), then solved on
    all data from the same factorization.

    Eq. 17 holds out every pair (x_i, x_j), i != j, retrains MPRank at the same C on the other m - 2 points
    (alpha = (m - 2)^2 / (2 C)) and averages the cost [(h_ij(x_j) - y_j) - (h_ij(x_i) - y_i)]^2: each C is one alpha of
    the RankRLS leave-pair-out (004 Lemma 2), O(1) per pair after the factorization (one spectral factor shared by a
    grid of more than 30 values of C, else one Cholesky factor per C).  With ``groups`` the pairs (and MPRank's double
    sum) run inside groups.

    Parameters
    ----------
    Cs : float, array-like of shape (n_Cs,) or None, default=None
        The values of C to score, each > 0; None: ``np.logspace(-3, 3, 13)``.
    %(kernel)s %(gamma)s %(degree)s %(coef0)s %(n_jobs)s %(verbose)s
        Reports progress per value of C.

    Attributes
    ----------
    C_ : float
        The chosen C.
    best_score_ : float
        The smallest leave-one-out error, that of ``C_``.
    best_estimator_ : MPRank
        The model on all data at ``C_``.
    cv_results_ : dict
        "Cs" and "loo" (eq. 17 for each C).
    """

    def __init__(self, Cs=None, *, kernel="linear", gamma=None, degree=3, coef0=1.0, n_jobs=None, verbose=0):
        self._store_params(locals())

    _searched = MPRank
    _multi_output = True  # y (m, v): the cost summed over outputs, C shared

    def fit(self, X, y, groups=None):
        """Score every C by the exact leave-one-out error (000 eq. 17), keep the smallest, solve on all data.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            At least 3 dense training rows, or their (n_samples, n_samples) kernel for ``kernel="precomputed"``.
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            Real scores; the cost is summed over outputs, with one C shared.
        groups : array-like of shape (n_samples,) or None, default=None
            One id per row: the pairs (and MPRank's double sum) run inside groups.

        Returns
        -------
        self : object
            Fitted estimator.
        """
        Cs = check_alphas(np.logspace(-3, 3, 13) if self.Cs is None else self.Cs, "Cs")
        check_features(X, precomputed=self._precomputed(), min_rows=3)  # MPRank takes dense X only
        base, prob = self._engine("C", Cs, X, y, groups, 3)
        pairs = prob.training_pairs(required=True)
        prob.prepare_grid(Cs.size)
        dy = (prob.Y[pairs[:, 1]] - prob.Y[pairs[:, 0]]).reshape(pairs.shape[0], -1)
        # the costs in units of 2^(2e), 2^e ~ max |y_j - y_i| (exact; robustness.md, "Costs at extreme scales")
        e = int(np.frexp(np.abs(dy).max())[1])

        def loo_error(k):
            P = prob.lpo(pairs, mprank_alpha(float(Cs[k]), prob.m - 2)).reshape(pairs.shape[0], 2, -1)
            return float(np.mean(np.sum(np.ldexp(P[:, 1] - P[:, 0] - dy, -e) ** 2, axis=1)))
        what = "the leave-one-out error (in squared units of y; rescale y if it overflows)"
        loo, _ = self._search(prob, base, "C", Cs, loo_error, what, exponent=2 * e)
        self.cv_results_ = {"Cs": Cs.copy(), "loo": loo}
        return self
