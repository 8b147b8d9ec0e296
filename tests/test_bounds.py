"""fastrank.bounds: each bound against the paper's formula written out by hand for one parameter
set, monotonicity in m and delta, and the theorems' conditions as clear errors."""

import math

import numpy as np
import pytest

import fastrank
from fastrank import bounds as B
from fastrank import metrics as M

m, lam, kappa, Mlab, delta = 1000, 0.5, 1.0, 4.0, 0.05


def test_corollary_12_hand_computed():
    # 002 Corollary 12 with sigma = 2: 32*2*1/(0.5*1000) + (16*2*1/0.5 + 4) * sqrt(2 ln 20 / 1000)
    want = 0.1 + 64.0 / 500.0 + (64.0 + 4.0) * math.sqrt(2.0 * math.log(20.0) / 1000.0)
    assert B.agarwal_niyogi_score_stability_bound(m, lam, kappa, Mlab, delta, sigma=2.0, empirical=0.1) == \
        pytest.approx(want, rel=1e-14)
    # the numbers themselves, once: 0.128 + 68 * 0.0774... = 5.3919...
    assert want == pytest.approx(0.1 + 0.128 + 68.0 * 0.07740455, rel=1e-7)


def test_hinge_instance_hand_computed():
    # 002 Sect. 5.2.1: 32 k^2/(lam m) + (16 k^2/lam + M) sqrt(2 ln(1/delta)/m), kappa = 2
    k = 2.0
    want = 32 * 4 / (0.5 * 1000) + (16 * 4 / 0.5 + 4.0) * math.sqrt(2 * math.log(1 / 0.05) / 1000)
    assert B.hinge_ranking_bound(m, lam, k, Mlab, delta) == pytest.approx(want, rel=1e-14)


def test_least_squares_instance_hand_computed():
    # 002 Sect. 5.2.2 written out: 64 k^2 M/(lam m) (1 + 2k/sqrt(lam)) + (32 k^2 M/lam (1 + 2k/sqrt(lam)) + M) root
    k, lam_ = 1.5, 2.0
    fac = 1 + 2 * k / math.sqrt(lam_)
    root = math.sqrt(2 * math.log(1 / delta) / m)
    want = 0.2 + 64 * k**2 * Mlab / (lam_ * m) * fac + (32 * k**2 * Mlab / lam_ * fac + Mlab) * root
    assert B.least_squares_ranking_bound(m, lam_, k, Mlab, delta, empirical=0.2) == pytest.approx(want, rel=1e-14)


def test_corollary_15_hand_computed():
    # 002 Corollary 15: 32 s^2 k^2/(lam m) + (16 s^2 k^2/lam + B) sqrt(2 ln(1/delta)/m), s = 3, B = 10
    want = 0.3 + 32 * 9 / (0.5 * 1000) + (16 * 9 / 0.5 + 10) * math.sqrt(2 * math.log(20) / 1000)
    assert B.agarwal_niyogi_loss_stability_bound(m, lam, 1.0, 10.0, delta, sigma=3.0, empirical=0.3) == \
        pytest.approx(want, rel=1e-14)


def test_cortes_corollary_1_hand_computed():
    C, k = 2.0, 1.0
    root = math.sqrt(2 / m * math.log(2 / delta))
    # eq. 65 (n = 1)
    want1 = 0.5 + 8 * k**2 * C / m + 2 * (2 * k**2 * C + Mlab) * root
    assert B.magnitude_preserving_bound(m, C, k, Mlab, delta, power=1, empirical=0.5) == pytest.approx(want1, rel=1e-14)
    # eq. 66 (n = 2)
    want2 = 0.5 + 128 * k**2 * C * Mlab**2 / m + 4 * Mlab**2 * (16 * k**2 * C + 1) * root
    assert B.magnitude_preserving_bound(m, C, k, Mlab, delta, power=2, empirical=0.5) == pytest.approx(want2, rel=1e-14)
    # and eq. 66 is Theorem 1 with beta = 4 C sigma^2 kappa^2 / m, sigma = 4M (Prop. 3, Lemma 1):
    beta = 4 * C * (4 * Mlab) ** 2 * k**2 / m
    eps = (beta * m + (2 * Mlab) ** 2) * math.sqrt(2 * math.log(2 / delta) / m)
    assert want2 == pytest.approx(0.5 + 2 * beta + eps, rel=1e-12)


