"""Ranking measures, exact and fast (O(m log m) where the definition allows); no pair list is ever built.

Papers: 004 = Pahikkala et al. 2009 (RankRLS), 000 = Cortes, Mohri, Rastogi (MPRank), 002 = Agarwal & Niyogi 2009,
001 = Harrington 2003, 003 = lecture slides on preference learning.  Pairwise measures share one compiled sweep
(``cpp/src/measures.cpp``): scores sorted once by numpy's ``argsort``, labels turned into dense ranks (without sorting
when they take few values), then per group the relevant, discordant and score-tied pairs and their |y_i - y_j|-weighted
sums in O(m log K), K distinct labels.  The costs of 000 (eqs. 4-7) and losses of 002 use a Fenwick-tree sweep over
"dominance" pairs (``dominance_sums``).  Also: the position and discounted errors of 003, the disagreement of an edge
list, the IR measures (MAP, MRR, precision@k, ERR@k), the measure table and :func:`make_ranking_scorer`.

Groups (queries): where a function takes ``groups`` (one id per row, any ids), only pairs inside a group count.
``average="group"`` (default) is the mean of the per-group values, every query weighing the same, as 004 Sect. 5
reports query data and as NDCG is averaged; ``average="pooled"`` is the total over all within-group pairs divided by
their number, eq. (1) on the whole preference graph (large queries weigh more); ``average=None`` (most measures)
gives one value per group in sorted id order (NaN where there is nothing to measure).  Groups without a counted pair
are skipped; ValueError if no group has one."""

from __future__ import annotations

import contextlib
import inspect
import numbers
import sys
import warnings

import numpy as np
import sklearn
from scipy.special import gammaln
from sklearn.metrics import make_scorer
from sklearn.utils import check_consistent_length
from sklearn.utils.metadata_routing import get_routing_for_object

from . import _core
from ._docs import with_param_docs
from ._problem import centred_in_groups, check_pairs
from ._threads import compute_region
from ._validation import (_asarray, _not_finite, _to_float, as_float_matrix, as_float_vector, check_bool,
                          check_group_ids, check_n_jobs, check_real, group_index, one_of, unordered_labels)
from .exceptions import IllConditionedWarning, MissingGroupsWarning, user_stacklevel

__all__ = [
    "pairwise_disagreement", "auc", "kendall_distance", "spearman_footrule", "msd", "m1d", "discrete_ranking_loss",
    "ndcg", "mean_rank_loss", "magnitude_preserving_cost", "stability_ranking_loss", "position_error",
    "discounted_error", "edge_disagreement", "mean_average_precision", "mean_reciprocal_rank", "precision_at_k",
    "err_at_k", "agree", "make_ranking_scorer", "RankingScorer", "SCORER_NAMES", "Measure", "get_measure",
    "measure_names", "score_estimator"
]

# numpydoc entries that several measures share, filled into their docstrings by ``with_param_docs``
_METRIC_DOCS = {
    "y_true": """y_true : array-like of shape (n_samples,)
    Target of each row (relevance label); a higher target ranks higher.""",
    "y_score": """y_score : array-like of shape (n_samples,)
    Predicted score of each row; a higher score ranks higher.""",
    "groups": """groups : array-like of shape (n_samples,) or None, default=None
    Query id of each row (any ids): each query is ranked and measured on its own.  None: all rows form one query.""",
    "average": """average : {"group", "pooled"} or None, default="group"
    "group": the mean of the per-group values (every query weighs the same); "pooled": the total over all groups
    divided by their total count (large queries weigh more); None: one value per group, in sorted id order (NaN
    where there is nothing to measure).""",
    "average_listwise": """average : {"group"} or None, default="group"
    "group": the mean of the per-group values; None: one value per group, in sorted id order (NaN for a skipped
    group).""",
    "n_jobs": """n_jobs : int or None, default=None
    Threads over groups, at most: None or -1 every usable core, -2 all but one, k > 0 k threads.  Below 50,000 rows
    one thread, whatever n_jobs (starting threads costs more than the sweep).""",
    "k": """k : int or None, default=None
    Cutoff, a positive integer: only the first k positions of each group's ranking count.  None: no cutoff.""",
    "relevance_threshold": """relevance_threshold : float, default=0.0
    A row is relevant when ``y_true > relevance_threshold`` (0: trec_eval's level 1 for integer grades).""",
    "tied_scores": """tied_scores : {"half", "wrong"}, default="half"
    Error of a pair with tied scores: 1/2 ("half": ties broken at random, as ``score`` and ``RankRLSCV``)
    or 1 ("wrong": 004 eq. 1 read literally, sign(0) = -1).""",
    "ties": """ties : {"error", "half"} or None, default=None
    Deprecated former name of ``tied_scores`` ("error" is "wrong"); giving it emits a FutureWarning.""",
}

_AVERAGES = ("group", "pooled")
_PER_GROUP = ("group", None)  # the listwise measures: mean over groups or one value per group
_ANY_AVERAGE = ("group", "pooled", None)
# Labels with at most this many distinct values are ranked without sorting (hash / direct table).
_SMALL_LABEL_SET = 4096


# -- validation helpers (module-private)


def _as_vector(x, name):
    x = as_float_vector(x, name)
    if x.shape[0] == 0:
        raise ValueError(f"{name} is empty")
    return x


def _as_pair(a, b, name_a="y_true", name_b="y_score"):
    a, b = _as_vector(a, name_a), _as_vector(b, name_b)
    check_consistent_length(a, b)
    return a, b


def _check_average(average, allowed=_AVERAGES):
    if not one_of(average, allowed):
        raise ValueError(f"average must be one of {allowed}, got {average!r}")


def _group_setup(y_true, y_score, groups, average, allowed=_AVERAGES):
    _check_average(average, allowed)
    y, f = _as_pair(y_true, y_score)
    return y, f, group_index(groups, y.shape[0])


_BAD_CUTOFF = "measure {!r}: the cutoff after @ must be a positive integer, e.g. {}@10"


def _check_k(k, allow_none=True, name="k"):
    if k is None and allow_none:
        return None
    need = f"{'None or ' if allow_none else ''}a positive integer"
    return check_real(k, name, need, lambda v: v >= 1, numbers.Integral)


def _check_keywords(func, kwargs, label, cutoff=None):
    """Refuse now a keyword ``func`` does not take and a bad cutoff: a search would record the error of every scoring
    call as a NaN score and pick an arbitrary candidate."""
    try:
        params = inspect.signature(func).parameters
    except (TypeError, ValueError):  # no signature to read: the call will tell
        params = None
    if params is not None and not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        unknown = sorted(set(kwargs) - set(params))
        if unknown:
            named = [n for n, p in list(params.items())[2:] if p.kind is not p.VAR_POSITIONAL]
            raise TypeError(f"{label} takes no keyword {unknown[0]!r} (its keywords: {', '.join(named) or 'none'})")
    if cutoff is not None and cutoff in kwargs:
        _check_k(kwargs[cutoff], name=cutoff)


def _accepts(func, parameter):
    try:
        return parameter in inspect.signature(func).parameters
    except (TypeError, ValueError):
        return False


def _label_ranks(y):
    res = _core.dense_ranks_small(y, _SMALL_LABEL_SET)
    return _core.dense_ranks_from_order(y, np.argsort(y).astype(np.int64, copy=False)) if res is None else res


# Rows below which a measure runs on one thread whatever n_jobs: starting threads costs more (docs/design/measures.md).
_PARALLEL_ROWS = 50_000


def _sweep_threads(n_jobs, m):
    threads = check_n_jobs(n_jobs)  # checked at any size
    return 1 if m < _PARALLEL_ROWS else threads


def _sweep(kernel, n_jobs, m, *args, **kwargs):
    """``kernel(*args, threads, **kwargs)`` on the threads of ``n_jobs`` for m rows, in a compute region so that
    measures run from several Python threads share the cores; one thread (no BLAS, nothing to share) takes none."""
    threads = _sweep_threads(n_jobs, m)
    with compute_region(threads) if threads > 1 else contextlib.nullcontext():
        return kernel(*args, threads, **kwargs)


def _pair_stats(y, f, gi, weighted, n_jobs=None, ranks=None):
    """(n_groups, 6): pairs, relevant, discordant (y_i > y_j, f_i < f_j), tied_relevant (y_i != y_j, f_i == f_j),
    w_discordant and w_tied (|y_i - y_j| summed over the discordant and over all score-tied pairs)."""
    yrank, values = _label_ranks(y) if ranks is None else ranks
    order = np.argsort(f).astype(np.int64, copy=False)
    return _sweep(_core.pair_statistics, n_jobs, f.shape[0], f, order, yrank, values, gi.order, gi.offsets,
                  bool(weighted))


