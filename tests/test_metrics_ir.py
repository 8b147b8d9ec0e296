"""MAP, MRR, precision@k, ERR@k and per-query NDCG against literal per-query implementations and
scikit-learn where the definitions coincide; the group-aware scorer in GridSearchCV with metadata
routing."""

import itertools

import numpy as np
import pytest
import sklearn
from sklearn.metrics import average_precision_score, ndcg_score
from sklearn.model_selection import GridSearchCV, GroupKFold

import fastrank
from fastrank import metrics as M


def _queries(groups, m):
    if groups is None:
        return [np.arange(m)]
    g = np.asarray(groups)
    return [np.flatnonzero(g == u) for u in np.unique(g)]


def _orders(f):
    """Every ranking by decreasing score, tied rows taking all their relative orders."""
    levels = sorted(set(np.asarray(f).tolist()), reverse=True)
    blocks = [[i for i in range(len(f)) if f[i] == v] for v in levels]
    for choice in itertools.product(*[list(itertools.permutations(b)) for b in blocks]):
        yield [i for b in choice for i in b]


def expected_over_tie_orders(lit):
    """The literal measure of one order, averaged over the orders of the tied scores (the tie
    convention of fastrank.metrics)."""
    def expected(y, f, *args, **kw):
        vals = [lit(y, order, *args, **kw) for order in _orders(f)]
        return None if vals[0] is None else float(np.mean(vals))
    return expected


@expected_over_tie_orders
def lit_ap(y, order, k=None, thr=0.0):
    rel = [y[i] > thr for i in order]
    R = sum(rel)
    if R == 0:
        return None
    hits, s = 0, 0.0
    for p, r in enumerate(rel, start=1):
        if r:
            hits += 1
            if k is None or p <= k:
                s += hits / p
    return s / (R if k is None else min(R, k))


@expected_over_tie_orders
def lit_rr(y, order, k=None, thr=0.0):
    if not any(y[i] > thr for i in order):
        return None
    for p, i in enumerate(order, start=1):
        if y[i] > thr:
            return 1.0 / p if (k is None or p <= k) else 0.0


@expected_over_tie_orders
def lit_p(y, order, k, thr=0.0):
    if not any(y[i] > thr for i in order):
        return None
    return sum(y[i] > thr for i in order[:k]) / k


@expected_over_tie_orders
def lit_err(y, order, k=None, gmax=None):
    if not any(y[i] > 0 for i in order):
        return None
    gmax = max(y) if gmax is None else gmax
    err, p_continue = 0.0, 1.0
    for r, i in enumerate(order, start=1):
        if k is not None and r > k:
            break
        R = (2.0 ** y[i] - 1) / 2.0 ** gmax
        err += p_continue * R / r
        p_continue *= 1 - R
    return err


def per_query(lit, y, f, groups, **kw):
    vals = [lit(y[idx], f[idx], **kw) for idx in _queries(groups, len(y))]
    return np.array([np.nan if v is None else v for v in vals])


def _data(seed, m=150, n_groups=12, ties=True):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 4, m).astype(float)
    y[rng.random(m) < 0.3] = 0.0
    f = np.round(rng.normal(size=m), 1) if ties else rng.normal(size=m)
    g = rng.integers(0, n_groups, m) * 3 + 1
    g[:5] = 999  # a small query with no relevant row
    y[:5] = 0.0
    return y, f, g


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("ties", [True, False])
def test_ir_measures_equal_literal_per_query(seed, ties):
    y, f, g = _data(seed, ties=ties)
    cases = [
        (M.mean_average_precision, lit_ap, {}),
        (M.mean_average_precision, lit_ap, {"k": 3}),
        (M.mean_average_precision, lit_ap, {"k": 5, "thr": 1.5}),
        (M.mean_reciprocal_rank, lit_rr, {}),
        (M.mean_reciprocal_rank, lit_rr, {"k": 2}),
        (M.precision_at_k, lit_p, {"k": 5}),
        (M.precision_at_k, lit_p, {"k": 30, "thr": 2.0}),
        (M.err_at_k, lit_err, {}),
        (M.err_at_k, lit_err, {"k": 4}),
        (M.err_at_k, lit_err, {"k": 4, "gmax": 5}),
    ]
    for func, lit, kw in cases:
        lit_kw = dict(kw)
        if lit is lit_err and "gmax" not in kw:
            lit_kw["gmax"] = y.max()  # documented default: the largest grade of the whole input
        want = per_query(lit, y, f, g, **lit_kw)
        api = {("relevance_threshold" if a == "thr" else "max_grade" if a == "gmax" else a): v for a, v in kw.items()}
        got = func(y, f, g, average=None, **api)
        np.testing.assert_allclose(got, want, rtol=1e-12, equal_nan=True)
        assert func(y, f, g, **api) == pytest.approx(np.nanmean(want), rel=1e-12)


