"""RankSVM (Joachims 2002; slides 003, "Hinge loss for preference learning") without a pair list.  ``C`` multiplies the
plain sum over preference pairs (not a mean), as SVMrank's ``-c`` after its own rescaling is undone.  The O(m log m)
pair sums and the solvers (``cpp/src/ranksvm.cpp``): docs/design/large-margin-and-boosting.md."""

from __future__ import annotations

import warnings

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from sklearn.utils.validation import check_is_fitted

from . import _core
from ._base import (N_JOBS, NONNEG_REAL, KernelMixin, Ranker, StrOptions, c_path, crucial_pairs, positive_int,
                    warn_if_constant, warn_if_scores_underflow)
from ._docs import with_param_docs
from ._kernels import pivoted_cholesky, semidefinite_by_construction
from ._memory import check_dense_memory, densified
from ._problem import (centred_in_groups, check_pair_weights, check_pairs, features_without_group_offsets,
                       raise_without_preferences)
from ._progress import resolve_verbose, stage, write_line
from ._registry import register_estimator
from ._solvers import basis_kernel, select_basis
from ._sparse import as_csr
from ._threads import compute_region, kernel_blas_threads
from ._validation import check_alpha, check_n_jobs, group_index
from .exceptions import ConvergenceWarning, user_stacklevel

__all__ = ["RankSVM", "ranksvm_path"]

_LOSSES = {"squared_hinge": 0, "hinge": 1}
# Features below which the linear hinge runs BLAS on one thread: its exact Newton steps form and factor a p x p matrix
# (dsyrk, dpotrf), and OpenBLAS's workers, spinning after each threaded call, slowed the threaded sweeps that follow.
# Measured on 2 cores (100 Newton steps, m = 8000 in groups of 20, tied targets), BLAS on two threads against one:
# 400 features 1.61 / 1.28 s, 1000 4.68 / 4.52 s, 1500 8.57 / 10.13 s; CSR, m = 20,000 x 136: 5.9 / 3.8 s.
_NEWTON_BLAS_FEATURES = 1024


def _group_structure(y, groups, m):
    gi = group_index(groups, m)
    return dict(y=y, order=gi.order, offsets=gi.offsets)


def _graph_structure(pairs, weights, m):
    """The core's graph structure with the weights scaled into (1/2, 1], the power of two taken out (weights k w with
    C are weights w with k C, which _rescaled then caps like any C), and the total weight."""
    head, tail = check_pairs(pairs, m)
    w = np.ones(head.size) if weights is None else check_pair_weights(weights, head.size, zero_ok=True)
    with np.errstate(over="ignore"):
        total = float(w.sum())
    if not np.isfinite(total):
        raise ValueError("weights sum to more than float64 holds; rescale them (every weight times k is the model of "
                         "C times k)")
    scale = 2.0 ** np.frexp(w.max())[1]
    return dict(head=head, tail=tail, weight=w / scale), scale, total


# Beyond this C max|X|^2 the Newton / cutting-plane products overflow or lose every digit of the
# regularizer; the squared hinge's solution is then its C -> infinity limit to double precision.
_C_SCALED_MAX = 1e20


def _rescaled(X, C):
    """``(X / s, C s^2, s, capped)`` for s the power of two at max |X|: f = X w = (X / s)(s w) and 1/2 ||w||^2 + C
    L = (1/2 ||s w||^2 + C s^2 L) / s^2, so the minimiser is w' / s exactly (powers of two scale without rounding) while
    X^T H X and C X^T grad stay clear of overflow and underflow (X x 1e200, X x 1e-200).  C s^2 above _C_SCALED_MAX is
    capped there (``capped`` True)."""
    values = X.data[:X.nnz] if sp.issparse(X) else X  # CSR storage past indptr[-1] is unused
    big = max(float(values.max()), -float(values.min())) if values.size else 0.0  # max |X|, no temporary
    if not big > 0.0:
        return X, C, 1.0, False
    scale = 2.0 ** np.frexp(big)[1]
    with np.errstate(over="ignore", under="ignore"):
        C_scaled = C * scale * scale
    capped = not C_scaled <= _C_SCALED_MAX
    if capped:
        C_scaled = _C_SCALED_MAX
    elif 2.0**-32 <= big <= 2.0**32 or C_scaled == 0.0:
        return X, C, 1.0, False  # ordinary scale, or C s^2 underflows: the solver's norms cope
    X = sp.csr_matrix((X.data / scale, X.indices, X.indptr), shape=X.shape) if sp.issparse(X) else X / scale
    return X, C_scaled, scale, capped


