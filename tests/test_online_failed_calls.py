"""A failed fit or partial_fit of an on-line ordinal learner leaves the model as it was; joining no OAP-BPM member
blocks is a named error."""

import numpy as np
import pandas as pd
import pytest

from _large_oracles import pairwise_error
from fastrank import OAPBPM, PRank, WidrowHoff
from fastrank.exceptions import ConvergenceWarning


def _data():
    rng = np.random.default_rng(0)
    return rng.normal(size=(500, 5)), rng.integers(0, 3, 500)


def _state(est):
    return {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in vars(est).items()}


def _assert_same_state(est, state):
    assert set(vars(est)) == set(state)
    for k, v in state.items():
        if isinstance(v, np.ndarray):
            np.testing.assert_array_equal(getattr(est, k), v, err_msg=k)
        else:
            assert getattr(est, k) == v, k


def test_diverging_fit_keeps_the_previous_model():
    X, y = _data()
    est = WidrowHoff(eta=0.1).fit(X[:50], y[:50])
    before = _state(est)
    est.set_params(eta=50.0)
    before["eta"] = 50.0
    with pytest.warns(ConvergenceWarning, match="its updates overshoot"), pytest.raises(ValueError, match="diverged"):
        est.fit(X * 100, y)
    _assert_same_state(est, before)
    np.testing.assert_array_equal(est.predict(X), WidrowHoff(eta=0.1).fit(X[:50], y[:50]).predict(X))


def test_weights_overflowing_on_the_last_updates_are_refused():
    # eta=1e22 overflowed coef_ and intercept_ to inf after the last score was checked: fit returned that model with
    # only the overshoot warning, and predict and save then blamed X
    rng = np.random.default_rng(8)
    X, y = rng.normal(size=(15, 3)), rng.integers(0, 3, 15)
    est = WidrowHoff(eta=0.01).fit(X, y)
    before = _state(est)
    est.set_params(eta=1e22)
    before["eta"] = 1e22
    for call in (lambda: est.fit(X, y), lambda: est.partial_fit(X, y)):
        with pytest.warns(ConvergenceWarning, match="its updates overshoot"), pytest.raises(
                ValueError, match=r"^Widrow-Hoff diverged \(non-finite weights after example 14\); use a smaller eta, "
                                  r"below 2 / max \|\|x\|\|\^2, or eta='auto'$"):
            call()
        _assert_same_state(est, before)


@pytest.mark.parametrize("make", [PRank, lambda: OAPBPM(n_estimators=3, random_state=0), WidrowHoff])
def test_failed_first_partial_fit_fixes_no_label_set(make):
    X, y = _data()
    est = make()
    with pytest.raises(ValueError, match="not in classes_"):
        est.partial_fit(X, y, classes=[0, 1])
    assert not hasattr(est, "classes_")
    # the remedy the message names works: the complete label set on what is again the first call
    est.partial_fit(X, y, classes=[0, 1, 2])
    np.testing.assert_array_equal(est.decision_function(X), make().partial_fit(X, y, classes=[0, 1, 2])
                                  .decision_function(X))
    assert est.n_seen_ == X.shape[0]


def test_from_members_without_blocks_is_a_named_error():
    with pytest.raises(ValueError, match="at least one trained member block"):
        OAPBPM.from_members([])


@pytest.mark.parametrize("make", [PRank, OAPBPM, WidrowHoff])
def test_one_class_message_speaks_of_classes_only_for_partial_fit(make):
    # fit cannot take classes=, and its message (shown by the command line too) advised passing it
    X, y = np.arange(8.0).reshape(4, 2), np.ones(4)
    with pytest.raises(ValueError, match=r"need at least 2 distinct labels: the on-line ordinal learners rank into "
                                         r"k >= 2 ordered classes$"):
        make().fit(X, y)
    with pytest.raises(ValueError, match=r"first partial_fit batch with fewer labels: pass the complete ordered label "
                                         r"set with classes="):
        make().partial_fit(X, y)
    assert make().partial_fit(X, y, classes=[1.0, 2.0]).classes_.tolist() == [1.0, 2.0]


