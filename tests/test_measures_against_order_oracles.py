"""Measures against slow oracles written from their definitions, with groups, tied scores and cutoffs: every
listwise measure as the mean over all orders of the rows consistent with the scores (the tie rule of the measure
table) and ERR@k on large tied blocks (and its memory) by a dynamic programme over the grade counts; and, against
their definitions too, query z-scores of tiny features, the scorers of multi-output models, kernel_kappa of sparse
rows and uint64 query ids."""

import itertools
import math

import numpy as np
import pytest
from scipy.special import comb

from fastrank import metrics as M


def _groups(g, m):
    return [np.arange(m)] if g is None else [np.flatnonzero(g == v) for v in np.unique(g)]


def _orders(f):
    """Every permutation of the rows that sorts f decreasingly (each order of every tied block)."""
    return [np.array(p) for p in itertools.permutations(range(len(f)))
            if all(f[p[i]] >= f[p[i + 1]] for i in range(len(f) - 1))]


def _expected(per_order, y, f, g, skip=lambda yq: False):
    """Per group the mean over the tie orders of per_order(labels in ranked order); NaN for skipped groups."""
    return np.array([np.nan if skip(y[r]) else np.mean([per_order(y[r][p]) for p in _orders(f[r])])
                     for r in _groups(g, len(y))])


def _cut(ys, k):
    return ys[:len(ys) if k is None else k]


def _dcg(ys, k, gain):
    g = 2.0 ** ys - 1 if gain == "exponential" else ys
    return sum(v / math.log2(p + 2) for p, v in enumerate(_cut(g, k)))


def _ap(ys, k):
    rel = ys > 0
    hits = [rel[:p + 1].sum() / (p + 1) for p in range(len(_cut(ys, k))) if rel[p]]
    return sum(hits) / (rel.sum() if k is None else min(rel.sum(), k))


def _rr(ys, k):
    return next((1.0 / (p + 1) for p, v in enumerate(_cut(ys, k)) if v > 0), 0.0)


def _err(ys, k, gmax):
    total, stop = 0.0, 1.0
    for p, g in enumerate(_cut(ys, k)):
        R = (2.0 ** g - 1) / 2.0 ** gmax
        total += stop * R / (p + 1)
        stop *= 1 - R
    return total


def _wrong_before_target(ys):
    """003's position error of one strict order: the wrong items before the first row of the largest label."""
    return int(np.argmax(ys == ys.max()))


def _cases(n_cases, seed):
    rng = np.random.default_rng(seed)
    out = []
    while len(out) < n_cases:
        m = int(rng.integers(1, 15))
        y = rng.integers(0, 4, m).astype(float)
        f = rng.integers(0, 3, m).astype(float) if len(out) % 2 else np.round(rng.normal(size=m), 1)
        g = None if len(out) % 3 == 0 else rng.integers(0, 4, m) * 5 - 2  # unsorted, non-contiguous ids
        if max(r.size for r in _groups(g, m)) <= 7:
            out.append((y, f, g))
    return out


CASES = _cases(60, 0)
no_relevant = lambda yq: not (yq > 0).any()  # noqa: E731


