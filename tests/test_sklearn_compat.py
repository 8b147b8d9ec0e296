"""scikit-learn citizenship of the RankRLS-family estimators."""

import numpy as np
import pytest
import sklearn
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, GroupKFold, cross_val_score
from sklearn.utils.estimator_checks import parametrize_with_checks

from fastrank import MPRank, RankRLS, RankRLSCV

@parametrize_with_checks(
    [RankRLS(), RankRLS(kernel="rbf", solver="dual"), RankRLS(solver="cg"), MPRank(C=10.0, kernel="poly", degree=2),
     RankRLSCV(alphas=[0.1, 1.0, 10.0])],  # cv="lgo" needs groups at fit, which the checks never pass
)
def test_check_estimator(estimator, check):
    check(estimator)


@pytest.fixture
def grouped():
    rng = np.random.default_rng(0)
    m = 120
    X = rng.normal(size=(m, 6))
    groups = rng.integers(0, 12, size=m) * 3 + 100  # non-contiguous ids
    y = X @ rng.normal(size=6) + groups * 0.5 + 0.2 * rng.normal(size=m)
    return X, y, groups


def test_gridsearch_groupkfold_routes_groups_to_fit(grouped):
    """With metadata routing, `groups` reaches both GroupKFold and RankRLS.fit."""
    X, y, groups = grouped
    seen = []

    class Spy(RankRLS):
        def fit(self, X, y, groups=None):
            seen.append(None if groups is None else np.asarray(groups).copy())
            return super().fit(X, y, groups)

    with sklearn.config_context(enable_metadata_routing=True):
        est = Spy(kernel="rbf").set_fit_request(groups=True).set_score_request(groups=True)
        search = GridSearchCV(est, {"alpha": [0.1, 1.0, 10.0]}, cv=GroupKFold(n_splits=3))
        search.fit(X, y, groups=groups)
    assert search.best_params_["alpha"] in (0.1, 1.0, 10.0)
    assert len(seen) == 3 * 3 + 1 and all(g is not None for g in seen)
    # every training fold got whole groups, and the group ids were passed through unchanged
    for g in seen[:-1]:
        assert set(np.unique(g)) < set(np.unique(groups))
    np.testing.assert_array_equal(seen[-1], groups)
    # the routed groups change the model: query-ranking differs from object ranking
    a = RankRLS(alpha=1.0).fit(X, y, groups).coef_
    b = RankRLS(alpha=1.0).fit(X, y).coef_
    assert np.abs(a - b).max() > 1e-6


def test_cross_val_score_with_groups(grouped):
    X, y, groups = grouped
    with sklearn.config_context(enable_metadata_routing=True):
        est = RankRLS(alpha=1.0).set_fit_request(groups=True).set_score_request(groups=True)
        scores = cross_val_score(est, X, y, cv=GroupKFold(n_splits=4), params={"groups": groups})
    assert scores.shape == (4,) and np.all((scores > 0.5) & (scores <= 1.0))


def test_clone_keeps_params():
    est = RankRLS(alpha=3.0, kernel="poly", degree=2, group_weighting="normalized")
    assert clone(est).get_params() == est.get_params()
