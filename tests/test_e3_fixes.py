"""Defects of the on-line learners, RankBoost, greedy ordering and fastrank.dask found with unusual inputs, each
checked against a slow transcription of the definition or the in-memory estimator on the same data."""

import numpy as np
import pytest

import fastrank


def _ridge_basis_oracle(X, y, basis, gamma, alpha):
    """Subset-of-regressors RankRLS (eqs. 40-42) over all pairs, the Laplacian built entry by entry."""
    m = X.shape[0]
    L = m * np.eye(m) - np.ones((m, m))
    XR = X[basis]
    KXR = np.exp(-gamma * ((X[:, None, :] - XR[None, :, :]) ** 2).sum(-1))
    KRR = np.exp(-gamma * ((XR[:, None, :] - XR[None, :, :]) ** 2).sum(-1))
    a = np.linalg.solve(KXR.T @ L @ KXR + alpha * KRR, KXR.T @ L @ y)
    return lambda Z: np.exp(-gamma * ((Z[:, None, :] - XR[None, :, :]) ** 2).sum(-1)) @ a


def test_dask_basis_rows_from_more_partitions_than_rows():
    # A filtered dask array/dataframe easily has more partitions than rows; dask's take then divided by a mean
    # partition length of 0 and the user saw "range() arg 3 must not be zero" instead of a fit.
    dask = pytest.importorskip("dask")
    da = pytest.importorskip("dask.array")
    from fastrank.dask import DaskRankRLS

    rng = np.random.default_rng(0)
    X = rng.normal(size=(6, 2))
    y = rng.normal(size=6)
    chunks = ((1, 0, 0, 0, 1, 0, 0, 1, 0, 1, 0, 0, 1, 0, 1), (2,))
    with dask.config.set(scheduler="synchronous"):
        est = DaskRankRLS(alpha=0.5, kernel="rbf", gamma=0.4, basis_vectors=[0, 2, 5]).fit(
            da.from_array(X, chunks=chunks), y)
    oracle = _ridge_basis_oracle(X, y, [0, 2, 5], 0.4, 0.5)
    Xt = rng.normal(size=(4, 2))
    np.testing.assert_allclose(est.predict(Xt), oracle(Xt), rtol=1e-8)
    local = fastrank.RankRLS(alpha=0.5, kernel="rbf", gamma=0.4, basis_vectors=[0, 2, 5]).fit(X, y)
    np.testing.assert_allclose(est.predict(Xt), local.predict(Xt), rtol=1e-10)
