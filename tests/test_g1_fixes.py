"""Defects found by running the branches no test reached (exact-CV searches), each with the input that showed it."""

import numpy as np
import pytest

import fastrank


def test_non_finite_cv_scores_name_the_grid_values_on_one_line():
    """A scoring callable returning NaN: the message listed the alphas as numpy's wrapped array print (line breaks,
    1.00000000e-03 ...); it names them as numbers."""
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(12, 3)), rng.normal(size=12)

    def scoring(y_true, y_pred, groups):
        return np.nan

    with pytest.raises(ValueError) as info:
        fastrank.RankRLSCV(np.logspace(-3, 3, 13), cv=3, scoring=scoring).fit(X, y)
    assert str(info.value) == ("the cross-validation score is not finite for alpha in [0.001, 0.00316228, 0.01, "
                               "0.0316228, 0.1, 0.316228, 1, 3.16228, 10, 31.6228, 100, 316.228, 1000]")
