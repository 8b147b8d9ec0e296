"""Conjugate-gradient RankRLS (Pahikkala et al. 2009, Sect. 4.3) against explicit-pair oracles."""

import numpy as np
import pytest
import scipy.sparse as sp

from fastrank import _core
from fastrank._memory import check_dense_memory, dense_memory_limit
from fastrank._solvers import fit_cg
from fastrank._sparse import as_csr
from fastrank._validation import group_index
from fastrank.exceptions import ConvergenceWarning

from _large_oracles import (
    graph_edges,
    group_pairs,
    laplacian_graph,
    laplacian_groups,
    primal_graph_solution,
    primal_pairs_solution,
)

TOL = 1e-13  # CG stopping tolerance for exactness tests


def _data(m=70, n=12, density=0.35, v=1, seed=0):
    rng = np.random.default_rng(seed)
    X = sp.random(m, n, density=density, random_state=seed, format="csr")
    X.data = rng.normal(size=X.nnz)
    Y = X @ rng.normal(size=(n, v)) + 0.3 * rng.normal(size=(m, v))
    return X, Y, rng


def _rel(a, b):
    return np.abs(a - b).max() / max(np.abs(b).max(), 1e-300)


@pytest.mark.parametrize("dense", [False, True])
@pytest.mark.parametrize("precond", [None, "jacobi"])
def test_object_ranking_matches_pairs(dense, precond):
    X, Y, _ = _data()
    W = primal_pairs_solution(X.toarray(), Y, group_pairs(np.zeros(X.shape[0])), 0.7)
    res = fit_cg(X.toarray() if dense else X, Y[:, 0], alpha=0.7, tol=TOL, preconditioner=precond, n_jobs=2)
    assert res.converged.all()
    assert _rel(X @ res.coef, X @ W) < 1e-8
    assert res.residual_history.shape[0] == res.n_iter[0] + 1
    assert res.residual_history[-1, 0] <= TOL


@pytest.mark.parametrize("normalized", [False, True])
@pytest.mark.parametrize("dense", [False, True])
def test_query_ranking_both_weightings(normalized, dense):
    X, Y, rng = _data(m=80, v=2, seed=1)
    groups = rng.choice(np.array([7, -3, 100, 12, 5]), size=X.shape[0])  # unsorted ids
    gi = group_index(groups, X.shape[0])
    W = primal_pairs_solution(X.toarray(), Y, group_pairs(groups, normalized), 0.3)
    res = fit_cg(X.toarray() if dense else X, Y, group_index=gi, normalized=normalized, alpha=0.3, tol=TOL,
                 preconditioner="jacobi", n_jobs=2)
    assert res.coef.shape == (X.shape[1], 2) and res.converged.all()
    assert _rel(X @ res.coef, X @ W) < 1e-8
    # each output column is its own CG: same answer as solving the columns one at a time
    for j in range(2):
        one = fit_cg(X, Y[:, j], group_index=gi, normalized=normalized, alpha=0.3, tol=TOL, preconditioner="jacobi")
        assert _rel(one.coef[:, 0], res.coef[:, j]) < 1e-9
        assert one.n_iter[0] == res.n_iter[j]


@pytest.mark.parametrize("cost", ["binary", "magnitude", "normalized"])
@pytest.mark.parametrize("dense", [False, True])
def test_preference_graph_three_costs(cost, dense):
    X, Y, rng = _data(m=50, seed=2)
    heads, tails, w, z = graph_edges(Y[:, 0], 120, rng, cost)
    W = primal_graph_solution(X.toarray(), heads, tails, w, z, 0.5)
    res = fit_cg(X.toarray() if dense else X, graph=(heads, tails, w, z), alpha=0.5, tol=TOL,
                 preconditioner="jacobi", n_jobs=2)
    assert res.converged.all()
    assert _rel(X @ res.coef, X @ W) < 1e-8


def test_multi_output_graph_targets():
    X, Y, rng = _data(m=40, seed=3)
    heads, tails, w, z = graph_edges(Y[:, 0], 80, rng, "magnitude")
    Z = np.column_stack([z, 2 * z + 1, np.ones_like(z)])
    res = fit_cg(X, graph=(heads, tails, w, Z), alpha=0.2, tol=TOL)
    W = primal_graph_solution(X.toarray(), heads, tails, w, Z, 0.2)
    assert res.coef.shape == (X.shape[1], 3)
    assert _rel(X @ res.coef, X @ W) < 1e-8


