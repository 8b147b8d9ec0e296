"""The learners beside RankRLS (the on-line learners, SVRank, fastrank.dask) driven as a user would: ordered
categorical labels, parameters changed since fit, stopping at max_iter, huge scales, indefinite kernels and scoring
without the groups of a grouped fit, each checked against the single-machine estimator or a plain numpy
transcription."""

import numpy as np
import pytest

import fastrank


def test_dask_gamma_grid_default_cv_is_the_single_machine_default():
    # RankRLSCV's default cv=None is leave-one-group-out with groups; DaskRankRLSCV promises a loop of RankRLSCV over
    # the gammas, so its default must judge on unseen queries too (not leave-pair-out inside the queries).
    pytest.importorskip("dask")
    from fastrank.dask import DaskRankRLSCV

    rng = np.random.default_rng(4)
    X = rng.normal(size=(48, 3))
    y = np.sin(2 * X[:, 0]) + 0.3 * rng.normal(size=48)
    g = rng.integers(0, 4, 48)
    gammas, alphas = [0.1, 1.0], [0.01, 1.0, 100.0]
    for groups in (g, None):
        cvd = DaskRankRLSCV(gammas=gammas, alphas=alphas).fit(X, y, groups)
        refs = [fastrank.RankRLSCV(alphas=alphas, kernel="rbf", gamma=gm).fit(X, y, groups) for gm in gammas]
        np.testing.assert_array_equal(cvd.cv_results_["scores"], np.stack([r.cv_results_["scores"] for r in refs]))
        assert {r.cv_results_["cv"] for r in refs} == {"lgo" if groups is not None else "lpo"}


def _ordinal_data(m=60, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, 3))
    r = np.clip(np.round(X[:, 0] + 0.3 * rng.normal(size=m) + 1), 0, 2).astype(int)
    return X, r


@pytest.mark.parametrize("make", [lambda: fastrank.PRank(), lambda: fastrank.PRankVP(),
                                  lambda: fastrank.OAPBPM(n_estimators=5, variant="voted", random_state=0),
                                  lambda: fastrank.WidrowHoff()])
def test_ordered_categorical_labels_keep_their_declared_order(make):
    # "low" < "mid" < "high" as declared; sorting the strings ranked them high < low < mid and trained on that order.
    pd = pytest.importorskip("pandas")
    X, r = _ordinal_data()
    names = np.array(["low", "mid", "high"])
    y = pd.Series(pd.Categorical(names[r], categories=names, ordered=True))
    ref = make().fit(X, r)  # the ranks 1..3 themselves: the oracle stream
    est = make().fit(X, y)
    np.testing.assert_array_equal(est.classes_, names)
    np.testing.assert_array_equal(est.predict(X), names[ref.predict(X)])
    np.testing.assert_array_equal(est.decision_function(X), ref.decision_function(X))
    assert est.average_rank_loss_ == ref.average_rank_loss_
    # partial_fit in two chunks, the order given by classes= as an ordered categorical, and plain string labels
    chunked = make().partial_fit(X[:25], names[r[:25]], classes=y.cat.categories.astype(y.dtype))
    chunked.partial_fit(X[25:], y[25:], classes=y.values)
    np.testing.assert_array_equal(chunked.decision_function(X), ref.decision_function(X))
    with pytest.raises(ValueError, match="differs from classes_"):
        chunked.partial_fit(X[:2], names[r[:2]], classes=names)  # plain strings: the sorted set, another order
    # a model whose classes_ are the sorted strings refuses a categorical y declaring another order
    alphabetical = make().partial_fit(X[:25], names[r[:25]])
    np.testing.assert_array_equal(alphabetical.classes_, np.sort(names))
    with pytest.raises(ValueError, match="y's categories=.* differs from classes_"):
        alphabetical.partial_fit(X[25:], y[25:])


def test_fit_oapbpm_takes_the_declared_order_of_an_ordered_categorical():
    pd = pytest.importorskip("pandas")
    pytest.importorskip("dask")
    from fastrank.dask import fit_oapbpm

    X, r = _ordinal_data(seed=1)
    names = np.array(["low", "mid", "high"])
    y = pd.Series(pd.Categorical(names[r], categories=names, ordered=True))
    ref = fastrank.OAPBPM(n_estimators=6, random_state=3).fit(X, r)
    est = fit_oapbpm(fastrank.OAPBPM(n_estimators=6, random_state=3), X, y, n_blocks=2)
    np.testing.assert_array_equal(est.classes_, names)
    np.testing.assert_array_equal(est.decision_function(X), ref.decision_function(X))
    np.testing.assert_array_equal(est.predict(X), names[ref.predict(X)])


