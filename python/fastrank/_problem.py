"""One ranking problem: validated features, targets and the pair structure every learner and every cross-validation
shortcut consumes (Pahikkala et al. 2009, Sect. 2).

The pair structure is one of
* all pairs (object ranking): one group holding every row, L = m I - 1 1^T;
* query groups: pairs inside each group only, L block-diagonal (eq. 25), each pair weighted by a per-group weight c_q
  chosen by ``weighting`` (see ``WEIGHTINGS``);
* a weighted preference multigraph (eqs. 12-14): edges (head preferred over tail) with weight w_e and target z_e
  (costs (20)-(22)), L = M M^T with M the weighted incidence matrix.

For the first two, S = L^{1/2} is block centring scaled by s_q = sqrt(c_q n_q) (see
``cpp/include/fastrank/laplacian.hpp``); rows keep the caller's order and the :class:`~fastrank._validation.GroupIndex`
permutes them into contiguous groups for a solver that needs it.
"""

from __future__ import annotations

import warnings
from typing import NamedTuple

import numpy as np

from ._sparse import as_csr, issparse
from ._validation import (_asarray, as_float_matrix, as_float_vector, as_real_array, as_targets, block_sums,
                          check_precomputed_kernel, group_index, whole_numbers)
from .exceptions import ConstantModelWarning, user_stacklevel

__all__ = ["PreferenceGraph", "RankingProblem", "WEIGHTINGS", "COSTS", "check_weighting", "check_pairs", "pair_weights"]

# Pair weight c_q inside a group of n_q rows: see _docs.PARAM_DOCS["group_weighting"] ("per_query" is 004's
# normalisation at the end of Sect. 2.4, each edge of a sentence weighted by the inverse of the number of that
# sentence's edges; under "per_object" a query weighs n_q / 2; "normalized" is least squares on query-centred scores,
# sum_i ((f_i - mean_q f) - (y_i - mean_q y))^2).
WEIGHTINGS = ("unweighted", "per_query", "per_object", "normalized")
COSTS = ("binary", "magnitude", "normalized")


def pair_weights(sizes, weighting):
    """The pair weight c_q of every group of ``sizes`` rows under ``weighting``."""
    n = np.asarray(sizes, dtype=np.float64)
    if weighting == "unweighted":
        return np.ones_like(n)
    if weighting == "normalized":
        return 1.0 / n
    count = n * (n - 1.0) / 2.0 if weighting == "per_query" else n - 1.0
    return np.where(n >= 2, 1.0 / np.maximum(count, 1.0), 1.0)


def check_weighting(weighting):
    if weighting not in WEIGHTINGS:
        raise ValueError(f"group_weighting must be one of {WEIGHTINGS}, got {weighting!r}")
    return weighting


def check_pairs(pairs, m):
    """Validated (head, tail) int64 arrays of a preference list: ``pairs[e] = (a, b)`` means row a
    is preferred over row b (rows in [0, m), no self-loops, at least one pair)."""
    try:
        pairs = _asarray(pairs, "pairs")  # a scipy.sparse matrix refused by name
    except ValueError:  # nested lists of unequal lengths
        raise ValueError("pairs must have shape (n_pairs, 2), got a ragged list") from None
    if pairs.ndim != 2 or pairs.shape[1] != 2:
        raise ValueError(f"pairs must have shape (n_pairs, 2), got {pairs.shape}")
    if pairs.shape[0] == 0:
        raise ValueError("pairs is empty: a preference graph needs at least one preference")
    if not whole_numbers(pairs):
        raise TypeError("pairs must hold integer row indices")
    bad = (pairs < 0) | (pairs >= m)  # before the cast, which would wrap an index such as 1e30
    if bad.any():
        e = int(np.flatnonzero(bad.any(axis=1))[0])
        raise ValueError(f"pairs[{e}] = {pairs[e].tolist()} refers to a row outside [0, {m})")
    pairs = pairs.astype(np.int64)
    loops = pairs[:, 0] == pairs[:, 1]
    if loops.any():
        e = int(np.flatnonzero(loops)[0])
        raise ValueError(f"pairs[{e}] = {pairs[e].tolist()} is a self-loop (a row preferred over itself)")
    return np.ascontiguousarray(pairs[:, 0]), np.ascontiguousarray(pairs[:, 1])


