"""RankRLS and MPRank estimators, and the regularization path.

RankRLS (Pahikkala et al. 2009) minimises, over f in the kernel's RKHS,

    sum over relevant pairs {i, j} of  w_ij (z_ij - (f(x_i) - f(x_j)))^2  +  alpha ||f||_K^2  (w_ij: the pair weight)

* scoring setting (``fit(X, y, groups=None)``): z_ij = y_i - y_j (the magnitude cost, eq. 21) over all pairs (object
  ranking) or the pairs inside each group (query/label ranking), weighted by ``group_weighting`` (1 for "unweighted":
  the Laplacian D - P P^T of eq. 25); groups of one row have no pairs and do not influence the model.
* preference graph (:meth:`RankRLS.fit_preferences`): a multigraph of preferences, with the costs (20), (21) or (22).

The estimators build a :class:`~fastrank._problem.RankingProblem` that :mod:`fastrank._solvers` solves
(docs/design/solvers.md).
"""

from __future__ import annotations

import numpy as np
from sklearn.base import clone
from sklearn.utils.validation import check_is_fitted

from ._base import (N_JOBS, NONNEG_REAL, KernelMixin, Ranker, StrOptions, feature_names, positive_int,
                    warn_if_scores_underflow)
from ._problem import WEIGHTINGS, RankingProblem
from ._registry import register_estimator
from ._solvers import (SOLVERS, choose_solver, default_max_iter, one_conditioning_warning, select_basis, solve_basis,
                       solve_cg, solve_cg_path, solve_dual, solve_primal)
from ._progress import progress, resolve_verbose, stage
from ._docs import with_param_docs
from ._exactcv import CVSpec
from ._memory import densified
from ._threads import compute_region, threads_for_work
from ._validation import check_alpha, check_alphas, check_bool, check_int, check_n_jobs, mprank_alpha
from .exceptions import LinAlgError

__all__ = ["RankRLS", "MPRank", "RankRLSPath", "rankrls_path"]

