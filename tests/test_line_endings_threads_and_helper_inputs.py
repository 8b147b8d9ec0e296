"""Files with CR line ends read as numpy reads them; the thread budget follows the CPUs the process may use and the
caller's BLAS limit; the helpers' environment variables, ids and plot inputs are checked by name; warnings point at
the caller's line."""

import os
import warnings

import numpy as np
import pytest

import fastrank
from fastrank import _threads
from fastrank._memory import dense_memory_limit
from fastrank._svmlight import read_scores
from fastrank.datasets import load_svmlight
from fastrank.exceptions import MissingGroupsWarning
from fastrank.preprocessing import Log1pScaler, QueryNormalizer
from fastrank.utils import groups_from_qid, sizes_from_groups


def test_lone_carriage_returns_end_lines(tmp_path):
    cr, lf = tmp_path / "cr.sc", tmp_path / "lf.sc"
    cr.write_bytes(b"0.5\r1.5\r2.5\r")  # only the first score was read
    lf.write_bytes(b"0.5\n1.5\n2.5\n")
    np.testing.assert_array_equal(read_scores(cr), np.loadtxt(lf))
    data = tmp_path / "cr.txt"
    data.write_bytes(b"1 qid:1 1:1\r0 qid:1 1:2 # a comment\r2 qid:2 2:3\r")
    (tmp_path / "lf.txt").write_bytes(data.read_bytes().replace(b"\r", b"\n"))
    for got, want in zip(load_svmlight(data), load_svmlight(tmp_path / "lf.txt")):
        np.testing.assert_array_equal(getattr(got, "toarray", lambda: got)(), getattr(want, "toarray", lambda: want)())
    data.write_bytes(b"1 qid:1 1:1\r0 qid:1 x:2\r")
    with pytest.raises(ValueError, match=r"cr\.txt:2: "):  # the line of a lone-CR file is named
        load_svmlight(data)


@pytest.mark.parametrize("tail", [b"2 qid:2 1:1 # doc-a\r0 qid:2 2:7\n", b"2 qid:2 1:1\r0 qid:2 2:7\n",
                                  b"2 qid:2 1:1\r0 qid:2 2:7\r"], ids=["after-comment", "plain", "cr-only-end"])
def test_lone_carriage_returns_end_lines_anywhere_in_the_file(tmp_path, tail):
    # only the first 64 KiB were searched for a lone CR: later, the row after a CR-ended comment vanished silently and
    # a CR between two records was refused with the parser's "need more than 1 value to unpack"
    body = b"1 qid:1 1:1 2:2 3:3 4:4 5:5 6:6 7:7 8:8 9:9\n" * 2000  # 88 KB of LF lines
    (tmp_path / "cr.txt").write_bytes(body + tail)
    (tmp_path / "lf.txt").write_bytes(body + tail.replace(b"\r", b"\n"))
    got, want = load_svmlight(tmp_path / "cr.txt"), load_svmlight(tmp_path / "lf.txt")
    assert got[0].shape == (2002, 9)
    for a, b in zip(got, want):
        np.testing.assert_array_equal(getattr(a, "toarray", lambda: a)(), getattr(b, "toarray", lambda: b)())


@pytest.mark.parametrize("line, message", [
    (b"1_0 qid:1 1:5", r"target '1_0' is not a number"), (b"1 qid:1_2 1:5", r"query id 'qid:1_2' is not an integer"),
    (b"1 qid:1 1_0:5", r"feature index '1_0' in '1_0:5' is not an integer"),
    (b"1 qid:1 1:5_0", r"value of feature 1: '5_0' is not a number")])
def test_digit_separators_are_not_svmlight_numbers(tmp_path, line, message):
    # Python's int() and float() read "1_0" as 10, and so did both readers; an underscore in a comment stays fine
    data = tmp_path / "u.txt"
    data.write_bytes(b"0 qid:1 2:1 # doc_id 7\n" + line + b"\n")
    with pytest.raises(ValueError, match=rf"u\.txt:2: {message}"):
        load_svmlight(data)
    data.write_bytes(b"0 qid:1 2:1 # doc_id 7\n1 qid:1 1:5\n")
    assert load_svmlight(data)[1].tolist() == [0.0, 1.0]
    (tmp_path / "s.txt").write_bytes(b"1\n1_0\n")
    with pytest.raises(ValueError, match=r"s\.txt:2: score '1_0' is not a number"):
        read_scores(tmp_path / "s.txt")


