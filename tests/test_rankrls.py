"""RankRLS / MPRank dense solvers against the slow oracles of tests/oracles.py."""

import pickle
import threading

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.metrics.pairwise import polynomial_kernel, rbf_kernel

import fastrank
from fastrank import MPRank, RankRLS, rankrls_path

from oracles import (
    incidence,
    mprank_cortes_dual,
    rankrls_dual,
    rankrls_primal,
    scoring_edges_multi,
    scoring_pairs,
)

RTOL = 1e-8


def rel_close(a, b, rtol=RTOL):
    a, b = np.asarray(a), np.asarray(b)
    scale = max(np.abs(b).max(), 1e-300)
    assert np.abs(a - b).max() <= rtol * scale, np.abs(a - b).max() / scale


@pytest.fixture
def data():
    rng = np.random.default_rng(42)
    m, d = 40, 5
    X = rng.normal(size=(m, d))
    y = X @ rng.normal(size=d) + 0.3 * rng.normal(size=m)
    return X, y, rng


# ----------------------------------------------------------------------------- scoring setting
@pytest.mark.parametrize("kernel,K_fn", [
    ("rbf", lambda X: rbf_kernel(X, gamma=0.2)),
    ("poly", lambda X: polynomial_kernel(X, degree=2, gamma=0.3, coef0=1.0)),
    ("linear", lambda X: X @ X.T),
])
def test_dual_object_ranking_matches_pair_oracle(data, kernel, K_fn):
    X, y, _ = data
    params = dict(gamma=0.2) if kernel == "rbf" else dict(gamma=0.3, degree=2) if kernel == "poly" else {}
    est = RankRLS(alpha=0.7, kernel=kernel, solver="dual", **params).fit(X, y)
    A = rankrls_dual(K_fn(X), scoring_pairs(y), 0.7)[:, 0]
    rel_close(est.dual_coef_, A)
    rel_close(est.predict(X), K_fn(X) @ A)


@pytest.mark.parametrize("weighting", ["unweighted", "normalized"])
@pytest.mark.parametrize("solver", ["dual", "primal"])
def test_query_groups_match_pair_oracle(data, weighting, solver):
    X, y, rng = data
    # unsorted, non-contiguous string ids, including a singleton group
    groups = rng.choice(np.array(["q7", "a", "zz", "b1"]), size=X.shape[0])
    groups[5] = "lonely"
    kernel = "linear"
    est = RankRLS(alpha=0.3, kernel=kernel, solver=solver, group_weighting=weighting).fit(X, y, groups)
    edges = scoring_pairs(y, groups, weighting)
    if solver == "dual":
        A = rankrls_dual(X @ X.T, edges, 0.3)[:, 0]
        rel_close(est.dual_coef_, A)
        assert est.dual_coef_[5] == pytest.approx(0.0, abs=1e-12)  # singleton: no pairs, no influence
    W = rankrls_primal(X, edges, 0.3)[:, 0]
    rel_close(est.coef_, W)
    rel_close(est.predict(X), X @ W)


def test_query_groups_rbf_both_weightings(data):
    X, y, rng = data
    groups = rng.integers(0, 6, size=X.shape[0]) * 17 - 40  # unsorted integer ids
    K = rbf_kernel(X, gamma=0.1)
    for weighting in ("unweighted", "normalized"):
        est = RankRLS(alpha=2.0, kernel="rbf", gamma=0.1, group_weighting=weighting).fit(X, y, groups)
        rel_close(est.dual_coef_, rankrls_dual(K, scoring_pairs(y, groups, weighting), 2.0)[:, 0])


def test_unweighted_and_normalized_differ_for_unequal_groups(data):
    X, y, _ = data
    groups = np.r_[np.zeros(30), np.ones(10)]
    a = RankRLS(alpha=1.0, group_weighting="unweighted").fit(X, y, groups).coef_
    b = RankRLS(alpha=1.0, group_weighting="normalized").fit(X, y, groups).coef_
    assert np.abs(a - b).max() > 1e-3 * np.abs(a).max()


