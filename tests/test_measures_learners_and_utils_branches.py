"""Branches of metrics, bounds, plotting, the greedy ordering, RankBoost, RankSVM, SVRank, the on-line learners, utils
and the shared validation, each reached through a public entry point and checked against the definition (explicit
pairs, explicit queries, the normal equations of the active pairs) or against its exact message."""

import re
import sys
from decimal import Decimal

import numpy as np
import pytest
from sklearn.model_selection import KFold, cross_validate

from fastrank import (OAPBPM, OnlineMPRank, PRank, RankBoost, RankRLS, RankRLSCV, RankSVM, SVRank, greedy_order,
                      metrics, model_selection, utils)
from fastrank.exceptions import ConstantModelWarning
from fastrank.bounds import agarwal_niyogi_score_stability_bound, empirical_term, kernel_kappa
from fastrank.plotting import CVCurveDisplay, PermutationTestDisplay, RankLossCurveDisplay
from fastrank._rankboost import rankboost_path

mpl = pytest.importorskip("matplotlib")
mpl.use("Agg", force=True)
import matplotlib.pyplot as plt  # noqa: E402


def _pairwise_accuracy(y, f):
    """1 - disagreement over the explicit pairs y_i > y_j, a score tie half an error."""
    right = total = 0.0
    for i in range(len(y)):
        for j in range(len(y)):
            if y[i] > y[j]:
                total += 1
                right += 1.0 if f[i] > f[j] else 0.5 if f[i] == f[j] else 0.0
    return right / total


# -- metrics


def test_scorer_of_a_callable_without_a_signature_refuses_groups():
    # inspect.signature(max) raises ValueError: a measure whose parameters cannot be read takes no groups
    with pytest.raises(ValueError, match="'max' does not take groups"):
        metrics.make_ranking_scorer(max).score_predictions([0.0, 1.0], [1.0, 2.0], [0, 0])


def test_the_former_ties_option_names_its_values():
    with pytest.warns(FutureWarning, match=r"ties=\.\.\.\) is renamed tied_scores"), \
            pytest.raises(ValueError, match="ties must be 'error' or 'half', got 'x'"):
        metrics.pairwise_disagreement([0.0, 1.0], [1.0, 2.0], ties="x")


def test_measure_argument_messages():
    y, f = [0.0, 1.0, 2.0], [0.1, 0.5, 0.3]
    with pytest.raises(ValueError, match="sample_weight must be >= 0"):
        metrics.pairwise_disagreement(y, f, sample_weight=[1.0, -1.0, 1.0])
    with pytest.raises(ValueError, match="y_true too large for exponential gain 2\\^y - 1; use gain='linear'"):
        metrics.ndcg([0.0, 1001.0], [1.0, 2.0])
    with pytest.raises(ValueError, match=r"y_true must be 1-D, got shape \(1, 2\)"):
        metrics.mean_rank_loss([[1, 2]], [[1, 2]])
    with pytest.raises(ValueError, match="y_true is empty"):
        metrics.mean_rank_loss([], [])
    with pytest.raises(ValueError, match="classes must be a non-empty 1-D sequence"):
        metrics.mean_rank_loss([1, 2], [1, 2], scale="positions", classes=[])
    with pytest.raises(ValueError, match="gamma is only used by loss='gamma'"):
        metrics.stability_ranking_loss(y, f, gamma=2.0)
    with pytest.raises(ValueError, match=r"y_true must be 1-D targets or an \(m, m\) preference matrix, got shape "
                                         r"\(2, 2, 2\)"):
        metrics.agree(np.zeros((2, 2, 2)), [1.0, 2.0])


def test_measure_table_lookups():
    with pytest.raises(ValueError, match="measure 'auc' takes no @k cutoff"):
        metrics.get_measure("auc").with_cutoff(3)
    # as get_measure("ndcg@0") refuses at once; accepted, they failed (or scored NaN in a search) only when used
    for k, shown in [(0, "ndcg@0"), (-1, "ndcg@-1"), (2.5, "ndcg@2.5"), ("3", "ndcg@'3'"), (True, "ndcg@True")]:
        with pytest.raises(ValueError, match=re.escape(f"measure {shown!r}: the cutoff after @ must be a positive "
                                                       "integer, e.g. ndcg@10")):
            metrics.get_measure("ndcg@5").with_cutoff(k)
    assert metrics.get_measure("ndcg").with_cutoff(np.int64(3)).kwargs == {"k": 3}
    ndcg3 = metrics.get_measure("ndcg@3")
    assert metrics.get_measure(ndcg3) is ndcg3
    with pytest.raises(TypeError, match="a measure name must be a string, got int"):
        metrics.get_measure(5)
    with pytest.raises(ValueError, match="response_method must be 'predict' or 'decision_function', got 'x'"):
        metrics.make_ranking_scorer("ndcg", response_method="x")
    with pytest.raises(TypeError, match="measure must be a measure name or a callable, got int"):
        metrics.make_ranking_scorer(5)


