"""fastrank RankRLS against LightGBM and XGBoost rankers on the bundled LightGBM lambdarank sample.

Benchmark-only dependencies (not needed by fastrank itself)::

    pip install lightgbm xgboost

Run from the repository root (about 2-5 minutes on one core)::

    OPENBLAS_NUM_THREADS=1 PYTHONPATH=python python benchmarks/peer_comparison.py

Every model sees the same split (``fastrank.datasets.load_lambdarank()``: 3005 training rows in
201 queries, 768 test rows in 50 queries) and is scored by the same functions:
``fastrank.metrics.ndcg(k=10)`` (exponential gain), ``pairwise_disagreement`` (ties count 1/2)
and ``mean_average_precision`` (relevant: label > 0), each a mean over test queries.

Hyper-parameters are chosen on the training set only, by mean NDCG@10 over training queries of
held-out predictions:

- RankRLS: ``RankRLSCV(cv="lgo", scoring="ndcg@10")`` (exact leave-one-query-out) over 13 alphas,
  for both group weightings (linear) or over a small gamma grid (Gaussian, unweighted groups);
- LightGBM / XGBoost: 3-fold ``GroupKFold`` over queries on a small grid; the number of trees
  is read off one fit of the largest forest per fold (predictions after 50, 100, 200, 400 trees),
  so that axis of the grid costs no extra fits.

Every library runs on one thread (``n_jobs=1``, ``OPENBLAS_NUM_THREADS=1``) with fixed seeds, so
the "final fit" column (one fit on all training data with the chosen hyper-parameters) compares.
The output is a markdown table plus the chosen hyper-parameters.
"""

from __future__ import annotations

import importlib
import itertools
import platform
import time

import numpy as np
from sklearn.base import clone
from sklearn.model_selection import GroupKFold

import fastrank
from fastrank.datasets import load_lambdarank
from fastrank.metrics import mean_average_precision, ndcg, pairwise_disagreement
from fastrank.utils import group_order, qid_from_groups, sizes_from_groups

SEED = 0
N_FOLDS = 3
TREE_COUNTS = (50, 100, 200, 400)
ALPHAS = np.logspace(-3, 3, 13)
GAMMAS = (1e-3, 3e-3, 1e-2)
WEIGHTINGS = ("unweighted", "normalized")


def _timed(fn):
    """(result, wall seconds, CPU seconds of this process); on a shared machine the CPU time is the
    steadier figure (every library runs on one thread, so it is not inflated by parallelism)."""
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - t0, time.process_time() - c0


def test_measures(y, s, g):
    return dict(ndcg10=ndcg(y, s, g, k=10), disagreement=pairwise_disagreement(y, s, g),
                map=mean_average_precision(y, s, g))


# ---------------------------------------------------------------------------------------- RankRLS
def select_rankrls(X, y, g, kernel):
    """Best (CV NDCG@10, RankRLSCV) over the gamma x group-weighting grid; alpha inside RankRLSCV."""
    best = None
    # the Gaussian LGO path costs ~30 s per (gamma, weighting) on one core: weighting is tried on
    # the linear model only (both chose "unweighted" in a trial run with both).
    grid = itertools.product(GAMMAS, ("unweighted",)) if kernel == "rbf" else itertools.product((None,), WEIGHTINGS)
    for gamma, weighting in grid:
        cv = fastrank.RankRLSCV(ALPHAS, cv="lgo", scoring="ndcg@10", kernel=kernel, gamma=gamma,
                                group_weighting=weighting, n_jobs=1, store_cv_predictions=False).fit(X, y, g)
        if best is None or cv.best_score_ > best[0]:
            best = (cv.best_score_, cv, dict(alpha=cv.alpha_, gamma=gamma, group_weighting=weighting))
    return best


# ----------------------------------------------------------------------------------- tree rankers
def _lgbm(params):
    import lightgbm as lgb

    return lgb.LGBMRanker(objective="lambdarank", n_jobs=1, random_state=SEED, verbose=-1, **params)


def _xgb(params):
    import xgboost as xgb

    return xgb.XGBRanker(objective="rank:ndcg", tree_method="hist", n_jobs=1, random_state=SEED, **params)


def _fit_tree(lib, est, X, y, g):
    """X, y, g with each query's rows contiguous (group_order applied by the caller)."""
    if lib == "lightgbm":
        return est.fit(X, y, group=sizes_from_groups(g))
    return est.fit(X, y, qid=qid_from_groups(g))


def _predict_tree(lib, est, X, n_trees):
    if lib == "lightgbm":
        return est.predict(X, num_iteration=n_trees)
    return est.predict(X, iteration_range=(0, n_trees))


