"""The measures, bounds, preprocessing and the CV plot on unusual inputs (overflowing ideal DCGs, ordered
categoricals, pandas string columns, tiny rows, settings changed after fit): each test against a plain transcription of
the definition, or for the clear error where a silent wrong number or an ignored setting would otherwise come out."""

import itertools
import math

import numpy as np
import pytest
import scipy.sparse as sp

from fastrank import metrics
from fastrank.bounds import kernel_kappa, magnitude_preserving_bound


def _ndcg_linear_oracle(y, f):
    """NDCG with gains y and no ties in f, from the definition (rescaled by a power of two: NDCG is scale-free)."""
    y = np.ldexp(np.asarray(y, dtype=np.float64), -1100 if max(y) > 1e300 else 0)
    disc = 1.0 / np.log2(np.arange(2, len(y) + 2))
    return float(y[np.argsort(-np.asarray(f))] @ disc / (np.sort(y)[::-1] @ disc))


def test_ndcg_whose_ideal_dcg_overflows_is_named():
    # the DCG of the ranking fits float64 but the ideal DCG overflowed to inf: the query's NDCG came out 0.0 (the
    # oracle says 0.69), silently pulling the mean over queries down
    y, f = np.array([1.5e308, 1.5e308, 0.0]), np.array([1.0, 2.0, 3.0])
    assert _ndcg_linear_oracle(y, f) == pytest.approx(0.6934, abs=1e-4)
    with pytest.raises(ValueError, match="ndcg: the result overflows float64; rescale y_true"):
        metrics.ndcg(y, f, gain="linear")
    groups = [0, 0, 0, 1, 1]
    with pytest.raises(ValueError, match="overflows float64"):
        metrics.ndcg(np.r_[y, 1.0, 0.0], np.r_[f, 1.0, 0.0], groups, gain="linear")
    # representable ideal DCGs are unchanged
    y2 = np.array([1e307, 5e306, 0.0, 2e306])
    f2 = np.array([0.3, 0.9, 0.1, 0.5])
    assert metrics.ndcg(y2, f2, gain="linear") == pytest.approx(_ndcg_linear_oracle(y2, f2), rel=1e-12)


def _positions_oracle(y_true, y_pred, order):
    pos = {c: k for k, c in enumerate(order)}
    return float(np.mean([abs(pos[p] - pos[t]) for t, p in zip(y_true, y_pred)]))


def test_mean_rank_loss_positions_follow_an_ordered_categoricals_declared_order():
    # "low" < "mid" < "high" as declared: without classes= the positions came from the sorted strings
    # (high < low < mid), 4/3 here instead of 5/3 -- and an on-line learner fitted on that categorical uses the
    # declared order for its classes_ and average_rank_loss_
    pd = pytest.importorskip("pandas")
    order = ["low", "mid", "high"]
    truth, pred = ["low", "mid", "high", "mid"], ["high", "high", "low", "mid"]
    want = _positions_oracle(truth, pred, order)
    assert want == pytest.approx(5 / 4) and want != _positions_oracle(truth, pred, sorted(order))
    y_cat = pd.Series(pd.Categorical(truth, categories=order, ordered=True))
    p_cat = pd.Categorical(pred, categories=order, ordered=True)
    assert metrics.mean_rank_loss(y_cat, np.array(pred), scale="positions") == pytest.approx(want, rel=1e-15)
    assert metrics.mean_rank_loss(np.array(truth), p_cat, scale="positions") == pytest.approx(want, rel=1e-15)
    assert metrics.mean_rank_loss(y_cat, p_cat, scale="positions") == pytest.approx(want, rel=1e-15)
    # an unused category still holds its position, as in the learners' classes_
    wide = ["low", "mid", "upper", "high"]
    y_wide = pd.Categorical(truth, categories=wide, ordered=True)
    assert metrics.mean_rank_loss(y_wide, pred, scale="positions") == pytest.approx(
        _positions_oracle(truth, pred, wide), rel=1e-15)
    with pytest.raises(ValueError, match="different orders .* pass classes="):
        metrics.mean_rank_loss(y_cat, pd.Categorical(pred, categories=order[::-1], ordered=True), scale="positions")
    # classes= still decides, and unordered categoricals keep the sorted labels
    assert metrics.mean_rank_loss(y_cat, pred, scale="positions", classes=sorted(order)) == pytest.approx(
        _positions_oracle(truth, pred, sorted(order)), rel=1e-15)
    unordered = pd.Categorical(truth, categories=order, ordered=False)
    assert metrics.mean_rank_loss(unordered, pred, scale="positions") == pytest.approx(
        _positions_oracle(truth, pred, sorted(order)), rel=1e-15)


