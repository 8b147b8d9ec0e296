"""fastrank.metrics against slow O(m^2) oracles written from the papers' definitions."""

import itertools

import numpy as np
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import ndcg_score, roc_auc_score

from fastrank import metrics as M

# ---------------------------------------------------------------------------------------------
# oracles: explicit pair loops


def _group_blocks(groups, m):
    if groups is None:
        return [np.arange(m)]
    groups = np.asarray(groups)
    return [np.flatnonzero(groups == g) for g in np.unique(groups)]


def _pairs(idx):
    return itertools.combinations(idx, 2)


def oracle_disagreement(y, f, groups=None, ties="error", average="group"):
    """004 eq. (1): over relevant pairs (y_i != y_j), error if the higher label does not score higher."""
    w = 1.0 if ties == "error" else 0.5
    errs, rels = [], []
    for idx in _group_blocks(groups, len(y)):
        e = r = 0.0
        for i, j in _pairs(idx):
            if y[i] == y[j]:
                continue
            hi, lo = (i, j) if y[i] > y[j] else (j, i)
            r += 1
            if f[hi] < f[lo]:
                e += 1
            elif f[hi] == f[lo]:
                e += w
        if r > 0:
            errs.append(e)
            rels.append(r)
    if not rels:
        raise ValueError("no pair")
    errs, rels = np.array(errs), np.array(rels)
    return errs.sum() / rels.sum() if average == "pooled" else np.mean(errs / rels)


def oracle_discrete_loss(y, f, groups=None, average="group"):
    """002 eq. (2)."""
    nums, dens = [], []
    for idx in _group_blocks(groups, len(y)):
        if len(idx) < 2:
            continue
        s = 0.0
        for i, j in _pairs(idx):
            pen = float((y[i] - y[j]) * (f[i] - f[j]) < 0) + 0.5 * float(f[i] == f[j])
            s += abs(y[i] - y[j]) * pen
        nums.append(s)
        dens.append(len(idx) * (len(idx) - 1) / 2)
    nums, dens = np.array(nums), np.array(dens)
    return nums.sum() / dens.sum() if average == "pooled" else np.mean(nums / dens)


def oracle_msd_m1d(y, h, groups=None, average="group", power=2):
    """000 eqs. (67), (68): (1/m^2) sum_i sum_j |(h_j - h_i) - (y_j - y_i)|^power."""
    nums, dens = [], []
    for idx in _group_blocks(groups, len(y)):
        if len(idx) < 2:
            continue
        s = 0.0
        for i in idx:
            for j in idx:
                s += abs((h[j] - h[i]) - (y[j] - y[i])) ** power
        nums.append(s)
        dens.append(len(idx) ** 2)
    nums, dens = np.array(nums), np.array(dens, dtype=float)
    return nums.sum() / dens.sum() if average == "pooled" else np.mean(nums / dens)


def oracle_kendall(a, b):
    """003: |{(j, l) : a_j > a_l and b_j < b_l}|."""
    return sum(1 for j in range(len(a)) for l in range(len(a)) if a[j] > a[l] and b[j] < b[l])


def oracle_dcg_tie_average(gains, scores, k):
    """Expected DCG over every ordering that sorts the scores decreasingly (ties permuted)."""
    n = len(gains)
    disc = np.array([1 / np.log2(p + 2) if p < k else 0.0 for p in range(n)])
    vals = []
    for perm in itertools.permutations(range(n)):
        s = np.asarray(scores)[list(perm)]
        if np.all(np.diff(s) <= 0):
            vals.append(np.sum(np.asarray(gains)[list(perm)] * disc))
    return np.mean(vals)


# ---------------------------------------------------------------------------------------------
# strategies


