"""SVRank (Cortes, Mohri, Rastogi §2.4, eq. 9 with cost (7)) against an explicit-pairs QP."""

import pickle
import warnings

import numpy as np
import pytest
import sklearn
from scipy.optimize import minimize
from sklearn.base import clone
from sklearn.metrics.pairwise import rbf_kernel
from sklearn.model_selection import GridSearchCV, GroupKFold
from sklearn.utils.estimator_checks import parametrize_with_checks
from threadpoolctl import threadpool_limits

import fastrank
from fastrank.exceptions import ConstantModelWarning
from fastrank import SVRank
from fastrank import _core
from fastrank._validation import check_n_jobs
from fastrank.exceptions import ConvergenceWarning
from oracles import no_preference_case
from fastrank.metrics import pairwise_disagreement

# tol below what double precision resolves: the solve stops at its rounding floor with converged_ False and says so
AT_FLOOR = pytest.mark.filterwarnings("ignore:.*double precision's rounding:sklearn.exceptions.ConvergenceWarning")


def pair_loss(residuals, epsilon, offsets=None, n_jobs=None):
    """``sum_q sum_{i,j in q} max(0, |r_j - r_i| - epsilon)`` over ordered pairs and its
    subgradient with respect to ``r`` (rows grouped contiguously by ``offsets``; None: one group).

    O(m log m): one sort per group and a two-pointer pass with prefix sums.  Returns (loss, g).
    """
    r = np.ascontiguousarray(residuals, dtype=np.float64).reshape(-1)
    offsets = np.array([0, r.size], dtype=np.int64) if offsets is None else np.asarray(offsets, dtype=np.int64)
    return _core.svrank_pair_loss(r, np.arange(r.size), offsets, float(epsilon), check_n_jobs(n_jobs))


# ---------------------------------------------------------------------------------------------
# Slow, obvious oracles written from the paper's definition
# ---------------------------------------------------------------------------------------------


def brute_pair_loss(r, eps, groups=None):
    """sum over ordered pairs (i, j) in the same group of max(0, |r_j - r_i| - eps) and dL/dr."""
    r = np.asarray(r, dtype=float)
    same = np.ones((r.size, r.size), bool) if groups is None else (groups[:, None] == groups[None, :])
    d = r[None, :] - r[:, None]  # d[i, j] = r_j - r_i
    L = (np.maximum(0.0, np.abs(d) - eps) * same).sum()
    h = np.where((np.abs(d) > eps) & same, np.sign(d), 0.0)  # h'(d) with 0 at the kinks
    return L, h.sum(axis=0) - h.sum(axis=1)


def pair_incidence(groups, m):
    """Unordered pairs i < j in the same group: rows e_j - e_i of E."""
    gr = np.zeros(m) if groups is None else np.asarray(groups)
    I, J = np.triu_indices(m, 1)
    keep = gr[I] == gr[J]
    I, J = I[keep], J[keep]
    E = np.zeros((I.size, m))
    E[np.arange(I.size), J] = 1.0
    E[np.arange(I.size), I] = -1.0
    return E


def explicit_objective(beta, K, y, C, eps, groups=None):
    """F = beta^T K beta + C/N * sum over ordered same-group pairs of the eps-insensitive cost."""
    f = K @ beta
    n_pairs = y.size ** 2 if groups is None else sum(np.sum(groups == g) ** 2 for g in np.unique(groups))
    return beta @ f + C / n_pairs * brute_pair_loss(f - y, eps, groups)[0]


