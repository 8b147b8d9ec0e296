"""Seeded synthetic data for the large-scale benchmarks (shared by bench_large.py and ratios_large.py)."""

import numpy as np
import scipy.sparse as sp


def zipf_csr(m=50_000, n=20_000, nnz_per_row=30, seed=0, exponent=1.1):
    """CSR (m, n) with ~nnz_per_row non-zeros per row; column popularity ~ 1 / rank^exponent."""
    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, n + 1) ** exponent
    p /= p.sum()
    perm = rng.permutation(n)
    rows = np.repeat(np.arange(m), nnz_per_row)
    cols = perm[rng.choice(n, size=m * nnz_per_row, p=p)]
    vals = rng.random(m * nnz_per_row)
    X = sp.csr_matrix((vals, (rows, cols)), shape=(m, n))
    X.sum_duplicates()
    y = X @ rng.normal(size=n) + 0.1 * rng.normal(size=m)
    groups = rng.integers(0, 1000, size=m)
    return X, y, groups
