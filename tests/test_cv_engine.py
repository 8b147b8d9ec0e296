"""The exact-CV engine beyond the complete-graph routes: the tie-excluded model (004, Sect. 2.4),
MPRankCV (000 Sect. 2.6), RankRLSCV's best model solved from the shared factorization, and the
memory guards of the O(m^2) paths.  Oracles retrain explicitly without the held-out rows."""

import sys
from pathlib import Path

import contextlib
import pickle

import numpy as np
import pytest
import sklearn
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, GroupKFold
from sklearn.utils.estimator_checks import parametrize_with_checks

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fastrank  # noqa: E402
from fastrank import model_selection as ms  # noqa: E402
from fastrank._exactcv import engine_for  # noqa: E402
from fastrank.exceptions import MissingGroupsWarning  # noqa: E402
from cv_oracles import rbf  # noqa: E402

GROUPS = np.array([2, 0, 1, 0, 2, 1, 0, 2, 1, 1, 0, 2, 1, 0, 2, 0, 1, 2])


def _close(a, b, rtol):
    a, b = np.asarray(a), np.asarray(b)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * max(1.0, float(np.abs(b).max())))


def _data(seed, m=GROUPS.size, d=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, d))
    y = rng.integers(0, 3, size=m).astype(float)  # graded labels: many ties
    return X, y


def _kernel(X, kernel):
    return rbf(X, X, 0.5) if kernel == "rbf" else X @ X.T


def untied_retrain_predict(K, y, alpha, held, groups=None, weighting="unweighted"):
    """The tie-excluded RankRLS retrained without ``held``: the edges (i, j) with y_i != y_j among
    the kept rows (inside groups), each with the FULL group's pair weight, solved from the normal
    equations (L K + alpha I) A = L y (eq. 17), predicting the held rows."""
    m = K.shape[0]
    T = np.setdiff1d(np.arange(m), held)
    g = np.zeros(m, dtype=int) if groups is None else np.asarray(groups)
    n = np.array([np.sum(g == g[i]) for i in range(m)], dtype=float)
    w = {"unweighted": np.ones(m), "normalized": 1.0 / n}[weighting]
    L = np.zeros((T.size, T.size))
    for a in range(T.size):
        for b in range(a + 1, T.size):
            i, j = T[a], T[b]
            if g[i] == g[j] and y[i] != y[j]:
                L[a, a] += w[i]
                L[b, b] += w[i]
                L[a, b] -= w[i]
                L[b, a] -= w[i]
    A = np.linalg.solve(L @ K[np.ix_(T, T)] + alpha * np.eye(T.size), L @ y[T])
    return K[np.ix_(held, T)] @ A


