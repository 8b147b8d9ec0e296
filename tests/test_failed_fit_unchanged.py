"""A fit that raises leaves the estimator as it was, also when the error comes after part of the new state was
computed: a ConvergenceWarning raised as an error (``warnings.simplefilter("error")``), a failure in the final
solve of a search, or Ctrl-C in the middle of a long compiled solver."""

import inspect
import os
import signal
import threading
import time
import warnings

import numpy as np
import pytest

import fastrank as fr
from fastrank._registry import ESTIMATORS
from fastrank.exceptions import ConvergenceWarning


def _data(seed):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((120, 4))
    return X, X @ rng.standard_normal(4) + 0.3 * rng.standard_normal(120)


def _state(est):
    return {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in vars(est).items()}


def _assert_same_state(before, est):
    after = vars(est)
    assert after.keys() == before.keys()
    for k, v in before.items():
        if isinstance(v, np.ndarray):
            assert after[k] is not None and np.array_equal(after[k], v, equal_nan=v.dtype.kind in "fc"), k
        elif isinstance(v, (int, float, str, bool, type(None))):
            assert after[k] == v or (v != v and after[k] != after[k]), k


@pytest.mark.parametrize("make", [
    lambda: fr.SVRank(max_iter=1),
    lambda: fr.RankRLS(solver="cg", max_iter=1),
    lambda: fr.RankSVM(max_iter=1),
], ids=["SVRank", "RankRLS-cg", "RankSVM"])
def test_convergence_warning_as_error_keeps_the_previous_fit(make):
    est = make()
    X, y = _data(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        est.fit(X, y)
    before, pred = _state(est), est.predict(X)
    X2, y2 = _data(1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        with pytest.raises(ConvergenceWarning):
            est.fit(X2, y2)
    _assert_same_state(before, est)
    np.testing.assert_array_equal(est.predict(X), pred)


def test_failed_final_solve_of_a_search_keeps_the_previous_fit(monkeypatch):
    X, y = _data(0)
    cv = fr.RankRLSCV(alphas=[0.1, 1.0, 10.0]).fit(X, y)
    before = _state(cv)

    def interrupted(self, engine, alpha):
        raise KeyboardInterrupt

    monkeypatch.setattr(fr.RankRLS, "_apply_engine_fit", interrupted)
    with pytest.raises(KeyboardInterrupt):
        cv.fit(*_data(1))
    _assert_same_state(before, cv)
    assert vars(cv).keys() == before.keys() and cv.best_estimator_ is before["best_estimator_"]


def test_a_failed_first_fit_leaves_no_fitted_attribute():
    est = fr.SVRank(max_iter=1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        with pytest.raises(ConvergenceWarning):
            est.fit(*_data(0))
    assert vars(est).keys() == set(est.get_params(deep=False))


def test_a_new_learner_inherits_the_guarantee():
    class Half(fr._base.FastrankEstimator):
        def __init__(self, alpha=1.0):
            self.alpha = alpha

        def fit(self, X, y):
            self.coef_ = np.ones(3)
            raise RuntimeError("late failure")

    est = Half()
    with pytest.raises(RuntimeError, match="late failure"):
        est.fit(None, None)
    assert vars(est) == {"alpha": 1.0}


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_every_fitting_method_is_guarded(name):
    """fit, partial_fit and fit_preferences of every registered estimator run inside the restoring wrapper."""
    cls = ESTIMATORS[name]
    methods = [m for m in ("fit", "partial_fit", "fit_preferences") if hasattr(cls, m)]
    assert "fit" in methods
    for m in methods:
        assert getattr(cls, m) is not inspect.unwrap(getattr(cls, m)), (name, m)


@pytest.mark.parametrize("make", [fr.preprocessing.Log1pScaler, fr.preprocessing.QueryNormalizer,
                                  fr.preprocessing._ZScore])
@pytest.mark.parametrize("frame", [False, True])
def test_a_failed_transformer_fit_keeps_the_previous_fit(make, frame):
    # validate_data recorded n_features_in_ and the column names before it refused the values: the scaler then
    # expected 2 features with the statistics of 3, and refused the frame it was fitted on
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(6, 3))
    bad = rng.normal(size=(6, 2))
    bad[0, 0] = np.nan
    if frame:
        X, bad = pd.DataFrame(X, columns=["a", "b", "c"]), pd.DataFrame(bad, columns=["u", "v"])
    est = make().fit(X)
    before, reference = _state(est), est.transform(X)
    failures = [(bad, "NaN")]
    if make is not fr.preprocessing.QueryNormalizer:  # refused after validate_data: a feature varying by subnormals
        failures.append((np.c_[rng.normal(size=(6, 1)), 1e-310 + np.arange(6) * 5e-324], "subnormal"))
    for data, match in failures:
        for call in (est.fit, est.fit_transform):
            with pytest.raises(ValueError, match=match):
                call(data)
            _assert_same_state(before, est)
            assert np.array_equal(est.transform(X), reference)


def _ranked(m, d, n_groups, seed):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, d))
    return X, np.round(X @ rng.standard_normal(d) + rng.standard_normal(m), 1), np.sort(rng.integers(0, n_groups, m))


@pytest.fixture
def python_sigint_handler():
    """Python's own SIGINT handler, also where the suite runs as a background job (SIGINT ignored from its shell)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


@pytest.mark.parametrize("make, size, delay", [
    (lambda: fr.RankBoost(n_estimators=1000), (20000, 10, 500), 0.3),  # about 3 s uninterrupted
    (lambda: fr.RankSVM(1.0, kernel="rbf", gamma=0.5, loss="hinge"), (1500, 10, 50), 0.3),  # about 2 s
    # about 5 s, most in the blocked Cholesky factor of S K S + alpha I (m = 10,000), which polls between blocks
    (lambda: fr.RankRLS(kernel="rbf", gamma=0.1), (10000, 10, 50), 1.0),
    # the Gaussian kernel matrix of 12,000 rows of 2,000 features (its product of X with itself: 2 s of BLAS)
    (lambda: fr.RankRLS(kernel="rbf"), (12000, 2000, 50), 0.3),
], ids=["RankBoost", "RankSVM-kernel-hinge", "RankRLS-kernel-dual", "kernel-matrix"])
def test_ctrl_c_stops_a_long_compiled_fit_at_once_and_keeps_the_previous_fit(make, size, delay,
                                                                             python_sigint_handler):
    small, big = _ranked(200, 10, 10, 0), _ranked(*size, 1)
    est = make().fit(*small)
    before, pred = _state(est), est.predict(small[0])
    sent = []

    def interrupt():
        sent.append(time.perf_counter())
        os.kill(os.getpid(), signal.SIGINT)

    timer = threading.Timer(delay, interrupt)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            est.fit(*big)
        stopped = time.perf_counter()
    finally:
        timer.cancel()
    assert sent and stopped - sent[0] < 1.0  # the compiled solver polls; it does not run to its end
    _assert_same_state(before, est)
    np.testing.assert_array_equal(est.predict(small[0]), pred)
    np.testing.assert_array_equal(est.fit(*small).predict(small[0]), pred)
