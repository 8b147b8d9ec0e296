"""The object-ranking primal's normal equations (eq. 30, L = m I - 1 1^T): products of X itself where the features are
not offset, about a centre where they are, and the centred pass after the products of X where a sample of the rows
hid the offset, each against the normal equations in extended precision."""

import numpy as np
import pytest

import fastrank
from fastrank import _solvers


def _exact_coef(X, y, alpha):
    """(m Xc^T Xc + alpha I) w = m Xc^T y in long double, Xc = X less its column means."""
    Xl, yl = X.astype(np.longdouble), y.astype(np.longdouble)
    Xc, yc = Xl - Xl.mean(axis=0), yl - yl.mean()
    m = len(y)
    A = m * (Xc.T @ Xc) + alpha * np.eye(X.shape[1], dtype=np.longdouble)
    b = m * (Xc.T @ yc)
    # one Newton step on the float64 solve in long double residuals: the exact normal equations' solution to ~1e-16
    w = np.linalg.solve(A.astype(float), b.astype(float)).astype(np.longdouble)
    return (w + np.linalg.solve(A.astype(float), (b - A @ w).astype(float))).astype(float)


def _data(kind, m=6000, n=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, n))
    if kind == "offset":
        X += 1e6
    elif kind == "hidden offset":  # the rows the sample reads (every m // 2048-th) are not offset, the other 7/8 are
        m = 8 * 2048
        X = rng.normal(size=(m, n))
        hidden = np.ones(m, bool)
        hidden[::m // 2048] = False
        X[hidden] += 30.0
    y = X @ rng.normal(size=n) + rng.normal(size=m)
    return X, y


@pytest.mark.parametrize("kind, centres", [("not offset", [None]), ("offset", ["sample"]),
                                           ("hidden offset", [None, "mean"])])
def test_object_ranking_primal_products_against_extended_precision(kind, centres, monkeypatch):
    X, y = _data(kind)
    seen = []
    products = _solvers._products_about

    def spy(X_, Y_, centre, block_rows):
        seen.append(centre)
        return products(X_, Y_, centre, block_rows)

    monkeypatch.setattr(_solvers, "_products_about", spy)
    coef = fastrank.RankRLS(alpha=1e-3, solver="primal").fit(X, y).coef_
    assert [None if c is None else "set" for c in seen] == [None if c is None else "set" for c in centres]
    if kind == "hidden offset":  # the second pass is about the mean the products of X found
        np.testing.assert_allclose(seen[1], X.mean(axis=0), rtol=1e-12)
    exact = _exact_coef(X, y, 1e-3)
    np.testing.assert_allclose(coef, exact, rtol=1e-11, atol=1e-12 * np.abs(exact).max())


def test_object_ranking_primal_products_multi_output_and_threads():
    X, y = _data("not offset", m=5000, n=6, seed=1)
    Y = np.c_[y, -2.0 * y + X[:, 0], np.zeros_like(y) + X[:, 1] ** 2]
    fits = [fastrank.RankRLS(alpha=0.5, solver="primal", n_jobs=j).fit(X, Y).coef_ for j in (1, 2)]
    np.testing.assert_array_equal(fits[0], fits[1])
    for k in range(Y.shape[1]):
        exact = _exact_coef(X, Y[:, k], 0.5)
        np.testing.assert_allclose(fits[0][:, k], exact, rtol=1e-11, atol=1e-12 * np.abs(exact).max())


@pytest.mark.parametrize("size", [1, 7, 8, 9, 4095, 4096, 4097, (1 << 21) + 3])
def test_all_finite_finds_every_non_finite_value(size):
    from fastrank import _core

    extremes = np.array([1.0, np.finfo(float).max, -np.finfo(float).max, 5e-324, -0.0])
    a = np.resize(extremes, size)  # finite values whose x - x is exactly 0
    for threads in (1, 2):
        assert _core.all_finite(a, threads)
        for position in {0, size // 2, size - 1}:
            for bad in (np.nan, np.inf, -np.inf):
                b = a.copy()
                b[position] = bad
                assert not _core.all_finite(b, threads), (position, bad, threads)
