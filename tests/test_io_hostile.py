"""Hostile arguments to the file readers and writers, progress reporting and the command line: each gets an
error naming the argument (or the file) instead of a raw Python/numpy error or a silently changed setting."""

import errno
import io
import os
import stat
import sys

import numpy as np
import pytest

import fastrank
from fastrank import cli
from fastrank._svmlight import read_svmlight

DATA = "1 qid:1 1:0.5 2:1\n0 qid:1 1:0.1 2:0.3\n2 qid:2 1:1 2:0.2\n1 qid:2 1:0.4 2:0.9\n"


@pytest.fixture
def data_file(tmp_path):
    f = tmp_path / "a.txt"
    f.write_text(DATA)
    return f


@pytest.mark.parametrize("n_features", [2.7, -1, "3", True, float("nan"), 1e30, 2**70])
def test_read_svmlight_n_features_must_be_a_whole_count(data_file, n_features):
    # 2.7 was cut to 2, "3"/nan raised int()'s message, -1 and True were reported as a too-small count
    with pytest.raises(ValueError, match="n_features must be None or an integer >= 0"):
        read_svmlight(data_file, n_features=n_features, extra_features="ignore")
    assert read_svmlight(data_file, n_features=np.int64(3))[0].shape == (4, 3)


def test_read_svmlight_extra_features_typo_is_an_error(data_file):
    # any value but "error" silently dropped the features beyond n_features
    with pytest.raises(ValueError, match="extra_features must be 'error' or 'ignore'"):
        read_svmlight(data_file, n_features=1, extra_features="eror")


@pytest.mark.parametrize("verbose", [2.5, float("inf"), float("nan"), -1, "1"])
def test_progress_verbose_must_be_a_whole_level(verbose):
    from fastrank._progress import resolve_verbose

    # 2.5 was cut to 2 and inf raised int()'s OverflowError
    with pytest.raises(ValueError, match="verbose must be an integer >= 0, a bool or 'auto'"):
        resolve_verbose(verbose)
    assert resolve_verbose(np.True_) == 1 and resolve_verbose(2.0) == 2


def test_progress_backend_typo_is_an_error():
    from fastrank._progress import progress

    # an unknown backend silently fell back to log lines
    with pytest.raises(ValueError, match="backend must be 'auto', 'tqdm' or 'log'"):
        progress(3, verbose=1, backend="tqmd")


@pytest.fixture
def model():
    return fastrank.RankRLS().fit(np.random.default_rng(0).random((6, 2)), np.arange(6.0))


def test_save_to_a_directory_or_missing_folder_names_the_path(tmp_path, model):
    # the OSError named the temporary file (".fastrank-xxxx.tmp"), not the path given
    with pytest.raises(IsADirectoryError, match=f"{tmp_path}: is a directory"):
        fastrank.save(model, tmp_path)
    with pytest.raises(FileNotFoundError, match="the folder .*nope does not exist"):
        fastrank.save(model, tmp_path / "nope" / "m.frk")
    assert [p.name for p in tmp_path.iterdir()] == []


def test_save_compress_must_be_a_bool(tmp_path, model):
    # compress="no" compressed
    with pytest.raises(TypeError, match="compress must be True or False"):
        fastrank.save(model, tmp_path / "m.frk", compress="no")


def test_load_a_directory_is_a_value_error_naming_it(tmp_path):
    # a raw IsADirectoryError from open()
    with pytest.raises(ValueError, match=f"{tmp_path}: is a directory, not a model file"):
        fastrank.load(tmp_path)
    assert cli.main(["predict", str(tmp_path), str(tmp_path / "a.txt")]) == 1


