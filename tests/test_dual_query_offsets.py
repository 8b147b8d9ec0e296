"""The linear kernel in the dual under a large feature offset per query: S 1_q = 0, so every group's column
means may leave X before K = X X^T is formed (and W = X^T A is unchanged); otherwise X X^T cancels the offset's
digits and S K S + alpha I is not numerically positive definite."""

import math

import numpy as np
import pytest

from fastrank import RankRLS


def _group_centred(X, groups):
    out = np.empty_like(X)
    for q in np.unique(groups):
        rows = groups == q
        out[rows] = X[rows] - [math.fsum(col) / rows.sum() for col in X[rows].T]
    return out


def _explicit_pairs_coef(X, y, groups, alpha, exclude_ties):
    """W = (X^T L X + alpha I)^-1 X^T L y with L built pair by pair inside each group (cost (21))."""
    m = X.shape[0]
    L = np.zeros((m, m))
    for i in range(m):
        for j in range(m):
            if i != j and groups[i] == groups[j] and not (exclude_ties and y[i] == y[j]):
                L[i, i] += 1.0
                L[i, j] -= 1.0
    return np.linalg.solve(X.T @ L @ X + alpha * np.eye(X.shape[1]), X.T @ L @ y)


@pytest.mark.parametrize("exclude_ties", [False, True])
def test_linear_dual_under_a_feature_offset_per_query_is_the_model_of_the_centred_rows(exclude_ties):
    rng = np.random.default_rng(0)
    groups = np.repeat(np.arange(6), 10)
    X = rng.standard_normal((60, 80)) + 1e9 * rng.standard_normal((6, 80))[groups]  # n > m: the dual's shape
    y = rng.standard_normal(60)
    y = np.round(y) if exclude_ties else y
    est = RankRLS(kernel="linear", solver="dual", alpha=1.0, exclude_ties=exclude_ties).fit(X, y, groups)
    W = _explicit_pairs_coef(_group_centred(X, groups), y, groups, 1.0, exclude_ties)
    np.testing.assert_allclose(est.coef_, W, rtol=1e-9, atol=1e-9 * np.abs(W).max())
