"""fastrank.save / fastrank.load: round trips, mid-stream online learners, tampered files, no pickle."""

import json
import zipfile

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import clone
from sklearn.model_selection import GroupKFold

import fastrank
from fastrank import _persist
from fastrank.datasets import load_lambdarank


@pytest.fixture(scope="module")
def data():
    d = load_lambdarank()
    keep = d.groups_train < 30  # a few hundred rows: fast
    return d.X_train[keep][:, :40], d.y_train[keep], d.groups_train[keep], d.X_test[:50, :40]


def _fit(est, X, y, g):
    if isinstance(est, (fastrank.RankRLS, fastrank.RankRLSCV)):
        return est.fit(X, y, g)
    return est.fit(X, y)


CASES = [
    ("rankrls-primal", lambda: fastrank.RankRLS(alpha=2.0)),
    ("rankrls-rbf", lambda: fastrank.RankRLS(alpha=2.0, kernel="rbf", gamma=0.05, group_weighting="normalized")),
    ("rankrls-poly", lambda: fastrank.RankRLS(alpha=5.0, kernel="poly", degree=2, solver="dual")),
    ("rankrls-cg", lambda: fastrank.RankRLS(alpha=2.0, solver="cg", tol=1e-10)),
    ("rankrls-basis", lambda: fastrank.RankRLS(alpha=2.0, kernel="rbf", basis_vectors=30, random_state=0)),
    ("rankrlscv", lambda: fastrank.RankRLSCV(alphas=[0.1, 1.0, 10.0], cv="lgo", kernel="rbf", gamma=0.05)),
    ("mprank", lambda: fastrank.MPRank(C=3.0, kernel="rbf", gamma=0.05)),
    ("prank", lambda: fastrank.PRank()),
    ("prank-rbf-budget", lambda: fastrank.PRank(kernel="rbf", gamma=0.1, budget=40)),
    ("oapbpm-voted", lambda: fastrank.OAPBPM(n_estimators=7, tau=0.5, variant="voted", random_state=3)),
    ("oapbpm-poly", lambda: fastrank.OAPBPM(n_estimators=4, kernel="poly", random_state=np.random.RandomState(1))),
    ("widrowhoff", lambda: fastrank.WidrowHoff(eta=0.01)),
    ("onlinemprank-linear", lambda: fastrank.OnlineMPRank(C=2.0, max_iter=50)),
    ("onlinemprank-rbf", lambda: fastrank.OnlineMPRank(C=2.0, kernel="rbf", gamma=0.05, max_iter=50)),
]


def _same_state(a, b):
    """Every attribute equal, arrays bit for bit (nested estimators recursively)."""
    assert type(a) is type(b)
    assert a.get_params(deep=False).keys() == b.get_params(deep=False).keys()
    for k, v in vars(a).items():
        if k == "_metadata_request":
            continue
        w = vars(b)[k]
        if isinstance(v, np.ndarray):
            assert w.dtype == v.dtype and w.shape == v.shape and np.array_equal(v, w), k
        elif sp.issparse(v):
            assert sp.issparse(w) and (v != w).nnz == 0 and v.shape == w.shape, k
        elif isinstance(v, fastrank.RankRLS):
            _same_state(v, w)
        elif isinstance(v, dict):
            assert v.keys() == w.keys(), k
        elif isinstance(v, np.random.RandomState):
            assert np.array_equal(v.get_state()[1], w.get_state()[1])
        elif hasattr(v, "kind") and hasattr(v, "gamma"):  # KernelSpec
            assert (v.kind, v.gamma, v.degree, v.coef0) == (w.kind, w.gamma, w.degree, w.coef0)
        else:
            assert type(v) is type(w) and (v == w or (v != v and w != w)), k