@st.composite
def labelled_scores(draw, max_m=30, grouped=False):
    m = draw(st.integers(2, max_m))
    n_labels = draw(st.integers(1, 6))
    n_scores = draw(st.integers(1, 12))
    y = np.array(draw(st.lists(st.integers(0, n_labels - 1), min_size=m, max_size=m)), dtype=float)
    f = np.array(draw(st.lists(st.integers(0, n_scores - 1), min_size=m, max_size=m)), dtype=float)
    f = f * draw(st.sampled_from([1.0, -0.5, 0.1]))
    y = y * draw(st.sampled_from([1.0, 0.5, -3.0]))
    groups = None
    if grouped:
        ids = draw(st.lists(st.sampled_from([7, -3, 100, 2, 55]), min_size=m, max_size=m))
        groups = np.array(ids)
    return y, f, groups


def _has_relevant(y, groups):
    return any(np.unique(y[idx]).size > 1 for idx in _group_blocks(groups, len(y)))


# ---------------------------------------------------------------------------------------------
# pairwise disagreement


@settings(max_examples=150, deadline=None)
@given(labelled_scores(grouped=True), st.sampled_from(["wrong", "half"]), st.sampled_from(["group", "pooled"]))
def test_disagreement_matches_pair_oracle(data, tied, average):
    y, f, groups = data
    for g in (None, groups):
        if not _has_relevant(y, g):
            with pytest.raises(ValueError, match="no pair"):
                M.pairwise_disagreement(y, f, g, tied_scores=tied, average=average)
            continue
        expected = oracle_disagreement(y, f, g, "error" if tied == "wrong" else "half", average)
        got = M.pairwise_disagreement(y, f, g, tied_scores=tied, average=average)
        assert got == pytest.approx(expected, rel=1e-12, abs=1e-15)


def test_disagreement_paper_convention_and_tie_options():
    y = np.array([0.0, 1.0, 2.0])
    f = np.array([0.0, 0.0, 5.0])  # pair (0,1) tied, others correct
    assert M.pairwise_disagreement(y, f, tied_scores="wrong") == pytest.approx(1 / 3)
    assert M.pairwise_disagreement(y, f) == pytest.approx(1 / 6)  # the default counts a tie 1/2
    with pytest.warns(FutureWarning, match="tied_scores"):
        assert M.pairwise_disagreement(y, f, ties="error") == pytest.approx(1 / 3)
    assert M.pairwise_disagreement(y, -f, tied_scores="wrong") == pytest.approx(1.0)
    assert M.pairwise_disagreement([1, 1, 0], [-0.0, 0.0, 1.0]) == pytest.approx(1.0)  # -0.0 == 0.0 tie


def test_disagreement_group_average_differs_from_pooled():
    # group a: 1 relevant pair, wrong; group b: 4 relevant pairs, right.
    y = np.array([1, 0, 1, 1, 0, 0])
    f = np.array([0, 1, 5, 5, 1, 1])
    g = np.array(["a", "a", "b", "b", "b", "b"])
    assert M.pairwise_disagreement(y, f, g) == pytest.approx(0.5)
    assert M.pairwise_disagreement(y, f, g, average="pooled") == pytest.approx(1 / 5)
    # a group without relevant pairs is skipped
    y2 = np.r_[y, 3, 3]
    f2 = np.r_[f, 0, 1]
    g2 = np.concatenate([g, ["c", "c"]])
    assert M.pairwise_disagreement(y2, f2, g2) == pytest.approx(0.5)


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_disagreement_large_label_sets_and_threads(n_jobs):
    # continuous labels: Fenwick path (K > 32) and group-local ranks (K > 4 n_g)
    rng = np.random.default_rng(3)
    m = 400
    y = rng.normal(size=m)
    f = np.round(y + rng.normal(size=m), 1)
    groups = rng.integers(0, 9, size=m) * 3
    for g in (None, groups):
        for avg in ("group", "pooled"):
            expected = oracle_disagreement(y, f, g, "error", avg)
            got = M.pairwise_disagreement(y, f, g, average=avg, n_jobs=n_jobs, tied_scores="wrong")
            assert got == pytest.approx(expected, rel=1e-12)
    # many distinct labels in a few groups: direct tables would be wrong if used (K = 40)
    y = rng.integers(0, 40, size=m).astype(float)
    assert M.pairwise_disagreement(y, f, groups, n_jobs=n_jobs, tied_scores="wrong") == pytest.approx(
        oracle_disagreement(y, f, groups), rel=1e-12)


