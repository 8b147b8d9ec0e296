"""Exact fast cross-validation for RankRLS and MPRank (Pahikkala et al. 2009, Sections 3.3-3.4).

Every function returns *exactly* the predictions of the model retrained without the held-out inputs (every preference
edge incident to them removed, every other pair kept with its weight; RankRLS keeps its ``alpha``, MPRank its ``C``,
i.e. alpha = m_train^2 / (2 C) as in its ``fit``), from one factorization of the training problem instead of one
retraining per hold-out set: leave-pair-out (Lemma 2, eqs. 34-39; inside query groups with ``groups``),
leave-group-out (eq. 33), arbitrary hold-out sets and k folds, hold-out sets of a preference graph, the leave-pair-out
AUC permutation test (Section 4.1) and Cortes et al.'s approximate MPRank leave-one(-pair)-out; and :func:`factorize`,
which keeps the factors for many questions and alphas.  Which factor answers which question: docs/design/exact-cv.md.

Conventions.
* ``estimator``: an unfitted or fitted :class:`fastrank.RankRLS` or :class:`fastrank.MPRank`; only its parameters are
  used.  Linear kernel with n_features < m and solver "auto"/"primal": the spectral factor of ``S X X^T S`` comes from
  the n x n matrix ``(S X)^T (S X)`` (O(m n^2 + m^2 n), no m x m eigendecomposition); ``solver="dual"`` or another
  kernel uses the m x m factors, which handle singular K exactly (the paper's limit interpretation of Lemma 2).
  ``exclude_ties=True`` is retrained exactly (its tied pairs stay excluded) through one Cholesky factor of
  ``S K S + alpha I`` per alpha and an update per hold-out set or pair of tie cells (docs/design/exact-cv.md).
* ``X``: (m, n_features) array, or (m, m) kernel when ``kernel="precomputed"``; ``y``: (m,) or (m, v) scores, and the
  predictions (m,) or (m, v) alike; ``groups``: optional (m,) group ids.
* Group weightings other than "unweighted": removing inputs does NOT renormalise; the retrained model keeps the weight
  c_q of the full group for its remaining pairs.  Groups of one row have no pairs: no default pairs, and holding them
  out does not change the model.
* Pairwise scores: a held-out pair (i, j) with ``y_i != y_j`` is ordered wrongly when the sign of ``f_i - f_j`` differs
  from that of ``y_i - y_j``; tied predictions count 1/2; pairs with ``y_i == y_j`` are ignored.  ``"auc"`` = 1 -
  disagreement (the LPO-AUC for binary labels).  Identical inputs (equal rows of X, or of a precomputed kernel) held
  out together get one prediction, as the retrained model predicts them alike: a pair of them is a tie.
* ``verbose`` (0, 1, 2, True or "auto"): the long steps (kernel, spectral factor, pair or set phase) are reported on
  stderr with their timings.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np


from ._base import feature_names
from ._docs import with_param_docs
from ._exactcv import PreferenceRoute, alike, check_sets, engine_for, resolve_folds, spec_of
from ._kernels import twin_rows
from ._memory import check_dense_memory
from ._problem import RankingProblem, _tie_cells
from ._rankrls import PREFERENCE_TIES, RankRLS
from ._progress import stage
from ._validation import (_asarray, as_targets, check_alpha, check_bool, check_int, check_seed, group_index,
                          pairwise_disagreement)

__all__ = ["leave_pair_out", "leave_group_out", "holdout_predictions", "preference_holdout_predictions",
           "kfold_predictions", "permutation_test_lpo", "mprank_loo_approximation", "pairwise_disagreement",
           "MPRankLOO", "Factorization", "factorize"]

# numpydoc entries shared by the functions and the Factorization methods (``%(estimator)s`` ... in their docstrings)
_DOCS = {
    "estimator": """estimator : RankRLS or MPRank
    Fitted or not: only its parameters are used (another type raises TypeError, ``solver="cg"`` ValueError).""",
    "X": """X : {array-like, sparse matrix} of shape (n_samples, n_features)
    Training rows, or their (n_samples, n_samples) kernel for ``kernel="precomputed"``.""",
    "y": """y : array-like of shape (n_samples,) or (n_samples, n_outputs)
    Real scores; a 2-D ``y`` gives predictions with one column per output.""",
    "groups": """groups : array-like of shape (n_samples,) or None, default=None
    Query id of each row: only the pairs inside a group are trained on; None: all pairs.""",
    "verbose": """verbose : int, bool or "auto", default=0
    Progress on stderr: the long steps (kernel, spectral factor, pair or set phase) with their timings; "auto"
    reports when stderr is a terminal.""",
    "alpha": """alpha : float or None, default=None
    The alpha of the retrained models, > 0; None: the estimator's, or MPRank's alpha of its C on each training part,
    m_train^2 / (2 C).""",
    "pairs": """pairs : array-like of shape (n_pairs, 2) or None, default=None
    Integer row indices (i, j), i != j, of one group each with ``groups``; None: all i < j (inside groups when given)
    in lexicographic order.  A pair whose training part holds no preference (the model ``fit`` would refuse) raises
    ValueError.""",
    "return_pairs": """return_pairs : bool, default=False
    Also return the pair indices, as ``(pairs, predictions)``.""",
    "test_sets": """test_sets : sequence of array-like
    The rows to hold out: index arrays or boolean masks of n_samples entries, each non-empty without repeats.  A set
    that leaves no training pairs raises ValueError.""",
    "folds": """folds : int, array-like of shape (n_samples,), sequence of index arrays or splitter
    An int k >= 2 (contiguous folds; with groups, whole groups assigned round-robin), fold labels (one per row), a
    sequence of disjoint index arrays covering the rows to predict (rows in no fold get NaN) or of scikit-learn
    (train, test) pairs, or a scikit-learn splitter (given ``y`` and ``groups``); training parts must be the rest of
    the rows.""",
    "lpo_pairs": """pairs : ndarray of shape (n_pairs, 2), dtype int64
    The pair indices, returned with ``return_pairs=True`` only.""",
    "lpo_predictions": """predictions : ndarray of shape (n_pairs, 2) or (n_pairs, 2, n_outputs)
    The held-out predictions of each pair's first and second index.""",
    "holdout_predictions": """predictions : list of ndarray
    One (|U|,) or (|U|, n_outputs) array per set U, its rows' predictions in the set's order.""",
    "rows_predictions": """predictions : ndarray of shape (n_samples,) or (n_samples, n_outputs)
    Row k predicted by the model retrained without the fold holding k; NaN for rows in no fold.""",
    "lgo_predictions": """predictions : ndarray of shape (n_samples,) or (n_samples, n_outputs)
    Row k: the prediction for ``x_k`` of the model retrained without ``x_k``'s whole group; groups of a single row
    keep the full-data prediction.""",
}