def test_tied_scores_count_by_the_expectation_over_their_orders():
    # two rows tied, one relevant: AP is 1 or 1/2 with probability 1/2 each, wherever it is in the input
    assert M.mean_average_precision([1, 0], [0.5, 0.5]) == 0.75
    assert M.mean_average_precision([0, 1], [0.5, 0.5]) == 0.75
    assert M.mean_reciprocal_rank([0, 1], [0.5, 0.5]) == 0.75
    assert M.precision_at_k([0, 1, 1], [1.0, 1.0, 0.0], k=1) == 0.5
    # ERR of three tied rows: the mean over their 6 orders
    y, f = np.array([1.0, 0.0, 2.0]), np.array([0.3, 0.3, 0.3])
    assert M.err_at_k(y, f) == pytest.approx(lit_err(y, f, gmax=2.0), rel=1e-14)


@pytest.mark.parametrize("k", [None, 1, 3, 7])
def test_err_and_map_one_large_tied_block(k):
    rng = np.random.default_rng(11)
    y = rng.integers(0, 4, 7).astype(float)
    f = np.zeros(7)
    f[:2] = 1.0  # a block of 2, then a block of 5
    assert M.err_at_k(y, f, k=k) == pytest.approx(lit_err(y, f, k=k, gmax=y.max()), rel=1e-12)
    assert M.mean_average_precision(y, f, k=k) == pytest.approx(lit_ap(y, f, k=k), rel=1e-12)
    assert M.mean_reciprocal_rank(y, f, k=k) == pytest.approx(lit_rr(y, f, k=k), rel=1e-12)
    assert M.precision_at_k(y, f, k=k or 4) == pytest.approx(lit_p(y, f, k=k or 4), rel=1e-12)


def test_against_sklearn_where_definitions_coincide():
    rng = np.random.default_rng(4)
    for _ in range(5):
        y = (rng.random(40) < 0.3).astype(float)
        y[0] = 1.0
        f = rng.normal(size=40)  # no ties: sklearn's threshold-based AP equals the ranked-list AP
        assert M.mean_average_precision(y, f) == pytest.approx(average_precision_score(y, f), rel=1e-12)
    # per-query NDCG: sklearn's ndcg_score on each query (linear gain, tie-averaged)
    y, f, g = _data(7)
    per = M.ndcg(y, f, g, gain="linear", average=None)
    for q, idx in enumerate(_queries(g, len(y))):
        if y[idx].max() > 0 and idx.size > 1:
            assert per[q] == pytest.approx(ndcg_score([y[idx]], [f[idx]]), rel=1e-12)
        elif y[idx].max() == 0:
            assert np.isnan(per[q])
    assert M.ndcg(y, f, g) == pytest.approx(np.nanmean(M.ndcg(y, f, g, average=None)), rel=1e-12)


def test_ir_bad_input():
    with pytest.raises(ValueError, match="no group has a relevant item"):
        M.mean_average_precision([0, 0], [1, 2])
    with pytest.raises(ValueError, match="k must be"):
        M.precision_at_k([1, 0], [1, 2], k=0)
    with pytest.raises(ValueError, match="k must be"):
        M.precision_at_k([1, 0], [1, 2], k=None)
    with pytest.raises(ValueError, match="relevance_threshold"):
        M.mean_reciprocal_rank([1, 0], [1, 2], relevance_threshold=np.nan)
    with pytest.raises(ValueError, match="non-negative"):
        M.err_at_k([-1, 2], [1, 2])
    with pytest.raises(ValueError, match="max_grade"):
        M.err_at_k([1, 3], [1, 2], max_grade=2)
    with pytest.raises(ValueError, match="average"):
        M.ndcg([1, 0], [1, 2], average="pooled")
    with pytest.raises(ValueError, match="inconsistent"):
        M.mean_average_precision([1, 0], [1.0])
    with pytest.raises(ValueError, match="NaN"):
        M.err_at_k([1, 0], [np.nan, 1.0])


# ---- scorers


def _grouped_regression(seed=0, n_q=12, per=10):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_q * per, 4))
    g = np.repeat(np.arange(n_q), per)
    y = np.clip(np.round(X @ np.array([1.0, -0.5, 0.3, 0.0]) + rng.normal(0, 0.5, X.shape[0]) + 1.5), 0, 3)
    return X, y, g


