"""Print fastrank / yardstick time ratios for exact cross-validation, measured in one run.

    python benchmarks/ratios_cv.py [--quick]      (--quick skips m = 4000)

Yardsticks (numpy / SciPy, as a user would write them):
* LPO over all pairs, one alpha: numpy Gaussian kernel + one numpy.linalg.eigh (target <= 1.5x).
* Pair phase alone: ns per pair at each m with 1 and 2 threads (must not grow with m).
* 31-alpha LPO grid (RankRLSCV, m = 2000): one eigh + 31 x (one m x m product) + 31 pair phases
  (target <= 1x).
* Leave-group-out, m = 2000 in 100 groups: one RankRLS fit with groups (target <= 1.3x).
"""

import sys

import numpy as np

import fastrank
from fastrank._exactcv import engine_for
from fastrank import _core
from fastrank import model_selection as ms

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from common import best_time, dense_regression, grouped_regression, numpy_gaussian_kernel  # noqa: E402


def paired(ours, ref, repeat):
    """Best times of ours and the yardstick, runs interleaved so both see the same machine load."""
    a = b = np.inf
    for _ in range(repeat):
        a = min(a, best_time(ours, 1))
        b = min(b, best_time(ref, 1))
    return a, b


def row(name, ours, ref, target):
    print(f"{name:<52} {ours:9.3f} s {ref:9.3f} s {ours / ref:7.2f}x   (target <= {target}x)", flush=True)


def main(quick=False):
    print(f"{'case':<52} {'fastrank':>11} {'yardstick':>11} {'ratio':>8}")
    g = 1.0 / 50
    sizes = [1000, 2000] if quick else [1000, 2000, 4000]
    phase = {}
    for m in sizes:
        rep = 1 if m >= 4000 else 4
        X, y = dense_regression(m, 50)
        est = fastrank.RankRLS(alpha=1.0, kernel="rbf", gamma=g, n_jobs=2)
        t_ours, t_ref = paired(lambda: ms.leave_pair_out(est, X, y),
                               lambda: np.linalg.eigh(numpy_gaussian_kernel(X, g)), rep)
        row(f"LPO all pairs m={m} vs numpy kernel+eigh", t_ours, t_ref, 1.5)
        prob = engine_for(est, X, y)  # the spectral pair phase (shared by a grid of alphas)
        V, s = prob.decompose()
        M, mu, h = _core.cv_object_prepare(prob.K, V, s, prob.c, prob.alpha, prob.Yg)
        pairs = prob.default_pairs()
        for nt in (1, 2):
            t = best_time(lambda: _core.cv_object_lpo_pairs(M, mu, h, prob.Yg, 1.0, pairs, nt), 3)
            t2 = best_time(lambda: _core.cv_object_lpo_disagreement(M, mu, h, prob.Yg, 1.0, pairs, nt), 3)
            phase[(m, nt)] = t2
            print(f"    pair phase m={m} threads={nt} ({pairs.shape[0]} pairs): predictions "
                  f"{1e9 * t / pairs.shape[0]:.2f} ns/pair, fused LPO-AUC scoring "
                  f"{1e9 * t2 / pairs.shape[0]:.2f} ns/pair", flush=True)
        del prob, V, M, pairs

    m = 2000
    X, y = dense_regression(m, 50)
    alphas = np.logspace(-4, 4, 31)
    cv = fastrank.RankRLSCV(alphas=alphas, cv="lpo", kernel="rbf", gamma=g, n_jobs=2)
    t_ours = best_time(lambda: cv.fit(X, y), 1)
    K = numpy_gaussian_kernel(X, g)
    t_eigh = best_time(lambda: np.linalg.eigh(K), 1)
    t_mm = best_time(lambda: K @ K, 2)
    t_ref = t_eigh + 31 * t_mm + 31 * phase[(m, 2)]
    row("RankRLSCV LPO 31 alphas m=2000 vs eigh+31(mm+pairs)", t_ours, t_ref, 1.0)

    est_lin = fastrank.RankRLS(alpha=1.0, kernel="linear", n_jobs=2)
    t_ours = best_time(lambda: ms.leave_pair_out(est_lin, X, y), 2)
    t_ref = best_time(lambda: ms.leave_pair_out(est_lin.set_params(solver="dual"), X, y), 1)
    est_lin.set_params(solver="auto")
    row("LPO linear m=2000 n=50: solver auto vs dual", t_ours, t_ref, "-")

    # exclude_ties=True on targets without ties: the plain model's routes (its Laplacian is the plain one)
    cv_ties = fastrank.RankRLSCV(alphas=alphas[::6], cv="lpo", kernel="rbf", gamma=g, n_jobs=2, exclude_ties=True)
    t_ours, t_ref = paired(lambda: cv_ties.fit(X, y), lambda: cv_ties.set_params(exclude_ties=False).fit(X, y), 2)
    cv_ties.set_params(exclude_ties=True)
    row("RankRLSCV LPO 6 alphas exclude_ties, untied y m=2000", t_ours, t_ref, 1.1)

    # the tie route on graded targets with many tie cells: one factor per pair of cells, against retraining per pair
    Xt, yt = X[:150], np.round(y[:150], 1)
    est_t = fastrank.RankRLS(alpha=1.0, kernel="rbf", gamma=g, exclude_ties=True)
    pairs = engine_for(est_t, Xt, yt).default_pairs()
    t_ours = best_time(lambda: ms.leave_pair_out(est_t, Xt, yt, pairs=pairs), 1) / pairs.shape[0]
    sample = pairs[np.random.default_rng(0).choice(pairs.shape[0], 200, replace=False)]
    keep = [np.setdiff1d(np.arange(150), p) for p in sample]
    t_ref = best_time(lambda: [est_t.fit(Xt[k], yt[k]) for k in keep], 1) / sample.shape[0]
    print(f"{'tie-excluding LPO m=150, ' + str(np.unique(yt).size) + ' tie cells: per pair vs refit':<52} "
          f"{1e3 * t_ours:9.3f} ms {1e3 * t_ref:8.3f} ms {t_ours / t_ref:7.2f}x   (target <= -x)", flush=True)

    X, y, groups = grouped_regression(m, 50, 100)
    est = fastrank.RankRLS(alpha=1.0, kernel="rbf", gamma=g, n_jobs=2)
    t_ours, t_ref = paired(lambda: ms.leave_group_out(est, X, y, groups), lambda: est.fit(X, y, groups), 5)
    row("leave-group-out m=2000 100 groups vs one fit", t_ours, t_ref, 1.3)
    t_ours, t_ref = paired(lambda: ms.leave_pair_out(est, X, y, groups=groups),
                           lambda: np.linalg.eigh(numpy_gaussian_kernel(X, g)), 3)
    row("query LPO m=2000 100 groups vs numpy kernel+eigh", t_ours, t_ref, 1.5)


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
