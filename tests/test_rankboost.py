"""RankBoost against a brute-force version that keeps the pair distribution D explicitly."""

import pickle
import warnings

import numpy as np
import pytest
import sklearn
from scipy.optimize import brentq
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, GroupKFold
from sklearn.utils.estimator_checks import parametrize_with_checks

from fastrank import RankBoost, rankboost_path
from fastrank.exceptions import ConstantModelWarning
from fastrank.metrics import get_measure, pairwise_disagreement

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


def exact_alpha(D, u, smoothing, freund):
    """argmin_alpha Z(alpha) = sum_e D_e exp(-alpha u_e), u_e = h(x1) - h(x0) in {-1, 0, 1} (slides
    003), by a root of dZ/dalpha = -sum D_e u_e exp(-alpha u_e) (Z is convex), not the closed form.
    Without a wrong (or a right) pair the minimiser is at infinity: the documented smoothing
    raises eps+ and eps- below 1 / (2N) to it (also when both are positive), keeping Freund's
    alpha (freund) if that is farther from 0."""
    eps_plus, eps_minus = D[u > 0].sum(), D[u < 0].sum()
    if min(eps_plus, eps_minus) < smoothing:
        smoothed = 0.5 * np.log(max(eps_plus, smoothing) / max(eps_minus, smoothing))
        return smoothed if abs(smoothed) >= abs(freund) else freund
    return brentq(lambda a: -np.sum(D * u * np.exp(-a * u)), -60.0, 60.0, xtol=1e-15, rtol=1e-15)


def brute_rankboost(X, x0, x1, d1, T, k=None, rule="freund", trace=None):
    """x0[e], x1[e]: crucial pair e (x1 should rank above x0) with initial weight d1[e].
    trace: a list that receives (eps+, eps-, eps0, Z_t) of every round."""
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
        h = np.where(np.isnan(X[:, bf]), q, X[:, bf] > th).astype(float)
        u = h[x1] - h[x0]
        rc = np.clip(r, -1 + 1e-10, 1 - 1e-10)
        alpha = 0.5 * np.log((1 + rc) / (1 - rc))
        if rule == "exact":
            alpha = exact_alpha(D, u, 0.5 / x0.size, alpha)
        D = D * np.exp(-alpha * u)  # Fig. 1 update
        if trace is not None:
            trace.append((D[u > 0].sum() * np.exp(alpha), D[u < 0].sum() * np.exp(-alpha), D[u == 0].sum(), D.sum()))
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
    # m = 5000: a thread scans at least 65,536 entries of X a round, so the 40 features take three threads' chunks
    X, y = data(6, m=5000, n=40)
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
    with pytest.warns(ConstantModelWarning, match="RankBoost scores every row alike"):
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


# ---------------------------------------------------------------------------------------------
# the slides' (003) exact alpha, Z_t and the training-error bound


def assert_pair_masses(model, trace):
    t = np.array(trace)
    np.testing.assert_allclose(model.pair_masses_, t[:, :3], rtol=1e-9, atol=1e-13)
    np.testing.assert_allclose(model.normalizers_, t[:, 3], rtol=1e-10)


@pytest.mark.parametrize("seed", [0, 1])
def test_exact_alpha_is_the_minimiser_of_z_on_explicit_pairs(seed):
    X, y = data(seed)
    model = RankBoost(n_estimators=25, alpha_rule="exact").fit(X, y)
    x0, x1, w = graded_pairs(y)
    trace = []
    assert_same_rounds(model, brute_rankboost(X, x0, x1, w, 25, rule="exact", trace=trace))
    assert_pair_masses(model, trace)
    # the slides' closed forms: alpha = 1/2 ln(eps+/eps-), Z = eps0 + 2 sqrt(eps+ eps-)
    ep, em, e0 = model.pair_masses_.T
    smooth = (ep < 0.5 / x0.size) | (em < 0.5 / x0.size)  # the documented smoothing
    np.testing.assert_allclose(model.alphas_[~smooth], 0.5 * np.log(ep[~smooth] / em[~smooth]), rtol=1e-9)
    np.testing.assert_allclose(model.normalizers_[~smooth], (e0 + 2 * np.sqrt(ep * em))[~smooth], rtol=1e-9)
    assert np.all(model.normalizers_ <= np.sqrt(1 - model.correlations_**2) * (1 + 1e-12))
    np.testing.assert_allclose(ep - em, model.correlations_, atol=1e-12)


