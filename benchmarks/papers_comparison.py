"""The comparison the ranking papers are about, on real data, with parameters chosen by
cross-validation on the training part only (RankRLS, MPRank, RankBoost, RankSVM, SVRank).

* LightGBM lambdarank sample (query data; ``fastrank.datasets.load_lambdarank``): every model
  fitted on the pairs inside queries; test pairwise disagreement (mean over queries, ties
  count 1/2) and NDCG@10.  Parameters: ``RankRLSCV(cv="lgo")`` (exact leave-query-out), else
  ``GridSearchCV`` with ``GroupKFold(5)`` on the training queries, groups routed to ``fit``.
* ANES96 party id (magnitude data, 0..6, as in 000 Table 1): 5 random 70/30 splits; test MSD and
  M1D (000 eqs. 67-68) and pairwise disagreement, mean +- std over splits.  Parameters:
  ``RankRLSCV(cv="lpo")`` (exact leave-pair-out), else ``GridSearchCV`` with ``KFold(5)``.

Every grid is extended (by its own step, up to 8 times) while the chosen value sits on its edge, so
that each reported model's parameter is interior to the grid it was chosen from.  A cell marked
"=" is level with the column's best: the paired difference to the best model (over test queries
for the LightGBM sample, over splits for ANES96) is within two standard errors of zero.

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


def _extend(grid, low):
    """One more value below (``low``) or above ``grid``: the grid's own ratio, or for ensemble
    sizes a doubling / halving."""
    g = list(grid)
    if all(isinstance(v, (int, np.integer)) for v in g):
        return ([max(1, g[0] // 2)] + g) if low else (g + [2 * g[-1]])
    r = g[1] / g[0] if len(g) > 1 else 10.0
    return ([g[0] / r] + g) if low else (g + [g[-1] * r])


def chosen(est, param):
    return est.best_params_[param] if isinstance(est, GridSearchCV) else est.alpha_


class Interior:
    """Cross-validated choice of one parameter whose chosen value is interior to its grid: the
    search is repeated on an extended grid while the best value sits on an edge (at most
    ``max_extensions`` times; a value still on an edge is reported as such)."""

    def __init__(self, make, param, grid, max_extensions=8):
        self.make, self.param, self.grid, self.max_extensions = make, param, list(grid), max_extensions

    def fit(self, X, y, groups=None):
        grid = self.grid
        for _ in range(self.max_extensions + 1):
            est = fit(self.make(grid), X, y, groups)
            best = chosen(est, self.param)
            at = int(np.argmin(np.abs(np.asarray(grid, dtype=float) - best)))
            floor = isinstance(grid[0], (int, np.integer)) and grid[0] == 1  # one round: nothing below
            if 0 < at < len(grid) - 1 or (at == 0 and floor):
                break
            grid = _extend(grid, low=at == 0)
        self.estimator_, self.grid_, self.value_ = est, grid, best
        self.interior_ = 0 < at < len(grid) - 1
        return self

    def predict(self, X):
        return self.estimator_.predict(X)

    def describe(self):
        edge = "" if self.interior_ else " (edge of the grid)"
        return f"{self.param}={self.value_:g} in [{self.grid_[0]:g}, {self.grid_[-1]:g}]{edge}"


def models(quick, query):
    """(name, factory() -> Interior search) pairs."""
    n_est = [25, 100] if quick else [25, 50, 100, 200, 400]
    cv = GroupKFold(n_splits=5) if query else KFold(n_splits=5, shuffle=True, random_state=0)

    def search(factory, param, grid):
        def make(g):
            est = factory()
            if query:  # groups reach fit (pairs inside queries) and score (mean over queries)
                est = est.set_fit_request(groups=True).set_score_request(groups=True)
            return GridSearchCV(est, {param: list(g)}, cv=cv)
        return lambda: Interior(make, param, grid)

    rls_cv = "lgo" if query else "lpo"
    out = [("RankRLS linear", lambda: Interior(lambda g: fastrank.RankRLSCV(alphas=g, cv=rls_cv), "alpha",
                                               list(ALPHAS)))]
    if not quick:
        out.append(("RankRLS Gaussian", lambda: Interior(
            lambda g: fastrank.RankRLSCV(alphas=g, cv=rls_cv, kernel="rbf", gamma=3e-3 if query else 0.1), "alpha",
            list(ALPHAS))))
    out += [
        ("MPRank linear", search(fastrank.MPRank, "C", list(10.0 ** np.arange(-2, 5)))),
        ("RankBoost", search(fastrank.RankBoost, "n_estimators", n_est)),
        ("RankSVM linear", search(fastrank.RankSVM, "C", [0.001, 0.01, 0.1, 1.0])),
        ("SVRank linear", search(lambda: fastrank.SVRank(epsilon=0.1), "C", [1.0, 10.0, 100.0])),
    ]
    return out


def fit(est, X, y, groups):
    if groups is None:
        return est.fit(X, y)
    return est.fit(X, y, groups=groups)


def level_marks(values, higher_is_better):
    """'=' for the best model and every model level with it (rows: models, columns: test
    queries or splits): level when the mean paired difference to the best is within two
    standard errors of zero."""
    v = np.asarray(values, dtype=np.float64)
    means = v.mean(axis=1)
    best = int(np.argmax(means) if higher_is_better else np.argmin(means))
    marks = []
    for i in range(v.shape[0]):
        d = v[i] - v[best]
        se = d.std(ddof=1) / np.sqrt(d.size) if d.size > 1 else 0.0
        marks.append("=" if i == best or abs(d.mean()) <= 2 * se else " ")
    return marks


def lambdarank(quick):
    d = load_lambdarank()
    print("LightGBM lambdarank sample: test pairwise disagreement (lower is better), NDCG@10 (higher is better)")
    rows, dis, nd = [], [], []
    informative = [q for q in np.unique(d.groups_test) if np.ptp(d.y_test[d.groups_test == q]) > 0]
    for name, make in models(quick, query=True):
        est = make().fit(d.X_train, d.y_train, d.groups_train)
        s = est.predict(d.X_test)
        per_q = np.array([(pairwise_disagreement(d.y_test[d.groups_test == q], s[d.groups_test == q]),
                           ndcg(d.y_test[d.groups_test == q], s[d.groups_test == q], k=10)) for q in informative])
        dis.append(per_q[:, 0])
        nd.append(per_q[:, 1])
        rows.append((name, pairwise_disagreement(d.y_test, s, d.groups_test), ndcg(d.y_test, s, d.groups_test, k=10),
                     est.describe()))
    for (name, a, b, params), ma, mb in zip(rows, level_marks(dis, False), level_marks(nd, True)):
        print(f"  {name:18s} disagreement {a:.4f}{ma}  NDCG@10 {b:.4f}{mb}  {params}")


def anes(quick):
    X, y = load_anes()
    n_splits = 2 if quick else 5
    print(f"ANES96 party id: {n_splits} random 70/30 splits, test MSD, M1D, disagreement (mean +- std)")
    rows = []
    for name, make in models(quick, query=False):
        res, params = [], []
        for seed in range(n_splits):
            rng = np.random.default_rng(seed)
            idx = rng.permutation(y.size)
            tr, te = idx[: int(0.7 * y.size)], idx[int(0.7 * y.size):]
            est = make().fit(X[tr], y[tr])
            s = est.predict(X[te])
            params.append(est.describe())
            # MSD/M1D compare score differences with label differences: they need scores on the
            # label's scale, which a ranker's output is only up to a shift (differences only).
            res.append((msd(y[te], s), m1d(y[te], s), pairwise_disagreement(y[te], s)))
        rows.append((name, np.array(res), params))
    marks = [level_marks([r[:, k] for _, r, _ in rows], False) for k in range(3)]
    for i, (name, r, params) in enumerate(rows):
        mean, sd = r.mean(0), r.std(0)
        print(f"  {name:18s} MSD {mean[0]:.3f}+-{sd[0]:.3f}{marks[0][i]}  M1D {mean[1]:.3f}+-{sd[1]:.3f}{marks[1][i]}  "
              f"disagreement {mean[2]:.4f}+-{sd[2]:.4f}{marks[2][i]}  {'; '.join(sorted(set(params)))}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    with sklearn.config_context(enable_metadata_routing=True):
        lambdarank(args.quick)
        anes(args.quick)


if __name__ == "__main__":
    main()
