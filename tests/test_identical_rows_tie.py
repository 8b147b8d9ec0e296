"""Exact cross-validation and prediction of identical rows, against the models retrained without the held-out rows:
identical inputs get identical predictions and their pairs count as ties (1/2); a tie-excluding search on sparse X
solves fit's model; a bad random_state and a scoring callable without groups are named."""

import numpy as np
import pytest
import scipy.sparse as sp

from fastrank import RankRLS, RankRLSCV
from fastrank.metrics import ndcg
from fastrank.model_selection import (factorize, kfold_predictions, leave_group_out, leave_pair_out,
                                      permutation_test_lpo, preference_holdout_predictions)


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


def _repeated_rows(m, seed):
    """m rows drawn from 6 distinct inputs (no other exact ties in any model), and graded targets."""
    rng = np.random.default_rng(seed)
    return rng.standard_normal((6, 3))[rng.integers(0, 6, m)], rng.integers(0, 3, m).astype(float)


def _auc_of_retrained_pairs(est, X, y, groups):
    """The leave-pair-out AUC by its definition: every pair of one group with different targets, the model refitted
    without both rows (unweighted pairs: fit on the other rows is the retrained model), ties count 1/2."""
    score, n = 0.0, 0
    for i in range(len(y)):
        for j in range(i + 1, len(y)):
            if y[i] == y[j] or (groups is not None and groups[i] != groups[j]):
                continue
            keep = np.setdiff1d(np.arange(len(y)), [i, j])
            f = est.fit(X[keep], y[keep], None if groups is None else groups[keep]).predict(X[[i, j]])
            d = (f[0] - f[1]) * (y[i] - y[j])
            score, n = score + (1.0 if d > 0 else 0.5 if d == 0 else 0.0), n + 1
    return score / n


@pytest.mark.parametrize("params", [dict(kernel="linear"), dict(kernel="rbf"), dict(kernel="rbf", exclude_ties=True)])
@pytest.mark.parametrize("grouped", [False, True])
def test_leave_pair_out_of_identical_rows_is_a_tie(params, grouped):
    """Identical inputs are predicted alike by the model retrained without them, so the pair counts 1/2; the fast
    formulas reached the two predictions by different roundings and counted such pairs as right or wrong (AUC off by
    up to 0.04 here)."""
    X, y = _repeated_rows(16, 1)
    groups = np.repeat([2, 0], 8) if grouped else None
    est = RankRLS(alpha=0.5, **params)
    want = _auc_of_retrained_pairs(est, X, y, groups)
    search = RankRLSCV([0.5], cv="lpo", **params).fit(X, y, groups)
    assert search.best_score_ == pytest.approx(want, abs=1e-12)
    pairs, P = search.cv_pairs_, search.cv_predictions_
    twin = (X[pairs[:, 0]] == X[pairs[:, 1]]).all(axis=1)
    assert twin.any() and np.array_equal(P[twin, 0], P[twin, 1])
    assert permutation_test_lpo(est, X, y, 2, random_state=0, groups=groups)[0] == pytest.approx(want, abs=1e-12)


@pytest.mark.parametrize("params", [dict(kernel="linear"), dict(kernel="rbf"), dict(kernel="rbf", exclude_ties=True)])
def test_hold_out_predictions_of_identical_rows_are_ties(params):
    """Rows of one hold-out set (or group) with identical inputs get one prediction, as from the refitted model, so
    listwise measures see their tie: RankRLSCV's fold scores equal the measure of the refitted models' predictions."""
    X, y = _repeated_rows(24, 2)
    groups = np.repeat([5, 1, 3], 8)
    folds = np.arange(24) % 3
    want = []
    for alpha in (0.1, 10.0):
        pred = np.empty(24)
        for k in range(3):
            test = folds == k
            pred[test] = RankRLS(alpha=alpha, **params).fit(X[~test], y[~test], groups[~test]).predict(X[test])
        want.append(ndcg(y, pred, folds * 10 + groups))  # one unit per fold and group
        got = kfold_predictions(RankRLS(alpha=alpha, **params), X, y, folds, groups)
        same = (X[:, None] == X[None, :]).all(axis=2) & (folds[:, None] == folds[None, :])
        assert np.array_equal(np.equal.outer(got, got) | ~same, np.ones((24, 24), bool))
    search = RankRLSCV([0.1, 10.0], cv=folds, scoring="ndcg", **params).fit(X, y, groups)
    np.testing.assert_allclose(search.cv_results_["scores"], want, rtol=1e-12)
    lgo = leave_group_out(RankRLS(**params), X, y, groups)
    same = (X[:, None] == X[None, :]).all(axis=2) & (groups[:, None] == groups[None, :])
    assert np.array_equal(np.equal.outer(lgo, lgo) | ~same, np.ones((24, 24), bool))