def test_a_huge_ensemble_is_refused_before_allocating_and_the_model_kept(monkeypatch):
    # OAPBPM(n_estimators=2**31 - 1) allocated its members' arrays unguarded: numpy's raw "Unable to allocate 32.0 GiB"
    monkeypatch.setenv("FASTRANK_MAX_DENSE_BYTES", "1G")
    X, y = np.random.default_rng(0).normal(size=(30, 3)), np.arange(30) % 3
    model = OAPBPM(n_estimators=3, random_state=0).fit(X, y)
    before = model.decision_function(X)
    with pytest.raises(MemoryError, match=r"2147483647 x 6 array of the members' thresholds.*Lower n_estimators"):
        model.set_params(n_estimators=2**31 - 1).fit(X, y)
    np.testing.assert_array_equal(model.decision_function(X), before)


@pytest.mark.parametrize("make", [PRank, OAPBPM, WidrowHoff])
def test_score_is_the_pairwise_ranking_accuracy_every_ranker_gives(make):
    # the ordinal learners scored classification accuracy (scikit-learn's ClassifierMixin: 0.88 where 1 - pairwise
    # disagreement is 0.99) and refused groups=; oracle: explicit pairs inside each group, label positions as targets,
    # pair weight w_i w_j, tied scores half an error, the mean over groups
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    labels = np.array(["low", "mid", "high"])[np.digitize(X @ [1.0, 1.0, 0.0] + 0.3 * rng.normal(size=60), [-1, 1])]
    y = pd.Categorical(labels, categories=["low", "mid", "high"], ordered=True)
    g, w = np.repeat([0, 1, 2], 20), rng.uniform(0.5, 2.0, 60)
    model = make().fit(X, y)
    f, pos = model.decision_function(X), pd.Series(y).cat.codes.to_numpy()
    assert model.score(X, y, g, sample_weight=w) == pytest.approx(1.0 - pairwise_error(pos, f, g, w), rel=1e-12)
    with pytest.raises(ValueError, match="labels not in classes_"):
        model.score(X, np.where(labels == "low", "lowest", labels))


def test_a_refused_first_batch_draws_no_seed_from_a_random_state():
    # the first partial_fit drew its seed before refusing a label outside classes=: the stream that followed
    # differed from one that never made the call
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(12, 3)), np.arange(12) % 3
    a = OAPBPM(n_estimators=5, random_state=np.random.RandomState(0))
    b = OAPBPM(n_estimators=5, random_state=np.random.RandomState(0))
    with pytest.raises(ValueError, match="not in classes_"):
        a.partial_fit(X[:3], [0, 1, 7], classes=[0, 1, 2])
    a.partial_fit(X, y, classes=[0, 1, 2])
    b.partial_fit(X, y, classes=[0, 1, 2])
    assert a.seed_ == b.seed_ and np.array_equal(a.coef_, b.coef_)


@pytest.mark.parametrize("make", [lambda r: PRank(random_state=r), lambda r: OAPBPM(n_estimators=3, random_state=r)])
def test_a_batch_refused_in_the_pass_leaves_the_random_state_where_it_was(make):
    # the seed was drawn before the compiled pass refused the overflowing scores: the RandomState had advanced
    rs = np.random.RandomState(0)
    est = make(rs)
    with pytest.raises(ValueError, match="overflow"):
        est.partial_fit(np.array([[1e300], [-1e300], [1e300], [2e300]]), np.array([0, 1, 0, 1]))
    assert est.partial_fit([[1.0], [2.0]], [0, 1]).seed_ == make(np.random.RandomState(0)).partial_fit(
        [[1.0], [2.0]], [0, 1]).seed_
