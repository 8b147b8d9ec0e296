"""A kernel whose values hold few digits of the ranking model warns: a Gaussian kernel of a small gamma is nearly
1 1^T, S K S keeps only its small part, and each value's rounding (eps) reaches the model divided by alpha.  The
condition number of S K S + alpha I did not see it (7.7e-4 relative error at gamma 1e-6, alpha 1e-11, no warning)."""

import warnings

import mpmath
import numpy as np
import pytest

import fastrank
from fastrank.exceptions import IllConditionedWarning
from fastrank.model_selection import holdout_predictions

RNG = np.random.default_rng(0)
M = 20
X, Y = RNG.normal(size=(M, 3)), RNG.normal(size=M)


def _dual_oracle(gamma, alpha, rows=slice(None)):
    """Predictions of eq. 17, (L K + alpha I) A = L y, on the rows ``rows``, in 50-digit arithmetic."""
    mpmath.mp.dps = 50
    Xr, yr = X[rows], Y[rows]
    m = len(yr)
    K = mpmath.matrix(m, m)
    for i in range(m):
        for j in range(m):
            K[i, j] = mpmath.exp(-gamma * mpmath.fsum((mpmath.mpf(a) - mpmath.mpf(b)) ** 2
                                                      for a, b in zip(Xr[i], Xr[j])))
    L = m * mpmath.eye(m) - mpmath.ones(m, m)
    A = mpmath.lu_solve(L * K + alpha * mpmath.eye(m), L * mpmath.matrix(yr.tolist()))
    Kx = mpmath.matrix([[mpmath.exp(-gamma * mpmath.fsum((mpmath.mpf(a) - mpmath.mpf(b)) ** 2 for a, b in zip(x, z)))
                         for z in Xr] for x in X])
    return np.array((Kx * A).tolist(), dtype=float).ravel()


def _relative_error(got, exact):
    d, e = got - got.mean(), exact - exact.mean()
    return np.abs(d - e).max() / np.abs(e).max()


@pytest.mark.parametrize("gamma, alpha, warns", [(1e-6, 1e-11, True), (1e-8, 1e-12, True), (1.0, 1e-6, False),
                                                 (0.1, 1e-8, False)])
def test_fit_warns_where_the_kernel_values_hold_few_digits_of_the_model(gamma, alpha, warns):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = fastrank.RankRLS(alpha=alpha, kernel="rbf", gamma=gamma).fit(X, Y).predict(X)
    warned = any(issubclass(w.category, IllConditionedWarning) for w in caught)
    error = _relative_error(got, _dual_oracle(gamma, alpha))
    assert warned == warns
    # the contract: accurate, or a warning (the controls are accurate to 1e-9; the warned fits were 7.7e-4 and
    # 1.5e-2 off)
    assert warned or error < 1e-9
    if warned:
        assert error > 1e-5


@pytest.mark.parametrize("gamma, alpha, warns", [(1e-6, 1e-11, True), (1.0, 1e-6, False)])
def test_exact_cv_warns_at_the_same_kernel_rounding(gamma, alpha, warns):
    held = np.arange(5)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = holdout_predictions(fastrank.RankRLS(alpha=alpha, kernel="rbf", gamma=gamma), X, Y, [held])
    warned = any(issubclass(w.category, IllConditionedWarning) for w in caught)
    assert warned == warns
    exact = _dual_oracle(gamma, alpha, rows=np.setdiff1d(np.arange(M), held))[held]
    got = np.ravel(got)
    assert warned or _relative_error(got, exact) < 1e-8