def test_disagreement_hash_and_sort_rank_paths():
    rng = np.random.default_rng(4)
    m = 300
    f = np.round(rng.normal(size=m), 1)
    y_hash = rng.choice([0.25, -1.5, 3.75, 1e-3], size=m)  # non-integer, few values
    y_sort = rng.normal(size=m) * 1e3  # many values, non-integer -> argsort fallback
    y_int = rng.integers(-10**6, 10**6, size=m).astype(float)  # integers, huge range
    for y in (y_hash, y_sort, y_int):
        assert M.pairwise_disagreement(y, f, tied_scores="wrong") == pytest.approx(oracle_disagreement(y, f), rel=1e-12)


# ---------------------------------------------------------------------------------------------
# AUC, Kendall, footrule


@settings(max_examples=100, deadline=None)
@given(labelled_scores())
def test_auc_matches_sklearn_and_disagreement(data):
    y, f, _ = data
    yb = (y > np.median(y)).astype(int)
    if np.unique(yb).size < 2:
        with pytest.raises(ValueError, match="two distinct"):
            M.auc(yb, f)
        return
    assert M.auc(yb, f) == pytest.approx(roc_auc_score(yb, f), rel=1e-12)
    assert M.auc(yb, f) == pytest.approx(1 - M.pairwise_disagreement(yb, f, tied_scores="half"), rel=1e-12)
    assert M.auc(yb * 2 - 1, f) == pytest.approx(M.auc(yb.astype(bool), f))


@settings(max_examples=150, deadline=None)
@given(labelled_scores())
def test_kendall_distance_matches_oracle_and_scipy(data):
    a, b, _ = data
    m = len(a)
    d = oracle_kendall(a, b)
    assert M.kendall_distance(a, b, normalize=False) == d
    assert M.kendall_distance(a, b) == pytest.approx(d / (m * (m - 1) / 2), rel=1e-12)
    # scipy's tau-b: tau_b = (C - D) / sqrt((n0 - n1)(n0 - n2)), C + D = n0 - n1 - n2 + n3
    n0 = m * (m - 1) / 2
    tie = lambda v: sum(c * (c - 1) / 2 for c in np.unique(v, return_counts=True)[1])  # noqa: E731
    n1, n2 = tie(a), tie(b)
    n3 = sum(c * (c - 1) / 2 for c in np.unique(np.c_[a, b], axis=0, return_counts=True)[1])
    if n0 - n1 > 0 and n0 - n2 > 0:
        tau = scipy.stats.kendalltau(a, b).statistic
        d_scipy = ((n0 - n1 - n2 + n3) - tau * np.sqrt((n0 - n1) * (n0 - n2))) / 2
        assert d == pytest.approx(d_scipy, abs=1e-7)


def test_kendall_without_ties_is_one_minus_tau_over_two():
    rng = np.random.default_rng(5)
    a, b = rng.normal(size=200), rng.normal(size=200)
    tau = scipy.stats.kendalltau(a, b).statistic
    assert M.kendall_distance(a, b) == pytest.approx((1 - tau) / 2, rel=1e-12)
    # slide example: 4 inverted pairs
    assert M.kendall_distance([5, 4, 3, 2, 1], [5, 4, 3, 2, 1], normalize=False) == 0
    assert M.kendall_distance(np.arange(6), -np.arange(6), normalize=False) == 15


@settings(max_examples=100, deadline=None)
@given(labelled_scores())
def test_spearman_footrule_matches_rankdata(data):
    a, b, _ = data
    expected = np.abs(scipy.stats.rankdata(a) - scipy.stats.rankdata(b)).sum()
    assert M.spearman_footrule(a, b) == pytest.approx(expected, rel=1e-12)


def test_footrule_small():
    assert M.spearman_footrule([1, 2, 3], [3, 2, 1]) == 4.0
    assert M.spearman_footrule([1, 1, 2], [1, 2, 3]) == 1.0  # ranks (1.5, 1.5, 3) vs (1, 2, 3)