def explicit_qp(K, y, C, eps, groups=None):
    """The explicit-pairs QP: one slack per pair (each unordered pair weighs 2 C / N: it appears
    twice in the ordered double sum), solved in its dual
        max_theta  -1/4 theta^T G theta + theta^T z - eps |theta|_1,   |theta_p| <= u,
    G = E K E^T (the paper's pair kernel K_ij,kl), z = E y, beta = 1/2 E^T theta; by L-BFGS-B on
    theta = s - t with s, t in [0, u], then polished by solving the KKT system of the identified
    active pairs exactly.  Returns (beta, objective, dual lower bound)."""
    m = y.size
    E = pair_incidence(groups, m)
    n_pairs = m * m if groups is None else sum(np.sum(groups == g) ** 2 for g in np.unique(groups))
    u = 2.0 * C / n_pairs
    G = E @ K @ E.T
    z = E @ y
    P = z.size

    def fun(v):
        s, t = v[:P], v[P:]
        th = s - t
        Gt = G @ th
        val = 0.25 * th @ Gt - th @ z + eps * (s.sum() + t.sum())
        gs = 0.5 * Gt - z + eps
        gt = -0.5 * Gt + z + eps
        return val, np.concatenate([gs, gt])

    with threadpool_limits(1):  # tiny BLAS calls: threads only add contention
        res = minimize(fun, np.zeros(2 * P), jac=True, method="L-BFGS-B", bounds=[(0.0, u)] * (2 * P),
                       options={"maxiter": 400, "maxfun": 800, "ftol": 1e-16, "gtol": 1e-14, "maxcor": 10})
    theta = res.x[:P] - res.x[P:]

    def dual_value(th):
        th = np.clip(th, -u, u)  # any point of the box gives a lower bound (weak duality)
        return -0.25 * th @ G @ th + th @ z - eps * np.abs(th).sum()

    lower = dual_value(theta)
    beta = 0.5 * E.T @ theta
    best = explicit_objective(beta, K, y, C, eps, groups)
    scale = max(1.0, np.abs(z).max())
    # Polish: pairs beyond the tube carry |theta| = u, pairs on its boundary solve
    # E_K f - z_K = eps * sign exactly, pairs inside carry nothing (KKT of the slack form);
    # re-identify from each improved point.
    for _ in range(6):
        t_res = E @ (K @ beta) - z
        improved = False
        for delta in (1e-9, 1e-7, 1e-5, 1e-3):
            on = np.abs(np.abs(t_res) - eps) <= delta * scale
            out = (np.abs(t_res) > eps) & ~on
            mu = np.zeros(P)
            mu[out] = u * np.sign(t_res[out])
            if on.any():
                rhs = z[on] + eps * np.sign(t_res[on]) + 0.5 * G[np.ix_(on, out)] @ mu[out]
                mu[on] = np.linalg.lstsq(-0.5 * G[np.ix_(on, on)], rhs, rcond=None)[0]
            cand = -0.5 * E.T @ mu
            F = explicit_objective(cand, K, y, C, eps, groups)
            lower = max(lower, dual_value(-mu))
            if F < best:
                best, beta, improved = F, cand, True
        if not improved:
            break
    return beta, best, lower


def make_data(m, n, seed, n_groups=None):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, n))
    y = X @ rng.normal(size=n) + 0.5 * rng.normal(size=m)
    y = np.round(y * 2) / 2  # ties in y
    groups = None if n_groups is None else rng.integers(0, n_groups, size=m) * 7 + 3
    return X, y, groups


# ---------------------------------------------------------------------------------------------
# O(m log m) oracle
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("eps", [0.0, 0.5, 1.0, 2.5])
@pytest.mark.parametrize("grouped", [False, True])
def test_pair_loss_equals_double_sum(eps, grouped):
    rng = np.random.default_rng(3)
    m = 200
    r = rng.integers(-6, 7, size=m).astype(float) * 0.5  # many ties, differences hit eps exactly
    r[:50] = rng.normal(size=50) * 3.0
    groups = rng.integers(0, 9, size=m) if grouped else None
    if grouped:
        order = np.argsort(groups, kind="stable")
        r, groups = r[order], groups[order]
        offsets = np.concatenate([[0], np.cumsum(np.bincount(groups))])
    else:
        offsets = None
    L, g = pair_loss(r, eps, offsets)
    Lb, gb = brute_pair_loss(r, eps, groups)
    assert L == pytest.approx(Lb, rel=1e-12, abs=1e-12)
    np.testing.assert_array_equal(g, gb)


def test_pair_loss_large_and_threaded():
    """Large groups (radix path), values closer than float32 resolution (exact re-sorting of runs
    of equal float keys), many groups over threads: equal to the double sum, whatever n_jobs."""
    rng = np.random.default_rng(4)
    m = 3000
    r = 1.0 + rng.integers(0, 40, size=m) * 1e-12 + np.round(rng.normal(size=m) * 4) / 4
    r[:500] = -r[:500]
    r[500:600] = rng.normal(size=100) * 1e-40  # tiny values, all of one sign pattern in float32
    for eps in (0.0, 1e-12, 0.25):
        L, g = pair_loss(r, eps, n_jobs=1)
        Lb, gb = brute_pair_loss(r, eps)
        assert L == pytest.approx(Lb, rel=1e-12)
        np.testing.assert_array_equal(g, gb)
    groups = np.sort(rng.integers(0, 40, size=m))
    offsets = np.concatenate([[0], np.cumsum(np.bincount(groups))])
    L1, g1 = pair_loss(r, 0.25, offsets, n_jobs=1)
    L2, g2 = pair_loss(r, 0.25, offsets, n_jobs=3)
    Lb, gb = brute_pair_loss(r, 0.25, groups)
    assert L1 == L2 and L1 == pytest.approx(Lb, rel=1e-12)
    np.testing.assert_array_equal(g1, g2)
    np.testing.assert_array_equal(g1, gb)


