"""exclude_ties=True against the explicit list of non-tied pairs."""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fastrank  # noqa: E402
from cv_oracles import rbf  # noqa: E402
from oracles import rankrls_dual, rankrls_primal, scoring_pairs  # noqa: E402

GROUPS = np.array([0, 1, 0, 2, 1, 0, 2, 1, 0, 2, 1, 1, 0, 3])


def _data(seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(GROUPS.size, 3))
    y = rng.integers(0, 3, size=GROUPS.size).astype(float)  # graded labels: many ties
    return X, y


def _close(a, b, rtol=1e-9):
    np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * max(1.0, float(np.abs(b).max())))


@pytest.mark.parametrize("weighting", ["unweighted", "per_query", "normalized"])
@pytest.mark.parametrize("groups", [None, GROUPS])
def test_exclude_ties_dual_and_primal_equal_explicit_untied_pairs(weighting, groups):
    X, y = _data(0)
    # without groups every pair weighs 1 whatever the weighting
    edges = scoring_pairs(y, groups, weighting if groups is not None else "unweighted", exclude_ties=True)
    dual = fastrank.RankRLS(alpha=0.5, kernel="rbf", gamma=0.7, solver="dual", group_weighting=weighting,
                            exclude_ties=True).fit(X, y, groups)
    _close(dual.dual_coef_, rankrls_dual(rbf(X, X, 0.7), edges, 0.5)[:, 0])
    primal = fastrank.RankRLS(alpha=0.5, solver="primal", group_weighting=weighting, exclude_ties=True)
    _close(primal.fit(X, y, groups).coef_, rankrls_primal(X, edges, 0.5)[:, 0])
    # a path shares the decomposition
    path = fastrank.rankrls_path(X, y, [0.5, 5.0], groups=groups, estimator=dual)
    _close(path.dual_coef_[1, :, 0], rankrls_dual(rbf(X, X, 0.7), edges, 5.0)[:, 0])
    # and it is a different model from keeping the ties
    kept = fastrank.RankRLS(alpha=0.5, solver="primal", group_weighting=weighting).fit(X, y, groups).coef_
    assert np.abs(kept - primal.coef_).max() > 1e-6


def test_exclude_ties_multi_output_and_errors():
    X, y = _data(1)
    Y = np.column_stack([y, 2 * y + 1])  # same ties
    est = fastrank.RankRLS(alpha=1.0, kernel="rbf", exclude_ties=True).fit(X, Y, GROUPS)
    one = fastrank.RankRLS(alpha=1.0, kernel="rbf", exclude_ties=True).fit(X, 2 * y + 1, GROUPS)
    _close(est.dual_coef_[:, 1], one.dual_coef_)
    with pytest.raises(ValueError, match="tie the same pairs"):
        fastrank.RankRLS(exclude_ties=True).fit(X, np.column_stack([y, np.arange(y.size)]))
    with pytest.raises(ValueError, match="exclude_ties must be True or False"):
        fastrank.RankRLS(exclude_ties="yes").fit(X, y)
    with pytest.raises(ValueError, match="tie the same pairs"):  # exact CV shares the check
        fastrank.model_selection.leave_pair_out(fastrank.RankRLS(exclude_ties=True), X,
                                                np.column_stack([y, np.arange(y.size)]))


@pytest.mark.parametrize("weighting", ["unweighted", "per_query"])
@pytest.mark.parametrize("sparse", [False, True])
def test_exclude_ties_cg_and_basis_equal_explicit_untied_pairs(sparse, weighting):
    import scipy.sparse as sps

    X, y = _data(2)
    Xin = sps.csr_matrix(X) if sparse else X
    edges = scoring_pairs(y, GROUPS, weighting, exclude_ties=True)
    for precond in (None, "jacobi"):
        cg = fastrank.RankRLS(alpha=0.4, solver="cg", tol=1e-12, preconditioner=precond, exclude_ties=True,
                              group_weighting=weighting)
        cg.fit(Xin, y, GROUPS)
        _close(cg.coef_, rankrls_primal(X, edges, 0.4)[:, 0], rtol=1e-8)
        assert cg.converged_ and cg.n_iter_ > 0
    # every row in the basis: the subset-of-regressors model is the exact dual (eqs. 40-42)
    K = rbf(X, X, 0.7)
    sor = fastrank.RankRLS(alpha=0.5, kernel="rbf", gamma=0.7, basis_vectors=np.arange(GROUPS.size),
                           exclude_ties=True, group_weighting=weighting).fit(Xin, y, GROUPS)
    _close(sor.predict(X), K @ rankrls_dual(K, edges, 0.5)[:, 0], rtol=1e-7)


