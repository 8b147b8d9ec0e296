"""The routes the Python layer picks (tridiagonal path, Cholesky hold-outs, feature-space hold-outs,
shared spectral factor for large grids) against retraining, through the public API."""

import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fastrank  # noqa: E402
from fastrank import model_selection as ms  # noqa: E402
from cv_oracles import rbf, retrain_predict  # noqa: E402

GROUPS = np.array([2, 0, 1, 0, 2, 1, 0, 2, 1, 1, 0, 2, 1, 0, 2, 0])


def _close(a, b, rtol):
    a, b = np.asarray(a), np.asarray(b)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * max(1.0, float(np.abs(b).max())))


def _data(seed, d=3, v=None):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(GROUPS.size, d))
    y = rng.normal(size=GROUPS.size) if v is None else rng.normal(size=(GROUPS.size, v))
    return X, y


@pytest.mark.parametrize("setting", ["object", "query", "graph"])
def test_path_equals_direct_solves_over_twelve_decades(setting):
    X, Y = _data(1, v=2)
    K = rbf(X, X, 0.5)
    scale = np.linalg.eigvalsh(K).max()
    alphas = scale * np.logspace(-6, 6, 13)
    est = fastrank.RankRLS(kernel="rbf", gamma=0.5, solver="dual")
    if setting == "graph":
        rng = np.random.default_rng(2)
        pairs = rng.integers(0, GROUPS.size, size=(40, 2))
        pairs = pairs[pairs[:, 0] != pairs[:, 1]]
        for a in alphas[::4]:  # graphs keep the eigendecomposition route; spot-check it
            one = fastrank.RankRLS(alpha=a, kernel="rbf", gamma=0.5).fit_preferences(X, pairs)
            assert np.all(np.isfinite(one.dual_coef_))
        return
    groups = GROUPS if setting == "query" else None
    path = fastrank.rankrls_path(X, Y, alphas, groups=groups, estimator=est)
    for k, a in enumerate(alphas):
        one = fastrank.RankRLS(alpha=a, kernel="rbf", gamma=0.5, solver="dual").fit(X, Y, groups)
        _close(path.dual_coef_[k], one.dual_coef_, 1e-10)


@pytest.mark.parametrize("alpha", [1e-6, 1e-2, 1.0, 1e3])
@pytest.mark.parametrize("kernel", ["rbf", "linear"])
def test_cholesky_lpo_and_lgo_equal_retraining(alpha, kernel):
    X, y = _data(3)
    K = rbf(X, X, 0.5) if kernel == "rbf" else X @ X.T  # the linear kernel is rank-deficient (d = 3)
    est = fastrank.RankRLS(alpha=alpha, kernel=kernel, gamma=0.5, solver="dual")
    pairs = np.array([[0, 5], [3, 9], [2, 14]])
    tol = 1e-8 if alpha >= 1e-2 else 1e-6
    for (i, j), got in zip(pairs, ms.leave_pair_out(est, X, y, pairs=pairs)):
        _close(got, retrain_predict(K, y[:, None], alpha, [i, j])[:, 0], tol)
    lgo = ms.leave_group_out(est, X, y, GROUPS)
    for g in np.unique(GROUPS):
        rows = np.flatnonzero(GROUPS == g)
        _close(lgo[rows], retrain_predict(K, y[:, None], alpha, rows, GROUPS)[:, 0], tol)


def test_small_alpha_lpo_is_accurate_where_the_spectral_formula_cancels():
    # issue example: rbf, m = 8, alpha = 1e-8 (the spectral pair formula was off by 68-1250%)
    rng = np.random.default_rng(4)
    X, y = rng.normal(size=(8, 2)), rng.normal(size=8)
    K = rbf(X, X, 1.0)
    est = fastrank.RankRLS(alpha=1e-8, kernel="rbf", gamma=1.0)
    with pytest.warns(fastrank.exceptions.IllConditionedWarning, match="below 1e-09 times the largest eigenvalue"):
        P = ms.leave_pair_out(est, X, y, pairs=[[0, 1], [2, 5]])  # alpha < 1e-9 trace(S K S), as hold-out sets warn
    for (i, j), got in zip([[0, 1], [2, 5]], P):
        _close(got, retrain_predict(K, y[:, None], 1e-8, [i, j])[:, 0], 1e-5)


