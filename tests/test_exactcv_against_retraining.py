"""Exact cross-validation and RankRLS / MPRank as a user drives them (scikit-learn splitters and scorers, overflowing
features, exclude_ties in a permutation test, models whose fit raises): each checked against retraining without the
held-out rows (a plain numpy solve of the normal equations) or for the message naming the cause, never a raw library
message, NaN or a wrong number."""

import numpy as np
import pytest
from sklearn.model_selection import StratifiedGroupKFold, StratifiedKFold

import fastrank as fr
from fastrank import model_selection as ms


def retrained(X, y, alpha, held, groups=None):
    """Predictions for the rows ``held`` of the linear RankRLS trained on the other rows: the primal normal
    equations (X^T L X + alpha I) w = X^T L y with L the Laplacian of all pairs (inside groups) of the kept rows."""
    keep = np.setdiff1d(np.arange(len(y)), held)
    g = np.zeros(len(y)) if groups is None else np.asarray(groups)
    L = np.zeros((keep.size, keep.size))
    for a in range(keep.size):
        for b in range(keep.size):
            if a != b and g[keep[a]] == g[keep[b]]:
                L[a, b] -= 1.0
                L[a, a] += 1.0
    Xk = X[keep]
    w = np.linalg.solve(Xk.T @ L @ Xk + alpha * np.eye(X.shape[1]), Xk.T @ L @ y[keep])
    return X[held] @ w


@pytest.fixture
def binary_data():
    rng = np.random.default_rng(4)
    X = rng.standard_normal((24, 3))
    y = (X[:, 0] + 0.5 * rng.standard_normal(24) > 0).astype(float)
    return X, y, np.repeat(["q1", "q2", "q3", "q4", "q5", "q6"], 4)


def test_stratified_splitters_get_the_targets(binary_data):
    # the splitter was called with y=None: StratifiedKFold failed with numpy's "Input should have at least 1
    # dimension", StratifiedGroupKFold with "Supported target types ... Got 'unknown'"
    X, y, groups = binary_data
    splitter = StratifiedKFold(3, shuffle=True, random_state=0)
    got = ms.kfold_predictions(fr.RankRLS(alpha=2.0), X, y, splitter)
    for _, test in splitter.split(X, y):
        np.testing.assert_allclose(got[test], retrained(X, y, 2.0, test), rtol=1e-8, atol=1e-12)
    cv = fr.RankRLSCV(alphas=[0.5, 2.0], cv=StratifiedKFold(3, shuffle=True, random_state=0)).fit(X, y)
    for _, test in splitter.split(X, y):
        np.testing.assert_allclose(cv.cv_predictions_[test], retrained(X, y, cv.alpha_, test), rtol=1e-8,
                                   atol=1e-12)
    grouped = StratifiedGroupKFold(2)
    cv = fr.RankRLSCV(alphas=[0.5, 2.0], cv=grouped).fit(X, y, groups)
    for _, test in grouped.split(X, y, groups):
        np.testing.assert_allclose(cv.cv_predictions_[test], retrained(X, y, cv.alpha_, test, groups), rtol=1e-8,
                                   atol=1e-12)


@pytest.mark.parametrize("call", [
    lambda X, y, g: ms.leave_group_out(fr.RankRLS(), X, y, g),
    lambda X, y, g: ms.leave_pair_out(fr.RankRLS(), X, y),
    lambda X, y, g: ms.kfold_predictions(fr.RankRLS(), X, y, 3),
    lambda X, y, g: fr.RankRLSCV(alphas=[1.0, 10.0]).fit(X, y, g),
    lambda X, y, g: fr.RankRLSCV(alphas=np.logspace(-3, 3, 40), cv=3).fit(X, y, g),
    lambda X, y, g: fr.MPRankCV(Cs=[1.0, 10.0]).fit(X, y),
])
def test_overflowing_linear_features_raise(call):
    # linear kernel with n_features < m (the feature-space routes): the overflowing X^T L X gave NaN predictions
    # silently (leave_group_out, leave_pair_out) or numpy/LAPACK/metrics messages ("array must not contain infs or
    # NaNs", "Eigenvalues did not converge", "Input y_score contains NaN"), where the dual route names X
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((20, 4)) * 1e200, rng.standard_normal(20)
    with pytest.raises(ValueError, match="inner products of rows of X overflow float64; rescale X"):
        call(X, y, np.repeat([0, 1, 2, 3], 5))