def test_warm_start_continues_and_saves_iterations():
    X, Y, _ = _data(m=120, n=40, density=0.2, seed=4)
    full = fit_cg(X, Y, alpha=0.05, tol=1e-10)
    with pytest.warns(ConvergenceWarning):
        part = fit_cg(X, Y, alpha=0.05, tol=1e-10, max_iter=5)
    assert part.n_iter[0] == 5 and not part.converged[0]
    cont = fit_cg(X, Y, alpha=0.05, tol=1e-10, x0=part.coef)
    assert cont.converged[0] and cont.n_iter[0] < full.n_iter[0]
    assert _rel(X @ cont.coef, X @ full.coef) < 1e-7
    # starting from the solution needs no iteration at all
    again = fit_cg(X, Y, alpha=0.05, tol=1e-8, x0=full.coef)
    assert again.n_iter[0] == 0 and again.converged[0]


def test_jacobi_diagonal_matches_dense_oracle_with_duplicates_and_unsorted():
    X, Y, rng = _data(m=60, n=10, seed=5)
    Xd = X.toarray()
    # the same matrix with every entry split into two duplicates, entries of each row in reversed order
    counts = np.diff(X.indptr)
    data, cols = [], []
    for i in range(60):
        sl = slice(X.indptr[i], X.indptr[i + 1])
        d, c = X.data[sl], X.indices[sl]
        data.append(np.r_[0.25 * d, 0.75 * d][::-1])
        cols.append(np.r_[c, c][::-1])
    indptr = np.r_[0, np.cumsum(2 * counts)].astype(np.int32)
    Xdup = sp.csr_matrix((np.concatenate(data), np.concatenate(cols).astype(np.int32), indptr), shape=X.shape)
    assert not Xdup.has_canonical_format
    np.testing.assert_allclose(Xdup.toarray(), Xd, rtol=1e-12, atol=1e-14)
    groups = rng.integers(0, 4, size=60)
    gi = group_index(groups, 60)
    for normalized in (False, True):
        L = laplacian_groups(groups, normalized)
        want = np.diag(Xd.T @ L @ Xd)
        for M in (X, Xdup):
            p = as_csr(M)
            got = _core.cg_jacobi_diagonal((p.data, p.indices, p.indptr), 60, 10, order=gi.order,
                                           offsets=gi.offsets, pair_weight=1.0 / gi.sizes if normalized else None)
            np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
        got = _core.cg_jacobi_diagonal(Xd, 60, 10, order=gi.order, offsets=gi.offsets,
                                       pair_weight=1.0 / gi.sizes if normalized else None)
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    heads, tails, w, z = graph_edges(Y[:, 0], 90, rng, "normalized")
    L = laplacian_graph(60, heads, tails, w)
    want = np.diag(Xd.T @ L @ Xd)
    for M in (X, Xdup):
        p = as_csr(M)
        got = _core.cg_jacobi_diagonal((p.data, p.indices, p.indptr), 60, 10, head=heads.astype(np.int64),
                                       tail=tails.astype(np.int64), weight=w)
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
    # and the solve on the duplicated/unsorted matrix equals the canonical one
    a = fit_cg(X, Y, group_index=gi, alpha=0.4, tol=TOL, preconditioner="jacobi")
    b = fit_cg(Xdup, Y, group_index=gi, alpha=0.4, tol=TOL, preconditioner="jacobi")
    assert _rel(b.coef, a.coef) < 1e-9


def test_int64_indices_and_empty_rows_and_columns():
    X, Y, _ = _data(m=50, n=15, seed=6)
    X = X.tolil()
    X[3, :] = 0
    X[17, :] = 0
    X[:, 4] = 0
    X = X.tocsr()
    X.eliminate_zeros()
    assert np.diff(X.indptr)[[3, 17]].sum() == 0
    X64 = X.copy()
    X64.indices = X64.indices.astype(np.int64)  # scipy downcasts in the constructor; force int64
    X64.indptr = X64.indptr.astype(np.int64)
    assert X64.indices.dtype == np.int64
    p = as_csr(X64)
    assert p.indices.dtype == np.int64 and np.shares_memory(p.indices, X64.indices)
    W = primal_pairs_solution(X.toarray(), Y, group_pairs(np.zeros(50)), 1.0)
    for M in (X, X64):
        res = fit_cg(M, Y, alpha=1.0, tol=TOL, preconditioner="jacobi", n_jobs=2)
        assert _rel(X @ res.coef, X @ W) < 1e-8
        assert res.coef[4, 0] == 0.0  # an all-zero feature gets weight 0


