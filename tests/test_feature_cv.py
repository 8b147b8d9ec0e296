"""Oracle tests of the feature-space hold-outs (fastrank/feature_cv.hpp through fastrank._holdout)
and of leave-group-out over an alpha grid (cv_leave_group_out_path): every prediction against
explicit retraining without the held-out pair / query (tests/cv_oracles.py builds the retained
pairs one by one and solves the normal equations with numpy) at 1e-8 relative."""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fastrank  # noqa: E402
from fastrank import _core, _holdout, model_selection  # noqa: E402
from fastrank._cv import holdout_score  # noqa: E402
from fastrank._problem import pair_weights as group_pair_weights  # noqa: E402
from cv_oracles import laplacian, pair_weights, rbf, retrain_predict, retrain_predict_primal  # noqa: E402

WEIGHTINGS = ["unweighted", "normalized", "per_query", "per_object"]


def _close(a, b, rtol=1e-8):
    a, b = np.asarray(a), np.asarray(b)
    scale = max(1.0, float(np.max(np.abs(b))))
    np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * scale)


def _grouped(sizes, d, v, seed, shuffle=True):
    rng = np.random.default_rng(seed)
    groups = np.repeat(np.arange(len(sizes)) * 3 + 7, sizes)  # labels need not be 0..q-1
    if shuffle:
        groups = rng.permutation(groups)
    m = groups.size
    X = rng.normal(size=(m, d)) + rng.normal(size=d)  # off-centre features: the means matter
    Y = X @ rng.normal(size=(d, v)) + rng.normal(size=(m, v))
    _, codes, counts = np.unique(groups, return_inverse=True, return_counts=True)
    return groups, codes, counts, X, Y


def _weights(counts, weighting):
    return group_pair_weights(counts, weighting)


# ---------------------------------------------------------------------------------------------
# leave-group-out in feature space
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("weighting", WEIGHTINGS)
@pytest.mark.parametrize("alpha", [1e-3, 1.0, 1e2])
@pytest.mark.parametrize("v", [1, 3])
def test_feature_leave_group_out_equals_retraining(weighting, alpha, v):
    # groups of 1 and 2 rows, groups smaller than p (Woodbury) and larger (direct p x p)
    groups, codes, counts, X, Y = _grouped((4, 2, 9, 1, 5, 3), d=5, v=v, seed=1)
    out = _holdout.feature_leave_group_out(X, Y, codes, counts.size, alpha,
                                           pair_weight=_weights(counts, weighting), n_threads=2)
    ref = np.empty_like(Y)
    for g in np.unique(groups):
        rows = np.flatnonzero(groups == g)
        if rows.size == 1:  # no pair removed: the full-data model
            ref[rows] = _full_predict(X, Y, alpha, groups, weighting)[rows]
        else:
            ref[rows] = retrain_predict_primal(X, Y, alpha, rows, groups, weighting)
    _close(out, ref)


def _full_predict(X, Y, alpha, groups, weighting):
    L = laplacian(np.arange(X.shape[0]), np.asarray(groups), pair_weights(groups, weighting))
    W = np.linalg.solve(X.T @ L @ X + alpha * np.eye(X.shape[1]), X.T @ L @ Y)
    return X @ W


def test_feature_leave_group_out_large_group_and_threads():
    # a group of >= 256 rows runs on the calling thread with BLAS; thread counts agree bitwise
    groups, codes, counts, X, Y = _grouped((260, 6, 2, 30), d=4, v=2, seed=2)
    outs = [_holdout.feature_leave_group_out(X, Y, codes, counts.size, 0.5, n_threads=t) for t in (1, 2, 3)]
    np.testing.assert_array_equal(outs[0], outs[1])
    np.testing.assert_array_equal(outs[0], outs[2])
    for g in np.unique(groups):
        rows = np.flatnonzero(groups == g)
        _close(outs[0][rows], retrain_predict_primal(X, Y, 0.5, rows, groups))


@pytest.mark.parametrize("offset", [0.0, 1e5])
@pytest.mark.parametrize("v", [1, 2])
def test_feature_leave_group_out_one_pair_weight_equals_retraining(offset, v):
    # one c_q n_q for every group with pairs: A from X^T X less the group-mean term, unless feature
    # means far beyond the spread inside the groups (offset) make that cancel: then the centred rows
    groups, codes, counts, X, Y = _grouped((4,) * 9 + (1,), d=6, v=v, seed=4)
    X = X + offset * np.arange(1.0, 7.0)
    out = _holdout.feature_leave_group_out(X, Y, codes, counts.size, 0.1, n_threads=1)
    Xc = X - np.stack([X[groups == g].mean(0) for g in groups])  # X^T L X = Xc^T L Xc, exactly
    for g in np.unique(groups):
        rows = np.flatnonzero(groups == g)
        keep = np.flatnonzero(groups != g)
        if rows.size == 1:
            keep = np.arange(X.shape[0])
        L = laplacian(keep, groups, None)
        W = np.linalg.solve(Xc[keep].T @ L @ Xc[keep] + 0.1 * np.eye(6), Xc[keep].T @ L @ Y[keep])
        _close(out[rows], X[rows] @ W)


