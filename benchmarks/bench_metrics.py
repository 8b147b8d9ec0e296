"""asv benchmarks for fastrank.metrics (seeded data)."""

import numpy as np

from fastrank import metrics as M


def _labels_scores(m, ties, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 5, m).astype(np.float64)
    f = rng.normal(size=m) + 0.3 * y
    if ties:
        f = np.round(f, 2)
    return y, f


class PairwiseDisagreement:
    params = ([10**4, 10**6], [True, False])
    param_names = ["m", "ties"]

    def setup(self, m, ties):
        self.y, self.f = _labels_scores(m, ties)

    def time_pairwise_disagreement(self, m, ties):
        M.pairwise_disagreement(self.y, self.f)

    def time_argsort_yardstick(self, m, ties):
        np.argsort(self.f)

    def time_discrete_ranking_loss(self, m, ties):
        M.discrete_ranking_loss(self.y, self.f)

    def time_auc(self, m, ties):
        M.auc(self.y > 2, self.f)

    def peakmem_pairwise_disagreement(self, m, ties):
        M.pairwise_disagreement(self.y, self.f)


class Grouped:
    params = ([1, 2],)
    param_names = ["n_jobs"]

    def setup(self, n_jobs):
        rng = np.random.default_rng(1)
        n_q, n_d = 5000, 100
        self.g = rng.permutation(np.repeat(np.arange(n_q), n_d))
        self.y = rng.integers(0, 5, n_q * n_d).astype(np.float64)
        self.f = np.round(rng.normal(size=n_q * n_d) + 0.3 * self.y, 1)

    def time_pairwise_disagreement_grouped(self, n_jobs):
        M.pairwise_disagreement(self.y, self.f, self.g, n_jobs=n_jobs)

    def time_ndcg10(self, n_jobs):
        M.ndcg(self.y, self.f, self.g, k=10, n_jobs=n_jobs)


class Continuous:
    def setup(self):
        rng = np.random.default_rng(2)
        self.a = rng.normal(size=10**6)
        self.b = self.a + rng.normal(size=10**6)

    def time_kendall_distance(self):
        M.kendall_distance(self.a, self.b)

    def time_spearman_footrule(self):
        M.spearman_footrule(self.a, self.b)

    def time_msd(self):
        M.msd(self.a, self.b)

    def time_m1d(self):
        M.m1d(self.a, self.b)
