"""Branches of the model files, the command line, the svmlight reader, progress reporting, fastrank.dask and
the demo that no other test reaches: each reached through its public entry point and checked against
the definition (explicit pairs) or for the exact message."""

import io
import json
import os
import struct
import zipfile

import numpy as np
import pytest
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


class _PlainRanker(fastrank.RankRLS):
    """A registered learner without declared parameter constraints (register_estimator takes any class)."""

    _parameter_constraints = None


def test_a_registered_class_without_constraints_roundtrips(small, tmp_path, monkeypatch):
    X, y, g = small
    monkeypatch.setitem(ESTIMATORS, "_PlainRanker", _PlainRanker)
    monkeypatch.delattr(_PlainRanker, "_parameter_constraints")
    est = _PlainRanker(alpha=3.0).fit(X, y, g)
    fastrank.save(est, tmp_path / "m")
    back = fastrank.load(tmp_path / "m")
    assert type(back) is _PlainRanker and np.array_equal(back.predict(X), est.predict(X))


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