def test_the_thread_budget_is_the_usable_cpus(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0}, raising=False)  # taskset -c 0
    assert _threads.cpu_budget() == 1 and fastrank._validation.check_n_jobs(None) == 1
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    monkeypatch.setenv("OMP_NUM_THREADS", "2")  # a joblib worker's share
    assert _threads.cpu_budget() == 2 and fastrank._validation.check_n_jobs(-1) == 2
    monkeypatch.setenv("OMP_NUM_THREADS", "x")
    assert _threads.cpu_budget() == 4
    monkeypatch.setenv("OMP_NUM_THREADS", "1,3")  # OpenMP's list form, one entry per nesting level: the outer one
    assert _threads.cpu_budget() == 1 and fastrank._validation.check_n_jobs(None) == 1
    monkeypatch.setenv("OMP_NUM_THREADS", " 3 , 1")
    assert _threads.cpu_budget() == 3


def test_a_region_never_raises_blas_above_the_callers_limit():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    if _threads.blas_controller() is None or _threads.cpu_budget() < 2:
        pytest.skip("needs threadpoolctl's BLAS control and two cores")
    seen = []
    with threadpoolctl.threadpool_limits(limits=1, user_api="blas"):
        with _threads.compute_region(2):
            seen = [d["num_threads"] for d in threadpoolctl.threadpool_info() if d["user_api"] == "blas"]
    assert seen and max(seen) == 1


@pytest.mark.parametrize("value, off", [("off", True), ("0", True), ("False", True), ("no", True), ("on", False),
                                        ("1", False), ("", False)])
def test_the_thread_policy_variable(monkeypatch, value, off):
    monkeypatch.setenv("FASTRANK_THREAD_POLICY", value)
    assert _threads._policy_off() is off


def test_an_unknown_thread_policy_is_refused(monkeypatch):
    monkeypatch.setenv("FASTRANK_THREAD_POLICY", "bogus")  # was read as "on", silently
    with pytest.raises(ValueError, match=r"FASTRANK_THREAD_POLICY='bogus': use off"):
        fastrank.RankRLS(kernel="rbf").fit(np.random.default_rng(0).normal(size=(20, 2)), np.arange(20.0))


@pytest.mark.parametrize("value, limit", [("0", None), ("00", None), ("0.0", None), ("0B", None), ("Infinity", None),
                                          ("512M", 512 * 2.0**20)])
def test_the_memory_limit_variable(monkeypatch, value, limit):
    monkeypatch.setenv("FASTRANK_MAX_DENSE_BYTES", value)
    assert dense_memory_limit() == limit


@pytest.mark.parametrize("value", ["nan", "1e400", "1e-3", "-5"])
def test_a_memory_limit_that_is_no_byte_count_is_refused(monkeypatch, value):
    monkeypatch.setenv("FASTRANK_MAX_DENSE_BYTES", value)
    with pytest.raises(ValueError, match="must be a finite byte count of at least 1"):
        dense_memory_limit()


@pytest.mark.parametrize("transformer", [QueryNormalizer(), Log1pScaler()])
def test_a_transformer_over_the_memory_limit_gives_its_own_advice(monkeypatch, transformer):
    import scipy.sparse as sp
    monkeypatch.setenv("FASTRANK_MAX_DENSE_BYTES", "1K")
    X = sp.random(100, 100, density=0.01, format="csr", random_state=0)
    with pytest.raises(MemoryError, match=rf"copy of the sparse X \({type(transformer).__name__}\).*"
                                          r"--normalize none") as info:
        transformer.fit_transform(X)
    assert "RankRLS" not in str(info.value)


def test_missing_groups_warning_points_at_the_callers_line():
    X = np.arange(8.0).reshape(4, 2)
    q = QueryNormalizer().fit(X, groups=[1, 1, 2, 2])
    with pytest.warns(MissingGroupsWarning) as record:
        q.transform(X)  # through numpy's errstate decorator and scikit-learn's set_output wrapper
    assert record[0].filename == __file__


