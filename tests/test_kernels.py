import numpy as np
import pytest
from sklearn.metrics.pairwise import linear_kernel, polynomial_kernel, rbf_kernel

from fastrank._kernels import resolve_kernel


@pytest.mark.parametrize("n_threads", [1, 2])
def test_kernels_match_sklearn(n_threads):
    rng = np.random.default_rng(0)
    X, Z = rng.normal(size=(120, 7)), rng.normal(size=(33, 7))
    cases = [
        (resolve_kernel("linear", None, 3, 1, 7), linear_kernel(Z, X), linear_kernel(X)),
        (resolve_kernel("rbf", 0.3, 3, 1, 7), rbf_kernel(Z, X, gamma=0.3), rbf_kernel(X, gamma=0.3)),
        (resolve_kernel("poly", 0.2, 3, 0.5, 7), polynomial_kernel(Z, X, degree=3, gamma=0.2, coef0=0.5),
         polynomial_kernel(X, degree=3, gamma=0.2, coef0=0.5)),
        (resolve_kernel("poly", 0.2, 2.5, 3.0, 7), (0.2 * Z @ X.T + 3.0) ** 2.5, (0.2 * X @ X.T + 3.0) ** 2.5),
    ]
    for spec, expected_cross, expected_train in cases:
        np.testing.assert_allclose(spec.cross(Z, X, n_threads), expected_cross, rtol=1e-12, atol=1e-12)
        K = spec.train(X, n_threads)
        np.testing.assert_allclose(K, expected_train, rtol=1e-12, atol=1e-12)
        assert np.array_equal(K, K.T)
        coef = rng.normal(size=(120, 2))
        np.testing.assert_allclose(spec.predict(Z, X, coef, n_threads), expected_cross @ coef, rtol=1e-10, atol=1e-10)


def test_kernel_resolution_errors():
    with pytest.raises(ValueError, match="Unknown kernel"):
        resolve_kernel("sigmoid", None, 3, 1, 2)
    with pytest.raises(ValueError, match="gamma"):
        resolve_kernel("rbf", -1.0, 3, 1, 2)
    assert resolve_kernel("rbf", None, 3, 1, 4).gamma == 0.25
