"""RankRLSCV: regularization chosen by exact fast cross-validation (004 Sections 3.2-3.4)."""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin, clone
from sklearn.utils.validation import check_is_fitted

from ._rankrls import RankRLS
from ._shortcuts import engine_for, resolve_folds
from ._validation import check_alphas

__all__ = ["RankRLSCV"]

_SCORINGS = ("auc", "disagreement", "ndcg")


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


def _unit_ndcg(pred, y):
    gains = np.exp2(y) - 1.0
    disc = 1.0 / np.log2(np.arange(y.size) + 2.0)
    ideal = np.sort(gains)[::-1] @ disc
    if ideal <= 0:
        return np.nan
    order = np.argsort(-pred, kind="stable")
    return float(gains[order] @ disc / ideal)


def holdout_score(pred, Y, sets, codes, scoring):
    """Mean over (hold-out set x group) units of the per-unit score, averaged over outputs.

    Units without a comparable pair (or with zero ideal DCG) are skipped."""
    if scoring == "ndcg" and np.any(Y < 0):
        raise ValueError("scoring='ndcg' needs non-negative relevance labels y (gains 2^y - 1)")
    vals = []
    for k in range(Y.shape[1]):
        per = []
        for u in _units(sets, codes):
            if u.size < 2:
                continue
            if scoring == "ndcg":
                per.append(_unit_ndcg(pred[u, k], Y[u, k]))
            else:
                per.append(_unit_disagreement(pred[u, k], Y[u, k]))
        per = np.asarray(per, dtype=np.float64)
        per = per[np.isfinite(per)]
        if per.size == 0:
            raise ValueError("no hold-out set contains a pair with different targets; cannot score")
        vals.append(per.mean())
    v = float(np.mean(vals))
    return 1.0 - v if scoring == "auc" else v


class RankRLSCV(RegressorMixin, BaseEstimator):
    """RankRLS with ``alpha`` chosen by exact fast cross-validation, then refitted.

    One eigendecomposition of ``S K S`` is shared by every alpha; each extra alpha costs one
    m x m matrix product (object leave-pair-out: the paper's Q of eq. 39) or O(m sum n_q^2)
    (groups) plus the O(1)-per-pair / O(m|U| + |U|^3)-per-set hold-out phase -- never a
    refactorisation (004 Section 3.2 combined with Sections 3.3-3.4).

    Parameters
    ----------
    alphas : array-like of float > 0, default=np.logspace(-3, 3, 13)
    cv : "lpo", "lgo", int, (m,) fold labels, sequence of index arrays, or a splitter with ``split``
        "lpo": leave-pair-out over all pairs (inside groups when ``groups`` is given);
        "lgo": leave-one-group-out (needs ``groups``); otherwise k-fold hold-out on the folds.
    scoring : {"auc", "disagreement", "ndcg"} or None
        "auc" (default) = 1 - pairwise disagreement (ties in held-out predictions count 1/2,
        pairs with equal targets ignored): for "lpo" pooled over all held-out pairs (the LPO-AUC);
        for hold-out sets the mean over (set, group) units.  "disagreement" is minimised.
        "ndcg": mean per-unit NDCG with gains 2^y - 1 (hold-out sets only; y >= 0).
    kernel, gamma, degree, coef0, group_weighting, n_jobs : as for :class:`fastrank.RankRLS`.

    Attributes
    ----------
    alpha_ : float, best_score_ : float, best_estimator_ : RankRLS (refitted on all data)
    cv_results_ : dict with "alphas" and "scores" (one per alpha) and "scoring".
    """

    def __init__(self, alphas=None, *, cv="lpo", scoring=None, kernel="linear", gamma=None, degree=3,
                 coef0=1.0, group_weighting="unweighted", n_jobs=None):
        self.alphas = alphas
        self.cv = cv
        self.scoring = scoring
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.group_weighting = group_weighting
        self.n_jobs = n_jobs

    def _base(self):
        return RankRLS(kernel=self.kernel, gamma=self.gamma, degree=self.degree, coef0=self.coef0,
                       group_weighting=self.group_weighting, n_jobs=self.n_jobs)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True  # y (m, v): every output scored, alpha shared
        tags.input_tags.pairwise = self.kernel == "precomputed"
        return tags

    def fit(self, X, y, groups=None):
        alphas = check_alphas(np.logspace(-3, 3, 13) if self.alphas is None else self.alphas)
        scoring = "auc" if self.scoring is None else self.scoring
        if scoring not in _SCORINGS:
            raise ValueError(f"scoring must be one of {_SCORINGS}, got {scoring!r}")
        base = self._base()
        cv = self.cv
        is_lpo = isinstance(cv, str) and cv == "lpo"
        if isinstance(cv, str) and cv not in ("lpo", "lgo"):
            raise ValueError(f"cv must be 'lpo', 'lgo', an int, fold labels or index sets; got {cv!r}")
        if is_lpo and scoring == "ndcg":
            raise ValueError("scoring='ndcg' needs hold-out sets (cv='lgo' or folds), not 'lpo'")
        prob = engine_for(base, X, y, groups, min_rows=3 if is_lpo else 2, alpha=float(alphas[0]))
        scores = np.empty(alphas.size)
        if is_lpo:
            pairs = prob.default_pairs()
            if pairs.shape[0] == 0:
                raise ValueError("no pairs to leave out (every group has fewer than two members)")
            prob.check_pairs_leave_training(pairs)
            for k, a in enumerate(alphas):
                dis = prob.lpo_disagreement(pairs, float(a))
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
            for k, a in enumerate(alphas):
                out = prob.holdout(sets, float(a))
                pred = np.full_like(prob.Y, np.nan)
                pred[np.concatenate(sets)] = out
                scores[k] = holdout_score(pred, prob.Y, sets, codes, scoring)
        best = int(np.argmin(scores)) if scoring == "disagreement" else int(np.argmax(scores))
        self.alpha_ = float(alphas[best])
        self.best_score_ = float(scores[best])
        self.cv_results_ = {"alphas": alphas.copy(), "scores": scores, "scoring": scoring}
        self.best_estimator_ = clone(base).set_params(alpha=self.alpha_).fit(X, y, groups)
        self.n_features_in_ = getattr(self.best_estimator_, "n_features_in_", None)
        return self

    def predict(self, X):
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.predict(X)

    def score(self, X, y, groups=None):
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.score(X, y, groups)


