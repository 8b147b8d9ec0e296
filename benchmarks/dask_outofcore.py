"""Out-of-core linear query RankRLS with fastrank.dask on a memory-limited LocalCluster.

    python benchmarks/dask_outofcore.py [--scale 1.5] [--features 136] [--chunk-rows 100000]
                                        [--docs-per-query 113] [--workers 2] [--memory-limit 2GiB]
                                        [--subsample 400000]

A synthetic LETOR-like dataset of ``--scale`` x this machine's total memory (float64 features
plus the label column) is generated lazily, block by block from (seed, block index), and never
stored: uniform [0, 1) features (LETOR features are per-query normalised), graded relevance 0..4
from fixed cut points of a noisy linear score, contiguous queries of ``--docs-per-query`` rows
(not a divisor of the chunk size, so queries straddle chunk borders).  The fit is
``fastrank.dask.DaskRankRLS(alpha=1).fit(X, y, groups)`` on a LocalCluster of ``--workers``
processes with ``--memory-limit`` each; the script reports wall time, throughput, the peak
resident memory of every worker (sampled every 0.25 s), and for scale the single-machine
``fastrank.RankRLS(solver="primal")`` on the first ``--subsample`` rows, together with the
distributed fit of that same subsample (coefficients must agree to 1e-10).
"""

import argparse
import threading
import time

import numpy as np

SEED = 20260101


def _weights(n):
    return np.random.default_rng(SEED).normal(size=n)


def _gen_block(n, chunk_rows, block_id=None, block_info=None):
    """Rows of block ``block_id[0]``: features and the label as one (rows, n + 1) array."""
    i = block_id[0]
    rows = block_info[None]["chunk-shape"][0]
    rng = np.random.default_rng([SEED, i])
    out = np.empty((rows, n + 1))
    out[:, :n] = rng.random((rows, n))
    w = _weights(n)
    s = out[:, :n] @ w + 0.5 * rng.standard_normal(rows)
    mu, sd = 0.5 * w.sum(), np.sqrt((w @ w) / 12.0 + 0.25)
    out[:, n] = np.digitize(s, mu + sd * np.array([0.0, 0.7, 1.3, 1.9]))
    return out


def make_data(m, n, chunk_rows, docs_per_query):
    import dask.array as da

    chunks = (chunk_rows,) * (m // chunk_rows) + ((m % chunk_rows,) if m % chunk_rows else ())
    XY = da.map_blocks(_gen_block, n, chunk_rows, chunks=(chunks, (n + 1,)), dtype=np.float64,
                       meta=np.empty((0, 0)))
    groups = da.arange(m, chunks=(chunks,), dtype=np.int64) // docs_per_query
    return XY[:, :n], XY[:, n], groups


def _rss():
    import psutil

    return psutil.Process().memory_info().rss


class PeakSampler:
    def __init__(self, client, period=0.25):
        self.client, self.period, self.peak = client, period, {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            try:
                for w, r in self.client.run(_rss).items():
                    self.peak[w] = max(self.peak.get(w, 0), r)
            except Exception:  # a worker restarting mid-sample: keep sampling the others
                pass
            self._stop.wait(self.period)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=float, default=1.5, help="dataset size as a multiple of total memory")
    ap.add_argument("--features", type=int, default=136)
    ap.add_argument("--chunk-rows", type=int, default=100_000)
    ap.add_argument("--docs-per-query", type=int, default=113)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--memory-limit", default="2GiB")
    ap.add_argument("--subsample", type=int, default=400_000)
    args = ap.parse_args()

    import psutil
    from distributed import Client, LocalCluster

    import fastrank
    from fastrank.dask import DaskRankRLS

    n = args.features
    total = psutil.virtual_memory().total
    m = int(args.scale * total / (8 * (n + 1)))
    gib = m * (n + 1) * 8 / 2**30
    print(f"machine memory {total / 2**30:.1f} GiB; dataset {m:,} rows x {n} features + label = {gib:.2f} GiB "
          f"({args.scale} x memory), {m // args.docs_per_query:,} queries, {-(-m // args.chunk_rows)} chunks")

    cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                           memory_limit=args.memory_limit, dashboard_address=":0")
    client = Client(cluster)
    try:
        # warm-up: workers import fastrank and run one tiny fit before the clock starts
        Xw, yw, gw = make_data(2000, n, 1000, args.docs_per_query)
        DaskRankRLS(alpha=1.0).fit(Xw, yw, gw)
        X, y, g = make_data(m, n, args.chunk_rows, args.docs_per_query)
        with PeakSampler(client) as ps:
            t0 = time.perf_counter()
            est = DaskRankRLS(alpha=1.0).fit(X, y, g)
            t_fit = time.perf_counter() - t0
        peaks = ", ".join(f"{p / 2**20:.0f} MiB" for p in ps.peak.values())
        print(f"distributed fit: {t_fit:.1f} s ({gib / t_fit:.3f} GiB/s); peak RSS per worker: {peaks} "
              f"(limit {args.memory_limit})")

        ms_ = min(args.subsample, m)
        Xs, ys, gs = make_data(ms_, n, args.chunk_rows, args.docs_per_query)
        Xl, yl, gl = Xs.compute(), ys.compute(), gs.compute()
        t0 = time.perf_counter()
        ref = fastrank.RankRLS(alpha=1.0, solver="primal").fit(Xl, yl, gl)
        t_single = time.perf_counter() - t0
        t0 = time.perf_counter()
        sub = DaskRankRLS(alpha=1.0).fit(Xs, ys, gs)
        t_sub = time.perf_counter() - t0
        rel = np.abs(sub.coef_ - ref.coef_).max() / np.abs(ref.coef_).max()
        print(f"subsample {ms_:,} rows ({ms_ * (n + 1) * 8 / 2**30:.2f} GiB): single-machine primal fit "
              f"{t_single:.2f} s (data in memory), distributed fit incl. generation {t_sub:.2f} s, "
              f"coef rel diff {rel:.2e}")
        print(f"linear extrapolation of the single-machine fit to {m:,} rows (if it fitted in memory): "
              f"{t_single * m / ms_:.1f} s")
        if args.scale < 1.5:
            full = int(1.5 * total / (8 * (n + 1)))
            print(f"linear extrapolation of the distributed fit to 1.5 x memory ({full:,} rows): "
                  f"{t_fit * full / m:.0f} s")
        print("coef[:5]", np.array2string(est.coef_[:5], precision=6))
    finally:
        client.close()
        cluster.close()


if __name__ == "__main__":
    main()
