"""Fast-by-default exact cross-validation: the ratios of linear leave-pair-out / leave-query-out,
Gaussian leave-query-out selection and default-vs-one-thread RankRLSCV against numpy doing the
yardstick work, measured in one run.

    python benchmarks/ratios_fastcv.py [lpo lqo glqo cvthreads] [--cpu]

Cases (targets):
* lpo: leave_pair_out(RankRLS, linear) over all pairs, m = 2000, d = 50  vs  X @ B (B: d x m)  (<= 3)
* lqo: leave_group_out(RankRLS, linear), m = 20000 in 1000 queries, d = 50  vs  X.T @ X + one
  d x d solve  (<= 5)
* glqo: RankRLSCV(31 alphas, rbf) with query groups (leave-query-out), m = 2000 in 100 queries
  vs one numpy.linalg.eigh of the kernel  (<= 1)
* cvthreads: RankRLSCV linear leave-query-out, m = 5000, d = 136 in 250 queries, default n_jobs vs
  n_jobs=1  (<= 1.2)

Default: wall time with the default threads (best of repeats).  --cpu: every BLAS pool limited to
one thread and fastrank's n_jobs=1, ratios on process CPU time (time.process_time), which measures
the work and is far less sensitive to other load on a shared machine than wall time.
"""

import sys
import time

import numpy as np

import fastrank
from fastrank import _core
from fastrank import model_selection as ms
from fastrank._validation import group_index

CPU = "--cpu" in sys.argv
CLOCK = time.process_time if CPU else time.perf_counter
N_JOBS = 1 if CPU else None


def best(fn, rep=3):
    t = 1e9
    for _ in range(rep):
        s = CLOCK()
        fn()
        t = min(t, CLOCK() - s)
    return t


def main(which):
    rng = np.random.default_rng(0)
    if "lpo" in which:
        m, d = 2000, 50
        X = rng.standard_normal((m, d))
        y = X @ rng.standard_normal(d) + rng.standard_normal(m)
        B = rng.standard_normal((d, m))
        est = fastrank.RankRLS(alpha=1.0, n_jobs=N_JOBS)
        a = best(lambda: ms.leave_pair_out(est, X, y), 3)
        b = best(lambda: X @ B, 5)
        print(f"linear LPO m=2000 d=50: {a:.4f}s; X@B {b:.4f}s; ratio {a / b:.1f} (target <=3)")
    if "lqo" in which:
        m, d, q = 20000, 50, 1000
        X = rng.standard_normal((m, d))
        y = X @ rng.standard_normal(d) + rng.standard_normal(m)
        g = np.repeat(np.arange(q), m // q)
        est = fastrank.RankRLS(alpha=1.0, n_jobs=N_JOBS)
        gi = group_index(g, m)
        args = (X, y[:, None].copy(), gi.order, gi.offsets, np.ones(q), 1.0, 1)
        a, b, c = [], [], []
        for _ in range(3):  # interleaved: load on a shared machine hits all three alike
            a.append(best(lambda: ms.leave_group_out(est, X, y, g), 3))
            c.append(best(lambda: _core.cv_feature_leave_group_out(*args), 3))
            b.append(best(lambda: np.linalg.solve(X.T @ X + np.eye(d), X.T @ y), 5))
        a, b, c = min(a), min(b), min(c)
        print(f"linear LQO m=20000 q=1000: {a:.4f}s (C++ core, one thread: {c:.4f}s); XtX+solve {b:.4f}s; "
              f"ratio {a / b:.2f} (target <=5), core alone {c / b:.2f}")
    if "glqo" in which:
        m, d, q = 2000, 20, 100
        X = rng.standard_normal((m, d))
        y = np.sin(X[:, 0]) + 0.1 * rng.standard_normal(m)
        g = np.repeat(np.arange(q), m // q)
        alphas = np.logspace(-5, 5, 31)
        cv = fastrank.RankRLSCV(alphas=alphas, kernel="rbf", gamma=0.05, n_jobs=N_JOBS)
        K = np.exp(-0.05 * ((X[:, None, :] - X[None]) ** 2).sum(-1))
        fits, eighs = [], []
        for _ in range(3):  # interleaved: load on a shared machine hits both alike
            fits.append(best(lambda: cv.fit(X, y, groups=g), 1))
            eighs.append(best(lambda: np.linalg.eigh(K), 1))
        a, b = min(fits), min(eighs)
        print(f"Gaussian LQO 31 alphas m=2000: {a:.3f}s; eigh {b:.3f}s; ratio {a / b:.2f} (target <=1); "
              f"per-repeat ratios {' '.join(f'{f / e:.2f}' for f, e in zip(fits, eighs))}")
    if "cvthreads" in which:
        m, d, q = 5000, 136, 250
        X = rng.standard_normal((m, d))
        y = rng.integers(0, 5, m).astype(float)
        g = np.repeat(np.arange(q), m // q)
        one, default = [], []
        for _ in range(3):  # interleaved
            one.append(best(lambda: fastrank.RankRLSCV(n_jobs=1).fit(X, y, groups=g), 1))
            default.append(best(lambda: fastrank.RankRLSCV().fit(X, y, groups=g), 1))
        a, b = min(default), min(one)
        print(f"RankRLSCV linear LQO m=5000: default {a:.3f}s; n_jobs=1 {b:.3f}s; ratio {a / b:.2f} (target <=1.2)")


if __name__ == "__main__":
    names = [a for a in sys.argv[1:] if not a.startswith("--")] or ["lpo", "lqo", "glqo", "cvthreads"]
    if CPU:
        from threadpoolctl import threadpool_limits

        import scipy.linalg.cython_lapack  # noqa: F401  (SciPy's OpenBLAS loaded before the limit)

        with threadpool_limits(1):
            main(names)
    else:
        main(names)