@pytest.mark.parametrize("name,make", CASES, ids=[c[0] for c in CASES])
def test_roundtrip_identical_predictions(name, make, data, tmp_path):
    X, y, g, Xt = data
    Xfit = sp.csr_matrix(X) if name == "rankrls-basis" else X  # sparse X_fit_ stored as CSR parts
    est = _fit(make(), Xfit, y, g)
    path = tmp_path / "model"
    assert fastrank.save(est, path) == str(path)
    assert path.exists() and not (tmp_path / "model.npz").exists()  # no extension added
    back = fastrank.load(path)
    _same_state(est, back)
    assert np.array_equal(est.predict(Xt), back.predict(Xt))
    if hasattr(est, "decision_function"):
        assert np.array_equal(est.decision_function(Xt), back.decision_function(Xt))
    if name == "rankrls-basis":
        assert sp.issparse(back.X_fit_)


def test_every_exported_estimator_roundtrips(data, tmp_path):
    """Every estimator class fastrank exports (also ones added later) round-trips with defaults."""
    X, y, g, Xt = data
    classes = _persist._estimator_classes()
    assert {"RankRLS", "RankRLSCV", "MPRank", "PRank", "OAPBPM", "WidrowHoff", "OnlineMPRank"} <= set(classes)
    for name, cls in classes.items():
        est = cls()
        try:
            est.fit(X, y, g)
        except TypeError:
            est.fit(X, y)
        fastrank.save(est, tmp_path / name)
        back = fastrank.load(tmp_path / name)
        assert np.array_equal(est.predict(Xt), back.predict(Xt)), name


@pytest.mark.parametrize("make", [
    lambda: fastrank.OAPBPM(n_estimators=6, tau=0.4, variant="bagging", random_state=5),
    lambda: fastrank.PRank(kernel="rbf", gamma=0.1, budget=25),
    lambda: fastrank.WidrowHoff(eta=0.01),
    lambda: fastrank.OnlineMPRank(C=2.0, kernel="rbf", gamma=0.05, max_iter=30),
], ids=["oapbpm", "prank-kernel", "widrowhoff", "onlinemprank"])
def test_online_learner_mid_stream(make, data, tmp_path):
    X, y, _, Xt = data
    classes = np.unique(y)
    a = make()
    kw = {} if isinstance(a, fastrank.OnlineMPRank) else {"classes": classes}
    a.partial_fit(X[:100], y[:100], **kw)
    fastrank.save(a, tmp_path / "mid")
    b = fastrank.load(tmp_path / "mid")
    a.partial_fit(X[100:], y[100:])
    b.partial_fit(X[100:], y[100:])
    _same_state(a, b)
    assert np.array_equal(a.predict(Xt), b.predict(Xt))
    if hasattr(a, "rank_loss_curve"):
        assert np.array_equal(a.rank_loss_curve(), b.rank_loss_curve())
        assert b.rank_loss_curve().size == X.shape[0]


def test_unfitted_estimator_roundtrips(tmp_path):
    est = fastrank.RankRLS(alpha=0.5, kernel="rbf", gamma=0.2, basis_vectors=np.array([0, 3, 5]))
    fastrank.save(est, tmp_path / "u")
    back = fastrank.load(tmp_path / "u")
    assert back.alpha == 0.5 and back.kernel == "rbf" and np.array_equal(back.basis_vectors, [0, 3, 5])
    assert not hasattr(back, "fit_mode_")


def test_float32_storage_halves_size_and_changes_predictions_by_1e7(data, tmp_path):
    X, y, g, Xt = data
    rng = np.random.default_rng(0)
    Xr = X + rng.normal(scale=1e-3, size=X.shape)  # full-precision floats: compression cannot hide the size
    est = fastrank.RankRLS(alpha=2.0, kernel="rbf", gamma=0.05).fit(Xr, y, g)
    fastrank.save(est, tmp_path / "f64", compress=False)
    fastrank.save(est, tmp_path / "f32", compress=False, dtype="float32")
    s64, s32 = (tmp_path / "f64").stat().st_size, (tmp_path / "f32").stat().st_size
    assert s32 < 0.55 * s64
    back = fastrank.load(tmp_path / "f32")
    assert back.X_fit_.dtype == np.float64 and back.dual_coef_.dtype == np.float64
    p, q = est.predict(Xt), back.predict(Xt)
    assert not np.array_equal(p, q)
    assert np.max(np.abs(p - q)) <= 1e-6 * np.max(np.abs(p))


