"""The exact cross-validation engine for RankRLS and MPRank (Pahikkala et al. 2009, 004 Sects. 3.2-3.4; Cortes, Mohri &
Rastogi, 000 Sect. 2.6): leave-pair-out, leave-group-out, hold-out sets and k folds answered exactly (the predictions
of the model retrained without the held-out rows) from one factorization of the training problem.

:class:`CVSpec` is the model, built and validated by the estimator (``RankRLS._cv_spec()``, ``MPRank._cv_spec()``);
one route object per method (:class:`DualRoute`, :class:`FeatureRoute`, :class:`TieExcludedRoute` on one base;
:class:`PreferenceRoute`); :class:`HoldoutEngine` is the route policy and MPRank's fixed C.  The routes, the policy and
their derivations: docs/design/exact-cv.md."""

from __future__ import annotations

import dataclasses
import functools
import numbers

import numpy as np
import scipy.linalg
from scipy.linalg import lu_factor, lu_solve

from . import _core, _holdout
from ._kernels import kernel_block, resolve_kernel, twin_rows
from ._memory import check_dense_memory, densified
from ._problem import (PreferenceGraph, RankingProblem, check_weighting, group_offset_ratio, group_target_range,
                       require_preferences)
from ._progress import resolve_verbose, stage
from ._solvers import (Fit, _by_alpha, _centred_features, check_indices, choose_solver, kernel_rounding_level,
                       select_basis, solve_dual, solve_primal, warn_below_kernel_rounding, warn_ill_conditioned)
from ._sparse import issparse, row_sq_norms, take_rows
from ._threads import compute_region, cpu_budget, threads_for_work
from ._validation import _asarray, check_alpha, check_n_jobs, mprank_alpha, pair_disagreement, whole_numbers
from .exceptions import LinAlgError

__all__ = ["CVSpec", "spec_of", "HoldoutEngine", "engine_for", "check_folds", "resolve_folds", "check_sets",
           "PreferenceRoute", "alike"]

_SOLVERS = ("auto", "dual", "primal")
# Grids of more alphas than this share one spectral factor of S K S (one m x m product per alpha); smaller grids factor
# S K S + alpha I by Cholesky per alpha (accurate at any alpha).  Measured crossover: ~33 alphas at m = 2000.
SHARED_FACTOR_MIN_ALPHAS = 30
# The spectral leave-pair-out formula loses digits as (sigma_max / alpha)^2 (3.7e-7 relative at 1e-3 sigma_max, the
# Cholesky route 2e-13; docs/design/exact-cv.md): below this ratio a grid's alphas take the Cholesky route.
SPECTRAL_PAIR_MIN_RATIO = 1e-2
# The leave-group-out path's full-data coefficients serve as the fitted model at alphas above this ratio of
# trace(S K S) (at most eps / ratio, 2e-12, from the Cholesky solve a fit makes); below it the model is solved anew.
PATH_COEF_MIN_RATIO = 1e-4
# Hold-out sets of dense kernel models keep 1e-9 relative down to alpha = 1e-8 sigma_max (the largest eigenvalue of
# S K S) and lose digits below (docs/design/exact-cv.md, "Accuracy"): below this ratio they warn.
HOLDOUT_MIN_RATIO = 1e-9
# The dense route gives a held-out prediction as the target plus a correction (eqs. 33-39): past trace(S K S) it shrinks
# as trace / alpha and carries the targets' rounding, up to 5e-14 alpha / trace relative (docs/design/exact-cv.md).
# Above this ratio they warn; the routes that form predictions as K S G t keep their digits at any alpha.
HOLDOUT_MAX_RATIO = 1e5
# A grid shares one eigendecomposition once alphas x Cholesky factors per alpha (one per distinct set size in object
# ranking, one with groups) reaches this (measured crossover 6-16 at m = 1000-2000, docs/design/exact-cv.md).
HOLDOUT_SHARED_FACTOR_MIN = 6


@dataclasses.dataclass(frozen=True)
class CVSpec:
    """The model an exact cross-validation retrains, as a validated record: exactly one of ``alpha`` (RankRLS) and
    ``C`` (MPRank: alpha = m_train^2 / (2 C) for the m_train rows of each retrained model, 000 eq. 8)."""

    alpha: float | None = 1.0
    C: float | None = None
    kernel: str = "linear"
    gamma: float | None = None
    degree: int = 3
    coef0: float = 1.0
    group_weighting: str = "unweighted"
    solver: str = "auto"
    basis_vectors: object = None
    random_state: object = None
    exclude_ties: bool = False
    n_jobs: int | None = None

    def __post_init__(self):
        name = "alpha" if self.C is None else "C"  # C=None: RankRLS, whose alpha check_alpha names
        object.__setattr__(self, name, check_alpha(getattr(self, name), name))
        if self.solver not in _SOLVERS:
            raise ValueError(f"exact cross-validation needs the dense solver (solver in {_SOLVERS}); got "
                             f"solver={self.solver!r}")
        check_weighting(self.group_weighting)
        if self.n_jobs is not None:  # None: threads chosen by the work (HoldoutEngine)
            object.__setattr__(self, "n_jobs", check_n_jobs(self.n_jobs))

    @property
    def precomputed(self):
        return isinstance(self.kernel, str) and self.kernel == "precomputed"

    def alpha_for(self, n_train):
        """The alpha of the model retrained on ``n_train`` rows."""
        return self.alpha if self.C is None else mprank_alpha(self.C, n_train)

    def kernel_spec(self, n_features):
        return resolve_kernel(self.kernel, self.gamma, self.degree, self.coef0, n_features)


def spec_of(model):
    """The :class:`CVSpec` of a RankRLS / MPRank (fitted or not), which builds it."""
    build = getattr(type(model), "_cv_spec", None)
    if build is None:
        raise TypeError(f"exact cross-validation needs a fastrank.RankRLS or fastrank.MPRank, got "
                        f"{type(model).__name__}")
    return build(model)


def engine_for(model, X, y, groups=None, *, min_rows=1, verbose=0):
    """A :class:`HoldoutEngine` for ``model`` (a :class:`CVSpec`, RankRLS or MPRank) on (X, y, groups)."""
    spec = spec_of(model)
    resolve_verbose(verbose)  # checked now: a question without a long step would never read it
    problem = RankingProblem.from_scores(X, y, groups, weighting=spec.group_weighting, precomputed=spec.precomputed,
                                         min_rows=1, learner=None, allow_sparse=True, exclude_ties=spec.exclude_ties)
    if problem.m < min_rows:
        raise ValueError(f"this cross-validation needs at least {min_rows} inputs, got n_samples={problem.m}")
    if not problem.is_graph:
        _check_target_range(problem.targets_centred())
    if problem.exclude_ties and problem.cells.n_groups == problem.m:
        # no two rows of a group tie: every within-cell centring P_t is 0 and L is the plain Laplacian (004 Sect.
        # 2.4), for the training set and every part of it, so the dense and feature routes answer exactly, in
        # O(m^3) instead of one m x m factor per pair of tie cells and an O(T^3) solve per held-out pair
        spec, problem = dataclasses.replace(spec, exclude_ties=False), problem._replace(cells=None)
    # the solver / kernel / basis combinations fit refuses (solver='primal' with another kernel or basis_vectors)
    choose_solver(spec.solver, spec.kernel_spec(problem.n_features), problem, basis_vectors=spec.basis_vectors)
    if np.any(problem.groups.sizes >= 2):  # as fit requires (else each question's error: nothing can be held out)
        require_preferences(problem.Y, problem.groups, type(model).__name__)
    return HoldoutEngine(problem, spec, verbose=verbose)


def _check_target_range(Yc):
    """The hold-out formulas form a held-out prediction as its target plus a correction (eqs. 33-39), so rounding at
    the scale of the largest target reaches every one (docs/design/exact-cv.md): refused near float64's limit, a
    warning where that rounding, eps max |y|, exceeds 1e-8 of the targets' median deviation."""
    if float(np.abs(Yc).max(initial=0.0)) > 2.0**996:
        raise ValueError(f"exact cross-validation: targets {float(np.abs(Yc).max()):.3g} from their group's mean "
                         "overflow its hold-out formulas; rescale y (every RankRLS / MPRank model is linear in y)")
    for column in Yc.T:  # each output on its own (outputs may differ in scale by any factor)
        deviation = np.abs(column - np.median(column))  # from the median: one outlier moves the mean, not the median
        top = float(deviation.max(initial=0.0))
        typical = float(np.median(deviation[deviation > 0])) if top > 0 else 0.0
        if top * np.finfo(np.float64).eps > 1e-8 * typical:
            break
    else:
        return
    warn_ill_conditioned(
        f"exact cross-validation: a target {top / typical:.3g} times the targets' median deviation leaves rounding of "
        f"about {top * np.finfo(np.float64).eps:.2g} in every hold-out prediction.",
        "The hold-out formulas carry rounding at the scale of the largest target: clip or transform the outlying "
        "targets (e.g. log), or retrain on each training part (RankRLS.fit) for these folds.")


def _in_region(method):
    """Run a route method inside a compute region of its thread count (see fastrank._threads)."""
    @functools.wraps(method)
    def run(self, *args, **kwargs):
        with compute_region(self.n_threads):
            return method(self, *args, **kwargs)
    return run


def _kernel_matrix(kspec, X, n_threads):
    return kernel_block(kspec, X, X, n_threads) if issparse(X) else kspec.train(np.ascontiguousarray(X), n_threads)


class _OnProblem:
    """The training problem's shape, read by the engine and its routes."""

    m = property(lambda self: self.problem.m)
    Y = property(lambda self: self.problem.Y)
    one_d = property(lambda self: self.problem.one_d)
    grouped = property(lambda self: self.problem.grouped)
    groups = property(lambda self: self.problem.groups)


class _Route(_OnProblem):
    """What every route shares: the problem, its rows in group order and the thread count."""

    def __init__(self, engine):
        for name in ("problem", "kspec", "n_threads", "verbose", "Xg"):
            setattr(self, name, getattr(engine, name))

    def _kernel_in_group_order(self):
        """The (m, m) kernel with rows and columns in group order (callers guard the memory)."""
        gi, m = self.groups, self.m
        with stage(f"kernel matrix ({m} x {m})", verbose=self.verbose):
            if self.kspec.precomputed:
                Kg = gi.take(gi.take(self.problem.X, 0), 1)
                return np.asfortranarray(0.5 * (Kg + Kg.T))
            return _kernel_matrix(self.kspec, self.Xg, self.n_threads)


