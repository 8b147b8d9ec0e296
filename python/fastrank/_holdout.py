"""Exact hold-out predictions for RankRLS models with a finite feature map, without any m x m matrix.

Two model forms have one (Pahikkala et al. 2009, 004): the linear kernel, f(x) = x . w with w = (X^T L X + alpha I)^-1
X^T L y (eq. 28), and the subset of regressors (``basis_vectors``), f(x) = k(x, X_R) a with a = (K_R^T L K_R + alpha
K_RR)^-1 K_R^T L y (eq. 41): with K_RR = Z Z^T (Cholesky, or an eigendecomposition restricted to the positive
eigenvalues when K_RR is singular) the features phi(x) = Z^-1 k(X_R, x) give the linear form with ridge alpha I, f =
phi . (Z^T a).  The basis rows stay inputs of every retrained model (a held-out basis row still defines a basis
function; only its target and pairs are dropped).

With L = blockdiag(c_q (n_q I - 1 1^T)) the p x p system is a sum over groups, X^T L X = sum_q c_q n_q Xc_q^T Xc_q
(Xc_q: the group-centred rows, eq. 30).  Retraining without a set U keeps every other pair with its weight: group q
without U_q (k = n_q - |U_q| rows kept) contributes c_q k (Xc_T^T Xc_T - s_T s_T^T / k), Xc_T^T Xc_T = Xc_q^T Xc_q -
Xc_U^T Xc_U, s_T = -s_U (column sums; centring by the full group's mean leaves the kept rows' Laplacian term
unchanged).  So a set costs O(|U| p^2 + p^3) plus O(n_q p^2) per touched group's Gram matrix, and the retrained
system is solved directly, as accurate as a fit at any alpha (:func:`feature_holdout`).  Leave-group-out and
leave-pair-out run in C++ by low-rank (Woodbury) updates of one factor (fastrank/feature_cv.hpp): O(m p^2 + sum_q
n_q^2 p), and O(1) per pair after O(n_q^2 p) per group.

Arguments of the ``feature_*`` functions: ``Phi`` (m, p) array or CSR matrix, the feature map (:func:`linear_features`,
:func:`basis_features`); ``Y`` (m,) or (m, v) targets; ``codes`` (m,) int array, the group code of each row in [0,
n_groups) (all zeros: object ranking); ``alpha`` > 0; ``normalized``: pair weight 1/n_q of the FULL group (never
renormalised); ``pair_weight``: optional (n_groups,) pair weights c_q of any weighting (overrides ``normalized``);
``n_threads``; ``groups``: the GroupIndex of ``codes`` when the caller has it (used as it is: one encoding)."""

from __future__ import annotations

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from . import _core
from ._memory import densified
from ._problem import centred_in_groups, pair_weights
from ._solvers import _RCOND_WARNING, warn_ill_conditioned
from ._validation import as_targets, block_sums, group_index
from .exceptions import LinAlgError

__all__ = [
    "linear_features",
    "basis_features",
    "feature_holdout",
    "feature_leave_group_out",
    "feature_leave_pair_out",
    "feature_leave_all_pairs_out",
]


def linear_features(X):
    """The linear kernel's feature map: X itself (dense float64 or CSR, never densified)."""
    return sp.csr_matrix(X, dtype=np.float64) if sp.issparse(X) else np.ascontiguousarray(X, dtype=np.float64)


def basis_features(KR, KRR):
    """Features phi = K(X, X_R) Z^-T with Z Z^T = K_RR, and the map back to basis coefficients, from KR = K(X, X_R)
    (m, r) and KRR = K(X_R, X_R) (r, r): returns Phi (m, p), p = r (Cholesky) or the numerical rank of K_RR, and B (r,
    p) with a = B w the basis coefficients of a feature-space weight vector w."""
    KRR = 0.5 * (KRR + KRR.T)
    r = KRR.shape[0]
    try:
        Z = scipy.linalg.cholesky(KRR, lower=True)
        B = scipy.linalg.solve_triangular(Z, np.eye(r), lower=True, trans="T")  # Z^-T
    except np.linalg.LinAlgError:
        lam, U = np.linalg.eigh(KRR)
        keep = lam > max(lam.max(), 0.0) * r * np.finfo(np.float64).eps
        B = U[:, keep] / np.sqrt(lam[keep])
    return np.asarray(KR, dtype=np.float64) @ B, B


