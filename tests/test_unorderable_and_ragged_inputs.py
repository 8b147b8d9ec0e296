"""The on-line learners, rankboost_path and fastrank.dask's fit_oapbpm on labels without an order and on ragged
arguments: each error says what is wrong (labels not "orderable", "groups", "n_estimators", "y contains NaN"), never
in numpy's own text, and a refused partial_fit leaves the fitted model as it was."""

import numpy as np
import pytest

from fastrank import OAPBPM, PRank, WidrowHoff


def _labels_holding_an_array():
    y = np.empty(4, dtype=object)
    y[:] = [np.array([1, 2]), 3, 1, 2]  # an array among the labels: no order (numpy's "truth value ... ambiguous")
    return y


@pytest.mark.parametrize("cls", [PRank, OAPBPM, WidrowHoff])
def test_unorderable_labels_named(cls):
    X = np.random.default_rng(0).normal(size=(4, 2))
    with pytest.raises(ValueError, match="orderable"):
        cls().fit(X, _labels_holding_an_array())
    with pytest.raises(ValueError, match="orderable"):
        cls().partial_fit(X, [1, 2, 1, 2], classes=_labels_holding_an_array())
    est = cls().partial_fit(X, [1, 2, 1, 2])
    before = {k: v.copy() if isinstance(v, np.ndarray) else v for k, v in est.__dict__.items()}
    with pytest.raises(ValueError, match="orderable"):
        est.partial_fit(X, _labels_holding_an_array())
    assert est.__dict__.keys() == before.keys()
    for k, v in before.items():
        np.testing.assert_array_equal(est.__dict__[k], v)


@pytest.mark.parametrize("groups", [[[1], [2, 3]], [[1], [2]], 5])
def test_online_mprank_partial_fit_groups_named(groups):
    from fastrank import OnlineMPRank

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(8, 2)), rng.normal(size=8)
    est = OnlineMPRank().fit(X, y, np.repeat([0, 1], 4))
    coef = est.dual_coef_.copy()
    with pytest.raises(ValueError, match="groups"):
        est.partial_fit(X[:2], y[:2], groups)
    np.testing.assert_array_equal(est.dual_coef_, coef)


def test_rankboost_path_ragged_arguments_named():
    from fastrank import rankboost_path

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(8, 2)), rng.normal(size=8)
    with pytest.raises(ValueError, match="n_estimators"):
        rankboost_path(X, y, [[1, 2], [3]])
    with pytest.raises(ValueError, match="groups"):
        rankboost_path(X, y, 3, groups=[[1], [2, 3]] + [[4]] * 6)


def test_fit_oapbpm_unorderable_labels_named():
    pytest.importorskip("dask")
    from fastrank.dask import fit_oapbpm

    X = np.random.default_rng(0).normal(size=(20, 3))
    with pytest.raises(ValueError, match="orderable"):
        fit_oapbpm(OAPBPM(n_estimators=3), X, np.array(["a", 1] * 10, dtype=object))
    with pytest.raises(ValueError, match="y contains NaN"):
        fit_oapbpm(OAPBPM(n_estimators=3), X, np.array([1.0, np.nan] * 10))
