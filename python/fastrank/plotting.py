"""Plots following scikit-learn's Display pattern; matplotlib is an optional extra
(``pip install "fastrank-rls[plot]"``), imported only when a plot is drawn.

* :class:`CVCurveDisplay`: cross-validated score against alpha, the chosen alpha marked.
* :class:`RankLossCurveDisplay`: an on-line learner's cumulative average rank loss (1/t) sum
  |yhat - y| after every example (Harrington 2003, Fig. 2); ``plot(ax=other.ax_)`` overlays learners.
* :class:`PermutationTestDisplay`: the permutation test's null distribution and the observed score.

Every display has ``plot(ax=None)`` and, after plotting, ``ax_`` and ``figure_`` (and the drawn
artists, e.g. ``line_``).
"""

from __future__ import annotations

import numpy as np

from ._cv import RankRLSCV
from ._docs import with_param_docs
from ._validation import as_real_array, check_int, check_real, one_of

__all__ = ["CVCurveDisplay", "RankLossCurveDisplay", "PermutationTestDisplay"]

# numpydoc entries the displays share (``%(ax)s`` placeholders)
_DOCS = {
    "ax": """ax : matplotlib Axes or None, default=None
    Axes to draw on (e.g. another display's ``ax_``, to overlay); None: a new figure (ImportError without
    matplotlib).  Another object raises TypeError.""",
    "score": "score : float\n    The observed score, finite.",
    "permutation_scores": """permutation_scores : array-like of shape (n_permutations,)
    The scores of the permuted targets (flattened), non-empty and finite.""",
    "pvalue": "pvalue : float\n    The p-value, in [0, 1].",
    "bins": """bins : int, str, array-like or None, default=20
    Number of histogram bars (>= 1), a rule of ``numpy.histogram_bin_edges`` ("auto", "fd", "doane", "scott",
    "stone", "rice", "sturges", "sqrt") or strictly increasing finite bin edges; None: matplotlib's default.""",
    "scoring": 'scoring : str, default="LPO AUC"\n    Label of the score axis.',
    "drawn_on": """ax_ : matplotlib Axes
    The axes drawn on, after ``plot``; so are the attributes below.
figure_ : matplotlib Figure""",
}

_SCORING_LABELS = {"auc": "pairwise accuracy (1 - disagreement)",
                   "disagreement": "pairwise disagreement (lower is better)", "ndcg": "NDCG"}


def _axes(ax):
    if ax is None:
        try:
            import matplotlib.pyplot as plt
        except ImportError as exc:  # optional dependency
            raise ImportError('fastrank\'s plots need matplotlib: pip install matplotlib (or pip install '
                              '"fastrank-rls[plot]")') from exc
        _, ax = plt.subplots()
    elif not (hasattr(ax, "plot") and hasattr(ax, "figure")):
        raise TypeError(f"ax must be a matplotlib Axes or None, got {ax!r}")
    return ax


class _Display:
    @with_param_docs(_DOCS)
    def plot(self, ax=None):
        """Draw the display: the curve or histogram and the marks the class describes.

        %(Parameters)s %(ax)s %(Returns)s
        display : object
            This display, with ``ax_``, ``figure_`` and the artists named in its class docstring set.
        """
        ax = _axes(ax)
        xlabel, ylabel, title, legend = self._draw(ax)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        if legend:
            ax.legend(loc="best")
        self.ax_, self.figure_ = ax, ax.figure
        return self