@pytest.mark.parametrize("scale", [1e45, 1e-40])
def test_float32_storage_keeps_values_outside_its_normal_range_in_float64(scale, tmp_path):
    # coefficients near 1e-45 rounded to float32 subnormals (predictions moved by 16 % of the largest); near 1e40 they
    # became inf (numpy's overflow warning, and a file load refused as tampered)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3))
    y = X @ [1.0, 2.0, 3.0] + 0.1 * rng.normal(size=30)
    est = fastrank.RankRLS(alpha=scale ** -2 * 100).fit(X * scale, y)
    assert not 1.2e-38 < np.abs(est.coef_).min() < 3.4e38
    fastrank.save(est, tmp_path / "f32", dtype="float32")
    back = fastrank.load(tmp_path / "f32")
    np.testing.assert_array_equal(back.coef_, est.coef_)
    # a kernel model's rows at that scale too, beside its float32 dual coefficients
    est = fastrank.RankRLS(kernel="rbf", gamma=0.5 / scale ** 2).fit(X * scale, y)
    fastrank.save(est, tmp_path / "k32", dtype="float32")
    back = fastrank.load(tmp_path / "k32")
    np.testing.assert_array_equal(back.X_fit_, est.X_fit_)
    assert np.max(np.abs(back.dual_coef_ - est.dual_coef_)) <= 2.0**-24 * np.max(np.abs(est.dual_coef_))


def test_metadata_roundtrip(data, tmp_path):
    X, y, g, _ = data
    est = fastrank.RankRLS().fit(X, y, g)
    fastrank.save(est, tmp_path / "m", metadata={"svmlight": {"zero_based": False, "n_features": 40}})
    _, meta = fastrank.load(tmp_path / "m", return_metadata=True)
    assert meta == {"svmlight": {"zero_based": False, "n_features": 40}}
    with pytest.raises(TypeError, match="JSON"):
        fastrank.save(est, tmp_path / "m2", metadata={"x": object()})


def test_unsupported_values_are_refused_by_name(data, tmp_path):
    from sklearn.linear_model import Ridge

    X, y, g, _ = data
    with pytest.raises(TypeError, match="not a fastrank estimator"):
        fastrank.save(Ridge().fit(X, y), tmp_path / "r")
    cv = fastrank.RankRLSCV(alphas=[1.0, 10.0], cv=GroupKFold(n_splits=3))
    cv.fit(X, y, g)
    with pytest.raises(TypeError, match=r"model\.cv \(parameter\)"):
        fastrank.save(cv, tmp_path / "cv")
    assert not (tmp_path / "cv").exists()
    assert not list(tmp_path.glob(".fastrank-*"))  # the temporary file is removed


