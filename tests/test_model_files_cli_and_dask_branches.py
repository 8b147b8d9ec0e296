"""Branches of the model files, the command line, the svmlight reader, progress reporting, fastrank.dask and
the demo, each reached through its public entry point and checked against the definition (explicit pairs) or for
the exact message."""

import io
import json
import os
import re
import struct
import zipfile

import numpy as np
import pytest
from sklearn.base import BaseEstimator
from sklearn.datasets import dump_svmlight_file

import fastrank
from fastrank import _persist, cli
from fastrank._registry import ESTIMATORS
from test_persist import _key_of, _read, _write


@pytest.fixture(scope="module")
def small():
    rng = np.random.RandomState(0)
    X = rng.randn(30, 4)
    y = rng.randint(0, 3, 30).astype(float)
    return X, y, np.repeat([1, 2, 3], 10)


@pytest.fixture()
def saved(small, tmp_path):
    X, y, g = small
    path = tmp_path / "good"
    fastrank.save(fastrank.RankRLS(alpha=2.0, kernel="rbf", gamma=0.1).fit(X, y, g), path)
    return path


# ----------------------------------------------------------------------------------------------
# fastrank.save: values the format cannot hold, arguments, a failed write
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("attr,value,msg", [
    ("extra_", np.array([object()], dtype=object), r"cannot save model\.extra_: arrays of dtype object are not "
                                                   r"supported"),
    ("extra_", np.zeros(2, dtype=[("a", "<f8")]), r"cannot save model\.extra_: arrays of dtype"),
    ("extra_", np.datetime64("2020-01-01"), r"cannot save model\.extra_: NumPy scalar of dtype datetime64"),
    ("extra_", {1: 2.0}, r"cannot save model\.extra_: dictionary key 1 is not a string"),
], ids=["object-array", "structured-array", "datetime-scalar", "int-key"])
def test_save_names_the_attribute_it_cannot_store(small, tmp_path, attr, value, msg):
    X, y, g = small
    est = fastrank.RankRLS().fit(X, y, g)
    setattr(est, attr, value)
    with pytest.raises(TypeError, match=msg):
        fastrank.save(est, tmp_path / "m")
    assert not os.listdir(tmp_path)  # nothing written, no temporary file left


def test_save_argument_messages(small, tmp_path):
    est = fastrank.RankRLS()
    with pytest.raises(ValueError, match=r"^dtype must be None or 'float32', got 'float16'$"):
        fastrank.save(est, tmp_path / "m", dtype="float16")
    with pytest.raises(TypeError, match=r"^metadata must be a dict or None, got list$"):
        fastrank.save(est, tmp_path / "m", metadata=[1, 2])
    assert not os.listdir(tmp_path)


@pytest.mark.parametrize("alpha", [np.float16(2.5), np.int8(3), np.float32(0.1)], ids=["float16", "int8", "float32"])
def test_numpy_scalar_parameters_load_with_their_type_and_value(small, tmp_path, alpha):
    X, y, g = small
    est = fastrank.RankRLS(alpha=alpha).fit(X, y, g)
    fastrank.save(est, tmp_path / "m")
    back = fastrank.load(tmp_path / "m")
    assert type(back.alpha) is type(alpha) and back.alpha == alpha
    assert np.array_equal(back.predict(X), est.predict(X))


