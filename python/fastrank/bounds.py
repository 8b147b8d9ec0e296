"""Stability-based generalization bounds for kernel ranking (Agarwal & Niyogi 2009; Cortes, Mohri & Rastogi 2007).

Each calculator returns the right-hand side of a bound that holds with probability >= 1 - delta over the draw of the m
training examples: expected error < empirical term + stability term(m) + confidence term(m, delta).  ``empirical`` is
the training-sample quantity the theorem names (default 0: the generalization gap alone); :func:`empirical_term`
computes it from a fitted estimator.  Papers: 002 = Agarwal & Niyogi, "Generalization bounds for ranking algorithms via
algorithmic stability" (JMLR 2009); 000 = Cortes, Mohri & Rastogi, "Magnitude-preserving ranking algorithms".  "ln" is
the natural logarithm.

Both papers need a bounded kernel, K(x, x) <= kappa^2 for every x (kappa = 1 for the Gaussian kernel; kappa = inf, e.g.
a linear kernel on unbounded inputs, has no bound). :func:`kernel_kappa` gives sqrt(max_i K(x_i, x_i)) on given rows, a
lower bound of the supremum.

Regularization parameters: 002 minimises R_l(f; S) + lambda ||f||_K^2 with the empirical error averaged over the C(m, 2)
pairs (Sect. 5.2), so ``RankRLS(alpha)`` on all pairs of continuous labels is 002's least-squares algorithm with
lambda = alpha / C(m, 2) (RankRLS also penalises score differences of tied labels, which 002's l_sq does not).  000
minimises ||h||_K^2 + C (1/m^2) sum_{i,j} c(h, x_i, x_j) (eq. 8), so ``MPRank(C)`` is 000's MPRank with the same C.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
from scipy.sparse import csr_matrix, issparse

from ._docs import with_param_docs
from ._kernels import resolve_kernel
from ._sparse import as_csr, canonical_csr, row_sq_norms
from ._validation import as_float_matrix, as_real_array, check_precomputed_kernel, check_real, one_of
from .metrics import magnitude_preserving_cost, stability_ranking_loss

__all__ = ["agarwal_niyogi_score_stability_bound", "agarwal_niyogi_loss_stability_bound", "hinge_ranking_bound",
           "least_squares_ranking_bound", "magnitude_preserving_bound", "empirical_term", "kernel_kappa"]

# numpydoc entries shared by the bounds (``%(m)s`` ... in their docstrings)
_DOCS = {
    "m": "m : int\n    The number of training examples, >= 2 (pairs need two).",
    "lam": "lam : float\n    The regularization parameter lambda > 0 of R_l(f; S) + lambda ||f||_K^2 (002 eq. 4).",
    "kappa": """kappa : float
    The kernel's bound, K(x, x) <= kappa^2 for every x, > 0 (:func:`kernel_kappa`); ``inf`` (an unbounded kernel)
    raises ValueError.""",
    "M": "M : float\n    Labels lie in [0, M], M > 0.",
    "delta": "delta : float\n    0 < delta < 1: the bound holds with probability >= 1 - delta.",
    "empirical": """empirical : float, default=0.0
    R_l1(f_S; S) >= 0, the empirical l_1 error (``stability_ranking_loss(loss="gamma", gamma=1)``,
    :func:`empirical_term` with term "l1"); 0 gives the generalization gap alone.""",
    "bound": """bound : float
    The right-hand side of the bound; ValueError when it exceeds the largest float64 (a vacuous bound).""",
}


# Parameter checks: each names the theorem's condition.
_LAM = "the regularization parameter lambda of 002 eq. 4 must be positive"
_SIGMA = "the loss must be sigma-admissible with sigma > 0 (002 Definition 9)"
_LABELS = "labels lie in [0, M] with M > 0"


def _positive(value, name, condition):
    return check_real(value, name, f"> 0 and finite ({condition})", lambda v: v > 0)


def _m_kappa_delta(m, kappa, delta):
    m = check_real(m, "m", "an integer >= 2 (the number of training examples; pairs need two)", lambda v: v >= 2,
                   numbers.Integral)
    delta = check_real(delta, "delta", "a number with 0 < delta < 1 (the bound holds with probability 1 - delta)",
                       lambda v: 0 < v < 1)
    if isinstance(kappa, float) and math.isinf(kappa):  # a bool is never inf: check_real below refuses it
        raise ValueError("kappa = inf: the kernel is unbounded, but the theorem needs a bounded kernel, "
                         "K(x, x) <= kappa^2 < inf for all x (e.g. a Gaussian kernel, kappa = 1, or bounded inputs)")
    kappa = check_real(kappa, "kappa", "a real number > 0 with K(x, x) <= kappa^2 for all x (a non-zero kernel)",
                       lambda v: v > 0)
    return m, kappa, delta


# Arithmetic in log space: kappa^2, M^2, 1/lam or m may each lie outside float64 while the bound
# itself is representable (kappa = 1e200 with lam = 1e300), so every term is a product of logs.
_LOG_MAX = math.log(np.finfo(np.float64).max)


def _log_add(a, b):
    """log(e^a + e^b) without overflow."""
    return max(a, b) + math.log1p(math.exp(-abs(a - b)))


def _log_root(m, log_of_delta_term):
    """log sqrt(2 L / m) with L = exp(log_of_delta_term) > 0 (the confidence factor of 002 and 000)."""
    return 0.5 * (math.log(2.0) + log_of_delta_term - math.log(m))


def _total(empirical, log_terms, **inputs):
    """empirical + sum(exp(log_terms)), or a ValueError naming the inputs when the bound exceeds float64."""
    if max(log_terms) < _LOG_MAX:
        empirical = check_real(empirical, "empirical", "a finite number >= 0 (an empirical error)", lambda v: v >= 0)
        try:
            total = empirical + math.fsum(math.exp(t) for t in log_terms)
        except OverflowError:  # terms below the largest float64 whose sum is above it
            total = math.inf
        if math.isfinite(total):
            return total
    shown = ", ".join(f"{k}={v!r}" for k, v in inputs.items())
    raise ValueError(f"the bound exceeds the largest float64 (about 1.8e308) for {shown}: it is vacuous (a ranking "
                     "error is at most 1, a cost at most its range); use a larger m or lam/smaller C, kappa or M")


# Agarwal & Niyogi (002)
@with_param_docs(_DOCS)
def agarwal_niyogi_score_stability_bound(m, lam, kappa, M, delta, *, sigma=1.0, empirical=0.0):
    """002 Corollary 12 (Theorem 11 with Theorem 8 at gamma = 1).

    For an algorithm minimising R_l(f; S) + lam ||f||_K^2 in an RKHS with K(x, x) <= kappa^2, a loss l convex in f and
    sigma-admissible, and labels in [0, M]: with probability >= 1 - delta,

        R(f_S) < R_l1(f_S; S) + 32 sigma kappa^2 / (lam m)
                 + (16 sigma kappa^2 / lam + M) sqrt(2 ln(1/delta) / m)

    where R is the expected discrete ranking error (002 eq. 1) and R_l1 the empirical l_1 error, passed as
    ``empirical``.

    Parameters
    ----------
    %(m)s %(lam)s %(kappa)s %(M)s %(delta)s
    sigma : float, default=1.0
        The loss is sigma-admissible (002 Definition 9), sigma > 0.
    %(empirical)s

    Returns
    -------
    %(bound)s
    """
    m, kappa, delta = _m_kappa_delta(m, kappa, delta)
    lam, M, sigma = _positive(lam, "lam", _LAM), _positive(M, "M", _LABELS), _positive(sigma, "sigma", _SIGMA)
    return _stability_bound(m, lam, kappa, delta, math.log(sigma), M, empirical, M=M, sigma=sigma)


def _stability_bound(m, lam, kappa, delta, log_s, top, empirical, **named):
    """empirical + 32 s kappa^2 / (lam m) + (16 s kappa^2 / lam + top) sqrt(2 ln(1/delta) / m) in log space, with
    s = exp(log_s): s = sigma in 002 Corollary 12 (top = M), sigma^2 in Corollary 15 (top = B); ``named``: the
    caller's own inputs, shown if the bound overflows."""
    log_a = log_s + 2.0 * math.log(kappa) - math.log(lam)  # log(s kappa^2 / lam)
    log_root = _log_root(m, math.log(-math.log(delta)))
    terms = [math.log(32.0) + log_a - math.log(m), _log_add(math.log(16.0) + log_a, math.log(top)) + log_root]
    return _total(empirical, terms, m=m, lam=lam, kappa=kappa, delta=delta, **named)


