"""Print fastrank / yardstick time ratios for RankSVM, measured in one run.

    python benchmarks/ratios_ranksvm.py [--quick] [--skip-large]

1. Linear L2-loss RankSVM, m=20,000, n=50 dense, 200 query groups x 100 rows, 5 relevance levels
   (~800k preference pairs), against the pairs recipe: build the difference vectors x_i - x_j of
   every preference pair (random signs so both classes occur; the objective is unchanged) and fit
   ``LinearSVC(loss="squared_hinge", fit_intercept=False, C=C)`` -- pair construction included.
   Both objectives are evaluated by the same explicit formula.
2. m=1,000,000 (8000 groups x 125 rows, 5 levels, ~50M pairs): one loss + gradient evaluation
   (X w, the pair-free oracle, X^T g) against numpy's ``X @ w`` + ``X.T @ g``; then the whole fit.
3. Kernel (Gaussian) RankSVM, m=4,000, 40 groups x 100, against one
   ``RankRLS(kernel="rbf", solver="dual")`` fit with the same groups.
4. Hinge against squared hinge, linear, m=20,000, n=50, one group of continuous targets (~200M
   pairs), C=1: one hinge fit over one squared-hinge fit (target <= 5x), wall time and one-thread
   CPU time.
5. A C grid of 13 values (10^-3 .. 10^3), squared hinge, same data: ``ranksvm_path`` (warm starts)
   over one squared-hinge fit (target <= 3x), and the 13 independent fits for comparison.
6. Gaussian hinge RankSVM (cutting planes), m=1000 and 2000, groups x 100, C=0.1, against one Gaussian
   squared-hinge fit of the same data.
7. Linear hinge with tied integer targets in groups of ~20 and many features (m=10,000 x 700 at 5% density, dense
   and CSR, C=1, fit to tol=1e-6 with max_iter=3000) against ``LinearSVC(loss="hinge")`` (liblinear's dual coordinate
   descent, tol=1e-4, max_iter=100,000) on the explicit pairs, pair construction included; both objectives by the
   same formula.
"""

import sys
import time
import warnings

import numpy as np

import fastrank
import fastrank._validation
from fastrank import _core
from fastrank._ranksvm import _LOSSES, _group_structure

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from common import best_time  # noqa: E402