def test_footrule_from_the_table_without_groups_is_the_sum_of_rank_displacements():
    a = np.array([3.0, 1.0, 2.0, 5.0, 4.0])
    b = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    rank = lambda v: np.array([np.sum(v > x) + 1 for x in v])  # 1 = largest, no ties
    assert metrics.get_measure("spearman_footrule")(a, b) == np.abs(rank(a) - rank(b)).sum()


def test_scorer_from_a_measure_object_is_its_ndcg_at_3():
    rs = np.random.RandomState(0)
    X, y = rs.rand(8, 2), rs.randint(0, 3, 8).astype(float)
    est = RankRLS().fit(X, y)
    f = est.predict(X)
    gains = (2.0 ** y - 1.0)
    dcg = sum(gains[i] / np.log2(p + 2) for p, i in enumerate(np.argsort(-f)[:3]))
    ideal = sum(g / np.log2(p + 2) for p, g in enumerate(np.sort(gains)[::-1][:3]))
    scorer = metrics.make_ranking_scorer(metrics.get_measure("ndcg@3"))
    assert scorer(est, X, y) == pytest.approx(dcg / ideal, rel=1e-12)


def test_map_over_more_groups_than_uint16_codes():
    # 70,000 two-row queries, ids shuffled: AP = 1 when the relevant row scores higher, 1/2 when lower, 3/4 tied
    rs = np.random.RandomState(0)
    G = 70_000
    f = rs.randint(0, 3, (G, 2)).astype(float)
    order = rs.permutation(2 * G)
    ids = np.repeat(rs.permutation(G) * 3 - 5, 2)
    y = np.tile([1.0, 0.0], G)
    ap = np.where(f[:, 0] > f[:, 1], 1.0, np.where(f[:, 0] < f[:, 1], 0.5, 0.75))
    got = metrics.mean_average_precision(y[order], f.ravel()[order], ids[order])
    assert got == pytest.approx(ap.mean(), rel=1e-12)


def test_scorer_and_score_messages_for_routing_and_response():
    rs = np.random.RandomState(0)
    X, y = rs.rand(5, 2), np.array([0.0, 1.0, 2.0, 1.0, 0.0])
    est = RankRLS().fit(X, y)
    with pytest.raises(TypeError, match=r"got unexpected keyword arguments \['weights'\]; only groups"):
        metrics.make_ranking_scorer("auc")(est, X, y, weights=np.ones(5))
    with pytest.raises(ValueError, match="RankRLS has no decision_function method"):
        metrics.make_ranking_scorer("auc", response_method="decision_function")(est, X, y)
    with pytest.raises(ValueError, match=r"y must be 1-D for a single-output model, got shape \(5, 2\)"):
        metrics.score_estimator(est, X, np.c_[y, y])


def test_score_of_a_single_output_model_takes_a_column_vector_y():
    rs = np.random.RandomState(1)
    X, y = rs.rand(9, 3), rs.randint(0, 3, 9).astype(float)
    est = RankRLS().fit(X, y)
    expected = _pairwise_accuracy(y, est.predict(X))
    assert metrics.score_estimator(est, X, y[:, None]) == pytest.approx(expected, rel=1e-12)


def test_a_search_given_one_group_id_scores_without_the_missing_groups_warning():
    # groups reach the splitter only; a single id is no evidence of several queries (filterwarnings = error)
    rs = np.random.RandomState(2)
    X, y = rs.rand(12, 3), rs.rand(12)
    folds = list(KFold(2).split(X))
    res = cross_validate(RankRLS(), X, y, groups=np.zeros(12), cv=folds, scoring=metrics.make_ranking_scorer("auc"))
    for (train, test), score in zip(folds, res["test_score"]):
        f = RankRLS().fit(X[train], y[train]).predict(X[test])
        assert score == pytest.approx(_pairwise_accuracy(y[test], f), rel=1e-12)