@with_param_docs(_DOCS)
def agarwal_niyogi_loss_stability_bound(m, lam, kappa, B, delta, *, sigma, empirical=0.0):
    """002 Corollary 15 (Corollary 14 with Theorem 6).

    If in addition the minimised loss satisfies l_disc <= l <= B: with probability >= 1 - delta,

        R(f_S) < R_l(f_S; S) + 32 sigma^2 kappa^2 / (lam m)
                 + (16 sigma^2 kappa^2 / lam + B) sqrt(2 ln(1/delta) / m)

    Parameters
    ----------
    %(m)s %(lam)s %(kappa)s
    B : float
        The bound of the minimised loss, l_disc <= l <= B, B > 0.
    %(delta)s
    sigma : float
        The loss l is sigma-admissible (002 Definition 9), sigma > 0.
    empirical : float, default=0.0
        R_l(f_S; S) >= 0, the empirical error in the minimised loss l itself (:func:`empirical_term` with term
        "hinge", "squared" or "disc").

    Returns
    -------
    %(bound)s
    """
    m, kappa, delta = _m_kappa_delta(m, kappa, delta)
    lam, sigma = _positive(lam, "lam", _LAM), _positive(sigma, "sigma", _SIGMA)
    B = _positive(B, "B", "the loss must be bounded, l <= B with B > 0")
    return _stability_bound(m, lam, kappa, delta, 2.0 * math.log(sigma), B, empirical, B=B, sigma=sigma)