def test_feature_leave_group_out_matches_real_retraining_through_public_api():
    # the estimator's own fit on the training part, not an oracle formula
    groups, codes, counts, X, Y = _grouped((6, 7, 5, 8), d=3, v=1, seed=3)
    y = Y[:, 0]
    out = model_selection.leave_group_out(fastrank.RankRLS(alpha=0.3), X, y, groups)
    for g in np.unique(groups):
        rows = np.flatnonzero(groups == g)
        keep = groups != g
        model = fastrank.RankRLS(alpha=0.3).fit(X[keep], y[keep], groups[keep])
        _close(out[rows], model.predict(X[rows]))


# ---------------------------------------------------------------------------------------------
# leave-pair-out in feature space
# ---------------------------------------------------------------------------------------------


def _all_pairs_within(codes):
    pairs = []
    for q in np.unique(codes):
        rows = np.flatnonzero(codes == q)
        a, b = np.triu_indices(rows.size, 1)
        pairs.append(np.stack([rows[a], rows[b]], 1))
    return np.concatenate(pairs).astype(np.int64)


@pytest.mark.parametrize("weighting", WEIGHTINGS)
@pytest.mark.parametrize("alpha", [1e-3, 1.0, 1e2])
def test_feature_leave_pair_out_grouped_equals_retraining(weighting, alpha):
    groups, codes, counts, X, Y = _grouped((5, 2, 6, 1, 4), d=3, v=2, seed=4)
    pairs = _all_pairs_within(codes)  # dense groups: the n x n hat blocks
    out = _holdout.feature_leave_pair_out(X, Y, codes, counts.size, alpha, pairs,
                                          pair_weight=_weights(counts, weighting), n_threads=2)
    ref = np.stack([retrain_predict_primal(X, Y, alpha, p, groups, weighting) for p in pairs])
    _close(out, ref)
    # few pairs: one dot product per pair instead of the hat block; same numbers
    few = pairs[::7]
    out_few = _holdout.feature_leave_pair_out(X, Y, codes, counts.size, alpha, few,
                                              pair_weight=_weights(counts, weighting), n_threads=1)
    _close(out_few, ref[::7], 1e-12)


@pytest.mark.parametrize("alpha", [1e-4, 1.0, 1e3])
@pytest.mark.parametrize("v", [1, 2])
def test_feature_leave_pair_out_object_ranking_equals_retraining(alpha, v):
    rng = np.random.default_rng(5)
    X = rng.normal(size=(14, 4)) + 2.0
    Y = rng.normal(size=(14, v))
    pairs = np.stack(np.triu_indices(14, 1), 1).astype(np.int64)
    out = _holdout.feature_leave_pair_out(X, Y, np.zeros(14, np.int64), 1, alpha, pairs, n_threads=2)
    for k in range(0, pairs.shape[0], 5):
        _close(out[k], retrain_predict_primal(X, Y, alpha, pairs[k]))
    # the dual (kernel) oracle of the same linear model agrees too
    for k in (0, 17, 90):
        _close(out[k], retrain_predict(X @ X.T, Y, alpha, pairs[k]), 1e-7)


def test_feature_leave_pair_out_blas_group_dense_and_sparse():
    # one group of 300 rows (BLAS branch): all pairs (hat block) and a few pairs (dot products)
    rng = np.random.default_rng(6)
    X = rng.normal(size=(300, 5)) + 1.0
    Y = X @ rng.normal(size=(5, 1)) + rng.normal(size=(300, 1))
    codes = np.zeros(300, np.int64)
    pairs = np.stack(np.triu_indices(300, 1), 1).astype(np.int64)
    dense = _holdout.feature_leave_pair_out(X, Y, codes, 1, 0.7, pairs, n_threads=2)
    pick = np.array([0, 1234, 40000, pairs.shape[0] - 1])
    sparse = _holdout.feature_leave_pair_out(X, Y, codes, 1, 0.7, pairs[pick], n_threads=1)
    _close(sparse, dense[pick], 1e-11)
    for k in pick:
        _close(dense[k], retrain_predict_primal(X, Y, 0.7, pairs[k]))