class DualRoute(_Route):
    """The kernel model through ``S K S`` (004 eqs. 31-39): Cholesky factor of ``S K S + alpha I`` for one alpha, or
    the spectral factor shared by every alpha.  For the linear kernel with n_features < m (``low_rank``) that factor
    comes from the n x n ``(S X)^T (S X)`` (rank <= n, O(m n^2 + m^2 n)): the same exact result without an m x m
    eigendecomposition."""

    # The kernel, its eigenvectors, the eigensolver's workspace (2) and the pair-phase matrix.
    DENSE_MATRICES = 5

    def __init__(self, engine, *, low_rank):
        super().__init__(engine)
        self.low_rank = low_rank
        # the rank-n factor needs S X, which block centring makes dense: m x n, n < m
        self.Xd = np.ascontiguousarray(densified(self.Xg, "copy of the sparse X (linear low-rank route)")) \
            if low_rank else None
        self.Yg = np.asfortranarray(self.groups.take(self.problem.targets_centred()))  # for the formulas only
        self.group_args = (self.groups.order, self.groups.offsets, self.problem.pair_weight())
        self._V = self._sigma = self._SX = None
        self._path_coef = {}  # alpha -> dual coefficients (group order) from leave_group_out_path
        self.grid_alphas = 1  # alphas of the grid being scored (HoldoutEngine.prepare_grid)

    @functools.cached_property
    @_in_region
    def K(self):
        check_dense_memory(self.m, self.DENSE_MATRICES, "kernel matrix and its eigendecomposition")
        return self._kernel_in_group_order()

    @property
    def c(self):
        """Pair weight of object ranking (one group)."""
        return float(self.problem.pair_weight()[0])

    def factored(self):
        return self._V is not None

    def uses_cholesky(self, alpha):
        """Whether one alpha's leave-pair-out / leave-group-out takes the Cholesky factor of S K S + alpha I (accurate
        at any alpha): without a spectral factor, and below SPECTRAL_PAIR_MIN_RATIO sigma_max, where the spectral pair
        formula cancels digits."""
        return self._V is None or \
            alpha < SPECTRAL_PAIR_MIN_RATIO * max(float(self._sigma.max()), np.finfo(np.float64).tiny)

    def decompose(self):
        """V, sigma with S K S = V diag(sigma) V^T (rank-r factor on the low-rank route)."""
        if self._V is None:
            with stage("spectral factor of S K S", verbose=self.verbose), compute_region(self.n_threads):
                if self.low_rank:
                    SX = self.problem.apply_S(self.Xd)
                    lam, W = np.linalg.eigh(SX.T @ SX)
                    keep = lam > max(lam.max(), 0.0) * max(SX.shape) * np.finfo(np.float64).eps
                    if not np.any(keep):
                        self._V, self._sigma = np.zeros((self.m, 1), order="F"), np.zeros(1)
                    else:  # lam[keep]: a new contiguous array
                        self._V, self._sigma = np.asfortranarray(SX @ (W[:, keep] / np.sqrt(lam[keep]))), lam[keep]
                    self._SX = SX
                else:
                    self._V, self._sigma = _core.cv_spectral(self.K, *self.group_args, self.n_threads)
        return self._V, self._sigma

    @functools.cached_property
    @_in_region
    def P(self):
        """K S V (in group order)."""
        V, _ = self.decompose()
        if self.low_rank:
            return np.asfortranarray(self.Xd @ (self._SX.T @ V))  # K S V = X (S X)^T V
        return _core.cv_ksv(self.K, *self.group_args, V)

    # the pair kernels of _core (Cholesky object, Cholesky query, spectral object, spectral query): predictions, or
    # their disagreement accumulated in C++ threads without materialising the (n_pairs, 2, v) predictions
    _LPO = {False: ("cv_object_lpo_inverse", "cv_query_lpo_inverse", "cv_object_lpo_pairs", "cv_query_lpo"),
            True: ("cv_object_lpo_inverse_disagreement", "cv_query_lpo_inverse_disagreement",
                   "cv_object_lpo_disagreement", "cv_query_lpo_disagreement")}

    @_in_region
    def lpo(self, pairs, alpha, disagreement=False):
        """(n_pairs, 2 * v) held-out predictions (Lemma 2, eqs. 34-39), or with ``disagreement`` their pairwise
        disagreement per output column."""
        chol_object, chol_query, spectral_object, spectral_query = (getattr(_core, f) for f in self._LPO[disagreement])
        self.check_alpha_scale(alpha)
        pg = np.ascontiguousarray(self.groups.inverse[pairs]) if self.grouped else None
        if self.uses_cholesky(alpha):
            if not self.grouped:
                return chol_object(self.K, self.c, alpha, self.Yg, pairs, self.n_threads)
            return chol_query(self.K, *self.group_args, alpha, self.Yg, pg, self.n_threads)
        V, sigma = self.decompose()
        if not self.grouped:
            M, mu, h = _core.cv_object_prepare(self.K, V, sigma, self.c, alpha, self.Yg)
            return spectral_object(M, mu, h, self.Yg, self.c, pairs, self.n_threads)
        return spectral_query(self.P, V, sigma, *self.group_args, alpha, self.Yg, pg, self.n_threads)

    def holdout_uses_cholesky(self, sets):
        """Whether hold-out sets take Cholesky factors of S K S + alpha' I rather than the spectral factor (both exact
        and accurate: the choice is by cost): when no spectral factor exists nor will be shared (:attr:`grid_alphas`
        times the factors per alpha), or when the spectral form's |A|^2 m per set (A: the rows of the groups a set
        touches) costs more than the m^3 of a factor."""
        n_factors = 1 if self.grouped else np.unique([len(s) for s in sets]).size
        if self._V is None and self.grid_alphas * n_factors < HOLDOUT_SHARED_FACTOR_MIN:
            return True
        sizes, codes = self.groups.sizes, self.groups.codes
        return self.grouped and sum(float(sizes[np.unique(codes[s])].sum()) ** 2 for s in sets) > 0.4 * self.m ** 2

    @_in_region
    def holdout(self, sets, alpha):
        """Predictions of every set, concatenated (eq. 33 in its G form): from Cholesky factors
        (:meth:`holdout_uses_cholesky`) or the spectral factor; below HOLDOUT_MIN_RATIO times sigma_max (bounded without
        a spectral factor: :meth:`check_alpha_scale`) they warn."""
        rows = np.concatenate(sets).astype(np.int64)
        fold_offsets = np.concatenate([[0], np.cumsum([len(s) for s in sets])]).astype(np.int64)
        rg = self.groups.inverse[rows].astype(np.int64) if self.grouped else rows
        cholesky = self.holdout_uses_cholesky(sets)
        if not cholesky:
            self.decompose()
        self.check_alpha_scale(alpha)
        if cholesky:
            if not self.grouped:
                return _core.cv_object_holdout_inverse(self.K, self.c, alpha, self.Yg, rows, fold_offsets,
                                                       self.n_threads)
            return _core.cv_group_holdout_inverse(self.K, *self.group_args, alpha, self.Yg, rg, fold_offsets,
                                                  self.n_threads)
        V, sigma = self.decompose()
        if not self.grouped:
            return _core.cv_object_holdout(self.K, V, sigma, self.c, alpha, self.Yg, rows, fold_offsets)
        return _core.cv_group_holdout(self.P, V, sigma, *self.group_args, alpha, self.Yg, rg, fold_offsets)

    def check_alpha_scale(self, alpha, rounding=True):
        """Warn above HOLDOUT_MAX_RATIO times trace(S K S), where the hold-out formulas cancel the targets' digits (an
        indefinite kernel's trace may be negative: its factorization fails instead), and (``rounding``) below
        HOLDOUT_MIN_RATIO times sigma_max (without a spectral factor the trace bounds it, and below that bound
        :attr:`sigma_max_bound`), where they lose digits
        (a kernel of low rank: its null directions' rounding over alpha), or else below the rounding of the kernel
        values (:func:`~fastrank._solvers.kernel_rounding_level`); one warning per alpha."""
        bound = float(self._sigma.max()) if self._V is not None else self.trace_SKS
        if rounding and self._V is None and alpha < HOLDOUT_MIN_RATIO * bound:
            bound = self.sigma_max_bound  # the trace may exceed sigma_max m times: estimated only where it would warn
        if rounding and alpha < HOLDOUT_MIN_RATIO * bound:
            warn_inaccurate_holdout(alpha, HOLDOUT_MIN_RATIO, f"S K S (at most {bound:.3g})",
                                    "up to 4e-8 relative at 1e-9 times it, 4e-7 at 1e-10")
            rounding = False
        if 0.0 < HOLDOUT_MAX_RATIO * self.trace_SKS < alpha:
            warn_ill_conditioned(
                f"hold-out predictions at alpha={alpha:.3g} may be inaccurate.",
                f"Hold-out predictions at alpha above {HOLDOUT_MAX_RATIO:g} times the trace of S K S "
                f"({self.trace_SKS:.3g}) are about trace / alpha times the targets and lose digits to the targets' "
                "rounding (up to 5e-14 alpha / trace relative): decrease alpha, or leave such alphas out of the grid.")
        if rounding:
            warn_below_kernel_rounding(alpha, self.rounding_level, "hold-out predictions")

    @functools.cached_property
    def rounding_level(self):  # O(m^2): once per route, not per alpha of a grid
        return kernel_rounding_level(self.K, self.problem, self.kspec)

    @functools.cached_property
    @_in_region
    def sigma_max_bound(self):
        """An upper bound on sigma_max (:func:`sigma_max_upper_bound`), O(m^2) per step of power iteration on S K S."""
        apply_S = self.problem.apply_S
        return sigma_max_upper_bound(lambda V: apply_S(self.K @ apply_S(V)), self.m, self.trace_SKS)

    @functools.cached_property
    def trace_SKS(self):
        """trace(S K S) = sum_q c_q n_q (tr K_qq - 1^T K_qq 1 / n_q) >= sigma_max, in O(sum n_q^2)."""
        K, off, c = self.K, self.groups.offsets, self.problem.pair_weight()
        blocks = [K[a:b, a:b] for a, b in zip(off[:-1], off[1:])]
        return float(sum(cq * (b.shape[0] * np.trace(b) - b.sum()) for cq, b in zip(c, blocks)))

    @_in_region
    def leave_group_out(self, alpha):
        """(m, v) predictions, each group held out in turn (eq. 33), from the Cholesky factor of ``S K S + alpha I``
        and the diagonal blocks of its inverse."""
        self.check_alpha_scale(alpha)
        return _core.cv_leave_group_out_inverse(self.K, *self.group_args, alpha, self.Yg, self.n_threads)

    @_in_region
    def leave_group_out_path(self, alphas):
        """(n_alphas, m, v) leave-group-out predictions; the call's full-data dual coefficients of every alpha are kept,
        so that :meth:`solve` at a grid alpha needs no factorization."""
        v, na = self.Y.shape[1], alphas.size
        self.check_alpha_scale(float(alphas.max()), rounding=False)
        self.check_alpha_scale(float(alphas.min()))  # the grid's worst conditioned alpha, as one alpha's route warns
        out = _core.cv_leave_group_out_path(self.K, *self.group_args, alphas, self.Yg, self.n_threads)
        # the spectral coefficients lose digits as sigma_max / alpha (4x the Cholesky solve's error at 1e-12
        # sigma_max): kept where alpha >= PATH_COEF_MIN_RATIO trace(S K S) >= PATH_COEF_MIN_RATIO sigma_max
        self._path_coef = {float(a): out[:, (na + k) * v:(na + k + 1) * v] for k, a in enumerate(alphas)
                           if a >= PATH_COEF_MIN_RATIO * self.trace_SKS}
        return np.stack([out[:, k * v:(k + 1) * v] for k in range(na)])

    @_in_region
    def solve(self, alpha):
        """Dual coefficients (m, v), caller's row order, of the model fitted on all the data: from the spectral factor
        when it exists (eq. 31: u = V (Sigma + alpha)^-1 V^T S y + (S y - V V^T S y) / alpha, A = S u), else from one
        Cholesky factor of S K S + alpha I; an alpha of the last :meth:`leave_group_out_path` takes its coefficients
        (alphas at least PATH_COEF_MIN_RATIO trace(S K S))."""
        if float(alpha) in self._path_coef:
            return self._path_coef[float(alpha)]
        if self.uses_cholesky(alpha):
            A, _ = _core.rankrls_dual_scores(np.array(self.K, order="F"), *self.group_args, self.Yg,
                                             np.array([alpha]), self.n_threads)
            return _by_alpha(A, 1)[0]
        V, sigma = self.decompose()
        Sy = self.problem.apply_S(self.Yg)
        c = V.T @ Sy
        u = V @ (c / (sigma + alpha)[:, None]) + (Sy - V @ c) / alpha
        return self.groups.untake(self.problem.apply_S(u))

    @_in_region
    def solve_primal(self, alpha):
        """Weights (n, v) of the linear model fitted on all the data (eq. 28) from S X, shared with the rank-n
        spectral factor: (X^T S S X + alpha I) w = X^T S S y."""
        SX = self._SX if self._SX is not None else self.problem.apply_S(self.Xd)
        G = SX.T @ SX
        G[np.diag_indices_from(G)] += alpha
        return scipy.linalg.solve(G, SX.T @ self.problem.apply_S(self.Yg), assume_a="pos")