@with_param_docs(_DOCS)
def leave_pair_out(estimator, X, y, pairs=None, groups=None, *, return_pairs=False, verbose=0):
    """Exact leave-pair-out predictions (004 Lemma 2, eqs. 34-39).

    For every pair (i, j) the predictions for ``x_i`` and ``x_j`` of the model retrained without both (every preference
    edge incident to i or j removed, same ``alpha``): O(1) per pair (a 2 x 2 solve, in C++ threads) after one
    eigendecomposition of ``S K S`` and one m x m product (the paper's ``Q``, eq. 39).  With ``groups`` the pairs come
    from one query group and only that group's edges incident to i and j are removed (O(n_q^3 + m n_q^2) per group).

    Parameters
    ----------
    %(estimator)s %(X)s
    %(y)s
        At least 3 rows.
    %(pairs)s %(groups)s %(return_pairs)s %(verbose)s

    Returns
    -------
    %(lpo_pairs)s %(lpo_predictions)s
    """
    fac = Factorization(estimator, X, y, groups, min_rows=3, verbose=verbose)
    return fac.leave_pair_out(pairs, return_pairs=return_pairs)


@with_param_docs(_DOCS)
def leave_group_out(estimator, X, y, groups, *, verbose=0):
    """Exact leave-group-out predictions (004 eq. 33).

    One alpha needs no eigendecomposition: from the Cholesky factor of ``S K S + alpha I`` (as in a fit) the diagonal
    blocks ``G_qq`` of its inverse (~m^3/3 flops of triangular solves) give every group in O(m n_q + n_q^3).
    :class:`fastrank.RankRLSCV` with ``cv="lgo"`` shares one eigendecomposition over all alphas instead.

    Parameters
    ----------
    %(estimator)s %(X)s %(y)s
    groups : array-like of shape (n_samples,)
        Query id of each row, at least two distinct ids (else ValueError): only the pairs inside a group are trained
        on.
    %(verbose)s

    Returns
    -------
    %(lgo_predictions)s
    """
    return Factorization(estimator, X, y, groups, verbose=verbose).leave_group_out()