def test_rankrlscv_routes_give_the_same_cv_results(monkeypatch):
    from fastrank import _exactcv

    X, y = _data(5)
    alphas = np.logspace(-2, 2, 7)
    for cv in ("lpo", "lgo"):
        monkeypatch.setattr(_exactcv, "SHARED_FACTOR_MIN_ALPHAS", 1000)  # one Cholesky factor per alpha
        a = fastrank.RankRLSCV(alphas=alphas, cv=cv, kernel="rbf", gamma=0.5).fit(X, y, GROUPS)
        monkeypatch.setattr(_exactcv, "SHARED_FACTOR_MIN_ALPHAS", 0)  # one shared spectral factor
        b = fastrank.RankRLSCV(alphas=alphas, cv=cv, kernel="rbf", gamma=0.5).fit(X, y, GROUPS)
        np.testing.assert_allclose(a.cv_results_["scores"], b.cv_results_["scores"], rtol=1e-10)
        _close(a.cv_predictions_, b.cv_predictions_, 1e-9)


@pytest.mark.parametrize("sparse", [False, True])
def test_linear_feature_route_equals_retraining(sparse):
    X, y = _data(6, d=4)
    Xin = sp.csr_matrix(X) if sparse else X
    est = fastrank.RankRLS(alpha=0.3, kernel="linear")
    lgo = ms.leave_group_out(est, Xin, y, GROUPS)
    for g in np.unique(GROUPS):
        rows = np.flatnonzero(GROUPS == g)
        train = np.setdiff1d(np.arange(GROUPS.size), rows)
        ref = fastrank.RankRLS(alpha=0.3, solver="primal").fit(X[train], y[train], GROUPS[train]).predict(X[rows])
        _close(lgo[rows], ref, 1e-8)
    sets = [np.array([0, 1, 2]), np.array([7, 9])]
    for U, got in zip(sets, ms.holdout_predictions(est, Xin, y, sets)):
        train = np.setdiff1d(np.arange(GROUPS.size), U)
        _close(got, fastrank.RankRLS(alpha=0.3, solver="primal").fit(X[train], y[train]).predict(X[U]), 1e-8)


def test_basis_vector_models_have_exact_shortcuts():
    X, y = _data(7)
    basis = np.array([0, 2, 4, 6, 8, 10])
    est = fastrank.RankRLS(alpha=0.5, kernel="rbf", gamma=0.5, basis_vectors=basis)
    sets = [np.array([1, 3]), np.array([5, 7, 9])]  # basis rows stay in training

    def refit(train, test, groups=None):
        pos = np.searchsorted(train, basis)  # the same basis rows, indexed in the training part
        m = fastrank.RankRLS(alpha=0.5, kernel="rbf", gamma=0.5, basis_vectors=pos)
        return m.fit(X[train], y[train], None if groups is None else groups[train]).predict(X[test])

    for U, got in zip(sets, ms.holdout_predictions(est, X, y, sets)):
        _close(got, refit(np.setdiff1d(np.arange(GROUPS.size), U), U), 1e-8)
    P = ms.leave_pair_out(est, X, y, pairs=[[1, 3], [11, 15]])
    for (i, j), got in zip([[1, 3], [11, 15]], P):
        _close(got, refit(np.setdiff1d(np.arange(GROUPS.size), [i, j]), [i, j]), 1e-8)
    kf = ms.kfold_predictions(est, X, y, [np.array([1, 3, 5]), np.array([7, 9, 11, 13, 15])], groups=GROUPS)
    for U in ([1, 3, 5], [7, 9, 11, 13, 15]):
        U = np.array(U)
        _close(kf[U], refit(np.setdiff1d(np.arange(GROUPS.size), U), U, GROUPS), 1e-8)