def test_zero_copy_csr():
    X, _, _ = _data()
    p = as_csr(X)
    assert np.shares_memory(p.data, X.data) and np.shares_memory(p.indices, X.indices)
    assert np.shares_memory(p.indptr, X.indptr)


def test_invalid_csr_rejected():
    X, Y, _ = _data(m=10, n=5, seed=7)
    bad = X.copy()
    bad.indices = bad.indices.copy()
    bad.indices[0] = 99
    with pytest.raises(ValueError, match="column indices"):
        fit_cg(bad, Y)
    nan = X.copy()
    nan.data = nan.data.copy()
    nan.data[0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        fit_cg(nan, Y)
    with pytest.raises(ValueError, match="rows"):
        fit_cg(X, Y[:5])
    with pytest.raises(ValueError, match="preconditioner"):
        fit_cg(X, Y, preconditioner="ilu")
    with pytest.raises(ValueError, match="max_iter"):
        fit_cg(X, Y, max_iter=0)
    with pytest.raises(ValueError, match="alpha"):
        fit_cg(X, Y, alpha=0.0)
    with pytest.raises(ValueError, match="warm start"):
        fit_cg(X, Y, x0=np.zeros(3))


def test_non_convergence_warns_and_reports():
    X, Y, _ = _data(m=100, n=40, density=0.3, seed=8)
    with pytest.warns(ConvergenceWarning, match="did not converge"):
        res = fit_cg(X, Y, alpha=1e-3, tol=1e-14, max_iter=3)
    assert res.n_iter.tolist() == [3] and res.converged.tolist() == [False]
    assert res.residual_history.shape == (4, 1)
    assert res.residual_history[-1, 0] > 1e-14


def test_callback_sees_residuals_and_can_stop():
    X, Y, _ = _data(m=100, n=40, density=0.3, seed=9)
    seen = []

    def cb(k, rel):
        seen.append((k, rel.copy()))
        return k >= 4

    with pytest.warns(ConvergenceWarning):
        res = fit_cg(X, Y, alpha=1e-2, tol=1e-14, callback=cb)
    assert [k for k, _ in seen] == [1, 2, 3, 4]
    assert res.n_iter[0] == 4
    np.testing.assert_allclose(seen[-1][1], res.residual_history[-1])


def test_zero_targets_give_zero_solution():
    X, _, _ = _data(m=20, n=6, seed=10)
    res = fit_cg(X, np.ones(20), alpha=1.0)  # constant y: L y = 0
    assert res.converged.all() and res.n_iter[0] == 0 and not res.coef.any()


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_product_variants_same_answer(n_jobs):
    X, Y, rng = _data(m=300, n=50, density=0.1, seed=11)
    gi = group_index(rng.integers(0, 20, size=300), 300)
    for g in (None, gi):
        a = fit_cg(X, Y, group_index=g, alpha=0.1, tol=1e-12, n_jobs=n_jobs)  # per-thread partial sums
        b = fit_cg(X, Y, group_index=g, alpha=0.1, tol=1e-12, n_jobs=n_jobs, transpose_copy=True)
        assert _rel(b.coef, a.coef) < 1e-9


def test_memory_guard(monkeypatch):
    monkeypatch.setenv("FASTRANK_MAX_DENSE_BYTES", "1M")
    assert dense_memory_limit() == 2**20
    assert check_dense_memory(300) == 8 * 300 * 300
    with pytest.raises(MemoryError, match="solver='cg'.*basis_vectors"):
        check_dense_memory(400, what="kernel matrix")
    with pytest.raises(MemoryError, match="2 x a dense 400 x 400"):
        check_dense_memory(400, 2)
    monkeypatch.setenv("FASTRANK_MAX_DENSE_BYTES", "none")
    assert dense_memory_limit() is None
    check_dense_memory(10**7)
    monkeypatch.setenv("FASTRANK_MAX_DENSE_BYTES", "lots")
    with pytest.raises(ValueError, match="byte count"):
        dense_memory_limit()
    monkeypatch.delenv("FASTRANK_MAX_DENSE_BYTES")
    lim = dense_memory_limit()
    assert lim is None or lim > 0
    with pytest.raises(MemoryError):
        check_dense_memory(10**7)  # 800 TB


@pytest.mark.parametrize("normalized", [False, True])
def test_large_and_small_groups_blockwise_oracle(normalized):
    """A big group mixed with small ones; oracle X^T L X, X^T L y assembled group by group."""
    rng = np.random.default_rng(12)
    m, n = 2600, 40
    X = sp.random(m, n, density=0.25, random_state=12, format="csr")
    Y = X @ rng.normal(size=(n, 2)) + rng.normal(size=(m, 2))
    groups = np.where(np.arange(m) % 13 == 0, 1000 + rng.integers(0, 30, size=m), 7)
    gi = group_index(groups, m)
    Xd = X.toarray()
    A = 0.25 * np.eye(n)
    B = np.zeros((n, 2))
    for q in np.unique(groups):  # L_q = c_q (n_q I - 1 1^T)
        idx = np.flatnonzero(groups == q)
        c = 1.0 / idx.size if normalized else 1.0
        Xq, Yq = Xd[idx], Y[idx]
        A += c * (idx.size * Xq.T @ Xq - np.outer(Xq.sum(0), Xq.sum(0)))
        B += c * (idx.size * Xq.T @ Yq - np.outer(Xq.sum(0), Yq.sum(0)))
    W = np.linalg.solve(A, B)
    for n_jobs in (1, 2):
        res = fit_cg(X, Y, group_index=gi, normalized=normalized, alpha=0.25, tol=1e-13, n_jobs=n_jobs)
        assert res.converged.all()
        assert _rel(X @ res.coef, X @ W) < 1e-8


def test_binding_refuses_silent_conversions():
    """The CSR arrays are mapped, never converted inside the binding: float32 data is refused."""
    X, Y, _ = _data(m=10, n=5, seed=13)
    with pytest.raises(TypeError):
        _core.cg_rankrls_csr(X.data.astype(np.float32), X.indices, X.indptr, 10, 5, np.ascontiguousarray(Y),
                             order=np.arange(10), offsets=np.array([0, 10]))
    with pytest.raises(ValueError, match="share one dtype"):
        _core.cg_rankrls_csr(X.data, X.indices.astype(np.int64), X.indptr, 10, 5, np.ascontiguousarray(Y),
                             order=np.arange(10), offsets=np.array([0, 10]))
    # float32 scipy input is accepted at the Python level (one copy of data only)
    X32 = X.astype(np.float32)
    a = fit_cg(X32, Y, alpha=1.0, tol=1e-12)
    b = fit_cg(X32.astype(np.float64), Y, alpha=1.0, tol=1e-12)
    np.testing.assert_allclose(a.coef, b.coef, rtol=1e-12)


def test_graph_arrays_are_checked_not_truncated():
    """A fractional row index was cut to an integer and a NaN edge weight reached the solver."""
    X, Y, rng = _data(m=20, seed=5)
    heads, tails, w, z = graph_edges(Y[:, 0], 30, rng, "binary")
    with pytest.raises(TypeError, match="integer row indices"):
        fit_cg(X, graph=(heads + 0.5, tails, w, z), alpha=0.5)
    bad = w.astype(float).copy()
    bad[3] = np.nan
    with pytest.raises(ValueError, match="weights contain NaN"):
        fit_cg(X, graph=(heads, tails, bad, z), alpha=0.5)


@pytest.mark.parametrize("weighting", ["bogus", "per-query", 1])
def test_unknown_weighting_raises(weighting):
    """An unknown weighting is refused, not solved as another one."""
    X, Y = np.random.default_rng(0).standard_normal((20, 3)), np.arange(20.0)
    gi = group_index(np.repeat([0, 1], 10), 20)
    with pytest.raises(ValueError, match=r"^weighting must be None or one of \('unweighted'"):
        fit_cg(X, Y, group_index=gi, alpha=1.0, weighting=weighting)


def test_threads_do_not_change_a_large_sparse_fit():
    """From 2^17 non-zeros the CSR products run on several threads (below, on one): the same fixed row chunks either
    way, so the model is the one-thread model, bit for bit."""
    import fastrank

    rng = np.random.default_rng(11)
    m = 30000
    X = sp.random(m, 200, density=0.05, format="csr", random_state=3)
    y = np.asarray(X @ rng.normal(size=200)).ravel() + rng.normal(size=m)
    groups = rng.integers(0, 300, size=m)
    assert X.nnz >= 2**17
    a = fastrank.RankRLS(solver="cg", n_jobs=1).fit(X, y, groups)
    b = fastrank.RankRLS(solver="cg", n_jobs=2).fit(X, y, groups)
    assert a.n_iter_ == b.n_iter_
    np.testing.assert_array_equal(a.coef_, b.coef_)
