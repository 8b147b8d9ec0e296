"""Four concurrent Gaussian RankRLS fits in Python threads against the same four fits run one
after another, without and with fastrank's thread policy (``fastrank._threads.compute_region``),
measured in one run.

    python benchmarks/ratios_threads.py [--m 1500] [--repeats 3] [--n-jobs 1]
    python benchmarks/ratios_threads.py --scaling [--threads 1,2] [--repeats 3]

--scaling: the thread-scaling curve instead -- each workload (Gaussian fits, exact linear and
Gaussian cross-validation, and fits of the other learners) at n_jobs = 1, 2, ... cores and at the default n_jobs=None, wall and
process CPU time, speed-up = wall(n_jobs=1) / wall(n_jobs=k) (configurations interleaved).

Ratio = wall time of the four concurrent fits / wall time of the four serial fits (lower is better;
<= 1 means concurrency does not hurt); the CPU-time columns (process time of all threads) show the
work burnt by oversubscription (spinning BLAS threads), which wall time hides on a shared machine
where more threads simply take a larger share of the cores from other processes.  "policy off" is how the solvers behave when nothing limits
BLAS threads; "policy on" wraps each fit in ``compute_region`` the way the solver layer does.
"""

import argparse
import sys
import threading
import time

import numpy as np

import fastrank
from fastrank._threads import compute_region
from fastrank._validation import check_n_jobs

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from common import dense_regression  # noqa: E402


N_JOBS = None  # --n-jobs: each fit's thread count (1: two fits' regions run side by side on 2 cores)


def fit(X, y, policy):
    est = fastrank.RankRLS(alpha=1.0, kernel="rbf", gamma=1.0 / X.shape[1], solver="dual", n_jobs=N_JOBS)
    if policy:
        with compute_region(check_n_jobs(est.n_jobs)):
            return est.fit(X, y)
    return est.fit(X, y)


def serial(data, policy):
    t, u = time.perf_counter(), time.process_time()
    out = [fit(X, y, policy) for X, y in data]
    return (time.perf_counter() - t, time.process_time() - u), out


def concurrent(data, policy):
    out = [None] * len(data)

    def run(i):
        out[i] = fit(*data[i], policy)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(data))]
    t, u = time.perf_counter(), time.process_time()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return (time.perf_counter() - t, time.process_time() - u), out


def scaling_workloads():
    """(name, callable(n_jobs)) pairs: the work whose thread scaling the policy must not spoil."""
    rng = np.random.default_rng(0)
    out = []
    for m in (1000, 2000):
        X, y = dense_regression(m, 20, seed=m)
        out.append((f"Gaussian fit m={m}", lambda n, X=X, y=y: fastrank.RankRLS(
            kernel="rbf", gamma=0.05, solver="dual", n_jobs=n).fit(X, y)))
    X = rng.standard_normal((5000, 136))
    y = rng.integers(0, 5, 5000).astype(float)
    g = np.repeat(np.arange(250), 20)
    out.append(("RankRLSCV linear LQO m=5000 d=136", lambda n: fastrank.RankRLSCV(n_jobs=n).fit(X, y, groups=g)))
    X2 = rng.standard_normal((2000, 50))
    y2 = X2 @ rng.standard_normal(50)
    out.append(("linear LPO all pairs m=2000 d=50", lambda n: fastrank.model_selection.leave_pair_out(
        fastrank.RankRLS(n_jobs=n), X2, y2)))
    X3 = rng.standard_normal((2000, 20))
    y3 = np.sin(X3[:, 0])
    g3 = np.repeat(np.arange(100), 20)
    out.append(("RankRLSCV rbf LQO 31 alphas m=2000", lambda n: fastrank.RankRLSCV(
        alphas=np.logspace(-5, 5, 31), kernel="rbf", gamma=0.05, n_jobs=n).fit(X3, y3, groups=g3)))
    # the other learners' threaded loops: small per-call work, where starting threads can cost more than it saves
    y4 = np.round(X3[:, 0] + np.sin(X3[:, 1]) + 0.5 * rng.standard_normal(2000))
    g4 = np.sort(rng.integers(0, 100, 2000))
    out.append(("RankRLS linear m=2000 100 groups", lambda n: fastrank.RankRLS(n_jobs=n).fit(X3, y4, g4)))
    out.append(("SVRank rbf m=2000 100 groups C=1e4", lambda n: fastrank.SVRank(
        C=1e4, kernel="rbf", n_jobs=n).fit(X3, y4, g4)))
    out.append(("RankBoost m=2000 d=20 100 rounds", lambda n: fastrank.RankBoost(n_jobs=n).fit(X3, y4, g4)))
    out.append(("RankSVM rbf hinge m=2000 100 groups", lambda n: fastrank.RankSVM(
        loss="hinge", kernel="rbf", C=0.1, n_jobs=n).fit(X3, y4, g4)))
    out.append(("RankSVM rbf squared hinge m=1000", lambda n: fastrank.RankSVM(
        kernel="rbf", n_jobs=n).fit(X3[:1000], y4[:1000])))
    # small kernel work, where a second thread in LAPACK or the kernel map costs more than it saves: 20 calls each
    X6, y6, Z6 = X3[:300], y4[:300], rng.standard_normal((300, 20))
    model6 = fastrank.RankRLS(kernel="rbf", gamma=0.05).fit(X3[:1000], y4[:1000])
    for name, make in [("RankRLS rbf", fastrank.RankRLS), ("SVRank rbf", fastrank.SVRank),
                       ("RankSVM rbf hinge", lambda **k: fastrank.RankSVM(C=0.1, **k))]:
        out.append((f"{name} m=300, 20 fits", lambda n, make=make: [
            make(kernel="rbf", gamma=0.05, n_jobs=n).fit(X6, y6) for _ in range(20)]))
    out.append(("rbf predict 300 x 1000 rows, 20 calls", lambda n: [
        model6.set_params(n_jobs=n).predict(Z6) for _ in range(20)]))
    X5, y5 = dense_regression(10000, 20, seed=5)
    g5 = np.sort(rng.integers(0, 100, 10000))
    out.append(("RankSVM linear m=10000 100 groups", lambda n: fastrank.RankSVM(n_jobs=n).fit(X5, np.round(y5), g5)))
    return out