def test_scorer_direct_call_and_names():
    X, y, g = _grouped_regression()
    est = fastrank.RankRLS(alpha=1.0).fit(X, y, groups=g)
    pred = est.predict(X)
    sc = M.make_ranking_scorer("ndcg", k=5)
    assert sc(est, X, y, groups=g) == pytest.approx(M.ndcg(y, pred, g, k=5), rel=1e-12)
    with pytest.warns(fastrank.exceptions.MissingGroupsWarning, match="fitted on 12 query groups"):  # one query
        assert sc(est, X, y) == pytest.approx(M.ndcg(y, pred, k=5), rel=1e-12)
    loss = M.make_ranking_scorer("pairwise_disagreement", tied_scores="half")
    assert loss(est, X, y, groups=g) == pytest.approx(-M.pairwise_disagreement(y, pred, g, tied_scores="half"))
    cal = M.make_ranking_scorer(lambda yt, yp, groups=None: M.mean_reciprocal_rank(yt, yp, groups))
    assert cal(est, X, y, groups=g) == pytest.approx(M.mean_reciprocal_rank(y, pred, g))
    for name in ("map", "mrr", "precision_at_k", "err", "msd", "position_error", "discounted_error"):
        M.make_ranking_scorer(name)(est, X, y, groups=g)
    with pytest.raises(ValueError, match="unknown ranking measure"):
        M.make_ranking_scorer("ndgc")
    with pytest.raises(ValueError, match="greater_is_better must be"):
        M.make_ranking_scorer("msd", greater_is_better=True)
    # "auc" of the table takes groups: the mean over groups of the per-group AUC
    yb = (y > 1).astype(int)
    per_group = [M.auc(yb[g == q], pred[g == q]) for q in np.unique(g) if np.unique(yb[g == q]).size == 2]
    assert M.make_ranking_scorer("auc")(est, X, yb, groups=g) == pytest.approx(np.mean(per_group), rel=1e-12)
    with pytest.raises(ValueError, match="does not take groups"):
        M.make_ranking_scorer(lambda yt, yp: M.auc(yt, yp))(est, X, yb, groups=g)
    assert "ndcg" in repr(sc)
    assert sc.score_predictions(y, pred, g) == sc(est, X, y, groups=g) and sc.greater_is_better
    assert loss.score_predictions(y, pred, g) < 0 and not loss.greater_is_better


def _oracle_search(X, y, g, alphas, measure, cv):
    means = []
    for a in alphas:
        scores = []
        for tr, te in cv.split(X, y, g):
            est = fastrank.RankRLS(alpha=a).fit(X[tr], y[tr], groups=g[tr])
            scores.append(measure(y[te], est.predict(X[te]), g[te]))
        means.append(np.mean(scores))
    return np.array(means)


def test_scorer_receives_groups_in_gridsearch_with_metadata_routing():
    X, y, g = _grouped_regression(1, n_q=15)
    alphas = [0.01, 1.0, 100.0]
    cv = GroupKFold(n_splits=3)
    want = _oracle_search(X, y, g, alphas, lambda yt, yp, gg: M.mean_average_precision(yt, yp, gg), cv)
    with sklearn.config_context(enable_metadata_routing=True):
        scorer = M.make_ranking_scorer("map").set_score_request(groups=True)
        search = GridSearchCV(fastrank.RankRLS().set_fit_request(groups=True), {"alpha": alphas}, cv=cv,
                              scoring=scorer).fit(X, y, groups=g)
    np.testing.assert_allclose(search.cv_results_["mean_test_score"], want, rtol=1e-10)
    # without groups reaching the scorer each test fold would be one query: a different number
    flat = _oracle_search(X, y, g, alphas, lambda yt, yp, gg: M.mean_average_precision(yt, yp), cv)
    assert not np.allclose(flat, want)


@pytest.mark.parametrize("decimals", [0, 1, 3, None])
def test_stable_descending_order_light_and_heavy_ties(decimals):
    rng = np.random.default_rng(decimals or 0)
    for _ in range(50):
        f = rng.normal(size=int(rng.integers(1, 80)))
        if decimals is not None:
            f = np.round(f, decimals)
        f[rng.random(f.size) < 0.1] = -0.0
        want = sorted(range(f.size), key=lambda i: (-f[i], i))
        assert list(M._stable_argsort_desc(f)) == want


@pytest.mark.parametrize("k", [None, 20])
def test_err_large_tied_block_against_order_statistics(k):
    # a tied block of b = 70 rows after 3 untied rows; r = 5 of the block have grade 1 (R = c), the
    # rest grade 0.  In a random order of the block the i-th relevant row is at block position j with
    # probability C(j - 1, i - 1) C(b - j, r - i) / C(b, r); it adds c (1 - c)^(i - 1) / (3 + j) times
    # the continuation probability of the 3 rows before the block.
    from math import comb

    b, r, gmax = 70, 5, 2.0
    y = np.r_[[2.0, 0.0, 1.0], np.zeros(b)]
    y[3 + np.array([4, 9, 30, 50, 69])] = 1.0
    f = np.r_[[3.0, 2.0, 1.5], np.zeros(b)]
    R = (2.0 ** y - 1) / 2.0 ** gmax
    head = sum(R[p] * np.prod(1 - R[:p]) / (p + 1) for p in range(3) if k is None or p < k)
    c, before = 0.25, np.prod(1 - R[:3])
    block = sum(comb(j - 1, i - 1) * comb(b - j, r - i) / comb(b, r) * c * (1 - c) ** (i - 1) / (3 + j)
                for i in range(1, r + 1) for j in range(1, b + 1) if k is None or 3 + j <= k)
    assert M.err_at_k(y, f, k=k, max_grade=gmax) == pytest.approx(head + before * block, rel=1e-12)