class _RankRLSBase(KernelMixin, Ranker):
    """What RankRLS and MPRank share: solving a problem, the fitted state and prediction."""

    # alpha / C are checked by check_alpha (float64 limits and the problem's scale)
    _parameter_constraints = {"solver": [StrOptions(set(SOLVERS))], "n_jobs": N_JOBS}
    _multi_output = True

    def _scores_problem(self, X, y, groups=None, weighting="unweighted", exclude_ties=False):
        return RankingProblem.from_scores(X, y, groups, weighting=weighting, precomputed=self._precomputed(),
                                          allow_sparse=self._sparse_input, learner=type(self).__name__,
                                          exclude_ties=exclude_ties)

    def _solve(self, problem, alphas, *, x0=None):
        n_threads = check_n_jobs(self.n_jobs)
        spec = self._kernel_spec(problem.n_features)
        verbose, name = self.verbose, type(self).__name__
        mode = choose_solver(self.solver, spec, problem, basis_vectors=getattr(self, "basis_vectors", None))
        m, p = float(problem.m), 0.0 if spec.precomputed else float(problem.n_features)
        if mode == "dual":
            # Threads by the work, as exact CV takes them (a second thread in LAPACK made fits at m = 200-700 up to 1.5x
            # slower): the kernel, 2 m^2 p flops, and a Cholesky of the m x m system for one alpha (~m^3 / 2 with
            # forming it; a second thread pays from m ~ 900 on 2 cores) or its eigendecomposition for several (~4 m^3;
            # pays from m ~ 500)
            n_threads = min(n_threads, threads_for_work(m * m * (2.0 * p + (m / 2.0 if alphas.size == 1 else 4.0 * m))))
        elif mode == "sparse":
            basis = select_basis(problem.m, self.basis_vectors, self.random_state)
            # the kernel block K_mB and its product K_mB^T L K_mB: |B| more multiply-adds an entry
            n_threads = self._kernel_threads(m * basis.size, p + basis.size)
        with compute_region(n_threads):  # fastrank's threads and BLAS's share the cores
            if problem.sparse and mode in ("primal", "dual"):
                problem = problem._replace(X=densified(problem.X))  # the same pair structure and targets
            if mode == "primal":
                with stage(f"{name} primal solve ({problem.n_features} features)", verbose=verbose):
                    return solve_primal(problem, alphas, n_threads)
            if mode == "dual":
                with stage(f"{name} dual solve ({problem.m} x {problem.m} kernel)", verbose=verbose):
                    return solve_dual(problem, spec, alphas, n_threads)
            if mode == "cg":
                if alphas.size > 1:
                    return solve_cg_path(problem, alphas, tol=self.tol, max_iter=self.max_iter,
                                         preconditioner=self.preconditioner, n_threads=n_threads)
                total = self.max_iter if self.max_iter is not None else default_max_iter(problem.n_features)
                with progress(total, desc="RankRLS conjugate gradient", unit="it", verbose=verbose) as bar:
                    return solve_cg(problem, float(alphas[0]), tol=self.tol, max_iter=self.max_iter, x0=x0,
                                    preconditioner=self.preconditioner, n_threads=n_threads,
                                    callback=(lambda it, res: bar.update(1)) if resolve_verbose(verbose) else None)
            return solve_basis(problem, spec, alphas, basis, n_threads)

    def _apply_fit(self, fit, k, one_d, n_features, fitted_kernel=None):
        """Copy the solution for ``alphas[k]`` of a solver's ``Fit`` onto this estimator, with the kernel it was solved
        with: ``fitted_kernel`` (another model's ``_fitted_kernel``), else this estimator's parameters."""
        squeeze = (lambda a: a[:, 0]) if one_d else (lambda a: a)
        self.fit_mode_, self.X_fit_, self.basis_indices_ = fit.mode, fit.X_fit, fit.basis_indices
        self.n_features_in_, self._single_output = n_features, one_d
        if fitted_kernel is None:
            self._freeze_kernel(n_features)
        else:
            self._fitted_kernel = tuple(fitted_kernel)
        self.coef_ = None if fit.coef is None else squeeze(np.ascontiguousarray(fit.coef[k]))
        self.dual_coef_ = None if fit.dual_coef is None else squeeze(np.ascontiguousarray(fit.dual_coef[k]))
        if fit.mode == "cg":
            self.n_iter_ = int(fit.n_iter[k, 0]) if one_d else fit.n_iter[k]
            self.converged_ = bool(fit.converged[k, 0]) if one_d else fit.converged[k]
            self.residual_history_ = squeeze(fit.residual_history[k])
        else:
            # A direct solve (one factorization) counts as one iteration that converged.
            n_out = 1 if one_d else (fit.coef if fit.coef is not None else fit.dual_coef).shape[2]
            self.n_iter_ = 1 if one_d else np.ones(n_out, dtype=np.int64)
            self.converged_ = True if one_d else np.ones(n_out, dtype=bool)
            self.__dict__.pop("residual_history_", None)
        return self

    def _fit_problem(self, problem, alpha, x0=None):
        self._apply_fit(self._solve(problem, np.array([alpha]), x0=x0), 0, problem.one_d, problem.n_features)
        if self.coef_ is not None:
            warn_if_scores_underflow(self, problem.X, self.coef_)
        return self

    def _apply_engine_fit(self, engine, alpha):
        """This estimator fitted on all of an exact-CV engine's data at ``alpha``, from its factors (no refit), with the
        group count a fit records (``n_fit_groups_``)."""
        self.n_fit_groups_ = engine.groups.n_groups
        return self._apply_fit(engine.solve(alpha), 0, engine.one_d, engine.problem.n_features)

    def _cv_spec(self):
        """The validated model record the exact cross-validation engine retrains (fastrank._exactcv): RankRLS at its
        alpha, MPRank (no alpha) at fixed C."""
        self._validate_params()  # as fit: a parameter fit refuses (random_state="x", tol=-1) is refused here too
        params = self.get_params(deep=False)
        name = "C" if "C" in params else "alpha"  # checked as fit checks it, so the error names the parameter
        fields = {k: v for k, v in params.items() if k in CVSpec.__dataclass_fields__}
        fields.update({"alpha": None, name: check_alpha(params[name], name)})
        if "exclude_ties" in params:
            fields["exclude_ties"] = self._exclude_ties()
        return CVSpec(**fields)

    def predict(self, X):
        """Scores for ranking: higher ranks higher.

        %(Parameters)s %(X_predict)s %(Returns)s
        scores : ndarray of shape (n_test,) or (n_test, n_outputs)
            Only differences of scores are meaningful (the objective is invariant to adding a constant), so the
            scores are not on the scale of ``y``.
        """
        check_is_fitted(self, "fit_mode_")
        return self._expansion_predict(self._check_predict_X(X))


