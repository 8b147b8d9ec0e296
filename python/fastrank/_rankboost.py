"""RankBoost (Freund, Iyer, Schapire & Singer, "An efficient boosting algorithm for combining preferences", JMLR 4,
2003) with threshold weak rankers h_t(x) = [x_f > theta] on single features.

A crucial pair (x0, x1) says x1 should rank above x0.  Round t picks the h_t with the largest |r_t|,
r_t = sum D_t(x0, x1) (h_t(x1) - h_t(x0)) (the paper's threshold weak learner), weighs it by alpha_t (``alpha_rule``)
and re-weighs D_{t+1}(x0, x1) ∝ D_t(x0, x1) exp(alpha_t (h_t(x0) - h_t(x1))) (Fig. 1); F(x) = sum_t alpha_t h_t(x).
For graded targets D_t is never formed (O(m n) per round, ``cpp/include/fastrank/rankboost.hpp``;
docs/design/large-margin-and-boosting.md).
"""

from __future__ import annotations

import numpy as np
from sklearn.utils.validation import check_is_fitted

from . import _core
from ._base import N_JOBS, Ranker, StrOptions, crucial_pairs, in_compute_region, positive_int, warn_if_constant
from ._problem import check_pairs, raise_without_preferences
from ._progress import progress
from ._registry import register_estimator
from ._solvers import check_indices
from ._validation import _asarray, as_float_matrix, check_bool, check_int, check_n_jobs, group_index

__all__ = ["RankBoost", "rankboost_path"]


