"""Measures with query groups, step by step: m = 10^6 rows in 8,000 groups of 125 (ids shuffled), 5
labels, scores with ties.  Prints the single-thread CPU time of each step and each measure's ratio
to np.argsort of the scores (the yardstick every O(m log m) measure pays once).

    python benchmarks/ratios_groups.py [--quick]

Then QueryNormalizer (LETOR's per-query normalisation) against pandas' groupby transform doing the same arithmetic,
m = 2e5 rows in queries of 2-10, 46 features (skipped without pandas).

Steps: group_index (ids -> codes -> order, built once in C++), label ranks, argsort, and the
compiled per-group sweeps, which read the _core.GroupIndex behind group_index's arrays in place.
"""

import argparse
import sys
import time

import numpy as np

from fastrank import _core
from fastrank import metrics as M
from fastrank._validation import group_index

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from common import best_time  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    n_q, n_d = (800, 125) if args.quick else (8000, 125)
    m = n_q * n_d
    rng = np.random.default_rng(1)
    g = rng.permutation(np.repeat(np.arange(n_q), n_d))
    y = rng.integers(0, 5, m).astype(np.float64)
    f = np.round(rng.normal(size=m) + 0.3 * y, 1)

    def cpu(fn):
        return best_time(fn, 9, clock=time.process_time)

    yardstick = cpu(lambda: np.argsort(f))
    gi = group_index(g, m)
    ranks = M._label_ranks(y)
    f_order = np.argsort(f)
    print(f"m = {m}, {n_q} groups; CPU times (process_time), one thread")
    for name, fn in [
        ("group_index(groups)", lambda: group_index(g, m)),
        ("label ranks", lambda: M._label_ranks(y)),
        ("np.argsort(scores) [yardstick]", lambda: np.argsort(f)),
        ("_core.pair_statistics", lambda: _core.pair_statistics(f, f_order, *ranks, gi.order, gi.offsets, False, 1)),
        ("_core.dcg_statistics (k=10)", lambda: _core.dcg_statistics(y, f, gi.order, gi.offsets, 10, 1, 1)),
    ]:
        print(f"  {name:<34s} {cpu(fn) * 1e3:8.2f} ms")
    for name, fn in [
        ("pairwise_disagreement", lambda: M.pairwise_disagreement(y, f, g, n_jobs=1)),
        ("ndcg@10", lambda: M.ndcg(y, f, g, k=10, n_jobs=1)),
        ("pairwise_disagreement, no groups", lambda: M.pairwise_disagreement(y, f, n_jobs=1)),
    ]:
        t = cpu(fn)
        print(f"{name:<36s} {t * 1e3:8.2f} ms   ratio to argsort {t / yardstick:5.2f}")
    query_normalizer_rows(20_000 if args.quick else 200_000)


def query_normalizer_rows(m, d=46):
    try:
        import pandas as pd
    except ImportError:
        print("pandas is not installed: the QueryNormalizer rows are skipped (pip install pandas).")
        return
    from fastrank.preprocessing import QueryNormalizer

    rng = np.random.default_rng(0)
    sizes = rng.integers(2, 11, m)
    sizes = sizes[np.cumsum(sizes) <= m]
    g = np.repeat(np.arange(sizes.size), sizes)
    X = rng.standard_normal((g.size, d)) * 3 + 1

    def zscore():
        df = pd.DataFrame(X)
        by = df.groupby(g)
        return ((df - by.transform("mean")) / by.transform("std", ddof=0)).to_numpy()

    def minmax():
        df = pd.DataFrame(X)
        by = df.groupby(g)
        lo = by.transform("min")
        return ((df - lo) / (by.transform("max") - lo)).to_numpy()

    print(f"QueryNormalizer, m = {g.size}, {sizes.size} queries of 2-10 rows, d = {d}; wall, default threads")
    for method, ref in (("zscore", zscore), ("minmax", minmax)):
        ours = QueryNormalizer(method)
        np.testing.assert_allclose(ours.fit_transform(X, groups=g), ref(), rtol=1e-9, atol=1e-12)
        t, t_ref = best_time(lambda: ours.fit_transform(X, groups=g), 5), best_time(ref, 5)
        print(f"  {method:<8s} {t:.3f} s, pandas {t_ref:.3f} s, ratio {t / t_ref:.2f}")


if __name__ == "__main__":
    main()