# ----------------------------------------------------------------------------------------------
# tampered / corrupted files
# ----------------------------------------------------------------------------------------------
def _read(path):
    with np.load(path, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    return json.loads(arrays.pop("header").tobytes()), arrays


def _write(path, header, arrays, checksum=True, **extra):
    """Write an edited model; by default with a recomputed checksum (an edit by someone who knows the
    format), so that the structural checks behind the checksum are what the test exercises."""
    if checksum:
        try:
            header["checksum"] = {"sha256": _persist._digest(header, arrays)}
        except (TypeError, ValueError):  # object arrays cannot be hashed; the load refuses them anyway
            pass
    raw = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
    with open(path, "wb") as fh:
        np.savez(fh, header=raw, **arrays, **extra)


@pytest.fixture()
def saved(data, tmp_path):
    X, y, g, _ = data
    est = fastrank.RankRLS(alpha=2.0, kernel="rbf", gamma=0.05).fit(X, y, g)
    path = tmp_path / "good"
    fastrank.save(est, path)
    return path


def _key_of(header, attr):
    return header["state"][attr]["$array"]


def test_tampered_newer_version(saved):
    h, a = _read(saved)
    h["format_version"] = _persist.FORMAT_VERSION + 1
    _write(saved, h, a)
    with pytest.raises(ValueError, match=rf"format version {_persist.FORMAT_VERSION + 1} .*reads versions up to "
                                         rf"{_persist.FORMAT_VERSION}: upgrade"):
        fastrank.load(saved)


@pytest.mark.parametrize("edit,msg", [
    (lambda h, a: h.__setitem__("class", "os.system"), "not a fastrank estimator"),
    (lambda h, a: h.__setitem__("class", "Ridge"), "not a fastrank estimator"),
    (lambda h, a: a.pop(_key_of(h, "dual_coef_")), "missing from the archive"),
    (lambda h, a: a.__setitem__(_key_of(h, "dual_coef_"), a[_key_of(h, "dual_coef_")][:-1]), "holds dtype"),
    (lambda h, a: a.__setitem__(_key_of(h, "dual_coef_"), a[_key_of(h, "dual_coef_")].astype(np.float32)),
     "holds dtype"),
    (lambda h, a: h["state"].__setitem__("__class__", None), "not allowed"),
    (lambda h, a: h["state"].__setitem__("predict", None), "not allowed"),
    (lambda h, a: h["params"].__setitem__("no_such_param", 1), "parameters of RankRLS"),
    (lambda h, a: h["state"].__setitem__("x_", {"$pickle": "cos\nsystem\n"}), "unknown tagged value"),
    (lambda h, a: a.__setitem__("a99", np.zeros(3)), "unexpected members"),
    (lambda h, a: h.__setitem__("format", "something-else"), "does not describe a fastrank model"),
    (lambda h, a: h["arrays"][_key_of(h, "dual_coef_")].__setitem__("dtype", "|O"), "is not allowed"),
], ids=["os.system", "foreign-class", "missing-array", "wrong-shape", "wrong-dtype", "dunder-attr",
        "method-attr", "unknown-param", "unknown-tag", "extra-member", "wrong-format",
        "object-dtype"])
def test_tampered_file_fails_cleanly(saved, edit, msg):
    h, a = _read(saved)
    edit(h, a)
    _write(saved, h, a)
    with pytest.raises(ValueError, match=msg) as info:
        fastrank.load(saved)
    assert str(saved) in str(info.value)


def test_deeply_nested_header_fails_cleanly(saved):
    h, a = _read(saved)
    text = json.dumps(h)
    deep = '{"$list": [' * 20000 + "1" + "]}" * 20000
    text = text.replace('"state": {', '"state": {"deep_": ' + deep + ", ", 1)
    with open(saved, "wb") as fh:
        np.savez(fh, header=np.frombuffer(text.encode(), dtype=np.uint8), **a)
    with pytest.raises(ValueError, match="corrupted or tampered"):
        fastrank.load(saved)


def test_consistent_but_wrong_shapes_are_caught(saved):
    """Header and array edited together (a shape the header agrees with) still fails cleanly."""
    h, a = _read(saved)
    key = _key_of(h, "dual_coef_")
    a[key] = a[key][:-5]
    h["arrays"][key]["shape"] = list(a[key].shape)
    h["state"]["dual_coef_"]["shape"] = list(a[key].shape)
    _write(saved, h, a)
    with pytest.raises(ValueError, match="fitted state is inconsistent"):
        fastrank.load(saved)


@pytest.mark.parametrize("cut", [0.5, 0.95])
def test_truncated_file(saved, cut):
    raw = saved.read_bytes()
    saved.write_bytes(raw[: int(len(raw) * cut)])
    with pytest.raises(ValueError, match="not a readable fastrank model file"):
        fastrank.load(saved)


def test_garbage_and_other_files(tmp_path):
    p = tmp_path / "junk"
    p.write_bytes(b"\x00\x01not a model at all" * 10)
    with pytest.raises(ValueError, match="not a readable fastrank model file"):
        fastrank.load(p)
    q = tmp_path / "arr.npy"
    np.save(q, np.arange(3))
    with pytest.raises(ValueError, match="single NumPy array"):
        fastrank.load(q)
    with pytest.raises(FileNotFoundError):
        fastrank.load(tmp_path / "missing")


class _Boom:
    def __reduce__(self):
        return (open, (str(_Boom.marker), "w"))


def test_pickled_object_array_is_never_unpickled(saved, tmp_path):
    """A file smuggling a pickled object array: refused, and the pickle payload never runs."""
    _Boom.marker = tmp_path / "pwned"
    h, a = _read(saved)
    key = _key_of(h, "dual_coef_")
    bomb = np.empty(1, dtype=object)
    bomb[0] = _Boom()
    a[key] = bomb
    _write(saved, h, a)
    with pytest.raises(ValueError, match=str(saved)):
        fastrank.load(saved)
    assert not _Boom.marker.exists()


def test_no_pickle_involved(saved, monkeypatch):
    calls = []
    real = np.load

    def spy(*args, **kwargs):
        calls.append(kwargs.get("allow_pickle"))
        return real(*args, **kwargs)

    monkeypatch.setattr(np, "load", spy)
    fastrank.load(saved)
    assert all(c is False for c in calls)  # arrays are read from their .npy headers, never unpickled
    with zipfile.ZipFile(saved) as zf:
        for name in zf.namelist():
            with zf.open(name) as fh:
                arr = np.lib.format.read_array(fh, allow_pickle=False)  # raises on object arrays
                assert not arr.dtype.hasobject, name


def test_cli_cv_estimator_is_clonable_after_load(saved):
    back = fastrank.load(saved)
    c = clone(back)
    assert c.get_params() == back.get_params()


def test_file_permissions_follow_umask(data, tmp_path):
    import os
    import stat

    X, y, g, _ = data
    mask = os.umask(0o022)
    try:
        fastrank.save(fastrank.RankRLS().fit(X, y, g), tmp_path / "perm")
    finally:
        os.umask(mask)
    assert stat.S_IMODE((tmp_path / "perm").stat().st_mode) == 0o644


# ----------------------------------------------------------------------------------------------
# sizes checked before inflation, checksum, per-class consistency, damaged compressed data
# ----------------------------------------------------------------------------------------------
def _rewrite_member(path, name, payload_writer):
    """Copy the archive with member ``name`` replaced by what payload_writer(fh) streams."""
    src = path.read_bytes()
    import io

    with zipfile.ZipFile(io.BytesIO(src)) as zin, zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            if info.filename == name:
                with zout.open(name, "w", force_zip64=True) as fh:
                    payload_writer(fh)
            else:
                zout.writestr(info, zin.read(info.filename))


def test_8_tib_member_header_refused_before_allocation(saved):
    import tracemalloc

    h, _ = _read(saved)
    name = _key_of(h, "dual_coef_") + ".npy"

    def huge(fh):  # a ~200-byte member whose .npy header asks for 2**40 float64 (8 TiB)
        np.lib.format.write_array_header_1_0(fh, {"descr": "<f8", "fortran_order": False, "shape": (2**40,)})
        fh.write(b"\0" * 64)

    _rewrite_member(saved, name, huge)
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=rf"{saved}.*{name}") as info:
            fastrank.load(saved)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20 * 2**20
    assert "Unable to allocate" not in str(info.value)