def test_per_query_with_ties_excluded_weighs_every_query_one():
    """004, end of Sect. 2.4: the edges of each query weigh 1 in total, ties excluded or not."""
    X, y = _data(3)
    for exclude in (False, True):
        edges = scoring_pairs(y, GROUPS, "per_query", exclude_ties=exclude)
        total = {}
        for i, _, w, _ in edges:
            total[GROUPS[i]] = total.get(GROUPS[i], 0.0) + w * w
        np.testing.assert_allclose(list(total.values()), 1.0, rtol=1e-12)
    # the model with ties excluded is the paper's, not the all-pairs weighting with ties dropped
    est = fastrank.RankRLS(alpha=0.5, solver="primal", group_weighting="per_query", exclude_ties=True)
    coef = est.fit(X, y, GROUPS).coef_
    _close(coef, rankrls_primal(X, scoring_pairs(y, GROUPS, "per_query", exclude_ties=True), 0.5)[:, 0])
    all_pairs_weight = [(i, j, w, z) for i, j, w, z in scoring_pairs(y, GROUPS, "per_query") if z != 0]
    assert np.abs(coef - rankrls_primal(X, all_pairs_weight, 0.5)[:, 0]).max() > 1e-3


@pytest.mark.parametrize("weighting", ["unweighted", "per_query", "normalized"])
@pytest.mark.parametrize("alpha", [1e-3, 1.0])
def test_linear_exclude_ties_holdout_in_feature_space_equals_retraining(weighting, alpha, monkeypatch):
    """A linear exclude_ties model with n_features < m answers hold-out sets by p x p systems (the tie-excluding
    X^T L X of the groups a set touches, recomputed without it), never the m x m tie route: leave-group-out, folds
    of whole groups, folds cutting groups and sets stripping a group to tied rows equal retraining without each
    set (cut groups keep their pair weight, so they are checked unweighted)."""
    from fastrank import _exactcv
    from fastrank.model_selection import holdout_predictions, kfold_predictions, leave_group_out

    rng = np.random.default_rng(5)
    m = 90
    g = rng.integers(0, 9, size=m)
    X = rng.normal(size=(m, 3)) + 4.0
    y = rng.integers(0, 3, size=m).astype(float)
    y[g == 8] = 1.0
    y[np.flatnonzero(g == 8)[0]] = 2.0  # one rated row: holding it out leaves the group only tied rows
    est = fastrank.RankRLS(alpha=alpha, group_weighting=weighting, exclude_ties=True)
    monkeypatch.setattr(_exactcv.TieExcludedRoute, "__init__", lambda *a: pytest.fail("the m x m tie route"))

    def retrained(U):
        train = np.setdiff1d(np.arange(m), U)
        return fastrank.RankRLS(alpha=alpha, group_weighting=weighting, exclude_ties=True).fit(
            X[train], y[train], g[train]).predict(X[U])

    ref = np.empty(m)
    for q in np.unique(g):
        ref[g == q] = retrained(np.flatnonzero(g == q))
    _close(leave_group_out(est, X, y, g), ref, 1e-10)
    folds = (np.arange(9) % 4)[g]
    ref = np.empty(m)
    for k in range(4):
        ref[folds == k] = retrained(np.flatnonzero(folds == k))
    _close(kfold_predictions(est, X, y, folds, g), ref, 1e-10)
    if weighting == "unweighted":
        sets = [np.flatnonzero(rng.integers(0, 3, size=m) == 0), np.flatnonzero(g == 8)[:1], rng.choice(m, 7, False)]
        for U, out in zip(sets, holdout_predictions(est, X, y, sets, g)):
            _close(out, retrained(U), 1e-10)
