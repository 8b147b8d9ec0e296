"""Sparse (subset-of-regressors) RankRLS, Pahikkala et al. 2009 Sect. 3.5, eqs. 40-42."""

import numpy as np
import pytest
import scipy.sparse as sp

from fastrank._kernels import resolve_kernel
from fastrank._kernels import kernel_block, predict_basis
from fastrank._solvers import basis_primal_weights, fit_basis, select_basis
from fastrank._validation import group_index

from _large_oracles import graph_edges, laplacian_graph, laplacian_groups


def _eq41(K, basis, L, Y, alpha):
    """Literal eq. 41 with M M^T = L and K_R M N = K_R L y (scoring) : A = (K_R L K_R^T + a K_RR)^-1 K_R L y."""
    KR = K[basis]
    return np.linalg.solve(KR @ L @ KR.T + alpha * K[np.ix_(basis, basis)], KR @ L @ Y)


def _kernel_np(kind, A, B, gamma=0.2, degree=2, coef0=1.0):
    G = A @ B.T
    if kind == "linear":
        return G
    if kind == "poly":
        return (gamma * G + coef0) ** degree
    d = (A**2).sum(1)[:, None] + (B**2).sum(1)[None, :] - 2 * G
    return np.exp(-gamma * np.maximum(d, 0))


def _rel(a, b):
    return np.abs(a - b).max() / max(np.abs(b).max(), 1e-300)


@pytest.mark.parametrize("kind", ["rbf", "linear", "poly"])
@pytest.mark.parametrize("setting", ["object", "query", "query-normalized"])
def test_eq41_and_path(kind, setting):
    rng = np.random.default_rng(0)
    m, d = 90, 6
    X = rng.normal(size=(m, d))
    Y = rng.normal(size=(m, 2))
    spec = resolve_kernel(kind, 0.2, 2, 1.0, d)
    K = _kernel_np(kind, X, X)
    groups = None if setting == "object" else rng.choice([3, 1, 9, 4], size=m)
    normalized = setting == "query-normalized"
    gi = group_index(groups, m)
    L = laplacian_groups(np.zeros(m) if groups is None else groups, normalized)
    basis = select_basis(m, 5 if kind == "linear" else 25, random_state=1)
    alphas = [1e-2, 0.5, 3.0, 100.0]
    coefs = fit_basis(X, Y, group_index=gi, normalized=normalized, alphas=alphas, kernel_spec=spec,
                      basis_indices=basis)
    assert coefs.shape == (4, basis.size, 2)
    for a, C in zip(alphas, coefs):
        A = _eq41(K, basis, L, Y, a)
        assert _rel(K[:, basis] @ C, K[:, basis] @ A) < 1e-8
        assert _rel(C, A) < 1e-6
    # a path value equals a single-alpha fit
    single = fit_basis(X, Y, group_index=gi, normalized=normalized, alphas=0.5, kernel_spec=spec, basis_indices=basis)
    assert _rel(single[0], coefs[1]) < 1e-10


def test_all_inputs_as_basis_equals_full_dual():
    rng = np.random.default_rng(1)
    m, d = 60, 4
    X = rng.normal(size=(m, d))
    y = rng.normal(size=m)
    groups = rng.integers(0, 5, size=m)
    spec = resolve_kernel("rbf", 0.5, 3, 1, d)
    K = _kernel_np("rbf", X, X, gamma=0.5)
    L = laplacian_groups(groups)
    a_dual = np.linalg.solve(L @ K + 0.3 * np.eye(m), L @ y)  # full dual RankRLS
    C = fit_basis(X, y, group_index=group_index(groups, m), alphas=[0.3], kernel_spec=spec,
                  basis_indices=np.arange(m))[0]
    assert _rel(K @ C[:, 0], K @ a_dual) < 1e-7


@pytest.mark.parametrize("cost", ["binary", "magnitude", "normalized"])
def test_preference_graph(cost):
    rng = np.random.default_rng(2)
    m, d = 50, 5
    X = rng.normal(size=(m, d))
    y = rng.normal(size=m)
    heads, tails, w, z = graph_edges(y, 150, rng, cost)
    spec = resolve_kernel("rbf", 0.3, 3, 1, d)
    K = _kernel_np("rbf", X, X, gamma=0.3)
    basis = select_basis(m, 20, random_state=0)
    C = fit_basis(X, graph=(heads, tails, w, z), alphas=[0.1, 2.0], kernel_spec=spec, basis_indices=basis)
    # eq. 41 with M the weighted incidence and N = w z
    M = np.zeros((m, heads.size))
    M[heads, np.arange(heads.size)] = w
    M[tails, np.arange(heads.size)] = -w
    N = (w * z)[:, None]
    KR = K[basis]
    for a, Ca in zip([0.1, 2.0], C):
        A = np.linalg.solve(KR @ M @ M.T @ KR.T + a * K[np.ix_(basis, basis)], KR @ M @ N)
        assert _rel(KR.T @ Ca, KR.T @ A) < 1e-8
    np.testing.assert_allclose(M @ M.T, laplacian_graph(m, heads, tails, w), atol=1e-12)