def test_scikit_learn_scorer_refused_by_name(binary_data):
    # a scikit-learn scorer (estimator, X, y) was called with the hold-out arrays and failed inside scikit-learn:
    # "'numpy.ndarray' object has no attribute '__sklearn_tags__'"
    from sklearn.metrics import get_scorer

    X, y, groups = binary_data
    est = fr.RankRLSCV(scoring=get_scorer("roc_auc"))
    with pytest.raises(TypeError, match=r"scoring=.* is a scikit-learn scorer .*make_ranking_scorer"):
        est.fit(X, y, groups)


def _rbf(X, gamma):
    return np.exp(-gamma * ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1))


def _retrained_dual(K, y, alpha, held, groups):
    """Predictions for ``held`` of the kernel RankRLS trained on the other rows: (L K + alpha I) A = L y (eq. 17),
    L the Laplacian of the pairs inside each group of the kept rows."""
    keep = np.setdiff1d(np.arange(len(y)), held)
    same = (groups[keep][:, None] == groups[keep][None, :]).astype(float)
    L = np.diag(same.sum(axis=1)) - same
    A = np.linalg.solve(L @ K[np.ix_(keep, keep)] + alpha * np.eye(keep.size), L @ y[keep])
    return K[np.ix_(held, keep)] @ A


def test_leave_pair_out_from_a_shared_spectral_factor_at_small_alpha():
    # With the spectral factor of S K S shared (factorize, RankRLSCV grids of more than 30 alphas), alphas from
    # 1e-4 sigma_max up took the spectral pair formula, which here was off by 3.7e-7 relative at alpha = 1e-3
    # sigma_max (sigma_max = 6.0; 3.6e-5 at 1e-4 sigma_max); the Cholesky route and this float64 oracle agree to 1e-13
    rng = np.random.default_rng(6)
    X, y = rng.standard_normal((18, 30)), rng.standard_normal(18)
    groups = np.array(list("abc" * 6))
    fac = ms.factorize(fr.RankRLS(kernel="rbf", gamma=0.2), X, y, groups)
    pairs = np.array([[0, 3], [4, 7]])
    got = fac.leave_pair_out(pairs, alpha=6e-3)
    K = _rbf(X, 0.2)
    want = np.array([_retrained_dual(K, y, 6e-3, p, groups) for p in pairs])
    np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-8 * np.abs(want).max())


def _tie_excluded_lpo_auc(X, y, alpha, pairs):
    """1 - disagreement of leave-pair-out predictions of the linear RankRLS on the pairs with different targets only
    (exclude_ties=True), each retrained by the primal normal equations without the pair's two rows."""
    wrong = []
    for i, j in pairs:
        if y[i] == y[j]:
            continue
        keep = np.setdiff1d(np.arange(len(y)), [i, j])
        untied = (y[keep][:, None] != y[keep][None, :]).astype(float)
        L = np.diag(untied.sum(axis=1)) - untied
        Xk = X[keep]
        w = np.linalg.solve(Xk.T @ L @ Xk + alpha * np.eye(X.shape[1]), Xk.T @ L @ y[keep])
        d = (X[i] - X[j]) @ w
        wrong.append(0.5 if d == 0 else float(d * (y[i] - y[j]) < 0))
    return 1.0 - np.mean(wrong)


