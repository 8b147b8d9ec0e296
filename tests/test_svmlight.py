"""fastrank.datasets.load_svmlight: agrees with scikit-learn's parser on valid files, resolves the
index base, pads/checks n_features, reads gzip/bz2, and names file:line for malformed input."""

import bz2
import gzip
import re

import numpy as np
import pytest
from sklearn.datasets import dump_svmlight_file, load_svmlight_file

from conftest import pipe_path, shared_data
from fastrank.datasets import load_lambdarank, load_svmlight, load_svmlight_files


def test_rlscore_light_matches_sklearn():
    root = shared_data("rlscore_legacy")
    for part in ("train", "test"):
        path = root / f"rank_{part}.light"
        X, y, q = load_svmlight(path, n_features=195098, zero_based=True)
        Xs, ys, qs = load_svmlight_file(str(path), n_features=195098, zero_based=True, query_id=True)
        assert (X != Xs).nnz == 0 and np.array_equal(y, ys) and np.array_equal(q, qs)
        assert q.dtype == np.int64 and X.format == "csr"
    # the qid file agrees with the qid: column (contiguous, sorted as strings)
    q_file = np.loadtxt(root / "rank_train.qids", dtype=np.int64)
    assert np.array_equal(load_svmlight(root / "rank_train.light")[2], q_file)


@pytest.mark.parametrize("zero_based", [False, True])
def test_index_base_auto_and_explicit(tmp_path, zero_based):
    d = load_lambdarank(sparse=True)
    X, y, g = d.X_test[:60], d.y_test[:60], d.groups_test[:60]
    X = X.tolil()
    X[:, 0] = 0.5  # column 0 used: a 0-based file has index 0
    X = X.tocsr()
    f = tmp_path / "f.txt"
    dump_svmlight_file(X, y, str(f), query_id=g, zero_based=zero_based)
    Xr, yr, qr = load_svmlight(f)  # auto
    assert Xr.shape == X.shape and (Xr != X).nnz == 0 and np.array_equal(yr, y) and np.array_equal(qr, g)
    Xr2, _, _ = load_svmlight(f, zero_based=zero_based, n_features=310)
    assert Xr2.shape == (60, 310) and (Xr2[:, :300] != X).nnz == 0
    with pytest.raises(ValueError, match=r"has feature index .* but n_features=100"):
        load_svmlight(f, n_features=100)
    if zero_based:
        with pytest.raises(ValueError, match=r"f.txt:1: feature index 0 in a file read as 1-based"):
            load_svmlight(f, zero_based=False)


@pytest.mark.parametrize("zero_based", [True, False])
def test_files_read_together_share_one_index_base_and_feature_count(tmp_path, zero_based):
    # a 0-based training file and a test file without feature 0: read one by one with "auto", the test file was
    # 1-based and every column moved one place left
    X = np.array([[0.5, 1.0, 0.0, 0.0], [1.5, 0.0, 2.0, 0.0], [0.25, 3.0, 0.0, 4.0]])
    Xt = np.array([[0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 2.0, 0.0]])  # neither the first feature nor the last
    train, test = tmp_path / "train.txt", tmp_path / "test.txt"
    dump_svmlight_file(X, [2, 1, 0], str(train), query_id=[1, 1, 2], zero_based=zero_based)
    dump_svmlight_file(Xt, [1, 0], str(test), query_id=[5, 5], zero_based=zero_based)
    for paths, (want, want_t) in (([train, test], (X, Xt)), ([test, train], (Xt, X))):
        A, ya, qa, B, yb, qb = load_svmlight_files(paths)
        assert A.format == B.format == "csr" and A.shape[1] == B.shape[1] == 4
        assert np.array_equal(A.toarray(), want) and np.array_equal(B.toarray(), want_t)
    assert np.array_equal(yb, [2, 1, 0]) and np.array_equal(qb, [1, 1, 2]) and np.array_equal(qa, [5, 5])
    # on its own, the test file needs the training file's base (as its docstring says)
    alone = load_svmlight(test, n_features=4, zero_based=zero_based)[0].toarray()
    assert np.array_equal(alone, Xt)
    # an explicit base, n_features and extra_features apply to every file
    A, _, _, B, _, _ = load_svmlight_files([train, test], zero_based=zero_based, n_features=2, extra_features="ignore")
    assert np.array_equal(A.toarray(), X[:, :2]) and np.array_equal(B.toarray(), Xt[:, :2])
    with pytest.raises(ValueError, match=r"train.txt: has feature index [34] but n_features=3 "):
        load_svmlight_files([train, test], n_features=3)