def check_pair_weights(weights, l, *, zero_ok=False):
    """Per-pair weights (l,) as float64: finite and > 0, or (``zero_ok``) >= 0 with one > 0."""
    w = as_real_array(weights, "weights")
    if w.shape != (l,):
        raise ValueError(f"weights must have shape ({l},) (one per pair), got {w.shape}")
    if not np.isfinite(w).all():
        raise ValueError("weights contain NaN or infinity")
    if (w < 0).any() or not (zero_ok or (w > 0).all()):
        raise ValueError("weights must be >= 0 (swap the pair to reverse a preference)" if zero_ok else
                         "weights must be finite and > 0 (drop a pair instead of giving it weight 0)")
    if not (w > 0).any():
        raise ValueError("No preference pairs: every weight is 0")
    return np.ascontiguousarray(w)


class PreferenceGraph(NamedTuple):
    """Edges e = (head[e] preferred over tail[e]) with weight w_e > 0 and targets z_e (l, v)."""

    head: np.ndarray
    tail: np.ndarray
    weight: np.ndarray
    target: np.ndarray

    @classmethod
    def from_pairs(cls, pairs, magnitudes, cost, m, weights=None):
        """Validated edges for the costs (20) binary (z = 1, w = 1), (21) magnitude (z = g, w = 1) and (22)
        magnitude-normalized (z = g, w = 1/g) of Sect. 2.4; ``weights`` (> 0) multiply each edge's squared error (w_e
        -> w_e sqrt(weights_e), eq. 11)."""
        head, tail = check_pairs(pairs, m)
        if cost is None:
            cost = "binary" if magnitudes is None else "magnitude"
        if cost not in COSTS:
            raise ValueError(f"cost must be one of {COSTS}, got {cost!r}")
        l = head.size
        if magnitudes is None:
            if cost != "binary":
                raise ValueError(f"cost={cost!r} needs magnitudes")
            g = np.ones(l)
        elif cost == "binary":
            raise ValueError("cost='binary' (eq. 20) targets a score difference of 1 for every preference and would "
                             "ignore the magnitudes: give cost='magnitude' or 'normalized' with them, or no magnitudes")
        else:
            g = as_float_vector(magnitudes, "magnitudes", l)
            if (g < 0).any():
                raise ValueError("magnitudes must be >= 0 (swap the pair to reverse a preference)")
        if cost == "normalized" and (g <= 0).any():
            raise ValueError("cost='normalized' (eq. 22) weights each preference by 1/magnitude: "
                             "magnitudes must be > 0")
        weight = 1.0 / g if cost == "normalized" else np.ones(l)
        if weights is not None:
            weight = weight * np.sqrt(check_pair_weights(weights, l))
        return cls(head, tail, weight, np.ascontiguousarray(g.reshape(-1, 1)))  # target g: 1 for "binary"

    @classmethod
    def from_arrays(cls, graph, m):
        """Edges from a ``(head, tail, weight, target)`` tuple (or a :class:`PreferenceGraph`)."""
        head, tail, weight, target = graph
        head, tail = np.ravel(head), np.ravel(tail)
        target = np.asarray(target, dtype=np.float64)
        target = target.reshape(-1, 1) if target.ndim == 1 else target
        l = head.size
        if tail.size != l or np.size(weight) != l or target.shape[0] != l:
            raise ValueError("preference graph arrays must have one entry per edge")
        head, tail = check_pairs(np.stack([head, tail], axis=1), m)
        return cls(head, tail, check_pair_weights(np.ravel(weight), l), np.ascontiguousarray(target))