def test_a_failed_write_leaves_the_old_file_and_no_temporary_file(small, tmp_path, monkeypatch):
    """Disk full while the archive is written: the error reaches the caller, the file saved before is intact."""
    X, y, g = small
    path = tmp_path / "m"
    fastrank.save(fastrank.RankRLS(alpha=1.0).fit(X, y, g), path)
    before = path.read_bytes()

    def full(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(np, "savez_compressed", full)
    with pytest.raises(OSError, match="No space left on device"):
        fastrank.save(fastrank.RankRLS(alpha=5.0).fit(X, y, g), path)
    assert path.read_bytes() == before and os.listdir(tmp_path) == ["m"]


class _PlainRanker(BaseEstimator):
    """A registered learner that is no FastrankEstimator (register_estimator takes any class): least squares on the
    features, no declared parameter constraints."""

    def __init__(self, shift=0.0):
        self.shift = shift

    def fit(self, X, y):
        self.coef_ = np.linalg.lstsq(X, y, rcond=None)[0]
        self.n_features_in_ = X.shape[1]
        return self

    def predict(self, X):
        return np.asarray(X) @ self.coef_ + self.shift


def test_a_registered_class_without_constraints_roundtrips(small, tmp_path, monkeypatch):
    X, y, _ = small
    monkeypatch.setitem(ESTIMATORS, "_PlainRanker", _PlainRanker)
    est = _PlainRanker(shift=0.5).fit(X, y)
    fastrank.save(est, tmp_path / "m")
    back = fastrank.load(tmp_path / "m")
    assert type(back) is _PlainRanker and back.shift == 0.5
    assert np.array_equal(back.predict(X), est.predict(X))


# ----------------------------------------------------------------------------------------------
# fastrank.load: files edited by someone who knows the format (checksum recomputed)
# ----------------------------------------------------------------------------------------------
def _add_state(h, a, name, value):
    h["state"][name] = value


def _add_array(h, a, arr):
    key = f"a{len(a)}"
    a[key] = arr
    h["arrays"][key] = {"dtype": arr.dtype.str, "shape": list(arr.shape)}
    return {"$array": key, "dtype": arr.dtype.str, "shape": list(arr.shape)}


def _bad_sparse(h, a):  # an index pointer of 3 entries for 3 rows
    parts = [_add_array(h, a, x) for x in (np.ones(2), np.array([0, 1], np.int32), np.array([0, 1, 2], np.int32))]
    _add_state(h, a, "extra_", {"$sparse": "csr_matrix", "shape": [3, 2], "data": parts[0], "indices": parts[1],
                                "indptr": parts[2]})


@pytest.mark.parametrize("edit,msg", [
    (lambda h, a: h["state"]["dual_coef_"].__setitem__("shape", [1, 2]),
     r"array 'a\d+' has shape \[\d+\] but its reference says \[1, 2\]"),
    (lambda h, a: _add_state(h, a, "extra_", {"$scalar": "|O", "value": 1}), r"bad scalar dtype object"),
    (_bad_sparse, r"inconsistent sparse matrix"),
    (lambda h, a: _add_state(h, a, "extra_", {"$float": "1e5"}), r"bad float '1e5'"),
    (lambda h, a: _add_state(h, a, "extra_", {"$kernel": {"kind": "sigmoid", "gamma": 1.0, "degree": 3,
                                                          "coef0": 1.0}}), r"unknown kernel kind 'sigmoid'"),
    (lambda h, a: h.__setitem__("format_version", "2"), r"bad format_version '2'"),
    (lambda h, a: h.__setitem__("format_version", True), r"bad format_version True"),
    (lambda h, a: h.__setitem__("arrays", []), r"the header has no array table"),
], ids=["reference-shape", "object-scalar", "sparse", "float", "kernel", "version-text", "version-bool",
        "array-table"])
def test_edited_header_fails_naming_the_file_and_the_problem(saved, edit, msg):
    h, a = _read(saved)
    edit(h, a)
    if isinstance(h.get("arrays"), dict):
        _write(saved, h, a)
    else:  # the checksum needs the array table: written without one
        _write(saved, h, a, checksum=False)
    with pytest.raises(ValueError, match=rf"^{saved}: corrupted or tampered model file: {msg}"):
        fastrank.load(saved)


def test_prediction_of_the_wrong_shape_is_caught_at_load(small, tmp_path):
    """RankBoost's weak-ranker thresholds made a column: one row gets one score per weak ranker."""
    X, y, g = small
    path = tmp_path / "m"
    fastrank.save(fastrank.RankBoost(n_estimators=3).fit(X, y, g), path)
    h, a = _read(path)
    key = _key_of(h, "thresholds_")
    a[key] = a[key].reshape(-1, 1)
    h["arrays"][key]["shape"] = h["state"]["thresholds_"]["shape"] = list(a[key].shape)
    _write(path, h, a)
    with pytest.raises(ValueError, match=r"fitted state is inconsistent \(prediction of shape \(3,\) for one row\)$"):
        fastrank.load(path)


def _zip(path, members, compression=zipfile.ZIP_DEFLATED):
    with zipfile.ZipFile(path, "w", compression) as zf:
        for name, data in members.items():
            zf.writestr(name, data)


def _npy(arr, version=(1, 0)):
    buf = io.BytesIO()
    np.lib.format.write_array(buf, arr, version=version)
    return buf.getvalue()


def test_archive_structure_is_checked(saved, tmp_path):
    h, a = _read(saved)
    header = _npy(np.frombuffer(json.dumps(h).encode(), dtype=np.uint8))
    members = {"header.npy": header, **{f"{k}.npy": _npy(v) for k, v in a.items()}}
    cases = [
        ({**members, "evil.txt": b"x"}, r"corrupted or tampered model file: unexpected member 'evil.txt'"),
        ({k: v for k, v in members.items() if k != "header.npy"}, r"not a fastrank model file \(no header\)$"),
        ({**members, "header.npy": _npy(np.frombuffer(json.dumps(h).encode(), dtype=np.uint8).reshape(1, -1))},
         r"corrupted or tampered model file: the header is not a byte string"),
        ({**members, "header.npy": _npy(np.frombuffer(json.dumps(h).encode(), dtype=np.uint8), (3, 0))},
         r"corrupted or tampered model file: member 'header.npy' has an unsupported \.npy version \(3, 0\)"),
    ]
    for content, msg in cases:
        p = tmp_path / "edited"
        _zip(p, content)
        with pytest.raises(ValueError, match=rf"^{p}: {msg}"):
            fastrank.load(p)
    # a second member of the same name
    p = tmp_path / "twice"
    _zip(p, members)
    with pytest.warns(UserWarning, match="Duplicate name"), zipfile.ZipFile(p, "a") as zf:
        zf.writestr("header.npy", header)
    with pytest.raises(ValueError, match=rf"^{p}: corrupted or tampered model file: unexpected member 'header.npy'"):
        fastrank.load(p)


def test_header_beyond_the_cap_is_refused_before_it_is_read(saved, tmp_path):
    h, a = _read(saved)
    h["metadata"] = {"pad": " " * _persist._HEADER_CAP}
    p = tmp_path / "big"
    _write(p, h, a)
    size = zipfile.ZipFile(p).getinfo("header.npy").file_size
    with pytest.raises(ValueError, match=rf"^{p}: corrupted or tampered model file: the header member is {size} bytes "
                                         rf"\(at most {_persist._HEADER_CAP} allowed\)"):
        fastrank.load(p)


def _set_directory_size(path, name, size):
    """Patch the uncompressed size of member ``name`` in the zip's central directory."""
    raw = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo(name)
    at = raw.find(b"PK\x01\x02")
    while at >= 0:
        n = struct.unpack_from("<H", raw, at + 28)[0]
        if raw[at + 46:at + 46 + n].decode() == name:
            assert struct.unpack_from("<I", raw, at + 24)[0] == info.file_size
            struct.pack_into("<I", raw, at + 24, size)
            path.write_bytes(bytes(raw))
            return
        at = raw.find(b"PK\x01\x02", at + 4)
    raise AssertionError(name)


def test_member_shorter_than_its_directory_size_is_truncated(saved, tmp_path):
    """A deflated member whose data ends early (its CRC-32 that of the short data) but whose directory entry
    announces the full array: the read comes back short."""
    h, a = _read(saved)
    key = _key_of(h, "dual_coef_")
    full = _npy(a[key])
    members = {"header.npy": _npy(np.frombuffer(json.dumps(h).encode(), dtype=np.uint8)),
               **{f"{k}.npy": _npy(v) for k, v in a.items() if k != key}, f"{key}.npy": full[:-8]}
    p = tmp_path / "short"
    _zip(p, members)
    _set_directory_size(p, f"{key}.npy", len(full))
    with pytest.raises(ValueError, match=rf"^{p}: corrupted or tampered model file: member '{key}.npy' is truncated"):
        fastrank.load(p)


def test_flipped_byte_of_an_uncompressed_member_fails_its_crc(small, tmp_path):
    """compress=False: a flipped data byte is caught by zipfile's CRC-32 while the member is read."""
    X, y, g = small
    p = tmp_path / "m"
    fastrank.save(fastrank.RankRLS(kernel="rbf").fit(X, y, g), p, compress=False)
    raw = bytearray(p.read_bytes())
    with zipfile.ZipFile(p) as zf:
        info = max(zf.infolist(), key=lambda i: i.file_size)
    name_len, extra_len = struct.unpack_from("<HH", raw, info.header_offset + 26)  # the local header's lengths
    raw[info.header_offset + 30 + name_len + extra_len + info.file_size - 3] ^= 0x40
    p.write_bytes(bytes(raw))
    with pytest.raises(ValueError, match=rf"^{p}: corrupted or tampered model file: member '{info.filename}' cannot "
                                         r"be read \(its CRC-32 does not match\)$"):
        fastrank.load(p)


# ----------------------------------------------------------------------------------------------
# the command line
# ----------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def letor(tmp_path_factory, small):
    X, y, g = small
    root = tmp_path_factory.mktemp("letor")
    with_qid, without = root / "train.txt", root / "noqid.txt"
    dump_svmlight_file(X, y, str(with_qid), query_id=g, zero_based=False)
    dump_svmlight_file(X, y, str(without), zero_based=False)
    return with_qid, without


def _run(argv, capsys):
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("argv,msg", [
    (["--cv", "lgo", "--no-qid"], "--cv lgo (leave-query-out) needs qid: in the file and no --no-qid"),
    (["--cv", "1"], "--cv needs at least 2 folds"),
    (["--cv", "-3"], "--cv needs at least 2 folds"),
])
def test_cv_fold_arguments_are_usage_errors(letor, capsys, argv, msg):
    code, out, err = _run(["cv", *argv, letor[0]], capsys)
    assert (code, out, err) == (2, "", f"fastrank cv: error: {msg}\n")


def test_param_words_become_python_values(letor, tmp_path, capsys):
    """--param normalize_C=Yes is the bool True, random_state=none None (not the strings)."""
    tr = letor[0]
    m = tmp_path / "svm.frk"
    assert _run(["train", "-q", "--model", "RankSVM", "--param", "normalize_C=Yes", "--param", "random_state=none",
                 "--param", "C=2", tr, m], capsys)[0] == 0
    model = fastrank.load(m)
    assert model.normalize_C is True and model.random_state is None and model.C == 2


def test_a_multi_output_model_is_refused_by_predict_and_evaluate(small, letor, tmp_path, capsys):
    X, y, g = small
    m = tmp_path / "multi.frk"
    fastrank.save(fastrank.RankRLS().fit(X, np.c_[y, -y], g), m)
    for argv in (["predict", m, letor[0]], ["evaluate", "--model", m, letor[0]]):
        code, out, err = _run(argv, capsys)
        assert (code, out) == (1, "") and err == (f"fastrank {argv[0]}: error: the model predicts 2 outputs per row; "
                                                  "the command-line tool handles one\n")


def test_evaluate_without_qid_ranks_every_row_as_one_query(small, letor, tmp_path, capsys):
    """The measure over all pairs of the file (oracle: the pairs listed one by one, a score tie half an error)."""
    X, y, _ = small
    tr, noqid = letor
    m = tmp_path / "m.frk"
    assert _run(["train", "-q", "--normalize", "none", tr, m], capsys)[0] == 0
    code, out, err = _run(["evaluate", "-v", "--format", "json", "-m", "disagreement", "--model", m, noqid], capsys)
    assert code == 0
    assert f"[fastrank] {noqid} has no qid: and no query file: every row is ranked as one query\n" in err
    s = fastrank.load(m).predict(X)
    wrong = pairs = 0.0
    for i in range(y.size):
        for j in range(y.size):
            if y[i] > y[j]:
                pairs += 1
                wrong += 1.0 if s[i] < s[j] else 0.5 if s[i] == s[j] else 0.0
    assert json.loads(out)["mean"]["disagreement"] == pytest.approx(wrong / pairs, rel=1e-12)


def test_interrupt_exits_with_130_and_one_line(letor, tmp_path, capsys, monkeypatch):
    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "read_svmlight", interrupted)
    code, out, err = _run(["train", letor[0], tmp_path / "m"], capsys)
    assert (code, out, err) == (130, "", "fastrank train: interrupted\n")
    assert not (tmp_path / "m").exists()


