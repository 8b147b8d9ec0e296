"""RankRLSCV: regularization chosen by exact fast cross-validation (004 Sections 3.2-3.4)."""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin, clone
from sklearn.utils.validation import check_is_fitted

from ._rankrls import RankRLS
from .metrics import SCORER_NAMES, RankingScorer, make_ranking_scorer
from ._shortcuts import engine_for, resolve_folds
from ._solvers import one_conditioning_warning
from ._progress import progress
from ._validation import check_alphas

__all__ = ["RankRLSCV"]

_SCORINGS = ("auc", "disagreement", "ndcg", "ndcg@k")
_SHARED_FACTOR_MIN_ALPHAS = 30


def _units(sets, codes):
    """Split every hold-out set into its groups (codes=None: the whole set is one unit)."""
    for s in sets:
        if codes is None:
            yield s
        else:
            c = codes[s]
            for q in np.unique(c):
                yield s[c == q]


def _unit_disagreement(pred, y):
    """(n,) predictions/targets of one unit -> disagreement over its pairs with y_i != y_j."""
    dp = pred[:, None] - pred[None, :]
    dt = y[:, None] - y[None, :]
    iu = np.triu_indices(y.size, 1)
    dp, dt = dp[iu], dt[iu]
    valid = dt != 0
    if not np.any(valid):
        return np.nan
    wrong = (dp * dt < 0) + 0.5 * (dp == 0)
    return float(wrong[valid].mean())


def _unit_ndcg(pred, y, k=None):
    gains = np.exp2(y) - 1.0
    disc = 1.0 / np.log2(np.arange(y.size) + 2.0)
    if k is not None:
        disc[k:] = 0.0
    ideal = np.sort(gains)[::-1] @ disc
    if ideal <= 0:
        return np.nan
    order = np.argsort(-pred, kind="stable")
    return float(gains[order] @ disc / ideal)


def holdout_score(pred, Y, sets, codes, scoring):
    """Mean over (hold-out set x group) units of the per-unit score, averaged over outputs.

    Units without a comparable pair (or with zero ideal DCG) are skipped."""
    k_cut = None
    if scoring.startswith("ndcg@"):
        scoring, k_cut = "ndcg", int(scoring[5:])
    if scoring == "ndcg" and np.any(Y < 0):
        raise ValueError("scoring='ndcg' needs non-negative relevance labels y (gains 2^y - 1)")
    vals = []
    for k in range(Y.shape[1]):
        per = []
        for u in _units(sets, codes):
            if u.size < 2:
                continue
            if scoring == "ndcg":
                per.append(_unit_ndcg(pred[u, k], Y[u, k], k_cut))
            else:
                per.append(_unit_disagreement(pred[u, k], Y[u, k]))
        per = np.asarray(per, dtype=np.float64)
        per = per[np.isfinite(per)]
        if per.size == 0:
            raise ValueError("no hold-out set contains a pair with different targets; cannot score")
        vals.append(per.mean())
    v = float(np.mean(vals))
    return 1.0 - v if scoring == "auc" else v


def _check_scoring(scoring):
    """"auc" (default), "disagreement", "ndcg", "ndcg@k" (k >= 1), any measure name of
    :func:`fastrank.metrics.make_ranking_scorer`, a scorer it made, or a callable; returns a
    string for the built-in pairwise/NDCG scores, else a callable (y, pred, groups) -> higher is
    better."""
    if scoring is None:
        return "auc"
    if isinstance(scoring, RankingScorer):
        return scoring.score_predictions
    if callable(scoring):
        return scoring
    if isinstance(scoring, str):
        if scoring in ("auc", "disagreement", "ndcg"):
            return scoring
        if scoring.startswith("ndcg@"):
            tail = scoring[5:]
            if tail.isdigit() and int(tail) >= 1:
                return scoring
        if scoring in SCORER_NAMES:
            return make_ranking_scorer(scoring).score_predictions
    raise ValueError(f"scoring must be 'auc', 'disagreement', 'ndcg', 'ndcg@k' (k >= 1, e.g. 'ndcg@10'), a measure "
                     f"name of fastrank.metrics.make_ranking_scorer ({', '.join(sorted(SCORER_NAMES))}), a scorer "
                     f"it made, or a callable scoring(y_true, y_pred, groups) -> float (higher is better); "
                     f"got {scoring!r}")


