"""Metamorphic checks of the learners' entry points: the same question asked two ways gets the same answer."""

import warnings

import numpy as np
import pytest

import fastrank


def _grouped_data(seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(12, 3)), np.arange(12.0) % 4, np.repeat([0, 1, 2], 4)


@pytest.mark.parametrize("make", [fastrank.RankRLS, fastrank.RankSVM, lambda: fastrank.RankBoost(n_estimators=5)])
def test_a_preference_refit_forgets_the_groups_of_an_earlier_fit(make):
    # fit_preferences after fit(X, y, groups) kept the earlier fit's n_fit_groups_: the preference model then warned
    # (MissingGroupsWarning, "fitted on 3 query groups") where the same model fitted on the graph alone does not
    X, y, g = _grouped_data()
    pairs = np.array([[0, 1], [2, 3], [4, 5], [6, 7], [1, 2]])
    fresh = make().fit_preferences(X, pairs)
    refitted = make().fit(X, y, g).fit_preferences(X, pairs)
    assert vars(refitted).keys() == vars(fresh).keys()
    np.testing.assert_array_equal(refitted.predict(X), fresh.predict(X))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert refitted.score(X, y) == fresh.score(X, y)


@pytest.mark.parametrize("make, first, second", [
    (fastrank.PRank, {"kernel": "rbf"}, {"kernel": "linear"}),
    (fastrank.PRankVP, {}, {"kernel": "rbf"}),
    (lambda **p: fastrank.OAPBPM(n_estimators=3, random_state=0, **p), {"kernel": "rbf"}, {"kernel": "linear"}),
    (lambda **p: fastrank.OAPBPM(n_estimators=3, random_state=0, **p), {}, {"kernel": "poly", "variant": "voted"}),
])
def test_an_online_refit_with_another_kernel_form_keeps_none_of_the_old_arrays(make, first, second, tmp_path):
    # a refit of PRank / PRankVP / OAPBPM under another kernel form kept the previous form's arrays: an rbf model still
    # had the linear fit's coef_ (stale weights that predict nothing of the new model) and wrote them to model files
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(30, 3)), rng.integers(0, 3, 30)
    refitted = make(**first).fit(X, y).set_params(**second).fit(X, y)
    fresh = make(**second).fit(X, y)
    assert vars(refitted).keys() == vars(fresh).keys()
    np.testing.assert_array_equal(refitted.decision_function(X), fresh.decision_function(X))
    fastrank.save(refitted, tmp_path / "m.frk")
    assert vars(fastrank.load(tmp_path / "m.frk")).keys() == vars(fresh).keys()


