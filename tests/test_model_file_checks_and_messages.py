"""Messages of the SVRank solver and the model-file checks, against what actually happened."""

import json
import re
import tracemalloc
import warnings

import numpy as np
import pytest

import fastrank
from fastrank import _persist
from fastrank.exceptions import ConvergenceWarning


@pytest.mark.parametrize("C", [1e3, 1e4])
def test_svrank_newton_stopped_by_rounding_names_the_iterations_it_ran(C):
    # the squared cost's Newton solve stopped at its rounding floor (tol=1e-17: below what the gradient resolves)
    # and warned "stopped at max_iter=1000 Newton iterations ... increase max_iter", which cannot help
    rng = np.random.default_rng(5)
    X, y = rng.normal(size=(20, 3)), rng.normal(size=20)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est = fastrank.SVRank(C, loss="squared_epsilon_insensitive", tol=1e-17).fit(X, y)
    assert not est.converged_ and est.n_iter_ < est.max_iter
    messages = [str(w.message) for w in caught if issubclass(w.category, ConvergenceWarning)]
    assert len(messages) == 1, messages
    assert f"stopped after {est.n_iter_} Newton iterations" in messages[0] and "max_iter" not in messages[0]
    assert f"{est.gap_:.3g}" in messages[0]


def _edited(path, edit, convert=None):
    """The file with its header edited (and its arrays converted), the checksum recomputed."""
    with np.load(path, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    header = json.loads(arrays.pop("header").tobytes())
    if convert is not None:
        arrays = {k: convert(a) for k, a in arrays.items()}
        for k, entry in header["arrays"].items():
            entry["dtype"] = arrays[k].dtype.str
    edit(header)
    header["checksum"] = {"sha256": _persist._digest(header, arrays)}  # an edit that knows the format
    with open(path, "wb") as fh:
        np.savez(fh, header=np.frombuffer(json.dumps(header).encode(), dtype=np.uint8), **arrays)


@pytest.mark.parametrize("value", [None, "3", 3.0, True, 0], ids=["missing", "text", "float", "bool", "zero"])
@pytest.mark.parametrize("make", [lambda: fastrank.RankRLS(), lambda: fastrank.RankSVM(kernel="rbf"),
                                  lambda: fastrank.RankRLSCV(alphas=[1.0, 10.0])], ids=["rls", "svm-rbf", "rlscv"])
def test_a_fitted_model_file_without_a_positive_feature_count_is_refused(tmp_path, value, make):
    # n_features_in_ removed or edited to a non-integer: the file loaded, and predict then failed with a raw
    # AttributeError or "X has 3 features, but RankRLS is expecting 3 features as input" (0 for an rbf model: a raw
    # ZeroDivisionError from load)
    rng = np.random.default_rng(0)
    X, y, g = rng.normal(size=(30, 3)), rng.integers(0, 3, 30).astype(float), np.repeat(np.arange(3), 10)
    fastrank.save(make().fit(X, y, g), tmp_path / "m")
    _edited(tmp_path / "m", lambda h: h["state"].pop("n_features_in_") if value is None else
            h["state"].__setitem__("n_features_in_", value))
    with pytest.raises(ValueError, match=rf"corrupted or tampered model file: model: the fitted state has n_features_in_ = "
                                         rf"{value!r}, not a positive integer"):
        fastrank.load(tmp_path / "m")
    fastrank.save(make(), tmp_path / "unfitted")  # an unfitted model has no feature count to check
    assert fastrank.load(tmp_path / "unfitted").get_params(deep=False).keys() == make().get_params().keys()


@pytest.mark.parametrize("where, value, message", [
    ("state", {"$scalar": "<i1", "value": 1000}, "scalar 1000 is out of the range of its dtype int8"),
    ("state", {"$scalar": "<u4", "value": -5}, "scalar -5 is out of the range of its dtype uint32"),
    ("params", {"$scalar": "<f2", "value": 1e300}, "scalar 1e+300 is out of the range of its dtype float16"),
    ("params", 10**400, "a parameter fails RankRLS's checks: degree of RankRLS is an int beyond float64's range"),
], ids=["int8", "uint32", "float16", "huge-degree"])
def test_model_file_values_out_of_range_are_refused_by_name(tmp_path, where, value, message):
    # these reached the user as a raw OverflowError (or, for float16, a RuntimeWarning and an infinite value)
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(20, 3)), rng.normal(size=20)
    fastrank.save(fastrank.RankRLS(kernel="rbf").fit(X, y), tmp_path / "m")
    name = "degree" if where == "params" and not isinstance(value, dict) else "alpha" if where == "params" else "n_iter_"
    _edited(tmp_path / "m", lambda h: h[where].__setitem__(name, value))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning on the way
        with pytest.raises(ValueError, match=rf"corrupted or tampered model file: .*{re.escape(message)}"):
            fastrank.load(tmp_path / "m")


