"""Learners, scalers and bounds at the ends of float64's range: results scale exactly with their inputs, or a clear
error or documented warning says why they cannot (targets near 1e-170 and features near 1e-150, subnormal features,
features whose perceptron scores overflow, test rows far larger than the training rows, bounds near 1.8e308)."""

import math
import warnings

import mpmath
import numpy as np
import pytest

import fastrank as fr
import fastrank.bounds as B
from fastrank.exceptions import ConstantModelWarning
from fastrank.preprocessing import Log1pScaler, make_normalizer

X5 = np.array([[0.0, 1.0], [1.0, 0.0], [2.0, 3.0], [4.0, 1.0], [3.0, 3.0]])
Y5 = np.array([0.0, 2.0, 1.0, 3.0, 2.0])


def _primal_oracle(X, y, alpha, groups=None):
    """(X^T L X + alpha I) w = X^T L y (004 eq. 28) with L the Laplacian of the pairs, in numpy."""
    m = X.shape[0]
    g = np.zeros(m) if groups is None else np.asarray(groups)
    L = np.zeros((m, m))
    for q in np.unique(g):
        rows = np.flatnonzero(g == q)
        L[np.ix_(rows, rows)] = len(rows) * np.eye(len(rows)) - 1.0
    return np.linalg.solve(X.T @ L @ X + alpha * np.eye(X.shape[1]), X.T @ L @ y)


@pytest.mark.parametrize("groups", [None, [0, 0, 1, 1, 1]])
@pytest.mark.parametrize("solver", ["auto", "primal"])
def test_primal_of_tiny_features_and_targets_scales_exactly(solver, groups):
    # X^T L y of features near 1e-150 and targets near 1e-170 is subnormal: the primal lost 1e-4 of the model
    a, b = 1e-150, 1e-170
    expected = _primal_oracle(X5, Y5, 1.0, groups)
    got = fr.RankRLS(alpha=a * a, solver=solver).fit(X5 * a, Y5 * b, groups=groups).coef_ * (a / b)
    np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_primal_outputs_of_very_different_scales():
    a = 1e-150
    Y = np.column_stack([Y5 * 1e-170, Y5 * 1e100, Y5])
    coef = fr.RankRLS(alpha=a * a, solver="primal").fit(X5 * a, Y).coef_
    for k, scale in enumerate([1e-170, 1e100, 1.0]):
        np.testing.assert_allclose(coef[:, k] * a / scale, _primal_oracle(X5, Y5, 1.0), rtol=1e-12)


def test_mprank_of_tiny_features_and_targets_scales_exactly():
    a, b = 1e-150, 1e-170
    ref = fr.MPRank(C=1.0).fit(X5, Y5).predict(X5)
    got = fr.MPRank(C=1.0 / (a * a)).fit(X5 * a, Y5 * b).predict(X5 * a) / b
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-14 * np.abs(ref).max())


@pytest.mark.parametrize("algorithm", ["sequential", "gradient"])
@pytest.mark.parametrize("scale", [1e-100, 1e-170, 1e-300, 1e100])
def test_online_mprank_is_linear_in_the_targets(algorithm, scale):
    # the cost of targets near 1e-170 underflowed to 0, and the stopping rule took 0 <= tol * 0 for convergence after
    # one pass: a model 8 % off with converged_=True
    X, y = np.array([[0.0], [1.0], [2.0], [4.0]]), np.array([0.0, 2.0, 1.0, 3.0])
    ref = fr.OnlineMPRank(C=1.0, algorithm=algorithm, tol=1e-13, max_iter=100_000).fit(X, y)
    got = fr.OnlineMPRank(C=1.0, algorithm=algorithm, tol=1e-13, max_iter=100_000).fit(X, y * scale)
    assert got.n_iter_ == ref.n_iter_ > 1 and got.converged_
    np.testing.assert_allclose(got.predict(X) / scale, ref.predict(X), rtol=1e-12, atol=1e-15)
    # the batch solution both iterate to
    np.testing.assert_allclose(ref.predict(X), fr.MPRank(C=1.0).fit(X, y).predict(X), rtol=1e-6)