# -- bounds


def test_bound_whose_terms_sum_beyond_float64_is_refused():
    # each term is finite (empirical 1.7e308, the confidence term ~8e307) but their sum is not
    with pytest.raises(ValueError, match=r"the bound exceeds the largest float64 \(about 1.8e308\) for m=2, lam=1.0"):
        agarwal_niyogi_score_stability_bound(2, 1.0, 1.0, 1e308, 0.5, empirical=1.7e308)


def test_empirical_term_messages():
    rs = np.random.RandomState(0)
    X, y = rs.rand(6, 2), np.arange(6.0)
    with pytest.raises(TypeError, match="estimator must be a fitted estimator with predict, got object"):
        empirical_term(object(), X, y)
    with pytest.raises(ValueError, match=r"needs one score per row and 1-D y \(a single output\)"):
        empirical_term(RankRLS().fit(X, np.c_[y, y]), X, y)


def test_kernel_kappa_of_a_precomputed_kernel_is_the_root_of_its_largest_diagonal_entry():
    X = np.random.RandomState(0).rand(5, 3) * [1.0, 2.0, 3.0]
    K = X @ X.T
    assert kernel_kappa(K, "precomputed") == pytest.approx(max(np.sqrt(x @ x) for x in X), rel=1e-12)


# -- plotting