@register_estimator
class RankSVM(KernelMixin, Ranker):
    """Ranking SVM (Joachims 2002), linear or kernel, exact and without forming pairs.

    Minimises ``1/2 ||w||^2 + C * sum_{(i,j) in P} weight_ij * l(1 - (f(x_i) - f(x_j)))`` over w (linear) or f = K beta,
    where P holds the pairs with ``y_i > y_j`` (all rows, or inside each query group) or the edges given to
    :meth:`fit_preferences`, and l is the squared hinge max(0, z)^2 or the hinge max(0, z).

    Parameters
    ----------
    C : float, default=1.0
        Weight of the summed pairwise loss (> 0); larger C fits the pairs harder.
    loss : {"squared_hinge", "hinge"}, default="squared_hinge"
        "squared_hinge" (L2-loss RankSVM, Lee & Lin 2014): truncated Newton.  "hinge" (the original RankSVM QP): Newton
        on a Huber-smoothed hinge certified by the hinge's dual (linear), else 1-slack cutting planes (Joachims 2006),
        each master QP solved exactly (docs/design/large-margin-and-boosting.md).
    %(kernel)s
        "linear" works in the primal on dense or scipy.sparse X (CSR used without a copy); other kernels use the
        representer form f = K beta (O(m^2) per iteration, one m x m kernel matrix behind the memory guard).
    %(gamma)s %(degree)s %(coef0)s
    tol : float, default=1e-6
        Stop when the certified relative duality gap (objective - lower bound) / objective is at most tol (hinge;
        squared hinge, whose gap at the dual point of the current model is 1/2 ||gradient||^2, also with the
        gradient norm below tol times its value at zero).  Stopping at double precision's rounding floor first (a tol
        near 1e-16) gives :class:`fastrank.exceptions.ConvergenceWarning` and ``converged_ = False``.
    max_iter : int, default=1000
        Newton iterations (cutting planes for the kernel hinge; both together where the linear hinge's smoothed Newton
        solve cannot certify the gap and cutting planes finish it) after which the solve stops with
        :class:`fastrank.exceptions.ConvergenceWarning` and ``converged_ = False``.
    margin : {"unit", "difference"}, default="unit"
        The loss of pair (i, j): l(1 - (f_i - f_j)), or l((y_i - y_j) - (f_i - f_j)) (needs ``fit``'s targets), with
        ``loss="hinge"`` the hinge ranking loss of Agarwal & Niyogi (002, Sect. 5.2.1): their A_h, argmin of
        (1 / C(m, 2)) sum_{i<j} l_h + lambda ||f||_K^2, is
        ``RankSVM(loss="hinge", margin="difference", C=1 / (lambda m (m - 1)))`` without groups, bounded by
        :func:`fastrank.bounds.hinge_ranking_bound` with the same lambda (their least-squares learner of Sect. 5.2.2 is
        ``RankRLS(exclude_ties=True)``).
    normalize_C : bool, default=False
        True: ``1/2 ||w||^2 + (C / |P|) sum_P l``, |P| the number (total weight) of pairs, as in the slides (003).
    basis_vectors : int, array of row indices, boolean mask, or None, default=None
        Sparse RankSVM (004 Sect. 4.4, eq. 43): f(x) = sum_{b in B} beta_b k(x, x_b) over basis rows B, regulariser 1/2
        beta^T K_BB beta: a linear RankSVM on Z = K_mB L^{-T}, K_BB = L L^T (Cholesky without jitter: a singular K_BB --
        duplicate basis rows, or more than n_features with the linear kernel -- is refused), O(m r^2) plus the linear
        solver on r features.  An int draws that many rows at random; only the basis rows and beta are kept.
    %(random_state)s %(n_jobs)s %(verbose)s
        Reports the solve's duration, then the iterations, the objective and the criterion reached.

    Attributes
    ----------
    coef_, dual_coef_, X_fit_ : ndarray (n_features,), (m,) and the training rows, or None
        The weight vector w (linear kernel), or beta with f = K(., X_fit_) beta (non-linear or precomputed kernels; no
        rows kept for "precomputed").
    objective_, loss_, n_pairs_ : float
        The objective at the solution, the summed pairwise loss there and the number (total weight) of pairs.
    n_iter_ : int, converged_ : bool
        Newton iterations, cutting planes or both (as counted by ``max_iter``) used, and whether ``tol`` was reached.
    n_features_in_ : int
    basis_indices_ : ndarray or None
        ``basis_vectors`` only: the training rows of the basis (``X_fit_`` holds those rows and ``dual_coef_`` their
        beta; a linear kernel keeps ``coef_ = X_B^T beta``).  Predictions are ranking scores; only their differences are
        meaningful.
    """

    def __init__(self, C=1.0, *, loss="squared_hinge", kernel="linear", gamma=None, degree=3, coef0=1.0, tol=1e-6,
                 max_iter=1000, margin="unit", normalize_C=False, basis_vectors=None, random_state=None, n_jobs=None,
                 verbose=0):
        self._store_params(locals())

    _sparse_input = True
    # C is checked by check_alpha (float64 limits)
    _parameter_constraints = {"loss": [StrOptions(set(_LOSSES))], "tol": [NONNEG_REAL],
                              "max_iter": [positive_int()], "margin": [StrOptions({"unit", "difference"})],
                              "normalize_C": ["boolean"], "random_state": ["random_state"], "n_jobs": N_JOBS}

    def _params(self):
        self._validate_params()
        C = check_alpha(self.C, "C")
        return C, _LOSSES[self.loss], float(self.tol), int(self.max_iter), check_n_jobs(self.n_jobs)

    def _solve(self, X, structure, n_pairs, w0=None, weight_scale=1.0, warm=None):
        C, code, tol, max_iter, n_threads = self._params()
        spec = None if self._precomputed() else self._kernel_spec(X.shape[1])
        m = X.shape[0]
        basis = None if self.basis_vectors is None else select_basis(m, self.basis_vectors, self.random_state)
        # BLAS's work in a kernel solve is the kernel's product and the master's small systems (no pivoted Cholesky)
        blas = kernel_blas_threads(X.shape[1]) if basis is None and spec is not None and not spec.linear and \
            semidefinite_by_construction(spec) else None
        if spec is not None and spec.linear and code == _LOSSES["hinge"] and X.shape[1] < _NEWTON_BLAS_FEATURES:
            blas = 1  # the exact Newton steps' BLAS (see _NEWTON_BLAS_FEATURES)
        if basis is not None:  # the kernel block K_mB and the linear RankSVM on its m x |B| features
            n_threads = self._kernel_threads(m * basis.size, (0 if spec is None else X.shape[1]) + basis.size)
        elif spec is None or not spec.linear:  # the m x m kernel and its products
            n_threads = self._kernel_threads(m * m, 0 if spec is None else X.shape[1], blas)
        with compute_region(n_threads, blas):  # fastrank's threads and BLAS's share the cores
            return self._solve_in_region(X, spec, basis, structure, n_pairs, C * weight_scale, code, tol, max_iter,
                                         n_threads, w0, weight_scale, warm)

    def _solve_in_region(self, X, spec, basis, structure, n_pairs, C, code, tol, max_iter, n_threads, w0,
                         weight_scale, warm):
        if self.normalize_C:
            C = C / n_pairs
            if not C > 0:
                raise ValueError(f"C / |P| = {self.C!r} / {n_pairs:g} underflows to 0; use normalize_C=False")
        if self.margin == "difference" and "row_margin" not in structure:  # fit's structure holds the targets
            raise ValueError("margin='difference' needs targets: use fit(X, y), not fit_preferences")
        if basis is not None:
            return self._solve_basis(X, spec, basis, structure, C, code, tol, max_iter, n_threads)
        if spec is not None and spec.linear:
            if "head" in structure and not sp.issparse(X):  # a graph's loss reads f_i - f_j = w.(x_i - x_j) only: the
                X = X - X.mean(axis=0)  # same w on centred columns, without the digits a feature offset cancels in X w
            X, C_scaled, scale, capped = _rescaled(X, C)
            start = {} if w0 is None else {"w0": w0 * scale}  # the start in the rescaled problem's units: w' = s w
            if start and warm and warm.get("scale") == scale:  # ranksvm_path: ||X^T grad L(0)|| of the same problem
                start["grad0"] = warm["grad0"]
            if capped:  # weight_scale: the preference weights' power of two, or the hinge's 1 / (scale of y)
                why, rescale = ("", "") if weight_scale == 1.0 else (
                    (f" (C={self.C!r} times {weight_scale:.3g}, the weights' scale)", " and the weights")
                    if "head" in structure else (f" (C={self.C!r} over {1 / weight_scale:.3g}, the scale of y: the "
                                                 "hinge of margins y_i - y_j is degree 1 in y)", " and y"))
                warnings.warn(
                    f"C * max|X|^2 = {C:.3g} * {scale:.3g}^2{why} exceeds {_C_SCALED_MAX:g}: the problem is solved "
                    f"at C * max|X|^2 = {_C_SCALED_MAX:g}, beyond which double precision resolves no change of the "
                    f"solution; features far smaller than max|X| lose their influence.  Standardize X{rescale} or use "
                    "a smaller C.", ConvergenceWarning, stacklevel=user_stacklevel())
            if sp.issparse(X):
                p = as_csr(X, "X")
                out = _core.ranksvm_fit_csr(p.data, p.indices, p.indptr, p.shape[0], p.shape[1], C_scaled, code, tol,
                                            max_iter, n_threads, **structure, **start)
            else:
                out = _core.ranksvm_fit_dense(X, C_scaled, code, tol, max_iter, n_threads, **structure, **start)
            if warm is not None and out["grad0"] >= 0.0:
                warm.update(grad0=out["grad0"], scale=scale)
            if scale != 1.0:  # back to the caller's X: w = w' / s, objective 1/2 ||w||^2 + C L
                out["coef"] = np.asarray(out["coef"]) / scale
                out["objective"] = 0.5 * float(out["coef"] @ out["coef"]) + C * float(out["loss"])
            return "linear", out, None
        # an indefinite K makes 1/2 beta^T K beta unbounded below: no minimiser, and the cutting planes' duality gap
        # (which assumes K >= 0) can certify an arbitrary model; a kernel not semidefinite by construction is checked
        check = not semidefinite_by_construction(spec)
        check_dense_memory(X.shape[0], 3 if check else 1, "kernel matrix" + (" and its pivoted Cholesky factor"
                           if check else ""), advice="Use the linear kernel (no m x m matrix) or "
                           "basis_vectors=<int> (sparse RankSVM: O(m |B|) memory).")
        X_fit = None if spec is None else densified(X)
        K = np.asfortranarray(X) if spec is None else spec.train(X_fit, n_threads)  # _check_fit_X symmetrized X
        if check:
            pivoted_cholesky(K, "RankSVM")
        out = _core.ranksvm_fit_kernel(K, C, code, tol, max_iter, n_threads, **structure)
        del K
        return "kernel", out, X_fit

    def _solve_basis(self, X, spec, basis, structure, C, code, tol, max_iter, n_threads):
        """Sparse RankSVM of 004 eq. (43): f = K_mB beta with regulariser 1/2 beta^T K_BB beta.  With K_BB = L L^T and
        u = L^T beta, beta^T K_BB beta = u^T u and K_mB beta = Z u for Z = K_mB L^{-T}: a linear RankSVM on Z, mapped
        back by beta = L^{-T} u."""
        m = X.shape[0]
        check_dense_memory(m, 2, "kernel columns K_mB and features Z", n_cols=basis.size)
        K_mB, K_BB, X_fit = basis_kernel(spec, X, basis, n_threads)  # X_fit: the basis rows X_B
        try:
            L = scipy.linalg.cholesky(K_BB, lower=True, check_finite=False)
            dmin = float(np.min(np.diag(L))) ** 2
        except np.linalg.LinAlgError:
            dmin = 0.0
        r = basis.size
        if not dmin > r * np.finfo(float).eps * float(np.max(np.abs(np.diag(K_BB)), initial=0.0)):
            raise ValueError(f"basis_vectors: the kernel matrix of the {r} basis rows is singular (duplicate basis "
                             "rows, or more basis rows than the kernel's feature space has dimensions, e.g. the linear "
                             "kernel with more rows than features); choose fewer or other basis_vectors.")
        Z = np.ascontiguousarray(scipy.linalg.solve_triangular(L, K_mB.T, lower=True, check_finite=False).T)
        out = _core.ranksvm_fit_dense(Z, C, code, tol, max_iter, n_threads, **structure)
        beta = scipy.linalg.solve_triangular(L, np.asarray(out["coef"]), lower=True, trans="T", check_finite=False)
        out = dict(out, coef=beta, basis=basis)
        if spec is not None and spec.linear:  # f(x) = x^T X_B^T beta: keep the weight vector only
            return "linear", dict(out, coef=np.asarray(X_fit.T @ beta).reshape(-1)), None
        return "kernel", out, X_fit

    def _fit_structure(self, X, structure, n_pairs, w0=None, weight_scale=1.0, warm=None):
        # margins y_i - y_j of any scale s (a power of two, outside 2^+-32): the model of margins (y_i - y_j) / s is
        # w / s, with C for the squared hinge (degree 2 in (w, y)) and C / s for the hinge (degree 1 in its loss); the
        # loss scales by s^2 or s (Python floats: an overflow is inf, as the objective's true value)
        big = float(np.max(np.abs(structure.get("row_margin", 0.0)), initial=0.0))
        s = float(2.0 ** np.frexp(big)[1]) if big > 0 and not 2.0 ** -32 <= big <= 2.0 ** 32 else 1.0
        s_power, c_factor = (s * s, 1.0) if self.loss == "squared_hinge" else (s, 1.0 / s)
        if s != 1.0:
            structure = dict(structure, row_margin=structure["row_margin"] / s)
            w0 = None if w0 is None else w0 / s
        with stage(f"RankSVM {self.loss} (m={X.shape[0]}, {n_pairs:.0f} pairs)", verbose=self.verbose):
            mode, out, X_fit = self._solve(X, structure, n_pairs, w0, weight_scale * c_factor, warm)
        if s != 1.0:
            out = dict(out, coef=np.asarray(out["coef"]) * s, objective=float(out["objective"]) * s * s)
        basis_indices = out.get("basis")  # a basis model is solved by the linear solver on its features Z
        steps = "cutting planes" if self.loss == "hinge" and mode == "kernel" and basis_indices is None else \
            "Newton iterations"
        if out.get("n_newton"):  # the linear hinge's smoothed Newton solve could not certify the gap
            steps = f"steps ({out['n_newton']} Newton iterations on the smoothed hinge, then cutting planes)"
        if out.get("stalled"):
            warnings.warn(f"RankSVM (hinge) stopped after {out['n_iter']} {steps}: the duality gap did not shrink "
                          f"by 0.1% within 100 cutting planes (relative gap {out['criterion']:.2e}, tol={self.tol}); "
                          "the model is the best point found.  Standardize X (C times the features' squared scale "
                          "is what counts), or use loss='squared_hinge', a smaller C or a larger tol.",
                          ConvergenceWarning, stacklevel=user_stacklevel())
        elif not out["converged"] and out["n_iter"] < self.max_iter:  # Newton: no step decreased the objective
            warnings.warn(f"RankSVM stopped after {out['n_iter']} {steps}: no step decreases the objective any more "
                          f"(double precision's rounding) at criterion {out['criterion']:.2e} > tol={self.tol}; the "
                          "model is the best point found.  Standardize X (or rescale the kernel) or use a larger tol.",
                          ConvergenceWarning, stacklevel=user_stacklevel())
        elif not out["converged"]:
            warnings.warn(f"RankSVM stopped after max_iter={self.max_iter} {steps} before reaching tol={self.tol} "
                          f"(criterion {out['criterion']:.2e}); increase max_iter or tol.",
                          ConvergenceWarning, stacklevel=user_stacklevel())
        coef = np.asarray(out["coef"])
        self.fit_mode_, self.X_fit_, self.basis_indices_ = mode, X_fit, basis_indices
        self.coef_, self.dual_coef_ = (coef, None) if mode == "linear" else (None, coef)
        # the loss sums expanded squares (c + f_t)^2 per group, exact to rounding only: a loss that vanishes next to
        # its terms can come out below 0, which no sum of squares or hinges is
        self.objective_ = max(0.0, float(out["objective"]))
        self.loss_ = max(0.0, float(out["loss"]) * weight_scale * s_power)
        self.n_iter_, self.converged_ = int(out["n_iter"]), bool(out["converged"])
        warn_if_constant(self, self.converged_ and not np.any(coef))
        if mode == "linear":
            warn_if_scores_underflow(self, X, coef)
        self.n_pairs_, self.n_features_in_ = float(n_pairs), X.shape[1]
        self._freeze_kernel(X.shape[1])
        if resolve_verbose(self.verbose):
            write_line(f"[fastrank] RankSVM: {self.n_iter_} {steps}, objective {self.objective_:.10g}, "
                       f"criterion {float(out['criterion']):.2e}, converged={self.converged_}")
        return self

    def fit(self, X, y, groups=None):
        """Fit on the pairs with y_i > y_j: all rows, or only pairs inside a group.

        Groups of one row, or whose rows share one target value, have no pairs and do not influence the model.

        Parameters
        ----------
        %(X_fit)s
        y : array-like of shape (n_samples,)
            Real-valued scores or relevance labels.
        %(groups_fit)s

        Returns
        -------
        %(fitted_self)s
        """
        return self._fit_structure(*self._group_problem(X, y, groups))

    def _group_problem(self, X, y, groups):
        """Validated X, the core's group structure and the number of pairs of ``fit(X, y, groups)`` (at least one)."""
        self._params()
        X = self._check_fit_X(X, allow_sparse=True)
        m = X.shape[0]
        y = self._check_target_vector(y, m)
        gi = group_index(groups, m)
        n_pairs = float(crucial_pairs(y, gi).sum())
        if n_pairs == 0:
            if groups is not None:  # every group a single row: say so, not that y is tied
                raise_without_preferences(gi.sizes, learner="RankSVM")
            where = "inside any group" if groups is not None else "among the rows"
            raise ValueError(f"No preference pairs: y takes a single value {where}, so no pair (i, j) has y_i > y_j "
                             "(RankSVM learns only from such pairs).")
        structure = _group_structure(y, groups, m)  # y_i > y_j chooses the pairs: the targets as given
        if self.margin == "difference":  # the pair margins y_i - y_j: centred in groups, no digits lost to an offset
            structure["row_margin"] = centred_in_groups(y, gi)
        if self.kernel == "linear" and self.basis_vectors is None and not sp.issparse(X):
            X = features_without_group_offsets(X, gi)  # the pairs' x_i - x_j without large query-level offsets
        return X, structure, n_pairs

    def fit_preferences(self, X, pairs, weights=None):
        """Fit on an explicit preference multigraph.

        ``margin="difference"`` raises ValueError here: it needs the targets of ``fit``.

        Parameters
        ----------
        %(X_preferences)s %(pairs)s
        weights : array-like of shape (n_pairs,) or None, default=None
            The non-negative loss weight of each preference (at least one > 0); None: 1.

        Returns
        -------
        %(fitted_self)s
        """
        self._params()
        X = self._check_fit_X(X, allow_sparse=True)
        structure, weight_scale, total = _graph_structure(pairs, weights, X.shape[0])
        return self._fit_structure(X, structure, total, weight_scale=weight_scale)

    def predict(self, X):
        """Ranking scores: a higher score means ranked higher.

        %(Parameters)s %(X_predict)s %(Returns)s %(ranking_scores)s
        """
        check_is_fitted(self, "fit_mode_")
        X = self._check_predict_X(X)
        # K(X, X_B) beta in row blocks, sparse X and X_B staying sparse; K(X, X_fit_) beta on dense rows
        dense = (self.fit_mode_ == "kernel" and getattr(self, "basis_indices_", None) is None
                 and not self._fitted_precomputed())
        return self._expansion_predict(densified(X) if dense else X)


