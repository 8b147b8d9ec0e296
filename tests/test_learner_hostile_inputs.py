"""Hostile arguments to the pairwise and on-line learners get named errors, not numpy/Python internals."""
import numpy as np
import pytest

from fastrank import OAPBPM, PRank, RankSVM


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
