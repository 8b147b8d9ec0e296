"""RankRLS solvers: functions of (ranking problem, hyper-parameters) returning a plain record.

Pahikkala et al. (2009): the dual (eq. 17, solved in the symmetric form (S K S + alpha I) u = S y, A = S u), the primal
for the linear kernel (eq. 28), a path over many alphas from one eigendecomposition (eq. 31), conjugate gradient on the
primal without forming pairs (Sect. 4.3) and subset-of-regressors RankRLS (Sect. 3.5, eqs. 40-42).  No solver knows
about estimators: each returns a :class:`Fit` that an estimator copies onto itself.  See docs/design/solvers.md.
"""

from __future__ import annotations

import functools
import itertools
import numbers
import re
import warnings
from typing import NamedTuple, Optional

import numpy as np
import scipy.linalg.blas
from scipy.linalg import LinAlgWarning
from scipy.sparse.linalg import LinearOperator
from scipy.sparse.linalg import cg as sparse_cg

from . import _core
from ._kernels import kernel_block
from ._memory import check_dense_memory
from ._problem import WEIGHTINGS, PreferenceGraph, RankingProblem, check_features, features_without_group_offsets
from ._sparse import as_csr, issparse, take_rows
from ._validation import (_asarray, check_alpha, check_alphas, check_int, check_n_jobs, check_real, check_seed,
                          group_index, whole_numbers)
from .exceptions import ConvergenceWarning, IllConditionedWarning, LinAlgError, user_stacklevel

__all__ = ["Fit", "CGResult", "SOLVERS", "choose_solver", "solve_dual", "solve_primal", "solve_cg", "solve_cg_path",
           "solve_basis", "train_kernel", "fit_cg", "fit_basis", "select_basis", "basis_kernel", "check_indices",
           "basis_primal_weights", "default_max_iter", "one_conditioning_warning", "warn_ill_conditioned",
           "solve_assembled_primal", "solve_assembled_basis", "kernel_rounding_level",
           "warn_below_kernel_rounding"]

SOLVERS = ("auto", "dual", "primal", "cg")
# rcond below this: the solution may carry rounding error well above 1e-4 relative.
_RCOND_WARNING = 1e-12
# basis predictions carry up to ~400 eps / rcond(K_RR) relative error (solvers.md, "Subset of regressors"): 1e-5 here
_BASIS_RCOND_WARNING = 1e-8


class Fit(NamedTuple):
    """A fitted RankRLS for one or more alphas (leading axis: alpha).  mode: "dual", "primal", "cg" or "sparse" (subset
    of regressors); coef: (n_alphas, n, v) weights whenever the model is linear in the features, else None;
    dual_coef: (n_alphas, m or |R|, v) dual coefficients (dual and sparse modes), else None; X_fit: rows kept for
    kernel predictions (all training rows, the basis rows, or None); basis_indices: training rows used as basis (sparse
    mode); n_iter, converged: (n_alphas, v) (CG only); residual_history: list over alphas of (k + 1, v) relative
    residuals (CG only)."""

    mode: str
    coef: Optional[np.ndarray] = None
    dual_coef: Optional[np.ndarray] = None
    X_fit: object = None
    basis_indices: Optional[np.ndarray] = None
    n_iter: Optional[np.ndarray] = None
    converged: Optional[np.ndarray] = None
    residual_history: Optional[list] = None


def _checked(W, rcond, n_alphas):
    if rcond < _RCOND_WARNING:
        warnings.warn(f"RankRLS system is ill-conditioned (reciprocal condition number {rcond:.2e}); the solution "
                      "may be inaccurate. Increase alpha.", IllConditionedWarning, stacklevel=user_stacklevel())
    return _by_alpha(W, n_alphas)


def kernel_rounding_level(K, problem, spec):
    """2 ||K||_F / sqrt(m) lambda_max(L) of a Gaussian or polynomial kernel matrix K (read before a solver overwrites
    it), else 0: each kernel value is rounded to eps |K_ij| with independent signs, a perturbation of norm about 2 eps
    ||K||_F / sqrt(m) that S K S carries times lambda_max(L) and the solve divides by alpha, unseen by the condition
    number of S K S (solvers.md, "Symmetric positive definite form").  Not the linear kernel (fits centre X first;
    exact CV checks its feature offsets itself, robustness.md) nor a precomputed one (its rounding is not known)."""
    if spec.kind not in ("rbf", "poly"):
        return 0.0
    return 2.0 * float(np.linalg.norm(K)) / np.sqrt(problem.m) * problem.laplacian_norm()


def warn_below_kernel_rounding(alpha, level, what="the solution"):
    """The :class:`IllConditionedWarning` of an ``alpha`` below _RCOND_WARNING times :func:`kernel_rounding_level`
    (the same bound, 2.2e-4, as the solve's own condition warning)."""
    if alpha < _RCOND_WARNING * level:
        warn_ill_conditioned(
            f"{what} at alpha={alpha:.3g} may be inaccurate: alpha is below 1e-12 times the rounding scale of the "
            f"kernel values (2 ||K||_F / sqrt(m) lambda_max(L) = {level:.3g}), whose rounding the solve divides by "
            "alpha; a Gaussian kernel of a small gamma (nearly constant) keeps few digits of the model.",
            "Increase alpha, or gamma.")