@with_param_docs(_DOCS)
class CVCurveDisplay(_Display):
    """Cross-validated score vs alpha with the chosen alpha marked.

    Parameters
    ----------
    alphas : array-like of shape (n_alphas,)
        The regularization values (as ``RankRLSCV.cv_results_["alphas"]``), positive and finite (the alpha axis is
        logarithmic); non-empty.
    scores : array-like of shape (n_alphas,)
        The finite score of each alpha (as ``cv_results_["scores"]``).
    best_alpha : float or None, default=None
        The chosen alpha (> 0): a dashed vertical line is drawn there; None: no line.
    scoring : str, default="score"
        The y axis: "auc", "disagreement" and "ndcg" get a descriptive label, another value is shown as it is.
    cv : str, int or None, default=None
        The cross-validation scheme, for the title ("lpo" and "lgo" spelled out); None: no scheme.
    label : str, default="CV score"
        Legend entry of the curve.

    Attributes
    ----------
    %(drawn_on)s
    line_ : matplotlib Line2D
        The curve.
    best_line_ : matplotlib Line2D or None
        The vertical line, or None without ``best_alpha``.
    """

    def __init__(self, alphas, scores, *, best_alpha=None, scoring="score", cv=None, label="CV score"):
        self.alphas = as_real_array(alphas, "alphas")
        self.scores = as_real_array(scores, "scores")
        if self.alphas.ndim != 1 or self.alphas.shape != self.scores.shape or not self.alphas.size:
            raise ValueError(f"alphas and scores must be non-empty, 1-D and of the same length, got "
                             f"{self.alphas.shape} and {self.scores.shape}")
        if not np.isfinite(self.scores).all():
            raise ValueError("scores contains NaN or infinity (RankRLSCV's cross-validation scores are finite)")
        if not (cv is None or isinstance(cv, (str, int))):
            raise TypeError(f"cv must be a str, an int or None (the scheme named in the title), got {cv!r}")
        if not np.all(np.isfinite(self.alphas) & (self.alphas > 0)):  # matplotlib drops them from a log axis
            raise ValueError("alphas must be positive and finite (the alpha axis is logarithmic)")
        self.best_alpha = None if best_alpha is None else check_real(
            best_alpha, "best_alpha", "a positive finite number (the chosen alpha) or None", lambda v: v > 0)
        self.scoring, self.cv, self.label = scoring, cv, label

    @classmethod
    @with_param_docs(_DOCS)
    def from_estimator(cls, estimator, *, ax=None):
        """From a fitted :class:`fastrank.RankRLSCV` (its ``cv_results_`` and ``alpha_``), plotted.

        Parameters
        ----------
        estimator : RankRLSCV
            Fitted (else ValueError); any other estimator, or one whose ``cv_results_`` is not over alphas (e.g.
            MPRankCV), raises TypeError.
        %(ax)s

        Returns
        -------
        display : CVCurveDisplay
            The plotted display.
        """
        res = getattr(estimator, "cv_results_", None)
        if res is None and isinstance(estimator, RankRLSCV):
            raise ValueError("CVCurveDisplay.from_estimator needs a fitted RankRLSCV (call fit first)")
        if not isinstance(res, dict) or "alphas" not in res:  # e.g. MPRankCV's (Cs, loo): Python's "no attribute 'cv'"
            raise TypeError(f"CVCurveDisplay.from_estimator needs a fitted RankRLSCV (cv_results_ over alphas), got "
                            f"{type(estimator).__name__}; draw other curves with CVCurveDisplay(values, scores, ...)")
        cv = res.get("cv") if estimator.cv is None else estimator.cv  # None: the scheme fit chose, "lpo" or "lgo"
        cv = cv if isinstance(cv, (str, int)) else "folds"
        disp = cls(res["alphas"], res["scores"], best_alpha=estimator.alpha_, scoring=res["scoring"], cv=cv)
        return disp.plot(ax=ax)

    def _draw(self, ax):  # the scores against alpha (logarithmic axis) and the chosen alpha
        (self.line_,) = ax.plot(self.alphas, self.scores, marker="o", markersize=3, label=self.label)
        ax.set_xscale("log")
        self.best_line_ = None if self.best_alpha is None else ax.axvline(
            self.best_alpha, color="C3", linestyle="--", label=f"chosen alpha = {self.best_alpha:.3g}")
        cv = {"lpo": "leave-pair-out", "lgo": "leave-query-out"}.get(self.cv, self.cv)
        return ("alpha (regularization)", _SCORING_LABELS.get(self.scoring, str(self.scoring)),
                "exact cross-validation" + (f" ({cv})" if cv else ""), True)


@with_param_docs(_DOCS)
class RankLossCurveDisplay(_Display):
    """Cumulative average rank loss of an on-line learner after every example of its stream.

    Parameters
    ----------
    curve : array-like of shape (n_examples,)
        The average rank loss after every example, ``estimator.rank_loss_curve()``; non-empty and finite.
    label : str or None, default=None
        Legend entry; None: no legend.

    Attributes
    ----------
    %(drawn_on)s
    line_ : matplotlib Line2D
        The curve.
    """

    def __init__(self, curve, *, label=None):
        self.curve = as_real_array(curve, "curve")
        if self.curve.ndim != 1 or self.curve.size == 0:
            raise ValueError("curve must be a non-empty 1-D array (estimator.rank_loss_curve())")
        if not np.isfinite(self.curve).all():
            raise ValueError("curve contains NaN or infinity (a rank loss curve is finite)")
        self.label = label

    @classmethod
    @with_param_docs(_DOCS)
    def from_estimator(cls, estimator, *, ax=None, label=None):
        """From a fitted on-line learner, plotted.

        Parameters
        ----------
        estimator : PRank, OAPBPM or WidrowHoff
            A fitted on-line learner: its ``rank_loss_curve()`` is drawn.  An estimator without that method raises
            TypeError; an ensemble joined by ``from_members`` (no on-line losses) raises ValueError.
        %(ax)s
        label : str or None, default=None
            Legend entry; None: the estimator's class name.

        Returns
        -------
        display : RankLossCurveDisplay
            The plotted display.
        """
        if not hasattr(estimator, "rank_loss_curve"):
            raise TypeError(f"{type(estimator).__name__} has no rank_loss_curve(); use an on-line learner "
                            "(PRank, OAPBPM, WidrowHoff)")
        curve = estimator.rank_loss_curve()
        if curve.size and np.isnan(curve).all():
            raise ValueError(f"{type(estimator).__name__}'s rank_loss_curve() is unknown: an ensemble joined by "
                             "from_members keeps no on-line losses; plot the curve of a model fitted on the stream")
        return cls(curve, label=label or type(estimator).__name__).plot(ax=ax)

    def _draw(self, ax):  # the curve against the number of examples seen
        (self.line_,) = ax.plot(np.arange(1, self.curve.size + 1), self.curve, label=self.label)
        return "examples seen (t)", "average rank loss (1/t) sum |ŷ - y|", "on-line rank loss", bool(self.label)


