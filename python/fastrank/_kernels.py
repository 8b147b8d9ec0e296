"""Kernels: the resolved kernel specification every learner shares (scikit-learn's conventions), and kernel
blocks / blocked predictions for dense or sparse rows."""

from __future__ import annotations

import numpy as np
import scipy.linalg

from . import _core
from ._sparse import canonical_csr, issparse, row_sq_norms, take_rows
from ._validation import check_n_jobs, check_real

__all__ = ["KernelSpec", "resolve_kernel", "KERNELS", "kernel_block", "predict_basis", "row_products",
           "by_distinct_rows", "twin_rows"]

KERNELS = ("linear", "rbf", "gaussian", "poly", "polynomial", "precomputed")
_KIND = {"linear": 0, "rbf": 1, "poly": 2}  # resolved kinds (resolve_kernel maps the aliases)


class KernelSpec:
    """A resolved kernel: ``kind`` in {"linear", "rbf", "poly", "precomputed"} plus parameters: ``x . z``,
    ``exp(-gamma |x - z|^2)``, ``(gamma x . z + coef0) ** degree`` (a non-integer degree defined only where
    ``gamma x . z + coef0 >= 0``, ValueError otherwise), or X is the kernel matrix itself (fit: (m, m); predict: (p, m)
    against training rows)."""

    __slots__ = ("kind", "gamma", "degree", "coef0", "precomputed", "linear")

    def __init__(self, kind, gamma, degree, coef0):
        self.kind, self.gamma, self.degree, self.coef0 = kind, gamma, degree, coef0
        self.precomputed, self.linear = kind == "precomputed", kind == "linear"

    def _args(self):
        return (_KIND[self.kind], float(self.gamma), float(self.degree), float(self.coef0))

    def train(self, X, n_threads=1):
        """K(X, X), (m, m) Fortran-ordered and exactly symmetric."""
        return _core.kernel_train(*self._args(), X, n_threads)

    def cross(self, Z, X, n_threads=1):
        """K(Z, X), (p, m)."""
        return _core.kernel_cross(*self._args(), Z, X, n_threads)

    def predict(self, Z, X, coef, n_threads=1):
        """K(Z, X) @ coef, blocked so K is never held whole."""
        return _core.kernel_predict(*self._args(), Z, X, np.asfortranarray(coef, dtype=np.float64), n_threads)

    def cross_rowwise(self, Z, X, n_threads=1):
        """K(Z, X), each value from its two rows alone: the values of the on-line learners' passes."""
        return _core.kernel_cross_rowwise(*self._args(), Z, X, n_threads)

    def predict_rowwise(self, Z, X, coef, n_threads=1):
        """K(Z, X) @ coef as the on-line learners' passes score: :meth:`cross_rowwise` values, summed term by term in
        the order of X's rows (an exact tie there, terms that cancel, is one here)."""
        return _core.kernel_predict_rowwise(*self._args(), Z, X, np.asfortranarray(coef, dtype=np.float64), n_threads)


def resolve_kernel(kernel, gamma, degree, coef0, n_features):
    """Validate a kernel name and its parameters; returns a :class:`KernelSpec`."""
    if not isinstance(kernel, str) or kernel not in KERNELS:
        raise ValueError(f"Unknown kernel {kernel!r}; choose one of {', '.join(KERNELS)}")
    kind = {"gaussian": "rbf", "polynomial": "poly"}.get(kernel, str(kernel))  # a numpy.str_ is stored as str
    scaled = kind in ("rbf", "poly")  # a parameter the kernel ignores must still be a number (no raw float() error)
    gamma = check_real((1.0 / n_features if scaled else 1.0) if gamma is None else gamma, "gamma",
                       "a positive finite number or None", lambda v: v > 0 or not scaled)
    degree = check_real(degree, "degree", "a non-negative finite number", lambda v: v >= 0 or kind != "poly")
    return KernelSpec(kind, gamma, degree, check_real(coef0, "coef0", "a finite number"))


# Kernel blocks for dense or sparse operands
_EPS = float(np.finfo(np.float64).eps)
_EXPANSION_TOL = 1e-11   # largest relative error of a Gaussian value taken from the expansion
_UNDERFLOW = 746.0       # exp(-746) == 0 in float64