@with_param_docs(_DOCS)
def holdout_predictions(estimator, X, y, test_sets, groups=None, *, verbose=0):
    """Exact predictions for arbitrary hold-out index sets (each retrains without its set).

    Object ranking: O(m |U|^2 + |U|^3) per set plus O(m^2) per distinct set size; with groups: O(m |A|^2 + |A|^3) with
    A the rows of the groups the set touches (eq. 33 for whole groups).

    %(Parameters)s %(estimator)s %(X)s %(y)s %(test_sets)s %(groups)s %(verbose)s %(Returns)s %(holdout_predictions)s
    """
    return Factorization(estimator, X, y, groups, verbose=verbose).holdout_predictions(test_sets)


def preference_holdout_predictions(estimator, X, pairs, test_sets, magnitudes=None, cost=None, weights=None):
    """Exact hold-out predictions for a RankRLS trained on an explicit preference graph (004 eq. 33 in its general
    form).

    For each index set U, the predictions for U of the model retrained with every preference touching U removed
    (``estimator.fit_preferences`` on the remaining edges, same alpha).  One LU factorization of L K + alpha I, then
    O(m^2 |B|) per set, B = U and its neighbours in the graph.

    Parameters
    ----------
    estimator : RankRLS
        Fitted or not: only its parameters are used; the dense kernel model only (another type raises TypeError;
        ``exclude_ties=True``, ``basis_vectors`` or ``solver="cg"`` ValueError).
    X : {array-like, sparse matrix} of shape (n_samples, n_features)
        Training rows, or their (n_samples, n_samples) kernel for ``kernel="precomputed"``.
    pairs : array-like of shape (n_edges, 2)
        Row ``pairs[e, 0]`` is preferred over row ``pairs[e, 1]``; as for :meth:`fastrank.RankRLS.fit_preferences`,
        as are ``magnitudes``, ``cost`` and ``weights``.
    test_sets : sequence of array-like
        The rows to hold out: index arrays or boolean masks of n_samples entries, each non-empty without repeats and
        leaving at least 2 training rows (else ValueError).
    magnitudes : array-like of shape (n_edges,) or None, default=None
        The magnitudes g_e >= 0 of the preferences (> 0 for ``cost="normalized"``).
    cost : {"binary", "magnitude", "normalized"} or None, default=None
        None: "binary" without ``magnitudes``, "magnitude" with them.
    weights : array-like of shape (n_edges,) or None, default=None
        Weights > 0 of the preferences' squared errors; None: 1.

    Returns
    -------
    predictions : list of ndarray
        One (|U|,) array per set U, its rows' predictions in the set's order.
    """
    if not isinstance(estimator, RankRLS):  # MPRank has no fit_preferences: no model it fits would be predicted
        raise TypeError(f"preference_holdout_predictions needs a fastrank.RankRLS (the model of fit_preferences), "
                        f"got {type(estimator).__name__}")
    spec = spec_of(estimator)
    if spec.exclude_ties:
        raise ValueError(PREFERENCE_TIES)
    if spec.basis_vectors is not None:
        raise ValueError("preference_holdout_predictions needs the dense kernel model (no basis_vectors, no "
                         "solver='cg')")
    problem = RankingProblem.from_preferences(X, pairs, magnitudes, cost, weights=weights, precomputed=spec.precomputed,
                                              allow_sparse=True)
    sets = check_sets(test_sets, problem.m, min_train=2)
    out = PreferenceRoute(problem, spec).holdout(sets, spec.alpha_for(problem.m))
    twins = twin_rows(problem.X)  # identical rows of a set: one model predicts them alike
    return [alike(o, s, np.zeros(s.size, np.int64), twins)[:, 0] for o, s in zip(out, sets)]