@pytest.mark.parametrize("weighting", ["pairs", "query"])
def test_exact_alpha_with_groups_and_missing_values(weighting):
    X, y = data(3, m=48)
    X[np.random.default_rng(2).random(X.shape) < 0.1] = np.nan
    groups = np.random.default_rng(7).choice([5, 11, 2, 40], size=X.shape[0])
    model = RankBoost(n_estimators=15, alpha_rule="exact", group_weighting=weighting, missing="q_def").fit(X, y, groups)
    x0, x1, w = graded_pairs(y, groups, weighting)
    trace = []
    assert_same_rounds(model, brute_rankboost(X, x0, x1, w, 15, rule="exact", trace=trace))
    assert_pair_masses(model, trace)


def test_exact_alpha_on_a_preference_graph_and_freund_z():
    rng = np.random.default_rng(5)
    m = 30
    X = rng.normal(size=(m, 4))
    s = X[:, 0] + X[:, 3] + 0.7 * rng.normal(size=m)
    pairs = np.array([(a, b) if s[a] > s[b] else (b, a) for a, b in (rng.choice(m, 2, replace=False) for _ in range(150))])
    for rule in ("exact", "freund"):
        model = RankBoost(n_estimators=20, alpha_rule=rule).fit_preferences(X, pairs)
        trace = []
        assert_same_rounds(model, brute_rankboost(X, pairs[:, 1], pairs[:, 0], np.ones(len(pairs)), 20, rule=rule,
                                                  trace=trace))
        assert_pair_masses(model, trace)


def test_the_rules_differ_when_the_weak_ranker_ties_pairs():
    X, y = data(0)
    a = RankBoost(n_estimators=1, alpha_rule="freund").fit(X, y)
    b = RankBoost(n_estimators=1, alpha_rule="exact").fit(X, y)
    assert a.features_[0] == b.features_[0] and a.thresholds_[0] == b.thresholds_[0]
    assert b.pair_masses_[0, 2] > 0.1  # the threshold ranker ties many crucial pairs
    assert abs(a.alphas_[0] - b.alphas_[0]) > 0.05
    assert b.normalizers_[0] < a.normalizers_[0]  # the exact minimiser lowers Z_t
    # and agree when it ties none: one 0/1 feature, every preference across its two values
    rng = np.random.default_rng(1)
    Xb = np.r_[np.zeros(10), np.ones(10)][:, None]
    pairs = np.array([(10 + i, j) if rng.random() < 0.8 else (j, 10 + i) for i in range(10) for j in range(10)])
    a = RankBoost(n_estimators=1, alpha_rule="freund").fit_preferences(Xb, pairs)
    b = RankBoost(n_estimators=1, alpha_rule="exact").fit_preferences(Xb, pairs)
    assert a.pair_masses_[0, 2] == 0
    np.testing.assert_allclose(a.alphas_, b.alphas_, rtol=1e-12)