def test_256_mib_member_is_not_inflated_before_the_size_check(saved):
    import tracemalloc

    h, _ = _read(saved)
    name = _key_of(h, "dual_coef_") + ".npy"
    shape = h["arrays"][_key_of(h, "dual_coef_")]["shape"]

    def bomb(fh):  # the right .npy header followed by 256 MiB of zeros (compresses to ~250 kB)
        np.lib.format.write_array_header_1_0(fh, {"descr": "<f8", "fortran_order": False, "shape": tuple(shape)})
        chunk = b"\0" * 2**24
        for _ in range(16):
            fh.write(chunk)

    _rewrite_member(saved, name, bomb)
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match="size in the zip directory"):
            fastrank.load(saved)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20 * 2**20  # nothing of the 256 MiB was inflated


def test_total_size_capped_by_the_memory_limit(saved, monkeypatch):
    monkeypatch.setenv("FASTRANK_MAX_DENSE_BYTES", "1K")
    with pytest.raises(ValueError, match=rf"{saved}.*more than the memory limit"):
        fastrank.load(saved)


@pytest.mark.parametrize("flip_at", [0.2, 0.5, 0.8])
def test_byte_flipped_compressed_file_names_the_file_without_zlib_text(saved, flip_at):
    raw = bytearray(saved.read_bytes())
    with zipfile.ZipFile(saved) as zf:  # flip one byte inside the largest member's compressed data
        info = max(zf.infolist(), key=lambda i: i.compress_size)
        start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    pos = start + int(info.compress_size * flip_at)
    raw[pos] ^= 0x5A
    saved.write_bytes(bytes(raw))
    with pytest.raises(ValueError) as err:
        fastrank.load(saved)
    msg = str(err.value)
    assert msg.startswith(f"{saved}: ") and "Error -3" not in msg and "decompressing" not in msg