def test_rank_deficient_basis_kernel_uses_eigen_fallback():
    rng = np.random.default_rng(3)
    m, d = 70, 3
    X = rng.normal(size=(m, d))
    y = rng.normal(size=m)
    spec = resolve_kernel("linear", None, 3, 1, d)
    basis = select_basis(m, 12, random_state=0)  # 12 basis vectors in 3 dimensions: K_RR has rank 3
    K = X @ X.T
    L = laplacian_groups(np.zeros(m))
    C = fit_basis(X, y, alphas=[0.5], kernel_spec=spec, basis_indices=basis)[0]
    KR = K[basis]
    A = np.linalg.lstsq(KR @ L @ KR.T + 0.5 * K[np.ix_(basis, basis)], KR @ L @ y[:, None], rcond=None)[0]
    assert _rel(K[:, basis] @ C, K[:, basis] @ A) < 1e-7
    # linear kernel: equals primal RankRLS with w restricted to span(X_R) = R^3 (full)
    w = np.linalg.solve(X.T @ L @ X + 0.5 * np.eye(d), X.T @ L @ y)
    assert _rel(basis_primal_weights(X[basis], C)[:, 0], w) < 1e-7


@pytest.mark.parametrize("kind", ["rbf", "linear", "poly"])
def test_sparse_input_matches_dense_and_predicts_without_densifying(kind):
    rng = np.random.default_rng(4)
    m, n = 80, 40
    Xs = sp.random(m, n, density=0.15, random_state=4, format="csr")
    Xd = Xs.toarray()
    y = rng.normal(size=m)
    spec = resolve_kernel(kind, 0.5, 2, 1.0, n)
    basis = select_basis(m, 15, random_state=2)
    Cs = fit_basis(Xs, y, alphas=[0.7], kernel_spec=spec, basis_indices=basis)[0]
    Cd = fit_basis(Xd, y, alphas=[0.7], kernel_spec=spec, basis_indices=basis)[0]
    assert _rel(Cs, Cd) < 1e-8
    Zs = sp.random(33, n, density=0.2, random_state=5, format="csr")
    ps = predict_basis(Zs, Xs[basis], Cs, spec, block_bytes=8 * 15 * 7)  # several row blocks
    pd = Zs.toarray() @ np.zeros((n, 1)) + _kernel_np(kind, Zs.toarray(), Xd[basis], gamma=0.5) @ Cd
    assert _rel(ps, pd) < 1e-9
    np.testing.assert_allclose(kernel_block(spec, Zs, Xs[basis]), _kernel_np(kind, Zs.toarray(), Xd[basis], 0.5),
                               rtol=1e-10, atol=1e-12)


def test_select_basis():
    a = select_basis(100, 10, random_state=0)
    assert a.size == 10 and np.all(np.diff(a) > 0)
    assert np.array_equal(a, select_basis(100, 10, random_state=0))
    assert not np.array_equal(a, select_basis(100, 10, random_state=1))
    assert np.array_equal(select_basis(5, 5), np.arange(5))
    assert np.array_equal(select_basis(10, [3, -1]), [3, 9])
    for bad in (0, 11, [1, 1], [20], 2.5, True, []):
        with pytest.raises((ValueError, TypeError)):
            select_basis(10, bad)


def test_memory_guard_in_fit_basis(monkeypatch):
    rng = np.random.default_rng(5)
    X = rng.normal(size=(200, 3))
    spec = resolve_kernel("rbf", 1.0, 3, 1, 3)
    monkeypatch.setenv("FASTRANK_MAX_DENSE_BYTES", "1K")
    with pytest.raises(MemoryError, match="basis_vectors"):
        fit_basis(X, X[:, 0], alphas=[1.0], kernel_spec=spec, basis_indices=np.arange(50))


def test_sparse_input_with_duplicates_and_int64_indices():
    rng = np.random.default_rng(6)
    m, n = 50, 20
    X = sp.random(m, n, density=0.2, random_state=6, format="csr")
    y = rng.normal(size=m)
    coo = X.tocoo()
    # every entry stored twice (half + half), int64 indices, not canonical
    rows = np.r_[coo.row, coo.row]
    order = np.argsort(rows, kind="stable")
    Xdup = sp.csr_matrix((np.r_[0.5 * coo.data, 0.5 * coo.data][order], np.r_[coo.col, coo.col][order],
                          np.r_[0, np.cumsum(np.bincount(rows, minlength=m))]), shape=X.shape)
    Xdup.indices = Xdup.indices.astype(np.int64)  # scipy downcasts in the constructor
    Xdup.indptr = Xdup.indptr.astype(np.int64)
    assert not Xdup.has_canonical_format and Xdup.nnz == 2 * X.nnz
    np.testing.assert_allclose(Xdup.toarray(), X.toarray(), atol=1e-15)
    spec = resolve_kernel("rbf", 0.4, 3, 1, n)
    basis = select_basis(m, 12, random_state=0)
    a = fit_basis(X, y, alphas=[0.5], kernel_spec=spec, basis_indices=basis)
    b = fit_basis(Xdup, y, alphas=[0.5], kernel_spec=spec, basis_indices=basis)
    assert _rel(b, a) < 1e-10
    assert not Xdup.has_canonical_format  # the caller's matrix was not modified