def test_permutation_test_with_exclude_ties():
    # every permutation ties other pairs than y; for a 1-D y that is no reason to raise "exclude_ties=True needs every
    # output column of y to tie the same pairs; fit the outputs separately"
    from sklearn.utils import check_random_state

    rng = np.random.default_rng(5)
    X = rng.standard_normal((10, 2))
    y = rng.integers(0, 3, 10).astype(float)
    score, perm_scores, pvalue = ms.permutation_test_lpo(fr.RankRLS(alpha=0.5, exclude_ties=True), X, y,
                                                         n_permutations=3, random_state=7)
    pairs = [(i, j) for i in range(10) for j in range(i + 1, 10)]
    draws = check_random_state(7)
    want = [_tie_excluded_lpo_auc(X, y, 0.5, pairs)]
    want += [_tie_excluded_lpo_auc(X, y[draws.permutation(10)], 0.5, pairs) for _ in range(3)]
    np.testing.assert_allclose(np.r_[score, perm_scores], want, rtol=1e-12)
    assert pvalue == (np.count_nonzero(np.asarray(want[1:]) >= want[0]) + 1) / 4


@pytest.mark.parametrize("params, message", [
    (dict(solver="primal", kernel="rbf"), "solver='primal' needs kernel='linear'"),
    (dict(solver="primal", basis_vectors=3), "cannot be combined with solver='primal'"),
    (dict(random_state="x", basis_vectors=3), "'random_state' parameter of RankRLS"),
    (dict(tol=-1.0), "'tol' parameter of RankRLS"),
])
def test_exact_cv_refuses_the_models_fit_refuses(params, message):
    # leave_pair_out / RankRLSCV-style questions for a RankRLS whose fit raises raise fit's error, not the
    # predictions of another model (the rbf dual for solver='primal') nor numpy's "'x' cannot be used to seed"
    rng = np.random.default_rng(1)
    X, y = rng.standard_normal((12, 3)), rng.standard_normal(12)
    with pytest.raises(ValueError, match=message):
        fr.RankRLS(**params).fit(X, y)
    with pytest.raises(ValueError, match=message):
        ms.leave_pair_out(fr.RankRLS(**params), X, y)
    with pytest.raises(ValueError, match=message):
        ms.kfold_predictions(fr.RankRLS(**params), X, y, 3)


def test_factorization_kfold_splitter_uses_its_groups():
    # a Factorization built with groups passed groups=None to a group splitter: scikit-learn's "The 'groups' parameter
    # should not be None"
    from sklearn.model_selection import GroupKFold

    rng = np.random.default_rng(2)
    X, y = rng.standard_normal((18, 3)), rng.standard_normal(18)
    groups = np.repeat(["u", "v", "w", "x", "y", "z"], 3)
    got = ms.factorize(fr.RankRLS(alpha=0.8), X, y, groups).kfold_predictions(GroupKFold(3))
    for _, test in GroupKFold(3).split(X, y, groups):
        np.testing.assert_allclose(got[test], retrained(X, y, 0.8, test, groups), rtol=1e-8, atol=1e-12)


def test_scikit_learn_split_pairs_and_training_parts():
    # list(KFold(3).split(X)), scikit-learn's usual cv, failed with numpy's "setting an array element with a sequence";
    # TimeSeriesSplit's folds were retrained on every other row (the future included) instead of refused
    from sklearn.model_selection import KFold, TimeSeriesSplit

    rng = np.random.default_rng(3)
    X, y = rng.standard_normal((15, 3)), rng.standard_normal(15)
    splits = list(KFold(3, shuffle=True, random_state=1).split(X))
    got = ms.kfold_predictions(fr.RankRLS(alpha=0.7), X, y, splits)
    for _, test in splits:
        np.testing.assert_allclose(got[test], retrained(X, y, 0.7, test), rtol=1e-8, atol=1e-12)
    cv = fr.RankRLSCV(alphas=[0.7, 7.0], cv=splits).fit(X, y)
    for _, test in splits:
        np.testing.assert_allclose(cv.cv_predictions_[test], retrained(X, y, cv.alpha_, test), rtol=1e-8,
                                   atol=1e-12)
    for cv in (TimeSeriesSplit(3), list(TimeSeriesSplit(3).split(X))):
        with pytest.raises(ValueError, match=r"split 0 trains on 6 rows, not on the 12 rows outside its test set"):
            fr.RankRLSCV(cv=cv).fit(X, y)
