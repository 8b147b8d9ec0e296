"""Exact cross-validation at small alpha for the models beside the dense route: exclude_ties=True (every hold-out
question in a symmetric G form or by retraining without the set: accurate at any alpha, warning only below 1e-8 times
trace(S K S)) and preference graphs (the edge form up to 2 edges per row; denser graphs update one LU factor of
L K + alpha I by Woodbury, which loses digits and warns below 1e-4 sigma_max).  The model solved on all the data
(Factorization.solve, RankRLSCV.best_estimator_) comes from the symmetric system a fit solves.
The oracle: the explicit pair loop's Laplacian without the held-out rows, the normal equations (L K + alpha I) A = L y
solved with numpy and refined with long-double residuals; a preference graph is refitted without the held-out edges."""

import itertools
import warnings

import numpy as np
import scipy.sparse
import pytest

import fastrank
from fastrank import model_selection as ms
from fastrank.exceptions import IllConditionedWarning
from cv_oracles import rbf

GAMMA = 0.3


@pytest.fixture
def data():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 4))
    return X, np.round(X @ rng.normal(size=4)), np.repeat(np.arange(4), 10)


def untied_laplacian(y, groups, rows, c=None):
    """Laplacian of the pairs among ``rows`` with different targets (inside groups), one pair at a time; ``c``: the
    pair weight of each row's group (the full data's, kept when rows are held out), default 1."""
    L = np.zeros((rows.size, rows.size))
    for a in range(rows.size):
        for b in range(a + 1, rows.size):
            i, j = rows[a], rows[b]
            if y[i] != y[j] and (groups is None or groups[i] == groups[j]):
                w = 1.0 if c is None else c[i]
                L[[a, b], [a, b]] += w
                L[[a, b], [b, a]] -= w
    return L


def extended_dual(K, L, Y, alpha):
    """The dual coefficients A of (L K + alpha I) A = L Y (eq. 17), by iterative refinement with long-double
    residuals (accurate well beyond double at the alphas here, where a plain double solve is not)."""
    Ll, Kl = L.astype(np.longdouble), K.astype(np.longdouble)
    M = Ll @ Kl + alpha * np.eye(len(L), dtype=np.longdouble)
    rhs, Md = Ll @ Y.astype(np.longdouble), M.astype(np.float64)
    A = np.linalg.solve(Md, rhs.astype(np.float64)).astype(np.longdouble)
    for _ in range(6):
        A = A + np.linalg.solve(Md, (rhs - M @ A).astype(np.float64))
    return A


def trained_predict(X, y, groups, alpha, train, rows, c=None):
    """Predictions for ``rows`` of the model trained on the rows ``train``."""
    K = rbf(X, X, GAMMA)
    A = extended_dual(K[np.ix_(train, train)], untied_laplacian(y, groups, train, c), y[train], alpha)
    return (K[np.ix_(rows, train)].astype(np.longdouble) @ A).astype(np.float64)


def retrain_predict(X, y, groups, alpha, held, c=None):
    return trained_predict(X, y, groups, alpha, np.setdiff1d(np.arange(len(y)), held), held, c)


def sigma_max(X, y, groups, c=None):
    rows = np.arange(len(y))
    return float(np.linalg.eigvals(untied_laplacian(y, groups, rows, c) @ rbf(X, X, GAMMA)).real.max())


def ties_model(alpha, weighting="unweighted"):
    return fastrank.RankRLS(alpha=alpha, kernel="rbf", gamma=GAMMA, exclude_ties=True, group_weighting=weighting)


