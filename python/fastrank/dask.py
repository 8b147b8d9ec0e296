"""RankRLS and model selection on Dask: exact fits beyond one machine's memory or cores (docs/design/dask.md).

Optional module (``pip install "fastrank-rls[dask]"``); ``import fastrank`` never imports dask.  Linear RankRLS (eq. 28)
and subset of regressors (eqs. 40-42) reduce to per-group sums over rows: each partition returns its groups' weighted
centred scatter, a tree reduction merges groups that straddle partitions (Chan et al.'s parallel-variance update) and
the client solves with :mod:`fastrank._solvers`.  :class:`DaskRankRLSCV`, :func:`permutation_test_lpo` and
:func:`fit_oapbpm` run independent tasks on the active scheduler (a ``dask.distributed`` client if one exists).
"""

from __future__ import annotations

import copy
import functools
import numbers
import warnings
from collections.abc import Iterator

import numpy as np
import scipy.sparse as sp
from sklearn.base import RegressorMixin, clone
from sklearn.utils.validation import check_is_fitted

try:
    import dask
    import dask.array as da
except ImportError as exc:  # optional dependency: name the extra, not the missing module alone
    raise ImportError('fastrank.dask needs Dask: pip install "fastrank-rls[dask]" (or pip install "dask[array]" '
                      f"distributed); {exc}") from exc

from ._cv import RankRLSCV
from ._docs import with_param_docs
from ._kernels import by_distinct_rows, row_products
from ._memory import check_dense_memory
from ._problem import check_weighting, pair_weights, raise_without_preferences
from ._base import FastrankEstimator, KernelMixin, Ranker, feature_names, require_finite_scores, warn_scores_underflow
from ._rankrls import RankRLS, RankRLSPath
from ._solvers import Fit, basis_primal_weights, select_basis, solve_assembled_basis, solve_assembled_primal
from ._threads import compute_region
from ._validation import (_all_finite, _asarray, _to_float, check_alpha, check_alphas, check_group_ids, check_int,
                          check_n_jobs, check_seed, group_index, incomparable_ids)
from .model_selection import _permutations_within_groups, permutation_test_lpo as _single
from .online import OAPBPM, _check_labels, _declared_order

__all__ = ["DaskRankRLS", "DaskRankRLSPath", "rankrls_path", "DaskRankRLSCV", "permutation_test_lpo", "fit_oapbpm"]

_TREE_FAN_IN = 8

# numpydoc entries of the inputs that the functions and methods here share (``%(dask_X)s`` placeholders)
_DOCS = {
    "dask_X": """X : {dask array, dask dataframe, array-like} of shape (n_samples, n_features)
    Dense rows with known row chunks (else ValueError: ``X.compute_chunk_sizes()`` first); dask dataframes
    among X, y and groups must be partitioned alike; a scipy.sparse matrix, or chunks that are, raises TypeError.""",
    "dask_y": """y : {dask array, dask dataframe or series, array-like} of shape (n_samples,) or (n_samples, n_outputs)
    Target scores, aligned with X's rows.""",
    "dask_groups": """groups : {dask array, dask series, array-like} of shape (n_samples,) or None, default=None
    Query id of each row, in any order (a group may straddle partitions); None: every pair of rows is
    compared.""",
    "local_X": """X : {dask array, dask dataframe, array-like} of shape (n_samples, n_features)
    Dense rows, computed and held in memory by every task (the exact CV needs the full kernel); a
    scipy.sparse matrix raises TypeError.""",
    "predict_X": """X : {dask array, dask dataframe, array-like} of shape (n_samples, n_features)
    Rows to score (unknown row chunk sizes are accepted); a block with NaN or infinity raises ValueError, a
    scipy.sparse block TypeError, when it is computed.""",
}


# -- Input: dask arrays / dataframes aligned by rows -------------------------------------------
def _is_dask_frame(obj):
    return hasattr(obj, "to_dask_array") and hasattr(obj, "npartitions")


def _is_lazy(obj):
    return isinstance(obj, da.Array) or _is_dask_frame(obj)


def _frame_lengths(*objs):
    """Partition lengths shared by the dask dataframes/series among ``objs`` (None if there are
    none), counted on the narrowest of them so that a column read from e.g. Parquet suffices."""
    frames = [o for o in objs if _is_dask_frame(o)]
    if not frames:
        return None
    if len({f.npartitions for f in frames}) > 1:
        raise ValueError("X, y and groups dataframes/series have different numbers of partitions "
                         f"({[f.npartitions for f in frames]}); they must be partitioned alike (rows aligned)")
    narrow = min(frames, key=lambda f: len(getattr(f, "columns", ())))
    return tuple(int(k) for k in narrow.map_partitions(len).compute())


def _as_dask(obj, name, ndim_allowed, *, lengths=None, allow_unknown=False):
    """A dask array with known row chunks (dataframes/series take ``lengths``, or count them)."""
    if _is_dask_frame(obj):
        obj = obj.to_dask_array(lengths=None if allow_unknown else (lengths if lengths is not None else True))
    elif not isinstance(obj, da.Array):
        obj = da.from_array(_dense_array(obj, name), chunks=-1)  # one block; _aligned gives it X's row chunks
    if obj.ndim not in ndim_allowed:
        hint = f" Reshape your data: {name}.reshape(-1, 1) for one feature, {name}.reshape(1, -1) for one row." \
            if ndim_allowed == (2,) else ""
        raise ValueError(f"{name} must have {' or '.join(map(str, ndim_allowed))} dimension(s), got shape "
                         f"{obj.shape}.{hint}")
    if not allow_unknown and np.isnan(obj.shape[0]):  # the sum of the row chunks: NaN if any is
        raise ValueError(f"{name} has unknown chunk sizes (NaN row chunks, e.g. from a dataframe's .values or boolean "
                         f"indexing); call {name}.compute_chunk_sizes() or use .to_dask_array(lengths=True) first")
    if obj.ndim == 2 and len(obj.chunks[1]) > 1:
        obj = obj.rechunk({1: -1})  # whole rows in every block; rows are never moved between blocks
    return obj