def warn_ill_conditioned(text, advice):
    """:class:`IllConditionedWarning` "``text`` ``advice``" at the user's line, carrying ``advice`` for the summary
    of :func:`one_conditioning_warning` (in place of its feature-scaling advice)."""
    warning = IllConditionedWarning(f"{text} {advice}")
    warning.advice = advice
    warnings.warn(warning, stacklevel=user_stacklevel())


def _checked_basis(A, rcond, KRR=None, n_kept=None):
    """``A``, warning when K_RR is ill-conditioned.  ``n_kept`` (Gaussian kernels): the eigenvalues of K_RR kept by
    the route without a Cholesky factor, which drops those below r eps max.  A Gaussian kernel matrix of distinct rows
    is positive definite, so only exactly repeated basis rows (K_RR rows alike bit for bit) have null directions,
    which change no prediction; dropping more drops a direction of the model (rcond 0: 24 % prediction error from
    two basis rows 1e-9 apart).  The other kernels have null directions of their finite rank: their drops stand."""
    if n_kept is not None and n_kept < np.unique(KRR, axis=0).shape[0]:
        rcond = 0.0
    if rcond < _BASIS_RCOND_WARNING:
        error = min(1.0, 400 * np.finfo(float).eps / max(rcond, 1e-300))
        warn_ill_conditioned(f"the basis kernel matrix K_RR is ill-conditioned (reciprocal condition number "
                             f"{rcond:.2e}): the predictions may carry rounding error up to about {error:.0e} "
                             "relative.", "Basis rows nearly alike under the kernel: choose fewer or more distinct "
                             "basis_vectors (with kernel='rbf', or a larger gamma), or a larger alpha.")
    return A


def _by_alpha(W, n_alphas):
    """(rows, n_alphas * v) from C++ -> (n_alphas, rows, v)."""
    return W.reshape(W.shape[0], n_alphas, -1).transpose(1, 0, 2)


_RCOND_TEXT = re.compile(r"(?:rcond\s*=|reciprocal condition number)\s*(\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)")
_SCALE_ADVICE = ("The features probably differ in scale by orders of magnitude (raw counts, lengths or BM25 "
                 "scores): standardise them (fastrank.preprocessing, sklearn's StandardScaler, or fastrank train "
                 "--normalize), or {}.")


def one_conditioning_warning(fit):
    """Decorate an estimator's ``fit``: every SciPy ``LinAlgWarning`` and :class:`IllConditionedWarning`
    raised inside (one per ill-conditioned LAPACK solve: hundreds in a cross-validation over an alpha
    grid) becomes at most one :class:`IllConditionedWarning` with the count, the smallest reciprocal
    condition number and advice.  Other warnings pass through; a fit that raises reports its error only."""

    @functools.wraps(fit)
    def wrapper(self, *args, **kwargs):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = fit(self, *args, **kwargs)
        n_solves, rconds, advice = 0, [], _SCALE_ADVICE.format(getattr(self, "_regularize_more", "increase alpha"))
        for w in caught:
            if issubclass(w.category, (LinAlgWarning, IllConditionedWarning)):
                n_solves += getattr(w.message, "n_solves", 1)
                advice = getattr(w.message, "advice", advice)
                rconds += [float(v) for v in _RCOND_TEXT.findall(str(w.message))]
            else:
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
        if n_solves:
            worst = f" (smallest reciprocal condition number {min(rconds):.2e})" if rconds else ""
            what = "1 linear solve was" if n_solves == 1 else f"{n_solves} linear solves were"
            warning = IllConditionedWarning(f"{type(self).__name__}.fit: {what} ill-conditioned{worst}; the result "
                                            f"may be inaccurate. {advice}")
            warning.n_solves = n_solves
            warnings.warn(warning, stacklevel=user_stacklevel())
        return result

    return wrapper


# ---- Choosing a solver -----------------------------------------------------------------------------

def choose_solver(solver, spec, problem, *, basis_vectors=None):
    """"dual", "primal", "cg" or "sparse" (subset of regressors); sparse X for "dual" or "primal" is densified by the
    caller.  "auto": CG for sparse X with the linear kernel, else the primal when the kernel is
    linear and n_features < n_samples, else the dual."""
    if basis_vectors is not None:
        if solver in ("cg", "primal"):
            raise ValueError(f"basis_vectors (sparse approximation) cannot be combined with solver={solver!r}; "
                             "use solver='auto' or 'dual'")
        return "sparse"
    if solver == "cg" or (solver == "auto" and problem.sparse):
        if spec.linear:
            return "cg"
        if solver == "cg":
            raise ValueError("solver='cg' solves the linear RankRLS (kernel='linear'); for other kernels on large "
                             "data use basis_vectors=<int or indices> (subset-of-regressors approximation)")
    if solver == "primal" and not spec.linear:
        raise ValueError("solver='primal' needs kernel='linear' (the primal solves in feature space)")
    if solver == "auto":
        return "primal" if spec.linear and problem.n_features < problem.m else "dual"
    return solver


# ---- Dense solvers: dual (eq. 17) and primal (eq. 28), one alpha or a path (eq. 31) ----------------