@pytest.mark.parametrize("argv, message", [
    (["--alpha", "3", "--param", "alpha=2"], "--alpha and --param alpha=... both set RankRLS's alpha; give one"),
    (["--model", "RankSVM", "-c", "3", "--param", "C=2"], "-c/--C and --param C=... both set RankSVM's C; give one"),
    (["--n-jobs", "1", "--param", "n_jobs=2"], "--n-jobs and --param n_jobs=... both set RankRLS's n_jobs; give one"),
    (["--param", "tol=1e-3", "--param", "tol=1e-8"], "--param tol=... and --param tol=... both set RankRLS's tol"),
], ids=["alpha", "C", "n-jobs", "param-twice"])
def test_train_refuses_a_parameter_set_twice(tmp_path, capsys, argv, message):
    # the later setting silently won: --alpha 3 --param alpha=2 trained alpha=2, --param n_jobs=2 --n-jobs 1 ran 1
    from fastrank import cli

    rng = np.random.default_rng(0)
    lines = [f"{int(v)} qid:{i // 6} 1:{a:.4f} 2:{b:.4f}\n" for i, (v, a, b) in
             enumerate(zip(rng.integers(0, 3, 24), rng.normal(size=24), rng.normal(size=24)))]
    (tmp_path / "t.txt").write_text("".join(lines))
    code = cli.main(["train", *argv, str(tmp_path / "t.txt"), str(tmp_path / "m.frk")])
    assert code == 2 and message in capsys.readouterr().err
    assert not (tmp_path / "m.frk").exists()
    assert cli.main(["train", "-q", "--param", "alpha=2", str(tmp_path / "t.txt"), str(tmp_path / "m.frk")]) == 0
    assert fastrank.load(tmp_path / "m.frk").alpha == 2


@pytest.mark.parametrize("path, make", [
    (lambda X, y, g: fastrank.rankrls_path(X, y, [1.0, 2.0], groups=g).fitted_estimator(1), lambda: fastrank.RankRLS(2.0)),
    (lambda X, y, g: fastrank.ranksvm_path(X, y, [1.0, 2.0], g)[1], lambda: fastrank.RankSVM(2.0)),
    (lambda X, y, g: fastrank.svrank_path(X, y, [1.0, 2.0], g)[1], lambda: fastrank.SVRank(2.0)),
], ids=["rankrls", "ranksvm", "svrank"])
def test_a_path_model_scored_without_groups_warns_as_a_fitted_one(path, make):
    # the models of rankrls_path / ranksvm_path / svrank_path lacked n_fit_groups_: score(X, y) silently ranked the rows
    # of 5 queries as one query, where the same model from fit warns (MissingGroupsWarning)
    from fastrank.exceptions import MissingGroupsWarning

    rng = np.random.default_rng(0)
    X, y, g = rng.normal(size=(30, 3)), rng.integers(0, 3, 30).astype(float), np.repeat(np.arange(5), 6)
    fitted = make().fit(X, y, g)
    from_path = path(X, y, g)
    assert vars(from_path).keys() == vars(fitted).keys() and from_path.n_fit_groups_ == 5
    np.testing.assert_allclose(from_path.predict(X), fitted.predict(X), rtol=1e-6)  # paths warm-start / share factors
    for est in (fitted, from_path):
        with pytest.warns(MissingGroupsWarning, match="fitted on 5 query groups"):
            est.score(X, y)
    ungrouped = path(X, y, None)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ungrouped.n_fit_groups_ == 1 and 0.0 <= ungrouped.score(X, y) <= 1.0


