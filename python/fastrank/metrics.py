"""Ranking measures, exact and fast (O(m log m) where the definition allows).

Pairwise measures share one compiled kernel (``cpp/src/measures.cpp``): the scores are sorted once
with numpy's ``argsort`` (SIMD-accelerated where numpy has it), the labels are turned into dense
ranks without sorting when they take few distinct values, and one sweep per group counts the
relevant, discordant and score-tied pairs (and their ``|y_i - y_j|``-weighted sums) in
O(m log K), K = number of distinct labels.  No pair list is ever built.

Papers: 004 = Pahikkala et al. 2009 (RankRLS), 000 = Cortes, Mohri, Rastogi (MPRank),
002 = Agarwal & Niyogi 2009, 001 = Harrington 2003, 003 = lecture slides on preference learning.

Groups (queries): where a function takes ``groups`` (one id per row; ids need not be sorted,
contiguous or numeric), only pairs inside the same group count.  ``average="group"`` (the
default) is the mean of the per-group values, every query weighing the same -- this is how 004
Sect. 5 reports query data ("disagreement error averaged over the different test queries") and
how NDCG is averaged; ``average="pooled"`` divides the total over all within-group pairs by the
total number of pairs, which is eq. (1) applied literally to the whole preference graph (large
queries weigh more).  Groups without any counted pair are skipped in both; if no group has one,
``ValueError`` is raised.  Without ``groups`` both averages coincide.
"""

from __future__ import annotations

import numbers

import numpy as np

from . import _core
from ._validation import check_n_jobs, group_index

__all__ = [
    "pairwise_disagreement",
    "auc",
    "kendall_distance",
    "spearman_footrule",
    "msd",
    "m1d",
    "discrete_ranking_loss",
    "ndcg",
    "mean_rank_loss",
]

_AVERAGES = ("group", "pooled")
# Labels with at most this many distinct values are ranked without sorting (hash / direct table).
_SMALL_LABEL_SET = 4096


# --------------------------------------------------------------------------------------------
# validation helpers (module-private)


def _as_vector(x, name):
    x = np.asarray(x)
    if x.dtype == object:
        try:
            x = x.astype(np.float64)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{name} must be numeric: {exc}") from None
    if not (np.issubdtype(x.dtype, np.number) or x.dtype == bool) or np.iscomplexobj(x):
        raise ValueError(f"{name} must be real-valued numbers, got dtype {x.dtype}")
    if x.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {x.shape}")
    if x.shape[0] == 0:
        raise ValueError(f"{name} is empty")
    x = np.ascontiguousarray(x, dtype=np.float64)
    if not np.isfinite(x).all():
        raise ValueError(f"Input {name} contains NaN or infinity.")
    return x


def _as_pair(a, b, name_a, name_b):
    a = _as_vector(a, name_a)
    b = _as_vector(b, name_b)
    if a.shape[0] != b.shape[0]:
        raise ValueError(
            f"Found input variables with inconsistent numbers of samples: [{a.shape[0]}, {b.shape[0]}]"
        )
    return a, b


def _check_average(average):
    if average not in _AVERAGES:
        raise ValueError(f"average must be one of {_AVERAGES}, got {average!r}")


class _Codes:
    """Dense group codes 0..n_groups-1 (the semantics of _validation.group_index, without the
    stable argsort and inverse permutation it also builds, which cost ~100 ms per 10^6 rows and
    are not needed here: the compiled kernels group rows by a counting sort)."""

    __slots__ = ("codes", "n_groups")

    def __init__(self, codes, n_groups):
        self.codes, self.n_groups = codes, n_groups


def _groups(groups, m):
    if groups is None:
        return None
    g = np.asarray(groups)
    if g.ndim != 1 or g.shape[0] != m or g.dtype.kind not in "iu":
        return _Codes(*_codes_from_index(group_index(g, m)))  # validation + general ids
    lo, hi = int(g.min()), int(g.max())
    if hi - lo > 4 * m + 1024:
        return _Codes(*_codes_from_index(group_index(g, m)))
    present = np.bincount(g - lo, minlength=hi - lo + 1) > 0
    table = np.cumsum(present) - 1
    return _Codes(table[g - lo].astype(np.int64, copy=False), int(present.sum()))


def _codes_from_index(gi):
    return gi.codes, gi.n_groups


def _label_ranks(y):
    res = _core.dense_ranks_small(y, _SMALL_LABEL_SET)
    if res is None:
        res = _core.dense_ranks_from_order(y, np.argsort(y).astype(np.int64, copy=False))
    return res


