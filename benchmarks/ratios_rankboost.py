"""Speed of RankBoost against a numpy floor measured in the same run (best of a few repeats).

Case (issue: the boosting rankers): m = 20,000 rows, n = 50 features, 5 relevance levels (about
1.6 x 10^8 crucial pairs, never formed), 100 rounds, every distinct value a threshold.

Floor: a round must at least read, for every feature, the pair potential pi(x) of every row in
that feature's sorted order and prefix-sum it (r(theta) for every threshold of the paper's weak
learner).  The floor is 100 x ``np.cumsum(P, axis=1)`` on an (n, m) C-ordered array P whose rows
are ALREADY the potentials in each feature's sorted order: no gather, no argmax, no potential
or distribution update, no sort.  A second yardstick adds the gather:
100 x ``np.cumsum(pi[order], axis=1)``.  fastrank's time includes input validation, the one sort
per feature, and all the work of every round.
Target: <= 3x the floor.

Choosing n_estimators: ``rankboost_path`` (5 group folds, every T' = 1..T scored by NDCG@10
from the staged predictions of one fit per fold) over one fit at T on all rows (the work it
replaces is a refit per fold and per value; expected ratio about 5 x 0.8 + 1 for the final
refit + scoring), and against refitting at each value of a 4-value grid with the same folds.
Single-thread CPU time (``time.process_time``, n_jobs=1), so the ratios hold on a loaded machine.

Also: ``greedy_order`` (Cohen et al.) on an n = 3000 soft tournament against the O(n^2) numpy
work any implementation must do once, forming the net preferences ``(P - P.T).sum(axis=1)``.

Run:  python benchmarks/ratios_rankboost.py [--quick]
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import fastrank

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from common import best_time as best  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    m, n, T = (5000, 20, 20) if args.quick else (20_000, 50, 100)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(m, n))
    s = X @ rng.normal(size=n) + rng.normal(size=m)
    y = np.digitize(s, np.quantile(s, [0.2, 0.4, 0.6, 0.8])).astype(float)
    repeats = 3

    order = np.ascontiguousarray(np.argsort(-X, axis=0, kind="stable").T)  # (n, m): one row per feature
    pi = rng.normal(size=m)
    P = np.ascontiguousarray(pi[order])
    # each feature's sorted potentials contiguous (numpy's fastest cumsum layout)
    t_floor = best(lambda: [np.cumsum(P, axis=1) for _ in range(T)], repeats)
    t_gather = best(lambda: [np.cumsum(pi[order], axis=1) for _ in range(T)], repeats)
    rows = []
    for n_jobs in (1, 2):
        est = fastrank.RankBoost(n_estimators=T, n_jobs=n_jobs)
        t = best(lambda: est.fit(X, y), repeats)
        assert est.n_estimators_ == T
        rows.append((n_jobs, t))
    t_sort = best(lambda: np.argsort(-X, axis=0, kind="stable"), repeats)
    print(f"RankBoost m={m}, n={n}, {T} rounds, 5 levels (pairs never formed)")
    print(f"  floor   {T} x np.cumsum on pre-gathered (n, m) potentials : {t_floor:.4f} s")
    print(f"  numpy   {T} x np.cumsum(pi[order], axis=1) (with gather)  : {t_gather:.4f} s")
    print(f"  numpy   one argsort of every column (the one-time sort)   : {t_sort:.4f} s")
    for n_jobs, t in rows:
        print(f"  fastrank RankBoost.fit n_jobs={n_jobs}: {t:.4f} s   ratio to floor {t / t_floor:.2f} "
              f"(target <= 3)   to cumsum+gather {t / t_gather:.2f}")

    staged_selection(X, y, T, rng)

    nn = 1000 if args.quick else 3000
    U = rng.random((nn, nn))
    Pt = np.triu(U, 1) + np.tril(1 - U.T, -1)
    t_net = best(lambda: (Pt - Pt.T).sum(axis=1), repeats)
    t_greedy = best(lambda: fastrank.greedy_order(Pt), repeats)
    print(f"greedy_order n={nn}: {t_greedy:.4f} s   numpy (P - P.T).sum(1): {t_net:.4f} s   "
          f"ratio {t_greedy / t_net:.2f}")


def cpu_time(fn):
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


def staged_selection(X, y, T, rng):
    """rankboost_path over one fit, and over refitting at each value of a small grid (CPU, 1 thread)."""
    from sklearn.model_selection import GroupKFold

    m = X.shape[0]
    groups = rng.integers(0, m // 50, size=m)
    folds = list(GroupKFold(n_splits=5).split(X, y, groups))
    t_fit = cpu_time(lambda: fastrank.RankBoost(n_estimators=T, n_jobs=1).fit(X, y, groups))
    t_path = cpu_time(lambda: fastrank.rankboost_path(X, y, T, groups, cv=folds, scoring="ndcg@10", n_jobs=1))
    grid = [T // 4, T // 2, 3 * T // 4, T]
    t_path4 = cpu_time(lambda: fastrank.rankboost_path(X, y, grid, groups, cv=folds, scoring="ndcg@10",
                                                       refit=False, n_jobs=1))
    measure = fastrank.metrics.get_measure("ndcg@10")

    def refits():
        for tr, te in folds:
            for t in grid:
                est = fastrank.RankBoost(n_estimators=t, n_jobs=1).fit(X[tr], y[tr], groups[tr])
                measure(y[te], est.predict(X[te]), groups[te])

    t_refit4 = cpu_time(refits)
    print(f"n_estimators selection, m={m}, {m // 50} queries, 5 group folds, NDCG@10 (CPU s, n_jobs=1)")
    print(f"  one RankBoost.fit at T={T} on all rows            : {t_fit:.3f} s")
    print(f"  rankboost_path, every T' = 1..{T}, with final refit : {t_path:.3f} s   ratio to one fit "
          f"{t_path / t_fit:.2f}")
    print(f"  grid {grid}: rankboost_path (no refit) {t_path4:.3f} s, refit per fold and value {t_refit4:.3f} s"
          f"   ratio {t_path4 / t_refit4:.2f}")


if __name__ == "__main__":
    main()