def test_exact_alpha_smoothed_without_wrong_pairs():
    # bipartite, feature 0 puts every positive above every negative but ties some crucial pairs
    X = np.array([[0.0], [0.0], [1.0], [1.0], [1.0], [2.0]])
    y = np.array([0.0, 0.0, 0.0, 1.0, 1.0, 1.0])
    model = RankBoost(n_estimators=1, alpha_rule="exact").fit(X, y)
    ep, em, e0 = model.pair_masses_[0]
    assert em == 0 and e0 > 0
    np.testing.assert_allclose(model.alphas_[0], 0.5 * np.log(ep / (0.5 / 9)), rtol=1e-12)
    freund = RankBoost(n_estimators=1).fit(X, y)
    assert model.alphas_[0] > freund.alphas_[0]
    assert model.normalizers_[0] < freund.normalizers_[0] <= np.sqrt(1 - model.correlations_[0] ** 2)

    # late rounds whose floored alpha falls below Freund's (eps+ or eps- under 1/(2N) on a
    # concentrated D_t): Freund's is kept, and the rounds still equal the explicit-pair oracle
    rng = np.random.default_rng(30)
    m = int(rng.integers(8, 30))
    X = np.round(rng.normal(size=(m, 2)) * 1.5)
    y = rng.integers(0, 2, m).astype(float)
    groups = rng.integers(0, 3, m)
    model = RankBoost(n_estimators=30, alpha_rule="exact").fit(X, y, groups)
    x0, x1, w = graded_pairs(y, groups)
    trace = []
    assert_same_rounds(model, brute_rankboost(X, x0, x1, w, 30, rule="exact", trace=trace))
    assert_pair_masses(model, trace)
    delta, (ep, em, _), r = 0.5 / x0.size, model.pair_masses_.T, model.correlations_
    floored = 0.5 * np.log(np.maximum(ep, delta) / np.maximum(em, delta))
    freund_alpha = 0.5 * np.log((1 + r) / (1 - r))
    kept = ((ep < delta) | (em < delta)) & (np.abs(floored) < np.abs(freund_alpha))
    assert kept.any()
    np.testing.assert_allclose(model.alphas_[kept], freund_alpha[kept], rtol=1e-12)
    assert np.all(model.normalizers_ <= np.sqrt(1 - r**2) * (1 + 1e-12))


@pytest.mark.parametrize("rule", ["freund", "exact"])
@pytest.mark.parametrize("weighting", ["pairs", "query"])
def test_training_error_bound_holds_against_explicit_disagreement(rule, weighting):
    X, y = data(6, m=50)
    groups = np.repeat(np.arange(5), 10)
    x0, x1, w = graded_pairs(y, groups, weighting)
    d1 = w / w.sum()
    for T in (1, 3, 10, 40):
        model = RankBoost(n_estimators=T, alpha_rule=rule, group_weighting=weighting).fit(X, y, groups)
        F = model.predict(X)
        error = np.sum(d1 * (F[x1] <= F[x0]))  # slides' R-hat: misordered or tied, D_1-weighted
        exp_loss = np.sum(d1 * np.exp(F[x0] - F[x1]))
        np.testing.assert_allclose(np.prod(model.normalizers_), exp_loss, rtol=1e-10)
        gamma = np.abs(model.pair_masses_[:, 0] - model.pair_masses_[:, 1]) / 2
        np.testing.assert_allclose(model.training_error_bound_, np.exp(-2 * np.sum(gamma**2)), rtol=1e-10)
        assert error <= exp_loss <= model.training_error_bound_ * (1 + 1e-12)
        assert model.training_error_bound_ < 1


def test_verbose_reports_rounds(capsys):
    X, y = data(0)
    RankBoost(n_estimators=7).fit(X, y)
    assert capsys.readouterr().err == ""
    RankBoost(n_estimators=7, verbose=1).fit(X, y)
    assert "RankBoost: 7/7 round" in capsys.readouterr().err
    RankBoost(n_estimators=5, verbose=2).fit_preferences(X, np.array([[0, 1], [2, 3]]))
    assert "RankBoost" in capsys.readouterr().err


def test_alpha_rule_is_checked():
    X, y = data(0)
    with pytest.raises(ValueError, match="alpha_rule"):
        RankBoost(alpha_rule="slides").fit(X, y)


# ---------------------------------------------------------------------------------------------
# choosing n_estimators from staged predictions