def _pair_stats(y, f, gi, weighted, n_jobs=None, ranks=None):
    """(n_groups, 6): pairs, relevant, discordant, tied_relevant, w_discordant, w_tied.

    discordant: y_i > y_j and f_i < f_j; tied_relevant: y_i != y_j and f_i == f_j; the w_ columns
    sum |y_i - y_j| over discordant pairs and over all score-tied pairs.
    """
    yrank, values = _label_ranks(y) if ranks is None else ranks
    order = np.argsort(f).astype(np.int64, copy=False)
    if gi is None or gi.n_groups == 1:
        codes, n_groups = None, 1
    else:
        codes, n_groups = gi.codes, gi.n_groups
    return _core.pair_statistics(f, order, yrank, values, codes, n_groups, bool(weighted), check_n_jobs(n_jobs))


def _average(num, den, average, what):
    num = np.asarray(num, dtype=np.float64)
    den = np.asarray(den, dtype=np.float64)
    valid = den > 0
    if not valid.any():
        raise ValueError(f"{what}: there is no pair to evaluate")
    if average == "pooled":
        return float(num[valid].sum() / den[valid].sum())
    return float(np.mean(num[valid] / den[valid]))


# --------------------------------------------------------------------------------------------
# pairwise measures


def pairwise_disagreement(y_true, y_score, groups=None, *, ties="error", average="group", n_jobs=None):
    """Fraction of relevant pairs that ``y_score`` orders wrongly (004 eq. 1).

    A pair (i, j) is relevant when ``y_true[i] != y_true[j]`` (pairs tied in ``y_true`` are not
    preferences and are excluded).  A relevant pair with ``y_true[i] > y_true[j]`` is an error
    when ``y_score[i] < y_score[j]``; a tie ``y_score[i] == y_score[j]`` counts 1 with
    ``ties="error"`` (eq. 1: sign(0) = -1) or 1/2 with ``ties="half"`` (ties broken at random).

    groups : optional, one id per row; only pairs inside a group count.  average : "group"
    (default, mean over groups that have a relevant pair) or "pooled" (all within-group errors
    over all within-group relevant pairs); see the module docstring.  Raises ValueError when no
    relevant pair exists at all.  O(m log m): one argsort of y_score plus an O(m log K) sweep.
    n_jobs : threads over groups.
    """
    if ties not in ("error", "half"):
        raise ValueError(f"ties must be 'error' or 'half', got {ties!r}")
    _check_average(average)
    y, f = _as_pair(y_true, y_score, "y_true", "y_score")
    S = _pair_stats(y, f, _groups(groups, y.shape[0]), False, n_jobs)
    w = 1.0 if ties == "error" else 0.5
    return _average(S[:, 2] + w * S[:, 3], S[:, 1], average, "pairwise_disagreement")


def auc(y_true, y_score):
    """Area under the ROC curve of binary labels: the fraction of (positive, negative) pairs that
    the scores order correctly, score ties counted 1/2 (= 1 - pairwise_disagreement(ties="half")).

    y_true must take exactly two distinct values; the larger one is the positive class (True,
    1, +1).  Equal to sklearn.metrics.roc_auc_score.  O(m log m).
    """
    y, f = _as_pair(y_true, y_score, "y_true", "y_score")
    ranks = _label_ranks(y)
    if ranks[1].size != 2:
        raise ValueError("auc needs y_true with exactly two distinct values (both classes present)")
    S = _pair_stats(y, f, None, False, ranks=ranks)[0]
    return float(1.0 - (S[2] + 0.5 * S[3]) / S[1])


def kendall_distance(a, b, *, normalize=True):
    """Kendall distance between two rankings given as score vectors (003, "Kendall's distance").

    d_K(a, b) = #{(i, j) : a_i > a_j and b_i < b_j}, the number of pairs the two vectors order in
    opposite directions.  Tie convention: a pair tied in ``a`` or in ``b`` (or both) is not
    counted (it is neither inverted nor, for scipy, discordant).  With ``normalize=True`` the
    count is divided by m(m-1)/2, its maximum, so the result lies in [0, 1]; without ties this
    equals (1 - tau) / 2 with Kendall's tau (scipy.stats.kendalltau).  O(m log m).

    Returns a float (normalize=True) or an int.
    """
    a, b = _as_pair(a, b, "a", "b")
    m = a.shape[0]
    S = _pair_stats(a, b, None, False)[0]
    d = int(S[2])
    if not normalize:
        return d
    if m < 2:
        raise ValueError("kendall_distance with normalize=True needs at least 2 items")
    return d / (m * (m - 1) / 2)


