"""The pairwise costs of Cortes et al. (000 eqs. 4-7), the ranking losses of Agarwal & Niyogi
(002 Sect. 2, 4, 5.2), position / discounted error (003) and the edge-list disagreement, each
against its literal double sum written from the papers' definitions."""

import itertools

import numpy as np
import pytest

from fastrank import metrics as M


def _blocks(groups, m):
    if groups is None:
        return [np.arange(m)]
    g = np.asarray(groups)
    return [np.flatnonzero(g == u) for u in np.unique(g)]


def _reduce(per_num, per_den, average):
    num, den = np.array(per_num, float), np.array(per_den, float)
    ok = den > 0
    if average is None:
        out = np.full(num.size, np.nan)
        out[ok] = num[ok] / den[ok]
        return out
    if average == "pooled":
        return num[ok].sum() / den[ok].sum()
    return np.mean(num[ok] / den[ok])


# ---- 000 eqs. 4-7, summed over all ordered pairs (i, j) and divided by m^2 (eq. 2)
def c_cost(cost, n, eps, hx, hxp, yx, yxp):
    dh, dy = hxp - hx, yxp - yx
    if cost == "hr":  # eq. 4
        return 0.0 if dh * dy >= 0 else abs(dh) ** n
    if cost == "mp":  # eq. 5
        return abs(dh - dy) ** n
    if cost == "hmp":  # eq. 6
        return 0.0 if dh * dy >= 0 else abs(dh - dy) ** n
    u = dh - dy  # eq. 7, symmetric epsilon-insensitive form
    return 0.0 if abs(u) <= eps else (abs(u) - eps) ** n


def oracle_cost(y, f, groups, cost, n, eps, average):
    nums, dens = [], []
    for idx in _blocks(groups, len(y)):
        s = sum(c_cost(cost, n, eps, f[i], f[j], y[i], y[j]) for i in idx for j in idx)
        nums.append(s)
        dens.append(len(idx) ** 2 if len(idx) >= 2 else 0)
    return _reduce(nums, dens, average)


def sgn(u):
    return int(u > 0) - int(u < 0)


# ---- 002: losses on a pair (x, y), (x', y'), averaged over i < j and divided by C(m, 2)
def l_loss(loss, gamma, fx, fxp, y, yp):
    d = y - yp
    if loss == "0-1":
        return float(d * (fx - fxp) < 0) + 0.5 * float(fx == fxp)
    if loss == "disc":
        return abs(d) * (float(d * (fx - fxp) < 0) + 0.5 * float(fx == fxp))
    u = (fx - fxp) * sgn(d)
    if loss == "gamma":
        if u / gamma <= 0:
            return abs(d)
        if u / gamma < abs(d):
            return abs(d) - u / gamma
        return 0.0
    if loss == "hinge":
        return max(abs(d) - u, 0.0)
    return (abs(d) - sgn(d) * (fx - fxp)) ** 2  # eq. 9


def oracle_loss(y, f, groups, loss, gamma, average):
    nums, dens = [], []
    for idx in _blocks(groups, len(y)):
        s = sum(l_loss(loss, gamma, f[i], f[j], y[i], y[j]) for i, j in itertools.combinations(idx, 2))
        nums.append(s)
        dens.append(len(idx) * (len(idx) - 1) / 2)
    return _reduce(nums, dens, average)


def _data(seed, m=60, n_groups=None, ties=True):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 5, m).astype(float) if ties else rng.normal(size=m)
    f = np.round(rng.normal(size=m), 1) if ties else rng.normal(size=m)
    g = None if n_groups is None else rng.integers(0, n_groups, m) * 7 - 3  # unsorted, non-contiguous ids
    return y, f, g


CASES = [(s, n_g, t) for s in range(3) for n_g in (None, 5) for t in (True, False)]


@pytest.mark.parametrize("seed,n_groups,ties", CASES)
@pytest.mark.parametrize("cost", ["hr", "mp", "hmp", "svr"])
@pytest.mark.parametrize("power", [1, 2])
def test_magnitude_preserving_cost_equals_double_sum(seed, n_groups, ties, cost, power):
    y, f, g = _data(seed, n_groups=n_groups, ties=ties)
    eps = 0.3 if cost == "svr" else 0.0
    for average in ("group", "pooled", None):
        got = M.magnitude_preserving_cost(y, f, g, cost=cost, power=power, epsilon=eps, average=average)
        want = oracle_cost(y, f, g, cost, power, eps, average)
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


