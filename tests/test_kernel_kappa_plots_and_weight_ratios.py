"""kernel_kappa, the plots and the weighted disagreement measures at the edges of their domains.

kernel_kappa with a polynomial kernel of non-integer degree whose diagonal gamma x.x + coef0 is negative: the
diagonal is undefined, and the error says so as RankRLS does for the same kernel -- not numpy's "invalid value"
RuntimeWarning (an error under filterwarnings) nor, with warnings off, a ValueError claiming that K(x, x) overflows.

CVCurveDisplay.from_estimator of a RankRLSCV with the default cv=None titles the plot by the scheme the fit chose,
leave-query-out (groups) or leave-pair-out (no groups), not "folds".

RankLossCurveDisplay.from_estimator of an OAP-BPM joined by from_members says that from_members keeps no on-line
losses, not "the estimator has seen no examples yet" although it has seen the whole stream.

pairwise_disagreement(sample_weight=w) depends only on the ratios of the weights (pair weight w_i w_j over their sum),
also for weights near 1e200, whose products overflow (numpy's overflow warning), and near 1e-200, whose products
underflow to 0 ("there is no pair to evaluate"); edge_disagreement keeps a tie's 1/2 error for weights of 5e-324
(not 0)."""

import warnings

import numpy as np
import pytest

import fastrank
from fastrank.bounds import kernel_kappa
from fastrank.metrics import edge_disagreement, pairwise_disagreement


@pytest.mark.parametrize("silence", [False, True])
def test_kernel_kappa_undefined_poly_diagonal_is_named(silence):
    X = np.ones((3, 2))  # gamma = 1/2: gamma x.x + coef0 = 1 - 10 < 0
    with warnings.catch_warnings():
        if silence:
            warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match="degree is not an integer") as info:
            kernel_kappa(X, "poly", degree=0.5, coef0=-10.0)
    assert "overflow" not in str(info.value)


def test_kernel_kappa_poly_diagonal_still_computed():
    X = np.array([[1.0, 2.0], [0.0, 1.0]])
    # an integer degree is defined for any sign; a non-integer one where the diagonal base is >= 0
    assert kernel_kappa(X, "poly", degree=2, coef0=-10.0) == np.sqrt(max((0.5 * 5 - 10) ** 2, (0.5 - 10) ** 2))
    assert kernel_kappa(X, "poly", degree=1.5, coef0=1.0) == np.sqrt((0.5 * 5 + 1) ** 1.5)


@pytest.mark.parametrize("grouped, title", [(True, "leave-query-out"), (False, "leave-pair-out")])
def test_cv_curve_title_names_the_scheme_cv_none_chose(grouped, title):
    pytest.importorskip("matplotlib")
    from matplotlib.figure import Figure

    from fastrank.plotting import CVCurveDisplay

    rng = np.random.default_rng(0)
    X = rng.normal(size=(24, 3))
    y = X[:, 0] + 0.1 * rng.normal(size=24)
    est = fastrank.RankRLSCV(alphas=[0.1, 1.0, 10.0]).fit(X, y, np.repeat(np.arange(4), 6) if grouped else None)
    disp = CVCurveDisplay.from_estimator(est, ax=Figure().subplots())
    assert disp.ax_.get_title() == f"exact cross-validation ({title})"


def test_rank_loss_curve_of_joined_ensemble_says_why_it_is_empty():
    from fastrank.plotting import RankLossCurveDisplay

    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(30, 3)), rng.integers(1, 4, 30)
    blocks = fastrank.OAPBPM(n_estimators=4, random_state=0).member_blocks(2, classes=[1, 2, 3], n_features=3)
    for b in blocks:
        b.partial_fit(X, y)
    joined = fastrank.OAPBPM.from_members(blocks)
    with pytest.raises(ValueError, match="from_members keeps no on-line losses") as info:
        RankLossCurveDisplay.from_estimator(joined)
    assert "seen no examples" not in str(info.value)


@pytest.mark.parametrize("scale", [1e200, 1e-200, 1e-320, 1e300])
def test_weighted_disagreement_depends_on_weight_ratios_only(scale):
    rng = np.random.default_rng(3)
    y, f, g = rng.integers(0, 3, 40).astype(float), rng.normal(size=40), np.repeat(np.arange(4), 10)
    k = rng.integers(1, 5, 40).astype(float)  # k * scale keeps the ratios exactly, also for a subnormal scale
    want = pairwise_disagreement(y, f, g, sample_weight=k)
    assert pairwise_disagreement(y, f, g, sample_weight=k * scale) == pytest.approx(want, rel=1e-14)


def test_edge_disagreement_subnormal_weights_keep_their_ratios():
    assert edge_disagreement([[0, 1]], [1.0, 1.0], weights=[5e-324]) == 0.5
    assert edge_disagreement([[0, 1], [1, 0]], [1.0, 2.0], weights=[5e-324, 1.5e-323]) == 0.25


def test_kernel_kappa_reads_the_diagonal_of_a_sparse_kernel_matrix():
    # it raised "X is a sparse matrix; this estimator needs dense input (... RankRLS takes sparse X with solver='cg')"
    import scipy.sparse as sp
    K = np.array([[4.0, 1.0], [1.0, 9.0]])
    assert kernel_kappa(sp.csr_matrix(K), "precomputed") == kernel_kappa(K, "precomputed") == 3.0
    with pytest.raises(ValueError, match=r"X must be the square kernel matrix for kernel='precomputed', got shape"):
        kernel_kappa(sp.csr_matrix(np.ones((2, 3))), "precomputed")
    with pytest.raises(ValueError, match=r"K\(x, x\) < 0 for some rows of X"):
        kernel_kappa(sp.csr_matrix(np.diag([-1.0, 2.0])), "precomputed")
