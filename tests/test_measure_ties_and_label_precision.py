"""Measures against their definitions where rounding or ties used to change them: labels that differ in their last
bits stay distinct, the rank displacement measures take the expectation over the orders of tied predictions (a
constant prediction never beats a random one), exponential gains of tiny grades keep their group, and inputs or
options of the wrong kind are refused by name."""

import itertools
from pathlib import Path

import numpy as np
import pytest

import fastrank
import fastrank.bounds as B
import fastrank.metrics as M
from fastrank.exceptions import IllConditionedWarning


def _oracle_disagreement(y, f):
    num = den = 0.0
    for i, j in itertools.combinations(range(len(y)), 2):
        if y[i] != y[j]:
            den += 1
            d = (y[i] - y[j]) * (f[i] - f[j])
            num += 1.0 if d < 0 else 0.5 if f[i] == f[j] else 0.0
    return num / den


def test_labels_a_rounding_apart_are_not_tied():
    # y - min(y) rounds 1 and 1 - 2^-53 to the integer 1 when min(y) = -1e-16: the table of integer labels merged them
    y = np.array([-1e-16, 1.0, np.nextafter(1.0, 0.0), 2.0])
    f = np.array([0.0, 1.0, 2.0, 0.5])
    ranks, values = M._label_ranks(y)
    assert np.unique(ranks).size == 4 and np.array_equal(values[ranks], y)
    pairs = list(itertools.combinations(range(4), 2))
    expected = _oracle_disagreement(y, f)
    assert M.pairwise_disagreement(y, f) == pytest.approx(expected, rel=1e-15)
    assert M.pairwise_disagreement(y, f, sample_weight=np.ones(4)) == pytest.approx(expected, rel=1e-15)
    discordant = sum((y[i] - y[j]) * (f[i] - f[j]) < 0 for i, j in pairs)
    assert M.kendall_distance(y, f, normalize=False) == discordant
    assert M.stability_ranking_loss(y, f, loss="0-1") == pytest.approx(discordant / 6, rel=1e-15)


@pytest.mark.parametrize("seed", range(20))
def test_near_integer_labels_against_the_pairs(seed):
    rng = np.random.default_rng(seed)
    base = rng.integers(-3, 4, 12).astype(float)
    y = base + rng.choice([0.0, 1.0, -1.0], 12) * np.spacing(base) * rng.integers(0, 2, 12)
    y[0] += rng.choice([0.0, -1e-16, 1e-16])
    f = rng.integers(0, 4, 12).astype(float)
    if np.unique(y).size > 1:
        assert M.pairwise_disagreement(y, f) == pytest.approx(_oracle_disagreement(y, f), rel=1e-14)


def _expected_displacement_oracle(y, f, groups, discount):
    """Mean over every order of the tied predictions of sum_i v_i |sigma(x_i) - sigma'(x_i)|, per group."""
    from scipy.stats import rankdata
    out = []
    for g in np.unique(groups):
        yq, fq = y[groups == g], f[groups == g]
        rt = rankdata(-yq)  # tied labels: mean position
        v = {"none": np.ones_like(rt), "log2": 1.0 / np.log2(1.0 + rt), "reciprocal": 1.0 / rt}[discount]
        blocks = [np.flatnonzero(fq == s) for s in sorted(set(fq), reverse=True)]
        totals = []
        for orders in itertools.product(*[itertools.permutations(b) for b in blocks]):
            pos = np.empty(len(fq))
            pos[np.concatenate([np.array(o, dtype=int) for o in orders])] = np.arange(1, len(fq) + 1)
            totals.append(float(np.sum(v * np.abs(rt - pos))))
        out.append(np.mean(totals))
    return np.array(out)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("discount", ["none", "log2", "reciprocal"])
def test_displacement_measures_take_the_expectation_over_tied_predictions(seed, discount):
    rng = np.random.default_rng(seed)
    m = 9
    y = rng.integers(0, 3, m).astype(float)
    f = rng.integers(0, 3, m).astype(float)  # ties in both
    groups = rng.integers(0, 2, m)
    expected = _expected_displacement_oracle(y, f, groups, discount)
    got = M.discounted_error(y, f, groups, discount=discount, average=None)
    np.testing.assert_allclose(got, expected, rtol=1e-13)
    if discount == "none":
        assert M.get_measure("footrule")(y, f, groups) == pytest.approx(expected.mean(), rel=1e-13)


