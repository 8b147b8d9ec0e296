"""Leave-group-out over an alpha grid (cv_leave_group_out_path: one eigendecomposition of S K S
restricted to the per-group centred vectors, every alpha's group blocks from one GEMM) against
explicit retraining without the held-out group (tests/cv_oracles.py) at 1e-8 relative, and the
full-data dual coefficients it returns against the normal equations (004 eq. 31)."""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fastrank  # noqa: E402
from fastrank import _core  # noqa: E402
from fastrank._problem import pair_weights as group_pair_weights  # noqa: E402
from cv_oracles import laplacian, pair_weights, rbf, retrain_predict  # noqa: E402


def _close(a, b, rtol=1e-8):
    a, b = np.asarray(a), np.asarray(b)
    scale = max(1.0, float(np.max(np.abs(b))))
    np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * scale)


def _case(sizes, d, v, seed, weighting, gamma):
    """Rows in group order: K, Y, order, offsets, per-group pair weights, group labels."""
    rng = np.random.default_rng(seed)
    counts = np.asarray(sizes)
    groups = np.repeat(np.arange(counts.size), counts)
    X = rng.normal(size=(groups.size, d)) + rng.normal(size=d)
    Y = X @ rng.normal(size=(d, v)) + rng.normal(size=(groups.size, v))
    K = rbf(X, X, gamma)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    order = np.arange(groups.size, dtype=np.int64)
    return np.asfortranarray(K), np.asfortranarray(Y), order, offsets, group_pair_weights(counts, weighting), groups


def _check_path(sizes, alphas, weighting, d=4, v=2, seed=0, gamma=0.3, rtol=1e-8):
    K, Y, order, offsets, weight, groups = _case(sizes, d, v, seed, weighting, gamma)
    m, na = K.shape[0], alphas.size
    out = _core.cv_leave_group_out_path(K, order, offsets, weight, alphas, Y, 2)
    assert out.shape == (m, 2 * na * v)
    cw = pair_weights(groups, weighting)
    L = laplacian(np.arange(m), groups, cw)
    for k, a in enumerate(alphas):
        pred = out[:, k * v:(k + 1) * v]
        for g in np.unique(groups):
            rows = np.flatnonzero(groups == g)
            if rows.size > 1:  # a one-row group keeps the full-data prediction (checked below)
                _close(pred[rows], retrain_predict(K, Y, a, rows, groups, weighting), rtol)
        # dual coefficients of the model on all data: (L K + alpha I) A = L Y (004 eq. 17)
        coef = out[:, (na + k) * v:(na + k + 1) * v]
        _close(K @ coef, K @ np.linalg.solve(L @ K + a * np.eye(m), L @ Y), rtol)
        single = np.flatnonzero(np.bincount(groups)[groups] == 1)
        if single.size:
            _close(pred[single], (K @ coef)[single], rtol)


@pytest.mark.parametrize("weighting", ["unweighted", "normalized", "per_query", "per_object"])
def test_path_groups_of_one_and_two_equal_retraining(weighting):
    _check_path((2, 5, 1, 2, 7, 1, 3, 2), np.array([1e-3, 0.02, 0.7, 9.0, 400.0]), weighting, seed=1)


def test_path_alphas_near_zero_equal_retraining():
    # d = 8, gamma = 0.05: the smallest eigenvalue of S K S stays far above rounding, so alpha = 1e-6 is exact to 1e-8
    _check_path((6, 4, 9, 5, 3), np.array([1e-6, 1e-5, 1e-4, 1e-3, 1e-2]), "unweighted", d=8, v=1, seed=2,
                gamma=0.05)


def test_path_groups_spanning_several_panels_equal_retraining():
    # a group of 40 has 39 * 40 / 2 + 39 product rows: more than one GEMM panel
    _check_path((40, 3, 12, 2), np.array([0.01, 0.1, 1.0, 10.0, 100.0]), "per_query", v=1, seed=3)


def test_path_group_too_large_for_a_segment_equal_retraining():
    # 5 alphas, m = 106: a group of 100 has more product rows than one segment holds (one product
    # per alpha instead)
    _check_path((100, 4, 2), np.array([0.03, 0.3, 3.0, 30.0, 300.0]), "unweighted", v=1, seed=4)


def test_rankrlscv_refit_from_the_path_equals_a_fresh_fit():
    rng = np.random.default_rng(5)
    groups = rng.permutation(np.repeat(np.arange(9), [5, 7, 2, 6, 1, 8, 4, 5, 6]))
    X = rng.normal(size=(groups.size, 3))
    y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=groups.size)
    alphas = np.logspace(-3, 2, 11)
    cv = fastrank.RankRLSCV(alphas=alphas, kernel="rbf", gamma=0.4).fit(X, y, groups)
    fresh = fastrank.RankRLS(alpha=cv.alpha_, kernel="rbf", gamma=0.4).fit(X, y, groups)
    Z = rng.normal(size=(20, 3))
    _close(cv.best_estimator_.predict(Z), fresh.predict(Z))
    _close(cv.predict(X), fresh.predict(X))
