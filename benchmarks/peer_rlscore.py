"""fastrank against RLScore (the RankRLS authors' library) on the same exact cross-validation work,
measured in one run, with the predictions compared.

RLScore is a benchmark-only dependency, built from its source (its PyPI sdist ships C files that
current CPython cannot compile)::

    git clone https://github.com/aatapa/RLScore && pip install --no-deps ./RLScore

Then, from the repository root::

    python benchmarks/peer_rlscore.py            # default threads and one thread
    python benchmarks/peer_rlscore.py lpo        # one case: lpo, lqo or glqo

Cases (the same data and work for both libraries):

* lpo: linear RankRLS, leave-pair-out over all i < j, m = 2000, d = 50 (RLScore:
  ``GlobalRankRLS(...).leave_pair_out``; fastrank: ``model_selection.leave_pair_out``);
* lqo: linear RankRLS with 1000 queries of 20 rows, d = 50, leave-query-out predictions of every
  row (RLScore: ``QueryRankRLS(...).holdout`` per query; fastrank: ``model_selection.leave_group_out``);
* glqo: Gaussian RankRLS, 100 queries of 20 rows, leave-query-out selection of alpha over 31 values
  (RLScore: ``LeaveQueryOutRankRLS``; fastrank: ``RankRLSCV(cv="lgo")``), each including the final
  model.

RLScore's query cost is fastrank's ``group_weighting="normalized"`` (L_q = I - 11^T / n_q), used
in both query cases.  Each time is the best of three, fit included.  "1 thread": every BLAS pool
limited to one thread (threadpoolctl) and ``n_jobs=1``; "default": no limits.  Without RLScore
installed the script prints fastrank's times only.
"""

from __future__ import annotations

import os
import sys
import time

import numpy as np
from threadpoolctl import threadpool_limits

import fastrank
from fastrank import model_selection as ms

try:
    from rlscore.learner import GlobalRankRLS, LeaveQueryOutRankRLS, QueryRankRLS
    from rlscore.measure import cindex
except ImportError:  # benchmark-only dependency
    GlobalRankRLS = None

ALPHAS = np.logspace(-5, 5, 31)
GAMMA = 0.05


def best(fn, rep=3):
    t, out = np.inf, None
    for _ in range(rep):
        start = time.perf_counter()
        out = fn()
        t = min(t, time.perf_counter() - start)
    return t, out


def data(case):
    rng = np.random.default_rng(0)
    if case == "lpo":
        m, d, q = 2000, 50, 1
    elif case == "lqo":
        m, d, q = 20000, 50, 1000
    else:
        m, d, q = 2000, 20, 100
    X = rng.standard_normal((m, d))
    y = X @ rng.standard_normal(d) + rng.standard_normal(m) if case != "glqo" else (
        np.sin(X[:, 0]) + 0.1 * rng.standard_normal(m))
    return X, y, np.repeat(np.arange(q), m // q)


def run_fastrank(case, X, y, g, n_jobs):
    if case == "lpo":
        return ms.leave_pair_out(fastrank.RankRLS(alpha=1.0, n_jobs=n_jobs), X, y)
    if case == "lqo":
        est = fastrank.RankRLS(alpha=1.0, group_weighting="normalized", n_jobs=n_jobs)
        return ms.leave_group_out(est, X, y, g)
    cv = fastrank.RankRLSCV(alphas=ALPHAS, kernel="rbf", gamma=GAMMA, cv="lgo", group_weighting="normalized",
                            n_jobs=n_jobs)
    return cv.fit(X, y, groups=g).alpha_


def run_rlscore(case, X, y, g, pairs):
    if case == "lpo":
        learner = GlobalRankRLS(X, y, regparam=1.0, bias=0.0)
        p1, p2 = learner.leave_pair_out(pairs[:, 0], pairs[:, 1])
        return np.stack([p1, p2], axis=1)
    if case == "lqo":
        learner = QueryRankRLS(X, y, g, regparam=1.0, bias=0.0)
        out = np.empty(len(y))
        for q in range(g.max() + 1):
            rows = np.flatnonzero(g == q)
            out[rows] = learner.holdout(rows)
        return out
    learner = LeaveQueryOutRankRLS(X, y, g, kernel="GaussianKernel", gamma=GAMMA, regparams=ALPHAS,
                                   measure=cindex)
    return learner.regparam


def compare(case, ours, theirs):
    if case == "glqo":
        return f"alpha {ours:.3g} / {theirs:.3g}"
    scale = np.abs(theirs).max()
    return f"max |diff| / max |pred| = {np.abs(np.asarray(ours) - theirs).max() / scale:.1e}"


def main(cases):
    print(f"# {os.cpu_count()} cores, load {os.getloadavg()[0]:.2f} at start; "
          f"RLScore {'installed' if GlobalRankRLS is not None else 'NOT installed'}")
    print(f"{'case':<6} {'threads':<8} {'RLScore s':>10} {'fastrank s':>11} {'speed-up':>9}  agreement")
    for case in cases:
        X, y, g = data(case)
        m = len(y)
        pairs = np.stack(np.triu_indices(m, 1), axis=1) if case == "lpo" else None
        for label, limit, n_jobs in (("1", 1, 1), ("default", None, None)):
            with threadpool_limits(limit):
                t_ours, ours = best(lambda: run_fastrank(case, X, y, g, n_jobs))
                if GlobalRankRLS is None:
                    print(f"{case:<6} {label:<8} {'-':>10} {t_ours:>11.4f}")
                    continue
                t_theirs, theirs = best(lambda: run_rlscore(case, X, y, g, pairs), 2 if case == "glqo" else 3)
            print(f"{case:<6} {label:<8} {t_theirs:>10.4f} {t_ours:>11.4f} {t_theirs / t_ours:>8.1f}x  "
                  f"{compare(case, ours, theirs)}")
    print(f"# load {os.getloadavg()[0]:.2f} at end")


if __name__ == "__main__":
    import scipy.linalg.cython_lapack  # noqa: F401  (SciPy's OpenBLAS loaded before any limit)

    main([a for a in sys.argv[1:] if not a.startswith("-")] or ["lpo", "lqo", "glqo"])
