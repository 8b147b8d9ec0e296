"""Hostile arguments to the pairwise and on-line learners (and the measures' y_true) get named errors, not
numpy/Python internals."""
import inspect
import re

import numpy as np
import pandas as pd
import pytest

import fastrank
from fastrank import OAPBPM, PRank, PRankVP, RankSVM, WidrowHoff, metrics


def _data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 4))
    return X, X[:, 0] + 0.1 * rng.normal(size=30), np.repeat(np.arange(3), 10)


@pytest.mark.parametrize("verbose", [np.inf, 2.5])
def test_verbose_that_is_no_whole_number_is_a_named_error(verbose):
    # inf raised OverflowError from int(); 2.5 was cut to 2
    X, y, g = _data()
    with pytest.raises(ValueError, match="verbose must be an integer >= 0"):
        PRank(verbose=verbose).fit(X, (y > 0).astype(int))


@pytest.mark.parametrize("random_state", ["1", -1, 2**40, 1.5])
def test_ranksvm_random_state_is_validated(random_state):
    # numpy's seeding messages ("Seed must be between 0 and 2**32 - 1") reached the user
    X, y, g = _data()
    with pytest.raises(ValueError, match="'random_state' parameter of RankSVM"):
        RankSVM(kernel="rbf", basis_vectors=5, random_state=random_state).fit(X, y, g)


@pytest.mark.parametrize("n_features", [None, "3", 0, -1, 2.0])
def test_member_blocks_n_features_is_checked(n_features):
    with pytest.raises((TypeError, ValueError), match="n_features must be an integer"):
        OAPBPM(n_estimators=4).member_blocks(2, [0, 1, 2], n_features)


@pytest.mark.parametrize("blocks", [None, "abc", [None], [{}], [PRank()]])
def test_from_members_takes_member_blocks_only(blocks):
    with pytest.raises(TypeError, match="blocks must be a list of the OAPBPM blocks made by member_blocks"):
        OAPBPM.from_members(blocks)


def _trained_blocks(X, y, n_blocks=3):
    blocks = OAPBPM(n_estimators=6, random_state=0).member_blocks(n_blocks, [0, 1], X.shape[1])
    return [b.partial_fit(X, y) for b in blocks]


def test_from_members_rejects_blocks_that_do_not_make_one_ensemble():
    X, y, _ = _data()
    y = (y > 0).astype(int)
    ref = OAPBPM(n_estimators=6, random_state=0).fit(X, y)
    blocks = _trained_blocks(X, y)
    np.testing.assert_array_equal(OAPBPM.from_members(blocks).members_coef_, ref.members_coef_)
    wrong = {
        "reordered": blocks[::-1],
        "one skipped": [blocks[0], blocks[2]],
        "other stream": [blocks[0], blocks[1], _trained_blocks(X[:20], y[:20])[2]],
        "other ensemble": [blocks[0], OAPBPM(n_estimators=6, random_state=1).member_blocks(3, [0, 1], 4)[1]],
    }
    for name, bad in wrong.items():
        with pytest.raises(ValueError, match="every block of one member_blocks call, in member order"):
            OAPBPM.from_members(bad)


@pytest.mark.parametrize("bad", ["no", 1, None])
def test_boolean_switches_take_bools_only(bad):
    # "no" is truthy: refit="no" refitted and return_scores="no" returned scores
    from fastrank import greedy_order
    from fastrank._rankboost import rankboost_path

    X, y, g = _data()
    with pytest.raises(ValueError, match="refit must be True or False"):
        rankboost_path(X, y, 3, g, cv=3, refit=bad)
    with pytest.raises(ValueError, match="return_scores must be True or False"):
        greedy_order(np.full((3, 3), 0.5), return_scores=bad)


@pytest.mark.parametrize("cv", ["abc", [1, 2], [([0, 1], [2], [3])]])
def test_rankboost_path_cv_that_is_no_splitter_or_folds(cv):
    # str.split and tuple unpacking raised Python's own TypeError/ValueError
    from fastrank._rankboost import rankboost_path

    X, y, g = _data()
    with pytest.raises(ValueError, match="cv "):
        rankboost_path(X, y, 3, g, cv=cv)


def test_ragged_pairs_and_preference_matrix_are_named_errors():
    from fastrank import RankBoost, greedy_order

    X, _, _ = _data()
    for est in (RankSVM(), RankBoost(n_estimators=2)):
        with pytest.raises(ValueError, match=r"pairs must have shape \(n_pairs, 2\), got a ragged list"):
            est.fit_preferences(X, [[0, 1], [2]])
    with pytest.raises(TypeError, match=r"preference must be an \(n, n\) matrix"):
        greedy_order([[0.0, 1.0], [0.0]])


@pytest.mark.parametrize("classes", ["abc", 5, [[0, 1, 2]], [[0], [1, 2]]])
def test_classes_must_be_a_1d_label_list(classes):
    # "abc" and 5 were taken as one label ("y has 1 class"), [[0, 1, 2]] was flattened, a ragged list raised numpy's
    # inhomogeneous-shape error
    X, y, _ = _data()
    y = np.digitize(y, [-0.5, 0.5])
    with pytest.raises(ValueError, match="classes must be a 1-D list of the ordered labels"):
        PRank().partial_fit(X, y, classes=classes)
    with pytest.raises(ValueError, match="classes must be a 1-D list of the ordered labels"):
        OAPBPM(n_estimators=4).member_blocks(2, classes, X.shape[1])


