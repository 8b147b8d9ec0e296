"""Unusual inputs of the exact cross-validation engine reachable from fastrank.model_selection and RankRLSCV: a hold-out
set or group that leaves no relevant training pair raises on every route (the dense kernel route did; the feature-map,
basis, tie-excluding and MPRank routes predicted with the zero model or failed in LAPACK), and fold labels that cannot
be folds are named as such."""

import warnings

import numpy as np
import pytest

import fastrank
from fastrank import model_selection as ms
from fastrank._problem import require_preferences
from fastrank._validation import group_index

ROUTES = [fastrank.RankRLS(), fastrank.RankRLS(kernel="rbf"), fastrank.RankRLS(basis_vectors=5),
          fastrank.RankRLS(exclude_ties=True), fastrank.MPRank()]


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    return rng.normal(size=(12, 3)), rng.normal(size=12)


def _retrain_linear(X, y, alpha, held, groups, exclude_ties=False):
    """Primal RankRLS without the rows ``held``: (X_T^T L_T X_T + alpha I) w = X_T^T L_T y_T, L_T the Laplacian of the
    kept pairs inside groups (tied pairs left out with ``exclude_ties``), solved with numpy."""
    keep = np.setdiff1d(np.arange(X.shape[0]), held)
    L = np.zeros((keep.size, keep.size))
    for a in range(keep.size):
        for b in range(a + 1, keep.size):
            i, j = keep[a], keep[b]
            if groups[i] != groups[j] or (exclude_ties and y[i] == y[j]):
                continue
            L[[a, b], [a, b]] += 1.0
            L[[a, b], [b, a]] -= 1.0
    XT = X[keep]
    w = np.linalg.solve(XT.T @ L @ XT + alpha * np.eye(X.shape[1]), XT.T @ L @ y[keep])
    return X[held] @ w


@pytest.mark.parametrize("est", ROUTES, ids=repr)
def test_hold_out_set_leaving_single_rows_raises_on_every_route(data, est):
    # on main: zeros from the linear, basis and tie-excluding routes, numpy's LinAlgError from MPRank
    X, y = data
    groups = np.repeat([0, 1, 2], 4)
    keep_one_per_group = np.setdiff1d(np.arange(12), [0, 4, 8])
    with pytest.raises(ValueError, match="hold-out set 1 leaves no training pairs"):
        ms.holdout_predictions(est, X, y, [[0, 1], keep_one_per_group], groups)
    with pytest.raises(ValueError, match="hold-out set 0 leaves no training pairs"):
        ms.kfold_predictions(est, X, y, [np.arange(12)], groups)


@pytest.mark.parametrize("est", ROUTES, ids=repr)
def test_leave_group_out_leaving_single_rows_raises_on_every_route(data, est):
    X, y = data
    groups = np.r_[0, 1, np.full(10, 2)]  # without group 2 two single rows remain
    with pytest.raises(ValueError, match="holding out group 2 leaves no training pairs"):
        ms.leave_group_out(est, X, y, groups)
    search = fastrank.RankRLSCV(alphas=[0.5, 1.0], **{k: v for k, v in est.get_params().items()
                                                        if k in ("kernel", "exclude_ties")})
    if not isinstance(est, fastrank.MPRank):
        with pytest.raises(ValueError, match="leaves no training pairs"):
            search.fit(X, y, groups)


def test_tie_excluded_set_leaving_only_tied_rows_raises(data):
    X, _ = data
    y = np.r_[np.zeros(6), np.arange(1.0, 7.0)]  # rows 0-5 tied: no relevant pair among them
    est = fastrank.RankRLS(exclude_ties=True)
    with pytest.raises(ValueError, match="hold-out set 0 leaves no training pairs"):
        ms.holdout_predictions(est, X, y, [np.arange(6, 12)])
    # one untied row kept next to the tied ones: five relevant pairs, predicted as retraining does
    got = ms.holdout_predictions(est, X, y, [np.arange(7, 12)])[0]
    np.testing.assert_allclose(got, _retrain_linear(X, y, 1.0, np.arange(7, 12), np.zeros(12), True), rtol=1e-8)


