"""scikit-learn citizenship of the estimators fitted inside searches and integrations: a model fitted on a DataFrame
records its column names (``feature_names_in_``) and refuses the columns in another order, also when it is the
``best_estimator_`` of a search or the in-memory copy of a dask model; the numbers equal a plain manual fit."""

import warnings

import numpy as np
import pandas as pd
import pytest

import fastrank
from fastrank.model_selection import factorize

COLS = ["a", "b", "c", "d"]


def _data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 4))
    y = X @ rng.normal(size=4) + 0.3 * rng.normal(size=60)
    return pd.DataFrame(X, columns=COLS), y, np.repeat(np.arange(6), 10)


def _refuses_reordered(model, X):
    with pytest.raises(ValueError, match="fitted with"):
        model.predict(X[COLS[::-1]])


@pytest.mark.parametrize("search, model, param", [(fastrank.RankRLSCV(cv=3), fastrank.RankRLS, "alpha"),
                                                  (fastrank.MPRankCV(), fastrank.MPRank, "C")])
def test_search_best_estimator_records_the_column_names(search, model, param, tmp_path):
    X, y, g = _data()
    cv = search.fit(X, y, groups=g)
    best = cv.best_estimator_
    np.testing.assert_array_equal(best.feature_names_in_, COLS)
    _refuses_reordered(best, X)
    fastrank.save(best, tmp_path / "best.npz")
    _refuses_reordered(fastrank.load(tmp_path / "best.npz"), X)
    # the same model as a plain fit at the chosen value
    manual = model(**{param: getattr(cv, param + "_")}).fit(X.to_numpy(), y, groups=g)
    np.testing.assert_allclose(best.predict(X), manual.predict(X.to_numpy()), rtol=1e-10, atol=1e-10)
    # refitted without names: the names are gone from both
    cv.fit(X.to_numpy(), y, groups=g)
    assert not hasattr(cv, "feature_names_in_") and not hasattr(cv.best_estimator_, "feature_names_in_")


def test_dask_models_in_memory_keep_the_column_names():
    pytest.importorskip("dask")
    from fastrank.dask import DaskRankRLS, DaskRankRLSCV

    X, y, g = _data()
    dm = DaskRankRLS(alpha=0.5).fit(X, y, g)
    local = dm.to_local()
    np.testing.assert_array_equal(local.feature_names_in_, COLS)
    _refuses_reordered(local, X)
    manual = fastrank.RankRLS(alpha=0.5, solver="primal").fit(X.to_numpy(), y, groups=g)
    np.testing.assert_allclose(local.predict(X), manual.predict(X.to_numpy()), rtol=1e-10, atol=1e-10)

    dcv = DaskRankRLSCV(gammas=[0.1, 1.0], alphas=[0.1, 1.0], cv=3).fit(X, y, g)
    _refuses_reordered(dcv.best_estimator_, X)
    manual = fastrank.RankRLS(kernel="rbf", gamma=dcv.gamma_, alpha=dcv.alpha_).fit(X.to_numpy(), y, groups=g)
    np.testing.assert_allclose(dcv.best_estimator_.predict(X), manual.predict(X.to_numpy()), rtol=1e-10, atol=1e-10)


def test_score_declining_groups_by_routing_does_not_warn():
    """``set_score_request(groups=False)`` declines the groups for the estimator's own score as it does for a ranking
    scorer: the per-fold scores of cross_val_score are the manual loop's ungrouped scores, and no MissingGroupsWarning
    (which pytest turns into an error) is emitted."""
    import sklearn
    from sklearn.model_selection import GroupKFold, cross_val_score

    X, y, g = _data()
    X = X.to_numpy()
    with sklearn.config_context(enable_metadata_routing=True):
        est = fastrank.RankRLS().set_fit_request(groups=True).set_score_request(groups=False)
        scores = cross_val_score(est, X, y, cv=GroupKFold(3), params={"groups": g})
    manual = []
    for train, test in GroupKFold(3).split(X, y, g):
        model = fastrank.RankRLS().fit(X[train], y[train], groups=g[train])
        manual.append(1.0 - fastrank.metrics.pairwise_disagreement(y[test], model.predict(X[test]), tied_scores="half"))
    np.testing.assert_allclose(scores, manual, rtol=1e-10, atol=1e-10)