def test_cost_mp_is_msd_and_m1d_and_svr_at_zero_is_mp():
    y, f, g = _data(11, m=80, n_groups=4)
    assert M.magnitude_preserving_cost(y, f, g, cost="mp", power=2) == pytest.approx(M.msd(y, f, g), rel=1e-12)
    assert M.magnitude_preserving_cost(y, f, g, cost="mp", power=1) == pytest.approx(M.m1d(y, f, g), rel=1e-12)
    for p in (1, 2):
        assert M.magnitude_preserving_cost(y, f, g, cost="svr", power=p, epsilon=0.0) == pytest.approx(
            M.magnitude_preserving_cost(y, f, g, cost="mp", power=p), rel=1e-10)


@pytest.mark.parametrize("seed,n_groups,ties", CASES)
@pytest.mark.parametrize("loss", ["0-1", "disc", "gamma", "hinge", "squared"])
def test_stability_ranking_loss_equals_double_sum(seed, n_groups, ties, loss):
    y, f, g = _data(seed + 10, n_groups=n_groups, ties=ties)
    gammas = (0.5, 1.0, 3.0) if loss == "gamma" else (1.0,)
    for gamma in gammas:
        for average in ("group", "pooled", None):
            got = M.stability_ranking_loss(y, f, g, loss=loss, gamma=gamma, average=average)
            want = oracle_loss(y, f, g, loss, gamma, average)
            np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


def test_loss_orderings_and_known_identities():
    y, f, g = _data(5, m=120, n_groups=6)
    disc = M.stability_ranking_loss(y, f, g, loss="disc", average="pooled")
    l1 = M.stability_ranking_loss(y, f, g, loss="gamma", gamma=1.0, average="pooled")
    hinge = M.stability_ranking_loss(y, f, g, loss="hinge", average="pooled")
    assert disc <= l1 + 1e-12 <= hinge + 2e-12  # l_disc <= l_1 <= l_h (002 Sect. 4, 5.2.1)
    assert disc == pytest.approx(M.discrete_ranking_loss(y, f, g, average="pooled"), rel=1e-12)
    # squared loss on pairs with distinct labels is c^2_MP restricted to them
    y2 = np.arange(30.0)
    f2 = np.random.default_rng(0).normal(size=30)
    sq = M.stability_ranking_loss(y2, f2, loss="squared")
    assert sq * (30 * 29 / 2) * 2 == pytest.approx(M.msd(y2, f2) * 30 ** 2, rel=1e-10)


def test_costs_large_offsets_are_accurate():
    # translation invariance handled by centring: a huge common offset changes nothing
    y, f, _ = _data(3, m=200, ties=False)
    for cost in ("hr", "hmp", "svr"):
        a = M.magnitude_preserving_cost(y, f, cost=cost, power=2, epsilon=0.1 if cost == "svr" else 0.0)
        b = M.magnitude_preserving_cost(y + 1e6, f + 1e6, cost=cost, power=2,
                                        epsilon=0.1 if cost == "svr" else 0.0)
        assert b == pytest.approx(a, rel=1e-6)


def test_cost_and_loss_bad_input():
    y, f = np.array([1.0, 2.0, 3.0]), np.array([0.0, 1.0, 0.5])
    with pytest.raises(ValueError, match="cost must be"):
        M.magnitude_preserving_cost(y, f, cost="abs")
    with pytest.raises(ValueError, match="power must be 1 or 2"):
        M.magnitude_preserving_cost(y, f, power=3)
    with pytest.raises(ValueError, match="epsilon must be"):
        M.magnitude_preserving_cost(y, f, cost="svr", epsilon=-1)
    with pytest.raises(ValueError, match="only used by cost='svr'"):
        M.magnitude_preserving_cost(y, f, cost="mp", epsilon=0.5)
    with pytest.raises(ValueError, match="loss must be"):
        M.stability_ranking_loss(y, f, loss="exp")
    with pytest.raises(ValueError, match="gamma must be"):
        M.stability_ranking_loss(y, f, loss="gamma", gamma=0)
    with pytest.raises(ValueError, match="NaN"):
        M.stability_ranking_loss([1.0, np.nan], [0.0, 1.0])
    with pytest.raises(ValueError, match="inconsistent"):
        M.magnitude_preserving_cost([1.0, 2.0], [0.0])
    with pytest.raises(ValueError, match="no pair"):
        M.stability_ranking_loss([1.0, 2.0], [0.0, 1.0], groups=[0, 1])
    with pytest.raises(ValueError, match="average"):
        M.stability_ranking_loss(y, f, average="mean")


# ---- 003: position error and discounted error


def oracle_position_error(y, f, groups):
    out = []
    for idx in _blocks(groups, len(y)):
        top = max(y[i] for i in idx)
        targets = [i for i in idx if y[i] == top]
        fstar = max(f[i] for i in targets)
        # expected number of wrong items before x* when ties are ordered at random: a wrong item tied with the t best
        # targets comes before all of them with probability 1/(t + 1)
        t = sum(f[i] == fstar for i in targets)
        out.append(sum(1.0 if f[j] > fstar else 1 / (t + 1) if f[j] == fstar else 0.0 for j in idx if y[j] != top))
    return np.array(out)