# ---------------------------------------------------------------------------------------------
# MSD, M1D, discrete ranking loss


@settings(max_examples=100, deadline=None)
@given(labelled_scores(max_m=20, grouped=True), st.sampled_from(["group", "pooled"]))
def test_msd_m1d_match_double_sums(data, average):
    y, f, groups = data
    f = f + 0.37 * np.arange(len(f)) ** 1.5  # break the lattice
    for g in (None, groups):
        sizes = [len(idx) for idx in _group_blocks(g, len(y))]
        if max(sizes) < 2:
            with pytest.raises(ValueError, match="no pair"):
                M.msd(y, f, g, average=average)
            continue
        assert M.msd(y, f, g, average=average) == pytest.approx(
            oracle_msd_m1d(y, f, g, average, 2), rel=1e-9, abs=1e-12)
        assert M.m1d(y, f, g, average=average) == pytest.approx(
            oracle_msd_m1d(y, f, g, average, 1), rel=1e-9, abs=1e-12)


@settings(max_examples=150, deadline=None)
@given(labelled_scores(grouped=True), st.sampled_from(["group", "pooled"]))
def test_discrete_ranking_loss_matches_eq2(data, average):
    y, f, groups = data
    for g in (None, groups):
        sizes = [len(idx) for idx in _group_blocks(g, len(y))]
        if max(sizes) < 2:
            continue
        assert M.discrete_ranking_loss(y, f, g, average=average) == pytest.approx(
            oracle_discrete_loss(y, f, g, average), rel=1e-10, abs=1e-14)


def test_discrete_ranking_loss_continuous_labels():
    rng = np.random.default_rng(6)
    y = rng.uniform(0, 3, size=250)
    f = np.round(y + rng.normal(size=250), 1)
    g = rng.integers(0, 5, size=250)
    assert M.discrete_ranking_loss(y, f) == pytest.approx(oracle_discrete_loss(y, f), rel=1e-10)
    assert M.discrete_ranking_loss(y, f, g, n_jobs=2) == pytest.approx(oracle_discrete_loss(y, f, g), rel=1e-10)


# ---------------------------------------------------------------------------------------------
# NDCG


@pytest.mark.parametrize("k", [None, 1, 3, 10])
def test_ndcg_matches_sklearn_equal_groups_with_ties(k):
    rng = np.random.default_rng(7)
    Y = rng.integers(0, 4, size=(12, 8)).astype(float)
    Y[Y.sum(axis=1) == 0, 0] = 1.0  # sklearn counts all-zero queries as 0; we skip them
    S = np.round(rng.normal(size=(12, 8)), 1)  # many ties
    # rows of each query scattered, ids unsorted and non-contiguous
    ids = np.repeat(np.arange(12) * 7 - 20, 8)
    perm = rng.permutation(ids.size)
    got = M.ndcg(Y.ravel()[perm], S.ravel()[perm], ids[perm], k=k, gain="linear")
    assert got == pytest.approx(ndcg_score(Y, S, k=k), rel=1e-12)
    # exponential gain = linear gain on 2^y - 1
    got_exp = M.ndcg(Y.ravel()[perm], S.ravel()[perm], ids[perm], k=k)
    assert got_exp == pytest.approx(ndcg_score(2 ** Y - 1, S, k=k), rel=1e-12)


def test_ndcg_tie_average_is_expectation_over_orderings_ragged_groups():
    rng = np.random.default_rng(8)
    sizes = [1, 2, 5, 6, 3]
    y = np.concatenate([rng.integers(0, 3, s) for s in sizes]).astype(float)
    f = np.concatenate([rng.integers(0, 3, s) for s in sizes]).astype(float)
    g = np.repeat(np.arange(len(sizes)), sizes)
    for k, gain in [(None, "exponential"), (2, "linear"), (4, "exponential")]:
        vals = []
        for q in range(len(sizes)):
            yq, fq = y[g == q], f[g == q]
            gq = 2 ** yq - 1 if gain == "exponential" else yq
            kk = len(yq) if k is None else k
            ideal = oracle_dcg_tie_average(np.sort(gq)[::-1], -np.arange(len(gq)), kk)
            if ideal > 0:
                vals.append(oracle_dcg_tie_average(gq, fq, kk) / ideal)
        assert M.ndcg(y, f, g, k=k, gain=gain) == pytest.approx(np.mean(vals), rel=1e-12)


