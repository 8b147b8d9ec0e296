"""Query-size files (LightGBM's ``.query``, XGBoost's ``.group``): the groups of an svmlight file without qid:.

The oracle is the same data written with qid: on every line (scikit-learn's writer), read by scikit-learn's
reader; on the real LightGBM sample, the groups bundled with fastrank (built from its .query files)."""

import json

import numpy as np
import pytest
from sklearn.datasets import dump_svmlight_file, load_svmlight_file

import fastrank
from conftest import shared_data
from fastrank import cli
from fastrank.datasets import load_lambdarank, load_svmlight


def _data(rng, sizes):
    m = int(sum(sizes))
    X = np.round(rng.uniform(0, 1, (m, 4)), 2)
    y = rng.integers(0, 3, m).astype(float)
    qid = np.repeat(np.arange(len(sizes)), sizes)
    return X, y, qid


@pytest.fixture
def pair(tmp_path):
    """(file without qid:, its .query file, the same data with qid: lines)."""
    X, y, qid = _data(np.random.default_rng(0), [3, 1, 5, 4])
    bare, with_qid = tmp_path / "train.txt", tmp_path / "train_qid.txt"
    dump_svmlight_file(X, y, str(bare), zero_based=False)
    dump_svmlight_file(X, y, str(with_qid), query_id=qid, zero_based=False)
    (tmp_path / "train.txt.query").write_text("3\n1\n5\n4\n")
    return bare, tmp_path / "train.txt.query", with_qid


@pytest.mark.parametrize("how", ["auto", "explicit", "group", "bytes"])
def test_groups_equal_the_qid_file(pair, tmp_path, how):
    bare, query, with_qid = pair
    if how == "group":
        query = query.rename(tmp_path / "train.txt.group")
    arg = {"auto": "auto", "group": "auto", "explicit": query, "bytes": bytes(str(query), "utf-8")}[how]
    X, y, q = load_svmlight(bare if how != "bytes" else bytes(str(bare), "utf-8"), query_file=arg)
    Xo, yo, qo = load_svmlight_file(str(with_qid), query_id=True, zero_based=False)
    np.testing.assert_array_equal(X.toarray(), Xo.toarray())
    np.testing.assert_array_equal(y, yo)
    assert q.dtype == np.int64
    # the same partition of the rows, in the same order
    np.testing.assert_array_equal(np.unique(q, return_inverse=True)[1], np.unique(qo, return_inverse=True)[1])


def test_lightgbm_sample_groups_equal_the_bundled_ones():
    d, data = load_lambdarank(), shared_data("lightgbm_lambdarank")
    for part in ("train", "test"):
        X, y, q = load_svmlight(data / f"rank.{part}", query_file="auto")
        np.testing.assert_array_equal(q, d[f"groups_{part}"])
        np.testing.assert_array_equal(y, d[f"y_{part}"])
        assert load_svmlight(data / f"rank.{part}")[2] is None  # no query file unless asked


def test_no_query_file_and_qid_lines(pair, tmp_path):
    bare, query, with_qid = pair
    assert load_svmlight(bare)[2] is None
    assert load_svmlight(bare, query_file=None)[2] is None
    (tmp_path / "train_qid.txt.query").write_text("13\n")  # auto: a file with qid: keeps its own
    np.testing.assert_array_equal(load_svmlight(with_qid, query_file="auto")[2],
                                  load_svmlight_file(str(with_qid), query_id=True)[2])
    with pytest.raises(ValueError, match="has qid: on its lines; give no query file"):
        load_svmlight(with_qid, query_file=query)


def test_empty_queries_are_allowed(pair):
    bare, query, _ = pair
    query.write_text("0\n3\n1\n0\n5\n4\n")  # LightGBM takes sizes as counts; an empty query holds no row
    q = load_svmlight(bare, query_file="auto")[2]
    np.testing.assert_array_equal(np.bincount(q), [0, 3, 1, 0, 5, 4])