def _avg_ranks_desc(v):
    v = np.asarray(v, float)
    return np.array([1 + np.sum(v > v[i]) + (np.sum(v == v[i]) - 1) / 2 for i in range(v.size)])


def oracle_discounted(y, f, groups, weight):
    """Tied labels share their mean position; a row tied in f is displaced by the mean of |sigma - u| over the
    positions u of its tied block (the expectation over the block's orders)."""
    out = []
    for idx in _blocks(groups, len(y)):
        rt, fq = _avg_ranks_desc(y[idx]), f[idx]
        total = 0.0
        for t in range(len(idx)):
            first = 1 + int(np.sum(fq > fq[t]))
            positions = np.arange(first, first + int(np.sum(fq == fq[t])))
            total += weight(rt[t]) * np.mean(np.abs(rt[t] - positions))
        out.append(total)
    return np.array(out)


@pytest.mark.parametrize("seed,n_groups,ties", CASES)
def test_position_and_discounted_error(seed, n_groups, ties):
    y, f, g = _data(seed + 20, n_groups=n_groups, ties=ties)
    pe = oracle_position_error(y, f, g)
    np.testing.assert_allclose(M.position_error(y, f, g, average=None), pe, rtol=1e-12)
    assert M.position_error(y, f, g) == pytest.approx(pe.mean(), rel=1e-12)
    for disc, w in (("log2", lambda r: 1 / np.log2(1 + r)), ("reciprocal", lambda r: 1 / r),
                    ("none", lambda r: 1.0), (lambda r: np.exp(-r), lambda r: np.exp(-r))):
        de = oracle_discounted(y, f, g, w)
        np.testing.assert_allclose(M.discounted_error(y, f, g, discount=disc, average=None), de, rtol=1e-10)
        assert M.discounted_error(y, f, g, discount=disc) == pytest.approx(de.mean(), rel=1e-10)


def test_position_error_literal_cases_and_footrule():
    # sigma(x*) = 1 for the item with label 3; predicted order puts two wrong items before it
    assert M.position_error([3, 1, 2, 0], [0.5, 0.9, 0.7, 0.1]) == 2.0
    assert M.position_error([3, 1, 2, 0], [0.9, 0.5, 0.7, 0.1]) == 0.0
    assert M.position_error([3, 1], [0.5, 0.5]) == 0.5
    y, f, _ = _data(4, m=50)
    assert M.discounted_error(y, f, discount="none") == pytest.approx(M.get_measure("footrule")(y, f), rel=1e-12)
    if np.unique(f).size == f.size:  # without tied predictions the two footrules agree
        assert M.discounted_error(y, f, discount="none") == pytest.approx(M.spearman_footrule(y, f), rel=1e-12)
    with pytest.raises(ValueError, match="discount must be"):
        M.discounted_error(y, f, discount="exp")
    with pytest.raises(ValueError, match="non-negative weights"):
        M.discounted_error(y, f, discount=lambda r: -r)


# ---- explicit edge lists


def test_edge_disagreement():
    rng = np.random.default_rng(3)
    f = np.round(rng.normal(size=40), 1)
    P = rng.integers(0, 40, size=(300, 2))
    P = P[P[:, 0] != P[:, 1]]
    w = rng.uniform(0.1, 3.0, P.shape[0])
    for ties, tw in (("wrong", 1.0), ("half", 0.5)):
        num = sum(wi * (1.0 if f[a] < f[b] else tw if f[a] == f[b] else 0.0) for (a, b), wi in zip(P, w))
        assert M.edge_disagreement(P, f, w, tied_scores=ties) == pytest.approx(num / w.sum(), rel=1e-12)
        num1 = sum(1.0 if f[a] < f[b] else tw if f[a] == f[b] else 0.0 for a, b in P)
        assert M.edge_disagreement(P, f, tied_scores=ties) == pytest.approx(num1 / len(P), rel=1e-12)
    # all preference pairs of a label vector: the pooled pairwise disagreement
    y = rng.integers(0, 4, 40)
    E = np.array([(i, j) for i in range(40) for j in range(40) if y[i] > y[j]])
    for ties in ("wrong", "half"):
        assert M.edge_disagreement(E, f, tied_scores=ties) == pytest.approx(
            M.pairwise_disagreement(y, f, tied_scores=ties, average="pooled"), rel=1e-12)


