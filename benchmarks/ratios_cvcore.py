"""Ratios of the tridiagonal path and the Cholesky (inverse-block) hold-outs against numpy
yardsticks, measured in one run with the runs interleaved, plus peak memory per route.

    python benchmarks/ratios_cvcore.py [--quick] [--no-memory]   (--quick: no m = 4000, memory at m = 1000)

Cases (derivations and measurements: docs/design/exact-cv.md):
* 31-alpha path, Gaussian, m = 2000 / 4000: rankrls_dual_scores_tridiag (S K S reduced once by
  dsytrd) vs one numpy.linalg.eigh of the same m x m matrix (target <= 0.6x).  The eigen route
  (rankrls_dual_scores) is shown beside it.
* Leave-pair-out, all pairs, one alpha, m = 1000 / 2000 / 4000: kernel + cv_object_lpo_inverse vs
  numpy Gaussian kernel + one eigh (target <= 0.5x).
* Leave-group-out, m = 2000 in 100 groups: kernel + cv_leave_group_out_inverse vs one RankRLS fit
  with the same groups (target <= 1.6x).
* Linear leave-group-out, 50 features, m = 2000 in 100 groups: fastrank._holdout (p x p systems)
  vs the dense route model_selection.leave_group_out(kernel="linear", solver="dual")
  (target: >= 10x faster, no m x m matrix).
Peak memory: VmHWM of a fresh subprocess per route above its baseline, in m x m float64 matrices.

--cpu: every BLAS pool and fastrank limited to ONE thread and the ratios taken on process CPU
time (time.process_time), which measures the work and is far less sensitive to other load on a
shared machine than wall time; without it, wall time with 2 threads (best of interleaved runs).
"""

import json
import subprocess
import sys
import time

import numpy as np

import fastrank
from fastrank import _core, _holdout
from fastrank import model_selection as ms

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from common import best_time, dense_regression, grouped_regression, numpy_gaussian_kernel  # noqa: E402

GAMMA = 1.0 / 50
NT = 2            # fastrank threads (1 with --cpu)
CLOCK = None      # None: wall time; else time.process_time


def paired(fns, repeat):
    """Best time of each callable, runs interleaved so all see the same machine load."""
    best = [np.inf] * len(fns)
    for _ in range(repeat):
        for k, fn in enumerate(fns):
            if CLOCK is None:
                best[k] = min(best[k], best_time(fn, 1))
            else:
                t0 = CLOCK()
                fn()
                best[k] = min(best[k], CLOCK() - t0)
    return best


def row(name, ours, ref, target):
    print(f"{name:<58} {ours:9.3f} s {ref:9.3f} s {ours / ref:7.2f}x   (target {target})", flush=True)


def kernel(X):
    return fastrank._kernels.resolve_kernel("rbf", GAMMA, 3, 1.0, X.shape[1]).train(np.ascontiguousarray(X), NT)


def one_group(m):
    """The core's group arguments (order, offsets, pair_weight) of object ranking."""
    return np.arange(m), np.array([0, m], np.int64), np.ones(1)


def path_cases(sizes):
    alphas = np.logspace(-3, 3, 31)
    for m in sizes:
        X, y = dense_regression(m, 50)
        K0 = kernel(X)
        Y = y[:, None]
        # the yardstick decomposes the same S K S matrix the solver reduces
        S = np.eye(m) - 1.0 / m
        SKS = np.sqrt(m) * S @ K0 @ S * np.sqrt(m)
        rep = 1 if m >= 4000 else 2
        t_tri, t_eig_route, t_eigh = paired([
            lambda: _core.rankrls_dual_scores_tridiag(K0.copy(order="F"), *one_group(m), Y, alphas, NT),
            lambda: _core.rankrls_dual_scores(K0.copy(order="F"), *one_group(m), Y, alphas, NT),
            lambda: np.linalg.eigh(SKS),
        ], rep)
        row(f"31-alpha path m={m}: tridiagonal route vs eigh", t_tri, t_eigh, "<= 0.6x")
        row(f"31-alpha path m={m}: eigendecomposition route vs eigh", t_eig_route, t_eigh, "(before)")
        A1, _ = _core.rankrls_dual_scores_tridiag(K0.copy(order="F"), *one_group(m), Y, alphas, NT)
        A2, _ = _core.rankrls_dual_scores(K0.copy(order="F"), *one_group(m), Y, alphas, NT)
        P1, P2 = K0 @ A1, K0 @ A2
        print(f"    max relative difference of the predictions, tridiagonal vs eigen route: "
              f"{np.max(np.abs(P1 - P2)) / np.max(np.abs(P2)):.1e}", flush=True)