@pytest.mark.parametrize("text, message", [
    ("3\n1\n5\n", r"train.txt.query: its 3 query sizes add up to 9 rows but .*train.txt has 13 rows"),
    ("3\n1\n5\n5\n", "add up to 14 rows"),
    ("", "its 0 query sizes add up to 0 rows"),
    ("3\n1\nfive\n4\n", r"train.txt.query:3: query size 'five' is not an integer"),
    ("3\n1\n5.0\n4\n", r"train.txt.query:3: query size '5.0' is not an integer"),
    ("3\n-1\n5\n6\n", r"train.txt.query:2: query size -1 is negative"),
    ("3 1\n5\n4\n", r"train.txt.query:1: query size '3 1' is not an integer \(one row count per line\)"),
    ("3\n1\n5\n4\n" + "9" * 40 + "\n", "add up to"),
])
def test_bad_query_files_name_the_file(pair, text, message):
    bare, query, _ = pair
    query.write_text(text)
    with pytest.raises(ValueError, match=message):
        load_svmlight(bare, query_file="auto")


def test_argument_errors(pair, tmp_path):
    bare, _, _ = pair
    with pytest.raises(FileNotFoundError, match="nothere.query: no such query file"):
        load_svmlight(bare, query_file=tmp_path / "nothere.query")
    with pytest.raises(TypeError, match="query_file must be a file name"):
        load_svmlight(bare, query_file=3)
    with pytest.raises(TypeError, match="path must be a file name"):
        load_svmlight(None)
    with pytest.raises(TypeError, match="path must be a file name"):
        fastrank.save(fastrank.RankRLS(), 3)
    with pytest.raises(TypeError, match="path must be a file name"):
        fastrank.load(None)


def test_bytes_paths_for_model_files(tmp_path):
    path = bytes(str(tmp_path / "m.frk"), "utf-8")
    fastrank.save(fastrank.RankRLS(alpha=3.0), path)
    assert fastrank.load(path).alpha == 3.0


def _run(argv, capsys):
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_reads_the_query_file(pair, tmp_path, capsys):
    bare, query, with_qid = pair
    code, out, err = _run(["cv", "-v", "--normalize", "none", "--alphas", "0.1,1,10", bare], capsys)
    assert code == 0, err
    assert "query groups from" in err and "4 queries" in err and "leave-query-out" in out and "ndcg@10" in out
    code, ref, err = _run(["cv", "--normalize", "none", "--alphas", "0.1,1,10", with_qid], capsys)
    assert code == 0, err
    assert out == ref
    # evaluate: the query file gives the same per-query table as the qid: lines
    scores = tmp_path / "s.txt"
    scores.write_text("".join(f"{v}\n" for v in np.random.default_rng(1).normal(size=13)))
    outs = []
    for data in (bare, with_qid):
        code, out, err = _run(["evaluate", "--per-query", "--format", "json", data, scores], capsys)
        assert code == 0, err
        outs.append(json.loads(out))
    assert outs[0]["mean"] == outs[1]["mean"] and len(outs[0]["per_query"]) == 4
    # --query-file names another file; a bad one is a data error naming it
    other = tmp_path / "sizes.txt"
    other.write_text("13\n")
    code, out, err = _run(["evaluate", "--format", "json", "--query-file", other, bare, scores], capsys)
    assert code == 0 and "sizes.txt" not in err
    code, _, err = _run(["evaluate", "--query-file", tmp_path / "none.txt", bare, scores], capsys)
    assert code == 1 and "none.txt: no such query file" in err
    query.write_text("3\n1\n5\n")
    code, _, err = _run(["train", "-q", bare, tmp_path / "m.frk"], capsys)
    assert code == 1 and "train.txt.query: its 3 query sizes add up to 9 rows" in err


@pytest.mark.parametrize("grid, note", [("100,1000,10000", None), ("10,100,1000", "largest"),
                                        ("1000,1e4", "smallest")])
def test_cli_notes_a_chosen_alpha_at_the_end_of_its_grid(grid, note, tmp_path, capsys):
    # on the LightGBM sample, by query (its .query file), leave-query-out ndcg@10 peaks at alpha = 1000
    data = shared_data("lightgbm_lambdarank") / "rank.train"
    code, out, err = _run(["cv", "--alphas", grid, data], capsys)
    assert code == 0, err
    last = out.splitlines()[-1]
    assert last.startswith("# best alpha 1000, score")
    assert ("the grid's" in last) == (note is not None) and (note is None or f"grid's {note} alpha" in last)
    code, _, err = _run(["train", "--alpha", "auto", "--alphas", grid, data, tmp_path / "m.frk"], capsys)
    assert code == 0 and ("the grid's" in err) == (note is not None)