def test_edge_disagreement_bad_input():
    f = np.arange(4.0)
    with pytest.raises(ValueError, match="shape"):
        M.edge_disagreement([0, 1], f)
    with pytest.raises(ValueError, match="outside"):
        M.edge_disagreement([[0, 4]], f)
    with pytest.raises(ValueError, match="self-loop"):
        M.edge_disagreement([[1, 1]], f)
    with pytest.raises(ValueError, match="one value per edge"):
        M.edge_disagreement([[0, 1]], f, weights=[1.0, 2.0])
    with pytest.raises(ValueError, match="> 0"):
        M.edge_disagreement([[0, 1]], f, weights=[0.0])
    with pytest.raises(ValueError, match="empty"):
        M.edge_disagreement(np.zeros((0, 2), int), f)
    with pytest.raises(ValueError, match="integer"):
        M.edge_disagreement([[0.5, 1]], f)
    with pytest.raises(ValueError, match="NaN"):
        M.edge_disagreement([[0, 1]], [np.nan, 1.0])


def test_many_distinct_values_in_both_coordinates_merge_path():
    # > 4096 distinct labels and scores in one group: the merge-sort path of the dominance sums;
    # oracle: the double sums vectorised over blocks of rows
    rng = np.random.default_rng(8)
    m = 5000
    y = rng.normal(size=m)
    f = np.round(0.5 * y + rng.normal(size=m), 3)  # some score ties
    y[:300] = np.round(y[:300], 1)  # some label ties

    def block_sums(fn):
        tot = 0.0
        for lo in range(0, m, 500):
            tot += fn(y[lo:lo + 500, None], y[None, :], f[lo:lo + 500, None], f[None, :]).sum()
        return tot

    npairs = m * (m - 1) / 2
    hinge = block_sums(lambda yi, yj, fi, fj: (yi > yj) * np.maximum((yi - fi) - (yj - fj), 0.0)) / npairs
    assert M.stability_ranking_loss(y, f, loss="hinge") == pytest.approx(hinge, rel=1e-9)
    g = 0.7
    l_g = block_sums(lambda yi, yj, fi, fj: (yi > yj) * np.clip((yi - yj) - (fi - fj) / g, 0.0, yi - yj)) / npairs
    assert M.stability_ranking_loss(y, f, loss="gamma", gamma=g) == pytest.approx(l_g, rel=1e-9)
    mis = lambda yi, yj, fi, fj: (yi > yj) & (fi < fj)  # noqa: E731
    hr2 = 2 * block_sums(lambda yi, yj, fi, fj: mis(yi, yj, fi, fj) * (fj - fi) ** 2) / m**2
    assert M.magnitude_preserving_cost(y, f, cost="hr", power=2) == pytest.approx(hr2, rel=1e-9)
    hmp2 = 2 * block_sums(lambda yi, yj, fi, fj: mis(yi, yj, fi, fj) * ((yi - yj) + (fj - fi)) ** 2) / m**2
    assert M.magnitude_preserving_cost(y, f, cost="hmp", power=2) == pytest.approx(hmp2, rel=1e-9)
    sq = block_sums(lambda yi, yj, fi, fj: (yi != yj) * ((yi - yj) - (fi - fj)) ** 2) / 2 / npairs
    assert M.stability_ranking_loss(y, f, loss="squared") == pytest.approx(sq, rel=1e-9)


@pytest.mark.parametrize("power", [1, 2])
def test_svr_cost_keeps_its_digits_beside_a_wide_epsilon(power):
    """(|dh - dy| - epsilon)_+^n expanded into suffix sums cancelled terms of size epsilon^2: 0 for 5e-7, -2.9e15 for a
    cost of 2.4 (scores of 1e16 beside 0-3, epsilon 1e16).  Oracle: the definition summed in fractions."""
    from fractions import Fraction

    def exact(y, f, g, eps):
        out = []
        for q in np.unique(g):
            r = np.flatnonzero(g == q)
            s = sum(max(abs((Fraction(f[a]) - Fraction(y[a])) - (Fraction(f[b]) - Fraction(y[b]))) - Fraction(eps),
                        Fraction(0)) ** power for a in r for b in r)
            out.append(float(s / len(r) ** 2))
        return np.array(out)

    rng = np.random.default_rng(3)
    cases = [(np.zeros(2), np.array([0.0, 1e6 + 0.001]), np.zeros(2, int), 1e6),
             (np.zeros(5), np.array([0.0, 1.0, 2.0, 3.0, 1e16 + 4]), np.zeros(5, int), 1e16),
             (rng.integers(0, 4, 18).astype(float), np.where(rng.random(18) < 0.3, -1e16, rng.integers(-3, 4, 18)),
              np.repeat([0, 1], 9), 1e16)]
    for y, f, g, eps in cases:
        got = M.magnitude_preserving_cost(y, f, g, cost="svr", power=power, epsilon=eps, average=None)
        np.testing.assert_allclose(got, exact(y, f, g, eps), rtol=1e-12, atol=0)