def test_a_dask_path_model_scored_without_groups_warns_as_a_fitted_one():
    pytest.importorskip("dask.array")
    from fastrank.dask import DaskRankRLS, rankrls_path
    from fastrank.exceptions import MissingGroupsWarning

    rng = np.random.default_rng(0)
    X, y, g = rng.normal(size=(30, 3)), rng.integers(0, 3, 30).astype(float), np.repeat(np.arange(5), 6)
    fitted = DaskRankRLS(alpha=2.0).fit(X, y, g)
    from_path = rankrls_path(X, y, [1.0, 2.0], groups=g).fitted_estimator(1)
    assert from_path.n_fit_groups_ == 5
    np.testing.assert_allclose(from_path.predict(X), fitted.predict(X), rtol=1e-10)
    for est in (fitted, from_path):
        with pytest.warns(MissingGroupsWarning, match="fitted on 5 query groups"):
            est.score(X, y)


def test_python_dash_m_fastrank_cli_runs_the_command_line_program():
    # it imported the module and exited 0 without doing anything
    import subprocess
    import sys

    import fastrank

    env = {**__import__("os").environ, "PYTHONPATH": str(__import__("pathlib").Path(fastrank.__file__).parents[1])}
    done = subprocess.run([sys.executable, "-m", "fastrank.cli", "--version"], capture_output=True, text=True, env=env)
    assert done.returncode == 0 and fastrank.__version__ in done.stdout + done.stderr
    done = subprocess.run([sys.executable, "-m", "fastrank.cli", "--bogus"], capture_output=True, text=True, env=env)
    assert done.returncode == 2 and "unrecognized arguments" in done.stderr


@pytest.mark.parametrize("offset, bits", [(10, None), (8, 1)])  # compression method 8 -> 1; the "encrypted" flag
def test_a_directory_entry_claiming_another_method_or_encryption_is_a_corrupted_file(tmp_path, offset, bits):
    X = np.random.default_rng(1).normal(size=(30, 3))
    path = tmp_path / "ok.frk"
    fastrank.save(fastrank.PRank().fit(X, (X[:, 0] > 0).astype(int)), path)
    data = bytearray(path.read_bytes())
    at = data.rfind(b"PK\x01\x02") + offset  # the last member's central directory entry
    data[at] = 1 if bits is None else data[at] | bits
    bad = tmp_path / "bad.frk"
    bad.write_bytes(bytes(data))  # NotImplementedError / RuntimeError escaped from zipfile, naming no file
    with pytest.raises(ValueError, match=r"bad\.frk: corrupted or tampered model file: member .* cannot be read"):
        fastrank.load(bad)


def test_string_labels_of_a_pandas_column_save(tmp_path):
    pd = pytest.importorskip("pandas")
    X = np.random.default_rng(1).normal(size=(30, 3))
    y = pd.Series(np.where(X[:, 0] > 0, "good", "bad"))  # classes_ of dtype object
    for est in (fastrank.PRank(), fastrank.OAPBPM(n_estimators=3, random_state=0), fastrank.WidrowHoff()):
        est.fit(X, y)
        fastrank.save(est, tmp_path / "m.frk")
        back = fastrank.load(tmp_path / "m.frk")
        assert back.classes_.tolist() == ["bad", "good"]
        np.testing.assert_array_equal(back.predict(X), est.predict(X))


