"""fastrank.RankRLS wiring of the large-scale paths: solver="cg", basis_vectors, sparse X."""

import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone

from fastrank import RankRLS
from fastrank.exceptions import ConvergenceWarning

from _large_oracles import group_pairs, laplacian_groups


def _data(m=80, n=15, seed=0):
    rng = np.random.default_rng(seed)
    X = sp.random(m, n, density=0.3, random_state=seed, format="csr")
    y = X @ rng.normal(size=n) + 0.2 * rng.normal(size=m)
    groups = rng.choice(np.array(["b", "a", "c", "d"]), size=m)
    return X, y, groups, rng


def _rel(a, b):
    return np.abs(a - b).max() / np.abs(b).max()


@pytest.mark.parametrize("weighting", ["unweighted", "normalized"])
def test_cg_equals_dense_solvers(weighting):
    X, y, groups, _ = _data()
    Z = sp.random(30, X.shape[1], density=0.3, random_state=9, format="csr")
    cg = RankRLS(0.5, solver="cg", tol=1e-12, group_weighting=weighting).fit(X, y, groups)
    assert cg.fit_mode_ == "cg" and cg.converged_ and cg.n_iter_ > 0 and cg.coef_.shape == (X.shape[1],)
    dual = RankRLS(0.5, solver="dual", group_weighting=weighting).fit(X.toarray(), y, groups)
    assert _rel(cg.predict(Z), dual.predict(Z.toarray())) < 1e-6
    # sparse test data on the dense dual model: no densifying, same predictions
    assert _rel(dual.predict(Z), dual.predict(Z.toarray())) < 1e-12
    auto = RankRLS(0.5, tol=1e-12, group_weighting=weighting).fit(X, y, groups)
    assert auto.fit_mode_ == "cg"
    dense_cg = RankRLS(0.5, solver="cg", tol=1e-12, group_weighting=weighting).fit(X.toarray(), y, groups)
    assert _rel(dense_cg.predict(Z), dual.predict(Z.toarray())) < 1e-6