def test_mean_rank_loss_takes_a_pandas_string_column():
    # a pandas column of strings is an object array: against the numpy strings a learner predicts it was refused as
    # "labels must be mutually comparable: y_true has dtype object, y_pred <U4"
    pd = pytest.importorskip("pandas")
    truth, pred = ["lo", "hi", "mid", "lo"], ["hi", "lo", "lo", "lo"]
    want = _positions_oracle(truth, pred, sorted(set(truth + pred)))
    assert metrics.mean_rank_loss(pd.Series(truth), np.array(pred), scale="positions") == pytest.approx(want, rel=1e-15)
    assert metrics.mean_rank_loss(np.array(truth), pd.Series(pred), scale="positions") == pytest.approx(want, rel=1e-15)
    with pytest.raises(ValueError, match=r"^y_pred must be orderable labels of one kind \(all numbers or all "
                                         r"strings\): 1 \(int\) at row 0 does not compare with y_true's labels "
                                         r"\['lo', 'hi', 'mid', 'lo'\]"):  # strings against numbers still
        metrics.mean_rank_loss(pd.Series(truth), [1, 2, 3, 4], scale="positions")


def test_mean_rank_loss_over_groups_keeps_the_whole_label_scale():
    # with groups the measure table applied mean_rank_loss query by query, so scale="positions" numbered the labels of
    # each query alone: labels {1, 2, 5}, a query holding only 1 and 5 counted 5-for-1 as one step instead of two
    # (0.83 here instead of 1.17)
    y = np.array([1, 5, 1, 2, 5, 2, 1.0])
    f = np.array([5, 1, 5, 2, 5, 1, 2.0])
    groups = np.array(["c", "c", "a", "a", "b", "b", "a"])
    pos = {1.0: 0, 2.0: 1, 5.0: 2}
    step = np.array([abs(pos[a] - pos[b]) for a, b in zip(y, f)], dtype=float)
    want_pos = np.mean([step[groups == q].mean() for q in "abc"])
    want_val = np.mean([np.abs(y - f)[groups == q].mean() for q in "abc"])
    measure = metrics.get_measure("mean_rank_loss")
    scorer = metrics.make_ranking_scorer("mean_rank_loss", scale="positions")
    for got in (metrics.mean_rank_loss(y, f, groups, scale="positions"), measure(y, f, groups, scale="positions"),
                -scorer.score_predictions(y, f, groups)):
        assert got == pytest.approx(want_pos, rel=1e-14)
    assert measure(y, f, groups) == pytest.approx(want_val, rel=1e-14)
    assert metrics.mean_rank_loss(y, f, None, scale="positions") == pytest.approx(step.mean(), rel=1e-15)
    with pytest.raises(ValueError, match="groups has 2 entries"):
        metrics.mean_rank_loss(y, f, [0, 1])


@pytest.mark.parametrize("X", [np.full((3, 2), 1e-200), np.array([[1e-160, 0.0], [3e-170, 2e-161]]),
                               np.array([[0.0, 0.0], [3e-320, 4e-320]]), np.array([[1e-200, 7e-201], [0.0, 1.0]]),
                               np.full((2, 2), 1e200), np.array([[1.0, 2.0], [3.0, 4.0]])])
def test_kernel_kappa_of_tiny_linear_rows(X):
    # x . x underflowed: kappa = max ||x|| came out 0.0 for rows of 1e-200 (then refused by every bound as "a non-zero
    # kernel"); the oracle is Python's overflow- and underflow-safe math.hypot
    want = max(math.hypot(*row) for row in X)
    for rows in (X, sp.csr_matrix(X)):
        assert kernel_kappa(rows, "linear") == pytest.approx(want, rel=1e-15)
    if want < 1e-100:
        assert magnitude_preserving_bound(100, 1.0, kernel_kappa(X, "linear"), 1.0, 0.1) > 0