def check_features(X, *, precomputed=False, allow_sparse=False, min_rows=2):
    """Training input: a dense (m, m) kernel for a precomputed kernel (checked symmetric), dense features, or
    (``allow_sparse``) a scipy.sparse matrix in CSR form."""
    if precomputed:
        if issparse(X):
            raise TypeError("X is a sparse matrix; a precomputed kernel must be a dense (m, m) array (call "
                            "X.toarray())")
        return check_precomputed_kernel(X, min_rows=min_rows).T  # exactly symmetric: its C-ordered view, no copy
    if issparse(X) and allow_sparse:  # else as_float_matrix refuses it
        as_csr(X, "X")  # validation only (1-D first: SciPy's own message varies): the solvers map the arrays themselves
        X = X.tocsr()
        if X.dtype != np.float64:  # once, here: bool products are logical (True @ True = True), float32 rounds
            X = X.astype(np.float64)
        if X.shape[0] < min_rows:
            raise ValueError(f"Found array with {X.shape[0]} sample(s) while a minimum of {min_rows} is required.")
        return X
    return as_float_matrix(X, "X", min_rows=min_rows)


def _tie_cells(Y, gi):
    """Rows grouped by (group, target value): a GroupIndex whose groups are the tie cells nested in the query groups.
    Every output column must tie the same pairs (pairs inside a group only)."""
    def cells(y):
        _, code = np.unique(y, return_inverse=True)
        code = code.reshape(-1)
        return gi.codes * (int(code.max()) + 1) + code

    combined = cells(Y[:, 0])
    for k in range(1, Y.shape[1]):
        # the same partition into tie cells: as many (cell in column 0, cell in column k) pairs as cells in either
        other = cells(Y[:, k])
        joint = np.unique(np.stack([combined, other], axis=1), axis=0).shape[0]
        if joint != np.unique(combined).size or joint != np.unique(other).size:
            raise ValueError("exclude_ties=True needs every output column of y to tie the same pairs; fit "
                             "the outputs separately")
    return group_index(combined, Y.shape[0])


def crucial_pairs(y, gi, cells=None):
    """Per group of the :class:`GroupIndex` ``gi``: the number of pairs whose targets ``y`` (m,) differ, all its pairs
    less those inside a tie cell (``cells``: :func:`_tie_cells` of y, when already built)."""
    cells = _tie_cells(y.reshape(-1, 1), gi) if cells is None else cells
    n, t = gi.sizes.astype(np.float64), cells.sizes.astype(np.float64)
    tied = np.bincount(gi.codes[cells.order[cells.offsets[:-1]]], weights=t * (t - 1.0) / 2.0, minlength=gi.n_groups)
    return n * (n - 1.0) / 2.0 - tied