def test_preference_hold_out_predictions_of_identical_rows_are_ties():
    X, _ = _repeated_rows(20, 3)
    rng = np.random.default_rng(3)
    pairs = np.array([rng.choice(20, 2, replace=False) for _ in range(50)])
    sets = [np.arange(10), np.arange(10, 16)]
    for est in (RankRLS(kernel="rbf"), RankRLS(kernel="linear")):
        for s, got in zip(sets, preference_holdout_predictions(est, X, pairs, sets)):
            keep = ~np.isin(pairs, s).any(axis=1)
            want = est.fit_preferences(X, pairs[keep]).predict(X[s])
            np.testing.assert_allclose(got, want, rtol=1e-10)
            assert np.array_equal(np.equal.outer(got, got), np.equal.outer(want, want))


@pytest.mark.parametrize("kernel, n, p", [("rbf", 50, 200), ("poly", 50, 200), ("linear", 300, 7),
                                          ("precomputed", 300, 7)])
def test_predictions_of_identical_rows_tie(kernel, n, p):
    """The compiled blocked kernel product and BLAS's matrix-vector product rounded identical test rows differently
    (by their place in a block), so score() counted their pairs as right or wrong instead of 1/2."""
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((200, n)), rng.standard_normal(200)
    distinct = rng.standard_normal((5, n))
    which = np.r_[0, 1, 2, 3, 4, rng.integers(0, 5, p - 5)]
    Z, yz = distinct[which], rng.standard_normal(p)
    if kernel == "precomputed":  # the linear kernel's values; identical inputs are identical kernel rows (a blocked
        X, distinct = X @ X.T, distinct @ X.T  # Z @ X.T may round twin rows apart)
        Z = distinct[which]
    model = RankRLS(kernel=kernel).fit(X, y)
    one_by_one = np.array([model.predict(distinct[[k]])[0] for k in range(5)])
    np.testing.assert_allclose(model.predict(Z), one_by_one[which], rtol=1e-9)
    assert np.array_equal(model.predict(Z), model.predict(Z)[np.unique(which, return_index=True)[1]][which])
    f = one_by_one[which]
    d = np.sign(np.subtract.outer(f, f)) * np.sign(np.subtract.outer(yz, yz))
    untied = np.triu(np.subtract.outer(yz, yz) != 0, 1)
    want = np.mean(np.where(d[untied] > 0, 1.0, np.where(d[untied] == 0, 0.5, 0.0)))
    assert model.score(Z, yz) == pytest.approx(want, abs=1e-12)
    assert model.score(sp.csr_matrix(Z), yz) == pytest.approx(want, abs=1e-12)


def test_permutation_test_names_a_bad_random_state():
    X, y = _repeated_rows(12, 4)
    with pytest.raises(ValueError, match="random_state must be None, an int"):
        permutation_test_lpo(RankRLS(), X, y, 3, random_state="x")


def test_a_scoring_callable_without_groups_is_named():
    X, y = _repeated_rows(12, 4)
    with pytest.raises(TypeError, match=r"cannot be called as scoring\(y_true, y_pred, groups\)"):
        RankRLSCV(cv=3, scoring=lambda y_true, y_pred: 0.0).fit(X, y)
    assert RankRLSCV(cv=3, scoring=lambda y_true, y_pred, groups=None: 0.0).fit(X, y).best_score_ == 0.0


@pytest.mark.parametrize("grouped", [False, True])
def test_all_pairs_of_the_feature_route_with_identical_rows_tie_them_without_listing(grouped):
    """leave_pair_out without pairs on the linear feature route generates the pairs in C++ also when rows repeat: the
    pairs of identical rows are found by their place in the default order and tie; every prediction equals the listed
    pairs' and, for pairs of twins, retraining's."""
    rng = np.random.default_rng(7)
    X = rng.standard_normal((12, 3))[rng.integers(0, 12, 50)]
    y = rng.standard_normal(50)
    groups = rng.integers(0, 3, 50) if grouped else None
    est = RankRLS(alpha=0.5)
    pairs, listed = leave_pair_out(est, X, y, groups=groups, return_pairs=True)
    got = leave_pair_out(est, X, y, groups=groups)
    np.testing.assert_allclose(got, listed, rtol=1e-12, atol=1e-14)
    twin = (X[pairs[:, 0]] == X[pairs[:, 1]]).all(axis=1)
    assert twin.sum() > 10 and np.array_equal(got[twin, 0], got[twin, 1])
    for p in pairs[twin][:3]:
        keep = np.setdiff1d(np.arange(50), p)
        want = est.fit(X[keep], y[keep], None if groups is None else groups[keep]).predict(X[p])
        np.testing.assert_allclose(got[(pairs == p).all(axis=1)][0], want, rtol=1e-10)
