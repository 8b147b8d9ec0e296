"""On-line MPRank (Cortes, Mohri & Rastogi, section 2.5) against the batch closed form (eq. 13)."""

import warnings

import numpy as np
import pytest

import fastrank
from fastrank import OnlineMPRank
from fastrank.exceptions import ConvergenceWarning
from oracles import no_preference_case


def batch_mprank_eq13(X, y, Z, C, kern):
    """h(x') = C' K'(I + Kbar)^-1 (y - ybar), eqs. 11-14 transcribed literally."""
    m = X.shape[0]
    Cp = 2.0 * C / m
    K = kern(X, X)
    Kbar = Cp * (K - K.mean(1)[:, None] - K.mean(1)[None, :] + K.mean())
    Kz = kern(Z, X)
    Kprime = Kz - Kz.mean(1)[:, None]
    return Cp * Kprime @ np.linalg.solve(np.eye(m) + Kbar, y - y.mean())


def pair_objective(h, y, w2, C):
    m = y.size
    D = (h[None, :] - h[:, None]) - (y[None, :] - y[:, None])
    return w2 + C / m**2 * (D**2).sum()


lin = lambda A, B: A @ B.T
rbf = lambda A, B: np.exp(-0.5 * ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1))


@pytest.mark.parametrize("algorithm", ["sequential", "gradient"])
@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_online_mprank_reaches_batch_solution(algorithm, kernel):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 6))
    y = X @ rng.normal(size=6) + np.sin(3 * X[:, 0]) + 0.3 * rng.normal(size=300)
    Z = rng.normal(size=(80, 6))
    C = 5.0
    est = OnlineMPRank(C=C, kernel=kernel, gamma=0.5, algorithm=algorithm, tol=1e-12, max_iter=20000).fit(X, y)
    ref = batch_mprank_eq13(X, y, np.vstack([X, Z]), C, lin if kernel == "linear" else rbf)
    got = est.predict(np.vstack([X, Z]))
    # stated tolerance: 1e-6 of the prediction scale once the cost has converged to 1e-12
    np.testing.assert_allclose(got, ref, atol=1e-6 * np.abs(ref).max())
    assert est.converged_
    np.testing.assert_allclose(est.predict(Z), ref[300:], atol=1e-6 * np.abs(ref).max())
    assert est.y_mean_ == pytest.approx(y.mean())


def test_default_stopping_rule_is_close_and_cost_decreases():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(250, 5))
    y = X @ rng.normal(size=5) + 0.5 * rng.normal(size=250)
    est = OnlineMPRank(C=2.0).fit(X, y)  # tol = 1e-4 on the relative gradient
    ref = batch_mprank_eq13(X, y, X, 2.0, lin)
    assert est.converged_ and est.n_iter_ < 1000
    assert np.abs(est.predict(X) - ref).max() <= 1e-3 * np.abs(ref).max()
    # dual ascent need not decrease the primal cost monotonically, but it never goes below the optimum
    exact = OnlineMPRank(C=2.0, tol=1e-14, max_iter=20000).fit(X, y)
    assert np.all(est.cost_history_ >= exact.cost_history_[-1] * (1 - 1e-12))
    assert est.cost_history_[-1] <= est.cost_history_[0]
    # the cost is the pairwise MPRank objective (eq. 15 = the double-sum form)
    a = est.dual_coef_
    Xc = X - X.mean(0)
    w = Xc.T @ a
    h = X @ w
    assert est.cost_history_[-1] == pytest.approx(pair_objective(h, y, w @ w, 2.0), rel=1e-9)


def test_partial_fit_warm_start_converges_to_batch():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(200, 4))
    y = X @ np.arange(1.0, 5.0) + 0.1 * rng.normal(size=200)
    est = OnlineMPRank(C=3.0, tol=1e-12, max_iter=5000)
    est.partial_fit(X[:120], y[:120]).partial_fit(X[120:], y[120:])
    ref = batch_mprank_eq13(X, y, X, 3.0, lin)
    np.testing.assert_allclose(est.predict(X), ref, atol=1e-6 * np.abs(ref).max())