class RankingProblem(NamedTuple):
    """Validated features ``X`` (dense, CSR, or a precomputed (m, m) kernel), targets ``Y`` (m, v) (None for a
    preference graph), and the pair structure.  Build it with :meth:`from_scores` or :meth:`from_preferences`; it is
    read-only afterwards."""

    X: object
    Y: object
    one_d: bool
    groups: object
    grouped: bool
    weighting: str
    graph: object
    precomputed: bool
    # exclude_ties: rows grouped by (group, target value); tied pairs carry no preference
    cells: object = None
    # the pair weight of every group when kept from a larger problem (exact CV's retraining), else from ``weighting``
    kept_pair_weight: object = None
    # Y less each group's mean (``targets_centred``) when the constructor has it, else computed when asked
    Y_centred: object = None
    Y_centred_magnitudes: object = None  # each column's largest |Y_centred|, when the constructor has it

    # -- construction ---------------------------------------------------------------------------
    @classmethod
    def from_scores(cls, X, y, groups=None, *, weighting="unweighted", precomputed=False, allow_sparse=False,
                    min_rows=2, learner="RankRLS", exclude_ties=False):
        """Scoring setting (cost (21), z_ij = y_i - y_j): all pairs, or pairs inside ``groups``; with ``exclude_ties``
        only pairs whose targets differ (every output must tie the same pairs).  ``learner``: the name the
        no-preference errors give (None: not checked)."""
        X = check_features(X, precomputed=precomputed, allow_sparse=allow_sparse, min_rows=min_rows)
        Y, one_d = as_targets(y, X.shape[0])
        gi = group_index(groups, X.shape[0])
        # A per-group weighting needs groups: object ranking weighs every pair 1 (L = m I - 1 1^T).
        cells = _tie_cells(Y, gi) if exclude_ties else None
        if learner is not None:  # every output must order at least one relevant pair (the error names the learner)
            require_preferences(Y, gi, learner)
        Yc = centred_in_groups(Y, gi)
        Yc.flags.writeable = False  # shared by every targets_centred() of the problem
        spread = magnitudes(Yc)
        if np.any((spread > 0) & (spread < np.finfo(np.float64).tiny)):
            warnings.warn("the targets differ by less than 2.2e-308 inside their groups (subnormal numbers, fewer "
                          "than 53 bits): predictions of their size keep a few bits, and exact cross-validation may "
                          "rank and choose by rounding; rescale y (e.g. y * 2.0**1000)", ConstantModelWarning,
                          stacklevel=user_stacklevel())
        return cls(X, Y, one_d, gi, groups is not None, weighting if groups is not None else "unweighted", None,
                   precomputed, cells, Y_centred=Yc, Y_centred_magnitudes=spread)

    @classmethod
    def from_preferences(cls, X, pairs, magnitudes=None, cost=None, *, weights=None, precomputed=False,
                         allow_sparse=False):
        """Preference-graph setting: ``pairs[e] = (a, b)`` means row a is preferred over row b."""
        X = check_features(X, precomputed=precomputed, allow_sparse=allow_sparse)
        graph = PreferenceGraph.from_pairs(pairs, magnitudes, cost, X.shape[0], weights)
        return cls(X, None, True, None, False, "unweighted", graph, precomputed)

    # -- shape ------------------------------------------------------------------------------------
    m = property(lambda self: self.X.shape[0])
    n_features = property(lambda self: self.X.shape[1])
    n_outputs = property(lambda self: self.graph.target.shape[1] if self.graph is not None else self.Y.shape[1])
    sparse = property(lambda self: issparse(self.X))
    is_graph = property(lambda self: self.graph is not None)
    exclude_ties = property(lambda self: self.cells is not None)

    # -- groups (scoring setting) -----------------------------------------------------------------
    def pair_weight(self):
        """c_q per group (see ``WEIGHTINGS``); groups of one row have no pairs and get c_q = 1.

        With ties excluded, "per_query" divides by the query's edges, its untied pairs (004, end of Sect. 2.4: each edge
        weighted by the inverse of the number of its query's edges), so that every query still weighs 1 in total."""
        if self.kept_pair_weight is not None:
            return self.kept_pair_weight
        if self.exclude_ties and self.weighting == "per_query":
            edges = crucial_pairs(self.Y, self.groups, self.cells)
            return np.where(edges > 0, 1.0 / np.maximum(edges, 1.0), 1.0)
        return pair_weights(self.groups.sizes, self.weighting)

    def targets_centred(self):
        """Y less each group's mean (rows as given, C order; read-only use): the same model and the same hold-out
        models (L 1_q = 0, also for any subset of a group's rows), without the digits a large common offset cancels
        in the hold-out formulas (f = y + correction)."""
        return self.Y_centred if self.Y_centred is not None else centred_in_groups(self.Y, self.groups)

    def centred_magnitudes(self):
        """The largest magnitude of each column of :meth:`targets_centred`."""
        known = self.Y_centred_magnitudes
        return known if known is not None else magnitudes(self.targets_centred())

    def apply_S(self, A):
        """S A for an (m, k) array whose rows are in GROUP order (S = L^{1/2} is symmetric): block q
        of S is s_q (I - 1 1^T / n_q) with s_q = sqrt(c_q n_q)."""
        out = np.array(A, dtype=np.float64, copy=True)
        sizes = self.groups.sizes
        means = block_sums(out, self.groups.offsets) / sizes[:, None]
        out -= np.repeat(means, sizes, axis=0)
        out *= np.repeat(np.sqrt(self.pair_weight() * sizes), sizes)[:, None]
        return out

    def apply_S_cells(self, A, pseudo_inverse=False, fewer=0.0, centre=True):
        """S A (or S^+ A) with tied pairs excluded, rows of A in CELL order (``self.cells.order``); ``fewer``
        (per cell) lowers the within-cell factors n_q - n_t to n_q - n_t - fewer_t.  ``centre``: subtract each
        group's mean first (S 1_q = 0), so that a large common offset of A (targets near 1e9) cancels no digits;
        its rounding is a constant of the group, which S removes.  Kernel matrices pass False: two more passes
        over (m, m), and their offset is carried by the predictions K A anyway.

        Inside group q (pair weight c_q), the complete multipartite Laplacian over the tie cells t splits into
        orthogonal projectors: L_q = c_q (n_q P_B + sum_t (n_q - n_t) P_t), P_B the between-cell centring (cell mean
        minus group mean) and P_t the centring inside cell t, so (S A)_i = sqrt(c_q) (sqrt(n_q) (mean_t - mean_q) +
        sqrt(n_q - n_t) (A_i - mean_t)); S^+ inverts each nonzero factor."""
        cells = self.cells
        cell_group = self.groups.codes[cells.order[cells.offsets[:-1]]]  # the group of every tie cell
        col = (-1,) + (1,) * (np.ndim(A) - 1)  # a per-row factor broadcast over A's other axes
        csize, gsize = cells.sizes.astype(np.float64), self.groups.sizes.astype(np.float64)
        A = np.asarray(A, dtype=np.float64)
        if centre:  # rows are group-major
            A = A - np.repeat(block_sums(A, self.groups.offsets) / gsize.reshape(col), self.groups.sizes, axis=0)
        csum = block_sums(A, cells.offsets)
        cmean = csum / csize.reshape(col)
        cells_of_groups = np.r_[0, np.flatnonzero(np.diff(cell_group)) + 1, cell_group.size]
        gmean = block_sums(csum, cells_of_groups) / gsize.reshape(col)
        n_q = gsize[cell_group]
        c_q = self.pair_weight()[cell_group]
        between, within = np.sqrt(c_q * n_q), np.sqrt(c_q * (n_q - csize - fewer))
        if pseudo_inverse:
            between, within = (np.divide(1.0, f, out=np.zeros_like(f), where=f > 0) for f in (between, within))
        # within_t A_i + (between_q (mean_t - mean_q) - within_t mean_t)
        shift = between.reshape(col) * (cmean - gmean[cell_group]) - within.reshape(col) * cmean
        out = np.repeat(within, cells.sizes).reshape(col) * A
        out += np.repeat(shift, cells.sizes, axis=0)
        return out

    def laplacian_norm(self):
        """lambda_max(L), or an upper bound of it: c_q n_q in group q of a scores problem (excluding ties only removes
        edges), twice the largest weighted degree of a preference graph (Gershgorin)."""
        if self.is_graph:
            g = self.graph
            degree = (np.bincount(g.head, g.weight, minlength=self.m) + np.bincount(g.tail, g.weight, minlength=self.m))
            return 2.0 * float(degree.max(initial=0.0))
        return float(np.max(self.pair_weight() * self.groups.sizes))

    def n_relevant_pairs(self):
        """Number of relevant pairs of a scores problem (less the tied pairs with ``exclude_ties``)."""
        n = self.groups.sizes.astype(np.float64)
        return int((crucial_pairs(self.Y, self.groups, self.cells) if self.exclude_ties else n * (n - 1.0) / 2.0).sum())

    def laplacian_args(self):
        """Keyword arguments that describe L to the C++ solvers working in the caller's row order."""
        if self.is_graph:
            g = self.graph
            return dict(head=g.head, tail=g.tail, weight=g.weight, targets=g.target)
        return dict(order=self.groups.order, offsets=self.groups.offsets, pair_weight=self.pair_weight())