def test_multi_output_one_decomposition(data):
    X, y, rng = data
    Y = np.c_[y, rng.normal(size=y.size), y ** 2]
    groups = rng.integers(0, 3, size=y.size)
    for solver, kernel in (("dual", "rbf"), ("primal", "linear"), ("dual", "linear")):
        est = RankRLS(alpha=0.5, kernel=kernel, gamma=0.3, solver=solver).fit(X, Y, groups)
        edges = scoring_edges_multi(Y, groups)
        if solver == "primal":
            rel_close(est.coef_, rankrls_primal(X, edges, 0.5))
        else:
            K = rbf_kernel(X, gamma=0.3) if kernel == "rbf" else X @ X.T
            rel_close(est.dual_coef_, rankrls_dual(K, edges, 0.5))
        assert est.predict(X).shape == (y.size, 3)
        # each column equals its own single-output fit
        single = RankRLS(alpha=0.5, kernel=kernel, gamma=0.3, solver=solver).fit(X, Y[:, 1], groups)
        rel_close(est.predict(X)[:, 1], single.predict(X))


def test_primal_equals_dual_linear(data):
    X, y, rng = data
    groups = rng.integers(0, 4, size=y.size)
    for g in (None, groups):
        p = RankRLS(alpha=0.9, solver="primal").fit(X, y, g)
        d = RankRLS(alpha=0.9, solver="dual").fit(X, y, g)
        assert p.fit_mode_ == "primal" and d.fit_mode_ == "dual"
        rel_close(p.coef_, d.coef_)
        Z = rng.normal(size=(7, X.shape[1]))
        rel_close(p.predict(Z), d.predict(Z))


def test_solution_minimises_the_pinned_objective(data):
    """A perturbation of the solution never lowers the pairwise objective (sanity of the oracle too)."""
    X, y, rng = data
    K = rbf_kernel(X, gamma=0.2)
    est = RankRLS(alpha=0.4, kernel="rbf", gamma=0.2).fit(X, y)
    edges = scoring_pairs(y)

    def objective(a):
        f = K @ a
        return sum((z - (f[i] - f[j])) ** 2 for i, j, _, z in edges) + 0.4 * a @ K @ a

    best = objective(est.dual_coef_)
    for _ in range(5):
        assert objective(est.dual_coef_ + 1e-3 * rng.normal(size=y.size)) > best


def test_precomputed_kernel(data):
    X, y, rng = data
    groups = rng.integers(0, 3, size=y.size)
    Z = rng.normal(size=(6, X.shape[1]))
    a = RankRLS(alpha=0.6, kernel="rbf", gamma=0.2).fit(X, y, groups)
    b = RankRLS(alpha=0.6, kernel="precomputed").fit(rbf_kernel(X, gamma=0.2), y, groups)
    rel_close(b.dual_coef_, a.dual_coef_)
    rel_close(b.predict(rbf_kernel(Z, X, gamma=0.2)), a.predict(Z))
    with pytest.raises(ValueError, match="square"):
        RankRLS(kernel="precomputed").fit(X, y)
    K = rbf_kernel(X)
    K[0, 1] += 0.1
    with pytest.raises(ValueError, match="symmetric"):
        RankRLS(kernel="precomputed").fit(K, y)


# ----------------------------------------------------------------------------- regularization path
@pytest.mark.parametrize("kernel,solver", [("rbf", "dual"), ("linear", "primal"), ("linear", "dual")])
def test_path_equals_direct_solves(data, kernel, solver):
    X, y, rng = data
    Y = np.c_[y, rng.normal(size=y.size)]
    groups = rng.integers(0, 5, size=y.size)
    alphas = np.logspace(-3, 3, 13)
    est = RankRLS(kernel=kernel, gamma=0.2, solver=solver)
    path = rankrls_path(X, Y, alphas, groups=groups, estimator=est)
    Zt = rng.normal(size=(5, X.shape[1]))
    preds = path.predict(Zt)
    assert preds.shape == (alphas.size, 5, 2)
    edges = scoring_edges_multi(Y, groups)
    K = rbf_kernel(X, gamma=0.2) if kernel == "rbf" else X @ X.T
    for k, alpha in enumerate(alphas):
        if solver == "primal":
            rel_close(path.coef_[k], rankrls_primal(X, edges, alpha))
        else:
            rel_close(path.dual_coef_[k], rankrls_dual(K, edges, alpha))
        direct = clone(est).set_params(alpha=alpha).fit(X, Y, groups)
        rel_close(preds[k], direct.predict(Zt))


