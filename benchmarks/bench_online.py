"""asv benchmarks for the on-line learners (PRank, OAP-BPM family, Widrow-Hoff, on-line MPRank)."""

import numpy as np

import fastrank

from .common import ordinal_stream as _stream


class LinearOAP:
    """Linear OAP ensemble, N=100, tau=0.3, d=300 (the issue's setting at T=20,000)."""

    params = (["bpm", "bagging", "voted"], [1, 2])
    param_names = ["variant", "n_jobs"]

    def setup(self, variant, n_jobs):
        self.X, self.y = _stream(20_000, 300)

    def time_fit(self, variant, n_jobs):
        fastrank.OAPBPM(100, 0.3, variant=variant, random_state=0, n_jobs=n_jobs).fit(self.X, self.y)

    def peakmem_fit(self, variant, n_jobs):
        fastrank.OAPBPM(100, 0.3, variant=variant, random_state=0, n_jobs=n_jobs).fit(self.X, self.y)


class PRankStream:
    def setup(self):
        self.X, self.y = _stream(100_000, 300)

    def time_fit(self):
        fastrank.PRank().fit(self.X, self.y)


class KernelOAP:
    """Kernel OAP-BPM on the paper's synthetic data, poly kernel ((x.z)+1)^2."""

    params = ([None, 500],)
    param_names = ["budget"]

    def setup(self, budget):
        rng = np.random.default_rng(0)
        self.X = rng.uniform(size=(3000, 2))
        z = 10 * (self.X[:, 0] - 0.5) * (self.X[:, 1] - 0.5) + rng.normal(0, 0.125, 3000)
        self.y = np.digitize(z, [-1, -0.1, 0.25, 1]) + 1

    def time_fit(self, budget):
        fastrank.OAPBPM(100, 0.3, kernel="poly", gamma=1.0, degree=2, coef0=1.0, budget=budget, random_state=0,
                        n_jobs=2).fit(self.X, self.y)


class WidrowHoffStream:
    def setup(self):
        self.X, self.y = _stream(100_000, 300)

    def time_fit(self):
        fastrank.WidrowHoff(eta=1e-4).fit(self.X, self.y)


class OnlineMPRankSolve:
    params = (["sequential", "gradient"],)
    param_names = ["algorithm"]

    def setup(self, algorithm):
        rng = np.random.default_rng(0)
        self.X = rng.normal(size=(1500, 20))
        self.y = self.X @ rng.normal(size=20) + rng.normal(size=1500)

    def time_fit(self, algorithm):
        fastrank.OnlineMPRank(C=1.0, kernel="rbf", algorithm=algorithm).fit(self.X, self.y)
