"""Print fastrank / yardstick time ratios for the RankRLS dense solvers, measured in one run.

    python benchmarks/ratios_rankrls.py [--quick]
"""

import sys

import numpy as np
import scipy.linalg
import scipy.sparse

import fastrank

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from common import best_time, dense_regression, numpy_gaussian_kernel  # noqa: E402


def row(name, ours, ref, target):
    ratio = ours / ref
    print(f"{name:<44} {ours:9.3f} s {ref:9.3f} s {ratio:7.2f}x   (target <= {target}x)")


def main(quick=False):
    print(f"{'case':<44} {'fastrank':>11} {'yardstick':>11} {'ratio':>8}")
    sizes = [1000, 2000] if quick else [1000, 2000, 4000]
    for m in sizes:
        X, y = dense_regression(m, 50)
        g = 1.0 / 50

        def ours():
            fastrank.RankRLS(alpha=1.0, kernel="rbf", gamma=g, solver="dual").fit(X, y)

        def ref():
            K = numpy_gaussian_kernel(X, g)
            K[np.diag_indices_from(K)] += 1.0
            scipy.linalg.cho_solve(scipy.linalg.cho_factor(K, lower=True), y)

        ref()
        row(f"Gaussian dual fit m={m} d=50 vs kernel+cho", best_time(ours), best_time(ref), 1.3)
    for m in ([2000] if quick else [2000, 4000]):
        X, y = dense_regression(m, 50)
        alphas = np.logspace(-4, 4, 31)
        K = numpy_gaussian_kernel(X, 1.0 / 50)
        est = fastrank.RankRLS(kernel="rbf", gamma=1.0 / 50)
        t_ours = best_time(lambda: fastrank.rankrls_path(X, y, alphas, estimator=est), 2)
        t_ref = best_time(lambda: np.linalg.eigh(K), 2)
        row(f"31-alpha path m={m} vs one numpy eigh", t_ours, t_ref, 1.2)
    m = 50_000 if quick else 200_000
    X, y = dense_regression(m, 100)
    t_ours = best_time(lambda: fastrank.RankRLS(alpha=1.0, solver="primal").fit(X, y))
    t_ref = best_time(lambda: np.linalg.solve(X.T @ X + np.eye(100), X.T @ y))
    row(f"linear primal m={m} n=100 vs X.T@X+solve", t_ours, t_ref, 1.5)
    grouped_multi_output_row(20_000 if quick else 100_000)


def grouped_multi_output_row(m, n=50, v=100):
    """Linear primal with query groups of 2-10 rows and a Y of v columns against numpy's normal equations of
    eq. 30: rows centred in their groups, X^T L X = sum_q n_q Xc_q^T Xc_q and X^T L Y alike."""
    rng = np.random.default_rng(0)
    sizes = rng.integers(2, 11, m // 2)
    sizes = sizes[np.cumsum(sizes) <= m]
    groups = np.repeat(np.arange(sizes.size), sizes)
    m = groups.size
    X, Y = rng.standard_normal((m, n)), rng.standard_normal((m, v))
    S = scipy.sparse.csr_matrix((np.ones(m), (groups, np.arange(m))))  # group-summing matrix
    n_q = sizes[groups][:, None].astype(np.float64)

    def ref():
        Xc = X - (S @ X / sizes[:, None])[groups]
        Yc = Y - (S @ Y / sizes[:, None])[groups]
        XL = (Xc * n_q).T
        return np.linalg.solve(XL @ Xc + np.eye(n), XL @ Yc)

    def ours():
        return fastrank.RankRLS(alpha=1.0, solver="primal").fit(X, Y, groups=groups).coef_

    assert np.allclose(ours(), ref(), rtol=1e-8, atol=1e-12)
    row(f"grouped primal m={m}, {sizes.size} queries, Y {v} cols vs numpy", best_time(ours), best_time(ref), 2.0)


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
