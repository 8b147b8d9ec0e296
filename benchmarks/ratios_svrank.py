"""SVRank speed against numpy yardsticks measured in the same run (best of a few repeats).

* Linear SVRank on all pairs, m = 10,000 (m^2 = 10^8 ordered pairs, 5 * 10^7 unordered), n = 20:
  time to the default tolerance (relative cutting-plane gap 1e-6), iterations, and the same
  problem with tol=1e-8.  No pair is ever formed.
* ``svrank_path`` over 13 values of C (warm starts) against one fit and 13 cold fits, CPU time,
  one thread (target <= 3x one fit).
* One loss/subgradient oracle call (X w, sort of the residuals, two-pointer counts, X^T g) vs the
  yardstick ``np.argsort(r)`` of m values + ``X @ w`` + ``X.T @ g`` (one pass of X each way);
  target <= 2x.  Also with 100 query groups.

Run:  python benchmarks/ratios_svrank.py [--m 10000] [--n 20]
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

import fastrank
from fastrank import SVRank

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from common import best_time as best, dense_regression  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--m", type=int, default=10000)
    ap.add_argument("--n", type=int, default=20)
    ap.add_argument("--C", type=float, default=100.0)
    ap.add_argument("--epsilon", type=float, default=0.1)
    ap.add_argument("--repeats", type=int, default=20)
    args = ap.parse_args()
    m, n = args.m, args.n
    X, y = dense_regression(m, n)
    X = np.ascontiguousarray(X)
    threads = os.cpu_count() or 1
    print(f"m={m}, n={n}, C={args.C}, epsilon={args.epsilon}, threads={threads}")

    # -- oracle vs argsort + one pass of X each way -------------------------------------------
    w = np.random.default_rng(2).normal(size=n) * 0.1
    offsets = np.array([0, m], dtype=np.int64)
    g = np.random.default_rng(3).integers(-m, m, size=m).astype(float)
    r = X @ w - y

    def yardstick():
        f = X @ w
        np.argsort(f - y)
        X.T @ g

    rows = []
    t_y = best(yardstick, args.repeats)
    t_sort = best(lambda: np.argsort(r), args.repeats)
    for label, nt in (("1 thread", 1), (f"{threads} threads", threads)):
        t_o = best(lambda: fastrank._core.svrank_linear_oracle(X, y, w, np.arange(m), offsets, args.C, args.epsilon, nt),
                   args.repeats)
        rows.append((f"oracle, all pairs, {label}", t_o, t_y))
    gi = np.sort(np.random.default_rng(4).integers(0, 100, size=m))
    goffsets = np.concatenate([[0], np.cumsum(np.bincount(gi, minlength=100))]).astype(np.int64)
    t_o = best(lambda: fastrank._core.svrank_linear_oracle(X, y, w, np.arange(m), goffsets, args.C, args.epsilon, threads),
               args.repeats)
    rows.append(("oracle, 100 query groups", t_o, t_y))
    print(f"np.argsort alone: {t_sort * 1e3:.3f} ms; yardstick argsort + X@w + X.T@g: {t_y * 1e3:.3f} ms")
    for label, t_o, t_ref in rows:
        print(f"{label:34s} {t_o * 1e3:8.3f} ms   ratio {t_o / t_ref:5.2f}  (target <= 2)")

    # -- full fits -----------------------------------------------------------------------------
    # Wall time on a shared machine includes waiting for a core; process CPU time is printed too.
    def timed_fit(est, *fit_args):
        t0, c0 = time.perf_counter(), time.process_time()
        est.fit(*fit_args)
        return est, time.perf_counter() - t0, time.process_time() - c0

    for tol in (1e-6, 1e-8):
        est, t, c = timed_fit(SVRank(C=args.C, epsilon=args.epsilon, tol=tol, max_iter=5000), X, y)
        print(f"fit, all pairs, tol={tol:g}: wall {t:.3f} s, CPU {c:.3f} s, {est.n_iter_} iterations "
              f"(CPU {c / est.n_iter_ * 1e3:.2f} ms each = {c / est.n_iter_ / t_y:.2f} x yardstick), "
              f"objective {est.objective_:.8g}, gap {est.gap_:.2e}, train score {est.score(X, y):.4f}")
    groups = np.random.default_rng(4).integers(0, 100, size=m)
    est, t, c = timed_fit(SVRank(C=args.C, epsilon=args.epsilon), X, y, groups)
    print(f"fit, 100 query groups, tol=1e-06: wall {t:.3f} s, CPU {c:.3f} s, {est.n_iter_} iterations, "
          f"gap {est.gap_:.2e}")
    mk = min(2000, m)  # the kernel rows: the first 2000 (all of a smaller --m)
    Xk, yk = X[:mk], y[:mk]
    est, t, c = timed_fit(SVRank(C=1e4, epsilon=args.epsilon, kernel="rbf", gamma=1.0 / n), Xk, yk)
    print(f"fit, Gaussian kernel, C=1e4, m={mk}, tol=1e-06: wall {t:.3f} s, CPU {c:.3f} s, {est.n_iter_} iterations, "
          f"gap {est.gap_:.2e}")

    # -- a C grid of 13 values (C * 10^-3 .. C * 10^3): svrank_path (warm starts: solution and cut
    # model carried from C to C) over one fit at the middle C (target <= 3x), and 13 cold fits --------
    Cs = args.C * np.logspace(-3, 3, 13)

    c_one = best(lambda: SVRank(C=args.C, epsilon=args.epsilon, n_jobs=1).fit(X, y), 3, time.process_time)
    c_path = best(lambda: fastrank.svrank_path(X, y, Cs, epsilon=args.epsilon, n_jobs=1), 2, time.process_time)
    c_cold = best(lambda: [SVRank(C=C, epsilon=args.epsilon, n_jobs=1).fit(X, y) for C in Cs], 1, time.process_time)
    path = fastrank.svrank_path(X, y, Cs, epsilon=args.epsilon, n_jobs=1)
    print(f"svrank_path, 13 C, all pairs, 1 thread: CPU {c_path:.3f} s = {c_path / c_one:.2f} x one fit "
          f"({c_one:.3f} s; target <= 3); 13 cold fits {c_cold / c_one:.2f} x; planes per C "
          f"{[e.n_iter_ for e in path]}")

    # -- kernel SVRank on graded targets in query groups vs one RankRLS Gaussian fit ------------
    # (the slow case of the cutting-plane master: hundreds of active planes at large C); target:
    # kernel SVRank at m = 2,000 within 20x one RankRLS fit.
    rng = np.random.default_rng(7)
    yq = np.clip(np.round(yk - np.median(yk) + 2 + 0.3 * rng.normal(size=mk)), 0, 4)  # grades 0..4
    gq = np.sort(rng.integers(0, 200, size=mk))
    _, t_rls, c_rls = timed_fit(fastrank.RankRLS(kernel="rbf", gamma=1.0 / n), Xk, yq, gq)
    print(f"RankRLS rbf, m={mk}, 200 queries: wall {t_rls:.3f} s, CPU {c_rls:.3f} s")
    for C in (1e2, 1e4):
        est, t, c = timed_fit(SVRank(C=C, epsilon=args.epsilon, kernel="rbf", gamma=1.0 / n), Xk, yq, gq)
        print(f"SVRank rbf, m={mk}, 200 queries, graded 0..4, C={C:g}: wall {t:.3f} s, CPU {c:.3f} s, "
              f"{est.n_iter_} planes, gap {est.gap_:.2e}; CPU ratio to RankRLS {c / c_rls:.1f} (target <= 20)")


if __name__ == "__main__":
    main()
