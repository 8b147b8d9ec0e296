"""The solver layer's entry points for systems assembled by the caller (fastrank.dask sums them
over partitions): eq. 28 and eq. 41 against numpy solves of the systems as written."""

import numpy as np
import pytest

import fastrank
from fastrank._solvers import solve_assembled_basis, solve_assembled_primal


def _rel(a, b):
    return np.max(np.abs(a - b)) / np.max(np.abs(b))


def _system(seed=0, m=60, n=5, r=8, v=2):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, n))
    L = m * np.eye(m) - np.ones((m, m))  # object ranking: sum over all pairs (e_i - e_j)(e_i - e_j)^T
    Y = rng.normal(size=(m, v))
    KmR = np.exp(-0.4 * ((X[:, None, :] - X[None, :r, :]) ** 2).sum(-1))  # Gaussian kernel, basis rows 0..r-1
    return X, L, Y, KmR


def test_primal_equals_the_normal_equations():
    X, L, Y, _ = _system()
    alphas = np.array([0.1, 3.0])
    G, R = X.T @ L @ X, X.T @ L @ Y
    for a in (alphas, alphas[:1]):  # tridiagonal path and the one-alpha Cholesky
        W = solve_assembled_primal(G, R, a)
        assert W.shape == (a.size, X.shape[1], Y.shape[1])
        for k, alpha in enumerate(a):
            assert _rel(W[k], np.linalg.solve(G + alpha * np.eye(X.shape[1]), R)) < 1e-10


def test_basis_equals_eq41():
    X, L, Y, KmR = _system()
    H, g, KRR = KmR.T @ L @ KmR, KmR.T @ L @ Y, KmR[:8]
    alphas = np.array([1e-2, 0.5, 20.0])
    A = solve_assembled_basis(H, g, KRR, alphas)
    for k, alpha in enumerate(alphas):
        assert _rel(A[k], np.linalg.solve(H + alpha * KRR, g)) < 1e-8


def test_basis_with_singular_krr_gives_the_least_squares_predictions():
    """A linear kernel on more basis rows than features: K_RR is singular, coefficients in its null
    space do not change f, so the predictions K_mR a must equal those of the minimum-norm solution."""
    X, L, Y, _ = _system(seed=1)
    KmR = X @ X[:8].T
    H, g, KRR = KmR.T @ L @ KmR, KmR.T @ L @ Y, KmR[:8]
    A = solve_assembled_basis(H, g, KRR, np.array([0.7]))[0]
    ref = np.linalg.lstsq(H + 0.7 * KRR, g, rcond=None)[0]
    assert _rel(KmR @ A, KmR @ ref) < 1e-8


def test_zero_basis_kernel_is_refused():
    with pytest.raises(fastrank.LinAlgError, match="K_RR is zero"):
        solve_assembled_basis(np.eye(3), np.ones((3, 1)), np.zeros((3, 3)), np.array([1.0]))
