"""Defects of the on-line learners, RankBoost, greedy ordering and fastrank.dask found with unusual inputs, each
checked against a slow transcription of the definition or the in-memory estimator on the same data."""

import numpy as np
import pytest

import fastrank
from fastrank import greedy_order


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


def _naive_greedy(P):
    """Cohen, Schapire & Singer's greedy ordering by its definition: pi(v) recomputed over the remaining items at
    every step, the first of the largest taken."""
    remaining, order = list(range(P.shape[0])), []
    while remaining:
        pi = [sum(P[v, u] - P[u, v] for u in remaining if u != v) for v in remaining]
        order.append(remaining.pop(int(np.argmax(pi))))
    return order


@pytest.mark.parametrize("labels", ["declared", "strings"])
def test_greedy_order_of_an_ordinal_learner_follows_its_scores(labels):
    # greedy_order took PRank's predict, its labels, as scores: codes 30 < 20 < 10 of an ordered categorical put the
    # lowest class first, string labels raised numpy's "could not convert string to float".
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(12)
    X = rng.normal(size=(40, 2))
    r = np.clip(np.round(X[:, 0] + 1), 0, 2).astype(int)
    y = (pd.Categorical(np.array([30, 20, 10])[r], categories=[30, 20, 10], ordered=True) if labels == "declared"
         else np.array(["bad", "ok", "good"])[r])
    Xt = rng.normal(size=(7, 2))
    for est in (fastrank.PRank(n_epochs=5).fit(X, y), fastrank.OAPBPM(5, variant="voted", random_state=0).fit(X, y)):
        s = est.decision_function(Xt)  # higher ranks higher: the rank scale of classes_
        P = np.array([[1.0 if s[u] > s[v] else 0.5 if s[u] == s[v] else 0.0 for v in range(7)] for u in range(7)])
        assert greedy_order(est, Xt).tolist() == _naive_greedy(P)
