"""Exact hold-out shortcuts for RankRLS from one decomposition (Pahikkala et al. 2009, Sects.
3.3-3.4): the engine behind :mod:`fastrank.model_selection` and :class:`fastrank.RankRLSCV`.

:class:`HoldoutEngine` holds the kernel of a :class:`~fastrank._problem.RankingProblem` in group
order and, computed once on demand, the spectral factor ``S K S = V diag(sigma) V^T``; every
hold-out set, pair and alpha then reuses it.  For the linear kernel with n_features < m the
factor comes from the n x n matrix ``(S X)^T (S X)`` (rank <= n, O(m n^2 + m^2 n)) instead of an
m x m eigendecomposition; the rank-r factor gives the same exact result.
"""

from __future__ import annotations

import functools
import numbers

import numpy as np
from scipy.linalg import lu_factor, lu_solve

from . import _core, _holdout
from ._kernels import kernel_block, resolve_kernel
from ._memory import check_dense_memory
from ._problem import PreferenceGraph, RankingProblem, check_weighting
from ._progress import stage
from ._solvers import select_basis
from ._sparse import issparse, take_rows
from ._threads import compute_region, threads_for_work
from ._validation import check_alpha, check_n_jobs

__all__ = ["HoldoutEngine", "engine_for", "estimator_alpha", "resolve_folds", "check_sets", "preference_holdout"]


def fixed_C(estimator):
    """MPRank's C (its alpha = m^2 / (2 C) follows the number m of training inputs), or None for
    RankRLS (alpha fixed whatever the training set)."""
    if not hasattr(estimator, "alpha") and hasattr(estimator, "C"):
        return check_alpha(estimator.C, "C")
    return None


def estimator_alpha(estimator, m):
    """RankRLS's alpha, or MPRank's m^2 / (2 C) for m training inputs."""
    C = fixed_C(estimator)
    return m * m / (2.0 * C) if C is not None else check_alpha(getattr(estimator, "alpha", 1.0))


def _kernel_spec(estimator, n_features):
    if hasattr(estimator, "_kernel_spec"):
        return estimator._kernel_spec(n_features)
    return resolve_kernel(getattr(estimator, "kernel", "linear"), getattr(estimator, "gamma", None),
                          getattr(estimator, "degree", 3), getattr(estimator, "coef0", 1.0), n_features)


def engine_for(estimator, X, y, groups=None, *, min_rows=1, alpha=None, verbose=0):
    """A :class:`HoldoutEngine` for the parameters of ``estimator`` (a RankRLS or MPRank, fitted
    or not) on (X, y, groups)."""
    solver = getattr(estimator, "solver", "auto")
    if solver not in ("auto", "dual", "primal"):
        raise ValueError(f"exact cross-validation shortcuts need the dense solver; got solver={solver!r}")
    if getattr(estimator, "exclude_ties", False):
        raise ValueError("exact cross-validation shortcuts keep tied pairs; use exclude_ties=False here, or "
                         "retrain with sklearn.model_selection for exclude_ties=True")
    weighting = check_weighting(getattr(estimator, "group_weighting", "unweighted"))
    precomputed = getattr(estimator, "kernel", "linear") == "precomputed"
    problem = RankingProblem.from_scores(X, y, groups, weighting=weighting, precomputed=precomputed,
                                         min_rows=1, require_informative=False, allow_sparse=True)
    if problem.m < min_rows:
        raise ValueError(f"this cross-validation needs at least {min_rows} inputs, got n_samples={problem.m}")
    C = fixed_C(estimator) if alpha is None else None  # an explicit alpha is kept for every hold-out
    alpha = estimator_alpha(estimator, problem.m) if alpha is None else check_alpha(alpha)
    spec = _kernel_spec(estimator, problem.n_features)
    low_rank = spec.linear and not spec.precomputed and problem.n_features < problem.m and solver != "dual"
    n_jobs = getattr(estimator, "n_jobs", None)
    # default threads by the work: p x p systems (m p^2) or the m x m kernel's factor (m^3)
    work = problem.m * float(min(problem.n_features, problem.m)) ** 2 if low_rank else float(problem.m) ** 3
    n_threads = check_n_jobs(n_jobs) if n_jobs is not None else threads_for_work(work)
    features = None
    basis_vectors = getattr(estimator, "basis_vectors", None)
    if basis_vectors is not None:
        # subset of regressors: the same basis rows a fit would choose (eq. 41), as a feature map
        basis = select_basis(problem.m, basis_vectors, getattr(estimator, "random_state", None))
        check_dense_memory(problem.m, 1, "kernel block K(X, X_R)", n_cols=basis.size)
        X = problem.X
        KR = np.asarray(X[:, basis], dtype=np.float64) if spec.precomputed else \
            kernel_block(spec, X, take_rows(X, basis), n_threads)
        features = _holdout.basis_features(KR, KR[basis])[0]
    elif low_rank:
        features = _holdout.linear_features(problem.X)  # X itself: no m x m matrix for hold-out sets
    return HoldoutEngine(problem, spec, alpha, n_threads, low_rank=low_rank, C=C, verbose=verbose, features=features)