def test_a_constant_prediction_never_beats_a_random_one():
    y = np.array([5.0, 4, 3, 2, 1])
    rng = np.random.default_rng(0)
    for name in ("footrule", "discounted_error"):
        measure = M.get_measure(name)
        random_mean = np.mean([measure(y, rng.permutation(5).astype(float)) for _ in range(3000)])
        assert measure(y, np.zeros(5)) == pytest.approx(random_mean, rel=0.03)
    assert M.get_measure("footrule")(y, np.zeros(5)) == 8.0  # mean of sum |i - pi(i)| over the 120 orders
    assert M.spearman_footrule(y, np.zeros(5)) == 6.0  # two rankings compared by mean positions, as documented


def test_a_constant_prediction_scores_the_mean_of_every_order_but_in_the_costs_the_docs_name():
    # the design note said a constant prediction "never looks better than a random one" in every measure, the README
    # named the 0-1 loss as the one exception: the costs of score values see no order, and "hr" / "hmp" charge a tie 0
    y = np.array([3.0, 1, 2, 0, 2])
    orders = [np.array(p, dtype=float) for p in itertools.permutations(range(5))]
    differ = []
    for name in set(M.measure_names()) - {"mean_rank_loss"}:  # mean_rank_loss compares labels, not orders
        measure = M.get_measure(name)
        if not np.isclose(measure(y, np.zeros(5)), np.mean([measure(y, f) for f in orders]), rtol=1e-12, atol=0.0):
            differ.append(measure)
    differ.sort(key=lambda m: M.measure_names().index(m.name))
    assert [m.name for m in differ] == ["stability_ranking_loss", "squared_ranking_loss", "msd", "m1d",
                                        "magnitude_preserving_cost", "hinge_rank_cost"]
    assert M.get_measure("hinge_rank_cost")(y, np.zeros(5)) == 0.0
    assert M.magnitude_preserving_cost(y, np.zeros(5), cost="hmp") == 0.0
    root = Path(__file__).resolve().parents[1]
    note = (root / "docs" / "design" / "measures.md").read_text(encoding="utf-8")
    readme = (root / "README.md").read_text(encoding="utf-8")
    for text, start in ((note, "- **Ties in scores**"), (readme, "- **Tied scores**")):
        paragraph = text[text.index(start):].split("\n- ")[0]
        assert "never looks" not in paragraph and "`hmp`" in paragraph.replace('"', "`")
        unnamed = [m.name for m in differ if f"`{m.name}`" not in paragraph and f"`{m.func.__name__}" not in paragraph]
        assert unnamed == []


def test_exponential_gain_of_a_tiny_grade_keeps_its_group():
    f = np.array([0.0, 1.0, 1.0, 0.0])
    got = M.ndcg(np.array([1e-17, 0, 1, 0.0]), f, [0, 0, 1, 1], average=None)
    np.testing.assert_allclose(got, [1 / np.log2(3), 1.0], rtol=1e-15)  # one relevant row at position 2
    assert M.ndcg([1e-17, 0.0], [0.0, 1.0]) == pytest.approx(1 / np.log2(3), rel=1e-15)
    # ERR's satisfaction probabilities keep their digits too: R = (2^g - 1) / 2^gmax
    assert M.err_at_k([1e-17, 0.0], [1.0, 0.0], max_grade=1.0) == pytest.approx(1e-17 * np.log(2) / 2, rel=1e-12)


@pytest.mark.parametrize("bad", [{"a": 1}, {1, 2}, (v for v in [1.0, 2.0])])
def test_non_array_inputs_are_refused_by_name(bad):
    with pytest.raises(TypeError, match="y_true must be numeric"):
        M.ndcg(bad, [1.0, 2.0])
    with pytest.raises(TypeError, match="sample_weight"):
        M.pairwise_disagreement([1.0, 0.0], [1.0, 2.0], sample_weight=bad)
    X = np.random.default_rng(0).normal(size=(10, 2))
    with pytest.raises(TypeError, match="must be numeric"):
        fastrank.RankRLS().fit(X, np.arange(10.0)).score(X, bad)


