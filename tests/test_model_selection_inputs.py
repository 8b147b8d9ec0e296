"""Hostile inputs of the exact cross-validation functions (fastrank.model_selection) and searches (RankRLSCV,
MPRankCV): a hold-out set or pair whose training part holds no preference, hold-out units of single rows and
non-string scoring values raise errors that say so, instead of scores and predictions of a model that was never
trained (the zero model, whose exact predictions came back as rounding noise).  Where the check lets a borderline
case through, the numbers equal a plain numpy retraining (tests/cv_oracles.py) to 1e-8 relative."""

import warnings

import numpy as np
import pytest

import fastrank
from fastrank import model_selection as ms
from cv_oracles import retrain_predict

NO_PREFERENCE = "leaves no training pairs with a preference"


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    return rng.normal(size=(12, 3)), rng.normal(size=12)


def test_rankrlscv_leave_group_out_of_the_only_group_with_pairs_raises(data):
    # groups {0}, {1..11}: holding out the big group leaves one row; its AUC came from rounding noise (0.47)
    X, y = data
    with pytest.raises(ValueError, match=f"holding out group 1 {NO_PREFERENCE}"):
        fastrank.RankRLSCV().fit(X, y, np.r_[0, np.ones(11, int)])


def test_rankrlscv_fold_of_every_row_raises(data):
    # with groups one fold of all rows scored 0.5 for every alpha and kept the first
    X, y = data
    with pytest.raises(ValueError, match=f"hold-out set 0 {NO_PREFERENCE}"):
        fastrank.RankRLSCV(cv=[np.arange(12)]).fit(X, y, np.repeat([0, 1, 2], 4))


def test_rankrlscv_all_singleton_groups_name_the_problem(data):
    # the measure's "pairwise_disagreement: there is no pair to evaluate" reached the user
    X, y = data
    with pytest.raises(ValueError, match=f"holding out group 0 {NO_PREFERENCE}"):
        fastrank.RankRLSCV().fit(X, y, np.arange(12))


@pytest.mark.parametrize("search", [
    lambda X, y: fastrank.RankRLSCV(cv="lpo").fit(X, y),
    lambda X, y: ms.permutation_test_lpo(fastrank.RankRLS(kernel="rbf"), X, y, 3, random_state=0),
    lambda X, y: fastrank.MPRankCV(kernel="rbf", Cs=[1.0]).fit(X, y),
    lambda X, y: ms.mprank_loo_approximation(fastrank.MPRank(kernel="rbf"), X, y),
], ids=["RankRLSCV", "permutation_test_lpo", "MPRankCV", "mprank_loo_approximation"])
def test_leave_pair_out_of_the_only_positive_raises(data, search):
    # every scored pair held out the only positive: its model was trained on tied targets, and the LPO-AUC of
    # each alpha (0.05 to 1.0) was rounding noise
    X, _ = data
    with pytest.raises(ValueError, match=rf"held-out pair \[0 1\] {NO_PREFERENCE}"):
        search(X, np.r_[1.0, np.zeros(11)])


def test_leave_pair_out_with_two_positives_equals_retraining(data):
    # the pair of both positives is tied, so not scored: no error, and the scored pairs are exact
    X, _ = data
    y = np.r_[1.0, 1.0, np.zeros(10)]
    est = fastrank.RankRLSCV(alphas=[0.5, 2.0], cv="lpo").fit(X, y)
    K = X @ X.T
    scored = y[est.cv_pairs_[:, 0]] != y[est.cv_pairs_[:, 1]]
    assert scored.sum() == 20
    for (i, j), got in zip(est.cv_pairs_[scored], est.cv_predictions_[scored]):
        want = retrain_predict(K, y[:, None], est.alpha_, [i, j])[:, 0]
        np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-10 * np.abs(want).max())