def _in_region(method):
    """Run an engine method inside a compute region of its thread count (see fastrank._threads)."""
    @functools.wraps(method)
    def run(self, *args, **kwargs):
        with compute_region(self.n_threads):
            return method(self, *args, **kwargs)
    return run


class HoldoutEngine:
    """Kernel in group order plus the lazily computed spectral factor of ``S K S``; exact
    leave-pair-out and hold-out-set predictions for any alpha.

    Without an explicit alpha, a hold-out retrains as the estimator's own ``fit`` would on the
    training part: RankRLS keeps its alpha; MPRank (``C`` given) keeps C, so its alpha becomes
    m_train^2 / (2 C) (Cortes et al. eq. 17: the leave-out model is MPRank on m - |U| points).
    """

    def __init__(self, problem, spec, alpha, n_threads, *, low_rank, C=None, verbose=0, features=None):
        self.problem = problem
        self.spec = spec
        self.features = features
        self.basis = features is not None and not low_rank
        self.alpha = alpha
        self.C = C
        self.verbose = verbose
        self.linear = spec.linear
        self.precomputed = spec.precomputed
        self.n_threads = n_threads
        self.low_rank = low_rank
        gi = problem.groups
        X = problem.X
        Xg = X[gi.order] if issparse(X) and not gi.is_identity else gi.take(X, 0)
        if low_rank and issparse(X):
            # the rank-n factor needs S X, which block centring makes dense: m x n, n < m
            check_dense_memory(problem.m, 1, "dense copy of the sparse X (linear low-rank route)",
                               n_cols=problem.n_features)
        self.Xg = np.ascontiguousarray(Xg.toarray() if issparse(Xg) else Xg) if low_rank else None
        self._Xg_any = Xg
        self._K = None
        self.Yg = problem.targets_grouped()
        self.scale = problem.sqrt_laplacian_scale()
        self.offsets = gi.offsets.astype(np.int64)
        self._V = self._sigma = self._P = self._SX = None

    @property
    def m(self):
        return self.problem.m

    @property
    def Y(self):
        return self.problem.Y

    @property
    def one_d(self):
        return self.problem.one_d

    @property
    def grouped(self):
        return self.problem.grouped

    @property
    def groups(self):
        return self.problem.groups

    @property
    @_in_region
    def K(self):
        """The kernel in group order, computed on first use (hold-out sets of linear and
        basis-vector models never need it)."""
        if self._K is None:
            # The kernel, its eigenvectors, the eigensolver's workspace (2) and the pair-phase matrix.
            check_dense_memory(self.m, 5, "kernel matrix and its eigendecomposition")
            gi, X, Xg = self.groups, self.problem.X, self._Xg_any
            with stage(f"kernel matrix ({self.m} x {self.m})", verbose=self.verbose):
                if self.spec.precomputed:
                    Kg = gi.take(gi.take(X, 0), 1)
                    self._K = np.asfortranarray(0.5 * (Kg + Kg.T))
                elif issparse(Xg):
                    self._K = kernel_block(self.spec, Xg, Xg, self.n_threads)  # sparse products
                else:
                    self._K = self.spec.train(np.ascontiguousarray(Xg), self.n_threads)
        return self._K

    def _inverse_route(self, alpha):
        """Whether one alpha's leave-pair-out / leave-group-out should come from the Cholesky
        factor of S K S + alpha I (no eigendecomposition; accurate at any alpha) rather than the
        spectral factor: always unless the factor already exists (a grid of alphas shares it), and
        then still below alpha = 1e-4 sigma_max, where the spectral pair formula cancels digits.
        (For one alpha the Cholesky route beats even the linear rank-n factor: 0.36 s against
        0.41 s at m = 2000, n = 50, since both need the m x m kernel for the pair phase.)"""
        if self._V is None:
            return True
        _, sigma = self.decompose()
        return alpha < 1e-4 * max(float(sigma.max()), np.finfo(np.float64).tiny)

    def alpha_for(self, n_train):
        """The alpha of the model retrained on ``n_train`` inputs."""
        return self.alpha if self.C is None else n_train * n_train / (2.0 * self.C)

    @property
    def c(self):
        """Pair weight of object ranking (one group)."""
        return float(self.problem.pair_weight()[0])

    def decompose(self):
        """V, sigma with S K S = V diag(sigma) V^T (rank-r factor on the low-rank route)."""
        if self._V is None:
            with stage("spectral factor of S K S", verbose=self.verbose):
                self._decompose()
        return self._V, self._sigma

    @_in_region
    def _decompose(self):
        if self.low_rank:
            SX = self.problem.apply_S(self.Xg)
            lam, W = np.linalg.eigh(SX.T @ SX)
            keep = lam > max(lam.max(), 0.0) * max(SX.shape) * np.finfo(np.float64).eps
            if not np.any(keep):
                self._V, self._sigma = np.zeros((self.m, 1), order="F"), np.zeros(1)
            else:
                self._V = np.asfortranarray(SX @ (W[:, keep] / np.sqrt(lam[keep])))
                self._sigma = np.ascontiguousarray(lam[keep])
            self._SX = SX
        else:
            self._V, self._sigma = _core.cv_spectral(self.K, self.offsets, self.scale, self.n_threads)

    @_in_region
    def P(self):
        """K S V (in group order)."""
        if self._P is None:
            V, _ = self.decompose()
            if self.low_rank:
                self._P = np.asfortranarray(self.Xg @ (self._SX.T @ V))  # K S V = X (S X)^T V
            else:
                self._P = _core.cv_ksv(self.K, self.offsets, self.scale, V)
        return self._P

    # ---- leave-pair-out -----------------------------------------------------------------
    def default_pairs(self):
        """All i < j (inside groups when grouped), lexicographic, in the caller's row order."""
        if not self.grouped:
            i, j = np.triu_indices(self.m, 1)
            return np.ascontiguousarray(np.stack([i, j], axis=1).astype(np.int64, copy=False))
        gi = self.groups
        chunks = []
        for q in range(gi.n_groups):
            members = np.sort(gi.order[self.offsets[q]:self.offsets[q + 1]])
            if members.size < 2:
                continue
            a, b = np.triu_indices(members.size, 1)
            chunks.append(np.stack([members[a], members[b]], axis=1))
        if not chunks:
            return np.zeros((0, 2), dtype=np.int64)
        pairs = np.concatenate(chunks).astype(np.int64)
        order = np.lexsort((pairs[:, 1], pairs[:, 0]))
        return np.ascontiguousarray(pairs[order])

    def check_pairs(self, pairs):
        pairs = np.asarray(pairs)
        if pairs.ndim != 2 or pairs.shape[1] != 2:
            raise ValueError(f"pairs must have shape (n_pairs, 2), got {pairs.shape}")
        if pairs.size and not np.issubdtype(pairs.dtype, np.integer):
            if not np.all(np.equal(np.mod(pairs, 1), 0)):
                raise ValueError("pairs must contain integer indices")
        pairs = np.ascontiguousarray(pairs, dtype=np.int64)
        if pairs.size:
            if pairs.min() < 0 or pairs.max() >= self.m:
                raise ValueError(f"pair indices must lie in [0, {self.m}), got range "
                                 f"[{pairs.min()}, {pairs.max()}]")
            if np.any(pairs[:, 0] == pairs[:, 1]):
                k = int(np.flatnonzero(pairs[:, 0] == pairs[:, 1])[0])
                raise ValueError(f"pair {k} holds out the same index twice ({pairs[k, 0]})")
            if self.grouped:
                codes = self.groups.codes
                bad = codes[pairs[:, 0]] != codes[pairs[:, 1]]
                if np.any(bad):
                    k = int(np.flatnonzero(bad)[0])
                    raise ValueError(f"pair {k} = ({pairs[k, 0]}, {pairs[k, 1]}) joins inputs from different "
                                     "groups; leave-pair-out with groups holds out pairs of one group")
        return pairs

    def check_pairs_leave_training(self, pairs):
        """Holding out a pair must leave at least one training pair."""
        if pairs.shape[0] == 0:
            return
        # one group: every pair has n = m (no per-pair lookup over all m^2/2 pairs)
        n = np.array([float(self.m)]) if not self.grouped else \
            self.groups.sizes[self.groups.codes[pairs[:, 0]]].astype(np.float64)
        removed = 2 * n - 3
        if np.any(self.problem.n_relevant_pairs() - removed <= 0.5):
            raise ValueError("holding out a pair leaves no training pairs (every training pair touches it)")

    @_in_region
    def lpo(self, pairs, alpha=None):
        """(n_pairs, 2) or (n_pairs, 2, v) held-out predictions (Lemma 2, eqs. 34-39)."""
        alpha = self.alpha_for(self.m - 2) if alpha is None else alpha
        pairs = np.ascontiguousarray(pairs, dtype=np.int64)
        v = self.Y.shape[1]
        if self.features is not None:  # linear (n < m) or basis vectors: p x p systems (feature_cv.hpp)
            out = _holdout.feature_leave_pair_out(self.features, self.Y, self.groups.codes, self.groups.n_groups,
                                                  alpha, pairs, pair_weight=self.problem.pair_weight(),
                                                  n_threads=self.n_threads)
            out = np.asarray(out).reshape(pairs.shape[0], 2, v)
            return out[:, :, 0] if self.one_d else out
        if self._inverse_route(alpha):
            if not self.grouped:
                out = _core.cv_object_lpo_inverse(self.K, self.c, alpha, self.Yg, pairs, self.n_threads)
            else:
                pg = np.ascontiguousarray(self.groups.inverse[pairs])
                out = _core.cv_query_lpo_inverse(self.K, self.offsets, self.scale, alpha, self.Yg, pg, self.n_threads)
        elif not self.grouped:
            V, sigma = self.decompose()
            M, mu, h = _core.cv_object_prepare(self.K, V, sigma, self.c, alpha, self.Yg)
            out = _core.cv_object_lpo_pairs(M, mu, h, self.Yg, self.c, pairs, self.n_threads)
        else:
            V, sigma = self.decompose()
            pg = np.ascontiguousarray(self.groups.inverse[pairs])
            out = _core.cv_query_lpo(self.P(), V, sigma, self.offsets, self.scale, alpha, self.Yg, pg,
                                     self.n_threads)
        out = out.reshape(pairs.shape[0], 2, v)
        return out[:, :, 0] if self.one_d else out

    @_in_region
    def lpo_disagreement(self, pairs, alpha=None):
        """Pairwise disagreement of the LPO predictions per output column, accumulated in C++
        threads without materialising the (n_pairs, 2, v) predictions."""
        alpha = self.alpha_for(self.m - 2) if alpha is None else alpha
        pairs = np.ascontiguousarray(pairs, dtype=np.int64)
        if self.features is not None:
            P = self.lpo(pairs, alpha).reshape(pairs.shape[0], 2, -1)
            T = np.stack([self.Y[pairs[:, 0]], self.Y[pairs[:, 1]]], axis=1)
            dp, dt = P[:, 0] - P[:, 1], T[:, 0] - T[:, 1]
            valid = dt != 0
            wrong = (dp * dt < 0) + 0.5 * (dp == 0)
            with np.errstate(invalid="ignore", divide="ignore"):
                return (wrong * valid).sum(axis=0) / valid.sum(axis=0)
        if self._inverse_route(alpha):
            if not self.grouped:
                return _core.cv_object_lpo_inverse_disagreement(self.K, self.c, alpha, self.Yg, pairs, self.n_threads)
            pg = np.ascontiguousarray(self.groups.inverse[pairs])
            return _core.cv_query_lpo_inverse_disagreement(self.K, self.offsets, self.scale, alpha, self.Yg, pg,
                                                           self.n_threads)
        V, sigma = self.decompose()
        if not self.grouped:
            M, mu, h = _core.cv_object_prepare(self.K, V, sigma, self.c, alpha, self.Yg)
            return _core.cv_object_lpo_disagreement(M, mu, h, self.Yg, self.c, pairs, self.n_threads)
        pg = np.ascontiguousarray(self.groups.inverse[pairs])
        return _core.cv_query_lpo_disagreement(self.P(), V, sigma, self.offsets, self.scale, alpha, self.Yg, pg,
                                               self.n_threads)

    # ---- hold-out sets --------------------------------------------------------------------
    @_in_region
    def holdout(self, sets, alpha=None):
        """Predictions for each set (list of index arrays, caller's order) in one concatenation."""
        if alpha is None and self.C is not None:
            # MPRank: sets of one size share the retrained alpha; one pass per distinct size
            sizes = np.array([len(s) for s in sets])
            starts = np.concatenate([[0], np.cumsum(sizes)])
            out = np.empty((starts[-1], self.Y.shape[1]))
            for size in np.unique(sizes):
                which = np.flatnonzero(sizes == size)
                part = self.holdout([sets[k] for k in which], self.alpha_for(self.m - int(size)))
                for at, k in zip(range(0, part.shape[0], int(size)), which):
                    out[starts[k]:starts[k + 1]] = part[at:at + size]
            return out
        alpha = self.alpha if alpha is None else alpha
        if self.features is not None:  # linear (n < m) or basis vectors: p x p systems, no m x m matrix
            outs = _holdout.feature_holdout(self.features, self.Y, self.groups.codes, self.groups.n_groups, alpha,
                                            sets, pair_weight=self.problem.pair_weight())
            return np.concatenate([np.asarray(o).reshape(len(s), -1) for o, s in zip(outs, sets)]) if sets else \
                np.zeros((0, self.Y.shape[1]))
        rows = np.concatenate([s for s in sets]).astype(np.int64) if sets else np.zeros(0, np.int64)
        fold_offsets = np.concatenate([[0], np.cumsum([len(s) for s in sets])]).astype(np.int64)
        V, sigma = self.decompose()
        if not self.grouped:
            return _core.cv_object_holdout(self.K, V, sigma, self.c, alpha, self.Yg, rows, fold_offsets)
        rg = self.groups.inverse[rows].astype(np.int64)
        return _core.cv_group_holdout(self.P(), V, sigma, self.offsets, self.scale, alpha, self.Yg, rg,
                                      fold_offsets)

    @_in_region
    def leave_group_out(self, alpha=None):
        """(m, v) predictions, each group held out in turn (eq. 33): from the Cholesky factor of
        ``S K S + alpha I`` and the diagonal blocks of its inverse, no eigendecomposition (for
        MPRank, whose alpha depends on each group's size, through :meth:`holdout`)."""
        if self.C is not None and alpha is None:
            sets = self.group_sets()
            out = np.empty_like(self.Y)
            out[np.concatenate(sets)] = self.holdout(sets)
            return out
        alpha = self.alpha if alpha is None else alpha
        if self.features is not None:
            return np.asarray(_holdout.feature_leave_group_out(self.features, self.Y, self.groups.codes,
                                                               self.groups.n_groups, alpha,
                                                               pair_weight=self.problem.pair_weight(),
                                                               n_threads=self.n_threads)).reshape(
                self.m, -1)
        out = _core.cv_leave_group_out_inverse(self.K, self.offsets, self.scale, alpha, self.Yg, self.n_threads)
        return self.groups.untake(out, 0)

    @_in_region
    def leave_group_out_path(self, alphas):
        """(n_alphas, m, v) leave-group-out predictions for a grid of alphas: feature models per
        alpha (p x p systems), kernels from one eigendecomposition shared by the grid
        (``cv_leave_group_out_path``) instead of one Cholesky factor per alpha."""
        alphas = np.asarray(alphas, dtype=np.float64)
        # the eigendecomposition costs ~4-5 Cholesky leave-group-outs (measured, m = 2000)
        if self.features is not None or alphas.size < 5:
            return np.stack([self.leave_group_out(float(a)) for a in alphas])
        out = _core.cv_leave_group_out_path(self.K, self.offsets, self.scale, alphas, self.Yg, self.n_threads)
        v = self.Y.shape[1]
        return np.stack([self.groups.untake(out[:, k * v:(k + 1) * v], 0) for k in range(alphas.size)])

    def group_sets(self):
        """Each group's rows (sorted) as a hold-out set."""
        gi = self.groups
        return [np.sort(gi.order[gi.offsets[q]:gi.offsets[q + 1]]) for q in range(gi.n_groups)]

    def check_sets(self, sets):
        return check_sets(sets, self.m, min_train=0 if self.grouped else 2)