@pytest.mark.parametrize("grouped", [False, True], ids=["object", "groups"])
def test_solve_of_a_tie_excluding_model_is_accurate_at_small_alpha(data, grouped):
    # the engine solved the nonsymmetric L K + alpha I: 4e-9 relative at alpha = 1e-4 and 4e-7 at 1e-6 (1e-8 sigma_max),
    # where fit's symmetric system is exact to 1e-14 (the oracle: 1e-11 at 1e-6)
    X, y, g = data
    groups = g if grouped else None
    for alpha in (1e-2, 1e-4, 1e-6):
        want = trained_predict(X, y, groups, alpha, np.arange(40), np.arange(40))
        got = ms.factorize(ties_model(alpha), X, y, groups).solve(alpha).predict(X)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-10 * np.abs(want).max())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", IllConditionedWarning)  # the hold-out folds at the smallest alphas
            cv = fastrank.RankRLSCV(alphas=[alpha], kernel="rbf", gamma=GAMMA, exclude_ties=True, cv=4,
                                    scoring="disagreement").fit(X, y, groups)
        np.testing.assert_allclose(cv.predict(X), want, rtol=0, atol=1e-10 * np.abs(want).max())


@pytest.mark.parametrize("grouped, weighting", [(False, "unweighted"), (True, "unweighted"), (True, "normalized")],
                         ids=["object", "groups", "groups-normalized"])
def test_tie_excluding_hold_outs_are_accurate_or_warn(data, grouped, weighting):
    # unweighted sets are retrained without each set (here cheaper than the Woodbury update) by fit's symmetric
    # solve: exact at any alpha, no warning; the Woodbury update (other weightings keep the full data's pair weights)
    # warns below 1e-4 sigma_max and is exact above; pairs take the G form (the Woodbury update of pairs was off by
    # 2.4e-7 at 1e-6 sigma_max, 5.6e-3 at 1e-8)
    X, y, g = data
    groups = g if grouped else None
    c = None if weighting == "unweighted" else np.full(40, 0.1)  # normalized: 1 / n_q, groups of 10 rows
    top = sigma_max(X, y, groups, c)
    trace = np.trace(untied_laplacian(y, groups, np.arange(40), c) @ rbf(X, X, GAMMA))
    folds = [np.arange(k, 40, 5) for k in range(5)]
    pairs = np.array([[0, 1], [2, 7], [12, 15]])
    retrained = True  # every weighting: the retrained model keeps the full data's pair weights
    assert ms.factorize(ties_model(1.0, weighting), X, y, groups)._engine._route()._retrain_is_cheaper(folds)
    for ratio in (1e-3, 1e-5, 1e-7):
        alpha = ratio * top
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            sets = ms.holdout_predictions(ties_model(alpha, weighting), X, y, folds, groups=groups)
            lpo = ms.leave_pair_out(ties_model(alpha, weighting), X, y, pairs=pairs, groups=groups)
        ill = [w for w in caught if issubclass(w.category, IllConditionedWarning)]
        # pairs take the G form, which warns below 1e-8 times trace(L K)
        assert len(ill) == (ratio < 1e-4 and not retrained) + (alpha < 1e-8 * trace), [str(w.message) for w in caught]
        for w in ill:
            assert f"alpha={alpha:.3g}" in str(w.message) and "exclude_ties=True" in str(w.message)
        checked = list(zip(folds, sets)) if retrained or ratio > 1e-4 else []
        for held, got in checked + list(zip(pairs, lpo)):
            want = retrain_predict(X, y, groups, alpha, held, c)
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-9 * np.abs(want).max())


