"""kernel_kappa with a polynomial kernel of non-integer degree whose diagonal gamma x.x + coef0 is negative: the
diagonal is undefined, as RankRLS says for the same kernel; it was numpy's "invalid value" RuntimeWarning (an error
under filterwarnings) or, with warnings off, a ValueError claiming that K(x, x) overflows."""

import warnings

import numpy as np
import pytest

from fastrank.bounds import kernel_kappa


@pytest.mark.parametrize("silence", [False, True])
def test_kernel_kappa_undefined_poly_diagonal_is_named(silence):
    X = np.ones((3, 2))  # gamma = 1/2: gamma x.x + coef0 = 1 - 10 < 0
    with warnings.catch_warnings():
        if silence:
            warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match="degree is not an integer") as info:
            kernel_kappa(X, "poly", degree=0.5, coef0=-10.0)
    assert "overflow" not in str(info.value)


def test_kernel_kappa_poly_diagonal_still_computed():
    X = np.array([[1.0, 2.0], [0.0, 1.0]])
    # an integer degree is defined for any sign; a non-integer one where the diagonal base is >= 0
    assert kernel_kappa(X, "poly", degree=2, coef0=-10.0) == np.sqrt(max((0.5 * 5 - 10) ** 2, (0.5 - 10) ** 2))
    assert kernel_kappa(X, "poly", degree=1.5, coef0=1.0) == np.sqrt((0.5 * 5 + 1) ** 1.5)