def _object_ranking_normal_equations(X, Y, block_rows=2048):
    """Primal system of object ranking (eq. 30 with L = m I - 1 1^T): X^T L X = m Xc^T Xc and X^T L Y = m Xc^T Y, Xc =
    X less its column means.  Y comes centred (``targets_centred``).  Xc^T Xc = X_0^T X_0 - m d d^T for any centre c,
    X_0 = X - c and d the column means of X_0, which rounds by eps (1 + d_j^2 / var_j): with |d_j| <= sd_j that is
    the centred sums' own rounding, so features that are not offset take one SYRK and one GEMM over X (c = 0); else
    X_0 is formed block by block (a block stays in cache for its products; no copy of X) about the mean of about
    ``block_rows`` rows spread over X, and where d still exceeds the spread the pass is repeated once on the corrected
    centre (solvers.md, "Primal")."""
    m, n = X.shape
    sample = X[::max(1, m // block_rows)]
    centre = sample.sum(axis=0) / sample.shape[0]
    if np.all(centre * centre <= sample.var(axis=0)):
        centre = None  # the sample's features are not offset: products of X itself
    for attempt in (0, 1):
        G, R, d = _products_about(X, Y, centre, block_rows)
        d /= m
        if attempt or np.all(d * d <= np.diag(G) / m - d * d):
            break
        centre = d if centre is None else centre + d
    G -= m * np.outer(d, d)
    R -= np.outer(d, Y.sum(axis=0))
    G *= m
    R *= m
    G += G.T  # exact symmetry for the symmetric solver
    G *= 0.5
    return np.asfortranarray(G), np.asfortranarray(R)


def _products_about(X, Y, centre, block_rows):
    """X_0^T X_0, X_0^T Y and the column sums of X_0 = X - centre (centre None: X itself, by SciPy's BLAS, whose threads
    the compute region sets; X^T is X's Fortran view, no copy)."""
    m, n = X.shape
    if centre is None:
        G = scipy.linalg.blas.dsyrk(1.0, X.T, lower=1)  # the lower triangle
        G += np.tril(G, -1).T
        Y1 = np.empty((m, Y.shape[1] + 1), order="F")  # [Y, 1] in the layout BLAS reads (no second copy)
        Y1[:, :-1] = Y
        Y1[:, -1] = 1.0
        RS = scipy.linalg.blas.dgemm(1.0, X.T, Y1)
        return G, RS[:, :-1], RS[:, -1].copy()
    buffer = np.empty((min(block_rows, m), n))
    G, R, s = np.zeros((n, n)), np.zeros((n, Y.shape[1])), np.zeros(n)
    for lo in range(0, m, block_rows):
        Xb = np.subtract(X[lo:lo + block_rows], centre, out=buffer[:min(block_rows, m - lo)])
        G += Xb.T @ Xb
        R += Xb.T @ Y[lo:lo + block_rows]
        s += Xb.sum(axis=0)
    return G, R, s


def solve_primal(problem, alphas, n_threads):
    """Linear RankRLS in feature space, (X^T L X + alpha I) w = X^T L y (eq. 28), O(n^3 + n^2 m);
    one eigendecomposition shared by every alpha when there are several (eq. 31)."""
    X = problem.X
    check_dense_memory(X.shape[1], 1, "feature matrix X^T L X")
    if problem.exclude_ties:
        W, rcond = _core.solve_shifted_system(*map(np.asfortranarray, _tie_normal_equations(problem, X)), alphas,
                                              primal=True)
    elif problem.is_graph:
        W, rcond = _core.rankrls_primal_graph(X, *problem.graph, alphas, n_threads)  # head, tail, weight, target
    else:
        gi = problem.groups
        # targets less their group means (L 1_q = 0, the same model): X^T L y of raw targets cancels ~eps of a large
        # offset, and the C++ pass's own rounded group mean meets the rows' centred features' rounded sums
        Y = problem.targets_centred()
        # each output in units of a power of two at its largest magnitude, W scaled back (both exact): X^T L Y of
        # features near 1e-150 and targets near 1e-170 was subnormal (1e-4 relative error)
        exponent = np.frexp(problem.centred_magnitudes())[1]
        Y = np.ldexp(Y, -exponent)
        if gi.n_groups == 1 and problem.weighting == "unweighted":
            system = _object_ranking_normal_equations(X, Y)
            return Fit("primal", coef=np.ldexp(solve_assembled_primal(*system, alphas), exponent))
        W, rcond = _core.rankrls_primal_scores(X, gi.order, gi.offsets, problem.pair_weight(), Y, alphas, n_threads)
        return Fit("primal", coef=np.ldexp(_checked(W, rcond, alphas.size), exponent))
    return Fit("primal", coef=_checked(W, rcond, alphas.size))


def _tie_normal_equations(problem, Z):
    """Z^T L Z and Z^T L Y with the tie-excluding L = S^2 (rows of Z in the caller's order)."""
    cells = problem.cells
    SZ = problem.apply_S_cells(cells.take(Z))
    return SZ.T @ SZ, SZ.T @ problem.apply_S_cells(cells.take(problem.Y))


def _centred_features(X, groups=None):
    """X minus its column means (dense X; sparse X as it is), or minus each group's column means (a :class:`GroupIndex`
    ``groups``) where those are large (:func:`features_without_group_offsets`).  S 1 = 0 (S 1_q = 0 in every group;
    M^T 1 = 0 for graphs), so the dual solution has 1^T A = 0 (in every group) and K = Xc Xc^T gives the same A and
    W = Xc^T A = X^T A, without the cancellation a large feature offset (common, or one per query) causes in X X^T."""
    if issparse(X):
        return X
    by_group = X if groups is None else features_without_group_offsets(X, groups)
    return by_group if by_group is not X else X - X.mean(axis=0)


def train_kernel(X, spec, n_threads, groups=None):
    """K over the rows of X in the grouped order of the GroupIndex ``groups`` (default: as given) as a writable
    Fortran-ordered array that the solver may overwrite in place (linear rows come centred: :func:`solve_dual`)."""
    if spec.precomputed:  # check_precomputed_kernel made X exactly symmetric: its transpose is the F-ordered view
        return (X.copy() if groups is None or groups.is_identity else X[np.ix_(groups.order, groups.order)]).T
    return spec.train(X if groups is None else groups.take(X), n_threads)


def solve_dual(problem, spec, alphas, n_threads):
    """Kernel RankRLS in the dual, (S K S + alpha I) u = S y, A = S u (eq. 17), O(m^3): Cholesky for one alpha, one
    tridiagonal reduction for several (eq. 31; a preference graph keeps the eigendecomposition)."""
    m = problem.m
    X = _centred_features(problem.X, None if problem.is_graph else problem.groups) if spec.linear else problem.X
    # the path's tridiagonal route holds ~1.1 m x m (measured), the graph's eigensolver ~3
    check_dense_memory(m, 3 if problem.exclude_ties or (alphas.size > 1 and problem.is_graph) else 1.2, "kernel matrix")
    if problem.exclude_ties:
        # (S K S + alpha I) u = S y, A = S u with the tie-excluding S (eq. 17 in symmetric form)
        cells = problem.cells
        K = train_kernel(X, spec, n_threads, cells)
        level = kernel_rounding_level(K, problem, spec)
        SK = problem.apply_S_cells(K, centre=False)
        del K
        G = np.asfortranarray(problem.apply_S_cells(SK.T, centre=False))
        del SK
        A, rcond = _core.solve_shifted_system(G, np.asfortranarray(problem.apply_S_cells(cells.take(problem.Y))),
                                              alphas)
        del G
    elif problem.is_graph:
        K = train_kernel(X, spec, n_threads)
        level = kernel_rounding_level(K, problem, spec)
        A, rcond = _core.rankrls_dual_graph(K, *problem.graph, alphas, n_threads)
        del K
    else:
        gi = problem.groups
        Kg = train_kernel(X, spec, n_threads, gi)
        level = kernel_rounding_level(Kg, problem, spec)
        # many alphas: one tridiagonal reduction S K S = Q T Q^T, O(m) per alpha, Q applied once (eq. 31; solvers.md)
        args = (gi.order, gi.offsets, problem.pair_weight(), np.asfortranarray(gi.take(problem.Y)))
        try:
            solve = _core.rankrls_dual_scores_tridiag if alphas.size > 1 else _core.rankrls_dual_scores
            A, rcond = solve(Kg, *args, alphas, n_threads)
        except LinAlgError:
            if alphas.size == 1:
                raise
            # the shared reduction refuses alpha <= eps lambda_max, fit's Cholesky factor only alpha <= eps max diag(S
            # K S): every alpha solved as fit solves it, from the kernel computed again (each solve overwrites it)
            solved = [_core.rankrls_dual_scores(train_kernel(X, spec, n_threads, gi), *args, alphas[k:k + 1],
                                                n_threads) for k in range(alphas.size)]
            A, rcond = np.hstack([a for a, _ in solved]), min(r for _, r in solved)
        del Kg
    A = _checked(A, rcond, alphas.size)
    if rcond >= _RCOND_WARNING:  # one warning per solve
        warn_below_kernel_rounding(float(alphas.min()), level)
    if problem.exclude_ties:  # A = S u
        A = problem.cells.untake(np.stack([problem.apply_S_cells(u) for u in A]), axis=1)
    # linear kernel: W = X^T A (eq. 27), X centred as for the kernel (1_q^T A = 0): no cancellation under an offset
    coef = np.stack([X.T @ a for a in A]) if spec.linear else None
    return Fit("dual", coef=coef, dual_coef=A, X_fit=None if spec.precomputed else problem.X)


# ---- Conjugate gradient (Sect. 4.3) ----------------------------------------------------------------

class CGResult(NamedTuple):
    """coef (n, v); n_iter (v,); converged (v,) bool; residual_history (k + 1, v): relative
    residuals ||X^T b - A w|| / ||X^T b|| per iteration (NaN after a column stopped)."""

    coef: np.ndarray
    n_iter: np.ndarray
    converged: np.ndarray
    residual_history: np.ndarray


def default_max_iter(n_features):
    """``max_iter=None`` means ``min(10 * n, 5000)`` iterations (CG is exact after n in exact arithmetic)."""
    return int(max(1, min(10 * int(n_features), 5000)))


def _check_preconditioner(preconditioner):
    if preconditioner is None or preconditioner is False:
        return False
    if isinstance(preconditioner, str) and preconditioner.lower() in ("jacobi", "diagonal"):
        return True
    raise ValueError(f"preconditioner must be None or 'jacobi', got {preconditioner!r}")


def _check_x0(x0, n, v):
    if x0 is None:
        return None
    x0 = np.asarray(x0, dtype=np.float64)
    x0 = x0.reshape(-1, 1) if x0.ndim == 1 else x0
    if x0.shape != (n, v):
        raise ValueError(f"warm start has shape {x0.shape}, expected ({n}, {v})")
    return np.ascontiguousarray(x0)


def _offset_free(problem):
    """The problem's X for the primal products X w and X^T r: dense rows of a scores problem centred in their groups
    where a group offset would cancel digits in X w (S X = S Xc, so w is the same; solvers.md, "Primal")."""
    if issparse(problem.X) or problem.is_graph:
        return problem.X
    return features_without_group_offsets(problem.X, problem.groups)


def _run_cg(problem, alpha, *, tol, max_iter, x0, precond, n_threads, callback, transpose_copy, warn):
    """One CG solve of (X^T L X + alpha I) w = X^T b with b = L y or M N (eqs. 12-13); L is
    applied implicitly, never formed.  Arguments already validated."""
    X, m, n, v = _offset_free(problem), problem.m, problem.n_features, problem.n_outputs
    check_dense_memory(n, 8, "CG work vectors", n_cols=v)  # W, R, Z, P, Q, B and the history
    check_dense_memory(m, 3, "CG work vectors", n_cols=v)  # X p, L X p and the targets
    # targets centred in their groups (the same L y): a common offset c would cancel ~eps c in L y
    Y = np.zeros((m, v)) if problem.is_graph else np.ascontiguousarray(problem.targets_centred())
    stopped = []  # a callback's stop is no rounding floor

    def watched(iteration, residuals):
        stop = bool(callback(iteration, residuals))
        stopped.append(stop)
        return stop
    common = dict(x0=x0, alpha=alpha, tol=tol, max_iter=max_iter, jacobi=precond, n_threads=n_threads,
                  callback=None if callback is None else watched, **problem.laplacian_args())
    if issparse(X):
        parts = as_csr(X)
        coef, n_iter, converged, history, _ = _core.cg_rankrls_csr(
            parts.data, parts.indices, parts.indptr, m, n, Y, transpose_copy=bool(transpose_copy), **common)
    else:
        coef, n_iter, converged, history, _ = _core.cg_rankrls_dense(X, Y, **common)
    converged = np.asarray(converged, dtype=bool).reshape(-1)
    n_iter = np.asarray(n_iter, dtype=np.int64).reshape(-1)
    if warn and not converged.all():
        _warn_cg_unconverged(history, n_iter, converged, tol, max_iter, stopped=any(stopped))
    return CGResult(np.asarray(coef), n_iter, converged, np.asarray(history))


def _warn_cg_unconverged(history, n_iter, converged, tol, max_iter, what="", stopped=False):
    """ConvergenceWarning for the outputs CG left above tol: stopped by max_iter (or a callback: ``stopped``), or at
    the rounding floor (their true residual no longer falls when CG restarts from it: tol is below what float64
    resolves)."""
    bad = np.flatnonzero(~converged)
    # each output's last residual (NaN rows follow an output that stopped)
    last = np.array([col[~np.isnan(col)][-1] for col in history[:, bad].T]) if history.shape[0] else np.array([np.nan])
    floor = not stopped and bool(np.all(n_iter[bad] < max_iter))
    head = f"RankRLS conjugate gradient{what} did not converge for {bad.size} of {converged.size} output(s)"
    if floor:
        warnings.warn(f"{head}: its true relative residual stops falling at {np.nanmax(last):.3g} > tol={tol:g}, "
                      "the rounding floor of double precision for this problem; the model is as accurate as float64 "
                      "allows. Use a tol above that level.", ConvergenceWarning, stacklevel=user_stacklevel())
    else:
        warnings.warn(f"{head} within {int(n_iter.max())} iterations (relative residual {np.nanmax(last):.3g} > "
                      f"tol={tol:g}); increase max_iter, loosen tol, raise alpha or try preconditioner='jacobi'.",
                      ConvergenceWarning, stacklevel=user_stacklevel())


def _run_cg_ties(problem, alpha, *, tol, max_iter, x0, precond, callback, warn):
    """CG on (X^T L X + alpha I) w = X^T L y with tied pairs excluded: L applied implicitly through
    the tie-cell square root (O(m) per product, never a pair list), X products by numpy/SciPy."""
    X, cells, n = _offset_free(problem), problem.cells, problem.n_features

    def lap(u):
        return cells.untake(problem.apply_S_cells(problem.apply_S_cells(cells.take(u))))

    def normal(w):
        return np.asarray(X.T @ lap(np.asarray(X @ w))).reshape(-1) + alpha * w

    B = np.asarray(X.T @ lap(problem.targets_centred()))  # centred: the same L y, without a common offset's cancelling
    M = None
    if precond:  # diag(X^T L X) + alpha = ||S x_j||^2 + alpha, in column blocks
        d = np.empty(n)
        for lo in range(0, n, 256):
            cols = X[:, lo:lo + 256]
            cols = cols.toarray() if issparse(cols) else np.asarray(cols)
            SX = problem.apply_S_cells(cells.take(cols))
            d[lo:lo + 256] = np.einsum("ij,ij->j", SX, SX)
        inv = 1.0 / (d + alpha)
        M = LinearOperator((n, n), matvec=lambda r: inv * r)
    A = LinearOperator((n, n), matvec=normal)
    v = B.shape[1]
    coef, n_iter, conv = np.zeros((n, v)), np.zeros(v, dtype=np.int64), np.zeros(v, dtype=bool)
    history = []
    for k in range(v):
        rel = [1.0]
        scale = max(float(np.linalg.norm(B[:, k])), np.finfo(np.float64).tiny)

        def count(w, k=k, rel=rel):
            rel.append(float(np.linalg.norm(B[:, k] - normal(w))) / scale)
            if callback is not None:
                callback(len(rel) - 1, np.array([rel[-1]]))

        w, info = sparse_cg(A, B[:, k], x0=None if x0 is None else x0[:, k], rtol=tol, atol=0.0, maxiter=max_iter,
                            M=M, callback=count)
        # SciPy stops on its recursive residual: decided on the true one, restarting from it while that halves it
        true, before = float(np.linalg.norm(B[:, k] - normal(w))) / scale, np.inf
        while info == 0 and tol < true < 0.5 * before and len(rel) - 1 < max_iter:
            before = true
            w, info = sparse_cg(A, B[:, k], x0=w, rtol=tol, atol=0.0, maxiter=max_iter - len(rel) + 1, M=M,
                                callback=count)
            true = float(np.linalg.norm(B[:, k] - normal(w))) / scale
        coef[:, k], n_iter[k], conv[k] = w, len(rel) - 1, info == 0 and true <= tol
        history.append(rel)
    hist = np.array(list(itertools.zip_longest(*history, fillvalue=np.nan)))  # NaN after a column stopped
    if warn and not conv.all():
        _warn_cg_unconverged(hist, n_iter, conv, tol, max_iter, " (exclude_ties)")
    return CGResult(coef, n_iter, conv, hist)


def solve_cg(problem, alpha, *, tol=1e-6, max_iter=None, x0=None, preconditioner=None, n_threads=1,
             callback=None, transpose_copy=False, warn=True):
    """Linear RankRLS by conjugate gradient in the primal (Sect. 4.3); one alpha."""
    alpha, n = check_alpha(alpha), problem.n_features
    args = dict(tol=check_real(tol, "tol", "a finite number >= 0", lambda v: v >= 0),
                max_iter=default_max_iter(n) if max_iter is None else check_int(max_iter, "max_iter", low=1),
                x0=_check_x0(x0, n, problem.n_outputs), precond=_check_preconditioner(preconditioner),
                callback=callback, warn=warn)
    res = (_run_cg_ties(problem, alpha, **args) if problem.exclude_ties
           else _run_cg(problem, alpha, n_threads=n_threads, transpose_copy=transpose_copy, **args))
    return Fit("cg", coef=res.coef[None], n_iter=res.n_iter[None], converged=res.converged[None],
               residual_history=[res.residual_history])


def solve_cg_path(problem, alphas, *, tol=1e-6, max_iter=None, preconditioner=None, n_threads=1):
    """One CG per alpha, in decreasing alpha order, each warm-started from the previous solution
    (large alphas converge fastest)."""
    fits, x0 = [None] * alphas.size, None
    for k in np.argsort(-alphas, kind="stable"):
        fits[k] = solve_cg(problem, float(alphas[k]), tol=tol, max_iter=max_iter, x0=x0,
                           preconditioner=preconditioner, n_threads=n_threads)
        x0 = fits[k].coef[0]
    stacked = {k: np.concatenate([getattr(f, k) for f in fits]) for k in ("coef", "n_iter", "converged")}
    return Fit("cg", **stacked, residual_history=[f.residual_history[0] for f in fits])


def fit_cg(X, Y=None, *, group_index=None, normalized=False, graph=None, alpha=1.0, tol=1e-6, max_iter=None,
           x0=None, preconditioner=None, n_jobs=None, callback=None, transpose_copy=False, warn=True, weighting=None):
    """Linear RankRLS by conjugate gradient on arrays: ``(X^T L X + alpha I) w = X^T b`` with
    ``b = L y`` (scoring setting, cost (21)) or ``b = M N`` (preference graph, eqs. 12-13).

    X: scipy.sparse (CSR mapped with zero copy) or dense (m, n); Y: (m,) or (m, v) targets of the scoring setting
    (ignored with ``graph``); group_index: a :class:`~fastrank._validation.GroupIndex` (rows in ORIGINAL order), None
    for object ranking (one group); normalized: pair weight 1/n_q in group q ("normalized"), overridden by
    ``weighting`` (any of :data:`fastrank._problem.WEIGHTINGS`); graph: ``(head, tail, weight, target)`` (or a
    :class:`~fastrank._problem.PreferenceGraph`), edge e preferring row head[e] over tail[e] with weight w_e and
    target z_e ((l,) or (l, v)); alpha: regularization; stop when ``||X^T b - A w|| <= tol * ||X^T b||`` per output or
    after max_iter (None: :func:`default_max_iter`); x0: (n,) or (n, v) warm start; preconditioner: None or "jacobi"
    (diag(X^T L X) + alpha, O(nnz)); n_jobs: threads of the sparse products; ``callback(iteration,
    relative_residuals)`` returns True to stop early; transpose_copy: build X^T once (O(nnz) memory) instead of
    per-thread partial sums; warn: :class:`~fastrank.exceptions.ConvergenceWarning` when an output did not converge.
    Returns a :class:`CGResult` (coef (n, v) even for one output).
    """
    n_threads = check_n_jobs(n_jobs)
    X = check_features(X, allow_sparse=True, min_rows=1)
    problem = _array_problem(X, Y, group_index, normalized, graph, weighting=weighting)
    fit = solve_cg(problem, alpha, tol=tol, max_iter=max_iter, x0=x0, preconditioner=preconditioner,
                   n_threads=n_threads, callback=callback, transpose_copy=transpose_copy, warn=warn)
    return CGResult(fit.coef[0], fit.n_iter[0], fit.converged[0], fit.residual_history[0])


def _array_problem(X, Y, gi, normalized, graph, *, weighting=None):
    """A :class:`RankingProblem` from already-validated arrays (the array-level solver API)."""
    m = X.shape[0]
    if graph is not None:
        g = PreferenceGraph.from_arrays(graph, m)
        return RankingProblem(X, None, True, None, False, "unweighted", g, False)
    Y = np.asarray(Y, dtype=np.float64)
    Y = Y.reshape(-1, 1) if Y.ndim == 1 else Y
    if Y.ndim != 2 or Y.shape[0] != m:
        raise ValueError(f"Y must have {m} rows, got shape {Y.shape}")
    gi = gi if gi is not None else group_index(None, m)
    if gi.codes.size != m:
        raise ValueError(f"group_index covers {gi.codes.size} rows but X has {m}")
    if weighting is None:
        weighting = "normalized" if normalized else "unweighted"
    elif weighting not in WEIGHTINGS:  # else it would be read as "per_object"
        raise ValueError(f"weighting must be None or one of {WEIGHTINGS}, got {weighting!r}")
    return RankingProblem(X, np.asfortranarray(Y), Y.shape[1] == 1, gi, True, weighting, None, False)


# ---- Subset-of-regressors RankRLS (Sect. 3.5, eqs. 40-42) ------------------------------------------

def select_basis(n_rows, basis_vectors, random_state=None):
    """Basis indices (sorted, unique int64) from an int (that many rows chosen uniformly at random
    without replacement with ``random_state``; random selection is as good as greedier schemes
    for subset of regressors, Rifkin et al. 2003, cited in Sect. 3.5) or an explicit index list."""
    if isinstance(basis_vectors, (bool, np.bool_)):
        raise TypeError("basis_vectors must be an int or a sequence of row indices")
    if isinstance(basis_vectors, numbers.Integral):
        r = int(basis_vectors)
        if r < 1 or r > n_rows:
            raise ValueError(f"basis_vectors={r} must be between 1 and the number of training rows ({n_rows})")
        if r == n_rows:
            return np.arange(n_rows, dtype=np.int64)
        rng = check_seed(random_state, "random_state (the seed drawing basis_vectors rows)")
        return np.sort(rng.choice(n_rows, size=r, replace=False)).astype(np.int64)
    return check_indices(basis_vectors, n_rows, "basis_vectors (a positive int or row indices)", negative=True)


def check_indices(idx, n, name, *, negative=False):
    """Row indices (integers, or a boolean mask of ``n`` entries) as a non-empty int64 array in [0, n) without
    repeats; with ``negative``, -n..-1 count from the end."""
    idx = _asarray(idx, name)
    if idx.dtype == bool:
        if idx.shape != (n,):
            raise ValueError(f"{name} as a boolean mask must have shape ({n},), one entry per row")
        idx = np.flatnonzero(idx)
    if idx.ndim != 1 or idx.size == 0 or not whole_numbers(idx):
        raise ValueError(f"{name} must be a non-empty 1-D array of integer row indices")
    low = -n if negative else 0
    if idx.min() < low or idx.max() >= n:  # before the cast, which would wrap an index such as 1e30
        raise ValueError(f"{name} has indices outside [{low}, {n})")
    idx = idx.astype(np.int64)
    idx = np.where(idx < 0, idx + n, idx)
    ordered = np.sort(idx)  # a sort: numpy's np.unique hashes, 10x slower on large index arrays
    if (ordered[1:] == ordered[:-1]).any():
        raise ValueError(f"{name} repeats an index")
    return idx


def basis_primal_weights(X_basis, coef):
    """Linear kernel only: w = X_R^T A ((n,) or (n, v)), so predictions are ``Z @ w`` in O(nnz)."""
    return np.asarray(X_basis.T @ np.asarray(coef))


def basis_kernel(spec, X, basis, n_threads):
    """K(X, X_R) (m, |R|) and K_RR (symmetrized), Fortran-ordered, and the basis rows X_R; with a precomputed kernel
    (``spec`` None or precomputed) X is K and X_R None."""
    X_R = None if spec is None or spec.precomputed else take_rows(X, basis)
    KR = np.asfortranarray(X[:, basis]) if X_R is None else kernel_block(spec, X, X_R, n_threads)
    KRR = KR[basis]
    return KR, np.asfortranarray(0.5 * (KRR + KRR.T)), X_R


def _basis_coefficients(problem, spec, alphas, basis, n_threads):
    """(n_alphas, |R|, v) coefficients over the basis rows (eqs. 41-42)."""
    check_dense_memory(problem.m, 1 if problem.is_graph else 2, "kernel block K(X, X_R)", n_cols=basis.size)
    KRt, KRR, _ = basis_kernel(spec, problem.X, basis, n_threads)

    def checks(n_kept):  # _checked_basis's arguments
        return (KRR, n_kept) if spec.kind == "rbf" and n_kept is not None else ()

    if problem.exclude_ties:
        # eq. 41 with the tie-excluding L = S^2: (K_R^T L K_R + alpha K_RR) a = K_R^T L y
        G, g = _tie_normal_equations(problem, np.asarray(KRt))
        out = []
        for a in alphas:
            H = 0.5 * ((G + a * KRR) + (G + a * KRR).T)
            out.append(np.linalg.lstsq(H, g, rcond=None)[0] if np.linalg.matrix_rank(H) < H.shape[0]
                       else np.linalg.solve(H, g))
        e = np.linalg.eigvalsh(KRR)  # the C++ routes' measure: the smallest eigenvalue above r eps max(e)
        kept = e[e > max(e[-1], 0.0) * KRR.shape[0] * np.finfo(float).eps]
        return _checked_basis(np.stack(out), kept[0] / e[-1] if kept.size else 0.0, *checks(kept.size))
    if problem.is_graph:
        A, cholesky, sigma, rcond = _core.sparse_rls_path_graph(KRt, *problem.graph, KRR, alphas, n_threads)
    else:
        gi = problem.groups
        A, cholesky, sigma, rcond = _core.sparse_rls_path_groups(KRt, np.asfortranarray(problem.Y), gi.order,
                                                                 gi.offsets, problem.pair_weight(), KRR, alphas,
                                                                 n_threads)
    return _checked_basis(A, rcond, *checks(None if cholesky else sigma.size))


def solve_basis(problem, spec, alphas, basis, n_threads):
    """Subset-of-regressors RankRLS over the basis rows ``basis`` for every alpha (eqs. 40-42):
    one Cholesky + eigendecomposition of the |R|-dimensional system, O(m |R|^2) in all."""
    A = _basis_coefficients(problem, spec, alphas, basis, n_threads)
    X_fit = None if spec.precomputed else take_rows(problem.X, basis)  # the basis rows only
    coef = np.stack([basis_primal_weights(X_fit, a) for a in A]) if spec.linear else None
    return Fit("sparse", coef=coef, dual_coef=A, X_fit=X_fit, basis_indices=basis)


def fit_basis(X, Y=None, *, group_index=None, normalized=False, graph=None, alphas=1.0, kernel_spec,
              basis_indices, n_jobs=None, weighting=None):
    """Sparse RankRLS coefficients over the basis rows for each alpha (eqs. 41-42), on arrays.  X: (m, d) dense or
    scipy.sparse training inputs (the (m, m) kernel matrix when ``kernel_spec.precomputed``); Y: (m,) or (m, v) (scoring
    setting) or None with ``graph``.  Returns an array (n_alphas, r, v): A(alpha) with f(x) = k(x, X[basis]) A."""
    alphas = check_alphas(alphas)
    n_threads = check_n_jobs(n_jobs)
    X = check_features(X, precomputed=kernel_spec.precomputed, allow_sparse=True, min_rows=1)
    basis = np.asarray(basis_indices, dtype=np.int64)
    problem = _array_problem(X, Y, group_index, normalized, graph, weighting=weighting)
    return _basis_coefficients(problem, kernel_spec, alphas, basis, n_threads)


# ---- Assembled systems (e.g. summed over the partitions of distributed data, fastrank.dask) --------

def solve_assembled_primal(G, R, alphas):
    """(G + alpha I) W = R for every alpha with G = X^T L X, R = X^T L Y assembled by the caller (eq. 28), by the primal
    solver's LAPACK route (Cholesky for one alpha, one tridiagonal reduction for several, eq. 31); warns when
    ill-conditioned.  Returns (n_alphas, n, v)."""
    shifted = _core.solve_shifted_system_tridiag if alphas.size > 1 else _core.solve_shifted_system
    W, rcond = shifted(np.asfortranarray(G), np.asfortranarray(R), alphas, primal=True)
    return _checked(W, rcond, alphas.size)


def solve_assembled_basis(H, g, KRR, alphas):
    """Subset-of-regressors coefficients (n_alphas, |R|, v) from assembled H = K_R^T L K_R and g = K_R^T L y: eq. 41's
    (H + alpha K_RR) a = g for every alpha through the one decomposition of eq. 42 that :func:`solve_basis` uses."""
    A, _, _, rcond = _core.sparse_rls_path_gram(np.asfortranarray(H), np.asfortranarray(g), np.asfortranarray(KRR),
                                                alphas)
    return _checked_basis(A, rcond)