@pytest.mark.parametrize("scoring", [None, "disagreement"])
def test_rankboost_path_equals_refitting_at_every_n_estimators(scoring):
    X, y = data(8, m=90)
    y = y + 2  # graded relevance 0..4 (NDCG needs non-negative labels)
    groups = np.repeat(np.arange(9), 10)
    grid = [1, 2, 5, 9, 14, 30]
    folds = list(GroupKFold(n_splits=3).split(X, y, groups))
    path = rankboost_path(X, y, grid, groups, cv=folds, scoring=scoring, n_thresholds=8, alpha_rule="exact")
    measure = get_measure(scoring or "ndcg@10")
    expected = np.array([[measure(y[te], RankBoost(n_estimators=t, n_thresholds=8, alpha_rule="exact")
                                  .fit(X[tr], y[tr], groups[tr]).predict(X[te]), groups[te]) for t in grid]
                         for tr, te in folds])
    np.testing.assert_allclose(path.scores, expected, rtol=1e-12)
    np.testing.assert_array_equal(path.n_estimators, grid)
    pick = np.argmax if measure.greater_is_better else np.argmin
    assert path.best_n_estimators == grid[pick(expected.mean(axis=0))]
    ref = RankBoost(n_estimators=path.best_n_estimators, n_thresholds=8, alpha_rule="exact").fit(X, y, groups)
    np.testing.assert_array_equal(path.estimator.predict(X), ref.predict(X))


def test_rankboost_path_past_an_early_stop_and_without_groups():
    rng = np.random.default_rng(9)
    X = rng.normal(size=(60, 3))
    y = (X[:, 1] > 0.1).astype(float)  # separable: one round, then boosting stops
    path = rankboost_path(X, y, 4, cv=3, refit=False)
    np.testing.assert_array_equal(path.n_estimators, [1, 2, 3, 4])
    assert path.measure.name == "disagreement" and path.estimator is None
    from sklearn.model_selection import KFold

    expected = [[pairwise_disagreement(y[te], RankBoost(n_estimators=t).fit(X[tr], y[tr]).predict(X[te]))
                 for t in range(1, 5)] for tr, te in KFold(3).split(X)]
    np.testing.assert_allclose(path.scores, expected, rtol=1e-12)


def test_rankboost_path_bad_arguments():
    X, y = data(0)
    with pytest.raises(ValueError, match="n_estimators"):
        rankboost_path(X, y, [0, 3])
    with pytest.raises(ValueError, match="n_estimators"):
        rankboost_path(X, y, [1.5])
    with pytest.raises(ValueError, match="cv"):
        rankboost_path(X, y, 5, cv=1)


def test_n_thresholds_counts_the_quantile_thresholds_and_missing_values_add_minus_infinity():
    # the docstring said "at most k"; with missing values the "has the feature" threshold (-inf) is a k + 1-th
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 1))
    X[::4] = np.nan
    y = rng.normal(size=40)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        used = np.unique(RankBoost(100, n_thresholds=2, missing="q_def").fit(X, y).thresholds_)
    assert np.isfinite(used).sum() <= 2 and used.size <= 3 and used[0] == -np.inf


def test_path_errors_name_the_fold_or_the_measure():
    # a training fold without preference pairs reported the whole data's error (and groups that were not given); a
    # measure that cannot score y at all (ndcg of negative grades) was blamed on the folds
    X, y = np.c_[np.arange(8.0), -np.arange(8.0)], np.array([0, 0, 0, 0, 1, 1, 1, 1.0])
    assert RankBoost(5).fit(X, y).n_estimators_ == 1
    with pytest.raises(ValueError, match=r"^rankboost_path: training fold 0 \(4 rows\) cannot be fitted: No relevant "
                                         r"pairs: all targets are tied among the rows, so there are no preferences to "
                                         r"learn from; use fewer or shuffled folds \(cv\)$"):
        rankboost_path(X, y, 5, cv=2)
    with pytest.raises(ValueError, match=r"^rankboost_path: 'ndcg@10' cannot score y: .*; choose another scoring$"):
        rankboost_path(np.r_[X, X], np.r_[y, y] - 1.0, 5, groups=np.repeat([0, 1], 8), cv=2)


@pytest.mark.parametrize("make", ["RankBoost", "RankSVM"])
def test_groups_of_one_row_are_named_not_tied_targets(make):
    import fastrank

    X, y = np.arange(12.0).reshape(6, 2), np.arange(6.0)
    with pytest.raises(ValueError, match=rf"every group has a single row\. {make} with groups learns only from pairs"):
        getattr(fastrank, make)().fit(X, y, np.arange(6))