def select_trees(lib, grid, X, y, g):
    """Grouped K-fold CV on the training set: best (mean NDCG@10 over training queries of the
    out-of-fold predictions, params).  Same measure and averaging as RankRLSCV's scoring."""
    folds = list(GroupKFold(n_splits=N_FOLDS).split(X, y, g))
    make = _lgbm if lib == "lightgbm" else _xgb
    best = None
    for values in itertools.product(*grid.values()):
        params = dict(zip(grid, values), n_estimators=max(TREE_COUNTS))
        oof = np.empty((len(TREE_COUNTS), y.size))
        for tr, te in folds:
            est = _fit_tree(lib, make(params), X[tr], y[tr], g[tr])
            for k, n in enumerate(TREE_COUNTS):
                oof[k, te] = _predict_tree(lib, est, X[te], n)
        for k, n in enumerate(TREE_COUNTS):
            score = ndcg(y, oof[k], g, k=10)
            if best is None or score > best[0]:
                best = (score, dict(params, n_estimators=n))
    return best


LGBM_GRID = dict(learning_rate=(0.05, 0.1), num_leaves=(7, 31), min_child_samples=(5, 20))
XGB_GRID = dict(learning_rate=(0.05, 0.1), max_depth=(3, 6), min_child_weight=(0.1, 1.0))


def main():
    d = load_lambdarank()
    order_tr, order_te = group_order(d.groups_train), group_order(d.groups_test)
    Xtr, ytr, gtr = d.X_train[order_tr], d.y_train[order_tr], d.groups_train[order_tr]
    Xte, yte, gte = d.X_test[order_te], d.y_test[order_te], d.groups_test[order_te]
    Xtr, Xte = np.ascontiguousarray(Xtr), np.ascontiguousarray(Xte)

    rows = []
    for name, kernel in (("fastrank RankRLS, linear", "linear"), ("fastrank RankRLS, Gaussian", "rbf")):
        (cv_score, cv, params), t_sel, _ = _timed(lambda: select_rankrls(Xtr, ytr, gtr, kernel))
        model, t_fit, c_fit = _timed(lambda: clone(cv.best_estimator_).fit(Xtr, ytr, gtr))
        rows.append(dict(model=name, params=params, cv_ndcg10=cv_score, select_s=t_sel, fit_s=t_fit, fit_cpu=c_fit,
                         **test_measures(yte, model.predict(Xte), gte)))

    versions = {}
    for name, lib, grid in (("LightGBM LGBMRanker (lambdarank)", "lightgbm", LGBM_GRID),
                            ("XGBoost XGBRanker (rank:ndcg)", "xgboost", XGB_GRID)):
        try:
            versions[lib] = importlib.import_module(lib).__version__
        except ImportError:
            print(f"{lib} is not installed: its rows are skipped (pip install {lib}).")
            continue
        (cv_score, params), t_sel, _ = _timed(lambda: select_trees(lib, grid, Xtr, ytr, gtr))
        make = _lgbm if lib == "lightgbm" else _xgb
        model, t_fit, c_fit = _timed(lambda: _fit_tree(lib, make(params), Xtr, ytr, gtr))
        rows.append(dict(model=name, params=params, cv_ndcg10=cv_score, select_s=t_sel, fit_s=t_fit, fit_cpu=c_fit,
                         **test_measures(yte, model.predict(Xte), gte)))

    import sklearn

    print(f"Python {platform.python_version()}, numpy {np.__version__}, scikit-learn {sklearn.__version__}, "
          f"fastrank {fastrank.__version__}" + "".join(f", {lib} {v}" for lib, v in versions.items()))
    print(f"LightGBM lambdarank sample: train {Xtr.shape[0]} rows / {np.unique(gtr).size} queries, "
          f"test {Xte.shape[0]} rows / {np.unique(gte).size} queries, {Xtr.shape[1]} features; one thread\n")
    print("| model | test NDCG@10 ↑ | test pairwise disagreement ↓ | test MAP ↑ | train CV NDCG@10 | "
          "final fit CPU (s) | final fit wall (s) | selection wall (s) |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['model']} | {r['ndcg10']:.4f} | {r['disagreement']:.4f} | {r['map']:.4f} | "
              f"{r['cv_ndcg10']:.4f} | {r['fit_cpu']:.3f} | {r['fit_s']:.3f} | {r['select_s']:.1f} |")
    print("\nChosen hyper-parameters (training set only):")
    for r in rows:
        print(f"- {r['model']}: " + ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}"
                                              for k, v in r["params"].items() if v is not None))
    print(f"\nSelection: RankRLSCV(cv='lgo', scoring='ndcg@10') over {ALPHAS.size} alphas "
          f"{ALPHAS[0]:g}..{ALPHAS[-1]:g} x group_weighting {WEIGHTINGS} (linear)"
          f" / x gamma {GAMMAS} (Gaussian); trees: {N_FOLDS}-fold GroupKFold over queries, "
          f"n_estimators {TREE_COUNTS} x {LGBM_GRID} (LightGBM) / {XGB_GRID} (XGBoost).")
    return rows


if __name__ == "__main__":
    main()
