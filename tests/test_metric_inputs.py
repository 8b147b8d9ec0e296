"""Hostile inputs to the metrics: overflowing costs, arguments read as booleans, settings silently ignored and
estimators without the scoring method get named errors (or the right number), never numpy's text."""

import re

import numpy as np
import pytest

from fastrank import RankRLS
from fastrank import metrics as M

Y = np.array([3.0, 2.0, 1.0, 0.0, 1.0, 2.0])
F = np.array([0.5, 0.4, 0.3, 0.1, 0.2, 0.9])


@pytest.mark.parametrize(("cost", "power"), [("mp", 2), ("hr", 2), ("hmp", 2), ("svr", 2)])
def test_squared_costs_that_overflow_are_named(cost, power):
    # NaN was returned (hr, hmp, svr) or numpy's "overflow encountered in multiply" reached the user (mp)
    with pytest.raises(ValueError, match="magnitude_preserving_cost: the result overflows float64"):
        M.magnitude_preserving_cost(Y * 1e300, -F * 1e300, cost=cost, power=power)


def test_msd_overflow_is_named():
    with pytest.raises(ValueError, match="overflows float64"):
        M.msd(Y * 1e300, F)


@pytest.mark.parametrize("loss", ["hinge", "squared", "gamma"])
def test_stability_losses_that_overflow_are_named(loss):
    with pytest.raises(ValueError, match="stability_ranking_loss: the result overflows float64"):
        M.stability_ranking_loss(np.array([1.0, 0.0]), np.array([-1e308, 1e308]), loss=loss)


def test_large_but_finite_costs_are_still_computed():
    assert M.magnitude_preserving_cost(Y * 1e300, -F * 1e300, cost="mp", power=1) == pytest.approx(
        M.magnitude_preserving_cost(Y, -F, cost="mp", power=1) * 1e300, rel=1e-12)


@pytest.mark.parametrize("n_jobs", [0, "2", True, 2.5])
def test_mp_cost_checks_n_jobs_although_its_closed_form_needs_none(n_jobs):
    with pytest.raises(ValueError, match="n_jobs must be None or a non-zero integer"):
        M.magnitude_preserving_cost(Y, F, n_jobs=n_jobs)


@pytest.mark.parametrize("normalize", ["no", None, 1])
def test_kendall_distance_normalize_must_be_a_bool(normalize):
    # "no" returned the normalised distance, None the raw count
    with pytest.raises(ValueError, match="normalize must be True or False"):
        M.kendall_distance(Y, F, normalize=normalize)


def test_edge_disagreement_huge_weights():
    # numpy's "overflow encountered in dot" and a NaN result: only the ratios of the weights matter
    pairs = np.array([[0, 1], [2, 3], [4, 5]])
    f = np.array([0.1, 0.2, 0.4, 0.3, 0.0, 0.5])
    want = M.edge_disagreement(pairs, f, [1.0, 1.0, 2.0])
    assert M.edge_disagreement(pairs, f, [0.5e308, 0.5e308, 1e308]) == pytest.approx(want, rel=1e-15)


@pytest.fixture(scope="module")
def fitted():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(6, 2))
    return RankRLS(alpha=1.0).fit(X, Y), X


@pytest.mark.parametrize("gib", ["no", "yes", 1, 0])
def test_greater_is_better_must_be_a_bool(gib):
    # "no" was read as True: a loss scored with the wrong sign
    with pytest.raises(ValueError, match="greater_is_better must be None, True or False"):
        M.make_ranking_scorer(M.pairwise_disagreement, greater_is_better=gib)


def test_greater_is_better_false_still_negates(fitted):
    est, X = fitted
    scorer = M.make_ranking_scorer(M.pairwise_disagreement, greater_is_better=np.False_)
    assert scorer(est, X, Y) == -M.pairwise_disagreement(Y, est.predict(X))


@pytest.mark.parametrize("response_method", ["bad", "decision_function", None, 5])
def test_score_estimator_names_a_missing_method(fitted, response_method):
    # AttributeError / getattr's TypeError reached the user
    est, X = fitted
    with pytest.raises(ValueError, match="has no .* method"):
        M.score_estimator(est, X, Y, response_method=response_method)


def test_score_estimator_needs_an_estimator():
    with pytest.raises(ValueError, match="NoneType has no predict method"):
        M.score_estimator(None, np.ones((6, 2)), Y)


def test_mean_rank_loss_incomparable_classes_are_named():
    # Python's "'<' not supported between instances of 'int' and 'NoneType'" reached the user
    with pytest.raises(ValueError, match=r"^classes must be orderable labels of one kind \(all numbers or all "
                                         r"strings\): None \(NoneType\) at row 2 does not compare with row 0's "
                                         r"label 1 \(int\); give labels of one type$"):
        M.mean_rank_loss([1, 2, 3], [1, 2, 3], scale="positions", classes=[1, 2, None])


@pytest.mark.parametrize("y_true, message", [
    (np.array([1, 2, None, 1], dtype=object),
     "y_true contains a missing label (None at row 2); give every row a label"),
    (np.array([1, 2, "a", 1], dtype=object), "y_true must be orderable labels of one kind (all numbers or all "
                                             "strings): 'a' (str) at row 2 does not compare with row 0's label 1 "
                                             "(int); give labels of one type"),
    (np.array([1, 2, 1.5, np.nan]), "Input y_true contains NaN or infinity (nan at row 3)."),
])
def test_mean_rank_loss_positions_name_the_label_and_its_row(y_true, message):
    # Python's "'<' not supported between instances of 'NoneType' and 'int'" reached the user
    with pytest.raises(ValueError, match="^" + re.escape(message) + "$"):
        M.mean_rank_loss(y_true, [1, 2, 2, 1], scale="positions")
