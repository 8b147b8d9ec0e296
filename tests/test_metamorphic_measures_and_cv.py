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


def _weighted_auc(y, f, groups, w):
    """1 - the mean over groups of sum w_i w_j err_ij / sum w_i w_j over the pairs y_i > y_j (ties of f: 1/2)."""
    per = []
    for q in np.unique(groups):
        num = den = 0.0
        rows = np.flatnonzero(groups == q)
        for i in rows:
            for j in rows:
                if y[i] > y[j]:
                    num += w[i] * w[j] * ((f[i] < f[j]) + 0.5 * (f[i] == f[j]))
                    den += w[i] * w[j]
        if den > 0:
            per.append(num / den)
    return 1.0 - np.mean(per)


def test_a_ranking_scorer_takes_the_sample_weight_that_routing_sends():
    # set_score_request(sample_weight=True) was accepted, then every call raised TypeError (a search scored NaN);
    # the scorer passes the weights to the measure as estimator.score and score_estimator do
    import sklearn
    from sklearn.model_selection import GridSearchCV, GroupKFold

    rng = np.random.default_rng(3)
    X, y = rng.normal(size=(30, 3)), rng.integers(0, 3, 30).astype(float)
    groups, w = np.repeat(np.arange(6), 5), rng.integers(0, 4, 30).astype(float)
    est = fastrank.RankRLS(alpha=0.5).fit(X, y, groups)
    f = est.predict(X)
    scorer = make_ranking_scorer("auc")
    want = _weighted_auc(y, f, groups, w)
    assert scorer(est, X, y, groups, sample_weight=w) == pytest.approx(want, rel=1e-12)
    assert est.score(X, y, groups, sample_weight=w) == pytest.approx(want, rel=1e-12)
    loss = make_ranking_scorer("disagreement")
    assert loss(est, X, y, groups=groups, sample_weight=w) == pytest.approx(want - 1.0, rel=1e-12)
    with pytest.raises(ValueError, match="does not take sample_weight"):
        make_ranking_scorer("ndcg")(est, X, y, groups, sample_weight=w)
    alphas = [0.1, 10.0]
    with sklearn.config_context(enable_metadata_routing=True):
        routed = make_ranking_scorer("auc").set_score_request(groups=True, sample_weight=True)
        search = GridSearchCV(fastrank.RankRLS().set_fit_request(groups=True), {"alpha": alphas}, cv=GroupKFold(3),
                              scoring=routed).fit(X, y, groups=groups, sample_weight=w)
    for k, a in enumerate(alphas):
        folds = []
        for train, test in GroupKFold(3).split(X, y, groups):
            model = fastrank.RankRLS(alpha=a).fit(X[train], y[train], groups[train])
            folds.append(_weighted_auc(y[test], model.predict(X[test]), groups[test], w[test]))
        assert search.cv_results_["mean_test_score"][k] == pytest.approx(np.mean(folds), rel=1e-12)


# Targets times a power of two: every prediction of the linear exact-CV formulas is scaled by it exactly, so every
# pairwise count and every choice is unchanged.  Near 2^-660 ~ 1e-199 the product of two differences underflowed to 0
# (every held-out pair counted as ordered right: AUC 1 for every alpha); near 2^600 it overflowed (numpy's warning).
TINY, HUGE = 2.0 ** -660, 2.0 ** 600


@pytest.mark.parametrize("kernel", ["rbf", "linear"])  # the C++ pair count of the kernel route; the feature route
@pytest.mark.parametrize("grouped", [False, True])
def test_leave_pair_out_scores_do_not_depend_on_the_scale_of_y(kernel, grouped):
    rng = np.random.default_rng(7)
    X, y = rng.normal(size=(16, 2)), rng.integers(0, 3, 16).astype(float)
    groups = rng.integers(0, 2, 16) if grouped else None
    alphas = [0.01, 1.0, 100.0]
    want = fastrank.RankRLSCV(alphas, cv="lpo", kernel=kernel).fit(X, y, groups).cv_results_["scores"]
    assert np.all(want < 1.0)
    est = fastrank.RankRLS(alpha=1.0, kernel=kernel)
    perm = ms.permutation_test_lpo(est, X, y, 4, 0, groups)
    for scale in (TINY, HUGE):
        got = fastrank.RankRLSCV(alphas, cv="lpo", kernel=kernel).fit(X, scale * y, groups).cv_results_["scores"]
        np.testing.assert_allclose(got, want, rtol=1e-12)
        scaled = ms.permutation_test_lpo(est, X, scale * y, 4, 0, groups)
        assert scaled[0] == pytest.approx(perm[0], rel=1e-12) and scaled[2] == perm[2]
        np.testing.assert_allclose(scaled[1], perm[1], rtol=1e-12)


def test_pairwise_disagreement_of_tiny_and_huge_differences():
    P = np.array([[1.0, 2.0], [3.0, 1.0], [1.0, 1.0], [0.0, 5.0]])
    T = np.array([[2.0, 1.0], [2.0, 1.0], [0.0, 1.0], [1.0, 1.0]])
    want = (1.0 + 0.0 + 0.5) / 3.0  # the last pair has equal targets: not a preference
    for a, b in ((1.0, 1.0), (TINY, TINY), (HUGE, HUGE), (TINY, HUGE)):
        assert ms.pairwise_disagreement(a * P, b * T) == pytest.approx(want, rel=1e-15)