@pytest.mark.parametrize("n_jobs", ["x", 0, 1.5, True])
def test_weighted_disagreement_checks_n_jobs(n_jobs):
    # the sample_weight path ignored n_jobs, so n_jobs="x" was accepted there and refused without weights
    y, f = np.array([1.0, 0.0, 2.0]), np.array([0.1, 0.2, 0.3])
    for sw in (None, [1.0, 2.0, 1.0]):
        with pytest.raises(ValueError, match="n_jobs must be None or a non-zero integer"):
            metrics.pairwise_disagreement(y, f, sample_weight=sw, n_jobs=n_jobs)


def test_query_normalizer_method_set_after_fit_is_checked():
    # transform read every method but "minmax" as "zscore": set_params(method="MinMax") after fit z-scored silently
    from fastrank.preprocessing import QueryNormalizer

    X = np.array([[1.0, 2.0], [3.0, 5.0], [0.0, 1.0]])
    qn = QueryNormalizer().fit(X).set_params(method="MinMax")
    with pytest.raises(ValueError, match=r"method must be one of \('minmax', 'zscore'\), got 'MinMax'"):
        qn.transform(X)
    want = (X - X.min(axis=0)) / (X.max(axis=0) - X.min(axis=0))
    np.testing.assert_allclose(qn.set_params(method="minmax").transform(X), want, rtol=1e-15)


def test_cv_curve_from_an_estimator_without_alphas_is_named():
    # MPRankCV (cv_results_ over Cs) reached Python's "'MPRankCV' object has no attribute 'cv'"
    pytest.importorskip("matplotlib")
    import fastrank
    from fastrank.plotting import CVCurveDisplay

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(20, 2)), rng.normal(size=20)
    with pytest.raises(TypeError, match="needs a fitted RankRLSCV .*got MPRankCV"):
        CVCurveDisplay.from_estimator(fastrank.MPRankCV(Cs=[0.1, 1.0]).fit(X, y))
    # a fitted RankRLS was told "call fit first": only an unfitted RankRLSCV needs a fit
    for other in (fastrank.RankRLS().fit(X, y), fastrank.RankRLS()):
        with pytest.raises(TypeError, match=r"^CVCurveDisplay.from_estimator needs a fitted RankRLSCV \(cv_results_ "
                                            r"over alphas\), got RankRLS; draw other curves with CVCurveDisplay"):
            CVCurveDisplay.from_estimator(other)
    with pytest.raises(ValueError, match=r"^CVCurveDisplay.from_estimator needs a fitted RankRLSCV \(call fit "
                                         r"first\)$"):
        CVCurveDisplay.from_estimator(fastrank.RankRLSCV())


def test_discrete_ranking_loss_of_offset_labels_is_exact():
    # |y_i - y_j| were summed from running sums of the raw labels: 1.7e-2 off for labels 1e9 + 1e-6 grade, 22 % for
    # integers near 2^52 (exact label differences every other cost reads less the group's median)
    from fractions import Fraction
    from fastrank.metrics import discrete_ranking_loss, stability_ranking_loss
    rng = np.random.default_rng(4)
    offsets, units = [1e9, 2.0**52, 0.0, -3e15], [1e-6, 1.0, 0.25, 1.0]
    y = np.concatenate([o + u * rng.integers(0, 4, 12) for o, u in zip(offsets, units)])
    f = np.round(rng.normal(size=48), 1)  # tied scores
    groups = np.repeat([3, 0, 2, 1], 12)

    def exact(rows):
        total = Fraction(0)
        for i, j in itertools.combinations(rows, 2):
            d, s = Fraction(y[i]) - Fraction(y[j]), f[i] - f[j]
            total += abs(d) * (Fraction(1, 2) if s == 0 else int(d * Fraction(s) < 0))
        return total / (len(rows) * (len(rows) - 1) // 2)

    want = float(sum(exact(np.flatnonzero(groups == q)) for q in range(4)) / 4)
    assert discrete_ranking_loss(y, f, groups) == pytest.approx(want, rel=1e-13)
    assert stability_ranking_loss(y, f, groups, loss="disc") == pytest.approx(want, rel=1e-13)
    y0 = y[:12]  # one group, no groups given
    assert discrete_ranking_loss(y0, f[:12]) == pytest.approx(float(exact(np.arange(12))), rel=1e-13)