class FeatureRoute(_Route):
    """A finite feature map (linear kernel with n_features < m, or the subset-of-regressors basis, eq. 41): every
    hold-out retrained exactly through its p x p system by :mod:`fastrank._holdout` -- no m x m matrix."""

    def __init__(self, engine, features):
        super().__init__(engine)
        self.args = (features, self.problem.targets_centred(), self.groups.codes, self.groups.n_groups)
        self.kwargs = dict(pair_weight=self.problem.pair_weight(), n_threads=self.n_threads, groups=self.groups)

    def lpo(self, pairs, alpha):
        return _holdout.feature_leave_pair_out(*self.args, alpha, pairs, **self.kwargs)

    def lpo_all_pairs(self, alpha):
        return _holdout.feature_leave_all_pairs_out(*self.args, alpha, **self.kwargs)

    def holdout(self, sets, alpha):
        return np.concatenate(_holdout.feature_holdout(*self.args, alpha, sets, pair_weight=self.kwargs["pair_weight"],
                                                       cells=self.problem.cells))

    def leave_group_out(self, alpha):
        return _holdout.feature_leave_group_out(*self.args, alpha, **self.kwargs)  # (m, v) from the core


# The LU route (preference graphs of more than 2 edges per row) updates one factor of L K + alpha I by Woodbury, which
# cancels digits as alpha falls below sigma_max (3e-10 relative at 1e-4 sigma_max, docs/design/exact-cv.md): below
# this ratio it retrains without each set instead.
HOLDOUT_LU_MIN_RATIO = 1e-4
# Tie-excluding sets and pairs (the dense route's G form) and sparse preference graphs (the edge form) predict as
# K S G t, as fit does, about one digit less accurately (7e-8 relative at 1e-8 sigma_max, docs/design/exact-cv.md):
# below this ratio of sigma_max (bounded: _warn_below_g_form_ratio) they warn.
HOLDOUT_G_FORM_MIN_RATIO = 1e-8


def lu_loses_digits(alpha, LK):
    """Whether ``alpha`` lies below ``HOLDOUT_LU_MIN_RATIO`` times the largest eigenvalue of the m x m matrix ``LK``
    (= L K, before alpha is added): the largest row sum of |L K| bounds it (one O(m^2) pass), and only when alpha
    falls below that bound do 30 steps of power iteration estimate it."""
    bound = max(float(np.abs(LK[i:i + 256]).sum(axis=1).max()) for i in range(0, LK.shape[0], 256))
    if alpha >= HOLDOUT_LU_MIN_RATIO * bound:  # (rows in blocks: no m x m temporary)
        return False
    # L K is similar to the symmetric positive semi-definite S K S, so its eigenvalues are real
    return alpha < HOLDOUT_LU_MIN_RATIO * _power_iteration(lambda V: LK @ V, LK.shape[0])


def _power_iteration(apply, m):
    """The largest eigenvalue of the m x m operator ``apply`` (V -> M V, M positive semi-definite) from below: 30
    steps of power iteration on 4 fixed start vectors, O(m^2) each for a dense M."""
    V = np.random.default_rng(0).standard_normal((m, 4))
    sigma_max = 0.0
    for _ in range(30):
        W = apply(V)
        sigma_max = float(np.max(np.linalg.norm(W, axis=0) / np.linalg.norm(V, axis=0)))
        V = W / max(np.abs(W).max(), np.finfo(float).tiny)
    return sigma_max


def sigma_max_upper_bound(apply, m, trace):
    """An upper bound on the largest eigenvalue of the positive semi-definite m x m operator ``apply`` of trace
    ``trace``: the trace, or twice the estimate of :func:`_power_iteration` where that is smaller.  The trace may
    exceed the largest eigenvalue m times (a Gaussian kernel of a large gamma: K ~ I); the estimate falls below half
    of it with probability under about 1e-9 sqrt(m) (Kuczynski & Wozniakowski 1992, the power method from a random
    start; here 4 starts and 30 steps)."""
    estimate = 2.0 * _power_iteration(apply, m)
    return min(trace, estimate) if np.isfinite(estimate) else trace


def _warn_below_g_form_ratio(alpha, trace, matrix, model, apply, m):
    """Warn below HOLDOUT_G_FORM_MIN_RATIO times the largest eigenvalue of ``matrix`` (``apply``: V -> matrix V, m x
    m), bounded by its ``trace`` and, only where alpha falls below that, by :func:`sigma_max_upper_bound`."""
    if alpha < HOLDOUT_G_FORM_MIN_RATIO * trace:
        trace = sigma_max_upper_bound(apply, m, trace)
    if alpha < HOLDOUT_G_FORM_MIN_RATIO * trace:
        warn_inaccurate_holdout(alpha, HOLDOUT_G_FORM_MIN_RATIO, f"{matrix} (at most {trace:.3g})",
                                "up to 7e-9 relative at 1e-7 times it, 7e-8 at 1e-8", f" of a {model}")


def _warn_feature_offsets(ratio):
    """Warn where the column means stand out: the hold-out models' offset terms, which S does not annihilate, cost
    about 2e-14 ``ratio`` relative in the dense route's predictions (docs/design/exact-cv.md)."""
    if ratio > 5e5:
        warn_ill_conditioned(
            f"the columns of X have means about {np.sqrt(ratio):.0e} times their spread inside the groups: hold-out "
            f"predictions of the linear kernel may carry rounding error up to about {min(1.0, 2e-14 * ratio):.0e} "
            "relative.", "Centre the columns of X (inside each query) before cross-validating the linear kernel: "
            "rankings are unchanged, and the hold-out predictions keep their digits.")


def warn_inaccurate_holdout(alpha, ratio, matrix, losses, model=""):
    """The :class:`IllConditionedWarning` of hold-out predictions at ``alpha`` below ``ratio`` times the largest
    eigenvalue of ``matrix``, with the measured ``losses``; its ``advice`` is what one_conditioning_warning reports
    in place of its feature-scaling advice."""
    warn_ill_conditioned(f"hold-out predictions at alpha={alpha:.3g} may be inaccurate.",
                         f"Hold-out predictions{model} at alpha below {ratio:g} times the largest eigenvalue of "
                         f"{matrix} lose digits ({losses}): increase alpha, or leave such alphas out of the grid.")


def _cholesky(A, alpha, what="S K S"):
    """The lower Cholesky factor of the SPD A = ``what`` + alpha I (+ tau on S's null space), in place of A;
    :class:`LinAlgError` naming alpha when A is not numerically positive definite."""
    L, info = scipy.linalg.lapack.dpotrf(A, lower=1, overwrite_a=1)
    if info > 0:
        raise LinAlgError(f"alpha={alpha:.3g}: {what} + alpha I is not numerically positive definite (the kernel is "
                          "not positive semidefinite, or alpha is below rounding level for its scale); increase alpha")
    return L


def _spd_inverse(A, rhs, alpha, what="S K S"):
    """(A^-1 rhs, A^-1) by one Cholesky factor (:func:`_cholesky`), formed in place of A."""
    L = _cholesky(A, alpha, what)
    x = scipy.linalg.lapack.dpotrs(L, rhs, lower=1)[0]
    G = scipy.linalg.lapack.dpotri(L, lower=1, overwrite_c=1)[0]
    for lo in range(0, G.shape[0], 512):  # the upper triangle from the lower, a panel at a time
        hi = min(G.shape[0], lo + 512)
        G[:lo, lo:hi] = G[lo:hi, :lo].T
        G[lo:hi, lo:hi] = np.tril(G[lo:hi, lo:hi]) + np.tril(G[lo:hi, lo:hi], -1).T
    return x, G