def test_tie_excluding_pairs_of_one_group_are_accurate_at_small_alpha():
    # five tie levels, tied pairs and both orders of a pair, two outputs that tie the same pairs: the G form per
    # cell pair (Cholesky of S_1 K S_1 + alpha I) and a rank-(T + 2) update per pair
    rng = np.random.default_rng(5)
    m = 60
    X = rng.normal(size=(m, 4))
    y = np.round(X @ rng.normal(size=4) / 1.5)
    K = rbf(X, X, 0.1)
    Y = np.stack([y, 3 * y - 1], axis=1)
    pairs = np.array([(i, j) for i in range(m) for j in range(i + 1, m)])[::29]
    pairs = np.concatenate([pairs, pairs[:5, ::-1]])
    assert np.any(y[pairs[:, 0]] == y[pairs[:, 1]]) and len(np.unique(y)) == 5
    top = float(np.linalg.eigvals(untied_laplacian(y, None, np.arange(m)) @ K).real.max())
    for ratio in (1e-2, 1e-4, 1e-6):
        alpha = ratio * top
        model = fastrank.RankRLS(alpha=alpha, kernel="precomputed", exclude_ties=True)
        with warnings.catch_warnings():
            warnings.simplefilter("error", IllConditionedWarning)
            got = ms.leave_pair_out(model, K, Y, pairs=pairs)
        for (i, j), pred in zip(pairs, got):
            T = np.setdiff1d(np.arange(m), [i, j])
            A = extended_dual(K[np.ix_(T, T)], untied_laplacian(y, None, T), Y[T], alpha)
            want = (K[np.ix_([i, j], T)].astype(np.longdouble) @ A).astype(np.float64)
            np.testing.assert_allclose(pred, want, rtol=0, atol=1e-9 * np.abs(want).max())
    K[0, 0] -= 100.0  # not positive semidefinite
    with pytest.raises(fastrank.LinAlgError, match="alpha="):
        ms.leave_pair_out(fastrank.RankRLS(alpha=1e-3, kernel="precomputed", exclude_ties=True), K, y, pairs=pairs)


@pytest.mark.parametrize("weighting", ["unweighted", "per_query"])
def test_tie_excluding_pairs_of_several_groups_are_accurate_at_small_alpha(weighting):
    # groups of 2-14 rows with 1-4 tie levels (a group of two rows loses all its edges with the pair, tied pairs
    # lose none of each other's), per group and cell pair a virtual-target update on the group's rows
    rng = np.random.default_rng(7)
    g = np.repeat(np.arange(6), [14, 9, 2, 12, 2, 11])
    m = g.size
    X = rng.normal(size=(m, 3))
    y = np.round(X @ rng.normal(size=3) / 2)
    y[g == 4] = [1.0, 2.0]
    K = rbf(X, X, 0.2)
    Y = np.stack([y, 2 * y + 5], axis=1)
    edges = {q: sum(y[i] != y[j] for i in np.flatnonzero(g == q) for j in np.flatnonzero(g == q) if i < j)
             for q in range(6)}
    c = None if weighting == "unweighted" else np.array([1.0 / edges[q] if edges[q] else 1.0 for q in g])
    pairs = np.array([(i, j) for i in range(m) for j in range(m) if i != j and g[i] == g[j]])[::7]
    pairs = np.concatenate([pairs, [np.flatnonzero(g == 4)]])
    assert np.any(y[pairs[:, 0]] == y[pairs[:, 1]]) and np.any(g[pairs[:, 0]] == 4)
    L = untied_laplacian(y, g, np.arange(m), c)
    top = float(np.linalg.eigvals(L @ K).real.max())
    for ratio in (1e-2, 1e-4, 1e-6):
        alpha = ratio * top
        model = fastrank.RankRLS(alpha=alpha, kernel="precomputed", exclude_ties=True, group_weighting=weighting)
        with warnings.catch_warnings():
            warnings.simplefilter("error", IllConditionedWarning)
            got = ms.leave_pair_out(model, K, Y, pairs=pairs, groups=g)
        for (i, j), pred in zip(pairs, got):
            T = np.setdiff1d(np.arange(m), [i, j])
            A = extended_dual(K[np.ix_(T, T)], untied_laplacian(y, g, T, c), Y[T], alpha)
            want = (K[np.ix_([i, j], T)].astype(np.longdouble) @ A).astype(np.float64)
            np.testing.assert_allclose(pred, want, rtol=0, atol=1e-9 * np.abs(want).max())


