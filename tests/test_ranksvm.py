"""RankSVM: the pair-free oracle against brute-force double sums, and every solver against an
explicit-pairs QP solved independently (NNLS for the squared hinge's dual, a box-constrained
dual with an exact active-set finish for the hinge)."""

import pickle
import re
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
import sklearn
from scipy.optimize import lsq_linear, minimize
from sklearn.base import clone
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.model_selection import GridSearchCV, GroupKFold
from sklearn.utils.estimator_checks import parametrize_with_checks
from threadpoolctl import threadpool_limits

import fastrank
from fastrank import RankSVM
from fastrank import _core
from fastrank._ranksvm import _LOSSES, _graph_structure, _group_structure
from fastrank._validation import check_n_jobs
from fastrank.exceptions import ConstantModelWarning, ConvergenceWarning, MissingGroupsWarning
from fastrank.metrics import pairwise_disagreement

# tol below what double precision resolves: the solve stops at its rounding floor with converged_ False and says so
AT_FLOOR = pytest.mark.filterwarnings("ignore:.*double precision's rounding:sklearn.exceptions.ConvergenceWarning")


def _structure(y, groups, pairs, weights, m):
    if pairs is None:
        return _group_structure(np.ascontiguousarray(y, dtype=np.float64), groups, m)
    kw, scale, _ = _graph_structure(pairs, weights, m)
    return dict(kw, weight=kw["weight"] * scale)  # the weights as given (the scale is a power of two)


def _pairwise_loss(f, y=None, groups=None, *, pairs=None, weights=None, loss="squared_hinge", n_jobs=1):
    """The core's pair-free oracle at scores f: ``(loss, d loss / d f, active weight,
    n_pairs)`` of ``sum_P weight * l(1 - (f_i - f_j))``."""
    f = np.ascontiguousarray(f, dtype=np.float64)
    m = f.shape[0]
    kw = _structure(y, groups, pairs, weights, m)
    return _core.ranksvm_pairwise_loss(f, _LOSSES[loss], check_n_jobs(n_jobs), **kw)


def _hessian_times(f, v, y=None, groups=None, *, pairs=None, weights=None, n_jobs=1):
    """Generalized Hessian (in f) of the squared-hinge pairwise loss at f, times v."""
    f = np.ascontiguousarray(f, dtype=np.float64)
    m = f.shape[0]
    kw = _structure(y, groups, pairs, weights, m)
    return _core.ranksvm_hessian_times(f, np.ascontiguousarray(v, dtype=np.float64), check_n_jobs(n_jobs), **kw)


# ---------------------------------------------------------------------------------------------
# Explicit-pairs oracles (written from the definition; O(#pairs) memory)
# ---------------------------------------------------------------------------------------------

def explicit_pairs(y, groups=None):
    """(head, tail): every (i, j) with y_i > y_j (inside a group)."""
    same = np.ones((y.size, y.size), bool) if groups is None else groups[:, None] == groups[None, :]
    head, tail = np.nonzero(same & (y[:, None] > y[None, :]))
    return head, tail


def brute_loss(f, head, tail, weight, loss):
    """Loss, gradient and generalized Hessian (active pairs: margin < 1) by double sums."""
    m = f.size
    L, g, H, act = 0.0, np.zeros(m), np.zeros((m, m)), 0.0
    for h, t, w in zip(head, tail, weight):
        z = 1.0 - (f[h] - f[t])
        if z <= 0:
            continue
        act += w
        if loss == "squared_hinge":
            L += w * z * z
            g[h] -= 2 * w * z
            g[t] += 2 * w * z
            H[h, h] += 2 * w
            H[t, t] += 2 * w
            H[h, t] -= 2 * w
            H[t, h] -= 2 * w
        else:
            L += w * z
            g[h] -= w
            g[t] += w
    return L, g, H, act


def incidence(head, tail, m):
    A = np.zeros((head.size, m))
    A[np.arange(head.size), head] = 1.0
    A[np.arange(head.size), tail] = -1.0
    return A


def qp_oracle(K, head, tail, weight, C, loss, margins=None):
    with threadpool_limits(1):  # small dense algebra: OpenBLAS threads only add contention
        return _qp_oracle(K, head, tail, weight, C, loss, np.ones(head.size) if margins is None else margins)


def _qp_oracle(K, head, tail, weight, C, loss, r):
    """beta of the explicit-pairs RankSVM in representer form (f = K beta) and its objective, with
    the loss l(r_e - (f_head - f_tail)) of pair e (r_e = 1: the usual RankSVM).

    Dual over pairs e (margin_e = (A K A^T alpha)_e, beta = A^T alpha):
    * squared hinge: the primal restricted to the active pairs is a linear system; finite Newton
      over active sets stops at the exact optimum (asserted self-consistent);
    * hinge: min 1/2 a^T P a - 1^T a, 0 <= a <= C w: L-BFGS-B, then the exact active-set finish
      (pairs with margin < 1 at C w, > 1 at 0, the rest solved by bounded least squares so that
      their margins are exactly 1), with the KKT conditions asserted.
    """
    m = K.shape[0]
    A = incidence(head, tail, m)
    P = A @ K @ A.T
    P = 0.5 * (P + P.T)
    if loss == "squared_hinge":
        # Finite Newton on the active set S (pairs with margin < 1): for fixed S the optimum is
        # beta = A_S^T a_S with (I + 2C W_S P_SS) a_S = 2C W_S 1; iterate until S reproduces itself,
        # which is then the exact KKT point (every active pair has margin < 1, every other >= 1).
        S = np.ones(head.size, bool)
        for _ in range(100):
            a = np.zeros(head.size)
            WS = weight[S]
            a[S] = np.linalg.solve(np.eye(S.sum()) + 2 * C * WS[:, None] * P[np.ix_(S, S)], 2 * C * WS * r[S])
            margin = P @ a
            S_new = margin < r
            if np.array_equal(S_new, S):
                break
            S = S_new
        else:
            raise AssertionError("the squared-hinge oracle did not settle on an active set")
        alpha = a
    else:
        ub = C * weight
        res = minimize(lambda a: (0.5 * a @ P @ a - r @ a, P @ a - r), np.zeros(head.size), jac=True,
                       method="L-BFGS-B", bounds=list(zip(np.zeros(head.size), ub)),
                       options=dict(maxiter=20000, ftol=1e-16, gtol=1e-11))
        alpha = None
        for delta in (1e-4, 1e-6, 1e-3, 1e-8, 1e-2):
            margin = P @ res.x
            low, high = margin < r - delta, margin > r + delta
            E = ~(low | high)
            a = np.where(low, ub, 0.0)
            if E.any():
                rhs = r[E] - P[np.ix_(E, ~E)] @ a[~E]
                sol = lsq_linear(P[np.ix_(E, E)], rhs, bounds=(np.zeros(E.sum()), ub[E]), method="bvls", tol=1e-14)
                a[E] = sol.x
            mg = P @ a
            scale = max(1.0, np.abs(mg).max())
            ok = (np.all(mg[low] < r[low] + 1e-9 * scale) and np.all(mg[high] > r[high] - 1e-9 * scale)
                  and np.all(np.abs(mg[E] - r[E]) < 1e-9 * scale))
            if ok:
                alpha = a
                break
        assert alpha is not None, "the hinge oracle could not certify an exact KKT point"
    beta = A.T @ alpha
    return beta, objective(K, beta, head, tail, weight, C, loss, r)


def objective(K, beta, head, tail, weight, C, loss, r=1.0):
    f = K @ beta
    z = np.maximum(0.0, r - (f[head] - f[tail]))
    return 0.5 * beta @ f + C * np.sum(weight * (z * z if loss == "squared_hinge" else z))


def linear_objective(X, w, head, tail, weight, C, loss, r=1.0):
    f = X @ w
    z = np.maximum(0.0, r - (f[head] - f[tail]))
    return 0.5 * w @ w + C * np.sum(weight * (z * z if loss == "squared_hinge" else z))


def rbf(X, Z, gamma):
    d = (X**2).sum(1)[:, None] + (Z**2).sum(1)[None, :] - 2 * X @ Z.T
    return np.exp(-gamma * np.maximum(d, 0))


@pytest.fixture
def data():
    rng = np.random.default_rng(3)
    m, n = 30, 4
    X = rng.normal(size=(m, n))
    y = np.round(X @ rng.normal(size=n) + 0.8 * rng.normal(size=m))  # integer targets: ties
    groups = rng.integers(0, 4, size=m) * 7 + 3  # non-contiguous ids
    return X, y, groups


LOSSES = ["squared_hinge", "hinge"]


