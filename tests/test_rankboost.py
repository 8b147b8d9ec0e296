"""RankBoost against a brute-force version that keeps the pair distribution D explicitly."""

import pickle

import numpy as np
import pytest
import sklearn
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, GroupKFold
from sklearn.utils.estimator_checks import parametrize_with_checks

from fastrank import RankBoost
from fastrank.metrics import pairwise_disagreement

TIE = 1e-9  # the documented tie rule between candidates (relative |r|)


# ---------------------------------------------------------------------------------------------
# oracle: Freund et al. 2003, Fig. 1 with the threshold weak learner, pairs listed explicitly


def candidate_thresholds(x, k):
    """Thresholds of one feature, largest first, under the documented n_thresholds rule."""
    m = x.size
    vals = np.unique(x[~np.isnan(x)])[::-1]  # distinct values, decreasing; NaN = missing
    out = []
    for j in range(vals.size - 1):
        hi, lo = vals[j], vals[j + 1]
        c = int(np.sum(x >= hi))  # rows above the threshold
        if k is not None and j + 1 < vals.size - 1:
            c_next = int(np.sum(x >= vals[j + 1]))
            if c * k // m == c_next * k // m:
                continue
        th = 0.5 * lo + 0.5 * hi
        if not (th < hi) or th < lo:
            th = lo
        out.append(th)
    if np.isnan(x).any() and vals.size:
        out.append(-np.inf)  # "has the feature" vs q_def
    return out


def brute_rankboost(X, x0, x1, d1, T, k=None):
    """x0[e], x1[e]: crucial pair e (x1 should rank above x0) with initial weight d1[e]."""
    D = d1 / d1.sum()
    rounds = []
    for _ in range(T):
        per_feature = []
        for f in range(X.shape[1]):
            best, best_th, best_q = 0.0, None, 0
            missing = np.isnan(X[:, f])
            for th in candidate_thresholds(X[:, f], k):
                for q in (0, 1) if missing.any() else (0,):
                    h = np.where(missing, q, X[:, f] > th).astype(float)
                    r = float(np.sum(D * (h[x1] - h[x0])))  # r = sum D(x0,x1)(h(x1) - h(x0))
                    if abs(r) > abs(best) * (1 + TIE):
                        best, best_th, best_q = r, th, q
            per_feature.append((best, best_th, best_q))
        bf, best_abs = None, 0.0
        for f, (r, th, q) in enumerate(per_feature):
            if th is not None and abs(r) > best_abs * (1 + TIE):
                bf, best_abs = f, abs(r)
        if bf is None or best_abs <= 1e-12:
            break
        r, th, q = per_feature[bf]
        rc = np.clip(r, -1 + 1e-10, 1 - 1e-10)
        alpha = 0.5 * np.log((1 + rc) / (1 - rc))
        h = np.where(np.isnan(X[:, bf]), q, X[:, bf] > th).astype(float)
        D = D * np.exp(-alpha * (h[x1] - h[x0]))  # Fig. 1 update
        D /= D.sum()
        rounds.append((bf, th, alpha, r, q))
        if best_abs > 1 - 1e-10:
            break
    return rounds


def graded_pairs(y, groups=None, weighting="pairs"):
    m = y.size
    g = np.zeros(m, int) if groups is None else np.asarray(groups)
    x0, x1, w = [], [], []
    for q in np.unique(g):
        idx = np.flatnonzero(g == q)
        pq = [(i, j) for i in idx for j in idx if y[i] < y[j]]
        for i, j in pq:
            x0.append(i)
            x1.append(j)
            w.append(1.0 if weighting == "pairs" else 1.0 / len(pq))
    return np.array(x0), np.array(x1), np.array(w)