@pytest.mark.parametrize("weighting", ["unweighted", "normalized", "per_query"])
def test_tie_excluding_sets_cutting_groups_are_accurate_at_small_alpha(data, weighting, monkeypatch):
    # sets of a few rows of one or several groups, where the G form costs less than retraining (forced here): per
    # touched group the cell-wise part through M_1 on the touched rows, then the rank-(|U| + T) update
    from fastrank._exactcv import TieExcludedRoute

    monkeypatch.setattr(TieExcludedRoute, "_retrain_is_cheaper", lambda self, sets: False)
    X, y, g = data
    c = {"unweighted": None, "normalized": np.full(40, 0.1)}.get(weighting)
    if weighting == "per_query":
        edges = [sum(y[i] != y[j] for i in range(10 * q, 10 * q + 10) for j in range(i + 1, 10 * q + 10))
                 for q in range(4)]
        c = 1.0 / np.repeat(edges, 10)
    top = sigma_max(X, y, g, c)
    many = [np.array([0, 3, 13, 25]), np.array([1]), np.array([30, 31, 32, 5]), np.array([21, 22, 39]),
            np.array([2, 14])]
    for ratio, sets in itertools.product((1e-3, 1e-5, 1e-6), (many, [np.array([1, 4])])):  # G from the inverse / solves
        alpha = ratio * top
        with warnings.catch_warnings():
            warnings.simplefilter("error", IllConditionedWarning)
            got = ms.holdout_predictions(ties_model(alpha, weighting), X, y, sets, groups=g)
        for rows, pred in zip(sets, got):
            want = retrain_predict(X, y, g, alpha, rows, c)
            np.testing.assert_allclose(pred, want, rtol=0, atol=1e-9 * np.abs(want).max())


def test_tie_excluding_hold_outs_that_strip_a_group_are_accurate_at_small_alpha(monkeypatch):
    # one or two rated rows per group: holding out a pair or set that leaves a group only tied rows removes all its
    # edges, which the whole-group form answers (the pair and cut-set updates alone lost 1e-7 at 1e-7 sigma_max)
    from fastrank._exactcv import TieExcludedRoute

    monkeypatch.setattr(TieExcludedRoute, "_retrain_is_cheaper", lambda self, sets: False)
    rng = np.random.default_rng(4)
    g = np.repeat(np.arange(8), 10)
    m = g.size
    X = rng.normal(size=(m, 4))
    y = np.zeros(m)
    y[::10], y[3:40:10] = 1.0, 2.0  # groups 0-3: two rated rows, groups 4-7: one
    K = rbf(X, X, 0.1)
    top = float(np.linalg.eigvals(untied_laplacian(y, g, np.arange(m)) @ K).real.max())
    pairs = np.array([(10 * q, 10 * q + k) for q in range(8) for k in (1, 3, 9)])
    sets = [np.array([0, 3]), np.array([10, 13, 21]), np.array([20, 31, 35]), np.array([40, 55])]
    for ratio in (1e-4, 1e-6, 1e-7):
        alpha = ratio * top
        model = fastrank.RankRLS(alpha=alpha, kernel="precomputed", exclude_ties=True)
        got = list(ms.leave_pair_out(model, K, y, pairs=pairs, groups=g))
        got += ms.holdout_predictions(model, K, y, sets, groups=g)
        for held, pred in zip(list(pairs) + sets, got):
            T = np.setdiff1d(np.arange(m), held)
            want = (K[np.ix_(held, T)].astype(np.longdouble)
                    @ extended_dual(K[np.ix_(T, T)], untied_laplacian(y, g, T), y[T], alpha)).astype(np.float64)
            np.testing.assert_allclose(pred, want, rtol=0, atol=1e-9 * np.abs(want).max())


def test_rankrlscv_with_exclude_ties_reports_the_advice_once(data):
    X, y, g = data
    top = sigma_max(X, y, g, np.full(40, 0.1))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fastrank.RankRLSCV(alphas=np.array([1e-11, 1e-10, 1e-2]) * top, kernel="rbf", gamma=GAMMA, exclude_ties=True,
                           group_weighting="normalized", cv="lpo", scoring="disagreement").fit(X, y, g)
    ill = [w for w in caught if issubclass(w.category, IllConditionedWarning)]
    assert len(ill) == 1 and "largest eigenvalue of S K S" in str(ill[0].message)