_BIN_RULES = ("auto", "fd", "doane", "scott", "stone", "rice", "sturges", "sqrt")  # numpy.histogram_bin_edges


def _check_bins(bins):
    """A histogram's ``bins``, checked here (numpy's own messages reached the user from ``plot``): a number of bars
    (True is no count; 2.5 failed in matplotlib), a rule of numpy.histogram_bin_edges, or increasing finite edges."""
    if bins is None or isinstance(bins, str):
        if bins is not None and not one_of(bins, _BIN_RULES):
            raise ValueError(f"bins must be a number of bars, one of {_BIN_RULES} or increasing edges, got {bins!r}")
        return bins
    if np.ndim(bins) == 0:
        return check_int(bins, "bins", low=1)
    edges = as_real_array(bins, "bins")
    if edges.ndim != 1 or edges.size < 2 or not np.isfinite(edges).all() or (np.diff(edges) <= 0).any():
        raise ValueError(f"bins edges must be at least 2 finite, strictly increasing numbers, got {bins!r}")
    return bins


@with_param_docs(_DOCS)
class PermutationTestDisplay(_Display):
    """Histogram of the permutation scores (the null distribution) with the observed score.

    ``score``, ``permutation_scores`` and ``pvalue`` are as returned by
    :func:`fastrank.model_selection.permutation_test_lpo`.

    Parameters
    ----------
    %(score)s %(permutation_scores)s %(pvalue)s %(bins)s %(scoring)s

    Attributes
    ----------
    %(drawn_on)s
    bars_ : matplotlib BarContainer
        The histogram's bars.
    score_line_ : matplotlib Line2D
        The vertical line at the observed score.
    """

    def __init__(self, score, permutation_scores, pvalue, *, bins=20, scoring="LPO AUC"):
        self.score = check_real(score, "score", "a finite number (the observed score)")
        self.permutation_scores = as_real_array(permutation_scores, "permutation_scores").ravel()
        if self.permutation_scores.size == 0:
            raise ValueError("permutation_scores is empty")
        if not np.isfinite(self.permutation_scores).all():  # None reads as [nan]
            raise ValueError("permutation_scores contains NaN or infinity")
        with np.errstate(over="ignore"):  # numpy's histogram failed on the range ("Too many bins for data range")
            if not np.isfinite(np.ptp(self.permutation_scores)):
                raise ValueError("permutation_scores span a range beyond float64 (max - min overflows); rescale them")
        self.pvalue = check_real(pvalue, "pvalue", "a p-value in [0, 1]", lambda v: 0 <= v <= 1)
        self.bins = _check_bins(bins)
        self.scoring = scoring

    def _edges(self):
        """The bars' edges: one bar where the scores differ only by rounding (equal AUCs summed in another order: numpy
        found "Too many bins for data range"), at most 1000 where a rule's width is tiny beside the range (a tight
        cluster and an outlier: "fd" asked numpy for 1.4 TiB of edges)."""
        import matplotlib  # plot() drew its axes: matplotlib is there

        scores, bins = self.permutation_scores, self.bins
        if np.ndim(bins) == 1:
            return bins
        bins = matplotlib.rcParams["hist.bins"] if bins is None else bins  # None: matplotlib's default
        if np.ptp(scores) <= 64 * np.finfo(np.float64).eps * np.abs(scores).max():
            return np.histogram_bin_edges(scores, 1)
        try:
            edges = np.histogram_bin_edges(scores, bins)
            if edges.size <= 1001:
                return edges
        except (ValueError, MemoryError):
            pass
        return np.histogram_bin_edges(scores, 1000)

    @classmethod
    @with_param_docs(_DOCS)
    def from_result(cls, score, permutation_scores, pvalue, *, bins=20, ax=None, scoring="LPO AUC"):
        """From the result of :func:`fastrank.model_selection.permutation_test_lpo`, plotted.

        %(Parameters)s %(score)s %(permutation_scores)s %(pvalue)s %(bins)s %(ax)s %(scoring)s %(Returns)s
        display : PermutationTestDisplay
            The plotted display.
        """
        return cls(score, permutation_scores, pvalue, bins=bins, scoring=scoring).plot(ax=ax)

    def _draw(self, ax):  # the histogram of the permutation scores and the observed score
        _, _, self.bars_ = ax.hist(self.permutation_scores, bins=self._edges(), color="C0", alpha=0.7,
                                   label=f"{self.permutation_scores.size} permutations")
        self.score_line_ = ax.axvline(self.score, color="C3", linewidth=2,
                                      label=f"observed {self.score:.3f} (p = {self.pvalue:.3g})")
        return self.scoring, "permutations", "permutation test: null distribution", True