def test_edits_without_a_new_checksum_are_detected(data, tmp_path):
    X, y, g, Xt = data
    classes = np.unique(y)
    vp = fastrank.PRankVP().partial_fit(X, y, classes=classes)
    fastrank.save(vp, tmp_path / "vp")
    h, a = _read(tmp_path / "vp")
    h["class"] = "PRank"  # PRank would load the same arrays and predict differently
    _write(tmp_path / "vp", h, a, checksum=False)
    with pytest.raises(ValueError, match=rf"{tmp_path / 'vp'}.*checksum does not match"):
        fastrank.load(tmp_path / "vp")

    rls = fastrank.RankRLS(alpha=2.0).fit(X, y, g)
    fastrank.save(rls, tmp_path / "rls")
    for edit in (lambda h, a: h["params"].__setitem__("alpha", 3.0),
                 lambda h, a: a[_key_of(h, "coef_")].__setitem__(0, np.nan),
                 lambda h, a: a[_key_of(h, "coef_")].__setitem__(1, 0.5)):
        h, a = _read(tmp_path / "rls")
        edit(h, a)
        _write(tmp_path / "edited", h, a, checksum=False)
        with pytest.raises(ValueError, match="checksum does not match"):
            fastrank.load(tmp_path / "edited")
    h, a = _read(tmp_path / "rls")
    del h["checksum"]
    _write(tmp_path / "edited", h, a, checksum=False)
    with pytest.raises(ValueError, match="has no checksum"):
        fastrank.load(tmp_path / "edited")


@pytest.mark.parametrize("edit,msg", [
    (lambda h, a: a[_key_of(h, "coef_")].__setitem__(0, np.nan), r"coef_ contains NaN"),
    (lambda h, a: a[_key_of(h, "coef_")].__setitem__(0, np.inf), r"coef_ contains NaN"),
    (lambda h, a: h["params"].__setitem__("alpha", -1.0), r"parameter fails RankRLS's checks.*alpha"),
    (lambda h, a: h["params"].__setitem__("alpha", {"$float": "nan"}), r"parameter fails RankRLS's checks"),
    (lambda h, a: h["params"].__setitem__("kernel", "no-such-kernel"), r"parameter fails RankRLS's checks"),
], ids=["nan-weight", "inf-weight", "negative-alpha", "nan-alpha", "bad-kernel"])
def test_consistent_edits_still_checked_per_class(data, tmp_path, edit, msg):
    """Edited with a recomputed checksum: the class's own parameter checks and finite arrays."""
    X, y, g, _ = data
    fastrank.save(fastrank.RankRLS(alpha=2.0).fit(X, y, g), tmp_path / "m")
    h, a = _read(tmp_path / "m")
    edit(h, a)
    _write(tmp_path / "m", h, a)
    with pytest.raises(ValueError, match=msg):
        fastrank.load(tmp_path / "m")