@pytest.mark.parametrize("call, name", [
    (lambda v: M.magnitude_preserving_cost([3.0, 2, 0, 1], [0.1, 0.4, 0.3, 0.2], power=v), "power"),
    (lambda v: B.magnitude_preserving_bound(10, 1, 1, 1, 0.1, power=v), "power"),
    (lambda v: M.magnitude_preserving_cost([3.0, 2, 0, 1], [0.1, 0.4, 0.3, 0.2], cost=v), "cost"),
    (lambda v: M.ndcg([3.0, 2, 0, 1], [0.1, 0.4, 0.3, 0.2], average=v), "average"),
    (lambda v: M.pairwise_disagreement([3.0, 2, 0, 1], [0.1, 0.4, 0.3, 0.2], tied_scores=v), "tied_scores"),
    (lambda v: M.stability_ranking_loss([3.0, 2, 0, 1], [0.1, 0.4, 0.3, 0.2], loss=v), "loss"),
    (lambda v: M.discounted_error([3.0, 2, 0, 1], [0.1, 0.4, 0.3, 0.2], discount=v), "discount"),
    (lambda v: M.mean_rank_loss([3.0, 2, 0, 1], [0.1, 0.4, 0.3, 0.2], scale=v), "scale"),
    (lambda v: B.empirical_term(None, None, None, term=v), "term"),
])
def test_array_valued_options_are_refused_by_name(call, name):
    with pytest.raises(ValueError, match=rf"^{name} must be .*got array\("):
        call(np.array([1, 2]) if name == "power" else np.array(["a", "b"]))


@pytest.mark.parametrize("func", [M.msd, M.m1d, M.discrete_ranking_loss])
def test_wrappers_name_themselves(func):
    with pytest.raises(ValueError, match=rf"^{func.__name__}: there is no pair to evaluate"):
        func([1.0], [1.0])


def _pair_costs_oracle(y, f):
    """hr and hmp (power 1 and 2, 000 eqs. 4 and 6) over the ordered pairs, and the hinge, squared and gamma losses
    (002 Sect. 5.2.1, eq. 9, Sect. 4) over the unordered ones, straight from the definitions."""
    m = len(y)
    out = dict.fromkeys(["hr1", "hr2", "hmp1", "hmp2", "hinge", "squared", "gamma1", "gamma2.5"], 0.0)
    for i in range(m):
        for j in range(m):
            dh, dy = f[j] - f[i], y[j] - y[i]
            if dh * dy < 0:
                out["hr1"] += abs(dh) / m**2
                out["hr2"] += dh * dh / m**2
                out["hmp1"] += abs(dh - dy) / m**2
                out["hmp2"] += (dh - dy) ** 2 / m**2
            if y[i] > y[j]:  # u = (f_i - f_j) sgn(y_i - y_j)
                d, u = y[i] - y[j], f[i] - f[j]
                out["hinge"] += max(d - u, 0.0) / (m * (m - 1) / 2)
                out["squared"] += (d - u) ** 2 / (m * (m - 1) / 2)
                for gamma in (1.0, 2.5):  # |d| if u <= 0, |d| - u / gamma below |d|, else 0
                    out[f"gamma{gamma:g}"] += (d if u <= 0 else max(d - u / gamma, 0.0)) / (m * (m - 1) / 2)
    return out


def _pair_costs(y, f):
    return {"hr1": M.magnitude_preserving_cost(y, f, cost="hr", power=1),
            "hr2": M.magnitude_preserving_cost(y, f, cost="hr", power=2),
            "hmp1": M.magnitude_preserving_cost(y, f, cost="hmp", power=1),
            "hmp2": M.magnitude_preserving_cost(y, f, cost="hmp", power=2),
            "hinge": M.stability_ranking_loss(y, f, loss="hinge"),
            "squared": M.stability_ranking_loss(y, f, loss="squared"),
            "gamma1": M.stability_ranking_loss(y, f, loss="gamma"),
            "gamma2.5": M.stability_ranking_loss(y, f, loss="gamma", gamma=2.5)}


@pytest.mark.parametrize("y, f", [
    # scores 0 and 1e-18 beside a group mean of 3.5: centred, they rounded to one value and the mis-ordered pair fell out
    ([3.0, 0.0, 1.0, 2.0], [0.0, 1e-18, 5.0, 9.0]),
    # labels 0 and 1e-17 beside a mean of 333: a relevant pair with a hinge loss of 1
    ([0.0, 1e-17, 1000.0], [1.0, 0.0, 2.0]),
])
def test_values_a_rounding_apart_near_zero_keep_their_pairs(y, f):
    y, f = np.array(y), np.array(f)
    got, expected = _pair_costs(y, f), _pair_costs_oracle(y, f)
    for name in expected:
        assert got[name] == pytest.approx(expected[name], rel=1e-12, abs=1e-300), name


