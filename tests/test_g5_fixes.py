"""Metamorphic checks of the measures, scorers and exact cross-validation: the same question asked two ways (a measure
by name or as a scorer, rows permuted, ...) gets the same answer; each side checked against the definition."""

import numpy as np
import pytest

import fastrank
from fastrank import model_selection as ms
from fastrank.metrics import make_ranking_scorer


def _pairs_data(m=14, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(m, 3)), rng.integers(0, 3, m).astype(float)


@pytest.mark.parametrize("name", ["auc", "disagreement"])
def test_leave_pair_out_search_takes_the_scorer_of_a_pair_measure(name):
    # RankRLSCV(cv="lpo", scoring=make_ranking_scorer(name)) was refused although the name is taken; the scorer scores
    # as the name does (a loss negated), and both are the mean over held-out pairs of 004 eq. 1 (ties 1/2) of the
    # models retrained without each pair
    X, y = _pairs_data()
    alphas = [0.01, 1.0, 100.0]
    by_name = fastrank.RankRLSCV(alphas, cv="lpo", scoring=name).fit(X, y)
    scorer = make_ranking_scorer(name)
    by_scorer = fastrank.RankRLSCV(alphas, cv="lpo", scoring=scorer).fit(X, y)
    sign = 1.0 if name == "auc" else -1.0
    np.testing.assert_allclose(by_scorer.cv_results_["scores"], sign * by_name.cv_results_["scores"], rtol=1e-12)
    assert by_scorer.alpha_ == by_name.alpha_ and by_scorer.cv_results_["greater_is_better"]
    assert by_scorer.cv_results_["scoring"] == repr(scorer)
    i, j = np.nonzero(np.triu(y[:, None] != y[None, :]))
    for k, a in enumerate(alphas):
        errors = []
        for p, q in zip(i, j):
            keep = np.setdiff1d(np.arange(y.size), [p, q])
            f = fastrank.RankRLS(alpha=a).fit(X[keep], y[keep]).predict(X[[p, q]])
            sign_y, sign_f = np.sign(y[p] - y[q]), np.sign(f[0] - f[1])
            errors.append(0.5 if sign_f == 0 else float(sign_f != sign_y))
        d = np.mean(errors)
        want = 1.0 - d if name == "auc" else -d
        assert by_scorer.cv_results_["scores"][k] == pytest.approx(want, rel=1e-12)


def test_leave_pair_out_search_refuses_a_scorer_with_other_tie_counting():
    X, y = _pairs_data()
    with pytest.raises(ValueError, match="needs hold-out sets"):
        fastrank.RankRLSCV(cv="lpo", scoring=make_ranking_scorer("disagreement", tied_scores="wrong")).fit(X, y)