def feature_holdout(Phi, Y, codes, n_groups, alpha, sets, *, normalized=False, pair_weight=None, cells=None):
    """Exact hold-out predictions of a feature-space RankRLS (linear kernel or basis model): a list of (|U|, v) arrays,
    one per set of ``sets`` (1-D int arrays, validated: unique, in range, each leaving a training pair).  ``cells``:
    the GroupIndex of the tie cells (rows of one group with one target) of an ``exclude_ties`` model, whose group q
    has the Laplacian L_q = c_q (n_q P_B + sum_t (n_q - n_t) P_t) (:func:`_tie_terms`)."""
    (Phi, Y, _, _, cw), gi = _core_args(Phi, Y, codes, normalized, pair_weight, None)
    codes, sizes = gi.codes, gi.sizes.astype(np.float64)

    def centred(A):  # two passes: the downdates take sum_q Xc = 0, which one pass leaves off by eps |offset| per row
        return centred_in_groups(centred_in_groups(A, gi), gi)

    Xc, Yc = centred(Phi), centred(Y)  # Phi dense: p is small, the centred copy is m x p
    XY = np.hstack([Xc, Yc])  # the terms of A and b side by side: one product per term
    p = Xc.shape[1]
    if cells is not None:
        XLXY = _tie_terms(XY, p, codes, cells.codes, cw)
        XLX, XLy = XLXY[:, :p], XLXY[:, p:]
    else:
        w = np.sqrt(cw * sizes)[codes][:, None]  # S's scale s_q per row
        SX, SY = w * Xc, w * Yc
        XLX, XLy = SX.T @ SX, SX.T @ SY  # eq. 30
    worst = _factor(XLX + float(alpha) * np.eye(p))[1]
    _refuse_singular(worst, p, alpha)  # fit's verdict on the full-data system
    grams = None
    if cells is None and n_groups <= 64:  # few groups: each one's Xc_q^T [Xc_q Yc_q] once, shared by all their sets
        grams = np.stack([Xc[r].T @ XY[r] for r in gi.rows()])

    out = []
    for U in sets:
        U = np.asarray(U, dtype=np.int64)
        # per touched group q, the full group's term goes and the kept rows' term comes (module docstring): with
        # k = n - |U_q| kept rows, -c |U_q| Xc_q^T Xc_q - c k Xc_U^T Xc_U - c s_U s_U^T (the last only when k > 0)
        touched, at, held = np.unique(codes[U], return_inverse=True, return_counts=True)
        n, c = gi.sizes[touched], cw[touched]
        k = n - held
        if grams is None:  # the touched groups' rows gathered at once: O(their rows) per set, no scan of other groups
            starts = np.repeat(gi.offsets[touched] - np.cumsum(n) + n, n)
            rows = gi.order[starts + np.arange(starts.size)]
        if cells is not None:  # the touched groups' terms, recomputed without U: the tie cells change with it
            kept = rows[np.isin(rows, U, invert=True)]
            terms = _tie_terms(XY[kept], p, codes[kept], cells.codes[kept], cw) \
                - _tie_terms(XY[rows], p, codes[rows], cells.codes[rows], cw)
        elif grams is not None:
            terms = np.tensordot(-c * held, grams[touched], axes=1)
            rows, weight = U, -(c * k)[at]
        else:
            rows, weight = np.r_[rows, U], np.r_[np.repeat(-c * held, n), -(c * k)[at]]
            terms = 0.0
        if cells is None:
            terms = terms + (weight[:, None] * Xc[rows]).T @ XY[rows]
            sums = block_sums(XY[U], np.r_[0, np.cumsum(held)], np.argsort(at, kind="stable"))  # [s_U t_U] per group
            terms -= (np.where(k > 0, c, 0.0)[:, None] * sums[:, :p]).T @ sums
        A, b = XLX + terms[:, :p], XLy + terms[:, p:]
        A = 0.5 * (A + A.T)
        A[np.diag_indices_from(A)] += float(alpha)
        factor, rcond = _factor(A)  # fewer pairs than the full system: it can be worse conditioned
        _refuse_singular(rcond, p, alpha, f"the linear RankRLS system of hold-out set {len(out)} (the training data "
                         "without it)", "")
        worst = min(worst, rcond)
        out.append(Phi[U] @ scipy.linalg.lapack.dpotrs(factor, b, lower=1)[0])
    _warn_ill_conditioned(worst, alpha)
    return out


