"""Kernels: the resolved kernel specification every learner shares (scikit-learn's
conventions), and kernel blocks / blocked predictions for dense or sparse rows."""

from __future__ import annotations

import numbers

import numpy as np

from . import _core
from ._sparse import canonical_csr, issparse, row_sq_norms
from ._validation import check_n_jobs

__all__ = ["KernelSpec", "resolve_kernel", "KERNELS", "kernel_block", "predict_basis"]

KERNELS = ("linear", "rbf", "gaussian", "poly", "polynomial", "precomputed")
_KIND = {"linear": 0, "rbf": 1, "gaussian": 1, "poly": 2, "polynomial": 2}


class KernelSpec:
    """A resolved kernel: ``kind`` in {"linear", "rbf", "poly", "precomputed"} plus parameters.

    * linear: ``k(x, z) = x . z``
    * rbf / gaussian: ``k(x, z) = exp(-gamma |x - z|^2)``, gamma defaults to 1 / n_features
    * poly / polynomial: ``k(x, z) = (gamma x . z + coef0) ** degree``, gamma defaults to 1 / n_features
    * precomputed: X is the kernel matrix itself (fit: (m, m); predict: (p, m) against training rows)
    """

    __slots__ = ("kind", "gamma", "degree", "coef0")

    def __init__(self, kind, gamma, degree, coef0):
        self.kind, self.gamma, self.degree, self.coef0 = kind, gamma, degree, coef0

    @property
    def precomputed(self):
        return self.kind == "precomputed"

    @property
    def linear(self):
        return self.kind == "linear"

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


def resolve_kernel(kernel, gamma, degree, coef0, n_features):
    if not isinstance(kernel, str) or kernel not in KERNELS:
        raise ValueError(f"Unknown kernel {kernel!r}; choose one of {', '.join(KERNELS)}")
    kind = {"gaussian": "rbf", "polynomial": "poly"}.get(kernel, kernel)
    if kind in ("rbf", "poly"):
        if gamma is None:
            gamma = 1.0 / n_features
        if isinstance(gamma, (bool, np.bool_)) or not isinstance(gamma, numbers.Real) or not np.isfinite(gamma) \
                or gamma <= 0:
            raise ValueError(f"gamma must be a positive finite number or None, got {gamma!r}")
    else:
        gamma = 1.0 if gamma is None else gamma
    if kind == "poly":
        if isinstance(degree, (bool, np.bool_)) or not isinstance(degree, numbers.Real) or degree < 0 \
                or not np.isfinite(degree):
            raise ValueError(f"degree must be a non-negative number, got {degree!r}")
        if not isinstance(coef0, numbers.Real) or not np.isfinite(coef0):
            raise ValueError(f"coef0 must be a finite number, got {coef0!r}")
    return KernelSpec(kind, float(gamma), float(degree), float(coef0))


def kernel_block(spec, Z, XR, n_threads=1):
    """K(Z, XR) as a Fortran-ordered (p, r) array; Z and XR dense arrays or scipy.sparse matrices
    (never densified: inner products are sparse x sparse, Gaussian distances use row norms)."""
    if not issparse(Z) and not issparse(XR):
        return spec.cross(np.ascontiguousarray(Z, dtype=np.float64), np.ascontiguousarray(XR, dtype=np.float64),
                          n_threads)
    Zc = canonical_csr(Z) if issparse(Z) else np.ascontiguousarray(Z, dtype=np.float64)
    Xc = canonical_csr(XR) if issparse(XR) else np.ascontiguousarray(XR, dtype=np.float64)
    G = Zc @ Xc.T
    G = G.toarray(order="F") if issparse(G) else np.asfortranarray(G)
    G = np.asfortranarray(G, dtype=np.float64)
    if spec.kind == "rbf":
        zn, xn = row_sq_norms(Zc), row_sq_norms(Xc)
        G *= -2.0
        G += zn[:, None]
        G += xn[None, :]
        np.maximum(G, 0.0, out=G)
        G *= -spec.gamma
        np.exp(G, out=G)
    elif spec.kind == "poly":
        G *= spec.gamma
        G += spec.coef0
        if spec.degree == int(spec.degree):
            G[...] = G ** int(spec.degree)
        else:
            np.power(G, spec.degree, out=G)
    return G


def predict_basis(Z, X_basis, coef, kernel_spec, n_jobs=None, *, basis_indices=None, block_bytes=2**25):
    """Predictions ``K(Z, X_basis) @ coef``: O(|R|) kernel evaluations per input, in row blocks so
    at most ``block_bytes`` of kernel values exist at once; sparse Z stays sparse.  With a
    precomputed kernel, Z is (p, m) against all training rows and ``basis_indices`` selects the
    basis columns."""
    spec, n_threads = kernel_spec, check_n_jobs(n_jobs)
    coef = np.asarray(coef, dtype=np.float64)
    one_d = coef.ndim == 1
    C = coef.reshape(coef.shape[0], -1)
    if spec.precomputed:
        out = np.asarray(Z[:, basis_indices] @ C)
        return out.reshape(-1) if one_d else out
    if not issparse(Z) and not issparse(X_basis):
        out = spec.predict(np.ascontiguousarray(Z, dtype=np.float64),
                           np.ascontiguousarray(X_basis, dtype=np.float64), C, n_threads)
        return out.reshape(-1) if one_d else out
    p, r = Z.shape[0], C.shape[0]
    block = max(1, int(block_bytes // (8 * max(1, r))))
    out = np.empty((p, C.shape[1]))
    Xb = canonical_csr(X_basis) if issparse(X_basis) else X_basis
    Zc = canonical_csr(Z) if issparse(Z) else Z
    for start in range(0, p, block):
        K = kernel_block(spec, Zc[start:start + block], Xb, n_threads)
        out[start:start + block] = K @ C
    return out.reshape(-1) if one_d else out
