"""Exact fast cross-validation: every shortcut against brute-force retraining (tests/cv_oracles.py)."""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fastrank  # noqa: E402
from fastrank import model_selection as ms  # noqa: E402
from fastrank._exactcv import engine_for  # noqa: E402
from cv_oracles import rbf, retrain_predict, retrain_predict_primal  # noqa: E402

RTOL = 1e-8


def _data(m=13, d=3, v=None, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, d))
    y = rng.normal(size=m) if v is None else rng.normal(size=(m, v))
    return X, y


def _assert_close(a, b, rtol=RTOL):
    a, b = np.asarray(a), np.asarray(b)
    scale = max(1.0, float(np.max(np.abs(b))))
    np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * scale)


def _oracle_pairs(K, Y, alpha, pairs, groups=None, weighting="unweighted", primal_X=None):
    out = []
    for i, j in pairs:
        if primal_X is not None:
            out.append(retrain_predict_primal(primal_X, Y, alpha, [i, j], groups, weighting))
        else:
            out.append(retrain_predict(K, Y, alpha, [i, j], groups, weighting))
    return np.array(out)  # (n, 2, v)


# ---------------------------------------------------------------------------------------------
# object leave-pair-out
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("alpha", [0.05, 1.0, 20.0])
def test_object_lpo_gaussian_all_pairs(alpha):
    X, y = _data(m=12)
    est = fastrank.RankRLS(alpha=alpha, kernel="rbf", gamma=0.4)
    out = ms.leave_pair_out(est, X, y)
    i, j = np.triu_indices(12, 1)
    assert out.shape == (i.size, 2)
    ref = _oracle_pairs(rbf(X, X, 0.4), y[:, None], alpha, zip(i, j))[:, :, 0]
    _assert_close(out, ref)


def test_object_lpo_linear_rank_deficient_matches_primal_oracle():
    X, y = _data(m=14, d=3)  # K = X X^T has rank 3 < 14
    for solver in ("dual", "primal", "auto"):
        est = fastrank.RankRLS(alpha=0.7, kernel="linear", solver=solver)
        out = ms.leave_pair_out(est, X, y)
        i, j = np.triu_indices(14, 1)
        ref = _oracle_pairs(None, y[:, None], 0.7, zip(i, j), primal_X=X)[:, :, 0]
        _assert_close(out, ref)


def test_object_lpo_precomputed_singular_kernel():
    X, y = _data(m=11, d=2)
    K = X @ X.T + 0.5  # rank 3
    est = fastrank.RankRLS(alpha=0.3, kernel="precomputed")
    pairs = np.array([[0, 1], [5, 2], [10, 3], [4, 9]])
    out = ms.leave_pair_out(est, K, y, pairs=pairs)
    ref = _oracle_pairs(K, y[:, None], 0.3, pairs)[:, :, 0]
    _assert_close(out, ref)


def test_object_lpo_polynomial_multi_output():
    X, Y = _data(m=10, v=3, seed=3)
    est = fastrank.RankRLS(alpha=0.5, kernel="poly", gamma=0.5, degree=2, coef0=1.0)
    out = ms.leave_pair_out(est, X, Y)
    i, j = np.triu_indices(10, 1)
    assert out.shape == (i.size, 2, 3)
    Xs = X * np.sqrt(0.5)
    K = (Xs @ Xs.T + 1.0) ** 2
    ref = _oracle_pairs(K, Y, 0.5, zip(i, j))
    _assert_close(out, ref)
    # each column equals the single-output run
    for k in range(3):
        _assert_close(out[:, :, k], ms.leave_pair_out(est, X, Y[:, k]), rtol=1e-12)


def test_object_lpo_given_pairs_order_and_reversal():
    X, y = _data(m=9)
    est = fastrank.RankRLS(alpha=1.0, kernel="rbf", gamma=0.3)
    full = ms.leave_pair_out(est, X, y)
    i, j = np.triu_indices(9, 1)
    pairs = np.stack([j, i], axis=1)[::-1]  # reversed order, swapped members
    out = ms.leave_pair_out(est, X, y, pairs=pairs)
    _assert_close(out[::-1][:, ::-1], full, rtol=1e-12)


def test_object_lpo_threads_equal_serial():
    X, y = _data(m=40, seed=5)
    a = ms.leave_pair_out(fastrank.RankRLS(alpha=1.0, kernel="rbf", n_jobs=1), X, y)
    b = ms.leave_pair_out(fastrank.RankRLS(alpha=1.0, kernel="rbf", n_jobs=2), X, y)
    # n_jobs also sets LAPACK's threads (fastrank._threads), which may change the rounding of the
    # Cholesky factor; fastrank's own pair phase is identical for any thread count
    np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_object_lpo_smallest_cases():
    X, y = _data(m=4)
    out = ms.leave_pair_out(fastrank.RankRLS(alpha=0.5, kernel="rbf", gamma=1.0), X, y)
    i, j = np.triu_indices(4, 1)
    ref = _oracle_pairs(rbf(X, X, 1.0), y[:, None], 0.5, zip(i, j))[:, :, 0]
    _assert_close(out, ref)
    with pytest.raises(ValueError, match="no training pairs"):  # m = 3 keeps a single input
        ms.leave_pair_out(fastrank.RankRLS(alpha=0.5, kernel="rbf"), X[:3], y[:3])


def test_mprank_estimator_uses_equivalent_alpha():
    X, y = _data(m=10)
    C = 3.0
    a = ms.leave_pair_out(fastrank.MPRank(C=C, kernel="rbf", gamma=0.5), X, y)
    # every pair's model is MPRank(C) on the other 8 rows: alpha = 8^2 / (2 C)
    b = ms.leave_pair_out(fastrank.RankRLS(alpha=64 / (2 * C), kernel="rbf", gamma=0.5), X, y)
    _assert_close(a, b, rtol=1e-12)


# ---------------------------------------------------------------------------------------------
# leave-pair-out inside query groups
# ---------------------------------------------------------------------------------------------

GROUPS = np.array([2, 0, 1, 0, 2, 1, 0, 2, 9, 1, 0, 2, 1, 5])  # sizes 4, 4, 4, 1, 1 (unsorted ids)


