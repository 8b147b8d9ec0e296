"""Seeded, cached data generators shared by the benchmark modules and ratio scripts."""

import functools
import time

import numpy as np


@functools.lru_cache(maxsize=None)
def dense_regression(m, d, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, d))
    y = X @ rng.normal(size=d) + 0.5 * rng.normal(size=m)
    return X, y


@functools.lru_cache(maxsize=None)
def grouped_regression(m, d, n_groups, seed=0):
    X, y = dense_regression(m, d, seed)
    groups = np.random.default_rng(seed + 1).integers(0, n_groups, size=m)
    return X, y, groups


def ordinal_stream(T, d, k=5, seed=0):
    """A linear ordinal stream: labels 1..k from quantiles of a noisy linear score."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(T, d))
    s = X @ rng.normal(size=d)
    y = np.digitize(s + 2.0 * rng.normal(size=T), np.quantile(s, np.linspace(0, 1, k + 1)[1:-1])) + 1
    return X, y


def numpy_gaussian_kernel(X, gamma):
    """The yardstick kernel: squared norms + one GEMM + exp, as a numpy user would write it."""
    sq = np.einsum("ij,ij->i", X, X)
    D = sq[:, None] + sq[None, :] - 2.0 * (X @ X.T)
    np.maximum(D, 0.0, out=D)
    return np.exp(-gamma * D, out=D)


def best_time(fn, repeat=3, clock=time.perf_counter):
    """Best time of `repeat` runs (seconds): wall time, or process CPU time with
    ``clock=time.process_time`` (a loaded machine inflates wall time, not CPU time)."""
    best = np.inf
    for _ in range(repeat):
        t0 = clock()
        fn()
        best = min(best, clock() - t0)
    return best