@pytest.mark.parametrize("call", [
    lambda X, y, g: ms.holdout_predictions(fastrank.RankRLS(), X, y, [np.arange(11)], groups=g),
    lambda X, y, g: ms.kfold_predictions(fastrank.RankRLS(), X, y, [np.arange(11), [11]], groups=g),
    lambda X, y, g: ms.leave_group_out(fastrank.RankRLS(), X, y, np.r_[0, np.ones(11, int)]),
    lambda X, y, g: ms.holdout_predictions(fastrank.RankRLS(exclude_ties=True), X, np.r_[0.0, 0.0, y[2:]],
                                           [np.arange(2, 12)]),
], ids=["holdout-grouped", "kfold-grouped", "leave_group_out", "holdout-tied-rest"])
def test_prediction_functions_refuse_sets_leaving_no_preference(data, call):
    # holdout_predictions' documented "a set that leaves no training pairs raises" held only without groups;
    # the others returned predictions of about 1e-15
    X, y = data
    with pytest.raises(ValueError, match=NO_PREFERENCE):
        call(X, y, np.repeat([0, 1, 2], 4))


def test_set_leaving_one_group_with_a_preference_equals_retraining(data):
    # the borderline case the check lets through: the rows left hold one preference, in one group
    X, y = data
    g = np.repeat([0, 1, 2], 4)
    held = np.arange(10)  # leaves rows 10, 11 of group 2: one pair
    got = ms.holdout_predictions(fastrank.RankRLS(alpha=0.3, kernel="rbf", gamma=0.5), X, y, [held], groups=g)[0]
    d = ((X[:, None] - X[None]) ** 2).sum(-1)
    want = retrain_predict(np.exp(-0.5 * d), y[:, None], 0.3, held, g)[:, 0]
    np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-10 * np.abs(want).max())


@pytest.mark.parametrize("scoring", ["ndcg", "map", "disagreement"])
def test_rankrlscv_folds_of_single_rows_raise(data, scoring):
    # leave-one-out folds: every unit is one row, so ndcg / map scored 1.0 for every alpha (the first was kept) and
    # the pairwise measures failed with "there is no pair to evaluate"
    X, _ = data
    y = np.arange(12) % 3.0
    with pytest.raises(ValueError, match="every hold-out unit .* is a single row"):
        fastrank.RankRLSCV(cv=12, scoring=scoring).fit(X, y)


@pytest.mark.parametrize("scoring", [np.array(["auc", "ndcg"]), ["auc"], None])
def test_permutation_test_scoring_must_be_the_string_auc(data, scoring):
    # an array gave numpy's "truth value of an array ... is ambiguous"
    X, y = data
    with pytest.raises(ValueError, match="scoring must be 'auc'"):
        ms.permutation_test_lpo(fastrank.RankRLS(), X, y, 3, scoring=scoring)


def test_a_failed_search_leaves_the_fitted_search_as_it_was(data):
    X, y = data
    est = fastrank.RankRLSCV(alphas=[0.5, 2.0]).fit(X, y, np.repeat([0, 1, 2], 4))
    before = (est.alpha_, est.best_score_, est.predict(X))
    with pytest.raises(ValueError, match=NO_PREFERENCE):
        est.fit(X, y, np.r_[0, np.ones(11, int)])
    assert (est.alpha_, est.best_score_) == before[:2]
    np.testing.assert_array_equal(est.predict(X), before[2])


def test_permutation_test_of_tied_targets_raises():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 3))
    with pytest.raises(ValueError, match="All targets are tied"):
        ms.permutation_test_lpo(fastrank.RankRLS(), X, np.ones(20), n_permutations=5)
    groups = np.repeat([0, 1], 10)
    with pytest.raises(ValueError, match="All targets are tied inside every group"):
        ms.permutation_test_lpo(fastrank.RankRLS(), X, np.r_[np.ones(10), np.zeros(10)], groups=groups,
                                n_permutations=5)


def test_a_breakdown_at_one_grid_value_names_it():
    # an indefinite kernel (smallest eigenvalue -0.5): C = 1e6 is alpha = 2e-4, where S K S + alpha I has no Cholesky
    # factor; C = 1e-2 is alpha = 2e4
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(20, 3)), rng.normal(size=20)
    K = X @ X.T - 0.5 * np.eye(20)
    with pytest.raises(fastrank.exceptions.LinAlgError, match=r"^C=1e\+06: .*leave this value out of the grid"):
        fastrank.MPRankCV(kernel="precomputed", Cs=[1e6, 1e-2]).fit(K, y)
    assert fastrank.MPRankCV(kernel="precomputed", Cs=[1e-2, 1e-1]).fit(K, y).C_ in (1e-2, 1e-1)