def test_plots_need_matplotlib(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(ImportError, match="fastrank's plots need matplotlib: pip install matplotlib"):
        RankLossCurveDisplay([1.0, 0.5]).plot()


def test_displays_without_label_or_chosen_alpha():
    disp = RankLossCurveDisplay([1.0, 0.5, 0.25]).plot()  # no label: no legend
    assert disp.ax_.get_legend() is None
    np.testing.assert_array_equal(disp.line_.get_xydata(), [[1, 1.0], [2, 0.5], [3, 0.25]])
    disp = CVCurveDisplay([0.1, 1.0], [0.6, 0.7]).plot()
    assert disp.best_line_ is None
    assert [t.get_text() for t in disp.ax_.get_legend().get_texts()] == ["CV score"]
    plt.close("all")


def test_display_input_messages():
    with pytest.raises(ValueError, match=r"alphas and scores must be non-empty, 1-D and of the same length, got \(2,\) "
                                         r"and \(1,\)"):
        CVCurveDisplay([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match=r"curve must be a non-empty 1-D array \(estimator.rank_loss_curve\(\)\)"):
        RankLossCurveDisplay([])
    with pytest.raises(ValueError, match="permutation_scores is empty"):
        PermutationTestDisplay(0.5, [], 0.1)


# -- greedy ordering


class _FixedScores:
    def __init__(self, scores):
        self.scores = scores

    def predict(self, X):
        return self.scores


def test_greedy_order_refuses_scores_that_are_not_one_number_per_item():
    X = [[1.0], [2.0]]
    with pytest.raises(ValueError, match=r"the ranker's predict\(X\) must be real-valued numbers: 'a' \(str\) at row 0 "
                                         r"is not a number"):
        greedy_order(_FixedScores(np.array(["a", "b"])), X)
    with pytest.raises(ValueError, match="the ranker's scores contain NaN or infinity"):
        greedy_order(_FixedScores(np.array([1.0, np.nan])), X)
    rs = np.random.RandomState(0)
    Xr, y = rs.rand(6, 2), np.arange(6.0)
    with pytest.raises(ValueError, match=r"must return one score per item, got shape \(6, 2\)"):
        greedy_order(RankRLS().fit(Xr, np.c_[y, y]), Xr)


def test_greedy_order_of_no_items():
    assert greedy_order(np.zeros((0, 0))).shape == (0,)
    order, picked = greedy_order(lambda u, v: 0.5, n_items=0, return_scores=True)
    assert order.shape == picked.shape == (0,)


# -- RankBoost, RankSVM, SVRank


def test_rankboost_path_without_a_round_scores_the_constant_ranker():
    # constant features: no weak ranker has an edge, so every fold keeps 0 rounds and predicts a constant, whose
    # disagreement is 1/2 (every relevant pair tied)
    X, y = np.ones((6, 2)), np.arange(6.0)
    with pytest.warns(ConstantModelWarning):
        assert RankBoost().fit(X, y).n_estimators_ == 0
    with pytest.warns(ConstantModelWarning):  # every fold's model and the refit
        path = rankboost_path(X, y, 3, cv=2)
    np.testing.assert_array_equal(path.scores, 0.5)
    assert repr(path) == "RankBoostPath(best_n_estimators=1, measure='disagreement', n_grid=3, n_folds=2)"


@pytest.mark.parametrize("loss", ["squared_hinge", "hinge"])
def test_ranksvm_on_all_zero_features_is_the_zero_model(loss):
    # f = 0 for every w; the objective 1/2 |w|^2 + C sum_P l(1) is least at w = 0, with l(1) = 1 for both losses
    y = np.array([0.0, 1.0, 1.0, 2.0, 3.0])
    n_pairs = sum(y[i] > y[j] for i in range(5) for j in range(5))
    with pytest.warns(ConstantModelWarning, match="RankSVM scores every row alike"):
        est = RankSVM(C=2.0, loss=loss).fit(np.zeros((5, 3)), y)
    np.testing.assert_array_equal(est.coef_, 0.0)
    assert est.objective_ == 2.0 * n_pairs


def test_ranksvm_normalize_C_is_free_of_the_weights_scale():
    # C / |P| = 1e-30 / 2e300 underflowed and was refused; with normalize_C the weights' common scale cancels
    X = np.random.RandomState(0).rand(4, 2)
    big = RankSVM(C=1e-30, normalize_C=True).fit_preferences(X, [[0, 1], [2, 3]], [1e300, 1e300])
    unit = RankSVM(C=1e-30, normalize_C=True).fit_preferences(X, [[0, 1], [2, 3]], [1.0, 1.0])
    np.testing.assert_allclose(big.coef_, unit.coef_, rtol=1e-12)
    assert np.any(big.coef_ != 0)


def test_svrank_squared_newton_with_backtracking_matches_the_active_pair_normal_equations():
    # A case whose first Newton step fails the Armijo test (the line search halves it).  At the solution the pairs
    # outside the tube |u_ij| > eps, u_ij = (f_j - f_i) - (y_j - y_i), are fixed (margins 0.03 and more), and the
    # gradient of ||w||^2 + (C/m^2) sum_ij (u_ij - s_ij eps)^2 over them vanishes:
    # (I + c sum d d^T) w = c sum (dy + s eps) d, d = x_j - x_i, c = C/m^2.
    X = np.array([[10.414396000425832, 2.623606174191324], [7.650100736542349, -1.09049981351614],
                  [-10.506887530167484, -7.723776001798058]])
    y = np.array([-0.01372255467201135, -1.5583211050861117, -1.0314200160366627])
    C, eps, m = 1.0, 1.0, 3
    w = SVRank(C=C, epsilon=eps, loss="squared_epsilon_insensitive").fit(X, y).coef_
    r = X @ w - y
    A, b = np.eye(2), np.zeros(2)
    for i in range(m):
        for j in range(m):
            u = r[j] - r[i]
            if abs(u) > eps:
                d = X[j] - X[i]
                A += C / m**2 * np.outer(d, d)
                b += C / m**2 * (y[j] - y[i] + np.sign(u) * eps) * d
    np.testing.assert_allclose(w, np.linalg.solve(A, b), rtol=1e-10)


# -- on-line learners


def test_online_input_messages():
    X, y = np.random.RandomState(0).rand(6, 2), np.array([1, 2, 3, 1, 2, 3])
    with pytest.raises(ValueError, match="X must be an array, got None"):
        PRank().fit(None, y)
    with pytest.raises(ValueError, match=r"y must be 1-D, got shape \(6, 2\)"):
        PRank().fit(X, np.c_[y, y])
    with pytest.raises(ValueError, match=r"precomputed kernel: fit needs the square \(m, m\) kernel matrix, got "
                                         r"\(6, 2\)"):
        PRank(kernel="precomputed").fit(X, y)
    with pytest.raises(ValueError, match="member blocks need the linear kernel"):
        OAPBPM(kernel="rbf").member_blocks(2, [1, 2, 3], 2)


def test_partial_fit_with_labels_not_comparable_to_classes_leaves_the_model_unchanged():
    X = np.random.RandomState(0).rand(6, 2)
    est = PRank().partial_fit(X, list("abcabc"))
    before = (est.coef_.copy(), est.thresholds_.copy(), est.n_seen_)
    with pytest.raises(ValueError, match=r"^y must be orderable labels of one kind \(all numbers or all strings\): "
                                         r"Decimal\('1'\) \(Decimal\) at row 0 does not compare with classes_ "
                                         r"\['a', 'b', 'c'\]; give labels of one type$"):
        est.partial_fit(X, np.array([Decimal(v) for v in [1, 2, 3, 1, 2, 3]], dtype=object))
    np.testing.assert_array_equal(est.coef_, before[0])
    np.testing.assert_array_equal(est.thresholds_, before[1])
    assert est.n_seen_ == before[2]


def test_prank_weights_are_its_coefficients():
    X, y = np.random.RandomState(0).rand(6, 2), np.array([1, 2, 3, 1, 2, 3])
    est = PRank().fit(X, y)
    assert est.weights_ is est.coef_


@pytest.mark.parametrize("algorithm", ["sequential", "gradient"])
def test_online_mprank_on_a_zero_kernel_is_the_ridge_solution(algorithm):
    # K = 0: the power iteration stops at once; the fixed point of eq. 13, (Kt + m/(2C) I) a = yt, is a = (2C/m) yt
    y = np.arange(6.0)
    est = OnlineMPRank(algorithm=algorithm, C=2.0).fit(np.zeros((6, 2)), y)
    np.testing.assert_allclose(est.dual_coef_, 2 * 2.0 / 6 * (y - y.mean()), rtol=1e-12)


def test_online_mprank_partial_fit_messages():
    X, y = np.random.RandomState(0).rand(6, 2), np.arange(6.0)
    with pytest.raises(ValueError, match="partial_fit must get groups exactly when the model was fitted with groups"):
        OnlineMPRank().fit(X, y).partial_fit(X, y, groups=[0, 0, 0, 1, 1, 1])
    with pytest.raises(ValueError, match="partial_fit is not available with a precomputed kernel"):
        OnlineMPRank(kernel="precomputed").fit(X @ X.T, y).partial_fit(X @ X.T, y)


def test_online_mprank_step_size_message_for_an_overflowing_spectrum():
    # the centred kernel is finite (largest entry 7.2e307) but 2.2 lambda_max overflows: no step size
    v = 1.2e154
    X = np.array([[v], [-v], [v], [0.0]])
    with pytest.raises(ValueError, match=r"no usable step size \(eta=0.0\) for this kernel matrix"):
        OnlineMPRank(algorithm="gradient").fit(X, np.arange(4.0), groups=[0, 0, 1, 1])


# -- utils and the shared validation


def test_group_conversion_messages():
    with pytest.raises(ValueError, match=r"groups must be 1-D with one id per row, got shape \(1, 2\)"):
        utils.sizes_from_groups([[1, 2]])
    with pytest.raises(TypeError, match="sizes must be integers, got dtype bool"):
        utils.groups_from_sizes([True, True])


def test_shared_validation_messages():
    rs = np.random.RandomState(0)
    X, y = rs.rand(3, 2), np.array([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match=r"^X must be numeric: 'a' \(str\) at row 0, column 1 is not a number$"):
        RankRLS().fit(np.array([[1, "a"], [2, 3], [4, 5]], dtype=object), y)
    with pytest.raises(ValueError, match="y has no columns"):
        RankRLS().fit(X, np.zeros((3, 0)))
    with pytest.raises(ValueError, match=r"alphas must be a non-empty 1-D sequence of positive numbers, got shape "
                                         r"\(0,\)"):
        RankRLSCV(alphas=[]).fit(X, y)
    with pytest.raises(ValueError, match="n_jobs=1099511627776 is out of range; use -1 for every core"):
        metrics.ndcg([1.0, 2.0], [1.0, 2.0], n_jobs=2**40)
    with pytest.raises(ValueError, match="pair_predictions has no pairs"):
        model_selection.pairwise_disagreement(np.zeros((0, 2)), np.zeros((0, 2)))
    # empty integer ids: no min/max of an empty array, the count is what is wrong
    with pytest.raises(ValueError, match="groups has 0 entries but X has 3 rows; give one group id per row"):
        RankRLSCV().fit(X, y, groups=np.array([], dtype=np.int64))