def test_ndcg_skips_irrelevant_groups_and_errors():
    y = np.array([0, 0, 1, 0, 2.0])
    f = np.array([1, 2, 1, 2, 3.0])
    g = np.array([0, 0, 1, 1, 1])
    alone = M.ndcg(y[2:], f[2:])
    assert M.ndcg(y, f, g) == pytest.approx(alone)
    with pytest.raises(ValueError, match="relevant"):
        M.ndcg([0, 0], [1, 2])
    with pytest.raises(ValueError, match="non-negative"):
        M.ndcg([-1, 2], [1, 2])
    with pytest.raises(ValueError, match="k must"):
        M.ndcg([1, 2], [1, 2], k=0)
    with pytest.raises(ValueError, match="gain"):
        M.ndcg([1, 2], [1, 2], gain="log")
    assert M.ndcg([0, 1, 2], [0, 1, 2]) == 1.0
    assert M.ndcg([0, 1, 2], [2, 1, 0], n_jobs=2) < 1.0


# ---------------------------------------------------------------------------------------------
# mean rank loss


def test_mean_rank_loss():
    # default: Harrington's (1/T) sum |yhat - y| on the label values themselves
    assert M.mean_rank_loss([1, 5], [5, 1]) == 4.0
    assert M.mean_rank_loss([1, 2, 5], [5, 5, 1]) == pytest.approx((4 + 3 + 4) / 3)
    assert M.mean_rank_loss([0.0, 0.2], [0.4, 0.2]) == pytest.approx(0.2)
    with pytest.raises(ValueError, match="scale='positions'"):
        M.mean_rank_loss([1, 2], [1, 2], classes=[1, 2])
    with pytest.raises(ValueError, match="numeric"):
        M.mean_rank_loss(["lo", "hi"], ["hi", "lo"])
    with pytest.raises(ValueError, match="scale must be"):
        M.mean_rank_loss([1, 2], [1, 2], scale="ranks")
    # positions, only when asked: labels {1, 2, 5} -> positions 1, 2, 3
    assert M.mean_rank_loss([1, 5], [5, 1], scale="positions") == 1.0
    assert M.mean_rank_loss([1, 2, 5], [5, 5, 1], scale="positions") == pytest.approx((2 + 1 + 2) / 3)
    assert M.mean_rank_loss(["lo", "hi"], ["hi", "mid"], scale="positions",
                            classes=["lo", "mid", "hi"]) == pytest.approx(1.5)
    assert M.mean_rank_loss([3, 1], [3, 1], scale="positions", classes=[3, 2, 1]) == 0.0
    with pytest.raises(ValueError, match="not in classes"):
        M.mean_rank_loss([1, 4], [1, 2], scale="positions", classes=[1, 2, 3])
    with pytest.raises(ValueError, match="duplicates"):
        M.mean_rank_loss([1], [1], scale="positions", classes=[1, 1])
    with pytest.raises(ValueError, match="inconsistent"):
        M.mean_rank_loss([1, 2], [1])
    with pytest.raises(ValueError, match="NaN"):
        M.mean_rank_loss([1.0, np.nan], [1.0, 2.0])
    rng = np.random.default_rng(9)
    yt, yp = rng.integers(0, 7, 100), rng.integers(0, 7, 100)
    classes = np.unique(np.r_[yt, yp])
    expected = np.mean([abs(list(classes).index(a) - list(classes).index(b)) for a, b in zip(yt, yp)])
    assert M.mean_rank_loss(yt, yp, scale="positions") == pytest.approx(expected)
    assert M.mean_rank_loss(yt, yp) == pytest.approx(np.mean([abs(int(a) - int(b)) for a, b in zip(yt, yp)]))
    # consecutive integer ranks 1..k: both conventions agree
    r1, r2 = rng.integers(1, 6, 50), rng.integers(1, 6, 50)
    r1[:5], r2[:5] = np.arange(1, 6), np.arange(1, 6)
    assert M.mean_rank_loss(r1, r2) == M.mean_rank_loss(r1, r2, scale="positions")


