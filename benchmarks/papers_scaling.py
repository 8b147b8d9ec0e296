"""Training time against the number of training inputs, nonlinear RankRLS against nonlinear
RankSVM: the structure of the RankRLS paper's Table 1 (004 Sect. 4.2).

The paper times its own Python RankRLS against SVM-light's RankSVM on the Reuters acq
AUC-maximization task (Gaussian kernel, the packages' default parameters, 200 to 6,000 inputs).
Neither acq nor SVM-light can be had here, so this table keeps the structure and changes the
cells' meaning: a bipartite (AUC) task built from the bundled LightGBM sample (relevance label >= 2
against the rest, every pair of a relevant and an irrelevant row, 3,773 rows of 300 features, with
the training rows drawn at random), Gaussian kernel with gamma = 1 / n_features, RankRLS(alpha=1)
against fastrank's own pair-free RankSVM (hinge loss as in SVM-light, and squared hinge), C = 1.
Times are wall-clock seconds of one fit with the default threads, plus the process CPU time, and
the 1-minute load average when the row was measured.  A RankSVM fit slower than ``--cap`` seconds
ends that column (printed as "-", like the paper's cells).

The second table is fastrank's own: the exact leave-pair-out over ALL pairs (004 Sect. 3.4) against
the cost of the same estimate by retraining RankSVM once per pair (one fit, times m (m - 1) / 2).

Run:  python benchmarks/papers_scaling.py [--quick] [--cap 120]
"""

import argparse
import os
import time

import numpy as np

import fastrank
from fastrank import model_selection as ms
from fastrank.datasets import load_lambdarank


def timed(fn):
    t0, c0 = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - t0, time.process_time() - c0


def bipartite():
    d = load_lambdarank()
    X = np.vstack([d.X_train, d.X_test])
    y = (np.concatenate([d.y_train, d.y_test]) >= 2).astype(np.float64)
    return X, y


def table1(sizes, cap):
    X, y = bipartite()
    rng = np.random.default_rng(0)
    order = rng.permutation(y.size)
    gamma = 1.0 / X.shape[1]
    print("Training time (s, wall / CPU) against the number of training inputs; Gaussian kernel, bipartite task")
    print(f"{'inputs':>7} {'load':>5} {'RankRLS':>15} {'RankSVM hinge':>17} {'RankSVM sq. hinge':>19}")
    live = {"hinge": True, "squared_hinge": True}
    for m in sizes:
        idx = order[:m]
        Xm, ym = X[idx], y[idx]
        load = os.getloadavg()[0]
        cells = [timed(lambda: fastrank.RankRLS(alpha=1.0, kernel="rbf", gamma=gamma).fit(Xm, ym))]
        for loss in ("hinge", "squared_hinge"):
            if live[loss]:
                t = timed(lambda: fastrank.RankSVM(C=1.0, loss=loss, kernel="rbf", gamma=gamma).fit(Xm, ym))
                live[loss] = t[0] <= cap
                cells.append(t)
            else:
                cells.append(None)
        txt = ["-".rjust(15) if c is None else f"{c[0]:7.3f} / {c[1]:6.2f}" for c in cells]
        print(f"{m:7d} {load:5.2f} {txt[0]:>15} {txt[1]:>17} {txt[2]:>19}", flush=True)


def lpo_table(sizes):
    print("\nExact leave-pair-out over all pairs against retraining once per pair (Gaussian, 20 features)")
    print(f"{'m':>6} {'pairs':>10} {'load':>5} {'RankRLS fit':>12} {'RankSVM fit':>12} {'RankRLS LPO':>12} "
          f"{'RankSVM LPO by retraining (est.)':>33}")
    for m in sizes:
        rng = np.random.default_rng(0)
        X = rng.normal(size=(m, 20))
        y = X @ rng.normal(size=20) + 0.5 * rng.normal(size=m)
        rls = fastrank.RankRLS(alpha=1.0, kernel="rbf", gamma=1.0 / 20)
        svm = fastrank.RankSVM(C=1.0, kernel="rbf", gamma=1.0 / 20)
        load = os.getloadavg()[0]
        t_rls = timed(lambda: rls.fit(X, y))[0]
        t_svm = timed(lambda: svm.fit(X, y))[0]
        t_lpo = timed(lambda: ms.leave_pair_out(rls, X, y))[0]
        pairs = m * (m - 1) // 2
        print(f"{m:6d} {pairs:10d} {load:5.2f} {t_rls:10.3f} s {t_svm:10.3f} s {t_lpo:10.3f} s {t_svm * pairs:31.3g} s",
              flush=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--cap", type=float, default=120.0, help="stop a RankSVM column after a fit slower than this")
    args = ap.parse_args()
    sizes = [200, 500, 1000] if args.quick else [200, 500, 750, 1000, 1500, 2000, 2500, 3773]
    table1(sizes, args.cap)
    lpo_table([250, 500, 1000] if args.quick else [250, 500, 1000, 2000, 4000])


if __name__ == "__main__":
    main()