def _group_label_ranks(y, gi):
    """(ranks, values) for :func:`_pair_stats` with one rank per distinct (group, label) and each rank's label less
    its group's median: the core sums |y_i - y_j| from running sums of these values, and a group's offset (labels
    near 1e9 a micro-unit apart, integers near 2^52) rounds none of their differences away."""
    order = np.lexsort((y, gi.codes))
    ys, cs = y[order], gi.codes[order]
    new = np.ones(ys.shape[0], dtype=bool)
    new[1:] = (ys[1:] != ys[:-1]) | (cs[1:] != cs[:-1])
    ranks = np.empty(ys.shape[0], dtype=np.int32)
    ranks[order] = np.cumsum(new) - 1
    median = ys[np.cumsum(gi.sizes) - gi.sizes + (gi.sizes - 1) // 2]  # the groups are contiguous in ys, in code order
    return ranks, ys[new] - median[cs[new]]


def _average(num, den, average, what, nothing="there is no pair to evaluate"):
    num, den = np.asarray(num, dtype=np.float64), np.asarray(den, dtype=np.float64)
    valid = den > 0
    if not valid.any():
        raise ValueError(f"{what}: {nothing}")
    # squared costs of scores near 1e200 (NaN, inf or numpy's overflow text); an ideal DCG of gains near 1e308 (inf,
    # which made the group's NDCG 0)
    if not (np.isfinite(num[valid]).all() and np.isfinite(den[valid]).all()):
        raise ValueError(f"{what}: the result overflows float64; rescale y_true and y_score")
    if average == "pooled":
        return float(num[valid].sum() / den[valid].sum())
    if average is None:
        return np.divide(num, den, out=np.full(den.shape[0], np.nan), where=valid)
    return float(np.mean(num[valid] / den[valid]))


# -- pairwise measures


def _tied_score_weight(tied_scores, ties, where):
    """The error of a pair with tied scores: 1/2 ("half", fastrank's default everywhere) or 1 ("wrong", 004 eq. 1's
    sign(0) = -1).  ``ties`` is the option's former name ("error" meant "wrong"), accepted with a FutureWarning."""
    if ties is not None:
        warnings.warn(f"{where}(ties=...) is renamed tied_scores=...: ties='error' is tied_scores='wrong', ties='half' "
                      "is tied_scores='half' (now the default)", FutureWarning, stacklevel=user_stacklevel())
        if not one_of(ties, ("error", "half")):
            raise ValueError(f"ties must be 'error' or 'half', got {ties!r}")
        tied_scores = "wrong" if ties == "error" else "half"
    if not one_of(tied_scores, ("half", "wrong")):
        raise ValueError(f"tied_scores must be 'half' (a tie is half an error) or 'wrong' (a tie is an error), "
                         f"got {tied_scores!r}")
    return 0.5 if tied_scores == "half" else 1.0


@with_param_docs(_METRIC_DOCS)
def pairwise_disagreement(y_true, y_score, groups=None, *, tied_scores="half", average="group", n_jobs=None,
                          sample_weight=None, ties=None):
    """Fraction of relevant pairs that ``y_score`` orders wrongly (004 eq. 1).

    A pair is relevant when its ``y_true`` differ; it is an error when the higher-labelled row scores lower.
    O(m log m); with ``sample_weight`` O(sum_q n_q^2) in blocks.

    Parameters
    ----------
    %(y_true)s %(y_score)s %(groups)s %(tied_scores)s %(average)s %(n_jobs)s
    sample_weight : array-like of shape (n_samples,) or None, default=None
        One weight >= 0 per row, pair (i, j) weighing w_i w_j in the errors and in the count (what a ``Pipeline``
        routes to ``score``).
    %(ties)s

    Returns
    -------
    disagreement : float or ndarray of shape (n_groups,)
        In [0, 1], 0 for a perfect ranking; an array with ``average=None``.

    Raises
    ------
    ValueError
        When no relevant pair exists.
    """
    tie_weight = _tied_score_weight(tied_scores, ties, "pairwise_disagreement")
    y, f, gi = _group_setup(y_true, y_score, groups, average, _ANY_AVERAGE)
    if sample_weight is None:
        S = _pair_stats(y, f, gi, False, n_jobs)
        return _average(S[:, 2] + tie_weight * S[:, 3], S[:, 1], average, "pairwise_disagreement")
    # pair weights w_i w_j, by blocks of explicit pairs
    _sweep_threads(n_jobs, y.shape[0])  # checked although the blocks run on one thread
    sw = as_float_vector(sample_weight, "sample_weight", y.shape[0])
    if (sw < 0).any():
        raise ValueError("sample_weight must be >= 0")
    # only the ratios of the weights matter: each group's are taken in units of a power of two near their largest
    # (exact), so that no group's products w_i w_j overflow or vanish next to another group's weights
    num, den, units = [], [], []
    for rows in gi.rows():
        yq, fq, wq = y[rows], f[rows], sw[rows]
        units.append(int(np.frexp(wq.max())[1]))  # every group has a row
        wq = np.ldexp(wq, -units[-1])
        e = d = 0.0
        step = max(1, 2**22 // rows.size)
        for lo in range(0, rows.size, step):
            rs = slice(lo, lo + step)
            higher = yq[rs, None] > yq[None, :]  # each relevant pair once, from its higher-labelled end
            ww = wq[rs, None] * wq[None, :]
            d += ww[higher].sum()
            e += (ww * higher * ((fq[rs, None] < fq[None, :]) + tie_weight * (fq[rs, None] == fq[None, :]))).sum()
        num.append(e)
        den.append(d)
    if average == "pooled":  # the sums in one unit, the largest group's
        shift = 2 * (np.array(units) - max(units))
        num, den = np.ldexp(num, shift), np.ldexp(den, shift)
    return _average(num, den, average, "pairwise_disagreement")


@with_param_docs(_METRIC_DOCS)
def auc(y_true, y_score):
    """Area under the ROC curve of binary labels (= sklearn.metrics.roc_auc_score): the fraction of (positive, negative)
    pairs ordered correctly, score ties 1/2.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Binary labels: exactly two distinct values (else ValueError), the larger one positive.
    %(y_score)s

    Returns
    -------
    auc : float
        In [0, 1].
    """
    y, f = _as_pair(y_true, y_score)
    ranks = _label_ranks(y)
    if ranks[1].size != 2:
        raise ValueError("auc needs y_true with exactly two distinct values (both classes present)")
    S = _pair_stats(y, f, group_index(None, y.shape[0]), False, ranks=ranks)[0]
    return float(1.0 - (S[2] + 0.5 * S[3]) / S[1])


def kendall_distance(a, b, *, normalize=True):
    """Kendall distance #{(i, j) : a_i > a_j and b_i < b_j} between two score vectors (003).

    A pair tied in ``a`` or ``b`` is not counted (neither inverted nor, for scipy, discordant).  O(m log m).

    Parameters
    ----------
    a, b : array-like of shape (n_samples,)
        The two score vectors.
    normalize : bool, default=True
        Divide the count by m(m-1)/2, giving (1 - tau) / 2 without ties (scipy.stats.kendalltau); needs at least 2
        items.  False: the count.

    Returns
    -------
    distance : float or int
        The normalised distance (float), or with ``normalize=False`` the number of inverted pairs (int).
    """
    check_bool(normalize, "normalize")  # "no" normalised, None counted
    a, b = _as_pair(a, b, "a", "b")
    m = a.shape[0]
    d = int(_pair_stats(a, b, group_index(None, m), False)[0, 2])
    if not normalize:
        return d
    if m < 2:
        raise ValueError("kendall_distance with normalize=True needs at least 2 items")
    return d / (m * (m - 1) / 2)


def spearman_footrule(a, b):
    """Spearman's footrule sum_i |rank_a(i) - rank_b(i)| (003) between two rankings, tied items sharing the mean of
    their positions (scipy.stats.rankdata(method="average")), so the value may be a half-integer.  O(m log m).

    As a measure of predictions b against targets a, the measure table's "footrule" (``discounted_error(a, b,
    discount="none")``) takes the expected displacement over the orders of tied predictions instead.

    Parameters
    ----------
    a, b : array-like of shape (n_samples,)
        The scores defining the two rankings (a higher score ranks first).

    Returns
    -------
    footrule : float
        The sum of rank displacements.
    """
    a, b = _as_pair(a, b, "a", "b")
    # ranks by decreasing score, m + 1 - the increasing ones: the same displacements
    gi = group_index(None, a.shape[0])
    return float(np.abs(_group_average_ranks(a, gi) - _group_average_ranks(b, gi)).sum())


@with_param_docs(_METRIC_DOCS)
def msd(y_true, y_score, groups=None, *, average="group"):
    """Mean squared difference of pairwise differences (000 eq. 67), O(m).

    MSD = (1/m^2) sum_i sum_j ((h(x_j) - h(x_i)) - (y_j - y_i))^2 over all ordered pairs (i = j included, as in the
    paper) = 2 * the population variance of h(x) - y, with y = ``y_true`` and h(x) = ``y_score``.  With groups: per
    group over n_g^2, groups of one row skipped ("pooled": the sum over groups / the sum of n_g^2).

    %(Parameters)s %(y_true)s %(y_score)s %(groups)s %(average)s %(Returns)s
    msd : float or ndarray of shape (n_groups,)
        An array with ``average=None``.
    """
    return _called_as("msd", magnitude_preserving_cost, y_true, y_score, groups, average=average)


def _called_as(name, func, *args, **kwargs):
    """``func(*args, **kwargs)``, its errors naming ``name``, the function the user called, not ``func``."""
    try:
        return func(*args, **kwargs)
    except ValueError as exc:
        raise ValueError(str(exc).replace(f"{func.__name__}:", f"{name}:", 1)) from None


def _centred_difference(y, f, gi):
    """h - y less its group means, from h and y each centred in their groups first, in two passes: h - y of scores
    near 1e16 beside labels 0-5 rounded the labels away (msd 8 for 12.44)."""
    def centred(v):  # one group: no gathers
        return v - v.mean() if gi.n_groups == 1 else centred_in_groups(v, gi)
    c = centred(centred(f)) - centred(centred(y))
    return centred(c)  # nearly centred already: one pass


def _mp_total(y, f, gi, n, power):
    """Per group the sum over ordered pairs of |dh - dy|^power.  With c = h - y centred per group: sum_ij (c_j -
    c_i)^2 = 2 n sum c^2; with c sorted, sum_ij |c_j - c_i| = 2 sum_k c_(k) (2k - n + 1)."""
    codes, G = gi.codes, gi.n_groups
    c = _centred_difference(y, f, gi)
    if power == 2:
        return 2.0 * n * np.bincount(codes, weights=c * c, minlength=G)
    if G == 1:
        cs, gs = np.sort(c), codes
    else:
        order = np.lexsort((c, codes))
        cs, gs = c[order], codes[order]
    k = np.arange(cs.size, dtype=np.float64) - gi.offsets[gs]
    return 2.0 * np.bincount(gs, weights=cs * (2.0 * k - n[gs] + 1.0), minlength=G)


@with_param_docs(_METRIC_DOCS)
def m1d(y_true, y_score, groups=None, *, average="group"):
    """Mean absolute difference of pairwise differences (000 eq. 68): (1/m^2) sum_ij |(h(x_j) - h(x_i)) - (y_j -
    y_i)|, y = ``y_true``, h(x) = ``y_score``, O(m log m) by sorting h - y.  Groups and averages as :func:`msd`.

    %(Parameters)s %(y_true)s %(y_score)s %(groups)s %(average)s %(Returns)s
    m1d : float or ndarray of shape (n_groups,)
        An array with ``average=None``.
    """
    return _called_as("m1d", magnitude_preserving_cost, y_true, y_score, groups, power=1, average=average)


@with_param_docs(_METRIC_DOCS)
def discrete_ranking_loss(y_true, y_score, groups=None, *, average="group", n_jobs=None):
    """Empirical discrete ranking loss of Agarwal & Niyogi (002 eq. 2), O(m log m).

    R(f; S) = 1/C(m,2) sum_{i<j} |y_i - y_j| (I[(y_i - y_j)(f_i - f_j) < 0] + 1/2 I[f_i = f_j]), y = ``y_true``,
    f = ``y_score``: mis-ordered pairs weigh |y_i - y_j|, score ties half of it, over all C(m,2) pairs.  With groups:
    per group over C(n_g, 2), groups of one row skipped ("pooled": the sum / the sum of C(n_g, 2)).

    %(Parameters)s %(y_true)s %(y_score)s %(groups)s %(average)s %(n_jobs)s %(Returns)s
    loss : float or ndarray of shape (n_groups,)
        An array with ``average=None``.
    """
    return _called_as("discrete_ranking_loss", stability_ranking_loss, y_true, y_score, groups, loss="disc",
                      average=average, n_jobs=n_jobs)


# -- listwise / ordinal measures


@with_param_docs(_METRIC_DOCS)
def ndcg(y_true, y_score, groups=None, *, k=None, gain="exponential", average="group", n_jobs=None):
    """Normalized discounted cumulative gain over groups (queries) of any sizes, O(m log n_g).

    DCG@k = sum over positions p = 1..k of the ranking by decreasing ``y_score`` of gain(y) / log2(p + 1), divided
    by the ideal DCG (ranking by y_true).  Tied scores: as scikit-learn, a tied block's gains are averaged over its
    positions (the expected DCG over the orders of the tie).  Groups with ideal DCG 0 are skipped (sklearn counts them
    as 0); ValueError if all are.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Relevance grades, >= 0.
    %(y_score)s %(groups)s %(k)s
    gain : {"exponential", "linear"}, default="exponential"
        "exponential": 2^y - 1 (Burges et al., LightGBM's lambdarank; ValueError for grades above 1000); "linear":
        y (sklearn.metrics.ndcg_score).
    %(average_listwise)s %(n_jobs)s

    Returns
    -------
    ndcg : float or ndarray of shape (n_groups,)
        In [0, 1]; an array with ``average=None``.
    """
    y, f, gi = _group_setup(y_true, y_score, groups, average, _PER_GROUP)
    if (y < 0).any():
        raise ValueError("ndcg needs non-negative relevance labels y_true")
    if not one_of(gain, ("exponential", "linear")):
        raise ValueError(f"gain must be 'exponential' or 'linear', got {gain!r}")
    if gain == "exponential" and y.max() > 1000:
        raise ValueError("y_true too large for exponential gain 2^y - 1; use gain='linear'")
    # a cutoff beyond the largest group is no cutoff (and fits a C int)
    kk = 0 if k is None else min(_check_k(k), y.shape[0])
    S = _sweep(_core.dcg_statistics, n_jobs, y.shape[0], y, f, gi.order, gi.offsets, kk, int(gain == "exponential"))
    return _average(S[:, 0], S[:, 1], average, "ndcg", "no group has a relevant item (every ideal DCG is 0)")


def mean_rank_loss(y_true, y_pred, groups=None, *, scale="values", classes=None):
    """Average rank loss (1/T) sum_t |yhat_t - y_t| (001 Sect. 4, Table 1; after Crammer & Singer).

    The two scales agree when the labels are the consecutive integers 1..k (the paper's ranks).

    Parameters
    ----------
    y_true, y_pred : array-like of shape (n_samples,)
        True and predicted labels y and yhat: numeric for ``scale="values"``, of any mutually comparable type for
        ``"positions"``.
    groups : array-like of shape (n_samples,) or None, default=None
        Query id of each row: the mean over groups of each group's average, the positions still those of the whole
        label set.  None: the mean over all rows.
    scale : {"values", "positions"}, default="values"
        "values": the formula on the numeric label values, ``mean_rank_loss([1, 5], [5, 1]) == 4.0``.
        "positions": each label replaced by its position 1..k in the ordered label set (see ``classes``), so with
        labels {1, 2, 5} predicting 5 for 1 costs 2.  That is the on-line learners' convention:
        ``average_rank_loss_`` = ``mean_rank_loss(y, yhat, scale="positions", classes=est.classes_)``.
    classes : array-like of shape (n_classes,) or None, default=None
        With ``scale="positions"``: the labels (of any type, lowest first, no duplicates) in the order given; a label
        missing from it raises ValueError.  None: the declared order of an ordered pandas categorical ``y_true`` or
        ``y_pred`` (its categories, as the on-line learners' ``classes_``), else the sorted union of the labels.
        Must be None with ``scale="values"``.

    Returns
    -------
    loss : float
        The mean |yhat - y|, in label values or positions.
    """
    if not one_of(scale, ("values", "positions")):
        raise ValueError(f"scale must be 'values' (|yhat - y| on the labels) or 'positions' (rank steps in the "
                         f"ordered label set), got {scale!r}")
    if scale == "values" and classes is not None:
        raise ValueError("classes is only used with scale='positions' (rank steps in an ordered label set); "
                         "pass scale='positions' or drop classes")
    yt, yp = _asarray(y_true, "y_true"), _asarray(y_pred, "y_pred")
    if scale == "values":  # objects (a pandas object column of numbers) read as the other measures read them
        what = "numeric for scale='values' (ordinal labels of another type: scale='positions' with classes=)"
        yt, yp = (_to_float(v, name, what) if v.dtype == object else v for v, name in ((yt, "y_true"), (yp, "y_pred")))
    for name, v in (("y_true", yt), ("y_pred", yp)):
        if v.ndim != 1:
            raise ValueError(f"{name} must be 1-D, got shape {v.shape}")
        if v.shape[0] == 0:
            raise ValueError(f"{name} is empty")
        if v.dtype.kind in "fc" and not np.isfinite(v).all():
            raise _not_finite(v, name)
        if scale == "values" and v.dtype.kind not in "iufb":
            raise ValueError(f"{name} must be numeric for scale='values' (|yhat - y| on the label values), got "
                             f"dtype {v.dtype}; for ordinal labels of another type use scale='positions' with classes=")
        check_group_ids(v, name, what="label")  # None, pandas' NA, NaT among labels of any type
    check_consistent_length(yt, yp)
    if scale == "values":
        return _mean_over_groups(np.abs(yp.astype(np.float64) - yt.astype(np.float64)), groups)
    # "low" < "mid" < "high" as an ordered categorical declares it (numpy would sort the strings: high < low < mid)
    declared = [v.dtype.categories.tolist() for v in (y_true, y_pred)
                if classes is None and getattr(getattr(v, "dtype", None), "ordered", False)]
    if len(declared) == 2 and declared[0] != declared[1]:
        raise ValueError(f"y_true and y_pred are ordered categoricals declaring different orders ({declared[0]} and "
                         f"{declared[1]}); pass classes= (the labels, lowest first)")
    if declared:
        classes = declared[0]
    if classes is None:
        kinds = yt.dtype.kind + yp.dtype.kind  # strings (a pandas column's are objects) and numbers:
        if any(k in "US" for k in kinds) and any(k in "iufb" for k in kinds):  # np.concatenate makes numbers strings
            raise ValueError(f"labels must be mutually comparable: y_true has dtype {yt.dtype}, y_pred {yp.dtype}")
        try:
            classes = np.unique(np.concatenate([yt, yp]))
        except TypeError:  # Python's "'<' not supported": name the first label of y_true, else of y_pred, at fault
            try:
                np.unique(yt)
            except TypeError:
                raise unordered_labels(yt, "y_true") from None
            raise unordered_labels(yp, "y_pred", yt, "y_true's labels") from None
    classes = _asarray(classes, "classes")
    if classes.ndim != 1 or classes.size == 0:
        raise ValueError("classes must be a non-empty 1-D sequence")
    try:  # e.g. None among numbers
        sc, first = np.unique(classes, return_index=True)  # sorted classes, and where each stands in classes
    except TypeError:
        raise unordered_labels(classes, "classes") from None
    if sc.size != classes.size:
        raise ValueError("classes contains duplicates")
    positions = []
    for name, v in (("y_true", yt), ("y_pred", yp)):
        try:
            idx = np.clip(np.searchsorted(sc, v), 0, sc.size - 1)
        except TypeError:
            raise unordered_labels(v, name, classes, "classes") from None
        if not np.array_equal(sc[idx], v):  # always equal with classes=None (the sorted union of the labels)
            raise ValueError(f"{name} contains labels that are not in classes")
        positions.append(first[idx])
    return _mean_over_groups(np.abs(positions[1] - positions[0]), groups)


def _mean_over_groups(loss, groups):
    if groups is None:
        return float(np.mean(loss))
    gi = group_index(groups, loss.shape[0])
    return float(np.mean(np.bincount(gi.codes, weights=loss, minlength=gi.n_groups) / gi.sizes))


# -- pairwise costs and losses of the stability papers (000 Sect. 2.1, 002 Sect. 2, 4, 5.2)


def _dominance(a, b, gi, n_jobs, b_less=None):  # contiguous float64 (checked vectors and arithmetic on them)
    """Per group the sums over the pairs with a_i > a_j and b_i > b_j, and in columns 6-11 the magnitudes of their
    expanded terms (:func:`_pairs_where_digits_lost`); with ``b_less`` the pairs of (a, b - b_less), that difference
    formed in the core from b and b_less each less its group's median: exact near them, so a group's offset (labels
    near 2**40 beside scores of 1) rounds nothing away, while values near 0 stay apart."""
    return _sweep(_core.dominance_sums, n_jobs, len(a), a, b, gi.order, gi.offsets, b_less=b_less)


_COSTS = ("hr", "mp", "hmp", "svr")


@with_param_docs(_METRIC_DOCS)
@np.errstate(over="ignore", invalid="ignore")  # overflow is reported by _average
def magnitude_preserving_cost(y_true, y_score, groups=None, *, cost="mp", power=2, epsilon=0.0, average="group",
                              n_jobs=None):
    """Empirical pairwise cost of Cortes, Mohri & Rastogi (000 eq. 2 with the costs of eqs. 4-7).

    R(h, S) = (1/m^2) sum_i sum_j c(h, x_i, x_j) over all ordered pairs (i = j costs 0), with dh = h(x_j) - h(x_i)
    and dy = y_j - y_i (y = ``y_true``, h(x) = ``y_score``):

    * ``cost="hr"`` hinge rank cost (eq. 4): |dh|^n on mis-ordered pairs (dh * dy < 0);
    * ``cost="mp"`` magnitude-preserving cost (eq. 5): |dh - dy|^n on every pair (n = 2: MSD, eq. 67, the MPRank
      objective; n = 1: M1D, eq. 68);
    * ``cost="hmp"`` one-sided MP cost (eq. 6): |dh - dy|^n on mis-ordered pairs;
    * ``cost="svr"`` epsilon-insensitive cost (eq. 7, SVRank): (|dh - dy| - epsilon)^n where |dh - dy| > epsilon.  The
      extracted eq. 7 reads |dh - dy - epsilon|^n, which is not convex; the paper calls all four costs convex and
      SVRank's constraints (Sect. 2.4) bound both u - epsilon and -u - epsilon (u = dh - dy), hence the symmetric form.

    Ties in y or h are never mis-ordered.  With groups: per group over n_g^2, groups of one row skipped ("pooled":
    the sum / the sum of n_g^2).  O(m log m): Fenwick-tree sweeps ("hr", "hmp"), the closed forms of :func:`msd` /
    :func:`m1d` ("mp"), a sorted sweep ("svr").

    Parameters
    ----------
    %(y_true)s %(y_score)s %(groups)s
    cost : {"hr", "mp", "hmp", "svr"}, default="mp"
        The cost c, as listed above.
    power : {1, 2}, default=2
        The exponent n.
    epsilon : float, default=0.0
        The insensitivity of ``cost="svr"``, >= 0; any other cost needs 0.
    %(average)s %(n_jobs)s

    Returns
    -------
    cost : float or ndarray of shape (n_groups,)
        An array with ``average=None``.
    """
    if not one_of(cost, _COSTS):
        raise ValueError(f"cost must be one of {_COSTS} (000 eqs. 4-7), got {cost!r}")
    if isinstance(power, (bool, np.bool_)) or not one_of(power, (1, 2)):
        raise ValueError(f"power must be 1 or 2 (the exponent n of 000 eqs. 4-7), got {power!r}")
    check_real(epsilon, "epsilon", "a finite number >= 0", lambda v: v >= 0)
    if epsilon != 0 and cost != "svr":
        raise ValueError("epsilon is only used by cost='svr'")
    y, f, gi = _group_setup(y_true, y_score, groups, average, _ANY_AVERAGE)
    _sweep_threads(n_jobs, f.shape[0])  # checked although the closed form of cost="mp" needs no threads
    n = gi.sizes.astype(np.float64)
    den = np.where(n >= 2, n * n, 0.0)
    if cost == "mp":
        total = _mp_total(y, f, gi, n, power)
    elif cost == "svr":
        T = _sweep(_core.threshold_pair_sums, n_jobs, f.shape[0], _centred_difference(y, f, gi), gi.order, gi.offsets,
                   float(epsilon))
        unordered = T[:, power]
        _pairs_where_digits_lost(y, f, gi, unordered, T[:, 2 + power], _svr_pair_cost(epsilon, power),
                                 "magnitude_preserving_cost", every_pair=True)
        total = 2.0 * unordered  # ordered pairs: each unordered pair twice
    else:
        # mis-ordered pairs: y_i > y_j and f_i < f_j, the dominance pairs of (a, b) = (y, -f); |dh| = b_i - b_j and
        # |dh - dy| = (a_i - a_j) + (b_i - b_j) on them.
        D = _dominance(y, -f, gi, n_jobs)
        cols = ([2] if power == 1 else [4]) if cost == "hr" else [1, 2] if power == 1 else [3, 5, 5, 4]
        unordered = D[:, cols].sum(axis=1)
        # mis-ordered pairs (u = f_i - f_j < 0): |dh|^p, or (d + |dh|)^p for hmp
        term = (lambda d, u: np.where(u < 0, -u, 0.0) ** power) if cost == "hr" else \
            (lambda d, u: np.where(u < 0, d - u, 0.0) ** power)
        _pairs_where_digits_lost(y, f, gi, unordered, D[:, [6 + c for c in cols]].sum(axis=1), term,
                                 "magnitude_preserving_cost")
        total = 2.0 * unordered
    return _average(total, den, average, "magnitude_preserving_cost")


_LOSSES = ("0-1", "disc", "gamma", "hinge", "squared")


@with_param_docs(_METRIC_DOCS)
@np.errstate(over="ignore", invalid="ignore")  # overflow is reported by _average
def stability_ranking_loss(y_true, y_score, groups=None, *, loss="hinge", gamma=1.0, average="group", n_jobs=None):
    """Empirical l-error of Agarwal & Niyogi (002 Definition 3) for their ranking losses.

    R_l(f; S) = 1/C(m,2) sum_{i<j} l(f, (x_i, y_i), (x_j, y_j)), y = ``y_true``, f = ``y_score``, d = y_i - y_j,
    u = (f_i - f_j) sgn(d) (the margin in the direction of the preference; sgn(0) = 0):

    * ``loss="0-1"`` (Sect. 2): I[d (f_i - f_j) < 0] + 1/2 I[f_i = f_j].  As written the tie term ignores the labels,
      so a pair with equal labels and scores costs 1/2 (:func:`pairwise_disagreement` counts relevant pairs only);
    * ``loss="disc"`` (eq. 3): |d| (I[d (f_i - f_j) < 0] + 1/2 I[f_i = f_j]) (= :func:`discrete_ranking_loss`);
    * ``loss="gamma"`` (Sect. 4, l_gamma; gamma=1 is Corollary 12's l_1): |d| if u/gamma <= 0, |d| - u/gamma below |d|,
      else 0;
    * ``loss="hinge"`` (Sect. 5.2.1, l_h): (|d| - u)_+;
    * ``loss="squared"`` (eq. 9, l_sq): (|d| - u)^2, 0 when d = 0 (sgn(0) = 0), else ((y_i - y_j) - (f_i - f_j))^2.

    All but "0-1" are 0 on equal labels, and l_disc <= l_gamma <= l_h at gamma = 1.  Groups and averages as
    :func:`magnitude_preserving_cost`, per group over C(n_g, 2).  O(m log m): Fenwick-tree sweeps over the pairs
    y_i > y_j; l_gamma = (1/gamma) sum [(gamma |d| - u)_+ - (-u)_+].

    Parameters
    ----------
    %(y_true)s %(y_score)s %(groups)s
    loss : {"0-1", "disc", "gamma", "hinge", "squared"}, default="hinge"
        The loss l, as listed above.
    gamma : float, default=1.0
        The scale of ``loss="gamma"``, > 0; any other loss needs 1.0.
    %(average)s %(n_jobs)s

    Returns
    -------
    loss : float or ndarray of shape (n_groups,)
        An array with ``average=None``.
    """
    if not one_of(loss, _LOSSES):
        raise ValueError(f"loss must be one of {_LOSSES} (002 Sect. 2, 4, 5.2), got {loss!r}")
    check_real(gamma, "gamma", "a finite number > 0", lambda v: v > 0)
    if gamma != 1.0 and loss != "gamma":
        raise ValueError("gamma is only used by loss='gamma'")
    y, f, gi = _group_setup(y_true, y_score, groups, average, _ANY_AVERAGE)
    n = gi.sizes.astype(np.float64)
    den = n * (n - 1) / 2.0
    if loss == "disc":
        S = _pair_stats(y, f, gi, True, n_jobs, ranks=_group_label_ranks(y, gi))
        total = S[:, 4] + 0.5 * S[:, 5]
    elif loss == "0-1":  # discordant pairs + 1/2 all score-tied pairs of a group (labels ignored): C(b, 2) per block
        rk = _Ranked(y, f, gi)
        tied = np.bincount(rk.group, weights=rk.size * (rk.size - 1) / 2.0, minlength=rk.G)
        total = _pair_stats(y, f, gi, False, n_jobs)[:, 2] + 0.5 * tied
    elif loss == "hinge":
        # (|d| - u)_+ on pairs y_i > y_j is ((y_i - f_i) - (y_j - f_j))_+: dominance pairs of (y, y - f)
        D = _dominance(y, y, gi, n_jobs, b_less=f)
        total = D[:, 2]
        _pairs_where_digits_lost(y, f, gi, total, D[:, 8], lambda d, u: np.maximum(d - u, 0.0),
                                 "stability_ranking_loss")
    elif loss == "gamma":
        # (1/gamma) [(gamma |d| - u)_+ - (-u)_+] = min(|d|, (|d| - u / gamma)_+): with g = f / gamma, the dominance
        # pairs of (y, y - g) less those of (y, -g); its terms cancel where a score lies far beyond the others
        g = f / float(gamma)
        plus, minus = _dominance(y, y, gi, n_jobs, b_less=g), _dominance(y, -g, gi, n_jobs)
        total = plus[:, 2] - minus[:, 2]
        _pairs_where_digits_lost(y, g, gi, total, plus[:, 8] + minus[:, 8],
                                 lambda d, v: np.minimum(d, np.maximum(d - v, 0.0)), "stability_ranking_loss")
    else:  # squared: sum over y_i > y_j of (z_i - z_j)^2, z = y - f (z ties contribute 0): pairs of (y, z), (y, -z)
        first, second = _dominance(y, y, gi, n_jobs, b_less=f), _dominance(y, f, gi, n_jobs, b_less=y)
        total = first[:, 4] + second[:, 4]
        _pairs_where_digits_lost(y, f, gi, total, first[:, 10] + second[:, 10], lambda d, u: (d - u) ** 2,
                                 "stability_ranking_loss")
    return _average(total, den, average, "stability_ranking_loss")


_PAIRS_MAX_ROWS = 20000  # explicit pairs of one group: O(n^2), seconds at this size


def _svr_pair_cost(epsilon, power):
    """(|u - d| - epsilon)_+^power of a pair from (d, f_i, f_j), u = f_i - f_j, with u - d - epsilon and d - u -
    epsilon each summed from its four terms by Neumaier's compensated sum: scores of 1e16 beside scores of 0-3 and
    epsilon = 1e16 leave differences of a few units, which any order of plain sums rounds away."""
    def compensated(*terms):
        s, c = terms[0], 0.0
        for t in terms[1:]:
            u = s + t
            c = c + np.where(np.abs(s) >= np.abs(t), (s - u) + t, (t - u) + s)
            s = u
        return s + c

    def term(d, fi, fj):
        return np.maximum(np.maximum(compensated(fi, -fj, -d, -epsilon), compensated(fj, -fi, d, -epsilon)),
                          0.0) ** power
    return term


def _pairs_where_digits_lost(y, f, gi, total, magnitude, term, name, every_pair=False):
    """Replace ``total[q]`` of every group whose sweep sums lost digits (the magnitude of their expanded terms above
    1e6 times the result: values at two scales, such as scores of 1e16 beside scores of 1, where even the median
    centring leaves the small values' pairs rounded away) by the sum of ``term(d, u)`` over its pairs y_i > y_j (or
    ``every_pair`` i < j, with ``term(d, f_i, f_j)``), d = y_i - y_j, u = f_i - f_j, in non-negative terms.  Above
    _PAIRS_MAX_ROWS rows it warns instead."""
    order, offsets = gi.order, gi.offsets
    for q in np.flatnonzero(magnitude > 1e6 * np.abs(total)):
        rows = order[offsets[q]:offsets[q + 1]]
        if rows.size > _PAIRS_MAX_ROWS:
            warnings.warn(f"{name}: the values of a group of {rows.size} rows lie at scales so far apart that its sum "
                          f"keeps fewer than about 9 digits (the sum over its pairs is exact up to {_PAIRS_MAX_ROWS} "
                          "rows); rescale the scores", IllConditionedWarning, stacklevel=user_stacklevel())
            continue
        yq, fq, s = y[rows], f[rows], 0.0
        for lo in range(0, rows.size, 256):
            d, u = yq[lo:lo + 256, None] - yq[None, :], fq[lo:lo + 256, None] - fq[None, :]
            if every_pair:
                pair = np.arange(lo, lo + d.shape[0])[:, None] < np.arange(rows.size)
                value = term(d, fq[lo:lo + 256, None], fq[None, :])
            else:
                pair, value = d > 0, term(d, u)
            s += float(np.where(pair, value, 0.0).sum())
        total[q] = s


# -- position and discounted error (003, "Other loss functions for ranking"), explicit edges


def _group_average_ranks(v, gi):
    """1-based ranks of v inside each group by decreasing v, tied values sharing the mean of their positions (a tied
    block of size b after s rows: s + (b + 1)/2, exact in floating point)."""
    rk = _Ranked(v, v, gi)
    out = np.empty(v.shape[0])
    out[rk.order] = (rk.start + (rk.size + 1) / 2.0)[rk.block]
    return out


@with_param_docs(_METRIC_DOCS)
def position_error(y_true, y_score, groups=None, *, average="group"):
    """Position error d_PE = sigma'(x*) - 1 (003): the wrong items ranked before the target x*.

    The targets of a group are its rows with the largest ``y_true``; the error counts the other rows scoring above
    the best target, plus 1/(t + 1) per other row tied with it when t targets share that best score (the expectation
    over random tie orders: each such row precedes all t targets with probability 1/(t + 1); 1/2 for one target).  0
    for a group of one row or of one label (no group is skipped).  O(m log m).

    %(Parameters)s %(y_true)s %(y_score)s %(groups)s %(average_listwise)s %(Returns)s
    error : float or ndarray of shape (n_groups,)
        The number of wrong rows ranked first (expected over ties); an array with ``average=None``.
    """
    y, f, gi = _group_setup(y_true, y_score, groups, average, _PER_GROUP)
    cg, G = gi.codes, gi.n_groups
    ymax = np.full(G, -np.inf)
    np.maximum.at(ymax, cg, y)
    target = y == ymax[cg]
    fstar = np.full(G, -np.inf)
    np.maximum.at(fstar, cg[target], f[target])
    best = fstar[cg]
    tied_targets = np.bincount(cg, weights=target & (f == best), minlength=G)
    per = np.bincount(cg, weights=~target * ((f > best) + (f == best) / (1.0 + tied_targets[cg])), minlength=G)
    return per if average is None else float(per.mean())


@with_param_docs(_METRIC_DOCS)
def discounted_error(y_true, y_score, groups=None, *, discount="log2", average="group"):
    """Discounted error d_DE = sum_i v_i |sigma(x_i) - sigma'(x_i)| (003): rank displacements weighted down for items
    the truth ranks low, O(m log m).

    sigma / sigma': ranks (1 = best) by decreasing ``y_true`` / ``y_score``, restarting in each group; rows of equal
    ``y_true`` share the mean of their positions, and for rows of equal ``y_score`` the displacement is its expectation
    over their orders (a constant prediction never scores better than a random one).  No group is skipped.

    Parameters
    ----------
    %(y_true)s %(y_score)s %(groups)s
    discount : {"log2", "reciprocal", "none"}, callable or None, default="log2"
        v_i = discount(sigma(x_i)): "log2" 1/log2(1 + sigma) (the DCG discount), "reciprocal" 1/sigma, "none" (or
        None) 1 (Spearman's footrule), or a callable of the array of true ranks returning finite weights >= 0, one
        per rank.
    %(average_listwise)s

    Returns
    -------
    error : float or ndarray of shape (n_groups,)
        An array with ``average=None``.
    """
    y, f, gi = _group_setup(y_true, y_score, groups, average, _PER_GROUP)
    rt = _group_average_ranks(y, gi)
    if not (callable(discount) or one_of(discount, ("log2", "reciprocal", "none", None))):
        raise ValueError(f"discount must be 'log2', 'reciprocal', 'none' or a callable of the true ranks, got "
                         f"{discount!r}")
    if callable(discount):
        w = _asarray(discount(rt.copy()), "discount(ranks)")
        if w.shape != rt.shape or w.dtype.kind not in "iufb" or not np.isfinite(w).all() or (w < 0).any():
            raise ValueError("discount(ranks) must return finite non-negative weights, one per rank")
    elif discount == "log2":
        w = 1.0 / np.log2(rt + 1.0)
    elif discount == "reciprocal":
        w = 1.0 / rt
    else:
        w = np.ones_like(rt)
    per = np.bincount(gi.codes, weights=w * _expected_displacement(rt, f, gi), minlength=gi.n_groups)
    return per if average is None else float(per.mean())


def _expected_displacement(r, f, gi):
    """E |r_i - U_i| per row, U_i uniform on the positions s + 1 .. s + b of the block of rows tied with row i in
    ``f`` (by decreasing f inside each group): sum_u |r - u| split at floor(r), O(1) a row."""
    rk = _Ranked(f, f, gi)
    lo, b = np.empty(f.shape[0]), np.empty(f.shape[0])
    lo[rk.order], b[rk.order] = (rk.start + 1.0)[rk.block], rk.size[rk.block].astype(np.float64)
    hi = lo + b - 1.0
    k = np.clip(np.floor(r), lo - 1.0, hi)  # positions lo..k lie at or below r, k + 1..hi above
    below, above = k - lo + 1.0, hi - k
    return (below * r - below * (lo + k) / 2.0 + above * (k + 1.0 + hi) / 2.0 - above * r) / b


@with_param_docs(_METRIC_DOCS)
def edge_disagreement(pairs, y_score, weights=None, *, tied_scores="half", ties=None):
    """Weighted disagreement of ``y_score`` with an explicit preference graph (004 eq. 1), O(E).

    It equals :func:`pairwise_disagreement` with ``average="pooled"`` on the edges of all pairs y_i > y_j.

    Parameters
    ----------
    pairs : array-like of shape (n_edges, 2)
        Integer row indices ``(a, b)``: row a preferred over row b (repeated edges count repeatedly); at least one
        edge, no self-loop.
    %(y_score)s
    weights : array-like of shape (n_edges,) or None, default=None
        One weight > 0 per edge; None: all 1.
    %(tied_scores)s %(ties)s

    Returns
    -------
    disagreement : float
        The weighted mean sum_e w_e err_e / sum_e w_e, err_e = 1 when y_score[a] < y_score[b] and for a tie 1/2 or
        1 (``tied_scores``).
    """
    tie_weight = _tied_score_weight(tied_scores, ties, "edge_disagreement")
    f = _as_vector(y_score, "y_score")
    try:
        head, tail = check_pairs(pairs, f.shape[0])
    except TypeError as exc:  # a measure raises ValueError for every bad argument
        raise ValueError(str(exc)) from None
    if weights is None:
        w = np.ones(head.shape[0])
    else:
        w = _as_vector(weights, "weights")
        if w.shape[0] != head.shape[0]:
            raise ValueError(f"weights must have one value per edge: {w.shape[0]} weights for {head.shape[0]} edges")
        if (w <= 0).any():
            raise ValueError("weights must be > 0")
    # only the ratios of the weights matter: rescaled where sum(w) would overflow or the products w_e err_e go subnormal
    if not 1e-300 <= w.max() <= np.finfo(np.float64).max / w.size:
        w = w / w.max()
    fa, fb = f[head], f[tail]
    err = (fa < fb) + tie_weight * (fa == fb)
    return float(np.dot(w, err) / w.sum())


# -- IR measures over ragged query groups (MAP, MRR, precision@k, ERR@k)


def _stable_argsort_desc(f):
    """Indices sorting f decreasingly, ties in input order: numpy's fast unstable argsort, then only the tied runs
    re-sorted by index (a stable float sort is several times slower)."""
    order = np.argsort(-f)
    v = f[order]
    tied = np.flatnonzero(v[1:] == v[:-1])
    if tied.size * 8 > f.size:  # heavy ties: numpy's stable sort is cheaper than fixing the runs
        return np.argsort(-f, kind="stable")
    if tied.size:
        pos = np.unique(np.concatenate([tied, tied + 1]))  # every member of a tied run
        run = np.cumsum(np.r_[True, v[pos[1:]] != v[pos[:-1]]] | np.r_[True, np.diff(pos) > 1])
        sub = order[pos]
        order[pos] = sub[np.lexsort((sub, run))]
    return order


class _Ranked:
    """Rows sorted by (group, decreasing score) with their tied blocks (the rows of a group with one score).

    order, ys, gs, pos: the sorting permutation, targets, group codes and 1-based positions in that order; G; offsets
    (group starts); block: block id of each sorted row; per block: start (rows of the group before it), size, first
    (its first sorted row) and group.  Every measure takes the expectation over the orders inside a block, so the
    input order there does not matter."""

    def __init__(self, y, f, gi):
        m, G = y.shape[0], gi.n_groups
        order = _stable_argsort_desc(f)
        if G > 1:  # then by group, stably: a radix sort on small integer codes
            key = gi.codes[order]
            if G <= np.iinfo(np.uint16).max:
                key = key.astype(np.uint16)
            order = order[np.argsort(key, kind="stable")]
        self.order, self.ys, self.gs, self.G = order, y[order], gi.codes[order], G
        self.offsets = gi.offsets
        self.pos = np.arange(m, dtype=np.int64) - self.offsets[self.gs] + 1
        fs = f[order]
        new = np.r_[True, (fs[1:] != fs[:-1]) | (self.gs[1:] != self.gs[:-1])]
        self.block = np.cumsum(new) - 1
        self.first = np.flatnonzero(new)
        self.size = np.diff(np.r_[self.first, m])
        self.start = self.pos[self.first] - 1
        self.group = self.gs[self.first]

    def per_block(self, w):
        if self.first.size == self.block.size:  # no tie: every row is its own block
            return w
        return np.bincount(self.block, weights=w, minlength=self.first.size)

    def before_block(self, w):
        """Per block: the sum of w over the rows of its group in earlier blocks."""
        c = np.concatenate([[0.0], np.cumsum(w)])
        return c[self.first] - c[self.offsets[self.group]]


def _tied_block_err(Rsat, first, size, start, span):
    """ERR terms of tied blocks at once (see :func:`err_at_k`): sum_{j <= span} D_j / (start + j), D_j the expected
    R of the row at block position j times prod (1 - R) of the rows before it.  D_j = G_j(b), where over the first n
    rows of a block (q = 1 - R) E_t(n) is the mean of prod q and G_t(n) the mean of sum_a R_a prod_{others} q / t over
    the t-subsets; adding a row, E_t(n + 1) = ((n + 1 - t) E_t(n) + t q E_{t-1}(n)) / (n + 1) and G_t(n + 1) =
    ((n + 1 - t) G_t(n) + (t - 1) q G_{t-1}(n) + R E_{t-1}(n)) / (n + 1), convex and free of cancellation.  Blocks
    by decreasing size, so step n updates a prefix of them, t <= min(n + 1, max span): O(b min(b, span)) per block."""
    by_size = np.argsort(-size, kind="stable")
    first, size, start, span = first[by_size], size[by_size], start[by_size], span[by_size]
    T, out = int(span.max()), np.empty(first.size)
    # t by block, so that the active prefix of a row is contiguous; rows are added and finished blocks dropped as
    # the steps go, which keeps the arrays O(sum of the block sizes)
    rows = min(T, int(size[0]), 4 * int(size.sum()) // first.size) + 1
    E, G = np.zeros((rows, first.size)), np.zeros((rows, first.size))
    E[0] = 1.0

    def finish(lo, hi):
        j = np.arange(1, G.shape[0])[:, None]
        w = np.where(j <= span[lo:hi], 1.0 / (start[lo:hi] + j), 0.0)
        out[by_size[lo:hi]] = (G[1:, lo:hi] * w).sum(axis=0)

    active = np.searchsorted(-size, -np.arange(int(size[0])))  # blocks with more than n rows
    ts = np.arange(1.0, T + 1.0)[:, None]
    for n in range(int(size[0])):
        a, c = active[n], min(n + 1, T)
        if 2 * a <= E.shape[1]:
            finish(a, E.shape[1])
            E, G = E[:, :a].copy(), G[:, :a].copy()
        if c >= E.shape[0]:
            grow = np.zeros((min(2 * c, T) + 1 - E.shape[0], E.shape[1]))
            E, G = np.vstack([E, grow]), np.vstack([G, grow])
        R = Rsat[first[:a] + n]
        q, R = (1.0 - R) / (n + 1), R / (n + 1)
        t, keep = ts[:c], (n + 1 - ts[:c]) / (n + 1)
        Em, Gm = E[:c, :a], G[:c, :a]
        G[1:c + 1, :a] = keep * G[1:c + 1, :a] + (t - 1) * q * Gm + R * Em
        E[1:c + 1, :a] = keep * E[1:c + 1, :a] + t * q * Em
    finish(0, E.shape[1])
    return out


_NO_RELEVANT = "no group has a relevant item"


def _ranked_relevance(y_true, y_score, groups, k, relevance_threshold, average, k_optional=True):
    k = _check_k(k, k_optional)
    thr = check_real(relevance_threshold, "relevance_threshold", "a finite number")
    rk = _Ranked(*_group_setup(y_true, y_score, groups, average, _PER_GROUP))
    rel = (rk.ys > thr).astype(np.float64)
    # no cutoff is the cutoff m: one beyond the rows cuts nothing (and then fits an int64)
    k = rk.ys.shape[0] if k is None else min(k, rk.ys.shape[0])
    return rk, k, rel, np.bincount(rk.gs, weights=rel, minlength=rk.G)


@with_param_docs(_METRIC_DOCS)
def mean_average_precision(y_true, y_score, groups=None, *, k=None, relevance_threshold=0.0, average="group"):
    """Mean average precision (MAP) over query groups of any sizes, O(m log m).

    AP of a group = (1/R) sum over its relevant rows at positions p <= k (ranked by decreasing ``y_score``) of
    precision@p, R = its relevant rows (trec_eval), min(R, k) with a cutoff so that a perfect ranking scores 1.  Tied
    scores: the expected AP over the orders of the tie (closed form per block), the tie rule of every measure here.
    Groups without a relevant row are skipped (NaN with average=None), ValueError if all are.  Equals
    ``sklearn.metrics.average_precision_score`` per group without ties.

    %(Parameters)s %(y_true)s %(y_score)s %(groups)s %(k)s %(relevance_threshold)s %(average_listwise)s %(Returns)s
    map : float or ndarray of shape (n_groups,)
        In [0, 1]; an array with ``average=None``.
    """
    rk, k, rel, R = _ranked_relevance(y_true, y_score, groups, k, relevance_threshold, average)
    # A relevant row of a block (start s, size b, r relevant rows, h relevant rows before it) is at each of the
    # positions s + j, j = 1..b, with probability 1/b, and then has 1 + (j - 1)(r - 1)/(b - 1) relevant rows of its
    # block at or before it on average: the expected precision it adds is (1/b) sum_j [s + j <= k] (h + 1 + (j - 1)
    # B) / (s + j), B = (r - 1)/(b - 1).
    in_k = (rk.pos <= k).astype(np.float64)
    j_minus_1 = rk.pos - rk.start[rk.block] - 1
    S1 = rk.per_block(in_k / rk.pos)
    S2 = rk.per_block(in_k * j_minus_1 / rk.pos)
    r = rk.per_block(rel)
    h = rk.before_block(rel)
    b = rk.size.astype(np.float64)
    B = np.where(b > 1, (r - 1) / np.maximum(b - 1, 1), 0.0)
    num = np.bincount(rk.group, weights=r / b * ((h + 1) * S1 + B * S2), minlength=rk.G)
    return _average(num, np.minimum(R, k), average, "mean_average_precision", _NO_RELEVANT)


@with_param_docs(_METRIC_DOCS)
def mean_reciprocal_rank(y_true, y_score, groups=None, *, k=None, relevance_threshold=0.0, average="group"):
    """Mean reciprocal rank (MRR): per group 1/p of the first relevant row by decreasing ``y_score`` (0 below the cutoff
    k).

    Relevance, ties (expectation over their orders) and skipped groups as :func:`mean_average_precision`.

    %(Parameters)s %(y_true)s %(y_score)s %(groups)s %(k)s %(relevance_threshold)s %(average_listwise)s %(Returns)s
    mrr : float or ndarray of shape (n_groups,)
        In [0, 1]; an array with ``average=None``.
    """
    rk, k, rel, R = _ranked_relevance(y_true, y_score, groups, k, relevance_threshold, average)
    r = rk.per_block(rel)
    # the first block of each group holding a relevant row: its first relevant row is at the j-th of its b positions
    # with probability C(b - j, r - 1) / C(b, r)
    first = np.full(rk.G, np.iinfo(np.int64).max)
    hit = np.flatnonzero(r > 0)
    np.minimum.at(first, rk.group[hit], hit)
    rows = np.flatnonzero(rk.block == first[rk.gs])
    blk = rk.block[rows]
    bb, rr = rk.size[blk].astype(np.float64), r[blk]
    j = (rk.pos[rows] - rk.start[blk]).astype(np.float64)
    possible = bb - j >= rr - 1
    n1, k1 = np.maximum(bb - j, 0.0), rr - 1
    log_p = (gammaln(n1 + 1) - gammaln(k1 + 1) - gammaln(np.maximum(n1 - k1, 0.0) + 1)
             - (gammaln(bb + 1) - gammaln(rr + 1) - gammaln(bb - rr + 1)))
    prob = np.where(possible, np.exp(np.where(possible, log_p, 0.0)), 0.0)
    per = np.bincount(rk.gs[rows], weights=prob * (rk.pos[rows] <= k) / rk.pos[rows], minlength=rk.G)
    return _average(per, R > 0, average, "mean_reciprocal_rank", _NO_RELEVANT)


@with_param_docs(_METRIC_DOCS)
def precision_at_k(y_true, y_score, groups=None, *, k=10, relevance_threshold=0.0, average="group"):
    """Precision@k: per group the relevant rows among the k highest scores over k (also for groups of fewer rows, as
    trec_eval's P_k).

    Relevance, ties and skipped groups as :func:`mean_average_precision`.  O(m log m).

    Parameters
    ----------
    %(y_true)s %(y_score)s %(groups)s
    k : int, default=10
        The cutoff, a positive integer (None is refused).
    %(relevance_threshold)s %(average_listwise)s

    Returns
    -------
    precision : float or ndarray of shape (n_groups,)
        In [0, 1]; an array with ``average=None``.
    """
    rk, kk, rel, R = _ranked_relevance(y_true, y_score, groups, k, relevance_threshold, average, k_optional=False)
    # a row of a block (start s, size b) is among the top k with probability clip((k - s)/b, 0, 1)
    inside = np.clip((kk - rk.start[rk.block]) / rk.size[rk.block], 0.0, 1.0)
    top = np.bincount(rk.gs, weights=rel * inside, minlength=rk.G)
    return _average(top / k, R > 0, average, "precision_at_k", _NO_RELEVANT)


@with_param_docs(_METRIC_DOCS)
def err_at_k(y_true, y_score, groups=None, *, k=None, max_grade=None, average="group"):
    """Expected reciprocal rank, ERR@k (Chapelle, Metzler, Zhang & Grinspan 2009), O(m log m).

    With grades g = y_true >= 0 and R(g) = (2^g - 1) / 2^g_max (the probability that the row satisfies the user),
    ERR = sum_{r<=k} (1/r) R_r prod_{i<r} (1 - R_i) by decreasing ``y_score``; tied scores: expectation over their
    orders, O(b min(b, k)) per tied block of b rows.  Groups of grade 0 only are skipped, as in :func:`ndcg`.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,)
        Relevance grades g, >= 0.
    %(y_score)s %(groups)s %(k)s
    max_grade : float or None, default=None
        g_max, at least the largest grade and at most 1000; give the scale's maximum, e.g. 4 for LETOR, to compare
        data sets.  None: the largest ``y_true``.
    %(average_listwise)s

    Returns
    -------
    err : float or ndarray of shape (n_groups,)
        An array with ``average=None``.
    """
    rk, k, _, graded = _ranked_relevance(y_true, y_score, groups, k, 0.0, average)
    ys, pos = rk.ys, rk.pos
    if (ys < 0).any():
        raise ValueError("err_at_k needs non-negative relevance grades y_true")
    gmax = float(ys.max()) if max_grade is None else check_real(max_grade, "max_grade", "None or a finite number")
    if ys.max() > gmax:
        raise ValueError(f"y_true has grades above max_grade={gmax}")
    if gmax > 1000:  # 2^g_max overflows float64
        if max_grade is None:
            raise ValueError("grades too large for the gain 2^g - 1; rescale y_true")
        raise ValueError(f"max_grade={gmax:g} is too large for the gain 2^g - 1 (at most 1000); give the largest "
                         "grade of the scale, or None for the largest y_true")
    Rsat = np.where(ys < 1.0, np.expm1(ys * np.log(2.0)), np.exp2(ys) - 1.0) / np.exp2(gmax)  # no cancellation
    # prod (1 - R_i) over the earlier blocks of the group (the same for every order inside them): log-sums, with exact
    # zeros for R_i = 1 counted apart
    one = Rsat >= 1.0
    logs = np.log1p(-np.where(one, 0.0, Rsat))
    stop = np.where(rk.before_block(one.astype(np.float64)) > 0, 0.0, np.exp(rk.before_block(logs)))
    b = rk.size
    contrib = np.zeros(rk.first.size)
    single = b == 1
    f1 = rk.first[single]
    contrib[single] = Rsat[f1] / pos[f1] * (pos[f1] <= k)
    # a tied block (start s, size b): in a uniformly random order of it, its position s + j <= k adds D_j / (s + j),
    # D_j the expected R of the row there times prod (1 - R) of the rows of the block before it
    span = np.minimum(b, k - rk.start)  # positions of the block inside the cutoff
    needed = (~single) & (span > 0) & (rk.per_block(Rsat) > 0)
    if needed.any():
        contrib[needed] = _tied_block_err(Rsat, rk.first[needed], b[needed], rk.start[needed], span[needed])
    per = np.bincount(rk.group, weights=stop * contrib, minlength=rk.G)
    return _average(per, graded > 0, average, "err_at_k", _NO_RELEVANT)


# -- AGREE of the two-step scheme of Cohen, Schapire & Singer (003, "Second step: extracting a ranking")


@with_param_docs(_METRIC_DOCS)
def agree(y_true, y_score, groups=None, *, normalize=True, average="group"):
    """AGREE(sigma, f) = sum over pairs with sigma(x_i) < sigma(x_j) of f(x_i, x_j) (003, after Cohen et al. 1999): the
    preference scores kept by the ranking sigma by decreasing ``y_score``.

    Tied scores: the expectation over their orders, i.e. the tied pair keeps (f(x_i, x_j) + f(x_j, x_i)) / 2.
    Targets: O(m log m) from the counts of :func:`pairwise_disagreement`; a matrix: O(m^2), one (m, m) mask per group.

    Parameters
    ----------
    y_true : array-like of shape (n_samples,) or (n_samples, n_samples)
        f: an (m, m) matrix ``f[i, j]`` (the slides scale f(x_i, x_j) + f(x_j, x_i) = 1), or one target per row read
        as f = 1 if y_i > y_j, 1/2 if equal, 0 if lower.
    %(y_score)s %(groups)s
    normalize : bool, default=True
        Divide by sum_{i<j} f(x_i, x_j) + f(x_j, x_i), so 1 means every preference kept.  False: the sum over all
        groups (``average`` unused).
    %(average)s

    Returns
    -------
    agree : float or ndarray of shape (n_groups,)
        An array with ``average=None`` and ``normalize=True``.
    """
    _check_average(average, _ANY_AVERAGE)
    check_bool(normalize, "normalize")
    F, f = _asarray(y_true, "y_true"), _as_vector(y_score, "y_score")
    m = f.shape[0]
    gi = group_index(groups, m)
    if F.ndim == 1:
        S = _pair_stats(_as_pair(F, f)[0], f, gi, False)
        # concordant relevant pairs keep 1, score-tied relevant pairs 1/2, label-tied pairs 1/2
        kept = (S[:, 1] - S[:, 2] - S[:, 3]) + 0.5 * S[:, 3] + 0.5 * (S[:, 0] - S[:, 1])
        mass = S[:, 0]
    elif F.ndim == 2:
        if F.shape != (m, m):
            raise ValueError(f"y_true as a preference matrix must have shape (m, m) = ({m}, {m}) for the {m} scores, "
                             f"got {F.shape}")
        F = as_float_matrix(F, "y_true")
        kept, mass = np.zeros(gi.n_groups), np.zeros(gi.n_groups)
        for q, rows in enumerate(gi.rows()):
            Fq, fq = F[np.ix_(rows, rows)], f[rows]
            before = (fq[:, None] > fq[None, :]) + 0.5 * (fq[:, None] == fq[None, :])
            np.fill_diagonal(before, 0.0)
            kept[q] = float((Fq * before).sum())
            mass[q] = float(Fq.sum() - np.trace(Fq))
    else:
        raise ValueError(f"y_true must be 1-D targets or an (m, m) preference matrix, got shape {F.shape}")
    if not normalize:
        return float(kept.sum())
    return _average(kept, mass, average, "agree")


# -- The measure table: the one list of measure names that make_ranking_scorer, score_estimator, RankRLSCV(scoring=...)
# and the command line read.  Every measure takes the expectation over the orders of tied scores, so that the value
# never depends on the order of the input rows (docs/design/measures.md, "Ties in scores").


def _pairwise_accuracy(y_true, y_score, groups=None, *, sample_weight=None, n_jobs=None):
    """1 - pairwise_disagreement (ties 1/2): :func:`auc` for binary labels without groups, the fraction of relevant
    pairs ordered right for graded ones, the mean over groups with groups (the pairwise rankers' ``score``)."""
    return 1.0 - pairwise_disagreement(y_true, y_score, groups, sample_weight=sample_weight, n_jobs=n_jobs)


def _kendall_tied_half(y_true, y_score, groups=None, *, average="group", n_jobs=None):
    """Kendall distance of the predicted ranking from the targets over C(n, 2) per group; a score-tied pair with
    different targets counts 1/2 (the expectation over tie orders; :func:`kendall_distance` counts it 0)."""
    S = _pair_stats(*_group_setup(y_true, y_score, groups, average), False, n_jobs)
    return _average(S[:, 2] + 0.5 * S[:, 3], S[:, 0], average, "kendall_distance")


class Measure:
    """One entry of the measure table: ``measure(y_true, y_score, groups=None, **kwargs)``.

    With ``groups`` every measure is the mean over groups (functions without ``groups``, such as
    :func:`spearman_footrule`, are applied group by group).  The parameters are kept as attributes of the same names
    (``kwargs`` as a dict).

    Parameters
    ----------
    name : str
        The name, as :func:`get_measure` parses it, e.g. "ndcg@10".
    func : callable
        The function computing it, ``func(y_true, y_score[, groups], **kwargs)``.
    greater_is_better : bool
        True for scores, False for losses and errors.
    description : str
        One line for the measure table.
    cutoff : str or None, default=None
        The keyword of ``func`` that "@k" sets (e.g. "k"); None: the measure takes no cutoff.
    **kwargs : dict
        Keyword arguments fixed for ``func``, e.g. ``k=10``.
    """

    __slots__ = ("name", "func", "greater_is_better", "cutoff", "kwargs", "description", "_takes_groups")

    def __init__(self, name, func, greater_is_better, description, *, cutoff=None, **kwargs):
        self.name, self.func, self.greater_is_better = name, func, bool(greater_is_better)
        self.cutoff, self.kwargs, self.description = cutoff, dict(kwargs), description
        self._takes_groups = _accepts(func, "groups")

    __name__ = property(lambda self: self.name)  # scikit-learn's scorers and reprs name the measure by it

    def with_cutoff(self, k):
        """The measure cut at the first k positions of each ranking ("ndcg" -> "ndcg@k").

        Parameters
        ----------
        k : int
            The cutoff, given to ``func`` as its ``cutoff`` keyword.

        Returns
        -------
        measure : Measure
            A new entry named "<name>@k".

        Raises
        ------
        ValueError
            When the measure takes no cutoff, or ``k`` is not a positive integer.
        """
        if self.cutoff is None:
            raise ValueError(f"measure {self.name!r} takes no @k cutoff")
        base = self.name.partition("@")[0]
        if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 1:
            raise ValueError(_BAD_CUTOFF.format(f"{base}@{k if isinstance(k, numbers.Number) else repr(k)}", base))
        k = int(k)
        return Measure(f"{base}@{k}", self.func, self.greater_is_better, self.description, cutoff=self.cutoff,
                       **{**self.kwargs, self.cutoff: k})

    def _merged(self, kwargs):
        clash = set(kwargs) & set(self.kwargs)
        if clash:
            raise ValueError(f"measure {self.name!r} already sets {', '.join(sorted(clash))}; give it once")
        return {**self.kwargs, **kwargs}

    def __call__(self, y_true, y_score, groups=None, **kwargs):
        kw = self._merged(kwargs)
        if self._takes_groups:
            return self.func(y_true, y_score, groups, **kw)
        if groups is None:
            return self.func(y_true, y_score, **kw)
        y, f = _as_pair(y_true, y_score)
        return float(np.mean([self.func(y[r], f[r], **kw) for r in group_index(groups, y.shape[0]).rows()]))

    def __repr__(self):
        return f"get_measure({self.name!r})"


_TABLE = {}  # every accepted spelling (names and aliases) -> its entry


def _entry(name, func, greater_is_better, description, *, aliases=(), **kwargs):
    measure = Measure(name, func, greater_is_better, description, **kwargs)
    for a in (name, *aliases):
        _TABLE[a] = measure


_entry("ndcg", ndcg, True, "normalised DCG, gains 2^y - 1 (000-style graded relevance); ndcg@k cuts at k", cutoff="k")
_entry("map", mean_average_precision, True, "mean average precision (relevant: y > 0); map@k cuts at k",
       aliases=("mean_average_precision",), cutoff="k")
_entry("mrr", mean_reciprocal_rank, True, "mean reciprocal rank of the first relevant row; mrr@k cuts at k",
       aliases=("mean_reciprocal_rank",), cutoff="k")
_entry("precision", precision_at_k, True, "precision@k (relevant: y > 0; default k=10)",
       aliases=("p", "precision_at_k"), cutoff="k")
_entry("err", err_at_k, True, "expected reciprocal rank; err@k cuts at k", aliases=("err_at_k",), cutoff="k")
_entry("disagreement", pairwise_disagreement, False, "fraction of relevant pairs ordered wrongly (004 eq. 1)",
       aliases=("pairwise_disagreement",))
_entry("auc", _pairwise_accuracy, True, "1 - disagreement: AUC of binary labels, pairwise accuracy of graded ones",
       aliases=("pairwise_accuracy",))
_entry("kendall_distance", _kendall_tied_half, False, "discordant pairs / C(n, 2) (003)", aliases=("kendall",))
_entry("spearman_footrule", discounted_error, False, "sum of rank displacements (003)", aliases=("footrule",),
       discount="none")
_entry("position_error", position_error, False, "wrong items ranked above the best target (003)")
_entry("discounted_error", discounted_error, False, "discounted rank displacements (003)")
_entry("agree", agree, True, "AGREE(sigma, f) / number of pairs, f from the targets (003, Cohen et al.)")
_entry("discrete_ranking_loss", discrete_ranking_loss, False, "|y_i - y_j|-weighted misordered pairs (002 eq. 2)")
_entry("stability_ranking_loss", stability_ranking_loss, False, "hinge ranking loss l_h (002 Sect. 5.2.1)",
       aliases=("hinge_ranking_loss",))
_entry("squared_ranking_loss", stability_ranking_loss, False, "least-squares ranking loss l_sq (002 eq. 9)",
       loss="squared")
_entry("msd", msd, False, "mean squared difference of pair differences (000 eq. 67)")
_entry("m1d", m1d, False, "mean absolute difference of pair differences (000 eq. 68)")
_entry("magnitude_preserving_cost", magnitude_preserving_cost, False, "MP cost |dh - dy|^2 (000 eq. 5)",
       aliases=("mp_cost",))
_entry("hinge_rank_cost", magnitude_preserving_cost, False, "hinge rank cost |dh| on misordered pairs (000 eq. 4)",
       cost="hr", power=1)
_entry("mean_rank_loss", mean_rank_loss, False, "mean |prediction - label| (001 Table 1)")

# every accepted spelling (names and aliases, without the @k forms)
SCORER_NAMES = frozenset(_TABLE)


def measure_names():
    """The names of the measure table (aliases and "@k" cutoffs aside), in table order.

    Returns
    -------
    names : tuple of str
        One name per entry, e.g. "ndcg", "map", "auc".
    """
    return tuple(dict.fromkeys(e.name for e in _TABLE.values()))


def get_measure(name):
    """The table entry (a :class:`Measure`) for a name, case-insensitive.

    Parameters
    ----------
    name : str or Measure
        A name of the table or an alias, with an optional "@k" cutoff: "ndcg", "ndcg@10", "map@5", "p@10", "err@5",
        "disagreement", "auc", ... (:func:`measure_names`).  A :class:`Measure` is returned as it is.

    Returns
    -------
    measure : Measure
        The table entry; with "@k", a copy cut at k.

    Raises
    ------
    ValueError
        For an unknown name or a bad cutoff.
    TypeError
        When ``name`` is neither a string nor a :class:`Measure`.
    """
    if isinstance(name, Measure):
        return name
    if not isinstance(name, str):
        raise TypeError(f"a measure name must be a string, got {type(name).__name__}")
    base, at, tail = name.strip().lower().partition("@")
    entry = _TABLE.get(base)
    if entry is None:
        raise ValueError(f"unknown ranking measure {name!r}; known: {', '.join(measure_names())} "
                         "(cut at k with @k: ndcg@10, map@5, precision@10 or p@10, mrr@10, err@5)")
    if not at:
        return entry
    if entry.cutoff is None:
        raise ValueError(f"measure {base!r} takes no @k cutoff (those that do: "
                         f"{', '.join(n for n in measure_names() if _TABLE[n].cutoff)})")
    if not tail.isdecimal() or int(tail) < 1:
        raise ValueError(_BAD_CUTOFF.format(name, base))
    return entry.with_cutoff(int(tail))


# -- scikit-learn scorers that receive the query groups, and the missing-groups check


_ROUTING_HINT = ("enable scikit-learn's metadata routing so that the groups reach it: "
                 "sklearn.set_config(enable_metadata_routing=True), then scorer.set_score_request(groups=True) "
                 "(estimator.set_score_request(groups=True) for the estimator's own score) and "
                 "estimator.set_fit_request(groups=True)")


def _groups_evidence(estimator):
    """Why the scored rows probably come from several query groups, or None: the estimator (or a pipeline's last
    step) recorded ``n_fit_groups_`` > 1, or the caller is scikit-learn's model selection (``cross_validate``, a
    search's ``fit``, ...) given several ``groups`` -- which without metadata routing reach the splitter only; seen
    only when the scoring runs in the caller's process (``n_jobs`` None or 1; whatever ``n_jobs``, a fastrank
    estimator warns when the search clones it: :func:`warn_unrouted_groups`), and said once per search."""
    est = estimator
    for _ in range(8):
        n = getattr(est, "n_fit_groups_", None)
        if isinstance(n, numbers.Integral) and n > 1:
            return f"{type(estimator).__name__} was fitted on {int(n)} query groups"
        steps = getattr(est, "steps", None)
        if not steps or not isinstance(steps, list):
            break
        est = steps[-1][1]
    return _model_selection_groups(sys._getframe(1))


_TOLD = "__fastrank_missing_groups_told__"


def _model_selection_groups(frame):
    """"scikit-learn's <function> was given <n> groups" when a frame from ``frame`` outwards is scikit-learn's model
    selection holding several ``groups`` (which without metadata routing reach its splitter only) and that call has
    not been told yet, else None."""
    while frame is not None:
        if str(frame.f_globals.get("__name__", "")).startswith("sklearn.model_selection"):
            loc = frame.f_locals
            g, params = loc.get("groups"), loc.get("params")
            if g is None and isinstance(params, dict):
                g = params.get("groups")
            if g is not None:
                try:
                    n = np.unique(np.asarray(g)).size
                except TypeError:
                    n = 0
                if n > 1:
                    if loc.get(_TOLD):  # one warning per call, whether its clones or its scorer see the groups first
                        return None
                    loc[_TOLD] = True  # the frame's own mapping: kept while the call runs, gone with it
                    return f"scikit-learn's {frame.f_code.co_name} was given {n} groups"
        frame = frame.f_back
    return None


def warn_unrouted_groups(estimator):
    """At a clone by scikit-learn's model selection given groups without metadata routing (run in the caller's
    process, where the fits and scores of ``n_jobs`` > 1 are not): the clone's fit and score receive no groups."""
    if sklearn.get_config().get("enable_metadata_routing", False):
        return
    reason = _model_selection_groups(sys._getframe(1))
    if reason is not None:
        warnings.warn(f"{type(estimator).__name__} is cloned by model selection although {reason}: without metadata "
                      "routing its fit and score receive no groups, so every candidate is trained and scored as one "
                      f"query. To train and score per query, {_ROUTING_HINT}.", MissingGroupsWarning,
                      stacklevel=user_stacklevel())


def _declines_groups(scorer):
    """Whether metadata routing told ``scorer`` (a ranking scorer, or an estimator for its own ``score``) not to receive
    groups (``set_score_request(groups=False)``): scoring without them is then the user's choice, not an omission."""
    routing = getattr(scorer, "get_metadata_routing", None)
    request = getattr(routing(), "score", None) if callable(routing) else None
    return request is not None and request.requests.get("groups") is False


def _routed_groups(estimator, method, groups):
    """``{"groups": groups}`` when metadata routing is on and ``estimator.method`` requests them (a Pipeline whose
    QueryNormalizer normalises each test query, as ``Pipeline.score`` routes them), else ``{}``."""
    if groups is None or not sklearn.get_config().get("enable_metadata_routing", False):
        return {}
    try:
        wanted = get_routing_for_object(estimator).consumes(method=method, params=["groups"])
    except (AttributeError, TypeError, ValueError):  # an estimator outside scikit-learn's routing
        return {}
    return {"groups": groups} if wanted else {}


def _warn_missing_groups(estimator, what):
    reason = _groups_evidence(estimator)
    if reason is not None:
        warnings.warn(f"{what} was called without groups although {reason}: the scored rows count as one query, "
                      f"which is not the per-query measure. To score per query, pass groups=; in scikit-learn's model "
                      f"selection, {_ROUTING_HINT}.", MissingGroupsWarning, stacklevel=user_stacklevel())
    return reason is not None


def _over_outputs(measure, y_true, y_pred):
    """``measure(y, pred)``; for the (n, v) predictions of a v-output model the mean over outputs, each against its
    column of ``y_true``, as ``Ranker.score`` and ``RankRLSCV`` score them (one column: a single output)."""
    pred, y = _asarray(y_pred, "y_pred"), _asarray(y_true, "y")
    if pred.ndim == 1 and y.ndim == 2 and y.shape[1] == 1:
        return measure(y[:, 0], pred)
    if pred.ndim != 2:
        if y.ndim == 2:
            raise ValueError(f"y must be 1-D for a single-output model, got shape {y.shape}")
        return measure(y_true, pred)
    if pred.shape[1] == 1 and y.ndim == 1:
        return measure(y, pred[:, 0])
    if y.ndim != 2 or y.shape[1] != pred.shape[1]:
        raise ValueError(f"y must have shape (n_samples, {pred.shape[1]}) for this {pred.shape[1]}-output model, got "
                         f"{y.shape}")
    return float(np.mean([measure(y[:, k], pred[:, k]) for k in range(pred.shape[1])]))


class RankingScorer:
    """A scikit-learn scorer of a ranking measure that receives the test rows' query groups.

    ``scorer(estimator, X, y, groups=None, sample_weight=None)`` is ``sign * measure(y, estimator.predict(X), groups,
    **kwargs)`` (``sample_weight`` for the measures that take it: "auc", "disagreement").  Made by
    :func:`make_ranking_scorer`, which tells how the groups reach it.

    Parameters
    ----------
    measure : Measure or callable
        A table entry or a callable ``measure(y_true, y_pred, groups=None, **kwargs)``.
    sign : {1, -1}
        The factor of the measure's value: 1 for a score, -1 for a loss (``greater_is_better`` is ``sign > 0``).
    kwargs : dict
        Keyword arguments passed to the measure, e.g. ``{"k": 10}``.
    response_method : str, default="predict"
        The estimator's method giving the scores ("predict" or "decision_function"); ValueError at scoring when the
        estimator has none.
    """

    def __init__(self, measure, sign, kwargs, response_method="predict"):
        self._measure, self._sign = measure, sign
        self._kwargs, self._response_method = dict(kwargs), response_method
        self._warned = False
        # scikit-learn's own scorer carries the metadata-routing request (set_score_request, get_metadata_routing); the
        # score itself is computed here so that groups can be passed directly too, with or without routing enabled.
        self._router = make_scorer(measure, greater_is_better=sign > 0, response_method=response_method, **kwargs)

    def __call__(self, estimator, X, y_true, groups=None, sample_weight=None, **kwargs):
        if kwargs:
            raise TypeError(f"{self!r} got unexpected keyword arguments {sorted(kwargs)}; only groups and "
                            "sample_weight are accepted")
        response = getattr(estimator, self._response_method, None)
        if response is None:
            raise ValueError(f"{type(estimator).__name__} has no {self._response_method} method")
        if groups is None and not self._warned and not _declines_groups(self):
            self._warned = _warn_missing_groups(estimator, repr(self))
        return self.score_predictions(y_true, response(X, **_routed_groups(estimator, self._response_method, groups)),
                                      groups, sample_weight)

    def score_predictions(self, y_true, y_pred, groups=None, sample_weight=None):
        """The signed score of given predictions, e.g. exact cross-validated ones.

        Parameters
        ----------
        y_true : array-like of shape (n_samples,) or (n_samples, n_outputs)
            Targets, one column per output of a multi-output model.
        y_pred : array-like of shape (n_samples,) or (n_samples, n_outputs)
            Predictions.
        groups : array-like of shape (n_samples,) or None, default=None
            Query id of each row, passed to the measure; ValueError if the measure takes no groups.
        sample_weight : array-like of shape (n_samples,) or None, default=None
            What metadata routing passes after ``set_score_request(sample_weight=True)``: goes to the measures that
            take it, as in :func:`score_estimator`; ValueError for the others.

        Returns
        -------
        score : float
            ``sign`` times the measure (of a multi-output model: the mean over outputs).
        """
        args, kwargs = (), self._kwargs
        name = getattr(self._measure, "__name__", self._measure)
        if groups is not None:
            if not _accepts(self._measure, "groups"):
                raise ValueError(f"{name!r} does not take groups")
            args = (groups,)
        if sample_weight is not None:
            if not _accepts(getattr(self._measure, "func", self._measure), "sample_weight"):
                raise ValueError(f"{name!r} does not take sample_weight; use 'auc' or 'disagreement', or do not "
                                 "request sample_weight for this scorer")
            kwargs = {**kwargs, "sample_weight": sample_weight}
        return self._sign * _over_outputs(lambda y, pred: self._measure(y, pred, *args, **kwargs), y_true, y_pred)

    greater_is_better = property(lambda self: self._sign > 0)

    def set_score_request(self, **kwargs):
        """Request metadata under scikit-learn's metadata routing.

        Parameters
        ----------
        **kwargs : dict
            Metadata name -> request, as scikit-learn's scorers take them, e.g. ``groups=True``,
            ``sample_weight=True``.

        Returns
        -------
        self : RankingScorer
            The scorer itself.
        """
        self._router.set_score_request(**kwargs)
        return self

    def get_metadata_routing(self):
        """The metadata request of the scorer's ``score`` (what :meth:`set_score_request` set).

        Returns
        -------
        routing : sklearn.utils.metadata_routing.MetadataRequest
            A copy owned by this scorer, so that routing errors name it.
        """
        routing = get_routing_for_object(self._router)  # a copy, owned by this scorer: routing errors name it
        routing.owner = routing.score.owner = self
        return routing

    def __repr__(self):
        name = getattr(self._measure, "__name__", repr(self._measure))
        args = "".join(f", {k}={v!r}" for k, v in self._kwargs.items())
        sign = "" if self._sign > 0 else ", greater_is_better=False"
        return f"make_ranking_scorer({name!r}{sign}{args})"


def make_ranking_scorer(measure, *, greater_is_better=None, response_method="predict", **kwargs):
    """A scorer ``scorer(estimator, X, y, groups=None)`` for a ranking measure.

    In a search the groups of each test fold come by metadata routing.  Without it a fold is scored as one query; when
    that is detectable (the estimator was fitted on several groups, or the search was given groups) the scorer emits
    :class:`fastrank.exceptions.MissingGroupsWarning`, once.

    Parameters
    ----------
    measure : str, Measure or callable
        A name of the measure table (:func:`measure_names`: "ndcg", "ndcg@10", "map", "mrr", "precision@10", "err@5",
        "disagreement", "auc", "msd", "agree", ...; see :func:`get_measure`), a :class:`Measure`, or a callable
        ``measure(y_true, y_pred, groups=None, **kwargs)``.
    greater_is_better : bool or None, default=None
        For a callable: None means True.  For a name it is known (losses and errors are negated, scikit-learn's
        convention) and may not be contradicted (ValueError).
    response_method : {"predict", "decision_function"}, default="predict"
        The estimator method giving the scores.
    **kwargs : dict
        Passed to the measure (e.g. ``k=10``); not a keyword the named entry already fixes (``k`` of "ndcg@10").
        A keyword the measure does not take (TypeError) or a cutoff that is not a positive integer (ValueError) is
        refused here, not at every scoring call of a search.

    Returns
    -------
    scorer : RankingScorer
        Losses and errors negated.

    Examples
    --------
    Groups routed to both the estimator and the scorer::

        sklearn.set_config(enable_metadata_routing=True)
        scorer = make_ranking_scorer("ndcg@10").set_score_request(groups=True)
        search = GridSearchCV(RankRLS().set_fit_request(groups=True), {"alpha": [0.1, 1, 10]},
                              cv=GroupKFold(3), scoring=scorer).fit(X, y, groups=groups)
    """
    if not one_of(response_method, ("predict", "decision_function")):
        raise ValueError(f"response_method must be 'predict' or 'decision_function', got {response_method!r}")
    if greater_is_better is not None and not isinstance(greater_is_better, (bool, np.bool_)):  # "no" read as True
        raise ValueError(f"greater_is_better must be None, True or False, got {greater_is_better!r}")
    if isinstance(measure, (str, Measure)):
        func = get_measure(measure)
        gib = func.greater_is_better
        if greater_is_better is not None and bool(greater_is_better) != gib:
            raise ValueError(f"{func.name!r} is {'a score' if gib else 'a loss'}: greater_is_better must be {gib}")
        _check_keywords(func.func, func._merged(kwargs), f"measure {func.name!r}", func.cutoff)
    elif callable(measure):
        func = measure
        gib = True if greater_is_better is None else bool(greater_is_better)
        _check_keywords(func, kwargs, f"measure {getattr(func, '__name__', repr(func))}")
    else:
        raise TypeError(f"measure must be a measure name or a callable, got {type(measure).__name__}")
    return RankingScorer(func, 1 if gib else -1, kwargs, response_method)


def score_estimator(estimator, X, y, groups=None, sample_weight=None, *, measure="auc", response_method="predict"):
    """The ``score`` of a fastrank ranker: ``measure`` of ``estimator.predict(X)`` against ``y``.

    Without ``groups`` where the rows evidently come from several queries (see :func:`make_ranking_scorer`) it emits
    :class:`fastrank.exceptions.MissingGroupsWarning`.

    Parameters
    ----------
    estimator : object
        A fitted estimator with the ``response_method`` method.
    X : {array-like, sparse matrix} of shape (n_samples, n_features)
        The rows to score, as the estimator's ``response_method`` takes them.
    y : array-like of shape (n_samples,) or (n_samples, n_outputs)
        Targets, one column per output of a multi-output model.
    groups : array-like of shape (n_samples,) or None, default=None
        Query id of each row; the measure is the mean over groups.
    sample_weight : array-like of shape (n_samples,) or None, default=None
        Goes to the measures that take it ("auc", "disagreement": pair weight w_i w_j); ValueError for the others.
    measure : str or Measure, default="auc"
        A name of the measure table (:func:`get_measure`); "auc" is 1 - pairwise disagreement, ties 1/2.
    response_method : str, default="predict"
        The estimator method giving the scores, "predict" or "decision_function"; ValueError when the estimator has
        no such method.

    Returns
    -------
    score : float
        The measure (of a multi-output model: the mean over outputs).
    """
    meas = get_measure(measure)
    if groups is None and not _declines_groups(estimator):
        _warn_missing_groups(estimator, f"{type(estimator).__name__}.score")
    response = getattr(estimator, response_method, None) if isinstance(response_method, str) else None
    if not callable(response):
        raise ValueError(f"{type(estimator).__name__} has no {response_method} method; pass a fitted estimator and "
                         "response_method='predict' or 'decision_function'")
    kwargs = {}
    if sample_weight is not None:
        if not _accepts(meas.func, "sample_weight"):
            raise ValueError(f"measure {meas.name!r} does not take sample_weight; use 'auc' or 'disagreement', "
                             "or drop sample_weight")
        kwargs["sample_weight"] = sample_weight
    return _over_outputs(lambda y_out, pred: meas(y_out, pred, groups, **kwargs), y, response(X))
