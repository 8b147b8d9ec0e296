"""The comparison the ranking papers are about, on real data, with parameters chosen by
cross-validation on the training part only (RankRLS, MPRank, RankBoost, RankSVM, SVRank).

* LightGBM lambdarank sample (query data; ``fastrank.datasets.load_lambdarank``): every model
  fitted on the pairs inside queries; test pairwise disagreement (mean over queries, ties
  count 1/2) and NDCG@10.  Parameters: ``RankRLSCV(cv="lgo")`` (exact leave-query-out), else
  ``GridSearchCV`` with ``GroupKFold(5)`` on the training queries, groups routed to ``fit``.
* ANES96 party id (magnitude data, 0..6, as in 000 Table 1): 5 random 70/30 splits; test MSD and
  M1D (000 eqs. 67-68) and pairwise disagreement, mean +- std over splits.  Parameters:
  ``RankRLSCV(cv="lpo")`` (exact leave-pair-out), else ``GridSearchCV`` with ``KFold(5)``.

Run:  python benchmarks/papers_comparison.py [--quick]
"""

from __future__ import annotations

import argparse
import csv
from pathlib import Path

import numpy as np
import sklearn
from sklearn.model_selection import GridSearchCV, GroupKFold, KFold

import fastrank
from fastrank.datasets import load_lambdarank
from fastrank.metrics import m1d, msd, ndcg, pairwise_disagreement

ANES = Path(__file__).resolve().parents[2] / "shared" / "data" / "statsmodels_anes96" / "anes96.csv"
ALPHAS = np.logspace(-3, 5, 17)


def load_anes():
    with open(ANES) as fh:
        rows = list(csv.reader(fh, delimiter="\t"))
    names = [h.strip("'") for h in rows[0]]
    A = np.array(rows[1:], dtype=np.float64)
    j = names.index("PID")
    X = np.delete(A, j, axis=1)
    X = (X - X.mean(0)) / X.std(0)
    return X, A[:, j]


def models(quick, query):
    """(name, factory(groups_available) -> fitted-by-CV estimator) pairs."""
    n_est = [25, 100] if quick else [25, 50, 100, 200, 400]
    cv = GroupKFold(n_splits=5) if query else KFold(n_splits=5, shuffle=True, random_state=0)

    def search(est, grid):
        if query:  # groups reach fit (pairs inside queries) and score (mean over queries)
            est = est.set_fit_request(groups=True).set_score_request(groups=True)
        return GridSearchCV(est, grid, cv=cv)

    rls_cv = "lgo" if query else "lpo"
    out = [("RankRLS linear", lambda: fastrank.RankRLSCV(alphas=ALPHAS, cv=rls_cv))]
    if not quick:
        out.append(("RankRLS Gaussian", lambda: fastrank.RankRLSCV(alphas=ALPHAS, cv=rls_cv, kernel="rbf",
                                                                    gamma=3e-3 if query else 0.1)))
    out += [
        ("MPRank linear", lambda: search(fastrank.MPRank(), {"C": list(10.0 ** np.arange(-2, 5))})),
        ("RankBoost", lambda: search(fastrank.RankBoost(), {"n_estimators": n_est})),
        ("RankSVM linear", lambda: search(fastrank.RankSVM(), {"C": [0.001, 0.01, 0.1, 1.0]})),
        ("SVRank linear", lambda: search(fastrank.SVRank(epsilon=0.1), {"C": [1.0, 10.0, 100.0]})),
    ]
    return out


def fit(est, X, y, groups):
    if groups is None:
        return est.fit(X, y)
    return est.fit(X, y, groups=groups)


def best_params(est):
    if isinstance(est, GridSearchCV):
        return est.best_params_
    return {"alpha": getattr(est, "alpha_", None)}


def lambdarank(quick):
    d = load_lambdarank()
    print("LightGBM lambdarank sample: test pairwise disagreement (lower is better), NDCG@10")
    for name, make in models(quick, query=True):
        est = fit(make(), d.X_train, d.y_train, d.groups_train)
        s = est.predict(d.X_test)
        pd_ = pairwise_disagreement(d.y_test, s, d.groups_test)
        nd = ndcg(d.y_test, s, d.groups_test, k=10)
        print(f"  {name:18s} disagreement {pd_:.4f}  NDCG@10 {nd:.4f}  {best_params(est)}")


def anes(quick):
    X, y = load_anes()
    n_splits = 2 if quick else 5
    print(f"ANES96 party id: {n_splits} random 70/30 splits, test MSD, M1D, disagreement (mean +- std)")
    for name, make in models(quick, query=False):
        res = []
        for seed in range(n_splits):
            rng = np.random.default_rng(seed)
            idx = rng.permutation(y.size)
            tr, te = idx[: int(0.7 * y.size)], idx[int(0.7 * y.size):]
            est = fit(make(), X[tr], y[tr], None)
            s = est.predict(X[te])
            # MSD/M1D compare score differences with label differences: they need scores on the
            # label's scale, which a ranker's output is only up to a shift (differences only).
            res.append((msd(y[te], s), m1d(y[te], s), pairwise_disagreement(y[te], s)))
        r = np.array(res)
        mean, sd = r.mean(0), r.std(0)
        print(f"  {name:18s} MSD {mean[0]:.3f}+-{sd[0]:.3f}  M1D {mean[1]:.3f}+-{sd[1]:.3f}  "
              f"disagreement {mean[2]:.4f}+-{sd[2]:.4f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    with sklearn.config_context(enable_metadata_routing=True):
        lambdarank(args.quick)
        anes(args.quick)


if __name__ == "__main__":
    main()
