"""Messages name the argument at fault, not y_true, the kernel matrix or the learning rate: err_at_k's max_grade,
OnlineMPRank's C and an overflowing centred kernel, kernel_kappa's coef0 or kernel matrix, greedy_order's complex
scores; and RankSVM and SVRank stopped by rounding or without a certificate say so, never claiming max_iter or
convergence; a call with wrong arguments names the public class, not the private base defining the method."""

import re
import warnings

import numpy as np
import pytest

from fastrank import OnlineMPRank
from fastrank.bounds import kernel_kappa
from fastrank.metrics import err_at_k


def test_err_at_k_names_max_grade_when_it_is_too_large():
    # grades 0 and 1 are fine; 2^2000 overflows: the message said "rescale y_true"
    with pytest.raises(ValueError, match=r"max_grade=2000 is too large for the gain 2\^g - 1 \(at most 1000\)"):
        err_at_k([0.0, 1.0], [1.0, 2.0], max_grade=2000)
    with pytest.raises(ValueError, match="grades too large for the gain 2\\^g - 1; rescale y_true"):
        err_at_k([0.0, 1001.0], [1.0, 2.0])


@pytest.mark.parametrize("params", [{"C": 1e-320}, {"C": 2.3e-308, "algorithm": "gradient"},
                                    {"C": 1e-320, "eta": 0.01}])
def test_online_mprank_names_a_too_small_C(params):
    # m / C overflows: the automatic step was 0 ("its entries are too large ... rescale X"), a given eta diverged
    # ("use a smaller learning rate eta")
    X = np.random.RandomState(0).rand(6, 2)
    est = OnlineMPRank(**params)
    with pytest.raises(ValueError, match=r"C=.* is too small for 6 points \(m/C overflows float64\); use a larger C"):
        est.fit(X, np.arange(6.0))
    assert not hasattr(est, "dual_coef_")


def test_online_mprank_names_a_too_large_C():
    # (2C/m) sum yt^2 = 2e308 / 6 * 17.5 overflows: was "on-line MPRank diverged; use a smaller learning rate eta"
    X = np.random.RandomState(0).rand(6, 2)
    with pytest.raises(ValueError, match=r"C=1e\+308 is too large for these targets .* use a smaller C or rescale y"):
        OnlineMPRank(C=1e308).fit(X, np.arange(6.0))
    # just below: the fixed point of eq. 13, a = (Kt + m/(2C) I)^-1 yt, with Kt = 0 (X = 0): a = (2C/m) yt
    est = OnlineMPRank(C=1e306, algorithm="gradient").fit(np.zeros((6, 2)), np.arange(6.0))
    np.testing.assert_allclose(est.dual_coef_, 2e306 / 6 * (np.arange(6.0) - 2.5), rtol=1e-12)


def test_kernel_kappa_negative_diagonal_says_what_to_change():
    X = np.random.RandomState(0).rand(4, 2)
    # (x.x / 2 - 5)^3 < 0: was "the kernel has negative diagonal values", naming neither X nor coef0
    with pytest.raises(ValueError, match=r"K\(x, x\) < 0 for some rows of X: .*; use coef0 >= 0"):
        kernel_kappa(X, "poly", degree=3, coef0=-5.0)
    with pytest.raises(ValueError, match=r"K\(x, x\) < 0 .*; pass a positive semi-definite kernel matrix"):
        kernel_kappa(-(X @ X.T), "precomputed")


def _huge_kernel():
    v = 1.2e154  # K entries 1.44e308: finite, but K + K.T and the centring overflow
    X = np.array([[v], [-v], [v], [0.0]])
    return X, X @ X.T


def test_precomputed_kernel_near_the_float64_limit_is_symmetrised_without_overflow():
    # (K + K.T) / 2 overflowed to inf (numpy's "overflow encountered in add"): kappa was inf, not sqrt(max K_ii)
    _, K = _huge_kernel()
    assert kernel_kappa(K, "precomputed") == np.sqrt(np.max(np.diag(K)))
    asym = np.array([[0.0, 1e308], [-1e308, 0.0]])
    with pytest.raises(ValueError, match=r"must be symmetric \(largest \|K - K.T\| = inf"):
        kernel_kappa(asym, "precomputed")


