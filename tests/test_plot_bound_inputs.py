"""Hostile inputs to the plotting displays and the bound helpers: a named error or the right number, never numpy's or
matplotlib's text, nor an argument silently ignored."""

import numpy as np
import pytest

from fastrank import RankRLS
from fastrank.bounds import empirical_term, kernel_kappa
from fastrank.metrics import magnitude_preserving_cost
from fastrank.plotting import CVCurveDisplay, PermutationTestDisplay, RankLossCurveDisplay


@pytest.mark.parametrize("best_alpha", ["abc", [1.0], np.nan, 0.0, -1.0, True])
def test_cv_curve_best_alpha_is_a_positive_number(best_alpha):
    # "could not convert string to float" / float() of a list reached the user; nan/0/-1 drew nothing on a log axis
    with pytest.raises(ValueError, match="best_alpha must be a positive finite number"):
        CVCurveDisplay([0.1, 1.0], [0.5, 0.6], best_alpha=best_alpha)


@pytest.mark.parametrize("alphas", [[0.0, 1.0], [-1.0, 1.0], [np.nan, 1.0], [np.inf, 1.0]])
def test_cv_curve_alphas_must_fit_a_log_axis(alphas):
    # matplotlib silently dropped these points from the logarithmic alpha axis
    with pytest.raises(ValueError, match="alphas must be positive and finite"):
        CVCurveDisplay(alphas, [0.5, 0.6])


def test_rank_loss_curve_must_be_finite():
    with pytest.raises(ValueError, match="curve contains NaN or infinity"):
        RankLossCurveDisplay([0.5, np.nan])


@pytest.mark.parametrize("score", [None, "abc", [0.5], np.nan])
def test_permutation_score_is_a_finite_number(score):
    with pytest.raises(ValueError, match="score must be a finite number"):
        PermutationTestDisplay(score, [0.1, 0.2], 0.1)


@pytest.mark.parametrize("pvalue", [None, "abc", np.nan, -0.1, 1.5])
def test_permutation_pvalue_is_in_unit_interval(pvalue):
    with pytest.raises(ValueError, match=r"pvalue must be a p-value in \[0, 1\]"):
        PermutationTestDisplay(0.5, [0.1, 0.2], pvalue)


@pytest.mark.parametrize("scores", [None, [np.nan, 0.1], [np.inf]])
def test_permutation_scores_must_be_finite(scores):
    # None became [nan] (numpy's "All-NaN slice" warning); inf failed inside matplotlib
    with pytest.raises(ValueError, match="permutation_scores contains NaN or infinity"):
        PermutationTestDisplay(0.5, scores, 0.1)


@pytest.mark.parametrize(("bins", "error"), [(2.5, TypeError), (True, TypeError), (0, ValueError),
                                             (10**12, ValueError)])
def test_permutation_bins_is_a_positive_integer(bins, error):
    # True drew one bar, 2.5 and 0 failed inside matplotlib, 10**12 asked numpy for 7 TiB
    with pytest.raises(error, match="bins must be an integer"):
        PermutationTestDisplay(0.5, [0.1, 0.2], 0.1, bins=bins)
    for ok in (None, "auto", [0.0, 0.5, 1.0]):
        assert PermutationTestDisplay(0.5, [0.1, 0.2], 0.1, bins=ok).bins is ok
    assert PermutationTestDisplay(0.5, [0.1, 0.2], 0.1, bins=np.int64(3)).bins == 3


@pytest.fixture(scope="module")
def fitted():
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(8, 2)), rng.normal(size=8)
    return RankRLS(alpha=1.0).fit(X, y), X, y


@pytest.mark.parametrize("term", ["l1", "mp1", "hr2"])
@pytest.mark.parametrize("epsilon", [0.5, -1.0, "1", None, True])
def test_empirical_term_refuses_an_epsilon_it_would_ignore(fitted, term, epsilon):
    est, X, y = fitted
    with pytest.raises(ValueError, match="epsilon is used only by the terms svr1 and svr2"):
        empirical_term(est, X, y, term, epsilon=epsilon)


def test_empirical_term_epsilon_still_reaches_svr(fitted):
    est, X, y = fitted
    want = magnitude_preserving_cost(y, est.predict(X), cost="svr", power=1, epsilon=0.3)
    assert empirical_term(est, X, y, "svr1", epsilon=0.3) == want
    assert empirical_term(est, X, y, "mp1", epsilon=0) == empirical_term(est, X, y, "mp1")


def test_kernel_kappa_linear_beyond_squared_overflow():
    # x . x overflowed to inf and kappa = inf was returned although max ||x|| = sqrt(2) 1e200 is representable
    X = np.array([[1e200, 1e200], [1.0, 2.0]])
    assert kernel_kappa(X, "linear") == pytest.approx(np.sqrt(2.0) * 1e200, rel=1e-15)


def test_kernel_kappa_poly_overflow_is_named():
    # numpy's "overflow encountered in power" RuntimeWarning reached the user
    with pytest.raises(ValueError, match="K\\(x, x\\) overflows float64"):
        kernel_kappa(np.full((2, 2), 1e100), "poly")
