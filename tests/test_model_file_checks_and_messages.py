"""Messages of the SVRank solver and the model-file checks, against what actually happened."""

import json
import re
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


def _edited(path, edit):
    with np.load(path, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    header = json.loads(arrays.pop("header").tobytes())
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
    ("params", 10**400, "a parameter fails RankRLS's checks: int too large to convert to float"),
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
