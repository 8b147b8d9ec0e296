"""Kernel specification shared by the estimators (scikit-learn's kernel conventions)."""

from __future__ import annotations

import numbers

import numpy as np

from . import _core

__all__ = ["KernelSpec", "resolve_kernel", "KERNELS"]

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
