"""``python -m fastrank``: a short real demo on the bundled LightGBM lambdarank sample.

Fits RankRLS with query groups (linear primal, and a Gaussian-kernel dual), picks alpha from a
31-value regularization path by validation on held-out training queries, and prints test
pairwise disagreement, NDCG@10 and timings next to ridge regression.
"""

from __future__ import annotations

import argparse

import numpy as np

import fastrank

from ._progress import stage
from .datasets import load_lambdarank
from .metrics import ndcg, pairwise_disagreement
from .plotting import CVCurveDisplay


def lambdarank_comparison(verbose=0):
    """Query-group RankRLS (linear primal, Gaussian dual) against ridge regression on the bundled
    LightGBM sample.  Each model's alpha is chosen from 31 values (a RankRLS regularization
    path, eq. 31) by pairwise disagreement on the last fifth of the training queries, then
    refit on all training data.  Returns the data summary and one dict per model."""
    from sklearn.linear_model import Ridge

    data = load_lambdarank()
    Xtr, ytr, gtr = data.X_train, data.y_train, data.groups_train
    Xte, yte, gte = data.X_test, data.y_test, data.groups_test
    queries = np.unique(gtr)
    val = np.isin(gtr, queries[-len(queries) // 5:])
    alphas = np.logspace(-2, 4, 31)

    def val_error(pred):
        return pairwise_disagreement(ytr[val], pred, gtr[val])

    def test_row(name, alpha, t_select, fit):
        with stage(f"{name}: final fit") as st:  # verbose=0: its time only
            model = fit(alpha)
        pred = model.predict(Xte)
        return dict(model=name, alpha=float(alpha), disagreement=pairwise_disagreement(yte, pred, gte),
                    ndcg10=ndcg(yte, pred, gte, k=10), select_seconds=t_select, fit_seconds=st.elapsed)

    rows = []
    for name, est in (
        ("RankRLS linear (primal)", fastrank.RankRLS(solver="primal", group_weighting="normalized")),
        ("RankRLS Gaussian (dual)", fastrank.RankRLS(kernel="rbf", gamma=3e-3, group_weighting="normalized")),
    ):
        with stage(f"{name}: regularization path over {alphas.size} alphas", verbose=verbose) as st:
            path = fastrank.rankrls_path(Xtr[~val], ytr[~val], alphas, groups=gtr[~val], estimator=est)
        errors = np.array([val_error(p) for p in path.predict(Xtr[val])])
        alpha = alphas[int(np.argmin(errors))]
        rows.append(test_row(name, alpha, st.elapsed, lambda a: est.set_params(alpha=a).fit(Xtr, ytr, gtr)))
        rows[-1]["validation_curve"] = (alphas, errors)  # for --plot

    with stage(f"ridge regression: {alphas.size} alphas", verbose=verbose) as st:
        alpha = min(alphas, key=lambda a: val_error(Ridge(alpha=a).fit(Xtr[~val], ytr[~val]).predict(Xtr[val])))
    rows.append(test_row("ridge regression (sklearn)", alpha, st.elapsed, lambda a: Ridge(alpha=a).fit(Xtr, ytr)))
    summary = (f"LightGBM lambdarank sample (MIT), train {Xtr.shape[0]} rows / {queries.size} queries, "
               f"test {Xte.shape[0]} rows / {np.unique(gte).size} queries, {Xtr.shape[1]} features")
    return summary, rows


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m fastrank", description=__doc__.splitlines()[0])
    parser.add_argument("--plot", metavar="PNG", default=None, help="also write the Gaussian model's validation curve "
                        "(score vs alpha) to a PNG file (needs matplotlib)")
    args = parser.parse_args(argv)
    if args.plot:  # checked before the comparison: the plot comes last
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            parser.error('--plot needs matplotlib (pip install matplotlib, or pip install "fastrank-rls[plot]")')
    summary, rows = lambdarank_comparison(verbose=1)  # progress on stderr while alpha is selected
    print(f"fastrank {fastrank.__version__}: {summary}")
    print(f"\n{'model':<28} {'alpha':>9} {'test disagreement':>18} {'test NDCG@10':>13} "
          f"{'select alpha':>13} {'final fit':>10}")
    for r in rows:
        print(f"{r['model']:<28} {r['alpha']:9.3g} {r['disagreement']:18.4f} {r['ndcg10']:13.4f} "
              f"{r['select_seconds']:11.3f} s {r['fit_seconds']:8.3f} s")
    print("\n(disagreement: fraction of within-query pairs ordered wrongly, mean over test queries, lower is "
          "better;\n NDCG@10 with exponential gain; alpha chosen from 31 values on held-out training queries)")
    if args.plot:
        write_cv_plot(rows[1], args.plot)
        print(f"\nvalidation curve of the {rows[1]['model']} model written to {args.plot}")
    return rows


def write_cv_plot(row, path):
    """PNG of a demo row's validation curve (disagreement vs alpha, chosen alpha marked), drawn on a
    matplotlib Figure without pyplot (no GUI backend needed)."""
    from matplotlib.figure import Figure

    alphas, errors = row["validation_curve"]
    fig = Figure(figsize=(6, 4))
    disp = CVCurveDisplay(alphas, errors, best_alpha=row["alpha"], scoring="disagreement",
                          cv="held-out training queries", label="validation score").plot(ax=fig.subplots())
    disp.ax_.set_title(f"{row['model']}\nalpha chosen on held-out training queries", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=100, format="png")  # without it a name with no extension got ".png" appended
    return disp