@pytest.mark.parametrize("make", [Log1pScaler, lambda: make_normalizer("zscore")])
@pytest.mark.parametrize("column", [[1e-323, 1.5e-323, 1.5e-323, 1.5e-323], [2.0**-1060, 3 * 2.0**-1060, 2.0**-1059]])
def test_subnormal_features_are_refused_by_the_z_scores(make, column):
    # their standard deviation, stored as scale_, was subnormal or 0: z-scores of -inf and NaN, or 4e-5 off
    X = np.array(column)[:, None]
    with pytest.raises(ValueError, match=r"feature 0 varies by less than 2\.2e-308.*rescale X"):
        make().fit(X)


@pytest.mark.parametrize("make", [Log1pScaler, lambda: make_normalizer("zscore")])
def test_the_smallest_normal_scales_are_standardised(make):
    X = np.array([[1e-300], [2e-300], [4e-300], [3e-300]])
    z = make().fit(X).transform(X).ravel()
    centred = X.ravel() / 1e-300 - 2.5
    np.testing.assert_allclose(z, centred / np.sqrt(np.mean(centred**2)), rtol=1e-12)


@pytest.mark.parametrize("make", [fr.PRank, fr.PRankVP, lambda: fr.OAPBPM(n_estimators=3, random_state=0)])
def test_perceptron_scores_beyond_float64_are_refused(make):
    # w.x of features near 1e155 overflowed: fit ranked by inf and NaN without a word
    X, y = np.array([[1e155], [-2e155], [3e155]]), np.array([1, 2, 3])
    with pytest.raises(ValueError, match=r"perceptron scores w\.x overflow float64.*rescale X"):
        make().fit(X, y)
    rng = np.random.default_rng(0)
    Xo, yo = rng.normal(size=(40, 3)), np.arange(40) % 3
    model = make().fit(Xo, yo)
    before = model.decision_function(Xo)
    with pytest.raises(ValueError, match="perceptron scores"):
        model.partial_fit(Xo * 1e160, yo)
    np.testing.assert_array_equal(model.decision_function(Xo), before)  # the failed call left the model as it was


@pytest.mark.parametrize("make", [fr.PRank, fr.PRankVP])
def test_perceptron_weights_beyond_float64_are_refused(make):
    # the last update, w += 4 x, overflowed to coef_ = inf with no score after it to show it
    X = np.array([[0.0], [1e308]])
    model = make().partial_fit(X[:1], [0], classes=[0, 1, 2, 3, 4])
    before = model.decision_function(np.ones((1, 1)))
    with pytest.raises(ValueError, match=r"^the perceptron weights overflow float64 \(features of magnitude near "
                                         r"1e308\); rescale X$"):
        model.partial_fit(X[1:], [4])
    np.testing.assert_array_equal(model.decision_function(np.ones((1, 1))), before)
    assert model.n_seen_ == 1
    with pytest.raises(ValueError, match="perceptron weights overflow float64"):
        make().fit(np.array([[0.0], [0.0], [1e308]]), [0, 2, 4])  # the last update: w += 2 x


@pytest.mark.parametrize("variant", ["bpm", "bagging", "voted"])
def test_members_weights_summing_beyond_float64_are_refused_by_every_variant(variant):
    # each member's weight is 1.2e308: "bagging" and "voted" summed them to coef_ = inf (numpy's overflow warning
    # leaked) where "bpm", which scores with that sum, refused the data
    X, y = np.array([[1.0], [1.2e308]]), np.array([0, 2])
    with pytest.raises(ValueError, match=r"perceptron (scores w\.x|weights of the members) overflow float64.*"
                                         r"rescale X"):
        fr.OAPBPM(n_estimators=3, tau=1.0, random_state=0, variant=variant).fit(X, y)