@with_param_docs()
def ranksvm_path(X, y, Cs, groups=None, *, verbose=0, **params):
    """Linear RankSVM fitted for every C in ``Cs``, warm-starting each fit from the previous one.

    The values are visited in increasing order (the solution grows with C, so each start is close: the squared hinge's
    truncated Newton needs a few iterations per value; the hinge starts from zero).  Every fit is the model
    ``RankSVM(C=C, **params)`` gives, to its ``tol``.

    Parameters
    ----------
    X : {array-like, sparse matrix} of shape (n_samples, n_features)
        Training rows.
    y : array-like of shape (n_samples,)
        Real-valued scores or relevance labels.
    %(Cs_path)s %(groups_fit)s %(verbose_path)s
    **params : dict
        The other :class:`RankSVM` parameters (the kernel must be linear; C comes from ``Cs``).

    Returns
    -------
    estimators : list of RankSVM
        The fitted models, in the order of ``Cs``.
    """
    base = RankSVM(**params)
    Cs, visit = c_path(Cs, base.kernel, "ranksvm_path", verbose, params)
    Xc, structure, n_pairs = base._group_problem(X, y, groups)
    fitted = [None] * Cs.size
    w = None
    warm = {}  # the gradient at w = 0 over C, the same for every C (its evaluation is saved after the first)
    for k in visit:
        est = RankSVM(C=float(Cs[k]), **params)
        est._fit_structure(Xc, structure, n_pairs, w0=w if est.loss == "squared_hinge" else None, warm=warm)
        fitted[k] = est._record_feature_names(X)
        est.n_fit_groups_ = structure["offsets"].size - 1  # as fit records it: score without groups warns
        w = est.coef_
    return fitted
