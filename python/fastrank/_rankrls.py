"""RankRLS and MPRank estimators (dense solvers), and the regularization path.

RankRLS (Pahikkala et al. 2009) minimises, over f in the kernel's RKHS,

    sum over relevant pairs {i, j} of  w_ij^2 (z_ij - (f(x_i) - f(x_j)))^2  +  alpha ||f||_K^2

* scoring setting (``fit(X, y, groups=None)``): z_ij = y_i - y_j (the magnitude cost, eq. 21);
  all pairs are relevant (object ranking) or only pairs inside the same group (query/label
  ranking).  With ``group_weighting="unweighted"`` every pair has weight 1 (the paper's
  Laplacian D - P P^T, eq. 25); with ``"normalized"`` each pair of a group of size n_q has weight
  1/n_q so every group counts about equally whatever its size.  Groups of one row have no pairs
  and do not influence the model.
* preference graph (``fit_preferences``): an explicit multigraph of preferences "row a is
  preferred over row b", with the costs (20) binary, (21) magnitude or (22) magnitude-normalized.

``alpha`` is exactly the paper's lambda (not rescaled by the number of inputs or pairs).
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from . import _core, _large_scale
from ._kernels import resolve_kernel
from ._validation import (
    as_float_matrix,
    as_targets,
    check_alpha,
    check_alphas,
    check_n_jobs,
    group_index,
)
from .exceptions import IllConditionedWarning

__all__ = ["RankRLS", "MPRank", "RankRLSPath", "rankrls_path"]

_SOLVERS = ("auto", "dual", "primal", "cg")
_WEIGHTINGS = ("unweighted", "normalized")
_COSTS = ("binary", "magnitude", "normalized")
# rcond below this: the solution may carry rounding error well above 1e-4 relative.
_RCOND_WARNING = 1e-12


def _warn_if_ill_conditioned(rcond):
    if rcond < _RCOND_WARNING:
        warnings.warn(
            f"RankRLS system is ill-conditioned (reciprocal condition number {rcond:.2e}); the "
            "solution may be inaccurate. Increase alpha.",
            IllConditionedWarning,
            stacklevel=3,
        )


def _check_informative_targets(Y, gi):
    """Every output must order at least one relevant pair (else there is nothing to learn)."""
    sizes = gi.sizes
    if not np.any(sizes >= 2):
        raise ValueError(
            "No relevant pairs: every group has a single row. RankRLS with groups learns only from "
            "pairs of rows that share a group id."
        )
    Yg = gi.take(Y)
    starts = gi.offsets[:-1]
    spread = np.maximum.reduceat(Yg, starts, axis=0) - np.minimum.reduceat(Yg, starts, axis=0)
    tied = ~np.any(spread > 0, axis=0)
    if np.any(tied):
        cols = np.flatnonzero(tied).tolist()
        where = "inside every group" if gi.n_groups > 1 else "for all rows"
        raise ValueError(
            f"All targets are tied {where} (output column(s) {cols}): there are no preferences to "
            "learn from."
        )


def _object_ranking_normal_equations(X, Y):
    """Primal system of object ranking (eq. 30 with L = m I - 1 1^T) without centring a copy of X:
    X^T L X = m (X^T X - m mu mu^T), X^T L Y = m (X^T Y - m mu ybar^T).

    The Gram is one ``X.T @ X`` (numpy's BLAS, which runs tall-skinny SYRK ~1.4x faster than
    SciPy's here; the GIL is released).  The rank-one correction cancels digits when a feature's
    mean dwarfs its spread: the error relative to the centred matrix's scale is about
    eps * (1 + mu_j^2 / var_j), so this returns None (the caller centres explicitly, in C++)
    unless mu_j^2 <= 1e4 var_j for every feature, which keeps it within ~1e-12.
    """
    m = X.shape[0]
    G = X.T @ X
    mu = X.sum(axis=0) / m
    var = np.diag(G) / m - mu * mu
    if not np.all(mu * mu <= 1e4 * var):  # also rejects constant features
        return None
    XtY = X.T @ Y
    G -= m * np.outer(mu, mu)
    G *= m
    R = m * (XtY - m * np.outer(mu, Y.mean(axis=0)))
    G += G.T  # exact symmetry for the symmetric solver
    G *= 0.5
    return np.asfortranarray(G), np.asfortranarray(R)


class _DenseRankingBase(RegressorMixin, BaseEstimator):
    """Shared fitting/prediction machinery of RankRLS and MPRank (dense solvers)."""

    # -- helpers -------------------------------------------------------------------------------
    def _kernel_spec(self, n_features):
        return resolve_kernel(self.kernel, self.gamma, self.degree, self.coef0, n_features)

    def _check_fit_X(self, X):
        if self.kernel == "precomputed":
            K = as_float_matrix(X, "X (precomputed kernel)", min_rows=2)
            if K.shape[0] != K.shape[1]:
                raise ValueError(f"A precomputed kernel must be square (m, m), got shape {K.shape}")
            scale = max(1.0, float(np.abs(K).max()))
            if not np.allclose(K, K.T, rtol=1e-10, atol=1e-12 * scale):
                raise ValueError("A precomputed kernel matrix must be symmetric")
            return K
        return as_float_matrix(X, "X", min_rows=2)

    def _choose_solver(self, spec, n_rows, n_features):
        solver = self.solver
        if solver not in _SOLVERS:
            raise ValueError(f"solver must be one of {_SOLVERS}, got {solver!r}")
        if solver == "cg":  # RankRLS routes "cg" to _large_scale before reaching here
            raise ValueError(
                f"{type(self).__name__} has no solver='cg'; use RankRLS(solver='cg') (for MPRank with "
                "alpha = m**2 / (2 C))"
            )
        if solver == "primal" and not spec.linear:
            raise ValueError("solver='primal' needs kernel='linear' (the primal solves in feature space)")
        if solver == "auto":
            solver = "primal" if spec.linear and n_features < n_rows else "dual"
        return solver

    def _train_kernel_grouped(self, X, spec, gi, n_threads):
        """K in group order as a writable Fortran-ordered array that the solver may overwrite."""
        if spec.precomputed:
            Kg = X[np.ix_(gi.order, gi.order)] if not gi.is_identity else X.copy()
            Kg += Kg.T  # exact symmetry for the symmetric solvers
            Kg *= 0.5
            return Kg.T  # symmetric: the transpose is the F-ordered view of the same matrix
        return spec.train(gi.take(X), n_threads)

    def _solve_scores(self, X, Y, gi, alphas, normalized):
        """Fit every alpha; returns ('dual', A (n_alphas, m, v)) or ('primal', W (n_alphas, n, v))."""
        n_threads = check_n_jobs(self.n_jobs)
        spec = self._kernel_spec(X.shape[1])
        solver = self._choose_solver(spec, X.shape[0], X.shape[1])
        Yg = np.asfortranarray(gi.take(Y))
        order = np.empty(0, dtype=np.int64) if gi.is_identity else gi.order
        if solver == "primal":
            _large_scale.check_dense_memory(X.shape[1], 1, "feature matrix X^T L X")
            system = _object_ranking_normal_equations(X, Y) if gi.n_groups == 1 else None
            if system is not None:
                W, rcond = _core.solve_shifted_system(system[0], system[1], alphas)
            else:
                W, rcond = _core.rankrls_primal_scores(X, order, gi.offsets, normalized, Yg, alphas, n_threads)
            _warn_if_ill_conditioned(rcond)
            return spec, "primal", W.reshape(W.shape[0], alphas.size, -1).transpose(1, 0, 2)
        _large_scale.check_dense_memory(X.shape[0], 1 if alphas.size == 1 else 3, "kernel matrix")
        Kg = self._train_kernel_grouped(X, spec, gi, n_threads)
        A, rcond = _core.rankrls_dual_scores(Kg, gi.offsets, normalized, Yg, alphas, n_threads)
        del Kg
        _warn_if_ill_conditioned(rcond)
        A = A.reshape(A.shape[0], alphas.size, -1).transpose(1, 0, 2)
        return spec, "dual", gi.untake(A, axis=1)

    def _set_fitted(self, X, spec, mode, coef, one_d):
        """coef: (m, v) dual or (n, v) primal for a single alpha."""
        self.fit_mode_ = mode
        self.n_features_in_ = X.shape[1]
        self._single_output = one_d
        squeeze = (lambda a: a[:, 0]) if one_d else (lambda a: a)
        if mode == "primal":
            self.coef_ = squeeze(np.ascontiguousarray(coef))
            self.dual_coef_ = None
            self.X_fit_ = None
        else:
            self.dual_coef_ = squeeze(np.ascontiguousarray(coef))
            self.X_fit_ = None if spec.precomputed else X
            # With the linear kernel the dual model is also a weight vector: W = X^T A (eq. 27).
            self.coef_ = squeeze(X.T @ coef) if spec.linear else None
        return self

    # -- prediction ----------------------------------------------------------------------------
    def _decision(self, X):
        check_is_fitted(self, "fit_mode_")
        if _large_scale.issparse(X) or self.fit_mode_ == "sparse":  # issue 4: sparse X / basis model
            return _large_scale.decision(self, X)
        if self.kernel == "precomputed":
            K = as_float_matrix(X, "X (precomputed kernel)")
            m = self.dual_coef_.shape[0]
            if K.shape[1] != m:
                raise ValueError(
                    f"A precomputed test kernel must have shape (n_samples, {m}) against the training "
                    f"rows, got {K.shape}"
                )
            return K @ self.dual_coef_
        X = as_float_matrix(X, "X")
        if X.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {X.shape[1]} features, but {type(self).__name__} is expecting "
                f"{self.n_features_in_} features as input."
            )
        if self.coef_ is not None:
            return X @ self.coef_
        spec = self._kernel_spec(self.n_features_in_)
        coef = self.dual_coef_.reshape(self.dual_coef_.shape[0], -1)
        out = spec.predict(X, self.X_fit_, coef, check_n_jobs(self.n_jobs))
        return out[:, 0] if self.dual_coef_.ndim == 1 else out

    def predict(self, X):
        """Scores for ranking: a higher score means ranked higher.  Shape (p,) or (p, v).

        Only differences of scores are meaningful (the objective is invariant to adding a
        constant), so the scores are not on the scale of ``y``.
        """
        return self._decision(X)

    def score(self, X, y, groups=None):
        """Pairwise ranking accuracy: ``1 - pairwise_disagreement(y, predict(X), groups,
        ties="half")``.  Pairs tied in ``y`` are ignored, ties in the predicted scores count as half
        an error, and with ``groups`` only pairs inside a group count, averaged per group (the
        mean over groups that have a relevant pair).  Higher is better; for binary ``y`` without
        groups it equals the AUC.  Multi-output: the mean over outputs."""
        from .metrics import pairwise_disagreement

        pred = self.predict(X)
        y = np.asarray(y)
        if pred.ndim == 1:
            return 1.0 - pairwise_disagreement(y, pred, groups, ties="half")
        return float(np.mean([1.0 - pairwise_disagreement(y[:, k], pred[:, k], groups, ties="half")
                              for k in range(pred.shape[1])]))

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        tags.input_tags.pairwise = self.kernel == "precomputed"
        return tags


class RankRLS(_DenseRankingBase):
    """Regularized least-squares ranking (RankRLS; Pahikkala et al., Machine Learning 2009).

    Parameters
    ----------
    alpha : float, default=1.0
        Regularization (the paper's lambda, not rescaled), > 0.
    kernel : {"linear", "rbf"/"gaussian", "poly"/"polynomial", "precomputed"}, default="linear"
        Kernel; for "precomputed", ``fit`` takes the (m, m) kernel matrix and ``predict`` the
        (p, m) kernel between test and training rows.
    gamma : float or None, default=None
        RBF/polynomial scale; None means 1 / n_features.
    degree : float, default=3
        Polynomial degree.
    coef0 : float, default=1.0
        Polynomial offset: ``(gamma x.z + coef0) ** degree``.
    solver : {"auto", "dual", "primal", "cg"}, default="auto"
        "dual" factorizes the m x m kernel system (O(m^3), eq. 17, any kernel); "primal" the
        n x n feature system (O(n^3 + n^2 m), eq. 28, linear kernel only); "cg" runs conjugate
        gradient on the linear primal without forming pairs (O(nnz + m) per iteration, dense or
        scipy.sparse X; Sect. 4.3).  "auto" takes CG for sparse X with the linear kernel, else
        the primal when the kernel is linear and n_features < n_samples, else the dual.  Before
        a dense solver allocates an m x m (or n x n) matrix larger than half the available
        memory it raises MemoryError (override: environment FASTRANK_MAX_DENSE_BYTES).
    group_weighting : {"unweighted", "normalized"}, default="unweighted"
        With ``groups``: every within-group pair weighs 1 (the paper's Laplacian, eq. 25), or
        each pair of a group of n_q rows weighs 1/n_q (Laplacian blocks I - 11^T/n_q).
    n_jobs : int or None, default=None
        Threads for the C++ kernels (kernel matrices, centering).  None uses every core, like
        the BLAS/LAPACK calls do; positive k uses k threads.
    tol : float, default=1e-6
        solver="cg": stop when the residual norm falls below tol times the right-hand side's.
    max_iter : int or None, default=None
        solver="cg": iteration cap per output; None means min(10 n_features, 5000).  Stopping
        at the cap emits :class:`sklearn.exceptions.ConvergenceWarning`.
    warm_start : bool, default=False
        solver="cg": start from the previous fit's ``coef_``.
    preconditioner : {None, "jacobi"}, default=None
        solver="cg": Jacobi (diagonal of X^T L X + alpha I) preconditioning.
    basis_vectors : int, array of row indices, or None, default=None
        Sparse subset-of-regressors RankRLS (eq. 40-42): an int draws that many basis rows at
        random (``random_state``); an array gives them.  O(m |R|^2), any kernel.
    random_state : int, RandomState or None
        Seed for the random choice of basis vectors.

    Attributes
    ----------
    fit_mode_ : {"dual", "primal", "cg", "sparse"}
    dual_coef_ : ndarray (m,) or (m, v), or None
        Dual coefficients A (eq. 17) in the original row order (dual solver).
    X_fit_ : ndarray (m, n) or None
        Training rows kept for kernel predictions (dual solver, non-precomputed kernel).
    coef_ : ndarray (n,) or (n, v), or None
        Weight vector W (eq. 27/28) whenever the kernel is linear.
    n_features_in_ : int
    n_iter_, converged_, residual_history_ :
        solver="cg" only: iterations and convergence flag per output, residual norms per iteration.
    basis_indices_ : ndarray
        basis_vectors only: the training rows used as basis; then ``X_fit_`` holds just those rows
        and ``dual_coef_`` their coefficients.

    Notes
    -----
    The dual is solved in the symmetric form ``(S K S + alpha I) u = S y``, ``A = S u`` with
    ``S = L^{1/2}`` (block centering), by SciPy's LAPACK (Cholesky for one alpha, one
    eigendecomposition for a path).  Peak memory of a dual fit: one m x m float64 matrix (the
    kernel, overwritten in place by the system and its factor) plus O(m v); a path adds the
    eigensolver's workspace (about 2 more m x m).  A Cholesky failure (alpha tiny relative to the
    kernel's scale, or an indefinite precomputed kernel) raises :class:`fastrank.LinAlgError`; a
    reciprocal condition number below 1e-12 emits :class:`fastrank.IllConditionedWarning`.
    """

    def __init__(
        self,
        alpha=1.0,
        *,
        kernel="linear",
        gamma=None,
        degree=3,
        coef0=1.0,
        solver="auto",
        group_weighting="unweighted",
        n_jobs=None,
        tol=1e-6,
        max_iter=None,
        warm_start=False,
        preconditioner=None,
        basis_vectors=None,
        random_state=None,
    ):
        self.alpha = alpha
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.solver = solver
        self.group_weighting = group_weighting
        self.n_jobs = n_jobs
        self.tol = tol
        self.max_iter = max_iter
        self.warm_start = warm_start
        self.preconditioner = preconditioner
        self.basis_vectors = basis_vectors
        self.random_state = random_state

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = self.kernel != "precomputed"  # issue 4: CG / basis vectors / densified
        return tags

    def _normalized(self):
        if self.group_weighting not in _WEIGHTINGS:
            raise ValueError(f"group_weighting must be one of {_WEIGHTINGS}, got {self.group_weighting!r}")
        return self.group_weighting == "normalized"

    def fit(self, X, y, groups=None):
        """Fit from scores ``y`` (m,) or (m, v): all pairs relevant, or only pairs inside a group.

        ``groups`` holds one id per row (any order, need not be contiguous or sorted).
        """
        if _large_scale.use_large_scale(self, X):  # issue 4: solver="cg", basis_vectors, sparse X
            return _large_scale.fit_scores(self, X, y, groups)
        alpha = check_alpha(self.alpha)
        normalized = self._normalized()
        X = self._check_fit_X(X)
        Y, one_d = as_targets(y, X.shape[0])
        gi = group_index(groups, X.shape[0])
        _check_informative_targets(Y, gi)
        spec, mode, coefs = self._solve_scores(X, Y, gi, np.array([alpha]), normalized)
        return self._set_fitted(X, spec, mode, coefs[0], one_d)

    def fit_preferences(self, X, pairs, magnitudes=None, cost=None):
        """Fit from an explicit preference graph (a multigraph; repeated pairs add up).

        Parameters
        ----------
        X : (m, n) inputs (or (m, m) kernel for kernel="precomputed").
        pairs : int array (l, 2)
            Row ``pairs[e, 0]`` is preferred over row ``pairs[e, 1]``.
        magnitudes : array (l,) or None
            Preference magnitudes g_e (>= 0; > 0 for cost="normalized").
        cost : {"binary", "magnitude", "normalized"} or None
            (20) binary: every preference targets a score difference of 1 with weight 1;
            (21) magnitude: target g_e, weight 1; (22) normalized: target g_e, weight 1/g_e.
            Default: "binary" without magnitudes, "magnitude" with them.
        """
        if _large_scale.use_large_scale(self, X):  # issue 4: solver="cg", basis_vectors, sparse X
            return _large_scale.fit_preferences(self, X, pairs, magnitudes, cost)
        alpha = check_alpha(self.alpha)
        X = self._check_fit_X(X)
        m = X.shape[0]
        head, tail, weight, target = _preference_graph(pairs, magnitudes, cost, m)
        n_threads = check_n_jobs(self.n_jobs)
        spec = self._kernel_spec(X.shape[1])
        solver = self._choose_solver(spec, m, X.shape[1])
        alphas = np.array([alpha])
        if solver == "primal":
            _large_scale.check_dense_memory(X.shape[1], 1, "feature matrix X^T L X")
            W, rcond = _core.rankrls_primal_graph(X, head, tail, weight, target, alphas, n_threads)
            _warn_if_ill_conditioned(rcond)
            return self._set_fitted(X, spec, "primal", W, True)
        _large_scale.check_dense_memory(m, 1, "kernel matrix")
        K = self._train_kernel_grouped(X, spec, group_index(None, m), n_threads)
        A, rcond = _core.rankrls_dual_graph(K, head, tail, weight, target, alphas, n_threads)
        del K
        _warn_if_ill_conditioned(rcond)
        return self._set_fitted(X, spec, "dual", A, True)


def _preference_graph(pairs, magnitudes, cost, m):
    """Validated edge arrays (head, tail, weight, target) for costs (20)-(22) (paper Sect. 2.4)."""
    pairs = np.asarray(pairs)
    if pairs.ndim != 2 or pairs.shape[1] != 2:
        raise ValueError(f"pairs must have shape (n_pairs, 2), got {pairs.shape}")
    if pairs.shape[0] == 0:
        raise ValueError("pairs is empty: a preference graph needs at least one preference")
    if not np.issubdtype(pairs.dtype, np.integer):
        if np.issubdtype(pairs.dtype, np.floating) and np.all(np.isfinite(pairs)) and np.all(pairs == np.round(pairs)):
            pairs = pairs.astype(np.int64)
        else:
            raise TypeError("pairs must hold integer row indices")
    pairs = pairs.astype(np.int64)
    bad = (pairs < 0) | (pairs >= m)
    if bad.any():
        e = int(np.flatnonzero(bad.any(axis=1))[0])
        raise ValueError(f"pairs[{e}] = {pairs[e].tolist()} refers to a row outside [0, {m})")
    loops = pairs[:, 0] == pairs[:, 1]
    if loops.any():
        e = int(np.flatnonzero(loops)[0])
        raise ValueError(f"pairs[{e}] = {pairs[e].tolist()} is a self-loop (a row preferred over itself)")
    if cost is None:
        cost = "binary" if magnitudes is None else "magnitude"
    if cost not in _COSTS:
        raise ValueError(f"cost must be one of {_COSTS}, got {cost!r}")
    l = pairs.shape[0]
    if magnitudes is None:
        if cost != "binary":
            raise ValueError(f"cost={cost!r} needs magnitudes")
        g = np.ones(l)
    else:
        g = np.asarray(magnitudes, dtype=np.float64)
        if g.shape != (l,):
            raise ValueError(f"magnitudes must have shape ({l},), got {g.shape}")
        if not np.isfinite(g).all():
            raise ValueError("magnitudes contain NaN or infinity")
        if (g < 0).any():
            raise ValueError("magnitudes must be >= 0 (swap the pair to reverse a preference)")
    if cost == "binary":
        weight, target = np.ones(l), np.ones(l)
    elif cost == "magnitude":
        weight, target = np.ones(l), g
    else:
        if (g <= 0).any():
            raise ValueError("cost='normalized' (eq. 22) weights each preference by 1/magnitude: magnitudes must be > 0")
        weight, target = 1.0 / g, g
    return (np.ascontiguousarray(pairs[:, 0]), np.ascontiguousarray(pairs[:, 1]), weight,
            np.asfortranarray(target.reshape(-1, 1)))


class MPRank(_DenseRankingBase):
    """Magnitude-preserving ranking, MPRank (Cortes, Mohri, Rastogi; 000 eq. 8 with n = 2).

    Minimises ``||h||_K^2 + C / m^2 * sum_{i,j} ((h(x_j) - h(x_i)) - (y_j - y_i))^2`` over all
    ordered pairs: the same problem as :class:`RankRLS` on all pairs with
    ``alpha = m^2 / (2 C)`` (each unordered pair appears twice in the double sum), solved by the
    batch closed form through the same LAPACK-backed solvers.

    Parameters
    ----------
    C : float, default=1.0
        Trade-off, > 0.
    kernel, gamma, degree, coef0, solver, n_jobs : as for :class:`RankRLS`
        (solver in {"auto", "dual", "primal"}).
    """

    def __init__(self, C=1.0, *, kernel="linear", gamma=None, degree=3, coef0=1.0, solver="auto", n_jobs=None):
        self.C = C
        self.kernel = kernel
        self.gamma = gamma
        self.degree = degree
        self.coef0 = coef0
        self.solver = solver
        self.n_jobs = n_jobs

    def _equivalent_alpha(self, m):
        """RankRLS regularization giving the same minimiser on m inputs: m^2 / (2C)."""
        return m * m / (2.0 * check_alpha(self.C, "C"))

    def fit(self, X, y):
        """Fit from real-valued scores y (m,) or (m, v) on all pairs."""
        X = self._check_fit_X(X)
        Y, one_d = as_targets(y, X.shape[0])
        gi = group_index(None, X.shape[0])
        _check_informative_targets(Y, gi)
        alpha = self._equivalent_alpha(X.shape[0])
        spec, mode, coefs = self._solve_scores(X, Y, gi, np.array([alpha]), False)
        return self._set_fitted(X, spec, mode, coefs[0], one_d)


class RankRLSPath:
    """RankRLS solutions for many regularization values from one decomposition (eq. 31).

    Attributes
    ----------
    alphas : ndarray (n_alphas,)
    fit_mode : "dual" or "primal"
    dual_coef_ : ndarray (n_alphas, m, v) or None
    coef_ : ndarray (n_alphas, n, v) or None (linear kernel)
    """

    def __init__(self, estimator, alphas, mode, coefs, X, one_d):
        self.estimator = estimator
        self.alphas = alphas
        self.fit_mode = mode
        self._X = X
        self._one_d = one_d
        spec = estimator._kernel_spec(X.shape[1])
        self._spec = spec
        if mode == "primal":
            self.coef_, self.dual_coef_ = coefs, None
        else:
            self.dual_coef_ = coefs
            self.coef_ = np.einsum("mn,amv->anv", X, coefs) if spec.linear else None

    def __len__(self):
        return self.alphas.size

    def fitted_estimator(self, k):
        """A fitted :class:`RankRLS` for ``alphas[k]`` (shares arrays, no refit)."""
        est = RankRLS(**{**self.estimator.get_params(deep=False), "alpha": float(self.alphas[k])})
        coef = self.coef_[k] if self.fit_mode == "primal" else self.dual_coef_[k]
        return est._set_fitted(self._X, self._spec, self.fit_mode, coef, self._one_d)

    def predict(self, X):
        """Scores for every alpha: (n_alphas, p) or (n_alphas, p, v)."""
        out = np.stack([self.fitted_estimator(k).predict(X) for k in range(len(self))])
        return out


def rankrls_path(X, y, alphas, *, groups=None, estimator=None):
    """Fit RankRLS for every value in ``alphas`` from one decomposition (paper Sect. 3.2, eq. 31).

    The dual eigendecomposes S K S once (O(m^3)); each alpha then costs O(m^2 v), and all of
    them are formed in one matrix product.  The primal (linear kernel, n < m) does the same
    with the n x n matrix X^T L X.  ``estimator`` (a :class:`RankRLS`, default ``RankRLS()``)
    provides the kernel, solver and group weighting; its ``alpha`` is ignored.

    Returns
    -------
    RankRLSPath
    """
    est = RankRLS() if estimator is None else estimator
    if not isinstance(est, RankRLS):
        raise TypeError("estimator must be a fastrank.RankRLS")
    if _large_scale.use_large_scale(est, X):  # issue 4: basis vectors (eq. 42), CG, sparse X
        return _large_scale.path(est, X, y, alphas, groups)
    alphas = check_alphas(alphas)
    normalized = est._normalized()
    X = est._check_fit_X(X)
    Y, one_d = as_targets(y, X.shape[0])
    gi = group_index(groups, X.shape[0])
    _check_informative_targets(Y, gi)
    _, mode, coefs = est._solve_scores(X, Y, gi, alphas, normalized)
    return RankRLSPath(est, alphas, mode, coefs, X, one_d)