@pytest.mark.parametrize("value", [-1, 2**64, 1.5, True])
def test_a_stream_count_out_of_range_is_a_tampered_file(tmp_path, value):
    X = np.random.default_rng(1).normal(size=(30, 3))
    path = tmp_path / "t.frk"
    fastrank.save(fastrank.OAPBPM(n_estimators=3, random_state=0).fit(X, (X[:, 0] > 0).astype(int)), path)
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    header = json.loads(arrays.pop("header").tobytes())
    header["state"]["seed_"] = value  # edited and re-checksummed: partial_fit raised pybind11's text, the arrays
    header["checksum"] = {"sha256": _persist._digest(header, arrays)}
    with open(path, "wb") as fh:
        np.savez(fh, header=np.frombuffer(json.dumps(header).encode(), np.uint8), **arrays)
    with pytest.raises(ValueError, match=r"corrupted or tampered model file: model\.seed_ = .* is not a count"):
        fastrank.load(path)


@pytest.mark.parametrize("attr, value", [("n_seen_", 2**63), ("n_samples_seen_", 2**63), ("seed_", None),
                                         ("n_seen_", None), ("n_samples_seen_", None), ("n_fit_groups_", 1.5),
                                         ("_kernel_args", 1), ("_kernel_args", {"$tuple": [0.1, None]})])
def test_a_stream_state_the_compiled_passes_cannot_take_is_refused_at_load(tmp_path, attr, value):
    # these loaded (None and [2^63, 2^64) passed the count check, the kernel arguments were unchecked) and partial_fit
    # then raised pybind11's "incompatible function arguments", an OverflowError or "'int' object is not iterable"
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(40, 3)), rng.integers(0, 3, 40)
    fastrank.save(fastrank.PRank().fit(X, y), tmp_path / "m")
    _edited(tmp_path / "m", lambda h: h["state"].__setitem__(attr, value))
    with pytest.raises(ValueError, match=rf"corrupted or tampered model file: model\.{re.escape(attr)} = "):
        fastrank.load(tmp_path / "m")


def test_a_stream_whose_arrays_cannot_continue_is_refused_at_load(tmp_path):
    # a 3-d members_coef_ (its header entry edited to match) predicted, so it loaded; partial_fit then raised pybind11's
    # "incompatible function arguments" with its signature dump
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(40, 3)), rng.integers(0, 3, 40)
    fastrank.save(fastrank.OAPBPM(n_estimators=2, random_state=0).fit(X, y), tmp_path / "m")
    with np.load(tmp_path / "m", allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    header = json.loads(arrays.pop("header").tobytes())
    ref = header["state"]["members_coef_"]
    arrays[ref["$array"]] = arrays[ref["$array"]][None]
    ref["shape"] = header["arrays"][ref["$array"]]["shape"] = list(arrays[ref["$array"]].shape)
    header["checksum"] = {"sha256": _persist._digest(header, arrays)}
    with open(tmp_path / "m", "wb") as fh:
        np.savez(fh, header=np.frombuffer(json.dumps(header).encode(), dtype=np.uint8), **arrays)
    with pytest.raises(ValueError, match=r"inconsistent \(members_coef_ of shape \(1, 2, 3\), not one row per "
                                         r"member\)$"):
        fastrank.load(tmp_path / "m")


def test_a_damaged_zip_directory_entry_is_a_corrupted_file(tmp_path):
    # the "version needed to extract" byte's high bit set: zipfile raised NotImplementedError("zip file version 17.3"),
    # and the command line printed a traceback
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(20, 3)), rng.normal(size=20)
    fastrank.save(fastrank.RankRLS().fit(X, y), tmp_path / "m")
    raw = bytearray((tmp_path / "m").read_bytes())
    central = raw.find(b"PK\x01\x02")
    raw[central + 6] |= 0x80  # version needed to extract, low byte
    (tmp_path / "m").write_bytes(bytes(raw))
    with pytest.raises(ValueError, match=r"not a readable fastrank model file \(corrupted or truncated\?\)"):
        fastrank.load(tmp_path / "m")


@pytest.mark.parametrize("offset", [0.0, 1e6, 1e8])
@pytest.mark.parametrize("make", [lambda: fastrank.RankRLS(kernel="rbf", gamma=0.1),
                                  lambda: fastrank.OnlineMPRank(kernel="rbf", gamma=0.1)], ids=["rls", "online"])
