"""RankRLSCV: regularization chosen by exact fast cross-validation (004 Sections 3.2-3.4)."""

from __future__ import annotations

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin, clone
from sklearn.utils.validation import check_is_fitted

from ._problem import check_features
from ._rankrls import MPRank, RankRLS
from .metrics import SCORER_NAMES, RankingScorer, make_ranking_scorer
from ._exactcv import CVSpec, engine_for, resolve_folds
from ._memory import check_dense_memory
from ._progress import progress
from ._validation import check_alphas

__all__ = ["RankRLSCV", "MPRankCV"]

_SCORINGS = ("auc", "disagreement", "ndcg", "ndcg@k")


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
    kernel, gamma, degree, coef0, group_weighting, exclude_ties, n_jobs : as for :class:`fastrank.RankRLS`.
        With ``exclude_ties=True`` every alpha is scored exactly through one LU factor of
        ``L K + alpha I`` and a Woodbury update per touched group (O(m^2 n_q) per group, O(n_q^3)
        per hold-out set, O(n_q) per held-out pair; no spectral factor is shared across alphas).
    store_cv_predictions : bool, default=True
        Keep the cross-validated predictions of the chosen alpha (``cv_predictions_``).
    verbose : int, bool or "auto", default=0
        Progress per alpha on stderr (a tqdm bar if installed).

    Attributes
    ----------
    alpha_ : float, best_score_ : float
    best_estimator_ : RankRLS
        The model on all data at ``alpha_``, solved from the factorization the scores used (no
        refit; basis-vector models, which share no factor, are refitted).
    cv_results_ : dict with "alphas" and "scores" (one per alpha), "scoring" and "cv" (the scheme).
    cv_predictions_ : ndarray
        Hold-out schemes: (m,) or (m, v) predictions of each row by the model trained without its
        fold (NaN for rows in no fold); "lpo": (n_pairs, 2[, v]) held-out pair predictions, with
        the pairs in ``cv_pairs_``.
    """

    def __init__(self, alphas=None, *, cv=None, scoring=None, kernel="linear", gamma=None, degree=3,
                 coef0=1.0, group_weighting="unweighted", exclude_ties=False, n_jobs=None, store_cv_predictions=True,
                 verbose=0):
        self.alphas = alphas
        self.cv = cv
        self.scoring = scoring
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.group_weighting = group_weighting
        self.exclude_ties = exclude_ties
        self.n_jobs = n_jobs
        self.store_cv_predictions = store_cv_predictions
        self.verbose = verbose

    def _base(self):
        return RankRLS(kernel=self.kernel, gamma=self.gamma, degree=self.degree, coef0=self.coef0,
                       group_weighting=self.group_weighting, exclude_ties=self.exclude_ties, n_jobs=self.n_jobs)

    def _cv_spec(self, alpha):
        return CVSpec(alpha=alpha, kernel=self.kernel, gamma=self.gamma, degree=self.degree, coef0=self.coef0,
                      group_weighting=self.group_weighting, exclude_ties=self.exclude_ties, n_jobs=self.n_jobs)

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
        prob = engine_for(self._cv_spec(float(alphas[0])), X, y, groups, min_rows=3 if is_lpo else 2,
                          verbose=self.verbose)
        prob.prepare_grid(alphas.size)
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
            if isinstance(scoring, str) and scoring in ("auc", "disagreement"):
                # the pairwise score of a unit compares all its pairs: about four n x n matrices
                unit = max(u.size for u in _units(sets, codes))
                check_dense_memory(unit, 4, f"pairwise '{scoring}' score of a hold-out unit of {unit} rows")
            for k in bar:
                pred = np.full_like(prob.Y, np.nan)
                if isinstance(cv, str):  # lgo
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
                if isinstance(cv, str):  # lgo
                    pred[:] = prob.leave_group_out(self.alpha_)
                else:
                    pred[rows] = prob.holdout(sets, self.alpha_)
                self.cv_predictions_ = pred[:, 0] if prob.one_d else pred
        self.best_estimator_ = self._solved(prob, base)
        self.n_features_in_ = getattr(self.best_estimator_, "n_features_in_", None)
        return self

    def _solved(self, prob, base):
        """The RankRLS on all data at ``alpha_`` from the engine's factorization (no refit)."""
        est = clone(base).set_params(alpha=self.alpha_)
        return est._apply_fit(prob.solve(self.alpha_), 0, prob.one_d, prob.problem.n_features, prob.m)

    def predict(self, X):
        """Scores of the refitted best model (higher ranks higher)."""
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.predict(X)

    def score(self, X, y, groups=None, sample_weight=None):
        """Pairwise ranking accuracy of the refitted model, ``1 - pairwise_disagreement(y,
        predict(X), groups, tied_scores="half")`` (see :meth:`fastrank.RankRLS.score`); not R^2."""
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.score(X, y, groups, sample_weight)