def _dense_array(obj, name):
    """``obj`` as a numpy array; a scipy.sparse matrix refused by name (numpy would make it a 0-d object array)."""
    _refuse_sparse(obj, name, f"call {name}.toarray()")
    return _asarray(obj, name)


_DENSE_CHUNKS = "make the chunks dense ({}.map_blocks(lambda b: b.toarray(), dtype=float))"


def _refuse_sparse(obj, what, densify):
    if sp.issparse(obj):
        raise TypeError(f"{what} is a scipy.sparse matrix; fastrank.dask takes dense dask or numpy arrays and "
                        f"dataframes: {densify}, or fit fastrank.RankRLS, which takes sparse X, in memory")


def _aligned(X, other, name, lengths=None):
    """``other`` with X's row chunks (rechunking a target/group column is cheap; X is never moved)."""
    if other is None:
        return None
    other = _as_dask(other, name, (1, 2), lengths=lengths)
    if other.shape[0] != X.shape[0]:
        raise ValueError(f"{name} has {other.shape[0]} rows but X has {X.shape[0]}; {name} must be aligned with X's "
                         "rows")
    return other if other.chunks[0] == X.chunks[0] else other.rechunk({0: X.chunks[0]})


def _blocks(arr):
    return list(arr.to_delayed().reshape(-1))


def _offsets(X):
    return np.concatenate([[0], np.cumsum(X.chunks[0])]).astype(np.int64)


def _where(i, start, rows):
    return f"partition {i}" if start is None else f"partition {i} (rows {start}:{start + rows})"


def _check_block(i, start, A, name, n_cols=None):
    """A partition as a C-ordered float64 matrix, refused by name with its first bad row (global where the partition's
    rows are known) and, given ``n_cols`` (the array's declared width), a width that differs from it."""
    block = f"{name} {_where(i, start, A.shape[0])}"
    _refuse_sparse(A, block, _DENSE_CHUNKS.format(name))
    A = np.ascontiguousarray(_to_float(A, block, first_row=start or 0), dtype=np.float64)
    if A.ndim == 1:  # a 1-D y
        A = A.reshape(-1, 1)
    if n_cols is not None and A.shape[1] != n_cols:
        raise ValueError(f"{block} has {A.shape[1]} columns, but the dask array declares {n_cols}: its chunks must "
                         "have the declared shape")
    if A.size and not _all_finite(A):
        bad = int(np.flatnonzero(~np.isfinite(A).all(axis=1))[0])
        at = f"local row {bad}" if start is None else f"row {bad + start}"
        raise ValueError(f"{block} contains NaN or infinity (first at {at})")
    return A


def _check_partition_rows(name, i, start, rows, n_x):
    if rows != n_x:
        raise ValueError(f"{name} {_where(i, start, rows)} has {rows} rows but the matching X partition has {n_x}; "
                         f"{name} must be aligned with X's rows")


def _group_counts_block(i, start, g):
    g = np.asarray(g)  # 1-D: _prepare refuses groups of another shape
    check_group_ids(g, f"groups {_where(i, start, g.size)}", start or 0)
    try:
        return np.unique(g, return_counts=True)
    except TypeError:
        raise incomparable_ids(g, f"group ids in {_where(i, start, g.size)}") from None


def _merge_counts(*parts):
    ids, cnt = (np.concatenate([p[k] for p in parts]) for k in (0, 1))  # _tree passes one part or more
    try:
        u, inv = np.unique(ids, return_inverse=True)
    except TypeError:  # each partition's ids are of one type, but not the same one
        raise incomparable_ids(ids, "group ids of different partitions") from None
    return u, np.bincount(inv, weights=cnt, minlength=u.size).astype(np.int64)


def _tree(parts, combine):
    """Tree reduction of delayed parts (fan-in 8): memory on any node stays O(fan-in x part)."""
    parts = list(parts)
    while len(parts) > 1:
        parts = [dask.delayed(combine, pure=True)(*parts[k:k + _TREE_FAN_IN])
                 for k in range(0, len(parts), _TREE_FAN_IN)]
    return parts[0]


# -- Per-group sufficient statistics of F^T L F, F^T L Y ---------------------------------------
def _indicator(inv, k):
    return sp.csr_matrix((np.ones(inv.size), (inv, np.arange(inv.size))), shape=(k, inv.size))


_GROUPS_CHANGED = ("groups gave other ids in the second pass over the data than in the first (a dask array of "
                   "impure tasks?); compute or persist groups first")


_PIECE_VALUES = 1 << 21  # features formed at once by a task (16 MiB)