def test_cv_plot_is_written_to_the_path_given(data_file, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    base = ["cv", "--alphas", "0.1,1", str(data_file), "--plot"]
    # without an extension matplotlib wrote PLOT.png and the CLI reported PLOT
    assert cli.main(base + [str(tmp_path / "curve")]) == 0
    assert (tmp_path / "curve").read_bytes()[:4] == b"\x89PNG" and not (tmp_path / "curve.png").exists()
    assert cli.main(base + [str(tmp_path / "c.PNG")]) == 0
    assert (tmp_path / "c.PNG").read_bytes()[:4] == b"\x89PNG"
    capsys.readouterr()
    assert cli.main(base + [str(tmp_path)]) == 1  # a directory: wrote DIR.png
    assert f"cannot write {tmp_path}" in capsys.readouterr().err


def test_huge_alpha_grid_is_a_usage_error(data_file, capsys):
    # numpy's MemoryError reached the user as a traceback
    assert cli.main(["cv", "--alphas", "1:10:99999999999", str(data_file)]) == 2
    assert "bad alpha grid '1:10:99999999999'" in capsys.readouterr().err


def test_dask_ragged_lists_name_the_argument():
    pytest.importorskip("dask.array")
    from fastrank.dask import DaskRankRLS, permutation_test_lpo

    X, y, g = np.random.default_rng(0).random((3, 2)), np.arange(3.0), np.array([1, 1, 2])
    ragged = [[1], [1, 2], 3]
    # numpy's "setting an array element with a sequence ... inhomogeneous shape" reached the user
    for call, name in [(lambda: DaskRankRLS().fit(X, y, ragged), "groups"),
                       (lambda: DaskRankRLS().fit(X, ragged), "y"),
                       (lambda: DaskRankRLS().fit(X, y).score(X, y, ragged), "groups"),
                       (lambda: permutation_test_lpo(fastrank.RankRLS(), X, ragged, 3), "y"),
                       (lambda: permutation_test_lpo(fastrank.RankRLS(), X, y, 3, groups=ragged), "groups")]:
        with pytest.raises(ValueError, match=f"{name} must be a rectangular array"):
            call()
    assert 0 <= DaskRankRLS().fit(X, y, g).score(X, y, list(g)) <= 1


def test_feature_index_beyond_the_readers_limit_names_the_line(tmp_path):
    # scikit-learn's reader takes indices up to 2**31 - 1; beyond, its OverflowError came without file:line
    f = tmp_path / "wide.txt"
    f.write_text("1 qid:1 1:0.5\n0 qid:1 1:0.2 1099511627776:1\n")
    with pytest.raises(ValueError, match=r"wide.txt:2: feature index 1099511627776 .* beyond the largest supported "
                                         r"index 2147483647"):
        read_svmlight(f)


@pytest.mark.parametrize("extra, shown", [([], "cv=lgo"), (["--param", "cv=2"], "cv=2 folds of whole queries")])
def test_train_rankrlscv_reports_the_scheme_it_ran(data_file, tmp_path, capsys, extra, shown):
    # --model RankRLSCV without --cv printed "cv=None folds of whole queries"; without -m it scores as --alpha auto
    assert cli.main(["train", "--model", "RankRLSCV", *extra, str(data_file), str(tmp_path / "m.frk")]) == 0
    assert f"(ndcg@10, {shown})" in capsys.readouterr().err


def test_n_jobs_reaches_the_loaded_model_or_is_reported_ignored(data_file, tmp_path, capsys):
    # predict/evaluate --n-jobs was silently ignored (the saved n_jobs ran); train with a model without threads too
    # --n-jobs 0 is refused as a usage error whether or not the model has threads (a linear model's was accepted)
    for model, extra in [("k.frk", ["--kernel", "rbf"]), ("cv.frk", ["--alpha", "auto", "--kernel", "rbf"]),
                         ("lin.frk", [])]:
        assert cli.main(["train", "-q", *extra, str(data_file), str(tmp_path / model)]) == 0
        assert cli.main(["predict", "--n-jobs", "0", str(tmp_path / model), str(data_file)]) == 2
        assert "--n-jobs must be a non-zero integer (-1: every core), got '0'" in capsys.readouterr().err
    assert cli.main(["train", "--n-jobs", "2", "--model", "PRank", str(data_file), str(tmp_path / "p.frk")]) == 0
    assert "PRank has no threads to set; --n-jobs is ignored" in capsys.readouterr().err


@pytest.mark.parametrize("metadata", [{1: "a"}, {"a": (1, 2)}, {"a": {"b": {2: 3}}}])
def test_save_metadata_that_would_load_changed_is_refused(tmp_path, model, metadata):
    # an int key came back as a string, a tuple as a list
    with pytest.raises(TypeError, match="metadata must be plain JSON data"):
        fastrank.save(model, tmp_path / "m.frk", metadata=metadata)
    meta = {"a": [1, 2.5, None, {"b": "c"}]}
    assert fastrank.load(fastrank.save(model, tmp_path / "m.frk", metadata=meta), return_metadata=True)[1] == meta


@pytest.mark.parametrize("target, message", [
    ("fifo", "exists and is not a regular file (a pipe, socket or device); a model file is a regular file: give a "
             "file path"),
    ("/dev/null", "exists and is not a regular file (a pipe, socket or device); a model file is a regular file: give "
                  "a file path"),
    (".", "is a directory; give the model file's name"),
    ("nope/m.frk", "the folder {folder} does not exist")])
def test_train_refuses_a_model_path_it_cannot_write_before_any_work(data_file, tmp_path, capsys, monkeypatch, target,
                                                                     message):
    # /dev/null or a FIFO: save's ValueError reached the user as a traceback, after the fit
    path = target if target.startswith("/") else str(tmp_path / target)
    if target == "fifo":
        os.mkfifo(path)
    monkeypatch.setattr(cli, "_read_training", lambda *a: pytest.fail("the training file was read"))
    assert cli.main(["train", str(data_file), path]) == 1
    message = message.format(folder=tmp_path / "nope")
    assert capsys.readouterr().err == f"fastrank train: error: {path}: {message}\n"
    assert target != "fifo" or stat.S_ISFIFO(os.stat(path).st_mode)


class _FullStream(io.StringIO):
    def write(self, text):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


@pytest.mark.parametrize("command", ["predict", "evaluate", "cv"])
def test_a_failed_write_of_the_standard_output_is_a_one_line_error(data_file, tmp_path, capsys, monkeypatch, command):
    # > /dev/full: the OSError of sys.stdout.write reached the user as a traceback
    model = tmp_path / "m.frk"
    assert cli.main(["train", "-q", str(data_file), str(model)]) == 0
    argv = {"predict": [model, data_file], "evaluate": ["--model", model, data_file], "cv": [data_file]}[command]
    capsys.readouterr()
    monkeypatch.setattr(sys, "stdout", _FullStream())
    assert cli.main([command, "-q", *map(str, argv)]) == 1
    want = f"fastrank {command}: error: cannot write the standard output: No space left on device\n"
    assert capsys.readouterr().err == want