def test_helper_ids_as_the_estimators_read_them():
    pd = pytest.importorskip("pandas")
    np.testing.assert_array_equal(sizes_from_groups(pd.Series([1, 2, 2], dtype=object)), [1, 2])  # numbers as objects
    for call, what in [(lambda: groups_from_qid(pd.Series(["a", None, "a"], dtype="string")), "qid"),
                       (lambda: sizes_from_groups(np.array(["2024-01-01", "NaT", "NaT"], dtype="datetime64[D]")),
                        "groups")]:
        with pytest.raises(ValueError, match=rf"{what} contains a missing group id \(.* at row 1\)"):
            call()


def test_cv_curve_display_refuses_bad_inputs_by_name():
    pytest.importorskip("matplotlib")
    import matplotlib
    matplotlib.use("Agg")
    from fastrank.plotting import CVCurveDisplay
    with pytest.raises(ValueError, match="alphas and scores must be non-empty"):
        CVCurveDisplay([], [])
    with pytest.raises(ValueError, match="scores contains NaN or infinity"):
        CVCurveDisplay([1, 10], [float("nan"), 1.0])
    with pytest.raises(TypeError, match=r"cv must be a str, an int or None"):
        CVCurveDisplay([1, 2], [1, 2], cv=[1, 2])
    with pytest.raises(TypeError, match="ax must be a matplotlib Axes or None, got 'x'"):
        CVCurveDisplay([1, 2], [1, 2]).plot(ax="x")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        CVCurveDisplay([1, 2], [0.5, 0.7], cv=3).plot()


@pytest.mark.parametrize("make", ["RankRLS", "MPRank", "RankSVM", "SVRank", "OnlineMPRank"])
@pytest.mark.parametrize("scale", [1e-160, 1e-200])
def test_linear_scores_that_underflow_warn(make, scale):
    # features near 1e-200 gave correct weights (~5e-199) but scores near 1e-400, all 0: one distinct prediction,
    # score 0.5, no warning; near 1e-160 the scores were subnormal, a few bits each
    from fastrank.exceptions import ConstantModelWarning

    rng = np.random.default_rng(0)
    X, y, g = rng.normal(size=(30, 3)), np.arange(30) % 3 * 1.0, np.repeat([0, 1, 2], 10)
    with pytest.warns(ConstantModelWarning, match=rf"{make}'s scores X @ coef_ underflow float64 on the training "
                                                  r"rows .*Rescale X"):
        model = getattr(fastrank, make)().fit(X * scale, y, groups=g)
    assert np.abs(model.predict(X * scale)).max() < np.finfo(np.float64).tiny
    getattr(fastrank, make)().fit(X * 1e-150, y, groups=g)  # scores near 1e-300 are normal numbers: no warning


@pytest.mark.parametrize("scale", [1e-200, 1e-300, 1e150])
def test_conjugate_gradient_solves_features_of_any_scale(scale):
    # features of 1e-200: the right-hand side X^T L y (~1e-200) had a norm that underflowed to 0, read as X^T L y = 0:
    # coef_ = 0, converged, silently.  Oracle: the normal equations (X^T L X + alpha I) w = X^T L y in numpy, L the
    # all-pairs Laplacian m I - 1 1^T (004 eq. 7), solved on X / scale and scaled back (exact for powers of two; here
    # X^T L X is 1e-400 or 1e300 next to alpha, kept or not as double precision keeps it)
    import scipy.sparse as sp
    from fastrank.exceptions import ConstantModelWarning

    rng = np.random.default_rng(0)
    X0, y = rng.normal(size=(30, 3)), np.arange(30) % 3 * 1.0
    L = 30 * np.eye(30) - np.ones((30, 30))
    want = np.linalg.solve(scale * scale * (X0.T @ L @ X0) + np.eye(3), scale * (X0.T @ L @ y))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConstantModelWarning)  # the scores of 1e-200 features underflow, and say so
        model = fastrank.RankRLS(solver="cg", tol=1e-12).fit(sp.csr_matrix(X0 * scale), y)
    assert model.converged_
    np.testing.assert_allclose(model.coef_, want, rtol=1e-9)