# ---------------------------------------------------------------------------------------------
# The O(m log m) oracle equals brute-force sums
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("grouped", [False, True])
def test_oracle_equals_brute_force_with_ties(loss, grouped):
    rng = np.random.default_rng(11)
    m = 70
    y = rng.integers(0, 5, m).astype(float)          # ties in y
    f = rng.integers(-4, 5, m) * 0.5                  # ties in f, margins exactly 0 and 1
    groups = rng.integers(0, 5, m) if grouped else None
    head, tail = explicit_pairs(y, groups)
    w = np.ones(head.size)
    L, g, act, n_pairs = _pairwise_loss(f, y, groups, loss=loss)
    Lb, gb, Hb, actb = brute_loss(f, head, tail, w, loss)
    assert n_pairs == head.size
    assert act == actb
    np.testing.assert_allclose(L, Lb, rtol=1e-13)
    np.testing.assert_allclose(g, gb, rtol=1e-13, atol=1e-10)
    if loss == "squared_hinge":
        V = rng.normal(size=(m, 3))
        for v in V.T:
            np.testing.assert_allclose(_hessian_times(f, v, y, groups), Hb @ v, rtol=1e-10, atol=1e-10)


def test_oracle_random_scores_and_exact_margin_kink():
    """Continuous scores (no ties) and a pair exactly at margin 1 (not active, as in the brute force)."""
    rng = np.random.default_rng(5)
    m = 50
    y = rng.normal(size=m).round(1)
    f = rng.normal(size=m) * 2
    f[0] = np.round(f[0] * 4) / 4  # dyadic: f[1] - f[0] is exactly 1
    f[1] = f[0] + 1.0 if y[1] > y[0] else f[0] - 1.0
    head, tail = explicit_pairs(y)
    for loss in LOSSES:
        L, g, act, _ = _pairwise_loss(f, y, loss=loss)
        Lb, gb, Hb, actb = brute_loss(f, head, tail, np.ones(head.size), loss)
        np.testing.assert_allclose([L, act], [Lb, actb], rtol=1e-10)
        np.testing.assert_allclose(g, gb, rtol=1e-10, atol=1e-11)
    Hb = brute_loss(f, head, tail, np.ones(head.size), "squared_hinge")[2]
    v = rng.normal(size=m)
    np.testing.assert_allclose(_hessian_times(f, v, y), Hb @ v, rtol=1e-10, atol=1e-11)