def test_feature_leave_pair_out_public_api_matches_real_retraining():
    rng = np.random.default_rng(7)
    X = rng.normal(size=(20, 3))
    y = X @ rng.normal(size=3) + rng.normal(size=20)
    pairs, out = model_selection.leave_pair_out(fastrank.RankRLS(alpha=0.2), X, y, return_pairs=True)
    for k in (0, 50, 189):
        keep = np.setdiff1d(np.arange(20), pairs[k])
        model = fastrank.RankRLS(alpha=0.2).fit(X[keep], y[keep])
        _close(out[k], model.predict(X[pairs[k]]))


def test_feature_cv_rejects_bad_input():
    X = np.ones((4, 2))
    Y = np.ones((4, 1))
    codes = np.array([0, 0, 1, 1])
    with pytest.raises(ValueError, match="alpha"):
        _holdout.feature_leave_group_out(X, Y, codes, 2, -1.0)
    with pytest.raises(ValueError, match="one group"):
        _holdout.feature_leave_pair_out(X, Y, codes, 2, 1.0, np.array([[0, 2]]))


# ---------------------------------------------------------------------------------------------
# Gaussian leave-group-out over an alpha grid (one eigendecomposition)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("weighting", WEIGHTINGS)
def test_leave_group_out_path_equals_cholesky_and_retraining(weighting):
    groups, codes, counts, X, Y = _grouped((6, 2, 9, 1, 5, 4), d=3, v=2, seed=8, shuffle=False)
    K = rbf(X, X, 0.4)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    groups_args = (np.arange(K.shape[0]), offsets, _weights(counts, weighting))  # rows already grouped
    alphas = np.array([1e-3, 0.05, 1.0, 30.0])
    path = _core.cv_leave_group_out_path(np.asfortranarray(K), *groups_args, alphas, np.asfortranarray(Y), 2)
    for k, a in enumerate(alphas):
        one = _core.cv_leave_group_out_inverse(np.asfortranarray(K), *groups_args, a, np.asfortranarray(Y), 1)
        _close(path[:, 2 * k:2 * k + 2], one)
        for g in np.unique(groups):
            rows = np.flatnonzero(groups == g)
            if rows.size > 1:
                _close(path[rows, 2 * k:2 * k + 2], retrain_predict(K, Y, a, rows, groups, weighting), 1e-7)


def test_rankrlscv_gaussian_grid_scores_equal_per_alpha_leave_group_out():
    groups, codes, counts, X, Y = _grouped((8, 6, 7, 9, 5), d=3, v=1, seed=9)
    y = Y[:, 0]
    alphas = np.logspace(-2, 2, 31)
    cv = fastrank.RankRLSCV(alphas=alphas, kernel="rbf", gamma=0.3).fit(X, y, groups)
    for k in (0, 15, 30):
        pred = model_selection.leave_group_out(fastrank.RankRLS(alpha=alphas[k], kernel="rbf", gamma=0.3), X, y,
                                               groups)
        sets = [np.flatnonzero(codes == q) for q in range(counts.size)]
        score = holdout_score(pred[:, None], y[:, None], sets, codes, "auc")
        assert abs(cv.cv_results_["scores"][k] - score) < 1e-12
    best = int(np.argmax(cv.cv_results_["scores"]))
    pred = model_selection.leave_group_out(fastrank.RankRLS(alpha=alphas[best], kernel="rbf", gamma=0.3), X, y,
                                           groups)
    _close(cv.cv_predictions_, pred)


# ---------------------------------------------------------------------------------------------
# thread policy
# ---------------------------------------------------------------------------------------------


def test_compute_region_threads_one_blas_only():
    from fastrank import _threads

    ctl = _threads.blas_controller()
    if ctl is None or _threads.cpu_budget() < 2:
        pytest.skip("needs threadpoolctl and two cores")
    libs = ctl.select(user_api="blas").lib_controllers
    if not any(_threads._is_scipy_blas(lib) for lib in libs):
        pytest.skip("SciPy's BLAS not visible to threadpoolctl")
    before = [lib.num_threads for lib in libs]
    with _threads.compute_region(2):
        for lib in libs:  # SciPy's BLAS (the C++ core's) threaded, any other copy single-threaded
            assert lib.num_threads == (2 if _threads._is_scipy_blas(lib) else 1)
    assert [lib.num_threads for lib in libs] == before
    with _threads.compute_region(2, blas_threads=1):  # fastrank's two threads, every BLAS on one
        assert all(lib.num_threads == 1 for lib in libs)
        assert _threads._BUDGET.free == _threads._BUDGET.total - 2
    assert [lib.num_threads for lib in libs] == before


def test_threads_for_work_grows_with_the_work():
    from fastrank._threads import cpu_budget, threads_for_work

    assert threads_for_work(0) == 1
    assert threads_for_work(1e6) == 1
    assert threads_for_work(1e12) == cpu_budget()
    assert all(threads_for_work(a) <= threads_for_work(b) for a, b in [(1e8, 4e8), (4e8, 1e10)])