# ----------------------------------------------------------------------------------------------
# the svmlight reader
# ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("content,msg", [
    (b"1 qid:1 1:0.5 qid:2 2:1\n", r":1: 'qid:2': qid must come right after the target, once per line$"),
    (b"1 qid:1 1:0.5\n1 1:0.5 qid:2\n", r":2: 'qid:2': qid must come right after the target, once per line$"),
    (b"1 qid:1 1:0.5\n2 qid:1 -1:0.5\n", r":2: feature index -1 in '-1:0.5' is negative$"),
    (b"1 qid:1 1:0.5\n\xff\xfe\x00\x01\n", r":2: line is not valid UTF-8 text \(is this a binary file\?\)$"),
    # a separator Python's str.split takes and the compiled reader does not: one token for both
    (b"1 qid:1 1:1\x1c2:3\n", r":1: value of feature 1: '1\\x1c2:3' is not a number$"),
])
def test_malformed_lines_are_named(tmp_path, content, msg):
    load_fails(tmp_path / "bad.txt", content, msg)


def load_fails(path, content, msg, **kwargs):
    """load_svmlight of ``path`` holding ``content`` is a ValueError naming the file, then ``msg``."""
    from fastrank.datasets import load_svmlight

    path.write_bytes(content)
    with pytest.raises(ValueError, match=rf"^{path}{msg}"):
        load_svmlight(path, **kwargs)