def _tie_terms(XY, p, codes, cell_codes, cw):
    """X^T L [X Y] over the rows XY = [X Y] (p columns of X) of their groups (``codes``) and tie cells
    (``cell_codes``), with the tie-excluding L_q = c_q (n_q P_B + sum_t (n_q - n_t) P_t) of the groups as these rows
    make them up: c_q n_q n_t (mean_t - mean_q) (..)^T per cell and c_q (n_q - n_t) (x_i - mean_t) (..)^T per row, every
    weight >= 0 (no cancellation where most pairs tie)."""
    group, g_of = np.unique(codes, return_inverse=True)
    cell, t_of, n_t = np.unique(cell_codes, return_inverse=True, return_counts=True)
    n_q = np.bincount(g_of).astype(np.float64)
    cell_group = np.empty(cell.size, dtype=np.int64)
    cell_group[t_of] = g_of

    def means(labels, count):
        return block_sums(XY, np.r_[0, np.cumsum(count)], np.argsort(labels, kind="stable")) / count[:, None]

    cmean = means(t_of, n_t.astype(np.float64))
    between = cmean - means(g_of, n_q)[cell_group]
    within = XY - cmean[t_of]
    c = cw[group][cell_group]
    wb = c * n_q[cell_group] * n_t
    ww = (c * (n_q[cell_group] - n_t))[t_of]
    return (wb[:, None] * between[:, :p]).T @ between + (ww[:, None] * within[:, :p]).T @ within


def _factor(A):
    """The lower Cholesky factor of the symmetric positive semidefinite A and its reciprocal condition number in the
    1-norm, as fit estimates it (0 when A is not numerically positive definite)."""
    L, info = scipy.linalg.lapack.dpotrf(A, lower=1)
    return L, 0.0 if info else float(scipy.linalg.lapack.dpocon(L, np.abs(A).sum(axis=0).max(), uplo="L")[0])


def _refuse_singular(rcond, p, alpha, what="the linear RankRLS system X^T L X + alpha I", found=", as fit finds it"):
    """Fit's :class:`LinAlgError` for a p x p system of reciprocal condition number ``rcond`` <= p eps."""
    if rcond <= p * np.finfo(np.float64).eps:
        raise LinAlgError(
            f"{what} is singular to working precision for alpha={alpha:.3g} (reciprocal condition number "
            f"{rcond:.2e}){found}: the columns of X are linearly dependent over the pairs (duplicate or constant "
            "columns), or on very different scales (standardise them: fastrank.preprocessing, sklearn's "
            "StandardScaler, fastrank train --normalize); or raise alpha")


def _warn_ill_conditioned(rcond, alpha):
    """Fit's IllConditionedWarning below 1e-12: the hold-out systems lose as many digits as the full one."""
    if rcond < _RCOND_WARNING:
        warn_ill_conditioned(f"the hold-out systems at alpha={alpha:.3g} are ill-conditioned (reciprocal condition "
                             f"number {rcond:.2e}): their predictions may be inaccurate.", "Increase alpha.")