@pytest.mark.parametrize("kernel", ["linear", "precomputed"])
@pytest.mark.parametrize("algorithm", ["sequential", "gradient"])
def test_online_mprank_refuses_an_overflowing_centred_kernel_by_name(kernel, algorithm):
    # was numpy's "overflow encountered in subtract" / "in add", then a step-size message quoting |Kt| = nan
    X, K = _huge_kernel()
    with pytest.raises(ValueError, match=r"centred kernel matrix overflows float64 \(largest \|K\| = 1.44e\+308\); "
                                         "rescale X or the kernel"):
        OnlineMPRank(kernel=kernel, algorithm=algorithm).fit(K if kernel == "precomputed" else X, np.arange(4.0))


class _ComplexScores:
    def predict(self, X):
        return np.array([1.0 + 5.0j, 2.0 + 0.0j])


def test_greedy_order_refuses_complex_scores():
    # was numpy's ComplexWarning, then the order of the real parts (the imaginary parts silently dropped)
    from fastrank import greedy_order

    with pytest.raises(ValueError, match=r"Complex data not supported: the ranker's predict\(X\) has dtype complex128"):
        greedy_order(_ComplexScores(), [[1.0], [2.0]])


def test_ranksvm_stopped_by_rounding_does_not_claim_max_iter():
    # a kernel near 1e200: the first Newton step decreases nothing (t = 0); the warning said "stopped after
    # max_iter=1000 Newton iterations ... increase max_iter" although one iteration ran
    from fastrank import RankSVM
    from fastrank.exceptions import ConvergenceWarning

    X = np.random.RandomState(0).randn(6, 2)
    with pytest.warns(ConvergenceWarning) as record:
        est = RankSVM(kernel="precomputed").fit(X @ X.T * 1e200, np.arange(6.0))
    message = str(record[0].message)
    assert f"stopped after {est.n_iter_} Newton iterations: no step decreases the objective" in message
    assert "max_iter" not in message and est.n_iter_ < 1000 and not est.converged_


@pytest.mark.parametrize("kernel, scale, C", [("linear", 1.0, 1e20), ("linear", 1.0, 1e30),
                                              ("precomputed", 2.0**300, 1.0)])
def test_svrank_cutting_planes_without_a_certificate_warn(kernel, scale, C):
    # C * max|X|^2 near 1e18 and beyond: the cutting planes returned h = 0 (or a model 3% off) as converged, silently,
    # with a "lower bound" above the objective
    from fastrank import SVRank
    from fastrank.exceptions import ConvergenceWarning

    X, y = np.random.RandomState(0).randn(6, 2), np.arange(6.0)
    data = X @ X.T * scale if kernel == "precomputed" else X
    # on centred columns the linear model comes near the optimum (about [-2.2, -0.77]) but is not certified: it
    # loses the certificate or stops at max_iter; either way the fit is not reported as converged
    lost_or_stopped = "SVRank('s cutting planes lost their certificate| stopped at max_iter)"
    with pytest.warns(ConvergenceWarning, match=lost_or_stopped):
        est = SVRank(C=C, epsilon=0.1, kernel=kernel).fit(data, y)
    assert not est.converged_


def test_ranksvm_names_what_makes_its_capped_C():
    # the hinge of margins y_i - y_j on targets near 1e-40 solves at C / 2^-132: the warning gave that C as the
    # user's and blamed X and C only
    from fastrank import RankSVM
    from fastrank.exceptions import ConvergenceWarning
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(30, 3)), rng.normal(size=30)
    cases = [(lambda: RankSVM(C=1e30).fit(X, y), r"\^2 exceeds 1e\+20: .* Standardize X or use a smaller C\.$"),
             (lambda: RankSVM(loss="hinge", margin="difference").fit(X, y * 1e-40),
              r"\(C=1.0 over 3.67e-40, the scale of y: .* Standardize X and y or use a smaller C\.$"),
             (lambda: RankSVM().fit_preferences(X, [[0, 1], [2, 3]], weights=[1e30, 1.0]),
              r"\(C=1.0 times 1.27e\+30, the weights' scale\) .* Standardize X and the weights or use a smaller C")]
    for fit, message in cases:
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            fit()
        capped = [str(w.message) for w in record if issubclass(w.category, ConvergenceWarning) and "^2" in
                  str(w.message)]
        assert len(capped) == 1 and re.search(message, capped[0]), capped