@register_estimator
class RankBoost(Ranker):
    """RankBoost with threshold weak rankers (Freund, Iyer, Schapire & Singer, JMLR 2003).

    Crucial pairs: ``fit(X, y)`` all pairs with y_i > y_j; ``fit(X, y, groups)`` only inside groups;
    ``fit_preferences(X, pairs)`` the given multigraph, D_1 uniform over its edges.  Stopping rules, tie-breaking and
    missing values: docs/design/large-margin-and-boosting.md.

    Parameters
    ----------
    n_estimators : int, default=100
        Boosting rounds T (>= 1); fewer are kept if no weak ranker has an edge left or one orders every pair correctly.
    n_thresholds : int or None, default=None
        None: every distinct value of a feature is a candidate threshold (the paper's weak learner); an int k keeps at
        most k per feature over its quantiles (the last threshold of each bin floor(c k / m), c the rows above
        it), plus, with ``missing="q_def"``, the -inf threshold of a feature with missing values ("has the
        feature").  O(m n) per round either way; k only changes the model.
    group_weighting : {"pairs", "query"}, default="pairs"
        D_1 with ``groups``: uniform over all crucial pairs (the paper's; large queries weigh more), or the same total
        mass for every group with a crucial pair, uniform inside it.  Without groups both are uniform over all pairs.
    missing : {"error", "q_def"}, default="error"
        NaN in X: an error, or a missing value, h(x) = q_def in {0, 1} chosen with the threshold (the paper's weak
        ranker with a default).  Infinite values are always an error.
    alpha_rule : {"freund", "exact"}, default="freund"
        Weight of the chosen weak ranker h_t (chosen by |r_t| under both rules), from the D_t-masses eps+ / eps- / eps0
        of the crucial pairs it orders correctly / wrongly / ties.  "freund": alpha_t = 1/2 ln((1 + r_t) / (1 - r_t)),
        the paper's minimiser of the bound Z_t <= sqrt(1 - r_t^2) (no smoothing needed).  "exact": alpha_t = 1/2
        ln(eps+ / eps-), the minimiser of Z_t(alpha) = eps0 + eps+ e^-alpha + eps- e^alpha for weak rankers that abstain
        on ties (slides 003, "Weights of the weak rankers"), except that eps+ and eps- below 1 / (2 N) are raised to it,
        N crucial pairs (Schapire & Singer's smoothing: with no wrong or right pair the minimiser is at infinity, and
        a nearly empty side gives a weight almost as large), and Freund's alpha_t is used if it is farther from 0
        (Z_t <= sqrt(1 - r_t^2) still holds).  The rules differ only when pairs are tied (eps0 > 0), as threshold
        rankers make them.
    %(n_jobs)s %(verbose)s
        Reports progress per boosting round.

    Attributes
    ----------
    features_, thresholds_ : ndarray (n_estimators_,) of int64 and float64
        The weak ranker of each round: h_t(x) = 1 if x[features_[t]] > thresholds_[t] else 0 (threshold -inf: "has
        x_f"), the threshold the midpoint between two adjacent training values (exact on the training rows).
    alphas_ : ndarray of float64, shape (n_estimators_,)
        Weights alpha_t under ``alpha_rule``; negative when r_t < 0 (the weak ranker is used reversed, which the paper's
        {0, 1} weak learner allows).
    qdefs_, correlations_ : ndarray (n_estimators_,) of int64 and float64
        h_t on rows missing the feature (0 unless ``missing="q_def"`` chose 1), and r_t.
    pair_masses_, normalizers_ : ndarray (n_estimators_, 3) and (n_estimators_,)
        (eps+_t, eps-_t, eps0_t), the D_t-mass of the crucial pairs h_t orders correctly, wrongly and ties (ties as
        abstentions; eps+ - eps- = r_t), and Z_t = eps0 + eps+ e^-alpha_t + eps- e^alpha_t at the alpha_t used.  The
        D_1-weighted fraction of crucial pairs with F(x1) <= F(x0) (misordered or tied: the slides' R-hat) is at most
        sum D_1 e^{F(x0) - F(x1)} = prod_t Z_t.
    training_error_bound_ : float
        exp(-2 sum_t gamma_t^2), gamma_t = |r_t| / 2 (003, "RankBoost error"): an upper bound on R-hat through
        R-hat <= prod Z_t <= prod sqrt(1 - r_t^2) <= exp(-2 sum gamma_t^2) (either rule: the exact alpha_t only lowers
        Z_t).  1.0 before any round.
    n_estimators_, n_features_in_ : int
        Rounds performed; features seen in ``fit``.
    """

    def __init__(self, n_estimators=100, *, n_thresholds=None, group_weighting="pairs", missing="error",
                 alpha_rule="freund", n_jobs=None, verbose=0):
        self._store_params(locals())

    _parameter_constraints = {"n_estimators": [positive_int()], "n_thresholds": [None, positive_int()],
                              "group_weighting": [StrOptions({"pairs", "query"})],
                              "missing": [StrOptions({"error", "q_def"})],
                              "alpha_rule": [StrOptions({"freund", "exact"})], "n_jobs": N_JOBS}

    def _check_params(self):
        self._validate_params()  # n_thresholds None: 0 for the core, every distinct value
        return int(self.n_estimators), int(self.n_thresholds or 0), check_n_jobs(self.n_jobs)

    def _check_X(self, X, min_rows=1):
        allow = self.missing == "q_def"
        X = as_float_matrix(X, "X", min_rows=min_rows, allow_nan=allow)
        if allow and np.isinf(X).any():
            raise ValueError("Input X contains infinity (NaN marks a missing value with missing='q_def').")
        return X

    def fit(self, X, y, groups=None):
        """Fit on graded relevance: every pair with y_i > y_j is crucial.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training rows (NaN marks a missing value with ``missing="q_def"``).
        y : array-like of shape (n_samples,)
            Graded relevance.
        %(groups_fit)s

        Returns
        -------
        %(fitted_self)s
        """
        params = self._check_params()
        X = self._check_X(X, min_rows=2)
        m = X.shape[0]
        y = self._check_target_vector(y, m)
        gi = group_index(groups, m)
        n_pairs = crucial_pairs(y, gi)
        if not np.any(n_pairs > 0):
            if groups is not None:  # every group a single row: say so, not that y is tied
                raise_without_preferences(gi.sizes, learner="RankBoost")
            where = "inside any group" if groups is not None else "among the rows"
            raise ValueError(f"No relevant pairs: all targets are tied {where}, so there are no preferences to learn "
                             "from" + (" (RankBoost with groups uses only pairs of rows sharing a group id)."
                                       if groups is not None else "."))
        query = self.group_weighting == "query"
        weight = np.where(n_pairs > 0, 1.0 / np.maximum(n_pairs, 1.0), 1.0) if query else np.ones(n_pairs.size)
        return self._boost(params, _core.rankboost_fit_graded, X, (y, gi.order, gi.offsets, weight), n_pairs.sum())

    def fit_preferences(self, X, pairs):
        """Fit on an explicit preference multigraph.

        D_1 is uniform over the edges (a repeated edge weighs more), kept explicitly: O(#edges + m n) per round.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The rows the preferences refer to.
        %(pairs)s

        Returns
        -------
        %(fitted_self)s
        """
        params = self._check_params()
        X = self._check_X(X, min_rows=2)
        head, tail = check_pairs(pairs, X.shape[0])
        return self._boost(params, _core.rankboost_fit_graph, X, (head, tail), head.size)

    @in_compute_region
    def _boost(self, params, core_fit, X, data, n_pairs):
        """Run the C++ boosting loop on ``data`` (``n_pairs`` crucial pairs N; eps+ and eps- floored at 1 / (2 N)) and
        store its result.  The hook, called after each round, is None when silent (no GIL round trip per round)."""
        with progress(total=params[0], desc="RankBoost", unit="round", verbose=self.verbose) as bar:
            res = core_fit(X, *data, *params, self.alpha_rule, 0.5 / float(n_pairs),
                           (lambda t: bar.update(1)) if self.verbose else None)
        features, thresholds, alphas, r, qdef, eps_plus, eps_minus, z = res
        self.features_, self.qdefs_ = np.asarray(features, dtype=np.int64), np.asarray(qdef, dtype=np.int64)
        self.thresholds_, self.alphas_, self.correlations_, self.normalizers_, eps_plus, eps_minus = (
            np.asarray(a, dtype=np.float64) for a in (thresholds, alphas, r, z, eps_plus, eps_minus))
        self.pair_masses_ = np.column_stack([eps_plus, eps_minus, np.maximum(0.0, 1.0 - eps_plus - eps_minus)])
        self.training_error_bound_ = float(np.exp(-0.5 * np.sum(self.correlations_**2)))
        self.n_estimators_ = int(self.alphas_.size)
        self.n_features_in_ = X.shape[1]
        warn_if_constant(self, self.n_estimators_ == 0)
        return self

    def _cumulative_scores(self, X):
        """(p, n_estimators_): column t holds sum_{s <= t} alpha_s h_s(x), added in round order, so it is bit-identical
        to the scores of a t-round fit (ties, frequent with {0, 1} weak rankers, stay the same ties)."""
        check_is_fitted(self, "alphas_")
        X = self._check_X(X)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {X.shape[1]} features, but RankBoost is expecting {self.n_features_in_} "
                             "features as input.")
        V = X[:, self.features_]
        H = (V > self.thresholds_).astype(np.float64)
        if self.missing == "q_def":
            nan = np.isnan(V)
            H[nan] = np.broadcast_to(self.qdefs_, H.shape)[nan]
        H *= self.alphas_
        return np.cumsum(H, axis=1, out=H)

    def predict(self, X):
        """Ranking scores F(x) = sum_t alpha_t h_t(x), h_t(x) = [x_{f_t} > theta_t] (q_def_t when x_{f_t} is missing).

        Parameters
        ----------
        X : array-like of shape (n_test, n_features)
            Rows to score.

        Returns
        -------
        scores : ndarray of shape (n_test,)
            Higher ranks higher.
        """
        S = self._cumulative_scores(X)
        return S[:, -1].copy() if self.n_estimators_ else np.zeros(S.shape[0])

    def staged_predict(self, X):
        """Scores after each round t = 1..n_estimators_, for choosing T.

        Parameters
        ----------
        X : array-like of shape (n_test, n_features)
            Rows to score.

        Yields
        ------
        scores : ndarray of shape (n_test,)
            The scores after t rounds: exactly ``predict`` of the model fitted with ``n_estimators=t``.
        """
        S = self._cumulative_scores(X)
        for t in range(self.n_estimators_):
            yield S[:, t].copy()

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = self.missing == "q_def"
        return tags