@pytest.mark.parametrize("weighting", ["unweighted", "normalized"])
def test_query_lpo_matches_retraining(weighting):
    X, y = _data(m=GROUPS.size, seed=1)
    est = fastrank.RankRLS(alpha=0.4, kernel="rbf", gamma=0.5, group_weighting=weighting)
    out = ms.leave_pair_out(est, X, y, groups=GROUPS)
    pairs = [(a, b) for a in range(GROUPS.size) for b in range(a + 1, GROUPS.size) if GROUPS[a] == GROUPS[b]]
    assert out.shape == (len(pairs), 2)
    ref = _oracle_pairs(rbf(X, X, 0.5), y[:, None], 0.4, pairs, GROUPS, weighting)[:, :, 0]
    _assert_close(out, ref)


def test_query_lpo_group_of_two_and_linear_multi_output():
    groups = np.array([0, 0, 1, 1, 1, 1, 2, 2, 2])
    X, Y = _data(m=9, d=2, v=2, seed=7)
    est = fastrank.RankRLS(alpha=0.9, kernel="linear")
    out = ms.leave_pair_out(est, X, Y, groups=groups)
    pairs = [(a, b) for a in range(9) for b in range(a + 1, 9) if groups[a] == groups[b]]
    ref = _oracle_pairs(None, Y, 0.9, pairs, groups, primal_X=X)
    _assert_close(out, ref)


def test_query_lpo_default_pairs_lexicographic():
    X, y = _data(m=GROUPS.size)
    prob = engine_for(fastrank.RankRLS(), X, y, GROUPS)
    pairs = prob.default_pairs()
    expected = [(a, b) for a in range(GROUPS.size) for b in range(a + 1, GROUPS.size) if GROUPS[a] == GROUPS[b]]
    np.testing.assert_array_equal(pairs, np.array(expected))


# ---------------------------------------------------------------------------------------------
# leave-group-out, hold-out sets, k-fold
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("weighting", ["unweighted", "normalized"])
def test_leave_group_out_matches_retraining(weighting):
    X, Y = _data(m=GROUPS.size, v=2, seed=2)
    est = fastrank.RankRLS(alpha=0.6, kernel="rbf", gamma=0.3, group_weighting=weighting)
    out = ms.leave_group_out(est, X, Y, GROUPS)
    assert out.shape == Y.shape
    K = rbf(X, X, 0.3)
    for g in np.unique(GROUPS):
        U = np.flatnonzero(GROUPS == g)
        _assert_close(out[U], retrain_predict(K, Y, 0.6, U, GROUPS, weighting))


def test_leave_group_out_singleton_group_equals_full_fit():
    X, y = _data(m=GROUPS.size, seed=4)
    est = fastrank.RankRLS(alpha=0.6, kernel="rbf", gamma=0.3)
    out = ms.leave_group_out(est, X, y, GROUPS)
    full = est.fit(X, y, GROUPS).predict(X)
    U = np.flatnonzero(GROUPS == 9)
    _assert_close(out[U], full[U])


def test_holdout_sets_grouped_cutting_groups():
    X, y = _data(m=GROUPS.size, seed=6)
    est = fastrank.RankRLS(alpha=0.2, kernel="rbf", gamma=0.3, group_weighting="normalized")
    sets = [np.array([0, 1, 2]), np.array([3, 13, 8, 4]), np.array([6])]
    out = ms.holdout_predictions(est, X, y, sets, groups=GROUPS)
    K = rbf(X, X, 0.3)
    for s, o in zip(sets, out):
        _assert_close(o, retrain_predict(K, y[:, None], 0.2, s, GROUPS, "normalized")[:, 0])


@pytest.mark.parametrize("kernel", ["rbf", "linear"])
def test_kfold_object(kernel):
    X, y = _data(m=13, d=2, seed=8)
    est = fastrank.RankRLS(alpha=0.8, kernel=kernel, gamma=0.5)
    folds = np.array([0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 2])
    out = ms.kfold_predictions(est, X, y, folds)
    K = rbf(X, X, 0.5) if kernel == "rbf" else X @ X.T
    for f in range(3):
        U = np.flatnonzero(folds == f)
        _assert_close(out[U], retrain_predict(K, y[:, None], 0.8, U)[:, 0])
    # int k and a splitter give the contiguous folds
    from sklearn.model_selection import KFold

    a = ms.kfold_predictions(est, X, y, 4)
    b = ms.kfold_predictions(est, X, y, KFold(4))
    _assert_close(a, b, rtol=1e-12)
    for U in np.array_split(np.arange(13), 4):
        _assert_close(a[U], retrain_predict(K, y[:, None], 0.8, U)[:, 0])


def test_kfold_grouped_whole_groups():
    X, y = _data(m=GROUPS.size, seed=9)
    est = fastrank.RankRLS(alpha=0.5, kernel="rbf", gamma=0.3)
    out = ms.kfold_predictions(est, X, y, 2, groups=GROUPS)
    K = rbf(X, X, 0.3)
    labels, codes = np.unique(GROUPS, return_inverse=True)
    for f in range(2):
        U = np.flatnonzero(codes % 2 == f)
        _assert_close(out[U], retrain_predict(K, y[:, None], 0.5, U, GROUPS)[:, 0])


# ---------------------------------------------------------------------------------------------
# regularization path and RankRLSCV
# ---------------------------------------------------------------------------------------------

def test_every_alpha_of_a_path_lpo_and_lgo():
    X, y = _data(m=GROUPS.size, seed=10)
    K = rbf(X, X, 0.5)
    alphas = np.logspace(-3, 3, 7)
    est = fastrank.RankRLS(kernel="rbf", gamma=0.5)
    obj = engine_for(est, X, y)
    grp = engine_for(est, X, y, GROUPS)
    pairs = obj.default_pairs()[::7]
    gpairs = grp.default_pairs()
    for a in alphas:
        _assert_close(obj.lpo(pairs, a), _oracle_pairs(K, y[:, None], a, pairs)[:, :, 0])
        _assert_close(grp.lpo(gpairs, a), _oracle_pairs(K, y[:, None], a, gpairs, GROUPS)[:, :, 0])
        U = np.flatnonzero(GROUPS == 0)
        _assert_close(grp.holdout([U], a), retrain_predict(K, y[:, None], a, U, GROUPS))


def _oracle_lpo_auc(K, y, alpha):
    m = y.size
    i, j = np.triu_indices(m, 1)
    P = _oracle_pairs(K, y[:, None], alpha, zip(i, j))[:, :, 0]
    return 1.0 - ms.pairwise_disagreement(P, np.stack([y[i], y[j]], 1))