PREFERENCE_TIES = ("exclude_ties=True drops the tied pairs of fit(X, y); a preference graph is learned exactly as "
                   "listed: leave out the preferences to drop and use exclude_ties=False")


@register_estimator
class RankRLS(_RankRLSBase):
    """Regularized least-squares ranking (RankRLS; Pahikkala et al., Machine Learning 2009).

    Parameters
    ----------
    alpha : float, default=1.0
        Regularization (the paper's lambda, not rescaled), > 0.
    %(kernel)s %(gamma)s %(degree)s %(coef0)s
    solver : {"auto", "dual", "primal", "cg"}, default="auto"
        "dual": the m x m kernel system (O(m^3), eq. 17, any kernel); "primal": the n x n feature system (O(n^3 + n^2
        m), eq. 28, linear kernel); "cg": conjugate gradient on the linear primal without forming pairs (O(nnz + m) per
        iteration, dense or sparse X; Sect. 4.3).  "auto": CG for sparse X with the linear kernel, else the primal for a
        linear kernel with n_features < n_samples, else the dual.  A dense solver that would allocate more than half the
        available memory raises MemoryError (limit: FASTRANK_MAX_DENSE_BYTES).
    %(group_weighting)s %(n_jobs)s
    tol : float, default=1e-6
        solver="cg": stop when the residual norm falls below tol times the right-hand side's.
    max_iter : int or None, default=None
        solver="cg": stop after max_iter iterations per output (None: min(10 n_features, 5000)) with
        :class:`sklearn.exceptions.ConvergenceWarning`.
    warm_start : bool, default=False
        solver="cg": start from the previous fit's ``coef_``.
    preconditioner : {None, "jacobi"}, default=None
        solver="cg": Jacobi (diagonal of X^T L X + alpha I) preconditioning.
    basis_vectors : int, array of row indices, or None, default=None
        Sparse subset-of-regressors RankRLS (eq. 40-42): an int draws that many basis rows at random (``random_state``);
        an array gives them.  O(m |R|^2), any kernel.
    %(random_state)s %(exclude_ties)s %(verbose)s
        Reports the CG iterations or the dense solve's duration.

    Attributes
    ----------
    fit_mode_ : {"dual", "primal", "cg", "sparse"}
    dual_coef_, X_fit_, coef_ : ndarray (m,) or (m, v), (m, n) and (n,) or (n, v), or None
        Dual coefficients A (eq. 17) in the original row order and the training rows kept for kernel predictions (dual
        solver; no rows for a precomputed kernel); the weight vector W (eq. 27/28) whenever the kernel is linear.
    n_features_in_, feature_names_in_ : int, ndarray of str
        The number of features; their names when X was a DataFrame with string column names (``predict`` then
        refuses a frame with its columns in another order).
    n_iter_, converged_, residual_history_ : int, bool (arrays (v,) for several outputs) and ndarray
        CG iterations and convergence per output (a direct solve reports 1 iteration, converged) and, solver="cg" only,
        the relative residual norms per iteration.
    basis_indices_ : ndarray
        basis_vectors only: the basis rows; ``X_fit_`` holds just those rows, ``dual_coef_`` theirs.

    Notes
    -----
    The dual is solved as ``(S K S + alpha I) u = S y``, ``A = S u``, ``S = L^{1/2}`` (docs/design/solvers.md) in one
    m x m float64 matrix overwritten in place, plus O(m v) (a path: about 2 more m x m).  Breakdown raises
    :class:`fastrank.LinAlgError`, ill-conditioning emits :class:`fastrank.IllConditionedWarning`
    (docs/design/robustness.md).
    """

    def __init__(self, alpha=1.0, *, kernel="linear", gamma=None, degree=3, coef0=1.0, solver="auto",
                 group_weighting="unweighted", n_jobs=None, tol=1e-6, max_iter=None, warm_start=False,
                 preconditioner=None, basis_vectors=None, random_state=None, exclude_ties=False, verbose=0):
        self._store_params(locals())

    _parameter_constraints = {
        "group_weighting": [StrOptions(set(WEIGHTINGS))],
        "tol": [NONNEG_REAL],
        "max_iter": [None, positive_int()],
        "warm_start": ["boolean"],
        "preconditioner": [None, StrOptions({"jacobi"})],
        "random_state": ["random_state"],
    }

    _sparse_input = True  # CG, basis vectors, or densified

    def _exclude_ties(self):
        return check_bool(self.exclude_ties, "exclude_ties")

    def _warm_start_coef(self, problem):
        if not self.warm_start or getattr(self, "fit_mode_", None) != "cg" or self.coef_ is None:
            return None
        W = np.asarray(self.coef_).reshape(self.coef_.shape[0], -1)
        return W if W.shape == (problem.n_features, problem.n_outputs) else None

    @one_conditioning_warning
    def fit(self, X, y, groups=None):
        """Fit from scores: all pairs relevant, or only pairs inside a group.

        Parameters
        ----------
        %(X_fit)s
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            Real-valued scores or relevance labels; several outputs are fitted at once.
        groups : array-like of shape (n_samples,) or None, default=None
            Query id of each row (any order, need not be contiguous or sorted): only pairs inside a query count; None:
            every pair of rows.

        Returns
        -------
        %(fitted_self)s
        """
        self._validate_params()
        alpha = check_alpha(self.alpha)
        problem = self._scores_problem(X, y, groups, self.group_weighting, self._exclude_ties())
        return self._fit_problem(problem, alpha, self._warm_start_coef(problem))

    def fit_preferences(self, X, pairs, magnitudes=None, cost=None, weights=None):
        """Fit from an explicit preference multigraph (repeated pairs add up).

        ``exclude_ties=True`` raises ValueError here: the preferences are fitted exactly as listed.

        Parameters
        ----------
        %(X_preferences)s %(pairs)s
        magnitudes : array-like of shape (n_pairs,) or None, default=None
            Magnitudes g_e >= 0 of the preferences (> 0 for ``cost="normalized"``).
        cost : {"binary", "magnitude", "normalized"} or None, default=None
            (20) "binary": every preference targets a score difference of 1 with weight 1; (21) "magnitude": target g_e,
            weight 1; (22) "normalized": target g_e, width w_e = 1/g_e (the squared error times w_e^2 = 1/g_e^2).  None:
            "binary" without ``magnitudes``, "magnitude" with them.  "binary" with magnitudes, or another cost without
            them, raises ValueError.
        weights : array-like of shape (n_pairs,) or None, default=None
            Positive weights: the squared error of preference e is multiplied by ``weights[e]`` (an integer weight k
            is the same as repeating the pair k times).

        Returns
        -------
        %(fitted_self)s
        """
        self._validate_params()
        alpha = check_alpha(self.alpha)
        if self._exclude_ties():  # was ignored: a zero magnitude is a tie that the listed pairs keep
            raise ValueError(PREFERENCE_TIES)
        problem = RankingProblem.from_preferences(X, pairs, magnitudes, cost, weights=weights,
                                                  precomputed=self._precomputed(), allow_sparse=True)
        return self._fit_problem(problem, alpha, self._warm_start_coef(problem))