def test_precomputed_and_errors():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(100, 3))
    y = X[:, 0] - X[:, 1]
    K = rbf(X, X)
    a = OnlineMPRank(C=1.0, kernel="precomputed", tol=1e-12, max_iter=5000).fit(K, y)
    b = OnlineMPRank(C=1.0, kernel="rbf", gamma=0.5, tol=1e-12, max_iter=5000).fit(X, y)
    np.testing.assert_allclose(a.predict(K), b.predict(X), atol=1e-8)
    with pytest.raises(ValueError, match="C"):
        OnlineMPRank(C=0).fit(X, y)
    with pytest.raises(ValueError, match="algorithm"):
        OnlineMPRank(algorithm="newton").fit(X, y)
    with pytest.raises(ValueError, match=r"eta=10 is at or beyond the step that keeps the gradient passes stable"):
        OnlineMPRank(eta=10.0, algorithm="gradient").fit(X * 100, y)  # refused before the passes diverge


def test_matches_fastrank_batch_mprank():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(200, 5))
    y = X @ rng.normal(size=5) + 0.2 * rng.normal(size=200)
    for kernel in ("linear", "rbf"):
        on = OnlineMPRank(C=4.0, kernel=kernel, gamma=0.3, tol=1e-13, max_iter=20000).fit(X, y + 3.0)
        batch = fastrank.MPRank(C=4.0, kernel=kernel, gamma=0.3).fit(X, y + 3.0)
        Z = rng.normal(size=(50, 5))
        p, q = on.predict(Z), batch.predict(Z)
        # same convention (eq. 13, no intercept): equal predictions, stated tolerance 1e-5 relative
        np.testing.assert_allclose(p, q, atol=1e-5 * np.abs(q).max())
        assert on.score(Z, q) == pytest.approx(1.0)


def test_online_mprank_with_groups_reaches_mprank_with_groups():
    import fastrank

    rng = np.random.default_rng(11)
    X = rng.normal(size=(40, 3))
    y = X @ np.array([1.0, -0.5, 0.2]) + 0.1 * rng.normal(size=40)
    g = rng.integers(0, 4, size=40)
    for kernel in ("linear", "rbf"):
        on = fastrank.OnlineMPRank(C=2.0, kernel=kernel, gamma=0.5, tol=1e-14, max_iter=20000).fit(X, y, g)
        batch = fastrank.MPRank(C=2.0, kernel=kernel, gamma=0.5).fit(X, y, g)
        d_on, d_b = on.predict(X), batch.predict(X)
        np.testing.assert_allclose(d_on - d_on.mean(), d_b - d_b.mean(), rtol=1e-6, atol=1e-8)
    # without groups it is still the paper's all-pairs MPRank, and groups change the model
    plain = fastrank.OnlineMPRank(C=2.0, tol=1e-14, max_iter=20000).fit(X, y)
    grouped = fastrank.OnlineMPRank(C=2.0, tol=1e-14, max_iter=20000).fit(X, y, g)
    assert np.abs(plain.predict(X) - grouped.predict(X)).max() > 1e-6


@pytest.mark.parametrize("case", ["constant", "tied_in_groups", "single_rows"])
def test_no_preferences_raises_like_rankrls(case):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(24, 3))
    y = X @ rng.normal(size=3)
    y, groups, match = no_preference_case(case, y)
    with pytest.raises(ValueError, match=match):
        fastrank.RankRLS().fit(X, y, groups)
    with pytest.raises(ValueError, match=match):
        fastrank.OnlineMPRank().fit(X, y, groups)


