"""The RankRLS paper's runtime comparison (004 Sect. 5), as a scaling table: training time of
Gaussian RankRLS and of Gaussian RankSVM (squared hinge, pair-free), and the time of RankRLS's
exact leave-pair-out over ALL pairs against the time RankSVM would need for the same estimate by
retraining once per pair (extrapolated from one fit: m (m - 1) / 2 fits).

Run:  python benchmarks/papers_scaling.py [--quick]
"""

import argparse
import sys
import time

import numpy as np

import fastrank
from fastrank import model_selection as ms

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from common import dense_regression  # noqa: E402


def timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def main(quick=False):
    sizes = [250, 500, 1000] if quick else [250, 500, 1000, 2000, 4000]
    print(f"{'m':>6} {'pairs':>10} {'RankRLS fit':>12} {'RankSVM fit':>12} {'RankRLS LPO (all pairs)':>24} "
          f"{'RankSVM LPO by retraining (est.)':>33}")
    for m in sizes:
        X, y = dense_regression(m, 20)
        g = 1.0 / 20
        rls = fastrank.RankRLS(alpha=1.0, kernel="rbf", gamma=g)
        svm = fastrank.RankSVM(C=1.0, kernel="rbf", gamma=g)
        t_rls = timed(lambda: rls.fit(X, y))
        t_svm = timed(lambda: svm.fit(X, y))
        t_lpo = timed(lambda: ms.leave_pair_out(rls, X, y))
        pairs = m * (m - 1) // 2
        print(f"{m:6d} {pairs:10d} {t_rls:10.3f} s {t_svm:10.3f} s {t_lpo:22.3f} s {t_svm * pairs:31.3g} s",
              flush=True)


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    main(ap.parse_args().quick)