@with_param_docs(_DOCS)
def hinge_ranking_bound(m, lam, kappa, M, delta, *, empirical=0.0):
    """002 Sect. 5.2.1: kernel ranking with the hinge ranking loss l_h (1-admissible), i.e. Corollary 12 with sigma = 1:

        R(f_S) < R_l1(f_S; S) + 32 kappa^2 / (lam m) + (16 kappa^2 / lam + M) sqrt(2 ln(1/delta) / m)

    %(Parameters)s %(m)s %(lam)s %(kappa)s %(M)s %(delta)s %(empirical)s %(Returns)s %(bound)s
    """
    return agarwal_niyogi_score_stability_bound(m, lam, kappa, M, delta, sigma=1.0, empirical=empirical)


@with_param_docs(_DOCS)
def least_squares_ranking_bound(m, lam, kappa, M, delta, *, empirical=0.0):
    """002 Sect. 5.2.2: kernel ranking with the least-squares loss l_sq (eq. 9), (2M + 4 kappa M / sqrt(lam))-admissible
    on the effective search space ||f||_K^2 <= M^2 / lam (Lemma 16), in Corollary 12:

        R(f_S) < R_l1(f_S; S) + (64 kappa^2 M / (lam m)) (1 + 2 kappa / sqrt(lam))
                 + ((32 kappa^2 M / lam) (1 + 2 kappa / sqrt(lam)) + M) sqrt(2 ln(1/delta) / m)

    %(Parameters)s %(m)s %(lam)s %(kappa)s %(M)s %(delta)s %(empirical)s %(Returns)s %(bound)s
    """
    m, kappa, delta = _m_kappa_delta(m, kappa, delta)
    lam, M = _positive(lam, "lam", _LAM), _positive(M, "M", _LABELS)
    # log sigma, sigma = 2 M (1 + 2 kappa / sqrt(lam)): kappa / sqrt(lam) may overflow on its own
    log_sigma = math.log(2.0) + math.log(M) + _log_add(0.0, math.log(2.0) + math.log(kappa) - 0.5 * math.log(lam))
    return _stability_bound(m, lam, kappa, delta, log_sigma, M, empirical, M=M)