class TieExcludedRoute(_Route):
    """``exclude_ties=True``: the Laplacian L of the pairs with different targets (004, Sect. 2.4), L_q = c_q (n_q P_B
    + sum_t (n_q - n_t) P_t) with the explicit root S (``RankingProblem.apply_S_cells``).  Every hold-out question is
    eq. 33 in the G form of the dense route, G = (S K S + alpha I)^-1 on range(S), every retained pair keeping its
    weight: hold-out sets (:meth:`_cut_sets`, or retraining without each set where that costs less) and pairs
    (:meth:`lpo`); accurate at small alpha."""

    # the kernel, S K S, its factor and inverse, a product of the pair phase
    DENSE_MATRICES = 5

    def __init__(self, engine):
        super().__init__(engine)
        check_dense_memory(self.m, self.DENSE_MATRICES, "kernel matrix, S K S and its Cholesky factor and inverse")
        if engine.basis:  # the subset-of-regressors model is the linear model on its features Phi (eq. 41)
            Phi = self.groups.take(engine.tie_features)
            self.K = np.asfortranarray(Phi @ Phi.T)
        else:
            self.K = self._kernel_in_group_order()

    @_in_region
    def holdout(self, sets, alpha):
        sizes, codes = self.groups.sizes, self.groups.codes
        # a group whose kept rows all tie keeps no edge: holding those rows out too changes no model, and the group
        # is held whole (no cancellation where every edge goes); sets of whole groups are never retrained
        grown = [np.concatenate([s] + [rest for rest in (np.setdiff1d(self._group_rows[q], s) for q in np.unique(
            codes[s])) if np.unique(self.problem.cells.codes[rest]).size == 1]) for s in sets]
        if not all(sizes[np.unique(codes[s])].sum() == len(s) for s in grown) and self._retrain_is_cheaper(sets):
            return np.concatenate([self._retrained(s, alpha) for s in sets])
        out = self._cut_sets(grown, alpha)
        parts = np.split(out, np.cumsum([len(s) for s in grown])[:-1])
        return np.concatenate([part[:len(s)] for part, s in zip(parts, sets)])

    @functools.cached_property
    def _group_rows(self):
        return self.groups.rows()

    @functools.cached_property
    def _group_cells(self):
        """(first tie cell, number of tie cells) of every group (cells are group-major)."""
        cells = self.problem.cells
        n_cells = np.bincount(self.groups.codes[cells.order[cells.offsets[:-1]]], minlength=self.groups.n_groups)
        return np.r_[0, np.cumsum(n_cells)[:-1]], n_cells

    @functools.cached_property
    def _SKS(self):
        """S K S with the tie-excluding S (rows and columns in cell order) and the group-order position of each
        cell-order row."""
        pc = self.groups.inverse[self.problem.cells.order]
        SK = self.problem.apply_S_cells(self.K[np.ix_(pc, pc)], centre=False)
        return np.asfortranarray(self.problem.apply_S_cells(SK.T, centre=False)), pc

    def _G_form(self, alpha, full=True):
        """G = (S K S + alpha I + tau P_0)^-1 (cell order; P_0 the projector on S's null space: a group's constant
        vector, or all its rows when they all tie; tau the mean diagonal of S K S) as a function cols -> G[:, cols]
        (from the inverse, or ``full=False`` by solves), G t, the tie cells per group and a function v,
        rows -> (K S v) on the cell-order rows (all rows by default).  Warns below
        HOLDOUT_G_FORM_MIN_RATIO times sigma_max (:func:`_warn_below_g_form_ratio`)."""
        p, gi = self.problem, self.groups
        SKS, pc = self._SKS
        m, off = self.m, gi.offsets
        tau = float(np.mean(np.diag(SKS))) or 1.0
        _warn_below_g_form_ratio(alpha, tau * m, "S K S", "model with exclude_ties=True", lambda V: SKS @ V, m)
        n_cells = self._group_cells[1]
        F = SKS.copy(order="F")
        F[np.diag_indices(m)] += alpha
        for q in range(gi.n_groups):
            a, b = off[q], off[q + 1]
            if n_cells[q] > 1:
                F[a:b, a:b] += tau / (b - a)
            else:
                F[np.arange(a, b), np.arange(a, b)] += tau
        t = p.apply_S_cells(p.cells.take(self.Y))
        if full:
            Gt, G = _spd_inverse(F, t, alpha)

            def G_cols(index):
                return G[:, index]
        else:  # the columns a few sets read, by solves: no m^3 inverse
            L = _cholesky(F, alpha)
            Gt = scipy.linalg.lapack.dpotrs(L, t, lower=1)[0]

            def G_cols(index):
                E = np.zeros((m, len(index)))
                E[index, np.arange(len(index))] = 1.0
                return scipy.linalg.lapack.dpotrs(L, E, lower=1)[0]

        def K_S(v, rows=None):
            Sv = np.empty(v.shape)  # S v in group order
            Sv[pc] = p.apply_S_cells(v)
            return (self.K @ Sv)[pc] if rows is None else self.K[pc[rows]] @ Sv

        return G_cols, Gt, K_S

    def _cut_sets(self, sets, alpha, factor=None):
        """Hold-out sets in the G form (docs/design/exact-cv.md).  Groups a set holds whole (W) go first: holding
        out every edge of W gives E = I on range(S_W), so the retrained residual z solves the SPD G_WW z = (G t)_W
        (no 1 - h to cancel), and the model without W has G' = G - G_.W G_WW^-1 G_W. and G' t' = G t - G_.W z (a
        group whose rows all tie has no edge and no part in W).  G = (S K S + alpha I + tau P_0)^-1 (:meth:`_G_form`)
        equals (S K S + alpha I)^+ on range(S).  In a partly held group q the removal splits as for pairs
        (:meth:`_lpo_groups`): c_q sum_t delta_t P_t, delta_t the held rows of q outside cell t, is a virtual-target
        update on the rows A of those groups (:func:`_cell_update`); the rest is Delta_2 = B C B^T on B = [e_u for u
        in U, 1_t for the cells of those groups]: x solves (I - C B^T Ms B) x = alpha C B^T h and f'_U = f_0,U -
        (P B x)_U.  O(|W|^3 + |A|^3 + (|U| + T_A)^3) per set."""
        p, gi, cells = self.problem, self.groups, self.problem.cells
        sizes, codes = gi.sizes, gi.codes
        touched = [float(sizes[np.unique(codes[s])].sum()) for s in sets]
        # beside the route's matrices: a dozen |A| x |A| blocks and G's |A| columns per set
        check_dense_memory(max(touched), 12 + self.m / max(touched), "hold-out sets of the tie-excluded model")
        G, Gt, K_S = factor or self._G_form(alpha, full=sum(touched) > self.m / 3)
        (first_cell, n_cells), off, w = self._group_cells, gi.offsets, p.pair_weight()
        out = []
        for s in sets:
            held, qs = cells.inverse[s], np.unique(gi.codes[s])
            whole = np.bincount(gi.codes[s], minlength=gi.n_groups)[qs] == sizes[qs]
            # groups held whole first (their edges' rows W; S' v = S v with W zeroed)
            W = np.concatenate([np.arange(off[q], off[q + 1]) for q in qs[whole] if n_cells[q] > 1] + [[]]).astype(int)
            Gw, Gtw = G, Gt
            if W.size:
                GW = G(W)
                cW = scipy.linalg.cho_factor(GW[W], check_finite=False)
                Gw = functools.partial(_columns_without, G, GW, cW, W)
                Gtw = Gt - GW @ scipy.linalg.cho_solve(cW, Gt[W], check_finite=False)
                Gtw[W] = 0.0
            in_part = ~np.isin(gi.codes[s], qs[whole])
            qs = qs[~whole]
            if qs.size == 0:  # only whole groups
                out.append(K_S(Gtw, held))
                continue
            A = np.concatenate([np.arange(off[q], off[q + 1]) for q in qs])
            li = np.searchsorted(A, held[in_part])  # the held rows' places in A (rows of whole groups: after A)
            tc = np.concatenate([np.arange(first_cell[q], first_cell[q] + n_cells[q]) for q in qs])  # their cells
            lc = np.searchsorted(tc, cells.codes[cells.order[A]])  # cell (index into tc) of each row of A
            qt = np.repeat(np.arange(qs.size), n_cells[qs])  # group (index into qs) of each cell
            n_t, n_q, c_t = cells.sizes[tc].astype(np.float64), gi.sizes[qs][qt].astype(np.float64), w[qs][qt]
            u_t = np.bincount(lc[li], minlength=tc.size).astype(np.float64)
            delta = np.bincount(qt, weights=u_t, minlength=qs.size)[qt] - u_t
            lam = np.divide(delta, n_q - n_t, out=np.zeros_like(delta), where=n_q > n_t)
            within = c_t * (n_q - n_t)
            blocks, aoff = [np.flatnonzero(qt == k) for k in range(qs.size)], np.r_[0, np.cumsum(gi.sizes[qs])]

            def op(between, within_t):  # block-diagonal over the touched groups
                return scipy.linalg.block_diag(*[_cell_operator(lc[aoff[k]:aoff[k + 1]] - b[0], n_t[b], between[k],
                                                                within_t[b]) for k, b in enumerate(blocks)])

            Sp = op(1.0 / np.sqrt(w[qs] * gi.sizes[qs]),
                    np.divide(1.0, np.sqrt(within), out=np.zeros_like(within), where=within > 0))
            GA, rows = Gw(A), np.concatenate([A, held[~in_part]])
            Ms, h, P, f0 = _cell_update(Sp, lc, n_t, lam, GA[A], Gtw[A], K_S(GA, rows), K_S(Gtw, rows), alpha)
            nU = li.size
            B = np.zeros((A.size, nU + tc.size))
            B[li, np.arange(nU)] = 1.0
            B[np.arange(A.size), nU + lc] = 1.0
            C = _rest_of_removal(lc[li], qt, n_q, n_t, delta, c_t)
            x = np.linalg.solve(np.eye(B.shape[1]) - C @ (B.T @ Ms @ B), alpha * (C @ (B.T @ h)))
            pred = np.empty((len(s), x.shape[1]))
            at = np.r_[li, A.size + np.arange(np.count_nonzero(~in_part))]
            pred[in_part], pred[~in_part] = np.split(f0[at] - (P[at] @ B) @ x, [li.size])
            out.append(pred)
        return np.concatenate(out)

    def _retrain_is_cheaper(self, sets):
        """Whether retraining without each set, ~1.2 (m - |U|)^3 per set, beats the G form: one factor and inverse
        (~m^3) and ~8 |A|^3 per set (A: the rows of the groups it touches)."""
        sizes, codes, m = self.groups.sizes, self.groups.codes, float(self.m)
        g_form = m ** 3 + 8 * sum(float(sizes[np.unique(codes[s])].sum()) ** 3 for s in sets)
        return 1.2 * sum((m - len(s)) ** 3 for s in sets) < g_form

    def _retrained(self, rows, alpha):
        """Predictions (|U|, v) for the rows ``rows`` (caller's order) of the model retrained without them by fit's
        symmetric solve (eq. 17), every retained pair keeping its weight: exact at any alpha."""
        p, keep = self.problem, np.setdiff1d(np.arange(self.m), rows)
        X = p.X[np.ix_(keep, keep)] if p.precomputed else densified(take_rows(p.X, keep))  # as fit's dual solve
        codes = p.groups.codes[keep] if p.grouped else None
        sub = RankingProblem.from_scores(X, p.Y[keep], codes, learner=None, precomputed=p.precomputed,
                                         allow_sparse=True, min_rows=1, exclude_ties=True)
        sub = sub._replace(kept_pair_weight=p.pair_weight()[np.unique(p.groups.codes[keep])])
        A = solve_dual(sub, self.kspec, np.array([float(alpha)]), self.n_threads).dual_coef[0]
        return self.K[np.ix_(self.groups.inverse[rows], self.groups.inverse[keep])] @ A

    @_in_region
    def lpo(self, pairs, alpha):
        """(n_pairs, 2, v) leave-pair-out predictions in the G form: one factor per pair of tie cells (one group,
        :meth:`_lpo_one_group`) or one per alpha and O(n_q^3) per group and pair of tie cells (:meth:`_lpo_groups`),
        then O(T^3) per pair."""
        # beyond the factors: the pair bookkeeping (positions, cells) and the predictions, a few arrays of 2 n_pairs v
        check_dense_memory(self.m, self.DENSE_MATRICES + 6.0 * 2 * pairs.shape[0] * self.Y.shape[1] / self.m ** 2,
                           "leave-pair-out of the tie-excluded model (factors, pair bookkeeping, predictions)")
        return (self._lpo_one_group if self.groups.n_groups == 1 else self._lpo_groups)(pairs, alpha)

    def _lpo_one_group(self, pairs, alpha):
        """Leave-pair-out of one group (object ranking) in the G form (eq. 33, docs/design/exact-cv.md).  Removing the
        pair {i, j} of tie cells (a, b) removes from L the part c sum_t delta_t P_t (delta_t = [t != a] + [t != b], P_t
        the centring inside cell t), shared by the cell pair, and Delta_2 = B C B^T of rank <= T + 2 on B = [e_i, e_j,
        1_0 .. 1_T-1].  The first is the model with the root S_1 of within-cell factors n - n_t - delta_t: one Cholesky
        factor of S_1 K S_1 + alpha I (+ tau 1 1^T / m on S_1's null space) per cell pair, G_1 its inverse; the second
        is the virtual-target update of :func:`_pair_updates` relative to that model, O(T^3) per pair."""
        p, cells = self.problem, self.problem.cells
        m, T, v, c = self.m, cells.n_groups, self.Y.shape[1], float(self.problem.pair_weight()[0])
        check_dense_memory(m, 7, "leave-pair-out of the tie-excluded model (kernel, factor, inverse, products)")
        self.__dict__.pop("_SKS", None)
        n_t, co = cells.sizes.astype(np.float64), cells.offsets
        pc = self.groups.inverse[cells.order]
        Kc = self.K[np.ix_(pc, pc)]
        diff_cells = Kc.sum() - sum(Kc[a:b, a:b].sum() for a, b in zip(co[:-1], co[1:]))
        trace = c * (float(np.repeat(m - n_t, cells.sizes) @ np.diag(Kc)) - diff_cells)  # trace(L K) >= sigma_max
        S = functools.partial(p.apply_S_cells, centre=False)
        _warn_below_g_form_ratio(alpha, trace, "S K S", "model with exclude_ties=True", lambda V: S(Kc @ S(V)), m)
        Yc = cells.take(self.Y)
        pos, cp = cells.inverse[pairs], cells.codes[pairs]
        out = np.empty((pairs.shape[0], 2, v))
        for a, b in sorted({(int(min(x, y)), int(max(x, y))) for x, y in cp}):
            delta = (np.arange(T) != a) + (np.arange(T) != b).astype(np.float64)
            root = functools.partial(p.apply_S_cells, fewer=delta)
            A1 = np.asfortranarray(root(root(Kc).T))
            tau = float(np.mean(np.diag(A1))) or 1.0
            A1[np.diag_indices(m)] += alpha
            A1 += tau / m
            Gt, G = _spd_inverse(A1, root(Yc), alpha)
            del A1
            SpG = root(G, pseudo_inverse=True)  # S_1^+ G_1
            del G
            Ms = root(SpG.T, pseudo_inverse=True)  # S_1^+ G_1 S_1^+
            P = Kc @ root(SpG.T)  # K S_1 G_1 S_1^+
            del SpG
            f1, g = Kc @ root(Gt), root(Gt, pseudo_inverse=True)
            within = c * (m - n_t - delta)
            S2 = _cell_operator(cells.codes[cells.order], n_t, 1.0 / (c * m),
                                np.divide(1.0, within, out=np.zeros(T), where=within > 0))  # S_1^+2
            S2 -= alpha * Ms  # S_1^+ (I - alpha G_1) S_1^+
            del Ms
            _pair_updates(out, np.arange(pairs.shape[0]), cp, pos, (a, b), n_t, c, alpha, S2, g, P, f1)
        return out

    def _lpo_groups(self, pairs, alpha):
        """Leave-pair-out of several groups in the G form: per group q and pair of tie cells, the removal of c
        sum_t delta_t P_t (see :meth:`_lpo_one_group`) is a virtual-target update on q's rows with E_1 = sum_t
        lambda_t P_t, lambda_t = delta_t / (n_q - n_t) (:func:`_cell_update`), O(n_q^3) from the blocks of one G per
        alpha; then every pair is the same rank-(T + 2) update (:func:`_pair_updates`).  A pair that leaves its group
        only tied rows removes every edge of the group: its predictions are the group's leave-group-out."""
        p, gi, cells = self.problem, self.groups, self.problem.cells
        G, Gt, K_S = self._G_form(alpha)
        (first_cell, n_cells), f, off = self._group_cells, K_S(Gt), gi.offsets
        pos, cp, gq = cells.inverse[pairs], cells.codes[pairs], gi.codes[pairs[:, 0]]
        out = np.empty((pairs.shape[0], 2, self.Y.shape[1]))
        stripped = np.zeros(pairs.shape[0], dtype=bool)  # pairs whose group keeps no edge: leave-group-out
        for q in np.unique(gq):
            at, rows, T = np.flatnonzero(gq == q), np.arange(off[q], off[q + 1]), int(n_cells[q])
            n, c, t0 = rows.size, float(p.pair_weight()[q]), int(first_cell[q])
            n_t = cells.sizes[t0:t0 + T].astype(np.float64)
            cl = np.repeat(np.arange(T), cells.sizes[t0:t0 + T])
            within = c * (n - n_t)
            Sp = _cell_operator(cl, n_t, 1.0 / np.sqrt(c * n),
                                np.divide(1.0, np.sqrt(within), out=np.zeros(T), where=within > 0))
            Grows = G(rows)
            Gqq, Gtq = Grows[rows], Gt[rows]
            KSG = K_S(Grows, rows)
            for a, b in sorted({(int(min(x, y)), int(max(x, y))) for x, y in cp[at] - t0}):
                if np.count_nonzero(n_t - (np.arange(T) == a) - (np.arange(T) == b)) <= 1:  # one cell is left
                    local = cp[at] - t0
                    stripped[at[(local.min(axis=1) == a) & (local.max(axis=1) == b)]] = True
                    continue
                delta = (np.arange(T) != a) + (np.arange(T) != b).astype(np.float64)
                lam = np.divide(delta, n - n_t, out=np.zeros(T), where=n > n_t)
                updated = _cell_update(Sp, cl, n_t, lam, Gqq, Gtq, KSG, f[rows], alpha)
                _pair_updates(out, at, cp - t0, pos - off[q], (a, b), n_t, c, alpha, *updated)
        if stripped.any():  # the model without the group's edges: the group held whole, accurate (no 1 - h)
            sets = [self._group_rows[q] for q in np.unique(gq[stripped])]
            lgo = np.empty_like(self.Y)
            lgo[np.concatenate(sets)] = self._cut_sets(sets, alpha, (G, Gt, K_S))
            out[stripped] = lgo[pairs[stripped]]
        return out