def test_pair_loss_threaded_over_groups():
    """Where m log2(m / groups) reaches 45,000 the groups are summed on several threads (below, on one: a thread's
    start cost more); here 20,000 rows in groups of 50: the threaded sums equal one thread's and per-group brute force,
    exactly for the gradient."""
    rng = np.random.default_rng(7)
    q, size = 400, 50
    m = q * size
    r = np.round(rng.normal(size=m) * 4) / 4  # ties and differences hitting epsilon exactly
    groups = np.repeat(np.arange(q), size)
    offsets = np.arange(0, m + 1, size)
    for eps in (0.0, 0.25):
        L1, g1 = pair_loss(r, eps, offsets, n_jobs=1)
        L2, g2 = pair_loss(r, eps, offsets, n_jobs=2)
        assert L1 == L2
        np.testing.assert_array_equal(g1, g2)
        Lb, gb = 0.0, np.zeros(m)
        for k in range(q):
            part = slice(k * size, (k + 1) * size)
            Lk, gk = brute_pair_loss(r[part], eps)
            Lb += Lk
            gb[part] = gk
        assert L1 == pytest.approx(Lb, rel=1e-12)
        np.testing.assert_array_equal(g1, gb)


def test_linear_oracle_is_scaled_subgradient():
    rng = np.random.default_rng(5)
    X, y, _ = make_data(60, 4, 5)
    w = rng.normal(size=4)
    R, grad = fastrank._core.svrank_linear_oracle(X, y, w, np.arange(60), np.array([0, 60]), 2.0, 0.3, 1)
    L, g = brute_pair_loss(X @ w - y, 0.3)
    assert R == pytest.approx(2.0 / 3600 * L, rel=1e-12)
    np.testing.assert_allclose(grad, X.T @ g * 2.0 / 3600, rtol=1e-12, atol=1e-15)


# ---------------------------------------------------------------------------------------------
# The solver equals the explicit-pairs QP
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("eps", [0.0, 0.1, 1.0])
@pytest.mark.parametrize("kernel", ["linear", "rbf"])
@pytest.mark.parametrize("grouped", [False, True])
def test_equals_explicit_pairs_qp(eps, kernel, grouped):
    m = 20 if grouped else 16
    X, y, groups = make_data(m, 3, 11 + int(10 * eps), n_groups=3 if grouped else None)
    Xt = np.random.default_rng(1).normal(size=(7, 3))
    C = 30.0
    if kernel == "linear":
        K, Kt = X @ X.T, Xt @ X.T
    else:
        K, Kt = rbf_kernel(X, X, gamma=0.5), rbf_kernel(Xt, X, gamma=0.5)
    beta_ref, F_ref, lower = explicit_qp(K, y, C, eps, groups)
    assert (F_ref - lower) <= 1e-9 * F_ref  # the oracle itself is certified optimal
    est = SVRank(C=C, epsilon=eps, kernel=kernel, gamma=0.5, tol=1e-11, max_iter=2000).fit(X, y, groups)
    if kernel == "linear":
        F = explicit_objective_linear(est.coef_, X, y, C, eps, groups)
    else:
        F = explicit_objective(est.dual_coef_, K, y, C, eps, groups)
    assert F == pytest.approx(est.objective_, rel=1e-9)
    assert F >= lower * (1 - 1e-12)  # weak duality against the explicit QP's dual
    assert F == pytest.approx(F_ref, rel=1e-9)
    scale = np.abs(K @ beta_ref).max()
    np.testing.assert_allclose(est.predict(X), K @ beta_ref, atol=3e-4 * scale)
    np.testing.assert_allclose(est.predict(Xt), Kt @ beta_ref, atol=3e-4 * scale)
    # the solution is not trivial: some pairs are outside the tube, some inside
    assert np.abs(est.predict(X)).max() > 1e-3


def test_long_run_with_dropped_planes_equals_explicit_qp():
    """A weakly regularised kernel problem needs tens of planes (OCAS line search), more than the
    20 idle rounds after which a plane is dropped from the model; the certified optimum is still
    the explicit QP's."""
    X, y, _ = make_data(30, 3, 5)
    K = rbf_kernel(X, X, gamma=0.5)
    beta_ref, F_ref, lower = explicit_qp(K, y, 300.0, 0.1)
    assert (F_ref - lower) <= 1e-9 * F_ref
    est = SVRank(C=300.0, epsilon=0.1, kernel="rbf", gamma=0.5, tol=1e-11, max_iter=3000).fit(X, y)
    assert est.n_iter_ > 40
    assert explicit_objective(est.dual_coef_, K, y, 300.0, 0.1) == pytest.approx(F_ref, rel=1e-9)
    np.testing.assert_allclose(est.predict(X), K @ beta_ref, atol=1e-4 * np.abs(K @ beta_ref).max())