class MPRankCV(RegressorMixin, BaseEstimator):
    """MPRank with ``C`` chosen by the exact leave-one-out of Cortes, Mohri & Rastogi (000 Sect.
    2.6), then solved on all data from the same factorization.

    The leave-one-out error of eq. 17 holds out every pair (x_i, x_j), i != j, retrains MPRank at
    the same C on the other m - 2 points (alpha = (m - 2)^2 / (2 C)) and averages the n = 2 cost
    c(h_ij, x_i, x_j) = [(h_ij(x_j) - y_j) - (h_ij(x_i) - y_i)]^2.  Every held-out model sees
    m - 2 points, so each C is one alpha of the RankRLS leave-pair-out (004 Lemma 2): O(1) per pair
    after the factorization, which a grid of more than 30 values of C shares (one spectral factor
    of S K S); smaller grids take one Cholesky factor per C.  With ``groups`` the pairs (and
    MPRank's double sum) run inside the groups.

    Parameters
    ----------
    Cs : array-like of float > 0, default=np.logspace(-3, 3, 13)
    kernel, gamma, degree, coef0, n_jobs : as for :class:`fastrank.MPRank`.
    verbose : int, bool or "auto", default=0

    Attributes
    ----------
    C_ : float, best_score_ : float (the smallest leave-one-out error), best_estimator_ : MPRank
        solved on all data at ``C_`` from the shared factorization (no refit).
    cv_results_ : dict with "Cs" and "loo" (eq. 17 for each C).
    """

    def __init__(self, Cs=None, *, kernel="linear", gamma=None, degree=3, coef0=1.0, n_jobs=None, verbose=0):
        self.Cs = Cs
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.n_jobs = n_jobs
        self.verbose = verbose

    def _base(self):
        return MPRank(kernel=self.kernel, gamma=self.gamma, degree=self.degree, coef0=self.coef0, n_jobs=self.n_jobs)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True  # y (m, v): the cost summed over outputs, C shared
        tags.input_tags.pairwise = self.kernel == "precomputed"
        return tags

    def fit(self, X, y, groups=None):
        """Score every C by the exact leave-one-out error (000 eq. 17), keep the smallest, solve on
        all data."""
        Cs = check_alphas(np.logspace(-3, 3, 13) if self.Cs is None else self.Cs, "Cs")
        base = self._base()
        check_features(X, precomputed=self.kernel == "precomputed", min_rows=3)  # MPRank takes dense X only
        prob = engine_for(base.set_params(C=float(Cs[0]))._cv_spec(), X, y, groups, min_rows=3,
                          verbose=self.verbose)
        pairs = prob.default_pairs()
        if pairs.shape[0] == 0:
            raise ValueError("no pairs to leave out (every group has fewer than two members)")
        prob.check_pairs_leave_training(pairs)
        prob.prepare_grid(Cs.size)
        i, j = pairs[:, 0], pairs[:, 1]
        dy = (prob.Y[j] - prob.Y[i]).reshape(pairs.shape[0], -1)
        loo = np.empty(Cs.size)
        n_train = prob.m - 2
        for k in progress.iterate(range(Cs.size), desc="MPRankCV", unit="C", verbose=self.verbose):
            P = prob.lpo(pairs, n_train * n_train / (2.0 * float(Cs[k]))).reshape(pairs.shape[0], 2, -1)
            loo[k] = float(np.mean(np.sum((P[:, 1] - P[:, 0] - dy) ** 2, axis=1)))
        if not np.all(np.isfinite(loo)):
            raise ValueError(f"the leave-one-out error is not finite for C in {Cs[~np.isfinite(loo)]}")
        best = int(np.argmin(loo))
        self.C_ = float(Cs[best])
        self.best_score_ = float(loo[best])
        self.cv_results_ = {"Cs": Cs.copy(), "loo": loo}
        est = base.set_params(C=self.C_)
        self.best_estimator_ = est._apply_fit(prob.solve(prob.m * prob.m / (2.0 * self.C_)), 0, prob.one_d,
                                              prob.problem.n_features, prob.m)
        self.n_features_in_ = self.best_estimator_.n_features_in_
        return self

    def predict(self, X):
        """Scores of the best model (higher ranks higher)."""
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.predict(X)

    def score(self, X, y, groups=None, sample_weight=None):
        """Pairwise ranking accuracy of the best model (see :meth:`fastrank.MPRank.score`); not R^2."""
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.score(X, y, groups, sample_weight)


def _callable_score(scoring, Y, pred, rows, groups):
    """A user scoring callable on the rows of the folds, averaged over outputs."""
    g = None if groups is None else np.asarray(groups)[rows]
    vals = [float(scoring(Y[rows, k], pred[rows, k], g)) for k in range(Y.shape[1])]
    return float(np.mean(vals))