@register_estimator
class MPRank(_RankRLSBase):
    """Magnitude-preserving ranking, MPRank (Cortes, Mohri, Rastogi; 000 eq. 8 with n = 2).

    Minimises ``||h||_K^2 + C / m^2 * sum_{i,j} ((h(x_j) - h(x_i)) - (y_j - y_i))^2`` over all ordered pairs (inside
    each group with ``groups``, the same C / m^2, m = all rows): :class:`RankRLS`'s problem with ``alpha = m^2 / (2 C)``
    (each unordered pair appears twice in the double sum).  Cross-validation in :mod:`fastrank.model_selection` retrains
    at the same C: alpha = m_train^2 / (2 C).

    Parameters
    ----------
    %(C)s %(kernel)s %(gamma)s %(degree)s %(coef0)s
    solver : {"auto", "dual", "primal"}, default="auto"
        As for :class:`RankRLS`.
    %(n_jobs)s %(verbose)s
    """

    def __init__(self, C=1.0, *, kernel="linear", gamma=None, degree=3, coef0=1.0, solver="auto", n_jobs=None,
                 verbose=0):
        self._store_params(locals())

    _regularize_more = "decrease C"  # one_conditioning_warning's advice: alpha = m^2 / (2 C)

    @one_conditioning_warning
    def fit(self, X, y, groups=None):
        """Fit from real-valued scores with alpha = m^2 / (2 C) for the m rows given.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training rows (dense), or the (n_samples, n_samples) kernel matrix for ``kernel="precomputed"``.
        y : array-like of shape (n_samples,) or (n_samples, n_outputs)
            Real-valued scores; several outputs are fitted at once.
        %(groups_fit)s

        Returns
        -------
        %(fitted_self)s
        """
        self._validate_params()
        problem = self._scores_problem(X, y, groups)
        alpha = mprank_alpha(check_alpha(self.C, "C"), problem.m)
        if self.solver == "cg":
            raise ValueError("MPRank has no solver='cg'; use RankRLS(solver='cg') (for MPRank with "
                             "alpha = m**2 / (2 C))")
        try:
            return self._fit_problem(problem, alpha)
        except LinAlgError as error:
            raise LinAlgError(f"MPRank(C={self.C:.3g}) solves RankRLS's system at alpha = m^2 / (2 C) = {alpha:.3g} "
                              f"(m = {problem.m}): alpha falls as C grows. {error}") from error