def test_path_single_output_shapes(data):
    X, y, _ = data
    path = rankrls_path(X, y, [0.1, 1.0], estimator=RankRLS(kernel="rbf"))
    assert path.dual_coef_.shape == (2, y.size, 1)
    assert path.predict(X).shape == (2, y.size)
    est = path.fitted_estimator(1)
    assert est.alpha == 1.0 and est.dual_coef_.shape == (y.size,)


# ----------------------------------------------------------------------------- preference graphs
def graph_edges(pairs, magnitudes, cost):
    out = []
    for e, (h, t) in enumerate(pairs):
        g = 1.0 if magnitudes is None else magnitudes[e]
        if cost == "binary":
            out.append((h, t, 1.0, 1.0))
        elif cost == "magnitude":
            out.append((h, t, 1.0, g))
        else:
            out.append((h, t, 1.0 / g, g))
    return out


@pytest.mark.parametrize("cost", ["binary", "magnitude", "normalized"])
@pytest.mark.parametrize("n_edges", [15, 120])  # l <= m (edge-space solve) and l > m (Laplacian factor)
def test_preference_graph_all_costs(data, cost, n_edges):
    X, _, rng = data
    m = X.shape[0]
    pairs = rng.integers(0, m, size=(n_edges, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    pairs = np.vstack([pairs, pairs[:3]])  # a multigraph: repeated preferences
    mags = rng.uniform(0.2, 3.0, size=len(pairs))
    edges = graph_edges(pairs, mags, cost)
    mags = None if cost == "binary" else mags  # cost='binary' takes no magnitudes
    est = RankRLS(alpha=0.8, kernel="rbf", gamma=0.2).fit_preferences(X, pairs, mags, cost=cost)
    A = rankrls_dual(rbf_kernel(X, gamma=0.2), edges, 0.8)[:, 0]
    rel_close(est.dual_coef_, A)
    # linear kernel: primal and dual both equal the oracle
    for solver in ("primal", "dual"):
        lin = RankRLS(alpha=0.8, solver=solver).fit_preferences(X, pairs, mags, cost=cost)
        rel_close(lin.coef_, rankrls_primal(X, edges, 0.8)[:, 0])


def test_preference_graph_equals_scoring_setting_on_all_pairs(data):
    """Cost (21) on the full graph induced by the scores is the scoring setting (eq. 23-25)."""
    X, y, _ = data
    m = y.size
    pairs = np.array([(i, j) for i in range(m) for j in range(i + 1, m)])
    diff = y[pairs[:, 0]] - y[pairs[:, 1]]
    pairs[diff < 0] = pairs[diff < 0][:, ::-1]
    a = RankRLS(alpha=1.3, kernel="rbf").fit_preferences(X, pairs, np.abs(diff), cost="magnitude")
    b = RankRLS(alpha=1.3, kernel="rbf").fit(X, y)
    rel_close(a.dual_coef_, b.dual_coef_)


def test_preference_graph_bad_input(data):
    X, _, _ = data
    est = RankRLS()
    with pytest.raises(ValueError, match="self-loop"):
        est.fit_preferences(X, [[0, 1], [3, 3]])
    with pytest.raises(ValueError, match="outside"):
        est.fit_preferences(X, [[0, 1], [2, X.shape[0]]])
    with pytest.raises(ValueError, match="outside"):
        est.fit_preferences(X, [[-1, 1]])
    with pytest.raises(ValueError, match="shape"):
        est.fit_preferences(X, [0, 1])
    with pytest.raises(ValueError, match="empty"):
        est.fit_preferences(X, np.empty((0, 2), dtype=int))
    with pytest.raises(ValueError, match="> 0"):
        est.fit_preferences(X, [[0, 1]], [0.0], cost="normalized")
    with pytest.raises(ValueError, match="needs magnitudes"):
        est.fit_preferences(X, [[0, 1]], cost="magnitude")
    with pytest.raises(TypeError, match="integer"):
        est.fit_preferences(X, [[0.5, 1]])


def test_rlscore_preferences_file():
    """RLScore's preference file (with 16 self-pairs) is rejected clearly, and fits once they go."""
    from conftest import shared_data

    root = shared_data("rlscore_legacy")
    pairs = np.loadtxt(root / "rank_train.preferences", dtype=np.int64)
    from sklearn.datasets import load_svmlight_file

    Xs, _, _ = load_svmlight_file(str(root / "rank_train.light"), n_features=195098, query_id=True)
    X = Xs.toarray()
    with pytest.raises(ValueError, match="self-loop"):
        RankRLS().fit_preferences(X, pairs)
    keep = pairs[:, 0] != pairs[:, 1]
    est = RankRLS(alpha=1.0, solver="dual").fit_preferences(X, pairs[keep])
    edges = graph_edges(pairs[keep], None, "binary")
    rel_close(est.dual_coef_, rankrls_dual(X @ X.T, edges, 1.0)[:, 0], rtol=1e-7)


# ----------------------------------------------------------------------------- MPRank
def test_mprank_matches_cortes_dual_and_rankrls_identity(data):
    X, y, rng = data
    m = y.size
    Z = rng.normal(size=(9, X.shape[1]))
    for C in (0.1, 3.0, 100.0):
        mp = MPRank(C=C, kernel="rbf", gamma=0.2).fit(X, y)
        expected = mprank_cortes_dual(rbf_kernel(X, gamma=0.2), y, C, rbf_kernel(Z, X, gamma=0.2))
        rel_close(mp.predict(Z), expected)
        rr = RankRLS(alpha=m * m / (2 * C), kernel="rbf", gamma=0.2).fit(X, y)
        rel_close(mp.dual_coef_, rr.dual_coef_)
    lin = MPRank(C=2.0).fit(X, y)
    rel_close(lin.predict(Z), mprank_cortes_dual(X @ X.T, y, 2.0, Z @ X.T))


# ----------------------------------------------------------------------------- the paper's example
def test_section_5_1_irrelevant_pairs_example():
    """Four 1-D inputs, two objects: relevant pairs point left-to-right, the irrelevant
    between-object pairs point the other way (Pahikkala et al. 2009, Sect. 5.1, Fig. 2)."""
    X = np.array([[0.0], [1.0], [2.0], [3.0]])
    s = np.array([2.0, 1.0, 4.0, 3.0])
    objects = np.array([0, 0, 1, 1])
    with_groups = RankRLS(alpha=0.1).fit(X, s, objects).predict(X)
    all_pairs = RankRLS(alpha=0.1).fit(X, s).predict(X)
    assert with_groups[0] > with_groups[1] and with_groups[2] > with_groups[3]
    assert all_pairs[0] < all_pairs[1] and all_pairs[2] < all_pairs[3]


# ----------------------------------------------------------------------------- bad input
def test_bad_input_errors(data):
    X, y, _ = data
    with pytest.raises(ValueError, match="NaN"):
        RankRLS().fit(np.where(np.eye(*X.shape) > 0, np.nan, X), y)
    with pytest.raises(ValueError, match="NaN"):
        RankRLS().fit(X, np.r_[np.inf, y[1:]])
    with pytest.raises(ValueError, match="inconsistent"):
        RankRLS().fit(X, y[:-1])
    with pytest.raises(ValueError, match="minimum of 2"):
        RankRLS().fit(X[:1], y[:1])
    with pytest.raises(ValueError, match="minimum of 2"):
        RankRLS().fit(X[:0], y[:0])
    with pytest.raises(ValueError, match="tied"):
        RankRLS().fit(X, np.ones_like(y))
    with pytest.raises(ValueError, match="tied"):
        RankRLS().fit(X, np.c_[y, np.ones_like(y)])
    with pytest.raises(ValueError, match="single row"):
        RankRLS().fit(X, y, np.arange(y.size))
    with pytest.raises(ValueError, match="tied inside every group"):
        RankRLS().fit(X, np.repeat([1.0, 2.0], y.size // 2), np.repeat([0, 1], y.size // 2))
    for alpha in (0.0, -1.0, np.inf, np.nan):
        with pytest.raises(ValueError, match="alpha"):
            RankRLS(alpha=alpha).fit(X, y)
    with pytest.raises(TypeError, match="alpha"):
        RankRLS(alpha="big").fit(X, y)
    with pytest.raises(ValueError, match="Unknown kernel"):
        RankRLS(kernel="sigmoid").fit(X, y)
    with pytest.raises(ValueError, match="primal"):
        RankRLS(kernel="rbf", solver="primal").fit(X, y)
    with pytest.raises(ValueError, match="groups has"):
        RankRLS().fit(X, y, np.zeros(3))
    with pytest.raises(ValueError, match="group_weighting"):
        RankRLS(group_weighting="bogus").fit(X, y, np.zeros(y.size))
    est = RankRLS().fit(X, y)
    with pytest.raises(ValueError, match="features"):
        est.predict(X[:, :2])
    with pytest.raises(ValueError, match="C"):
        MPRank(C=0).fit(X, y)


def test_tiny_alpha_breakdown_raises_linalg_error(data):
    X, y, _ = data
    with pytest.raises(fastrank.LinAlgError) as info:
        RankRLS(alpha=1e-300, kernel="rbf").fit(X, y)
    assert isinstance(info.value, np.linalg.LinAlgError)
    assert "alpha" in str(info.value)
    with pytest.raises(np.linalg.LinAlgError):
        rankrls_path(X, y, [1.0, 1e-300], estimator=RankRLS(kernel="rbf"))


def test_ill_conditioned_warns(data):
    X, y, _ = data
    with pytest.warns(fastrank.IllConditionedWarning):
        RankRLS(alpha=1e-13, kernel="rbf", gamma=0.01).fit(X, y)


def test_indefinite_precomputed_kernel_raises(data):
    X, y, rng = data
    B = rng.normal(size=(y.size, y.size))
    K = -(B @ B.T)  # negative definite: not a kernel
    with pytest.raises(fastrank.LinAlgError):
        RankRLS(alpha=1e-3, kernel="precomputed").fit(K, y)


# ----------------------------------------------------------------------------- threads / GIL
def test_concurrent_fits_match_serial():
    rng = np.random.default_rng(3)
    jobs = []
    for t in range(4):
        X = rng.normal(size=(300, 8))
        jobs.append((X, X[:, 0] + 0.1 * rng.normal(size=300)))
    serial = [RankRLS(alpha=1.0, kernel="rbf", n_jobs=1).fit(X, y).dual_coef_ for X, y in jobs]
    results = [None] * len(jobs)

    def work(k):
        X, y = jobs[k]
        results[k] = RankRLS(alpha=1.0, kernel="rbf", n_jobs=1).fit(X, y).dual_coef_

    threads = [threading.Thread(target=work, args=(k,)) for k in range(len(jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # fastrank's own kernels are bit-identical in any thread; LAPACK's rounding may differ because
    # OpenBLAS keeps its own thread count when called from other Python threads (fastrank._threads)
    for a, b in zip(results, serial):
        np.testing.assert_allclose(a, b, rtol=1e-11, atol=1e-13)


def test_n_jobs_does_not_change_results(data):
    X, y, rng = data
    groups = rng.integers(0, 3, size=y.size)
    a = RankRLS(kernel="rbf", n_jobs=1).fit(X, y, groups).dual_coef_
    b = RankRLS(kernel="rbf", n_jobs=2).fit(X, y, groups).dual_coef_
    np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("n_groups", [1000, 2])
def test_n_jobs_does_not_change_the_grouped_primal(n_groups):
    """From 2^20 entries of X the linear solver's group passes run on several threads (many groups: groups split; few
    large ones: rows split); below, on one.  Both give the one-thread model, which the oracle tests check."""
    rng = np.random.default_rng(5)
    m, n = 60000, 20
    X = rng.normal(size=(m, n)) + 3.0
    y = X @ rng.normal(size=n) + rng.normal(size=m)
    groups = rng.integers(0, n_groups, size=m)
    a = RankRLS(alpha=2.0, n_jobs=1).fit(X, y, groups)
    b = RankRLS(alpha=2.0, n_jobs=2).fit(X, y, groups)
    np.testing.assert_allclose(b.coef_, a.coef_, rtol=1e-12, atol=1e-15)


# ----------------------------------------------------------------------------- persistence
def test_pickle_and_clone_roundtrip(data):
    X, y, _ = data
    for est in (RankRLS(alpha=0.5, kernel="rbf"), RankRLS(alpha=0.5), MPRank(C=2.0, kernel="poly")):
        est.fit(X, y)
        again = pickle.loads(pickle.dumps(est))
        np.testing.assert_array_equal(again.predict(X), est.predict(X))
        c = clone(est)
        assert c.get_params() == est.get_params() and not hasattr(c, "fit_mode_")


@pytest.mark.parametrize("shift", [0.0, 1e6])
def test_primal_object_ranking_both_gram_paths(data, shift):
    """Small means use the uncentred Gram with a rank-one correction; a mean 1e6 times the spread
    (or a constant feature) must take the explicitly centred path — both equal the oracle."""
    X, y, _ = data
    Xs = X + shift
    Xs[:, 2] = 7.0  # a constant feature: zero variance
    est = RankRLS(alpha=0.5, solver="primal").fit(Xs, y)
    W = rankrls_primal(Xs - Xs.mean(axis=0), scoring_pairs(y), 0.5)[:, 0]  # centring is exact for L
    rel_close(est.coef_, W)
    X2 = X.copy()
    est2 = RankRLS(alpha=0.5, solver="primal").fit(X2 + 0.1, y)  # fast path, tiny shift
    rel_close(est2.coef_, rankrls_primal(X2, scoring_pairs(y), 0.5)[:, 0])


def test_primal_solves_a_full_rank_system_at_any_alpha():
    """The primal's n x n system X^T L X + alpha I is refused only when singular to working precision: a tiny alpha
    on well-conditioned features gives the least-squares pairwise model (it was refused as "S K S + alpha I is not
    numerically positive definite"), on the Cholesky, eigendecomposition and tridiagonal routes alike."""
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(20, 3)), rng.normal(size=20)
    L = 20 * np.eye(20) - np.ones((20, 20))  # the all-pairs Laplacian (004 eq. 25)
    w_ls = np.linalg.solve(X.T @ L @ X, X.T @ L @ y)
    for groups in (None, np.repeat([0, 1], 10)):
        est = RankRLS(alpha=1e-13).fit(X, y, groups)
        if groups is None:
            rel_close(est.coef_, w_ls, rtol=1e-10)
    path = rankrls_path(X, y, [1e-13, 1e-14, 1.0])  # several alphas: the tridiagonal route
    rel_close(path.fitted_estimator(0).coef_, w_ls, rtol=1e-10)
    Xd = np.c_[X, X[:, 0]]  # a duplicate column: X^T L X singular, alpha below its rounding level
    with pytest.raises(fastrank.LinAlgError, match=r"the linear RankRLS system X\^T L X \+ alpha I is singular to "
                                                   r"working precision for alpha=1e-13"):
        RankRLS(alpha=1e-13).fit(Xd, y)
    with pytest.raises(fastrank.LinAlgError, match="X\\^T L X \\+ alpha I is singular to working precision"):
        rankrls_path(Xd, y, [1e-13, 1.0])
    with pytest.raises(fastrank.LinAlgError, match="not numerically positive definite"):  # the dual: S K S singular
        RankRLS(alpha=1e-15, solver="dual").fit(X, y)