def test_rankrlscv_lpo_scores_every_alpha_and_refits():
    X, y = _data(m=11, seed=11)
    y = np.round(y)  # ties in targets are ignored by the score
    alphas = [0.01, 0.3, 10.0]
    cv = fastrank.RankRLSCV(alphas=alphas, kernel="rbf", gamma=0.5).fit(X, y)
    K = rbf(X, X, 0.5)
    ref = np.array([_oracle_lpo_auc(K, y, a) for a in alphas])
    np.testing.assert_allclose(cv.cv_results_["scores"], ref, rtol=1e-12)
    assert cv.alpha_ == alphas[int(np.argmax(ref))]
    direct = fastrank.RankRLS(alpha=cv.alpha_, kernel="rbf", gamma=0.5).fit(X, y)
    _assert_close(cv.predict(X), direct.predict(X))


def test_rankrlscv_lgo_and_folds():
    X, y = _data(m=GROUPS.size, seed=12)
    y = np.abs(np.round(2 * y))
    alphas = [0.1, 1.0, 10.0]
    K = rbf(X, X, 0.5)
    for cv_arg, scoring in [("lgo", "disagreement"), ("lgo", "ndcg"), (2, "auc")]:
        cv = fastrank.RankRLSCV(alphas=alphas, cv=cv_arg, scoring=scoring, kernel="rbf", gamma=0.5)
        cv.fit(X, y, groups=GROUPS)
        assert cv.cv_results_["scores"].shape == (3,)
        # the scores are those of the brute-force hold-out predictions
        from fastrank._cv import holdout_score

        codes = np.unique(GROUPS, return_inverse=True)[1]
        if cv_arg == "lgo":
            sets = [np.flatnonzero(GROUPS == g) for g in np.unique(GROUPS)]
        else:
            sets = [np.flatnonzero(codes % 2 == f) for f in range(2)]
        for k, a in enumerate(alphas):
            pred = np.empty((y.size, 1))
            for U in sets:
                pred[U] = retrain_predict(K, y[:, None], a, U, GROUPS)
            ref = holdout_score(pred, y[:, None], sets, codes, scoring)
            assert cv.cv_results_["scores"][k] == pytest.approx(ref, rel=1e-12)
        best = np.argmin if scoring == "disagreement" else np.argmax
        assert cv.alpha_ == alphas[int(best(cv.cv_results_["scores"]))]


def test_rankrlscv_bad_arguments():
    X, y = _data(m=8)
    with pytest.raises(ValueError, match="scoring"):
        fastrank.RankRLSCV(alphas=[1.0], scoring="bogus").fit(X, y)
    with pytest.raises(ValueError, match="groups"):
        fastrank.RankRLSCV(alphas=[1.0], cv="lgo").fit(X, y)
    with pytest.raises(ValueError, match="ndcg"):
        fastrank.RankRLSCV(alphas=[1.0], scoring="ndcg").fit(X, y)
    with pytest.raises(ValueError):
        fastrank.RankRLSCV(alphas=[-1.0]).fit(X, y)


# ---------------------------------------------------------------------------------------------
# permutation test
# ---------------------------------------------------------------------------------------------

def test_permutation_test_scores_match_individual_lpo():
    X, y = _data(m=12, seed=13)
    est = fastrank.RankRLS(alpha=1.0, kernel="rbf", gamma=0.5)
    score, perm, p = ms.permutation_test_lpo(est, X, y, n_permutations=5, random_state=0)
    i, j = np.triu_indices(12, 1)
    P = ms.leave_pair_out(est, X, y)
    assert score == pytest.approx(1 - ms.pairwise_disagreement(P, np.stack([y[i], y[j]], 1)), rel=1e-12)
    rng = np.random.RandomState(0)
    for k in range(5):
        yp = y[rng.permutation(12)]
        Pk = ms.leave_pair_out(est, X, yp)
        assert perm[k] == pytest.approx(1 - ms.pairwise_disagreement(Pk, np.stack([yp[i], yp[j]], 1)), rel=1e-12)
    assert p == pytest.approx((np.sum(perm >= score) + 1) / 6)


def test_permutation_test_signal_and_no_signal():
    rng = np.random.default_rng(14)
    m = 40
    X = rng.normal(size=(m, 3))
    est = fastrank.RankRLS(alpha=1.0, kernel="rbf", gamma=0.3)
    y = X[:, 0] + 0.1 * rng.normal(size=m)
    score, perm, p = ms.permutation_test_lpo(est, X, y, n_permutations=99, random_state=0)
    assert score > 0.8 and p <= 0.02
    ps = []
    for seed in range(8):
        y0 = np.random.default_rng(100 + seed).normal(size=m)
        ps.append(ms.permutation_test_lpo(est, X, y0, n_permutations=49, random_state=seed)[2])
    ps = np.array(ps)
    # loose uniformity: not all small, not all large, mean near 1/2
    assert 0.2 < ps.mean() < 0.8 and np.sum(ps < 0.05) <= 2


# ---------------------------------------------------------------------------------------------
# MPRank leave-one-out approximation (Cortes et al.)
# ---------------------------------------------------------------------------------------------

def test_cortes_proposition2_exact_with_true_mean():
    # With the true mean h-bar' of the retrained model and the regularization the proposition's
    # h' implicitly uses (alpha' = m (m - 2) / (2C)), Proposition 2 reproduces retraining.
    m, C = 16, 4.0
    X, y = _data(m=m, seed=15)
    K = rbf(X, X, 0.4)
    res = ms.mprank_loo_approximation(fastrank.MPRank(C=C, kernel="rbf", gamma=0.4), X, y)
    alpha_p = m * (m - 2) / (2 * C)
    # reconstruct the proposition with the exact h-bar' for a few pairs
    L = m * np.eye(m) - 1
    U = K @ np.linalg.solve(L @ K + (m * m / (2 * C)) * np.eye(m), L)
    h = U @ y
    for (i, j) in res.pairs[::9]:
        T = np.setdiff1d(np.arange(m), [i, j])
        LT = T.size * np.eye(T.size) - 1
        hp = K[:, T] @ np.linalg.solve(LT @ K[np.ix_(T, T)] + alpha_p * np.eye(T.size), LT @ y[T])
        d = hp.mean() - y.mean()
        Vii = U[i, i] + (U[i, i] + U[i, j]) / (m - 2)
        Vij = U[i, j] + (U[i, i] + U[i, j]) / (m - 2)
        Vjj = U[j, j] + (U[j, j] + U[j, i]) / (m - 2)
        Vji = U[j, i] + (U[j, j] + U[j, i]) / (m - 2)
        ei, ej = h[i] - y[i], h[j] - y[j]
        den = (1 - Vjj) * (1 - Vii) - Vij * Vji
        ri = ((1 - Vjj) * ei + Vij * ej - ((Vii + Vij) * (1 - Vjj) + (Vjj + Vji) * Vij) * d) / den
        assert y[i] + ri == pytest.approx(hp[i], rel=1e-8)


