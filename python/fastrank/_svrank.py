"""SVRank (Cortes, Mohri & Rastogi, paper 000, eq. 9): cutting planes and generalised Newton over an O(m log m)
sorted-residual loss oracle that never forms the O(m^2) pairs; see :class:`SVRank`."""

from __future__ import annotations

import functools
import warnings

import numpy as np
import scipy.linalg
from sklearn.utils.validation import check_is_fitted

from . import _core
from ._base import (N_JOBS, NONNEG_REAL, KernelMixin, Ranker, StrOptions, c_path, positive_int, warn_if_constant,
                    warn_if_scores_underflow)
from ._docs import with_param_docs
from ._kernels import pivoted_cholesky, semidefinite_by_construction
from ._memory import check_dense_memory
from ._problem import centred_in_groups, features_without_group_offsets, group_target_range, require_preferences
from ._progress import resolve_verbose, stage, write_line
from ._registry import register_estimator
from ._solvers import train_kernel
from ._threads import compute_region, kernel_blas_threads
from ._validation import check_alpha, check_n_jobs, group_index
from .exceptions import ConvergenceWarning, user_stacklevel

__all__ = ["SVRank", "svrank_path"]


def _conjugate_gradient(hessp, b, rtol, max_iter):
    """x with ||H x - b|| <= rtol ||b|| (H symmetric positive definite, given as a product)."""
    x, r, p = np.zeros_like(b), b.copy(), b.copy()
    rr = r @ r
    stop = (rtol * np.sqrt(rr)) ** 2
    for _ in range(max_iter):
        if rr <= stop:
            break
        Hp = hessp(p)
        alpha = rr / (p @ Hp)
        x += alpha * p
        r -= alpha * Hp
        rr_new = r @ r
        p = r + (rr_new / rr) * p
        rr = rr_new
    return x


def _squared_newton(Z, y, groups, c, eps, tol, max_iter, n_threads):
    """Minimiser of F(u) = ||u||^2 + c L2(Z u - y), L2 the squared epsilon-insensitive pair cost, by generalised Newton
    with a backtracking line search (docs/design/large-margin-and-boosting.md, "Squared cost").  Stops when ||grad F||
    <= tol ||grad F(0)||, or when no step decreases F any more (rounding).  Returns (u, n_iter, converged, history)."""

    def value_grad(u):
        r = Z @ u - y
        L, g, _ = _core.svrank_squared_pair_loss(r, *groups, eps, n_threads)
        return u @ u + c * L, 2.0 * u + c * (Z.T @ g), r

    u = np.zeros(Z.shape[1])
    F, grad, r = value_grad(u)
    g0 = float(np.linalg.norm(grad))
    history = []
    if not g0 > 0.0:  # every pair inside the tube at u = 0: u = 0 is optimal
        return u, 0, True, history
    for it in range(1, max_iter + 1):
        gn = float(np.linalg.norm(grad))
        history.append(gn / g0)
        if gn <= tol * g0:
            return u, it - 1, True, history

        def hessp(v, r=r):
            return 2.0 * v + c * (Z.T @ _core.svrank_squared_pair_loss(r, *groups, eps, n_threads, Z @ v)[2])

        d = _conjugate_gradient(hessp, -grad, min(0.1, np.sqrt(gn / g0)), 10 * Z.shape[1] + 50)
        slope = float(grad @ d)
        step = 1.0
        while True:
            F_new, grad_new, r_new = value_grad(u + step * d)
            if F_new <= F + 1e-4 * step * slope or step < 1e-12:
                break
            step *= 0.5
        if not F_new < F and -slope <= 64 * np.finfo(float).eps * abs(F):
            # F cannot resolve the decrease (small c or Z: its rounding exceeds the O(c^2) gain): the full Newton step
            # is kept when it shrinks the gradient, the quantity the stopping test reads
            F_new, grad_new, r_new = value_grad(u + d)
            if float(np.linalg.norm(grad_new)) < gn:
                step, F_new = 1.0, min(F_new, F)
        if not F_new < F and step != 1.0:
            # No decrease even along a tiny step: F is at its rounding floor, short of tol (the caller warns).
            return u, it - 1, False, history
        u, F, grad, r = u + step * d, F_new, grad_new, r_new
    history.append(float(np.linalg.norm(grad)) / g0)
    return u, max_iter, history[-1] <= tol, history