def lpo_cases(sizes):
    for m in sizes:
        X, y = dense_regression(m, 50)
        Y = np.asfortranarray(y[:, None])
        i, j = np.triu_indices(m, 1)
        pairs = np.ascontiguousarray(np.stack([i, j], 1).astype(np.int64))
        del i, j
        est = fastrank.RankRLS(alpha=1.0, kernel="rbf", gamma=GAMMA, n_jobs=NT)
        rep = 1 if m >= 4000 else 2
        t_new, t_old, t_ref = paired([
            lambda: _core.cv_object_lpo_inverse(kernel(X), 1.0, 1.0, Y, pairs, NT),
            lambda: ms.leave_pair_out(est, X, y),
            lambda: np.linalg.eigh(numpy_gaussian_kernel(X, GAMMA)),
        ], rep)
        row(f"LPO all pairs m={m}: Cholesky route vs numpy kernel+eigh", t_new, t_ref, "<= 0.5x")
        row(f"LPO all pairs m={m}: leave_pair_out today vs numpy kernel+eigh", t_old, t_ref, "(before)")
        out = _core.cv_object_lpo_inverse(kernel(X), 1.0, 1.0, Y, pairs, NT)
        ref = ms.leave_pair_out(est, X, y)
        print(f"    max relative difference vs leave_pair_out today: "
              f"{np.max(np.abs(out - ref)) / np.max(np.abs(ref)):.1e}", flush=True)
        del pairs, out, ref


def lgo_cases():
    m = 2000
    X, y, groups = grouped_regression(m, 50, 100)
    gi = fastrank._validation.group_index(groups, m)
    Xg = np.ascontiguousarray(X[gi.order])
    Yg = np.asfortranarray(y[gi.order][:, None])
    est = fastrank.RankRLS(alpha=1.0, kernel="rbf", gamma=GAMMA, n_jobs=NT)
    t_new, t_old, t_fit = paired([
        lambda: _core.cv_leave_group_out_inverse(kernel(Xg), gi.order, gi.offsets, np.ones(gi.n_groups), 1.0, Yg, NT),
        lambda: ms.leave_group_out(est, X, y, groups),
        lambda: est.fit(X, y, groups),
    ], 3)
    row("LGO m=2000, 100 groups: inverse-block route vs one fit", t_new, t_fit, "<= 1.6x")
    row("LGO m=2000, 100 groups: leave_group_out today vs one fit", t_old, t_fit, "(before)")

    lin = fastrank.RankRLS(alpha=1.0, kernel="linear", solver="dual")
    t_feat, t_dense = paired([
        lambda: _holdout.feature_leave_group_out(X, y, gi.codes, gi.n_groups, 1.0),
        lambda: ms.leave_group_out(lin, X, y, groups),
    ], 3)
    row("linear LGO m=2000, 50 features, 100 groups: p x p route vs dense", t_feat, t_dense, ">= 10x faster")
    a = _holdout.feature_leave_group_out(X, y, gi.codes, gi.n_groups, 1.0)[:, 0]
    b = ms.leave_group_out(lin, X, y, groups)
    print(f"    max relative difference vs the dense route: {np.max(np.abs(a - b)) / np.max(np.abs(b)):.1e}",
          flush=True)


def grid_cases(m):
    """LPO scored over an alpha grid (RankRLSCV): eigen route = one eigendecomposition + per alpha
    one m x m SYRK (cv_object_prepare) + the pair phase; inverse route = per alpha dpotrf + dpotri +
    the pair phase.  Prints the per-alpha costs and the grid size where the eigen route wins."""
    X, y = dense_regression(m, 50)
    Y = np.asfortranarray(y[:, None])
    i, j = np.triu_indices(m, 1)
    pairs = np.ascontiguousarray(np.stack([i, j], 1).astype(np.int64))
    K = kernel(X)
    V, s = _core.cv_spectral(K, *one_group(m), NT)

    def eigen_alpha():
        M, mu, h = _core.cv_object_prepare(K, V, s, 1.0, 1.0, Y)
        _core.cv_object_lpo_disagreement(M, mu, h, Y, 1.0, pairs, NT)

    t_spec, t_eig_alpha, t_inv_alpha = paired([
        lambda: _core.cv_spectral(K, *one_group(m), NT),
        eigen_alpha,
        lambda: _core.cv_object_lpo_inverse_disagreement(K, 1.0, 1.0, Y, pairs, NT),
    ], 2)
    extra = t_inv_alpha - t_eig_alpha
    cross = f"{t_spec / extra:.0f} alphas" if extra > 0 else "never (the inverse route is cheaper per alpha)"
    print(f"LPO grid m={m}: eigendecomposition {t_spec:.3f} s once; per alpha: eigen route {t_eig_alpha:.3f} s, "
          f"inverse route {t_inv_alpha:.3f} s -> eigen route wins beyond {cross}", flush=True)