def test_online_learner_parameters_rechecked(data, tmp_path):
    X, y, _, _ = data
    fastrank.save(fastrank.PRank(n_epochs=2).fit(X, y), tmp_path / "p")
    h, a = _read(tmp_path / "p")
    h["params"]["n_epochs"] = 0
    _write(tmp_path / "p", h, a)
    with pytest.raises(ValueError, match="n_epochs"):
        fastrank.load(tmp_path / "p")


@pytest.mark.parametrize("make,name", [(lambda: fastrank.RankRLSCV(alphas=[1.0, 10.0]), "alphas"),
                                       (lambda: fastrank.MPRankCV(Cs=[1.0, 10.0]), "Cs")])
def test_searched_grids_rechecked(make, name, data, tmp_path):
    """A grid edited to hold a non-positive value (checksum recomputed) fails as the class's own fit would."""
    X, y, g, _ = data
    fastrank.save(make().fit(X, y, g), tmp_path / "m")
    h, a = _read(tmp_path / "m")
    h["params"][name] = {"$list": [-1.0, 10.0]}
    _write(tmp_path / "m", h, a)
    with pytest.raises(ValueError, match=rf"parameter fails .*{name} must be finite and > 0"):
        fastrank.load(tmp_path / "m")


def test_format_version_1_without_checksum_loads_with_a_warning(data, tmp_path):
    from fastrank.exceptions import ModelFileWarning

    X, y, g, Xt = data
    est = fastrank.RankRLS(alpha=2.0).fit(X, y, g)
    fastrank.save(est, tmp_path / "v1")
    h, a = _read(tmp_path / "v1")
    del h["checksum"]
    h["format_version"] = 1
    _write(tmp_path / "v1", h, a, checksum=False)
    with pytest.warns(ModelFileWarning, match="no checksum"):
        back = fastrank.load(tmp_path / "v1")
    assert np.array_equal(back.predict(Xt), est.predict(Xt))


@pytest.mark.parametrize("make", [
    lambda: fastrank.RankRLS(alpha=2.0, solver="dual"),
    lambda: fastrank.MPRank(C=3.0, solver="dual"),
    lambda: fastrank.RankRLS(alpha=2.0, basis_vectors=60, random_state=0),
], ids=["rankrls-dual", "mprank-dual", "rankrls-basis"])
def test_linear_dual_model_stores_one_weight_vector(data, tmp_path, make):
    X, y, g, Xt = data
    est = make().fit(X, y, g)
    assert est.X_fit_ is not None and est.dual_coef_ is not None  # fitted in the dual: it keeps training rows
    fastrank.save(est, tmp_path / "lin")
    h, a = _read(tmp_path / "lin")
    assert sum(v.size for v in a.values()) <= X.shape[1] + 2 * 60  # the weight vector (+ basis indices)
    back = fastrank.load(tmp_path / "lin")
    assert back.X_fit_ is None and back.dual_coef_ is None and back.coef_.shape == (X.shape[1],)
    p, q = est.predict(Xt), back.predict(Xt)
    assert np.max(np.abs(p - q)) <= 1e-12 * np.max(np.abs(p))
    assert est.X_fit_ is not None  # saving does not change the fitted model


def test_rankboost_minus_infinity_thresholds_roundtrip(tmp_path):
    """missing="q_def" weak rankers store threshold -inf: legitimate, unlike NaN."""
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 60).astype(float)
    g = np.repeat(np.arange(6), 10)
    X = rng.normal(size=(60, 3))
    X[:, 0] = np.where(y > 0, rng.normal(size=60), np.nan)  # "has x_0" separates: a -inf threshold
    est = fastrank.RankBoost(n_estimators=10, missing="q_def").fit(X, y, g)
    assert np.isneginf(est.thresholds_).any()
    fastrank.save(est, tmp_path / "rb")
    back = fastrank.load(tmp_path / "rb")
    assert np.array_equal(est.predict(X), back.predict(X), equal_nan=True)
    h, a = _read(tmp_path / "rb")
    a[_key_of(h, "thresholds_")][0] = np.nan
    _write(tmp_path / "rb", h, a)
    with pytest.raises(ValueError, match="thresholds_ contains NaN"):
        fastrank.load(tmp_path / "rb")