@pytest.mark.parametrize("weighting", ["unweighted", "normalized", "per_query"])
def test_tie_excluding_whole_group_hold_outs_are_accurate_at_small_alpha(data, weighting):
    # sets of whole groups (leave-group-out, folds of groups) solve the dense route's SPD G form on S K S with the
    # tie-excluding S; the Woodbury update of the LU factor was off by 3e-7 / 4e-6 at 1e-5 / 1e-6 sigma_max.  A group whose rows
    # all tie (no edge) and groups of one row take the retrained model's predictions as well
    X, y, g = data
    y, g = y.copy(), g.copy()
    y[10:20] = 3.0
    g[38], g[39] = 4, 5
    sizes = np.bincount(g)
    edges = {q: sum(y[i] != y[j] for i in np.flatnonzero(g == q) for j in np.flatnonzero(g == q) if i < j)
             for q in range(6)}
    c = {"unweighted": None, "normalized": 1.0 / sizes[g],
         "per_query": np.array([1.0 / edges[q] if edges[q] else 1.0 for q in g])}[weighting]
    top = sigma_max(X, y, g, c)
    sets = [np.flatnonzero(g == q) for q in range(6)]
    folds = [np.flatnonzero(np.isin(g, f)) for f in ([0, 4], [1, 2], [3, 5])]
    for ratio in (1e-3, 1e-5, 1e-6):
        alpha = ratio * top
        with warnings.catch_warnings():
            warnings.simplefilter("error", IllConditionedWarning)
            lgo = ms.leave_group_out(ties_model(alpha, weighting), X, y, g)
            held = ms.holdout_predictions(ties_model(alpha, weighting), X, y, folds, groups=g)
        for rows, got in list(zip(sets, (lgo[s] for s in sets))) + list(zip(folds, held)):
            want = retrain_predict(X, y, g, alpha, rows, c)
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-9 * np.abs(want).max())
    with pytest.warns(IllConditionedWarning, match="exclude_ties=True"):  # below 1e-8 times the trace of S K S
        ms.leave_group_out(ties_model(1e-10 * top, weighting), X, y, g)


def test_dense_preference_graph_hold_outs_are_accurate_at_small_alpha():
    rng = np.random.default_rng(2)
    m = 30
    X = rng.normal(size=(m, 4))
    f = X @ rng.normal(size=4)
    pairs = np.array([(i, j) for i in range(m) for j in range(i + 1, m) if rng.random() < 0.3])
    pairs = np.where((f[pairs[:, 0]] > f[pairs[:, 1]])[:, None], pairs, pairs[:, ::-1])
    L = np.zeros((m, m))
    for i, j in pairs:
        L[[i, j], [i, j]] += 1.0
        L[[i, j], [j, i]] -= 1.0
    top = float(np.linalg.eigvals(L @ rbf(X, X, GAMMA)).real.max())
    sets = [np.arange(k, m, 5) for k in range(5)]
    for ratio in (1e-3, 1e-5, 1e-7):  # the Woodbury update above 1e-4 sigma_max, retraining without each set below
        alpha = ratio * top
        est = fastrank.RankRLS(alpha=alpha, kernel="rbf", gamma=GAMMA)
        with warnings.catch_warnings():
            warnings.simplefilter("error", IllConditionedWarning)
            got = ms.preference_holdout_predictions(est, X, pairs, sets)
        for S, p in zip(sets, got):
            kept = pairs[~np.isin(pairs, S).any(axis=1)]
            want = est.fit_preferences(X, kept).predict(X[S])
            np.testing.assert_allclose(p, want, rtol=0, atol=1e-10 * np.abs(want).max())


