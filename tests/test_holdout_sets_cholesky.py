"""Hold-out sets and k folds of dense kernel models in the G form of eq. 33, from Cholesky factors
(cv_object_holdout_inverse, cv_group_holdout_inverse) and from the spectral factor (cv_object_holdout,
cv_group_holdout): against retraining without each set, against retraining in extended precision at alpha down to
1e-8 sigma_max (where retraining in double is itself off), and against each other."""

import warnings

import numpy as np
import pytest

import fastrank
from fastrank import _core
from fastrank import model_selection as ms
from fastrank._cv import holdout_score
from fastrank._exactcv import engine_for

from cv_oracles import rbf, retrain_predict
from test_cvcore import _oracle_longdouble

GROUPS = np.array([3, 0, 1, 0, 2, 1, 0, 2, 9, 1, 0, 2, 1, 5, 3, 3, 2, 0, 1, 3, 7, 7, 2, 0])  # sizes 6, 5, 5, 4, 1, 2, 1
GROUP_SETS = [np.array([0, 1, 2]),                    # parts of three groups
              np.flatnonzero(GROUPS == 1),            # one whole group
              np.concatenate([np.flatnonzero(GROUPS == 2), [3, 8]]),  # a whole group, part of another, a singleton
              np.array([13, 20, 21, 5]),              # singleton and two-row groups whole, part of a group
              np.array([6])]
OBJECT_SETS = [np.array([0, 1, 2, 7]), np.array([3, 5]), np.array([10, 11, 12, 13, 20, 21, 22]),
               np.array([4, 6, 8, 9]), np.array([23])]  # sizes 4, 2, 7, 4, 1: four factors


def _data(m, v=1, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, 3))
    Y = X @ rng.normal(size=(3, v)) + 0.3 * rng.normal(size=(m, v))
    return X, Y


def _routes(est, X, Y, groups, sets, alpha):
    """(Cholesky, spectral) predictions of the sets, concatenated, from the engine's kernel and targets."""
    d = engine_for(est, X, Y, groups).dual
    rows = np.concatenate(sets).astype(np.int64)
    offsets = np.concatenate([[0], np.cumsum([len(s) for s in sets])]).astype(np.int64)
    V, sigma = d.decompose()
    if groups is None:
        return (_core.cv_object_holdout_inverse(d.K, d.c, alpha, d.Yg, rows, offsets, 1),
                _core.cv_object_holdout(d.K, V, sigma, d.c, alpha, d.Yg, rows, offsets))
    rg = d.groups.inverse[rows].astype(np.int64)
    return (_core.cv_group_holdout_inverse(d.K, *d.group_args, alpha, d.Yg, rg, offsets, 1),
            _core.cv_group_holdout(d.P, V, sigma, *d.group_args, alpha, d.Yg, rg, offsets))


def _close(a, b, rtol):
    assert np.max(np.abs(a - b)) <= rtol * np.max(np.abs(b)), np.max(np.abs(a - b)) / np.max(np.abs(b))


def _sigma_max(est, X, y, groups=None):
    return float(engine_for(est, X, y, groups).decompose()[1].max())


@pytest.mark.parametrize("weighting", ["unweighted", "normalized", "per_query", "per_object"])
@pytest.mark.parametrize("grouped", [False, True])
def test_sets_equal_retraining_and_the_spectral_route(grouped, weighting):
    groups, sets = (GROUPS, GROUP_SETS) if grouped else (None, OBJECT_SETS)
    X, Y = _data(GROUPS.size, v=2, seed=1)
    est = fastrank.RankRLS(alpha=0.3, kernel="rbf", gamma=0.4, group_weighting=weighting)
    chol, spectral = _routes(est, X, Y, groups, sets, 0.3)
    ref = np.concatenate([retrain_predict(rbf(X, X, 0.4), Y, 0.3, U, groups, weighting) for U in sets])
    _close(chol, ref, 1e-8)
    _close(chol, spectral, 1e-8)
    # through the public path (no spectral factor: the Cholesky route), caller's row order
    out = ms.holdout_predictions(est, X, Y, sets, groups=groups)
    _close(np.concatenate(out), ref, 1e-8)


