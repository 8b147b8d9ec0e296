"""Exact k folds of the Gaussian-kernel RankRLS at one alpha against numpy/SciPy retraining without each fold, and
the per-alpha cost of the two routes of hold-out sets, measured in one run.

    python benchmarks/ratios_holdout_sets.py [--cpu] [--m M]

Cases (m = 2000 by default, 5 folds, d = 5, groups of 20 rows):
* kfold: model_selection.kfold_predictions (kernel + Cholesky factors) vs the numpy kernel + 5 SciPy Cholesky
  retrainings (S_T K_TT S_T + alpha I) u = S_T y_T, predictions K_UT S_T u: object ranking, folds of whole groups,
  folds cutting every group.
* ties: the same k folds of whole groups for exclude_ties=True (five tie levels), against five fits on the training
  parts (fit's symmetric solve of the tie-excluding system: what a user would otherwise run).
* tie pairs: leave-pair-out of every pair for exclude_ties=True (no groups, 2 tie levels), against one fit on all
  rows (retraining for each of the m (m - 1) / 2 pairs is out of reach: the ratio says how many fits all pairs cost).
* graph: 5 folds of a preference graph of m edges (the edge form) against five fits on the kept edges.
* routes: per alpha, the Cholesky form against the spectral one (whose eigendecomposition is paid once): the ratio
  says how many alphas a shared spectral factor needs before it pays.

Default: wall time with the default threads.  --cpu: every BLAS pool limited to one thread and fastrank's n_jobs=1,
process CPU time (far less sensitive to other load on a shared machine than wall time).
"""

import sys

import numpy as np
import scipy.linalg
import scipy.sparse
import sklearn.base

import fastrank
from fastrank import _core
from fastrank import model_selection as ms
from fastrank._exactcv import engine_for

from ratios_fastcv import CLOCK, CPU, N_JOBS, best  # the same --cpu switch and timer

M = int(sys.argv[sys.argv.index("--m") + 1]) if "--m" in sys.argv else 2000


def apply_S(A, codes):
    """S A for S = blockdiag(sqrt(n_q) (I - 1 1^T / n_q)) (unweighted pairs inside groups), rows by group code."""
    E = scipy.sparse.csr_matrix((np.ones(codes.size), (np.arange(codes.size), codes)))
    n = np.asarray(E.sum(axis=0)).ravel()
    return (A - E @ ((E.T @ A) / n[:, None])) * np.sqrt(n)[codes][:, None]


def retrain_folds(X, y, groups, sets, alpha, gamma):
    """The yardstick: per fold, the symmetric dual system of the training rows (all pairs inside groups)."""
    K = np.exp(-gamma * ((X[:, None, :] - X[None]) ** 2).sum(-1))
    out = np.empty(y.size)
    for U in sets:
        T = np.setdiff1d(np.arange(y.size), U)
        codes = np.unique(groups[T], return_inverse=True)[1]
        A = apply_S(apply_S(K[np.ix_(T, T)], codes).T, codes)
        A[np.diag_indices_from(A)] += alpha
        u = scipy.linalg.cho_solve(scipy.linalg.cho_factor(A, overwrite_a=True), apply_S(y[T, None], codes))
        out[U] = K[np.ix_(U, T)] @ apply_S(u, codes)[:, 0]
    return out