# around the Newton solves: a solve that overflows is refused by name after it (SVRank._fit), not by numpy's warnings
_quiet_overflow = functools.partial(np.errstate, over="ignore", invalid="ignore")


def _squared_pair_term(f, y, groups, c, eps, n_threads):
    """(C / N) L2(f - y): the pair term of the squared-cost objective."""
    return c * _core.svrank_squared_pair_loss(np.ascontiguousarray(f - y), *groups, eps, n_threads)[0]


@register_estimator
class SVRank(KernelMixin, Ranker):
    """SVRank: magnitude-preserving ranking with the epsilon-insensitive pairwise cost.

    Minimises (Cortes, Mohri & Rastogi, eq. 9 with the cost c_SVR of eq. 7, n = 1; the constrained form of §2.4 with
    slacks xi_ij + xi*_ij)

        F(h) = ||h||_K^2 + (C / N) sum_q sum_{i in q} sum_{j in q} max(0, |(h(x_j) - h(x_i)) - (y_j - y_i)| - epsilon)

    over **ordered** pairs (i, j) of rows (each unordered pair counts twice; i = j costs 0), ``N = sum_q n_q^2``:
    without ``groups`` one group and ``N = m^2``, the paper's ``C / m^2``; with ``groups`` only pairs inside a group
    count and the pair term stays ``C`` times the mean pair cost (a group of n_q rows weighs n_q^2 / N).  The
    regulariser is ``||h||^2`` (no 1/2), as in the paper.  The O(m log m) loss oracle and the one-slack cutting planes
    (Joachims 2006, OCAS line search of Franc & Sonnenburg 2009; the dual value certifies a lower bound):
    docs/design/large-margin-and-boosting.md.  The squared cost (``loss="squared_epsilon_insensitive"``, c_SVR with
    n = 2, §2.2) makes F smooth and strictly convex: a generalised Newton method, for non-linear kernels in the
    coordinates of K's pivoted Cholesky factor (LAPACK dpstrf, rank-revealing for a semi-definite K).

    Parameters
    ----------
    %(C)s
    epsilon : float, default=0.1
        Width of the insensitive zone on predicted minus true score differences, >= 0.
    loss : {"epsilon_insensitive", "squared_epsilon_insensitive"}, default="epsilon_insensitive"
        The pair cost: n = 1 (cutting planes) or n = 2 (Newton) in the paper's c_SVR.
    %(kernel)s
        "linear" solves for a weight vector (O(mn) per iteration); the others for the representer coefficients
        ``dual_coef_`` (f = K beta; one m x m kernel matrix behind the dense-memory limit, O(m^2) per iteration).
    %(gamma)s %(degree)s %(coef0)s
    tol : float, default=1e-6
        Stop when the certified gap ``best F - lower bound``, relative to the smaller of ``best F`` and the achievable
        decrease ``F(0) - lower bound``, is below tol: the objective is then within tol of its optimum, relatively, at
        any scale of X, y or C (squared cost: the gradient norm relative to its value at h = 0).  Stopping at double
        precision's rounding floor first gives :class:`fastrank.exceptions.ConvergenceWarning` and
        ``converged_ = False``.
    max_iter : int, default=1000
        Oracle calls (cutting planes; Newton iterations for the squared cost) after which the solve stops with
        :class:`fastrank.exceptions.ConvergenceWarning` and ``converged_ = False``.
    %(n_jobs)s %(verbose)s
        Reports the kernel matrix and the solve with their timings, then the iterations and the gap.

    Attributes
    ----------
    coef_, dual_coef_ : ndarray (n_features,) and (m,), or None
        Weight vector (linear kernel) or representer coefficients beta, f(x) = sum_i beta_i k(x, x_i) (other kernels).
    n_iter_, objective_, gap_ : int, float and float
        Cutting planes used (Newton iterations for the squared cost), F at the returned model, and the criterion ``tol``
        bounds at exit (the certified gap; the relative gradient norm for the squared cost).
    """

    def __init__(self, C=1.0, *, epsilon=0.1, loss="epsilon_insensitive", kernel="linear", gamma=None, degree=3,
                 coef0=1.0, tol=1e-6, max_iter=1000, n_jobs=None, verbose=0):
        self._store_params(locals())

    # C is checked by check_alpha (float64 limits)
    _parameter_constraints = {"epsilon": [NONNEG_REAL], "tol": [NONNEG_REAL], "max_iter": [positive_int()],
                              "loss": [StrOptions({"epsilon_insensitive", "squared_epsilon_insensitive"})],
                              "n_jobs": N_JOBS}

    def fit(self, X, y, groups=None):
        """Fit from real-valued scores, on all pairs or on pairs inside ``groups``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training rows, or the (n_samples, n_samples) kernel matrix for ``kernel="precomputed"``.
        y : array-like of shape (n_samples,)
            Real-valued scores.
        %(groups_fit)s

        Returns
        -------
        %(fitted_self)s
        """
        return self._fit(X, y, groups)

    def _fit(self, X, y, groups=None, warm=None):
        """``fit``; ``warm`` (linear kernel): a dict carrying a neighbouring C's solution and cut model into the core
        and back (``svrank_path``)."""
        self._validate_params()
        C = check_alpha(self.C, "C")
        eps, tol, max_iter = float(self.epsilon), float(self.tol), int(self.max_iter)
        n_threads = check_n_jobs(self.n_jobs)
        X = self._check_fit_X(X)
        y = self._check_target_vector(y, X.shape[0])
        spec = self._kernel_spec(X.shape[1])
        gi = group_index(groups, X.shape[0])
        require_preferences(y, gi, "SVRank")
        low, high = group_target_range(y, gi)
        with np.errstate(over="ignore"):  # overflowing pair differences gave w = 0, objective 0, converged
            sums = np.add.reduceat(gi.take(y), gi.offsets[:-1])
            if not (np.isfinite(high - low).all() and np.isfinite(sums).all()):
                raise ValueError(f"SVRank: differences or sums of y overflow float64 (max |y| = "
                                 f"{float(np.max(np.abs(y))):.3g}); rescale y (and epsilon with it)")
        yg = np.ascontiguousarray(gi.take(centred_in_groups(y, gi)))  # only differences inside groups count
        grouping = (gi.order, gi.offsets)  # the rows below are in group order
        squared = self.loss == "squared_epsilon_insensitive"
        c = C / float(np.sum(gi.sizes.astype(np.float64) ** 2))  # C / N, N ordered pairs
        # the loss reads f_i - f_j = w.(x_i - x_j) inside groups only: the same w on columns centred in every group,
        # without the digits a large (common or query-level) feature offset cancels in f = X w
        Xg = np.ascontiguousarray(gi.take(features_without_group_offsets(X, gi))) if spec.linear else None
        steps = "Newton iterations" if squared else "cutting planes"
        # BLAS's work in the kernel hinge is the kernel's product and the master's small systems
        blas = kernel_blas_threads(X.shape[1]) if not (spec.linear or squared or spec.precomputed) and \
            semidefinite_by_construction(spec) else None
        # a kernel's m x m entries and products; the linear solvers size their loops' threads in the core
        n_threads = n_threads if spec.linear else self._kernel_threads(
            X.shape[0] ** 2, 0 if spec.precomputed else X.shape[1], blas)
        with compute_region(n_threads, blas):  # fastrank's threads and BLAS's share the cores
            if spec.linear and squared:
                with stage(f"SVRank Newton (linear, squared cost, m={Xg.shape[0]})", verbose=self.verbose), \
                        _quiet_overflow():
                    w, n_iter, converged, history = _squared_newton(Xg, yg, grouping, c, eps, tol, max_iter, n_threads)
                objective = w @ w + _squared_pair_term(Xg @ w, yg, grouping, c, eps, n_threads)
            elif spec.linear:
                with stage(f"SVRank cutting planes (linear, m={Xg.shape[0]})", verbose=self.verbose):
                    w, n_iter, converged, objective, lower, history = _core.svrank_linear(
                        Xg, yg, *grouping, C, eps, tol, max_iter, n_threads, warm=warm)
            else:  # the squared cost also holds K's Cholesky factor and its row permutation
                # a kernel not semidefinite by construction (precomputed, poly with coef0 < 0 or a fractional degree)
                # is checked by the same factor for the hinge cost: its cutting planes would minimise a non-convex
                # objective
                check = squared or not semidefinite_by_construction(spec)
                check_dense_memory(X.shape[0], 3 if check else 1,
                                   "kernel matrix and its Cholesky factor" if check else "kernel matrix",
                                   advice="Use the linear kernel: its solvers keep no m x m matrix.")
                with stage(f"SVRank kernel matrix (m={X.shape[0]})", verbose=0 if spec.precomputed else self.verbose):
                    Kg = train_kernel(X, spec, n_threads, gi)
                if squared:
                    with stage(f"SVRank Newton (kernel, squared cost, m={X.shape[0]})", verbose=self.verbose), \
                            _quiet_overflow():
                        # K = P L L^T P^T: u = L_11^T (P^T beta)_{1..r} gives ||h||^2 = u^T u and f = K beta = Z u,
                        # Z = P L
                        L, Z, piv, rank = pivoted_cholesky(Kg, "SVRank")
                        u, n_iter, converged, history = _squared_newton(Z, yg, grouping, c, eps, tol, max_iter,
                                                                        n_threads)
                    beta = np.zeros(Kg.shape[0])
                    beta[piv[:rank] - 1] = scipy.linalg.solve_triangular(L[:rank], u, lower=True, trans="T")
                    f = Kg @ beta
                    objective = beta @ f + _squared_pair_term(f, yg, grouping, c, eps, n_threads)
                else:
                    if check:
                        pivoted_cholesky(Kg, "SVRank")
                    with stage(f"SVRank cutting planes (kernel, m={X.shape[0]})", verbose=self.verbose):
                        beta, n_iter, converged, objective, lower, history = _core.svrank_kernel(
                            Kg, yg, *grouping, C, eps, tol, max_iter, n_threads)
                del Kg
        coef, dual = (w, None) if spec.linear else (None, gi.untake(beta))
        X_fit = None if spec.linear or spec.precomputed else X
        history = np.asarray(history)
        gap = float(history[-1]) if history.size else 0.0
        if not (np.isfinite(objective) and np.isfinite(gap) and np.isfinite(w if spec.linear else beta).all()):
            raise ValueError(
                f"SVRank: the solve overflowed double precision (objective {float(objective):.3g}, relative gap "
                f"{gap:.3g}) with max |X| = {float(np.max(np.abs(X), initial=0.0)):.3g} and max |y| = "
                f"{float(np.max(np.abs(y))):.3g}; standardize X and rescale y (and epsilon with it).")
        if resolve_verbose(self.verbose):
            write_line(f"[fastrank] SVRank: {int(n_iter)} {steps}, objective {float(objective):.10g}, gap {gap:.2e}")
        # all checks passed: only now replace a previous fit
        self.coef_, self.dual_coef_, self.X_fit_, self.n_features_in_ = coef, dual, X_fit, X.shape[1]
        self._freeze_kernel(X.shape[1])
        self.n_iter_, self.objective_, self.gap_ = int(n_iter), float(objective), gap
        self.converged_, self.gap_history_ = bool(converged), history
        self.n_fit_groups_ = gi.n_groups  # as fit records it, also for svrank_path's models
        if not squared and lower - objective > 1e-4 * abs(objective):  # C max|X|^2 ~ 1e18 (sound: < 1e-6 above)
            converged = self.converged_ = False
            warnings.warn(f"SVRank's cutting planes lost their certificate: the lower bound {lower:.6g} they found "
                          f"exceeds the objective {objective:.6g} of the model returned, which is therefore not the "
                          "optimum (C * max|X|^2 is beyond double precision for them).  Use a smaller C or standardize "
                          "X, or loss='squared_epsilon_insensitive'.", ConvergenceWarning, stacklevel=user_stacklevel())
        elif not converged and n_iter < max_iter:  # at double precision's rounding floor, short of tol
            measure = "gradient norm" if squared else "gap"
            warnings.warn(
                f"SVRank stopped after {int(n_iter)} {steps}: double precision's rounding resolves the objective no "
                f"further, at relative {measure} {gap:.3g} > tol={tol:g}; the model is the best point found.  "
                "Standardize X (C times the features' squared scale is what counts) or use a larger tol.",
                ConvergenceWarning, stacklevel=user_stacklevel())
        elif not converged:
            warnings.warn(f"SVRank stopped at max_iter={max_iter} {steps} with relative gap {gap:.3g} > tol={tol:g}; "
                          "increase max_iter or tol.", ConvergenceWarning, stacklevel=user_stacklevel())
        warn_if_constant(self, converged and not np.any(w if spec.linear else beta),
                         "no feature separates the rows of any pair whose targets differ by more than epsilon "
                         "(constant features, identical rows, or an epsilon above every target difference)")
        if spec.linear:
            warn_if_scores_underflow(self, X, w)
        return self

    def predict(self, X):
        """Ranking scores (higher ranks higher).

        Parameters
        ----------
        X : array-like of shape (n_test, n_features)
            Rows to score, or their (n_test, n_samples) kernel against the training rows for ``kernel="precomputed"``.

        Returns
        -------
        %(ranking_scores)s
        """
        check_is_fitted(self, "n_iter_")
        X = self._check_predict_X(X, allow_sparse=False)
        return self._expansion_predict(X)