def explicit_objective_linear(w, X, y, C, eps, groups=None):
    f = X @ w
    n_pairs = y.size ** 2 if groups is None else sum(np.sum(groups == g) ** 2 for g in np.unique(groups))
    return w @ w + C / n_pairs * brute_pair_loss(f - y, eps, groups)[0]


# At a large C, F(0) reaches 1e5 times F*: a gap relative to the achievable decrease F(0) - lower alone had accepted
# models 0.3% (Gaussian, 20 rows) to 1.1% (30 x 60, features of scale 1e3, C = 1e8) above F* as converged.  With
# fewer rows than features every y fits, no pair lies outside the tube at the optimum and the pairs on its edges
# number hundreds (the hard tube): the cutting planes had stopped 0.4-1.6% above F* after 1,000 planes.
LARGE_C_CASES = [  # (seed, m, n, noise, C, epsilon, groups, form); "x1000": features of scale 1e3
    (0, 40, 60, 0.0, 1e4, 0.1, None, "linear"),
    (0, 30, 60, 0.3, 1e8, 0.1, None, "x1000"),
    (0, 40, 60, 0.3, 1e5, 0.1, None, "linear"),
    (1, 30, 100, 0.3, 1e3, 0.1, None, "linear"),
    (0, 40, 60, 0.3, 1e5, 0.1, None, "precomputed"),
    (2, 36, 60, 0.3, 1e4, 0.1, 3, "linear"),
    (21, 20, 8, 0.3, 1e4, 0.5, None, "linear"),
    (3, 20, 3, 0.3, 1e5, 0.1, None, "rbf"),
]


@pytest.mark.parametrize("seed,m,n,noise,C,eps,n_groups,form", LARGE_C_CASES)
def test_large_C_converges_to_the_optimum(seed, m, n, noise, C, eps, n_groups, form):
    rng = np.random.default_rng(seed)
    if seed == 21:  # found by a seeded search that drew the case first: the same draws give the same data
        drawn = (int(rng.choice([16, 20, 24, 30])), int(rng.choice([2, 3, 5, 8])), float(rng.choice([1e3, 1e4, 1e5])),
                 float(rng.choice([0.1, 0.5])))
        assert drawn == (m, n, C, eps)
    X = rng.standard_normal((m, n))
    y = X @ rng.standard_normal(n) + noise * rng.standard_normal(m)
    X *= 1e3 if form == "x1000" else 1.0
    groups = None if n_groups is None else np.arange(m) % n_groups
    K = rbf_kernel(X, X, gamma=0.5) if form == "rbf" else X @ X.T
    _, F_ref, lower = explicit_qp(K, y, C, eps, groups)
    # the oracle is certified optimal; at features of scale 1e3 its primal point is not, but its dual bound is exact
    if form == "x1000":
        F_ref = lower
    else:
        assert (F_ref - lower) <= 1e-9 * F_ref
    if form in ("linear", "x1000"):
        est = SVRank(C=C, epsilon=eps, tol=1e-6).fit(X, y, groups)
        F = explicit_objective_linear(est.coef_, X, y, C, eps, groups)
    else:
        kernel = dict(kernel="rbf", gamma=0.5) if form == "rbf" else dict(kernel="precomputed")
        est = SVRank(C=C, epsilon=eps, tol=1e-6, **kernel).fit(X if form == "rbf" else K, y, groups)
        F = explicit_objective(est.dual_coef_, K, y, C, eps, groups)
    assert est.converged_ and est.gap_ <= 1e-6  # and no ConvergenceWarning (an error here)
    assert F == pytest.approx(est.objective_, rel=1e-10)  # beta^T K beta: the flows' cancellation, 1.4e-12
    assert F >= lower * (1 - 1e-12)  # weak duality
    assert F == pytest.approx(F_ref, rel=1e-6)  # what converged at tol 1e-6 promises
    if m < n or form == "rbf":  # every y fits: the hard tube's solve is exact
        assert F == pytest.approx(F_ref, rel=1e-9)


def test_precomputed_equals_rbf():
    X, y, groups = make_data(30, 3, 2, n_groups=4)
    a = SVRank(C=5.0, kernel="rbf", gamma=0.3, tol=1e-10).fit(X, y, groups)
    K = rbf_kernel(X, X, gamma=0.3)
    b = SVRank(C=5.0, kernel="precomputed", tol=1e-10).fit(K, y, groups)
    Xt = np.random.default_rng(0).normal(size=(5, 3))
    np.testing.assert_allclose(a.predict(Xt), b.predict(rbf_kernel(Xt, X, gamma=0.3)), rtol=1e-6, atol=1e-8)
    assert a.objective_ == pytest.approx(b.objective_, rel=1e-9)