SIX_SIZES = [np.arange(k * (k + 1) // 2, (k + 1) * (k + 2) // 2) for k in range(6)]  # sizes 1..6: one alpha each


@pytest.mark.parametrize("groups, sets", [(None, OBJECT_SETS), (GROUPS, GROUP_SETS), (None, SIX_SIZES)])
def test_mprank_sets_of_different_sizes_equal_retraining(groups, sets):
    # MPRank retrains each set with alpha = m_train^2 / (2 C) of its training size (six sizes share a spectral factor)
    X, Y = _data(GROUPS.size, seed=2)
    y = Y[:, 0]
    est = fastrank.MPRank(C=40.0, kernel="rbf", gamma=0.4)
    out = ms.holdout_predictions(est, X, y, sets, groups=groups)
    for U, o in zip(sets, out):
        T = np.setdiff1d(np.arange(y.size), U)
        ref = fastrank.MPRank(C=40.0, kernel="rbf", gamma=0.4).fit(X[T], y[T], None if groups is None else groups[T])
        _close(o, ref.predict(X[U]), 1e-8)


@pytest.mark.parametrize("weighting", ["unweighted", "normalized"])
@pytest.mark.parametrize("grouped", [False, True])
def test_small_alpha_matches_extended_precision(grouped, weighting):
    # the accuracy target, for both routes: 1e-8 relative at 1e-8 sigma_max (the spectral form of eq. (*) in
    # fastrank/lpo.hpp, I + T Delta with T = K S G, was off by up to 4e-4 there)
    groups, sets = (GROUPS, GROUP_SETS) if grouped else (None, OBJECT_SETS)
    X, Y = _data(GROUPS.size, seed=3)
    est = fastrank.RankRLS(kernel="rbf", gamma=0.4, group_weighting=weighting)
    sigma_max = _sigma_max(est, X, Y[:, 0], groups)
    K = rbf(X, X, 0.4)
    for ratio in (1e-6, 1e-7, 1e-8):
        alpha = ratio * sigma_max
        ref = np.concatenate(_oracle_longdouble(K, Y[:, 0], alpha, sets, groups, weighting))
        for route in _routes(est, X, Y, groups, sets, alpha):
            _close(route[:, 0], ref, 1e-8)


def test_kfold_predictions_of_a_factorization_are_accurate_at_small_alpha_without_warning():
    X, Y = _data(60, seed=4)
    y = Y[:, 0]
    groups = np.repeat(np.arange(12), 5)
    K = rbf(X, X, 0.3)
    for g, folds in ((None, np.arange(60) % 5), (groups, np.arange(60) % 4)):  # with groups: folds cut every group
        fz = ms.factorize(fastrank.RankRLS(kernel="rbf", gamma=0.3), X, y, g)
        alpha = 1e-8 * float(fz._engine.decompose()[1].max())
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            pred = fz.kfold_predictions(folds, alpha=alpha, groups=g)
        sets = [np.flatnonzero(folds == k) for k in np.unique(folds)]
        for U, ref in zip(sets, _oracle_longdouble(K, y, alpha, sets, g)):
            _close(pred[U], ref, 1e-8)


def test_rankrlscv_grid_to_small_alpha_selects_as_retraining_without_warning():
    rng = np.random.default_rng(5)
    X = rng.uniform(-2, 2, size=(50, 2))
    y = np.sin(2 * X[:, 0]) + X[:, 1] ** 2 + 0.01 * rng.normal(size=50)
    est = fastrank.RankRLS(kernel="rbf", gamma=1.0)
    sigma_max = _sigma_max(est, X, y)
    for alphas in (sigma_max * np.logspace(-8, 0, 9), sigma_max * np.array([1e-8, 1e-6, 1e-2])):  # shared factor or not
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            cv = fastrank.RankRLSCV(alphas=alphas, cv=5, kernel="rbf", gamma=1.0, scoring="disagreement").fit(X, y)
        sets = np.array_split(np.arange(50), 5)
        scores = []
        for a in alphas:
            pred = np.empty((50, 1))
            for U in sets:
                T = np.setdiff1d(np.arange(50), U)
                pred[U, 0] = fastrank.RankRLS(alpha=a, kernel="rbf", gamma=1.0).fit(X[T], y[T]).predict(X[U])
            scores.append(holdout_score(pred, y[:, None], sets, None, "disagreement"))
        np.testing.assert_allclose(cv.cv_results_["scores"], scores, atol=1e-12)
        assert cv.alpha_ == alphas[int(np.argmin(scores))]


def test_indefinite_kernel_raises_a_clear_error_naming_alpha():
    rng = np.random.default_rng(6)
    K = rng.normal(size=(20, 20))
    K = K + K.T  # symmetric, indefinite
    y = rng.normal(size=20)
    est = fastrank.RankRLS(alpha=1e-3, kernel="precomputed")
    with pytest.raises(fastrank.LinAlgError, match=r"not numerically positive definite at alpha=0\.001"):
        ms.holdout_predictions(est, K, y, [np.arange(5)])


def test_route_choice_follows_the_cost_rule():
    X, Y = _data(GROUPS.size, seed=7)
    est = fastrank.RankRLS(alpha=0.3, kernel="rbf", gamma=0.4)
    d = engine_for(est, X, Y, GROUPS).dual
    whole = [np.flatnonzero(GROUPS == g) for g in (0, 1)]
    assert d.holdout_uses_cholesky(whole)  # one alpha, no spectral factor
    d.grid_alphas = 6
    assert not d.holdout_uses_cholesky(whole)  # a grid shares the spectral factor
    assert d.holdout_uses_cholesky([np.arange(0, 24, 2), np.arange(1, 24, 2)])  # sets cutting every group
    obj = engine_for(est, X, Y).dual
    obj.grid_alphas = 3
    assert obj.holdout_uses_cholesky([np.arange(4), np.arange(4, 8)])  # 3 alphas x 1 size
    assert not obj.holdout_uses_cholesky([np.arange(4), np.arange(4, 9)])  # 3 alphas x 2 sizes