BOUNDS = [
    lambda mm, d: B.agarwal_niyogi_score_stability_bound(mm, lam, kappa, Mlab, d, sigma=1.5),
    lambda mm, d: B.agarwal_niyogi_loss_stability_bound(mm, lam, kappa, 3.0, d, sigma=1.5),
    lambda mm, d: B.hinge_ranking_bound(mm, lam, kappa, Mlab, d),
    lambda mm, d: B.least_squares_ranking_bound(mm, lam, kappa, Mlab, d),
    lambda mm, d: B.magnitude_preserving_bound(mm, 1.0, kappa, Mlab, d, power=1),
    lambda mm, d: B.magnitude_preserving_bound(mm, 1.0, kappa, Mlab, d, power=2),
]


@pytest.mark.parametrize("bound", BOUNDS)
def test_monotone_in_m_and_delta(bound):
    ms = [10, 100, 1000, 10_000, 100_000]
    vals = [bound(mm, 0.05) for mm in ms]
    assert all(a > b for a, b in zip(vals, vals[1:]))  # decreasing in m
    ds = [1e-6, 1e-3, 0.05, 0.5, 0.99]
    vals = [bound(1000, d) for d in ds]
    assert all(a > b for a, b in zip(vals, vals[1:]))  # decreasing in delta (weaker confidence)


def test_conditions_raise_named_errors():
    with pytest.raises(ValueError, match="0 < delta < 1"):
        B.hinge_ranking_bound(m, lam, kappa, Mlab, 1.0)
    with pytest.raises(ValueError, match="0 < delta < 1"):
        B.magnitude_preserving_bound(m, 1.0, kappa, Mlab, 0.0)
    with pytest.raises(ValueError, match="lam must be > 0"):
        B.least_squares_ranking_bound(m, 0.0, kappa, Mlab, delta)
    with pytest.raises(ValueError, match="lam must be > 0"):
        B.agarwal_niyogi_score_stability_bound(m, -1.0, kappa, Mlab, delta)
    with pytest.raises(ValueError, match="unbounded"):
        B.hinge_ranking_bound(m, lam, float("inf"), Mlab, delta)
    with pytest.raises(ValueError, match="unbounded"):
        B.magnitude_preserving_bound(m, 1.0, np.inf, Mlab, delta)
    with pytest.raises(ValueError, match="C must be > 0"):
        B.magnitude_preserving_bound(m, 0.0, kappa, Mlab, delta)
    with pytest.raises(ValueError, match="m must be an integer >= 2"):
        B.hinge_ranking_bound(1, lam, kappa, Mlab, delta)
    with pytest.raises(ValueError, match="power must be 1 or 2"):
        B.magnitude_preserving_bound(m, 1.0, kappa, Mlab, delta, power=3)
    with pytest.raises(ValueError, match="sigma"):
        B.agarwal_niyogi_loss_stability_bound(m, lam, kappa, 1.0, delta, sigma=0.0)
    with pytest.raises(ValueError, match="empirical"):
        B.hinge_ranking_bound(m, lam, kappa, Mlab, delta, empirical=-0.1)


def test_empirical_term_from_fitted_estimator():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = X @ np.array([1.0, -0.5, 0.2]) + 0.3 * rng.normal(size=60)
    est = fastrank.MPRank(C=2.0, kernel="rbf", gamma=0.5).fit(X, y)
    f = est.predict(X)
    assert B.empirical_term(est, X, y, "mp2") == pytest.approx(M.msd(y, f), rel=1e-12)
    assert B.empirical_term(est, X, y, "l1") == pytest.approx(
        M.stability_ranking_loss(y, f, loss="gamma", gamma=1.0), rel=1e-12)
    assert B.empirical_term(est, X, y, "svr1", epsilon=0.1) == pytest.approx(
        M.magnitude_preserving_cost(y, f, cost="svr", power=1, epsilon=0.1), rel=1e-12)
    emp = B.empirical_term(est, X, y, "mp2")
    Mh = float(np.max(np.abs(f - y)))
    b = B.magnitude_preserving_bound(60, 2.0, B.kernel_kappa(X, "rbf"), Mh, 0.1, empirical=emp)
    assert b > emp
    with pytest.raises(ValueError, match="term must be"):
        B.empirical_term(est, X, y, "mse")


def test_kernel_kappa():
    X = np.array([[1.0, 2.0], [3.0, 0.0]])
    assert B.kernel_kappa(X, "rbf") == 1.0
    assert B.kernel_kappa(X, "linear") == pytest.approx(3.0)
    assert B.kernel_kappa(X, "poly", gamma=0.5, degree=2, coef0=1.0) == pytest.approx(0.5 * 9 + 1.0)
    assert "bounds" in fastrank.__all__ and fastrank.bounds is B