# Cortes, Mohri & Rastogi (000)
@with_param_docs(_DOCS)
def magnitude_preserving_bound(m, C, kappa, M, delta, *, power=2, empirical=0.0):
    """000 Corollary 1: magnitude-preserving regularization algorithms (MPRank: power=2 with the cost c^2_MP; SVRank and
    the other costs of eqs. 4-7 with power n).

    The algorithm minimises ||h||_K^2 + C (1/m^2) sum_{i,j} c(h, x_i, x_j) (eq. 31) with K(x, x) <= kappa^2 and
    |h(x) - y_x| <= M for every hypothesis and sample point; by Proposition 3 it is beta-stable with beta = 4 C
    sigma_n^2 kappa^2 / m (sigma_1 = 1, sigma_2 = 4M, Lemma 1), and Theorem 1 gives, with probability >= 1 - delta,

        n = 1 (eq. 65): R(h_S) <= R(h_S; S) + 8 kappa^2 C / m + 2 (2 kappa^2 C + M) sqrt((2/m) ln(2/delta))
        n = 2 (eq. 66): R(h_S) <= R(h_S; S) + 128 kappa^2 C M^2 / m
                                          + 4 M^2 (16 kappa^2 C + 1) sqrt((2/m) ln(2/delta))

    R(h_S) is the expected cost E c(h, x, x') (eq. 3) and R(h_S; S) the empirical cost of eq. 2.

    Parameters
    ----------
    %(m)s
    C : float
        The trade-off constant C > 0 of 000 eq. 31 (``MPRank(C)``'s C).
    %(kappa)s
    M : float
        Every hypothesis and sample point satisfy |h(x) - y_x| <= M, M > 0.
    %(delta)s
    power : {1, 2}, default=2
        The exponent n of the cost c^n (000 eqs. 65-66).
    empirical : float, default=0.0
        R(h_S; S) >= 0, the empirical cost of eq. 2 (``magnitude_preserving_cost(..., power=n)``, :func:`empirical_term`
        with term "mp1", "mp2", ...).

    Returns
    -------
    %(bound)s
    """
    m, kappa, delta = _m_kappa_delta(m, kappa, delta)
    C = _positive(C, "C", "the trade-off constant C of 000 eq. 31 must be positive")
    M = _positive(M, "M", "hypotheses must satisfy |h(x) - y| <= M with M > 0")
    if isinstance(power, (bool, np.bool_)) or not one_of(power, (1, 2)):
        raise ValueError(f"power must be 1 or 2 (the exponent n of the cost, 000 eqs. 65-66), got {power!r}")
    log_root = _log_root(m, math.log(math.log(2.0) - math.log(delta)))  # log sqrt((2/m) ln(2/delta))
    log_k2C = 2.0 * math.log(kappa) + math.log(C)
    if power == 1:
        terms = [math.log(8.0) + log_k2C - math.log(m),
                 math.log(2.0) + _log_add(math.log(2.0) + log_k2C, math.log(M)) + log_root]
    else:
        log_M2 = 2.0 * math.log(M)
        terms = [math.log(128.0) + log_k2C + log_M2 - math.log(m),
                 math.log(4.0) + log_M2 + _log_add(math.log(16.0) + log_k2C, 0.0) + log_root]
    return _total(empirical, terms, m=m, C=C, kappa=kappa, M=M, delta=delta)


# Data-dependent helpers
_TERMS = ("l1", "hinge", "squared", "disc", "mp1", "mp2", "hr1", "hr2", "hmp1", "hmp2", "svr1", "svr2")


def empirical_term(estimator, X, y, term="l1", *, epsilon=0.0, n_jobs=None):
    """The empirical term of a bound, from a fitted estimator and its training data.

    The bounds are stated for one sample without query groups: all pairs count.

    Parameters
    ----------
    estimator : estimator object
        Fitted: ``estimator.predict(X)`` gives the scores f(x_i), one per row; an object without ``predict`` raises
        TypeError.
    X : {array-like, sparse matrix} of shape (n_samples, n_features)
        The training inputs, as ``estimator.predict`` takes them.
    y : array-like of shape (n_samples,)
        The real training labels (one output).
    term : str, default="l1"
        The training error: "l1" (R_l1, 002 Corollary 12 and Sect. 5.2.1-5.2.2), "hinge" / "squared" / "disc" (R_l of
        002 for Corollary 15 with that loss), or for 000 Corollary 1 the empirical cost of eq. 2 with cost c^n: "mp1",
        "mp2" (MPRank), "hr1", "hr2", "hmp1", "hmp2", "svr1", "svr2"; another value raises ValueError.
    epsilon : float, default=0.0
        The epsilon of the terms "svr1" and "svr2" (000 eq. 7); a non-zero value with another term raises ValueError.
    n_jobs : int or None, default=None
        Threads of the metric (:func:`fastrank.metrics.stability_ranking_loss`,
        :func:`fastrank.metrics.magnitude_preserving_cost`).

    Returns
    -------
    empirical : float
        The training error ``term`` of the scores.
    """
    if not one_of(term, _TERMS):
        raise ValueError(f"term must be one of {_TERMS}, got {term!r}")
    zero = isinstance(epsilon, numbers.Real) and not isinstance(epsilon, (bool, np.bool_)) and epsilon == 0
    if not (zero or term.startswith("svr")):  # was ignored
        raise ValueError(f"epsilon is used only by the terms svr1 and svr2 (000 eq. 7), got epsilon={epsilon!r} with "
                         f"term={term!r}")
    if not hasattr(estimator, "predict"):
        raise TypeError(f"estimator must be a fitted estimator with predict, got {type(estimator).__name__}")
    f = as_real_array(estimator.predict(X), "estimator.predict(X)")
    y = as_real_array(y, "y")
    if f.ndim != 1 or y.ndim != 1:
        raise ValueError("empirical_term needs one score per row and 1-D y (a single output)")
    if term in ("l1", "hinge", "squared", "disc"):  # l1: l_gamma at its default gamma = 1
        return stability_ranking_loss(y, f, loss="gamma" if term == "l1" else term, n_jobs=n_jobs)
    return magnitude_preserving_cost(y, f, cost=term[:-1], power=int(term[-1]), epsilon=epsilon, n_jobs=n_jobs)


