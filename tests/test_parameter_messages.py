"""Messages say what the user passed: parameters of the wrong type are errors naming the parameter (never Python's
raw ``float()`` message), a convergence warning names the steps the solver took."""

import numpy as np
import pytest

import fastrank


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    return rng.normal(size=(12, 3)), rng.normal(size=12)


@pytest.mark.parametrize("estimator", [fastrank.RankRLS, fastrank.MPRank, fastrank.RankSVM, fastrank.SVRank])
@pytest.mark.parametrize("kernel", ["linear", "rbf", "poly"])
@pytest.mark.parametrize("name, value", [("gamma", "abc"), ("degree", "x"), ("coef0", [1, 2]), ("coef0", np.nan)])
def test_kernel_parameters_are_numbers_even_where_the_kernel_ignores_them(data, estimator, kernel, name, value):
    X, y = data
    with pytest.raises(ValueError, match=f"^{name} must be"):
        estimator(kernel=kernel, **{name: value}).fit(X, y)


def test_a_kernel_ignores_the_range_of_a_parameter_it_does_not_use(data):
    X, y = data
    base = fastrank.RankRLS().fit(X, y).predict(X)
    np.testing.assert_array_equal(fastrank.RankRLS(gamma=-1.0, degree=-2).fit(X, y).predict(X), base)
    fastrank.RankRLS(kernel="rbf", degree=-2).fit(X, y)
    with pytest.raises(ValueError, match="gamma must be a positive"):
        fastrank.RankRLS(kernel="rbf", gamma=-1.0).fit(X, y)


@pytest.mark.parametrize("path", [fastrank.ranksvm_path, fastrank.svrank_path])
def test_path_values_of_C_must_be_numbers(data, path):
    X, y = data
    with pytest.raises(ValueError, match="^Cs must be"):
        path(X, y, ["a"])


@pytest.mark.parametrize("kernel, basis_vectors, steps",
                         [("rbf", 5, "Newton iterations"), ("linear", 2, "Newton iterations"),
                          ("rbf", None, "cutting planes")])
def test_ranksvm_hinge_names_the_steps_its_solver_takes(data, kernel, basis_vectors, steps):
    """A basis model is a linear RankSVM on the basis features (Newton); only the kernel hinge runs cutting planes."""
    X, y = data
    with pytest.warns(fastrank.exceptions.ConvergenceWarning, match=f"max_iter=1 {steps}"):
        fastrank.RankSVM(loss="hinge", kernel=kernel, basis_vectors=basis_vectors, random_state=0, max_iter=1,
                         tol=1e-15).fit(X, y)