def test_files_read_together_take_query_files_and_refuse_bad_arguments(tmp_path):
    (tmp_path / "a.txt").write_text("1 1:1\n0 2:1\n1 1:2\n")
    (tmp_path / "a.txt.query").write_text("2\n1\n")
    (tmp_path / "b.txt").write_text("1 qid:3 3:1\n")
    (tmp_path / "sizes").write_text("3\n")
    a, b, sizes = tmp_path / "a.txt", tmp_path / "b.txt", tmp_path / "sizes"
    assert np.array_equal(load_svmlight_files([a, b], query_file="auto")[2], [0, 0, 1])
    assert np.array_equal(load_svmlight_files([a, b], query_file=[sizes, None])[2], [0, 0, 0])
    assert load_svmlight_files((a, b))[2] is None
    with pytest.raises(TypeError, match=r"^paths must be a list of file names \(load_svmlight reads one file\), got "):
        load_svmlight_files(str(a))
    with pytest.raises(ValueError, match="^paths must name at least one file$"):
        load_svmlight_files([])
    with pytest.raises(ValueError, match=r"^query_file must be None, 'auto' or a list of one query file \(or None\) "
                                         r"for each of the 2 paths, got \["):
        load_svmlight_files([a, b], query_file=[sizes])
    with pytest.raises(ValueError, match=r"^extra_features must be 'error' or 'ignore', got 'drop'$"):
        load_svmlight_files([a, b], extra_features="drop")


def test_extra_features_of_a_test_file(tmp_path):
    # the training file's n_features refused a test file with more features and did not say what to do; Python had
    # no counterpart of the CLI's ignoring of the features a model never saw
    f = tmp_path / "test.txt"
    f.write_text("2 qid:1 1:0.5 7:3\n1 qid:1 2:1.5 3:2\n")
    message = ("test.txt: has feature index 7 but n_features=3 (1-based indices); give extra_features='ignore' to "
               "drop the features beyond n_features, as fastrank predict does")
    with pytest.raises(ValueError, match=re.escape(message) + "$"):
        load_svmlight(f, n_features=3)
    X, y, q = load_svmlight(f, n_features=3, extra_features="ignore")
    assert np.array_equal(X.toarray(), [[0.5, 0, 0], [0, 1.5, 2]]) and X.has_sorted_indices
    assert np.array_equal(y, [2, 1]) and np.array_equal(q, [1, 1])
    assert load_svmlight(f, extra_features="ignore")[0].shape == (2, 7)  # nothing beyond n_features=None


def test_compressed_and_plain(tmp_path):
    text = "# header comment\n3 qid:7 1:0.5 4:2 # doc a\n\n1 qid:7 2:1.5\n0 qid:2 4:-1e-3\n"
    (tmp_path / "p.txt").write_text(text)
    with gzip.open(tmp_path / "p.txt.gz", "wt") as fh:
        fh.write(text)
    with bz2.open(tmp_path / "p.txt.bz2", "wt") as fh:
        fh.write(text)
    for name in ("p.txt", "p.txt.gz", "p.txt.bz2"):
        X, y, q = load_svmlight(tmp_path / name)
        assert np.array_equal(X.toarray(), [[0.5, 0, 0, 2], [0, 1.5, 0, 0], [0, 0, 0, -1e-3]])
        assert np.array_equal(y, [3, 1, 0]) and np.array_equal(q, [7, 7, 2])
    (tmp_path / "n.txt").write_text("1 1:1\n0 2:1\n")
    assert load_svmlight(tmp_path / "n.txt")[2] is None


def test_malformed_gzip_names_line(tmp_path):
    with gzip.open(tmp_path / "bad.gz", "wt") as fh:
        fh.write("1 qid:1 1:1\n1 qid:1 1:1 2:1e400\n")
    with pytest.raises(ValueError, match=r"bad.gz:2: value of feature 2: '1e400' is not finite"):
        load_svmlight(tmp_path / "bad.gz")
    (tmp_path / "bin.gz").write_bytes(b"\x1f\x8b\x08\x00garbage")
    with pytest.raises(ValueError, match=r"bin.gz"):
        load_svmlight(tmp_path / "bin.gz")
    with pytest.raises(FileNotFoundError, match="no such file"):
        load_svmlight(tmp_path / "nope.txt")
    with pytest.raises(ValueError, match="is a directory"):
        load_svmlight(tmp_path)


@pytest.mark.parametrize("line,msg", [
    ("1 qid:1 18446744073709551616:1.0", r":2: feature index 18446744073709551616 .* beyond the largest"),
    ("1 qid:1 3:1 9223372036854775808:2", r":2: feature index 9223372036854775808 .* beyond the largest"),
    ("1 qid:18446744073709551616 1:1.0", r":2: query id 'qid:18446744073709551616' is outside the 64-bit"),
    ("1 qid:-9223372036854775809 1:1.0", r":2: query id .* is outside the 64-bit"),
])
def test_indices_beyond_int64_name_the_line(tmp_path, line, msg):
    p = tmp_path / "big.txt"
    p.write_text("0 qid:1 1:0.5\n" + line + "\n")
    with pytest.raises(ValueError, match=msg) as info:
        load_svmlight(p)
    assert "Python int too large" not in str(info.value) and str(p) in str(info.value)