def test_cortes_approximation_values_are_proposition2_with_hbar():
    # fastrank's approximate predictions and value against Proposition 2 written out in numpy
    # (h-bar' replaced by the full model's mean, eq. 27 coefficients)
    m, C = 14, 2.5
    X, y = _data(m=m, seed=16)
    K = rbf(X, X, 0.4)
    res = ms.mprank_loo_approximation(fastrank.MPRank(C=C, kernel="rbf", gamma=0.4), X, y)
    L = m * np.eye(m) - 1
    U = K @ np.linalg.solve(L @ K + (m * m / (2 * C)) * np.eye(m), L)
    h = U @ y
    d = h.mean() - y.mean()
    preds, costs = [], []
    for i, j in res.pairs:
        Vii = U[i, i] + (U[i, i] + U[i, j]) / (m - 2)
        Vij = U[i, j] + (U[i, i] + U[i, j]) / (m - 2)
        Vjj = U[j, j] + (U[j, j] + U[j, i]) / (m - 2)
        Vji = U[j, i] + (U[j, j] + U[j, i]) / (m - 2)
        ei, ej = h[i] - y[i], h[j] - y[j]
        den = (1 - Vjj) * (1 - Vii) - Vij * Vji
        ri = ((1 - Vjj) * ei + Vij * ej - ((Vii + Vij) * (1 - Vjj) + (Vjj + Vji) * Vij) * d) / den
        rj = (Vji * ei + (1 - Vii) * ej - ((Vii + Vij) * Vji + (Vjj + Vji) * (1 - Vii)) * d) / den
        preds.append([y[i] + ri, y[j] + rj])
        costs.append((rj - ri) ** 2)
    _assert_close(res.approximate_predictions, np.array(preds), rtol=1e-10)
    assert res.approximate == pytest.approx(np.mean(costs), rel=1e-10)


def test_cortes_approximation_error_shrinks_with_m():
    errs = []
    for m in (200, 800):
        rng = np.random.default_rng(0)
        X = rng.normal(size=(m, 5))
        y = X @ rng.normal(size=5) + 0.5 * rng.normal(size=m)
        res = ms.mprank_loo_approximation(fastrank.MPRank(C=m / 2.0, kernel="rbf", gamma=0.2), X, y)
        errs.append(abs(res.approximate - res.exact) / res.exact)
    # measured against the true eq. 17 leave-one-out: 0.43% at m = 200, 0.36% at m = 800
    assert errs[0] < 0.006
    assert errs[1] < errs[0]


# ---------------------------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------------------------

def test_bad_pairs_and_sizes():
    X, y = _data(m=8)
    est = fastrank.RankRLS(alpha=1.0, kernel="rbf")
    with pytest.raises(ValueError, match="same index"):
        ms.leave_pair_out(est, X, y, pairs=[[1, 1]])
    with pytest.raises(ValueError, match="lie in"):
        ms.leave_pair_out(est, X, y, pairs=[[0, 8]])
    with pytest.raises(ValueError, match="lie in"):
        ms.leave_pair_out(est, X, y, pairs=[[-1, 2]])
    with pytest.raises(ValueError, match="shape"):
        ms.leave_pair_out(est, X, y, pairs=[0, 1])
    with pytest.raises(ValueError, match="different groups"):
        ms.leave_pair_out(est, X, y, pairs=[[0, 1]], groups=[0, 1, 0, 1, 0, 1, 0, 1])
    with pytest.raises(ValueError, match="at least 3"):
        ms.leave_pair_out(est, X[:2], y[:2])
    with pytest.raises(ValueError, match="no training pairs"):
        ms.leave_pair_out(est, X[:4], y[:4], groups=[0, 0, 1, 2])
    with pytest.raises(ValueError, match="no training pairs"):
        ms.holdout_predictions(est, X, y, [np.arange(7)])
    with pytest.raises(ValueError, match="no training pairs"):
        ms.holdout_predictions(est, X, y, [np.array([0, 1, 2, 3])], groups=[0, 0, 0, 0, 1, 2, 3, 4])
    with pytest.raises(ValueError, match="disjoint"):
        ms.kfold_predictions(est, X, y, [np.array([0, 1]), np.array([1, 2])])
    with pytest.raises(ValueError, match="dense solver"):
        ms.leave_pair_out(fastrank.RankRLS(solver="cg"), X, y)
    # the C++ layer re-checks cheap invariants too
    from fastrank import _core

    prob = engine_for(est, X, y)
    V, s = prob.decompose()
    M, mu, h = _core.cv_object_prepare(prob.K, V, s, 1.0, 1.0, prob.Yg)
    with pytest.raises(ValueError, match="invalid"):
        _core.cv_object_lpo_pairs(M, mu, h, prob.Yg, 1.0, np.array([[3, 3]], dtype=np.int64), 1)


def test_fitted_estimator_is_not_modified():
    X, y = _data(m=9)
    est = fastrank.RankRLS(alpha=2.0, kernel="rbf").fit(X, y)
    coef = est.dual_coef_.copy()
    ms.leave_pair_out(est, X, y)
    np.testing.assert_array_equal(est.dual_coef_, coef)


