"""Exact cross-validation of a precomputed kernel scaled by 2^e, with alpha scaled alike: the model is the same
(f = K (K + alpha I)^-1-like forms are invariant), and power-of-two scaling is exact in floating point, so every
hold-out prediction must be the unscaled one.  The leave-pair-out 2 x 2 solve formed its determinant unscaled, which
under- or overflowed near 2^(+-600) and raised "singular" on a well-posed problem."""

import warnings

import numpy as np
import pytest

from cv_oracles import retrain_predict
from fastrank import RankRLS, RankRLSCV
from fastrank.exceptions import IllConditionedWarning
from fastrank.model_selection import factorize, holdout_predictions, kfold_predictions, leave_group_out, leave_pair_out

rng = np.random.default_rng(0)
X = rng.standard_normal((36, 5))
K = X @ X.T + 0.5 * np.eye(36)
y = rng.integers(0, 4, 36).astype(float)  # graded: exclude_ties=True takes the tie route
G = np.repeat(np.arange(4), 9)
SETS = [np.arange(5), np.arange(9, 14), np.array([3, 20, 30])]


def _questions(s, exclude_ties, groups):
    est = RankRLS(kernel="precomputed", alpha=s, exclude_ties=exclude_ties)
    Ks = K * s
    fac = factorize(est, Ks, y, groups)
    out = {"lpo": leave_pair_out(est, Ks, y, groups=groups),
           "holdout": np.concatenate(holdout_predictions(est, Ks, y, SETS, groups=groups)),
           "kfold": kfold_predictions(est, Ks, y, 3, groups=groups),
           "lpo_path": [fac.leave_pair_out(alpha=a * s) for a in (0.1, 10.0)]}
    if groups is not None:
        out["lgo"] = leave_group_out(est, Ks, y, groups)
        out["lgo_path"] = [fac.leave_group_out(alpha=a * s) for a in (0.1, 10.0)]
    cv = RankRLSCV(kernel="precomputed", alphas=np.array([0.1, 1.0, 10.0]) * s, exclude_ties=exclude_ties)
    out["best"] = cv.fit(Ks, y, groups=groups).best_estimator_.predict(Ks)
    return out


@pytest.mark.parametrize("exclude_ties", [False, True])
@pytest.mark.parametrize("groups", [None, G], ids=["objects", "groups"])
@pytest.mark.parametrize("e", [-900, -600, 600, 900])
def test_exact_cv_is_invariant_under_power_of_two_kernel_scale(e, groups, exclude_ties):
    want = _questions(1.0, exclude_ties, groups)
    got = _questions(2.0 ** e, exclude_ties, groups)
    assert got.keys() == want.keys()
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-13, atol=1e-13 * np.abs(want[name]).max(),
                                   err_msg=name)


@pytest.mark.parametrize("e", [-600, 600])
def test_leave_pair_out_at_large_kernel_scale_matches_retraining(e):
    s = 2.0 ** e
    pairs = np.array([[0, 1], [2, 30], [7, 19]])
    got = leave_pair_out(RankRLS(kernel="precomputed", alpha=s), K * s, y, pairs=pairs)
    for p, f in zip(pairs, got):
        np.testing.assert_allclose(f, retrain_predict(K, y, 1.0, p), rtol=1e-10)


def _dense_route_questions(est, groups):
    return [lambda: leave_pair_out(est, K, y, pairs=[[0, 1], [2, 7]], groups=groups),
            lambda: holdout_predictions(est, K, y, SETS, groups=groups),
            lambda: factorize(est, K, y, groups).leave_pair_out(pairs=[[0, 1]])] + \
        ([] if groups is None else [lambda: leave_group_out(est, K, y, groups),
                                    lambda: factorize(est, K, y, groups).leave_group_out(alpha=est.alpha)])


@pytest.mark.parametrize("groups", [None, G], ids=["objects", "groups"])
def test_dense_route_warns_where_large_alpha_cancels_the_targets_digits(groups):
    """Held-out predictions as target plus correction shrink as trace(S K S) / alpha next to the targets: at 1e12 times
    the trace they are off by up to 1e-2 relative against retraining; above 1e5 times it every dense-route question
    warns, below it none does."""
    c = np.ones(4) if groups is not None else np.ones(1)
    trace = sum(cq * (b.shape[0] * np.trace(b) - b.sum()) for cq, b in
                zip(c, [K[np.ix_(r, r)] for r in ([np.flatnonzero(G == q) for q in range(4)] if groups is not None
                                                  else [np.arange(36)])]))
    for question in _dense_route_questions(RankRLS(kernel="precomputed", alpha=2e5 * trace), groups):
        with pytest.warns(IllConditionedWarning, match="alpha above 100000 times the trace of S K S"):
            question()
    for question in _dense_route_questions(RankRLS(kernel="precomputed", alpha=5e4 * trace), groups):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            question()
    a = 1e12 * trace  # the loss the warning announces, against retraining
    with pytest.warns(IllConditionedWarning):
        got = leave_pair_out(RankRLS(kernel="precomputed", alpha=a), K, y, pairs=[[0, 1]], groups=groups)[0]
    want = retrain_predict(K, y, a, [0, 1], groups=groups)
    assert np.abs(got - want).max() > 1e-9 * np.abs(want).max()


def test_leave_group_out_path_warns_for_its_largest_alpha():
    """RankRLSCV(cv="lgo") over 5 or more alphas shares one eigendecomposition (the path): the largest alpha of the
    grid decides the warning."""
    trace = sum(9 * np.trace(K[np.ix_(r, r)]) - K[np.ix_(r, r)].sum() for r in (np.flatnonzero(G == q)
                                                                                 for q in range(4)))
    alphas = np.logspace(-2, 2, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        RankRLSCV(kernel="precomputed", cv="lgo", alphas=alphas).fit(K, y, groups=G)
    with pytest.warns(IllConditionedWarning, match="alpha above 100000 times the trace of S K S"):
        RankRLSCV(kernel="precomputed", cv="lgo", alphas=np.r_[alphas, 2e5 * trace]).fit(K, y, groups=G)
