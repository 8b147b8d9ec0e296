"""Print fastrank / yardstick time ratios for the large-scale RankRLS solvers,
measured in one run (best of a few repeats), plus the peak memory of the CG path.

    python benchmarks/ratios_large.py [--quick]
"""

import os
import subprocess
import sys
import tempfile
import textwrap

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_large import gaussian_data, numpy_basis_yardstick, scipy_products, zipf_csr  # noqa: E402

import fastrank  # noqa: E402
from fastrank._solvers import fit_cg, select_basis  # noqa: E402
from fastrank._validation import group_index  # noqa: E402


def paired_best(ours, ref, repeat=7):
    """Best wall times of `ours` and `ref`, run interleaved (ours, ref, ours, ref, ...) so that
    load from other processes affects both alike."""
    import time

    t_ours = t_ref = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        ours()
        t_ours = min(t_ours, time.perf_counter() - t0)
        t0 = time.perf_counter()
        ref()
        t_ref = min(t_ref, time.perf_counter() - t0)
    return t_ours, t_ref


def row(name, ours, ref, target=None):
    ratio = ours / ref
    t = f"(target <= {target}x)" if target else "(info)"
    print(f"{name:<58} {ours:8.3f} s {ref:8.3f} s {ratio:6.2f}x  {t}", flush=True)


def peak_memory_cg(n_jobs):
    """Peak RSS growth (VmHWM reset through /proc/self/clear_refs) of a fresh process during fit_cg,
    after X is loaded (Linux only)."""
    X, y, groups = zipf_csr()
    import scipy.sparse as sp

    with tempfile.TemporaryDirectory() as tmp:
        sp.save_npz(os.path.join(tmp, "X.npz"), X, compressed=False)
        np.save(os.path.join(tmp, "y.npy"), y)
        np.save(os.path.join(tmp, "g.npy"), groups)
        code = textwrap.dedent(f"""
            import numpy as np, scipy.sparse as sp
            from fastrank._solvers import fit_cg
            from fastrank._validation import group_index

            def status(key):
                with open("/proc/self/status") as fh:
                    return next(int(l.split()[1]) * 1024 for l in fh if l.startswith(key))

            X = sp.load_npz({os.path.join(tmp, "X.npz")!r}); y = np.load({os.path.join(tmp, "y.npy")!r})
            gi = group_index(np.load({os.path.join(tmp, "g.npy")!r}), X.shape[0])
            fit_cg(X[:50], y[:50], alpha=1.0, max_iter=2, warn=False)  # warm up imports/allocators
            with open("/proc/self/clear_refs", "w") as fh:
                fh.write("5")  # reset the peak (VmHWM) to the current RSS
            before = status("VmRSS:")
            fit_cg(X, y, group_index=gi, alpha=1.0, tol=0.0, max_iter=200, n_jobs={n_jobs}, warn=False)
            print(status("VmHWM:") - before)
        """)
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    delta = int(out.stdout.strip().splitlines()[-1])
    m, n = X.shape
    x_bytes = X.data.nbytes + X.indices.nbytes + X.indptr.nbytes
    print(f"CG peak memory growth (m={m}, n={n}, nnz={X.nnz}, n_jobs={n_jobs}): {delta / 2**20:.1f} MB "
          f"= {delta / x_bytes:.2f} x the CSR arrays ({x_bytes / 2**20:.1f} MB); "
          f"O(m + n) vectors: {8 * (m + n) / 2**20:.2f} MB each", flush=True)


def main(quick=False):
    n_jobs = 2 if (os.cpu_count() or 1) >= 2 else 1
    print(f"{'case':<58} {'fastrank':>10} {'yardstick':>10} {'ratio':>7}")
    X, y, groups = zipf_csr()
    print(f"# CSR m={X.shape[0]} n={X.shape[1]} nnz/row={X.nnz / X.shape[0]:.1f}, n_jobs={n_jobs}")
    scipy_ref = lambda: scipy_products(X, 200)  # noqa: E731
    for setting, g in (("object ranking", None), ("1,000 query groups", groups)):
        gi = group_index(g, X.shape[0])
        ours, ref = paired_best(lambda: fit_cg(X, y, group_index=gi, alpha=1.0, tol=0.0, max_iter=200,
                                               n_jobs=n_jobs, warn=False), scipy_ref)
        row(f"CG 200 it, {setting} vs 200 x (X@v + X.T@u)", ours, ref, 1.2)
    if not quick:
        gi = group_index(None, X.shape[0])
        for label, kw in (("transposed copy of X", dict(transpose_copy=True)), ("n_jobs=1", dict(n_jobs=1)),
                          ("Jacobi preconditioner", dict(preconditioner="jacobi"))):
            args = dict(group_index=gi, alpha=1.0, tol=0.0, max_iter=200, n_jobs=n_jobs, warn=False)
            args.update(kw)
            ours, ref = paired_best(lambda: fit_cg(X, y, **args), scipy_ref, repeat=3)
            row(f"CG 200 it, object, {label}", ours, ref)
    Xg, yg = gaussian_data()
    basis = select_basis(Xg.shape[0], 500, random_state=0)
    gamma = 1.0 / Xg.shape[1]
    ours, ref = paired_best(
        lambda: fastrank.RankRLS(1.0, kernel="rbf", gamma=gamma, basis_vectors=basis, n_jobs=n_jobs).fit(Xg, yg),
        lambda: numpy_basis_yardstick(Xg, basis, gamma), repeat=3)
    row("sparse RankRLS m=20000 |R|=500 Gaussian vs block+GtG+eigh", ours, ref, 1.5)
    peak_memory_cg(n_jobs)


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