def test_verbose_reports_the_passes_and_the_batch_solve(capsys):
    rng = np.random.default_rng(21)
    X = rng.normal(size=(30, 3))
    y = X[:, 0] + 0.1 * rng.normal(size=30)
    quiet = fastrank.OnlineMPRank(C=10.0).fit(X, y)
    assert capsys.readouterr().err == ""
    loud = fastrank.OnlineMPRank(C=10.0, verbose=1).fit(X, y)
    err = capsys.readouterr().err
    assert "OnlineMPRank" in err and f"{loud.n_iter_} passes" in err
    np.testing.assert_array_equal(loud.predict(X), quiet.predict(X))
    fastrank.MPRank(C=10.0, verbose=1).fit(X, y)
    assert "MPRank" in capsys.readouterr().err


@pytest.mark.parametrize("algorithm", ["gradient", "sequential"])
def test_a_step_at_the_stability_limit_is_refused(algorithm):
    """At 2 / (its curvature) the passes oscillated at a constant cost and reported converged_ (a model 1.9 off), a
    little beyond it the cost grew 1e34-fold with only a max_iter warning; just below, the passes converge to
    MPRank (eq. 13)."""
    rng = np.random.default_rng(0)
    m, C = 30, 2.0
    X = rng.normal(size=(m, 3))
    y = X @ [1.0, -1.0, 0.5] + 0.3 * rng.normal(size=m)
    H = np.eye(m) - 1.0 / m
    Kt = H @ X @ X.T @ H
    curvature = 2.0 * (np.linalg.eigvalsh(Kt).max() if algorithm == "gradient" else np.diag(Kt).max()) + m / C
    for factor in (1.0, 1.01):
        with pytest.raises(ValueError, match="is at or beyond the step that keeps"):
            OnlineMPRank(C=C, eta=factor * 2.0 / curvature, algorithm=algorithm).fit(X, y)
    est = OnlineMPRank(C=C, eta=0.9 * 2.0 / curvature, algorithm=algorithm, tol=1e-14, max_iter=20000).fit(X, y)
    ref = fastrank.MPRank(C=C).fit(X, y).predict(X)
    p = est.predict(X)
    np.testing.assert_allclose(p - p.mean(), ref - ref.mean(), atol=1e-6 * np.abs(ref).max())


def test_partial_fit_refuses_ids_that_fit_could_not_compare_with_its_own():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(20, 3))
    y = X @ [1.0, -1.0, 0.5] + 0.3 * rng.normal(size=20)
    est = OnlineMPRank().fit(X[:10], y[:10], np.array([1] * 5 + [2] * 5))
    with pytest.raises(TypeError, match="group ids must be mutually comparable"):  # "1" and 1 were one query
        est.partial_fit(X[10:], y[10:], np.array(["1"] * 5 + ["2"] * 5))


@pytest.mark.parametrize("algorithm", ["sequential", "gradient"])
@pytest.mark.parametrize("tol", [1e-4, 1e-6])
def test_converged_means_near_the_fixed_point_on_nearly_collinear_features(algorithm, tol):
    # the paper's rule (relative cost change below tol) stopped after 63 passes, 9.5e-2 from eq. 13's model, with
    # converged_ True: slow passes change the cost little
    rng = np.random.default_rng(7)
    X = rng.normal(size=(30, 3))
    X[:, 1] = X[:, 0] + 1e-3 * rng.normal(size=30)
    y = X[:, 1] - X[:, 0] + 0.01 * rng.normal(size=30)
    est = OnlineMPRank(C=100.0, algorithm=algorithm, tol=tol, max_iter=100000).fit(X, y)
    ref = batch_mprank_eq13(X, y, X, 100.0, lin)
    assert est.converged_
    got = est.predict(X)
    assert np.abs((got - got.mean()) - (ref - ref.mean())).max() <= 5 * tol * np.abs(ref - ref.mean()).max()


