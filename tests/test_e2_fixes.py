"""Exact cross-validation: defects found by retraining oracles and hostile inputs (each test fails before its fix)."""

import numpy as np
import pytest
import scipy.sparse as sp

from fastrank import RankRLS, RankRLSCV
from fastrank.model_selection import factorize


def _rel(a, b):
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b))) / np.max(np.abs(b)))


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
@pytest.mark.parametrize("grouped", [False, True])
def test_tie_excluding_search_on_sparse_rows_solves_the_best_model(kernel, grouped):
    """The best model of an exclude_ties search (and Factorization.solve) on sparse X is fit's model on the same rows;
    it crashed with numpy's IndexError (the full-data solve took the rows of a sparse matrix with np.take)."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((20, 3))
    y = rng.integers(0, 3, 20).astype(float)
    groups = rng.choice([1, 2, 3], 20) if grouped else None
    Xs = sp.csr_matrix(X)
    search = RankRLSCV([0.1, 1.0, 10.0], cv=3, kernel=kernel, exclude_ties=True).fit(Xs, y, groups)
    fresh = RankRLS(alpha=search.alpha_, kernel=kernel, exclude_ties=True).fit(X, y, groups)
    assert _rel(search.best_estimator_.predict(X), fresh.predict(X)) < 1e-10
    solved = factorize(RankRLS(kernel=kernel, exclude_ties=True), Xs, y, groups).solve(0.3)
    fresh = RankRLS(alpha=0.3, kernel=kernel, exclude_ties=True).fit(X, y, groups)
    assert _rel(solved.predict(Xs), fresh.predict(X)) < 1e-10