class RankRLSCV(RegressorMixin, BaseEstimator):
    """RankRLS with ``alpha`` chosen by exact fast cross-validation, then refitted.

    One eigendecomposition of ``S K S`` is shared by every alpha; each extra alpha costs one
    m x m matrix product (object leave-pair-out: the paper's Q of eq. 39) or O(m sum n_q^2)
    (groups) plus the O(1)-per-pair / O(m|U| + |U|^3)-per-set hold-out phase -- never a
    refactorisation (004 Section 3.2 combined with Sections 3.3-3.4).

    Parameters
    ----------
    alphas : array-like of float > 0, default=np.logspace(-3, 3, 13)
    cv : None, "lpo", "lgo", int, (m,) fold labels, sequence of index arrays, or a splitter
        None (default) picks the honest estimate for the data: leave-one-group-out when
        ``groups`` are given (a model is judged on queries it has not seen), leave-pair-out
        otherwise.  "lpo": leave-pair-out over all pairs (with ``groups``: pairs inside a group,
        the rest of the group still trained on -- optimistic for new queries); "lgo":
        leave-one-group-out (needs ``groups``); an int k: k folds (whole groups with ``groups``);
        a scikit-learn splitter (e.g. ``GroupKFold``): its test folds, ``groups`` passed to its
        ``split``; otherwise fold labels or index sets.
    scoring : {"auc", "disagreement", "ndcg", "ndcg@k"}, a measure name, a scorer, callable or None
        "auc" (default) = 1 - pairwise disagreement (ties in held-out predictions count 1/2,
        pairs with equal targets ignored): for "lpo" pooled over all held-out pairs (the LPO-AUC);
        for hold-out sets the mean over (set, group) units.  "disagreement" is minimised.
        "ndcg" / "ndcg@10": mean per-unit NDCG (at k) with gains 2^y - 1 (hold-out sets only;
        y >= 0).  A callable ``scoring(y_true, y_pred, groups)`` (higher is better; e.g.
        ``functools.partial(fastrank.metrics.ndcg, k=5)``) receives the targets and hold-out
        predictions of all rows of the folds and their group ids (None without groups).  Any
        measure name of :func:`fastrank.metrics.make_ranking_scorer` (e.g. "map", "err") or a
        scorer it made (e.g. ``make_ranking_scorer("precision_at_k", k=5)``) works the same way,
        losses negated.
    kernel, gamma, degree, coef0, group_weighting, n_jobs : as for :class:`fastrank.RankRLS`.
    store_cv_predictions : bool, default=True
        Keep the cross-validated predictions of the chosen alpha (``cv_predictions_``).
    verbose : int, bool or "auto", default=0
        Progress per alpha on stderr (a tqdm bar if installed).

    Attributes
    ----------
    alpha_ : float, best_score_ : float, best_estimator_ : RankRLS (refitted on all data)
    cv_results_ : dict with "alphas" and "scores" (one per alpha), "scoring" and "cv" (the scheme).
    cv_predictions_ : ndarray
        Hold-out schemes: (m,) or (m, v) predictions of each row by the model trained without its
        fold (NaN for rows in no fold); "lpo": (n_pairs, 2[, v]) held-out pair predictions, with
        the pairs in ``cv_pairs_``.
    """

    def __init__(self, alphas=None, *, cv=None, scoring=None, kernel="linear", gamma=None, degree=3,
                 coef0=1.0, group_weighting="unweighted", n_jobs=None, store_cv_predictions=True, verbose=0):
        self.alphas = alphas
        self.cv = cv
        self.scoring = scoring
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.group_weighting = group_weighting
        self.n_jobs = n_jobs
        self.store_cv_predictions = store_cv_predictions
        self.verbose = verbose

    def _base(self):
        return RankRLS(kernel=self.kernel, gamma=self.gamma, degree=self.degree, coef0=self.coef0,
                       group_weighting=self.group_weighting, n_jobs=self.n_jobs)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True  # y (m, v): every output scored, alpha shared
        tags.input_tags.pairwise = self.kernel == "precomputed"
        tags.input_tags.sparse = self.kernel != "precomputed"
        return tags

    def _scheme(self, groups):
        cv = self.cv
        if cv is None:
            return "lgo" if groups is not None and np.unique(np.asarray(groups)).size >= 2 else "lpo"
        if isinstance(cv, str) and cv not in ("lpo", "lgo"):
            raise ValueError(f"cv must be None, 'lpo', 'lgo', an int, fold labels, index sets or a splitter; "
                             f"got {cv!r}")
        return cv

    @one_conditioning_warning
    def fit(self, X, y, groups=None):
        """Score every alpha by exact cross-validation, keep the best, refit on all data.

        ``groups`` (one id per row) restricts the pairs to queries and, with the default
        ``cv=None``, makes the estimate leave-one-query-out."""
        alphas = check_alphas(np.logspace(-3, 3, 13) if self.alphas is None else self.alphas)
        scoring = _check_scoring(self.scoring)
        base = self._base()
        cv = self._scheme(groups)
        is_lpo = isinstance(cv, str) and cv == "lpo"
        if is_lpo and not isinstance(scoring, str) or is_lpo and scoring not in ("auc", "disagreement"):
            raise ValueError(f"scoring={self.scoring!r} needs hold-out sets (cv='lgo', folds or a splitter), not "
                             "leave-pair-out, which scores pairs ('auc' or 'disagreement')")
        prob = engine_for(base, X, y, groups, min_rows=3 if is_lpo else 2, alpha=float(alphas[0]),
                          verbose=self.verbose)
        # Route by the size of the grid (measured crossover ~33 alphas at m = 2000): up to 30 alphas
        # each gets its own Cholesky factor (no eigendecomposition, accurate at any alpha); more share
        # one spectral factor of S K S (one m x m product per alpha).
        if alphas.size > _SHARED_FACTOR_MIN_ALPHAS:
            prob.decompose()
        scores = np.empty(alphas.size)
        bar = progress.iterate(range(alphas.size), desc="RankRLSCV", unit="alpha", verbose=self.verbose)
        if is_lpo:
            pairs = prob.default_pairs()
            if pairs.shape[0] == 0:
                raise ValueError("no pairs to leave out (every group has fewer than two members)")
            prob.check_pairs_leave_training(pairs)
            for k in bar:
                dis = prob.lpo_disagreement(pairs, float(alphas[k]))
                if not np.all(np.isfinite(dis)):
                    raise ValueError("no held-out pair has different targets; cannot score")
                d = float(np.mean(dis))
                scores[k] = 1.0 - d if scoring == "auc" else d
        else:
            if isinstance(cv, str):  # lgo
                if groups is None:
                    raise ValueError("cv='lgo' needs groups")
                if prob.groups.n_groups < 2:
                    raise ValueError("cv='lgo' needs at least two groups")
                sets = prob.group_sets()
            else:
                sets = resolve_folds(cv, prob, groups)
            sets = prob.check_sets(sets)
            codes = prob.groups.codes if groups is not None else None
            rows = np.concatenate(sets)
            by_group = isinstance(cv, str) and alphas.size <= _SHARED_FACTOR_MIN_ALPHAS
            for k in bar:
                pred = np.full_like(prob.Y, np.nan)
                if by_group:  # leave-group-out from one Cholesky factor per alpha
                    pred[:] = prob.leave_group_out(float(alphas[k]))
                else:
                    pred[rows] = prob.holdout(sets, float(alphas[k]))
                scores[k] = _callable_score(scoring, prob.Y, pred, rows, groups) if callable(scoring) \
                    else holdout_score(pred, prob.Y, sets, codes, scoring)
        if not np.all(np.isfinite(scores)):
            raise ValueError(f"the cross-validation score is not finite for alpha in {alphas[~np.isfinite(scores)]}")
        best = int(np.argmin(scores)) if scoring == "disagreement" else int(np.argmax(scores))
        self.alpha_ = float(alphas[best])
        self.best_score_ = float(scores[best])
        scheme = cv if isinstance(cv, str) else type(cv).__name__
        self.cv_results_ = {"alphas": alphas.copy(), "scores": scores,
                            "scoring": scoring if isinstance(scoring, str) else getattr(scoring, "__name__", "callable"),
                            "cv": scheme}
        if self.store_cv_predictions:
            if is_lpo:
                self.cv_pairs_ = pairs
                self.cv_predictions_ = prob.lpo(pairs, self.alpha_)
            else:
                pred = np.full_like(prob.Y, np.nan)
                pred[rows] = prob.holdout(sets, self.alpha_)
                self.cv_predictions_ = pred[:, 0] if prob.one_d else pred
        self.best_estimator_ = clone(base).set_params(alpha=self.alpha_).fit(X, y, groups)
        self.n_features_in_ = getattr(self.best_estimator_, "n_features_in_", None)
        return self

    def predict(self, X):
        """Scores of the refitted best model (higher ranks higher)."""
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.predict(X)

    def score(self, X, y, groups=None, sample_weight=None):
        """Pairwise ranking accuracy of the refitted model, ``1 - pairwise_disagreement(y,
        predict(X), groups, tied_scores="half")`` (see :meth:`fastrank.RankRLS.score`); not R^2."""
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.score(X, y, groups, sample_weight)


def _callable_score(scoring, Y, pred, rows, groups):
    """A user scoring callable on the rows of the folds, averaged over outputs."""
    g = None if groups is None else np.asarray(groups)[rows]
    vals = [float(scoring(Y[rows, k], pred[rows, k], g)) for k in range(Y.shape[1])]
    return float(np.mean(vals))
