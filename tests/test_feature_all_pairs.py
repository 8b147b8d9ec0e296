"""Leave-pair-out of all pairs without a pair list (cv_feature_leave_all_pairs_out, the default of
model_selection.leave_pair_out for feature-space models): the same numbers as the explicit pair
list (lexicographic i < j inside groups) and as retraining without each pair (tests/cv_oracles.py,
normal equations of the retained pairs solved with numpy) at 1e-8 relative."""

import sys
from pathlib import Path

import numpy as np
import pytest

import fastrank
from fastrank import _core, _holdout, model_selection
from fastrank._problem import pair_weights as group_pair_weights

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cv_oracles import retrain_predict_primal  # noqa: E402


def _close(a, b, rtol=1e-8):
    """Relative to the largest reference value (at least 1)."""
    np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * max(1.0, float(np.abs(b).max())))


def _lexicographic_pairs(codes):
    """Every i < j with codes[i] == codes[j], sorted by (i, j) (triu_indices lists them so)."""
    i, j = np.triu_indices(codes.size, 1)
    same = codes[i] == codes[j]
    return np.stack([i[same], j[same]], 1).astype(np.int64)


def _problem(sizes, d, v, seed):
    rng = np.random.default_rng(seed)
    groups = rng.permutation(np.repeat(np.arange(len(sizes)) * 5 + 2, sizes))  # interleaved rows
    m = groups.size
    X = rng.normal(size=(m, d)) + rng.normal(size=d)
    Y = X @ rng.normal(size=(d, v)) + rng.normal(size=(m, v))
    _, codes, counts = np.unique(groups, return_inverse=True, return_counts=True)
    return groups, codes, counts, X, Y


@pytest.mark.parametrize("weighting", ["unweighted", "normalized", "per_query", "per_object"])
@pytest.mark.parametrize("v", [1, 2])
def test_all_pairs_equal_the_explicit_list_and_retraining(weighting, v):
    # groups of 1, 2 and more rows, interleaved in the caller's order
    groups, codes, counts, X, Y = _problem((5, 1, 2, 7, 4), d=3, v=v, seed=1)
    w = group_pair_weights(counts, weighting)
    out = _holdout.feature_leave_all_pairs_out(X, Y, codes, counts.size, 0.3, pair_weight=w, n_threads=2)
    pairs = _lexicographic_pairs(codes)
    listed = _holdout.feature_leave_pair_out(X, Y, codes, counts.size, 0.3, pairs, pair_weight=w, n_threads=1)
    assert out.shape == listed.shape == (pairs.shape[0], 2, v)
    _close(out, listed, 1e-12)
    for k in range(pairs.shape[0]):
        _close(out[k], retrain_predict_primal(X, Y, 0.3, pairs[k], groups, weighting))


@pytest.mark.parametrize("alpha", [1e-3, 1e2])
def test_all_pairs_of_large_groups_in_column_blocks(alpha):
    # a group of 1100 rows (BLAS hat block in two column blocks), one of 260, two small ones
    groups, codes, counts, X, Y = _problem((1100, 3, 260, 9), d=4, v=1, seed=2)
    w = group_pair_weights(counts, "unweighted")
    out = _holdout.feature_leave_all_pairs_out(X, Y, codes, counts.size, alpha, pair_weight=w, n_threads=2)
    one = _holdout.feature_leave_all_pairs_out(X, Y, codes, counts.size, alpha, pair_weight=w, n_threads=1)
    np.testing.assert_array_equal(out, one)
    pairs = _lexicographic_pairs(codes)
    pick = np.linspace(0, pairs.shape[0] - 1, 40).astype(np.int64)
    listed = _holdout.feature_leave_pair_out(X, Y, codes, counts.size, alpha, pairs[pick], pair_weight=w)
    _close(out[pick], listed, 1e-11)
    for k in pick[[0, 39]]:  # the oracle builds the 1372 x 1372 Laplacian: the first and last pair
        _close(out[k], retrain_predict_primal(X, Y, alpha, pairs[k], groups))


def test_object_ranking_all_pairs_two_outputs():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(530, 3)) + 1.5
    Y = rng.normal(size=(530, 2))
    codes = np.zeros(530, np.int64)
    out = _holdout.feature_leave_all_pairs_out(X, Y, codes, 1, 0.5, n_threads=2)
    i, j = np.triu_indices(530, 1)
    assert out.shape == (i.size, 2, 2)
    for k in (0, 529, 100000, i.size - 1):
        _close(out[k], retrain_predict_primal(X, Y, 0.5, [i[k], j[k]]))