def group_target_range(Y, gi):
    """(low, high): the smallest and largest target of each group of the :class:`GroupIndex` ``gi``, per output
    column of the (m, v) targets ``Y`` ((n_groups, v) each)."""
    Yg, starts = gi.take(Y), gi.offsets[:-1]
    return np.minimum.reduceat(Yg, starts, axis=0), np.maximum.reduceat(Yg, starts, axis=0)


def magnitudes(Y):
    """The largest magnitude of each column of ``Y`` (m, v); 0 for no rows."""
    return np.maximum(Y.max(axis=0, initial=0.0), -Y.min(axis=0, initial=0.0))


def centred_in_groups(y, gi):
    """``y`` (m,) or (m, k) -- targets or feature columns -- rows as given, less the mean of each group of
    :class:`GroupIndex` ``gi``: a pairwise loss of differences y_i - y_j (x_i - x_j) inside groups has the same
    minimiser, and a large offset (values near 1e9) cancels no digits in the solvers' sums over rows."""
    y = np.asarray(y, dtype=np.float64)
    means = gi.sums(y) / gi.sizes.reshape((-1,) + (1,) * (y.ndim - 1))
    out = means[gi.codes]  # C order whatever y's
    return np.subtract(y, out, out=out)


def group_offset_ratio(X, gi):
    """How far the group means of X's columns stand out (inf where squares overflow): the largest, over the columns of
    X (m, n) (dense or sparse), of the groups' share B of the column's sum of squares S against the rest W = S - B,
    B / max(W, mean W) -- about (offset / spread)^2.  The columns' mean spread stands in for a column that barely
    varies inside groups (a query-level feature of ordinary size costs nothing: its differences are 0).  Where an
    offset dominates, W is rounding noise of S, often <= 0: it is taken at least eps S, so that the ratio is at least
    ~1 / eps.  One pass over X."""
    sums = gi.sums(X)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        between = (np.asarray(sums.todense() if issparse(sums) else sums) ** 2 / gi.sizes[:, None]).sum(axis=0)
        total = np.asarray(X.multiply(X).sum(axis=0)).ravel() if issparse(X) else np.einsum("ij,ij->j", X, X)
        within = np.maximum(total - between, np.finfo(np.float64).eps * total)
        ratio = between / np.maximum(within, within.sum() / max(within.size, 1))
    return float(np.max(np.where(np.isnan(ratio) & (between != 0), np.inf, np.nan_to_num(ratio)), initial=0.0))


