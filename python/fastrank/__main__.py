"""``python -m fastrank``: a short real demo on the bundled LightGBM lambdarank sample.

Fits RankRLS with query groups (linear primal, and a Gaussian-kernel dual), picks alpha from a
31-value regularization path by leave-group-out-style validation on the training queries, and
prints test pairwise disagreement, NDCG@10 and timings next to ridge regression.
"""

from __future__ import annotations

import argparse
import time

import numpy as np


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m fastrank", description=__doc__.splitlines()[0])
    parser.parse_args(argv)

    import fastrank
    from fastrank.datasets import load_lambdarank
    from fastrank.metrics import ndcg, pairwise_disagreement

    data = load_lambdarank()
    Xtr, ytr, gtr = data.X_train, data.y_train, data.groups_train
    Xte, yte, gte = data.X_test, data.y_test, data.groups_test
    print(f"fastrank {fastrank.__version__}: LightGBM lambdarank sample (MIT), "
          f"train {Xtr.shape[0]} rows / {np.unique(gtr).size} queries, "
          f"test {Xte.shape[0]} rows / {np.unique(gte).size} queries, {Xtr.shape[1]} features")

    # Validation split by query: last fifth of the training queries.
    queries = np.unique(gtr)
    val_q = queries[-len(queries) // 5:]
    val = np.isin(gtr, val_q)
    alphas = np.logspace(-2, 4, 31)

    def select(estimator):
        path, seconds = _timed(lambda: fastrank.rankrls_path(
            Xtr[~val], ytr[~val], alphas, groups=gtr[~val], estimator=estimator))
        preds = path.predict(Xtr[val])
        errs = [pairwise_disagreement(ytr[val], p, gtr[val], ties="half") for p in preds]
        return alphas[int(np.argmin(errs))], seconds

    rows = []
    for name, est in (
        ("RankRLS linear (primal)", fastrank.RankRLS(solver="primal", group_weighting="normalized")),
        ("RankRLS Gaussian (dual)", fastrank.RankRLS(kernel="rbf", gamma=3e-3, group_weighting="normalized")),
    ):
        alpha, t_path = select(est)
        model, t_fit = _timed(lambda: est.set_params(alpha=alpha).fit(Xtr, ytr, gtr))
        pred = model.predict(Xte)
        rows.append((name, alpha, pairwise_disagreement(yte, pred, gte, ties="half"), ndcg(yte, pred, gte, k=10),
                     t_path, t_fit))

    from sklearn.linear_model import Ridge

    best = None
    for a in alphas:
        p = Ridge(alpha=a).fit(Xtr[~val], ytr[~val]).predict(Xtr[val])
        e = pairwise_disagreement(ytr[val], p, gtr[val], ties="half")
        best = (e, a) if best is None or e < best[0] else best
    ridge, t_fit = _timed(lambda: Ridge(alpha=best[1]).fit(Xtr, ytr))
    pred = ridge.predict(Xte)
    rows.append(("ridge regression (sklearn)", best[1], pairwise_disagreement(yte, pred, gte, ties="half"),
                 ndcg(yte, pred, gte, k=10), float("nan"), t_fit))

    print(f"\n{'model':<28} {'alpha':>9} {'test disagreement':>18} {'test NDCG@10':>13} "
          f"{'31-alpha path':>14} {'final fit':>10}")
    for name, alpha, dis, nd, t_path, t_fit in rows:
        path_s = "" if np.isnan(t_path) else f"{t_path:.3f} s"
        print(f"{name:<28} {alpha:9.3g} {dis:18.4f} {nd:13.4f} {path_s:>14} {t_fit:8.3f} s")
    print("\n(disagreement: fraction of within-query pairs ordered wrongly, lower is better; "
          "alpha chosen on held-out training queries)")


if __name__ == "__main__":
    main()
