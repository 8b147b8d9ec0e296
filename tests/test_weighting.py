"""Every group weighting against an explicit weighted-pairs oracle: dense dual and primal, CG on
dense and sparse X, subset of regressors, and every cross-validation shortcut."""

import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fastrank  # noqa: E402
from fastrank import model_selection as ms  # noqa: E402
from cv_oracles import rbf, retrain_predict, retrain_predict_primal  # noqa: E402
from oracles import rankrls_dual, rankrls_primal, scoring_pairs  # noqa: E402

WEIGHTINGS = ["unweighted", "normalized", "per_query", "per_object"]
# groups of 2, 3, 5, 6 rows and a singleton (no pairs), ids unsorted
GROUPS = np.array([3, 1, 1, 0, 3, 2, 0, 1, 0, 2, 0, 3, 7, 2, 0, 3, 3, 2, 0, 2])
RTOL = 1e-8


def _data(seed=0, d=3):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(GROUPS.size, d))
    y = rng.integers(0, 4, size=GROUPS.size).astype(float) + 0.1 * rng.normal(size=GROUPS.size)
    return X, y


def _close(a, b, rtol=RTOL):
    a, b = np.asarray(a), np.asarray(b)
    np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * max(1.0, float(np.abs(b).max())))


def test_weightings_differ_and_per_query_weighs_queries_equally():
    # the weightings are not the same problem under different names: the total pair weight of a
    # query is P_q (unweighted), (n_q - 1)/2 (normalized), 1 (per_query), n_q/2 (per_object)
    from fastrank._problem import pair_weights

    sizes = np.array([2, 3, 5, 6, 1])
    pairs = sizes * (sizes - 1) / 2
    _close(pair_weights(sizes, "unweighted") * pairs, pairs)
    _close(pair_weights(sizes, "normalized") * pairs, (sizes - 1) / 2)
    _close(pair_weights(sizes, "per_query")[:4] * pairs[:4], np.ones(4))
    _close(pair_weights(sizes, "per_object")[:4] * pairs[:4], sizes[:4] / 2)


@pytest.mark.parametrize("weighting", WEIGHTINGS)
def test_dense_dual_and_primal_equal_explicit_pairs(weighting):
    X, y = _data(1)
    edges = scoring_pairs(y, GROUPS, weighting)
    K = rbf(X, X, 0.4)
    dual = fastrank.RankRLS(alpha=0.3, kernel="rbf", gamma=0.4, solver="dual", group_weighting=weighting)
    dual.fit(X, y, GROUPS)
    _close(dual.dual_coef_, rankrls_dual(K, edges, 0.3)[:, 0])
    primal = fastrank.RankRLS(alpha=0.3, solver="primal", group_weighting=weighting).fit(X, y, GROUPS)
    _close(primal.coef_, rankrls_primal(X, edges, 0.3)[:, 0])
    # a path shares one decomposition and gives the same per-alpha solutions
    path = fastrank.rankrls_path(X, y, [0.3, 3.0], groups=GROUPS, estimator=dual)
    _close(path.dual_coef_[1, :, 0], rankrls_dual(K, edges, 3.0)[:, 0])


@pytest.mark.parametrize("weighting", WEIGHTINGS)
@pytest.mark.parametrize("sparse", [False, True])
def test_cg_equals_explicit_pairs(weighting, sparse):
    X, y = _data(2, d=4)
    W = rankrls_primal(X, scoring_pairs(y, GROUPS, weighting), 0.2)[:, 0]
    Xin = sp.csr_matrix(X) if sparse else X
    est = fastrank.RankRLS(alpha=0.2, solver="cg", tol=1e-13, group_weighting=weighting).fit(Xin, y, GROUPS)
    _close(est.coef_, W, rtol=1e-7)


@pytest.mark.parametrize("weighting", WEIGHTINGS)
def test_basis_vectors_equal_explicit_pairs(weighting):
    # with every row in the basis, subset of regressors is the exact dual (eqs. 40-42)
    X, y = _data(3)
    K = rbf(X, X, 0.4)
    est = fastrank.RankRLS(alpha=0.5, kernel="rbf", gamma=0.4, basis_vectors=np.arange(GROUPS.size),
                           group_weighting=weighting).fit(sp.csr_matrix(X), y, GROUPS)
    _close(est.predict(X), K @ rankrls_dual(K, scoring_pairs(y, GROUPS, weighting), 0.5)[:, 0], rtol=1e-7)


@pytest.mark.parametrize("weighting", WEIGHTINGS)
@pytest.mark.parametrize("kernel", ["rbf", "linear"])
def test_cv_shortcuts_equal_retraining(weighting, kernel):
    # retraining keeps every remaining pair's weight c_q of the full data (not renormalised)
    X, y = _data(4)
    est = fastrank.RankRLS(alpha=0.7, kernel=kernel, gamma=0.4, group_weighting=weighting)
    K = rbf(X, X, 0.4) if kernel == "rbf" else X @ X.T

    def retrain(held):
        if kernel == "linear":
            return retrain_predict_primal(X, y[:, None], 0.7, held, GROUPS, weighting)[:, 0]
        return retrain_predict(K, y[:, None], 0.7, held, GROUPS, weighting)[:, 0]

    lgo = ms.leave_group_out(est, X, y, GROUPS)
    for g in np.unique(GROUPS):
        rows = np.flatnonzero(GROUPS == g)
        _close(lgo[rows], retrain(rows))
    sets = [np.array([0, 4, 11]), np.array([1, 2, 3, 5])]
    for s, got in zip(sets, ms.holdout_predictions(est, X, y, sets, groups=GROUPS)):
        _close(got, retrain(s))
    kf = ms.kfold_predictions(est, X, y, 3, groups=GROUPS)
    folds = np.arange(np.unique(GROUPS).size) % 3
    codes = np.unique(GROUPS, return_inverse=True)[1]
    for f in range(3):
        rows = np.flatnonzero(folds[codes] == f)
        _close(kf[rows], retrain(rows))
    pairs = np.array([[3, 6], [5, 9], [1, 7]])
    lpo = ms.leave_pair_out(est, X, y, pairs=pairs, groups=GROUPS)
    for (i, j), got in zip(pairs, lpo):
        _close(got, retrain([i, j]))


@pytest.mark.parametrize("weighting", WEIGHTINGS)
def test_rankrlscv_lgo_scores_every_weighting(weighting):
    X, y = _data(5)
    cv = fastrank.RankRLSCV(alphas=[0.1, 1.0, 10.0], cv="lgo", kernel="rbf", gamma=0.4,
                            group_weighting=weighting).fit(X, y, GROUPS)
    best = fastrank.RankRLS(alpha=cv.alpha_, kernel="rbf", gamma=0.4, group_weighting=weighting).fit(X, y, GROUPS)
    _close(cv.predict(X), best.predict(X))


def test_weighting_without_groups_is_object_ranking():
    X, y = _data(6)
    a = fastrank.RankRLS(alpha=1.0, kernel="rbf", group_weighting="per_query").fit(X, y)
    b = fastrank.RankRLS(alpha=1.0, kernel="rbf").fit(X, y)
    _close(a.dual_coef_, b.dual_coef_, rtol=1e-12)


def test_unknown_weighting_is_refused():
    X, y = _data(7)
    with pytest.raises(ValueError, match="group_weighting"):
        fastrank.RankRLS(group_weighting="per_pair").fit(X, y, GROUPS)
    with pytest.raises(ValueError, match="group_weighting"):
        ms.leave_group_out(fastrank.RankRLS(group_weighting="per_pair"), X, y, GROUPS)