@with_param_docs()
def svrank_path(X, y, Cs, groups=None, *, verbose=0, **params):
    """Linear SVRank fitted for every C in ``Cs``, warm-starting each fit from the previous one.

    The values are visited in increasing order; each cutting-plane solve starts from the previous C's solution (its
    first plane and best point are placed there) and cut model (the planes are tangents of the pair loss itself, valid
    for every C, so the master problem starts with a lower bound close to the optimum).  Every fit is still certified
    by its own duality gap: the model ``SVRank(C=C, **params)`` gives, to its ``tol``.  The squared cost is solved from
    zero for each C.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Training rows.
    y : array-like of shape (n_samples,)
        Real-valued scores.
    %(Cs_path)s %(groups_fit)s %(verbose_path)s
    **params : dict
        The other :class:`SVRank` parameters (the kernel must be linear; C comes from ``Cs``).

    Returns
    -------
    estimators : list of SVRank
        The fitted models, in the order of ``Cs``.
    """
    Cs, visit = c_path(Cs, SVRank(**params).kernel, "svrank_path", verbose, params)
    fitted = [None] * Cs.size
    warm = {}  # the solution and cut model, carried from C to C by the core
    for k in visit:
        fitted[k] = SVRank(C=float(Cs[k]), **params)._fit(X, y, groups, warm=warm)._record_feature_names(X)
    return fitted