@with_param_docs(_DOCS)
def kfold_predictions(estimator, X, y, folds, groups=None, *, verbose=0):
    """Exact k-fold cross-validation predictions.

    %(Parameters)s %(estimator)s %(X)s %(y)s %(folds)s %(groups)s %(verbose)s %(Returns)s %(rows_predictions)s
    """
    return Factorization(estimator, X, y, groups, verbose=verbose).kfold_predictions(folds, groups=groups)


def _permutations_within_groups(rng, gi, n):
    """n permutations of the rows, each uniformly random inside every group of ``gi``: ``rng.permutation(m)`` for one
    group; for more, each group's rows ordered by ``rng.random_sample(m)`` (one draw and one sort per permutation, not
    one call per group)."""
    m = gi.codes.size
    for _ in range(n):
        if gi.n_groups == 1:
            yield rng.permutation(m)
        else:
            perm = np.empty(m, dtype=np.intp)
            perm[gi.order] = np.lexsort((rng.random_sample(m), gi.codes))  # by group, then by the random keys
            yield perm


@with_param_docs(_DOCS)
def permutation_test_lpo(estimator, X, y, n_permutations=100, random_state=None, groups=None,
                         scoring="auc", *, verbose=0):
    """Leave-pair-out permutation test (004 Section 4.1).

    The LPO score of ``y`` and of random permutations of ``y``, all learned as extra outputs of ONE decomposition
    (O(m^3 + m^2 n_permutations)); with ``exclude_ties=True`` each permutation ties other pairs and is learned on its
    own (O(m^3) each).

    Parameters
    ----------
    %(estimator)s %(X)s
    y : array-like of shape (n_samples,)
        Real scores, one output, at least 3 rows (else ValueError).
    n_permutations : int, default=100
        The number of random permutations of ``y``, >= 1.
    random_state : int, RandomState instance or None, default=None
        Seed of the permutations.
    %(groups)s
        The permutations shuffle ``y`` within each group.
    scoring : {"auc"}, default="auc"
        The LPO score: 1 - pairwise disagreement (the LPO-AUC for binary labels); another value raises ValueError.
    %(verbose)s

    Returns
    -------
    score : float
        The LPO score of ``y``.
    permutation_scores : ndarray of shape (n_permutations,)
        The LPO score of each permutation.
    pvalue : float
        (#{perm >= score} + 1) / (n_permutations + 1).
    """
    if not (isinstance(scoring, str) and scoring == "auc"):  # an array would make "in" ambiguous
        raise ValueError(f"scoring must be 'auc', got {scoring!r}")
    n_permutations = check_int(n_permutations, "n_permutations", low=1)
    y = _asarray(y, "y")
    if y.ndim != 1:
        raise ValueError("permutation_test_lpo needs a 1-D y")
    y = as_targets(y, y.shape[0])[0][:, 0]  # real and finite, as fit checks it
    rng = check_seed(random_state)
    m = y.shape[0]
    if m < 3:
        raise ValueError(f"permutation_test_lpo needs at least 3 rows, got n_samples={m}")
    # the columns and their stacked copy, checked before a loop of n_permutations draws
    check_dense_memory(m, 2, "targets of y and its permutations", n_cols=n_permutations + 1)
    gi = group_index(groups, m)  # None: one group of every row, so each draw is rng.permutation(m)
    Y = np.empty((m, n_permutations + 1))
    Y[:, 0] = y
    for k, perm in enumerate(_permutations_within_groups(rng, gi, n_permutations), 1):
        Y[:, k] = y[perm]
    # exclude_ties: each permutation ties other pairs, so it has its own Laplacian and engine (unless no two rows of a
    # group tie: then no permutation ties any and every column has the plain Laplacian)
    tied = _tie_cells(y[:, None], gi).n_groups < m
    blocks = [Y[:, [k]] for k in range(Y.shape[1])] if spec_of(estimator).exclude_ties and tied else [Y]
    scores = []
    for block in blocks:
        prob = engine_for(estimator, X, block, groups, min_rows=3, verbose=verbose)
        # the permuted columns hold y's values in each group: a pair leaving one of them no preference leaves y none
        pairs = prob.training_pairs(required=True, scored="permutation_test_lpo", columns=slice(0, 1))
        with stage(f"leave-pair-out AUC of y and {n_permutations} permutations", verbose=verbose):
            scores.append(prob.lpo_disagreement(pairs))
    auc = 1.0 - np.concatenate(scores)
    score, perm_scores = float(auc[0]), auc[1:]
    pvalue = (np.count_nonzero(perm_scores >= score) + 1.0) / (n_permutations + 1.0)
    return score, perm_scores, float(pvalue)


