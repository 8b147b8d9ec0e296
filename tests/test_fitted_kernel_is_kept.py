"""A fitted kernel model predicts with the kernel its fit used: kernel parameters set after fit take effect at the
next fit (as on the on-line learners and the transformers), never on coefficients fitted with another kernel; a
failed fit keeps that kernel, and model files carry it."""

import numpy as np
import pytest

import fastrank
from test_model_file_checks_and_messages import _edited

RNG = np.random.default_rng(0)
X, Y, XT = RNG.normal(size=(12, 3)), RNG.normal(size=12), RNG.normal(size=(5, 3))

MAKERS = {
    "rankrls-dual": lambda: fastrank.RankRLS(kernel="rbf", gamma=0.5),
    "rankrls-basis": lambda: fastrank.RankRLS(kernel="poly", gamma=0.5, degree=2, basis_vectors=6, random_state=0),
    "mprank": lambda: fastrank.MPRank(kernel="rbf", gamma=0.5),
    "ranksvm": lambda: fastrank.RankSVM(kernel="rbf", gamma=0.5),
    "svrank": lambda: fastrank.SVRank(kernel="rbf", gamma=0.5),
}


def _kernel_oracle(make):
    """Predictions of a fresh fit with the same kernel, computed by hand: K(XT, X_fit_) @ dual_coef_ (explicit)."""
    est = make().fit(X, Y)
    spec = est._kernel_spec(X.shape[1])
    rows = est.X_fit_
    K = np.array([[np.exp(-spec.gamma * np.sum((a - b) ** 2)) if spec.kind == "rbf"
                   else (spec.gamma * a @ b + spec.coef0) ** spec.degree for b in rows] for a in XT])
    return K @ est.dual_coef_


@pytest.mark.parametrize("name", MAKERS)
def test_kernel_parameters_set_after_fit_change_no_prediction(name, tmp_path):
    # predict resolved the kernel from the current parameters: gamma=5 combined coefficients fitted at gamma=0.5 with
    # another kernel (silently), kernel="precomputed" read the features as kernel values
    make = MAKERS[name]
    model = make().fit(X, Y)
    before = model.predict(XT)
    np.testing.assert_allclose(before, _kernel_oracle(make), rtol=1e-10, atol=1e-12)
    for change in ({"gamma": 5.0}, {"degree": 3, "coef0": 2.0}, {"kernel": "linear"}, {"kernel": "precomputed"}):
        model.set_params(**change)
        assert np.array_equal(model.predict(XT), before), change
        fastrank.save(model, tmp_path / "m")
        assert np.array_equal(fastrank.load(tmp_path / "m").predict(XT), before), change
    model.set_params(**make().get_params())
    refit = model.set_params(gamma=5.0).fit(X, Y).predict(XT)  # the next fit takes the new value
    assert np.array_equal(refit, type(model)(**{**make().get_params(), "gamma": 5.0}).fit(X, Y).predict(XT))
    assert not np.allclose(refit, before)


@pytest.mark.parametrize("name", MAKERS)
def test_a_fit_refused_for_a_bad_kernel_parameter_keeps_the_model_predicting(name, tmp_path):
    # the refused fit left the model as it was, but predict then raised "gamma must be a positive finite number";
    # save wrote the model and load refused the file it wrote
    model = MAKERS[name]().fit(X, Y)
    before = model.predict(XT)
    model.set_params(gamma=-1.0)
    with pytest.raises(ValueError, match="gamma must be a positive finite number"):
        model.fit(X, Y)
    assert np.array_equal(model.predict(XT), before)
    with pytest.raises(ValueError, match=r"cannot save model: a parameter fails .*gamma must be a positive finite "
                                         r"number.*set_params"):
        fastrank.save(model, tmp_path / "m")
    assert not (tmp_path / "m").exists()


def test_dask_model_and_its_local_copy_keep_the_fitted_kernel():
    pytest.importorskip("dask")
    from fastrank.dask import DaskRankRLS
    model = DaskRankRLS(kernel="rbf", gamma=0.5, basis_vectors=6, random_state=0).fit(X, Y)
    before = model.predict(XT)
    model.set_params(gamma=5.0)
    assert np.array_equal(model.predict(XT), before)
    assert np.array_equal(model.to_local().predict(XT), before)


@pytest.mark.parametrize("value", [["bogus", 1.0, 3.0, 1.0], ["rbf", -1.0, 3.0, 1.0], ["rbf", 1.0], "rbf"])
def test_a_model_file_with_an_edited_fitted_kernel_is_refused(tmp_path, value):
    fastrank.save(MAKERS["rankrls-dual"]().fit(X, Y), tmp_path / "m")
    _edited(tmp_path / "m", lambda h: h["state"].__setitem__("_fitted_kernel", {"$tuple": value}
                                                             if isinstance(value, list) else value))
    with pytest.raises(ValueError, match=r"corrupted or tampered model file: model._fitted_kernel = .* is not a "
                                         r"kernel's \(kind, gamma, degree, coef0\)"):
        fastrank.load(tmp_path / "m")


def test_path_models_keep_the_kernel_of_the_path():
    # the path kept the caller's estimator and built its models from that estimator's parameters at call time:
    # set_params(gamma=5) on it moved the path's predictions by 1.2, an invalid value made them unbuildable
    est = fastrank.RankRLS(kernel="rbf", gamma=0.3)
    path = fastrank.rankrls_path(X, Y, [0.1, 1.0], estimator=est)
    before = path.predict(XT)
    reference = fastrank.RankRLS(kernel="rbf", gamma=0.3, alpha=1.0).fit(X, Y).predict(XT)
    np.testing.assert_allclose(before[1], reference, rtol=1e-10, atol=1e-12 * np.abs(reference).max())
    for gamma in (5.0, -1.0):
        est.set_params(gamma=gamma)
        assert np.array_equal(path.predict(XT), before)
        assert path.fitted_estimator(1)._fitted_kernel[:2] == ("rbf", 0.3)


def test_dask_local_copy_of_a_model_whose_parameter_was_made_invalid_after_fit():
    pytest.importorskip("dask")
    from fastrank.dask import DaskRankRLS
    model = DaskRankRLS(kernel="rbf", gamma=0.5, basis_vectors=6, random_state=0).fit(X, Y)
    before = model.predict(XT)
    model.set_params(gamma=-1.0)
    local = model.to_local()
    assert np.array_equal(local.predict(XT), before)
    # the local model's parameters are the dask model's, not the fitted kernel's resolved values
    model = DaskRankRLS(kernel="rbf", basis_vectors=6, random_state=0).fit(X, Y)
    assert model.to_local().get_params()["gamma"] is None
