"""Exact cross-validation of an estimator with a missing regularization value names the estimator's parameter
(alpha for RankRLS, C for MPRank), as its fit does, not the engine's internal model record."""
import numpy as np
import pytest

import fastrank
from fastrank import model_selection as ms


@pytest.mark.parametrize("est, name", [(fastrank.RankRLS(alpha=None), "alpha"), (fastrank.MPRank(C=None), "C")])
def test_missing_regularization_names_the_parameter(est, name):
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((8, 2)), rng.standard_normal(8)
    with pytest.raises(TypeError, match=f"^{name} must be a positive real number, got None"):
        ms.leave_pair_out(est, X, y)
    with pytest.raises(TypeError, match=f"^{name} must be a positive real number, got None"):
        est.fit(X, y)


@pytest.mark.parametrize("value", ["no", 0])
def test_exclude_ties_must_be_a_bool_as_in_fit(value):
    # "no" is truthy: exact CV used to exclude the ties that the string asked to keep
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((8, 2)), rng.integers(0, 3, 8).astype(float)
    est = fastrank.RankRLS(exclude_ties=value)
    with pytest.raises(ValueError, match="exclude_ties must be True or False"):
        est.fit(X, y)
    with pytest.raises(ValueError, match="exclude_ties must be True or False"):
        ms.leave_pair_out(est, X, y)


@pytest.mark.parametrize("y, message", [(np.array(list("abcdefgh")), "y must be real-valued numbers"),
                                        (np.arange(8) + 1j, "Complex data not supported")])
def test_permutation_test_checks_y_as_fit_does(y, message):
    # a raw numpy "could not convert string to float", and complex targets silently cut to their real part, before
    X = np.random.default_rng(0).standard_normal((8, 2))
    with pytest.raises(ValueError, match=message):
        fastrank.RankRLS().fit(X, y)
    with pytest.raises(ValueError, match=message):
        ms.permutation_test_lpo(fastrank.RankRLS(), X, y, n_permutations=3)


def test_rankrlscv_default_cv_checks_groups_as_fit_does():
    # the default cv counted the distinct ids with np.unique: numpy's raw "'<' not supported between instances"
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((8, 2)), rng.standard_normal(8)
    groups = np.array([1, "a", 2, "b", 1, "a", 2, "b"], dtype=object)
    for est in (fastrank.RankRLS(), fastrank.RankRLSCV(alphas=[1.0])):
        with pytest.raises(TypeError, match="group ids must be mutually comparable"):
            est.fit(X, y, groups)


@pytest.mark.parametrize("folds", [3.0, True, None, "abc", object()])
def test_folds_of_no_accepted_kind_raise_a_named_error(folds):
    # were Python's raw "'float' object is not iterable" or, for a string, "split() takes at most 2 arguments"
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((8, 2)), rng.standard_normal(8)
    with pytest.raises(TypeError, match="folds .* must be an int k >= 2, .*, got"):
        ms.kfold_predictions(fastrank.RankRLS(), X, y, folds)
    if not isinstance(folds, str) and folds is not None:  # cv=None and strings are RankRLSCV's own schemes
        with pytest.raises(TypeError, match="folds .* must be an int k >= 2, .*, got"):
            fastrank.RankRLSCV(alphas=[1.0], cv=folds).fit(X, y)


@pytest.mark.parametrize("test_sets", [None, 3])
def test_test_sets_that_are_no_sequence_raise_a_named_error(test_sets):
    # were Python's raw "'NoneType' object is not iterable"
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((8, 2)), rng.standard_normal(8)
    with pytest.raises(TypeError, match="test_sets must be a sequence of index arrays or boolean masks, got"):
        ms.holdout_predictions(fastrank.RankRLS(), X, y, test_sets)
    with pytest.raises(TypeError, match="test_sets must be a sequence of index arrays or boolean masks, got"):
        ms.preference_holdout_predictions(fastrank.RankRLS(), X, [[0, 1], [1, 2]], test_sets)


@pytest.mark.parametrize("search", [fastrank.RankRLSCV, fastrank.MPRankCV])
def test_searches_refuse_targets_tied_inside_every_group(search):
    """As RankRLS.fit and MPRank.fit do: scored on data without a preference every grid value would tie and a zero
    model would be kept."""
    rng = np.random.default_rng(3)
    X, groups = rng.normal(size=(20, 3)), np.arange(20) // 4
    y = groups.astype(float)  # differs between groups only
    with pytest.raises(ValueError, match="All targets are tied inside every group"):
        search().fit(X, y, groups)
    with pytest.raises(ValueError, match="All targets are tied"):
        search._searched().fit(X, y, groups)


def test_rankrlscv_checks_store_cv_predictions():
    rng = np.random.default_rng(4)
    X, y = rng.normal(size=(12, 3)), rng.normal(size=12)
    with pytest.raises(ValueError, match="store_cv_predictions"):
        fastrank.RankRLSCV(store_cv_predictions="no").fit(X, y)
    assert not hasattr(fastrank.RankRLSCV(store_cv_predictions=False).fit(X, y), "cv_predictions_")
