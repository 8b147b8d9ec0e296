"""asv benchmarks for the exact cross-validation shortcuts (fastrank.model_selection)."""

import numpy as np

import fastrank
from fastrank._exactcv import engine_for
from fastrank import _core
from fastrank import model_selection as ms

from .common import dense_regression, grouped_regression


class ObjectLeavePairOut:
    """All-pairs leave-pair-out, Gaussian kernel, one alpha (004 Section 3.4)."""

    params = [1000, 2000]
    param_names = ["m"]
    timeout = 300

    def setup(self, m):
        self.X, self.y = dense_regression(m, 50)
        self.est = fastrank.RankRLS(alpha=1.0, kernel="rbf", gamma=1.0 / 50, n_jobs=2)
        prob = engine_for(self.est, self.X, self.y)
        V, s = prob.decompose()
        self.M, self.mu, self.h = _core.cv_object_prepare(prob.K, V, s, prob.c, prob.alpha, prob.Yg)
        self.Yg = prob.Yg
        self.pairs = prob.default_pairs()

    def time_leave_pair_out(self, m):
        ms.leave_pair_out(self.est, self.X, self.y)

    def peakmem_leave_pair_out(self, m):
        ms.leave_pair_out(self.est, self.X, self.y)

    def time_pair_phase_1_thread(self, m):
        _core.cv_object_lpo_pairs(self.M, self.mu, self.h, self.Yg, 1.0, self.pairs, 1)

    def time_pair_phase_2_threads(self, m):
        _core.cv_object_lpo_pairs(self.M, self.mu, self.h, self.Yg, 1.0, self.pairs, 2)


class LinearLeavePairOut:
    """Linear kernel, n_features < m: rank-n spectral factor (O(m n^2 + m^2 n))."""

    params = [2000, 4000]
    param_names = ["m"]

    def setup(self, m):
        self.X, self.y = dense_regression(m, 50)
        self.est = fastrank.RankRLS(alpha=1.0, kernel="linear", n_jobs=2)

    def time_leave_pair_out_linear(self, m):
        ms.leave_pair_out(self.est, self.X, self.y)


class QueryLeavePairOut:
    params = [1000, 2000]
    param_names = ["m"]
    timeout = 300

    def setup(self, m):
        self.X, self.y, self.groups = grouped_regression(m, 50, m // 20)
        self.est = fastrank.RankRLS(alpha=1.0, kernel="rbf", gamma=1.0 / 50, n_jobs=2)

    def time_query_leave_pair_out(self, m):
        ms.leave_pair_out(self.est, self.X, self.y, groups=self.groups)


class LeaveGroupOut:
    params = [1000, 2000]
    param_names = ["m"]
    timeout = 300

    def setup(self, m):
        self.X, self.y, self.groups = grouped_regression(m, 50, 100)
        self.est = fastrank.RankRLS(alpha=1.0, kernel="rbf", gamma=1.0 / 50, n_jobs=2)

    def time_leave_group_out(self, m):
        ms.leave_group_out(self.est, self.X, self.y, self.groups)

    def time_one_fit(self, m):
        self.est.fit(self.X, self.y, self.groups)


class RankRLSCVGrid:
    params = [1000]
    param_names = ["m"]
    timeout = 600

    def setup(self, m):
        self.X, self.y = dense_regression(m, 50)
        self.alphas = np.logspace(-4, 4, 31)

    def time_rankrlscv_lpo_31_alphas(self, m):
        fastrank.RankRLSCV(alphas=self.alphas, cv="lpo", kernel="rbf", gamma=1.0 / 50, n_jobs=2).fit(self.X, self.y)


class PermutationTest:
    params = [200]
    param_names = ["m"]

    def setup(self, m):
        self.X, self.y = dense_regression(m, 10)
        self.est = fastrank.RankRLS(alpha=1.0, kernel="rbf", n_jobs=2)

    def time_permutation_test_lpo_1000(self, m):
        ms.permutation_test_lpo(self.est, self.X, self.y, n_permutations=1000, random_state=0)