def test_oracle_graph_weights_and_multiedges():
    rng = np.random.default_rng(8)
    m = 30
    pairs = rng.integers(0, m, size=(120, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    pairs = np.vstack([pairs, pairs[:5]])  # repeated edges add up
    weights = rng.uniform(0.0, 2.0, size=pairs.shape[0])
    f = rng.integers(-3, 4, m) * 0.5
    for loss in LOSSES:
        L, g, act, n_pairs = _pairwise_loss(f, pairs=pairs, weights=weights, loss=loss)
        Lb, gb, Hb, actb = brute_loss(f, pairs[:, 0], pairs[:, 1], weights, loss)
        np.testing.assert_allclose([L, act, n_pairs], [Lb, actb, weights.sum()], rtol=1e-10)
        np.testing.assert_allclose(g, gb, rtol=1e-10, atol=1e-10)
    Hb = brute_loss(f, pairs[:, 0], pairs[:, 1], weights, "squared_hinge")[2]
    v = rng.normal(size=m)
    np.testing.assert_allclose(_hessian_times(f, v, pairs=pairs, weights=weights), Hb @ v, rtol=1e-10, atol=1e-10)


def test_oracle_threaded_many_groups():
    """The threaded path (m >= 20000) equals per-group brute force, vectorized, and n_jobs=1."""
    rng = np.random.default_rng(2)
    q, size = 400, 50
    m = q * size
    groups = np.repeat(rng.permutation(q), size)
    y = rng.integers(0, 4, m).astype(float)
    f = rng.integers(-6, 7, m) * 0.25
    v = rng.normal(size=m)
    L1, g1, a1, _ = _pairwise_loss(f, y, groups, n_jobs=1)
    L2, g2, a2, _ = _pairwise_loss(f, y, groups, n_jobs=2)
    assert L1 == L2 and a1 == a2 and np.array_equal(g1, g2)
    Hv = _hessian_times(f, v, y, groups, n_jobs=2)
    Lb, ab, gb, hb = 0.0, 0.0, np.zeros(m), np.zeros(m)
    for gid in range(q):
        idx = np.flatnonzero(groups == gid)
        fy, yy, vv = f[idx], y[idx], v[idx]
        z = 1.0 - (fy[:, None] - fy[None, :])
        act = (yy[:, None] > yy[None, :]) & (z > 0)
        Z = np.where(act, z, 0.0)
        Lb += (Z**2).sum()
        ab += act.sum()
        gb[idx] = -2 * Z.sum(1) + 2 * Z.sum(0)
        S = (act | act.T).astype(float)
        hb[idx] = 2 * (S.sum(1) * vv - S @ vv)
    np.testing.assert_allclose(L1, Lb, rtol=1e-10)
    assert a1 == ab
    np.testing.assert_allclose(g1, gb, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(Hv, hb, rtol=1e-10, atol=1e-10)


# ---------------------------------------------------------------------------------------------
# Solvers equal the explicit-pairs QP
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("grouped", [False, True])
def test_linear_equals_explicit_pairs_qp(data, loss, grouped):
    X, y, groups = data
    g = groups if grouped else None
    head, tail = explicit_pairs(y, g)
    C = 0.3
    beta, obj = qp_oracle(X @ X.T, head, tail, np.ones(head.size), C, loss)
    w_star = X.T @ beta
    est = RankSVM(C=C, loss=loss, tol=1e-10).fit(X, y, g)
    assert est.converged_ and est.coef_.shape == (X.shape[1],)
    np.testing.assert_allclose(est.objective_, obj, rtol=1e-9)
    np.testing.assert_allclose(linear_objective(X, est.coef_, head, tail, np.ones(head.size), C, loss), obj,
                               rtol=1e-9)
    scale = np.abs(X @ w_star).max()
    np.testing.assert_allclose(est.predict(X), X @ w_star, atol=1e-6 * scale)
    assert est.n_pairs_ == head.size


@pytest.mark.parametrize("loss", LOSSES)
def test_linear_preference_graph_with_weights(data, loss):
    X, y, _ = data
    rng = np.random.default_rng(4)
    m = X.shape[0]
    pairs = rng.integers(0, m, size=(150, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    weights = rng.uniform(0.2, 2.0, size=pairs.shape[0])
    C = 0.5
    beta, obj = qp_oracle(X @ X.T, pairs[:, 0], pairs[:, 1], weights, C, loss)
    est = RankSVM(C=C, loss=loss, tol=1e-10).fit_preferences(X, pairs, weights)
    np.testing.assert_allclose(est.objective_, obj, rtol=1e-9)
    np.testing.assert_allclose(est.predict(X), X @ (X.T @ beta), atol=1e-6 * np.abs(X @ X.T @ beta).max())
    # unit weights are the default; a multigraph's repeated edge counts twice
    twice = np.vstack([pairs, pairs[:1]])
    a = RankSVM(C=C, loss=loss, tol=1e-10).fit_preferences(X, twice)
    ref = RankSVM(C=C, loss=loss, tol=1e-10).fit_preferences(X, pairs, np.r_[2.0, np.ones(len(pairs) - 1)])
    np.testing.assert_allclose(a.objective_, ref.objective_, rtol=1e-9)


@AT_FLOOR
@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("grouped", [False, True])
def test_kernel_equals_explicit_pairs_qp(data, loss, grouped):
    X, y, groups = data
    g = groups if grouped else None
    head, tail = explicit_pairs(y, g)
    C, gamma = 0.5, 0.3
    K = rbf(X, X, gamma)
    beta, obj = qp_oracle(K, head, tail, np.ones(head.size), C, loss)
    est = RankSVM(C=C, loss=loss, kernel="rbf", gamma=gamma, tol=1e-10).fit(X, y, g)
    assert est.coef_ is None and est.dual_coef_.shape == (X.shape[0],)
    np.testing.assert_allclose(est.objective_, obj, rtol=1e-9)
    np.testing.assert_allclose(objective(K, est.dual_coef_, head, tail, np.ones(head.size), C, loss), obj, rtol=1e-9)
    np.testing.assert_allclose(est.predict(X), K @ beta, atol=1e-5 * np.abs(K @ beta).max())
    Xt = np.random.default_rng(0).normal(size=(7, X.shape[1]))
    np.testing.assert_allclose(est.predict(Xt), rbf(Xt, X, gamma) @ est.dual_coef_, rtol=1e-10, atol=1e-10)
    # precomputed kernel: the same problem
    pre = RankSVM(C=C, loss=loss, kernel="precomputed", tol=1e-10).fit(K, y, g)
    np.testing.assert_allclose(pre.objective_, obj, rtol=1e-9)
    np.testing.assert_allclose(pre.predict(rbf(Xt, X, gamma)), est.predict(Xt), atol=1e-5 * np.abs(K @ beta).max())


@pytest.mark.parametrize("loss", LOSSES)
def test_kernel_preference_graph_poly(data, loss):
    X, _, _ = data
    rng = np.random.default_rng(9)
    m = X.shape[0]
    pairs = rng.integers(0, m, size=(100, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    weights = rng.uniform(0.5, 1.5, size=pairs.shape[0])
    K = (0.25 * X @ X.T + 1.0) ** 2
    C = 0.2
    beta, obj = qp_oracle(K, pairs[:, 0], pairs[:, 1], weights, C, loss)
    est = RankSVM(C=C, loss=loss, kernel="poly", degree=2, gamma=0.25, coef0=1.0, tol=1e-10)
    est.fit_preferences(X, pairs, weights)
    np.testing.assert_allclose(est.objective_, obj, rtol=1e-9)
    np.testing.assert_allclose(est.predict(X), K @ beta, atol=1e-5 * np.abs(K @ beta).max())


def test_squared_hinge_equals_linearsvc_on_difference_vectors(data):
    """The usual recipe: LinearSVC(squared hinge, no intercept) on +-(x_i - x_j); C per pair is the
    same C (each pair appears twice with the two signs, so LinearSVC gets C / 2)."""
    from sklearn.svm import LinearSVC

    X, y, groups = data
    head, tail = explicit_pairs(y, groups)
    D = X[head] - X[tail]
    Xd = np.vstack([D, -D])
    yd = np.r_[np.ones(len(D)), -np.ones(len(D))]
    C = 0.3
    svc = LinearSVC(loss="squared_hinge", C=C / 2, fit_intercept=False, dual=False, tol=1e-10, max_iter=100000)
    svc.fit(Xd, yd)
    est = RankSVM(C=C, tol=1e-10).fit(X, y, groups)
    ones = np.ones(head.size)
    np.testing.assert_allclose(est.objective_, linear_objective(X, svc.coef_[0], head, tail, ones, C, "squared_hinge"),
                               rtol=1e-8)
    np.testing.assert_allclose(est.coef_, svc.coef_[0], rtol=1e-5, atol=1e-7)


@AT_FLOOR
@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("index_dtype", [np.int32, np.int64])
def test_sparse_csr_equals_dense(data, loss, index_dtype):
    X, y, groups = data
    Xs = X.copy()
    Xs[np.abs(Xs) < 0.5] = 0.0
    S = sp.csr_matrix(Xs)
    S.indices = S.indices.astype(index_dtype)
    S.indptr = S.indptr.astype(index_dtype)
    dense = RankSVM(C=0.4, loss=loss, tol=1e-10).fit(Xs, y, groups)
    sparse = RankSVM(C=0.4, loss=loss, tol=1e-10).fit(S, y, groups)
    np.testing.assert_allclose(sparse.objective_, dense.objective_, rtol=1e-10)
    np.testing.assert_allclose(sparse.predict(S), dense.predict(Xs), atol=1e-6 * np.abs(dense.predict(Xs)).max())
    # sparse input to a kernel model is densified
    k1 = RankSVM(C=0.4, loss=loss, kernel="rbf", tol=1e-10).fit(S, y)
    k2 = RankSVM(C=0.4, loss=loss, kernel="rbf", tol=1e-10).fit(Xs, y)
    np.testing.assert_allclose(k1.predict(S), k2.predict(Xs), rtol=1e-10, atol=1e-10)


def test_n_jobs_does_not_change_a_large_kernel_model():
    """From 2^21 entries of K the kernel solvers' products with K run on several threads (below, on one): the model
    is the one-thread model, bit for bit (each entry of K p is one thread's dot product in a fixed order).  The kernel
    is given (precomputed): an rbf kernel computed with another BLAS thread count can differ by an ulp."""
    rng = np.random.default_rng(8)
    X = rng.normal(size=(1500, 5))
    y = np.round(X[:, 0] + 0.5 * rng.normal(size=1500))
    groups = np.repeat(np.arange(30), 50)
    K = rbf_kernel(X, gamma=0.2)
    a = RankSVM(C=0.1, kernel="precomputed", n_jobs=1).fit(K, y, groups)
    b = RankSVM(C=0.1, kernel="precomputed", n_jobs=2).fit(K, y, groups)
    assert a.n_iter_ == b.n_iter_
    np.testing.assert_array_equal(a.dual_coef_, b.dual_coef_)


def test_n_jobs_does_not_change_a_large_linear_model():
    """From 5,000 rows the pair sums and from 2^19 entries of X the products with X run on several threads (below, on
    one): the model is the one-thread model, bit for bit (X^T g is summed over fixed chunks of rows)."""
    rng = np.random.default_rng(9)
    X = rng.normal(size=(30000, 20))
    y = np.round(X[:, 0] + 0.5 * rng.normal(size=30000))
    groups = rng.integers(0, 300, size=30000)
    for loss in LOSSES:
        a = RankSVM(C=0.5, loss=loss, n_jobs=1).fit(X, y, groups)
        b = RankSVM(C=0.5, loss=loss, n_jobs=2).fit(X, y, groups)
        assert a.n_iter_ == b.n_iter_
        np.testing.assert_array_equal(a.coef_, b.coef_)


def test_n_jobs_and_row_order_do_not_change_the_model(data):
    X, y, groups = data
    a = RankSVM(C=0.3, n_jobs=1, tol=1e-10).fit(X, y, groups)
    b = RankSVM(C=0.3, n_jobs=2, tol=1e-10).fit(X, y, groups)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    p = np.random.default_rng(1).permutation(X.shape[0])
    c = RankSVM(C=0.3, tol=1e-10).fit(X[p], y[p], groups[p])
    np.testing.assert_allclose(c.coef_, a.coef_, rtol=1e-8, atol=1e-10)


def test_groups_change_the_problem(data):
    X, y, groups = data
    a = RankSVM(C=0.3).fit(X, y, groups)
    b = RankSVM(C=0.3).fit(X, y)
    assert a.n_pairs_ < b.n_pairs_ and np.abs(a.coef_ - b.coef_).max() > 1e-3


def test_score_is_one_minus_pairwise_disagreement(data):
    X, y, groups = data
    est = RankSVM(C=1.0).fit(X, y, groups)
    pred = est.predict(X)
    assert est.score(X, y, groups) == pytest.approx(1 - pairwise_disagreement(y, pred, groups, tied_scores="half"))
    with pytest.warns(MissingGroupsWarning, match="fitted on 4 query groups"):  # score without its groups
        assert est.score(X, y) == pytest.approx(1 - pairwise_disagreement(y, pred, tied_scores="half"))
        assert est.score(X, y) > 0.8


@pytest.mark.parametrize("loss", LOSSES)
def test_max_iter_warns_and_sets_n_iter(data, loss):
    X, y, _ = data
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        est = RankSVM(C=10.0, loss=loss, max_iter=1, tol=1e-14).fit(X, y)
    assert est.n_iter_ == 1 and not est.converged_
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = RankSVM(C=10.0, loss=loss).fit(X, y)
    assert est.converged_ and est.n_iter_ >= 1


# ---------------------------------------------------------------------------------------------
# The papers' variants: margins |y_i - y_j| (002 Sect. 5.2.1), C / |P| (003), warm-started C grids
# ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("grouped", [False, True])
def test_margin_difference_equals_explicit_pairs_qp(data, loss, grouped):
    """l((y_i - y_j) - (f_i - f_j)) over the pairs y_i > y_j: the explicit-pairs QP with margins
    r_e = y_head - y_tail."""
    X, y, groups = data
    g = groups if grouped else None
    head, tail = explicit_pairs(y, g)
    r = y[head] - y[tail]
    C = 0.3
    beta, obj = qp_oracle(X @ X.T, head, tail, np.ones(head.size), C, loss, margins=r)
    est = RankSVM(C=C, loss=loss, margin="difference", tol=1e-10).fit(X, y, g)
    assert est.converged_
    np.testing.assert_allclose(est.objective_, obj, rtol=1e-9)
    np.testing.assert_allclose(linear_objective(X, est.coef_, head, tail, np.ones(head.size), C, loss, r), obj,
                               rtol=1e-9)
    scale = np.abs(X @ (X.T @ beta)).max()
    np.testing.assert_allclose(est.predict(X), X @ (X.T @ beta), atol=1e-6 * scale)
    # unit margins are a different problem
    assert abs(RankSVM(C=C, loss=loss, tol=1e-10).fit(X, y, g).objective_ - obj) > 1e-3 * obj


def test_margin_difference_is_the_learner_A_h_with_lambda_mapping(data):
    """002 Sect. 5.2.1: A_h = argmin (1 / C(m, 2)) sum_{i<j} (|y_i - y_j| - (f_i - f_j) sgn(y_i - y_j))_+
    + lambda ||f||^2 is RankSVM(hinge, margin="difference") with C = 1 / (lambda m (m - 1)): the
    objectives differ by the factor 2 lambda, so they share the minimiser (checked against a
    generic minimiser of the paper's objective around the solution)."""
    X, y, _ = data
    m = X.shape[0]
    lam = 0.01
    est = RankSVM(C=1.0 / (lam * m * (m - 1)), loss="hinge", margin="difference", tol=1e-12).fit(X, y)
    i, j = np.triu_indices(m, 1)

    def paper_objective(w):
        f = X @ w
        lh = np.maximum(0.0, np.abs(y[i] - y[j]) - (f[i] - f[j]) * np.sign(y[i] - y[j]))
        return lh.sum() / (m * (m - 1) / 2) + lam * w @ w

    np.testing.assert_allclose(paper_objective(est.coef_), 2 * lam * est.objective_, rtol=1e-12)
    rng = np.random.default_rng(0)
    J = paper_objective(est.coef_)
    for _ in range(200):  # no direction decreases the paper's objective
        assert paper_objective(est.coef_ + 1e-4 * rng.normal(size=X.shape[1])) >= J - 1e-12 * J


def test_margin_difference_kernel(data):
    X, y, groups = data
    head, tail = explicit_pairs(y, groups)
    K = rbf(X, X, 0.3)
    beta, obj = qp_oracle(K, head, tail, np.ones(head.size), 0.5, "hinge", margins=y[head] - y[tail])
    est = RankSVM(C=0.5, loss="hinge", kernel="rbf", gamma=0.3, margin="difference", tol=1e-10).fit(X, y, groups)
    np.testing.assert_allclose(est.objective_, obj, rtol=1e-9)
    np.testing.assert_allclose(est.predict(X), K @ beta, atol=1e-5 * np.abs(K @ beta).max())


@pytest.mark.parametrize("loss", LOSSES)
def test_normalize_C_divides_by_the_number_of_pairs(data, loss):
    """003: 1/2 ||w||^2 + (C / |P|) sum_P xi; |P| = total weight for a preference graph."""
    X, y, groups = data
    head, tail = explicit_pairs(y, groups)
    C = 20.0
    _, obj = qp_oracle(X @ X.T, head, tail, np.ones(head.size), C / head.size, loss)
    est = RankSVM(C=C, loss=loss, normalize_C=True, tol=1e-10).fit(X, y, groups)
    np.testing.assert_allclose(est.objective_, obj, rtol=1e-9)
    rng = np.random.default_rng(2)
    pairs = rng.integers(0, X.shape[0], size=(80, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    wts = rng.uniform(0.5, 2.0, size=len(pairs))
    _, obj = qp_oracle(X @ X.T, pairs[:, 0], pairs[:, 1], wts, C / wts.sum(), loss)
    est = RankSVM(C=C, loss=loss, normalize_C=True, tol=1e-10).fit_preferences(X, pairs, wts)
    np.testing.assert_allclose(est.objective_, obj, rtol=1e-9)


@pytest.mark.parametrize("loss", LOSSES)
def test_ranksvm_path_equals_explicit_pairs_qp_for_every_C(data, loss, capsys):
    X, y, groups = data
    head, tail = explicit_pairs(y, groups)
    Cs = [3.0, 0.01, 0.3, 30.0]  # any order; the path visits them increasingly
    path = fastrank.ranksvm_path(X, y, Cs, groups, loss=loss, tol=1e-10)
    assert [e.C for e in path] == Cs
    for C, est in zip(Cs, path):
        _, obj = qp_oracle(X @ X.T, head, tail, np.ones(head.size), C, loss)
        assert est.converged_
        np.testing.assert_allclose(est.objective_, obj, rtol=1e-9)
        np.testing.assert_allclose(linear_objective(X, est.coef_, head, tail, np.ones(head.size), C, loss), obj,
                                   rtol=1e-9)
    sparse = fastrank.ranksvm_path(sp.csr_matrix(X), y, Cs, groups, loss=loss, tol=1e-10, verbose=2)
    for a, b in zip(sparse, path):
        np.testing.assert_allclose(a.objective_, b.objective_, rtol=1e-9)
    assert "ranksvm_path" in capsys.readouterr().err  # verbose progress, per value of C
    with pytest.raises(ValueError, match="linear"):
        fastrank.ranksvm_path(X, y, Cs, kernel="rbf")
    with pytest.raises(ValueError, match="Cs must be a non-empty 1-D sequence"):
        fastrank.ranksvm_path(X, y, [])


def test_ranksvm_path_warm_starts_in_the_rescaled_units(data):
    """X far from unit scale is solved rescaled by a power of two s (w' = s w): the warm start of
    each C must be carried into those units, giving the cold fits' models."""
    X, y, groups = data
    X = X * 2.0**60
    Cs = [2.0**-130, 2.0**-124, 2.0**-118]
    path = fastrank.ranksvm_path(X, y, Cs, groups, tol=1e-10)
    cold = [RankSVM(C=C, tol=1e-10).fit(X, y, groups) for C in Cs]
    for est, ref in zip(path, cold):
        np.testing.assert_allclose(est.objective_, ref.objective_, rtol=1e-9)
        np.testing.assert_allclose(est.coef_, ref.coef_, rtol=1e-6, atol=1e-6 * np.abs(ref.coef_).max())
    # a start in the wrong units is as far as w = 0: no Newton step would be saved
    assert sum(e.n_iter_ for e in path[1:]) < sum(e.n_iter_ for e in cold[1:])


def test_squared_hinge_reports_its_gradient_at_zero_and_a_warm_start_reuses_it(data):
    """The core reports grad0 = ||X^T dL/df|| at f = 0 (from the explicit pairs: a pair (i, j) adds -2 to f_i's
    entry, +2 to f_j's), the gradient of F at w = 0 over C; a warm start given it (``ranksvm_path`` passes it from C
    to C) takes the steps of the same warm start evaluating it."""
    X, y, groups = data
    X = np.ascontiguousarray(X)
    head, tail = explicit_pairs(y, groups)
    g = np.zeros(y.size)
    np.add.at(g, head, -2.0)
    np.add.at(g, tail, 2.0)
    kw = _structure(y, groups, None, None, y.size)
    first = _core.ranksvm_fit_dense(X, 3.0, _LOSSES["squared_hinge"], 1e-10, 100, 1, **kw)
    np.testing.assert_allclose(first["grad0"], np.linalg.norm(X.T @ g), rtol=1e-12)
    w0 = 0.5 * np.asarray(first["coef"])
    fresh = _core.ranksvm_fit_dense(X, 30.0, _LOSSES["squared_hinge"], 1e-10, 100, 1, **kw, w0=w0)
    reused = _core.ranksvm_fit_dense(X, 30.0, _LOSSES["squared_hinge"], 1e-10, 100, 1, **kw, w0=w0,
                                     grad0=first["grad0"])
    assert reused["n_iter"] == fresh["n_iter"] > 0 and reused["converged"]
    np.testing.assert_allclose(reused["coef"], fresh["coef"], rtol=1e-12)
    np.testing.assert_allclose(reused["grad0"], first["grad0"], rtol=1e-12)


@pytest.mark.parametrize("sparse", [False, True])
def test_hinge_in_groups_with_ties_takes_exact_newton_steps_and_meets_the_qp_oracle(sparse):
    """Where the smoothed hinge's band holds few pairs its Newton matrix I + (C/h) sum (x_i - x_j)(x_i - x_j)^T is
    formed from them and solved: one solve a Newton step (n_inner counts it), where conjugate gradients took up to
    min(band pairs, features) steps each (the wide bands of the first levels still take them).  The model is the
    explicit-pairs QP's to the certified tol."""
    rng = np.random.default_rng(3)
    m, d = 160, 10
    X = rng.standard_normal((m, d))
    y = np.round(X @ rng.standard_normal(d) + rng.standard_normal(m))  # ties inside the groups
    groups = np.repeat(np.arange(8), 20)
    kw = _structure(y, groups, None, None, m)
    if sparse:
        X[rng.random(X.shape) < 0.3] = 0.0
        y = np.round(X @ rng.standard_normal(d) + rng.standard_normal(m))
        kw = _structure(y, groups, None, None, m)
        S = sp.csr_matrix(X)
        out = _core.ranksvm_fit_csr(S.data, S.indices, S.indptr, m, d, 1.0, _LOSSES["hinge"], 1e-8, 1000, 1, **kw)
    else:
        out = _core.ranksvm_fit_dense(np.ascontiguousarray(X), 1.0, _LOSSES["hinge"], 1e-8, 1000, 1, **kw)
    assert out["converged"] and out["n_newton"] == 0  # certified by the smoothed Newton steps alone
    assert out["n_inner"] < 2 * out["n_iter"]  # conjugate gradients took 698 steps for 116 Newton steps
    head, tail = explicit_pairs(y, groups)
    beta, objective = qp_oracle(X @ X.T, head, tail, np.ones(head.size), 1.0, "hinge")
    np.testing.assert_allclose(out["objective"], objective, rtol=1e-7)
    np.testing.assert_allclose(out["coef"], X.T @ beta, rtol=1e-3, atol=1e-3 * np.abs(X.T @ beta).max())


@pytest.mark.parametrize("sparse", [False, True])
def test_hinge_with_many_features_takes_exact_newton_steps_where_they_cost_less(sparse):
    """The Newton matrix is formed from the band's k pairs where that (k p^2 / 2 + p^3 / 6 multiply-adds of level-3
    BLAS) costs less than 4 times the conjugate-gradient steps the last solve took: at 40 features of 160 rows the
    band's 30-60 pairs were above the fixed limit of 8m/p = 32 pairs, and 100 Newton steps took 1,908 conjugate-gradient
    steps (2,067 on CSR X).  The model is the explicit-pairs QP's to the certified tol."""
    rng = np.random.default_rng(3)
    m, d = 160, 40
    X = rng.standard_normal((m, d))
    y = np.round(X @ rng.standard_normal(d) / np.sqrt(d) * 3 + rng.standard_normal(m))  # ties inside the groups
    groups = np.repeat(np.arange(8), 20)
    if sparse:
        X[rng.random(X.shape) < 0.3] = 0.0
    kw = _structure(y, groups, None, None, m)

    def fit(max_iter):
        if sparse:
            S = sp.csr_matrix(X)
            return _core.ranksvm_fit_csr(S.data, S.indices, S.indptr, m, d, 1.0, _LOSSES["hinge"], 1e-8, max_iter, 1,
                                         **kw)
        return _core.ranksvm_fit_dense(np.ascontiguousarray(X), 1.0, _LOSSES["hinge"], 1e-8, max_iter, 1, **kw)

    newton = fit(100)  # smoothed Newton steps only: n_inner counts one a formed step, else the conjugate gradients
    assert newton["n_newton"] == 0 and newton["n_iter"] == 100 and newton["n_inner"] < 1.5 * newton["n_iter"]
    out = fit(1000)
    assert out["converged"]
    head, tail = explicit_pairs(y, groups)
    beta, objective = qp_oracle(X @ X.T, head, tail, np.ones(head.size), 1.0, "hinge")
    np.testing.assert_allclose(out["objective"], objective, rtol=1e-7)
    assert objective <= newton["objective"] <= objective * (1 + 1e-4)


def test_hinge_continuation_narrows_the_band_gently_after_a_hard_level():
    """After a level of n Newton steps the band narrows by at most 1 / (0.01 n) (3x from 30 steps): a 100x narrower band
    right after a hard level made Newton crawl (one query, 300 rows of 100 features: 686 steps, now about 190)."""
    rng = np.random.default_rng(1)
    X = rng.standard_normal((300, 100))
    y = X @ rng.standard_normal(100) + rng.standard_normal(300)
    est = RankSVM(loss="hinge", C=1.0).fit(X, y)
    assert est.converged_ and est.n_iter_ < 400
    np.testing.assert_allclose(est.objective_, RankSVM(loss="hinge", C=1.0, tol=1e-9).fit(X, y).objective_, rtol=1e-6)


def test_hinge_newton_continuation_runs_past_200_steps_where_it_will_certify():
    """The smoothed Newton solve runs past 200 steps (to half of max_iter, at most 500) while the smoothing term's decay
    predicts the certificate within them: 200 steps, then cutting planes, left 300 rows of 200 features at C = 10
    unconverged at the default max_iter; with the longer reach 389 steps.  The reference: tol = 1e-7."""
    C = 10.0
    rng = np.random.default_rng(1)
    X = rng.standard_normal((300, 200))
    y = X @ rng.standard_normal(200) + rng.standard_normal(300)
    est = RankSVM(loss="hinge", C=C).fit(X, y)
    assert est.converged_ and est.n_iter_ < 500
    reference = RankSVM(loss="hinge", C=C, tol=1e-7).fit(X, y)
    np.testing.assert_allclose(est.objective_, reference.objective_, rtol=2e-6)
    assert reference.objective_ <= est.objective_ * (1 + 1e-7)


@pytest.mark.parametrize("sparse", [False, True])
@pytest.mark.parametrize("seed, m, p, s, C", [(0, 32, 80, 4096.0, 100.0), (3, 32, 80, 4096.0, 100.0),
                                              (0, 32, 20, 1024.0, 1000.0)])
def test_hinge_at_a_large_C_times_feature_scale_reaches_the_hard_margin_optimum(sparse, seed, m, p, s, C):
    """Features of scale s at C are the problem of scale 1 at C s^2.  With more features than rows (or targets linear
    in X) the pairs separate, and the optimum is the hard-margin one, which the explicit-pairs oracle finds at scale 1
    and C = 1e4 (every margin met there, so it is optimal for every larger C).  At 4096 the cutting planes' lower bound
    reached it while their best point missed margins by ~1e-4 (x C: a warning at relative gaps of 1e-6 to 1e-5); at
    1024 (C = 1000) they claimed convergence at 1.46e-6 above it with F reported 5.8e-7 below its value (F at scores
    carried along the line searches, its rounding not counted).  The finish on the pairs at the margin meets it, with
    no margin missed even in numpy's rounding; on a weighted preference graph of the same pairs and on their
    precomputed kernel too (they stalled with a warning before)."""
    rng = np.random.default_rng(seed)
    X1 = rng.standard_normal((m, p))
    y = np.round(X1 @ rng.standard_normal(p))
    head, tail = np.nonzero(y[:, None] > y[None, :])
    beta, expected = qp_oracle(X1 @ X1.T, head, tail, np.ones(head.size), 1e4, "hinge")
    f = X1 @ (X1.T @ beta)
    assert np.all(f[head] - f[tail] >= 1 - 1e-9)  # the hard margin
    X = sp.csr_matrix(X1 * s) if sparse else X1 * s
    # the same pairs as a weighted preference graph: the hard-margin optimum is the same (alpha below C w)
    weights = rng.uniform(0.5, 2.0, head.size)
    for fit in (lambda est: est.fit(X, y), lambda est: est.fit_preferences(X, np.c_[head, tail], weights)):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            est = fit(RankSVM(C=C, loss="hinge"))
        assert est.converged_
        value = linear_objective(X1, est.coef_ * s, head, tail, 1.0, C * s * s, "hinge")
        np.testing.assert_allclose(value, expected, rtol=1e-8)
        np.testing.assert_allclose(est.objective_ * s * s, value, rtol=1e-12)  # the loss is 0: margins all met
        assert est.loss_ == 0.0
    if not sparse:  # the same problem in representer form, f = K beta (cutting planes only: it stalled too)
        K = (X1 * s) @ (X1 * s).T
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            est = RankSVM(C=C, loss="hinge", kernel="precomputed").fit(K, y)
        assert est.converged_
        value = objective(K, est.dual_coef_, head, tail, np.ones(head.size), C, "hinge") * s * s
        np.testing.assert_allclose(value, expected, rtol=1e-8)
        np.testing.assert_allclose(est.objective_ * s * s, value, rtol=1e-12)


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_hinge_on_identical_rows_stops_at_zero_at_once(kernel):
    """Every pair has x_i - x_j = 0: w = 0 is exact and found by the first cut (main ran hundreds
    of cutting planes here)."""
    X = np.ones((12, 3))
    y = np.arange(12.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.simplefilter("ignore", ConstantModelWarning)  # the optimum here ranks nothing, and says so
        est = RankSVM(loss="hinge", kernel=kernel, C=2.0).fit(X, y)
    assert est.converged_ and est.n_iter_ == 0
    coef = est.coef_ if kernel == "linear" else est.dual_coef_
    np.testing.assert_array_equal(coef, 0.0)
    assert est.objective_ == 2.0 * 66  # C * (number of pairs), each at loss 1


def test_variant_parameters_are_validated(data):
    X, y, _ = data
    with pytest.raises(ValueError, match="'margin' parameter of RankSVM"):
        RankSVM(margin="relative").fit(X, y)
    with pytest.raises(ValueError, match="'normalize_C' parameter of RankSVM"):
        RankSVM(normalize_C="yes").fit(X, y)
    with pytest.raises(ValueError, match="needs targets"):
        RankSVM(margin="difference").fit_preferences(X, [[0, 1], [2, 3]])


# ---------------------------------------------------------------------------------------------
# Hostile scales: never a silent w = 0 for an informative optimum
# ---------------------------------------------------------------------------------------------

def gradient_at_zero(y, groups, loss):
    """d loss / d f at f = 0 by the explicit double sum."""
    head, tail = explicit_pairs(y, groups)
    return brute_loss(np.zeros(y.size), head, tail, np.ones(head.size), loss)[1]


@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("C, scale", [(1.0, 1e-200), (1e-300, 1.0)])
def test_tiny_effective_C_gives_the_exact_small_C_solution(data, loss, C, scale):
    """C max|X|^2 ~ 1e-300..1e-400: every pair stays active, so the optimum is w = -C X^T grad(0)
    (exactly for the hinge, to double precision for the squared hinge); main returned 0 silently."""
    X, y, groups = data
    Xs = X * scale
    expected = -C * (Xs.T @ gradient_at_zero(y, groups, loss))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = RankSVM(C=C, loss=loss).fit(Xs, y, groups)
    assert est.converged_ and np.all(est.coef_ != 0)
    np.testing.assert_allclose(est.coef_, expected, rtol=1e-10)
    # the weights are exact, but at features of 1e-200 the scores X @ w (~1e-398) underflow to 0, and that is said
    assert [(w.category, "underflow" in str(w.message)) for w in caught] == \
        ([(ConstantModelWarning, True)] if scale < 1 else [])


@pytest.mark.parametrize("C, scale", [(1.0, 1e200), (1e300, 1.0)])
def test_huge_effective_C_gives_the_large_C_limit_with_a_warning(data, C, scale):
    """C max|X|^2 ~ 1e300..1e400 (squared hinge): the C -> infinity limit of the explicit-pairs QP
    (its solution at C = 1e8 on the unscaled X, to 1e-5), with a warning that C was capped."""
    X, y, groups = data
    head, tail = explicit_pairs(y, groups)
    beta, _ = qp_oracle(X @ X.T, head, tail, np.ones(head.size), 1e8, "squared_hinge")
    with pytest.warns(ConvergenceWarning, match="exceeds"):
        est = RankSVM(C=C).fit(X * scale, y, groups)
    np.testing.assert_allclose(est.coef_ * scale, X.T @ beta, rtol=1e-5)
    with pytest.warns(ConvergenceWarning, match="exceeds"):  # CSR input: the same rescaling
        sparse = RankSVM(C=C).fit(sp.csr_matrix(X * scale), y, groups)
    np.testing.assert_allclose(sparse.coef_, est.coef_, rtol=1e-10)


def test_one_huge_column_warns_instead_of_a_silent_zero(data):
    X, y, groups = data
    Xc = X.copy()
    Xc[:, 0] *= 1e300
    with pytest.warns(ConvergenceWarning, match="Standardize X"):
        est = RankSVM().fit(Xc, y, groups)
    assert est.coef_[0] != 0 and np.all(np.isfinite(est.coef_))


@pytest.mark.parametrize("C, scale", [(1.0, 1e200), (1e300, 1.0)])
def test_hinge_huge_effective_C_stops_on_the_stall_limit(data, C, scale):
    """main ran 47 s (X x 1e200) and over 300 s (C = 1e300): now the cap and the stall limit end
    the run within a few hundred cutting planes, with a ConvergenceWarning naming the gap."""
    X, y, groups = data
    with pytest.warns(ConvergenceWarning) as record:
        est = RankSVM(C=C, loss="hinge").fit(X * scale, y, groups)
    assert any("duality gap" in str(w.message) and "Standardize X" in str(w.message) for w in record)
    # at most 200 Newton steps of the smoothed hinge, then the cutting planes' stall limit
    assert est.n_iter_ <= 200 + 120 and np.all(np.isfinite(est.coef_)) and np.any(est.coef_ != 0)


def test_hinge_fallback_counts_newton_steps_and_cutting_planes_against_max_iter(data):
    """Where the smoothed Newton solve cannot certify the gap (X x 1e200: it stops after about 35 steps) the cutting
    planes finish with what is left of max_iter; n_iter_ and the warning count both kinds of steps."""
    X, y, groups = data
    for max_iter, steps in [(100, r"100 steps \(\d+ Newton iterations on the smoothed hinge, then cutting planes\)"),
                            (20, "20 Newton iterations")]:  # spent by the Newton steps: their best point
        with pytest.warns(ConvergenceWarning) as record:
            est = RankSVM(loss="hinge", max_iter=max_iter).fit(X * 1e200, y, groups)
        assert any(re.search(f"max_iter={steps} before", str(w.message)) for w in record)
        assert est.n_iter_ == max_iter and not est.converged_
        assert np.all(np.isfinite(est.coef_)) and est.objective_ < 0.5 * est.n_pairs_  # below F(0) = n_pairs


# ---------------------------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------------------------

def test_bad_input_raises_clear_errors(data):
    X, y, groups = data
    m = X.shape[0]
    Xn = X.copy()
    Xn[0, 0] = np.nan
    yn = y.copy()
    yn[3] = np.inf
    with pytest.raises(ValueError, match="NaN or infinity"):
        RankSVM().fit(Xn, y)
    with pytest.raises(ValueError, match="NaN or infinity"):
        RankSVM().fit(X, yn)
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        RankSVM().fit(X, y[:-1])
    with pytest.raises(ValueError, match="one group id per row"):
        RankSVM().fit(X, y, groups[:-1])
    with pytest.raises(ValueError, match="No preference pairs"):
        RankSVM().fit(X, np.ones(m))
    with pytest.raises(ValueError, match="No relevant pairs: every group has a single row"):
        RankSVM().fit(X, y, np.arange(m))  # was blamed on y "taking a single value inside any group"
    for C in (0.0, -1.0, np.inf):
        with pytest.raises(ValueError, match="C must be finite and > 0"):
            RankSVM(C=C).fit(X, y)
    with pytest.raises(ValueError, match="loss"):
        RankSVM(loss="l1").fit(X, y)
    with pytest.raises(ValueError, match="tol"):
        RankSVM(tol=-1).fit(X, y)
    with pytest.raises(ValueError, match="max_iter"):
        RankSVM(max_iter=0).fit(X, y)
    with pytest.raises(ValueError, match="Unknown kernel"):
        RankSVM(kernel="sigmoid").fit(X, y)
    with pytest.raises(ValueError, match="outside"):
        RankSVM().fit_preferences(X, [[0, 1], [2, m]])
    with pytest.raises(ValueError, match="outside"):
        RankSVM().fit_preferences(X, [[-1, 1]])
    with pytest.raises(ValueError, match="self-loop"):
        RankSVM().fit_preferences(X, [[0, 1], [4, 4]])
    with pytest.raises(ValueError, match="shape"):
        RankSVM().fit_preferences(X, [0, 1])
    with pytest.raises(ValueError, match="weights must have shape"):
        RankSVM().fit_preferences(X, [[0, 1]], [1.0, 2.0])
    with pytest.raises(ValueError, match="weights must be >= 0"):
        RankSVM().fit_preferences(X, [[0, 1]], [-1.0])
    with pytest.raises(ValueError, match="every weight is 0"):
        RankSVM().fit_preferences(X, [[0, 1]], [0.0])
    with pytest.raises(ValueError, match="square"):
        RankSVM(kernel="precomputed").fit(X, y)
    with pytest.raises(ValueError, match="features"):
        RankSVM().fit(X, y).predict(X[:, :2])


def test_failed_fit_leaves_model_unchanged(data):
    X, y, groups = data
    est = RankSVM(C=0.3).fit(X, y, groups)
    coef = est.coef_.copy()
    with pytest.raises(ValueError):
        est.fit(X, np.ones(X.shape[0]))
    with pytest.raises(ValueError):
        est.fit_preferences(X, [[0, 0]])
    np.testing.assert_array_equal(est.coef_, coef)


def test_memory_guard_before_kernel(data, monkeypatch):
    X, y, _ = data
    monkeypatch.setenv("FASTRANK_MAX_DENSE_BYTES", "1000")
    with pytest.raises(MemoryError, match="kernel matrix"):
        RankSVM(kernel="rbf").fit(X, y)
    RankSVM().fit(X, y)  # the linear solver allocates no m x m matrix


# ---------------------------------------------------------------------------------------------
# scikit-learn citizenship
# ---------------------------------------------------------------------------------------------

@parametrize_with_checks([RankSVM(), RankSVM(loss="hinge"), RankSVM(kernel="rbf", loss="hinge")])
def test_check_estimator(estimator, check):
    check(estimator)


def test_clone_and_pickle(data):
    X, y, groups = data
    est = RankSVM(C=2.0, loss="hinge", kernel="poly", degree=2, tol=1e-8)
    assert clone(est).get_params() == est.get_params()
    est.fit(X, y, groups)
    back = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(back.predict(X), est.predict(X))
    assert isinstance(fastrank.RankSVM(), RankSVM)


def test_gridsearch_routes_groups(data):
    X, y, groups = data
    seen = []

    class Spy(RankSVM):
        def fit(self, X, y, groups=None):
            seen.append(groups)
            return super().fit(X, y, groups)

    with sklearn.config_context(enable_metadata_routing=True):
        est = Spy().set_fit_request(groups=True).set_score_request(groups=True)
        search = GridSearchCV(est, {"C": [0.01, 1.0]}, cv=GroupKFold(n_splits=3))
        search.fit(X, y, groups=groups)
    assert search.best_params_["C"] in (0.01, 1.0)
    assert len(seen) == 2 * 3 + 1 and all(g is not None for g in seen)
    np.testing.assert_array_equal(seen[-1], groups)


# ---------------------------------------------------------------------------------------------
# Sparse RankSVM through the empirical kernel map (004 Sect. 4.4, eq. 43)
# ---------------------------------------------------------------------------------------------

def basis_oracle(K_mB, K_BB, head, tail, C, loss):
    """min over beta of 1/2 beta^T K_BB beta + C sum_P l(1 - (K_iB - K_jB) beta) with the pairs
    listed explicitly, by a generic solver started at zero: L-BFGS-B on the smooth squared hinge;
    for the hinge the QP with one slack per pair (xi >= 0, xi >= 1 - D beta) by SLSQP, then
    polished by the exact solve of the active pairs' KKT system."""
    D = K_mB[head] - K_mB[tail]
    r = K_BB.shape[0]

    def obj(b):
        z = np.maximum(0.0, 1.0 - D @ b)
        return 0.5 * b @ K_BB @ b + C * np.sum(z * z if loss == "squared_hinge" else z)

    if loss == "squared_hinge":
        def grad(b):
            z = np.maximum(0.0, 1.0 - D @ b)
            return K_BB @ b - 2.0 * C * D.T @ z
        res = minimize(obj, np.zeros(r), jac=grad, method="L-BFGS-B",
                       options=dict(ftol=1e-16, gtol=1e-13, maxiter=20000, maxcor=50))
        return res.x, obj(res.x)
    p = D.shape[0]
    x0 = np.concatenate([np.zeros(r), np.ones(p)])
    cons = [{"type": "ineq", "fun": lambda x: x[r:] - 1.0 + D @ x[:r],
             "jac": lambda x: np.hstack([D, np.eye(p)])}]
    res = minimize(lambda x: 0.5 * x[:r] @ K_BB @ x[:r] + C * x[r:].sum(), x0,
                   jac=lambda x: np.concatenate([K_BB @ x[:r], np.full(p, C)]), method="SLSQP",
                   bounds=[(None, None)] * r + [(0, None)] * p, constraints=cons,
                   options=dict(ftol=1e-15, maxiter=2000))
    # Polish: pairs at the margin (1 - D beta = 0) stay there, pairs with positive slack carry the
    # full weight C; the stationarity K_BB beta = sum_P alpha_p D_p then fixes beta and alpha.
    b = res.x[:r]
    z = 1.0 - D @ b
    on = np.abs(z) <= 1e-6
    out = z > 1e-6
    A = np.block([[K_BB, -D[on].T], [D[on], np.zeros((on.sum(), on.sum()))]])
    rhs = np.concatenate([C * D[out].sum(0), np.ones(on.sum())])
    sol = np.linalg.lstsq(A, rhs, rcond=None)[0]
    alpha = sol[r:]
    if np.all((alpha >= -1e-9) & (alpha <= C + 1e-9)) and obj(sol[:r]) <= obj(b):
        b = sol[:r]
    return b, obj(b)


@AT_FLOOR
@pytest.mark.parametrize("loss", LOSSES)
@pytest.mark.parametrize("kernel", ["rbf", "linear"])
@pytest.mark.parametrize("grouped", [False, True])
def test_basis_vectors_equal_explicit_pairs_minimiser(data, loss, kernel, grouped):
    X, y, groups = data
    groups = groups if grouped else None
    basis = np.array([2, 5, 11, 17, 23, 29]) if kernel == "rbf" else np.array([1, 8, 20])
    C = 0.4
    est = RankSVM(C=C, loss=loss, kernel=kernel, gamma=0.4, basis_vectors=basis, tol=1e-12,
                  max_iter=5000).fit(X, y, groups)
    K_mB = rbf(X, X[basis], 0.4) if kernel == "rbf" else X @ X[basis].T
    head, tail = explicit_pairs(y, groups)
    beta_ref, obj_ref = basis_oracle(K_mB, K_mB[basis], head, tail, C, loss)
    f = est.predict(X)
    z = np.maximum(0.0, 1.0 - (f[head] - f[tail]))
    if kernel == "rbf":
        np.testing.assert_array_equal(est.basis_indices_, basis)
        np.testing.assert_array_equal(est.X_fit_, X[basis])
        assert est.dual_coef_.shape == (basis.size,) and est.coef_ is None
        beta = est.dual_coef_
        np.testing.assert_allclose(f, K_mB @ beta, rtol=1e-12, atol=1e-12)
        obj = 0.5 * beta @ K_mB[basis] @ beta + C * np.sum(z * z if loss == "squared_hinge" else z)
    else:  # only the weight vector X_B^T beta is kept; ||w||^2 = beta^T K_BB beta
        assert est.X_fit_ is None and est.coef_.shape == (X.shape[1],)
        w = est.coef_
        obj = 0.5 * w @ w + C * np.sum(z * z if loss == "squared_hinge" else z)
    assert abs(obj - obj_ref) <= 1e-9 * obj_ref
    assert abs(est.objective_ - obj_ref) <= 1e-9 * obj_ref
    np.testing.assert_allclose(f, K_mB @ beta_ref, rtol=1e-5, atol=1e-5 * np.abs(f).max())


@AT_FLOOR
@pytest.mark.parametrize("loss", LOSSES)
def test_basis_vectors_every_row_equals_full_kernel_ranksvm(data, loss):
    X, y, groups = data
    kw = dict(C=0.7, loss=loss, kernel="rbf", gamma=0.3, tol=1e-12, max_iter=5000)
    full = RankSVM(**kw).fit(X, y, groups)
    sparse = RankSVM(**kw, basis_vectors=X.shape[0]).fit(X, y, groups)
    np.testing.assert_array_equal(sparse.basis_indices_, np.arange(X.shape[0]))
    assert abs(sparse.objective_ - full.objective_) <= 1e-9 * full.objective_
    np.testing.assert_allclose(sparse.predict(X), full.predict(X), rtol=1e-6, atol=1e-6)


def test_basis_vectors_precomputed_equals_rbf_and_random_state(data):
    X, y, groups = data
    a = RankSVM(C=0.5, kernel="rbf", gamma=0.3, basis_vectors=7, random_state=4, tol=1e-10).fit(X, y, groups)
    b = RankSVM(C=0.5, kernel="rbf", gamma=0.3, basis_vectors=7, random_state=4, tol=1e-10).fit(X, y, groups)
    np.testing.assert_array_equal(a.basis_indices_, b.basis_indices_)
    assert a.basis_indices_.size == 7
    K = rbf(X, X, 0.3)
    pre = RankSVM(C=0.5, kernel="precomputed", basis_vectors=a.basis_indices_, tol=1e-10).fit(K, y, groups)
    assert pre.X_fit_ is None and pre.dual_coef_.shape == (7,)
    Z = np.random.default_rng(0).normal(size=(5, X.shape[1]))
    np.testing.assert_allclose(pre.predict(rbf(Z, X, 0.3)), a.predict(Z), rtol=1e-9, atol=1e-9)
    with pytest.raises(ValueError, match="column"):
        pre.predict(rbf(Z, X[:7], 0.3))


def test_basis_vectors_preference_graph_equals_oracle(data):
    X, y, _ = data
    head, tail = explicit_pairs(y)
    pairs = np.stack([head, tail], 1)[::3]
    basis = np.array([0, 4, 9, 13, 21])
    est = RankSVM(C=0.6, kernel="rbf", gamma=0.5, basis_vectors=basis, tol=1e-12).fit_preferences(X, pairs)
    K_mB = rbf(X, X[basis], 0.5)
    _, obj_ref = basis_oracle(K_mB, K_mB[basis], pairs[:, 0], pairs[:, 1], 0.6, "squared_hinge")
    assert abs(est.objective_ - obj_ref) <= 1e-9 * obj_ref


def test_basis_vectors_singular_kernel_matrix_is_refused(data):
    X, y, groups = data
    est = RankSVM(C=0.3, kernel="rbf", basis_vectors=[0, 1, 2]).fit(X, y, groups)
    before = est.predict(X)
    X2 = X.copy()
    X2[5] = X2[3]  # duplicate basis rows: K_BB singular
    with pytest.raises(ValueError, match="basis_vectors.*singular"):
        est.set_params(basis_vectors=[3, 5, 8]).fit(X2, y, groups)
    np.testing.assert_array_equal(est.predict(X), before)  # the failed fit left the model as it was
    with pytest.raises(ValueError, match="singular"):  # linear kernel: more basis rows than features
        RankSVM(basis_vectors=6).fit(X, y)
    for bad in (0, X.shape[0] + 1, [1, 1], [100]):
        with pytest.raises(ValueError, match="basis_vectors"):
            RankSVM(kernel="rbf", basis_vectors=bad).fit(X, y)


def test_basis_vectors_model_file_stores_only_the_basis(data, tmp_path):
    X, y, groups = data
    est = RankSVM(C=0.5, kernel="rbf", gamma=0.3, basis_vectors=6, random_state=1).fit(X, y, groups)
    path = tmp_path / "basis.frk"
    fastrank.save(est, path)
    back = fastrank.load(path)
    np.testing.assert_array_equal(back.predict(X), est.predict(X))
    np.testing.assert_array_equal(back.basis_indices_, est.basis_indices_)
    assert back.X_fit_.shape == (6, X.shape[1]) and back.dual_coef_.shape == (6,)
    again = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(again.predict(X), est.predict(X))
    assert clone(est).get_params() == est.get_params()


@parametrize_with_checks([RankSVM(kernel="rbf", basis_vectors=[0, 1, 2], loss="hinge")])
def test_check_estimator_basis_vectors(estimator, check):
    check(estimator)


@AT_FLOOR
@pytest.mark.parametrize("kernel", ["rbf", "linear"])
def test_basis_vectors_sparse_input_equals_dense(data, kernel):
    X, y, groups = data
    X = np.where(X < -0.5, 0.0, X)
    basis = [1, 3, 5, 7] if kernel == "linear" else [0, 2, 4, 6, 8, 10, 12, 14, 16, 18]
    kw = dict(C=0.5, kernel=kernel, gamma=0.3, basis_vectors=basis, tol=1e-12)
    a = RankSVM(**kw).fit(sp.csr_matrix(X), y, groups)
    b = RankSVM(**kw).fit(X, y, groups)
    np.testing.assert_allclose(a.predict(sp.csr_matrix(X)), b.predict(X), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(a.predict(X), b.predict(X), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("kwargs", [{}, {"loss": "hinge"}, {"kernel": "rbf"}, {"kernel": "rbf", "basis_vectors": 10, "random_state": 0}])
def test_verbose_reports_the_solve(kwargs, capsys):
    rng = np.random.default_rng(5)
    X = rng.normal(size=(40, 3))
    y = X[:, 0] + 0.3 * rng.normal(size=40)
    quiet = RankSVM(**kwargs).fit(X, y)
    assert capsys.readouterr().err == ""
    loud = RankSVM(verbose=1, **kwargs).fit(X, y)
    err = capsys.readouterr().err
    assert "RankSVM" in err and f"{loud.n_iter_} " in err and "objective" in err
    np.testing.assert_array_equal(loud.predict(X), quiet.predict(X))


def test_pair_weights_of_any_scale_are_the_model_of_C():
    """Weights k w with C are weights w with k C: huge weights gave a zero model blamed on rounding, where the same
    problem through C was capped and solved; weights whose sum overflows are refused by name."""
    rng = np.random.default_rng(33)
    X = rng.normal(size=(10, 2))
    P = np.array([[0, 1], [2, 3], [4, 5], [6, 7], [1, 2]])
    w = rng.uniform(0.1, 3.0, 5)
    for k in (2.0 ** -40, 3.0, 1e200):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)  # C * max|X|^2 capped at 1e20 for k = 1e200
            a = RankSVM(C=2.0 * k).fit_preferences(X, P, w)
            b = RankSVM(C=2.0).fit_preferences(X, P, w * k)
        np.testing.assert_allclose(b.coef_, a.coef_, rtol=1e-12)
        assert b.objective_ == pytest.approx(a.objective_, rel=1e-12)
        assert b.loss_ == pytest.approx(a.loss_ * k, rel=1e-12) and b.n_pairs_ == pytest.approx(w.sum() * k)
    with pytest.raises(ValueError, match="weights sum to more than float64 holds; rescale them"):
        RankSVM().fit_preferences(X, P, [1e308, 1e308, 1, 1, 1])


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
@pytest.mark.parametrize("s", [1e-200, 1e-120, 2.0 ** 40, 1e120, 1e154])
def test_difference_margins_of_any_scale(kernel, s):
    """margin="difference" is homogeneous in (w, y): targets y s give s times the model of y, with the same C for the
    squared hinge and C / s for the hinge (targets near 1e-200 ran to max_iter with coefficients 1e36 too large, near
    1e154 gave w = 0 and a NaN objective_)."""
    rng = np.random.default_rng(37)
    X, y = rng.normal(size=(12, 2)), np.arange(12.0)
    coef = (lambda e: e.coef_) if kernel == "linear" else (lambda e: e.dual_coef_)
    for loss, C in (("squared_hinge", 1.0), ("hinge", 1e-100 * s if s < 1 else 1.0)):
        ref = RankSVM(margin="difference", loss=loss, kernel=kernel, tol=1e-9, C=C / s ** (loss == "hinge"))
        est = RankSVM(margin="difference", loss=loss, kernel=kernel, tol=1e-9, C=C)
        ref.fit(X, y)
        est.fit(X, y * s)
        assert est.converged_
        np.testing.assert_allclose(coef(est) / s, coef(ref), rtol=1e-11, atol=1e-11 * np.abs(coef(ref)).max())
        if 1e-150 < s < 1e150:  # objective_ and loss_ scale as s^2 (and s): representable
            assert est.loss_ / s ** (2 if loss == "squared_hinge" else 1) == pytest.approx(ref.loss_, rel=1e-11)
            assert est.objective_ / s ** 2 == pytest.approx(ref.objective_, rel=1e-11)
        assert not np.isnan(est.objective_)


@pytest.mark.parametrize("make", [lambda X: (RankSVM(kernel="precomputed"), -(X @ X.T)),
                                  lambda X: (RankSVM(kernel="precomputed", loss="hinge"), -(X @ X.T)),
                                  lambda X: (RankSVM(kernel="poly", coef0=-5.0, degree=3), X)])
def test_an_indefinite_kernel_is_refused_as_svrank_refuses_it(make):
    # 1/2 beta^T K beta is unbounded below: a zero or arbitrary model came back, its warning blaming rounding
    rng = np.random.default_rng(18)
    X, y = rng.normal(size=(20, 3)), rng.integers(0, 3, 20).astype(float)
    est, data = make(X)
    with pytest.raises(ValueError, match=r"RankSVM: the kernel matrix is not positive semidefinite"):
        est.fit(data, y)
    semidefinite = RankSVM(kernel="precomputed").fit(X @ X.T, y)  # the linear kernel, precomputed: the same model
    a, b = semidefinite.predict(X @ X.T), RankSVM().fit(X, y).predict(X)
    np.testing.assert_allclose(a - a.mean(), b - b.mean(), rtol=1e-6, atol=1e-6 * np.abs(b).max())


def test_an_indefinite_kernel_is_refused_where_the_hinge_would_report_convergence():
    # the cutting planes' duality gap assumes K >= 0: on this negative definite K they stopped "converged" with a model
    # that ordered every training pair wrongly; about 40 % of random indefinite 10 x 10 matrices did so
    rng = np.random.default_rng(7)
    X, y = rng.normal(size=(12, 3)), rng.integers(0, 3, 12).astype(float)
    with pytest.raises(ValueError, match=r"RankSVM: the kernel matrix is not positive semidefinite"):
        RankSVM(kernel="precomputed", loss="hinge").fit(-(X @ X.T) - 10 * np.eye(12), y)
    for _ in range(20):
        A = rng.normal(size=(10, 10))
        K = (A + A.T) / 2 - 3 * np.eye(10)
        with pytest.raises(ValueError, match=r"RankSVM: the kernel matrix is not positive semidefinite"):
            RankSVM(kernel="precomputed", loss="hinge").fit(K, rng.integers(0, 3, 10).astype(float))


def test_a_model_that_ranks_nothing_warns():
    from fastrank import RankBoost, SVRank
    rng = np.random.default_rng(6)
    y = rng.integers(0, 3, 20).astype(float)
    X = rng.normal(size=(20, 3))
    X[1] = X[0]
    for fit in (lambda: RankSVM().fit(np.ones((20, 3)), y), lambda: SVRank().fit(np.ones((20, 3)), y),
                lambda: RankBoost().fit(np.ones((20, 3)), y), lambda: RankSVM().fit_preferences(X, [[0, 1]]),
                lambda: RankBoost().fit_preferences(X, [[0, 1]])):
        with pytest.warns(ConstantModelWarning, match="scores every row alike, so its predictions rank nothing: no "
                                                      "feature separates the rows"):
            fit()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        RankSVM().fit(X, y), SVRank().fit(X, y), RankBoost().fit(X, y)