@with_param_docs()
class RankRLSPath:
    """RankRLS solutions for many regularization values (eq. 31), as returned by :func:`rankrls_path`.

    Parameters
    ----------
    estimator : RankRLS
        The estimator whose parameters (all but ``alpha``) the solutions share; a clone is kept.
    alphas : ndarray of shape (n_alphas,)
        The regularization values.
    fit : fastrank._solvers.Fit
        The solver's record of the solutions.
    one_d : bool
        Whether ``y`` was one-dimensional.
    n_features : int
        The number of features seen in the fit (the number of training rows for a precomputed kernel).
    n_groups : int, default=1
        The number of query groups of the fit (``n_fit_groups_`` of the fitted estimators).
    feature_names_in : ndarray of str or None, default=None
        The DataFrame column names seen in the fit.
    fitted_kernel : KernelSpec or None, default=None
        The kernel resolved at fit.

    Attributes
    ----------
    alphas : ndarray of shape (n_alphas,)
    fit_mode : {"dual", "primal", "cg", "sparse"}
    dual_coef_ : ndarray of shape (n_alphas, m or |R|, v) or None
    coef_ : ndarray of shape (n_alphas, n_features, v) or None
        Linear models only.
    basis_indices_, X_fit_ : ndarray or None
        The basis rows of ``basis_vectors`` and the rows kept for predictions.
    n_iter_, converged_ : ndarray of shape (n_alphas, v) or None
        CG only.
    feature_names_in_ : ndarray of str
        Fitted on a DataFrame of string column names only.
    """

    def __init__(self, estimator, alphas, fit, one_d, n_features, n_groups=1, feature_names_in=None,
                 fitted_kernel=None):
        # the parameters of the solve, not the caller's estimator (set_params on it later would give the coefficients
        # another kernel)
        self.estimator, self.alphas = clone(estimator), alphas
        self.fit_mode, self.coef_, self.dual_coef_ = fit.mode, fit.coef, fit.dual_coef
        self.basis_indices_, self.X_fit_ = fit.basis_indices, fit.X_fit
        self.n_iter_, self.converged_ = fit.n_iter, fit.converged
        self._fit, self._fit_args, self._n_groups = fit, (one_d, n_features, fitted_kernel), n_groups
        if feature_names_in is not None:  # fitted on a DataFrame: its models refuse reordered columns
            self.feature_names_in_ = feature_names_in

    def __len__(self):
        return self.alphas.size

    @with_param_docs()
    def fitted_estimator(self, k):
        """A fitted :class:`RankRLS` for one alpha (shares arrays, no refit).

        Parameters
        ----------
        k : int
            The index into ``alphas`` (negative counts from the end).

        Returns
        -------
        estimator : RankRLS
            Fitted at ``alphas[k]``, with the group count a fit records (``n_fit_groups_``: ``score`` without groups
            then warns as after ``fit``).
        """
        k = check_int(k, "k", low=-len(self), high=len(self) - 1)  # numpy's IndexError named no argument
        est = type(self.estimator)(**{**self.estimator.get_params(deep=False), "alpha": float(self.alphas[k])})
        est.n_fit_groups_ = self._n_groups
        if hasattr(self, "feature_names_in_"):
            est.feature_names_in_ = self.feature_names_in_
        return est._apply_fit(self._fit, k, *self._fit_args)

    @with_param_docs()
    def predict(self, X):
        """Scores for every alpha.

        %(Parameters)s %(X_predict)s %(Returns)s
        scores : ndarray of shape (n_alphas, n_test) or (n_alphas, n_test, n_outputs)
            Row k: ``fitted_estimator(k).predict(X)``.
        """
        return np.stack([self.fitted_estimator(k).predict(X) for k in range(len(self))])