MPRankLOO = namedtuple("MPRankLOO", ["approximate", "exact", "pairs", "approximate_predictions", "exact_predictions"])
MPRankLOO.__doc__ = """Cortes et al.'s approximate MPRank leave-one-out cost next to the exact one (000 Section 2.6).

What :func:`mprank_loo_approximation` returns.

Attributes
----------
approximate : float
    Proposition 2's estimate of the cost of 000 eq. 17.
exact : float
    Eq. 17 itself, each h_ij retrained.
pairs : ndarray of shape (n_pairs, 2), dtype int64
    All pairs i < j, in lexicographic order.
approximate_predictions : ndarray of shape (n_pairs, 2)
    Proposition 2's held-out predictions for ``x_i`` and ``x_j`` of each pair.
exact_predictions : ndarray of shape (n_pairs, 2)
    The held-out predictions of the retrained h_ij.
"""


@with_param_docs(_DOCS)
def mprank_loo_approximation(estimator, X, y):
    """Cortes et al.'s leave-one-out estimate for MPRank (000 Section 2.6) next to the exact value.

    The cost c(h, x_i, x_j) = [(h(x_j) - y_j) - (h(x_i) - y_i)]^2 averaged over all i != j (000 eq. 17), h_ij retrained
    without x_i and x_j.  The approximation solves the two linear equations of Proposition 2 with V_ij = ((m-1) U_ij +
    U_ii)/(m-2) (eq. 27), U the full-data hat matrix, and the unknown mean h-bar' of h_ij replaced by the full model's
    h-bar.  The exact value is eq. 17 itself, h_ij retrained at alpha = (m-2)^2 / (2C) as :func:`leave_pair_out`
    retrains MPRank (a RankRLS keeps its alpha).  Proposition 2's h_ij keeps the full sample's per-pair weight instead:
    both differences vanish as m grows (relative O(1/m)).

    Parameters
    ----------
    %(estimator)s
        The dense kernel model only (``basis_vectors`` or ``exclude_ties=True`` raise ValueError).
    %(X)s
    y : array-like of shape (n_samples,)
        Real scores, one output, at least 3 rows (else ValueError).

    Returns
    -------
    result : MPRankLOO
        ``(approximate, exact, pairs, approximate_predictions, exact_predictions)``: both costs, all pairs i < j and
        both per-pair held-out predictions (n_pairs, 2).
    """
    prob = engine_for(estimator, X, y, None, min_rows=3)
    if not prob.one_d:
        raise ValueError("mprank_loo_approximation needs a 1-D y")
    if prob.basis or spec_of(estimator).exclude_ties:
        raise ValueError("mprank_loo_approximation needs the dense kernel model (no basis_vectors, exclude_ties=False)")
    # peak: the kernel, V, K S V, the hat matrix U and the pair predictions, 8.3 m x m matrices measured
    # (robustness.md, "Errors and warnings")
    check_dense_memory(prob.m, 9, "MPRank leave-one-out approximation (hat matrix and pair predictions)")
    m, yv = prob.m, prob.Y[:, 0]
    V, sigma = prob.decompose()
    SV = np.sqrt(m * prob.dual.c) * (V - V.mean(axis=0))
    U = (prob.dual.P / (sigma + prob.alpha)) @ SV.T  # hat matrix: f = U y, rows sum to zero
    del SV
    h = U @ yv
    dbar = h.mean() - yv.mean()  # h-bar' approximated by h-bar
    pairs = prob.training_pairs()

    def held_out(i, j):
        """Proposition 2's prediction for x_i of h_ij (for x_j: the same with i and j swapped)."""
        Uii, Ujj, Uij, Uji = U[i, i], U[j, j], U[i, j], U[j, i]
        # eq. 27 (rows of U sum to zero): V_ab = U_ab + (U_aa + U_ab)/(m-2) for b in the pair;
        # the diagonal entries take the sum over k outside the PAIR {i, j}, not outside {i}.
        ri, rj = (Uii + Uij) / (m - 2), (Ujj + Uji) / (m - 2)
        Vij, Vii = Uij + ri, Uii + ri
        Vji, Vjj = Uji + rj, Ujj + rj
        ei, ej = h[i] - yv[i], h[j] - yv[j]
        den = (1 - Vjj) * (1 - Vii) - Vij * Vji
        return yv[i] + ((1 - Vjj) * ei + Vij * ej - ((Vii + Vij) * (1 - Vjj) + (Vjj + Vji) * Vij) * dbar) / den

    approx_pred = np.empty((pairs.shape[0], 2))
    for at in range(0, pairs.shape[0], m):
        i, j = pairs[at:at + m, 0], pairs[at:at + m, 1]
        approx_pred[at:at + m, 0] = held_out(i, j)
        approx_pred[at:at + m, 1] = held_out(j, i)
    del U
    exact_pred = prob.lpo(pairs)
    i, j = pairs[:, 0], pairs[:, 1]
    # the costs in units of 2^(2e), 2^e ~ max |y| (exact; robustness.md, "Costs at extreme scales")
    e = int(np.frexp(np.abs(yv).max())[1])
    with np.errstate(over="ignore"):
        approx, ex = (float(np.ldexp(np.mean(np.ldexp((f[:, 1] - yv[j]) - (f[:, 0] - yv[i]), -e) ** 2), 2 * e))
                      for f in (approx_pred, exact_pred))
    if not (np.isfinite(approx) and np.isfinite(ex)):
        raise ValueError("the leave-one-out costs (000 eq. 17) exceed the largest float64: rescale y (its values reach "
                         f"{np.abs(yv).max():.3g})")
    return MPRankLOO(approx, ex, pairs, approx_pred, exact_pred)