def test_group_order_does_not_matter():
    X, y, groups = make_data(40, 3, 8, n_groups=5)
    a = SVRank(C=10.0, tol=1e-11).fit(X, y, groups)
    perm = np.random.default_rng(0).permutation(40)
    b = SVRank(C=10.0, tol=1e-11).fit(X[perm], y[perm], groups[perm])
    assert a.objective_ == pytest.approx(b.objective_, rel=1e-9)
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-4, atol=1e-6)


def test_groups_change_the_model():
    X, y, groups = make_data(40, 3, 8, n_groups=5)
    y = y + 3.0 * (groups % 2)  # per-group offsets only matter without groups
    a = SVRank(C=10.0).fit(X, y, groups).coef_
    b = SVRank(C=10.0).fit(X, y).coef_
    assert np.abs(a - b).max() > 1e-3


def test_large_epsilon_gives_zero_model():
    X, y, _ = make_data(20, 3, 1)
    with pytest.warns(ConstantModelWarning, match="an epsilon above every target difference"):
        est = SVRank(epsilon=np.ptp(y) + 1.0).fit(X, y)
    np.testing.assert_array_equal(est.coef_, 0.0)
    assert est.objective_ == 0.0 and est.n_iter_ == 1


def test_simplex_qp_against_enumeration():
    """The inner QP (max b'l - l'Ql/4 on the simplex) against KKT on every support set."""
    rng = np.random.default_rng(0)
    for trial in range(20):
        k, n = rng.integers(2, 7), rng.integers(1, 4)
        A = rng.normal(size=(n, k))
        Q = A.T @ A  # rank <= n < k: singular on purpose
        b = rng.normal(size=k)
        val, lam = fastrank._core.simplex_qp(Q, b, np.eye(k)[0])
        assert lam.min() >= 0 and lam.sum() == pytest.approx(1.0)
        # the best value over a fine grid of random simplex points never beats it
        pts = rng.dirichlet(np.ones(k) * 0.3, size=20000)
        vals = pts @ b - 0.25 * np.einsum("ij,jk,ik->i", pts, Q, pts)
        assert vals.max() <= val + 1e-12
        # KKT: grad_i = Q l / 2 - b equal on the support, >= elsewhere
        g = 0.5 * Q @ lam - b
        nu = g[lam > 1e-12].mean()
        assert np.all(g >= nu - 1e-9) and np.allclose(g[lam > 1e-12], nu, atol=1e-9)


# ---------------------------------------------------------------------------------------------
# Conventions: convergence, score, bad input, scikit-learn citizenship
# ---------------------------------------------------------------------------------------------


def test_max_iter_warns_and_keeps_best_point():
    X, y, _ = make_data(60, 5, 3)
    with pytest.warns(ConvergenceWarning, match="max_iter=3"):
        est = SVRank(C=100.0, epsilon=0.0, max_iter=3, tol=1e-12).fit(X, y)
    assert est.n_iter_ == 3 and not est.converged_ and est.gap_ > 1e-12
    full = SVRank(C=100.0, epsilon=0.0, tol=1e-10).fit(X, y)
    assert full.converged_ and full.gap_ <= 1e-10 and full.objective_ <= est.objective_


def test_score_is_one_minus_disagreement():
    X, y, groups = make_data(50, 3, 4, n_groups=4)
    est = SVRank(C=10.0).fit(X, y, groups)
    assert est.score(X, y, groups) == pytest.approx(1 - pairwise_disagreement(y, est.predict(X), groups, tied_scores="half"))
    with pytest.warns(fastrank.exceptions.MissingGroupsWarning, match="fitted on 4 query groups"):  # without groups
        assert est.score(X, y) == pytest.approx(1 - pairwise_disagreement(y, est.predict(X), tied_scores="half"))


@pytest.mark.parametrize(
    "kwargs, fit_args, match",
    [
        ({"C": 0.0}, None, "C must be finite and > 0"),
        ({"C": -1.0}, None, "C must be finite and > 0"),
        ({"epsilon": -0.1}, None, "epsilon.*range"),
        ({"epsilon": np.nan}, None, "epsilon.*range"),
        ({"max_iter": 0}, None, "max_iter"),
        ({"kernel": "sigmoid"}, None, "Unknown kernel"),
        ({}, "nan_X", "NaN or infinity"),
        ({}, "inf_y", "NaN or infinity"),
        ({}, "short_y", "inconsistent numbers of samples"),
        ({}, "singletons", "No relevant pair"),
        ({}, "bad_groups", "groups has"),
        ({}, "y2d", "one target column"),
    ],
)
def test_bad_input(kwargs, fit_args, match):
    X, y, _ = make_data(12, 3, 0)
    groups = None
    if fit_args == "nan_X":
        X[2, 1] = np.nan
    elif fit_args == "inf_y":
        y[3] = np.inf
    elif fit_args == "short_y":
        y = y[:-1]
    elif fit_args == "singletons":
        groups = np.arange(12)
    elif fit_args == "bad_groups":
        groups = np.zeros(5)
    elif fit_args == "y2d":
        y = np.c_[y, y]
    fitted = SVRank().fit(*make_data(12, 3, 1)[:2])
    before = fitted.coef_.copy()
    with pytest.raises(ValueError, match=match):
        fitted.set_params(**kwargs).fit(X, y, groups)
    np.testing.assert_array_equal(fitted.coef_, before)  # a failed fit leaves the model as it was