@pytest.mark.parametrize("make, fit_scale", [(lambda: fr.RankRLS(alpha=1e-12), 1e-6), (lambda: fr.RankSVM(C=1e6), 1e-6),
                                             (fr.PRank, 1e6), (lambda: fr.OAPBPM(random_state=0), 1e6),
                                             (fr.PRankVP, 1e6), (lambda: fr.OAPBPM(variant="voted"), 1e6),
                                             (lambda: fr.RankRLS(kernel="poly", degree=2), 1.0)])
def test_scores_beyond_float64_at_predict_are_refused(make, fit_scale):
    # inf and NaN scores ranked, and chose labels, silently
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(30, 3)), np.arange(30) % 3
    model = make().fit(X * fit_scale, y)
    methods = ["predict"] + (["decision_function"] if hasattr(model, "decision_function") else [])
    for name in methods:
        with pytest.raises(ValueError, match=r"overflow float64.*rescale X"):
            getattr(model, name)(X * 1e307)
        assert np.all(np.isfinite(np.asarray(getattr(model, name)(X), dtype=float)))


def test_subnormal_targets_warn():
    # predictions of subnormal size keep a few bits: exact CV picked alpha 0.1 for 0.001 by rounding, silently
    X, y = np.array([[1.0], [2.0], [-3.0], [2.0], [0.0], [0.0]]), np.array([2.0, 1.0, 3.0, 0.0, 1.0, 1.0])
    for fit in (lambda t: fr.RankRLS(kernel="rbf", gamma=0.5).fit(X, t),
                lambda t: fr.RankRLSCV(alphas=[0.01, 1.0], kernel="rbf", gamma=0.5).fit(X, t),
                lambda t: fr.model_selection.leave_pair_out(fr.RankRLS(kernel="rbf", gamma=0.5), X, t)):
        with pytest.warns(ConstantModelWarning, match="targets differ by less than 2.2e-308.*rescale y"):
            fit(y * 2.0**-1060)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            fit(y * 1e-300)  # normal numbers: no warning


def _bound_exact(m, lam, kappa, M, delta):
    mpmath.mp.dps = 40
    k, lam, M = mpmath.mpf(kappa), mpmath.mpf(lam), mpmath.mpf(M)
    fac = 1 + 2 * k / mpmath.sqrt(lam)
    return float(64 * k**2 * M / (lam * m) * fac
                 + (32 * k**2 * M / lam * fac + M) * mpmath.sqrt(2 * mpmath.log(1 / mpmath.mpf(delta)) / m))


@pytest.mark.parametrize("lam, kappa, M", [(1.7e308, 1.7e308, 1e-300), (1.0, 5e-324, 1.7e308)])
def test_least_squares_bound_with_inputs_near_the_largest_float(lam, kappa, M):
    # log(2 M) and log(2 kappa) overflowed at M or kappa above 9e307: a representable bound was refused
    got = B.least_squares_ranking_bound(10, lam, kappa, M, 0.5)
    assert math.isfinite(got) and got == pytest.approx(_bound_exact(10, lam, kappa, M, 0.5), rel=1e-12)


@pytest.mark.parametrize("call", [
    lambda: B.magnitude_preserving_bound(3, 1.7e308, 0.5, 1e10, 0.5, power=1),
    lambda: B.agarwal_niyogi_score_stability_bound(3, 3.0, 0.5, 1e-300, 0.5, sigma=1.7e308, empirical=0.25),
])
def test_bounds_whose_terms_sum_beyond_float64_name_their_inputs(call):
    # every term below 1.8e308 but their sum above: fsum's OverflowError reached the user
    with pytest.raises(ValueError, match="exceeds the largest float64"):
        call()


@pytest.mark.parametrize("fit", [lambda X, y: fr.RankSVM().fit(X, y), lambda X, y: fr.RankBoost().fit(X, y),
                                 lambda X, y: fr.RankRLS().fit(X, y),
                                 lambda X, y: fr.metrics.pairwise_disagreement(y, X[:, 0])])
