"""Metamorphic checks of the learners' entry points: the same question asked two ways gets the same answer."""

import warnings

import numpy as np
import pytest

import fastrank


def _grouped_data(seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(12, 3)), np.arange(12.0) % 4, np.repeat([0, 1, 2], 4)


@pytest.mark.parametrize("make", [fastrank.RankRLS, fastrank.RankSVM, lambda: fastrank.RankBoost(n_estimators=5)])
def test_a_preference_refit_forgets_the_groups_of_an_earlier_fit(make):
    # fit_preferences after fit(X, y, groups) kept the earlier fit's n_fit_groups_: the preference model then warned
    # (MissingGroupsWarning, "fitted on 3 query groups") where the same model fitted on the graph alone does not
    X, y, g = _grouped_data()
    pairs = np.array([[0, 1], [2, 3], [4, 5], [6, 7], [1, 2]])
    fresh = make().fit_preferences(X, pairs)
    refitted = make().fit(X, y, g).fit_preferences(X, pairs)
    assert vars(refitted).keys() == vars(fresh).keys()
    np.testing.assert_array_equal(refitted.predict(X), fresh.predict(X))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert refitted.score(X, y) == fresh.score(X, y)