def _average_ranks(x):
    # scipy.stats.rankdata(x, method="average"), 1-based
    order = np.argsort(x)  # tied values get the same average rank: stability is irrelevant
    xs = x[order]
    starts = np.flatnonzero(np.r_[True, xs[1:] != xs[:-1]])
    ends = np.r_[starts[1:], xs.size]
    avg = (starts + ends + 1) / 2.0  # mean of positions starts+1 .. ends
    ranks = np.empty(x.size, dtype=np.float64)
    ranks[order] = np.repeat(avg, ends - starts)
    return ranks


def spearman_footrule(a, b):
    """Spearman's footrule sum_i |rank_a(i) - rank_b(i)| (003, "Other loss functions for ranking").

    Ranks are 1..m in increasing order of the scores; tied items share the average of their
    positions (scipy.stats.rankdata(method="average")), so the value may be a half-integer.
    O(m log m).
    """
    a, b = _as_pair(a, b, "a", "b")
    return float(np.abs(_average_ranks(a) - _average_ranks(b)).sum())


def _centred_diffs(y_true, y_score, groups, name):
    y, f = _as_pair(y_true, y_score, "y_true", "y_score")
    m = y.shape[0]
    gi = _groups(groups, m)
    codes = np.zeros(m, dtype=np.int64) if gi is None else gi.codes
    G = 1 if gi is None else gi.n_groups
    n = np.bincount(codes, minlength=G).astype(np.float64)
    d = f - y
    mean = np.bincount(codes, weights=d, minlength=G) / n
    return d - mean[codes], codes, n, G


def msd(y_true, y_score, groups=None, *, average="group"):
    """Mean squared difference of pairwise differences (000 eq. 67).

    MSD = (1/m^2) sum_i sum_j ((h(x_j) - h(x_i)) - (y_j - y_i))^2 over all ordered pairs
    (including i = j, as in the paper), which equals 2 * the population variance of h(x) - y:
    O(m).  With groups the sum runs inside each group and is normalized by n_g^2; groups of one
    row (no pair) are skipped; average "group" (mean over groups, default) or "pooled"
    (sum over groups / sum of n_g^2).
    """
    _check_average(average)
    c, codes, n, G = _centred_diffs(y_true, y_score, groups, "msd")
    ss = np.bincount(codes, weights=c * c, minlength=G)
    total = 2.0 * n * ss  # sum_ij (c_j - c_i)^2 = 2 n sum c^2 (c centred)
    return _average(total, np.where(n >= 2, n * n, 0.0), average, "msd")


def m1d(y_true, y_score, groups=None, *, average="group"):
    """Mean absolute difference of pairwise differences, M1D (000 eq. 68).

    M1D = (1/m^2) sum_i sum_j |(h(x_j) - h(x_i)) - (y_j - y_i)|.  With d = h(x) - y sorted,
    sum_ij |d_j - d_i| = 2 sum_k d_(k) (2k - m + 1) (k = 0..m-1): O(m log m).  Groups and
    averaging as in :func:`msd`.
    """
    _check_average(average)
    c, codes, n, G = _centred_diffs(y_true, y_score, groups, "m1d")
    if G == 1:
        cs, gs = np.sort(c), codes
    else:
        order = np.lexsort((c, codes))
        cs, gs = c[order], codes[order]
    offsets = np.concatenate([[0], np.cumsum(n)])
    k = np.arange(cs.size, dtype=np.float64) - offsets[gs]
    total = 2.0 * np.bincount(gs, weights=cs * (2.0 * k - n[gs] + 1.0), minlength=G)
    return _average(total, np.where(n >= 2, n * n, 0.0), average, "m1d")


def discrete_ranking_loss(y_true, y_score, groups=None, *, average="group", n_jobs=None):
    """Empirical discrete ranking loss of Agarwal & Niyogi (002 eq. 2).

    R(f; S) = 1/C(m,2) sum_{i<j} |y_i - y_j| (I[(y_i - y_j)(f_i - f_j) < 0] + 1/2 I[f_i = f_j]):
    mis-ordered pairs weigh |y_i - y_j|, score ties half of it, pairs with equal labels nothing;
    the normalization counts all C(m,2) pairs.  O(m log m) (a Fenwick tree of label counts and
    sums over the score order).  With groups: per group over C(n_g, 2) pairs; groups of one row
    are skipped; average "group" (default) or "pooled" (sum / sum of C(n_g, 2)).
    """
    _check_average(average)
    y, f = _as_pair(y_true, y_score, "y_true", "y_score")
    S = _pair_stats(y, f, _groups(groups, y.shape[0]), True, n_jobs)
    return _average(S[:, 4] + 0.5 * S[:, 5], S[:, 0], average, "discrete_ranking_loss")


# --------------------------------------------------------------------------------------------
# listwise / ordinal measures