def test_integer_targets_that_float64_merges_are_refused(fit):
    # int64 grades beyond 2**53 became one float: pairs turned into ties and the model changed silently
    X = np.array([[0.3, 1.0], [1.2, -0.4], [-0.7, 0.5], [2.0, 0.1], [0.9, 0.8]])
    with pytest.raises(ValueError, match=r"distinct integers 1152921504606846976 and 1152921504606847076.*offset"):
        fit(X, np.array([0, 100, 300, 400, 700], dtype=np.int64) + 2**60)
    fit(X, np.array([0, 1, 2, 3, 2**62], dtype=np.int64))  # beyond 2**53 but kept apart: taken as they are
    fit(X, np.array([0, 1, 2, 3, 2**64 - 1], dtype=np.uint64))


@pytest.mark.parametrize("name", ["msd", "m1d", "stability_ranking_loss", "squared_ranking_loss", "hinge_rank_cost",
                                  "magnitude_preserving_cost", "discrete_ranking_loss"])
@pytest.mark.parametrize("grouped", [False, True])
def test_costs_of_differences_ignore_an_exact_target_offset(name, grouped):
    # f - y and y - f were formed from the raw targets: an offset of 2**50 changed msd by 1.4e-2
    rng = np.random.default_rng(1)
    y, f = rng.integers(0, 4, 12).astype(float), rng.normal(size=12)
    g = rng.integers(0, 3, 12) if grouped else None
    measure = fr.metrics.get_measure(name)
    for c in (2.0**40, 2.0**50):
        shifted = y + c * ((g + 1) if grouped else 1)  # exact: a different offset per group
        assert measure(shifted, f, g) == measure(y, f, g)


@pytest.mark.parametrize("scoring", ["msd", fr.metrics.make_ranking_scorer("msd", average="group"),
                                     fr.metrics.make_ranking_scorer("magnitude_preserving_cost", power=1),
                                     fr.metrics.make_ranking_scorer("stability_ranking_loss", loss="squared")])
def test_exact_cv_costs_are_compared_in_units_of_y(scoring):
    # a scorer with keywords was not scaled into units of y: at y * 1e-200 every alpha scored 0 and the first was kept
    rng = np.random.default_rng(0)
    X = rng.normal(size=(12, 3))
    y, g = X @ [1.0, -2.0, 0.5] + rng.normal(size=12), np.repeat([0, 1, 2], 4)
    alphas = np.logspace(3, -2, 6)
    ref = fr.RankRLSCV(alphas, cv="lgo", scoring=scoring).fit(X, y, g)
    got = fr.RankRLSCV(alphas, cv="lgo", scoring=scoring).fit(X, y * 2.0**-660, g)
    assert got.alpha_ == ref.alpha_ == 0.01
    if np.all(got.cv_results_["scores"] != 0):  # reported in units of y^d: squares of 2**-660 are below float64
        np.testing.assert_array_equal(np.argsort(got.cv_results_["scores"]), np.argsort(ref.cv_results_["scores"]))


def _rational_linear_rankrls(X, y, g, alpha, X_test):
    """Predictions of (sum over pairs in groups (dy - w.dx)^2 + alpha |w|^2) minimiser, in rational arithmetic."""
    from fractions import Fraction
    d = X.shape[1]
    A = [[Fraction(0)] * d for _ in range(d)]
    b = [Fraction(0)] * d
    Xf, yf = [[Fraction(v) for v in r] for r in X.tolist()], [Fraction(v) for v in y.tolist()]
    for i in range(len(yf)):
        for j in range(i + 1, len(yf)):
            if g[i] == g[j]:
                dx = [Xf[i][k] - Xf[j][k] for k in range(d)]
                for r in range(d):
                    b[r] += dx[r] * (yf[i] - yf[j])
                    for c in range(d):
                        A[r][c] += dx[r] * dx[c]
    for r in range(d):
        A[r][r] += Fraction(alpha)
    for c in range(d):  # Gauss-Jordan on an exact, positive definite system
        for r in range(d):
            if r != c:
                t = A[r][c] / A[c][c]
                A[r] = [a - t * p for a, p in zip(A[r], A[c])]
                b[r] -= t * b[c]
    w = [b[r] / A[r][r] for r in range(d)]
    return [sum(Fraction(v) * w[k] for k, v in enumerate(row)) for row in X_test.tolist()]