@pytest.mark.parametrize("algorithm", ["sequential", "gradient"])
def test_converged_means_near_the_fixed_point_where_the_model_explains_little_of_y(algorithm):
    # stopping at |gradient| <= tol 2 |yt| left the weight 5.5e-2 off (converged_ True): the gradient bounds the
    # predictions' error by tol |yt|, which is far above tol |predictions| when the signal is weak
    rng = np.random.default_rng(17)
    X = rng.normal(size=(20, 1))
    y = 1e-3 * X[:, 0] + rng.normal(size=20)
    ref = fastrank.MPRank(C=10.0).fit(X, y)
    est = OnlineMPRank(C=10.0, tol=1e-4, algorithm=algorithm).fit(X, y)
    assert est.converged_
    assert abs(est.coef_[0] - ref.coef_[0]) <= 5e-4 * abs(ref.coef_[0])


@pytest.mark.parametrize("algorithm", ["sequential", "gradient"])
def test_a_model_whose_predictions_are_zero_converges(algorithm):
    # rows all alike: MPRank's model is 0, and |g| <= 2 tol |Kt a| could only hold at g = 0 exactly (1000 passes and
    # a ConvergenceWarning at a* to 1e-17)
    y = np.random.default_rng(0).normal(size=40)
    est = OnlineMPRank(C=1.0, algorithm=algorithm).fit(np.ones((40, 2)), y)
    assert est.converged_ and est.n_iter_ < 10
    np.testing.assert_allclose(est.dual_coef_, 2 * (y - y.mean()) / 40.0, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("algorithm", ["sequential", "gradient"])
@pytest.mark.parametrize("m, d, C", [(300, 3, 1e4), (200, 2, 1e6), (120, 5, 50.0)])
def test_coefficients_no_prediction_sees_do_not_hold_the_passes(algorithm, m, d, C):
    # a linear kernel of d << m features: a's part in Kt's null space decays at 1 - eta m / C per pass and moves no
    # prediction; |g| counted it, and the gradient rule ran 1000 passes to a ConvergenceWarning with its predictions
    # at eq. 13's to 2e-15.  The bound C |Kt g| / m stops it; converged_ still means within about tol.
    rng = np.random.default_rng(m + d)
    X = rng.normal(size=(m, d))
    y = X @ rng.normal(size=d) + 0.1 * rng.normal(size=m)
    ref = batch_mprank_eq13(X, y, X, C, lin)
    ref = ref - ref.mean()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = OnlineMPRank(C=C, algorithm=algorithm, max_iter=3000).fit(X, y)
    got = est.predict(X)
    error = np.linalg.norm((got - got.mean()) - ref) / np.linalg.norm(ref)
    assert est.converged_ == (not any(issubclass(w.category, ConvergenceWarning) for w in caught))
    if algorithm == "gradient":
        assert est.converged_ and est.n_iter_ < 100
    if est.converged_:
        assert error <= 2e-4
    else:
        assert error > 1e-4  # the warning is not a false alarm


def _grouped_problem(seed, m=150, d=4):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, d)) + 3.0
    y = X @ rng.normal(size=d) + 0.5 * rng.normal(size=m)
    return X, y, rng.integers(0, 12, size=m)


# poly of degree 1, gamma 1, coef0 0 is x.x' computed as a kernel: the m x m centred kernel path
_AS_KERNEL = dict(kernel="poly", degree=1, gamma=1.0, coef0=0.0)


@pytest.mark.parametrize("algorithm", ["sequential", "gradient"])
@pytest.mark.parametrize("grouped", [False, True])
@pytest.mark.parametrize("tol", [1e-4, 1e-10])
def test_linear_passes_on_the_features_match_the_kernel_matrix_passes(algorithm, grouped, tol):
    # with fewer features than points the linear kernel iterates on the centred features (w = Xc^T a) instead of
    # Kt = Xc Xc^T: the same passes, to rounding
    X, y, g = _grouped_problem(3 + grouped)
    g = g if grouped else None
    kw = dict(C=20.0, algorithm=algorithm, tol=tol, max_iter=20000)
    lin = OnlineMPRank(**kw).fit(X, y, g)
    p = lin.predict(X)
    for kernel, Z in (("precomputed", X @ X.T), ("poly", X)):
        ref = OnlineMPRank(**kw, **(_AS_KERNEL if kernel == "poly" else {"kernel": kernel})).fit(Z, y, g)
        assert (lin.n_iter_, lin.converged_) == (ref.n_iter_, True)
        assert lin.eta_ == pytest.approx(ref.eta_, rel=1e-12)
        np.testing.assert_allclose(lin.dual_coef_, ref.dual_coef_, rtol=0, atol=1e-10 * np.abs(ref.dual_coef_).max())
        np.testing.assert_allclose(lin.cost_history_, ref.cost_history_, rtol=1e-10)
        q = ref.predict(Z)
        assert np.linalg.norm((p - p.mean()) - (q - q.mean())) <= 1e-10 * np.linalg.norm(q - q.mean())
    batch = fastrank.MPRank(C=20.0).fit(X, y, g).predict(X)
    assert np.linalg.norm((p - p.mean()) - (batch - batch.mean())) <= 2 * tol * np.linalg.norm(batch - batch.mean())