def test_zero_based_must_be_one_of_three_values(tmp_path):
    from fastrank.datasets import load_svmlight

    with pytest.raises(ValueError, match=r"^zero_based must be 'auto', True or False, got 'yes'$"):
        load_svmlight(tmp_path / "never-read.txt", zero_based="yes")


# ----------------------------------------------------------------------------------------------
# progress reporting
# ----------------------------------------------------------------------------------------------
class _Tty(io.StringIO):
    def isatty(self):
        return True


@pytest.mark.parametrize("seconds,shown", [(75.2, "1 min 15 s"), (119.6, "2 min 00 s"), (3725.0, "1 h 02 min")])
def test_long_stages_report_minutes_and_hours(monkeypatch, seconds, shown):
    from fastrank import _progress

    clock = iter([1000.0, 1000.0 + seconds])
    monkeypatch.setattr(_progress.time, "monotonic", lambda: next(clock))
    buf = io.StringIO()
    with _progress.stage("fitting", verbose=1, file=buf):
        pass
    assert buf.getvalue() == f"[fastrank] fitting ...\n[fastrank] fitting: done in {shown}\n"


def test_a_terminal_without_tqdm_gets_log_lines(small, monkeypatch):
    """verbose=1 on a terminal asks for a tqdm bar; tqdm is optional: log lines on stderr instead."""
    import sys

    X, y, g = small
    monkeypatch.setitem(sys.modules, "tqdm", None)  # import tqdm.auto raises ImportError
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)
    err = _Tty()
    monkeypatch.setattr(sys, "stderr", err)
    est = fastrank.RankBoost(n_estimators=4, verbose=1).fit(X, y, g)
    assert re.fullmatch(r"\[fastrank\] RankBoost: 4/4 round \(100%\), [0-9.]+ s done\n", err.getvalue())
    assert np.array_equal(est.predict(X), fastrank.RankBoost(n_estimators=4).fit(X, y, g).predict(X))


