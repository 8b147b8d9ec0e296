"""The measure table: one name means one measure everywhere (fastrank.metrics, make_ranking_scorer,
score_estimator, RankRLSCV(scoring=...), the CLI), tied predictions count by the expectation over
the orders of the tie, AGREE from its definition (003), and the missing-groups warning."""

import itertools
import json
import warnings

import numpy as np
import pytest
import sklearn
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.linear_model import Ridge
from sklearn.model_selection import GridSearchCV, GroupKFold, KFold, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import fastrank
from fastrank import metrics as M
from fastrank.exceptions import MissingGroupsWarning

GROUPS = np.repeat(np.arange(10), 6)


def _data(seed=0, binary_features=True):
    rng = np.random.default_rng(seed)
    m = GROUPS.size
    # few distinct feature rows: many rows of a query get exactly the same prediction
    X = rng.integers(0, 2, size=(m, 3)).astype(float) if binary_features else rng.normal(size=(m, 3))
    y = np.clip(np.round(X @ np.array([1.0, -0.5, 0.7]) + rng.normal(0, 0.7, m) + 1), 0, 3)
    return X, y


# --------------------------------------------------------------------------------------------
# literal oracles


def _orders_with_ties(f):
    """Every ranking by decreasing f, tied rows taking all their relative orders."""
    levels = sorted(set(f.tolist()), reverse=True)
    blocks = [[i for i in range(len(f)) if f[i] == v] for v in levels]
    for choice in itertools.product(*[list(itertools.permutations(b)) for b in blocks]):
        yield [i for b in choice for i in b]


def lit_ndcg(y, f, k=None):
    """NDCG (gains 2^y - 1, discount 1/log2(p + 1)), expected over the orders of tied scores."""
    gains = 2.0 ** y - 1.0

    def dcg(order):
        return sum(gains[i] / np.log2(p + 2.0) for p, i in enumerate(order) if k is None or p < k)

    ideal = dcg(sorted(range(len(y)), key=lambda i: -y[i]))
    if ideal == 0:
        return None
    return np.mean([dcg(o) for o in _orders_with_ties(f)]) / ideal


def lit_unit_mean(fn, y, f, units):
    vals = [fn(y[units == u], f[units == u]) for u in np.unique(units)]
    return np.mean([v for v in vals if v is not None])


def retrain_predictions(X, y, groups, sets, alpha):
    pred = np.full(y.size, np.nan)
    for s in sets:
        train = np.setdiff1d(np.arange(y.size), s)
        g = None if groups is None else groups[train]
        pred[s] = fastrank.RankRLS(alpha=alpha).fit(X[train], y[train], g).predict(X[s])
    return pred


# --------------------------------------------------------------------------------------------
# names


def test_names_aliases_and_cutoffs():
    names = M.measure_names()
    assert len(names) == len(set(names)) >= 20
    for name in names:
        meas = M.get_measure(name)
        assert meas.name == name and callable(meas) and isinstance(meas.greater_is_better, bool)
        assert M.get_measure(name.upper()) is meas
        if meas.cutoff:
            assert M.get_measure(f"{name}@3").kwargs[meas.cutoff] == 3
    for alias, name in [("pairwise_disagreement", "disagreement"), ("mean_average_precision", "map"),
                        ("p", "precision"), ("precision_at_k", "precision"), ("err_at_k", "err"),
                        ("pairwise_accuracy", "auc"), ("mean_reciprocal_rank", "mrr")]:
        assert M.get_measure(alias) is M.get_measure(name)
    assert M.get_measure("p@5").name == "precision@5" and M.get_measure("precision@5").kwargs == {"k": 5}
    assert not M.get_measure("disagreement").greater_is_better and M.get_measure("ndcg@10").greater_is_better
    with pytest.raises(ValueError, match="unknown ranking measure 'ndgc'"):
        M.get_measure("ndgc")
    with pytest.raises(ValueError, match="takes no @k"):
        M.get_measure("msd@3")
    for bad in ("ndcg@0", "ndcg@x", "ndcg@"):
        with pytest.raises(ValueError, match="positive integer"):
            M.get_measure(bad)
    with pytest.raises(ValueError, match="already sets k"):
        M.make_ranking_scorer("ndcg@10", k=5)


