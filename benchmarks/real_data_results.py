"""Which feature normalisation `fastrank train --normalize auto` uses: test NDCG@10 of linear
RankRLS on the bundled LightGBM sample and on raw MSLR-style features (the generator of
tests/test_cli.py), for every normalisation, at the default alpha = 1, with alpha tuned on held-out
training queries (every fifth query), and the best of the grid on the test set (an upper bound).

    python benchmarks/real_data_results.py        # prints a Markdown table (about a minute)
"""

import sys
import warnings
from pathlib import Path

import numpy as np

import fastrank
from fastrank.datasets import load_lambdarank
from fastrank.metrics import ndcg
from fastrank.preprocessing import NORMALIZERS, make_normalizer

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from test_cli import _raw_letor  # noqa: E402

ALPHAS = np.logspace(-2, 6, 17)


def path_ndcg(A, y, q, At, yt, qt):
    path = fastrank.rankrls_path(A, y, ALPHAS, groups=q)
    return np.array([ndcg(yt, path.fitted_estimator(k).predict(At), qt, k=10) for k in range(ALPHAS.size)])


def main():
    d = load_lambdarank()
    sets = {"bundled LightGBM sample": (d.X_train, d.y_train, d.groups_train, d.X_test, d.y_test, d.groups_test)}
    X, y, q = _raw_letor(1, 120)
    Xt, yt, qt = _raw_letor(2, 60)
    sets[f"raw MSLR-style synthetic ({X.shape[1]} features, {X.shape[0]} rows)"] = (X, y, q, Xt, yt, qt)
    print("| data | normalisation | alpha = 1 | tuned | best |\n|---|---|---|---|---|")
    for name, (X, y, q, Xt, yt, qt) in sets.items():
        val = np.isin(q, np.unique(q)[::5])
        for norm in NORMALIZERS:
            t = make_normalizer(norm)
            if t is None:
                A, At = X, Xt
            elif norm.startswith("query-"):
                A, At = t.fit_transform(X, groups=q), t.transform(Xt, groups=qt)
            else:
                A, At = t.fit_transform(X), t.transform(Xt)
            cells = []
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    cells.append(f"{ndcg(yt, fastrank.RankRLS(alpha=1.0).fit(A, y, q).predict(At), qt, k=10):.4f}")
                except fastrank.LinAlgError:
                    cells.append("fails (`LinAlgError`)")
                try:
                    test = path_ndcg(A, y, q, At, yt, qt)
                    k = int(np.argmax(path_ndcg(A[~val], y[~val], q[~val], A[val], y[val], q[val])))
                    cells += [f"{test[k]:.4f}", f"{test.max():.4f}"]
                except fastrank.LinAlgError:
                    cells += ["fails", "—"]
            print(f"| {name} | {norm} | " + " | ".join(cells) + " |", flush=True)
            name = ""


if __name__ == "__main__":
    main()