def check_sets(sets, m, *, min_train=2):
    """Hold-out index sets (arrays or boolean masks) as int64 arrays: non-empty, in range, no
    repeats, each leaving at least ``min_train`` training inputs."""
    checked = []
    for k, s in enumerate(sets):
        s = np.asarray(s)
        if s.dtype == bool:
            if s.shape != (m,):
                raise ValueError(f"boolean hold-out mask {k} must have shape ({m},)")
            s = np.flatnonzero(s)
        if s.ndim != 1:
            raise ValueError(f"hold-out set {k} must be a 1-D array of indices")
        if s.size and not np.issubdtype(s.dtype, np.integer):
            raise ValueError(f"hold-out set {k} must contain integer indices")
        s = s.astype(np.int64)
        if s.size == 0:
            raise ValueError(f"hold-out set {k} is empty")
        if s.min() < 0 or s.max() >= m:
            raise ValueError(f"hold-out set {k} has indices outside [0, {m})")
        if np.unique(s).size != s.size:
            raise ValueError(f"hold-out set {k} repeats an index")
        if m - s.size < min_train:
            raise ValueError(f"hold-out set {k} leaves fewer than {min_train} training inputs (no training pairs)")
        checked.append(s)
    return checked


def resolve_folds(folds, engine, groups=None):
    """Hold-out index sets from an int k, (m,) fold labels, a sequence of index arrays, or a
    scikit-learn splitter (its test indices; ``groups`` are passed to ``split``)."""
    m, gi, grouped = engine.m, engine.groups, engine.grouped
    if isinstance(folds, numbers.Integral) and not isinstance(folds, (bool, np.bool_)):
        k = int(folds)
        if k < 2:
            raise ValueError(f"the number of folds must be at least 2, got {k}")
        if grouped:
            if k > gi.n_groups:
                raise ValueError(f"cannot make {k} folds from {gi.n_groups} groups")
            gfold = np.arange(gi.n_groups) % k
            return [np.sort(np.flatnonzero(gfold[gi.codes] == f)) for f in range(k)]
        if k > m:
            raise ValueError(f"cannot make {k} folds from {m} inputs")
        return [np.asarray(a, dtype=np.int64) for a in np.array_split(np.arange(m), k)]
    if hasattr(folds, "split"):
        return [np.asarray(te) for _, te in folds.split(np.zeros((m, 1)), None, groups)]
    if isinstance(folds, np.ndarray) and folds.ndim == 1 and folds.shape[0] == m and folds.dtype != object \
            and folds.dtype != bool:
        return [np.flatnonzero(folds == lab) for lab in np.unique(folds)]  # fold labels
    return [np.asarray(s) for s in folds]