def _checked_core(kernel, args, alpha, *extra, n_threads):
    """The predictions of the C++ ``kernel`` on ``args`` (:func:`_core_args`), after fit's checks of the full-data p x p
    system X^T L X + alpha I by the rcond the kernel returns: refused when singular, an IllConditionedWarning below
    1e-12 (the hold-out systems are that system less a few rows: their predictions lose as many digits)."""
    out, rcond = kernel(*args, float(alpha), *extra, int(n_threads))
    _refuse_singular(rcond, args[0].shape[1], alpha)  # 0: not even a factor
    _warn_ill_conditioned(rcond, alpha)
    return out


def _core_args(Phi, Y, codes, normalized, pair_weight, groups):
    """The core's arguments: dense rows of ``Phi``, ``Y`` as (m, v), the groups (``groups``, else the GroupIndex of
    ``codes``) and the pair weights c_q (``pair_weight``, else 1 / n_q with ``normalized``, else 1); and the groups."""
    m = Phi.shape[0]
    Y = as_targets(Y, m)[0]
    gi = group_index(np.asarray(codes, dtype=np.int64), m) if groups is None else groups
    if pair_weight is None:
        pair_weight = pair_weights(gi.sizes, "normalized" if normalized else "unweighted")
    weight = np.ascontiguousarray(pair_weight, dtype=np.float64)
    rows = np.ascontiguousarray(densified(Phi, "copy of the sparse X (feature-space hold-out)"), dtype=np.float64)
    return (rows, np.ascontiguousarray(Y), gi.order, gi.offsets, weight), gi


def feature_leave_group_out(Phi, Y, codes, n_groups, alpha, *, normalized=False, pair_weight=None, n_threads=1,
                            groups=None):
    """Leave-one-group-out predictions (m, v) in original row order: one Cholesky factor of the p x p system, then a
    rank-n_q (Woodbury) update per group in C++, O(m p^2 + sum_q n_q^2 p) (fastrank/feature_cv.hpp)."""
    args, _ = _core_args(Phi, Y, codes, normalized, pair_weight, groups)
    return _checked_core(_core.cv_feature_leave_group_out, args, alpha, n_threads=n_threads)


def feature_leave_pair_out(Phi, Y, codes, n_groups, alpha, pairs, *, normalized=False, pair_weight=None,
                           n_threads=1, groups=None):
    """Leave-pair-out predictions (n_pairs, 2, v): one p x p factor per group with pairs (the group scaled by (n_q -
    2)/n_q), then O(v) per pair from the hat-matrix entries of its group, in C++ (fastrank/feature_cv.hpp); pairs must
    lie in one group each (validated by the caller)."""
    args, gi = _core_args(Phi, Y, codes, normalized, pair_weight, groups)
    pairs = np.ascontiguousarray(np.asarray(pairs, dtype=np.int64).reshape(-1, 2))
    pairs_at = pairs if gi.is_identity else np.ascontiguousarray(gi.inverse[pairs])  # positions in group order
    out = _checked_core(_core.cv_feature_leave_pair_out, args, alpha, pairs_at, n_threads=n_threads)
    return out.reshape(pairs.shape[0], 2, args[1].shape[1])


def feature_leave_all_pairs_out(Phi, Y, codes, n_groups, alpha, *, normalized=False, pair_weight=None, n_threads=1,
                                groups=None):
    """Leave-pair-out predictions (n_pairs, 2, v) of every pair of rows i < j inside each group, in lexicographic
    order, without listing the pairs: the hat block of a group a block of columns at a time and one vectorized loop
    per row's pairs, in C++ (fastrank/feature_cv.hpp)."""
    args, _ = _core_args(Phi, Y, codes, normalized, pair_weight, groups)
    out = _checked_core(_core.cv_feature_leave_all_pairs_out, args, alpha, n_threads=n_threads)
    return out.reshape(-1, 2, args[1].shape[1])