def test_predict_bad_input():
    X, y, _ = make_data(12, 3, 0)
    est = SVRank().fit(X, y)
    with pytest.raises(ValueError, match="features"):
        est.predict(X[:, :2])
    with pytest.raises(ValueError, match="NaN"):
        est.predict(np.full((2, 3), np.nan))
    pre = SVRank(kernel="precomputed").fit(X @ X.T, y)
    with pytest.raises(ValueError, match="one column per training row"):
        pre.predict(np.ones((3, 5)))


@parametrize_with_checks([SVRank(), SVRank(kernel="rbf", epsilon=0.0, C=10.0)])
def test_check_estimator(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        check(estimator)


def test_clone_and_pickle():
    X, y, groups = make_data(30, 3, 6, n_groups=3)
    est = SVRank(C=3.0, epsilon=0.2, kernel="poly", degree=2, tol=1e-8)
    assert clone(est).get_params() == est.get_params()
    est.fit(X, y, groups)
    back = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(back.predict(X), est.predict(X))


def test_gridsearch_with_routed_groups():
    X, y, groups = make_data(90, 4, 7, n_groups=9)
    seen = []

    class Spy(SVRank):
        def fit(self, X, y, groups=None):
            seen.append(groups)
            return super().fit(X, y, groups)

    with sklearn.config_context(enable_metadata_routing=True):
        est = Spy().set_fit_request(groups=True).set_score_request(groups=True)
        search = GridSearchCV(est, {"C": [0.1, 10.0], "epsilon": [0.0, 0.5]}, cv=GroupKFold(n_splits=3))
        search.fit(X, y, groups=groups)
    assert len(seen) == 4 * 3 + 1 and all(g is not None for g in seen)
    assert search.best_score_ > 0.6


# ---------------------------------------------------------------------------------------------
# Hostile input: nothing to learn raises; tiny effective C never gives a silent w = 0
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
@pytest.mark.parametrize("case", ["constant", "tied_in_groups", "single_rows"])
def test_no_preferences_raises_like_rankrls(kernel, case):
    X, y, _ = make_data(24, 3, 4)
    y, groups, match = no_preference_case(case, y)
    with pytest.raises(ValueError, match=match):
        fastrank.RankRLS(kernel=kernel).fit(X, y, groups)
    with pytest.raises(ValueError, match=match):
        SVRank(kernel=kernel).fit(X, y, groups)


def _first_order_optimum(X, y, C, eps):
    """For C -> 0 no pair leaves or enters the tube, R is linear near 0 with slope (C/N) X^T g0
    (g0 = dL/dr at r = -y, no pair exactly on the tube's edge), so the optimum of ||w||^2 + R(w) is
    w* = -(C/2N) X^T g0 exactly (eq. 9 with the cost (7))."""
    _, g0 = brute_pair_loss(-y, eps)
    return -0.5 * C / y.size ** 2 * (X.T @ g0)


@pytest.mark.parametrize("x_scale, y_scale, C", [(1e-200, 1.0, 1.0), (1.0, 1.0, 1e-100)])
def test_tiny_effective_C_gives_the_exact_nonzero_optimum(x_scale, y_scale, C):
    X, y, _ = make_data(30, 3, 9)
    X, y = X * x_scale, y * y_scale
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = SVRank(C=C, epsilon=0.1, tol=1e-10).fit(X, y)
    # exact weights; at features of 1e-200 their scores underflow to 0, which is said
    assert [(w.category, "underflow" in str(w.message)) for w in caught] == \
        ([(ConstantModelWarning, True)] if x_scale < 1 else [])
    ref = _first_order_optimum(X, y, C, 0.1)
    assert np.abs(ref).max() > 0
    np.testing.assert_allclose(est.coef_, ref, rtol=1e-9)
    assert est.converged_


def test_large_y_scale_gives_a_nonzero_model():
    """y * 1e150 with epsilon = 0.1: the decrease is ~1e-150 of F(0); the model must not be w = 0."""
    X, y, _ = make_data(30, 3, 9)
    y = y + np.arange(30) * 1e-3  # no ties: every pair stays outside the tube at the optimum
    est = SVRank(C=1.0, epsilon=0.1, tol=1e-10).fit(X, y * 1e150)
    ref = _first_order_optimum(X, y * 1e150, 1.0, 0.1)
    assert np.abs(est.coef_).max() > 0
    np.testing.assert_allclose(est.coef_, ref, rtol=1e-9)


def test_verbose_reports_the_solve(capsys):
    X, y, _ = make_data(30, 3, 2)
    SVRank(C=10.0, kernel="rbf", verbose=1).fit(X, y)
    err = capsys.readouterr().err
    assert "SVRank kernel matrix" in err and "SVRank cutting planes" in err and "gap" in err
    SVRank(C=10.0).fit(X, y)
    assert capsys.readouterr().err == ""


# ---------------------------------------------------------------------------------------------
# The squared epsilon-insensitive cost (000 §2.2, eq. 7 with n = 2)
# ---------------------------------------------------------------------------------------------

SQUARED = "squared_epsilon_insensitive"


def brute_squared_pair_loss(r, eps, groups=None):
    """sum over ordered same-group pairs of max(0, |r_j - r_i| - eps)^2, dL/dr and the Hessian
    (4 x the Laplacian of the pairs outside the tube), by double sums."""
    r = np.asarray(r, dtype=float)
    same = np.ones((r.size, r.size), bool) if groups is None else (groups[:, None] == groups[None, :])
    d = r[None, :] - r[:, None]  # d[i, j] = r_j - r_i
    h = np.maximum(0.0, np.abs(d) - eps) * same
    dh = 2.0 * np.sign(d) * h  # h2'(r_j - r_i)
    outside = ((np.abs(d) > eps) & same).astype(float)
    H = 4.0 * (np.diag(outside.sum(1)) - outside)
    return (h * h).sum(), dh.sum(axis=0) - dh.sum(axis=1), H


@pytest.mark.parametrize("m, n_groups", [(60, None), (700, None), (300, 5)])
def test_squared_pair_loss_equals_double_sum(m, n_groups):
    rng = np.random.default_rng(m)
    r = np.round(rng.normal(size=m) * 4) / 4  # ties, and differences exactly at eps
    groups = None if n_groups is None else np.sort(rng.integers(0, n_groups, size=m))
    offsets = np.array([0, m]) if groups is None else np.r_[0, np.flatnonzero(np.diff(groups)) + 1, m]
    v = rng.normal(size=m)
    L, g, Hv = _core.svrank_squared_pair_loss(r, np.arange(m), offsets.astype(np.int64), 0.5, 2, v)
    Lb, gb, H = brute_squared_pair_loss(r, 0.5, groups)
    assert abs(L - Lb) <= 1e-12 * Lb
    np.testing.assert_allclose(g, gb, rtol=1e-12, atol=1e-12 * np.abs(gb).max())
    np.testing.assert_allclose(Hv, H @ v, rtol=1e-12, atol=1e-12 * np.abs(H @ v).max())
    L1, g1, none = _core.svrank_squared_pair_loss(r, np.arange(m), offsets.astype(np.int64), 0.5, 1)
    assert none is None and L1 == L and np.array_equal(g1, g)


def squared_explicit_minimiser(K, y, C, eps, groups=None):
    """min over beta of beta^T K beta + C/N sum over ordered same-group pairs of
    max(0, |(f_j - f_i) - (y_j - y_i)| - eps)^2, f = K beta, with the pairs formed explicitly
    (pair incidence E, differences E f - E y), by L-BFGS-B from zero.  Returns the minimum."""
    m = y.size
    E = pair_incidence(groups, m)  # unordered pairs: each is two ordered pairs of equal cost
    n_pairs = m * m if groups is None else sum(np.sum(groups == g) ** 2 for g in np.unique(groups))
    c = 2.0 * C / n_pairs
    Ey = E @ y

    def fun(beta):
        f = K @ beta
        z = E @ f - Ey
        h = np.maximum(0.0, np.abs(z) - eps)
        return beta @ f + c * h @ h, 2.0 * f + c * K @ (E.T @ (2.0 * np.sign(z) * h))

    res = minimize(fun, np.zeros(m), jac=True, method="L-BFGS-B",
                   options=dict(ftol=1e-16, gtol=1e-14, maxiter=50000, maxcor=50))
    return res.fun


@AT_FLOOR
@pytest.mark.parametrize("kernel", ["linear", "rbf"])
@pytest.mark.parametrize("grouped", [False, True])
@pytest.mark.parametrize("eps", [0.0, 0.3])
def test_squared_cost_equals_explicit_pairs_minimiser(kernel, grouped, eps):
    X, y, groups = make_data(36, 4, 11, n_groups=3 if grouped else None)
    C = 20.0
    est = SVRank(C=C, epsilon=eps, loss=SQUARED, kernel=kernel, gamma=0.3, tol=1e-12).fit(X, y, groups)
    K = X @ X.T if kernel == "linear" else rbf_kernel(X, gamma=0.3)
    ref = squared_explicit_minimiser(K, y, C, eps, groups)
    assert est.converged_ == (est.gap_ <= est.tol) and est.gap_ <= 1e-8  # converged_: whether tol was reached
    if kernel == "linear":
        w = est.coef_
        f = X @ w
        reg = w @ w
    else:
        beta = est.dual_coef_
        f = K @ beta
        reg = beta @ f
    n_pairs = y.size ** 2 if groups is None else sum(np.sum(groups == g) ** 2 for g in np.unique(groups))
    obj = reg + C / n_pairs * brute_squared_pair_loss(f - y, eps, groups)[0]
    assert abs(obj - ref) <= 1e-9 * ref
    assert abs(est.objective_ - ref) <= 1e-9 * ref
    np.testing.assert_allclose(est.predict(X), f, rtol=1e-12, atol=1e-12 * np.abs(f).max())


@AT_FLOOR
def test_squared_cost_differs_from_the_linear_cost_and_precomputed_equals_rbf():
    X, y, groups = make_data(40, 3, 12, n_groups=4)
    sq = SVRank(C=5.0, loss=SQUARED, kernel="rbf", gamma=0.5, tol=1e-10).fit(X, y, groups)
    lin = SVRank(C=5.0, kernel="rbf", gamma=0.5, tol=1e-10).fit(X, y, groups)
    assert np.abs(sq.predict(X) - lin.predict(X)).max() > 1e-3
    pre = SVRank(C=5.0, loss=SQUARED, kernel="precomputed", tol=1e-10).fit(rbf_kernel(X, gamma=0.5), y, groups)
    Z = np.random.default_rng(1).normal(size=(6, 3))
    np.testing.assert_allclose(pre.predict(rbf_kernel(Z, X, gamma=0.5)), sq.predict(Z), rtol=1e-7, atol=1e-9)


def test_squared_cost_large_epsilon_gives_zero_model_and_max_iter_warns():
    X, y, groups = make_data(30, 3, 13)
    with pytest.warns(ConstantModelWarning):
        est = SVRank(loss=SQUARED, epsilon=1e6).fit(X, y)
    assert est.n_iter_ == 0 and np.all(est.coef_ == 0.0) and est.converged_
    with pytest.warns(ConvergenceWarning, match="Newton iterations"):
        est = SVRank(C=1e4, loss=SQUARED, tol=1e-14, max_iter=1).fit(X, y)
    assert not est.converged_ and est.n_iter_ == 1
    with pytest.raises(ValueError, match="loss"):
        SVRank(loss="squared").fit(X, y)


def test_squared_cost_clone_pickle_and_model_file(tmp_path):
    X, y, groups = make_data(30, 3, 14, n_groups=3)
    est = SVRank(C=3.0, loss=SQUARED, kernel="rbf", gamma=0.2).fit(X, y, groups)
    assert clone(est).get_params() == est.get_params()
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(est)).predict(X), est.predict(X))
    fastrank.save(est, tmp_path / "sq.frk")
    back = fastrank.load(tmp_path / "sq.frk")
    assert back.loss == SQUARED
    np.testing.assert_array_equal(back.predict(X), est.predict(X))