@pytest.mark.parametrize("grouped", [False, True])
@pytest.mark.parametrize("params", [dict(alpha=0.4), dict(alpha=0.4, group_weighting="normalized"),
                                    dict(alpha=0.4, kernel="rbf", gamma=0.3, basis_vectors=6, random_state=0),
                                    dict(alpha=0.4, exclude_ties=True)])
def test_public_default_pairs_equal_the_listed_default_pairs(grouped, params):
    # tied targets: the default pairs are all i < j whatever the targets
    rng = np.random.default_rng(4)
    X = rng.normal(size=(40, 3))
    y = rng.integers(0, 3, 40).astype(float)
    groups = rng.integers(0, 3, 40) if grouped else None
    est = fastrank.RankRLS(**params)
    out = model_selection.leave_pair_out(est, X, y, groups=groups)
    pairs, listed = model_selection.leave_pair_out(est, X, y, groups=groups, return_pairs=True)
    np.testing.assert_array_equal(pairs, _lexicographic_pairs(np.zeros(40, np.int64) if groups is None else groups))
    _close(out, listed, 1e-10)
    if "basis_vectors" in params:  # a fit on m - 2 rows would draw other basis rows
        return
    for k in (0, pairs.shape[0] // 2, pairs.shape[0] - 1):
        if "group_weighting" in params:  # pair weights 1 / n_q of the full groups
            ref = retrain_predict_primal(X, y[:, None], 0.4, pairs[k], groups, params["group_weighting"])[:, 0]
        else:  # real retraining through fit
            keep = np.setdiff1d(np.arange(40), pairs[k])
            model = fastrank.RankRLS(**params).fit(X[keep], y[keep], groups=None if groups is None else groups[keep])
            ref = model.predict(X[pairs[k]])
        _close(out[k], ref)


def test_all_pairs_keep_the_checks():
    est = fastrank.RankRLS(alpha=1.0)
    X = np.arange(6.0).reshape(3, 2)
    with pytest.raises(ValueError, match="leaves no training pairs"):
        model_selection.leave_pair_out(est, X, np.array([0.0, 1.0, 2.0]))
    with pytest.raises(ValueError, match="increasing"):
        _core.cv_feature_leave_all_pairs_out(X, np.ones((3, 1)), np.array([1, 0, 2]), np.array([0, 3]),
                                             np.ones(1), 1.0, 1)


def _retrain_with_pair_weights(X, Y, alpha, held, codes, c):
    """Primal RankRLS without the rows ``held``: L = sum_q c_q (n_q I - 1 1^T) over the kept rows
    of each group (pair weight c_q of the full group), w = (X^T L X + alpha I)^-1 X^T L Y."""
    keep = np.setdiff1d(np.arange(X.shape[0]), held)
    L = np.zeros((keep.size, keep.size))
    for q in np.unique(codes[keep]):
        r = np.flatnonzero(codes[keep] == q)
        L[np.ix_(r, r)] += c[q] * (r.size * np.eye(r.size) - 1.0)
    XT = X[keep]
    w = np.linalg.solve(XT.T @ L @ XT + alpha * np.eye(X.shape[1]), XT.T @ L @ Y[keep])
    return X[held] @ w


@pytest.mark.parametrize("v", [1, 2])
def test_leave_group_out_with_a_zero_weight_group(v):
    # a group of weight 0 (no pairs: keeps the full-data prediction), groups below and above p
    groups, codes, counts, X, Y = _problem((4, 3, 9, 2, 5), d=5, v=v, seed=5)
    c = np.array([1.0, 0.0, 0.5, 2.0, 1.5])
    out = _holdout.feature_leave_group_out(X, Y, codes, 5, 0.2, pair_weight=c, n_threads=2)
    for q in range(5):
        rows = np.flatnonzero(codes == q)
        _close(out[rows], _retrain_with_pair_weights(X, Y, 0.2, rows, codes, c))
    pairs = _lexicographic_pairs(codes)
    allp = _holdout.feature_leave_all_pairs_out(X, Y, codes, 5, 0.2, pair_weight=c, n_threads=2)
    for k in range(0, pairs.shape[0], 3):
        _close(allp[k], _retrain_with_pair_weights(X, Y, 0.2, pairs[k], codes, c))