def _lgo_data():
    rng = np.random.default_rng(0)
    X, g = rng.normal(size=(30, 3)), np.repeat(np.arange(3), 10)
    return X, np.round(X @ [1, -1, 0.5] + rng.normal(size=30)), g


@pytest.mark.parametrize("n_alphas", [3, 8], ids=["one-alpha-at-a-time", "shared-eigendecomposition"])
@pytest.mark.parametrize("cv", ["lgo", None])
def test_a_singular_alpha_of_a_leave_group_out_grid_is_named(n_alphas, cv):
    X, y, g = _lgo_data()
    alphas = [1e-17, *np.logspace(-1, 1, n_alphas - 1)]
    with pytest.raises(fastrank.exceptions.LinAlgError, match=r"^alpha=1e-17: leave-group-out: .*leave this value out"):
        fastrank.RankRLSCV(alphas=alphas, cv=cv, kernel="rbf", gamma=1e-4).fit(X, y, g)


@pytest.mark.parametrize("n_alphas", [3, 6], ids=["one-alpha-at-a-time", "shared-eigendecomposition"])
def test_leave_group_out_grids_warn_at_a_tiny_alpha_and_refit_it_as_fit_does(n_alphas):
    # alpha = 1.2e-12 sigma_max(S K S): the kernel's rounding costs the hold-out predictions ~1e-6 and a fit ~1e-4
    # (both warned); the spectral path's full-data coefficients had 4x fit's error
    import mpmath
    X, y, g = _lgo_data()
    calls = []

    def first_alpha_wins(y_true, y_pred, units):
        calls.append(1)
        return -float(len(calls))

    alpha, gamma = 1e-12, 1e-3
    with pytest.warns(fastrank.exceptions.IllConditionedWarning):
        cv = fastrank.RankRLSCV(alphas=[alpha, *np.linspace(0.1, 0.5, n_alphas - 1)], cv="lgo", kernel="rbf",
                                gamma=gamma, scoring=first_alpha_wins).fit(X, y, g)
    assert cv.alpha_ == alpha
    with pytest.warns(fastrank.exceptions.IllConditionedWarning):
        fresh = fastrank.RankRLS(alpha=alpha, kernel="rbf", gamma=gamma).fit(X, y, g)
    mpmath.mp.dps = 40  # (L K + alpha I) A = L y, L = n_q I - 1 1^T in each group of 10, predictions K A
    D = ((X[:, None] - X[None]) ** 2).sum(-1)
    K = mpmath.matrix([[mpmath.exp(-mpmath.mpf(gamma) * mpmath.mpf(d)) for d in row] for row in D])
    L = mpmath.matrix([[(9 if i == j else -1) if g[i] == g[j] else 0 for j in range(30)] for i in range(30)])
    A = mpmath.lu_solve(L * K + mpmath.mpf(alpha) * mpmath.eye(30), L * mpmath.matrix(list(y)))
    exact = np.array([float(v) for v in K * A])
    error = [np.abs(model.predict(X) - exact).max() / np.abs(exact).max() for model in (cv, fresh)]
    assert error[1] < 1e-3 and error[0] <= 1.5 * error[1], error


@pytest.mark.parametrize("kernel", ["linear", "rbf"], ids=["feature-route", "dual-route"])
def test_leave_pair_out_leaving_no_preference_raises(data, kernel):
    # the only positive held out with any other row: the predictions were those of the zero model (about 1e-15);
    # listed pairs and the default pairs (never listed on the feature route), in both routes
    X, _ = data
    y = np.r_[np.zeros(5), 1.0, np.zeros(6)]
    est = fastrank.RankRLS(kernel=kernel)
    with pytest.raises(ValueError, match=rf"held-out pair \[2 5\] {NO_PREFERENCE}"):
        ms.leave_pair_out(est, X, y, pairs=[[0, 1], [2, 5]])
    with pytest.raises(ValueError, match=rf"held-out pair \[0 5\] {NO_PREFERENCE}"):
        ms.leave_pair_out(est, X, y)
    assert ms.leave_pair_out(est, X, y, pairs=[[0, 1], [2, 3]]).shape == (2, 2)


