"""Edge inputs of the exact cross-validation functions and searches: errors name the argument (not numpy's conversion
messages), and no value is cast into a silently wrong one."""

import numpy as np
import pytest

import fastrank
from fastrank import model_selection as ms


@pytest.fixture
def data():
    rng = np.random.default_rng(0)
    return rng.normal(size=(12, 3)), rng.normal(size=12), np.repeat([0, 1, 2], 4)


@pytest.mark.parametrize("alpha", [0, -1.0, "abc", [], True])
@pytest.mark.parametrize("question", ["leave_pair_out", "holdout_predictions", "kfold_predictions", "leave_group_out"])
def test_factorization_questions_check_alpha(data, question, alpha):
    # 0 and negative alphas gave hold-out predictions of an ill-posed system; lists and strings reached float()
    X, y, g = data
    fac = ms.factorize(fastrank.RankRLS(), X, y, g)
    args = {"holdout_predictions": ([[0, 1]],), "kfold_predictions": (3,)}.get(question, ())
    with pytest.raises((TypeError, ValueError), match="alpha must be"):
        getattr(fac, question)(*args, alpha=alpha)


def test_factorization_alpha_given_equals_the_estimators(data):
    X, y, g = data
    fac = ms.factorize(fastrank.RankRLS(alpha=2.0), X, y, g)
    np.testing.assert_array_equal(fac.kfold_predictions(3, alpha=2), fac.kfold_predictions(3))


@pytest.mark.parametrize("pairs, match", [
    ([[0, 1], [2]], "pairs must be a rectangular array"),  # numpy's inhomogeneous-shape message reached the user
    ([["a", "b"]], "pairs must contain integer indices"),  # numpy's ufunc 'remainder' message
    ([[True, False]], "pairs must contain integer indices"),  # held out rows 1 and 0
    (np.array([[1, None]], dtype=object), "pairs must contain integer indices"),
    ([[1e30, 1.0]], r"pair indices must lie in \[0, 12\)"),  # an overflowing cast warned, then a wrong range
    ([[2 ** 70, 1]], r"pair indices must lie in \[0, 12\)"),  # Python's OverflowError
])
def test_leave_pair_out_pairs_are_named(data, pairs, match):
    X, y, _ = data
    with pytest.raises(ValueError, match=match):
        ms.leave_pair_out(fastrank.RankRLS(), X, y, pairs=pairs)


def test_leave_pair_out_whole_float_pairs_still_work(data):
    X, y, _ = data
    est = fastrank.RankRLS()
    np.testing.assert_array_equal(ms.leave_pair_out(est, X, y, pairs=[[0.0, 3.0]]),
                                  ms.leave_pair_out(est, X, y, pairs=[[0, 3]]))
    got, _ = ms.leave_pair_out(est, X, y, pairs=np.empty((0, 2)), return_pairs=True)
    assert got.dtype == np.int64 and got.shape == (0, 2)


@pytest.mark.parametrize("verbose", ["abc", -1, [], np.nan])
def test_verbose_is_checked_even_without_a_long_step(data, verbose):
    # a k-fold question reports no stage, so a wrong verbose was never read
    X, y, _ = data
    with pytest.raises(ValueError, match="verbose must be"):
        ms.kfold_predictions(fastrank.RankRLS(), X, y, 3, verbose=verbose)


@pytest.mark.parametrize("est", [fastrank.RankRLS(), fastrank.RankRLS(solver="dual"),
                                 fastrank.RankRLS(exclude_ties=True), fastrank.RankRLS(basis_vectors=5),
                                 fastrank.MPRank()], ids=repr)
@pytest.mark.parametrize("two_d", [False, True])
def test_leave_pair_out_of_no_pairs_is_empty(data, est, two_d):
    # the feature-map and tie-excluded routes failed with numpy's "cannot reshape array of size 0"
    X, y, _ = data
    Y = np.c_[y, -y] if two_d else y
    got = ms.leave_pair_out(est, X, Y, pairs=np.empty((0, 2), dtype=np.int64))
    assert got.shape == ((0, 2, 2) if two_d else (0, 2))


@pytest.mark.parametrize("alphas", [True, np.True_, [True, 2.0], np.array([False, True])])
def test_boolean_alphas_are_refused(data, alphas):
    # True was taken as alpha = 1
    X, y, g = data
    with pytest.raises(TypeError, match="alphas must be positive real numbers, not booleans"):
        fastrank.rankrls_path(X, y, alphas)
    with pytest.raises(TypeError, match="alphas must be"):
        fastrank.RankRLSCV(alphas=alphas).fit(X, y, g)
    with pytest.raises(TypeError, match="Cs must be"):
        fastrank.MPRankCV(Cs=alphas).fit(X, y, g)


@pytest.mark.parametrize("k, exc", [(2, ValueError), (-3, ValueError), (1.0, TypeError), (True, TypeError),
                                    ("a", TypeError), (None, TypeError)])