@with_param_docs(_DOCS)
class Factorization:
    """The kernel and the factors of one training problem, reused by every hold-out question and every alpha (004
    Sect. 3.2-3.4; built by :func:`factorize`).

    Every method but :meth:`solve` takes ``alpha`` (default: the estimator's, or MPRank's alpha of its C on each
    training part) and returns exactly what the function of the same name returns for that alpha; :meth:`solve`
    requires it.  The factors are computed when a question first needs them.

    Parameters
    ----------
    %(estimator)s %(X)s %(y)s %(groups)s
    min_rows : int, default=1
        The fewest rows accepted (fewer raise ValueError); :func:`leave_pair_out` asks for 3.
    %(verbose)s
    """

    def __init__(self, estimator, X, y, groups=None, *, min_rows=1, verbose=0):
        # factors are computed when a question first needs them (one alpha: Cholesky routes, no eigendecomposition)
        self._engine = engine_for(estimator, X, y, groups, min_rows=min_rows, verbose=verbose)
        self._estimator = estimator
        self._feature_names = feature_names(X)  # solve's models refuse X with these columns reordered

    @staticmethod
    def _alpha(alpha):
        """None (the estimator's alpha) or a checked alpha: 0, negative or non-numeric alphas would reach the routes."""
        return None if alpha is None else check_alpha(alpha)

    @with_param_docs(_DOCS)
    def leave_pair_out(self, pairs=None, *, alpha=None, return_pairs=False):
        """Exact leave-pair-out predictions at ``alpha`` (:func:`leave_pair_out`).

        %(Parameters)s %(pairs)s %(alpha)s %(return_pairs)s %(Returns)s
        %(lpo_pairs)s %(lpo_predictions)s
        """
        return_pairs = check_bool(return_pairs, "return_pairs")  # "no" is a true value
        eng = self._engine
        if pairs is None and not return_pairs:  # all pairs, not listed where the route allows
            with stage(f"leave-pair-out predictions of {eng.n_default_pairs()} pairs", verbose=eng.verbose):
                return eng.lpo_all_pairs(self._alpha(alpha))
        pairs = eng.training_pairs(pairs)
        with stage(f"leave-pair-out predictions of {pairs.shape[0]} pairs", verbose=eng.verbose):
            out = eng.lpo(pairs, self._alpha(alpha))
        return (pairs, out) if return_pairs else out

    @with_param_docs(_DOCS)
    def holdout_predictions(self, test_sets, *, alpha=None):
        """Exact predictions for hold-out index sets at ``alpha`` (:func:`holdout_predictions`).

        %(Parameters)s %(test_sets)s %(alpha)s %(Returns)s %(holdout_predictions)s
        """
        eng = self._engine
        sets = eng.check_sets(test_sets)
        if not sets:  # np.split would return the one empty block
            return []
        out = eng.holdout(sets, self._alpha(alpha))
        return [eng.shaped(o) for o in np.split(out, np.cumsum([s.size for s in sets])[:-1])]

    @with_param_docs(_DOCS)
    def kfold_predictions(self, folds, *, alpha=None, groups=None):
        """Exact k-fold cross-validation predictions at ``alpha`` (:func:`kfold_predictions`).

        Parameters
        ----------
        %(folds)s %(alpha)s
        groups : array-like of shape (n_samples,) or None, default=None
            The groups a splitter's ``split`` is given; None: those of the factorization.

        Returns
        -------
        %(rows_predictions)s
        """
        eng = self._engine
        return eng.shaped(eng.holdout_rows(resolve_folds(folds, eng, groups), self._alpha(alpha)))

    @with_param_docs(_DOCS)
    def leave_group_out(self, *, alpha=None):
        """Exact leave-group-out predictions at ``alpha`` (:func:`leave_group_out`); the factorization's groups need at
        least two distinct ids (else ValueError).

        %(Parameters)s %(alpha)s %(Returns)s %(lgo_predictions)s
        """
        eng = self._engine
        if eng.groups.n_groups < 2:  # groups=None: one group
            raise ValueError("leave_group_out needs groups with at least two distinct ids")
        with stage(f"leave-group-out over {eng.groups.n_groups} groups", verbose=eng.verbose):
            return eng.shaped(eng.leave_group_out(self._alpha(alpha)))

    def solve(self, alpha):
        """The RankRLS fitted on all the data at ``alpha``, from the factors alone (eq. 31 from the spectral factor;
        the p x p system of the linear model's S X).

        Parameters
        ----------
        alpha : float
            The regularization, > 0.

        Returns
        -------
        estimator : RankRLS
            Fitted, with the estimator's kernel parameters, ``group_weighting``, ``exclude_ties`` and ``n_jobs`` (an
            MPRank's as a RankRLS at ``alpha``); ``basis_vectors`` models raise ValueError (fit
            ``RankRLS(basis_vectors=..., alpha=...)``).
        """
        alpha = check_alpha(alpha)
        if self._engine.basis:  # no shared factor: the engine solves dense kernel models only
            raise ValueError("Factorization.solve re-solves the dense kernel model; for basis_vectors models fit "
                             "RankRLS(basis_vectors=..., alpha=...) (eqs. 40-42 share one decomposition too: "
                             "fastrank.rankrls_path)")
        keep = ("kernel", "gamma", "degree", "coef0", "group_weighting", "n_jobs", "exclude_ties")
        est = RankRLS(alpha=alpha, **{k: v for k, v in self._estimator.get_params(deep=False).items() if k in keep})
        est = est._apply_engine_fit(self._engine, alpha)
        if self._feature_names is not None:
            est.feature_names_in_ = self._feature_names
        return est


@with_param_docs(_DOCS)
def factorize(estimator, X, y, groups=None, *, verbose=0):
    """Compute the kernel and the spectral factor of S K S once, for questions at any alpha.

    The :class:`Factorization` answers leave-pair-out, leave-group-out, hold-out and k-fold questions and re-solves for
    any alpha without recomputing either (RLScore's learners keep their decomposition the same way); ``basis_vectors``
    and ``exclude_ties=True`` models share no spectral factor.

    %(Parameters)s %(estimator)s %(X)s %(y)s %(groups)s %(verbose)s %(Returns)s
    factorization : Factorization
        The training problem (X, y, groups) with the estimator's parameters and its factors.
    """
    fac = Factorization(estimator, X, y, groups, verbose=verbose)
    fac._engine.decompose()
    return fac
