"""asv benchmarks for the RankRLS dense solvers (foundation issue)."""

import numpy as np
import scipy.linalg

import fastrank

from .common import dense_regression, numpy_gaussian_kernel


class GaussianDualFit:
    params = [1000, 2000, 4000]
    param_names = ["m"]
    timeout = 300

    def setup(self, m):
        self.X, self.y = dense_regression(m, 50)
        self.gamma = 1.0 / 50

    def time_fastrank_dual_fit(self, m):
        fastrank.RankRLS(alpha=1.0, kernel="rbf", gamma=self.gamma, solver="dual").fit(self.X, self.y)

    def time_numpy_kernel_cholesky(self, m):
        K = numpy_gaussian_kernel(self.X, self.gamma)
        K[np.diag_indices_from(K)] += 1.0
        scipy.linalg.cho_solve(scipy.linalg.cho_factor(K, lower=True), self.y)

    def peakmem_fastrank_dual_fit(self, m):
        fastrank.RankRLS(alpha=1.0, kernel="rbf", gamma=self.gamma, solver="dual").fit(self.X, self.y)


class RegularizationPath:
    params = [2000, 4000]
    param_names = ["m"]
    timeout = 600

    def setup(self, m):
        self.X, self.y = dense_regression(m, 50)
        self.alphas = np.logspace(-4, 4, 31)
        self.K = numpy_gaussian_kernel(self.X, 1.0 / 50)

    def time_fastrank_path_31(self, m):
        fastrank.rankrls_path(self.X, self.y, self.alphas, estimator=fastrank.RankRLS(kernel="rbf", gamma=1.0 / 50))

    def time_numpy_eigh(self, m):
        np.linalg.eigh(self.K)


class LinearPrimal:
    timeout = 300

    def setup(self):
        self.X, self.y = dense_regression(200_000, 100)

    def time_fastrank_primal(self):
        fastrank.RankRLS(alpha=1.0, solver="primal").fit(self.X, self.y)

    def time_numpy_normal_equations(self):
        np.linalg.solve(self.X.T @ self.X + np.eye(100), self.X.T @ self.y)

    def peakmem_fastrank_primal(self):
        fastrank.RankRLS(alpha=1.0, solver="primal").fit(self.X, self.y)