MEM_CHILD = r"""
import json, sys
import numpy as np
sys.path.insert(0, sys.argv[3])
import fastrank
from fastrank import _core, _holdout
from fastrank import model_selection as ms
from common import dense_regression, grouped_regression, numpy_gaussian_kernel

def status(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return float(line.split()[1]) / 1024.0
m, route = int(sys.argv[1]), sys.argv[2]
g = 1.0 / 50
spec = fastrank._kernels.resolve_kernel("rbf", g, 3, 1.0, 50)
if route.startswith("lgo") or route.startswith("linlgo") or route == "fit-groups":
    X, y, groups = grouped_regression(m, 50, 100)
else:
    X, y = dense_regression(m, 50)
Y = np.asfortranarray(y[:, None])
pairs = None
if route.startswith("lpo"):
    i, j = np.triu_indices(m, 1)
    pairs = np.ascontiguousarray(np.stack([i, j], 1).astype(np.int64)); del i, j
# reset the high-water mark to the current RSS (Linux >= 4.0), so set-up temporaries do not count
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")
base = status("VmRSS")
if route == "path-tridiag":
    _core.rankrls_dual_scores_tridiag(spec.train(X, 2), np.arange(m), np.array([0, m]), np.ones(1), Y, np.logspace(-3, 3, 31), 2)
elif route == "path-eigen":
    _core.rankrls_dual_scores(spec.train(X, 2), np.arange(m), np.array([0, m]), np.ones(1), Y, np.logspace(-3, 3, 31), 2)
elif route == "eigh":
    np.linalg.eigh(numpy_gaussian_kernel(X, g))
elif route == "lpo-inverse":
    out = _core.cv_object_lpo_inverse(spec.train(X, 2), 1.0, 1.0, Y, pairs, 2)
elif route == "lpo-today":
    out = ms.leave_pair_out(fastrank.RankRLS(alpha=1.0, kernel="rbf", gamma=g), X, y, pairs=pairs)
elif route == "lgo-inverse":
    gi = fastrank._validation.group_index(groups, m)
    _core.cv_leave_group_out_inverse(spec.train(np.ascontiguousarray(X[gi.order]), 2), gi.order, gi.offsets,
                                     np.ones(gi.n_groups), 1.0, np.asfortranarray(Y[gi.order]), 2)
elif route == "lgo-today":
    ms.leave_group_out(fastrank.RankRLS(alpha=1.0, kernel="rbf", gamma=g), X, y, groups)
elif route == "fit-groups":
    fastrank.RankRLS(alpha=1.0, kernel="rbf", gamma=g).fit(X, y, groups)
elif route == "linlgo-features":
    gi = fastrank._validation.group_index(groups, m)
    _holdout.feature_leave_group_out(X, y, gi.codes, gi.n_groups, 1.0)
elif route == "linlgo-dense":
    ms.leave_group_out(fastrank.RankRLS(alpha=1.0, kernel="linear", solver="dual"), X, y, groups)
print(json.dumps({"delta_mb": status("VmHWM") - base, "mxm_mb": 8.0 * m * m / 2**20}))
"""


def memory_cases(m):
    here = __file__.rsplit("/", 1)[0]
    for route in ("eigh", "path-eigen", "path-tridiag", "lpo-today", "lpo-inverse", "fit-groups", "lgo-today",
                  "lgo-inverse", "linlgo-dense", "linlgo-features"):
        out = subprocess.run([sys.executable, "-c", MEM_CHILD, str(m), route, here], capture_output=True,
                             text=True, check=True)
        r = json.loads(out.stdout.strip().splitlines()[-1])
        note = " (includes the (n_pairs, 2) float64 output, ~1 m x m)" if route.startswith("lpo") else ""
        print(f"peak memory m={m} {route:<16}: +{r['delta_mb']:7.0f} MiB = {r['delta_mb'] / r['mxm_mb']:5.2f} "
              f"m x m matrices{note}", flush=True)


def main(quick=False, memory=True, cpu=False):
    global NT, CLOCK
    if cpu:
        from threadpoolctl import threadpool_limits

        threadpool_limits(1)
        NT, CLOCK = 1, time.process_time
        print("single-threaded, process CPU time")
    print(f"{'case':<58} {'fastrank':>11} {'yardstick':>11} {'ratio':>8}")
    path_cases([2000] if quick else [2000, 4000])
    lpo_cases([1000, 2000] if quick else [1000, 2000, 4000])
    lgo_cases()
    grid_cases(1000 if quick else 2000)
    if memory:
        memory_cases(1000 if quick else 2000)


if __name__ == "__main__":
    main(quick="--quick" in sys.argv, memory="--no-memory" not in sys.argv, cpu="--cpu" in sys.argv)
