"""RankBoost (Freund, Iyer, Schapire & Singer, "An efficient boosting algorithm for combining
preferences", JMLR 4, 2003) with threshold weak rankers on single features.

A crucial pair (x0, x1) says x1 should rank above x0.  RankBoost keeps a distribution D_t over
crucial pairs, picks in round t the weak ranker h_t(x) = [x_f > theta] (values in {0, 1}) with
the largest |r_t|, r_t = sum D_t(x0, x1) (h_t(x1) - h_t(x0)) (the paper's threshold weak
learner), weighs it by alpha_t = 1/2 ln((1 + r_t) / (1 - r_t)) (the minimiser of the bound
Z_t <= sqrt(1 - r_t^2)), and re-weighs D_{t+1}(x0, x1) ∝ D_t(x0, x1) exp(alpha_t (h_t(x0) - h_t(x1)))
(Fig. 1).  The final ranker is F(x) = sum_t alpha_t h_t(x).

The pair distribution is never formed for graded targets: D_t(x0, x1) = c_g e^{F(x0)} e^{-F(x1)}
factorises per pair of levels (the paper's efficient implementation for bipartite feedback,
which extends to any number of levels), so every round costs O(m n) after one sort per feature,
whatever the number of pairs.  See ``cpp/include/fastrank/rankboost.hpp``.
"""

from __future__ import annotations

import numpy as np
from sklearn.utils.validation import check_is_fitted

from . import _core
from ._base import N_JOBS, Ranker, StrOptions, positive_int
from ._problem import check_pairs
from ._registry import register_estimator
from ._validation import as_float_matrix, check_n_jobs, group_index

__all__ = ["RankBoost"]

_WEIGHTINGS = ("pairs", "query")
_MISSING = ("error", "q_def")


def graded_blocks(y, groups, m):
    """Level blocks of graded feedback: (block id per row, first block of each group (n_groups+1),
    number of crucial pairs per group).  Blocks of a group are numbered by increasing y."""
    gi = group_index(groups, m)
    codes = gi.codes
    order = np.lexsort((y, codes))
    ys, cs = y[order], codes[order]
    new = np.empty(m, dtype=bool)
    new[0] = True
    new[1:] = (cs[1:] != cs[:-1]) | (ys[1:] != ys[:-1])
    block_sorted = np.cumsum(new) - 1
    block = np.empty(m, dtype=np.int64)
    block[order] = block_sorted
    n_blocks = int(block_sorted[-1]) + 1
    block_group = cs[new]
    blocks_per_group = np.bincount(block_group, minlength=gi.n_groups)
    group_blocks = np.concatenate([[0], np.cumsum(blocks_per_group)]).astype(np.int64)
    block_size = np.bincount(block_sorted, minlength=n_blocks).astype(np.float64)
    sq = np.bincount(block_group, weights=block_size**2, minlength=gi.n_groups)
    n_pairs = (gi.sizes.astype(np.float64) ** 2 - sq) / 2.0
    return block, group_blocks, n_pairs