def _columns_without(G, GW, cW, W, index):
    """Columns ``index`` of G' = G - G_.W G_WW^-1 G_W. (``cW``: the Cholesky factor of G_WW), the G form of the model
    without the whole groups W; the rows of W are zeroed, as they leave S (S' v = S v with them zeroed)."""
    Gi = G(index)
    Gi = Gi - GW @ scipy.linalg.cho_solve(cW, Gi[W], check_finite=False)
    Gi[W] = 0.0
    return Gi


def _cell_update(Sp, cl, n_t, lam, GAA, GtA, KSG, fA, alpha):
    """The model of the rows A (one group or several, tie cells ``cl`` of sizes ``n_t``) after the cell-wise part of a
    removal, E_1 = sum_t lam_t P_t: with V an orthonormal basis of the centred vectors of the cells with lam_t > 0 and
    V_h = V diag(lam)^1/2, the virtual-target update goes through the SPD M = diag(1 - lam) + alpha V_h^T G_AA V_h,
    whose 1 - lam is exact (0 for a cell that loses every edge: no cancellation against alpha G).  Returns what the
    rank-(|U| + T) step reads: Ms = S^+ H S^+ + Z M^-1 Z^T (Z = S^+ H V_h, H = I - alpha G), h = S^+ G t +
    Z M^-1 V_h^T G t, P = K S G S^+ + K S G V_h M^-1 Z^T and the predictions f_0 = f - alpha K S G V_h M^-1 V_h^T
    G t, all on A (Sp = S^+, GAA, GtA, KSG = (K S G)_AA and fA given on A)."""
    cells = [t for t in range(n_t.size) if lam[t] > 0 and n_t[t] > 1]
    if not cells:  # no cell-wise part (M would be 0 x 0: SciPy before 1.14 refuses to factor it)
        return Sp @ Sp - alpha * (Sp @ GAA @ Sp), Sp @ GtA, KSG @ Sp, fA
    starts = np.r_[0, np.cumsum(n_t)].astype(np.int64)
    V = np.zeros((cl.size, int(sum(n_t[t] - 1 for t in cells))))
    lam_col, col = np.empty(V.shape[1]), 0
    for t in cells:  # Helmert columns: an orthonormal basis of the vectors centred inside cell t
        k = int(n_t[t])
        H = np.triu(np.ones((k, k - 1)))  # column j: 1 on rows 0..j, -(j + 1) on row j + 1
        H[np.arange(1, k), np.arange(k - 1)] = -np.arange(1, k)
        V[starts[t]:starts[t + 1], col:col + k - 1] = H / np.sqrt(np.arange(1, k) * np.arange(2, k + 1))
        lam_col[col:col + k - 1] = lam[t]
        col += k - 1
    Vh = V * np.sqrt(lam_col)
    GV = GAA @ Vh
    M = scipy.linalg.cho_factor(np.diag(1.0 - lam_col) + alpha * (Vh.T @ GV), overwrite_a=True, check_finite=False)
    Z = Sp @ (Vh - alpha * GV)
    MZ = scipy.linalg.cho_solve(M, Z.T, check_finite=False)
    MG = scipy.linalg.cho_solve(M, Vh.T @ GtA, check_finite=False)
    R = KSG @ Vh
    return Sp @ Sp - alpha * (Sp @ GAA @ Sp) + Z @ MZ, Sp @ GtA + Z @ MG, R @ MZ + KSG @ Sp, fA - alpha * (R @ MG)


def _cell_operator(cl, n_t, between, within):
    """The n x n matrix between P_B + sum_t within_t P_t of rows in tie cells ``cl`` (codes 0..T-1, sizes ``n_t``): P_B
    the between-cell centring, P_t the centring inside cell t (the algebra of the tie-excluding L and its roots)."""
    ind = np.eye(n_t.size)[cl]
    return (ind * ((between - within) / n_t)) @ ind.T - between / cl.size + np.diag(np.asarray(within)[cl])


def _rest_of_removal(cu, qt, n_q, n_t, delta, c_t):
    """C of Delta_2 = B C B^T, the rest of a removal after its cell-wise part, on B = [e_u for the held rows, 1_t for
    the cells]: the held rows' stars less their common edges, net of the within-cell degrees ``delta`` that part
    took.  Held rows in cells ``cu``; cells of groups ``qt``, sizes ``n_t``, their groups' sizes ``n_q`` and pair
    weights ``c_t``."""
    nU, T, gu = cu.size, qt.size, qt[cu]
    cross = (gu[:, None] == gu[None, :]) & (cu[:, None] != cu[None, :])  # the edges between held rows
    C = np.zeros((nU + T, nU + T))
    C[:nU, :nU] = cross
    C[np.arange(nU), np.arange(nU)] = n_q[cu] - n_t[cu] - cross.sum(axis=1)
    C[:nU, nU:] = -1.0 * ((qt[None, :] == gu[:, None]) & (np.arange(T)[None, :] != cu[:, None]))
    C[nU:, :nU] = C[:nU, nU:].T
    C[nU + np.arange(T), nU + np.arange(T)] = delta / n_t
    return C * np.concatenate([c_t[cu], c_t])[:, None]