def query_data(m, n, group_size, levels=5, seed=0):
    """Query groups of `group_size` rows; labels 0..levels-1 by within-group quantiles of a noisy
    linear score (so every group has all levels)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, n))
    s = X @ rng.normal(size=n) + rng.normal(size=m)
    groups = np.repeat(np.arange(m // group_size), group_size)
    S = s.reshape(-1, group_size)
    ranks = S.argsort(axis=1).argsort(axis=1)
    y = (ranks * levels // group_size).reshape(-1).astype(np.float64)
    return X, y, groups


def explicit_pairs(y, groups, group_size):
    """Row indices (i, j) of every pair with y_i > y_j inside a group (contiguous equal groups)."""
    Y = y.reshape(-1, group_size)
    q, a, b = np.nonzero(Y[:, :, None] > Y[:, None, :])
    return q * group_size + a, q * group_size + b


def objective(X, w, y, groups, C, loss="squared_hinge"):
    f = np.ascontiguousarray(X @ w, dtype=np.float64)
    kw = _group_structure(np.ascontiguousarray(y, dtype=np.float64), groups, f.shape[0])
    L = _core.ranksvm_pairwise_loss(f, _LOSSES[loss], 1, **kw)[0]
    return 0.5 * w @ w + C * L


def row(name, ours, ref, target, extra=""):
    ratio = ours / ref
    print(f"{name:<58} {ours:9.3f} s {ref:9.3f} s {ratio:8.3f}x  (target {target}) {extra}")


def case_pairs_recipe(m=20_000, n=50, C=0.1):
    from sklearn.svm import LinearSVC

    X, y, groups = query_data(m, n, 100)
    t0 = time.perf_counter()
    est = fastrank.RankSVM(C=C, tol=1e-8).fit(X, y, groups)
    t_ours = time.perf_counter() - t0
    t_ours = min(t_ours, best_time(lambda: fastrank.RankSVM(C=C, tol=1e-8).fit(X, y, groups), 2))

    def recipe():
        i, j = explicit_pairs(y, groups, 100)
        D = X[i] - X[j]
        sign = np.where(np.random.default_rng(0).random(i.size) < 0.5, -1.0, 1.0)
        D *= sign[:, None]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            svc = LinearSVC(loss="squared_hinge", fit_intercept=False, dual=False, C=C, tol=1e-6,
                            max_iter=10000).fit(D, sign)
        return svc, i.size

    t0 = time.perf_counter()
    svc, n_pairs = recipe()
    t_ref = time.perf_counter() - t0
    f_ours, f_svc = objective(X, est.coef_, y, groups, C), objective(X, svc.coef_[0], y, groups, C)
    print(f"  m={m}, n={n}, {m // 100} groups, 5 levels: {n_pairs} pairs; RankSVM {est.n_iter_} Newton iterations")
    print(f"  objective fastrank {f_ours:.10g}, LinearSVC {f_svc:.10g}, relative difference "
          f"{(f_svc - f_ours) / f_ours:.2e}")
    row(f"linear L2 RankSVM m={m} vs pairs + LinearSVC", t_ours, t_ref, ">= 20x faster",
        f"-> {t_ref / t_ours:.1f}x faster")
    t_l1 = best_time(lambda: fastrank.RankSVM(C=C, loss="hinge").fit(X, y, groups), 1)
    l1 = fastrank.RankSVM(C=C, loss="hinge").fit(X, y, groups)
    print(f"  (hinge loss, same data, tol=1e-6 relative gap: {t_l1:.3f} s, {l1.n_iter_} steps of the smoothed Newton "
          "solve, then cutting planes where it cannot certify)")


def case_large(m=1_000_000, n=50, C=0.01):
    X, y, groups = query_data(m, n, 125, seed=1)
    gi = fastrank._validation.group_index(groups, m)
    oracle = _core.ranksvm_oracle(y, gi.order, gi.offsets)
    w = np.random.default_rng(2).normal(size=n) * 0.1
    g = np.random.default_rng(3).normal(size=m)
    n_threads = fastrank._validation.check_n_jobs(None)
    t_ours = best_time(lambda: oracle(X, w, 0, n_threads), 5)
    t_ref = best_time(lambda: (X @ w, X.T @ g), 5)
    row(f"loss+gradient m={m} n={n} vs numpy X@w + X.T@g", t_ours, t_ref, "<= 3x")
    t0 = time.perf_counter()
    est = fastrank.RankSVM(C=C).fit(X, y, groups)
    t_fit = time.perf_counter() - t0
    print(f"  whole fit, squared hinge, C={C}, tol=1e-6: {t_fit:.2f} s, {est.n_iter_} Newton iterations, "
          f"{est.n_pairs_:.0f} pairs, objective {est.objective_:.8g}")


def case_kernel(m=4000, n=50, C=0.1):
    X, y, groups = query_data(m, n, 100, seed=4)
    gamma = 1.0 / n
    est = fastrank.RankSVM(C=C, kernel="rbf", gamma=gamma).fit(X, y, groups)
    t_ours = best_time(lambda: fastrank.RankSVM(C=C, kernel="rbf", gamma=gamma).fit(X, y, groups), 2)
    t_ref = best_time(lambda: fastrank.RankRLS(alpha=1.0, kernel="rbf", gamma=gamma, solver="dual").fit(X, y, groups),
                      2)
    row(f"Gaussian kernel RankSVM m={m} vs RankRLS dual fit", t_ours, t_ref, "<= 10x",
        f"({est.n_iter_} Newton iterations)")


def case_kernel_hinge(m=1000, n=50, C=0.1):
    X, y, groups = query_data(m, n, 100)
    gamma = 1.0 / n
    est = fastrank.RankSVM(C=C, loss="hinge", kernel="rbf", gamma=gamma).fit(X, y, groups)
    t_ours = best_time(lambda: fastrank.RankSVM(C=C, loss="hinge", kernel="rbf", gamma=gamma).fit(X, y, groups), 1)
    t_ref = best_time(lambda: fastrank.RankSVM(C=C, kernel="rbf", gamma=gamma).fit(X, y, groups), 2)
    row(f"Gaussian hinge RankSVM m={m} vs squared hinge", t_ours, t_ref, "none set",
        f"({est.n_iter_} cutting planes, converged={est.converged_})")


def object_ranking_data(m, n=50, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, n))
    return X, X @ rng.standard_normal(n) + rng.standard_normal(m)


def case_hinge(m=20_000, n=50):
    X, y = object_ranking_data(m, n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a stopped hinge fit still times what a user waits for
        t_hinge = best_time(lambda: fastrank.RankSVM(loss="hinge").fit(X, y), 2)
        hinge = fastrank.RankSVM(loss="hinge").fit(X, y)
    t_sq = best_time(lambda: fastrank.RankSVM().fit(X, y), 3)
    row(f"hinge RankSVM m={m} vs one squared-hinge fit", t_hinge, t_sq, "<= 5x",
        f"({hinge.n_iter_} Newton steps, converged={hinge.converged_}, gap certified to tol=1e-6)")
    c_hinge = best_time(lambda: fastrank.RankSVM(loss="hinge", n_jobs=1).fit(X, y), 3, time.process_time)
    c_sq = best_time(lambda: fastrank.RankSVM(n_jobs=1).fit(X, y), 5, time.process_time)
    row(f"  the same, 1 thread, CPU time", c_hinge, c_sq, "<= 5x")


def case_path(m=20_000, n=50):
    X, y = object_ranking_data(m, n)
    Cs = np.logspace(-3, 3, 13)
    t_path = best_time(lambda: fastrank.ranksvm_path(X, y, Cs), 2)
    t_one = best_time(lambda: fastrank.RankSVM().fit(X, y), 3)
    t_cold = best_time(lambda: [fastrank.RankSVM(C=C).fit(X, y) for C in Cs], 1)
    row(f"ranksvm_path 13 C m={m} vs one squared-hinge fit", t_path, t_one, "<= 3x",
        f"(13 cold fits: {t_cold / t_one:.1f}x)")


def case_hinge_tied(m=10_000, n=700, density=0.05, C=1.0):
    import scipy.sparse as sp
    from sklearn.svm import LinearSVC

    rng = np.random.default_rng(0)
    X = rng.standard_normal((m, n))
    X[rng.random((m, n)) > density] = 0.0
    y = np.round(X @ rng.standard_normal(n) + rng.standard_normal(m))
    groups = np.sort(rng.integers(0, m // 20, m))

    def recipe():
        heads, tails = [], []
        for q in np.unique(groups):
            rows = np.flatnonzero(groups == q)
            a, b = np.triu_indices(rows.size, 1)
            heads.append(rows[a])
            tails.append(rows[b])
        i, j = np.concatenate(heads), np.concatenate(tails)
        sign = np.sign(y[i] - y[j])
        keep = sign != 0
        D = (X[i] - X[j])[keep] * sign[keep][:, None]
        flip = np.where(np.random.default_rng(1).random(D.shape[0]) < 0.5, -1.0, 1.0)  # both classes occur
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return LinearSVC(loss="hinge", dual=True, fit_intercept=False, C=C, tol=1e-4,
                             max_iter=100_000).fit(D * flip[:, None], flip), D.shape[0]

    t0 = time.perf_counter()
    svc, n_pairs = recipe()
    t_ref = time.perf_counter() - t0
    f_svc = objective(X, svc.coef_[0], y, groups, C, "hinge")
    for name, data in (("dense", X), ("CSR", sp.csr_matrix(X))):
        t0 = time.perf_counter()
        est = fastrank.RankSVM(loss="hinge", C=C, max_iter=3000).fit(data, y, groups)
        t_ours = time.perf_counter() - t0
        f_ours = objective(X, est.coef_, y, groups, C, "hinge")
        row(f"hinge, tied targets in groups, {name} m={m} x {n} vs pairs + LinearSVC", t_ours, t_ref, "faster",
            f"({est.n_iter_} steps, converged={est.converged_})")
    print(f"  {n_pairs} pairs; objective fastrank {f_ours:.10g}, LinearSVC {f_svc:.10g} ({svc.n_iter_} iterations), "
          f"relative difference {(f_svc - f_ours) / f_ours:.2e}")


def main(quick=False, skip_large=False):
    print(f"{'case':<58} {'fastrank':>11} {'yardstick':>11} {'ratio':>9}")
    case_pairs_recipe(m=5000 if quick else 20_000)
    if not skip_large:
        case_large(m=100_000 if quick else 1_000_000)
    case_kernel(m=1000 if quick else 4000)
    case_path(m=5000 if quick else 20_000)
    case_hinge(m=2000 if quick else 20_000)
    for m in (500,) if quick else (1000, 2000):
        case_kernel_hinge(m)
    case_hinge_tied(m=2000, n=140) if quick else case_hinge_tied()


if __name__ == "__main__":
    main(quick="--quick" in sys.argv, skip_large="--skip-large" in sys.argv)