def _dask_estimators():
    try:
        from fastrank.dask import DaskRankRLS, DaskRankRLSCV
    except ImportError:
        return []
    return [DaskRankRLS(), DaskRankRLSCV(gammas=[0.1, 1.0], alphas=[0.1, 1.0])]


@pytest.mark.skipif(not _dask_estimators(), reason="dask is not installed")
@pytest.mark.parametrize("estimator", _dask_estimators(), ids=lambda e: type(e).__name__)
def test_dask_estimators_pass_check_estimator(estimator):
    """The estimators of fastrank.dask on numpy input: sparse X refused by a message saying so, X of 0 features or of
    1 dimension refused as scikit-learn words it, a column-vector y taken as one output (multi-output tag)."""
    import warnings

    from sklearn.utils.estimator_checks import check_estimator

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # scikit-learn's own deprecations inside the checks
        check_estimator(estimator, on_skip=None)


def test_path_models_record_the_column_names():
    """The models of the warm-started paths fitted on a DataFrame refuse its columns reordered, as a fit does; each
    equals a plain fit at its value."""
    X, y, g = _data()
    Xn = X.to_numpy()

    def check(model, plain):
        _refuses_reordered(model, X)
        np.testing.assert_allclose(model.predict(X), plain.predict(Xn), rtol=1e-10, atol=1e-10)

    path = fastrank.rankrls_path(X, y, [0.5, 2.0], groups=g)
    np.testing.assert_array_equal(path.feature_names_in_, COLS)
    check(path.fitted_estimator(1), fastrank.RankRLS(alpha=2.0).fit(Xn, y, groups=g))
    for fit_path, model in [(fastrank.ranksvm_path, fastrank.RankSVM), (fastrank.svrank_path, fastrank.SVRank)]:
        fitted = fit_path(X, y, [1.0], groups=g)
        _refuses_reordered(fitted[0], X)
        plain = model(C=1.0).fit(Xn, y, groups=g)
        np.testing.assert_allclose(fitted[0].predict(X), plain.predict(Xn), rtol=1e-6, atol=1e-6)  # solved to tol
    boost = fastrank.rankboost_path(X, y, [3, 6], groups=g, cv=3, scoring="disagreement")
    check(boost.estimator, fastrank.RankBoost(n_estimators=boost.best_n_estimators).fit(Xn, y, groups=g))
    assert not hasattr(fastrank.rankrls_path(Xn, y, [1.0]), "feature_names_in_")
    for kernel in ("linear", "rbf"):  # the feature route and the dense route of a factorization
        est = fastrank.RankRLS(kernel=kernel, gamma=0.1)
        check(factorize(est, X, y, g).solve(2.0), est.set_params(alpha=2.0).fit(Xn, y, groups=g))
    assert not hasattr(factorize(fastrank.RankRLS(), Xn, y, g).solve(1.0), "feature_names_in_")


def test_dask_path_models_record_the_column_names():
    pytest.importorskip("dask")
    from fastrank.dask import rankrls_path

    X, y, g = _data()
    path = rankrls_path(X, y, [0.5, 2.0], groups=g)
    _refuses_reordered(path.fitted_estimator(0), X)
    plain = fastrank.RankRLS(alpha=0.5, solver="primal").fit(X.to_numpy(), y, groups=g)
    np.testing.assert_allclose(path.fitted_estimator(0).predict(X), plain.predict(X.to_numpy()), rtol=1e-10,
                               atol=1e-10)