def test_fit_oapbpm_refuses_continuous_targets_as_fit_does():
    # fit raises on continuous-looking floats; fit_oapbpm trained a model with one class per distinct value
    pytest.importorskip("dask")
    from fastrank.dask import fit_oapbpm

    rng = np.random.default_rng(2)
    X = rng.normal(size=(30, 2))
    y = X[:, 0] + rng.normal(size=30)
    with pytest.raises(ValueError, match="continuous"):
        fastrank.OAPBPM(n_estimators=3).fit(X, y)
    with pytest.raises(ValueError, match="continuous"):
        fit_oapbpm(fastrank.OAPBPM(n_estimators=3), X, y, n_blocks=1)
    y[3] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        fit_oapbpm(fastrank.OAPBPM(n_estimators=3), X, y, n_blocks=1)
    # a fractional rating scale still works through classes=, as with partial_fit
    ratings = np.round(np.clip(X[:, 0], -1, 1) * 5) / 5
    scale = np.arange(-5, 6) / 5
    ref = fastrank.OAPBPM(n_estimators=3, random_state=0).partial_fit(X, ratings, classes=scale)
    est = fit_oapbpm(fastrank.OAPBPM(n_estimators=3, random_state=0), X, ratings, classes=scale, n_blocks=2)
    np.testing.assert_array_equal(est.decision_function(X), ref.decision_function(X))


def test_online_mprank_warns_when_it_stops_at_max_iter():
    # RankSVM and SVRank warn at max_iter; OnlineMPRank returned an unconverged model (predictions off the MPRank
    # solution) with only converged_ = False to say so.
    from fastrank.exceptions import ConvergenceWarning

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(50, 3)), rng.normal(size=50)
    with pytest.warns(ConvergenceWarning, match="max_iter=2"):
        est = fastrank.OnlineMPRank(max_iter=2).fit(X, y)
    assert not est.converged_
    exact = fastrank.MPRank(C=1.0).fit(X, y).predict(X)
    assert np.abs(est.predict(X) - est.predict(X).mean() - (exact - exact.mean())).max() > 1e-3
    with pytest.warns(ConvergenceWarning):
        est.partial_fit(X[:5], y[:5])
    est = fastrank.OnlineMPRank().fit(X, y)  # converged: silent (warnings are errors here)
    assert est.converged_


def test_online_mprank_partial_fit_checks_parameters_set_since_fit():
    # an unknown algorithm set after fit ran the "gradient" update without a word
    from sklearn.utils._param_validation import InvalidParameterError

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(20, 3)), rng.normal(size=20)
    est = fastrank.OnlineMPRank().fit(X, y)
    coef = est.dual_coef_.copy()
    with pytest.raises(InvalidParameterError, match="algorithm"):
        est.set_params(algorithm="newton").partial_fit(X[:3], y[:3])
    np.testing.assert_array_equal(est.dual_coef_, coef)


@pytest.mark.parametrize("cls", [fastrank.PRank, fastrank.PRankVP, fastrank.OAPBPM])
def test_precomputed_partial_fit_names_the_columns_it_needs(cls):
    # the compiled pass said only "precomputed kernel: too few columns"
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 3))
    K, y = X @ X.T, rng.integers(0, 3, 20)
    with pytest.raises(ValueError, match=r"at least n_samples_seen_ \+ len\(X\) = 10 columns .* got 5"):
        cls(kernel="precomputed").partial_fit(K[:10, :5], y[:10])
    est = cls(kernel="precomputed").partial_fit(K[:10, :10], y[:10])
    with pytest.raises(ValueError, match="= 14 columns"):
        est.partial_fit(K[10:14, :13], y[10:14])
    est.partial_fit(K[10:14, :14], y[10:14])
    assert est.n_samples_seen_ == 14


def test_svrank_squared_cost_refuses_an_indefinite_kernel():
    # With K = X X^T - 2 I the regulariser beta^T K beta is unbounded below; the pivoted Cholesky stopped at the
    # negative pivots and the fit reported a converged model of the semidefinite part.
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(20, 3)), rng.normal(size=20)
    K = X @ X.T
    with pytest.raises(ValueError, match="not positive semidefinite"):
        fastrank.SVRank(kernel="precomputed", loss="squared_epsilon_insensitive").fit(K - 2 * np.eye(20), y)
    # a semidefinite kernel of rank 3 < m is accepted, and equals the linear model (f = K beta = X w)
    pre = fastrank.SVRank(kernel="precomputed", loss="squared_epsilon_insensitive", tol=1e-10).fit(K, y)
    lin = fastrank.SVRank(loss="squared_epsilon_insensitive", tol=1e-10).fit(X, y)
    np.testing.assert_allclose(pre.predict(K), lin.predict(X), rtol=1e-6, atol=1e-8)


