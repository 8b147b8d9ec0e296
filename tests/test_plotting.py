"""Plot displays render headless (Agg) with the expected elements."""

import numpy as np
import pytest

mpl = pytest.importorskip("matplotlib")
mpl.use("Agg", force=True)
import matplotlib.pyplot as plt  # noqa: E402

import fastrank  # noqa: E402
from fastrank.datasets import load_lambdarank  # noqa: E402
from fastrank.plotting import CVCurveDisplay, PermutationTestDisplay, RankLossCurveDisplay  # noqa: E402


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def data():
    d = load_lambdarank()
    keep = d.groups_train < 15
    return d.X_train[keep][:, :30], d.y_train[keep], d.groups_train[keep]


def test_cv_curve_from_estimator(data, tmp_path):
    X, y, g = data
    cv = fastrank.RankRLSCV(alphas=np.logspace(-2, 3, 6), cv="lgo").fit(X, y, g)
    disp = CVCurveDisplay.from_estimator(cv)
    assert disp.ax_.get_xscale() == "log"
    assert "alpha" in disp.ax_.get_xlabel() and "pairwise accuracy" in disp.ax_.get_ylabel()
    assert np.array_equal(disp.line_.get_xdata(), cv.cv_results_["alphas"])
    assert np.array_equal(disp.line_.get_ydata(), cv.cv_results_["scores"])
    assert disp.best_line_.get_xdata()[0] == cv.alpha_
    assert "leave-query-out" in disp.ax_.get_title()
    assert disp.figure_ is disp.ax_.figure
    disp.figure_.savefig(tmp_path / "cv.png")
    assert (tmp_path / "cv.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(ValueError, match="fitted RankRLSCV"):
        CVCurveDisplay.from_estimator(fastrank.RankRLSCV())


def test_rank_loss_curve_overlay(data):
    X, y, _ = data
    a = fastrank.OAPBPM(n_estimators=5, random_state=0).fit(X, y)
    b = fastrank.PRank().fit(X, y)
    d1 = RankLossCurveDisplay.from_estimator(a)
    d2 = RankLossCurveDisplay.from_estimator(b, ax=d1.ax_)
    assert d2.ax_ is d1.ax_ and len(d1.ax_.get_lines()) == 2
    assert np.array_equal(d1.line_.get_ydata(), a.rank_loss_curve())
    assert np.array_equal(d1.line_.get_xdata(), np.arange(1, X.shape[0] + 1))
    assert "rank loss" in d1.ax_.get_ylabel() and "examples" in d1.ax_.get_xlabel()
    assert [t.get_text() for t in d1.ax_.get_legend().get_texts()] == ["OAPBPM", "PRank"]
    with pytest.raises(TypeError, match="rank_loss_curve"):
        RankLossCurveDisplay.from_estimator(fastrank.RankRLS())


def test_permutation_test_display(data):
    from fastrank.model_selection import permutation_test_lpo

    X, y, g = data
    score, perm, p = permutation_test_lpo(fastrank.RankRLS(alpha=10.0), X[:80], y[:80], n_permutations=30,
                                          random_state=0)
    disp = PermutationTestDisplay.from_result(score, perm, p, bins=12)
    assert len(disp.bars_) == 12
    assert sum(b.get_height() for b in disp.bars_) == 30
    assert disp.score_line_.get_xdata()[0] == score
    assert f"p = {p:.3g}" in disp.ax_.get_legend().get_texts()[1].get_text()
    assert disp.ax_.get_ylabel() == "permutations"


def test_demo_plot_writes_png(tmp_path):
    from fastrank._demo import write_cv_plot

    alphas = np.logspace(-2, 4, 31)
    errors = 0.3 + 0.01 * (np.log10(alphas) - 1.0) ** 2
    disp = write_cv_plot({"model": "RankRLS Gaussian (dual)", "alpha": 10.0, "validation_curve": (alphas, errors)},
                         tmp_path / "demo.png")
    assert (tmp_path / "demo.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert disp.best_line_.get_xdata()[0] == 10.0 and "disagreement" in disp.ax_.get_ylabel()


def test_cli_cv_plot(tmp_path, data, capsys):
    from sklearn.datasets import dump_svmlight_file

    from fastrank import cli

    X, y, g = data
    f = tmp_path / "t.txt"
    dump_svmlight_file(X, y, str(f), query_id=g)
    assert cli.main(["cv", "--alphas", "0.1,1,10", "--plot", str(tmp_path / "cv.png"), str(f)]) == 0
    assert (tmp_path / "cv.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize("kwargs, message", [
    ({"permutation_scores": [-1e308, 1e308]}, r"permutation_scores span a range beyond float64"),
    ({"bins": [0.0, 0.1, 0.05]}, r"bins edges must be at least 2 finite, strictly increasing numbers"),
    ({"bins": [0.0, np.inf]}, r"bins edges must be at least 2 finite"),
    ({"bins": "foo"}, r"bins must be a number of bars, one of \('auto'"),
])
def test_permutation_display_names_inputs_numpy_would_refuse_inside_plot(kwargs, message):
    # the constructor accepted them and plot() raised numpy's "Too many bins for data range" / "`bins` must increase
    # monotonically" with RuntimeWarnings
    kwargs = {"permutation_scores": [0.4, 0.5, 0.6], **kwargs}
    with pytest.raises(ValueError, match=message):
        PermutationTestDisplay(0.5, pvalue=0.5, **kwargs)


def test_permutation_display_draws_scores_that_differ_by_rounding_or_cluster_beside_an_outlier():
    # numpy's "Too many bins for data range" from plot() for scores equal but for their last bit, and for bins="fd"
    # on a tight cluster beside an outlier a MemoryError (1.4 TiB of edges)
    display = PermutationTestDisplay(0.7, [0.6, 0.6000000000000001, 0.6], 0.1).plot()
    assert len(display.bars_) == 1 and sum(b.get_height() for b in display.bars_) == 3
    scores = np.r_[0.5 + 1e-13 * np.arange(99), 0.9]
    display = PermutationTestDisplay(0.7, scores, 0.05, bins="fd").plot()
    assert len(display.bars_) == 1000 and sum(b.get_height() for b in display.bars_) == 100
    plt.close("all")


@pytest.mark.parametrize("bins, bars", [(None, 10), ("sturges", 3), ([0.3, 0.5, 0.7], 2), (4, 4)])
def test_permutation_display_takes_every_documented_bins(bins, bars):
    display = PermutationTestDisplay(0.5, [0.4, 0.5, 0.6], 0.5, bins=bins).plot()
    assert len(display.bars_) == bars
    plt.close("all")