@pytest.mark.parametrize("seed", range(10))
def test_tiny_values_beside_large_ones_against_the_pairs(seed):
    rng = np.random.default_rng(seed)
    tiny = rng.choice([0.0, 1e-18, -1e-18, 3e-17], 9)
    y = np.where(rng.random(9) < 0.5, tiny, rng.integers(1, 4, 9) * 1e3)
    f = np.where(rng.random(9) < 0.5, rng.permutation(tiny), rng.normal(size=9) * 1e3)
    got, expected = _pair_costs(y, f), _pair_costs_oracle(y, f)
    for name in expected:
        assert got[name] == pytest.approx(expected[name], rel=1e-9, abs=1e-300), name


def test_tiny_scores_on_the_merge_sort_route():
    # more than 4096 distinct labels and scores: the merge sort of the dominance sums, not the Fenwick tree
    rng = np.random.default_rng(0)
    m = 4200
    y = rng.permutation(m).astype(float)
    f = rng.normal(size=m) * 1e3
    f[:2], y[:2] = [0.0, 1e-18], [1.0, 0.0]  # a mis-ordered pair whose scores centring merged
    pairs = 0.0
    for lo in range(0, m, 600):  # hmp with power 1 over the ordered pairs, in row blocks
        dh, dy = f[None, :] - f[lo:lo + 600, None], y[None, :] - y[lo:lo + 600, None]
        pairs += np.abs(dh - dy)[dh * dy < 0].sum()
    assert M.magnitude_preserving_cost(y, f, cost="hmp", power=1) == pytest.approx(pairs / m**2, rel=1e-9)


def _weighted_disagreement_oracle(y, f, w):
    num = den = 0.0
    for i, j in itertools.permutations(range(len(y)), 2):
        if y[i] > y[j]:
            den += w[i] * w[j]
            num += w[i] * w[j] * (1.0 if f[i] < f[j] else 0.5 if f[i] == f[j] else 0.0)
    return num, den


@pytest.mark.parametrize("scale", [1e-170, 1e-200, 1e160])
def test_weights_of_one_query_tiny_beside_another_keep_their_query(scale):
    # one global rescaling of the weights left the first query's products w_i w_j at 0: it was skipped
    y, f = np.array([1.0, 0.0, 1.0, 0.0, 2.0]), np.array([0.0, 1.0, 1.0, 0.0, 0.5])
    g, w = np.array([0, 0, 1, 1, 1]), np.array([scale, 2 * scale, 1.0, 3.0, 0.5])
    per = [_weighted_disagreement_oracle(y[g == q], f[g == q], w[g == q] / w[g == q].max()) for q in (0, 1)]
    expected = np.array([n / d for n, d in per])
    got = M.pairwise_disagreement(y, f, g, sample_weight=w, average=None)
    assert got == pytest.approx(expected, rel=1e-14)
    assert M.pairwise_disagreement(y, f, g, sample_weight=w) == pytest.approx(expected.mean(), rel=1e-14)
    # pooled: every pair weighs w_i w_j, the group's sums times (its largest weight / the largest weight)^2
    top = np.array([w[g == q].max() for q in (0, 1)])
    factor = (top / top.max()) ** 2
    n, d = (np.array(v) * factor for v in zip(*per))
    assert M.pairwise_disagreement(y, f, g, sample_weight=w, average="pooled") == pytest.approx(n.sum() / d.sum(),
                                                                                             rel=1e-14)


@pytest.mark.parametrize("big", [1e12, 1e16, 1e17, 1e150])
def test_one_outlying_score_leaves_the_other_pairs_their_loss(big):
    # the dominance sums centred on the group mean, which one outlier sets: the others' O(1) pairs lost every digit;
    # the gamma loss, a difference of two sweeps whose terms grow with the score differences, gave 0 for 5/3
    y, f = np.array([1.0, 0.0, 0.0, 2.0]), np.array([0.0, 0.0, 0.5, big])
    got, expected = _pair_costs(y, f), _pair_costs_oracle(y, f)
    for name in expected:
        assert got[name] == pytest.approx(expected[name], rel=1e-12, abs=1e-300), name
    assert expected["hinge"] == pytest.approx(5 / 12) and expected["hmp1"] == pytest.approx(0.1875)