@pytest.mark.parametrize("k", [None, 1, 2, 3, 5, 100])
def test_listwise_measures_equal_the_mean_over_tie_orders(k):
    for y, f, g in CASES:
        checks = [
            (M.ndcg, dict(k=k), lambda ys: _dcg(ys, k, "exponential") / _dcg(np.sort(ys)[::-1], k, "exponential")),
            (M.ndcg, dict(k=k, gain="linear"), lambda ys: _dcg(ys, k, "linear") / _dcg(np.sort(ys)[::-1], k, "linear")),
            (M.mean_average_precision, dict(k=k), lambda ys: _ap(ys, k)),
            (M.mean_reciprocal_rank, dict(k=k), lambda ys: _rr(ys, k)),
            (M.precision_at_k, dict(k=k or 10), lambda ys: (_cut(ys, k or 10) > 0).sum() / (k or 10)),
            (M.err_at_k, dict(k=k), lambda ys: _err(ys, k, y.max())),
            (M.err_at_k, dict(k=k, max_grade=5), lambda ys: _err(ys, k, 5)),
        ]
        for func, kwargs, per_order in checks:
            want = _expected(per_order, y, f, g, no_relevant)
            if np.isnan(want).all():
                with pytest.raises(ValueError, match="no group has a relevant item"):
                    func(y, f, g, **kwargs)
                continue
            np.testing.assert_allclose(func(y, f, g, average=None, **kwargs), want, rtol=1e-10, atol=1e-14)
            assert func(y, f, g, **kwargs) == pytest.approx(np.nanmean(want), rel=1e-10, abs=1e-14)


def test_position_error_equals_the_mean_over_tie_orders():
    for y, f, g in CASES:
        want = _expected(_wrong_before_target, y, f, g)
        np.testing.assert_allclose(M.position_error(y, f, g, average=None), want, rtol=1e-12)
        assert M.position_error(y, f, g) == pytest.approx(want.mean(), rel=1e-12)


def test_position_error_several_targets_tied_with_wrong_items():
    # two targets (label 3) and one wrong item share the top score: the wrong item comes first in 2 of the 6 orders
    # (1/3), not 1/2 as when one target ties
    assert M.position_error([3, 3, 1], [0, 0, 0]) == pytest.approx(1 / 3, rel=1e-15)
    assert M.position_error([3, 0, 0, 3], [2, 1, 2, 2]) == pytest.approx(1 / 3, rel=1e-15)
    # one target: unchanged
    assert M.position_error([3, 1], [0.5, 0.5]) == 0.5
    assert M.get_measure("position_error")([3, 3, 1, 3, 0], [1, 1, 1, 1, 0]) == pytest.approx(0.25, rel=1e-15)


def _err_by_grade_counts(y, f, k, gmax):
    """ERR@k of one group, the expectation over the orders of each tied block by summing over how many rows of each
    grade precede a position (multivariate hypergeometric probabilities): independent of the per-row recurrence."""
    order = np.argsort(-f, kind="stable")
    ys, fs = y[order], f[order]
    R = (2.0 ** np.arange(int(gmax) + 1) - 1) / 2.0 ** gmax
    k = len(y) if k is None else k
    total, stop, start = 0.0, 1.0, 0
    for score in np.unique(fs)[::-1]:
        block = ys[fs == score].astype(int)
        grades, counts = np.unique(block, return_counts=True)
        b = block.size
        for before in itertools.product(*[range(c + 1) for c in counts]):
            t = sum(before)
            if t >= b or start + t + 1 > k:
                continue
            p = math.prod(comb(n, c, exact=True) for n, c in zip(counts, before)) / comb(b, t, exact=True)
            survive = math.prod((1 - R[gr]) ** c for gr, c in zip(grades, before))
            nxt = sum((n - c) / (b - t) * R[gr] for gr, n, c in zip(grades, counts, before))
            total += stop * p * survive * nxt / (start + t + 1)
        stop *= math.prod((1 - R[gr]) ** c for gr, c in zip(grades, counts))
        start += b
    return total


@pytest.mark.parametrize("seed", range(4))
def test_err_at_k_large_tied_blocks(seed):
    rng = np.random.default_rng(seed)
    m = int(rng.integers(66, 130))
    y = rng.integers(0, 2 + seed % 2, m).astype(float)
    f = rng.integers(0, 1 + seed % 3, m).astype(float)
    for k in (None, 5, 70):
        for gmax in (None, 4):
            want = _err_by_grade_counts(y, f, k, y.max() if gmax is None else gmax)
            assert M.err_at_k(y, f, k=k, max_grade=gmax) == pytest.approx(want, rel=1e-10)


