"""A new learner needs one class: defined here, registered with ``fastrank.register_estimator``, it
works with the shared ``score`` (groups, sample_weight), model files, the command line's ``--model``
and the measure scorers, and its parameters are validated by the shared constraints.  (Inside the
package the same learner would take three files: its module, one import line in ``__init__``, its
tests.)"""

import numpy as np
import pytest
from sklearn.datasets import dump_svmlight_file
from sklearn.utils.validation import check_is_fitted

import fastrank
from _large_oracles import pairwise_error
from fastrank import cli, metrics
from fastrank._base import Ranker, positive_int
from fastrank._registry import ESTIMATORS
from fastrank.metrics import pairwise_disagreement


@fastrank.register_estimator
class BestFeatureRanker(Ranker):
    """Scores rows by the single feature (signed) that orders the training pairs best."""

    _parameter_constraints = {"max_features": [None, positive_int()]}

    def __init__(self, max_features=None):
        self.max_features = max_features

    def fit(self, X, y, groups=None):
        self._validate_params()
        X = self._check_fit_X(X)
        n = X.shape[1] if self.max_features is None else min(self.max_features, X.shape[1])
        errors = [pairwise_disagreement(y, s * X[:, j], groups) for j in range(n) for s in (1.0, -1.0)]
        best = int(np.argmin(errors))
        self.feature_, self.sign_ = best // 2, (1.0, -1.0)[best % 2]
        self.n_features_in_ = X.shape[1]
        return self

    def predict(self, X):
        check_is_fitted(self, "feature_")
        X = self._check_predict_X(X, allow_sparse=False)
        return self.sign_ * X[:, self.feature_]


def _data(seed=0, m=60, n=4):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, n))
    groups = np.repeat(np.arange(6), m // 6)
    y = np.clip(np.round(X[:, 2] + 0.3 * rng.normal(size=m)) + 2, 0, 4)  # grades 0..4
    return X, y, groups


def test_the_learner_is_registered_and_exported_to_the_lists():
    assert ESTIMATORS["BestFeatureRanker"] is BestFeatureRanker
    assert fastrank._persist._estimator_classes()["BestFeatureRanker"] is BestFeatureRanker
    assert cli._estimators()["BestFeatureRanker"] is BestFeatureRanker


def test_a_second_class_under_a_taken_name_is_refused():
    with pytest.raises(ValueError, match="already registered"):
        fastrank.register_estimator(type("RankRLS", (Ranker,), {}))


def test_score_with_groups_and_sample_weight_is_the_oracle():
    X, y, groups = _data()
    est = BestFeatureRanker().fit(X, y, groups)
    assert est.feature_ == 2 and est.sign_ == 1.0
    w = np.linspace(0.5, 2.0, y.size)
    pred = X[:, 2]
    # oracle: the pairs inside each group built explicitly, pair weight w_i w_j, ties half an error
    assert est.score(X, y, groups, sample_weight=w) == pytest.approx(1.0 - pairwise_error(y, pred, groups, w), rel=1e-12)
    with pytest.warns(fastrank.exceptions.MissingGroupsWarning, match="fitted on 6 query groups"):  # without groups
        assert est.score(X, y) == pytest.approx(1.0 - pairwise_disagreement(y, pred), rel=1e-12)


def test_parameters_are_checked_by_the_shared_constraints():
    X, y, _ = _data()
    for bad in (0, 2**63, True, 1.5):
        with pytest.raises(ValueError, match="max_features"):
            BestFeatureRanker(max_features=bad).fit(X, y)
    with pytest.raises(ValueError, match="4 features"):
        BestFeatureRanker().fit(X, y).predict(X[:, :3])


def test_model_files_round_trip(tmp_path):
    X, y, groups = _data(1)
    est = BestFeatureRanker(max_features=3).fit(X, y, groups)
    path = tmp_path / "best.frk"
    fastrank.save(est, path)
    back = fastrank.load(path)
    assert type(back) is BestFeatureRanker and back.get_params() == est.get_params()
    np.testing.assert_array_equal(back.predict(X), est.predict(X))


def test_the_command_line_trains_and_evaluates_it(tmp_path, capsys):
    X, y, groups = _data(2)
    data = tmp_path / "train.txt"
    dump_svmlight_file(X, y, str(data), query_id=groups, zero_based=False)
    model = tmp_path / "model.frk"
    assert cli.main(["train", "--model", "BestFeatureRanker", "--param", "max_features=4", str(data), str(model)]) \
        in (0, None)
    est = fastrank.load(model)
    assert type(est) is BestFeatureRanker and est.feature_ == 2
    capsys.readouterr()
    assert cli.main(["evaluate", "--model", str(model), "-m", "ndcg@5", str(data)]) in (0, None)
    assert "ndcg" in capsys.readouterr().out.lower()


def test_the_measure_scorer_scores_it():
    X, y, groups = _data(3)
    est = BestFeatureRanker().fit(X, y, groups)
    scorer = metrics.make_ranking_scorer("ndcg", k=5)
    assert scorer(est, X, y, groups) == pytest.approx(metrics.ndcg(y, est.predict(X), groups, k=5), rel=1e-12)


@pytest.mark.parametrize("make", [
    lambda: fastrank.RankSVM(max_iter=2**63), lambda: fastrank.RankBoost(n_estimators=2**63),
    lambda: fastrank.SVRank(max_iter=2**31), lambda: fastrank.OAPBPM(n_estimators=2**40),
    lambda: fastrank.RankBoost(n_thresholds=2**63), lambda: fastrank.PRank(n_epochs=2**63),
    lambda: fastrank.RankRLS(solver="cg", max_iter=2**63), lambda: fastrank.OnlineMPRank(max_iter=2**63),
])
def test_integers_beyond_the_core_are_refused_by_name(make):
    X, y, _ = _data()
    est = make()
    name = next(k for k, v in est.get_params().items() if isinstance(v, int) and not isinstance(v, bool)
                and v >= 2**31)
    with pytest.raises(ValueError, match=f"'{name}' parameter of {type(est).__name__}.*2147483647"):
        est.fit(X, np.round(y).astype(int) if type(est).__name__ == "PRank" else y)
