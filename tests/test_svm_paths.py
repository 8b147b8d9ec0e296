"""Hinge RankSVM through the Huber continuation against the explicit-pairs QP, and svrank_path
(warm-started C grid) against independent cold fits."""

import numpy as np
import pytest

import fastrank
from fastrank import SVRank, RankSVM, svrank_path


def explicit_differences(X, y):
    """x_i - x_j for every pair with y_i > y_j (one group), listed explicitly."""
    i, j = np.nonzero(y[:, None] > y[None, :])
    return X[i] - X[j]


@pytest.mark.parametrize("C", [0.05, 1.0])
def test_hinge_objective_equals_the_explicit_pairs_qp(C):
    rng = np.random.default_rng(0)
    m, n = 50, 4
    X = rng.standard_normal((m, n))
    y = X @ rng.standard_normal(n) + 0.5 * rng.standard_normal(m)
    est = RankSVM(C=C, loss="hinge", tol=1e-11, n_jobs=1).fit(X, y)
    assert est.converged_
    D = explicit_differences(X, y)
    primal = 0.5 * est.coef_ @ est.coef_ + C * np.maximum(0.0, 1.0 - D @ est.coef_).sum()
    np.testing.assert_allclose(est.objective_, primal, rtol=1e-12)
    # the explicit-pairs QP with its exact active-set finish (test_ranksvm's oracle)
    from test_ranksvm import qp_oracle

    i, j = np.nonzero(y[:, None] > y[None, :])
    _, obj = qp_oracle(X @ X.T, i, j, np.ones(i.size), C, "hinge")
    np.testing.assert_allclose(est.objective_, obj, rtol=1e-9)


def test_hinge_difference_margins_certified_by_the_explicit_pairs_primal():
    """margin='difference' (per-pair margins y_i - y_j): the smoothed solve reaches the objective
    of the explicit primal at its own coefficients and a 1e-10 certified gap."""
    rng = np.random.default_rng(1)
    m, n = 60, 3
    X = rng.standard_normal((m, n))
    y = X @ rng.standard_normal(n) + rng.standard_normal(m)
    est = RankSVM(C=0.2, loss="hinge", margin="difference", tol=1e-10, n_jobs=1).fit(X, y)
    i, j = np.nonzero(y[:, None] > y[None, :])
    z = (y[i] - y[j]) - (X[i] - X[j]) @ est.coef_
    np.testing.assert_allclose(est.objective_, 0.5 * est.coef_ @ est.coef_ + 0.2 * np.maximum(z, 0).sum(),
                               rtol=1e-12)
    assert est.converged_


def svrank_data(m=150, n=5, seed=3):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, n))
    return X, X @ rng.standard_normal(n) + 0.3 * rng.standard_normal(m), np.repeat(np.arange(m // 30), 30)


@pytest.mark.parametrize("grouped", [False, True])
def test_svrank_path_equals_cold_fits(grouped):
    X, y, groups = svrank_data()
    g = groups if grouped else None
    Cs = np.array([10.0, 0.1, 1000.0, 1.0, 100.0])  # any order; visited sorted, returned as given
    fits = svrank_path(X, y, Cs, g, tol=1e-10, n_jobs=1)
    assert [f.C for f in fits] == list(Cs)
    for C, warm in zip(Cs, fits):
        cold = SVRank(C=C, tol=1e-10, n_jobs=1).fit(X, y, g)
        assert warm.converged_ and cold.converged_
        np.testing.assert_allclose(warm.objective_, cold.objective_, rtol=1e-9)
        # the objective by its definition over the explicit ordered pairs
        f = X @ warm.coef_
        r = f - y
        same = np.ones((len(y), len(y)), bool) if g is None else g[:, None] == g[None, :]
        N = same.sum()
        pair = np.maximum(0.0, np.abs(r[None, :] - r[:, None]) - 0.1)[same].sum()
        np.testing.assert_allclose(warm.objective_, warm.coef_ @ warm.coef_ + C / N * pair, rtol=1e-12)


def test_svrank_path_fewer_planes_and_no_leftover_state():
    X, y, _ = svrank_data(m=300)
    Cs = np.logspace(0, 4, 5)
    fits = svrank_path(X, y, Cs, n_jobs=1)
    cold = [SVRank(C=C, n_jobs=1).fit(X, y) for C in Cs]
    assert sum(f.n_iter_ for f in fits) < sum(c.n_iter_ for c in cold)
    assert not any(hasattr(f, "_path_warm") for f in fits)
    refit = fastrank.base.clone(fits[-1]) if hasattr(fastrank, "base") else SVRank(**fits[-1].get_params())
    np.testing.assert_allclose(refit.fit(X, y).objective_, cold[-1].objective_, rtol=1e-12)


def test_svrank_path_bad_input():
    X, y, _ = svrank_data()
    with pytest.raises(ValueError, match=r"Cs must be a non-empty 1-D sequence of positive numbers, got shape \(0,\)"):
        svrank_path(X, y, [])
    for path in (svrank_path, fastrank.ranksvm_path):  # True was C = 1.0, which RankSVM(C=True) refuses
        with pytest.raises(TypeError, match=r"Cs must be positive real numbers, not booleans"):
            path(X, y, [True])
    with pytest.raises(ValueError, match="linear"):
        svrank_path(X, y, [1.0], kernel="rbf")


def test_svrank_path_verbose(capsys):
    X, y, _ = svrank_data(m=60)
    svrank_path(X, y, [1.0, 10.0], verbose=1, n_jobs=1)
    assert "svrank_path" in capsys.readouterr().err


@pytest.mark.parametrize("path", [fastrank.ranksvm_path, fastrank.svrank_path])
def test_a_path_names_C_given_twice(path):
    X, y = np.random.default_rng(0).normal(size=(20, 3)), np.arange(20) % 3
    with pytest.raises(TypeError, match=rf"{path.__name__} takes C from Cs; remove C=5.0 from its parameters"):
        path(X, y, [0.1, 1.0], C=5.0)


@pytest.mark.parametrize("y", [[1e308, 1e308, -1e308, -1e308, 0.0], [1.5e308, 1e308, -1e308, -1.5e308, 0.0]])
def test_svrank_refuses_targets_whose_differences_overflow(y):
    # w = 0 came back with objective_ 0.0 and converged_ True
    with pytest.raises(ValueError, match=r"SVRank: differences or sums of y overflow float64 .*rescale y"):
        fastrank.SVRank().fit(np.arange(5.0)[:, None], np.array(y))
