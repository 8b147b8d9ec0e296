"""The command line and a model file whose 'svmlight' metadata was written by hand: a normalisation entry
that is not what ``fastrank train`` writes is a data error naming the file, never a traceback (a KeyError,
or numpy's "operands could not be broadcast together")."""

import numpy as np
import pytest
from sklearn.datasets import dump_svmlight_file

import fastrank
from fastrank import cli

BAD_NORMALIZE = [
    "zscore",  # the name alone, not the object
    {"name": "zscore"},  # no training statistics
    {"name": "log1p-zscore", "mean": [0.0, 0.0, 0.0]},
    {"name": "zscore", "mean": [0.0, 0.0], "scale": [1.0, 1.0]},  # 2 statistics for 3 features
    {"name": "zscore", "mean": [0.0, 0.0, "x"], "scale": [1.0, 1.0, 1.0]},
    {"name": "zscore", "mean": [0.0, 0.0, 0.0], "scale": [1.0, 1.0, None]},
    {"name": "bogus"},
    {},
]


@pytest.fixture
def data_file(tmp_path):
    rng = np.random.default_rng(0)
    X, y, q = rng.normal(size=(30, 3)), rng.integers(0, 3, 30).astype(float), np.repeat(np.arange(5), 6)
    path = tmp_path / "d.txt"
    dump_svmlight_file(X, y, str(path), query_id=q)
    return path, X, y, q


@pytest.mark.parametrize("norm", BAD_NORMALIZE)
@pytest.mark.parametrize("command", ["predict", "evaluate"])
def test_a_hand_made_normalize_entry_is_a_data_error(norm, command, data_file, tmp_path, capsys):
    path, X, y, q = data_file
    model = tmp_path / "m.frk"
    fastrank.save(fastrank.RankRLS().fit(X, y, q), model, metadata={"svmlight": {"normalize": norm}})
    argv = ["predict", model, path] if command == "predict" else ["evaluate", "--model", model, path]
    code = cli.main([str(a) for a in argv])
    err = capsys.readouterr().err
    expected = f"{model}: its metadata 'svmlight' is not the object fastrank train writes (its 'normalize' entry)"
    assert code == 1 and expected in err, err


@pytest.mark.parametrize("norm", [None, {"name": "query-minmax"},
                                  {"name": "zscore", "mean": [0.5, 0.0, -1.0], "scale": [2.0, 1.0, 4.0]}])
def test_a_normalize_entry_as_train_writes_it_is_applied(norm, data_file, tmp_path, capsys):
    from fastrank.preprocessing import QueryNormalizer

    path, X, y, q = data_file
    model, scores = tmp_path / "m.frk", tmp_path / "s.txt"
    est = fastrank.RankRLS().fit(X, y, q)
    fastrank.save(est, model, metadata={"svmlight": {"normalize": norm}})
    assert cli.main(["predict", "-q", "-o", str(scores), str(model), str(path)]) == 0
    Xn = X.copy()
    if norm is not None and norm["name"] == "zscore":
        Xn = (X - np.array(norm["mean"])) / np.array(norm["scale"])
    elif norm is not None:
        Xn = QueryNormalizer("minmax").fit(X).transform(X, groups=q)
    np.testing.assert_allclose(np.loadtxt(scores), est.predict(Xn), rtol=1e-12, atol=1e-12)


def test_the_demo_plot_is_written_to_the_path_given(tmp_path):
    # without an extension matplotlib wrote PATH.png, while the demo said it wrote PATH
    pytest.importorskip("matplotlib")
    from fastrank._demo import write_cv_plot

    alphas = np.logspace(-2, 4, 31)
    row = {"model": "RankRLS Gaussian (dual)", "alpha": 10.0, "validation_curve": (alphas, 0.3 + 0.0 * alphas)}
    write_cv_plot(row, tmp_path / "curve")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["curve"]
    assert (tmp_path / "curve").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("how", ["--no-qid", "file without qid"])
def test_a_model_trained_without_query_groups_normalises_test_rows_as_one_query(how, data_file, tmp_path):
    # the training rows were min-max scaled together; the test rows were scaled query by query
    from fastrank.preprocessing import QueryNormalizer

    path, X, y, q = data_file
    train, model, scores = tmp_path / "train.txt", tmp_path / "m.frk", tmp_path / "s.txt"
    dump_svmlight_file(X, y, str(train), query_id=q if how == "--no-qid" else None)
    flags = ["--no-qid"] if how == "--no-qid" else []
    assert cli.main(["train", "-q", "--normalize", "query-minmax", *flags, str(train), str(model)]) == 0
    assert cli.main(["predict", "-q", "-o", str(scores), str(model), str(path)]) == 0  # path: with qid:
    est = fastrank.load(model)
    ref = est.predict(QueryNormalizer("minmax").fit(X).transform(X))
    np.testing.assert_allclose(np.loadtxt(scores), ref, rtol=1e-12, atol=1e-12)  # per query: off by > 0.1


def test_a_model_saved_from_python_warns_when_a_files_index_base_is_unclear(tmp_path, capsys):
    # a model saved from Python records no index base: a 0-based test file without feature 0 was read as 1-based,
    # every column shifted by one, without a word
    rng = np.random.default_rng(0)
    X, y, q = rng.uniform(0.1, 1, size=(40, 3)), rng.integers(0, 3, 40).astype(float), np.repeat(np.arange(4), 10)
    Xt = X.copy()
    Xt[:, 0] = 0.0
    est = fastrank.RankRLS().fit(X, y, q)
    model, recorded = tmp_path / "m.frk", tmp_path / "zb.frk"
    fastrank.save(est, model)
    fastrank.save(est, recorded, metadata={"svmlight": {"zero_based": True}})
    test0, test1 = tmp_path / "t0.txt", tmp_path / "t1.txt"
    dump_svmlight_file(Xt, y, str(test0), query_id=q, zero_based=True)
    dump_svmlight_file(X, y, str(test1), query_id=q, zero_based=False)  # uses index 3: 1-based for sure

    def predict(*argv):
        code = cli.main(["predict", *map(str, argv)])
        out, err = capsys.readouterr()
        assert code == 0, err
        return np.array(out.split(), dtype=float), err

    warning = (f"fastrank predict: warning: {model} records no index base (a model saved from Python) and {test0} "
               "uses neither index 0 nor index 3: it is read as 1-based; give --zero-based yes if the model was "
               "trained on 0-based indices (every column shifts by one otherwise), --zero-based no if on 1-based\n")
    assert predict(model, test0)[1] == warning
    right = est.predict(Xt)
    for argv in ([model, test0, "--zero-based", "yes"], [recorded, test0]):
        scores, err = predict(*argv)
        np.testing.assert_allclose(scores, right, rtol=1e-12, atol=1e-12)
        assert err == ""
    scores, err = predict(model, test1)
    np.testing.assert_allclose(scores, est.predict(X), rtol=1e-12, atol=1e-12)
    assert err == ""
    fastrank.save(est, recorded, metadata={"svmlight": {"zero_based": "yes"}})
    for flags in ([], ["--zero-based", "yes"], ["--zero-based", "no"]):  # the entry is refused, not read by a flag
        assert cli.main(["predict", *flags, str(recorded), str(test0)]) == 1
        assert f"{recorded}: its metadata 'svmlight' is not the object fastrank train writes (its 'zero_based' " \
               "entry)" in capsys.readouterr().err