# ---------------------------------------------------------------------------------------------
# validation


@pytest.mark.parametrize("fn", [M.pairwise_disagreement, M.auc, M.kendall_distance, M.spearman_footrule,
                                M.msd, M.m1d, M.discrete_ranking_loss, M.ndcg])
def test_bad_input(fn):
    with pytest.raises(ValueError, match="NaN or infinity"):
        fn([0, 1, 1], [0.1, np.nan, 0.3])
    with pytest.raises(ValueError, match="NaN or infinity"):
        fn([0, 1, np.inf], [0.1, 0.2, 0.3])
    with pytest.raises(ValueError, match="inconsistent"):
        fn([0, 1, 1], [0.1, 0.2])
    with pytest.raises(ValueError, match="empty"):
        fn([], [])
    with pytest.raises(ValueError, match="1-D"):
        fn([[0, 1], [1, 0]], [[0.1, 0.2], [0.3, 0.4]])
    with pytest.raises(ValueError, match="numbers|numeric"):
        fn(["a", "b"], [0.1, 0.2])


def test_bad_groups_and_options():
    with pytest.raises(ValueError, match="groups"):
        M.pairwise_disagreement([0, 1, 2], [1, 2, 3], groups=[0, 1])
    with pytest.raises(ValueError, match="average"):
        M.pairwise_disagreement([0, 1], [1, 2], average="micro")
    with pytest.raises(ValueError, match="tied_scores"):
        M.pairwise_disagreement([0, 1], [1, 2], tied_scores="error")
    with pytest.raises(ValueError, match="no pair"):
        M.pairwise_disagreement([1, 1, 1], [1, 2, 3])
    with pytest.raises(ValueError, match="no pair"):
        M.pairwise_disagreement([0, 1], [1, 2], groups=[0, 1])
    with pytest.raises(ValueError, match="two distinct"):
        M.auc([1, 1, 1], [1, 2, 3])
    with pytest.raises(ValueError, match="at least 2"):
        M.kendall_distance([1.0], [2.0])
    assert M.kendall_distance([1.0], [2.0], normalize=False) == 0
    with pytest.raises(ValueError, match="n_jobs"):
        M.pairwise_disagreement([0, 1], [1, 2], n_jobs=0)


def test_many_distinct_labels_merge_path_against_chunked_pairs():
    # K > 2^14 distinct labels in one group takes the merge-sort path; the oracle compares all
    # 1.6e8 pairs in vectorized chunks.
    rng = np.random.default_rng(10)
    m = 16500
    y = rng.permutation(m).astype(float) * 0.5 + rng.uniform(0, 0.1, m)
    y[:50] = y[50:100]  # some label ties as well
    f = np.round(y / m + rng.normal(size=m), 1)  # heavy score ties
    disc = tied = wdisc = wtied = rel = 0.0
    for i in range(m - 1):  # row i against j > i, one vector at a time (memory stays small)
        dy, df = y[i] - y[i + 1:], f[i] - f[i + 1:]
        ady = np.abs(dy)
        dis = dy * df < 0
        tie = df == 0
        rel += np.count_nonzero(dy)
        disc += np.count_nonzero(dis)
        tied += np.count_nonzero(tie & (dy != 0))
        wdisc += ady[dis].sum()
        wtied += ady[tie].sum()
    assert M.pairwise_disagreement(y, f, tied_scores="wrong") == pytest.approx((disc + tied) / rel, rel=1e-12)
    assert M.pairwise_disagreement(y, f) == pytest.approx((disc + 0.5 * tied) / rel, rel=1e-12)
    assert M.discrete_ranking_loss(y, f) == pytest.approx((wdisc + 0.5 * wtied) / (m * (m - 1) / 2), rel=1e-10)
    assert M.kendall_distance(y, f, normalize=False) == disc