def _exact_sq_distances(Z, X, rows, cols, batch=4096):
    """|Z[rows[k]] - X[cols[k]]|^2 from the differences, in batches (sparse rows stay sparse)."""
    out = np.empty(rows.size)
    for s in range(0, rows.size, batch):
        A, B = Z[rows[s:s + batch]], X[cols[s:s + batch]]
        if not (issparse(A) and issparse(B)):
            A, B = (M.toarray() if issparse(M) else M for M in (A, B))
        out[s:s + batch] = row_sq_norms(A - B)
    return out


def kernel_block(spec, Z, XR, n_threads=1):
    """K(Z, XR) as a Fortran-ordered (p, r) float64 array; Z and XR dense (the compiled kernel) or scipy.sparse (never
    densified whole: Gaussian distances from the expansion, the entries at risk recomputed exactly; robustness.md,
    "Kernels").  Non-finite kernel values raise errors naming the kernel parameters."""
    if not issparse(Z) and not issparse(XR):
        return spec.cross(np.ascontiguousarray(Z, dtype=np.float64), np.ascontiguousarray(XR, dtype=np.float64),
                          n_threads)
    Zc, Xc = (canonical_csr(A) if issparse(A) else np.ascontiguousarray(A, dtype=np.float64) for A in (Z, XR))
    G = Zc @ Xc.T
    G = np.asfortranarray(G.toarray(order="F") if issparse(G) else G, dtype=np.float64)
    if spec.kind == "rbf":
        zn, xn = row_sq_norms(Zc), row_sq_norms(Xc)
        S = zn[:, None] + xn[None, :]
        with np.errstate(over="ignore", invalid="ignore"):
            D2 = S - 2.0 * G
            err = (4.0 + np.sqrt(Zc.shape[1])) * _EPS * S
            redo = ~np.isfinite(D2) | ((spec.gamma * err > _EXPANSION_TOL) & (spec.gamma * (D2 - err) < _UNDERFLOW))
        if redo.any():
            rows, cols = np.nonzero(redo)
            with np.errstate(over="ignore", invalid="ignore"):
                D2[rows, cols] = _exact_sq_distances(Zc, Xc, rows, cols)
            if not np.isfinite(D2[rows, cols]).all():
                raise ValueError(f"Gaussian kernel (gamma={spec.gamma:.6g}): squared distances between rows of X "
                                 "overflow float64; rescale X")
        np.maximum(D2, 0.0, out=D2)
        D2 *= -spec.gamma
        G = np.asfortranarray(np.exp(D2))
    elif spec.kind == "poly":
        params = f"gamma={spec.gamma:.6g}, degree={spec.degree:.6g}, coef0={spec.coef0:.6g}"
        with np.errstate(over="ignore", invalid="ignore"):
            G *= spec.gamma
            G += spec.coef0
            if spec.degree != np.floor(spec.degree) and (G < 0).any():
                raise ValueError(
                    f"polynomial kernel ({params}): gamma * x.z + coef0 is negative for some pairs of rows and the "
                    "degree is not an integer, so (gamma * x.z + coef0) ** degree is undefined; use an integer "
                    "degree or a coef0 large enough to keep gamma * x.z + coef0 >= 0")
            np.power(G, spec.degree, out=G)  # float exponent: exact integer powers, no int conversion
        if not np.isfinite(G).all():
            raise ValueError(f"polynomial kernel ({params}): kernel values overflow float64; use a smaller gamma, "
                             "degree or coef0, or rescale X")
    elif not np.isfinite(G).all():
        raise ValueError("linear kernel: inner products of rows of X overflow float64; rescale X")
    return G