@pytest.mark.parametrize("outlying", ["scores", "labels"])
@pytest.mark.parametrize("seed", range(8))
def test_a_few_outliers_against_the_pairs(seed, outlying):
    # outlying labels sit in the sweeps' tree dimension (few distinct values), outlying scores in the sorted one
    rng = np.random.default_rng(seed)
    y, f = rng.integers(0, 4, 11).astype(float), rng.normal(size=11)
    (f if outlying == "scores" else y)[rng.choice(11, 2, replace=False)] = (rng.choice([-1, 1], 2)
                                                                            * 10.0 ** rng.uniform(15, 150, 2))
    got, expected = _pair_costs(y, f), _pair_costs_oracle(y, f)
    for name in expected:
        assert got[name] == pytest.approx(expected[name], rel=1e-9, abs=1e-300), name


def _magnitude_oracle(y, f, power, epsilon=0.0):
    """(1/m^2) sum_ij (|(f_j - f_i) - (y_j - y_i)| - epsilon)_+^power in rational arithmetic."""
    from fractions import Fraction
    y, f, eps = [Fraction(v) for v in y], [Fraction(v) for v in f], Fraction(epsilon)
    m = len(y)
    return float(sum(max(abs((f[j] - f[i]) - (y[j] - y[i])) - eps, 0) ** power
                     for i in range(m) for j in range(m)) / m**2)


@pytest.mark.parametrize("y, f", [
    ([1e20, 1e20, 1e20], [0.0, 1.0, 0.0]),  # labels at 1e20, scores of 1: f - y rounded the scores away (msd 0)
    ([5.0, 5.0, 3.0], [1e16, 1e16 + 2, 1e16 + 4]),  # scores at 1e16 beside labels of 5: msd 8 for 12.44
    ([0.0, 0.0, 0.0], [1e9, 1e9 + 2**-10, 1e9 + 2**-10]),
])
def test_magnitude_costs_of_an_offset_in_labels_or_scores(y, f):
    y, f = np.array(y), np.array(f)
    for power in (1, 2):
        assert M.magnitude_preserving_cost(y, f, power=power) == pytest.approx(_magnitude_oracle(y, f, power),
                                                                               rel=1e-12)
        assert M.magnitude_preserving_cost(y, f, cost="svr", power=power, epsilon=0.5) == pytest.approx(
            _magnitude_oracle(y, f, power, 0.5), rel=1e-12, abs=1e-300)
    assert M.msd(y, f) == pytest.approx(_magnitude_oracle(y, f, 2), rel=1e-12)
    assert M.m1d(y, f) == pytest.approx(_magnitude_oracle(y, f, 1), rel=1e-12)


def test_gamma_loss_per_group_with_one_outlying_group_and_the_limit_of_its_pairs():
    # only the group whose sums cancel is summed over its pairs; the others keep the sweeps' values
    rng = np.random.default_rng(3)
    y, f, g = rng.integers(0, 4, 24).astype(float), rng.normal(size=24), np.repeat([5, 1, 9], 8)
    f[3] = 1e17
    expected = [_pair_costs_oracle(y[g == q], f[g == q])["gamma2.5"] for q in (1, 5, 9)]
    got = M.stability_ranking_loss(y, f, g, loss="gamma", gamma=2.5, average=None)
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    # beyond 20,000 rows in the group the O(n^2) pairs are not summed: the loss warns that it lost digits
    m = 20001
    y, f = rng.integers(0, 4, m).astype(float), rng.normal(size=m)
    f[0] = -1e17
    with pytest.warns(IllConditionedWarning, match="keeps fewer than about 9 digits"):
        M.stability_ranking_loss(y, f, loss="gamma")


@pytest.mark.parametrize("outlying", ["scores", "labels"])
@pytest.mark.parametrize("seed", range(6))
def test_values_at_two_scales_keep_the_small_pairs_digits(seed, outlying):
    # half the rows at a far value set the group's median: the others, less it, rounded to whole numbers, and where
    # the far rows form no counted pair with them, every counted pair lost its digits (the gamma loss 0 for 9/28, the
    # hinge 0.857 for 0.464), with no warning
    rng = np.random.default_rng(seed)
    big = 10.0 ** rng.uniform(16, 150)
    y = np.r_[rng.integers(2, 5, 6), rng.integers(0, 2, 6)].astype(float)
    f = np.r_[rng.normal(size=6), rng.normal(size=6)]
    if outlying == "scores":  # the far rows ranked last, with the lowest labels
        f[6:] = -big
    else:  # the far rows with the highest labels, ranked first
        y[6:], f[6:] = big + y[6:], 10.0 + f[6:]
    got, expected = _pair_costs(y, f), _pair_costs_oracle(y, f)
    for name in expected:
        assert got[name] == pytest.approx(expected[name], rel=1e-9, abs=1e-300), name