@pytest.mark.parametrize("exclude_ties", [False, True])
def test_hold_out_set_leaving_one_pair_equals_retraining(data, exclude_ties):
    X, y = data
    groups = np.repeat([0, 1, 2], 4)
    held = np.setdiff1d(np.arange(12), [0, 1, 4, 8])  # group 0 keeps the pair (0, 1)
    for est in (fastrank.RankRLS(exclude_ties=exclude_ties), fastrank.RankRLS(kernel="rbf", exclude_ties=exclude_ties)):
        got = ms.holdout_predictions(est, X, y, [held], groups)[0]
        if est.kernel == "linear":
            ref = _retrain_linear(X, y, 1.0, held, groups, exclude_ties)
        else:  # rows 4 and 8 have no pair: the fit on rows 0 and 1 alone is the retrained model
            ref = est.fit(X[[0, 1]], y[[0, 1]]).predict(X[held])
        np.testing.assert_allclose(got, ref, rtol=1e-8)


@pytest.mark.parametrize("folds, exc, match", [
    # NaN matched no label: "hold-out set 2 must be a non-empty 1-D array of integer row indices"
    (np.r_[np.zeros(6), np.ones(5), np.nan], ValueError, r"fold labels must not be NaN \(row 11\)"),
    (np.array([0] * 6 + [1] * 5 + [np.nan], dtype=object), ValueError, r"fold labels must not be NaN \(row 11\)"),
    # labels of the wrong length were read as index sets: "hold-out set 0 must be a non-empty 1-D array ..."
    (np.arange(11) % 3, ValueError, r"fold labels must have one entry per row \(12\), got 11"),
    # one (m,) mask was read as m index sets: "hold-out set 0 as a boolean mask must have shape (12,)"
    (np.arange(12) < 6, ValueError, "folds as one boolean mask is ambiguous"),
    # numpy's "'<' not supported between instances of 'NoneType' and 'str'"
    (np.array(["a", None] * 6, dtype=object), TypeError, "fold labels must be mutually comparable"),
])
def test_fold_labels_that_are_no_folds_are_named(data, folds, exc, match):
    X, y = data
    with pytest.raises(exc, match=match):
        ms.kfold_predictions(fastrank.RankRLS(), X, y, folds)
    with pytest.raises(exc, match=match):
        fastrank.RankRLSCV(alphas=[1.0], cv=folds).fit(X, y)


def test_string_fold_labels_in_an_object_array_or_series(data):
    # an object array of labels (a pandas Series of strings) was read as index sets: "hold-out set 0 must be ..."
    X, y = data
    labels = np.array(["a", "b", "c"] * 4)
    est = fastrank.RankRLS()
    want = ms.kfold_predictions(est, X, y, labels)
    np.testing.assert_array_equal(want, ms.kfold_predictions(est, X, y, np.arange(12) % 3))
    np.testing.assert_array_equal(ms.kfold_predictions(est, X, y, labels.astype(object)), want)
    pd = pytest.importorskip("pandas")
    np.testing.assert_array_equal(ms.kfold_predictions(est, X, y, pd.Series(labels, dtype=object)), want)
    search = fastrank.RankRLSCV(alphas=[0.5, 2.0], cv=labels.astype(object)).fit(X, y)
    np.testing.assert_array_equal(search.cv_predictions_, fastrank.RankRLSCV(alphas=[0.5, 2.0], cv=labels).fit(X, y)
                                  .cv_predictions_)
    held = np.flatnonzero(labels == "a")
    np.testing.assert_allclose(want[held], _retrain_linear(X, y, 1.0, held, np.zeros(12)), rtol=1e-8)


def test_linear_basis_model_is_not_taken_for_the_full_linear_model(data):
    # with n_features < m the linear basis model also counted as "low rank": Factorization.solve returned the full
    # linear RankRLS instead of raising, and mprank_loo_approximation set the full model's approximation beside the
    # basis model's exact value
    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(12, 5)), rng.normal(size=12)
    est = fastrank.RankRLS(basis_vectors=3)
    with pytest.raises(ValueError, match="Factorization.solve re-solves the dense kernel model"):
        ms.factorize(est, X, y).solve(1.0)
    with pytest.raises(ValueError, match="mprank_loo_approximation needs the dense kernel model"):
        ms.mprank_loo_approximation(est, X, y)
    # its hold-outs stay those of the basis model: retraining without rows outside the basis keeps the basis
    basis = est.fit(X, y).basis_indices_
    held = np.setdiff1d(np.arange(12), basis)[:4]
    keep = np.setdiff1d(np.arange(12), held)
    got = ms.holdout_predictions(fastrank.RankRLS(basis_vectors=basis), X, y, [held])[0]
    ref = fastrank.RankRLS(basis_vectors=np.searchsorted(keep, basis)).fit(X[keep], y[keep]).predict(X[held])
    np.testing.assert_allclose(got, ref, rtol=1e-8)


