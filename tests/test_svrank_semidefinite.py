"""SVRank's hinge (epsilon-insensitive) cost needs a positive semidefinite kernel as the squared cost does:
||h||_K^2 = beta^T K beta with an indefinite K makes the cutting-plane objective non-convex."""

import numpy as np
import pytest

from fastrank import SVRank

RNG = np.random.default_rng(7)
X = RNG.normal(size=(60, 5))
Y = X @ RNG.normal(size=5) + 0.1 * RNG.normal(size=60)
K = X @ X.T


@pytest.mark.parametrize("shift", [3.0, 30.0])  # 30: negative diagonal entries; 3: indefinite, positive diagonal
@pytest.mark.parametrize("loss", ["epsilon_insensitive", "squared_epsilon_insensitive"])
def test_an_indefinite_precomputed_kernel_is_refused_and_a_fitted_model_kept(shift, loss):
    assert np.linalg.eigvalsh(K - shift * np.eye(60)).min() < -1
    model = SVRank(kernel="precomputed", loss=loss).fit(K, Y)
    before = model.predict(K)
    with pytest.raises(ValueError, match="not positive semidefinite"):
        model.fit(K - shift * np.eye(60), Y)
    np.testing.assert_array_equal(model.predict(K), before)


def test_a_semidefinite_precomputed_kernel_of_low_rank_gives_the_linear_model():
    """K = X X^T has rank 5 of 60: accepted, and the model is the linear one's (same objective)."""
    lin = SVRank(tol=1e-10).fit(X, Y)
    pre = SVRank(kernel="precomputed", tol=1e-10).fit(K, Y)
    np.testing.assert_allclose(pre.predict(K), lin.predict(X), rtol=1e-6, atol=1e-6 * np.abs(lin.predict(X)).max())


def test_a_polynomial_kernel_with_negative_coef0_is_checked():
    Z = RNG.normal(size=(40, 2))
    G = Z @ Z.T - 1.0  # coef0 = -1, degree 1: K = Z Z^T - 1 1^T, indefinite
    assert np.linalg.eigvalsh(G).min() < -1
    with pytest.raises(ValueError, match="not positive semidefinite"):
        SVRank(kernel="poly", degree=1, gamma=1.0, coef0=-1.0).fit(Z, Z[:, 0])


@pytest.mark.parametrize("loss", ["epsilon_insensitive", "squared_epsilon_insensitive"])
def test_a_gram_matrix_computed_in_float32_is_semidefinite_to_its_precision(loss):
    # refused ("holds -1.7e-05") although its most negative eigenvalue, 2.5e-8 of the largest, is float32 rounding;
    # RankSVM, RankRLS and MPRank accept it.  Oracle: the float64 Gram matrix of the same float32 features.
    X32 = (10.0 * RNG.normal(size=(200, 5))).astype(np.float32)
    K32 = X32 @ X32.T
    K64 = X32.astype(np.float64) @ X32.astype(np.float64).T
    assert np.linalg.eigvalsh(K32.astype(np.float64)).min() < 0
    got = SVRank(kernel="precomputed", loss=loss, tol=1e-10).fit(K32, X32[:, 0] + X32[:, 1])
    want = SVRank(kernel="precomputed", loss=loss, tol=1e-10).fit(K64, X32[:, 0] + X32[:, 1])
    np.testing.assert_allclose(got.predict(K64), want.predict(K64), rtol=1e-4,
                               atol=1e-4 * np.abs(want.predict(K64)).max())
    with pytest.raises(ValueError, match="not positive semidefinite"):  # clearly indefinite in float32: refused
        SVRank(kernel="precomputed", loss=loss).fit((K - 3.0 * np.eye(60)).astype(np.float32), Y)