def test_leave_pair_out_of_two_tied_rows_is_checked_but_not_scored(data):
    # predictions are returned for every listed pair, tied or not; a search scores only the untied ones
    X, _ = data
    y = np.r_[1.0, 1.0, np.zeros(10)]
    with pytest.raises(ValueError, match=rf"held-out pair \[0 1\] {NO_PREFERENCE}"):
        ms.leave_pair_out(fastrank.RankRLS(), X, y)
    fastrank.RankRLSCV(alphas=[1.0], cv="lpo").fit(X, y)


def _all_pairs_check(eng, scored):
    try:
        eng.check_pair_preferences(eng.default_pairs(), scored=scored)
    except ValueError:
        return True
    return False


def _default_pairs_check(eng, scored):
    try:
        eng.check_pair_preferences(None, scored=scored)
    except ValueError:
        return True
    return False


def test_default_pair_preference_check_equals_the_check_of_every_pair():
    # the O(m) check of the default pairs against the general check of all of them listed: small groups of few
    # distinct targets, where a pair can leave no preference, in one and two output columns
    from fastrank._exactcv import engine_for

    rng = np.random.default_rng(7)
    outcomes = set()
    for case in range(300):
        m = int(rng.integers(4, 11))
        g = None if case % 3 == 0 else rng.integers(0, int(rng.integers(1, 4)), size=m)
        Y = (rng.random((m, 1 + case % 2)) < rng.uniform(0.05, 0.5)).astype(float) + (rng.random((m, 1)) < 0.1)
        try:
            eng = engine_for(fastrank.RankRLS(kernel="rbf"), rng.normal(size=(m, 2)), Y, g, min_rows=3)
            eng.check_pairs_leave_training(eng.default_pairs())
        except ValueError:  # no preference at all, or a pair leaving no training pair
            continue
        for scored in (None, "cv"):
            want = _all_pairs_check(eng, scored)
            assert _default_pairs_check(eng, scored) == want, (case, scored)
            outcomes.add(want)
    assert outcomes == {True, False}


@pytest.mark.parametrize("call", [
    lambda X, y: ms.leave_pair_out(fastrank.RankRLS(), X, y),
    lambda X, y: ms.leave_pair_out(fastrank.MPRank(kernel="rbf"), X, y, pairs=[[0, 1]]),
    lambda X, y: ms.kfold_predictions(fastrank.RankRLS(kernel="rbf"), X, y, 3),
    lambda X, y: ms.factorize(fastrank.RankRLS(), X, y).solve(1.0),
], ids=["lpo-linear", "lpo-mprank", "kfold", "solve"])
def test_exact_cv_of_tied_targets_gives_the_fit_error(data, call):
    # leave_pair_out of a linear model returned zeros; the others named a hold-out set instead of the data
    X, _ = data
    with pytest.raises(ValueError, match="All targets are tied for all rows"):
        call(X, np.ones(12))


@pytest.mark.parametrize("two_outputs", [False, True])
def test_rankrlscv_folds_of_tied_rows_name_the_problem(two_outputs):
    # every fold held two tied rows: the measure's own "there is no pair to evaluate" reached the user, unexplained
    X = np.random.default_rng(0).normal(size=(6, 2))
    y = np.array([0.0, 0.0, 1.0, 1.0, 2.0, 2.0])
    Y = np.column_stack([y, [0.0, 1.0, 1.0, 2.0, 2.0, 0.0]]) if two_outputs else y
    match = "holds two rows with different targets" + (" of output column 0" if two_outputs else ",")
    with pytest.raises(ValueError, match=match):
        fastrank.RankRLSCV(alphas=[0.1, 1.0], cv=np.repeat([0, 1, 2], 2)).fit(X, Y)


def test_kfold_predictions_refuses_groups_of_another_length():
    from sklearn.model_selection import GroupKFold
    X, y, g = _lgo_data()
    fac = ms.factorize(fastrank.RankRLS(), X, y, g)
    for groups in ([0, 1], np.r_[g, 0], g[:, None]):
        with pytest.raises(ValueError, match=r"^groups must hold one group id per row \(30 rows\), got shape"):
            fac.kfold_predictions(GroupKFold(2), groups=groups)
    np.testing.assert_array_equal(fac.kfold_predictions(GroupKFold(3), groups=list(g)),
                                  fac.kfold_predictions(GroupKFold(3)))