def _partition_stats(i, start, Xp, Yp, gp, table, weighting, feature, n_jobs, n_features):
    """One partition: sum over its groups of w(n_q) x centred scatter, plus partial groups."""
    # A compute region of the task's own process (one BLAS thread per scatter, measured in docs/design/dask.md; the
    # kernel's n_jobs resolved on this worker's cores): the client holds none while it waits, which an in-process task
    # would wait for ever.
    n_threads = 1 if feature is None else check_n_jobs(n_jobs)
    with compute_region(n_threads):
        feature = feature and functools.partial(feature, n_threads=n_threads)
        Xp = _check_block(i, start, Xp, "X", n_features)
        Yp = _check_block(i, start, Yp, "y")
        # the targets in units of a power of two at their largest magnitude (exact; _combine_stats brings the
        # partitions to one unit): X^T L y of features near 1e-150 and targets near 1e-170 is otherwise subnormal
        top = np.max(np.abs(Yp), initial=0.0)
        e = int(np.frexp(top)[1]) if top > 0 else -(10**6)  # all zero: any unit, and never the largest
        Yp = np.ldexp(Yp, -e)
        rows = Yp.shape[0]
        _check_partition_rows("y", i, start, rows, Xp.shape[0])
        ids, counts = table
        if gp is None:
            codes = np.zeros(rows, np.int64)
        else:
            gp = np.asarray(gp)  # its ids were checked by _group_table's pass
            _check_partition_rows("groups", i, start, gp.shape[0], rows)
            codes = np.searchsorted(ids, gp)
            if codes.size and (codes.max() == ids.size or (ids[np.minimum(codes, ids.size - 1)] != gp).any()):
                raise ValueError(_GROUPS_CHANGED)
        # pieces of about 2^21 features merged as partitions are: a task holds O(|R|^2), not rows x |R| (dask.md)
        step = max(1, _PIECE_VALUES // (Xp.shape[1] if feature is None else feature.keywords["X"].shape[0]))
        state = None
        for lo in range(0, max(rows, 1), step):
            b = slice(lo, lo + step)
            piece = _piece_stats(Xp[b], Yp[b], codes[b], counts, e, weighting, feature)
            state = piece if state is None else _combine_stats(weighting, state, piece)
        return state


def _piece_stats(Xp, Yp, codes, counts, e, weighting, feature):
    """The statistics of a piece of a partition (checked rows, targets in units of 2^e, group codes)."""
    F = Xp if feature is None else feature(Xp)
    u, first, inv, n_loc = np.unique(codes, return_index=True, return_inverse=True, return_counts=True)
    P = _indicator(inv, u.size)
    rx, ry = ((P @ A) / n_loc[:, None] for A in (F, Yp))
    nq = counts[u]
    # Per-group weight w(n_q) = c_q n_q of the Laplacian block L_q = c_q (n_q I - 1 1^T) = w(n_q) (I - 1 1^T / n_q),
    # c_q the pair weight of the in-memory RankRLS (fastrank._problem).
    w = pair_weights(nq, weighting) * nq
    sw = np.sqrt(w)[inv][:, None]
    # Centred inside the piece of each group, in two passes: under a large common offset (features or targets around
    # 1e9 varying by units) the means rx, ry are off by ~eps |mean|, the rows minus them exact and their means mx, my
    # the correction, sum_i w (z_i - m)(z_i - m)^T = sum_i w z_i z_i^T - w n m m^T.
    Z = rx[inv]
    np.subtract(F, Z, out=Z)
    Zy = Yp - ry[inv]
    mx, my = ((P @ A) / n_loc[:, None] for A in (Z, Zy))
    Z *= sw
    Zy *= sw
    wm = (w * n_loc)[:, None] * mx
    part = n_loc < nq  # groups that continue in other pieces
    # Ties checked exactly, as in memory: "sp", a target differs from its piece's first one (y0); "spread", an
    # output column differs inside a finished group
    y0 = Yp[first]
    sp = (P @ (Yp != y0[inv])) > 0
    return {"M": Z.T @ Z - wm.T @ mx, "R": Z.T @ Zy - wm.T @ my, "e": e, "spread": np.any(sp[~part], axis=0),
            "codes": u[part], "n": n_loc[part], "nq": nq[part], "mx": mx[part], "my": my[part], "rx": rx[part],
            "ry": ry[part], "y0": y0[part], "sp": sp[part]}


def _combine_stats(weighting, *states):
    """Sum the scatters and merge partial groups (Chan's update: the between-piece scatter sum_p n_p (mean_p -
    mean)(mean_p - mean)^T about the merged mean, weighted by w(n_q)); a piece's mean is rx + mx (ry + my), kept in two
    parts for the digits, and a merged group's relative to the reference rx (ry) of its first piece.  What is linear in
    y is first taken to the largest unit 2^e of the states (exact: a power of two)."""
    e = max(s["e"] for s in states)
    states = [{**s, **{k: np.ldexp(s[k], s["e"] - e) for k in ("R", "my", "ry", "y0")}} for s in states]
    out = {k: sum(s[k] for s in states) for k in ("M", "R")}
    out["e"] = e
    codes, n, nq, mx, my, rx, ry, y0, sp = (np.concatenate([s[k] for s in states])
                                            for k in ("codes", "n", "nq", "mx", "my", "rx", "ry", "y0", "sp"))
    u, first, inv = np.unique(codes, return_index=True, return_inverse=True)
    mx = mx + (rx - rx[first][inv])
    my = my + (ry - ry[first][inv])
    sp = sp | (y0 != y0[first][inv])  # a piece's targets differ from the group's first one
    rx, ry, y0 = rx[first], ry[first], y0[first]
    P = _indicator(inv, u.size)
    sp = (P @ sp) > 0
    ntot = P @ n.astype(np.float64)
    gx, gy = ((P @ (n[:, None] * A)) / ntot[:, None] for A in (mx, my))
    s = np.sqrt(pair_weights(nq, weighting) * nq * n)[:, None]
    Dx = (mx - gx[inv]) * s
    Dy = (my - gy[inv]) * s
    out["M"] += Dx.T @ Dx
    out["R"] += Dx.T @ Dy
    ntot = np.rint(ntot).astype(np.int64)
    nq_u = nq[first]
    keep = ntot < nq_u  # complete groups are finished
    out["spread"] = np.any([s["spread"] for s in states] + [np.any(sp[~keep], axis=0)], axis=0)
    out.update(codes=u[keep], n=ntot[keep], nq=nq_u[keep], mx=gx[keep], my=gy[keep], rx=rx[keep], ry=ry[keep],
               y0=y0[keep], sp=sp[keep])
    return out


def _prepare(X, y, groups=None):
    if y is None:
        raise ValueError("This estimator requires y to be passed, but the target y is None")
    lengths = _frame_lengths(X, y, groups)
    X = _as_dask(X, "X", (2,), lengths=lengths)
    Y = _aligned(X, y, "y", lengths)
    G = _aligned(X, groups, "groups", lengths)
    if G is not None and G.ndim != 1:
        raise ValueError(f"groups must be 1-D with one id per row, got shape {G.shape}")
    return X, Y, G


def _group_table(X, G):
    """(sorted ids, global counts): a first pass over the group ids only (or none without groups)."""
    if G is None:
        return np.array([0]), np.array([X.shape[0]], np.int64)
    offs = _offsets(X)
    parts = [dask.delayed(_group_counts_block, pure=True)(i, int(offs[i]), g) for i, g in enumerate(_blocks(G))]
    ids, counts = dask.compute(_tree(parts, _merge_counts))[0]
    raise_without_preferences(counts)
    return ids, counts


def _statistics(X, Y, G, table, weighting, feature, n_jobs=None):
    """The assembled ``F^T L F`` (symmetrised), ``F^T L Y`` in units of 2^e, and e; raises when every target is
    tied."""
    offs = _offsets(X)
    gblocks = _blocks(G) if G is not None else [None] * X.numblocks[0]
    table_d, feat_d = dask.delayed(table, pure=True), dask.delayed(feature, pure=True)
    parts = [dask.delayed(_partition_stats, pure=True)(i, int(offs[i]), xb, yb, gb, table_d, weighting, feat_d, n_jobs,
                                                       X.shape[1])
             for i, (xb, yb, gb) in enumerate(zip(_blocks(X), _blocks(Y), gblocks))]
    stats = dask.compute(_tree(parts, functools.partial(_combine_stats, weighting)))[0]
    if stats["codes"].size:  # rows of a group missing: the second pass read other ids than the first
        raise ValueError(_GROUPS_CHANGED)
    raise_without_preferences(None, ~stats["spread"], G is not None)
    M = stats["M"]  # every target tied (all 0, whose unit is the placeholder) is refused above
    return 0.5 * (M + M.T), stats["R"], stats["e"]  # exact symmetry for the symmetric solver; R in units of 2^e


# -- Estimator ---------------------------------------------------------------------------------
def _predict_block(block, coef, spec, XR, n_jobs, one_d, block_info):
    start = block_info[0]["array-location"][0][0]  # dask's map_blocks fills block_info; NaN in unknown chunks
    start = int(start) if start is not None and np.isfinite(start) else None
    n_features = coef.shape[0] if XR is None else XR.shape[1]
    B = _check_block(block_info[0]["chunk-location"][0], start, block, "X", n_features)
    # identical rows of a block tie (as in memory, _kernels.row_products / by_distinct_rows)
    n_threads = check_n_jobs(n_jobs)  # the task's own process's cores, as _partition_stats
    with compute_region(n_threads):
        out = (row_products(B, coef) if XR is None else
               by_distinct_rows(functools.partial(spec.predict, X=XR, coef=coef, n_threads=n_threads), B))
    require_finite_scores("DaskRankRLS", out, "predict")  # lazily, when the block is computed
    return out[:, 0] if one_d else out


class _MultiOutput:
    """scikit-learn's tag of estimators that take y (m, v), as the in-memory RankRLS and RankRLSCV do: a column
    vector y (m, 1) is one output, not raveled with a DataConversionWarning."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags


class DaskRankRLS(_MultiOutput, KernelMixin, RegressorMixin, FastrankEstimator):
    """RankRLS fitted exactly on dask arrays / dataframes (linear primal or subset of regressors).

    The fit equals the in-memory :class:`fastrank.RankRLS` with the same parameters (the linear kernel as
    ``solver="primal"``; a kernel with ``basis_vectors`` as its subset-of-regressors fit, with the same basis rows for
    the same ``random_state``) up to rounding.  Rows are never shuffled between workers: one pass over the group ids
    (when ``groups`` is given), one over the data (plus one over the partitions holding the basis rows).

    Parameters
    ----------
    alpha : float, default=1.0
        Regularization (the paper's lambda, not rescaled), > 0.
    kernel : {"linear", "rbf"/"gaussian", "poly"/"polynomial"}, default="linear"
        ``x.z``, ``exp(-gamma |x - z|^2)`` or ``(gamma x.z + coef0) ** degree``, as for :class:`fastrank.RankRLS`.  A
        kernel other than "linear" needs ``basis_vectors`` (the dense dual needs the whole m x m kernel on one
        machine); "precomputed" is not supported (ValueError at fit).
    %(gamma)s %(degree)s %(coef0)s %(group_weighting)s
    basis_vectors : int, array of row indices, or None, default=None
        Subset-of-regressors RankRLS (eqs. 40-42): an int draws that many basis rows at random (``random_state``); an
        array gives them.  None: the linear primal (eq. 28; linear kernel only).
    %(random_state)s
    n_jobs : int or None, default=None
        Threads of the kernel evaluations inside each task (fit and predict), counted on the worker that runs the
        task: None or -1 every usable core, -2 all but one, k > 0 k threads.

    Attributes
    ----------
    fit_mode_ : "primal" or "sparse"
    coef_ : ndarray (n,) or (n, v), or None (non-linear kernel)
    dual_coef_ : ndarray (|R|,) or (|R|, v), or None (linear primal)
    basis_indices_, X_fit_ : basis rows (sparse mode)
    n_features_in_ : int
    """

    def __init__(self, alpha=1.0, *, kernel="linear", gamma=None, degree=3, coef0=1.0,
                 group_weighting="unweighted", basis_vectors=None, random_state=None, n_jobs=None):
        self._store_params(locals())

    def _fit_path(self, X, y, groups, alphas):
        """(X, Y as dask arrays, the solver layer's :class:`Fit` for every alpha, the number of query groups)."""
        X, Y, G = _prepare(X, y, groups)
        if X.shape[0] < 2:
            raise ValueError(f"Found array with {X.shape[0]} sample(s) while a minimum of 2 is required.")
        n = X.shape[1]
        if n < 1:
            raise ValueError(f"Found array with 0 feature(s) (shape={X.shape}) while a minimum of 1 is required.")
        check_weighting(self.group_weighting)
        if self._precomputed():
            raise ValueError("kernel='precomputed' is not supported on dask inputs (the kernel matrix is m x m); "
                             "give features and a kernel name with basis_vectors")
        spec = self._kernel_spec(n)
        if not spec.linear and self.basis_vectors is None:
            raise ValueError("a non-linear kernel on dask inputs needs basis_vectors=<int or indices> (subset of "
                             "regressors, eqs. 40-42): the dense dual needs the whole m x m kernel on one machine; use "
                             "fastrank.RankRLS in memory for it")
        n_threads = check_n_jobs(self.n_jobs)
        table = _group_table(X, G)
        weighting = self.group_weighting if G is not None else "unweighted"  # object ranking: every pair weighs 1
        if self.basis_vectors is None:
            check_dense_memory(n, 1, "feature matrix X^T L X")
            M, R, e = _statistics(X, Y, G, table, weighting, None)
            return X, Y, Fit("primal", coef=np.ldexp(solve_assembled_primal(M, R, alphas), e)), table[0].size
        basis = select_basis(X.shape[0], self.basis_vectors, self.random_state)
        check_dense_memory(basis.size, 2, "basis system K_R^T L K_R")
        XR = _take_rows(X, basis)
        KRR = spec.cross(XR, XR, n_threads)
        # the feature map of subset-of-regressors RankRLS: F = K(X, X_R)
        H, g, e = _statistics(X, Y, G, table, weighting, functools.partial(spec.cross, X=XR), self.n_jobs)
        A = np.ldexp(solve_assembled_basis(H, g, 0.5 * (KRR + KRR.T), alphas), e)
        coef = np.stack([basis_primal_weights(XR, a) for a in A]) if spec.linear else None
        return X, Y, Fit("sparse", coef=coef, dual_coef=A, X_fit=XR, basis_indices=basis), table[0].size

    @with_param_docs(_DOCS)
    def fit(self, X, y, groups=None):
        """Fit from scores ``y``: one pass over the group ids (with ``groups``), one over the data.

        %(Parameters)s %(dask_X)s %(dask_y)s %(dask_groups)s %(Returns)s
        self : object
            The fitted estimator.
        """
        X, Y, fit, n_groups = self._fit_path(X, y, groups, np.array([check_alpha(self.alpha)]))
        self._apply_fit(fit, 0, Y.ndim == 1, X.shape[1])
        self.n_fit_groups_ = n_groups  # the evidence by which score warns without groups (as RankRLS.score)
        if self.coef_ is not None and np.any(self.coef_):  # training scores that underflow, as RankRLS warns of them
            c, tiny = self.coef_.reshape(X.shape[1], -1), np.finfo(np.float64).tiny
            if np.abs(np.asarray(X[:1024]) @ c).max(initial=0.0) < tiny:  # else no pass over the data
                score_top, x_top = dask.compute(abs(X @ c).max(), abs(X).max())
                if score_top < tiny:
                    warn_scores_underflow(self, float(score_top), float(x_top), c)
        return self

    _apply_fit = RankRLS._apply_fit  # the solver's Fit for ``alphas[k]`` copied onto the estimator

    @with_param_docs(_DOCS)
    def predict(self, X):
        """Ranking scores, one task per row block (``map_blocks``).

        %(Parameters)s %(predict_X)s %(Returns)s
        scores : dask array or ndarray of shape (n_samples,) or (n_samples, n_outputs)
            A dask array for dask input (computed when the caller computes it), numpy for other input.
        """
        check_is_fitted(self, "fit_mode_")
        Xd = _as_dask(X, "X", (2,), allow_unknown=True)  # row counts are not needed to predict
        if Xd.shape[1] != self.n_features_in_:
            raise ValueError(f"X has {Xd.shape[1]} features, but {type(self).__name__} is expecting "
                             f"{self.n_features_in_} features as input.")
        one_d = self._single_output
        if self.coef_ is not None:
            coef, spec, XR = self.coef_.reshape(self.n_features_in_, -1), None, None
        else:
            coef, spec, XR = self.dual_coef_.reshape(self.dual_coef_.shape[0], -1), self._fitted_spec(), self.X_fit_
        kw = {"drop_axis": 1} if one_d else {"chunks": (Xd.chunks[0], (coef.shape[1],))}
        check_n_jobs(self.n_jobs)  # refused here; resolved on each worker's cores
        out = Xd.map_blocks(_predict_block, coef, spec, XR, self.n_jobs, one_d, dtype=np.float64,
                            meta=np.empty((0,) if one_d else (0, 0)), **kw)
        return out if _is_lazy(X) else out.compute()

    def to_local(self):
        """The equivalent fitted in-memory :class:`fastrank.RankRLS` (no refit).

        Returns
        -------
        model : RankRLS
            A fitted model with this one's parameters and coefficients (its ``solver`` "primal" for a primal fit).
        """
        check_is_fitted(self, "fit_mode_")
        est = RankRLS(**self.get_params(deep=False), solver="primal" if self.fit_mode_ == "primal" else "auto")
        as_path = (lambda a: None if a is None else a.reshape(a.shape[0], -1)[None])  # (1, rows, v)
        fit = Fit(self.fit_mode_, coef=as_path(self.coef_), dual_coef=as_path(self.dual_coef_), X_fit=self.X_fit_,
                  basis_indices=self.basis_indices_)
        local = RankRLSPath(est, np.array([float(self.alpha)]), fit, self._single_output, self.n_features_in_,
                            fitted_kernel=self.__dict__.get("_fitted_kernel")).fitted_estimator(0)
        local.n_fit_groups_ = getattr(self, "n_fit_groups_", 1)
        if hasattr(self, "feature_names_in_"):  # the local model refuses reordered columns as this one does
            local.feature_names_in_ = self.feature_names_in_
        return local

    score = Ranker.score  # of the predictions, computed in memory, with its MissingGroupsWarning (n_fit_groups_)


def _take_rows(X, idx):
    """Rows ``idx`` of a dask array, reading only the partitions that hold them (sorted indices keep dask's take to one
    slice per partition)."""
    # Empty partitions dropped first: dask's take divides by the mean partition length, 0 when the partitions outnumber
    # the rows ("range() arg 3 must not be zero"); rechunk only merges them.
    X = X.rechunk({0: tuple(c for c in X.chunks[0] if c)})
    order = np.argsort(idx, kind="stable")
    rows = np.empty((idx.size, X.shape[1]))
    rows[order] = X[idx[order]].compute()
    if not np.isfinite(rows).all():
        raise ValueError("X contains NaN or infinity in the basis rows")
    return rows


class DaskRankRLSPath(RankRLSPath):
    """Solutions of :func:`rankrls_path` for every alpha (one decomposition on the client), with the
    attributes of :class:`fastrank.RankRLSPath`; ``fitted_estimator(k)`` is a :class:`DaskRankRLS`.

    :func:`rankrls_path` builds it; the constructor takes the solve's results.

    Parameters
    ----------
    estimator : DaskRankRLS
        The model solved; a clone is kept (``set_params`` on the original later changes nothing here).
    alphas : ndarray of shape (n_alphas,)
        The regularization values.
    fit : fastrank._solvers.Fit
        The solver's coefficients for every alpha.
    one_d : bool
        Whether y was 1-D (scores (p,) rather than (p, v)).
    n_features : int
        Number of features of the training X.
    n_groups : int, default=1
        Number of query groups of the fit (the models' ``n_fit_groups_``).
    feature_names_in : ndarray of str or None, default=None
        The column names of a DataFrame X; the models then refuse its columns in another order.
    fitted_kernel : tuple or None, default=None
        The kernel the fit used (kind, gamma, degree, coef0); None: read from ``estimator``.
    """

    @with_param_docs(_DOCS)
    def predict(self, X):
        """Scores for every alpha, stacked.

        %(Parameters)s %(predict_X)s %(Returns)s
        scores : dask array or ndarray of shape (n_alphas, n_samples) or (n_alphas, n_samples, n_outputs)
            A dask array for dask input, numpy for other input.
        """
        outs = [self.fitted_estimator(k).predict(X) for k in range(len(self))]
        return da.stack(outs) if isinstance(outs[0], da.Array) else np.stack(outs)


@with_param_docs(_DOCS)
def rankrls_path(X, y, alphas, *, groups=None, estimator=None):
    """Exact RankRLS for every alpha from one pass over the data and one decomposition on the client: O(n^3) (linear,
    eq. 31 in feature space) or O(|R|^3) (basis vectors, eq. 42).

    Parameters
    ----------
    %(dask_X)s %(dask_y)s
    alphas : float or array-like of shape (n_alphas,)
        The regularization values, each > 0.
    %(dask_groups)s
    estimator : DaskRankRLS or None, default=None
        Gives the kernel, basis and group weighting; its alpha is ignored.  None: ``DaskRankRLS()``; another type
        raises TypeError.

    Returns
    -------
    path : DaskRankRLSPath
        The solution for every alpha.
    """
    est = DaskRankRLS() if estimator is None else estimator
    if not isinstance(est, DaskRankRLS):
        raise TypeError("estimator must be a fastrank.dask.DaskRankRLS")
    alphas = check_alphas(alphas)
    Xd, Y, fit, n_groups = est._fit_path(X, y, groups, alphas)
    return DaskRankRLSPath(est, alphas, fit, Y.ndim == 1, Xd.shape[1], n_groups, feature_names(X))


# -- Model selection and ensembles: independent tasks ------------------------------------------
def _default_blocks():
    try:
        from distributed import default_client

        return max(1, len(default_client().scheduler_info()["workers"]))
    except (ImportError, ValueError):
        return 1


def _local(**arrays):
    """The arrays in memory (dask ones computed) in the order given, numpy's errors naming them; None stays None; a dask
    array of scipy.sparse chunks refused before it is computed."""
    for k, a in arrays.items():
        _refuse_sparse(getattr(a, "_meta", None) if _is_lazy(a) else None, k, _DENSE_CHUNKS.format(k))
    return [None if a is None else _dense_array(a.compute() if _is_lazy(a) else a, k) for k, a in arrays.items()]


def _cv_task(params, X, y, groups):
    return RankRLSCV(**params).fit(X, y, groups)


class DaskRankRLSCV(_MultiOutput, RegressorMixin, FastrankEstimator):
    """Kernel-parameter x alpha search by fastrank's exact cross-validation, one task per ``gammas`` value, each running
    :class:`fastrank.RankRLSCV` (one factorization for the whole ``alphas`` grid) on one worker: the result equals a
    loop of ``RankRLSCV`` over ``gammas`` on one machine.  The best pair is the first best score (the maximum, or the
    minimum for a loss such as ``"disagreement"`` or ``"msd"``, as in ``RankRLSCV``) in gamma-major order.

    Parameters
    ----------
    gammas : array-like of float > 0 or None, default=None
        The kernel scales searched, one task each; None: ``np.logspace(-2, 2, 5) / n_features``, around the kernel's
        default ``gamma`` of 1 / n_features (one task for the linear kernel, which has no gamma).
    alphas : array-like of float > 0 or None, default=None
        The regularization grid of every task's :class:`fastrank.RankRLSCV`; None: ``np.logspace(-3, 3, 13)``.
    cv : None, "lpo", "lgo", int, (m,) fold labels, sequence of index arrays, or a splitter, default=None
        As for :class:`fastrank.RankRLSCV`; None: leave-one-group-out with ``groups``, else leave-pair-out.  A generator
        of splits is read once at fit and every task gets all of them.
    scoring : a measure name, a scorer, a callable or None, default=None
        As for :class:`fastrank.RankRLSCV` (None: "auc").
    kernel : {"rbf"/"gaussian", "poly"/"polynomial", "linear"}, default="rbf"
        The kernel whose ``gamma`` is searched; "precomputed" raises ValueError at fit (no gamma to search).
    %(degree)s %(coef0)s %(group_weighting)s %(n_jobs)s
        Passed to each task's :class:`fastrank.RankRLSCV`.

    Attributes
    ----------
    gamma_, alpha_, best_score_ : float
        The best pair and its score.
    best_estimator_ : RankRLS
        The model on all data at the best pair (the winning task's refit; no extra fit).
    cv_results_ : dict
        "gammas", "alphas", "scores" (n_gammas, n_alphas) and "scoring".
    n_features_in_ : int
    """

    def __init__(self, gammas=None, alphas=None, *, cv=None, scoring=None, kernel="rbf", degree=3, coef0=1.0,
                 group_weighting="unweighted", n_jobs=None):
        self._store_params(locals())

    @with_param_docs(_DOCS)
    def fit(self, X, y, groups=None):
        """Score every (gamma, alpha) pair by exact cross-validation and keep the best model.

        Parameters
        ----------
        %(local_X)s
        y : {dask array, dask dataframe or series, array-like} of shape (n_samples,) or (n_samples, n_outputs)
            Target scores, held in memory by every task.
        groups : {dask array, dask series, array-like} of shape (n_samples,) or None, default=None
            Query id of each row, held in memory by every task; restricts the pairs to queries and, with ``cv=None``,
            makes the estimate leave-one-group-out.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        if self.kernel == "precomputed":  # no gamma to search; scikit-learn's splitters would also cut K by rows only
            raise ValueError("DaskRankRLSCV: kernel='precomputed' has no gamma to search; use fastrank.RankRLSCV "
                             "with the kernel matrix")
        gammas = None if self.gammas is None else check_alphas(self.gammas, "gammas")
        X, y, groups = _local(X=X, y=y, groups=groups)
        if gammas is None:  # around the kernel's default gamma, 1 / n_features (RankRLSCV refuses X that is not 2-D)
            n_features = max(X.shape[1], 1) if X.ndim == 2 else 1
            gammas = (np.ones(1) if self.kernel == "linear" else np.logspace(-2, 2, 5)) / n_features
        Xd, yd, gd = (dask.delayed(a) for a in (X, y, groups))
        base = {k: v for k, v in self.get_params(deep=False).items() if k != "gammas"}
        if isinstance(base["cv"], Iterator):  # a generator of folds, read once here: every gamma's task gets them all
            base["cv"] = list(base["cv"])
        tasks = [dask.delayed(_cv_task, pure=True)({**base, "gamma": float(g)}, Xd, yd, gd) for g in gammas]
        fits = dask.compute(*tasks)
        scores, first = np.stack([f.cv_results_["scores"] for f in fits]), fits[0].cv_results_
        # compared as each search compares (the units of y are the same for every gamma): costs of targets near 1e-170
        # reported in the units of y underflow to 0, and the first value would be kept
        units = np.stack([f._scores_in_units for f in fits])
        kg, ka = np.unravel_index(np.argmax(units) if first["greater_is_better"] else np.argmin(units), units.shape)
        self.gamma_ = float(gammas[kg])
        self.alpha_ = float(fits[kg].cv_results_["alphas"][ka])
        self.best_score_ = float(scores[kg, ka])
        self.cv_results_ = {"gammas": gammas, "alphas": first["alphas"].copy(), "scores": scores,
                            "scoring": first["scoring"]}
        # The winning task already refitted its best alpha on all data: same model, no extra fit.
        self.best_estimator_ = fits[kg].best_estimator_
        self.n_features_in_ = self.best_estimator_.n_features_in_
        self.n_fit_groups_ = fits[kg].n_fit_groups_
        return self

    def predict(self, X):
        """Scores of ``best_estimator_``, in memory.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Rows to score, as :meth:`fastrank.RankRLS.predict` takes them.

        Returns
        -------
        scores : ndarray of shape (n_samples,) or (n_samples, n_outputs)
            Ranking scores (higher ranks higher).
        """
        check_is_fitted(self, "best_estimator_")
        return self.best_estimator_.predict(X)

    score = Ranker.score  # of best_estimator_'s predictions, with its MissingGroupsWarning (n_fit_groups_)


@with_param_docs(_DOCS)
def permutation_test_lpo(estimator, X, y, n_permutations=100, random_state=None, groups=None, scoring="auc",
                         *, n_blocks=None):
    """:func:`fastrank.model_selection.permutation_test_lpo` in blocks of permutations on dask.

    The result is the single-machine one for the same ``random_state``: the client walks the random stream (O(m) per
    draw) and hands each task the generator state at the start of its block.  Each task repeats the O(m^3)
    decomposition (the exact LPO needs the full kernel on one machine) and scores its permutations as extra outputs of
    it: B blocks cost B decompositions plus the same pair phase, split over the workers.

    Parameters
    ----------
    estimator : RankRLS or MPRank
        The model whose leave-pair-out AUC is tested (another type raises TypeError).  With ``basis_vectors`` and no
        int ``random_state``, a seed is drawn here so that every block scores the same basis.
    %(local_X)s
    y : {dask array, dask series, array-like} of shape (n_samples,)
        Target scores; another number of dimensions raises ValueError.
    n_permutations : int, default=100
        Number of permutations of y, >= 1.
    random_state : int, RandomState or None, default=None
        Seed of the permutations.
    groups : {dask array, dask series, array-like} of shape (n_samples,) or None, default=None
        Query id of each row: y is permuted within each query.
    scoring : {"auc"}, default="auc"
        The pooled LPO AUC (1 - pairwise disagreement); another value raises ValueError.
    n_blocks : int or None, default=None
        Blocks of permutations, one task each (at most ``n_permutations``); None: one block per worker of the active
        distributed client (1 without).

    Returns
    -------
    score : float
        The LPO AUC of y.
    permutation_scores : ndarray of shape (n_permutations,)
        The LPO AUC of every permutation.
    pvalue : float
        ``(#{permutation_scores >= score} + 1) / (n_permutations + 1)``.
    """
    n_permutations = check_int(n_permutations, "n_permutations", low=1)
    X, y, groups = _local(X=X, y=y, groups=groups)
    if y is None or y.ndim != 1:
        raise ValueError("permutation_test_lpo needs a 1-D y")
    n_blocks = min(check_int(_default_blocks() if n_blocks is None else n_blocks, "n_blocks", low=1), n_permutations)
    gi = group_index(groups, y.shape[0])  # groups=None: one group of every row
    rng = check_seed(random_state)
    block_sizes = np.diff(np.linspace(0, n_permutations, n_blocks + 1).round().astype(int)).tolist()
    # a task's targets and permutations, checked before the client walks the stream (as the single-machine call)
    check_dense_memory(y.shape[0], 2, "targets of y and its permutations", n_cols=max(block_sizes) + 1)
    params = estimator.get_params(deep=False) if hasattr(estimator, "get_params") else {}
    if params.get("basis_vectors") is not None and not isinstance(params.get("random_state"), numbers.Integral):
        # every block scores the one model: its random basis drawn once, here
        seed = int(check_seed(params.get("random_state")).randint(2**31 - 1))
        estimator = clone(estimator).set_params(random_state=seed)
    Xd, yd, gd, ed = dask.delayed(X), dask.delayed(y), dask.delayed(groups), dask.delayed(estimator)
    tasks = []
    for k in block_sizes:
        state = copy.deepcopy(rng)  # the generator at the start of the block
        tasks.append(dask.delayed(_single, pure=True)(ed, Xd, yd, k, state, gd, scoring))  # (score, perm, p-value)
        for _ in _permutations_within_groups(rng, gi, k):  # consume exactly the block's draws
            pass
    results = dask.compute(*tasks)
    score = float(results[0][0])
    perm_scores = np.concatenate([r[1] for r in results])
    pvalue = (np.count_nonzero(perm_scores >= score) + 1.0) / (n_permutations + 1.0)
    return score, perm_scores, float(pvalue)


def _oap_block_step(est, Xc, yc):
    Xc = np.asarray(Xc)
    return est if Xc.shape[0] == 0 else est.partial_fit(Xc, np.asarray(yc))


@with_param_docs(_DOCS)
def fit_oapbpm(estimator, X, y, *, classes=None, n_blocks=None):
    """A linear :class:`fastrank.OAPBPM` fitted with its members split into blocks trained as separate dask tasks:
    identical (members, averaged weights and thresholds, predictions) to ``estimator.fit(X, y)`` for the same
    ``random_state``.

    Each block's chain of ``partial_fit`` tasks streams the row blocks of X in order (a dask array is never gathered),
    seeded by :meth:`fastrank.OAPBPM.member_blocks`.

    Parameters
    ----------
    estimator : OAPBPM
        Gives the parameters; linear kernel and ``shuffle=False`` only (else ValueError; another type raises
        TypeError).
    %(dask_X)s
    y : {dask array, dask series, array-like} of shape (n_samples,)
        Ordinal labels, one per row of X (not 1-D raises ValueError).
    classes : array-like or None, default=None
        The ordered label set; None: the sorted distinct labels of y (one pass over y), or the categories of an
        ordered categorical y in their declared order.
    n_blocks : int or None, default=None
        Member blocks, one chain of tasks each (at most ``n_estimators``); None: one per worker of the active
        distributed client (1 without).

    Returns
    -------
    model : OAPBPM
        The fitted ensemble; its ``average_rank_loss_`` is NaN (docs/design/dask.md).
    """
    if not isinstance(estimator, OAPBPM):
        raise TypeError("estimator must be a fastrank.OAPBPM")
    if estimator.kernel != "linear":
        raise ValueError("fit_oapbpm supports the linear kernel only (kernel members share a support list)")
    if estimator.shuffle:
        raise ValueError("fit_oapbpm needs shuffle=False (the stream order must be the row order)")
    cat = getattr(y, "cat", None)
    if cat is not None and getattr(cat, "known", True) is False:  # dask's placeholder stood for the label set
        # one pass over y for its categories, in the order pandas gives them (sorted; dask's: as they appear)
        y = cat.as_known()
        y = y.cat.reorder_categories(sorted(y.cat.categories), ordered=y.cat.ordered)
    with warnings.catch_warnings():  # the labels as objects is the intent: their order comes from y's categories
        warnings.filterwarnings("ignore", "Dask currently has limited support for converting pandas extension dtypes")
        Xd, yd, _ = _prepare(X, y)
    if yd.ndim != 1:
        raise ValueError("y must be 1-D with one label per row of X")
    if classes is None:  # the labels checked and ordered as OAPBPM.fit takes them (e.g. no continuous targets)
        labels = yd.compute()
        _check_labels(labels, labels.shape[0])
        classes = y if _declared_order(y, None) is not None else labels
    xb, ybl = _blocks(Xd), _blocks(yd)
    states = []
    for block in estimator.member_blocks(_default_blocks() if n_blocks is None else n_blocks, classes, Xd.shape[1]):
        st = dask.delayed(copy.deepcopy, pure=True)(block)  # each task chain trains its own copy
        for _ in range(int(estimator.n_epochs)):
            for xc, yc in zip(xb, ybl):
                st = dask.delayed(_oap_block_step, pure=True)(st, xc, yc)
        states.append(st)
    return dask.compute(dask.delayed(OAPBPM.from_members, pure=True)(states))[0]._record_feature_names(X)