@pytest.mark.parametrize("measure, kwargs, error, match", [
    ("ndcg", {"k": 0}, ValueError, "k must be None or a positive integer, got 0"),
    ("map", {"k": 2.5}, ValueError, "k must be None or a positive integer, got 2.5"),
    (M.Measure("top", M.ndcg, True, "hand-built", cutoff="k", k=-1), {}, ValueError, "k must be .* got -1"),
    ("ndcg", {"kk": 3}, TypeError, "measure 'ndcg' takes no keyword 'kk' \\(its keywords: groups, k,"),
    ("disagreement", {"k": 3}, TypeError, "measure 'disagreement' takes no keyword 'k'"),
    (lambda y, f, groups=None: 0.0, {"x": 1}, TypeError, "takes no keyword 'x' \\(its keywords: groups\\)"),
])
def test_scorer_refuses_keywords_every_scoring_call_would_refuse(measure, kwargs, error, match):
    # made anyway, the scorer fails at every call and a search records NaN for every candidate
    with pytest.raises(error, match=match):
        M.make_ranking_scorer(measure, **kwargs)
    assert M.make_ranking_scorer("ndcg", k=None)._kwargs == {"k": None}
    assert M.make_ranking_scorer(lambda y, f, **kw: 0.0, anything=1)._kwargs == {"anything": 1}


