"""Results on real data: every fastrank learner tuned by its own cross-validation on the training
part only, against LightGBM's ``LGBMRanker`` and XGBoost's ``XGBRanker`` (defaults and tuned).

    PYTHONPATH=python python benchmarks/real_data_comparison.py     # a few minutes on 2 cores

Prints the Markdown of the README's "Results on real data".  LightGBM and XGBoost are optional
(``pip install lightgbm xgboost``); without them their rows are left out and the script says so.

Data sets (train/test splits as given):

- the bundled LightGBM lambdarank sample (``fastrank.datasets.load_lambdarank()``), dense;
- RLScore's query data (``../shared/data/rlscore_legacy/rank_{train,test}.light``, 195,098 sparse
  features, kept sparse; labels are continuous in [0.18, 1], so every row is "relevant" for MAP);
- raw MSLR-style synthetic features (the ``_raw_letor`` generator of tests/test_cli.py: counts,
  BM25-like scores, PageRank-like values up to 1e7), normalised per query by
  ``fastrank.preprocessing.QueryNormalizer`` (min-max, fitted on training queries), as
  ``fastrank train`` does by default on dense files.

Tuning (training part only, mean NDCG@10 over held-out training queries throughout):

- RankRLS: ``RankRLSCV(cv="lgo", scoring="ndcg@10")``, exact leave-one-query-out over the alphas;
  linear, and Gaussian with gamma from a small grid around 1 / (d * mean(x^2));
- MPRank: ``MPRankCV`` (its own CV over C, the alphas grid);
- RankSVM (C), SVRank (C), RankBoost (n_estimators): ``GridSearchCV`` with ``GroupKFold(3)`` over
  training queries, groups routed to fit and to ``make_ranking_scorer("ndcg@10")``;
- OAPBPM: defaults (an ordinal learner; scored by ``decision_function``);
- LightGBM / XGBoost (lambdarank / rank:ndcg, one thread, fixed seed, helpers of
  peer_comparison.py): defaults, and a ``GroupKFold(3)`` grid over num_leaves / max_depth and
  learning_rate, n_estimators read off each fold's largest forest (50, 100, 200, 400 trees);
  groups passed as LightGBM's group sizes / XGBoost's non-decreasing qid after sorting the rows
  by query.
  The tree libraries and OAPBPM need integer grades: on RLScore's continuous labels they are given
  round(4 * y) (grades 1..4) for training; every model is scored against the original labels.
  MPRank, SVRank and RankBoost need dense X: on RLScore's sparse data they get the training rows'
  span coordinates (``SpanProjection``; exact for MPRank and SVRank, a different model for
  RankBoost).

Test measures from ``fastrank.metrics``: NDCG@10 (exponential gain), MAP (relevant: label > 0),
pairwise disagreement (ties count 1/2), each a mean over test queries.  "time" is the wall clock
of tuning plus the final fit on all training rows.
"""

from __future__ import annotations

import os
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import sklearn
from sklearn.model_selection import GridSearchCV, GroupKFold

import fastrank
from fastrank.datasets import load_lambdarank, load_svmlight
from fastrank.metrics import make_ranking_scorer, mean_average_precision, ndcg, pairwise_disagreement
from fastrank.preprocessing import QueryNormalizer
from fastrank.utils import group_order

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from test_cli import _raw_letor  # noqa: E402

import peer_comparison as peers  # noqa: E402  (this directory; the tree-ranker helpers)

RLSCORE = ROOT.parent.parent / "shared" / "data" / "rlscore_legacy"
if not RLSCORE.is_dir():  # worktrees sit one level deeper than the main checkout
    RLSCORE = Path("/work/shared/data/rlscore_legacy")

SEED = 0
ALPHAS = np.logspace(-3, 5, 17)
GAMMA_FACTORS = (0.3, 1.0, 3.0)
LGBM_GRID = dict(num_leaves=(7, 31), learning_rate=(0.05, 0.1))
XGB_GRID = dict(max_depth=(3, 6), learning_rate=(0.05, 0.1))