_TARGET_CALLS = {  # (call, the target's name, what it must be)
    "RankRLS": (lambda X, y: fastrank.RankRLS().fit(X, y), "y", "real-valued numbers"),
    "MPRank": (lambda X, y: fastrank.MPRank().fit(X, y), "y", "real-valued numbers"),
    "RankRLSCV": (lambda X, y: fastrank.RankRLSCV(alphas=[1.0]).fit(X, y), "y", "real-valued numbers"),
    "MPRankCV": (lambda X, y: fastrank.MPRankCV().fit(X, y), "y", "real-valued numbers"),
    "OnlineMPRank": (lambda X, y: fastrank.OnlineMPRank().fit(X, y), "y", "real-valued numbers"),
    "RankSVM": (lambda X, y: fastrank.RankSVM().fit(X, y), "y", "real-valued numbers"),
    "SVRank": (lambda X, y: fastrank.SVRank().fit(X, y), "y", "real-valued numbers"),
    "RankBoost": (lambda X, y: fastrank.RankBoost(n_estimators=3).fit(X, y), "y", "real-valued numbers"),
    "rankrls_path": (lambda X, y: fastrank.rankrls_path(X, y, [1.0]), "y", "real-valued numbers"),
    "ranksvm_path": (lambda X, y: fastrank.ranksvm_path(X, y, [1.0]), "y", "real-valued numbers"),
    "svrank_path": (lambda X, y: fastrank.svrank_path(X, y, [1.0]), "y", "real-valued numbers"),
    "rankboost_path": (lambda X, y: fastrank.rankboost_path(X, y, 3, cv=2), "y", "real-valued numbers"),
}
_TARGET_CALLS.update({  # every measure of y_true but mean_rank_loss (labels of any type: test_metric_inputs.py)
    f"metrics.{name}": (lambda X, y, measure=getattr(metrics, name): measure(y, X[:, 0]), "y_true", "numeric")
    for name in metrics.__all__ if name != "mean_rank_loss" and callable(getattr(metrics, name))
    and not isinstance(getattr(metrics, name), type)
    and list(inspect.signature(getattr(metrics, name)).parameters)[:1] == ["y_true"]})


@pytest.mark.parametrize("call, name, need", _TARGET_CALLS.values(), ids=_TARGET_CALLS.keys())
@pytest.mark.parametrize("bad, cause", [
    ("a", "{name} must be {need}: 'a' (str) at row 2 is not a number"),
    (None, "Input {name} contains NaN or infinity (nan at row 2)."),
    (10**400, "{name} must be {need}: 100000000000000000...0000000000000000000 (int) at row 2 is beyond float64's "
              "range (1.8e308)"),
])
def test_a_target_that_is_no_number_is_named_with_its_row(call, name, need, bad, cause):
    # numpy's "could not convert string to float: 'a'" / "int too large to convert to float" reached the user, and
    # a missing target gave no row
    X = np.random.default_rng(6).normal(size=(8, 2))
    y = np.array([0, 1, bad, 2, 1, 0, 2, 1], dtype=object)
    with pytest.raises(ValueError, match="^" + re.escape(cause.format(name=name, need=need)) + "$"):
        call(X, y)


@pytest.mark.parametrize("call, name, need", [_TARGET_CALLS[k] for k in ("RankRLS", "RankSVM", "metrics.ndcg")])
def test_a_target_given_as_text_is_named(call, name, need):
    # a list mixing numbers and a string is text to numpy: "must be real-valued numbers, got dtype <U21" named no entry
    X = np.random.default_rng(6).normal(size=(8, 2))
    with pytest.raises(ValueError, match="^" + re.escape(f"{name} must be {need}: 'a' (str) at row 2 is not a number")):
        call(X, [0, 1, "a", 2, 1, 0, 2, 1])
    with pytest.raises(ValueError, match=re.escape(f"{name} must be {need}, got numbers as text (dtype <U1); convert "
                                                   f"them, e.g. np.asarray({name}, dtype=float)")):
        call(X, list("01221021"))


_LABEL_LEARNERS = [PRank, PRankVP, OAPBPM, WidrowHoff]


@pytest.mark.parametrize("cls", _LABEL_LEARNERS)
@pytest.mark.parametrize("bad, message", [
    (None, "y contains a missing label (None at row 2); give every row a label"),
    (pd.NA, "y contains a missing label (<NA> at row 2); give every row a label"),
    ("a", "y must be orderable labels of one kind (all numbers or all strings): 'a' (str) at row 2 does not compare "
          "with row 0's label 0 (int); give labels of one type"),
    ({}, "y must be orderable labels of one kind (all numbers or all strings): {} (dict) at row 2 does not compare "
         "with row 0's label 0 (int); give labels of one type"),
])
def test_a_missing_or_mixed_label_is_named_with_its_row(cls, bad, message):
    # Python's "'<' not supported between instances of 'NoneType' and 'int'" reached the user
    X = np.random.default_rng(6).normal(size=(6, 2))
    y = np.array([0, 1, bad, 2, 1, 0], dtype=object)
    exact = "^" + re.escape(message) + "$"
    with pytest.raises(ValueError, match=exact):
        cls().fit(X, y)
    est = cls().partial_fit(X, [0, 1, 2, 2, 1, 0])
    before = est.decision_function(X)
    with pytest.raises(ValueError, match=exact):
        est.partial_fit(X, y)
    np.testing.assert_array_equal(est.decision_function(X), before)  # the failed call left the model as it was
    against_classes = message.replace("row 0's label 0 (int)", "classes_ [0, 1, 2]")
    with pytest.raises(ValueError, match="^" + re.escape(against_classes) + "$"):
        est.score(X, y)