def test_dask_rankrls_score_warns_without_the_groups_of_a_grouped_fit():
    # RankRLS.score warns when a model fitted on several queries is scored as one pooled query; DaskRankRLS (and the
    # RankRLS of to_local) returned the pooled number silently.
    pytest.importorskip("dask")
    import dask.array as da

    from fastrank.dask import DaskRankRLS
    from fastrank.exceptions import MissingGroupsWarning

    rng = np.random.default_rng(5)
    X = rng.normal(size=(60, 3))
    y = X @ np.array([1.0, -1.0, 0.5]) + rng.normal(size=60)
    g = np.repeat(np.arange(6), 10)
    est = DaskRankRLS().fit(da.from_array(X, chunks=25), da.from_array(y, chunks=25), da.from_array(g, chunks=25))
    ref = fastrank.RankRLS(solver="primal").fit(X, y, g)
    assert est.n_fit_groups_ == ref.n_fit_groups_ == 6
    assert est.score(X, y, g) == pytest.approx(ref.score(X, y, g), rel=1e-12)
    for model in (est, est.to_local()):
        with pytest.warns(MissingGroupsWarning, match="6 query groups"):
            model.score(X, y)
    DaskRankRLS().fit(X, y).score(X, y)  # no groups at fit: silent (warnings are errors here)


def test_dask_gamma_grid_score_warns_without_the_groups_of_a_grouped_fit():
    pytest.importorskip("dask")
    from fastrank.dask import DaskRankRLSCV
    from fastrank.exceptions import MissingGroupsWarning

    rng = np.random.default_rng(6)
    X, y, g = rng.normal(size=(40, 3)), rng.normal(size=40), np.repeat(np.arange(4), 10)
    cvd = DaskRankRLSCV(gammas=[0.5], alphas=[1.0]).fit(X, y, g)
    ref = fastrank.RankRLSCV(alphas=[1.0], kernel="rbf", gamma=0.5).fit(X, y, g)
    assert cvd.score(X, y, g) == ref.score(X, y, g)
    with pytest.warns(MissingGroupsWarning, match="4 query groups"):
        pooled = cvd.score(X, y)
    with pytest.warns(MissingGroupsWarning):
        assert pooled == ref.score(X, y)


@pytest.mark.parametrize("loss, X_scale, y_scale", [("epsilon_insensitive", 1e160, 1.0),
                                                    ("squared_epsilon_insensitive", 1e300, 1.0),
                                                    ("squared_epsilon_insensitive", 1.0, 1e160)])
def test_svrank_refuses_a_solve_that_overflowed(loss, X_scale, y_scale):
    # the fit came back "converged" with w = 0, gap_ NaN (and numpy's overflow RuntimeWarnings on the way)
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(20, 3)), rng.normal(size=20)
    with pytest.raises(ValueError, match="overflowed double precision .* standardize X and rescale y"):
        fastrank.SVRank(loss=loss).fit(X * X_scale, y * y_scale)
    # the same problem at ordinary scale is solved; a huge y alone stays finite for the absolute cost, whose pair
    # loss is linear there (2 w = -(C / N) X_d^T sign: w stays of the order of C max|X|)
    fastrank.SVRank(loss=loss).fit(X, y)
    big_y = fastrank.SVRank().fit(X, y * 1e300)
    assert big_y.converged_ and np.isfinite(big_y.objective_) and np.abs(big_y.coef_).max() < 1.0


def test_online_mprank_huge_scales_are_solved_or_named():
    # algorithm="gradient": the power iteration's norm overflowed (numpy's RuntimeWarning, an error here) once the
    # kernel entries passed ~1e154; a y whose squared differences overflow was reported as a divergence ("use a
    # smaller learning rate eta").
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(20, 3)), rng.normal(size=20)
    s = 2.0**332  # ~1e100, a power of two: the power iteration on s^2 Kt is s^2 times the one on Kt, bit for bit
    ref = fastrank.OnlineMPRank(algorithm="gradient").fit(X, y)
    lam = (1.0 / ref.eta_ - 20.0) / 2.2  # eta = 1 / (2.2 lambda_max + m / C), C = 1
    with pytest.warns(fastrank.exceptions.ConvergenceWarning):
        big = fastrank.OnlineMPRank(algorithm="gradient", max_iter=3).fit(X * s, y)
    assert big.eta_ == pytest.approx(1.0 / (2.2 * s * s * lam + 20.0), rel=1e-12)
    for algorithm in ("sequential", "gradient"):
        with pytest.raises(ValueError, match="squared differences of y overflow float64 .* rescale y"):
            fastrank.OnlineMPRank(algorithm=algorithm).fit(X, y * 1e160)


def test_online_mprank_partial_fit_refuses_kernel_parameters_changed_since_fit():
    rng = np.random.default_rng(3)
    X, y = rng.normal(size=(30, 3)), rng.normal(size=30)
    est = fastrank.OnlineMPRank(kernel="rbf", gamma=0.5, max_iter=500).fit(X[:20], y[:20])
    before = est.predict(X)
    est.set_params(gamma=2.0)
    with pytest.raises(ValueError, match="set_params changed the kernel parameters"):
        est.partial_fit(X[20:], y[20:])
    assert np.array_equal(est.predict(X), before)  # the fitted model is untouched
    est.set_params(gamma=0.5, C=2.0)  # the fitted kernel again; other parameters may change
    est.partial_fit(X[20:], y[20:])
    assert est.X_fit_.shape[0] == 30