def features_without_group_offsets(X, gi):
    """Dense ``X`` as :func:`centred_in_groups` makes it where a column's group means reach 1e4 times its spread
    (:func:`group_offset_ratio` above 1e8), else X itself (no copy): a pairwise loss reads f_i - f_j of f = X w,
    and smaller offsets cost at most ~1e4 eps relative there."""
    return X if group_offset_ratio(X, gi) <= 1e8 else centred_in_groups(X, gi)


def require_preferences(Y, gi, learner):
    """Raise the "no preference pairs" errors for targets ``Y`` ((m,) or (m, v)) grouped by the :class:`GroupIndex`
    ``gi``: for :meth:`RankingProblem.from_scores` and the learners that build none (SVRank, OnlineMPRank)."""
    Y = np.asarray(Y, dtype=np.float64).reshape(len(Y), -1)
    # a column has a preference pair where some target differs from its group's first: a gather and compare (the
    # groups' minima and maxima by np.minimum/maximum.reduceat took 0.17 s for 100 columns of 1e5 rows), over the
    # first rows, then over the rest for the columns still tied (most columns differ early: 0.05 s -> 0.1 ms there)
    first, tied = gi.order[gi.offsets[:-1]], np.ones(Y.shape[1], dtype=bool)  # the first row of every group
    for rows in (slice(0, 4096), slice(4096, None)):
        cols = np.flatnonzero(tied)
        if cols.size:
            tied[cols] = ~np.any(Y[rows, cols] != Y[first[gi.codes[rows]][:, None], cols], axis=0)
    raise_without_preferences(gi.sizes, tied, gi.n_groups > 1, learner)


def raise_without_preferences(sizes, tied=(), grouped=True, learner="RankRLS"):
    """The errors for data without preferences: every group (of ``sizes`` rows; None: not checked) a single row, or an
    output column flagged in ``tied`` tied inside every group (``grouped``) or for all rows."""
    if sizes is not None and not np.any(np.asarray(sizes) >= 2):
        raise ValueError(f"No relevant pairs: every group has a single row. {learner} with groups learns only from "
                         "pairs of rows that share a group id.")
    if np.any(tied):
        where = "inside every group" if grouped else "for all rows"
        raise ValueError(f"All targets are tied {where} (output column(s) {np.flatnonzero(tied).tolist()}): there "
                         "are no preferences to learn from.")
