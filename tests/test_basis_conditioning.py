"""Subset-of-regressors RankRLS (eqs. 40-42) on a nearly singular basis kernel K_RR warns: its predictions are
set by the rounding of K_RR (every float64 route of eq. 41 disagrees with every other at such K_RR)."""

import warnings

import numpy as np
import pytest

from fastrank import IllConditionedWarning, RankRLS


def _data(seed, n_features):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((150, n_features))
    return X, X @ rng.standard_normal(n_features) + 0.3 * rng.standard_normal(150)


def _eq41_predictions(X, y, basis, gamma, alpha):
    """Eq. 41 without groups (L = m I - 1 1^T) by numpy's LU: (K_R^T L K_R + alpha K_RR) a = K_R^T L y."""
    KR = np.exp(-gamma * ((X[:, None, :] - X[basis][None, :, :]) ** 2).sum(-1))
    L = X.shape[0] * np.eye(X.shape[0]) - 1.0
    a = np.linalg.solve(KR.T @ L @ KR + alpha * KR[basis], KR.T @ L @ y)
    return KR @ a


def _fit_quietly(est, X, y, **kw):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X, y, **kw)
    return [w for w in caught if issubclass(w.category, IllConditionedWarning)]


def test_nearly_singular_basis_kernel_warns_and_its_routes_disagree():
    # 40 Gaussian basis rows in 2 dimensions: rcond(K_RR) ~ 1e-17; against a 40-digit solve of eq. 41 the
    # predictions were 93 % off, and numpy's LU route gives other numbers again.
    X, y = _data(1, 2)
    est = RankRLS(basis_vectors=np.arange(40), kernel="rbf", gamma=0.1, alpha=1e-3)
    with pytest.warns(IllConditionedWarning, match=r"(?s)reciprocal condition number .*basis_vectors"):
        est.fit(X, y)
    ours, lu = est.predict(X), _eq41_predictions(X, y, np.arange(40), 0.1, 1e-3)
    assert np.max(np.abs(ours - lu)) > 1e-3 * np.max(np.abs(lu))


def test_well_conditioned_basis_is_accurate_and_quiet():
    X, y = _data(0, 10)
    est = RankRLS(basis_vectors=np.arange(40), kernel="rbf", gamma=0.01, alpha=1e-3)
    assert _fit_quietly(est, X, y) == []
    lu = _eq41_predictions(X, y, np.arange(40), 0.01, 1e-3)
    np.testing.assert_allclose(est.predict(X), lu, rtol=1e-9, atol=1e-9 * np.max(np.abs(lu)))


def test_exactly_repeated_basis_rows_are_quiet_and_give_the_model_without_the_repeats():
    # A repeated row adds an exact null direction of K_RR (the same function twice): the eigen route drops it.
    X, y = _data(2, 3)
    X[1], X[3] = X[0], X[2]
    kw = dict(kernel="rbf", gamma=0.5, alpha=1e-2)
    with_repeats = RankRLS(basis_vectors=np.arange(8), **kw)
    assert _fit_quietly(with_repeats, X, y) == []
    without = RankRLS(basis_vectors=np.array([0, 2, 4, 5, 6, 7]), **kw).fit(X, y)
    np.testing.assert_allclose(with_repeats.predict(X), without.predict(X), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("route", ["groups", "exclude_ties", "preferences"])
def test_every_basis_route_warns(route):
    X, y = _data(1, 2)
    est = RankRLS(basis_vectors=np.arange(40), kernel="rbf", gamma=0.1, alpha=1e-3,
                  exclude_ties=route == "exclude_ties")
    with pytest.warns(IllConditionedWarning, match="basis_vectors"):
        if route == "preferences":
            order = np.argsort(-y)
            est.fit_preferences(X, np.column_stack([order[:-1], order[1:]]))
        else:
            est.fit(X, np.round(y), np.repeat(np.arange(5), 30))


def test_dask_basis_model_warns():
    da = pytest.importorskip("dask.array")
    from fastrank.dask import DaskRankRLS

    X, y = _data(1, 2)
    est = DaskRankRLS(basis_vectors=40, kernel="rbf", gamma=0.1, alpha=1e-3, random_state=0)
    with pytest.warns(IllConditionedWarning, match="basis"):
        est.fit(da.from_array(X, chunks=50), da.from_array(y, chunks=50))


@pytest.mark.parametrize("exclude_ties", [False, True])
def test_a_dropped_direction_of_nearly_repeated_gaussian_basis_rows_warns(exclude_ties):
    # rows 1e-6 apart, gamma 0.01: K_RR has no Cholesky factor, its smallest eigenvalue (2e-19 relative, not an exact
    # repeat) was dropped and the next (2.9e-8) reported: no warning, predictions 2e-3 off eq. 41 at alpha = 1
    rng = np.random.default_rng(4)
    X, y = rng.normal(size=(30, 2)), np.round(rng.normal(size=30))
    X[2] = X[0] + 1e-6
    est = RankRLS(alpha=1.0, kernel="rbf", gamma=0.01, basis_vectors=np.array([0, 2, 3, 4, 5, 6, 7, 8, 9]),
                  exclude_ties=exclude_ties)
    with pytest.warns(IllConditionedWarning, match="reciprocal condition number 0.00e"):
        est.fit(X, y)