# ---- inputs whose intermediate powers leave float64: the bound is computed in log space --------
def _decimal_score_bound(m, lam, kappa, top, delta, s):
    """002 Corollary 12 / 15 in 60-digit decimal arithmetic (no float range limits)."""
    from decimal import Decimal as D, localcontext

    with localcontext() as ctx:
        ctx.prec = 60
        m, lam, kappa, top, delta, s = map(D, (m, lam, kappa, top, delta, s))
        root = (2 * (1 / delta).ln() / m).sqrt()
        return float(32 * s * kappa**2 / (lam * m) + (16 * s * kappa**2 / lam + top) * root)


@pytest.mark.parametrize("kappa_, lam_, M_", [(1e200, 1e300, 4.0), (1e-200, 1e-300, 1e-150), (3.0, 1e-300, 1e-290),
                                              (1e160, 1e299, 1e5)])
def test_extreme_parameters_are_exact_not_overflow(kappa_, lam_, M_):
    # kappa**2 overflowed float64 (OverflowError 34, 'Numerical result out of range') though the bound fits
    want = _decimal_score_bound(1000, lam_, kappa_, M_, 0.05, 2.0)
    assert B.agarwal_niyogi_score_stability_bound(1000, lam_, kappa_, M_, 0.05, sigma=2.0) == \
        pytest.approx(want, rel=1e-12)
    want_loss = _decimal_score_bound(1000, lam_, kappa_, M_, 0.05, 9.0)  # sigma^2 = 9
    assert B.agarwal_niyogi_loss_stability_bound(1000, lam_, kappa_, M_, 0.05, sigma=3.0) == \
        pytest.approx(want_loss, rel=1e-12)


def test_least_squares_and_mp_with_extreme_parameters():
    from decimal import Decimal as D, localcontext

    k, lam_, M_, C = 1e150, 1e290, 1e-100, 1e-290
    with localcontext() as ctx:
        ctx.prec = 60
        s = 2 * D(M_) * (1 + 2 * D(k) / D(lam_).sqrt())
    want = _decimal_score_bound(1000, lam_, k, M_, 0.05, s)
    assert B.least_squares_ranking_bound(1000, lam_, k, M_, 0.05) == pytest.approx(want, rel=1e-12)
    with localcontext() as ctx:
        ctx.prec = 60
        dk, dC, dM, dm = D(k), D(C), D(M_), D(1000)
        root = (2 / dm * (2 / D(0.05)).ln()).sqrt()
        want1 = float(8 * dk**2 * dC / dm + 2 * (2 * dk**2 * dC + dM) * root)
        want2 = float(128 * dk**2 * dC * dM**2 / dm + 4 * dM**2 * (16 * dk**2 * dC + 1) * root)
    assert B.magnitude_preserving_bound(1000, C, k, M_, 0.05, power=1) == pytest.approx(want1, rel=1e-12)
    assert B.magnitude_preserving_bound(1000, C, k, M_, 0.05, power=2) == pytest.approx(want2, rel=1e-12)


@pytest.mark.parametrize("call", [
    lambda: B.hinge_ranking_bound(1000, 1e-300, 1e200, 1.0, 0.05),
    lambda: B.least_squares_ranking_bound(1000, 0.5, 1.0, 1e308, 0.05),
    lambda: B.magnitude_preserving_bound(1000, 1.0, 1.0, 1e200, 0.05, power=2),
    lambda: B.agarwal_niyogi_loss_stability_bound(1000, 1e-300, 1.0, 1.0, 0.05, sigma=1e200),
])
def test_bound_beyond_float64_is_a_clear_error(call):
    with pytest.raises(ValueError, match="exceeds the largest float64.*vacuous"):
        call()


def test_huge_m_and_delta_near_one():
    # m beyond float64 (int division overflowed) and delta next to 1 (ln(1/delta) rounds to 0)
    got = B.hinge_ranking_bound(10**400, 0.5, 1.0, 4.0, 0.05)
    assert got == pytest.approx(0.0, abs=1e-180)
    d = float(np.nextafter(1.0, 0.0))
    want = _decimal_score_bound(1000, 0.5, 1.0, 4.0, d, 1.0)
    assert B.hinge_ranking_bound(1000, 0.5, 1.0, 4.0, d) == pytest.approx(want, rel=1e-10)