def test_path_fitted_estimator_names_k(data, k, exc):
    X, y, _ = data
    path = fastrank.rankrls_path(X, y, [1.0, 2.0])
    with pytest.raises(exc, match="k must be an integer"):
        path.fitted_estimator(k)
    assert path.fitted_estimator(-1).alpha == path.fitted_estimator(np.int64(1)).alpha == 2.0


def test_ragged_hold_out_set_and_permutation_targets_are_named(data):
    X, y, _ = data
    with pytest.raises(ValueError, match="hold-out set 0 must be a rectangular array"):
        ms.holdout_predictions(fastrank.RankRLS(), X, y, [[[1, 2], [3]]])
    with pytest.raises(ValueError, match="y must be a rectangular array"):
        ms.permutation_test_lpo(fastrank.RankRLS(), X, [[1.0], [2.0, 3.0]], 3)


def test_preference_holdout_needs_rankrls(data):
    # MPRank has no fit_preferences: its "predictions" were those of a model no fit produces
    X, _, _ = data
    with pytest.raises(TypeError, match="needs a fastrank.RankRLS"):
        ms.preference_holdout_predictions(fastrank.MPRank(), X, [[0, 1], [2, 3]], [[4]])


@pytest.mark.parametrize("value", [None, "abc", np.array([1.0, 2.0]), [0.5], 1j, True])
def test_scoring_callable_returning_no_number_is_named(data, value):
    # float() took True as 1 and failed with its own message on the rest
    X, y, g = data
    with pytest.raises(TypeError, match="scoring must return one real number"):
        fastrank.RankRLSCV(cv=3, scoring=lambda y_true, y_pred, groups: value).fit(X, y, g)


def test_scoring_callable_returning_numpy_scalars_still_works(data):
    X, y, g = data
    for value in (np.float32(0.25), np.array(0.25), 1):
        got = fastrank.RankRLSCV(cv=3, scoring=lambda y_true, y_pred, groups: value).fit(X, y, g)
        assert got.best_score_ == float(value)


@pytest.mark.parametrize("exclude_ties, exc", [(True, ValueError), ("yes", ValueError)])
def test_fit_preferences_does_not_ignore_exclude_ties(data, exclude_ties, exc):
    # exclude_ties was neither checked nor applied: a zero magnitude (a tie) was still fitted
    X, _, _ = data
    est = fastrank.RankRLS(exclude_ties=exclude_ties)
    with pytest.raises(exc, match="exclude_ties"):
        est.fit_preferences(X, [[0, 1], [2, 3]], magnitudes=[0.0, 1.0])
    assert not hasattr(est, "coef_")
    with pytest.raises(ValueError, match="exclude_ties"):
        ms.preference_holdout_predictions(fastrank.RankRLS(exclude_ties=True), X, [[0, 1], [2, 3]], [[4]])


@pytest.mark.parametrize("kind", ["list", "Series", "Categorical"])
def test_fold_labels_as_list_or_pandas(data, kind):
    # only an ndarray was read as fold labels: a list or Series of them failed as "hold-out set 0 must be ..."
    as_labels = list if kind == "list" else getattr(pytest.importorskip("pandas"), kind)
    X, y, _ = data
    labels = np.arange(12) % 3
    est = fastrank.RankRLS()
    want = ms.kfold_predictions(est, X, y, labels)
    np.testing.assert_array_equal(ms.kfold_predictions(est, X, y, as_labels(labels)), want)
    search = fastrank.RankRLSCV(cv=as_labels(labels)).fit(X, y)
    np.testing.assert_array_equal(search.cv_results_["scores"],
                                  fastrank.RankRLSCV(cv=labels).fit(X, y).cv_results_["scores"])


def test_permutation_count_beyond_memory_raises_before_drawing(data, monkeypatch):
    # n_permutations = 2**31 - 1 drew permutations for hours before numpy's allocation failed
    X, y, _ = data
    monkeypatch.setenv("FASTRANK_MAX_DENSE_BYTES", str(10 ** 9))
    with pytest.raises(MemoryError, match="targets of y and its permutations"):
        ms.permutation_test_lpo(fastrank.RankRLS(), X, y, n_permutations=2 ** 31 - 1)


def test_refit_drops_the_previous_fits_cv_predictions(data):
    # cv_pairs_ of an "lpo" fit survived a k-fold refit, and cv_predictions_ a refit with store_cv_predictions=False
    X, y, g = data
    search = fastrank.RankRLSCV(cv="lpo").fit(X, y)
    search.set_params(cv=3).fit(X, y, g)
    assert not hasattr(search, "cv_pairs_") and search.cv_predictions_.shape == (12,)
    search.set_params(store_cv_predictions=False).fit(X[:9], y[:9], g[:9])
    assert not hasattr(search, "cv_predictions_")