def assert_same_rounds(model, rounds):
    assert model.n_estimators_ == len(rounds) > 0
    np.testing.assert_array_equal(model.features_, [r[0] for r in rounds])
    np.testing.assert_array_equal(model.thresholds_, [r[1] for r in rounds])
    np.testing.assert_allclose(model.alphas_, [r[2] for r in rounds], rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(model.correlations_, [r[3] for r in rounds], rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(model.qdefs_, [r[4] for r in rounds])


def data(seed, m=40, n=5, levels=4):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, n))
    X[:, 1] = np.round(X[:, 1] * 2)  # ties in a feature
    y = np.clip(np.round(X[:, 0] - 0.5 * X[:, 2] + rng.normal(size=m)), -(levels // 2), levels // 2)
    return X, y


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_graded_all_pairs_equals_explicit_distribution(seed):
    X, y = data(seed)
    T = 25
    model = RankBoost(n_estimators=T, n_jobs=2).fit(X, y)
    x0, x1, w = graded_pairs(y)
    assert_same_rounds(model, brute_rankboost(X, x0, x1, w, T))


@pytest.mark.parametrize("weighting", ["pairs", "query"])
def test_groups_equal_explicit_distribution(weighting):
    X, y = data(3, m=48)
    rng = np.random.default_rng(7)
    groups = rng.choice([5, 11, 2, 40, 9], size=X.shape[0])  # unsorted, non-contiguous ids
    groups[0] = 99  # a singleton group: no pairs
    T = 20
    model = RankBoost(n_estimators=T, group_weighting=weighting).fit(X, y, groups)
    x0, x1, w = graded_pairs(y, groups, weighting)
    assert_same_rounds(model, brute_rankboost(X, x0, x1, w, T))


def test_query_weighting_changes_the_model():
    X, y = data(3, m=48)
    groups = np.r_[np.zeros(40, int), np.ones(8, int)]
    a = RankBoost(n_estimators=10, group_weighting="pairs").fit(X, y, groups)
    b = RankBoost(n_estimators=10, group_weighting="query").fit(X, y, groups)
    assert not np.allclose(a.alphas_, b.alphas_)


def test_n_thresholds_equals_explicit_distribution():
    X, y = data(4, m=50)
    model = RankBoost(n_estimators=15, n_thresholds=6).fit(X, y)
    x0, x1, w = graded_pairs(y)
    assert_same_rounds(model, brute_rankboost(X, x0, x1, w, 15, k=6))
    for f in range(X.shape[1]):
        assert np.unique(model.thresholds_[model.features_ == f]).size <= 6


def test_preference_graph_equals_explicit_distribution():
    rng = np.random.default_rng(5)
    m = 30
    X = rng.normal(size=(m, 4))
    s = X[:, 0] + X[:, 3] + 0.7 * rng.normal(size=m)
    pairs = []
    for _ in range(120):
        a, b = rng.choice(m, 2, replace=False)
        pairs.append((a, b) if s[a] > s[b] else (b, a))
    pairs += pairs[:10]  # repeated edges weigh double
    pairs = np.array(pairs)
    model = RankBoost(n_estimators=20).fit_preferences(X, pairs)
    # head preferred => x1 = head, x0 = tail
    assert_same_rounds(model, brute_rankboost(X, pairs[:, 1], pairs[:, 0], np.ones(len(pairs)), 20))


@pytest.mark.parametrize("groups", [False, True])
def test_missing_values_q_def_equals_explicit_distribution(groups):
    X, y = data(12, m=50)
    rng = np.random.default_rng(13)
    X[rng.random(X.shape) < 0.2] = np.nan
    X[:, 0][y > 0] = np.where(rng.random((y > 0).sum()) < 0.6, np.nan, X[:, 0][y > 0])  # informative
    X[:, 3] = np.where((y > 0) & (rng.random(y.size) < 0.8), np.nan, 1.0)  # only "has x_3" vs q_def
    g = rng.integers(0, 4, size=X.shape[0]) if groups else None
    model = RankBoost(n_estimators=20, missing="q_def").fit(X, y, g)
    x0, x1, w = graded_pairs(y, g)
    rounds = brute_rankboost(X, x0, x1, w, 20)
    assert_same_rounds(model, rounds)
    assert model.qdefs_.any() and np.isneginf(model.thresholds_).any()  # both kinds are exercised
    H = np.where(np.isnan(X[:, model.features_]), model.qdefs_, X[:, model.features_] > model.thresholds_)
    np.testing.assert_allclose(model.predict(X), H @ model.alphas_, atol=1e-12)
    with pytest.raises(ValueError, match="NaN"):
        RankBoost().fit(X, y)
    Xi = X.copy()
    Xi[0, 0] = np.inf
    with pytest.raises(ValueError, match="infinity"):
        RankBoost(missing="q_def").fit(Xi, y)


def test_threads_do_not_change_the_model():
    X, y = data(6, m=200, n=12)
    a = RankBoost(n_estimators=30, n_jobs=1).fit(X, y)
    b = RankBoost(n_estimators=30, n_jobs=2).fit(X, y)
    np.testing.assert_array_equal(a.features_, b.features_)
    np.testing.assert_array_equal(a.alphas_, b.alphas_)


def test_predict_is_weighted_vote_and_score():
    X, y = data(8, m=60)
    model = RankBoost(n_estimators=30).fit(X, y)
    F = sum(a * (X[:, f] > t) for f, t, a in zip(model.features_, model.thresholds_, model.alphas_))
    np.testing.assert_allclose(model.predict(X), F, rtol=1e-12, atol=1e-12)
    assert model.score(X, y) == pytest.approx(1 - pairwise_disagreement(y, F))
    staged = list(model.staged_predict(X))
    assert len(staged) == model.n_estimators_
    np.testing.assert_allclose(staged[-1], F, atol=1e-12)
    # boosting lowers the training ranking loss sum_pairs exp(F(x0) - F(x1)) (it minimises it)
    x0, x1, _ = graded_pairs(y)
    losses = [np.exp(Fs[x0] - Fs[x1]).sum() for Fs in staged]
    assert all(b <= a * (1 + 1e-12) for a, b in zip(losses, losses[1:]))
    assert model.score(X, y) > 0.8


def test_separable_bipartite_stops_saturated_without_overflow():
    rng = np.random.default_rng(9)
    X = rng.normal(size=(60, 3))
    y = (X[:, 1] > 0.1).astype(float)
    model = RankBoost(n_estimators=50).fit(X, y)
    assert model.n_estimators_ == 1 and model.features_[0] == 1
    assert np.isfinite(model.alphas_).all() and model.alphas_[0] > 10
    assert model.score(X, y) == 1.0


def test_implicit_graded_equals_explicit_graph_over_many_rounds():
    # the per-level factorisation (log-domain sums) against the explicit edge distribution,
    # with a flipped sample at each end so D keeps concentrating and F keeps growing
    rng = np.random.default_rng(11)
    m = 80
    X = rng.normal(size=(m, 3))
    y = (X[:, 0] > 0) * 2.0 + (X[:, 1] > 0)
    y[np.argmax(X[:, 0])], y[np.argmin(X[:, 0])] = 0, 3
    a = RankBoost(n_estimators=600).fit(X, y)
    x0, x1, _ = graded_pairs(y)
    b = RankBoost(n_estimators=600).fit_preferences(X, np.c_[x1, x0])
    assert a.n_estimators_ == b.n_estimators_ == 600
    F = a.predict(X)
    assert F.max() - F.min() > 30
    np.testing.assert_array_equal(a.features_, b.features_)
    np.testing.assert_array_equal(a.thresholds_, b.thresholds_)
    np.testing.assert_allclose(a.alphas_, b.alphas_, rtol=1e-9, atol=1e-12)


def test_constant_features_give_no_rounds():
    X = np.ones((10, 2))
    model = RankBoost().fit(X, np.arange(10.0))
    assert model.n_estimators_ == 0
    np.testing.assert_array_equal(model.predict(X), np.zeros(10))


def test_bad_input():
    X, y = data(0, m=20)
    with pytest.raises(ValueError, match="NaN"):
        Xn = X.copy()
        Xn[3, 1] = np.nan
        RankBoost().fit(Xn, y)
    with pytest.raises(ValueError, match="NaN"):
        RankBoost().fit(X, np.r_[y[:-1], np.nan])
    with pytest.raises(ValueError, match="inconsistent"):
        RankBoost().fit(X, y[:-1])
    with pytest.raises(ValueError, match="one group id per row"):
        RankBoost().fit(X, y, groups=np.zeros(5))
    with pytest.raises(ValueError, match="No relevant pairs"):
        RankBoost().fit(X, np.ones(20))
    with pytest.raises(ValueError, match="No relevant pairs"):
        RankBoost().fit(X, y, groups=np.arange(20))
    with pytest.raises(ValueError, match="n_estimators"):
        RankBoost(n_estimators=0).fit(X, y)
    with pytest.raises(TypeError, match="n_estimators"):
        RankBoost(n_estimators=2.5).fit(X, y)
    with pytest.raises(ValueError, match="n_thresholds"):
        RankBoost(n_thresholds=0).fit(X, y)
    with pytest.raises(ValueError, match="group_weighting"):
        RankBoost(group_weighting="x").fit(X, y)
    with pytest.raises(ValueError, match="missing"):
        RankBoost(missing="zero").fit(X, y)
    with pytest.raises(ValueError, match="outside"):
        RankBoost().fit_preferences(X, [[0, 1], [2, 20]])
    with pytest.raises(ValueError, match="self-loop"):
        RankBoost().fit_preferences(X, [[0, 1], [2, 2]])
    with pytest.raises(ValueError, match="shape"):
        RankBoost().fit_preferences(X, [0, 1])
    with pytest.raises(ValueError, match="empty"):
        RankBoost().fit_preferences(X, np.zeros((0, 2), int))
    with pytest.raises(TypeError, match="integer"):
        RankBoost().fit_preferences(X, [[0.5, 1]])
    model = RankBoost(n_estimators=5).fit(X, y)
    before = model.alphas_.copy()
    with pytest.raises(ValueError, match="features"):
        model.predict(X[:, :2])
    with pytest.raises(ValueError, match="No relevant pairs"):
        model.fit(X, np.ones(20))  # a failed fit leaves the fitted model as it was
    np.testing.assert_array_equal(model.alphas_, before)


def test_clone_pickle():
    X, y = data(1)
    est = RankBoost(n_estimators=7, n_thresholds=5, group_weighting="query", n_jobs=1)
    assert clone(est).get_params() == est.get_params()
    est.fit(X, y)
    back = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(back.predict(X), est.predict(X))


def test_gridsearch_routes_groups():
    X, y = data(2, m=120)
    groups = np.repeat(np.arange(12), 10)
    seen = []

    class Spy(RankBoost):
        def fit(self, X, y, groups=None):
            seen.append(groups is not None)
            return super().fit(X, y, groups)

    with sklearn.config_context(enable_metadata_routing=True):
        est = Spy().set_fit_request(groups=True).set_score_request(groups=True)
        search = GridSearchCV(est, {"n_estimators": [5, 20]}, cv=GroupKFold(n_splits=3))
        search.fit(X, y, groups=groups)
    assert search.best_params_["n_estimators"] in (5, 20)
    assert len(seen) == 2 * 3 + 1 and all(seen)


@parametrize_with_checks([RankBoost(n_estimators=20), RankBoost(n_estimators=10, n_thresholds=4, n_jobs=1),
                          RankBoost(n_estimators=10, missing="q_def")])
def test_check_estimator(estimator, check):
    check(estimator)


def test_save_load_round_trip(tmp_path):
    import fastrank

    X, y = data(4)
    X[0, 2] = np.nan
    est = RankBoost(n_estimators=12, missing="q_def").fit(X, y)
    fastrank.save(est, tmp_path / "rb.npz")
    back = fastrank.load(tmp_path / "rb.npz")
    np.testing.assert_array_equal(back.predict(X), est.predict(X))
    np.testing.assert_array_equal(back.qdefs_, est.qdefs_)