def test_err_at_k_tied_blocks_of_mixed_sizes_in_one_call():
    # blocks of 1 to 150 rows in several groups (rows shuffled) share one batched recurrence, which drops blocks as
    # they end and adds positions as the larger ones go on; each group against the grade-count oracle, also with
    # R ~ 2^-60 (max_grade=60), where the terms are relative, not differences of numbers near 1
    rng = np.random.default_rng(7)
    ys, fs, gs = [], [], []
    for q, sizes in enumerate([[150, 3, 1, 20], [2, 2, 70], [1, 1, 1], [5, 40, 2, 9, 1], [64, 65]]):
        for s, size in enumerate(sizes):
            ys.append(rng.choice([0, 1, 2] if size < 30 else [0, 2], size))
            fs.append(np.full(size, 2.0 - s))
            gs.append(np.full(size, 10 - q))
    shuffle = rng.permutation(sum(map(len, ys)))
    y, f, g = (np.concatenate(a)[shuffle].astype(float) for a in (ys, fs, gs))
    for k, gmax in ((None, None), (1, 3), (4, None), (60, 60), (152, 3), (None, 60)):
        want = [_err_by_grade_counts(y[g == q], f[g == q], k, 2 if gmax is None else gmax) for q in range(6, 11)]
        np.testing.assert_allclose(M.err_at_k(y, f, g, k=k, max_grade=gmax, average=None), want, rtol=1e-12, atol=0)


def test_err_at_k_tied_blocks_take_memory_linear_in_the_rows():
    # O(b min(b, k)) work per tied block and O(m) memory, not a (rows x largest block) array: 1000 groups of 64 tied
    # rows fit in 400 bytes a row (the ranking itself takes about 100)
    import tracemalloc

    rng = np.random.default_rng(3)
    m = 64_000
    y, f, g = rng.integers(0, 3, m).astype(float), np.zeros(m), np.arange(m) // 64
    tracemalloc.start()
    try:
        err = M.err_at_k(y, f, g, average=None)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 400 * m
    for q in (0, 517, 999):
        assert err[q] == pytest.approx(_err_by_grade_counts(y[g == q], f[g == q], None, 2), rel=1e-12)


def test_query_zscore_of_tiny_features_is_scale_free():
    # a feature varying by ~1e-170 inside a query: its squared deviations underflow to a std of 0, which would give
    # -inf, inf and NaN (with numpy's "divide by zero" warning).  z-scores do not depend on the feature's scale, and
    # X * 2**-600 is exact, so the result must equal that of X, and the per-query definition
    from fastrank.preprocessing import QueryNormalizer

    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 3))
    g = rng.integers(0, 4, 40)
    want = np.empty_like(X)
    for r in _groups(g, 40):
        want[r] = (X[r] - X[r].mean(axis=0)) / X[r].std(axis=0)
    tiny = X * 2.0 ** -600  # about 1e-181
    for Z in (X, tiny, np.c_[X[:, :1], tiny[:, 1:]]):
        got = QueryNormalizer("zscore").fit(Z).transform(Z, groups=g)
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(QueryNormalizer("zscore").fit(tiny).transform(tiny, groups=g),
                                  QueryNormalizer("zscore").fit(X).transform(X, groups=g))
    # subnormal steps: finite, order kept, constant queries 0
    Z = np.array([[0.0], [5e-324], [1e-320], [7.0], [7.0]])
    out = QueryNormalizer("zscore").fit(Z).transform(Z, groups=[0, 0, 0, 1, 1])
    assert np.isfinite(out).all() and out[0, 0] < out[1, 0] < out[2, 0] and (out[3:] == 0).all()


def _two_output_model():
    import fastrank

    rng = np.random.default_rng(2)
    X = rng.normal(size=(36, 3))
    Y = np.abs(np.c_[X @ [1.0, 2.0, 3.0], X @ [3.0, -1.0, 0.0]] + rng.normal(size=(36, 2)))
    g = np.repeat([4, 1, 9], 12)
    return fastrank.RankRLS(alpha=0.5).fit(X, Y, groups=g), X, Y, g


