"""SVRank: magnitude-preserving ranking with the epsilon-insensitive pairwise cost (Cortes, Mohri,
Rastogi, 000 §2.4, eq. 9 with the cost (7), n = 1), solved exactly by cutting planes over an
O(m log m) loss/subgradient oracle (the O(m^2) pairs are never formed)."""

from __future__ import annotations

import sys
import warnings

import numpy as np
from sklearn.utils.validation import check_is_fitted

from . import _core
from ._base import N_JOBS, KernelMixin, Ranker, nonneg_real, positive_int
from ._memory import check_dense_memory
from ._problem import require_preferences
from ._progress import resolve_verbose, stage
from ._registry import register_estimator
from ._validation import check_alpha, check_n_jobs, group_index
from .exceptions import ConvergenceWarning

__all__ = ["SVRank"]


@register_estimator
class SVRank(KernelMixin, Ranker):
    r"""SVRank: magnitude-preserving ranking with the epsilon-insensitive pairwise cost.

    Minimises (Cortes, Mohri & Rastogi, eq. 9 with the cost c_SVR of eq. 7, n = 1; the
    constrained form of §2.4 with slacks xi_ij + xi*_ij):

    .. math::

        F(h) = \|h\|_K^2 + \frac{C}{N} \sum_{q} \sum_{i \in q} \sum_{j \in q}
               \max\bigl(0,\ |(h(x_j) - h(x_i)) - (y_j - y_i)| - \varepsilon\bigr)

    over **ordered** pairs (i, j) of rows (each unordered pair counts twice; i = j costs 0), with
    ``N = sum_q n_q^2`` the number of ordered pairs.  Without ``groups`` there is one group and
    ``N = m^2``: exactly the paper's ``C / m^2`` normalisation.  With ``groups`` only pairs inside a
    group count and the pair term stays a mean over the ordered pairs (paper's spirit: ``C`` times
    the average pair cost), so a group of n_q rows weighs n_q^2 / N.  Note the regulariser is
    ``||h||^2`` (no 1/2), as in the paper.

    The pair term depends only on residual differences r_j - r_i (r = h(X) - y), so the loss and
    a subgradient cost one sort of the residuals per group, O(m log m).  The problem is solved to
    ``tol`` by a cutting-plane method on its one-slack form (Joachims 2006): every iteration adds the
    tangent plane of the pair term at the current point and solves the model's dual (a QP over the
    simplex with one variable per plane) exactly, with the OCAS line search (Franc & Sonnenburg
    2009) between the best point and the model's minimiser.  The dual value certifies a lower
    bound, and the loop stops when ``F - lower bound <= tol * (F(0) - lower bound)``: the gap
    relative to the achievable decrease, which does not vanish with the scale of X, y or C (a
    decrease far below the rounding of F(0) is still found, never reported as w = 0).

    Parameters
    ----------
    C : float, default=1.0
        Trade-off, > 0.
    epsilon : float, default=0.1
        Width of the insensitive zone on predicted minus true score differences, >= 0.
    kernel : {"linear", "rbf", "poly", "precomputed"}, default="linear"
        ``"linear"`` solves for a weight vector (primal, O(mn) per iteration); the others for the
        representer coefficients ``dual_coef_`` (f = K beta; one m x m kernel matrix, O(m^2) per
        iteration, guarded by the dense-memory limit).  Kernel conventions as in :class:`RankRLS`.
    gamma, degree, coef0 : kernel parameters, as in :class:`RankRLS`.
    tol : float, default=1e-6
        Cutting-plane gap at which to stop, relative to the achievable decrease:
        ``(best F - lower bound) / (F(0) - lower bound)``.
    max_iter : int, default=1000
        Maximum number of oracle calls (cutting planes); reaching it emits
        :class:`fastrank.exceptions.ConvergenceWarning`.
    n_jobs : int or None
        Threads for the sorting oracle (None: every core).
    verbose : int, bool or "auto", default=0
        Progress on stderr (:mod:`fastrank._progress`): the kernel matrix and the cutting-plane
        solve with their timings, then the planes used and the final gap.

    Attributes
    ----------
    coef_ : ndarray (n_features,) or None
        Weight vector (linear kernel).
    dual_coef_ : ndarray (m,) or None
        Representer coefficients beta, f(x) = sum_i beta_i k(x, x_i) (non-linear kernels).
    n_iter_ : int
        Cutting planes used.
    objective_ : float
        F at the returned model.
    gap_ : float
        Certified gap ``(objective_ - lower bound) / (F(0) - lower bound)`` at exit.
    """

    def __init__(self, C=1.0, *, epsilon=0.1, kernel="linear", gamma=None, degree=3, coef0=1.0, tol=1e-6,
                 max_iter=1000, n_jobs=None, verbose=0):
        self._store_params(locals())

    # C is checked by check_alpha (float64 limits)
    _parameter_constraints = {"epsilon": [nonneg_real()], "tol": [nonneg_real()], "max_iter": [positive_int()],
                              "n_jobs": N_JOBS}

    def fit(self, X, y, groups=None):
        """Fit from real-valued scores ``y`` (m,), on all pairs or on pairs inside ``groups``."""
        self._validate_params()
        C = check_alpha(self.C, "C")
        eps, tol, max_iter = float(self.epsilon), float(self.tol), int(self.max_iter)
        n_threads = check_n_jobs(self.n_jobs)
        precomputed = self.kernel == "precomputed"
        X = self._check_fit_X(X)
        y = self._check_target_vector(y, X.shape[0])
        spec = self._kernel_spec(X.shape[1])
        gi = group_index(groups, X.shape[0])
        require_preferences(y, gi, "SVRank")
        yg = np.ascontiguousarray(gi.take(y))
        offsets = np.ascontiguousarray(gi.offsets, dtype=np.int64)
        if spec.linear:
            Xg = np.ascontiguousarray(gi.take(X))
            with stage(f"SVRank cutting planes (linear, m={Xg.shape[0]})", verbose=self.verbose):
                w, n_iter, converged, objective, lower, history = _core.svrank_linear(
                    Xg, yg, offsets, C, eps, tol, max_iter, n_threads)
            coef, dual = w, None
            X_fit = None
        else:
            check_dense_memory(X.shape[0], 1, "kernel matrix")
            if precomputed:
                Kg = np.asfortranarray(X[np.ix_(gi.order, gi.order)] if not gi.is_identity else X)
                Kg = np.asfortranarray(0.5 * (Kg + Kg.T))
            else:
                with stage(f"SVRank kernel matrix (m={X.shape[0]})", verbose=self.verbose):
                    Kg = spec.train(gi.take(X), n_threads)
            with stage(f"SVRank cutting planes (kernel, m={X.shape[0]})", verbose=self.verbose):
                beta, n_iter, converged, objective, lower, history = _core.svrank_kernel(
                    Kg, yg, offsets, C, eps, tol, max_iter, n_threads)
            del Kg
            coef, dual = None, gi.untake(beta)
            X_fit = None if precomputed else X
        gap = float(history[-1]) if history.size else 0.0
        if resolve_verbose(self.verbose):
            print(f"[fastrank] SVRank: {int(n_iter)} cutting planes, objective {float(objective):.10g}, gap {gap:.2e}",
                  file=sys.stderr, flush=True)
        # all checks passed: only now replace a previous fit
        self.coef_ = coef
        self.dual_coef_ = dual
        self.X_fit_ = X_fit
        self.n_features_in_ = X.shape[1]
        self.n_iter_ = int(n_iter)
        self.objective_ = float(objective)
        self.gap_ = gap
        self.converged_ = bool(converged)
        self.gap_history_ = np.asarray(history)
        if not converged:
            warnings.warn(
                f"SVRank stopped at max_iter={max_iter} cutting planes with relative gap {gap:.3g} > tol={tol:g}; "
                "increase max_iter or tol.", ConvergenceWarning, stacklevel=2)
        return self

    def predict(self, X):
        """Ranking scores (higher ranks higher); only score differences are meaningful."""
        check_is_fitted(self, "n_iter_")
        X = self._check_predict_X(X, n_train=None if self.dual_coef_ is None else self.dual_coef_.shape[0],
                                  allow_sparse=False)
        if self.kernel == "precomputed":
            return X @ self.dual_coef_
        if self.coef_ is not None:
            return X @ self.coef_
        spec = self._kernel_spec(self.n_features_in_)
        return spec.predict(X, self.X_fit_, self.dual_coef_.reshape(-1, 1), check_n_jobs(self.n_jobs))[:, 0]
