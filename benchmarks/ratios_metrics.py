"""Time fastrank.metrics against numpy/SciPy/scikit-learn yardsticks in one run; print ratios.

    python benchmarks/ratios_metrics.py [--quick]

Every timing is the best of a few repeats on seeded data.  Ratio = ours / yardstick
(< 1 means fastrank is faster).
"""

import argparse
import time

import numpy as np
import scipy.stats
from sklearn.metrics import average_precision_score, ndcg_score, roc_auc_score

from fastrank import metrics as M


def best(fn, repeat=5):
    ts = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return min(ts)


def best_pair(fn_ours, fn_ref, repeat=9):
    """Best-of times of two functions, repeats interleaved (fair on a shared, noisy machine)."""
    a, b = [], []
    for _ in range(repeat):
        t = time.perf_counter()
        fn_ours()
        a.append(time.perf_counter() - t)
        t = time.perf_counter()
        fn_ref()
        b.append(time.perf_counter() - t)
    return min(a), min(b)


def row(name, ours, ref, ref_name):
    print(f"{name:<58s} {ours * 1e3:9.2f} ms  {ref_name:<28s} {ref * 1e3:9.2f} ms  ratio {ours / ref:6.2f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    m = 10**5 if args.quick else 10**6
    rng = np.random.default_rng(0)
    y = rng.integers(0, 5, m).astype(np.float64)
    f_ties = np.round(rng.normal(size=m) + 0.3 * y, 2)  # ~1100 distinct scores: heavy ties
    f_cont = rng.normal(size=m) + 0.3 * y
    print(f"m = {m}")
    argsort_ties = best(lambda: np.argsort(f_ties))
    argsort_cont = best(lambda: np.argsort(f_cont))
    row("pairwise_disagreement (5 labels, tied scores)",
        *best_pair(lambda: M.pairwise_disagreement(y, f_ties), lambda: np.argsort(f_ties), 15),
        "np.argsort(scores)")
    row("pairwise_disagreement (5 labels, continuous scores)",
        *best_pair(lambda: M.pairwise_disagreement(y, f_cont), lambda: np.argsort(f_cont)), "np.argsort(scores)")
    row("discrete_ranking_loss (5 labels, tied scores)", best(lambda: M.discrete_ranking_loss(y, f_ties)),
        argsort_ties, "np.argsort(scores)")
    yc = rng.normal(size=m)
    row("pairwise_disagreement (continuous labels and scores)",
        best(lambda: M.pairwise_disagreement(yc, f_cont), 3), argsort_cont, "np.argsort(scores)")
    yb = (y > 2).astype(np.float64)
    row("auc (tied scores)", best(lambda: M.auc(yb, f_ties)), best(lambda: roc_auc_score(yb, f_ties), 3),
        "sklearn roc_auc_score")
    a = rng.normal(size=m)
    b = a + rng.normal(size=m)
    row("kendall_distance (continuous)", best(lambda: M.kendall_distance(a, b), 3),
        best(lambda: scipy.stats.kendalltau(a, b), 3), "scipy.stats.kendalltau")
    row("spearman_footrule (continuous)", best(lambda: M.spearman_footrule(a, b), 3),
        best(lambda: np.abs(scipy.stats.rankdata(a) - scipy.stats.rankdata(b)).sum(), 3), "scipy rankdata x2")
    row("m1d", best(lambda: M.m1d(y, f_cont), 3), argsort_cont, "np.argsort(scores)")
    row("msd", best(lambda: M.msd(y, f_cont), 3), argsort_cont, "np.argsort(scores)")
    # pairwise costs / losses of the stability papers: Fenwick-tree sweeps, no pair list
    row("stability_ranking_loss hinge (5 labels)", best(lambda: M.stability_ranking_loss(y, f_cont, loss="hinge"), 3),
        argsort_cont, "np.argsort(scores)")
    row("stability_ranking_loss gamma (two sweeps)",
        best(lambda: M.stability_ranking_loss(y, f_cont, loss="gamma", gamma=0.5), 3), argsort_cont,
        "np.argsort(scores)")
    row("magnitude_preserving_cost hmp, n=2", best(lambda: M.magnitude_preserving_cost(y, f_cont, cost="hmp"), 3),
        argsort_cont, "np.argsort(scores)")
    row("magnitude_preserving_cost svr, n=1, eps=0.5",
        best(lambda: M.magnitude_preserving_cost(y, f_cont, cost="svr", power=1, epsilon=0.5), 3), argsort_cont,
        "np.argsort(scores)")
    # grouped: pairwise disagreement over 10^4 queries of 100 documents, ids shuffled
    n_q, n_d = (1000, 100) if args.quick else (10000, 100)
    g = rng.permutation(np.repeat(np.arange(n_q), n_d))
    yg = rng.integers(0, 5, n_q * n_d).astype(np.float64)
    fg = np.round(rng.normal(size=n_q * n_d) + 0.3 * yg, 1)
    row(f"pairwise_disagreement grouped ({n_q}x{n_d}, n_jobs=1)", best(lambda: M.pairwise_disagreement(yg, fg, g), 3),
        best(lambda: np.argsort(fg), 3), "np.argsort(scores)")
    row(f"pairwise_disagreement grouped ({n_q}x{n_d}, n_jobs=2)",
        best(lambda: M.pairwise_disagreement(yg, fg, g, n_jobs=2), 3), best(lambda: np.argsort(fg), 3),
        "np.argsort(scores)")
    # NDCG on equal-size groups (the only layout sklearn accepts), linear gain, tied scores
    n_q, n_d = (200, 50) if args.quick else (2000, 50)
    Y = rng.integers(0, 4, (n_q, n_d)).astype(np.float64)
    Y[:, 0] = np.maximum(Y[:, 0], 1)
    S = np.round(rng.normal(size=(n_q, n_d)), 1)
    gq = np.repeat(np.arange(n_q), n_d)
    ours = best(lambda: M.ndcg(Y.ravel(), S.ravel(), gq, k=10, gain="linear"), 3)
    ref = best(lambda: ndcg_score(Y, S, k=10), 3)
    row(f"ndcg@10 ({n_q} queries x {n_d}, tied scores)", ours, ref, "sklearn ndcg_score")
    S2 = rng.normal(size=(n_q, n_d))
    ours = best(lambda: M.ndcg(Y.ravel(), S2.ravel(), gq, k=10, gain="linear"), 3)
    ref = best(lambda: ndcg_score(Y, S2, k=10, ignore_ties=True), 3)
    row(f"ndcg@10 ({n_q} queries x {n_d}, no ties; sklearn ignore_ties)", ours, ref, "sklearn ndcg_score")
    # MAP: sklearn has no grouped AP, so the yardstick is one average_precision_score call per query
    Yb = (Y > 1).astype(np.float64)
    Yb[:, 0] = 1.0
    ours = best(lambda: M.mean_average_precision(Yb.ravel(), S2.ravel(), gq), 3)
    ref = best(lambda: np.mean([average_precision_score(Yb[q], S2[q]) for q in range(n_q)]), 3)
    row(f"mean_average_precision ({n_q} queries x {n_d}, no ties)", ours, ref, "sklearn AP per query")
    ours = best(lambda: M.err_at_k(Y.ravel(), S2.ravel(), gq, k=10), 3)
    row(f"err_at_k@10 ({n_q} queries x {n_d})", ours, best(lambda: np.argsort(S2.ravel()), 3), "np.argsort(scores)")
    # tied scores: every measure takes the expectation over the orders of the tie (per tied block)
    ours = best(lambda: M.mean_average_precision(Yb.ravel(), S.ravel(), gq), 3)
    ref = best(lambda: np.mean([average_precision_score(Yb[q], S[q]) for q in range(n_q)]), 3)
    row(f"mean_average_precision ({n_q} queries x {n_d}, tied scores)", ours, ref, "sklearn AP per query")
    ours = best(lambda: M.err_at_k(Y.ravel(), S.ravel(), gq, k=10), 3)
    row(f"err_at_k@10 ({n_q} queries x {n_d}, tied scores)", ours, best(lambda: np.argsort(S.ravel()), 3),
        "np.argsort(scores)")


if __name__ == "__main__":
    main()