@pytest.mark.parametrize("name", ["auc", "ndcg@5", "map", "err", "msd", "disagreement", "footrule"])
def test_scorers_of_a_multi_output_model_average_the_outputs(name):
    # est.score and RankRLSCV score a v-output model by the mean over outputs; the scorers raised "y_true must be 1-D"
    est, X, Y, g = _two_output_model()
    P = est.predict(X)
    measure = M.get_measure(name)
    sign = 1 if measure.greater_is_better else -1
    want = np.mean([measure(Y[:, k], P[:, k], g) for k in range(2)])
    assert M.make_ranking_scorer(name)(est, X, Y, groups=g) == pytest.approx(sign * want, rel=1e-12)
    assert M.score_estimator(est, X, Y, g, measure=name) == pytest.approx(want, rel=1e-12)
    if name == "auc":
        assert M.score_estimator(est, X, Y, g) == pytest.approx(est.score(X, Y, g), rel=1e-12)
        w = np.linspace(0.5, 2.0, 36)
        assert M.score_estimator(est, X, Y, g, w) == pytest.approx(est.score(X, Y, g, w), rel=1e-12)
    with pytest.raises(ValueError, match=r"y must have shape \(n_samples, 2\) for this 2-output model"):
        M.make_ranking_scorer(name)(est, X, Y[:, 0], groups=g)


def test_scorers_of_a_one_column_model():
    # fitted on y of shape (n, 1): predictions (n, 1), scored against y as a column or 1-D
    import fastrank

    _, X, Y, g = _two_output_model()
    est = fastrank.RankRLS().fit(X, Y[:, :1], groups=g)
    want = M.ndcg(Y[:, 0], est.predict(X)[:, 0], g)
    for y in (Y[:, 0], Y[:, :1]):
        assert M.make_ranking_scorer("ndcg")(est, X, y, groups=g) == pytest.approx(want, rel=1e-15)
        assert M.score_estimator(est, X, y, g, measure="ndcg") == pytest.approx(want, rel=1e-15)


@pytest.mark.parametrize("kernel,params", [("linear", {}), ("poly", {"degree": 2}), ("rbf", {}),
                                           ("polynomial", {"degree": 2.5, "coef0": 5.0})])
def test_kernel_kappa_of_sparse_rows(kernel, params):
    # the estimators take scipy.sparse X; kernel_kappa refused it ("this estimator needs dense input")
    import scipy.sparse as sp

    from fastrank.bounds import kernel_kappa

    rng = np.random.default_rng(3)
    X = rng.normal(size=(25, 4))
    X[X < 0.3] = 0.0
    if kernel == "rbf":
        want = 1.0
    else:
        dots = np.einsum("ij,ij->i", X, X)
        want = np.sqrt((dots if kernel == "linear" else (dots / 4 + params.get("coef0", 1.0)) ** params["degree"]).max())
    for fmt in ("csr", "csc", "coo"):
        assert kernel_kappa(sp.csr_matrix(X).asformat(fmt), kernel, **params) == pytest.approx(want, rel=1e-13)
    with pytest.raises(ValueError, match="NaN or infinity"):
        kernel_kappa(sp.csr_matrix(np.array([[np.nan, 1.0]])), kernel, **params)


def test_groups_from_qid_refuses_uint64_ids_beyond_int64():
    # 2**64 - 1 came back as the id -1
    from fastrank.utils import groups_from_qid

    with pytest.raises(ValueError, match="below 2\\*\\*63"):
        groups_from_qid(np.array([3, 2**64 - 1], dtype=np.uint64))
    got = groups_from_qid(np.array([2**63 - 1, 0], dtype=np.uint64))
    assert got.dtype == np.int64 and got.tolist() == [2**63 - 1, 0]
