"""Print the cost of fastrank's blocked dense Cholesky against one LAPACK dpotrf call, measured in
one run (both through SciPy's bundled OpenBLAS, same threads):

    python benchmarks/ratios_cholesky.py [n ...]     (default n = 3000 6000 12000)

fastrank factorizes orders above ``_core.cholesky_panel`` by panels (dpotrf + dtrsm + dsyrk)
because one dpotrf call segfaults with 2 threads from n ~ 15,900; the yardstick is
``scipy.linalg.cho_factor`` (one dpotrf), so n stays below the crash size.  Prints wall and
process-CPU ratios (ours / SciPy); the runs are interleaved so both see the same load.
"""

import sys
import time

import numpy as np
import scipy.linalg

from fastrank import _core


def spd(n, seed=0):
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(n, 64))
    G = A @ A.T
    G[np.diag_indices(n)] += n
    return np.asfortranarray(G)


def timed(fn, G):
    work = G.copy(order="F")
    w, c = time.perf_counter(), time.process_time()
    fn(work)
    return time.perf_counter() - w, time.process_time() - c


def main(sizes):
    print(f"panel = {_core.cholesky_panel}")
    for n in sizes:
        G = spd(n)
        ours = lambda a: _core.cholesky_lower(a)  # noqa: E731
        ref = lambda a: scipy.linalg.cho_factor(a, lower=True, overwrite_a=True, check_finite=False)  # noqa: E731
        best = {"ours": (np.inf, np.inf), "scipy": (np.inf, np.inf)}
        for _ in range(3):
            for name, fn in (("ours", ours), ("scipy", ref)):
                w, c = timed(fn, G)
                best[name] = (min(best[name][0], w), min(best[name][1], c))
        (wo, co), (ws, cs) = best["ours"], best["scipy"]
        print(f"n = {n:6d}: wall {wo:7.2f} s vs {ws:7.2f} s (ratio {wo / ws:.2f}); "
              f"CPU {co:7.2f} s vs {cs:7.2f} s (ratio {co / cs:.2f})")


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [3000, 6000, 12000])