def test_float32_files_keep_kernel_models_whose_features_share_an_offset(tmp_path, offset, make):
    # the training rows were rounded relative to themselves: 0.06 absolute at an offset of 1e6, 6 at 1e8, and the test
    # disagreement went from 0.005 to 0.057 and 0.447 (random); stored about their column means they round by 2^-24
    # of their spread.  Oracle: the float64 model's own predictions.
    rng = np.random.default_rng(0)
    X, w = rng.normal(size=(200, 5)), rng.normal(size=5)
    Xt = rng.normal(size=(100, 5))
    model = make().fit(X + offset, X @ w)
    fastrank.save(model, tmp_path / "m", dtype="float32")
    loaded = fastrank.load(tmp_path / "m")
    want = model.predict(Xt + offset)
    np.testing.assert_allclose(loaded.predict(Xt + offset), want, atol=2e-6 * np.abs(want).max())
    # the rows are stored about their means only where the offset dominates the spread (version 3 files)
    assert json.loads(np.load(tmp_path / "m")["header"].tobytes())["format_version"] == (3 if offset else 2)
    fastrank.save(fastrank.RankRLS().fit(X, X @ w), tmp_path / "lin", dtype="float32")  # no rows: still version 2
    assert json.loads(np.load(tmp_path / "lin")["header"].tobytes())["format_version"] == 2


def test_labels_ending_in_nul_characters_are_refused_not_merged(tmp_path):
    # 'a' and 'a\x00' became one label in the fixed-width string array: 110 of 200 predictions changed after load
    rng = np.random.default_rng(0)
    labels = np.array(["a", "a\x00", "b", "c"], dtype=object)[rng.integers(0, 4, 60)]
    model = fastrank.PRank().fit(rng.normal(size=(60, 3)), labels)
    with pytest.raises(TypeError, match=r"model\.classes_: strings ending in NUL characters"):
        fastrank.save(model, tmp_path / "m")
    assert not (tmp_path / "m").exists()


def test_numpy_float64_values_keep_their_type(tmp_path):
    # numpy.float64 is a subclass of float and was saved as one: alpha and RankSVM.loss_ came back as Python floats
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(20, 3)), rng.normal(size=20)
    model = fastrank.RankRLS(alpha=np.float64(2.0)).fit(X, y)
    model.extra_ = np.float64(0.1)
    fastrank.save(model, tmp_path / "m")
    loaded = fastrank.load(tmp_path / "m")
    assert type(loaded.alpha) is np.float64 and type(loaded.extra_) is np.float64 and loaded.extra_ == 0.1


def test_a_feature_count_beyond_the_memory_limit_skips_the_load_probe(tmp_path, monkeypatch):
    # n_features_in_ edited to 3e9: the probe's zero row allocated 24 GB (lazily) past FASTRANK_MAX_DENSE_BYTES
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(20, 3)), rng.normal(size=20)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fastrank.save(fastrank.RankBoost(3).fit(X, y), tmp_path / "m")
    _edited(tmp_path / "m", lambda h: h["state"].__setitem__("n_features_in_", 3_000_000_000))
    monkeypatch.setenv("FASTRANK_MAX_DENSE_BYTES", "1000000")
    tracemalloc.start()  # numpy reports its allocations to tracemalloc, lazily committed ones too
    try:
        model = fastrank.load(tmp_path / "m")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 10**8, peak
    with pytest.raises(ValueError, match="X has 3 features, but RankBoost is expecting 3000000000 features"):
        model.predict(X)


@pytest.mark.parametrize("what, hint", [("normalizer", r"model files hold learners: pickle a transformer"),
                                        ("dask", r"save its in-memory model, est\.to_local\(\)")])
def test_saving_what_model_files_do_not_hold_says_what_to_do(tmp_path, what, hint):
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(20, 3)), rng.normal(size=20)
    if what == "dask":
        dask_fastrank = pytest.importorskip("fastrank.dask")
        da = pytest.importorskip("dask.array")
        est = dask_fastrank.DaskRankRLS().fit(da.from_array(X, chunks=10), da.from_array(y, chunks=10))
    else:
        from fastrank.preprocessing import QueryNormalizer
        est = QueryNormalizer().fit(X)
    with pytest.raises(TypeError, match=rf"is not a fastrank estimator \(saveable: .*\); {hint}"):
        fastrank.save(est, tmp_path / "m")