class RankBoostPath:
    """What :func:`rankboost_path` found (its Returns section describes the attributes)."""

    def __init__(self, n_estimators, scores, measure, estimator):
        self.n_estimators, self.scores, self.measure, self.estimator = n_estimators, scores, measure, estimator
        self.mean_scores = scores.mean(axis=0)
        best = np.argmax(self.mean_scores) if measure.greater_is_better else np.argmin(self.mean_scores)
        self.best_n_estimators = int(n_estimators[best])  # the first best: the smallest value

    def __repr__(self):
        return (f"RankBoostPath(best_n_estimators={self.best_n_estimators}, measure={self.measure.name!r}, "
                f"n_grid={self.n_estimators.size}, n_folds={self.scores.shape[0]})")


def rankboost_path(X, y, n_estimators, groups=None, *, cv=5, scoring=None, refit=True, verbose=0, **params):
    """Choose RankBoost's number of rounds by cross-validation from one fit per fold.

    RankBoost is greedy: the model fitted with ``n_estimators=t`` is the first t rounds of the model fitted with any
    larger value (the same weak rankers and weights; fewer if boosting stopped early, and then the same model).  So each
    fold fits once at the largest value and scores :meth:`RankBoost.staged_predict` on its held-out rows: the scores
    equal those of a refit at every value of the grid, for the cost of one fit per fold (plus O(p T) to predict).

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Training rows, as for :meth:`RankBoost.fit`.
    y : array-like of shape (n_samples,)
        Graded relevance.
    n_estimators : int or array-like of int
        The grid of positive values (sorted, duplicates dropped); an int T means 1, 2, ..., T.
    groups : array-like of shape (n_samples,) or None, default=None
        Query id of each row: only pairs inside a query count, and the folds keep each query whole.
    cv : int, splitter or iterable of (train, test) index arrays, default=5
        An int k >= 2: ``GroupKFold(k)`` with groups, ``KFold(k)`` without, no shuffling.
    scoring : str or None, default=None
        A measure name of :func:`fastrank.metrics.get_measure` (e.g. "ndcg@10", "disagreement") computed per held-out
        fold (inside its groups); None: "ndcg@10" with groups, "disagreement" without.
    refit : bool, default=True
        Fit ``RankBoost(n_estimators=best, **params)`` on all rows.
    verbose : int, bool or "auto", default=0
        Progress per fold (see ``fastrank._progress``).
    **params : dict
        The other :class:`RankBoost` parameters.

    Returns
    -------
    path : RankBoostPath
        ``n_estimators`` (the grid, increasing), ``scores`` (n_folds, n_grid) held-out scores, ``mean_scores``
        (n_grid,), ``measure`` (the :class:`fastrank.metrics.Measure` used), ``best_n_estimators`` (the smallest value
        with the best mean score) and ``estimator`` (a :class:`RankBoost` refitted on all rows at that value, or None
        with ``refit=False``).
    """
    from sklearn.model_selection import GroupKFold, KFold

    from .metrics import get_measure

    refit = check_bool(refit, "refit")
    grid = _asarray(n_estimators, "n_estimators").reshape(-1)
    if grid.dtype.kind in "iu" and np.any(grid > 2**31 - 1):  # before the grid 1..T is allocated
        raise ValueError(f"n_estimators must be at most 2**31 - 1 (the rounds RankBoost takes), got {n_estimators!r}")
    if grid.dtype.kind in "iu" and np.ndim(n_estimators) == 0:
        grid = np.arange(1, int(grid[0]) + 1)
    if grid.size == 0 or grid.dtype.kind not in "iu" or np.any(grid < 1):
        raise ValueError(f"n_estimators must be a positive int or a sequence of positive ints, got {n_estimators!r}")
    grid = np.unique(grid.astype(np.int64))
    measure = get_measure(scoring if scoring is not None else ("ndcg@10" if groups is not None else "disagreement"))
    base = RankBoost(n_estimators=int(grid[-1]), **params)
    X, X_given = base._check_X(X, min_rows=2), X
    y = base._check_target_vector(y, X.shape[0])
    g = None if groups is None else _asarray(groups, "groups")
    group_index(g, X.shape[0])  # one id per row: checked before the folds index the ids
    if isinstance(cv, (int, np.integer)) and not isinstance(cv, bool):
        n_folds = check_int(cv, "cv", low=2)
        cv = GroupKFold(n_splits=n_folds) if g is not None else KFold(n_splits=n_folds)
    if hasattr(cv, "split") and not isinstance(cv, str):
        folds = list(cv.split(X, y, g))
    elif hasattr(cv, "__iter__") and not isinstance(cv, str):
        cv = list(cv)
        if not all(hasattr(fold, "__len__") and len(fold) == 2 for fold in cv):
            raise ValueError("cv as an iterable must yield (train, test) pairs of index arrays")
        folds = [(check_indices(tr, X.shape[0], "a cv training set"), check_indices(te, X.shape[0], "a cv test set"))
                 for tr, te in cv]
    else:
        raise ValueError(f"cv must be a number of folds, a splitter or an iterable of (train, test) index arrays, got "
                         f"{cv!r}")
    if not folds:  # the mean over no fold is NaN, and the best of NaNs the first value of the grid
        raise ValueError("cv gave no (train, test) split; give k >= 2, a splitter or (train, test) index arrays")
    scores = np.empty((len(folds), grid.size))
    try:  # a measure that cannot score these targets at all (ndcg of negative grades): not a matter of folds
        measure(y, np.zeros(y.shape[0]), g)
    except ValueError as exc:
        raise ValueError(f"rankboost_path: {measure.name!r} cannot score y: {str(exc).rstrip('.')}; choose another "
                         "scoring") from None
    for k, (train, test) in enumerate(progress.iterate(folds, desc="rankboost_path", unit="fold", verbose=verbose)):
        try:
            est = base.fit(X[train], y[train], None if g is None else g[train])
        except ValueError as exc:  # e.g. a training fold whose targets all tie, although the whole data do not
            raise ValueError(f"rankboost_path: training fold {k} ({train.size} rows) cannot be fitted: "
                             f"{str(exc).rstrip('.')}; use fewer or shuffled folds (cv)") from None
        g_test = None if g is None else g[test]
        try:
            staged = [measure(y[test], f, g_test) for f in est.staged_predict(X[test])]
            if not staged:  # no round: the constant ranker
                staged = [measure(y[test], np.zeros(test.size), g_test)]
        except ValueError as exc:  # e.g. a test fold whose targets all tie: the measure has nothing to score
            raise ValueError(f"rankboost_path: test fold {k} ({test.size} rows) cannot be scored by {measure.name!r}: "
                             f"{exc}; use fewer or shuffled folds (cv), or another scoring") from None
        # beyond the rounds performed the model is the one that stopped
        scores[k] = [staged[min(t, len(staged)) - 1] for t in grid]
    path = RankBoostPath(grid, scores, measure, None)
    if refit:
        best = RankBoost(n_estimators=path.best_n_estimators, **params).fit(X, y, groups)
        path.estimator = best._record_feature_names(X_given)
    return path
