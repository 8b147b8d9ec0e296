"""fastrank.dask across its partitions (more partitions than rows, groups cut by partitions under a large common
offset, ties split by one-row partitions) and greedy ordering (of an on-line ordinal learner's scores, of decimal
preferences), each checked against a slow transcription of the definition or the in-memory estimator on the same
data."""

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


def _pairwise_rankrls_oracle(X, y, groups, alpha):
    """Linear RankRLS (eq. 28) from the explicit pairs of each group: X^T L X = sum (x_i - x_j)(x_i - x_j)^T and
    X^T L y = sum (x_i - x_j)(y_i - y_j) over the pairs i < j of a group (differences of nearby values are exact)."""
    A, b = alpha * np.eye(X.shape[1]), np.zeros(X.shape[1])
    for i in range(len(y)):
        for j in range(i + 1, len(y)):
            if groups[i] == groups[j]:
                d = X[i] - X[j]
                A += np.outer(d, d)
                b += d * (y[i] - y[j])
    return np.linalg.solve(A, b)


@pytest.mark.parametrize("what", ["targets", "features"])
def test_dask_fit_under_a_large_common_offset(what):
    # Targets 1e11 + grades were refused as "all tied" (a relative test at 1e-10); with a group cut across partitions
    # the centred sums lost the digits the offset took: coef_ off by 1e-3 relative at 1e13 (in memory: 1e-16).
    dask = pytest.importorskip("dask")
    da = pytest.importorskip("dask.array")
    from fastrank.dask import DaskRankRLS

    rng = np.random.default_rng(3)
    m = 24
    X = rng.integers(0, 6, size=(m, 3)).astype(float)
    y = rng.integers(0, 4, size=m).astype(float)
    groups = rng.choice([7, 2, 5], size=m)
    oracle = _pairwise_rankrls_oracle(X, y, groups, 0.5)  # differences: the offset drops out
    for offset in (1e9, 1e11, 1e13):
        Xo, yo = (X, y + offset) if what == "targets" else (X + offset, y)
        for chunks in ((m,), (1,) * m, (5, 0, 7, 12)):
            with dask.config.set(scheduler="synchronous"):
                est = DaskRankRLS(alpha=0.5).fit(da.from_array(Xo, chunks=(chunks, 3)), yo, groups)
            np.testing.assert_allclose(est.coef_, oracle, rtol=1e-8, atol=1e-12 * np.abs(oracle).max())


def test_dask_ties_are_exact_across_partitions():
    dask = pytest.importorskip("dask")
    da = pytest.importorskip("dask.array")
    from fastrank.dask import DaskRankRLS

    rng = np.random.default_rng(5)
    X = rng.normal(size=(12, 2))
    groups = np.repeat([0, 1, 2], 4)
    y = np.repeat([3.0, 1e11, -2.5], 4)  # tied inside every group, each group cut by the one-row partitions
    Xd = da.from_array(X, chunks=((1,) * 12, 2))
    with dask.config.set(scheduler="synchronous"):
        with pytest.raises(ValueError, match="All targets are tied inside every group"):
            DaskRankRLS().fit(Xd, y, groups)
        y[7] = np.nextafter(1e11, np.inf)  # one preference pair, in the second group
        est = DaskRankRLS(alpha=0.5).fit(Xd, y, groups)
    np.testing.assert_allclose(est.coef_, _pairwise_rankrls_oracle(X, y, groups, 0.5), rtol=1e-8)


def test_greedy_order_ties_of_decimal_preferences_go_to_the_lowest_index():
    # PREF = 0.1, 0.3, 0.7, ...: net preferences equal in exact arithmetic were split by the rounding of the running
    # sums, so the order broke the documented rule (ties in pi to the lowest index) in 79 of 2,000 such matrices.
    from fractions import Fraction

    rng = np.random.default_rng(0)
    for _ in range(300):
        n = int(rng.integers(2, 9))
        P = rng.choice([0.0, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9, 1.0], size=(n, n))
        exact = np.array([[Fraction(str(v)) for v in row] for row in P], dtype=object)
        assert greedy_order(P).tolist() == _naive_greedy(exact)
