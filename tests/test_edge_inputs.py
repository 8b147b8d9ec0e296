"""Edge inputs of the measures, the query-id conversions, the plots and the bounds' empirical term: errors name the
argument (not numpy's conversion or overflow messages), and no value overflows silently."""

import numpy as np
import pytest

import fastrank
from fastrank import bounds, metrics


def test_mean_rank_loss_ragged_labels_name_the_argument():
    with pytest.raises(ValueError, match="y_true must be"):
        metrics.mean_rank_loss([[1, 2], [3]], [1, 2])
    with pytest.raises(ValueError, match="y_pred must be"):
        metrics.mean_rank_loss([1, 2], [[1, 2], [3]], scale="positions")
    with pytest.raises(ValueError, match="classes must be"):
        metrics.mean_rank_loss([1, 2], [1, 2], scale="positions", classes=[[1], [2, 3]])


def test_mean_rank_loss_strings_against_numbers_are_not_comparable():
    # without classes the label set is the union of both arrays: a string and a number cannot be ordered together
    with pytest.raises(ValueError, match="mutually comparable"):
        metrics.mean_rank_loss(["a", "b"], [1, 2], scale="positions")
    with pytest.raises(ValueError, match="mutually comparable"):
        metrics.mean_rank_loss([1.0, 2.0], ["1", "2"], scale="positions")
    # the same labels on both sides still work, and classes given by position are unchanged
    assert metrics.mean_rank_loss(["a", "c"], ["c", "a"], scale="positions") == 1.0
    assert metrics.mean_rank_loss([1, 5], [5, 1], scale="positions", classes=[5, 3, 1]) == 2.0


def test_agree_ragged_targets_name_the_argument():
    with pytest.raises(ValueError, match="y_true must be"):
        metrics.agree([[1, 2], [3]], [1.0, 2.0])


def test_empirical_term_non_numeric_targets_name_the_argument():
    rng = np.random.default_rng(0)
    X, y = rng.random((8, 2)), rng.random(8)
    est = fastrank.RankRLS().fit(X, y)
    with pytest.raises(ValueError, match="^y must be real-valued"):
        bounds.empirical_term(est, X, ["a"] * 8)
    with pytest.raises(ValueError, match="^y must be a rectangular array"):
        bounds.empirical_term(est, X, [[1.0, 2.0], [3.0]] * 4)
    assert bounds.empirical_term(est, X, list(y)) == bounds.empirical_term(est, X, y)


def test_plot_inputs_name_the_argument():
    from fastrank.plotting import CVCurveDisplay, PermutationTestDisplay, RankLossCurveDisplay

    with pytest.raises(ValueError, match="alphas must be"):
        CVCurveDisplay(["a", "b"], [0.5, 0.6])
    with pytest.raises(ValueError, match="scores must be"):
        CVCurveDisplay([0.1, 1.0], [[0.5], [0.6, 0.7]])
    with pytest.raises(ValueError, match="curve must be"):
        RankLossCurveDisplay(["x"])
    with pytest.raises(ValueError, match="permutation_scores must be"):
        PermutationTestDisplay(0.7, ["a", "b"], 0.1)


def test_cutoffs_beyond_int64_are_no_cutoff():
    y, f, g = np.array([2.0, 0, 1, 1, 0]), np.array([0.3, 0.2, 0.2, 0.5, 0.1]), np.array([0, 0, 0, 1, 1])
    huge = 2**70
    assert metrics.err_at_k(y, f, g, k=huge) == metrics.err_at_k(y, f, g)
    assert metrics.mean_average_precision(y, f, g, k=huge) == metrics.mean_average_precision(y, f, g)
    # precision@k still divides by k, as trec_eval's P_k
    assert metrics.precision_at_k(y, f, g, k=huge) == pytest.approx(metrics.precision_at_k(y, f, g, k=5) * 5 / huge,
                                                                     rel=1e-15)


def test_measure_cutoff_must_be_a_decimal_number():
    with pytest.raises(ValueError, match="the cutoff after @ must be a positive integer"):
        metrics.get_measure("ndcg@\u00b2")  # a superscript two: str.isdigit() is True, int() refuses it
    assert metrics.get_measure("ndcg@\u0663").kwargs == {"k": 3}  # an Arabic-Indic three is a decimal digit


def test_float_qids_beyond_int64_are_refused_not_merged():
    from fastrank.utils import groups_from_qid

    with pytest.raises(ValueError, match="whole numbers"):
        groups_from_qid([1e30, 2e30, 1e30])
    assert groups_from_qid([2.0**62, -3.0]).tolist() == [2**62, -3]


def test_discount_callable_returning_non_numbers_is_named():
    y, f = np.array([2.0, 1.0, 0.0]), np.array([0.1, 0.3, 0.2])
    for bad in (lambda r: np.array(["a"] * 3), lambda r: None, lambda r: [[1.0], [2.0, 3.0], [4.0]]):
        with pytest.raises(ValueError, match=r"discount\(ranks\) must"):
            metrics.discounted_error(y, f, discount=bad)
    assert metrics.discounted_error(y, f, discount=lambda r: (r < 3).astype(int)) == metrics.discounted_error(
        y, f, discount=lambda r: (r < 3).astype(float))


def test_ragged_query_ids_and_sizes_name_the_argument():
    from fastrank import utils

    with pytest.raises(ValueError, match="^groups must be"):
        utils.group_order([[1, 2], [3]])
    with pytest.raises(ValueError, match="^qid must be"):
        utils.groups_from_qid([[1, 2], [3]])
    with pytest.raises(ValueError, match="^sizes must be"):
        utils.groups_from_sizes([[1, 2], [3]])


def test_ragged_groups_name_the_argument_in_measures_and_learners():
    y = np.array([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="groups must be a rectangular array"):
        metrics.ndcg(y, y, [[1, 2], [3]])
    with pytest.raises(ValueError, match="groups must be a rectangular array"):
        fastrank.RankRLS().fit(np.eye(3), y, [[1, 2], [3]])


@pytest.mark.parametrize("learner", [fastrank.RankRLS, fastrank.MPRank])
def test_no_preference_errors_name_the_learner(learner):
    X = np.random.default_rng(0).normal(size=(6, 2))
    with pytest.raises(ValueError, match=f"every group has a single row. {learner.__name__} with groups"):
        learner().fit(X, np.arange(6.0), np.arange(6))


def test_preference_indices_beyond_int64_are_out_of_range_not_wrapped():
    with pytest.raises(ValueError, match=r"pairs\[0\] = \[1e\+30, 1.0\] refers to a row outside \[0, 3\)"):
        metrics.edge_disagreement([[1e30, 1]], [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="refers to a row outside"):
        fastrank.RankRLS().fit_preferences(np.eye(3), [[1e30, 1]])