@register_estimator
class RankBoost(Ranker):
    """RankBoost with threshold weak rankers (Freund, Iyer, Schapire & Singer, JMLR 2003).

    Parameters
    ----------
    n_estimators : int, default=100
        Boosting rounds T (>= 1).  Fewer are kept if no weak ranker has an edge left (|r| <=
        1e-12) or one orders every weighted pair correctly (|r| = 1; it is added with alpha from
        r clipped to 1 - 1e-10, about 11.9, and boosting stops).
    n_thresholds : int or None, default=None
        None: every distinct value of a feature gives a candidate threshold (the paper's weak
        learner).  An int k keeps at most k thresholds per feature, spread over the
        quantiles of the feature (with c rows above a threshold and bin = floor(c k / m), the last
        threshold of each bin).  Cost per round is O(m n) either way; k only changes the model.
    group_weighting : {"pairs", "query"}, default="pairs"
        Initial distribution D_1 with ``groups``: "pairs" is uniform over all crucial pairs (large
        queries weigh more, as in the paper); "query" gives every group with a crucial pair the
        same total mass, uniform inside it.  Without groups both are uniform over all pairs.
    missing : {"error", "q_def"}, default="error"
        NaN in X: an error, or a missing value handled as in the paper's weak ranker with a
        default: h(x) = q_def in {0, 1} when x_f is missing, q_def chosen together with the
        threshold to maximise |r| (with missing values a feature also offers the weak ranker
        "has x_f" vs q_def, stored as threshold -inf).  Infinite values are always an error.
    n_jobs : int or None, default=None
        Threads over features in the C++ round loop (None: every core).

    Attributes
    ----------
    features_ : ndarray of int64, shape (n_estimators_,)
        Feature of each round's weak ranker.
    thresholds_ : ndarray of float64, shape (n_estimators_,)
        Threshold: h_t(x) = 1 if x[features_[t]] > thresholds_[t] else 0.  The midpoint between
        the two adjacent training values, so h_t is exact on the training rows.
    alphas_ : ndarray of float64, shape (n_estimators_,)
        Weights alpha_t = 1/2 ln((1 + r_t) / (1 - r_t)); negative when r_t < 0 (the weak ranker
        is used reversed, which the paper's {0, 1} weak learner allows).
    qdefs_ : ndarray of int64, shape (n_estimators_,)
        h_t on rows missing the feature (0 unless ``missing="q_def"`` chose 1).
    correlations_ : ndarray, shape (n_estimators_,)
        r_t of each round.
    n_estimators_ : int
        Rounds actually performed.
    n_features_in_ : int

    Notes
    -----
    Crucial pairs: ``fit(X, y)`` all pairs with y_i > y_j; ``fit(X, y, groups)`` only inside
    groups; ``fit_preferences(X, pairs)`` the given multigraph, D_1 uniform over its edges.
    For graded targets D_t is kept implicitly, D_t(x0, x1) = c_g e^{F(x0)} e^{-F(x1)} / Z_t, so a
    round needs only the per-level sums of e^{F} and e^{-F} (O(m)) and one prefix-sum scan per
    feature over rows sorted once by that feature (O(m n)); never O(#pairs).  The sums are kept
    in log domain, so large margins do not overflow.  Ties between candidates (|r| equal to
    relative 1e-9) go to the lowest feature index, then the largest threshold, whatever n_jobs.
    """

    def __init__(self, n_estimators=100, *, n_thresholds=None, group_weighting="pairs", missing="error",
                 n_jobs=None):
        self._store_params(locals())

    _parameter_constraints = {"n_estimators": [positive_int()], "n_thresholds": [None, positive_int()],
                              "group_weighting": [StrOptions(set(_WEIGHTINGS))],
                              "missing": [StrOptions(set(_MISSING))], "n_jobs": N_JOBS}

    # -- fitting ---------------------------------------------------------------------------------
    def _check_params(self):
        self._validate_params()
        k = 0 if self.n_thresholds is None else int(self.n_thresholds)
        return int(self.n_estimators), k, check_n_jobs(self.n_jobs)

    def _check_X(self, X, min_rows=1):
        allow = getattr(self, "missing", "error") == "q_def"
        X = as_float_matrix(X, "X", min_rows=min_rows, allow_nan=allow)
        if allow and np.isinf(X).any():
            raise ValueError("Input X contains infinity (NaN marks a missing value with missing='q_def').")
        return X

    def fit(self, X, y, groups=None):
        """Fit on graded relevance ``y``: every pair with y_i > y_j is crucial (only pairs inside
        a group when ``groups`` is given; one id per row, any order or type)."""
        T, k, n_threads = self._check_params()
        X = self._check_X(X, min_rows=2)
        m = X.shape[0]
        y = self._check_target_vector(y, m)
        block, group_blocks, n_pairs = graded_blocks(y, groups, m)
        if not np.any(n_pairs > 0):
            where = "inside any group" if groups is not None else "among the rows"
            raise ValueError(
                f"No relevant pairs: all targets are tied {where}, so there are no preferences "
                "to learn from (RankBoost with groups uses only pairs of rows sharing a group id)."
            )
        if self.group_weighting == "query":
            weight = np.where(n_pairs > 0, 1.0 / np.maximum(n_pairs, 1.0), 1.0)
        else:
            weight = np.ones(n_pairs.size)
        res = _core.rankboost_fit_graded(X, block, group_blocks, weight, T, k, n_threads)
        return self._set_fitted(X, res)

    def fit_preferences(self, X, pairs):
        """Fit on an explicit preference multigraph: row ``pairs[e, 0]`` is preferred over row
        ``pairs[e, 1]``; D_1 is uniform over the edges (a repeated edge weighs more).  The edge
        distribution is kept explicitly: O(#edges + m n) per round."""
        T, k, n_threads = self._check_params()
        X = self._check_X(X, min_rows=2)
        head, tail = check_pairs(pairs, X.shape[0])
        res = _core.rankboost_fit_graph(X, head, tail, T, k, n_threads)
        return self._set_fitted(X, res)

    def _set_fitted(self, X, res):
        features, thresholds, alphas, r, qdef = res
        self.features_ = np.asarray(features, dtype=np.int64)
        self.thresholds_ = np.asarray(thresholds, dtype=np.float64)
        self.alphas_ = np.asarray(alphas, dtype=np.float64)
        self.correlations_ = np.asarray(r, dtype=np.float64)
        self.qdefs_ = np.asarray(qdef, dtype=np.int64)
        self.n_estimators_ = int(self.alphas_.size)
        self.n_features_in_ = X.shape[1]
        return self

    # -- prediction ------------------------------------------------------------------------------
    def _weak_outputs(self, X):
        """(p, n_estimators_) matrix of h_t(x) in {0, 1}."""
        check_is_fitted(self, "alphas_")
        X = self._check_X(X)
        if X.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {X.shape[1]} features, but RankBoost is expecting {self.n_features_in_} features as input."
            )
        V = X[:, self.features_]
        H = (V > self.thresholds_).astype(np.float64)
        if self.missing == "q_def":
            nan = np.isnan(V)
            H[nan] = np.broadcast_to(self.qdefs_, H.shape)[nan]
        return H

    def predict(self, X):
        """Ranking scores F(x) = sum_t alpha_t h_t(x), h_t(x) = [x_{f_t} > theta_t] (q_def_t when
        x_{f_t} is missing); higher ranks higher."""
        H = self._weak_outputs(X)
        return H @ self.alphas_ if self.n_estimators_ else np.zeros(H.shape[0])

    def staged_predict(self, X):
        """Scores after each round t = 1..n_estimators_ (a generator), for choosing T."""
        H = self._weak_outputs(X)
        F = np.zeros(H.shape[0])
        for t in range(self.n_estimators_):
            F = F + self.alphas_[t] * H[:, t]
            yield F

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = self.missing == "q_def"
        return tags
