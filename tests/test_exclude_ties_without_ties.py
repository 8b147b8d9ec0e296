"""``exclude_ties=True`` on targets where no two rows of a group tie: the tie-excluding Laplacian is the plain one, so
exact cross-validation takes the dense and feature routes (the tie route took one m x m factor per pair of tie cells:
116 s for RankRLSCV over 5 alphas at m = 100, against 0.01 s).  Oracles: retraining without the held-out rows, and the
tie route itself once a single tie makes it the only route."""

import numpy as np
import pytest

from cv_oracles import retrain_predict
from fastrank import RankRLS, RankRLSCV
from fastrank.model_selection import (factorize, holdout_predictions, kfold_predictions, leave_group_out,
                                      leave_pair_out, permutation_test_lpo)

rng = np.random.default_rng(4)
X = rng.standard_normal((30, 4))
y = X[:, 0] + rng.standard_normal(30)  # no ties
G = np.repeat(np.arange(3), 10)
SETS = [np.arange(4), np.array([5, 17, 29])]


def _answers(est, Xa, ya, groups):
    out = {"lpo": leave_pair_out(est, Xa, ya, groups=groups),
           "holdout": np.concatenate(holdout_predictions(est, Xa, ya, SETS, groups=groups)),
           "kfold": kfold_predictions(est, Xa, ya, 3, groups=groups),
           "lpo_path": factorize(est, Xa, ya, groups).leave_pair_out(alpha=0.1)}
    if groups is not None:
        out["lgo"] = leave_group_out(est, Xa, ya, groups)
    return out


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
@pytest.mark.parametrize("groups, weighting", [(None, "unweighted"), (G, "unweighted"), (G, "per_query"),
                                               (G, "per_object"), (G, "normalized")])
def test_untied_targets_give_the_plain_models_answers(kernel, groups, weighting):
    kw = dict(kernel=kernel, alpha=0.3, group_weighting=weighting)
    got = _answers(RankRLS(exclude_ties=True, **kw), X, y, groups)
    want = _answers(RankRLS(**kw), X, y, groups)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-12, atol=1e-14, err_msg=name)


def test_untied_leave_pair_out_matches_retraining():
    K = X @ X.T
    pairs = np.array([[0, 1], [3, 28], [12, 7]])
    got = leave_pair_out(RankRLS(kernel="precomputed", alpha=0.3, exclude_ties=True), K, y, pairs=pairs)
    for p, f in zip(pairs, got):
        np.testing.assert_allclose(f, retrain_predict(K, y, 0.3, p), rtol=1e-10)


def test_one_tie_takes_the_tie_route_and_still_matches_it_pair_by_pair():
    """A single tied pair: the shortcut must not apply (that pair is not an edge); the result differs from the plain
    model's and equals retraining on the tie-excluded pairs."""
    yt = y.copy()
    yt[1] = yt[0]
    pairs = np.array([[2, 3], [0, 5]])
    got = leave_pair_out(RankRLS(alpha=0.3, exclude_ties=True), X, yt, pairs=pairs)
    plain = leave_pair_out(RankRLS(alpha=0.3), X, yt, pairs=pairs)
    assert np.abs(got - plain).max() > 1e-6
    for p, f in zip(pairs, got):
        keep = np.setdiff1d(np.arange(30), p)
        want = RankRLS(alpha=0.3, exclude_ties=True).fit(X[keep], yt[keep]).predict(X[p])
        np.testing.assert_allclose(f, want, rtol=1e-9)


def test_rankrlscv_best_estimator_with_exclude_ties_equals_its_fit():
    alphas = np.logspace(-2, 2, 5)
    cv = RankRLSCV(alphas=alphas, exclude_ties=True, kernel="rbf").fit(X, y)
    plain = RankRLSCV(alphas=alphas, kernel="rbf").fit(X, y)
    np.testing.assert_allclose(cv.cv_predictions_, plain.cv_predictions_, rtol=1e-12)
    assert cv.alpha_ == plain.alpha_
    assert cv.best_estimator_.exclude_ties
    refit = RankRLS(alpha=cv.alpha_, exclude_ties=True, kernel="rbf").fit(X, y)
    np.testing.assert_allclose(cv.best_estimator_.predict(X), refit.predict(X), rtol=1e-10)


@pytest.mark.parametrize("groups", [None, G], ids=["objects", "groups"])
def test_permutation_test_with_exclude_ties_on_untied_targets_equals_the_plain_one(groups):
    got = permutation_test_lpo(RankRLS(exclude_ties=True), X, y, n_permutations=20, random_state=0, groups=groups)
    want = permutation_test_lpo(RankRLS(), X, y, n_permutations=20, random_state=0, groups=groups)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-12)
    assert got[0] == pytest.approx(want[0], rel=1e-12) and got[2] == want[2]