# ---------------------------------------------------------------------------------------------
# exclude_ties: leave-pair-out, leave-group-out, hold-out sets, RankRLSCV
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kernel", ["rbf", "linear"])
@pytest.mark.parametrize("grouped", [False, True])
def test_tie_excluded_leave_pair_out_equals_retraining(kernel, grouped):
    X, y = _data(1)
    K = _kernel(X, kernel)
    groups = GROUPS if grouped else None
    est = fastrank.RankRLS(alpha=0.7, kernel=kernel, gamma=0.5, exclude_ties=True)
    pairs, P = ms.leave_pair_out(est, X, y, groups=groups, return_pairs=True)
    assert pairs.shape[0] == (np.sum([np.sum(GROUPS == q) * (np.sum(GROUPS == q) - 1) // 2 for q in range(3)])
                              if grouped else y.size * (y.size - 1) // 2)
    for k in range(0, pairs.shape[0], 7):  # tied and untied pairs alike
        _close(P[k], untied_retrain_predict(K, y, 0.7, pairs[k], groups), 1e-8)
    # the explicit model itself: RankRLS(exclude_ties=True) fitted on the other rows
    i, j = pairs[3]
    keep = np.setdiff1d(np.arange(y.size), [i, j])
    ref = fastrank.RankRLS(alpha=0.7, kernel=kernel, gamma=0.5, exclude_ties=True, solver="dual").fit(
        X[keep], y[keep], None if groups is None else groups[keep]).predict(X[[i, j]])
    _close(P[3], ref, 1e-8)
    # two outputs that tie the same pairs, explicit pairs in any order
    Y2 = np.column_stack([y, 3 * y - 1])
    some = np.array([[5, 2], [0, 17], [9, 3]]) if not grouped else np.array([[1, 3], [4, 0], [12, 9]])
    for (i, j), got in zip(some, ms.leave_pair_out(est, X, Y2, pairs=some, groups=groups)):
        for c in range(2):
            _close(got[:, c], untied_retrain_predict(K, Y2[:, c], 0.7, [i, j], groups), 1e-8)


@pytest.mark.parametrize("weighting", ["unweighted", "normalized"])
def test_tie_excluded_leave_group_out_and_holdout_sets_equal_retraining(weighting):
    X, y = _data(2)
    Y2 = np.column_stack([y, 3 * y - 1])  # two outputs that tie the same pairs
    K = _kernel(X, "rbf")
    est = fastrank.RankRLS(alpha=0.3, kernel="rbf", gamma=0.5, exclude_ties=True, group_weighting=weighting)
    lgo = ms.leave_group_out(est, X, Y2, GROUPS)
    for q in np.unique(GROUPS):
        rows = np.flatnonzero(GROUPS == q)
        for c in range(2):
            _close(lgo[rows, c], untied_retrain_predict(K, Y2[:, c], 0.3, rows, GROUPS, weighting), 1e-8)
    sets = [np.array([0, 1, 5]), np.array([7, 3]), np.array([10])]  # sets touching one or several groups
    for s, got in zip(sets, ms.holdout_predictions(est, X, y, sets, groups=GROUPS)):
        _close(got, untied_retrain_predict(K, y, 0.3, s, GROUPS, weighting), 1e-8)
    folds = ms.kfold_predictions(est, X, y, 3)  # object ranking, contiguous folds
    for s in np.array_split(np.arange(y.size), 3):
        _close(folds[s], untied_retrain_predict(K, y, 0.3, s), 1e-8)


@pytest.mark.parametrize("cv", ["lpo", "lgo", 3])
def test_rankrlscv_with_exclude_ties_scores_the_retrained_models(cv):
    X, y = _data(3)
    K = _kernel(X, "rbf")
    alphas = [0.05, 1.0, 20.0]
    groups = None if cv == "lpo" else GROUPS
    got = fastrank.RankRLSCV(alphas=alphas, cv=cv, kernel="rbf", gamma=0.5, exclude_ties=True).fit(X, y, groups)
    for k, a in enumerate(alphas):
        if cv == "lpo":
            i, j = np.triu_indices(y.size, 1)
            P = np.array([untied_retrain_predict(K, y, a, [p, q]) for p, q in zip(i, j)])
            untied = y[i] != y[j]
            d = ((P[:, 0] - P[:, 1]) * (y[i] - y[j]) < 0) + 0.5 * (P[:, 0] == P[:, 1])
            ref = 1.0 - d[untied].mean()
        else:
            pred = np.empty(y.size)
            for q in range(3):  # "lgo", or 3 folds of whole groups over 3 groups: one group each
                rows = np.flatnonzero(GROUPS == q)
                pred[rows] = untied_retrain_predict(K, y, a, rows, GROUPS)
            ref = 1.0 - fastrank.metrics.pairwise_disagreement(y, pred, GROUPS)
        assert got.cv_results_["scores"][k] == pytest.approx(ref, rel=1e-10)
    fresh = fastrank.RankRLS(alpha=got.alpha_, kernel="rbf", gamma=0.5, exclude_ties=True).fit(X, y, groups)
    _close(got.best_estimator_.dual_coef_, fresh.dual_coef_, 1e-10)


@pytest.mark.parametrize("grouped", [False, True])
def test_tie_excluded_cv_of_a_basis_model_equals_retraining(grouped):
    """Subset of regressors with exclude_ties (refused before): the linear model on its features Phi = K(X, X_R)
    Z^-T, Z Z^T = K_RR (eq. 41).  Oracle: (Phi_T^T L_T Phi_T + alpha I) w = Phi_T^T L_T y_T on the training rows T,
    L_T over their untied pairs (inside groups), solved with numpy; the basis rows stay basis functions."""
    rng = np.random.default_rng(0)
    X, g = rng.normal(size=(60, 4)), (np.repeat(np.arange(4), 15) if grouped else None)
    y, basis, alpha = np.round(X[:, 0] + 0.5 * rng.normal(size=60)), np.arange(0, 60, 4), 0.3
    KR = np.exp(-0.5 * ((X[:, None] - X[None, basis]) ** 2).sum(-1))
    Phi = KR @ np.linalg.inv(np.linalg.cholesky(KR[basis])).T

    def retrained(held, rows=None):  # predictions of rows (default: held) by the model trained without held
        T = np.setdiff1d(np.arange(60), held)
        L = np.zeros((T.size, T.size))
        for a, b in zip(*np.triu_indices(T.size, 1)):
            if (g is None or g[T[a]] == g[T[b]]) and y[T[a]] != y[T[b]]:
                L[[a, b, a, b], [a, b, b, a]] += [1.0, 1.0, -1.0, -1.0]
        w = np.linalg.solve(Phi[T].T @ L @ Phi[T] + alpha * np.eye(basis.size), Phi[T].T @ L @ y[T])
        return Phi[held if rows is None else rows] @ w

    est = fastrank.RankRLS(alpha=alpha, kernel="rbf", gamma=0.5, basis_vectors=basis, exclude_ties=True)
    full = est.fit(X, y, g).predict(X)
    ref = retrained([], np.arange(60))
    _close(full - full.mean(), ref - ref.mean(), 1e-12)
    pairs = np.array([(0, 1), (16, 29), (45, 50)])
    lpo = ms.leave_pair_out(est, X, y, groups=g, pairs=pairs)
    ref = np.array([retrained(p) for p in pairs])
    _close(lpo[:, 0] - lpo[:, 1], ref[:, 0] - ref[:, 1], 1e-12)
    sets = [np.arange(0, 60, 7), np.arange(3, 60, 11)]
    for got, rows in zip(ms.holdout_predictions(est, X, y, sets, groups=g), sets):
        _close(got, retrained(rows), 1e-12)
    if grouped:
        lgo = ms.leave_group_out(est, X, y, g)
        for q in range(4):
            rows = np.flatnonzero(g == q)
            _close(lgo[rows] - lgo[rows].mean(), retrained(rows) - retrained(rows).mean(), 1e-12)


def test_tie_excluded_cv_refuses_mixed_ties():
    X, y = _data(4)
    with pytest.raises(ValueError, match="tie the same pairs"):
        ms.leave_group_out(fastrank.RankRLS(exclude_ties=True), X, np.column_stack([y, np.arange(y.size)]), GROUPS)


# ---------------------------------------------------------------------------------------------
# RankRLSCV.best_estimator_ from the shared factorization
# ---------------------------------------------------------------------------------------------

def _forbid_refit(monkeypatch):
    from fastrank import _rankrls

    def refit(*args, **kwargs):
        raise AssertionError("the refit solver was called")

    for name in ("solve_dual", "solve_primal", "solve_cg", "solve_basis"):
        monkeypatch.setattr(_rankrls, name, refit)
    monkeypatch.setattr(fastrank.RankRLS, "fit", refit)


@pytest.mark.parametrize("kernel,d,cv,n_alphas", [("rbf", 3, "lpo", 4), ("rbf", 3, "lgo", 4), ("rbf", 3, 3, 4),
                                                 ("rbf", 3, "lgo", 40), ("linear", 3, "lgo", 4),
                                                 ("linear", 3, "lpo", 40), ("linear", 30, 3, 4)])
def test_rankrlscv_best_estimator_is_solved_not_refitted(kernel, d, cv, n_alphas, monkeypatch):
    rng = np.random.default_rng(5)
    X = rng.normal(size=(GROUPS.size, d))
    y = X[:, 0] - 0.5 * X[:, 1] + 0.3 * rng.normal(size=GROUPS.size)
    groups = None if cv == "lpo" else GROUPS
    alphas = np.logspace(-1, 2, n_alphas)
    _forbid_refit(monkeypatch)
    cv_est = fastrank.RankRLSCV(alphas=alphas, cv=cv, kernel=kernel, gamma=0.5).fit(X, y, groups)
    monkeypatch.undo()
    fresh = fastrank.RankRLS(alpha=cv_est.alpha_, kernel=kernel, gamma=0.5).fit(X, y, groups)
    best = cv_est.best_estimator_
    assert best.fit_mode_ == fresh.fit_mode_ and best.alpha == fresh.alpha
    if fresh.coef_ is not None:
        _close(best.coef_, fresh.coef_, 1e-10)
    if fresh.dual_coef_ is not None:
        _close(best.dual_coef_, fresh.dual_coef_, 1e-10)
    _close(cv_est.predict(X), fresh.predict(X), 1e-10)


# ---------------------------------------------------------------------------------------------
# MPRankCV: the leave-one-out of Cortes et al. (000 eq. 17)
# ---------------------------------------------------------------------------------------------

def _mprank_loo(X, y, C, kernel, groups=None):
    """Eq. 17 by retraining MPRank(C) without each pair (i, j), i != j (inside groups)."""
    m = y.size
    costs = []
    for i in range(m):
        for j in range(m):
            if i == j or (groups is not None and groups[i] != groups[j]):
                continue
            keep = np.setdiff1d(np.arange(m), [i, j])
            h = fastrank.MPRank(C=C, kernel=kernel, gamma=0.5).fit(
                X[keep], y[keep], None if groups is None else groups[keep]).predict(X[[i, j]])
            costs.append(((h[1] - y[j]) - (h[0] - y[i])) ** 2)
    return float(np.mean(costs))


@pytest.mark.parametrize("kernel,grouped", [("rbf", False), ("linear", False), ("rbf", True)])
def test_mprankcv_loo_equals_retraining_without_each_pair(kernel, grouped, monkeypatch):
    rng = np.random.default_rng(6)
    m = 12
    X = rng.normal(size=(m, 3))
    y = X @ np.array([1.0, -0.5, 0.2]) + 0.3 * rng.normal(size=m)
    groups = np.arange(m) % 2 if grouped else None
    Cs = np.logspace(-1, 3, 5)
    _forbid_refit(monkeypatch)
    monkeypatch.setattr(fastrank.MPRank, "fit", fastrank.RankRLS.fit)  # also forbidden
    cv = fastrank.MPRankCV(Cs=Cs, kernel=kernel, gamma=0.5).fit(X, y, groups)
    monkeypatch.undo()
    ref = np.array([_mprank_loo(X, y, C, kernel, groups) for C in Cs])
    _close(cv.cv_results_["loo"], ref, 1e-9)
    assert cv.C_ == Cs[np.argmin(ref)] and cv.best_score_ == pytest.approx(ref.min(), rel=1e-9)
    fresh = fastrank.MPRank(C=cv.C_, kernel=kernel, gamma=0.5).fit(X, y, groups)
    assert isinstance(cv.best_estimator_, fastrank.MPRank) and cv.best_estimator_.C == cv.C_
    _close(cv.predict(X), fresh.predict(X), 1e-10)
    # score without the groups of a grouped fit warns
    with pytest.warns(MissingGroupsWarning) if grouped else contextlib.nullcontext():
        assert 0.0 <= cv.score(X, y) <= 1.0


def test_mprankcv_shared_spectral_factor_for_large_grids():
    rng = np.random.default_rng(7)
    X, y = rng.normal(size=(14, 2)), rng.normal(size=14)
    Cs = np.logspace(-1, 2, 35)  # more than 30: one spectral factor for every C
    big = fastrank.MPRankCV(Cs=Cs, kernel="rbf", gamma=0.5).fit(X, y)
    small = [fastrank.MPRankCV(Cs=[C], kernel="rbf", gamma=0.5).fit(X, y).best_score_ for C in Cs[::8]]
    _close(big.cv_results_["loo"][::8], small, 1e-8)


def test_mprankcv_input_checks_and_registry():
    from fastrank._registry import ESTIMATORS

    assert ESTIMATORS["MPRankCV"] is fastrank.MPRankCV
    X, y = _data(8)
    with pytest.raises(ValueError, match="Cs"):
        fastrank.MPRankCV(Cs=[1.0, -1.0]).fit(X, y)
    with pytest.raises(ValueError, match="minimum of 3"):
        fastrank.MPRankCV(Cs=[1.0]).fit(X[:2], y[:2])
    with pytest.raises(ValueError, match="no pairs"):
        fastrank.MPRankCV(Cs=[1.0]).fit(X[:4], y[:4], groups=[0, 1, 2, 3])


@parametrize_with_checks([fastrank.MPRankCV(Cs=[0.1, 10.0])])
def test_mprankcv_check_estimator(estimator, check):
    check(estimator)


def test_mprankcv_clone_pickle_and_grid_search_with_groups():
    rng = np.random.default_rng(12)
    X = rng.normal(size=(30, 3))
    y = X[:, 0] + 0.2 * rng.normal(size=30)
    groups = np.arange(30) % 5
    est = fastrank.MPRankCV(Cs=[0.1, 10.0], kernel="rbf", gamma=0.3).fit(X, y, groups)
    again = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(again.predict(X), est.predict(X))
    assert clone(est).get_params() == est.get_params()
    # groups routed to fit (pairs inside queries) and score (mean over queries)
    with sklearn.config_context(enable_metadata_routing=True):
        inner = fastrank.MPRankCV(Cs=[0.1, 10.0]).set_fit_request(groups=True).set_score_request(groups=True)
        grid = GridSearchCV(inner, {"kernel": ["linear", "rbf"]}, cv=GroupKFold(3))
        assert grid.fit(X, y, groups=groups).best_params_["kernel"] in ("linear", "rbf")


# ---------------------------------------------------------------------------------------------
# memory guards of the O(m^2) paths (FASTRANK_MAX_DENSE_BYTES small: the guard fires first)
# ---------------------------------------------------------------------------------------------

def test_rankrlscv_linear_kfold_scores_folds_without_a_fold_square_matrix(monkeypatch):
    """The pairwise fold score is sort-based (the measure table), so a fold of 1,000 rows scores
    under a limit that its 1000 x 1000 pair matrices (4 x 8 MB) would break."""
    rng = np.random.default_rng(9)
    X = rng.normal(size=(3000, 4))
    y = X[:, 0] + rng.normal(size=3000)
    monkeypatch.setenv("FASTRANK_MAX_DENSE_BYTES", "16M")
    folds = np.arange(3000) % 3
    est = fastrank.RankRLSCV(alphas=[1.0], cv=folds).fit(X, y)
    pred = fastrank.model_selection.kfold_predictions(fastrank.RankRLS(alpha=1.0), X, y, folds)
    expect = np.mean([1.0 - fastrank.metrics.pairwise_disagreement(y[folds == k], pred[folds == k]) for k in range(3)])
    assert est.best_score_ == pytest.approx(expect, rel=1e-12)
    # the feature-space hold-out itself needs no m x m matrix: NDCG (per-unit sort) runs
    yg = np.clip(np.round(y), 0, None)
    assert fastrank.RankRLSCV(alphas=[1.0], cv=3, scoring="ndcg").fit(X, yg).best_score_ > 0


@pytest.mark.parametrize("call,limit", [("mprank_loo", "10M"), ("tie_route", "6M"), ("tie_lpo", "12M"),
                                        ("mprankcv", "6M")])
def test_dense_paths_refuse_before_allocating(call, limit, monkeypatch):
    """Each limit lies just below the counted matrices (400 x 400 float64 = 1.28 MB)."""
    rng = np.random.default_rng(10)
    X, y = rng.normal(size=(400, 3)), rng.normal(size=400)
    monkeypatch.setenv("FASTRANK_MAX_DENSE_BYTES", limit)
    with pytest.raises(MemoryError, match="solver='cg'"):
        if call == "mprank_loo":  # 8.3 m x m matrices at its peak (measured), counted 9
            ms.mprank_loo_approximation(fastrank.MPRank(C=1.0, kernel="rbf"), X, y)
        elif call == "tie_route":  # 3.5 measured (peak RSS), counted 5
            ms.leave_group_out(fastrank.RankRLS(kernel="rbf", exclude_ties=True), X, np.round(y), np.arange(400) % 5)
        elif call == "tie_lpo":  # all pairs of one group: the factors and the pair arrays, counted 11
            ms.leave_pair_out(fastrank.RankRLS(kernel="rbf", exclude_ties=True), X, np.round(y))
        else:  # the dual route's kernel and eigendecomposition: 5
            fastrank.MPRankCV(Cs=[1.0], kernel="rbf").fit(X, y)


def test_the_list_of_all_pairs_is_guarded(monkeypatch):
    """Basis-vector models hold no m x m kernel; the predictions of all pairs of object ranking are
    O(m^2) (1.3 MB here), and so are the pairs of a few large groups."""
    rng = np.random.default_rng(11)
    X, y = rng.normal(size=(400, 3)), rng.normal(size=400)
    monkeypatch.setenv("FASTRANK_MAX_DENSE_BYTES", "1M")
    est = fastrank.RankRLS(kernel="rbf", basis_vectors=10, random_state=0)
    with pytest.raises(MemoryError, match="leave-pair-out pairs"):
        ms.leave_pair_out(est, X, y)
    engine = engine_for(est, X, y, np.arange(400) // 399)  # groups of 399 and 1: 79,401 pairs listed, 2.5 MB
    with pytest.raises(MemoryError, match="leave-pair-out index pairs"):
        engine.default_pairs()