def ndcg(y_true, y_score, groups=None, *, k=None, gain="exponential", n_jobs=None):
    """Normalized discounted cumulative gain, averaged over groups (queries) of any sizes.

    DCG@k of a group = sum over positions p = 1..k of the ranking by decreasing ``y_score`` of
    gain(y) / log2(p + 1); NDCG = DCG / ideal DCG (the DCG of the ranking by decreasing y_true).
    gain: "exponential" 2^y - 1 (Burges et al.; LightGBM's lambdarank) or "linear" y
    (sklearn.metrics.ndcg_score).  k=None: no cutoff.  Ties in y_score: as scikit-learn, the
    gains of a tied block are averaged over the block's positions (the expected DCG over all
    orderings of the tie), so the value does not depend on the input order.

    Groups whose ideal DCG is 0 (no relevant row) are skipped, unlike sklearn which counts them
    as 0; ValueError if no group has a relevant row.  y_true must be >= 0.  Returns the mean
    over the remaining groups.  O(m log n_g); n_jobs threads over groups.
    """
    y, f = _as_pair(y_true, y_score, "y_true", "y_score")
    if (y < 0).any():
        raise ValueError("ndcg needs non-negative relevance labels y_true")
    if gain not in ("exponential", "linear"):
        raise ValueError(f"gain must be 'exponential' or 'linear', got {gain!r}")
    if gain == "exponential" and y.max() > 1000:
        raise ValueError("y_true too large for exponential gain 2^y - 1; use gain='linear'")
    if k is None:
        kk = 0
    elif isinstance(k, (bool, np.bool_)) or not isinstance(k, numbers.Integral) or k < 1:
        raise ValueError(f"k must be None or a positive integer, got {k!r}")
    else:
        kk = int(min(int(k), y.shape[0]))  # a cutoff beyond the largest group is no cutoff (and fits a C int)
    gi = _groups(groups, y.shape[0])
    codes, n_groups = (None, 1) if gi is None else (gi.codes, gi.n_groups)
    S = _core.dcg_statistics(y, f, codes, n_groups, kk, 1 if gain == "exponential" else 0, check_n_jobs(n_jobs))
    valid = S[:, 1] > 0
    if not valid.any():
        raise ValueError("ndcg: no group has a relevant item (every ideal DCG is 0)")
    return float(np.mean(S[valid, 0] / S[valid, 1]))


def mean_rank_loss(y_true, y_pred, *, classes=None):
    """Average rank loss (1/T) sum_t |yhat_t - y_t| (001 Sect. 4, after Crammer & Singer).

    Labels are ordinal: each label is replaced by its position 1..k in the ordered label set,
    which is ``classes`` in the order given (labels of any type), or, when ``classes`` is None,
    the sorted union of the values in y_true and y_pred.  So with labels {1, 2, 5} a prediction
    of 5 for a true 1 costs 2, not 4.  A label missing from ``classes`` raises ValueError.
    """
    yt = np.asarray(y_true)
    yp = np.asarray(y_pred)
    for name, v in (("y_true", yt), ("y_pred", yp)):
        if v.ndim != 1:
            raise ValueError(f"{name} must be 1-D, got shape {v.shape}")
        if v.shape[0] == 0:
            raise ValueError(f"{name} is empty")
        if v.dtype.kind in "fc" and not np.isfinite(v).all():
            raise ValueError(f"Input {name} contains NaN or infinity.")
    if yt.shape[0] != yp.shape[0]:
        raise ValueError(
            f"Found input variables with inconsistent numbers of samples: [{yt.shape[0]}, {yp.shape[0]}]"
        )
    if classes is None:
        try:
            classes = np.unique(np.concatenate([yt, yp]))
        except TypeError as exc:
            raise ValueError(f"labels must be mutually comparable: {exc}") from None
        pos_t = np.searchsorted(classes, yt)
        pos_p = np.searchsorted(classes, yp)
    else:
        classes = np.asarray(classes)
        if classes.ndim != 1 or classes.size == 0:
            raise ValueError("classes must be a non-empty 1-D sequence")
        if np.unique(classes).size != classes.size:
            raise ValueError("classes contains duplicates")
        sorter = np.argsort(classes, kind="stable")
        sc = classes[sorter]

        def positions(v, name):
            idx = np.clip(np.searchsorted(sc, v), 0, sc.size - 1)
            if not np.array_equal(sc[idx], v):
                raise ValueError(f"{name} contains labels that are not in classes")
            return sorter[idx]

        pos_t = positions(yt, "y_true")
        pos_p = positions(yp, "y_pred")
    return float(np.mean(np.abs(pos_p.astype(np.int64) - pos_t.astype(np.int64))))