@with_param_docs()
def kernel_kappa(X, kernel="rbf", *, gamma=None, degree=3, coef0=1.0):
    """sqrt(max_i K(x_i, x_i)) over the rows of X: the smallest kappa with K(x, x) <= kappa^2 on these rows.

    The theorems need the supremum over the whole input space, which this only bounds from below (for "rbf" it is
    exactly 1 everywhere).

    Parameters
    ----------
    X : {array-like, sparse matrix} of shape (n_samples, n_features) or (n_samples, n_samples)
        The rows x_i (sparse rows are never densified), or the kernel matrix for ``kernel="precomputed"`` (its
        diagonal is read).
    kernel : {"linear", "rbf"/"gaussian", "poly"/"polynomial", "precomputed"}, default="rbf"
        A fastrank kernel name.
    %(gamma)s %(degree)s %(coef0)s

    Returns
    -------
    kappa : float
        The square root of max_i K(x_i, x_i); K(x, x) < 0 on some row (not positive semi-definite), a K(x, x) that
        overflows float64 or is undefined (a polynomial of non-integer degree of a negative base) raises ValueError.
    """
    if issparse(X):  # sparse rows, as the estimators take them, or a sparse kernel matrix: checked, never densified
        as_csr(X)
        X = canonical_csr(X)
    else:
        X = as_float_matrix(X)
    spec = resolve_kernel(kernel, gamma, degree, coef0, X.shape[1])
    if spec.precomputed and issparse(X):  # only its diagonal is read
        if X.shape[0] != X.shape[1]:
            raise ValueError(f"X must be the square kernel matrix for kernel='precomputed', got shape {X.shape}")
        diag = X.diagonal()
    elif spec.precomputed:
        diag = np.diag(check_precomputed_kernel(X, "X"))
    elif spec.kind == "rbf":
        return 1.0  # exp(0)
    else:
        with np.errstate(over="ignore"):
            diag = row_sq_norms(X)  # x . x
            if spec.kind == "poly":
                diag = spec.gamma * diag + spec.coef0
                if spec.degree % 1 and (diag < 0).any():  # K(x, x) undefined (NaN); the fitted kernels refuse it too
                    raise ValueError(f"polynomial kernel (gamma={spec.gamma:g}, degree={spec.degree:g}, coef0="
                                     f"{spec.coef0:g}): gamma * x.x + coef0 is negative for some rows of X and the "
                                     "degree is not an integer, so K(x, x) is undefined; use an integer degree or a "
                                     "coef0 large enough to keep gamma * x.x + coef0 >= 0")
                diag = diag ** spec.degree
        if spec.kind == "linear":
            # x . x over- or underflows for rows near 1e200 or 1e-200 where ||x|| does not: max ||x / scale|| * scale
            representable = np.isfinite(diag).all() and diag.max() >= np.finfo(np.float64).tiny
            scale = 0.0 if representable else np.abs(X).max()  # 0 also when every row is 0
            if scale > 0:
                # (sparse rows: each value divided, as scipy's X / scale multiplies by 1 / scale, inf for 1e-320)
                unit = csr_matrix((X.data / scale, X.indices, X.indptr), shape=X.shape) if issparse(X) else X / scale
                return float(scale * np.sqrt(row_sq_norms(unit).max()))
        elif not np.isfinite(diag).all():  # was returned as kappa = inf (or numpy's overflow warning)
            raise ValueError("K(x, x) overflows float64 on these rows of X (kappa^2 > 1.8e308): scale X down")
    if (diag < 0).any():  # a precomputed X, or a polynomial of odd degree with gamma * x.x + coef0 < 0
        fix = "pass a positive semi-definite kernel matrix" if spec.precomputed else "use coef0 >= 0"
        raise ValueError(f"K(x, x) < 0 for some rows of X: the kernel is not positive semi-definite there; {fix}")
    return float(np.sqrt(diag.max()))