def scaling(thread_counts, repeats):
    print("thread scaling: best of", repeats, "rounds, configurations interleaved; wall / process CPU")
    configs = list(thread_counts) + [None]
    for name, run in scaling_workloads():
        run(1)  # warm-up
        best = {n: (1e9, 1e9) for n in configs}
        for _ in range(repeats):
            for n in configs:
                t, u = time.perf_counter(), time.process_time()
                run(n)
                w, c = time.perf_counter() - t, time.process_time() - u
                best[n] = (min(best[n][0], w), min(best[n][1], c))
        base = best[configs[0]][0]
        cells = "  ".join(f"n_jobs={'None' if n is None else n}: {best[n][0]:.3f}s wall {best[n][1]:.3f}s cpu "
                          f"(x{base / best[n][0]:.2f})" for n in configs)
        print(f"{name:<36} {cells}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--m", type=int, default=1500)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--scaling", action="store_true")
    ap.add_argument("--threads", default=None, help="comma-separated n_jobs values (default: 1 .. cores)")
    ap.add_argument("--n-jobs", type=int, default=None, help="n_jobs of each of the four fits (default None)")
    args = ap.parse_args()
    global N_JOBS
    N_JOBS = args.n_jobs
    if args.scaling:
        import os

        counts = [int(t) for t in args.threads.split(",")] if args.threads else list(range(1, (os.cpu_count() or 1) + 1))
        scaling(counts, args.repeats)
        return
    data = [dense_regression(args.m, 20, seed=s) for s in range(4)]
    fit(*data[0], True)  # warm-up (libraries, thread pools)
    print(f"4 Gaussian dual fits, m={args.m}, d=20, n_jobs={N_JOBS}; best of {args.repeats} rounds (configurations "
          "interleaved)")
    print(f"{'policy':<8} {'serial':>9} {'concurrent':>11} {'wall ratio':>11} {'cpu serial':>11} "
          f"{'cpu concurrent':>15} {'cpu ratio':>10}")
    times = {(p, k): [] for p in (False, True) for k in ("serial", "concurrent")}
    for _ in range(args.repeats):  # every configuration once per round: load changes hit all alike
        for policy in (False, True):
            s, ref = serial(data, policy)
            c, got = concurrent(data, policy)
            times[policy, "serial"].append(s)
            times[policy, "concurrent"].append(c)
            for a, b in zip(ref, got):  # the concurrent fits are the serial fits
                np.testing.assert_allclose(a.dual_coef_, b.dual_coef_, rtol=1e-9, atol=1e-12)
    for policy in (False, True):
        s = min(times[policy, "serial"])
        c = min(times[policy, "concurrent"])
        print(f"{'on' if policy else 'off':<8} {s[0]:8.3f}s {c[0]:10.3f}s {c[0] / s[0]:11.2f} {s[1]:10.3f}s "
              f"{c[1]:14.3f}s {c[1] / s[1]:10.2f}")

if __name__ == "__main__":
    main()