@parametrize_with_checks([SVRank(loss=SQUARED), SVRank(loss=SQUARED, kernel="rbf", epsilon=0.0, C=10.0)])
def test_check_estimator_squared_cost(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        check(estimator)


def test_squared_cost_solves_small_C_and_small_features():
    """At a small C (or features of small scale) F ~ c L(-y) cannot resolve the O(c^2) decrease of the first Newton
    step: u = 0 came back, every prediction tied.  The model is then -(c / 2) Z^T grad L(-y) to first order in c:
    proportional to C, the same direction at every small C, and X s with C gives the model of X with C s^2 over s."""
    rng = np.random.default_rng(20)
    X = rng.normal(size=(30, 3))
    y = X @ [1.0, -1.0, 0.5] + 0.3 * rng.normal(size=30)
    ref = SVRank(loss=SQUARED, C=1e-12).fit(X, y).coef_ / 1e-12
    for C in (1e-16, 1e-30):
        est = SVRank(loss=SQUARED, C=C).fit(X, y)
        assert est.converged_
        np.testing.assert_allclose(est.coef_ / C, ref, rtol=1e-6)
    est = SVRank(loss=SQUARED, C=0.01).fit(X * 1e-9, y)
    np.testing.assert_allclose(est.coef_ * 1e-9, SVRank(loss=SQUARED, C=0.01 * 1e-18).fit(X, y).coef_, rtol=1e-9)