# ------------------------------------------------------------------------------------------ data
def load_sets():
    d = load_lambdarank()
    yield "bundled LightGBM sample", (d.X_train, d.y_train, d.groups_train, d.X_test, d.y_test, d.groups_test)
    X, y, q = load_svmlight(RLSCORE / "rank_train.light", n_features=195098)
    Xt, yt, qt = load_svmlight(RLSCORE / "rank_test.light", n_features=195098)
    yield "RLScore query data", (X, y, q, Xt, yt, qt)
    X, y, q = _raw_letor(1, 120)
    Xt, yt, qt = _raw_letor(2, 60)
    norm = QueryNormalizer()
    yield "raw MSLR-style synthetic, query min-max", (norm.fit_transform(X, groups=q), y, q,
                                                      norm.transform(Xt, groups=qt), yt, qt)


def contiguous(X, y, g):
    """Rows of each query together (the tree libraries' group / qid arguments need that)."""
    o = group_order(g)
    return X[o], y[o], g[o]


def grades(y):
    """Integer grades for learners that need them (LightGBM, XGBoost, OAPBPM)."""
    return y.astype(int) if np.all(y == np.round(y)) else np.round(4 * y).astype(int)


def gamma_scale(X):
    sq = X.multiply(X).sum() if sp.issparse(X) else float(np.sum(X * X))
    return 1.0 / (sq / X.shape[0])  # 1 / (d * mean x^2) = 1 / mean squared row norm


class SpanProjection:
    """Coordinates of sparse rows in an orthonormal basis of the training rows' span: with
    K = X Xᵀ = V Λ Vᵀ, Q = Xᵀ V Λ^(-1/2) and Z = X Q.  A linear model with an L2 penalty on w
    trained on X has its optimum in that span (representer theorem), so MPRank and SVRank on Z
    are the same models as on X; only dense inputs are needed.  (Not so for RankBoost, whose
    threshold features are not rotation-invariant: on this data it learns on the rotated Z.)"""

    def __init__(self, model, X_fit, V, inv_sqrt):
        self.model, self.X_fit, self.V, self.inv_sqrt = model, X_fit, V, inv_sqrt

    def transform(self, X):
        return np.asarray((X @ self.X_fit.T).todense()) @ self.V * self.inv_sqrt

    def predict(self, X):
        return self.model.predict(self.transform(X))


def dense_span(tune):
    def wrapped(X, y, g):
        if not sp.issparse(X):
            return tune(X, y, g)
        lam, V = np.linalg.eigh(np.asarray((X @ X.T).todense()))
        keep = lam > lam.max() * 1e-12
        V, inv_sqrt = V[:, keep], 1.0 / np.sqrt(lam[keep])
        model, chosen = tune(V * np.sqrt(lam[keep]), y, g)
        return SpanProjection(model, X, V, inv_sqrt), chosen + f"; on the {V.shape[1]}-dim span of the training rows"
    return wrapped


# -------------------------------------------------------------------------------------- learners
def rankrls(kernel):
    def tune(X, y, g):
        gammas = [None] if kernel == "linear" else [f * gamma_scale(X) for f in GAMMA_FACTORS]
        best = None
        for gamma in gammas:
            cv = fastrank.RankRLSCV(ALPHAS, cv="lgo", scoring="ndcg@10", kernel=kernel, gamma=gamma,
                                    store_cv_predictions=False).fit(X, y, g)
            if best is None or cv.best_score_ > best[0]:
                best = (cv.best_score_, cv, f"alpha={cv.alpha_:.3g}" + ("" if gamma is None else f", gamma={gamma:.3g}"))
        return best[1], best[2]
    return tune


def mprank(X, y, g):
    cv = fastrank.MPRankCV(Cs=ALPHAS).fit(X, y, g)
    return cv, f"C={cv.C_:.3g}" if hasattr(cv, "C_") else ""


def grid(factory, param, values):
    def tune(X, y, g):
        est = factory().set_fit_request(groups=True)
        search = GridSearchCV(est, {param: list(values)}, cv=GroupKFold(n_splits=3),
                              scoring=make_ranking_scorer("ndcg@10").set_score_request(groups=True)).fit(X, y, groups=g)
        v = search.best_params_[param]
        return search.best_estimator_, f"{param}={v:.3g}" if isinstance(v, float) else f"{param}={v}"
    return tune


def oapbpm(X, y, g):
    return fastrank.OAPBPM(random_state=SEED).fit(X, grades(y)), "defaults"