@pytest.mark.parametrize("weighting", ["unweighted", "normalized"])
def test_leave_group_out_cholesky_panels_match_eigen_path(weighting):
    # several 512-column panels of L^-1, unsorted ids, a singleton group
    rng = np.random.default_rng(16)
    m = 700
    X = rng.normal(size=(m, 4))
    Y = rng.normal(size=(m, 2))
    groups = rng.integers(0, 37, size=m)
    groups[5] = 99
    est = fastrank.RankRLS(alpha=0.5, kernel="rbf", gamma=0.2, group_weighting=weighting)
    out = ms.leave_group_out(est, X, Y, groups)
    sets = [np.flatnonzero(groups == g) for g in np.unique(groups)]
    ref = ms.holdout_predictions(est, X, Y, sets, groups=groups)
    for U, r in zip(sets, ref):
        _assert_close(out[U], r, rtol=1e-7)
    # and one group against brute-force retraining
    K = rbf(X, X, 0.2)
    U = sets[3]
    _assert_close(out[U], retrain_predict_fast(K, Y, 0.5, U, groups, weighting))


def retrain_predict_fast(K, Y, alpha, held, groups, weighting):
    """Vectorised oracle (same definition as cv_oracles.retrain_predict) for larger m."""
    m = K.shape[0]
    T = np.setdiff1d(np.arange(m), held)
    gT = groups[T]
    _, counts = np.unique(groups, return_counts=True)
    full_n = dict(zip(np.unique(groups), counts))
    c = np.array([1.0 / full_n[g] if weighting == "normalized" else 1.0 for g in gT])
    same = (gT[:, None] == gT[None, :]).astype(float)
    W = same * c[:, None]
    np.fill_diagonal(W, 0.0)
    L = np.diag(W.sum(1)) - W
    lam, Q = np.linalg.eigh(L)
    S = (Q * np.sqrt(np.maximum(lam, 0.0))) @ Q.T
    A = S @ K[np.ix_(T, T)] @ S
    U = np.linalg.solve(0.5 * (A + A.T) + alpha * np.eye(T.size), S @ Y[T])
    return K[np.ix_(held, T)] @ (S @ U)


def test_query_lpo_and_scores_threads_equal_serial():
    rng = np.random.default_rng(17)
    X = rng.normal(size=(90, 3))
    y = rng.normal(size=90)
    groups = rng.integers(0, 4, size=90)
    a = ms.leave_pair_out(fastrank.RankRLS(alpha=1.0, kernel="rbf", n_jobs=1), X, y, groups=groups)
    b = ms.leave_pair_out(fastrank.RankRLS(alpha=1.0, kernel="rbf", n_jobs=2), X, y, groups=groups)
    np.testing.assert_array_equal(a, b)
    prob = engine_for(fastrank.RankRLS(alpha=1.0, kernel="rbf", n_jobs=2), X, y, groups)
    pairs = prob.default_pairs()
    d = prob.lpo_disagreement(pairs, 1.0)
    i, j = pairs[:, 0], pairs[:, 1]
    assert d[0] == pytest.approx(ms.pairwise_disagreement(a, np.stack([y[i], y[j]], 1)), rel=1e-12)


@pytest.mark.parametrize("solver", ["dual", "auto"])
def test_linear_low_rank_path_grouped_holdout_and_path(solver):
    # solver="auto" with n_features < m uses the rank-r factor of (S X)^T (S X); "dual" the m x m one
    X, y = _data(m=GROUPS.size, d=3, seed=18)
    K = X @ X.T
    est = fastrank.RankRLS(kernel="linear", solver=solver, group_weighting="normalized")
    prob = engine_for(est, X, y, GROUPS)
    assert prob.low_rank == (solver == "auto")
    sets = [np.array([0, 1, 2]), np.flatnonzero(GROUPS == 1)]
    pairs = prob.default_pairs()
    for a in (0.01, 1.0, 100.0):
        for s, o in zip(sets, np.split(prob.holdout(sets, a), [3])):
            _assert_close(o, retrain_predict(K, y[:, None], a, s, GROUPS, "normalized"))
        _assert_close(prob.lpo(pairs, a), _oracle_pairs(K, y[:, None], a, pairs, GROUPS, "normalized")[:, :, 0])
    obj = engine_for(est, X, y)
    U = np.array([2, 5, 7, 11])
    _assert_close(obj.holdout([U], 0.3), retrain_predict(K, y[:, None], 0.3, U))


def test_permutation_test_with_groups_permutes_within_groups():
    X, y = _data(m=GROUPS.size, seed=19)
    est = fastrank.RankRLS(alpha=0.5, kernel="rbf", gamma=0.5)
    score, perm, p = ms.permutation_test_lpo(est, X, y, n_permutations=4, random_state=1, groups=GROUPS)
    P = ms.leave_pair_out(est, X, y, groups=GROUPS)
    pairs = engine_for(est, X, y, GROUPS).default_pairs()
    i, j = pairs[:, 0], pairs[:, 1]
    assert score == pytest.approx(1 - ms.pairwise_disagreement(P, np.stack([y[i], y[j]], 1)), rel=1e-12)
    assert perm.shape == (4,) and 0 < p <= 1


def test_permutation_test_with_groups_draws_one_key_per_row_and_permutation():
    # each permutation orders the rows of every group by one random_sample(m) draw (not a call per group); the
    # scores are the LPO AUCs of y under exactly those within-group permutations
    class Counting(np.random.RandomState):
        calls = 0

        def random_sample(self, *args):
            Counting.calls += 1
            return super().random_sample(*args)

        def permutation(self, *args):
            Counting.calls += 1
            return super().permutation(*args)

    X, y = _data(m=GROUPS.size, seed=21)
    est = fastrank.RankRLS(alpha=0.5, kernel="rbf", gamma=0.5)
    score, perm, p = ms.permutation_test_lpo(est, X, y, n_permutations=6, random_state=Counting(4), groups=GROUPS)
    assert Counting.calls == 6
    pairs = engine_for(est, X, y, GROUPS).default_pairs()
    draws = np.random.RandomState(4)
    want = []
    for _ in range(6):
        keys, yp = draws.random_sample(GROUPS.size), y.copy()
        for label in np.unique(GROUPS):
            members = np.flatnonzero(GROUPS == label)
            yp[members] = y[members[np.argsort(keys[members])]]
        P = ms.leave_pair_out(est, X, yp, pairs=pairs, groups=GROUPS)
        want.append(1 - ms.pairwise_disagreement(P, np.stack([yp[pairs[:, 0]], yp[pairs[:, 1]]], 1)))
    np.testing.assert_allclose(perm, want, rtol=1e-12)
    assert p == (np.count_nonzero(perm >= score) + 1) / 7