def test_a_terminal_with_tqdm_gets_a_bar_of_every_round(small, monkeypatch):
    """verbose=1 on a terminal with tqdm installed: one bar of n_estimators steps, advanced once per round."""
    import sys
    import types

    X, y, g = small
    bars = []

    class FakeTqdm:
        def __init__(self, total=None, desc=None, **kwargs):
            self.total, self.desc, self.n, self.closed = total, desc, 0, False
            bars.append(self)

        def update(self, n):
            self.n += n

        def close(self):
            self.closed = True

    fake = types.ModuleType("tqdm.auto")
    fake.tqdm = FakeTqdm
    monkeypatch.setitem(sys.modules, "tqdm", types.ModuleType("tqdm"))
    monkeypatch.setitem(sys.modules, "tqdm.auto", fake)
    monkeypatch.setattr(sys, "stderr", _Tty())
    fastrank.RankBoost(n_estimators=4, verbose=1).fit(X, y, g)
    assert [(b.total, b.desc, b.n, b.closed) for b in bars] == [(4, "RankBoost", 4, True)]


# ----------------------------------------------------------------------------------------------
# the demo (python -m fastrank --plot)
# ----------------------------------------------------------------------------------------------
def test_demo_plot_flag_writes_the_gaussian_models_curve(tmp_path, capsys, monkeypatch):
    pytest.importorskip("matplotlib")
    from fastrank import _demo
    from fastrank.__main__ import main

    alphas = np.logspace(-2, 2, 5)
    rows = [{"model": name, "alpha": 1.0, "disagreement": 0.3, "ndcg10": 0.7, "select_seconds": 0.1,
             "fit_seconds": 0.01, "validation_curve": (alphas, np.linspace(0.4, 0.3, 5))}
            for name in ("RankRLS linear (primal)", "RankRLS Gaussian (dual)", "ridge regression (sklearn)")]
    monkeypatch.setattr(_demo, "lambdarank_comparison", lambda verbose=0: ("summary", rows))
    png = tmp_path / "curve"
    assert main(["--plot", str(png)]) is rows
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    out = capsys.readouterr().out
    assert out.endswith(f"\nvalidation curve of the RankRLS Gaussian (dual) model written to {png}\n")


