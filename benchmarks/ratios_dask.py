"""fastrank.dask on a LocalCluster of 2 workers vs the single-machine fastrank, in one run.

    python benchmarks/ratios_dask.py [--rows 2000000] [--features 136] [--queries 20000]
                                     [--chunks 16] [--perm-m 1000] [--perms 1000] [--repeat 3]
                                     [--skip-linear] [--skip-perm]

1. Linear query RankRLS: a dask array of ``--chunks`` row chunks over the SAME in-memory numpy
   data (the cluster runs in this process, ``processes=False``, so no data is copied to the
   workers), ``fastrank.dask.DaskRankRLS`` vs ``fastrank.RankRLS(solver="primal")``; prints both
   times (best of ``--repeat``, interleaved), the ratio and the coefficients' relative difference.
2. Permutation test (Gaussian, m = ``--perm-m``, ``--perms`` permutations):
   ``fastrank.dask.permutation_test_lpo`` (one block per worker) vs
   ``fastrank.model_selection.permutation_test_lpo``, plus the two phases of the single-machine
   run (one decomposition; the pair phase) to extrapolate to more workers.
"""

import argparse
import time

import numpy as np


def paired_best(ours, ref, repeat):
    t_ours = t_ref = np.inf
    out_ours = out_ref = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out_ours = ours()
        t_ours = min(t_ours, time.perf_counter() - t0)
        t0 = time.perf_counter()
        out_ref = ref()
        t_ref = min(t_ref, time.perf_counter() - t0)
    return t_ours, t_ref, out_ours, out_ref


def letor_like(m, n, n_queries, seed=0):
    """Uniform [0, 1) features (LETOR features are normalised per query to [0, 1]), graded
    relevance 0..4 from a noisy linear score, contiguous queries of m / n_queries rows."""
    rng = np.random.default_rng(seed)
    X = rng.random((m, n))
    w = rng.normal(size=n)
    s = X @ w + 0.5 * rng.normal(size=m)
    y = np.digitize(s, np.quantile(s, [0.5, 0.75, 0.9, 0.97])).astype(np.float64)
    groups = (np.arange(m, dtype=np.int64) * n_queries) // m
    return X, y, groups


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--features", type=int, default=136)
    ap.add_argument("--queries", type=int, default=20_000)
    ap.add_argument("--chunks", type=int, default=16)
    ap.add_argument("--perm-m", type=int, default=1000)
    ap.add_argument("--perms", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip-linear", action="store_true")
    ap.add_argument("--skip-perm", action="store_true")
    args = ap.parse_args()

    import dask.array as da
    from distributed import Client, LocalCluster

    import fastrank
    from fastrank import dask as fdask
    from fastrank import model_selection as ms

    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0")
    client = Client(cluster)
    try:
        if not args.skip_linear:
            X, y, groups = letor_like(args.rows, args.features, args.queries)
            # The chunks are handed to the workers once, before timing (as data loaded on a cluster,
            # or X.persist()); in-process workers share the arrays, nothing is copied or pickled.
            Xd = _scattered(client, X, args.chunks)
            yd = _scattered(client, y, args.chunks)
            gd = _scattered(client, groups, args.chunks)
            print(f"linear query RankRLS: {args.rows} x {args.features}, {args.queries} queries, "
                  f"{Xd.numblocks[0]} chunks, 2 workers (processes=False)")
            t_d, t_s, est, ref = paired_best(lambda: fdask.DaskRankRLS(alpha=1.0).fit(Xd, yd, gd),
                                             lambda: fastrank.RankRLS(alpha=1.0, solver="primal").fit(X, y, groups),
                                             args.repeat)
            rel = np.abs(est.coef_ - ref.coef_).max() / np.abs(ref.coef_).max()
            print(f"  dask {t_d:.3f} s   single machine {t_s:.3f} s   ratio {t_d / t_s:.2f} (target <= 2)   "
                  f"coef rel diff {rel:.2e}")
            t_x = min(_timed(lambda: X.T @ X) for _ in range(args.repeat))
            print(f"  (numpy X.T @ X alone: {t_x:.3f} s)")
            del X, Xd, y, groups

        if not args.skip_perm:
            rng = np.random.default_rng(1)
            m = args.perm_m
            Xp = rng.normal(size=(m, 20))
            yp = Xp[:, 0] + np.sin(Xp[:, 1]) + rng.normal(size=m)
            est = fastrank.RankRLS(alpha=1.0, kernel="rbf", gamma=0.05)
            print(f"permutation test: m={m}, {args.perms} permutations, Gaussian kernel, 2 blocks on 2 workers")
            t_d, t_s, out_d, out_s = paired_best(
                lambda: fdask.permutation_test_lpo(est, Xp, yp, args.perms, random_state=0),
                lambda: ms.permutation_test_lpo(est, Xp, yp, args.perms, random_state=0), args.repeat)
            same = out_d[0] == out_s[0] and np.array_equal(out_d[1], out_s[1]) and out_d[2] == out_s[2]
            print(f"  dask {t_d:.3f} s   single machine {t_s:.3f} s   ratio {t_d / t_s:.2f} (target <= 1.3)   "
                  f"identical: {same}")
            t_1 = min(_timed(lambda: ms.permutation_test_lpo(est, Xp, yp, 1, random_state=0))
                      for _ in range(args.repeat))
            pair = max(t_s - t_1, 0.0)
            print(f"  single machine: one decomposition + 1 permutation {t_1:.3f} s; pair phase of "
                  f"{args.perms} permutations ~{pair:.3f} s")
            for w in (2, 4, 8, 16):
                print(f"  model with {w} workers, each with the cores of this machine: ~{t_1 + pair / w:.3f} s "
                      f"(each worker repeats the decomposition, splits the pairs)")
    finally:
        client.close()
        cluster.close()


def _scattered(client, A, n_chunks):
    import dask.array as da

    bounds = np.linspace(0, A.shape[0], n_chunks + 1).astype(int)
    pieces = [A[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
    futures = client.scatter(pieces)
    return da.concatenate([da.from_delayed(f, shape=p.shape, dtype=A.dtype) for f, p in zip(futures, pieces)])


def _timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


if __name__ == "__main__":
    main()
