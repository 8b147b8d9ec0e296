"""Identical rows found in sparse input whatever zeros it stores explicitly (against an entry-by-entry dense oracle),
the grouped primal RankRLS under large feature and target offsets (against the explicit pairs), and SVRank refusing an
indefinite precomputed kernel whose diagonal is non-negative."""

import numpy as np
import scipy.sparse as sp

from fastrank._kernels import twin_rows


def _first_identical_rows(D):
    """Oracle: for every row of the dense D, the first row equal to it (entry by entry, -0.0 == 0.0)."""
    return np.array([next(k for k in range(D.shape[0]) if np.array_equal(D[k], D[i])) for i in range(D.shape[0])])


def _with_explicit_zeros(D, rows):
    """CSR of D storing an explicit 0.0 (and a -0.0) in the given rows' first empty columns."""
    data, indices, indptr = [], [], [0]
    for i in range(D.shape[0]):
        cols = np.flatnonzero(D[i])
        vals = list(D[i, cols])
        if i in rows:
            empty = np.flatnonzero(D[i] == 0)[:2]
            cols, vals = np.r_[cols, empty], vals + [0.0, -0.0][:empty.size]
            order = np.argsort(cols)
            cols, vals = cols[order], np.asarray(vals)[order]
        data += list(vals)
        indices += list(cols)
        indptr.append(len(indices))
    return sp.csr_matrix((np.array(data, float), np.array(indices), np.array(indptr)), shape=D.shape)


def test_twin_rows_sparse_explicit_zeros_are_zeros():
    rng = np.random.default_rng(0)
    D = rng.standard_normal((12, 7)) * (rng.random((12, 7)) < 0.4)
    D[:, 0] = 1.0  # at least one empty column left per row below
    D[5], D[9], D[11] = D[3], D[3], D[1]
    X = _with_explicit_zeros(D, {5, 11})
    assert X.nnz > np.count_nonzero(D)  # explicit zeros are stored
    assert np.array_equal(X.toarray(), D)
    expected = _first_identical_rows(D)
    assert np.array_equal(twin_rows(X), expected)
    assert np.array_equal(twin_rows(D), expected)  # the dense path agrees


def _explicit_pair_weights(X, y, groups, alpha):
    """Linear RankRLS from the explicit pairs inside each group (eq. 28): sum (x_i - x_j)(x_i - x_j)^T + alpha I
    against sum (x_i - x_j)(y_i - y_j), pairs i < j."""
    n = X.shape[1]
    M, R = alpha * np.eye(n), np.zeros(n)
    for q in np.unique(groups):
        idx = np.flatnonzero(groups == q)
        i, j = np.triu_indices(idx.size, 1)
        D = X[idx[i]] - X[idx[j]]
        M += D.T @ D
        R += D.T @ (y[idx[i]] - y[idx[j]])
    return np.linalg.solve(M, R)


def test_primal_grouped_targets_with_large_offsets():
    """Features near 1e9 and targets near 1e12 in several groups (the C++ grouped primal route): the group means'
    roundings of both offsets must not meet in X^T L y (where they cost 5e-10 relative per weight)."""
    import fastrank

    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 3)) + 1e9
    groups = np.repeat([0, 1, 2], 20)
    y = rng.integers(0, 3, 60) + 1e12
    w = _explicit_pair_weights(X, y, groups, 1.0)
    coef = fastrank.RankRLS(alpha=1.0, solver="primal").fit(X, y, groups=groups).coef_
    np.testing.assert_allclose(coef, w, rtol=1e-12, atol=0)


def test_svrank_refuses_an_indefinite_kernel_with_a_nonnegative_diagonal():
    """dpstrf stops at the pivots of [[0, 5], [5, 0]] (eigenvalue -5) without a negative diagonal entry left: the
    left-out block's off-diagonal entry shows it."""
    import pytest

    from fastrank import SVRank

    rng = np.random.default_rng(7)
    X = rng.normal(size=(60, 5))
    y = X @ rng.normal(size=5)
    K = X @ X.T
    K[58:, :] = K[:, 58:] = 0.0
    K[58, 59] = K[59, 58] = 5.0
    assert np.linalg.eigvalsh(K).min() < -4 and np.diag(K).min() >= 0
    for loss in ("epsilon_insensitive", "squared_epsilon_insensitive"):
        with pytest.raises(ValueError, match="not positive semidefinite"):
            SVRank(kernel="precomputed", loss=loss).fit(K, y)
    K[58, 59] = K[59, 58] = 0.0  # semidefinite again (two zero rows): accepted
    SVRank(kernel="precomputed").fit(K, y)