def _scores_by_line_scanner(path):
    """The oracle: the first number of every data line, one line at a time."""
    out = []
    for raw in path.read_bytes().split(b"\n"):
        line = raw.decode().split("#", 1)[0].strip()
        if line:
            out.append(float(line.split()[0]))
    return np.array(out)


@pytest.mark.parametrize("text", [
    "0.5\n-1e-300\n  2 7\n\n3.25\t9\n1.7976931348623157e308\n",  # plain: numpy's reader
    "1 # a comment\n# only a comment\n2\n",                          # comments: the line scanner
    "1\r\n2\r\n",                                                      # CRLF
    "1000\n\u00a02\n",                                                 # a non-ASCII space
    "4.9e-324\n-0\n.5\n5.\n+7\n",
])
def test_read_scores_equals_the_line_scanner(tmp_path, text):
    from fastrank._svmlight import read_scores

    p = tmp_path / "s.txt"
    p.write_bytes(text.encode())
    got, want = read_scores(p), _scores_by_line_scanner(p)
    assert got.dtype == np.float64 and np.array_equal(got.view(np.int64), want.view(np.int64))
    gz = tmp_path / "s.txt.gz"
    gz.write_bytes(gzip.compress(text.encode()))
    assert np.array_equal(read_scores(gz).view(np.int64), want.view(np.int64))


@pytest.mark.parametrize("text, message", [
    ("1\n2\n1e999\n", ":3: score '1e999' is not finite"),
    ("1\n-\n", ":2: score '-' is not a number"),
    ("1\n2e\n", ":2: score '2e' is not a number"),
    ("1\n1_000\n", ":2: score '1_000' is not a number"),  # Python's digit separators are no svmlight number
    ("1\nnan\n", ":2: score 'nan' is not finite"),
])
def test_read_scores_names_the_bad_line(tmp_path, text, message):
    from fastrank._svmlight import read_scores

    p = tmp_path / "s.txt"
    p.write_text(text)
    with pytest.raises(ValueError, match=f"^{re.escape(str(p) + message)}"):
        read_scores(p)


def test_read_scores_of_blank_file_is_empty(tmp_path):
    from fastrank._svmlight import read_scores

    p = tmp_path / "s.txt"
    p.write_text("\n  \n\t\n")
    assert read_scores(p).shape == (0,)


def test_a_pipe_reads_as_the_file_it_carries(tmp_path):
    # the reader opened the path twice: the second read of a pipe was empty ("the file has no data lines")
    from fastrank._svmlight import read_scores, read_svmlight

    text = b"# header\n2 qid:1 1:0.5 3:1 # c\n0 qid:1 2:0.25\r1 qid:2 1:1 2:2 3:3\n"  # a comment, a lone CR
    p = tmp_path / "d.txt"
    p.write_bytes(text)
    X, y, qid, info = read_svmlight(p)
    with pipe_path(text) as name:
        Xp, yp, qidp, infop = read_svmlight(name)
    assert (Xp != X).nnz == 0 and Xp.shape == X.shape == (3, 3)
    assert np.array_equal(yp, [2, 0, 1]) and np.array_equal(qidp, [1, 1, 2]) and infop == info
    bad = text + b"1 qid:2 1:x\n"  # named by the line checker, a second pass
    with pipe_path(bad) as name, pytest.raises(ValueError, match=f"^{name}:5: value of feature 1: 'x' is not a "
                                                                 "number$"):
        read_svmlight(name)
    with pipe_path(b"# scores\n0.5\n-2 # c\n") as name:  # the score reader's line scanner, after its fast path
        assert np.array_equal(read_scores(name), [0.5, -2.0])


@pytest.mark.parametrize("sep", [b"\x1c", b"\x1d", b"\x1e", b"\x1f"])
def test_a_separator_control_byte_is_named_with_its_line(tmp_path, sep):
    # str.split() splits at 0x1c-0x1f and the compiled parser (bytes.split()) does not: the line checker found
    # nothing and the parser's "could not convert string to float: b'0.1\x1c2:0.9'" was the message
    p = tmp_path / "sep.txt"
    p.write_bytes(b"1 qid:1 1:0.5 2:0.3\n0 qid:1 1:0.1" + sep + b"2:0.9\n")
    token = repr("0.1" + sep.decode() + "2:0.9")
    with pytest.raises(ValueError, match=f"^{re.escape(f'{p}:2: value of feature 1: {token} is not a number')}$"):
        load_svmlight(p)