def test_sparse_preference_graph_hold_outs_are_accurate_at_small_alpha():
    # at most 2 edges per row: the symmetric system of the edges, rows and columns of the removed edges deleted (the
    # LU route's Woodbury update was off by 2.2e-8 at 1e-5 sigma_max and 3.7e-2 at 1e-8 here); a set that touches no
    # edge keeps the full model, one that touches all of them is refused
    rng = np.random.default_rng(2)
    m = 60
    X = rng.normal(size=(m, 4))
    f = X @ rng.normal(size=4)
    every = np.array([(i, j) for i in range(m) for j in range(i + 1, m)])
    pairs = every[rng.choice(len(every), 50, replace=False)]
    pairs = np.where((f[pairs[:, 0]] > f[pairs[:, 1]])[:, None], pairs, pairs[:, ::-1])
    mags = np.abs(f[pairs[:, 0]] - f[pairs[:, 1]])
    K = rbf(X, X, 0.1)

    def laplacian(edges, z):
        L, b = np.zeros((m, m)), np.zeros((m, 1))
        for (i, j), zij in zip(edges, z):
            L[[i, j], [i, j]] += 1.0
            L[[i, j], [j, i]] -= 1.0
            b[[i, j], 0] += [zij, -zij]
        return L, b

    top = float(np.linalg.eigvals(laplacian(pairs, mags)[0] @ K).real.max())
    isolated = np.setdiff1d(np.arange(m), pairs)[:2]
    sets = [np.arange(k, m, 5) for k in range(5)] + [isolated]
    for ratio in (1e-3, 1e-6, 1e-7):
        alpha = ratio * top
        with warnings.catch_warnings():
            warnings.simplefilter("error", IllConditionedWarning)
            got = ms.preference_holdout_predictions(fastrank.RankRLS(alpha=alpha, kernel="precomputed"), K, pairs,
                                                    sets, magnitudes=mags)
        for S, pred in zip(sets, got):
            keep = ~np.isin(pairs, S).any(axis=1)
            L, b = laplacian(pairs[keep], mags[keep])
            Kd = K.astype(np.longdouble)
            M = L.astype(np.longdouble) @ Kd + alpha * np.eye(m, dtype=np.longdouble)
            A = np.linalg.solve(M.astype(np.float64), b).astype(np.longdouble)
            for _ in range(6):  # long-double residuals
                A = A + np.linalg.solve(M.astype(np.float64), (b - M @ A).astype(np.float64))
            want = (Kd[S] @ A).astype(np.float64)[:, 0]
            np.testing.assert_allclose(pred, want, rtol=0, atol=1e-9 * np.abs(want).max())
    with pytest.raises(ValueError, match="touches every preference"):
        ms.preference_holdout_predictions(fastrank.RankRLS(alpha=1.0, kernel="precomputed"), K, pairs,
                                          [np.unique(pairs[:, 0])])


@pytest.mark.parametrize("kind, weighting", [("dense", "unweighted"), ("sparse", "unweighted"),
                                             ("precomputed", "unweighted"), ("dense", "per_query")])
def test_tie_excluding_sets_retrained_equal_the_woodbury_update(kind, weighting, monkeypatch):
    # both ways of answering hold-out sets, two outputs with the same ties, with and without groups (moderate alpha);
    # a weighted model's retraining keeps the full data's pair weights
    from fastrank._exactcv import TieExcludedRoute

    rng = np.random.default_rng(4)
    X = rng.normal(size=(60, 6))
    Y = np.round(X @ rng.normal(size=6))[:, None] * [1.0, 2.0]
    est = fastrank.RankRLS(kernel="rbf", gamma=GAMMA, exclude_ties=True, group_weighting=weighting)
    if kind == "sparse":
        X = scipy.sparse.csr_matrix(np.where(np.abs(X) > 0.5, X, 0.0))
    elif kind == "precomputed":
        X, est = rbf(X, X, GAMMA), fastrank.RankRLS(kernel="precomputed", exclude_ties=True)
    sets = [np.arange(k, 60, 4) for k in range(4)]
    for groups in (None, rng.integers(0, 3, size=60)):
        got = {}
        for retrain in (True, False):
            monkeypatch.setattr(TieExcludedRoute, "_retrain_is_cheaper", lambda self, s, r=retrain: r)
            got[retrain] = ms.holdout_predictions(est, X, Y, sets, groups=groups)
        for a, b in zip(got[True], got[False]):
            assert a.shape == (15, 2)
            np.testing.assert_allclose(a, b, rtol=0, atol=1e-10 * np.abs(b).max())