def predict_basis(Z, X_basis, coef, kernel_spec, n_jobs=None, *, block_bytes=2**25):
    """Predictions ``K(Z, X_basis) @ coef`` of a computed kernel: O(|R|) kernel evaluations per input, in row blocks so
    at most ``block_bytes`` of kernel values exist at once; sparse Z stays sparse."""
    spec, n_threads = kernel_spec, check_n_jobs(n_jobs)
    coef = np.asarray(coef, dtype=np.float64)
    one_d = coef.ndim == 1
    C = coef.reshape(coef.shape[0], -1)
    if not issparse(Z) and not issparse(X_basis):
        out = spec.predict(np.ascontiguousarray(Z, dtype=np.float64), np.ascontiguousarray(X_basis, dtype=np.float64),
                           C, n_threads)
    else:
        block = max(1, int(block_bytes // (8 * max(1, C.shape[0]))))
        out = np.empty((Z.shape[0], C.shape[1]))
        Zc, Xb = (canonical_csr(A) if issparse(A) else A for A in (Z, X_basis))
        for start in range(0, Z.shape[0], block):
            out[start:start + block] = kernel_block(spec, Zc[start:start + block], Xb, n_threads) @ C
    return out.reshape(-1) if one_d else out


def row_products(X, W):
    """X @ W, every row summed in one fixed order (einsum's loop per row; a canonical CSR row in index order), so that
    identical rows score alike: BLAS's matrix-vector product rounds a row by its place in a block.  About 2.5x the
    time of that product on a quiet machine, and no search for identical rows."""
    if issparse(X):
        return np.asarray(canonical_csr(X) @ W)
    X = np.asarray(X, dtype=np.float64)
    if W.ndim == 1:
        return np.einsum("ij,j->i", X, W)
    return np.stack([np.einsum("ij,j->i", X, W[:, k]) for k in range(W.shape[1])], axis=1)


def by_distinct_rows(predict, X):
    """``predict(X)`` computed once per distinct row of X (:func:`twin_rows`): identical inputs tie exactly, where a
    blocked product rounds them by their place in a block."""
    twins = twin_rows(X)
    if twins is None:
        return predict(X)
    first = np.flatnonzero(twins == np.arange(twins.size))
    return predict(take_rows(X, first))[np.searchsorted(first, twins)]


def twin_rows(X):
    """For every row of X (dense or sparse; a precomputed kernel's rows are its inputs' kernel values), the first row
    identical to it; None when all rows differ.  Every model predicts identical inputs alike, but blocked kernel
    products and the exact cross-validation formulas reach them by different roundings, which would order a tie that
    the ranking measures count 1/2.  Rows are hashed exactly (a wrapping sum of their entries' mixed bit patterns,
    zeros of either sign and sparse explicit zeros alike; dense rows only where another row shares their first
    feature), then compared with the first row of their hash."""
    m, n = X.shape
    if m < 2 or n == 0:
        return None
    key = np.random.default_rng(0).integers(0, 2**63, size=n, dtype=np.uint64)  # per column
    step = max(1, 2**20 // n)  # dense rows in blocks: no m x n temporary
    if issparse(X):
        X, rows = canonical_csr(X), np.arange(m)
        sums = np.zeros(X.nnz + 1, dtype=np.uint64)
        # an explicitly stored zero adds 0, as an absent entry does: such rows are identical to their twins
        np.cumsum(np.where(X.data != 0, _mix64((X.data + 0.0).view(np.uint64) ^ key[X.indices]), np.uint64(0)),
                  out=sums[1:])
        h = sums[X.indptr[1:]] - sums[X.indptr[:-1]]
    else:
        X = np.ascontiguousarray(X, dtype=np.float64)
        _, inv, counts = np.unique(X[:, 0] + 0.0, return_inverse=True, return_counts=True)
        rows = np.flatnonzero(counts[inv.reshape(-1)] > 1)  # a row whose first feature no other row has is distinct
        h = np.empty(rows.size, dtype=np.uint64)
        for lo in range(0, rows.size, step):
            bits = (X[rows[lo:lo + step]] + 0.0).view(np.uint64)
            h[lo:lo + step] = _mix64(bits ^ key).sum(axis=1, dtype=np.uint64)
    _, first, inv, counts = np.unique(h, return_index=True, return_inverse=True, return_counts=True)
    shared = counts[inv.reshape(-1)] > 1
    twins, same = rows[shared], rows[first[inv.reshape(-1)[shared]]]
    if issparse(X):  # sparse rows compared at once, O(nnz)
        step = max(1, twins.size)
    for lo in range(0, twins.size, step):  # a hash shared by different rows: those keep their own
        r, f = twins[lo:lo + step], same[lo:lo + step]
        equal = np.diff((X[r] != X[f]).indptr) == 0 if issparse(X) else (X[r] == X[f]).all(axis=1)
        same[lo:lo + step] = np.where(equal, f, r)
    if not (same != twins).any():
        return None
    first_row = np.arange(m)
    first_row[twins] = same
    return first_row


def _mix64(z):
    """splitmix64's finaliser of uint64 ``z``: every input bit reaches every output bit."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def semidefinite_by_construction(spec):
    """Whether the kernel of ``spec`` (None: precomputed) is positive semidefinite whatever the data: rbf, and poly
    with coef0 >= 0 and an integer degree (linear too)."""
    return spec is not None and (spec.kind in ("rbf", "linear") or spec.kind == "poly" and spec.coef0 >= 0
                                 and float(spec.degree).is_integer())


def pivoted_cholesky(K, learner):
    """K = P L L^T P^T (dpstrf, rank r at LAPACK's tolerance m u max K_ii): (L[:r], Z = P L, piv, r), after
    :func:`_check_semidefinite` (``learner`` names the caller in its error)."""
    factor, piv, rank, _ = scipy.linalg.lapack.dpstrf(K, lower=1)
    L = np.tril(factor)[:, :rank]
    Z = np.empty((L.shape[0], rank))
    Z[piv - 1] = L
    _check_semidefinite(K, Z, piv[rank:] - 1, learner)
    return L, Z, piv, rank


def _float32_entries(K, block_bytes):
    """Whether every entry of K is a float32 number (by blocks of rows; a float64 kernel fails on its first block)."""
    step = max(1, block_bytes // (4 * max(1, K.shape[1])))
    with np.errstate(over="ignore"):  # entries beyond float32's range become inf: not float32 numbers
        return all(np.array_equal(K[lo:lo + step].astype(np.float32), K[lo:lo + step])
                   for lo in range(0, K.shape[0], step))


def _check_semidefinite(K, Z, left_out, learner, block_bytes=2**25):
    """Refuse a kernel matrix that is clearly not positive semidefinite (F unbounded below): a negative diagonal entry
    of K - Z Z^T (what dpstrf left out, ~0 for a semidefinite K) or a large entry of its only non-zero block R, on the
    rows and columns ``left_out`` (a semidefinite R has |R_ij| <= sqrt(R_ii R_jj); [[0, a], [a, 0]] a zero diagonal):
    a direction of negative curvature the factor drops (large-margin-and-boosting.md).  O(|left_out|^2 r) by blocks."""
    residual = np.diag(K) - np.einsum("ij,ij->i", Z, Z)
    # the precision of the entries: a Gram matrix computed in float32 (every entry a float32 number) is semidefinite
    # only to float32 rounding (e.g. -6e-6 next to 260), which the other kernel learners accept
    eps = np.finfo(np.float32 if _float32_entries(K, block_bytes) else np.float64).eps
    tol = np.sqrt(eps) * float(np.max(np.abs(np.diag(K)), initial=0.0))
    bad = min(residual.min(initial=0.0), 0.0)  # an entry of K - Z Z^T a semidefinite K cannot leave
    step = max(1, block_bytes // (8 * max(1, left_out.size)))
    for lo in range(0, left_out.size if bad >= -tol else 0, step):
        rows = left_out[lo:lo + step]
        R = K[np.ix_(rows, left_out)] - Z[rows] @ Z[left_out].T
        bad = R.flat[np.abs(R).argmax()]
        if abs(bad) > tol:
            break
    if abs(bad) > tol:
        raise ValueError(
            f"{learner}: the kernel matrix is not positive semidefinite (K less its pivoted Cholesky part, ~0 for a "
            f"semidefinite kernel, holds {bad:.3g}); ||h||_K^2 needs a positive semidefinite kernel.  Pass a "
            "semidefinite precomputed kernel (e.g. with its negative eigenvalues clipped to 0), or a 'poly' kernel "
            "with coef0 >= 0.")