def test_mprank_refuses_a_C_whose_alpha_leaves_float64s_range():
    # C=1e-300 was accepted (alpha = m^2 / (2 C) ~ 1e302: predictions near 1e-300), C=1e308 refused as if coefficients
    # underflowed (a large C is a small alpha)
    import fastrank
    from fastrank import model_selection as ms
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(24, 3)), rng.normal(size=24)
    with pytest.raises(ValueError, match=r"C=1e\+308 is too large: C times the loss overflows float64"):
        fastrank.MPRank(C=1e308).fit(X, y)
    too_small = r"C=1e-300 is too small for (24|23|22) rows: MPRank is RankRLS at alpha = m\^2 / \(2 C\) = "
    for fit in (lambda: fastrank.MPRank(C=1e-300).fit(X, y), lambda: fastrank.MPRankCV(Cs=[1.0, 1e-300]).fit(X, y),
                lambda: ms.leave_pair_out(fastrank.MPRank(C=1e-300), X, y),
                lambda: ms.holdout_predictions(fastrank.MPRank(C=1e-300), X, y, [[0, 1]])):
        with pytest.raises(ValueError, match=too_small):
            fit()
    fastrank.MPRank(C=1e-295).fit(X, y)  # alpha 2.9e297: in range


def test_mprank_names_C_where_its_system_breaks_down():
    """MPRank has no alpha: its breakdown says alpha = m^2 / (2 C) and its ill-conditioning advice is a smaller C;
    MPRankCV's hold-out warnings name the value of C."""
    import fastrank
    from fastrank.exceptions import IllConditionedWarning, LinAlgError
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(20, 3)), rng.normal(size=20)
    with pytest.raises(LinAlgError, match=r"MPRank\(C=1e\+20\) solves RankRLS's system at alpha = m\^2 / \(2 C\) = "
                                          r"2e-18 \(m = 20\): alpha falls as C grows"):
        fastrank.MPRank(C=1e20, kernel="rbf").fit(X, y)
    with pytest.warns(IllConditionedWarning, match=r"MPRank.fit: .*or decrease C\.$"):
        fastrank.MPRank(C=1e14, kernel="rbf").fit(X, y)
    with pytest.warns(IllConditionedWarning, match=r"RankRLS.fit: .*or increase alpha\.$"):
        fastrank.RankRLS(alpha=2e-14 * 2e14 / 1e14 / 2, kernel="rbf").fit(X, y)
    with pytest.warns(IllConditionedWarning, match=r"^C=1e-12: hold-out .*alpha falls as C grows\)$"):
        fastrank.MPRankCV(Cs=[1e-12, 1.0], kernel="rbf").fit(X, y)


def test_searches_name_themselves_and_bad_ids_and_seeds_are_named():
    import fastrank
    from fastrank.dask import DaskRankRLS
    from sklearn.utils._param_validation import InvalidParameterError
    rng = np.random.default_rng(0)
    X, y, g = rng.normal(size=(20, 3)), rng.normal(size=20), rng.integers(0, 3, 20)
    with pytest.raises(InvalidParameterError, match="The 'group_weighting' parameter of RankRLSCV must be"):
        fastrank.RankRLSCV(group_weighting="x").fit(X, y, g)
    with pytest.raises(ValueError, match=r"random_state \(the seed drawing basis_vectors rows\) must be None, an "
                                         r"int in \[0, 2\*\*32 - 1\] or a numpy.random.RandomState, got 'x'"):
        DaskRankRLS(kernel="rbf", basis_vectors=4, random_state="x").fit(X, y)
    mixed = np.array(["a"] + list(g[1:]), dtype=object)
    with pytest.raises(TypeError, match=r"group ids must be mutually comparable, all numbers or all strings; got the "
                                        r"types \['int64', 'str'\]: give one type"):
        fastrank.RankRLS().fit(X, y, mixed)