def _pair_updates(out, at, cp, pos, cell_pair, n_t, c, alpha, Ms, h, P, f0):
    """Leave-pair-out predictions, into ``out[at]``, of the pairs (rows ``pos``, cells ``cp``, local to one group of
    cells of sizes ``n_t``, pair weight ``c``) whose cells are ``cell_pair`` in either order.  Removing the pair leaves,
    after the cell pair's model (within-cell degrees lowered by delta), Delta_2 = B C B^T on B = [e_i, e_j, 1_0 ..
    1_T-1]: x solves (I - C B^T Ms B) x = alpha C B^T h and f' = f0 - P B x, with that model's Ms = S^+ H S^+,
    h = S^+ G t, P = K S G S^+ and predictions f0.  O(T^3) per pair."""
    n, T, v = Ms.shape[0], n_t.size, h.shape[1]
    e, (a, b) = np.arange(T), cell_pair
    delta = (e != a) + (e != b).astype(np.float64)
    starts = np.concatenate([[0], np.cumsum(n_t)[:-1]]).astype(np.int64)
    MsI, PI, hI = (np.add.reduceat(Z, starts, axis=ax) for Z, ax in ((Ms, 1), (P, 1), (h, 0)))
    MII = np.add.reduceat(MsI, starts, axis=0)
    for ci, cj in {(a, b), (b, a)}:
        sel = at[(cp[at, 0] == ci) & (cp[at, 1] == cj)]
        C = _rest_of_removal(np.array([ci, cj]), np.zeros(T, int), np.full(T, float(n)), n_t, delta, np.full(T, c))
        for chunk in np.array_split(sel, max(1, sel.size // 65536)):
            I, J = pos[chunk, 0], pos[chunk, 1]
            BMB = np.empty((chunk.size, T + 2, T + 2))
            BMB[:, 0, 0], BMB[:, 1, 1], BMB[:, 0, 1] = Ms[I, I], Ms[J, J], Ms[I, J]
            BMB[:, 1, 0] = BMB[:, 0, 1]
            BMB[:, 0, 2:], BMB[:, 1, 2:] = MsI[I], MsI[J]
            BMB[:, 2:, 0], BMB[:, 2:, 1] = MsI[I], MsI[J]
            BMB[:, 2:, 2:] = MII
            Bh = np.concatenate([h[I][:, None], h[J][:, None], np.broadcast_to(hI, (chunk.size, T, v))], axis=1)
            x = np.linalg.solve(np.eye(T + 2) - C @ BMB, alpha * (C @ Bh))
            for k, R in enumerate((I, J)):
                PB = np.concatenate([P[R, I][:, None], P[R, J][:, None], PI[R]], axis=1)
                out[chunk, k] = f0[R] - np.einsum("pb,pbk->pk", PB, x)


class HoldoutEngine(_OnProblem):
    """The route policy (:meth:`_route`: a feature map, ``exclude_ties`` or the dense :class:`DualRoute`, which takes
    one Cholesky factor per alpha until a spectral factor exists, :meth:`decompose`) on one training problem.

    Without an explicit alpha a hold-out retrains as the estimator's ``fit`` would on the training part: RankRLS
    keeps alpha; MPRank keeps C, so alpha = m_train^2 / (2 C) (Cortes et al. eq. 17: MPRank on m - |U| points)."""

    def __init__(self, problem, spec, *, verbose=0):
        self.problem, self.spec, self.verbose = problem, spec, verbose
        self.kspec = spec.kernel_spec(problem.n_features)
        gi, X = problem.groups, problem.X
        self.Xg = X if gi.is_identity else take_rows(X, gi.order)
        # fit's choice of the primal solver (the linear kernel with n_features < m), the low-rank route without ties
        self.primal = self.kspec.linear and problem.n_features < problem.m and spec.solver != "dual"
        self.low_rank = self.primal and not spec.exclude_ties
        # threads by the work, p x p systems (m p^2) or the m x m kernel's factor (m^3); n_jobs caps them, so that
        # asking for more threads never makes a small problem slower than one thread
        work = problem.m * float(problem.n_features) ** 2 if self.low_rank else float(problem.m) ** 3
        self.n_threads = min(threads_for_work(work), spec.n_jobs or cpu_budget())
        self.features = self.tie_features = None
        if spec.basis_vectors is not None:
            # subset of regressors: the same basis rows a fit would choose (eq. 41), as a feature map
            basis = select_basis(problem.m, spec.basis_vectors, spec.random_state)
            check_dense_memory(problem.m, 1, "kernel block K(X, X_R)", n_cols=basis.size)
            KR = np.asarray(X[:, basis], dtype=np.float64) if self.kspec.precomputed else \
                kernel_block(self.kspec, X, take_rows(X, basis), self.n_threads)
            self.features = _holdout.basis_features(KR, KR[basis])[0]
            if spec.exclude_ties:  # hold-out sets in feature space; pairs take the tie route on Phi Phi^T
                self.features, self.tie_features = None, self.features
        elif self.low_rank:
            # the dense route's kernel check (_kernels.kernel_block) for X^T L X, whose entries reach m |x_i|^2: the
            # routes would return NaN predictions or fail in LAPACK
            with np.errstate(over="ignore"):
                if not np.isfinite(problem.m * float(np.max(row_sq_norms(X)))):
                    raise ValueError("linear kernel: inner products of rows of X overflow float64; rescale X")
            self.features = _holdout.linear_features(X)  # X itself: no m x m matrix for hold-out sets
        elif self.kspec.linear:
            _warn_feature_offsets(group_offset_ratio(X, problem.groups))
            if self.primal:  # exclude_ties: hold-out sets in feature space; pairs take the tie route
                self.tie_features = _holdout.linear_features(X)

    # ---- the routes, built on first use ----------------------------------------------------------
    @functools.cached_property
    def dual(self):
        return DualRoute(self, low_rank=self.low_rank)

    @functools.cached_property
    def feature(self):
        return FeatureRoute(self, self.features)

    @functools.cached_property
    def tie(self):
        return TieExcludedRoute(self)

    @functools.cached_property
    def tie_feature(self):
        return FeatureRoute(self, self.tie_features)

    @property
    def basis(self):
        return self.spec.basis_vectors is not None  # low_rank as well for a linear kernel with n < m

    def _route_name(self):
        """Which route :meth:`_route` returns, without building it (the tie route forms the m x m kernel)."""
        return "tie" if self.spec.exclude_ties else "feature" if self.features is not None else "dual"

    def _route(self):
        return getattr(self, self._route_name())

    def _holdout_route(self):
        """:meth:`_route` for hold-out sets (leave-group-out too, with exclude_ties): linear exclude_ties models with
        n_features < m solve p x p systems there as other linear models do, not the tie route's m x m ones."""
        return self.tie_feature if self.tie_features is not None else self._route()

    # ---- the dense route's kernel (group order), targets (group order) and object-ranking pair weight
    K = property(lambda self: self.dual.K)
    Yg = property(lambda self: self.dual.Yg)
    c = property(lambda self: self.dual.c)
    alpha = property(lambda self: self.spec.alpha_for(self.m))

    def prepare_grid(self, n_alphas):
        if n_alphas > SHARED_FACTOR_MIN_ALPHAS:
            self.decompose()
        elif self._route_name() == "dual":
            self.dual.grid_alphas = n_alphas

    def decompose(self):
        """The spectral factor of S K S, shared by every alpha from now on (dense kernel models)."""
        return None if self.spec.exclude_ties or self.basis else self.dual.decompose()

    def solve(self, alpha):
        """The model fitted on all the data at ``alpha`` from this engine's factorization, as a solver
        :class:`~fastrank._solvers.Fit` ("primal" for the linear kernel with n < m, else "dual"); not for basis-vector
        models (no shared factor: their O(m |R|^2) fit is cheap)."""
        if self.low_rank:
            return Fit("primal", coef=self.dual.solve_primal(alpha)[None])
        if self.spec.exclude_ties:  # fit's solve (the tie route keeps no factor of the full model), on dense rows
            problem = self.problem._replace(X=densified(self.problem.X))
            alphas = np.array([float(alpha)])
            with compute_region(self.n_threads):
                if self.primal:
                    return solve_primal(problem, alphas, self.n_threads)
                return solve_dual(problem, self.kspec, alphas, self.n_threads)
        A = self.dual.solve(alpha)  # dense: no feature map here
        X = self.problem.X
        coef = np.asarray(_centred_features(X).T @ A)[None] if self.kspec.linear else None
        return Fit("dual", coef=coef, dual_coef=A[None], X_fit=None if self.kspec.precomputed else X)

    # ---- leave-pair-out ----------------------------------------------------------------------------
    def default_pairs(self):
        """All i < j (inside groups when grouped), lexicographic, in the caller's row order."""
        if not self.grouped:
            # i, j and the stacked int64 pairs: about two m x m float64 matrices' worth of bytes
            check_dense_memory(self.m, 2, "list of all leave-pair-out pairs (m (m - 1) / 2 index pairs)")
            return np.stack(np.triu_indices(self.m, 1), axis=1).astype(np.int64, copy=False)
        # row i pairs with the members after it in its group's (stable, increasing) block: taken in row order, the
        # pairs come out lexicographic without a sort
        gi = self.groups
        after = gi.inverse + 1  # position of the next member of row i's group
        count = gi.offsets[gi.codes + 1] - after
        n_pairs = int(count.sum())
        check_dense_memory(n_pairs, 2, "array of the leave-pair-out index pairs", n_cols=2)
        first = np.repeat(np.arange(self.m, dtype=np.int64), count)
        run_start = np.repeat(np.cumsum(count) - count, count)
        second = gi.order[np.repeat(after, count) + (np.arange(n_pairs) - run_start)]
        return np.stack([first, second.astype(np.int64, copy=False)], axis=1)

    def check_pairs(self, pairs):
        pairs = _asarray(pairs, "pairs")
        if pairs.ndim != 2 or pairs.shape[1] != 2:
            raise ValueError(f"pairs must have shape (n_pairs, 2), got {pairs.shape}")
        # whole floats are indices once known to be in range (no overflowing cast)
        if pairs.size and not whole_numbers(pairs):
            raise ValueError("pairs must contain integer indices")
        if pairs.size and (pairs.min() < 0 or pairs.max() >= self.m):
            raise ValueError(f"pair indices must lie in [0, {self.m}), got range [{pairs.min()}, {pairs.max()}]")
        pairs = np.ascontiguousarray(pairs, dtype=np.int64)
        twice = np.flatnonzero(pairs[:, 0] == pairs[:, 1])
        if twice.size:
            raise ValueError(f"pair {twice[0]} holds out the same index twice ({pairs[twice[0], 0]})")
        codes = self.groups.codes[pairs]  # all 0 without groups
        bad = np.flatnonzero(codes[:, 0] != codes[:, 1])
        if bad.size:
            k = bad[0]
            raise ValueError(f"pair {k} = ({pairs[k, 0]}, {pairs[k, 1]}) joins inputs from different groups; "
                             "leave-pair-out with groups holds out pairs of one group")
        return pairs

    def training_pairs(self, pairs=None, *, required=False, scored=None, columns=None):
        """``pairs`` checked (:meth:`check_pairs`; default :meth:`default_pairs`), each leaving a training pair and a
        preference in the targets' ``columns`` (default all; :func:`require_training_preferences`); ``required``: at
        least one pair; ``scored`` (the caller's name for messages): only untied pairs are scored, so only they are
        checked for a preference."""
        listed = pairs is not None
        pairs = self.check_pairs(pairs) if listed else self.default_pairs()
        if required and pairs.shape[0] == 0:
            raise ValueError("no pairs to leave out (every group has fewer than two members)")
        self.check_pairs_leave_training(pairs)
        self.check_pair_preferences(pairs if listed else None, scored=scored, columns=columns)
        return pairs

    def check_pair_preferences(self, pairs=None, *, scored=None, columns=None):
        """:func:`require_training_preferences` of held-out ``pairs``; ``pairs=None``, the default pairs, checks in
        O(m) only the pairs that can fail: none while two groups hold a preference in a column, else the pairs of
        that column's one such group holding out every row whose target differs from the group's most frequent one
        (all its pairs when it has at most three rows)."""
        Y = self.Y if columns is None else self.Y[:, columns]
        if pairs is None:
            low, high = group_target_range(Y, self.groups)
            spread = high > low
            candidates, single = [np.empty((0, 2), np.int64)], np.flatnonzero(spread.sum(axis=0) == 1)
            members = self.groups.rows() if single.size else None
            for c in single:
                rows = np.sort(members[int(np.flatnonzero(spread[:, c])[0])])
                _, inv, counts = np.unique(Y[rows, c], return_inverse=True, return_counts=True)
                others, common = rows[inv != counts.argmax()], rows[inv == counts.argmax()]
                if rows.size <= 3:
                    candidates.append(np.stack([rows[a] for a in np.triu_indices(rows.size, 1)], axis=1))
                elif others.size <= 2:
                    candidates.append(np.sort(np.r_[others, common[:2 - others.size]])[None])
            pairs = np.unique(np.concatenate(candidates).astype(np.int64), axis=0)
        prefix = "" if scored is None else f"{scored}: "
        require_training_preferences(self.groups, Y, pairs, lambda k: f"{prefix}held-out pair {pairs[k]}",
                                     skip_tied=scored is not None)

    def check_pairs_leave_training(self, pairs=None):
        """Holding out a pair must leave at least one training pair (``pairs=None``: the default pairs, by their groups'
        sizes; not with exclude_ties)."""
        if pairs is not None and pairs.shape[0] == 0:
            return
        # by group (one group: every pair has n = m, no per-pair lookup); a one-row group has no pair to fail
        n = self.groups.sizes.astype(np.float64)
        if pairs is not None and (self.grouped or self.problem.exclude_ties):  # by pair
            n = n[self.groups.codes[pairs[:, 0]]]
        removed = 2 * n - 3
        if pairs is not None and self.problem.exclude_ties:  # the edges of i and j: partners outside their tie cells
            ci, cj = self.problem.cells.codes[pairs[:, 0]], self.problem.cells.codes[pairs[:, 1]]
            removed = (n - self.problem.cells.sizes[ci]) + (n - self.problem.cells.sizes[cj]) - (ci != cj)
        if np.any(self.problem.n_relevant_pairs() - removed <= 0.5):
            raise ValueError("holding out a pair leaves no training pairs (every training pair touches it)")

    def shaped(self, out):
        return out[..., 0] if self.one_d else out

    def _lpo_alpha(self, alpha):
        return self.spec.alpha_for(self.m - 2) if alpha is None else alpha

    @functools.cached_property
    def twins(self):
        """:func:`twin_rows` of the training rows (of the kernel's rows when precomputed)."""
        return twin_rows(self.problem.X)

    def _twin_pairs(self, pairs):
        """Which pairs join two identical rows (their retrained model predicts both alike), or None."""
        return None if self.twins is None else self.twins[pairs[:, 0]] == self.twins[pairs[:, 1]]

    def lpo(self, pairs, alpha=None):
        """(n_pairs, 2) or (n_pairs, 2, v) held-out predictions (Lemma 2, eqs. 34-39); a pair of identical rows gets
        the mean of its two (:func:`twin_rows`)."""
        pairs = np.ascontiguousarray(pairs, dtype=np.int64)
        if pairs.shape[0] == 0:  # no factor needed (and no width for the routes' reshape(0, -1) to infer)
            return self.shaped(np.empty((0, 2, self.Y.shape[1])))
        out = self._route().lpo(pairs, self._lpo_alpha(alpha)).reshape(pairs.shape[0], 2, self.Y.shape[1])
        twin = self._twin_pairs(pairs)
        if twin is not None and twin.any():
            out[twin] = out[twin].mean(axis=1, keepdims=True)
        return self.shaped(out)

    def n_default_pairs(self):
        """The number of :meth:`default_pairs`."""
        n = self.groups.sizes.astype(np.float64)
        return int((n * (n - 1) / 2).sum())

    def lpo_all_pairs(self, alpha=None):
        """:meth:`lpo` of :meth:`default_pairs` (with their check that a training pair remains); feature
        maps never list the pairs (the C++ loop generates them; pairs of identical rows are found by their place in
        that order, :meth:`_twin_pair_places`), other routes take the listed pairs."""
        if self.features is None:  # no feature map (as with exclude_ties)
            return self.lpo(self.training_pairs(), alpha)
        self.check_pairs_leave_training()
        self.check_pair_preferences()
        n_pairs = self.n_default_pairs()
        check_dense_memory(n_pairs, 1, "array of all leave-pair-out pairs' predictions", n_cols=2 * self.Y.shape[1])
        out = self.feature.lpo_all_pairs(self._lpo_alpha(alpha)).reshape(n_pairs, 2, self.Y.shape[1])
        if self.twins is not None:  # one retrained model predicts a pair of identical rows alike, as lpo does
            at = self._twin_pair_places()
            out[at] = out[at].mean(axis=1, keepdims=True)
        return self.shaped(out)

    def _twin_pair_places(self):
        """Places in :meth:`default_pairs` of the pairs of identical rows (:attr:`twins`) inside a group, without
        listing the pairs: (i, j), i < j, comes after the pairs of every row before i (each row k pairs with the rows
        of its group after it) and after i's partners before j.  O(m + twin pairs)."""
        gi, m = self.groups, self.m
        rank = np.empty(m, dtype=np.int64)  # place of each row among its group's rows (gi.order is stable)
        rank[gi.order] = np.arange(m) - np.repeat(gi.offsets[:-1], gi.sizes)
        later = gi.sizes[gi.codes] - 1 - rank  # partners after each row
        before = np.concatenate([[0], np.cumsum(later)[:-1]])
        key = gi.codes.astype(np.int64) * m + self.twins  # a class: identical rows of one group
        order = np.lexsort((np.arange(m), key))
        _, start, size = np.unique(key[order], return_index=True, return_counts=True)
        places = [np.empty(0, dtype=np.int64)]
        for n in np.unique(size[size > 1]):  # the classes of n rows at once
            rows = order[start[size == n][:, None] + np.arange(n)]  # ascending in each class
            a, b = np.triu_indices(n, 1)
            i, j = rows[:, a].ravel(), rows[:, b].ravel()
            places.append(before[i] + rank[j] - rank[i] - 1)
        return np.concatenate(places)

    def lpo_disagreement(self, pairs, alpha=None):
        """Pairwise disagreement of the leave-pair-out predictions per output column (``pairs`` not empty); a pair of
        identical rows is predicted alike by its retrained model (:func:`twin_rows`), so it counts 1/2 where its
        targets differ, without a solve."""
        alpha, pairs = self._lpo_alpha(alpha), np.ascontiguousarray(pairs, dtype=np.int64)
        twin = self._twin_pairs(pairs)
        if twin is None or not twin.any():
            return self._route_disagreement(pairs, alpha)
        rest, Y = np.ascontiguousarray(pairs[~twin]), self.Y
        n_twin, n_rest = (np.count_nonzero(Y[p[:, 0]] != Y[p[:, 1]], axis=0) for p in (pairs[twin], rest))
        wrong = np.nan_to_num(self._route_disagreement(rest, alpha)) * n_rest if rest.size else 0.0
        total = n_twin + n_rest
        return np.where(total > 0, (wrong + 0.5 * n_twin) / np.maximum(total, 1), np.nan)

    def _route_disagreement(self, pairs, alpha):
        route = self._route()
        if route is self.dual:
            return route.lpo(pairs, alpha, disagreement=True)
        return pair_disagreement(route.lpo(pairs, alpha), self.Y[pairs])  # (n_pairs, 2, v) from both other routes

    # ---- hold-out sets -----------------------------------------------------------------------------
    def holdout(self, sets, alpha=None):
        """Predictions for each set (list of index arrays, caller's order) in one concatenation; identical rows of one
        set get the mean of theirs (:func:`twin_rows`)."""
        if alpha is None and self.spec.C is not None:
            # MPRank: sets of one size share the retrained alpha; one pass per distinct size
            sizes = np.array([len(s) for s in sets])
            if self._route_name() == "dual":  # one alpha per size: a grid for the dual route's choice of factor
                self.dual.grid_alphas = max(self.dual.grid_alphas, np.unique(sizes).size)
            out = np.empty((sizes.sum(), self.Y.shape[1]))
            for size in np.unique(sizes):
                same = sizes == size
                out[np.repeat(same, sizes)] = self.holdout([s for s, keep in zip(sets, same) if keep],
                                                           self.spec.alpha_for(self.m - int(size)))
            return out
        alpha = self.alpha if alpha is None else alpha
        unit = np.repeat(np.arange(len(sets)), [len(s) for s in sets])
        return alike(self._holdout_route().holdout(sets, alpha), np.concatenate(sets), unit, self.twins)

    def leave_group_out(self, alpha=None):
        """(m, v) predictions, each group held out in turn (eq. 33): from the spectral factor when it exists, else
        from the Cholesky factor of ``S K S + alpha I`` and the diagonal blocks of its inverse (MPRank, whose alpha
        depends on each group's size: through :meth:`holdout`)."""
        self.require_preferences_without_each_group()  # else some routes would predict with a zero model
        return self._leave_group_out(alpha)

    def _leave_group_out(self, alpha):
        if (self.spec.C is not None and alpha is None) or self.spec.exclude_ties \
                or (self._route_name() == "dual" and self.dual.factored()):  # each group as a hold-out set
            return self.holdout_rows(self.groups.rows(), alpha)
        return self._alike_in_groups(self._route().leave_group_out(self.alpha if alpha is None else alpha))

    def _alike_in_groups(self, out):
        """(m, v) predictions, each group's by one model: :func:`alike` inside the groups."""
        return alike(out, np.arange(self.m), self.groups.codes, self.twins)

    def holdout_rows(self, sets, alpha=None):
        """(m, v) predictions in row order, each set's rows by the model retrained without that set (disjoint sets);
        rows in no set are NaN."""
        out = np.full_like(self.Y, np.nan)
        out[np.concatenate(sets)] = self.holdout(sets, alpha)
        return out

    def leave_group_out_path(self, alphas):
        """(n_alphas, m, v) leave-group-out predictions for a grid of alphas: dense kernel models with 5 or more
        alphas share one eigendecomposition (``cv_leave_group_out_path``, about 4-5 Cholesky leave-group-outs at m =
        2000); other models and short grids take one leave-group-out per alpha."""
        self.require_preferences_without_each_group()
        # the predictions of every alpha, and for the shared factor the solver's output of predictions and coefficients
        check_dense_memory(alphas.size, 3, "leave-group-out predictions and coefficients of every alpha",
                           n_cols=self.m * self.Y.shape[1], advice="Use a shorter grid of alphas (RankRLSCV's default "
                           "has 13), or score it in parts.")
        if not self.shares_leave_group_out_path(alphas.size):
            return np.stack([self._leave_group_out(float(a)) for a in alphas])
        out = self.dual.leave_group_out_path(alphas)
        for predictions in out:
            self._alike_in_groups(predictions)
        return out

    def shares_leave_group_out_path(self, n_alphas):
        """Whether :meth:`leave_group_out_path` solves ``n_alphas`` alphas from one eigendecomposition; it fails, if at
        all, at the grid's smallest alpha (S K S + alpha I has eigenvalues lambda + alpha)."""
        return self.spec.C is None and self._route_name() == "dual" and n_alphas >= 5

    def check_sets(self, sets):
        sets = check_sets(sets, self.m, min_train=0)
        if sets:
            require_training_preferences(self.groups, self.Y, sets, "hold-out set {}".format)
        return sets

    def require_preferences_without_each_group(self):
        """:func:`require_training_preferences` with each group held out: another group must keep a preference in
        every output column (O(m), not the general count over sets)."""
        gi = self.groups
        low, high = group_target_range(self.Y, gi)
        spread = high > low
        kept = spread.sum(axis=0) > spread
        if not kept.all():
            k = int(np.flatnonzero(~kept.all(axis=1))[0])
            raise ValueError(_no_preference(f"holding out group {gi.labels[k]}", ~kept[k]))


def alike(out, rows, unit, twins):
    """``out`` (n, v), the predictions of ``rows`` where row k is predicted by the model retrained for ``unit[k]``,
    with the identical rows (``twins``: :func:`twin_rows`) of one unit set to their mean, in place; returns out."""
    if twins is None:
        return out
    _, inv, counts = np.unique(unit.astype(np.int64) * twins.size + twins[rows], return_inverse=True,
                               return_counts=True)
    dup = counts[inv] > 1
    if dup.any():
        sums = np.zeros((counts.size, out.shape[1]))
        np.add.at(sums, inv[dup], out[dup])
        out[dup] = sums[inv[dup]] / counts[inv[dup], None]
    return out


def require_training_preferences(gi, Y, sets, name, *, skip_tied=False):
    """Raise unless the rows outside every hold-out set hold a preference in every column of the (m, v) targets ``Y``
    (two rows of one :class:`GroupIndex` group with different targets), as ``fit`` requires of its data: without one
    the retrained model is zero and the exact formulas return rounding noise for it.  ``sets``: index arrays, or an
    (n_pairs, 2) array of held-out pairs inside groups (``skip_tied``: a pair tied in a column is not scored there, so
    not checked); ``name(k)`` names set k.  A group keeps its preference when the set leaves one of its rows at the
    group's smallest and one at its largest target (counted for all sets at once, O(total set size)); only a set whose
    groups all fail that test has the rows left in its groups compared."""
    low, high = group_target_range(Y, gi)
    at_low, at_high = Y == low[gi.codes], Y == high[gi.codes]
    n_low, n_high = (np.add.reduceat(gi.take(a), gi.offsets[:-1], axis=0, dtype=np.int64) for a in (at_low, at_high))
    spread = high > low
    if isinstance(sets, np.ndarray):  # pairs: one group each
        i, j = sets[:, 0], sets[:, 1]
        t = gi.codes[i]
        kept = (spread.sum(axis=0) > spread[t]) | (skip_tied & (Y[i] == Y[j])) | (
            spread[t] & (n_low[t] - at_low[i] - at_low[j] > 0) & (n_high[t] - at_high[i] - at_high[j] > 0))
    else:  # one entry per (set, group it touches), sorted by set
        rows = np.concatenate(sets)
        keys, local = np.unique(np.repeat(np.arange(len(sets)), [len(s) for s in sets]) * gi.n_groups
                                + gi.codes[rows], return_inverse=True)
        t, first = keys % gi.n_groups, np.flatnonzero(np.r_[True, np.diff(keys // gi.n_groups) > 0])
        lost_low, lost_high = (np.zeros((keys.size, Y.shape[1]), np.int64) for _ in range(2))
        np.add.at(lost_low, local, at_low[rows])
        np.add.at(lost_high, local, at_high[rows])
        keeps = spread[t] & (lost_low < n_low[t]) & (lost_high < n_high[t])
        kept = (spread.sum(axis=0) > np.add.reduceat(spread[t], first, axis=0, dtype=np.int64)) \
            | np.logical_or.reduceat(keeps, first, axis=0)
    for k in np.flatnonzero(~kept.all(axis=1)):  # the rows left in the touched groups decide
        for q in np.unique(gi.codes[sets[k]]):
            left = np.setdiff1d(gi.order[gi.offsets[q]:gi.offsets[q + 1]], sets[k])
            if left.size > 1:
                kept[k] |= np.ptp(Y[left], axis=0) > 0
        if not kept[k].all():
            raise ValueError(_no_preference(name(k), ~kept[k]))


def _no_preference(what, lost):
    return (f"{what} leaves no training pairs with a preference (two rows of one group with different targets) in "
            f"output column(s) {np.flatnonzero(lost).tolist()}: the retrained model would be zero; hold out fewer rows "
            "or other groups")


def check_sets(sets, m, *, min_train=2):
    """Hold-out index sets (arrays or boolean masks) as int64 arrays: non-empty, in range, no repeats, each leaving
    at least ``min_train`` training inputs."""
    if isinstance(sets, (str, numbers.Number)) or not np.iterable(sets):
        raise TypeError(f"test_sets must be a sequence of index arrays or boolean masks, got {sets!r}")
    checked = []
    for k, s in enumerate(sets):
        s = check_indices(s, m, f"hold-out set {k}")
        if m - s.size < min_train:
            raise ValueError(f"hold-out set {k} leaves fewer than {min_train} training inputs (no training pairs)")
        checked.append(s)
    return checked


def check_folds(folds):
    """What resolve_folds checks of ``folds`` without the data: an int k >= 2, or the form of the other values."""
    if isinstance(folds, numbers.Integral) and not isinstance(folds, (bool, np.bool_)):
        if folds < 2:
            raise ValueError(f"folds (RankRLSCV's cv) = {folds} must be at least 2")
    elif isinstance(folds, (str, numbers.Number)) or not (hasattr(folds, "split") or np.iterable(folds)):
        raise TypeError(f"folds (RankRLSCV's cv) must be an int k >= 2, (m,) fold labels, a sequence of index arrays "
                        f"or a scikit-learn splitter, got {folds!r}")


def resolve_folds(folds, engine, groups=None):
    """Disjoint hold-out index sets (checked by ``engine.check_sets``) from an int k, (m,) fold labels, a sequence of
    index arrays or of (train, test) index pairs, or a scikit-learn splitter (its test indices; the targets and
    ``groups``, by default the engine's, are passed to ``split``, as scikit-learn's cross-validation does:
    StratifiedKFold needs y, GroupKFold groups)."""
    m, gi = engine.m, engine.groups
    if groups is None and engine.grouped:  # Factorization.kfold_predictions: the groups it was built with
        groups = gi.labels[gi.codes]
    elif groups is not None and np.shape(groups) != (m,):
        raise ValueError(f"groups must hold one group id per row ({m} rows), got shape {np.shape(groups)}")
    if isinstance(folds, numbers.Integral) and not isinstance(folds, (bool, np.bool_)):
        k = int(folds)
        n, unit = (gi.n_groups, "groups") if engine.grouped else (m, "inputs")
        if not 2 <= k <= n:
            raise ValueError(f"folds (RankRLSCV's cv) = {k} must be between 2 and the number of {unit} ({n})")
        # whole groups round-robin (as fold labels), else contiguous folds
        folds = (np.arange(n) % k)[gi.codes] if engine.grouped else np.array_split(np.arange(m), k)
    check_folds(folds)
    try:  # fold labels as an array, a list or a pandas Series; index sets of different sizes are ragged
        labels = None if hasattr(folds, "split") else np.asarray(folds)
    except (ValueError, TypeError):
        labels = None
    if hasattr(folds, "split"):
        sets = [_test_part(split, k, m) for k, split in
                enumerate(folds.split(np.zeros((m, 1)), engine.shaped(engine.Y), groups))]
    elif labels is not None and labels.ndim == 1 and labels.dtype.kind == "b":
        raise ValueError("folds as one boolean mask is ambiguous: give a list of masks (e.g. [mask, ~mask]) or integer "
                         "fold labels")
    elif labels is not None and labels.ndim == 1 and labels.size \
            and (labels.dtype.kind != "O" or all(np.ndim(v) == 0 for v in labels)):  # fold labels, one per row
        if labels.shape[0] != m:
            raise ValueError(f"fold labels must have one entry per row ({m}), got {labels.shape[0]}")
        missing = labels != labels  # NaN, also inside an object array
        if missing.any():
            raise ValueError(f"fold labels must not be NaN (row {int(np.argmax(missing))}); to leave rows out of every "
                             "fold give the folds as index sets")
        try:
            sets = [np.flatnonzero(labels == lab) for lab in np.unique(labels)]
        except TypeError:  # e.g. None next to strings
            raise TypeError(f"fold labels must be mutually comparable (one type), got the types "
                            f"{sorted({type(v).__name__ for v in labels})}") from None
    else:  # index sets, or scikit-learn's (train, test) pairs (list(KFold(3).split(X))), whose test parts are the sets
        sets = [_test_part(s, k, m) if isinstance(s, tuple) and len(s) == 2 and all(np.ndim(p) == 1 for p in s) else s
                for k, s in enumerate(folds)]
    if not sets:
        raise ValueError("the folds hold no hold-out set; give k >= 2, fold labels, index sets or a splitter")
    sets = engine.check_sets(sets)
    seen = np.bincount(np.concatenate(sets), minlength=m)
    if (seen > 1).any():  # a row's prediction comes from the one model trained without it
        raise ValueError(f"folds must be disjoint: row {int(np.argmax(seen > 1))} is in more than one hold-out set; "
                         "give a partition of the rows (e.g. KFold or GroupKFold)")
    return sets


def _test_part(split, k, m):
    """The test indices of scikit-learn's (train, test) pair ``split`` number k, whose training part must be every other
    row: the exact formulas retrain on all of them."""
    train, test = (check_indices(p, m, f"split {k}'s {part} indices") for p, part in zip(split, ("training", "test")))
    seen = np.zeros(m, dtype=bool)
    seen[train] = True
    if train.size + test.size != m or seen[test].any():  # each part is free of repeats: disjoint means all rows
        raise ValueError(f"split {k} trains on {train.size} rows, not on the {m - test.size} rows outside its test set "
                         "that exact cross-validation retrains on: use a splitter whose training part is the rest of "
                         "the rows (KFold, GroupKFold, StratifiedKFold, LeaveOneGroupOut; not TimeSeriesSplit or a "
                         "train_size)")
    return test


# Preference graphs with at most this many edges per row take the symmetric edge form (l x l, accurate at small alpha)
EDGE_FORM_MAX_EDGES_PER_ROW = 2


class PreferenceRoute:
    """Exact hold-out predictions on a preference graph (004 eq. 33 in its general form): each set U predicted by the
    model retrained without every edge touching U.  Graphs of at most 2 edges per row: the edge form
    (:meth:`_edge_form`).  Denser graphs: with P = L K + alpha I factorized once (A = P^-1 b, eq. 17), removing U's
    edges changes L and b only on B = U and its neighbours: L' = L - E_B D E_B^T, b' = b - E_B d.  U then has no edge,
    so A'_U = 0 and by the Woodbury identity A' = H b' + H E_B D (I - K_B. H E_B D)^-1 K_B. H b', H = P^-1: O(m^2 |B|)
    per set instead of O(m^3); below HOLDOUT_LU_MIN_RATIO sigma_max, where the update loses digits, each set is
    retrained (:meth:`_retrained`)."""

    # the kernel, the LU factor of L K + alpha I (built in place of L K, next to the dense L) and, for a set whose
    # edges reach every row, E_B and H E_B
    DENSE_MATRICES = 4

    def __init__(self, problem, spec):
        self.problem = problem
        self.kspec = spec.kernel_spec(problem.n_features)
        self.n_threads = check_n_jobs(spec.n_jobs)

    def holdout(self, sets, alpha):
        """A list of (|U|, v) predictions, one per set."""
        g, m = self.problem.graph, self.problem.m
        check_dense_memory(m, self.DENSE_MATRICES, "kernel matrix and the LU factor of L K + alpha I")
        touched = [np.isin(g.head, U) | np.isin(g.tail, U) for U in sets]  # the edges each set removes
        for k, touch in enumerate(touched):
            if touch.all():
                raise ValueError(f"hold-out set {k} touches every preference: no training edge is left")
        X = self.problem.X
        K = np.asarray(X, dtype=np.float64) if self.kspec.precomputed else _kernel_matrix(self.kspec, X, self.n_threads)
        if g.head.size <= EDGE_FORM_MAX_EDGES_PER_ROW * m:
            return self._edge_form(K, sets, touched, alpha)
        L, b = _graph_system(g, m)
        LK = L @ K
        del L  # the dense L is not needed past L K
        if lu_loses_digits(alpha, LK):  # retrain without each set's edges: exact at any alpha
            del LK
            return [self._retrained(K, U, touch, alpha) for U, touch in zip(sets, touched)]
        LK[np.diag_indices(m)] += alpha
        lu = lu_factor(LK, overwrite_a=True, check_finite=False)
        Hb = lu_solve(lu, b, check_finite=False)
        out = []
        for U, touch in zip(sets, touched):
            if not touch.any():  # no edge to remove: the full model
                out.append(K[U] @ Hb)
                continue
            B = np.unique(np.concatenate([g.head[touch], g.tail[touch]]))
            # the removed edges' L and b on the rows B they touch (indices local to B: no m x m matrix per set)
            D, d = _graph_system(PreferenceGraph(np.searchsorted(B, g.head[touch]), np.searchsorted(B, g.tail[touch]),
                                                 g.weight[touch], g.target[touch]), B.size)
            E = np.zeros((m, B.size))
            E[B, np.arange(B.size)] = 1.0
            HE = lu_solve(lu, E, check_finite=False)  # H E_B
            HED = HE @ D
            Hb_new = Hb - HE @ d
            A = Hb_new + HED @ np.linalg.solve(np.eye(B.size) - K[B] @ HED, K[B] @ Hb_new)
            out.append(K[U] @ A)
        return out

    def _retrained(self, K, U, touch, alpha):
        """Predictions for the rows U of the model fitted (fit's symmetric solve, rankrls.hpp) without the edges
        ``touch``."""
        g, keep = self.problem.graph, ~touch
        sub = self.problem._replace(graph=PreferenceGraph(g.head[keep], g.tail[keep], g.weight[keep], g.target[keep]))
        return K[U] @ solve_dual(sub, self.kspec, np.array([float(alpha)]), self.n_threads).dual_coef[0]

    def _edge_form(self, K, sets, touched, alpha):
        """A graph of l <= m edges in the symmetric system of its edges (rankrls.hpp): L = F F^T, b = F W z with F = M
        W the weighted incidence, (F^T K F + alpha I) u = W z, A = F u.  Removing the edges R that touch U deletes
        their rows and columns, so with G = (F^T K F + alpha I)^-1 the retrained u' = u - G_.R G_RR^-1 u_R (zero on
        R) and f'_U = (K F)_U. u': one Cholesky factor, then O(l |R|) per set, accurate at small alpha."""
        g, w = self.problem.graph, self.problem.graph.weight
        KF = (K[:, g.head] - K[:, g.tail]) * w  # K F
        N = np.asfortranarray((KF[g.head] - KF[g.tail]) * w[:, None])  # F^T K F
        trace = float(np.trace(N))  # = trace(L K) >= sigma_max
        N = 0.5 * (N + N.T)
        _warn_below_g_form_ratio(alpha, trace, "L K", "preference-graph model", lambda V: N @ V, N.shape[0])
        N[np.diag_indices_from(N)] += alpha
        u, G = _spd_inverse(N, w[:, None] * g.target, alpha, "F^T K F")
        out = []
        for U, touch in zip(sets, touched):
            R = np.flatnonzero(touch)
            shift = G[:, R] @ scipy.linalg.solve(G[np.ix_(R, R)], u[R], assume_a="pos", check_finite=False)
            out.append(KF[U] @ (u - shift))
        return out


def _graph_system(g, m):
    """Dense L = M W^2 M^T (eq. 18: four updates per edge) and b = M N (m, v) of a preference graph: edge e adds
    w_e^2 z_e to its head and subtracts it from its tail."""
    h, t, w2 = g.head, g.tail, g.weight ** 2
    L = np.zeros((m, m))
    np.add.at(L, (np.r_[h, t, h, t], np.r_[h, t, t, h]), np.r_[w2, w2, -w2, -w2])
    contrib = w2[:, None] * g.target
    b = np.zeros((m, g.target.shape[1]))
    np.add.at(b, np.r_[h, t], np.r_[contrib, -contrib])
    return L, b