def test_mprankcv_chooses_c_whatever_the_scale_of_y():
    # the squared costs of eq. 17 underflowed to 0 for every C near 1e-200: C_ was the first C, best_score_ 0
    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(14, 2)), rng.normal(size=14)
    Cs = [0.01, 0.1, 1.0, 10.0]
    ref = fastrank.MPRankCV(Cs, kernel="rbf").fit(X, y)
    assert ref.C_ != Cs[0]
    tiny = fastrank.MPRankCV(Cs, kernel="rbf").fit(X, TINY * y)
    assert tiny.C_ == ref.C_
    np.testing.assert_allclose(tiny.predict(X), TINY * ref.predict(X), rtol=1e-10)
    mid = fastrank.MPRankCV(Cs, kernel="rbf").fit(X, 2.0 ** -500 * y)  # costs near 1e-301: still representable
    np.testing.assert_allclose(mid.cv_results_["loo"], 2.0 ** -1000 * ref.cv_results_["loo"], rtol=1e-12)
    assert mid.best_score_ == pytest.approx(2.0 ** -1000 * ref.best_score_, rel=1e-12)
    # near 1e200 the costs (about 1e400) are not representable: a clear error, the earlier fit kept
    with pytest.raises(ValueError, match="rescale y"):
        tiny.fit(X, HUGE * y)
    assert tiny.C_ == ref.C_


def test_mprank_loo_approximation_whatever_the_scale_of_y():
    # the costs are quadratic in y: times 2^(2k) exactly for y times 2^k; near 1e200 they overflowed to inf with
    # numpy's warning
    rng = np.random.default_rng(2)
    X, y = rng.normal(size=(12, 2)), rng.normal(size=12)
    est = fastrank.MPRank(C=1.0, kernel="rbf")
    ref = ms.mprank_loo_approximation(est, X, y)
    for k in (-500, 500):
        scaled = ms.mprank_loo_approximation(est, X, np.ldexp(y, k))
        assert np.ldexp(scaled.approximate, -2 * k) == pytest.approx(ref.approximate, rel=1e-12)
        assert np.ldexp(scaled.exact, -2 * k) == pytest.approx(ref.exact, rel=1e-12)
    with pytest.raises(ValueError, match="rescale y"):
        ms.mprank_loo_approximation(est, X, HUGE * y)


@pytest.mark.parametrize("scoring", ["msd", "squared_ranking_loss", "m1d"])
def test_rankrlscv_chooses_alpha_by_a_cost_whatever_the_scale_of_y(scoring):
    # the cost of every alpha underflowed to 0 for targets near 1e-200 (alpha_ the first alpha, best_score_ 0); the
    # costs are homogeneous in (y, predictions), so y times 2^k scales each by 2^(d k) and keeps the choice
    rng = np.random.default_rng(4)
    X, y, groups = rng.normal(size=(15, 2)), rng.integers(0, 3, 15).astype(float), rng.integers(0, 3, 15)
    alphas = [0.1, 1.0, 10.0]
    ref = fastrank.RankRLSCV(alphas, cv="lgo", scoring=scoring, kernel="rbf").fit(X, y, groups)
    assert ref.alpha_ != alphas[0]
    # the reference from the definition: the cost of the leave-group-out predictions of each retrained model
    measure = fastrank.metrics.get_measure(scoring)
    for k, a in enumerate(alphas):
        pred = np.empty_like(y)
        for q in np.unique(groups):
            out = groups == q
            pred[out] = fastrank.RankRLS(alpha=a, kernel="rbf").fit(X[~out], y[~out], groups[~out]).predict(X[out])
        assert ref.cv_results_["scores"][k] == pytest.approx(measure(y, pred, groups), rel=1e-9)
    degree = 1 if scoring == "m1d" else 2
    for power in (-660, -300):
        got = fastrank.RankRLSCV(alphas, cv="lgo", scoring=scoring, kernel="rbf").fit(X, np.ldexp(y, power), groups)
        assert got.alpha_ == ref.alpha_
        np.testing.assert_allclose(got.cv_results_["scores"], np.ldexp(ref.cv_results_["scores"], degree * power),
                                   rtol=1e-12)
        scorer = make_ranking_scorer(scoring)  # the same search asked with the scorer: the same choice, scores negated
        by_scorer = fastrank.RankRLSCV(alphas, cv="lgo", scoring=scorer, kernel="rbf")
        by_scorer.fit(X, np.ldexp(y, power), groups)
        assert by_scorer.alpha_ == ref.alpha_
        np.testing.assert_allclose(by_scorer.cv_results_["scores"], -got.cv_results_["scores"], rtol=1e-12)
    if degree == 2:
        with pytest.raises(ValueError, match="rescale y"):
            fastrank.RankRLSCV(alphas, cv="lgo", scoring=scoring, kernel="rbf").fit(X, HUGE * y, groups)


def test_rankrlscv_scores_rank_steps_in_positions_whatever_the_labels():
    # mean_rank_loss(scale="positions") counts steps in the ordered set of labels and predictions: it has no units
    # of y (the search reported it 2^e times too large, e ~ log2 max |y|); oracle: the retrained models
    rng = np.random.default_rng(5)
    X, y, groups = rng.normal(size=(30, 3)), rng.integers(0, 3, 30) * 100.0, np.repeat([0, 1, 2], 10)
    alphas = [0.1, 1.0, 10.0]
    got = fastrank.RankRLSCV(alphas, cv="lgo", scoring=make_ranking_scorer("mean_rank_loss", scale="positions"))
    got.fit(X, y, groups)
    for k, a in enumerate(alphas):
        pred = np.empty_like(y)
        for q in range(3):
            out = groups == q
            pred[out] = fastrank.RankRLS(alpha=a).fit(X[~out], y[~out], groups[~out]).predict(X[out])
        want = -fastrank.metrics.mean_rank_loss(y, pred, groups, scale="positions")
        assert got.cv_results_["scores"][k] == pytest.approx(want, rel=1e-12)