def test_permutations_within_groups_are_uniform():
    # groups of 3, 2 and 1 rows: each of the 3! 2! = 12 joint arrangements about 1/12 of 24,000 draws (5 sigma)
    from fastrank._validation import group_index
    from fastrank.model_selection import _permutations_within_groups

    gi = group_index(np.array([7, 3, 7, 3, 7, 5]), 6)
    perms = np.array(list(_permutations_within_groups(np.random.RandomState(0), gi, 24_000)))
    assert (np.array([7, 3, 7, 3, 7, 5])[perms] == [7, 3, 7, 3, 7, 5]).all()
    _, counts = np.unique(perms, axis=0, return_counts=True)
    assert counts.size == 12 and np.abs(counts - 2000).max() < 5 * np.sqrt(2000 * 11 / 12)


def test_rankrlscv_multi_output_averages_outputs():
    X, Y = _data(m=10, v=2, seed=20)
    cv = fastrank.RankRLSCV(alphas=[0.1, 1.0], kernel="rbf", gamma=0.5).fit(X, Y)
    K = rbf(X, X, 0.5)
    i, j = np.triu_indices(10, 1)
    for k, a in enumerate([0.1, 1.0]):
        P = _oracle_pairs(K, Y, a, zip(i, j))
        T = np.stack([Y[i], Y[j]], 1)
        ref = 1 - np.mean(ms.pairwise_disagreement(P, T))
        assert cv.cv_results_["scores"][k] == pytest.approx(ref, rel=1e-12)
    assert cv.predict(X).shape == (10, 2)


def test_cv_shortcuts_respect_the_dense_memory_guard(monkeypatch):
    """The shortcuts hold several m x m matrices: above the limit they refuse, before allocating."""
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(300, 3)), rng.normal(size=300)
    monkeypatch.setenv("FASTRANK_MAX_DENSE_BYTES", "1M")
    for call in (lambda: ms.leave_pair_out(fastrank.RankRLS(kernel="rbf"), X, y),
                 lambda: ms.leave_group_out(fastrank.RankRLS(kernel="rbf"), X, y, np.arange(300) % 10),
                 lambda: fastrank.RankRLSCV(alphas=[1.0, 2.0], kernel="rbf").fit(X, y)):
        with pytest.raises(MemoryError, match="solver='cg'"):
            call()
    monkeypatch.setenv("FASTRANK_MAX_DENSE_BYTES", "none")
    assert ms.leave_pair_out(fastrank.RankRLS(kernel="rbf"), X[:20], y[:20]).shape == (190, 2)


# ---------------------------------------------------------------------------------------------
# MPRank retrains at fixed C (alpha = m_train^2 / (2 C), Cortes et al. eq. 17)
# ---------------------------------------------------------------------------------------------

def _mprank_refit(est, X, y, train, test, groups=None):
    g = None if groups is None else groups[train]
    return fastrank.MPRank(**est.get_params()).fit(X[train], y[train], g).predict(X[test])


@pytest.mark.parametrize("kernel", ["rbf", "linear"])
def test_mprank_holdouts_equal_refitting_mprank_at_the_same_C(kernel):
    X, y = _data(m=GROUPS.size, seed=31)
    est = fastrank.MPRank(C=2.0, kernel=kernel, gamma=0.5)
    m = X.shape[0]
    every = np.arange(m)
    pairs = np.array([[0, 1], [4, 9], [2, 12]])
    for (i, j), got in zip(pairs, ms.leave_pair_out(est, X, y, pairs=pairs)):
        _assert_close(got, _mprank_refit(est, X, y, np.setdiff1d(every, [i, j]), [i, j]), rtol=1e-10)
    # k-fold with folds of different sizes: each fold's model has its own alpha
    folds = [np.array([0, 3]), np.array([1, 2, 5, 7, 8]), np.setdiff1d(every, [0, 3, 1, 2, 5, 7, 8])]
    kf = ms.kfold_predictions(est, X, y, folds)
    for f in folds:
        _assert_close(kf[f], _mprank_refit(est, X, y, np.setdiff1d(every, f), f), rtol=1e-10)
    # leave-group-out with MPRank on within-group pairs
    lgo = ms.leave_group_out(est, X, y, GROUPS)
    for g in np.unique(GROUPS):
        rows = np.flatnonzero(GROUPS == g)
        _assert_close(lgo[rows], _mprank_refit(est, X, y, np.setdiff1d(every, rows), rows, GROUPS), rtol=1e-10)


def test_mprank_lpo_example_from_the_report():
    # m = 10, Gaussian kernel: the held-out pair equals MPRank(C=2) refitted on the other 8 rows
    X, y = _data(m=10, seed=32)
    est = fastrank.MPRank(C=2.0, kernel="rbf", gamma=0.5)
    got = ms.leave_pair_out(est, X, y, pairs=[[0, 1]])[0]
    want = fastrank.MPRank(C=2.0, kernel="rbf", gamma=0.5).fit(X[2:], y[2:]).predict(X[:2])
    _assert_close(got, want, rtol=1e-10)
    # the fixed-alpha reading (alpha = 10^2 / 4 kept for 8 training rows) is a different model
    fixed = ms.leave_pair_out(fastrank.RankRLS(alpha=100 / 4.0, kernel="rbf", gamma=0.5), X, y, pairs=[[0, 1]])[0]
    assert np.max(np.abs(fixed - want)) > 1e-3


def test_mprank_loo_approximation_exact_is_eq17():
    X, y = _data(m=12, seed=33)
    est = fastrank.MPRank(C=3.0, kernel="rbf", gamma=0.5)
    res = ms.mprank_loo_approximation(est, X, y)
    m = X.shape[0]
    costs = []
    for i, j in res.pairs:
        train = np.setdiff1d(np.arange(m), [i, j])
        hi, hj = _mprank_refit(est, X, y, train, [i, j])
        costs.append(((hj - y[j]) - (hi - y[i])) ** 2)
    assert res.exact == pytest.approx(np.mean(costs), rel=1e-10)


# ---------------------------------------------------------------------------------------------
# preference graphs: edge weights and leave-out of objects (eq. 33, general form)
# ---------------------------------------------------------------------------------------------