def test_every_name_is_the_same_measure_in_metrics_scorer_cv_and_cli(tmp_path, capsys):
    from fastrank import cli, model_selection as ms
    from sklearn.datasets import dump_svmlight_file

    X, y = _data(1, binary_features=False)
    est = fastrank.RankRLS(alpha=1.0).fit(X, y, GROUPS)
    pred = est.predict(X)
    alphas = [0.1, 10.0]
    lgo = [ms.leave_group_out(fastrank.RankRLS(alpha=a), X, y, GROUPS) for a in alphas]
    data, scores = tmp_path / "d.txt", tmp_path / "s.txt"
    dump_svmlight_file(X, y, str(data), query_id=GROUPS)
    np.savetxt(scores, pred, fmt="%.17g")
    for name in M.measure_names() + ("ndcg@3", "map@2", "p@2", "mrr@2", "err@3"):
        meas = M.get_measure(name)
        value = meas(y, pred, GROUPS)
        sign = 1 if meas.greater_is_better else -1
        assert M.make_ranking_scorer(name)(est, X, y, groups=GROUPS) == pytest.approx(sign * value, rel=1e-12)
        cv = fastrank.RankRLSCV(alphas=alphas, cv="lgo", scoring=name).fit(X, y, GROUPS)
        want = [meas(y, p, GROUPS) for p in lgo]
        np.testing.assert_allclose(cv.cv_results_["scores"], want, rtol=1e-10, atol=1e-14)
        pick = np.argmax if meas.greater_is_better else np.argmin
        assert cv.alpha_ == alphas[int(pick(want))] and cv.cv_results_["scoring"] == meas.name
        assert cli.main(["evaluate", "-m", name, "--format", "json", str(data), str(scores)]) == 0
        got = json.loads(capsys.readouterr().out)["mean"][meas.name]
        assert got == pytest.approx(value, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize("scheme", ["lgo", "groupkfold", "sets_without_groups"])
def test_cv_ndcg_by_name_equals_scorer_and_per_unit_oracle_on_tied_predictions(scheme):
    X, y = _data(2)
    alphas = [0.1, 1.0, 10.0]
    groups = None if scheme == "sets_without_groups" else GROUPS
    if scheme == "lgo":
        cv, sets = "lgo", [np.flatnonzero(GROUPS == q) for q in np.unique(GROUPS)]
    elif scheme == "groupkfold":
        cv = GroupKFold(n_splits=3)
        sets = [te for _, te in cv.split(X, y, GROUPS)]
    else:
        sets = [np.arange(i, GROUPS.size, 10) for i in range(10)]  # small sets: the oracle enumerates tie orders
        cv = sets
    by_name = fastrank.RankRLSCV(alphas=alphas, cv=cv, scoring="ndcg").fit(X, y, groups)
    by_scorer = fastrank.RankRLSCV(alphas=alphas, cv=cv, scoring=M.make_ranking_scorer("ndcg")).fit(X, y, groups)
    np.testing.assert_array_equal(by_name.cv_results_["scores"], by_scorer.cv_results_["scores"])
    # the predictions are those of retraining, and they do tie
    p = by_name.cv_predictions_
    np.testing.assert_allclose(p, retrain_predictions(X, y, groups, sets, by_name.alpha_), rtol=1e-8, atol=1e-10)
    assert sum(np.unique(p[s]).size < s.size for s in sets) >= 2
    # the score: NDCG of each unit (one hold-out set inside one query), expected over the orders of
    # its tied predictions, every unit weighing the same
    units = np.empty(y.size, dtype=np.int64)
    for i, s in enumerate(sets):
        units[s] = i * 100 + (0 if groups is None else GROUPS[s])
    want = lit_unit_mean(lit_ndcg, y, p, units)
    assert by_name.best_score_ == pytest.approx(want, rel=1e-10)


def test_cv_ndcg_at_k_oracle_with_ties():
    X, y = _data(3)
    est = fastrank.RankRLSCV(alphas=[1.0], cv="lgo", scoring="ndcg@2").fit(X, y, GROUPS)
    want = lit_unit_mean(lambda a, b: lit_ndcg(a, b, 2), y, est.cv_predictions_, GROUPS)
    assert est.best_score_ == pytest.approx(want, rel=1e-10)


# --------------------------------------------------------------------------------------------
# one tie convention

_ORDER_MEASURES = ("ndcg", "ndcg@3", "map", "map@3", "mrr", "mrr@2", "precision@3", "err", "err@3",
                   "disagreement", "auc", "kendall_distance", "spearman_footrule", "position_error",
                   "discounted_error", "agree", "discrete_ranking_loss")


@pytest.mark.parametrize("name", _ORDER_MEASURES)
def test_tied_predictions_do_not_depend_on_row_order(name):
    rng = np.random.default_rng(4)
    y = rng.integers(0, 3, GROUPS.size).astype(float)
    f = rng.integers(0, 3, GROUPS.size).astype(float)  # heavy ties
    meas = M.get_measure(name)
    ref = meas(y, f, GROUPS)
    for _ in range(3):
        perm = rng.permutation(y.size)
        assert meas(y[perm], f[perm], GROUPS[perm]) == pytest.approx(ref, rel=1e-12, abs=1e-15)


# --------------------------------------------------------------------------------------------
# AGREE (003, the two-step scheme of Cohen, Schapire & Singer)


def lit_agree_one_order(order, F):
    """AGREE(sigma, f) = sum over pairs with sigma(x_i) < sigma(x_j) of f(x_i, x_j), with sigma the
    position of each row in ``order`` -- a double loop over the pairs."""
    sigma = {row: pos for pos, row in enumerate(order)}
    total = 0.0
    for i in range(len(order)):
        for j in range(len(order)):
            if i != j and sigma[i] < sigma[j]:
                total += F[i][j]
    return total


def lit_agree(F, f):
    return np.mean([lit_agree_one_order(o, F) for o in _orders_with_ties(f)])


def test_agree_matrix_against_the_definition():
    rng = np.random.default_rng(5)
    m = 6
    P = rng.random((m, m))
    F = P / (P + P.T)  # the slides' scaling: f(x_i, x_j) + f(x_j, x_i) = 1
    np.fill_diagonal(F, 0.0)
    for f in (rng.normal(size=m), np.array([1.0, 2.0, 2.0, 0.0, 1.0, 2.0])):
        raw = lit_agree(F, f)
        assert M.agree(F, f, normalize=False) == pytest.approx(raw, rel=1e-12)
        assert M.agree(F, f) == pytest.approx(raw / (m * (m - 1) / 2), rel=1e-12)
    # an unscaled preference matrix: normalised by its total pair mass
    G = rng.random((m, m))
    np.fill_diagonal(G, 0.0)
    f = rng.normal(size=m)
    assert M.agree(G, f) == pytest.approx(lit_agree(G, f) / G.sum(), rel=1e-12)
    # the best ranking for the scaled matrix keeps every majority preference
    assert M.agree(F, f) <= 1.0


def test_agree_from_targets_and_groups():
    rng = np.random.default_rng(6)
    y = rng.integers(0, 3, GROUPS.size).astype(float)
    f = rng.integers(0, 4, GROUPS.size).astype(float)
    vals, raw_total = [], 0.0
    for q in np.unique(GROUPS):
        r = GROUPS == q
        yq = y[r]
        Fq = (yq[:, None] > yq[None, :]) + 0.5 * (yq[:, None] == yq[None, :])
        np.fill_diagonal(Fq, 0.0)
        raw = lit_agree(Fq, f[r])
        raw_total += raw
        vals.append(raw / (r.sum() * (r.sum() - 1) / 2))
    assert M.agree(y, f, GROUPS) == pytest.approx(np.mean(vals), rel=1e-12)
    assert M.agree(y, f, GROUPS, normalize=False) == pytest.approx(raw_total, rel=1e-12)
    Fall = (y[:, None] > y[None, :]) + 0.5 * (y[:, None] == y[None, :])
    np.fill_diagonal(Fall, 0.0)
    assert M.agree(Fall, f, GROUPS) == pytest.approx(np.mean(vals), rel=1e-12)
    with pytest.raises(ValueError, match="shape"):
        M.agree(np.ones((3, 4)), np.ones(3))


# --------------------------------------------------------------------------------------------
# the missing-groups trap


def _grid(routing, scorer, n_jobs=None):
    X, y = _data(7, binary_features=False)
    grid = GridSearchCV(fastrank.RankRLS(), {"alpha": [0.1, 10.0]}, cv=GroupKFold(n_splits=3), scoring=scorer,
                        n_jobs=n_jobs)
    if routing:
        grid.estimator.set_fit_request(groups=True)
    return grid.fit(X, y, groups=GROUPS)


@pytest.mark.parametrize("n_jobs", [None, 2])
def test_search_without_routing_warns_once_with_the_fix(n_jobs):
    scorer = M.make_ranking_scorer("ndcg", k=10)
    with pytest.warns(MissingGroupsWarning, match="enable_metadata_routing=True") as rec:
        _grid(False, scorer, n_jobs)
    assert len([w for w in rec if w.category is MissingGroupsWarning]) == 1
    assert "set_score_request(groups=True)" in str(rec[0].message)


def test_search_with_routing_does_not_warn_and_scores_per_query():
    with sklearn.config_context(enable_metadata_routing=True), warnings.catch_warnings():
        warnings.simplefilter("error", MissingGroupsWarning)
        scorer = M.make_ranking_scorer("ndcg", k=10).set_score_request(groups=True)
        grid = _grid(True, scorer)
    X, y = _data(7, binary_features=False)
    tr, te = next(GroupKFold(n_splits=3).split(X, y, GROUPS))
    est = fastrank.RankRLS(alpha=grid.cv_results_["params"][0]["alpha"]).fit(X[tr], y[tr], GROUPS[tr])
    assert grid.cv_results_["split0_test_score"][0] == pytest.approx(
        M.ndcg(y[te], est.predict(X[te]), GROUPS[te], k=10), rel=1e-12)


def test_scorer_warns_when_the_estimator_recorded_groups_at_fit():
    X, y = _data(8, binary_features=False)
    est = fastrank.RankRLS().fit(X, y, GROUPS)
    est.n_fit_groups_ = 10  # what a ranker records at fit
    scorer = M.make_ranking_scorer("map")
    with warnings.catch_warnings():
        warnings.simplefilter("error", MissingGroupsWarning)
        scorer(est, X, y, groups=GROUPS)  # groups given: no warning
    with pytest.warns(MissingGroupsWarning, match="fitted on 10 query groups"):
        scorer(est, X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", MissingGroupsWarning)
        scorer(est, X, y)  # once per scorer
    pipe = make_pipeline(StandardScaler(), fastrank.RankRLS()).fit(X, y, rankrls__groups=GROUPS)
    pipe[-1].n_fit_groups_ = 10
    with pytest.warns(MissingGroupsWarning):
        M.make_ranking_scorer("ndcg@10")(pipe, X, y)


@pytest.mark.parametrize("make", [lambda: fastrank.RankRLS(), lambda: fastrank.RankSVM(),
                                  lambda: fastrank.RankRLSCV(alphas=[0.1, 10.0])])
def test_a_grouped_fit_records_its_groups_and_score_without_them_warns(make):
    X, y = _data(8, binary_features=False)
    est = make().fit(X, y, GROUPS)
    n = np.unique(GROUPS).size
    fitted = [est] + ([est.best_estimator_] if hasattr(est, "best_estimator_") else [])
    for model in fitted:
        assert model.n_fit_groups_ == n
        with pytest.warns(MissingGroupsWarning, match=f"fitted on {n} query groups"):
            model.score(X, y)
        with warnings.catch_warnings():
            warnings.simplefilter("error", MissingGroupsWarning)
            model.score(X, y, groups=GROUPS)
    assert make().fit(X, y).n_fit_groups_ == 1


def test_no_warning_without_evidence_of_queries():
    X, y = _data(9, binary_features=False)
    est = fastrank.RankRLS().fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error", MissingGroupsWarning)
        M.make_ranking_scorer("ndcg@10")(est, X, y)
        cross_val_score(fastrank.RankRLS(), X, y, cv=KFold(3), scoring=M.make_ranking_scorer("ndcg"))
        M.score_estimator(est, X, y)
        # an explicit "no groups for this scorer" under routing is respected
        with sklearn.config_context(enable_metadata_routing=True):
            scorer = M.make_ranking_scorer("ndcg").set_score_request(groups=False)
            est.n_fit_groups_ = 10
            scorer(est, X, y)


class _MinimalRanker(RegressorMixin, BaseEstimator):
    """A ranker whose score is the shared one (metrics.score_estimator), fitted without groups."""

    def fit(self, X, y, groups=None):
        self.model_ = Ridge(alpha=1.0).fit(X, y)
        return self

    def predict(self, X):
        return self.model_.predict(X)

    def score(self, X, y, groups=None, sample_weight=None):
        return M.score_estimator(self, X, y, groups, sample_weight)


def test_cross_val_score_of_a_ranker_fitted_without_groups_warns():
    X, y = _data(10, binary_features=False)
    with pytest.warns(MissingGroupsWarning, match="cross_validate was given 10 groups"):
        cross_val_score(_MinimalRanker(), X, y, groups=GROUPS, cv=GroupKFold(n_splits=3))
    with pytest.warns(MissingGroupsWarning, match="enable_metadata_routing"):
        cross_val_score(fastrank.RankRLS(), X, y, groups=GROUPS, cv=GroupKFold(n_splits=3),
                        scoring=M.make_ranking_scorer("ndcg@10"))
    # every fastrank learner warns once, when the call clones it, also where its fits and scores run in other
    # processes (n_jobs=2: nothing warned, the workers see no groups on their stack)
    for est, n_jobs in itertools.product((fastrank.RankRLS(), fastrank.RankSVM(), fastrank.RankBoost(n_estimators=5)),
                                         (1, 2)):
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            cross_val_score(est, X, y, groups=GROUPS, cv=GroupKFold(n_splits=3), n_jobs=n_jobs)
        missing = [str(w.message) for w in record if w.category is MissingGroupsWarning]
        assert len(missing) == 1 and missing[0].startswith(
            f"{type(est).__name__} is cloned by model selection although scikit-learn's cross_validate was given 10 "
            "groups: without metadata routing its fit and score receive no groups"), missing


def test_score_estimator_is_the_pairwise_score():
    X, y = _data(11, binary_features=False)
    est = fastrank.RankRLS(alpha=1.0).fit(X, y, GROUPS)
    w = np.random.default_rng(0).random(y.size)
    assert M.score_estimator(est, X, y, GROUPS) == pytest.approx(est.score(X, y, GROUPS), rel=1e-12)
    assert M.score_estimator(est, X, y, GROUPS, w) == pytest.approx(est.score(X, y, GROUPS, w), rel=1e-12)
    assert M.score_estimator(est, X, y, GROUPS, measure="ndcg@5") == pytest.approx(
        M.ndcg(y, est.predict(X), GROUPS, k=5), rel=1e-12)
    with pytest.raises(ValueError, match="does not take sample_weight"):
        M.score_estimator(est, X, y, GROUPS, w, measure="ndcg")


def test_cli_scoring_takes_every_name_and_m_is_a_measure_everywhere(tmp_path, capsys):
    from sklearn.datasets import dump_svmlight_file

    from fastrank import cli

    X, y = _data(12, binary_features=False)
    data = tmp_path / "d.txt"
    dump_svmlight_file(X, y, str(data), query_id=GROUPS)
    for name in M.measure_names() + ("ndcg@5", "p@3"):
        assert cli.main(["cv", "--normalize", "none", "--cv", "lgo", "-m", name, "--alphas", "0.1,10", str(data)]) == 0
        out = capsys.readouterr().out
        ref = fastrank.RankRLSCV(alphas=[0.1, 10.0], cv="lgo", scoring=name).fit(X, y, GROUPS)
        assert f"scoring={M.get_measure(name).name}" in out
        assert f"score {ref.best_score_:.6f}" in out
    model = tmp_path / "m.frk"
    assert cli.main(["train", "-M", "RankRLS", "--alpha", "auto", "-m", "map@5", "--alphas", "0.1,10",
                     str(data), str(model)]) == 0
    assert fastrank.load(model).cv_results_["scoring"] == "map@5"
    # without --scoring: NDCG@10 on the held-out queries
    assert cli.main(["cv", "--alphas", "0.1,10", str(data)]) == 0
    assert "scoring=ndcg@10" in capsys.readouterr().out
    assert cli.main(["cv", "-m", "ndcg@0", str(data)]) == 2
    assert "positive integer" in capsys.readouterr().err


@pytest.mark.parametrize("name", ["pairwise_disagreement", "msd", "m1d", "discrete_ranking_loss", "agree"])
def test_average_none_gives_each_groups_value(name):
    # the README promises one value per query with average=None; these five refused it ("average must be one of
    # ('group', 'pooled')"); oracle: the measure on each group's rows alone, in sorted id order
    from fastrank import metrics

    rng = np.random.default_rng(0)
    y, f = rng.integers(0, 3, 30).astype(float), rng.normal(size=30)
    g = np.array(["c", "a", "b"])[np.repeat([0, 1, 2], 10)]
    fn = getattr(metrics, name)
    want = [fn(y[g == q], f[g == q]) for q in ("a", "b", "c")]
    np.testing.assert_allclose(fn(y, f, g, average=None), want, rtol=1e-12)