@pytest.mark.parametrize("cost", ["binary", "magnitude", "normalized"])
def test_cg_fit_preferences(cost):
    X, y, _, rng = _data(seed=1)
    pairs = rng.integers(0, X.shape[0], size=(200, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    mags = None if cost == "binary" else rng.uniform(0.5, 2.0, size=pairs.shape[0])
    cg = RankRLS(0.3, solver="cg", tol=1e-12).fit_preferences(X, pairs, mags, cost)
    dual = RankRLS(0.3, solver="dual").fit_preferences(X.toarray(), pairs, mags, cost)
    assert _rel(cg.predict(X), dual.predict(X.toarray())) < 1e-6


def test_cg_controls_warning_warm_start_multi_output():
    X, y, groups, rng = _data(m=200, n=60, seed=2)
    with pytest.warns(ConvergenceWarning):
        est = RankRLS(1e-3, solver="cg", tol=1e-12, max_iter=3, warm_start=True).fit(X, y)
    assert est.n_iter_ == 3 and not est.converged_ and est.residual_history_.shape == (4,)
    est.set_params(max_iter=None)
    est.fit(X, y)  # continues from the previous coef_
    cold = RankRLS(1e-3, solver="cg", tol=1e-12).fit(X, y)
    assert est.converged_ and est.n_iter_ < cold.n_iter_
    assert _rel(est.coef_, cold.coef_) < 1e-7
    Y = np.column_stack([y, -y, y + rng.normal(size=y.size)])
    multi = RankRLS(0.1, solver="cg", tol=1e-12, preconditioner="jacobi").fit(X, Y, groups)
    assert multi.coef_.shape == (X.shape[1], 3) and multi.n_iter_.shape == (3,) and multi.converged_.all()
    dual = RankRLS(0.1, solver="dual").fit(X.toarray(), Y, groups)
    assert _rel(multi.predict(X), dual.predict(X.toarray())) < 1e-6


@pytest.mark.parametrize("exclude_ties", [False, True])
@pytest.mark.parametrize("sparse", [False, True])
def test_converged_means_the_true_residual_meets_tol(exclude_ties, sparse):
    """CG's recursively updated residual keeps shrinking below the true residual b - A w of the iterate (1.9e-20 where
    the true one is 3.7e-16): converged_ reports the true residual, and a tol below the rounding floor warns."""
    X, y, groups, rng = _data(m=120, n=20, seed=3)
    X = X if sparse else X.toarray()
    y = np.round(y, 1)  # ties for exclude_ties
    L = np.zeros((y.size, y.size))
    for i, j, c in group_pairs(groups):
        if not exclude_ties or y[i] != y[j]:
            L[[i, j, i, j], [i, j, j, i]] += [c, c, -c, -c]
    Xd = X.toarray() if sparse else X
    A, b = Xd.T @ L @ Xd + 1e-3 * np.eye(Xd.shape[1]), Xd.T @ L @ y
    for tol in [1e-10, 1e-18]:
        est = RankRLS(1e-3, solver="cg", tol=tol, exclude_ties=exclude_ties)
        if tol < 1e-16:
            with pytest.warns(ConvergenceWarning, match="rounding floor"):
                est.fit(X, y, groups)
        else:
            est.fit(X, y, groups)
        residual = np.linalg.norm(b - A @ est.coef_) / np.linalg.norm(b)
        assert est.converged_ == (tol > 1e-16)
        assert residual <= (tol if est.converged_ else 1e-14)  # the floor: as accurate as float64 allows


@pytest.mark.parametrize("sparse_input", [False, True])
def test_basis_vectors_estimator(sparse_input):
    X, y, groups, _ = _data(m=90, n=12, seed=3)
    Xin = X if sparse_input else X.toarray()
    est = RankRLS(0.2, kernel="rbf", gamma=0.5, basis_vectors=20, random_state=0).fit(Xin, y, groups)
    assert est.fit_mode_ == "sparse" and est.basis_indices_.shape == (20,) and est.dual_coef_.shape == (20,)
    again = RankRLS(0.2, kernel="rbf", gamma=0.5, basis_vectors=20, random_state=0).fit(Xin, y, groups)
    assert np.array_equal(est.basis_indices_, again.basis_indices_)
    Xd = X.toarray()
    d2 = (Xd**2).sum(1)[:, None] + (Xd**2).sum(1)[None, :] - 2 * Xd @ Xd.T
    K = np.exp(-0.5 * np.maximum(d2, 0))
    b = est.basis_indices_
    L = laplacian_groups(groups)
    A = np.linalg.solve(K[b] @ L @ K[b].T + 0.2 * K[np.ix_(b, b)], K[b] @ L @ y)  # eq. 41
    assert _rel(est.predict(X), K[:, b] @ A) < 1e-8
    assert _rel(est.predict(Xd), K[:, b] @ A) < 1e-8
    # all rows as basis vectors == the exact dual solution
    full = RankRLS(0.2, kernel="rbf", gamma=0.5, basis_vectors=np.arange(90)).fit(Xin, y, groups)
    exact = RankRLS(0.2, kernel="rbf", gamma=0.5, solver="dual").fit(Xd, y, groups)
    assert _rel(full.predict(Xd), exact.predict(Xd)) < 1e-6
    # precomputed kernel with basis vectors
    pre = RankRLS(0.2, kernel="precomputed", basis_vectors=b).fit(K, y, groups)
    assert _rel(pre.predict(K), K[:, b] @ A) < 1e-8
    # linear kernel: primal weights over the basis, predictions in O(nnz)
    lin = RankRLS(0.2, basis_vectors=30, random_state=1).fit(Xin, y)
    assert lin.coef_.shape == (12,)
    XR = lin.X_fit_.toarray() if sp.issparse(lin.X_fit_) else lin.X_fit_
    assert XR.shape == (30, 12)
    assert _rel(lin.predict(X), (Xd @ XR.T) @ lin.dual_coef_) < 1e-12


def test_basis_vectors_fit_preferences():
    X, y, _, rng = _data(m=60, seed=4)
    pairs = rng.integers(0, 60, size=(150, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    a = RankRLS(0.5, kernel="rbf", basis_vectors=np.arange(60)).fit_preferences(X, pairs)
    b = RankRLS(0.5, kernel="rbf", solver="dual").fit_preferences(X.toarray(), pairs)
    assert _rel(a.predict(X), b.predict(X.toarray())) < 1e-6


def test_errors_and_memory_guard(monkeypatch):
    X, y, groups, _ = _data(m=40, seed=5)
    # sparse X with a nonlinear kernel and no basis vectors: densified for the exact dual
    a = RankRLS(kernel="rbf").fit(X, y)
    assert a.fit_mode_ == "dual" and _rel(a.predict(X), RankRLS(kernel="rbf").fit(X.toarray(), y).predict(X)) < 1e-12
    with pytest.raises(ValueError, match="kernel='linear'"):
        RankRLS(kernel="rbf", solver="cg").fit(X.toarray(), y)
    with pytest.raises(ValueError, match="cannot be combined"):
        RankRLS(solver="cg", basis_vectors=5).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        RankRLS(solver="cg").fit(X, y).predict(X[:, :5])
    monkeypatch.setenv("FASTRANK_MAX_DENSE_BYTES", "1K")
    with pytest.raises(MemoryError, match="solver='cg'"):
        RankRLS(solver="dual").fit(X.toarray(), y)
    RankRLS(solver="cg").fit(X, y)  # the CG path has no dense m x m or n x n matrix
    with pytest.raises(MemoryError, match="basis_vectors"):
        RankRLS(kernel="rbf").fit(X, y)  # would densify X and build the m x m kernel


def test_clone_and_pickle_cg_model():
    X, y, groups, _ = _data(seed=6)
    est = RankRLS(0.5, solver="cg", tol=1e-10, preconditioner="jacobi").fit(X, y, groups)
    again = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(again.predict(X), est.predict(X))
    c = clone(est)
    assert c.get_params() == est.get_params() and not hasattr(c, "coef_")
    from _large_oracles import pairwise_error

    assert pairwise_error(y, est.predict(X), groups) < 0.5


def test_rankrls_path_large_scale():
    from fastrank import rankrls_path

    X, y, groups, _ = _data(m=100, n=20, seed=7)
    alphas = [10.0, 0.1, 1.0]
    p = rankrls_path(X, y, alphas, groups=groups, estimator=RankRLS(kernel="rbf", gamma=0.3, basis_vectors=25,
                                                                     random_state=0))
    assert p.fit_mode == "sparse" and p.dual_coef_.shape == (3, 25, 1)
    preds = p.predict(X)
    for k, a in enumerate(alphas):
        one = RankRLS(a, kernel="rbf", gamma=0.3, basis_vectors=25, random_state=0).fit(X, y, groups)
        assert _rel(preds[k], one.predict(X)) < 1e-9
    c = rankrls_path(X, y, alphas, groups=groups, estimator=RankRLS(solver="cg", tol=1e-12))
    assert c.fit_mode == "cg" and c.coef_.shape == (3, 20, 1) and c.converged_.all()
    for k, a in enumerate(alphas):
        exact = RankRLS(a, solver="dual").fit(X.toarray(), y, groups)
        assert _rel(c.predict(X)[k], exact.predict(X.toarray())) < 1e-6