@pytest.mark.parametrize("algorithm", ["sequential", "gradient"])
def test_linear_partial_fit_on_the_features_continues_as_the_kernel_matrix_passes(algorithm):
    X, y, g = _grouped_problem(5)
    kw = dict(C=5.0, algorithm=algorithm, tol=1e-9, max_iter=20000)
    lin, ref = OnlineMPRank(**kw), OnlineMPRank(**kw, **_AS_KERNEL)
    for est in (lin, ref):
        est.partial_fit(X[:90], y[:90], g[:90]).partial_fit(X[90:], y[90:], g[90:])
    assert (lin.n_iter_, lin.converged_) == (ref.n_iter_, ref.converged_) and lin.converged_
    np.testing.assert_allclose(lin.dual_coef_, ref.dual_coef_, rtol=0, atol=1e-10 * np.abs(ref.dual_coef_).max())
    p, q = lin.predict(X), ref.predict(X)
    assert np.linalg.norm((p - p.mean()) - (q - q.mean())) <= 1e-10 * np.linalg.norm(q - q.mean())


@pytest.mark.parametrize("algorithm", ["sequential", "gradient"])
def test_linear_fit_needs_no_kernel_matrix(monkeypatch, algorithm):
    # five m x m matrices (6.4 MB here) were allocated for a model of 3 weights: MemoryError above the limit
    X, y, g = _grouped_problem(6, m=400, d=3)
    ref = OnlineMPRank(algorithm=algorithm, **_AS_KERNEL).fit(X, y, g)
    monkeypatch.setenv("FASTRANK_MAX_DENSE_BYTES", str(8 * 400 * 400))
    with pytest.raises(MemoryError, match="OnlineMPRank"):
        OnlineMPRank(algorithm=algorithm, **_AS_KERNEL).fit(X, y, g)
    est = OnlineMPRank(algorithm=algorithm).fit(X[:250], y[:250], g[:250])
    est.partial_fit(X[250:], y[250:], g[250:])
    assert est.converged_
    p, q = est.predict(X), ref.predict(X)
    batch = fastrank.MPRank().fit(X, y, g).predict(X)
    assert np.linalg.norm((p - p.mean()) - (batch - batch.mean())) <= 2e-4 * np.linalg.norm(batch - batch.mean())


@pytest.mark.parametrize("kernel", ["rbf", "poly"])
def test_given_eta_with_a_zero_centred_kernel_fits_the_constant_model(kernel):
    """All rows alike: the centred kernel matrix is 0 and its largest eigenvalue (the bound on a given eta) is 0,
    where ARPACK stops with "starting vector is zero".  Every prediction is then the same value."""
    X, y = np.ones((6, 3)), np.arange(6.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = OnlineMPRank(kernel=kernel, algorithm="gradient", eta=1e-3).fit(X, y)
    pred = est.predict(np.vstack([X, X[:1]]))
    np.testing.assert_allclose(pred, pred[0], rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="eta=3"):  # the step bound is 2 / (m / C) = 1/3 at C = 1
        OnlineMPRank(kernel=kernel, algorithm="gradient", eta=3.0).fit(X, y)