# ----------------------------------------------------------------------------------------------
# fastrank.dask
# ----------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def dsk(small):
    da = pytest.importorskip("dask.array")
    X, y, g = small
    return da, da.from_array(X, chunks=10), da.from_array(y, chunks=10), da.from_array(g, chunks=10)


def test_dask_argument_messages(small, dsk):
    from fastrank.dask import DaskRankRLS, DaskRankRLSCV, fit_oapbpm, rankrls_path

    da, Xd, yd, gd = dsk
    X, y, g = small
    labels = da.from_array(y.astype(int), chunks=10)
    cases = [
        (lambda: DaskRankRLS().fit(Xd, yd, gd.reshape(-1, 1)), ValueError,
         r"groups must be 1-D with one id per row, got shape \(30, 1\)"),
        (lambda: DaskRankRLS().fit(da.zeros((30, 0), chunks=10), yd), ValueError,
         r"Found array with 0 feature\(s\) \(shape=\(30, 0\)\) while a minimum of 1 is required\."),
        (lambda: DaskRankRLS().fit(Xd, yd, np.array([1, "a"] * 15, dtype=object)), TypeError,
         r"group ids in partition \d \(rows \d+:\d+\) must be mutually comparable, all numbers or all strings; got "
         r"the types \['int', 'str'\]"),
        (lambda: rankrls_path(Xd, yd, [1.0], estimator=fastrank.RankRLS()), TypeError,
         r"estimator must be a fastrank\.dask\.DaskRankRLS"),
        (lambda: DaskRankRLSCV(gammas=[], alphas=[1.0]).fit(X, y, g), ValueError,
         r"gammas must be a non-empty 1-D sequence of positive numbers, got shape \(0,\)"),
        (lambda: fit_oapbpm(fastrank.PRank(), Xd, labels), TypeError, r"estimator must be a fastrank\.OAPBPM"),
        (lambda: fit_oapbpm(fastrank.OAPBPM(shuffle=True), Xd, labels), ValueError,
         r"fit_oapbpm needs shuffle=False \(the stream order must be the row order\)"),
        (lambda: fit_oapbpm(fastrank.OAPBPM(), Xd, da.stack([labels, labels], axis=1)), ValueError,
         r"y must be 1-D with one label per row of X$"),
        (lambda: DaskRankRLS(kernel="precomputed").fit(da.from_array(X @ X.T, chunks=10), yd), ValueError,
         r"kernel='precomputed' is not supported on dask inputs \(the kernel matrix is m x m\); give features and a "
         r"kernel name with basis_vectors$"),
    ]
    for call, exc, msg in cases:
        with pytest.raises(exc, match=rf"^{msg}"):
            call()


def test_dask_basis_rows_with_nan_are_named(small, dsk):
    from fastrank.dask import DaskRankRLS

    da, _, yd, _ = dsk
    X = small[0].copy()
    X[5, 1] = np.nan  # a basis row; the other rows' NaN would be found by the statistics pass
    with pytest.raises(ValueError, match=r"^X contains NaN or infinity in the basis rows$"):
        DaskRankRLS(kernel="rbf", basis_vectors=np.array([5, 7])).fit(da.from_array(X, chunks=10), yd)


def test_dask_without_a_distributed_client_runs_one_block(small, dsk):
    """No active client: one member block (the default), the same model as OAPBPM.fit in memory."""
    distributed = pytest.importorskip("distributed")
    from fastrank.dask import fit_oapbpm

    da, Xd, _, _ = dsk
    X, y, _ = small
    with pytest.raises(ValueError):
        distributed.default_client()  # none is active
    est = fastrank.OAPBPM(n_estimators=5, random_state=0)
    got = fit_oapbpm(est, Xd, da.from_array(y.astype(int), chunks=10))
    want = fastrank.OAPBPM(n_estimators=5, random_state=0).fit(X, y.astype(int))
    assert np.array_equal(got.coef_, want.coef_) and np.array_equal(got.thresholds_, want.thresholds_)
    assert np.array_equal(got.decision_function(X), want.decision_function(X))