@pytest.mark.parametrize("kernel", ["linear", "rbf", "poly"])
def test_a_numpy_string_kernel_round_trips(kernel, tmp_path):
    # OnlineMPRank kept the numpy.str_ kind of its kernel: save wrote it as a numpy scalar, load refused the file
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(8, 3)), rng.normal(size=8)
    model = fastrank.OnlineMPRank(kernel=np.array([kernel, "precomputed"])[0]).fit(X, y)
    fastrank.save(model, tmp_path / "m.frk")
    np.testing.assert_array_equal(fastrank.load(tmp_path / "m.frk").predict(X), model.predict(X))


def test_save_refuses_a_path_that_is_not_a_regular_file(tmp_path):
    # the atomic replace swapped a FIFO (or, as root, /dev/null) for a regular file
    import os
    import stat
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    model = fastrank.RankRLS().fit(np.random.RandomState(0).randn(8, 3), np.arange(8.0))
    with pytest.raises(ValueError, match="exists and is not a regular file"):
        fastrank.save(model, fifo)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


@pytest.mark.parametrize("convert", [lambda a: a.astype(a.dtype.newbyteorder(">")), np.asfortranarray],
                         ids=["big-endian", "fortran-order"])
@pytest.mark.parametrize("make", [lambda: fastrank.RankRLS(kernel="rbf"), lambda: fastrank.PRank(kernel="rbf"),
                                  lambda: fastrank.OAPBPM(n_estimators=3, kernel="rbf", random_state=0),
                                  lambda: fastrank.OnlineMPRank(kernel="rbf", max_iter=10)],
                         ids=["rls", "prank", "oapbpm", "online-mprank"])
def test_files_with_big_endian_or_fortran_arrays_load(tmp_path, convert, make):
    # as a big-endian machine writes them: refused as "corrupted or tampered" by the on-line learners' core
    rng = np.random.RandomState(0)
    X = rng.rand(80, 5)
    y = (X @ [1.0, -1.0, 2.0, 0.0, 0.5] * 2).astype(int) % 4
    est = make().fit(X, y)
    fastrank.save(est, tmp_path / "m")
    _edited(tmp_path / "m", lambda h: None, lambda a: convert(a) if a.dtype.kind in "fi" and a.dtype.itemsize > 1
            else a)
    np.testing.assert_array_equal(fastrank.load(tmp_path / "m").predict(X), est.predict(X))


def test_hold_out_sets_rows_in_no_set_save_as_nan_and_complex_arrays_are_refused(tmp_path):
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(40, 3)), rng.normal(size=40)
    cv = fastrank.RankRLSCV(cv=[np.arange(5), np.arange(5, 10)], alphas=[0.1, 1.0]).fit(X, y)
    fastrank.save(cv, tmp_path / "cv")  # 30 rows in no hold-out set: NaN, documented
    np.testing.assert_array_equal(fastrank.load(tmp_path / "cv").cv_predictions_, cv.cv_predictions_)
    fastrank.save(fastrank.RankRLS().fit(X, y), tmp_path / "m")
    _edited(tmp_path / "m", lambda h: None, lambda a: a.astype(complex) if a.dtype.kind == "f" else a)
    with pytest.raises(ValueError, match="corrupted or tampered model file: model.coef_ is complex"):
        fastrank.load(tmp_path / "m")


def test_an_empty_model_path_is_refused_by_name(tmp_path, monkeypatch, capsys):
    # it wrote a temporary file in the parent folder and failed naming that file; train read and fitted first
    from fastrank import cli
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="^path is empty: give a file name$"):
        fastrank.save(fastrank.RankRLS(), "")
    assert cli.main(["train", str(tmp_path / "absent.txt"), ""]) == 1  # refused before the data file is opened
    assert capsys.readouterr().err.strip() == "fastrank train: error: path is empty: give a file name"