@pytest.mark.parametrize("offset", [1e8, 1e10])
def test_feature_holdout_under_a_feature_offset_against_rational_retraining(offset):
    # the rows were centred in their groups in one pass: 1.1e-6 off at 1e8 (retraining: 1.5e-8)
    rng = np.random.default_rng(3)
    X, y, g = rng.normal(size=(12, 3)) + offset, rng.integers(0, 4, 12).astype(float), np.repeat([0, 1, 2], 4)
    sets = [np.array([0, 1, 4, 5]), np.array([2, 3, 8, 9])]
    got = fr.model_selection.holdout_predictions(fr.RankRLS(alpha=0.1), X, y, sets, groups=g)
    for s, h in zip(sets, got):
        train = np.setdiff1d(np.arange(12), s)
        exact = _rational_linear_rankrls(X[train], y[train], g[train], 0.1, X[s])
        want = np.array([float(v - exact[0]) for v in exact])
        assert np.abs((h - h[0]) - want).max() <= 1e-7 * offset / 1e8  # retraining's own error: 1.5e-8, 3e-6


@pytest.mark.parametrize("make", [fr.PRank, fr.PRankVP, lambda: fr.OAPBPM(n_estimators=3, random_state=0)])
def test_perceptron_scores_that_underflow_warn(make):
    # features near 1e-300: every w.x is 0, so the passes ranked every row alike, silently
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(10, 3)), np.array([1, 2, 3, 1, 2, 3, 1, 2, 3, 2])
    with pytest.warns(ConstantModelWarning, match="underflow"):
        make().fit(X * 1e-300, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        make().fit(X * 1e-150, y)  # scores near 1e-300 are normal numbers


@pytest.mark.parametrize("chunks", [1, 3, 7, 20])
@pytest.mark.parametrize("grouped", [False, True])
def test_dask_primal_of_tiny_features_and_targets_scales_exactly(chunks, grouped):
    # X^T L y summed over partitions was subnormal (1.7e-6 relative); a partition of zero targets has no unit
    da = pytest.importorskip("dask.array")
    import dask
    from fastrank.dask import DaskRankRLS
    X = np.tile(X5, (4, 1))
    y = np.tile(Y5, 4) + np.arange(20) * 0.25
    y[:2] = 0.0
    g = np.repeat([0, 1, 2, 3], 5) if grouped else None
    a, b = 1e-150, 1e-170
    expected = _primal_oracle(X, y, 1.0, g)
    with dask.config.set(scheduler="synchronous"):
        model = DaskRankRLS(alpha=a * a).fit(da.from_array(X * a, chunks=chunks), da.from_array(y * b, chunks=chunks),
                                             None if g is None else da.from_array(g, chunks=chunks))
    np.testing.assert_allclose(model.coef_ * (a / b), expected, rtol=1e-12)


def test_dask_search_compares_costs_of_tiny_targets_as_each_search_does():
    # scores reported in units of y underflow to 0: the gamma and alpha chosen were the first, and alpha_ disagreed
    # with best_estimator_.alpha
    pytest.importorskip("dask")
    import dask
    from fastrank.dask import DaskRankRLSCV
    rng = np.random.RandomState(0)
    X = rng.randn(10, 2)
    y, g = X @ [1.0, -2.0] + 0.3 * rng.randn(10), np.repeat([0, 1, 2], [4, 3, 3])
    alphas = [100.0, 1.0, 1e-2]
    with dask.config.set(scheduler="synchronous"):
        for gammas in ([5.0, 0.5], [0.5, 5.0]):
            ref = DaskRankRLSCV(gammas=gammas, alphas=alphas, scoring="msd").fit(X, y, g)
            got = DaskRankRLSCV(gammas=gammas, alphas=alphas, scoring="msd").fit(X, y * 1e-170, g)
            assert (got.gamma_, got.alpha_) == (ref.gamma_, ref.alpha_) == (0.5, 0.01)
            assert got.best_estimator_.alpha == got.alpha_ and got.best_estimator_.gamma == got.gamma_


@pytest.mark.parametrize("kernel", ["rbf", "linear", "poly"])
def test_online_mprank_ties_identical_rows(kernel):
    # kernel scores of two copies of a row differed in their last bits: a pair of them was ordered, not tied
    rng = np.random.RandomState(0)
    X, y = rng.randn(10, 4), rng.randint(0, 3, 10).astype(float)
    Xt = rng.randn(5, 4)
    Xt[4] = Xt[0]
    s = fr.OnlineMPRank(kernel=kernel).fit(X, y).predict(Xt)
    assert s[0] == s[4]
    assert fr.metrics.pairwise_disagreement(np.array([1.0, 0, 0, 0, 0]), s) == pytest.approx(
        (np.sum(s[1:4] > s[0]) + 0.5) / 4)


def test_exact_cv_refuses_targets_near_the_float_limit_and_warns_of_an_outlying_one():
    # one target near 1e308 gave all-NaN hold-out predictions; one of 1e16 among targets of 1 left 280 % errors
    from fastrank.exceptions import IllConditionedWarning
    X = np.random.RandomState(0).randn(8, 3)
    y = np.array([0.0, 1, 2, 1, 0, 2, 1, 0])
    with pytest.raises(ValueError, match="overflow its hold-out formulas; rescale y"):
        fr.model_selection.leave_pair_out(fr.RankRLS(), X, np.r_[y[:7], 1e308])
    with pytest.raises(ValueError, match="overflow its hold-out formulas"):
        fr.RankRLSCV(alphas=[1.0, 2.0], cv="lgo").fit(X, np.r_[y[:7], 1e308], np.repeat([0, 1], 4))
    with pytest.warns(IllConditionedWarning, match="rounding of about 2.2 in every hold-out prediction"):
        fr.model_selection.leave_pair_out(fr.RankRLS(), X, np.r_[y[:7], 1e16])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fr.model_selection.leave_pair_out(fr.RankRLS(), X, np.r_[y[:7], 1e5])  # 2e-11 of rounding: no warning
        fr.model_selection.leave_pair_out(fr.RankRLS(), X, np.column_stack([y * 1e-170, y * 1e120]))  # per output


@pytest.mark.parametrize("call", [
    lambda X, y: fr.RankRLS(alpha=10**400).fit(X, y), lambda X, y: fr.SVRank(epsilon=10**400).fit(X, y),
    lambda X, y: fr.metrics.precision_at_k(y, y, k=2, relevance_threshold=10**400),
    lambda X, y: fr.bounds.hinge_ranking_bound(100, 0.1, 10**400, 1.0, 0.05),
    lambda X, y: fr.metrics.pairwise_disagreement(y, y, sample_weight=[10**400] * 8),
])
def test_ints_beyond_float64_are_refused_by_name(call):
    # float(10**400) raised a bare "int too large to convert to float"
    X, y = np.random.RandomState(0).randn(8, 3), np.arange(8.0)
    with pytest.raises(ValueError, match=r"alpha|epsilon|relevance_threshold|kappa|sample_weight"):
        call(X, y)


def test_rankboost_path_refuses_a_huge_round_count_before_allocating():
    X, y = np.random.RandomState(0).randn(8, 3), np.arange(8.0)
    for n in (2**31, 2**40, np.uint64(2**64 - 1)):  # 2**31 asked for 16 GiB, 2**40 met numpy's raw MemoryError
        with pytest.raises(ValueError, match=r"n_estimators must be at most 2\*\*31 - 1"):
            fr.rankboost_path(X, y, n, cv=2)


@pytest.mark.parametrize("make", [fr.PRank, fr.PRankVP, fr.OAPBPM, fr.WidrowHoff])
def test_infinite_class_labels_are_refused(make):
    # classes=[0, 1, 2, inf] was taken; predict of the inf class then blamed X
    X, y = np.random.RandomState(0).randn(8, 3), np.array([0, 1, 2, 1, 0, 2, 1, 0])
    with pytest.raises(ValueError, match="classes contains an infinite value"):
        make().partial_fit(X, y, classes=[0, 1, 2, np.inf])