def main():
    rng = np.random.default_rng(0)
    m, gamma, alpha = M, 0.1, 1.0
    X = rng.standard_normal((m, 5))
    y = np.sin(X[:, 0]) + 0.1 * rng.standard_normal(m)
    g = np.repeat(np.arange(m // 20), 20)
    cases = (("object", None, np.arange(m) % 5), ("whole groups", g, (np.arange(m // 20) % 5)[g]),
             ("folds cutting groups", g, np.arange(m) % 5))
    est = fastrank.RankRLS(alpha=alpha, kernel="rbf", gamma=gamma, n_jobs=N_JOBS)
    for name, groups, folds in cases:
        sets = [np.flatnonzero(folds == k) for k in range(5)]
        pred = ms.kfold_predictions(est, X, y, folds, groups)
        ref = retrain_folds(X, y, np.zeros(m, int) if groups is None else groups, sets, alpha, gamma)
        err = np.max(np.abs(pred - ref)) / np.max(np.abs(ref))
        a, b = [], []
        for _ in range(2):  # interleaved: load on a shared machine hits both alike
            a.append(best(lambda: ms.kfold_predictions(est, X, y, folds, groups), 2))
            b.append(best(lambda: retrain_folds(X, y, np.zeros(m, int) if groups is None else groups, sets, alpha,
                                                gamma), 1))
        print(f"k folds, one alpha, m={m}, {name}: {min(a):.3f}s; numpy kernel + 5 SciPy retrainings {min(b):.3f}s; "
              f"ratio {min(a) / min(b):.2f}; max relative difference {err:.1e}")
        d = engine_for(est, X, y, groups).dual
        rows = np.concatenate(sets).astype(np.int64)
        offsets = np.concatenate([[0], np.cumsum([len(s) for s in sets])]).astype(np.int64)
        K = d.K
        rg = d.groups.inverse[rows].astype(np.int64)
        if groups is None:
            chol = best(lambda: _core.cv_object_holdout_inverse(K, d.c, alpha, d.Yg, rows, offsets, d.n_threads), 2)
        else:
            chol = best(lambda: _core.cv_group_holdout_inverse(K, *d.group_args, alpha, d.Yg, rg, offsets,
                                                               d.n_threads), 2)
        s = CLOCK()
        V, sigma = d.decompose()
        P = d.P if groups is not None else None
        eig = CLOCK() - s
        if groups is None:
            spec = best(lambda: _core.cv_object_holdout(K, V, sigma, d.c, alpha, d.Yg, rows, offsets), 2)
        else:
            spec = best(lambda: _core.cv_group_holdout(P, V, sigma, *d.group_args, alpha, d.Yg, rg, offsets), 2)
        gain = chol - spec
        pays = f"pays from {eig / gain:.1f} alphas" if gain > 0 else "never pays"
        print(f"  per alpha: Cholesky {chol:.3f}s; spectral {spec:.3f}s after the factor {eig:.3f}s once; ratio "
              f"{chol / spec:.2f}; the shared factor {pays}")
    y5 = np.digitize(y, np.quantile(y, [0.2, 0.4, 0.6, 0.8])).astype(float)  # five tie levels
    folds = (np.arange(m // 20) % 5)[g]
    sets = [np.flatnonzero(folds == k) for k in range(5)]
    ties = fastrank.RankRLS(alpha=alpha, kernel="rbf", gamma=gamma, n_jobs=N_JOBS, exclude_ties=True)

    def refits():
        out = np.empty(m)
        for U in sets:
            T = np.setdiff1d(np.arange(m), U)
            out[U] = sklearn.base.clone(ties).fit(X[T], y5[T], groups=g[T]).predict(X[U])
        return out

    err = np.max(np.abs(ms.kfold_predictions(ties, X, y5, folds, g) - refits())) / np.max(np.abs(refits()))
    a, b = [], []
    for _ in range(2):
        a.append(best(lambda: ms.kfold_predictions(ties, X, y5, folds, g), 2))
        b.append(best(refits, 1))
    print(f"k folds, one alpha, m={m}, exclude_ties, whole groups: {min(a):.3f}s; 5 fits on the training parts "
          f"{min(b):.3f}s; ratio {min(a) / min(b):.2f}; max relative difference {err:.1e}")

    y2 = (y > np.median(y)).astype(float)
    lpo = best(lambda: ms.leave_pair_out(ties, X, y2), 2)
    fit = best(lambda: sklearn.base.clone(ties).fit(X, y2), 2)
    print(f"leave-pair-out, every pair, m={m}, exclude_ties, 2 tie levels: {lpo:.3f}s; one fit {fit:.3f}s; "
          f"ratio {lpo / fit:.1f} fits for {m * (m - 1) // 2} pairs")

    pairs = rng.choice(m, size=(3 * m, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]][:m]
    pairs = np.where((y[pairs[:, 0]] > y[pairs[:, 1]])[:, None], pairs, pairs[:, ::-1])
    graph = fastrank.RankRLS(alpha=alpha, kernel="rbf", gamma=gamma, n_jobs=N_JOBS)
    sets = [np.arange(k, m, 5) for k in range(5)]

    def graph_refits():
        return [sklearn.base.clone(graph).fit_preferences(X, pairs[~np.isin(pairs, U).any(axis=1)]).predict(X[U])
                for U in sets]

    err = max(np.abs(a - b).max() / np.abs(b).max()
              for a, b in zip(ms.preference_holdout_predictions(graph, X, pairs, sets), graph_refits()))
    a = best(lambda: ms.preference_holdout_predictions(graph, X, pairs, sets), 2)
    b = best(graph_refits, 1)
    print(f"preference graph, {m} edges, 5 folds, m={m}: {a:.3f}s; 5 fits on the kept edges {b:.3f}s; ratio "
          f"{a / b:.2f}; max relative difference {err:.1e}")


if __name__ == "__main__":
    if CPU:
        from threadpoolctl import threadpool_limits

        import scipy.linalg.cython_lapack  # noqa: F401  (SciPy's OpenBLAS loaded before the limit)

        with threadpool_limits(1):
            main()
    else:
        main()