def test_query_normalizer_warns_when_transform_loses_the_groups():
    """A pipeline fitted with groups (step-prefixed, without routing) whose predict passes none to QueryNormalizer
    normalises the test rows as one query: not silently, but with a MissingGroupsWarning.  With groups the scores equal
    the manual normalise-then-fit loop."""
    from sklearn.pipeline import make_pipeline

    from fastrank.exceptions import MissingGroupsWarning
    from fastrank.preprocessing import QueryNormalizer

    X, y, g = _data()
    X = X.to_numpy()
    pipe = make_pipeline(QueryNormalizer(), fastrank.RankRLS())
    pipe.fit(X, y, querynormalizer__groups=g, rankrls__groups=g)
    assert pipe[0].n_fit_groups_ == 6
    with pytest.warns(MissingGroupsWarning, match="normalised as one query"):
        pipe.predict(X)
    manual = fastrank.RankRLS().fit(QueryNormalizer().fit_transform(X, groups=g), y, groups=g)
    np.testing.assert_allclose(pipe[-1].predict(pipe[0].transform(X, groups=g)),
                               manual.predict(QueryNormalizer().fit(X).transform(X, groups=g)), rtol=1e-10, atol=1e-10)
    QueryNormalizer().fit(X).transform(X)  # fitted without groups: one query by the user's choice, no warning
    with pytest.raises(ValueError):
        QueryNormalizer().fit(X, groups=g[:-1])


def test_fit_oapbpm_records_the_column_names():
    pytest.importorskip("dask")
    from fastrank.dask import fit_oapbpm

    X, y, _ = _data()
    labels = np.digitize(y, [-1.0, 0.0, 1.0])
    model = fit_oapbpm(fastrank.OAPBPM(random_state=0, shuffle=False), X, labels, n_blocks=2)
    np.testing.assert_array_equal(model.feature_names_in_, COLS)
    _refuses_reordered(model, X)
    plain = fastrank.OAPBPM(random_state=0, shuffle=False).fit(X.to_numpy(), labels)
    np.testing.assert_allclose(model.decision_function(X), plain.decision_function(X.to_numpy()), rtol=1e-10,
                               atol=1e-10)


@pytest.mark.parametrize("model", [fastrank.RankRLS(), fastrank.PRank(), fastrank.RankSVM(), fastrank.RankBoost()])
def test_an_array_given_to_a_model_fitted_on_a_frame_warns_as_scikit_learn_does(model):
    X, y, g = _data()
    model.fit(X, (y > 0).astype(int) if isinstance(model, fastrank.PRank) else y)
    with pytest.warns(UserWarning, match=f"X does not have valid feature names, but {type(model).__name__} was "
                                         "fitted with feature names"):
        model.predict(X.to_numpy())
    model.predict(X)  # the frame itself: no warning (warnings are errors here)


@pytest.mark.parametrize("model", [fastrank.RankRLS(), fastrank.PRank(), fastrank.RankSVM(), fastrank.RankBoost()])
def test_a_frame_given_to_a_model_fitted_on_an_array_warns_as_scikit_learn_does(model):
    # the other direction was silent: the frame's columns cannot be checked against names never recorded
    X, y, g = _data()
    model.fit(X.to_numpy(), (y > 0).astype(int) if isinstance(model, fastrank.PRank) else y)
    with pytest.warns(UserWarning, match=f"X has feature names, but {type(model).__name__} was fitted without "
                                         "feature names"):
        model.predict(X)
    model.predict(X.to_numpy())  # no warning (warnings are errors here)


@pytest.mark.parametrize("make", [lambda: fastrank.RankRLSCV(alphas=[1.0]), lambda: fastrank.MPRankCV(Cs=[1.0]),
                                  lambda: fastrank.WidrowHoff()])
def test_the_feature_names_warning_is_given_once_naming_the_called_model(make):
    # searches and WidrowHoff warned twice, the second time naming the inner RankRLS / MPRank the user never fitted
    X, y, _ = _data()
    model = make()
    model.fit(X, (y > 0).astype(int) if isinstance(model, fastrank.WidrowHoff) else y)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.predict(X.to_numpy())
    assert [str(w.message) for w in caught] == [f"X does not have valid feature names, but {type(model).__name__} "
                                                "was fitted with feature names"]