@pytest.mark.parametrize("make", [
    lambda: fastrank.RankSVM(margin="difference", tol=1e-10),
    lambda: fastrank.RankSVM(margin="difference", loss="hinge", tol=1e-10),
    lambda: fastrank.RankSVM(margin="difference", kernel="rbf", gamma=0.5, tol=1e-10),
    lambda: fastrank.SVRank(tol=1e-10),
    lambda: fastrank.SVRank(loss="squared_epsilon_insensitive", tol=1e-10),
    lambda: fastrank.SVRank(kernel="rbf", gamma=0.5, tol=1e-10),
], ids=["ranksvm-diff", "ranksvm-diff-hinge", "ranksvm-diff-rbf", "svrank", "svrank-squared", "svrank-rbf"])
@pytest.mark.parametrize("grouped", [False, True])
def test_target_offsets_inside_groups_leave_the_difference_losses_unchanged(make, grouped):
    # the losses of RankSVM(margin="difference") and SVRank read only differences y_i - y_j inside a group, so adding
    # an offset per group (here 1e9, exactly representable with these targets) must give the same model; the solvers'
    # sums over rows lost the digits to it: predictions off by up to 3e-4 relative
    rng = np.random.default_rng(3)
    X, y = rng.normal(size=(24, 3)), rng.integers(0, 16, 24) / 8.0
    g = np.repeat([0, 1, 2], 8) if grouped else None
    offset = 1e9 * (1.0 + (np.arange(24) // 8 if grouped else 0.0))
    assert np.array_equal((y + offset) - offset, y)  # the offset targets hold y exactly
    Xt = rng.normal(size=(6, 3))
    plain = make().fit(X, y, g).predict(Xt)
    shifted = make().fit(X, y + offset, g).predict(Xt)
    np.testing.assert_allclose(shifted, plain, rtol=0, atol=1e-6 * np.abs(plain).max())


@pytest.mark.parametrize("make, seed", [
    (lambda: fastrank.RankSVM(tol=1e-10), 36),
    (lambda: fastrank.RankSVM(loss="hinge", tol=1e-10), 35),
    (lambda: fastrank.SVRank(tol=1e-10), 0),
    (lambda: fastrank.SVRank(loss="squared_epsilon_insensitive", tol=1e-10), 0),
], ids=["ranksvm", "ranksvm-hinge", "svrank", "svrank-squared"])
def test_a_feature_offset_leaves_the_linear_pairwise_models_unchanged(make, seed):
    # a linear pairwise loss reads f_i - f_j = w.(x_i - x_j): features shifted by 1e9 (a timestamp column; exact here)
    # give the same w.  RankSVM and SVRank formed f = X w on the raw columns and lost the differences' digits: weights
    # off by 2e-4 (RankSVM), 4% (hinge), and the squared SVRank stopped at its rounding floor
    rng = np.random.default_rng(seed)
    X, y = rng.integers(-16, 16, (20, 3)) / 8.0, rng.normal(size=20)
    Xt = rng.integers(-16, 16, (6, 3)) / 8.0
    plain = make().fit(X, y)
    shifted = make().fit(X + 1e9, y)
    np.testing.assert_allclose(shifted.coef_, plain.coef_, rtol=1e-6, atol=1e-8 * np.abs(plain.coef_).max())
    np.testing.assert_allclose(shifted.predict(Xt), plain.predict(Xt), rtol=1e-6)


@pytest.mark.parametrize("algorithm", ["sequential", "gradient"])
@pytest.mark.parametrize("grouped", [False, True])
def test_online_mprank_under_a_feature_offset_reaches_the_same_model(algorithm, grouped):
    # the linear OnlineMPRank centred the kernel X X^T (entries ~3e16 for features near 1e8) instead of X: the centred
    # kernel lost its digits, and fit raised "diverged; use a smaller learning rate eta" or returned weights off by 1e59
    # (weights off by 1e-2 at an offset of 1e7)
    rng = np.random.default_rng(1)
    X, y = rng.integers(-16, 16, (20, 3)) / 8.0, rng.normal(size=20)
    g = np.repeat([0, 1], 10) if grouped else None
    plain = fastrank.OnlineMPRank(algorithm=algorithm, tol=1e-12, max_iter=20000).fit(X, y, g)
    shifted = fastrank.OnlineMPRank(algorithm=algorithm, tol=1e-12, max_iter=20000).fit(X + 1e8, y, g)
    np.testing.assert_allclose(shifted.coef_, plain.coef_, rtol=1e-7, atol=1e-9 * np.abs(plain.coef_).max())
    # the fixed point is MPRank's model (eq. 13), which the feature offset does not change either
    exact = fastrank.MPRank().fit(X + 1e8, y, g).predict(X + 1e8)
    np.testing.assert_allclose(np.diff(shifted.predict(X + 1e8)), np.diff(exact), rtol=0,
                               atol=1e-5 * np.abs(np.diff(exact)).max())


# tol=1e-10 is below what double precision certifies for some: they stop at the rounding floor and say so
@pytest.mark.filterwarnings("ignore:.*double precision's rounding:sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("make", [
    lambda: fastrank.RankSVM(tol=1e-10),
    lambda: fastrank.SVRank(tol=1e-10),
    lambda: fastrank.SVRank(loss="squared_epsilon_insensitive", tol=1e-10),
    lambda: fastrank.OnlineMPRank(tol=1e-12, max_iter=20000),
], ids=["ranksvm", "svrank", "svrank-squared", "online-mprank"])
def test_query_level_feature_offsets_leave_the_grouped_linear_models_unchanged(make):
    # with groups only pairs inside a group count, so a feature that is constant inside each query (a query-level
    # feature of 1e9, 2e9, 3e9) changes no x_i - x_j and hence no linear model; it cost f = X w its digits (the squared
    # SVRank's scores off by 100%), or made OnlineMPRank diverge
    rng = np.random.default_rng(0)
    X, y, g = rng.integers(-16, 16, (24, 3)) / 8.0, rng.normal(size=24), np.repeat([0, 1, 2], 8)
    offsets = np.outer(1e9 * (1.0 + g), [1.0, 0.0, 1.0])
    Xt = rng.integers(-16, 16, (6, 3)) / 8.0
    plain = make().fit(X, y, g)
    shifted = make().fit(X + offsets, y, g)
    np.testing.assert_allclose(shifted.coef_, plain.coef_, rtol=1e-6, atol=1e-8 * np.abs(plain.coef_).max())
    np.testing.assert_allclose(np.diff(shifted.predict(Xt)), np.diff(plain.predict(Xt)), rtol=1e-6,
                               atol=1e-8 * np.abs(plain.predict(Xt)).max())


@pytest.mark.parametrize("loss", ["squared_hinge", "hinge"])
def test_a_feature_offset_leaves_a_preference_graph_ranksvm_unchanged(loss):
    # the same relation for fit_preferences, whose edges may join any rows: the columns are centred as a whole
    rng = np.random.default_rng(36)
    X, y = rng.integers(-16, 16, (20, 3)) / 8.0, rng.normal(size=20)
    pairs = np.array([(i, j) for i in range(20) for j in range(20) if y[i] > y[j]])
    plain = fastrank.RankSVM(loss=loss, tol=1e-10).fit_preferences(X, pairs)
    shifted = fastrank.RankSVM(loss=loss, tol=1e-10).fit_preferences(X + 1e9, pairs)
    np.testing.assert_allclose(shifted.coef_, plain.coef_, rtol=1e-6, atol=1e-8 * np.abs(plain.coef_).max())
