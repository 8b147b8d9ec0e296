"""scikit-learn citizenship of the RankRLS-family estimators."""

import numpy as np
import pytest
import sklearn
from sklearn.base import clone
from sklearn.utils.fixes import parse_version
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


@pytest.mark.parametrize("make", [lambda: RankRLS(), lambda: MPRank(C=10.0), lambda: RankRLSCV(alphas=[0.1, 1.0])])
def test_pipeline_in_a_routed_search_scores_every_candidate(grouped, make):
    # scikit-learn routes sample_weight to score inside a Pipeline; every candidate gets a real score
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import StandardScaler

    X, y, groups = grouped
    with sklearn.config_context(enable_metadata_routing=True):
        est = make().set_fit_request(groups=True).set_score_request(groups=True)
        pipe = Pipeline([("scale", StandardScaler()), ("rank", est)])
        param = "rank__alphas" if isinstance(est, RankRLSCV) else ("rank__C" if isinstance(est, MPRank) else "rank__alpha")
        grid = [[0.1], [10.0]] if isinstance(est, RankRLSCV) else [0.1, 10.0]
        search = GridSearchCV(pipe, {param: grid}, cv=GroupKFold(n_splits=3), error_score="raise")
        search.fit(X, y, groups=groups)
    assert np.all(np.isfinite(search.cv_results_["mean_test_score"]))


def test_weighted_score_equals_explicit_weighted_pairs():
    from fastrank.metrics import pairwise_disagreement

    rng = np.random.default_rng(5)
    y = rng.integers(0, 3, 30).astype(float)
    f = np.round(rng.normal(size=30), 1)
    w = rng.uniform(0, 2, 30)
    g = rng.integers(0, 3, 30)
    per = []
    for q in np.unique(g):
        r = np.flatnonzero(g == q)
        num = den = 0.0
        for i in r:
            for j in r:
                if y[i] > y[j]:
                    den += w[i] * w[j]
                    num += w[i] * w[j] * ((f[i] < f[j]) + 0.5 * (f[i] == f[j]))
        per.append(num / den)
    assert pairwise_disagreement(y, f, g, sample_weight=w) == pytest.approx(np.mean(per), rel=1e-12)
    assert pairwise_disagreement(y, f, g, sample_weight=np.ones(30)) == pytest.approx(pairwise_disagreement(y, f, g))


def test_every_registered_learner_takes_verbose():
    from fastrank._registry import ESTIMATORS

    # the package's own learners (a test module may have registered one of its own)
    missing = [name for name, cls in ESTIMATORS.items()
               if cls.__module__.startswith("fastrank.") and "verbose" not in cls().get_params()]
    assert not missing, f"learners without a verbose parameter: {missing}"


def test_ranking_scorer_routes_the_test_groups_to_a_pipelines_normaliser():
    # the scorer received the fold's groups but called predict(X) without them: QueryNormalizer scaled each test fold
    # as one query (NDCG@10 0.938 / 0.893 / 0.908 against 0.980 / 0.987 / 0.990 by hand on the same folds)
    from sklearn.pipeline import make_pipeline

    from fastrank.metrics import make_ranking_scorer, ndcg
    from fastrank.preprocessing import QueryNormalizer

    rng = np.random.default_rng(0)
    m = 300
    g = np.sort(rng.integers(0, 30, m))
    Z = rng.normal(size=(m, 2))
    X = Z * np.exp(3 * rng.normal(size=(30, 2)))[g]  # per-query feature scales, which the normaliser removes
    y = np.digitize(Z @ [1.0, 1.0] + 0.3 * rng.normal(size=m), [-1, 0, 1]).astype(float)
    cv = GroupKFold(n_splits=3)

    def pipe():
        return make_pipeline(QueryNormalizer(), RankRLS().set_fit_request(groups=True))

    with sklearn.config_context(enable_metadata_routing=True):
        scorer = make_ranking_scorer("ndcg", k=10).set_score_request(groups=True)
        got = cross_val_score(pipe(), X, y, cv=cv, scoring=scorer, params={"groups": g})
        want = [ndcg(y[te], pipe().fit(X[tr], y[tr], groups=g[tr]).predict(X[te], groups=g[te]), g[te], k=10)
                for tr, te in cv.split(X, y, g)]
        np.testing.assert_allclose(got, want, rtol=1e-12)
        if parse_version(sklearn.__version__) < parse_version("1.9"):
            return  # scikit-learn 1.8 refuses no unrequested metadata (the scorer then warns of missing groups)
        # without a request, scikit-learn's error names the scorer's own class and method, not an internal make_scorer
        with pytest.raises(Exception, match=r"RankingScorer\.score.*Call `RankingScorer\.set_score_request"):
            GridSearchCV(RankRLS().set_fit_request(groups=True), {"alpha": [1.0]}, cv=cv,
                         scoring=make_ranking_scorer("ndcg", k=10)).fit(X, y, groups=g)


@pytest.mark.parametrize("make", ["RankRLS", "MPRank", "RankSVM", "SVRank", "RankRLSCV"])
def test_precomputed_kernels_are_checked_as_scikit_learn_checks_them(make):
    # check_estimator under kernel="precomputed" (pairwise tag): a sparse kernel was a ValueError not naming sparsity,
    # and a test kernel of the wrong width did not say "X has 1 features, but ... is expecting 15 features"
    import scipy.sparse as sp

    import fastrank

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(15, 4)), rng.normal(size=15)
    model = getattr(fastrank, make)(kernel="precomputed")
    with pytest.raises(TypeError, match="sparse"):
        model.fit(sp.csr_matrix(X @ X.T), y)
    model.fit(X @ X.T, y)
    with pytest.raises(ValueError, match=f"X has 1 features, but {make} is expecting 15 features as input"):
        model.predict((X @ X.T)[:, [1]])