@with_param_docs()
def rankrls_path(X, y, alphas, *, groups=None, estimator=None):
    """Fit RankRLS for every value in ``alphas`` from one decomposition (paper Sect. 3.2, eq. 31).

    The dual factorizes S K S once (O(m^3); docs/design/solvers.md), then all alphas cost O(m^2 v); the primal (linear
    kernel, n < m) does the same with X^T L X, ``basis_vectors`` models with the |R| x |R| system (eq. 42); CG runs once
    per alpha, warm-started.

    Parameters
    ----------
    %(X_fit)s
    y : array-like of shape (n_samples,) or (n_samples, n_outputs)
        Real-valued scores or relevance labels.
    alphas : float or array-like of shape (n_alphas,)
        The regularization values, > 0, kept in the given order.
    %(groups_fit)s
    estimator : RankRLS or None, default=None
        Gives every parameter but ``alpha``; None: ``RankRLS()``; any other type raises TypeError.

    Returns
    -------
    path : RankRLSPath
        The solutions, one per alpha.
    """
    est = RankRLS() if estimator is None else estimator
    if not isinstance(est, RankRLS):
        raise TypeError("estimator must be a fastrank.RankRLS")
    est._validate_params()
    alphas = check_alphas(alphas)
    problem = est._scores_problem(X, y, groups, est.group_weighting, est._exclude_ties())
    return RankRLSPath(est, alphas, est._solve(problem, alphas), problem.one_d, problem.n_features,
                       problem.groups.n_groups, feature_names(X))