def test_binary_cost_refuses_magnitudes_it_would_ignore():
    import fastrank
    from fastrank.model_selection import preference_holdout_predictions
    X = np.random.default_rng(0).normal(size=(20, 3))
    pairs, g = [[0, 1], [2, 3], [4, 5]], [10.0, 0.1, 5.0]
    for call in (lambda: fastrank.RankRLS().fit_preferences(X, pairs, magnitudes=g, cost="binary"),
                 lambda: preference_holdout_predictions(fastrank.RankRLS(), X, pairs, [[0]], magnitudes=g,
                                                        cost="binary")):
        with pytest.raises(ValueError, match=r"cost='binary' \(eq. 20\) .* would ignore the magnitudes"):
            call()
    fastrank.RankRLS().fit_preferences(X, pairs, magnitudes=g)  # cost="magnitude" by default


def test_hostile_option_values_are_refused_by_name(tmp_path):
    # an array kernel met numpy's "truth value ... is ambiguous"; complex labels met a bare float() TypeError; the
    # strings "no" for return_pairs and return_metadata were taken as True
    import fastrank
    X, y = np.random.RandomState(0).randn(8, 3), np.array([0, 1, 2, 1, 0, 2, 1, 0])
    for make in (fastrank.RankRLS, fastrank.PRank):
        with pytest.raises(ValueError, match="Unknown kernel array"):
            make(kernel=np.array([0.5, 1.0])).fit(X, y)
    with pytest.raises(ValueError, match="y must hold ordered class labels.*complex128"):
        fastrank.PRank().fit(X, y + 1j)
    with pytest.raises(ValueError, match="return_pairs must be True or False, got 'no'"):
        fastrank.model_selection.leave_pair_out(fastrank.RankRLS(), X, y, return_pairs="no")
    fastrank.save(fastrank.RankRLS().fit(X, y), tmp_path / "m")
    with pytest.raises(ValueError, match="return_metadata must be True or False, got 'no'"):
        fastrank.load(tmp_path / "m", return_metadata="no")


def test_score_with_a_ragged_y_and_a_permutation_test_without_rows_name_the_argument():
    # numpy's "setting an array element with a sequence" and "zero-size array to reduction operation" reached users
    import fastrank
    from fastrank.model_selection import permutation_test_lpo
    X = np.random.RandomState(0).randn(6, 2)
    model = fastrank.RankRLS().fit(X, np.arange(6.0))
    with pytest.raises(ValueError, match="y must be a rectangular array of numbers"):
        model.score(X, [[1, 2], [3], [1], [1], [1], [1]])
    for m in (0, 2):
        with pytest.raises(ValueError, match=f"permutation_test_lpo needs at least 3 rows, got n_samples={m}"):
            permutation_test_lpo(fastrank.RankRLS(), X[:m], np.arange(float(m)))


@pytest.mark.parametrize("name, call, message", [
    ("PRank", lambda est, X, y: est.fit(X, y, np.zeros(len(y))), r"PRank\.fit\(X, y\): too many positional arguments"),
    ("PRankVP", lambda est, X, y: est.fit(X, y, groups=np.zeros(len(y))),
     r"PRankVP\.fit\(X, y\): got an unexpected keyword argument 'groups'"),
    ("OAPBPM", lambda est, X, y: est.partial_fit(X, y, groups=np.zeros(len(y))),
     r"OAPBPM\.partial_fit\(X, y, classes=None\): got an unexpected keyword argument 'groups'"),
    ("WidrowHoff", lambda est, X, y: est.fit(X), r"WidrowHoff\.fit\(X, y\): missing a required argument: 'y'"),
    ("RankRLS", lambda est, X, y: est.fit(X, y).predict(), r"RankRLS\.predict\(X\): missing a required argument"),
])
def test_a_wrong_call_names_the_public_class_and_its_parameters(name, call, message):
    # methods inherited from a private base: Python named "_OnlineOrdinal.fit" and "_RankRLSBase.predict"
    import fastrank
    X, y = np.random.RandomState(0).rand(12, 3), np.arange(12) % 3
    est = getattr(fastrank, name)()
    with pytest.raises(TypeError, match=message) as caught:
        call(est, X, y)
    assert not re.search(r"(^|\.)_", str(caught.value).split("(")[0])
    assert name == "RankRLS" or not hasattr(est, "classes_")