def test_preference_hold_out_set_touching_every_edge_is_named(data):
    X, _ = data
    pairs = [[0, 1], [0, 2], [3, 4]]
    with pytest.raises(ValueError, match="hold-out set 1 touches every preference: no training edge is left"):
        ms.preference_holdout_predictions(fastrank.RankRLS(), X, pairs, [[5], [0, 3]])


def test_feature_space_hold_outs_guard_the_dense_copy_of_sparse_X(monkeypatch):
    # k folds, hold-out sets and listed pairs of a linear model densified a sparse X (m x n) unguarded: numpy's
    # allocation error, or the process killed, where leave-group-out raised fastrank's MemoryError
    sp = pytest.importorskip("scipy.sparse")
    X = sp.random(300, 20, density=0.1, format="csr", random_state=0)
    y = np.random.default_rng(0).normal(size=300)
    monkeypatch.setenv("FASTRANK_MAX_DENSE_BYTES", str(10 ** 4))
    est = fastrank.RankRLS()
    for call in (lambda: ms.kfold_predictions(est, X, y, 3), lambda: ms.holdout_predictions(est, X, y, [[0, 1]]),
                 lambda: ms.leave_pair_out(est, X, y, pairs=[[0, 1]], groups=np.arange(300) // 10)):
        with pytest.raises(MemoryError, match="dense 300 x 20 copy of the sparse X"):
            call()


def test_hold_out_sets_stay_accurate_at_small_alpha_and_warn_below_1e_9_sigma_max():
    # from the spectral factor of a factorization: accurate against retraining in extended precision, without a
    # warning, down to 1e-7 sigma_max; below 1e-9 sigma_max a warning
    from fastrank.exceptions import IllConditionedWarning
    from fastrank.model_selection import factorize

    from cv_oracles import rbf
    from test_cvcore import _oracle_longdouble

    rng = np.random.default_rng(3)
    X = rng.normal(size=(40, 4))
    y = X @ rng.normal(size=4) + 0.3 * rng.normal(size=40)
    folds = np.arange(40) % 4
    est = fastrank.RankRLS(kernel="rbf", gamma=0.2)
    fz = factorize(est, X, y)
    sigma_max = float(fz._engine.decompose()[1].max())
    sets = [np.flatnonzero(folds == k) for k in range(4)]
    for ratio, warns in ((1e-3, False), (1e-7, False), (1e-12, True)):
        alpha = ratio * sigma_max
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            pred = fz.kfold_predictions(folds, alpha=alpha)
        assert any(issubclass(w.category, IllConditionedWarning) for w in caught) == warns
        if not warns:  # accurate: equals retraining without each fold
            for U, ref in zip(sets, _oracle_longdouble(rbf(X, X, 0.2), y, alpha, sets)):
                np.testing.assert_allclose(pred[U], ref, rtol=1e-8, atol=1e-10 * np.abs(pred).max())


def test_a_gaussian_kernel_near_the_identity_warns_only_below_1e_9_sigma_max():
    # gamma 20: K ~ I, so trace(S K S) (869; 269 in 3 groups) is 25 times sigma_max (34.7; 11.2).  At alpha = 1e-7,
    # 2.9e-9 / 8.9e-9 sigma_max but below 1e-9 of the trace, hold-out sets, leave-group-out and leave-pair-out keep
    # 5e-11 relative of retraining in extended precision: no warning (the trace bound warned); below 1e-9 sigma_max a
    # warning
    from fastrank.exceptions import IllConditionedWarning

    from cv_oracles import rbf
    from test_cvcore import _oracle_longdouble

    rng = np.random.default_rng(7)
    X = rng.normal(size=(30, 3))
    y = X @ rng.normal(size=3) + 0.3 * rng.normal(size=30)
    g, K = np.arange(30) % 3, rbf(X, X, 20.0)
    folds, pairs = np.arange(30) % 4, np.array([[0, 1], [2, 7], [5, 29]])
    fold_sets, group_sets = [np.flatnonzero(folds == k) for k in range(4)], [np.flatnonzero(g == q) for q in range(3)]
    for groups, sets, question in (  # each: the predictions of every set, in a list
            (None, fold_sets, lambda est: [ms.kfold_predictions(est, X, y, folds)[U] for U in fold_sets]),
            (g, group_sets, lambda est: [ms.leave_group_out(est, X, y, g)[U] for U in group_sets]),
            (None, pairs, lambda est: list(ms.leave_pair_out(est, X, y, pairs=pairs)))):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got = question(fastrank.RankRLS(alpha=1e-7, kernel="rbf", gamma=20.0))
        for p, ref in zip(got, _oracle_longdouble(K, y, 1e-7, sets, groups), strict=True):
            np.testing.assert_allclose(p, ref, rtol=1e-9, atol=1e-9 * np.abs(ref).max())
        with pytest.warns(IllConditionedWarning, match="below 1e-09 times the largest eigenvalue"):
            question(fastrank.RankRLS(alpha=3e-9, kernel="rbf", gamma=20.0))


def test_tie_excluded_gaussian_kernel_near_the_identity_warns_only_below_1e_8_sigma_max():
    # exclude_ties=True, gamma 20: trace(S K S) (538; 152 in 3 groups) is 16 times sigma_max (33; 11); at alpha = 1e-6
    # (3e-8 / 9e-8 sigma_max), below 1e-8 of the trace, k folds and leave-pair-out keep 4e-9 of retraining by fit
    # (targets of scale 1) without a warning (the trace bound warned); below 1e-8 sigma_max a warning
    from fastrank.exceptions import IllConditionedWarning

    rng = np.random.default_rng(7)
    X = rng.normal(size=(30, 3))
    y = np.round(X @ rng.normal(size=3))  # ties
    folds = np.arange(30) % 4
    for groups, pairs in ((None, [[0, 1], [2, 7], [5, 29]]), (np.arange(30) % 3, [[0, 3], [2, 5], [7, 28]])):
        est = fastrank.RankRLS(alpha=1e-6, kernel="rbf", gamma=20.0, exclude_ties=True)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got = [ms.kfold_predictions(est, X, y, folds, groups)[folds == k] for k in range(4)]
            got += list(ms.leave_pair_out(est, X, y, pairs=pairs, groups=groups))
        for p, held in zip(got, [np.flatnonzero(folds == k) for k in range(4)] + pairs, strict=True):
            keep = np.setdiff1d(np.arange(30), held)
            ref = fastrank.RankRLS(alpha=1e-6, kernel="rbf", gamma=20.0, exclude_ties=True).fit(
                X[keep], y[keep], None if groups is None else groups[keep]).predict(X[held])
            np.testing.assert_allclose(p, ref, rtol=0, atol=5e-9)
        with pytest.warns(IllConditionedWarning, match="below 1e-08 times the largest eigenvalue"):
            ms.leave_pair_out(fastrank.RankRLS(alpha=1e-8, kernel="rbf", gamma=20.0, exclude_ties=True), X, y,
                              pairs=pairs, groups=groups)


def test_preference_cycle_of_a_gaussian_kernel_near_the_identity_warns_only_below_1e_8_sigma_max():
    # a cycle of 30 edges, gamma 20: trace(L K) = 60 is 15 times sigma_max (4); at alpha = 3e-7 (7.5e-8 sigma_max),
    # below 1e-8 of the trace, hold-out sets keep 1e-9 of retraining by fit_preferences without a warning (the trace
    # bound warned); below 1e-8 sigma_max a warning
    from fastrank.exceptions import IllConditionedWarning

    X = np.random.default_rng(7).normal(size=(30, 3))
    pairs, sets = np.c_[np.arange(30), (np.arange(30) + 1) % 30], [np.arange(k, 30, 5) for k in range(5)]
    est = fastrank.RankRLS(alpha=3e-7, kernel="rbf", gamma=20.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = ms.preference_holdout_predictions(est, X, pairs, sets)
    for U, p in zip(sets, got, strict=True):
        retrained = fastrank.RankRLS(alpha=3e-7, kernel="rbf", gamma=20.0).fit_preferences(
            X, pairs[~np.isin(pairs, U).any(axis=1)])
        np.testing.assert_allclose(p, retrained.predict(X[U]), rtol=0, atol=2e-9)
    with pytest.warns(IllConditionedWarning, match="below 1e-08 times the largest eigenvalue of L K"):
        ms.preference_holdout_predictions(fastrank.RankRLS(alpha=1e-9, kernel="rbf", gamma=20.0), X, pairs, sets)


def test_leave_group_out_preference_check_equals_the_general_count():
    # the O(n_groups) check of leave-group-out against the general count over hold-out sets, on random small data
    from fastrank._exactcv import engine_for, require_training_preferences

    rng = np.random.default_rng(7)
    outcomes = set()
    for _ in range(300):
        m = int(rng.integers(3, 12))
        y = rng.integers(0, 2, size=(m, int(rng.integers(1, 3)))).astype(float)
        groups = rng.integers(0, int(rng.integers(2, 5)), size=m)
        if np.unique(groups).size < 2:
            continue
        try:
            eng = engine_for(fastrank.RankRLS(), rng.normal(size=(m, 2)), y, groups)
        except ValueError:  # no preference at all: the engine refuses the data, as fit does
            continue
        results = []
        for check in (eng.require_preferences_without_each_group,
                      lambda: require_training_preferences(eng.groups, eng.Y, eng.groups.rows(),
                                                           lambda k: f"holding out group {eng.groups.labels[k]}")):
            try:
                check()
                results.append(None)
            except ValueError as exc:
                results.append(str(exc))
        assert results[0] == results[1]
        outcomes.add(results[0] is None)
    assert outcomes == {True, False}  # both outcomes occurred


def test_rankrlscv_reports_the_hold_out_advice_once():
    from fastrank.exceptions import IllConditionedWarning

    rng = np.random.default_rng(3)
    X = rng.normal(size=(40, 4))
    y = X @ rng.normal(size=4) + 0.3 * rng.normal(size=40)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fastrank.RankRLSCV(kernel="rbf", gamma=0.2, alphas=[1e-13, 1e-12, 1.0], cv=4, scoring="disagreement").fit(X, y)
    ill = [w for w in caught if issubclass(w.category, IllConditionedWarning)]
    assert len(ill) == 1
    assert "Hold-out predictions at alpha below 1e-09 times the largest eigenvalue" in str(ill[0].message)


def test_the_tied_columns_are_those_without_a_pair_of_different_targets_in_any_group():
    # the check compares every target with its group's first (one gather) rather than the groups' minima and maxima;
    # oracle: an explicit loop over the pairs of every group
    rng = np.random.default_rng(5)
    for _ in range(200):
        m, v = int(rng.integers(2, 12)), int(rng.integers(1, 4))
        groups = rng.integers(0, 4, m)
        Y = rng.integers(0, 2, (m, v)).astype(float) * (rng.random(v) < 0.7)  # some columns tied everywhere
        Y[rng.random((m, v)) < 0.2] = -0.0
        gi = group_index(groups, m)
        varies = [any(Y[i, c] != Y[j, c] for i in range(m) for j in range(m) if groups[i] == groups[j])
                  for c in range(v)]
        sizes_ok = np.bincount(gi.codes).max() >= 2
        if sizes_ok and all(varies):
            require_preferences(Y, gi, "RankRLS")
        else:
            with pytest.raises(ValueError) as err:
                require_preferences(Y, gi, "RankRLS")
            if sizes_ok:
                listed = [c for c in range(v) if not varies[c]]
                assert f"output column(s) {listed}" in str(err.value)


def test_a_pair_found_only_after_the_first_rows_counts():
    # the check reads the first 4096 rows, then the rest only for the columns still tied there; oracle: each group's
    # range of every column
    rng = np.random.default_rng(6)
    m = 9000
    groups = rng.permutation(np.arange(m) // 6)
    base = groups.astype(float)[:, None]  # tied inside every group
    for late in (4096, 4097, m - 1):
        Y = np.hstack([base + rng.integers(0, 3, (m, 1)), base, base, base])
        Y[late, 1] += 1.0  # column 1 has one pair, in the row's group, after (or at the edge of) the first rows
        Y[rng.integers(0, 4096), 3] -= 2.0  # column 3 has one pair inside the first rows
        gi = group_index(groups, m)
        low, high = (np.array([f(Y[groups == g], axis=0) for g in range(gi.n_groups)]) for f in (np.min, np.max))
        tied = [c for c in range(4) if np.all(low[:, c] == high[:, c])]
        assert tied == [2]
        with pytest.raises(ValueError, match=r"output column\(s\) \[2\]"):
            require_preferences(Y, gi, "RankRLS")
        require_preferences(Y[:, [0, 1, 3]], gi, "RankRLS")