def test_exact_cv_of_a_low_rank_kernel_warns_at_a_tiny_alpha_as_fit_does():
    # rank 8 of 20 rows at alpha = 3e-12: the null directions' rounding over alpha put leave-pair-out 1.3e-2 and
    # leave-group-out 5e-4 off a 50-digit retraining, silently (kernel_rounding_level is 0 for these kernels)
    rng = np.random.default_rng(2)
    X, y, g = rng.normal(size=(20, 8)), rng.normal(size=20), np.repeat(np.arange(4), 5)
    ill = fastrank.exceptions.IllConditionedWarning
    with pytest.warns(ill):
        fastrank.RankRLS(alpha=3e-12, kernel="precomputed").fit(X @ X.T, y)
    with pytest.warns(ill, match="alpha=3e-12 may be inaccurate.* below 1e-09 times the largest eigenvalue"):
        ms.leave_pair_out(fastrank.RankRLS(alpha=3e-12, kernel="precomputed"), X @ X.T, y)
    with pytest.warns(ill, match="alpha=3e-12 may be inaccurate"):
        ms.leave_group_out(fastrank.RankRLS(alpha=3e-12, solver="dual"), X, y, g)
    with pytest.warns(ill):
        fastrank.RankRLSCV(alphas=[3e-12, 1.0], kernel="precomputed", cv="lpo").fit(X @ X.T, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # at an ordinary alpha: nothing
        ms.leave_pair_out(fastrank.RankRLS(alpha=1.0, kernel="precomputed"), X @ X.T, y)
        ms.leave_group_out(fastrank.RankRLS(alpha=1.0, solver="dual"), X, y, g)


@pytest.mark.parametrize("grouped", [False, True])
def test_exact_cv_of_a_gaussian_kernel_warns_only_below_its_largest_eigenvalue(grouped):
    # a narrow Gaussian kernel (K near I): trace(S K S) is ~m times sigma_max, and bounding sigma_max by the trace
    # warned at alpha = 2e-7 (below 1e-9 of the trace, above 1e-9 of sigma_max) where the held-out predictions are
    # exact to rounding; an estimate of sigma_max decides instead, and a tinier alpha still warns
    import mpmath
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 5))
    y, g = X[:, 0] + 0.1 * rng.normal(size=60), np.repeat(np.arange(6), 10) if grouped else None
    est = fastrank.RankRLS(alpha=2e-7, kernel="rbf", gamma=5.0)
    held = [np.array([0, 1]), np.array([23, 27])] + ([np.arange(10), np.arange(40, 50)] if grouped else [])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = ms.leave_pair_out(est, X, y, groups=g, pairs=np.array(held[:2])).reshape(2, 2)
        if grouped:
            lgo = ms.leave_group_out(est, X, y, g)
    mpmath.mp.dps = 40  # retraining: (L K + alpha I) a = L y on the other rows, predictions K a
    K = np.array([[mpmath.exp(-5 * mpmath.mpf(float(((a - b) ** 2).sum()))) for b in X] for a in X], dtype=object)
    for k, rows in enumerate(held):
        T = [t for t in range(60) if t not in rows]
        L = mpmath.matrix([[(g is None or g[i] == g[j]) * ((i == j) * sum(g is None or g[i] == g[t] for t in T) - 1)
                            for j in T] for i in T])
        a = mpmath.lu_solve(L * mpmath.matrix(K[np.ix_(T, T)].tolist()) + mpmath.mpf(2e-7) * mpmath.eye(len(T)),
                            L * mpmath.matrix([y[t] for t in T]))
        exact = np.array([float(v) for v in mpmath.matrix(K[np.ix_(rows, T)].tolist()) * a])
        got = out[k] if k < 2 else lgo[rows]
        np.testing.assert_allclose(got - got.mean(), exact - exact.mean(), rtol=0, atol=1e-14)
    with pytest.warns(fastrank.exceptions.IllConditionedWarning, match="1e-09 times the largest eigenvalue of S K S"):
        ms.leave_pair_out(est.set_params(alpha=1e-9), X, y, groups=g, pairs=np.array(held[:2]))