def preference_holdout(problem, spec, alpha, sets, n_threads):
    """Exact hold-out predictions on a preference graph (004 eq. 33 in its general form): for each
    set U, the model retrained with every edge touching U removed, predicting U.

    With P = L K + alpha I factorized once (A = P^-1 b, eq. 17), removing U's edges changes L and
    b only on B = U and U's neighbours: L' = L - E_B D E_B^T, b' = b - E_B d.  The rows of U then
    have no edge, so the retrained A'_U = 0 and, by the Woodbury identity,
    A' = H b' + H E_B D (I - K_B. H E_B D)^-1 K_B. H b'  with H = P^-1,
    O(m^2 |B|) per set instead of O(m^3) for retraining.
    """
    g, m = problem.graph, problem.m
    check_dense_memory(m, 3, "kernel matrix and the LU factor of L K + alpha I")
    X = problem.X
    if spec.precomputed:
        K = np.asarray(X, dtype=np.float64)
    else:
        K = kernel_block(spec, X, X, n_threads) if issparse(X) else spec.train(X, n_threads)
    L = _graph_laplacian(g, m)
    b = _graph_rhs(g, m)
    lu = lu_factor(L @ K + alpha * np.eye(m), check_finite=False)
    Hb = lu_solve(lu, b, check_finite=False)
    out = []
    for U in sets:
        touch = np.isin(g.head, U) | np.isin(g.tail, U)
        if not touch.any():  # no edge to remove: the full model
            out.append(K[U] @ Hb)
            continue
        if touch.all():
            raise ValueError("a hold-out set touches every preference: no training edge is left")
        sub = PreferenceGraph(g.head[touch], g.tail[touch], g.weight[touch], g.target[touch])
        B = np.unique(np.concatenate([sub.head, sub.tail]))
        D = _graph_laplacian(sub, m)[np.ix_(B, B)]
        d = _graph_rhs(sub, m)[B]
        E = np.zeros((m, B.size))
        E[B, np.arange(B.size)] = 1.0
        HE = lu_solve(lu, E, check_finite=False)  # H E_B
        HED = HE @ D
        Hb_new = Hb - HE @ d
        inner = np.eye(B.size) - K[B] @ HED
        A = Hb_new + HED @ np.linalg.solve(inner, K[B] @ Hb_new)
        out.append(K[U] @ A)
    return out


def _graph_laplacian(g, m):
    """Dense L = M W^2 M^T of a preference graph (eq. 18: four updates per edge)."""
    L = np.zeros((m, m))
    w2 = g.weight ** 2
    np.add.at(L, (g.head, g.head), w2)
    np.add.at(L, (g.tail, g.tail), w2)
    np.add.at(L, (g.head, g.tail), -w2)
    np.add.at(L, (g.tail, g.head), -w2)
    return L


def _graph_rhs(g, m):
    """b = M N (m, v): edge e adds w_e^2 z_e to its head and subtracts it from its tail."""
    contrib = (g.weight ** 2)[:, None] * g.target
    b = np.zeros((m, g.target.shape[1]))
    np.add.at(b, g.head, contrib)
    np.add.at(b, g.tail, -contrib)
    return b