def _random_graph(m, l, seed):
    rng = np.random.default_rng(seed)
    pairs = rng.integers(0, m, size=(l, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    return pairs, rng.uniform(0.5, 2.0, size=pairs.shape[0])


@pytest.mark.parametrize("kernel", ["rbf", "linear"])
@pytest.mark.parametrize("cost", ["binary", "magnitude", "normalized"])
def test_preference_holdout_equals_retraining_on_the_remaining_edges(kernel, cost):
    m = 15
    X, _ = _data(m=m, seed=40)
    pairs, g = _random_graph(m, 40, 41)
    w = np.random.default_rng(42).uniform(0.2, 3.0, size=pairs.shape[0])
    est = fastrank.RankRLS(alpha=0.4, kernel=kernel, gamma=0.5, solver="dual")
    sets = [np.array([0]), np.array([3, 7]), np.array([1, 2, 11, 14])]
    g = None if cost == "binary" else g  # cost='binary' takes no magnitudes
    got = ms.preference_holdout_predictions(est, X, pairs, sets, magnitudes=g, cost=cost, weights=w)
    for U, pred in zip(sets, got):
        keep = ~(np.isin(pairs[:, 0], U) | np.isin(pairs[:, 1], U))
        refit = fastrank.RankRLS(alpha=0.4, kernel=kernel, gamma=0.5, solver="dual").fit_preferences(
            X, pairs[keep], magnitudes=None if g is None else g[keep], cost=cost, weights=w[keep])
        _assert_close(pred, refit.predict(X[U]))


def test_edge_weights_equal_repeated_edges_and_the_explicit_objective():
    m = 12
    X, _ = _data(m=m, seed=43)
    pairs, g = _random_graph(m, 20, 44)
    k = np.random.default_rng(45).integers(1, 4, size=pairs.shape[0])
    for solver in ("dual", "primal", "cg"):
        est = fastrank.RankRLS(alpha=0.3, solver=solver, tol=1e-13)
        a = est.fit_preferences(X, pairs, magnitudes=g, weights=k.astype(float)).coef_.copy()
        b = fastrank.RankRLS(alpha=0.3, solver=solver, tol=1e-13).fit_preferences(
            X, np.repeat(pairs, k, axis=0), magnitudes=np.repeat(g, k)).coef_
        _assert_close(a, b, rtol=1e-7)
    # and against the normal equations of sum_e weights_e (g_e - (f_h - f_t))^2 + alpha |w|^2
    D = X[pairs[:, 0]] - X[pairs[:, 1]]
    want = np.linalg.solve(D.T @ (k[:, None] * D) + 0.3 * np.eye(X.shape[1]), D.T @ (k * g))
    _assert_close(fastrank.RankRLS(alpha=0.3, solver="primal").fit_preferences(X, pairs, g, weights=k).coef_, want)


def test_preference_holdout_bad_input():
    X, _ = _data(m=6, seed=46)
    pairs = np.array([[0, 1], [1, 2], [2, 3]])
    est = fastrank.RankRLS(alpha=1.0, kernel="rbf")
    with pytest.raises(ValueError, match="every preference"):
        ms.preference_holdout_predictions(est, X, pairs, [np.array([1, 2])])
    with pytest.raises(ValueError, match="weights must be finite and > 0"):
        est.fit_preferences(X, pairs, weights=[1.0, 0.0, 1.0])
    with pytest.raises(ValueError, match="weights must have shape"):
        est.fit_preferences(X, pairs, weights=[1.0, 2.0])


# ---------------------------------------------------------------------------------------------
# RankRLSCV: honest default, NDCG@k and callables, stored cross-validated predictions
# ---------------------------------------------------------------------------------------------

def test_rankrlscv_defaults_to_leave_group_out_with_groups():
    X, y = _data(m=GROUPS.size, seed=50)
    alphas = [0.1, 1.0, 10.0]
    auto = fastrank.RankRLSCV(alphas=alphas, kernel="rbf", gamma=0.5).fit(X, y, GROUPS)
    lgo = fastrank.RankRLSCV(alphas=alphas, cv="lgo", kernel="rbf", gamma=0.5).fit(X, y, GROUPS)
    assert auto.cv_results_["cv"] == "lgo"
    np.testing.assert_array_equal(auto.cv_results_["scores"], lgo.cv_results_["scores"])
    # the stored predictions are the leave-group-out predictions of the chosen alpha
    est = fastrank.RankRLS(alpha=auto.alpha_, kernel="rbf", gamma=0.5)
    _assert_close(auto.cv_predictions_, ms.leave_group_out(est, X, y, GROUPS))
    plain = fastrank.RankRLSCV(alphas=alphas, kernel="rbf", gamma=0.5).fit(X, y)
    assert plain.cv_results_["cv"] == "lpo"
    P = ms.leave_pair_out(fastrank.RankRLS(alpha=plain.alpha_, kernel="rbf", gamma=0.5), X, y)
    _assert_close(plain.cv_predictions_, P)
    np.testing.assert_array_equal(plain.cv_pairs_, np.stack(np.triu_indices(X.shape[0], 1), axis=1))


def test_rankrlscv_ndcg_at_k_callable_and_splitter():
    from functools import partial

    from sklearn.model_selection import GroupKFold

    X, y = _data(m=GROUPS.size, seed=51)
    y = np.abs(np.round(y * 2))
    alphas = [0.01, 1.0, 100.0]
    at2 = fastrank.RankRLSCV(alphas=alphas, cv="lgo", scoring="ndcg@2", kernel="rbf").fit(X, y, GROUPS)
    ndcg2 = partial(fastrank.metrics.ndcg, k=2)
    call = fastrank.RankRLSCV(alphas=alphas, cv="lgo", scoring=ndcg2, kernel="rbf").fit(X, y, GROUPS)
    for k, a in enumerate(alphas):
        pred = ms.leave_group_out(fastrank.RankRLS(alpha=a, kernel="rbf"), X, y, GROUPS)
        assert call.cv_results_["scores"][k] == pytest.approx(ndcg2(y, pred, GROUPS), rel=1e-12)
    assert at2.cv_results_["scores"].shape == (3,) and np.all(at2.cv_results_["scores"] <= 1.0)
    split = fastrank.RankRLSCV(alphas=alphas, cv=GroupKFold(n_splits=3), kernel="rbf").fit(X, y, GROUPS)
    folds = [te for _, te in GroupKFold(n_splits=3).split(X, y, GROUPS)]
    est = fastrank.RankRLS(alpha=split.alpha_, kernel="rbf")
    _assert_close(split.cv_predictions_, ms.kfold_predictions(est, X, y, folds, groups=GROUPS))
    with pytest.raises(ValueError, match="needs hold-out sets"):
        fastrank.RankRLSCV(alphas=alphas, cv="lpo", scoring="ndcg@2").fit(X, y)
    with pytest.raises(ValueError, match="ndcg@k"):
        fastrank.RankRLSCV(alphas=alphas, scoring="ndcg@0").fit(X, y, GROUPS)


def test_leave_pair_out_returns_its_pairs():
    X, y = _data(m=GROUPS.size, seed=52)
    est = fastrank.RankRLS(alpha=1.0, kernel="rbf")
    pairs, P = ms.leave_pair_out(est, X, y, groups=GROUPS, return_pairs=True)
    assert np.all(GROUPS[pairs[:, 0]] == GROUPS[pairs[:, 1]]) and np.all(pairs[:, 0] < pairs[:, 1])
    _assert_close(P, ms.leave_pair_out(est, X, y, pairs=pairs, groups=GROUPS), rtol=1e-14)


def test_rankrlscv_accepts_every_measure_name_and_scorer():
    X, y = _data(m=GROUPS.size, seed=53)
    y = np.abs(np.round(y * 2))
    alphas = [0.01, 1.0, 100.0]
    by_name = fastrank.RankRLSCV(alphas=alphas, cv="lgo", scoring="map", kernel="rbf").fit(X, y, GROUPS)
    scorer = fastrank.metrics.make_ranking_scorer("precision_at_k", k=2)
    by_scorer = fastrank.RankRLSCV(alphas=alphas, cv="lgo", scoring=scorer, kernel="rbf").fit(X, y, GROUPS)
    loss = fastrank.RankRLSCV(alphas=alphas, cv="lgo", scoring="m1d", kernel="rbf").fit(X, y, GROUPS)
    for k, a in enumerate(alphas):
        pred = ms.leave_group_out(fastrank.RankRLS(alpha=a, kernel="rbf"), X, y, GROUPS)
        assert by_name.cv_results_["scores"][k] == pytest.approx(
            fastrank.metrics.mean_average_precision(y, pred, GROUPS), rel=1e-12)
        assert by_scorer.cv_results_["scores"][k] == pytest.approx(
            fastrank.metrics.precision_at_k(y, pred, GROUPS, k=2), rel=1e-12)
        assert loss.cv_results_["scores"][k] == pytest.approx(fastrank.metrics.m1d(y, pred, GROUPS), rel=1e-12)
    # a loss of the table is reported as it is and minimised
    assert loss.alpha_ == alphas[int(np.argmin(loss.cv_results_["scores"]))]


@pytest.mark.parametrize("kernel,d", [("linear", 3), ("rbf", 3), ("linear", 40)])
def test_sparse_X_in_every_shortcut_equals_dense(kernel, d):
    import scipy.sparse as sp

    rng = np.random.default_rng(54)
    X = rng.normal(size=(GROUPS.size, d)) * (rng.random((GROUPS.size, d)) < 0.4)
    y = rng.normal(size=GROUPS.size)
    Xs = sp.csr_matrix(X)
    est = fastrank.RankRLS(alpha=0.5, kernel=kernel, gamma=0.3)
    _assert_close(ms.leave_pair_out(est, Xs, y), ms.leave_pair_out(est, X, y), rtol=1e-10)
    _assert_close(ms.leave_group_out(est, Xs, y, GROUPS), ms.leave_group_out(est, X, y, GROUPS), rtol=1e-10)
    _assert_close(ms.kfold_predictions(est, Xs, y, 3, groups=GROUPS), ms.kfold_predictions(est, X, y, 3, groups=GROUPS),
                  rtol=1e-10)
    cv_s = fastrank.RankRLSCV(alphas=[0.1, 1.0], kernel=kernel, gamma=0.3).fit(Xs, y, GROUPS)
    cv_d = fastrank.RankRLSCV(alphas=[0.1, 1.0], kernel=kernel, gamma=0.3).fit(X, y, GROUPS)
    np.testing.assert_allclose(cv_s.cv_results_["scores"], cv_d.cv_results_["scores"], rtol=1e-10)


# ---------------------------------------------------------------------------------------------
# a reusable factorization: no kernel or decomposition recomputed across questions and alphas
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("kernel,d", [("rbf", 3), ("linear", 3)])
def test_factorization_answers_everything_from_one_decomposition(kernel, d, monkeypatch):
    from fastrank import _core, _kernels

    X, y = _data(m=GROUPS.size, d=d, seed=55)
    est = fastrank.RankRLS(alpha=1.0, kernel=kernel, gamma=0.4)
    calls = {"kernel": 0, "spectral": 0, "eigh": 0}
    real_train, real_spectral, real_eigh = _kernels.KernelSpec.train, _core.cv_spectral, np.linalg.eigh

    def count(name, fn):
        def probe(*a, **k):
            calls[name] += 1
            return fn(*a, **k)
        return probe

    monkeypatch.setattr(_kernels.KernelSpec, "train", count("kernel", real_train))
    monkeypatch.setattr(_core, "cv_spectral", count("spectral", real_spectral))
    monkeypatch.setattr(np.linalg, "eigh", count("eigh", real_eigh))
    fac = ms.factorize(est, X, y, GROUPS)
    before = dict(calls)
    alphas = np.logspace(-2, 2, 31)
    for a in alphas:
        model = fac.solve(a)
        fac.leave_group_out(alpha=a)
    for k in range(100):
        fac.holdout_predictions([np.array([k % GROUPS.size, (k + 3) % GROUPS.size])], alpha=1.0)
    fac.leave_pair_out(alpha=0.3)
    assert calls == before  # 31 re-solves, 31 LGO, 100 hold-out sets, one LPO: nothing recomputed
    monkeypatch.undo()
    for a in (alphas[0], alphas[15], alphas[-1]):
        _assert_close(fac.solve(a).predict(X), fastrank.RankRLS(alpha=a, kernel=kernel, gamma=0.4).fit(
            X, y, GROUPS).predict(X))
        ref = fastrank.RankRLS(alpha=a, kernel=kernel, gamma=0.4)
        _assert_close(fac.leave_group_out(alpha=a), ms.leave_group_out(ref, X, y, GROUPS))
    _assert_close(fac.leave_pair_out(alpha=0.3), ms.leave_pair_out(fastrank.RankRLS(alpha=0.3, kernel=kernel,
                                                                                     gamma=0.4), X, y, groups=GROUPS))