def tree_default(lib):
    def tune(X, y, g):
        X, y, g = contiguous(X, y, g)
        return peers._fit_tree(lib, (peers._lgbm if lib == "lightgbm" else peers._xgb)({}), X, grades(y), g), "defaults"
    return tune


def tree_tuned(lib, space):
    """peer_comparison's grouped 3-fold search (NDCG@10 of out-of-fold predictions, tree counts
    read off the largest forest), then one fit on all training rows."""
    def tune(X, y, g):
        X, y, g = contiguous(X, y, g)
        _, params = peers.select_trees(lib, space, X, grades(y), g)
        make = peers._lgbm if lib == "lightgbm" else peers._xgb
        return peers._fit_tree(lib, make(params), X, grades(y), g), ", ".join(f"{k}={v:g}" for k, v in params.items())
    return tune


def learners():
    out = [
        ("fastrank RankRLSCV, linear", rankrls("linear")),
        ("fastrank RankRLSCV, Gaussian", rankrls("rbf")),
        ("fastrank MPRankCV, linear", dense_span(mprank)),
        ("fastrank RankSVM, linear (C grid)", grid(fastrank.RankSVM, "C", [1e-5, 1e-4, 1e-3, 1e-2, 0.1, 1.0, 10.0])),
        ("fastrank SVRank, linear (C grid)", dense_span(grid(fastrank.SVRank, "C", [0.1, 1.0, 10.0, 100.0, 1e3, 1e4]))),
        ("fastrank RankBoost (n_estimators grid)", dense_span(grid(fastrank.RankBoost, "n_estimators", [25, 50, 100, 200, 400, 800]))),
        ("fastrank OAPBPM, defaults", oapbpm),
    ]
    missing = []
    for lib, space in (("lightgbm", LGBM_GRID), ("xgboost", XGB_GRID)):
        try:
            __import__(lib)
        except ImportError:
            missing.append(lib)
            continue
        name = "LightGBM LGBMRanker" if lib == "lightgbm" else "XGBoost XGBRanker"
        out += [(f"{name}, defaults", tree_default(lib)), (f"{name}, tuned", tree_tuned(lib, space))]
    return out, missing


def score(model, X):
    return model.decision_function(X) if isinstance(model, fastrank.OAPBPM) else model.predict(X)


def main():
    rows, missing = learners()
    versions = f"fastrank {fastrank.__version__}, numpy {np.__version__}, scikit-learn {sklearn.__version__}"
    for lib in ("lightgbm", "xgboost"):
        if lib not in missing:
            versions += f", {lib} {__import__(lib).__version__}"
    print(f"Python {platform.python_version()}, {versions}; {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.1f} at the start")
    for lib in missing:
        print(f"\n{lib} is not installed: its rows are skipped (pip install {lib}).")
    for name, (X, y, g, Xt, yt, gt) in load_sets():
        print(f"\n**{name}**: train {X.shape[0]} rows / {np.unique(g).size} queries, test {Xt.shape[0]} rows / "
              f"{np.unique(gt).size} queries, {X.shape[1]} features{' (sparse)' if sp.issparse(X) else ''}\n")
        print("| model | test NDCG@10 ↑ | test MAP ↑ | test disagreement ↓ | time (s) | chosen |")
        print("|---|---|---|---|---|---|")
        for label, tune in rows:
            t0 = time.perf_counter()
            try:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    model, chosen = tune(X, y, g)
                    s = score(model, Xt)
            except Exception as exc:  # reported in the table, not hidden
                print(f"| {label} | fails: {type(exc).__name__}: {' '.join(str(exc).split())[:160]} | | | | |", flush=True)
                continue
            t = time.perf_counter() - t0
            kinds = sorted({w.category.__name__ for w in caught})
            note = f" ({len(caught)} warnings: {', '.join(kinds)})" if caught else ""
            print(f"| {label} | {ndcg(yt, s, gt, k=10):.4f} | {mean_average_precision(yt, s, gt):.4f} | "
                  f"{pairwise_disagreement(yt, s, gt):.4f} | {t:.1f} | {chosen}{note} |", flush=True)


if __name__ == "__main__":
    with sklearn.config_context(enable_metadata_routing=True):
        main()
