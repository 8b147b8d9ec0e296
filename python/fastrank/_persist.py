"""Model files that are safe to load: ``fastrank.save(model, path)`` / ``fastrank.load(path)``.

Format (version 3)
------------------
A model file is a NumPy ``.npz`` archive (a zip of ``.npy`` arrays) whatever its file name:

* ``header``: a uint8 array holding UTF-8 JSON::

      {"format": "fastrank-model", "format_version": 2, "fastrank_version": "0.1.0", "class": "RankRLS",
       "params": {...}, "state": {...}, "arrays": {"a0": {...}, ...}, "metadata": {...}, "checksum": {"sha256": hex}}

  ``class`` is the estimator's name in the ``fastrank`` namespace; ``params`` its ``get_params(deep=False)``; ``state``
  every other attribute of the fitted estimator (the public ``*_`` attributes and documented private state, e.g. the
  online learners' stream position, seed and per-example losses); ``arrays`` the dtype and shape of every array member;
  ``metadata`` a JSON object the caller chose (the command-line tool records how the training file was read);
  ``checksum`` a SHA-256 over the header's JSON without it and every array member (name, dtype, shape, bytes).
  Version 1 files have no checksum and load with a ``ModelFileWarning``; version 3 is written only by files holding an
  array stored about an offset (below), version 2 otherwise.
* ``a0``, ``a1``, ...: the numeric arrays (float64 unless ``save(..., dtype="float32")``; integer, boolean and
  fixed-width string arrays as they are), stored with ``np.save`` rules (no object arrays); each is read from its
  ``.npy`` header and raw bytes after both are checked against the header (never unpickled).

JSON values are plain JSON for None/bool/int/str/finite floats and a one-key tagged object otherwise:
``{"$array": "a3", "dtype": "<f8", "shape": [m, n]}`` (with ``"stored": "<f4"`` when saved in float32, and for a kernel
model's float32 training rows ``"offset": {"$array": ...}``, the (n,) float64 values added back to the columns on
loading), ``{"$float": "nan"}``, ``{"$scalar": "<i8", "value": 3}`` (a NumPy scalar), ``{"$tuple": [...]}``,
``{"$list": [...]}``, ``{"$dict": [[key, value], ...]}``, ``{"$sparse": "csr_matrix", "shape": [m, n], "data": ...,
"indices": ..., "indptr": ...}`` (CSR parts), ``{"$kernel": {...}}`` (a resolved kernel), ``{"$random_state": [...]}``
(a ``numpy.random.RandomState``'s state) and ``{"$estimator": {"class", "params", "state"}}`` (a nested fitted
estimator, e.g. ``RankRLSCV.best_estimator_``).

Loading executes and imports nothing; its checks, what a model stores and the measured sizes are in
docs/design/cli-and-model-files.md.
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import numbers
import os
import re
import tempfile
import warnings
import zipfile
import zlib

import numpy as np
import scipy.sparse as sp

from ._kernels import KERNELS, resolve_kernel
from ._memory import dense_memory_limit
from ._registry import ESTIMATORS
from ._validation import check_alpha, check_alphas, check_bool, file_name
from ._version import __version__
from .exceptions import ModelFileWarning, user_stacklevel

__all__ = ["save", "load", "FORMAT_VERSION"]

FORMAT = "fastrank-model"
FORMAT_VERSION = 3  # 2: the header carries a SHA-256 checksum over itself and every array; 3: float32 training rows
# stored about their column means (an "offset" array), written only by files that hold such rows
_HEADER_CAP = 16 * 2**20  # a model header is a few kB; a larger one is refused before it is read
_MEMBER = re.compile(r"(header|a[0-9]{1,9})\.npy")
_ARRAY_KINDS = "biufcUS"  # bool, ints, floats, complex, fixed-width strings; never objects
_SKIPPED_STATE = ("_metadata_request",)  # scikit-learn's routing requests: set them again after load
_TRAINING_ROWS = ("X_fit_", "support_vectors_")  # dense rows a kernel model evaluates K(x, x_i) on
_KERNEL_FIELDS = ("kind", "gamma", "degree", "coef0")  # KernelSpec's constructor arguments, stored in this order


def _estimator_classes():
    """The whitelist: the registered estimator classes (see ``fastrank._registry``)."""
    return dict(ESTIMATORS)


def _registered(v, classes=ESTIMATORS):
    """Whether ``v`` is an instance of exactly a registered estimator class."""
    return classes.get(type(v).__name__) is type(v)


class _Corrupt(ValueError):
    pass


# -- encoding ----------------------------------------------------------------------------------
class _Encoder:
    def __init__(self, float32):
        self.arrays, self.entries = {}, {}  # member name -> array, and -> its header entry
        self.float32 = float32
        self.classes = _estimator_classes()
        self.version = 2  # the format version the file needs: 3 once an array is stored about an offset

    def array(self, a, where, shrink, rows=False):
        a = np.asarray(a)
        if a.dtype == object and a.size and all(isinstance(v, str) for v in a.flat):
            if any(v.endswith("\x00") for v in a.flat):  # fixed-width strings drop them: 'a' and 'a\x00' would merge
                raise TypeError(f"cannot save {where}: strings ending in NUL characters ('\\x00') are not kept by the "
                                "model format's fixed-width strings")
            a = a.astype(str)  # string labels of a pandas column (classes_): fixed-width, loaded as equal strings
        if a.dtype.kind not in _ARRAY_KINDS or a.dtype.fields is not None:
            raise TypeError(f"cannot save {where}: arrays of dtype {a.dtype} are not supported (only numeric, "
                            "boolean and fixed-width string arrays; object arrays would need pickle)")
        key = f"a{len(self.arrays)}"
        entry = {"dtype": a.dtype.str, "shape": list(a.shape)}
        offset = None
        if shrink and self.float32 and a.dtype == np.float64:
            stored = a
            if rows and a.ndim == 2 and a.shape[0]:
                # a column whose offset dominates its spread is rounded about its mean, keeping the differences a
                # Gaussian kernel reads (docs/design/cli-and-model-files.md, "Size")
                mean = a.mean(axis=0)
                shifted = np.abs(a).max(axis=0) > 4.0 * np.abs(a - mean).max(axis=0)
                if shifted.any():
                    offset = np.where(shifted, mean, 0.0)
                    stored = a - offset
            # float32 rounds to 2^-24 relative in its normal range only: below 1.2e-38 it keeps fewer bits, above
            # 3.4e38 it overflows; such an array stays float64
            magnitude = np.abs(stored[stored != 0])
            if magnitude.size == 0 or np.finfo(np.float32).tiny <= magnitude.min() <= magnitude.max() <= \
                    np.finfo(np.float32).max:
                a = stored.astype(np.float32)
                entry["stored"] = a.dtype.str
            else:
                offset = None
        self.arrays[key], self.entries[key] = a, entry
        if offset is None:
            return {"$array": key, **entry}
        self.version = 3
        return {"$array": key, **entry, "offset": self.array(offset, where + " (offset)", False)}

    def value(self, v, where, shrink=False):
        from ._kernels import KernelSpec

        if isinstance(v, np.generic):  # first: numpy.float64 is a float, and came back as one
            if v.dtype.kind not in _ARRAY_KINDS:
                raise TypeError(f"cannot save {where}: NumPy scalar of dtype {v.dtype}")
            item = v.item()  # a Python number, or for extended precision (longdouble) the scalar itself: a 0-d array
            plain = isinstance(item, (bool, int, float, str))
            return {"$scalar": v.dtype.str, "value": self.value(item, where) if plain else self.array(v, where, False)}
        if v is None or isinstance(v, (bool, int, str)):
            return v
        if isinstance(v, float):
            return v if math.isfinite(v) else {"$float": repr(v)}
        if isinstance(v, np.ndarray):
            return self.array(v, where, shrink)
        if sp.issparse(v):
            c = v.tocsr()
            kind = "csr_array" if isinstance(v, getattr(sp, "sparray", ())) else "csr_matrix"
            return {"$sparse": kind, "shape": [int(s) for s in c.shape],
                    "data": self.array(c.data, where + ".data", shrink),
                    "indices": self.array(c.indices, where + ".indices", False),
                    "indptr": self.array(c.indptr, where + ".indptr", False)}
        if isinstance(v, (tuple, list)):
            tag = "$tuple" if isinstance(v, tuple) else "$list"
            return {tag: [self.value(x, f"{where}[{i}]", shrink) for i, x in enumerate(v)]}
        if isinstance(v, dict):
            items = []
            for k, x in v.items():
                if not isinstance(k, str):
                    raise TypeError(f"cannot save {where}: dictionary key {k!r} is not a string")
                items.append([k, self.value(x, f"{where}[{k!r}]", shrink)])
            return {"$dict": items}
        if isinstance(v, KernelSpec):
            return {"$kernel": {k: self.value(getattr(v, k), where) for k in _KERNEL_FIELDS}}
        if isinstance(v, np.random.RandomState):
            name, keys, pos, has_gauss, cached = v.get_state(legacy=True)
            return {"$random_state": [name, self.array(keys, where, False), int(pos), int(has_gauss),
                                      self.value(float(cached), where)]}
        if _registered(v, self.classes):
            return {"$estimator": self.estimator(v, where, shrink)}
        raise TypeError(f"cannot save {where}: values of type {type(v).__module__}.{type(v).__qualname__} are not "
                        "supported by the model format (arrays, numbers, strings, lists/tuples/dicts of them, fastrank "
                        "estimators); for a parameter such as cv= or scoring= set a plain value before saving")

    def estimator(self, est, where, shrink=True):
        if not _registered(est, self.classes):
            hint = ""
            if callable(getattr(est, "to_local", None)):  # fastrank.dask's estimators
                hint = "; save its in-memory model, est.to_local()"
            elif type(est).__module__ == "fastrank.dask":  # DaskRankRLSCV: its chosen model is in memory
                hint = "; save its chosen in-memory model, est.best_estimator_"
            elif hasattr(est, "transform"):
                hint = ("; model files hold learners: pickle a transformer (the command line keeps its normalisation "
                        "in the model file's metadata)")
            raise TypeError(f"cannot save {where}: {type(est).__module__}.{type(est).__qualname__} is not a fastrank "
                            f"estimator (saveable: {', '.join(sorted(self.classes))}){hint}")
        from ._rankrls import _RankRLSBase

        params = est.get_params(deep=False)
        enc_params = {k: self.value(v, f"{where}.{k} (parameter)") for k, v in params.items()}
        # a linear-kernel model solved in the dual (or on basis rows) predicts with coef_ = X_fit_^T a alone: the file
        # stores coef_ (n floats), not the training rows X_fit_ and dual coefficients (m x n)
        state = dict(vars(est))
        if isinstance(est, _RankRLSBase) and est.kernel == "linear" and state.get("coef_") is not None:
            state["X_fit_"] = state["dual_coef_"] = None
        state = {k: self.array(v, f"{where}.{k}", shrink, rows=True)
                 if k in _TRAINING_ROWS and isinstance(v, np.ndarray) else self.value(v, f"{where}.{k}", shrink)
                 for k, v in state.items() if k not in params and k not in _SKIPPED_STATE}
        return {"class": type(est).__name__, "params": enc_params, "state": state}


def _digest(header, arrays):
    """SHA-256 over the header's canonical JSON (without its checksum) and every stored array
    (name, dtype, shape, bytes): any edit of a saved file that does not recompute it is detected."""
    h = hashlib.sha256(json.dumps({k: v for k, v in header.items() if k != "checksum"}, allow_nan=False).encode())
    for key in sorted(arrays, key=lambda k: int(k[1:])):
        a = np.ascontiguousarray(arrays[key])
        h.update(f"\0{key}\0{a.dtype.str}\0{list(a.shape)}\0".encode())
        h.update(a.view(np.uint8).reshape(-1) if a.size else b"")
    return h.hexdigest()


def _writable_path(path):
    """``path`` (a file name) where save can write a model file; its refusals name ``path``."""
    path = file_name(path)
    if os.path.isdir(path):  # else the OSError would name the temporary file
        raise IsADirectoryError(f"{path}: is a directory; give the model file's name")
    if os.path.exists(path) and not os.path.isfile(path):
        # the atomic replace would swap a FIFO, socket or device node (/dev/null as root) for a regular file
        raise ValueError(f"{path}: exists and is not a regular file (a pipe, socket or device); a model file is a "
                         "regular file: give a file path")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise FileNotFoundError(f"{path}: the folder {folder} does not exist")
    return path


def save(model, path, *, dtype=None, compress=True, metadata=None):
    """Write a fastrank estimator (fitted or not) to ``path`` in the documented model format.

    Parameters
    ----------
    model : estimator
        A fastrank estimator (any class of ``fastrank._registry.ESTIMATORS``); on-line learners may be saved mid-stream
        (``partial_fit`` on the loaded model continues exactly).
    path : str or path-like
        Written as given (no extension is added), atomically (a temporary file in the same folder is renamed over it).
    dtype : {None, "float32"}, default=None
        "float32" stores the float64 arrays of the fitted state in single precision (half the size; each number changes
        by at most 6e-8 relative); an array with a value outside float32's normal range (1.2e-38 to 3.4e38, or 0)
        stays float64.  Parameters are never rounded.
    compress : bool, default=True
        zip-deflate the arrays (smaller files; a little slower to write and read).
    metadata : dict or None, default=None
        Extra JSON-serialisable information kept in the header (``load(..., return_metadata=True)``); string keys and
        lists (not tuples), so that it loads back equal.

    Returns
    -------
    path : str
        The path written.

    Raises
    ------
    TypeError
        If the model is not a fastrank estimator or holds a value the format cannot store (the message names the
        attribute).
    ValueError
        If a parameter fails the model's checks (load would refuse the file), or ``path`` exists and is not a regular
        file (a pipe, socket or device).
    IsADirectoryError, FileNotFoundError
        If ``path`` is a directory or its folder does not exist (the message names ``path``).
    """
    path = _writable_path(path)
    if dtype not in (None, "float32", np.float32):
        raise ValueError(f"dtype must be None or 'float32', got {dtype!r}")
    if not isinstance(compress, (bool, np.bool_)):  # compress="no" would compress
        raise TypeError(f"compress must be True or False, got {compress!r}")
    if metadata is not None:
        if not isinstance(metadata, dict):
            raise TypeError(f"metadata must be a dict or None, got {type(metadata).__name__}")
        try:
            same = json.loads(json.dumps(metadata, allow_nan=False)) == metadata
        except (TypeError, ValueError) as exc:
            raise TypeError(f"metadata must be JSON-serialisable: {exc}") from None
        if not same:
            raise TypeError("metadata must be plain JSON data: string keys and lists (other keys and tuples would be "
                            "loaded changed)")
    enc = _Encoder(float32=dtype is not None)
    body = enc.estimator(model, "model")
    try:  # what load would refuse (a parameter set_params made invalid after fit) is not written
        _check_model(model)
    except _Corrupt as exc:
        raise ValueError(f"cannot save {exc}; set a valid value with set_params") from None
    header = {"format": FORMAT, "format_version": enc.version, "fastrank_version": __version__,
              **body, "arrays": enc.entries, "metadata": metadata or {}}
    header["checksum"] = {"sha256": _digest(header, enc.arrays)}
    raw = np.frombuffer(json.dumps(header, allow_nan=False).encode("utf-8"), dtype=np.uint8)
    fd, tmp = tempfile.mkstemp(prefix=".fastrank-", suffix=".tmp", dir=os.path.dirname(os.path.abspath(path)))
    try:
        with os.fdopen(fd, "wb") as fh:  # a file object: np.savez adds no ".npz" to the name
            (np.savez_compressed if compress else np.savez)(fh, header=raw, **enc.arrays)
        mask = os.umask(0)  # mkstemp creates 0600; give the file the permissions open() would
        os.umask(mask)
        os.chmod(tmp, 0o666 & ~mask)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return path


# -- decoding ----------------------------------------------------------------------------------
class _Decoder:
    def __init__(self, arrays, entries):
        self.arrays, self.entries, self.classes = arrays, entries, _estimator_classes()
        self.used = set()  # the array members the header's values refer to: every member must be used

    def array(self, tag):
        key = tag.get("$array")
        if key not in self.arrays:  # _read_archive read only members the header lists
            raise _Corrupt(f"array {key!r} is not listed in the header or missing from the archive")
        a = self.arrays[key]  # its dtype and shape are the entry's (_read_member checked them)
        if tag.get("shape") != list(a.shape):
            raise _Corrupt(f"array {key!r} has shape {list(a.shape)} but its reference says {tag.get('shape')}")
        self.used.add(key)
        a = a.astype(self.entries[key]["dtype"], copy=False)  # checked by _entry_layout
        # native byte order, C order: what the compiled core takes (a file written on a big-endian machine)
        a = a.astype(a.dtype.newbyteorder("="), order="C", copy=False)
        if "offset" not in tag:
            return a
        offset = self.value(tag["offset"]) if isinstance(tag["offset"], dict) and "$array" in tag["offset"] else None
        if offset is None or a.ndim != 2 or offset.shape != a.shape[1:] or offset.dtype != a.dtype:
            raise _Corrupt(f"array {key!r} has an offset that is not one value per column")
        return a + offset

    def value(self, v):
        if v is None or isinstance(v, (bool, int, float, str)):
            return v
        if not isinstance(v, dict) or len(v) == 0:
            raise _Corrupt(f"unexpected JSON value {v!r}")
        if "$array" in v:
            return self.array(v)
        if "$scalar" in v:
            dt = np.dtype(v["$scalar"])
            if dt.kind not in _ARRAY_KINDS:
                raise _Corrupt(f"bad scalar dtype {dt}")
            raw = self.value(v["value"])
            try:  # save wrote the scalar's own value: one outside its dtype's range was edited in (NumPy 1 wraps ints)
                if dt.kind in "iu" and isinstance(raw, int) and not np.iinfo(dt).min <= raw <= np.iinfo(dt).max:
                    raise OverflowError
                with np.errstate(over="raise"):
                    return dt.type(raw)
            except (OverflowError, FloatingPointError):
                raise _Corrupt(f"scalar {v['value']!r} is out of the range of its dtype {dt}") from None
        if "$sparse" in v:
            kind = v["$sparse"]
            if kind not in ("csr_matrix", "csr_array"):
                raise _Corrupt(f"unknown sparse kind {kind!r}")
            try:
                c = getattr(sp, kind)((self.array(v["data"]), self.array(v["indices"]), self.array(v["indptr"])),
                                      shape=tuple(v["shape"]))
                c.check_format(full_check=True)  # column indices in range: the kernels index dense rows by them
                return c
            except (TypeError, ValueError) as exc:
                raise _Corrupt(f"inconsistent sparse matrix: {exc}") from None
        ((tag, x),) = v.items() if len(v) == 1 else ((None, None),)  # the other tags are one-key objects
        if tag == "$float":
            if x not in ("nan", "inf", "-inf"):
                raise _Corrupt(f"bad float {x!r}")
            return float(x)
        if tag in ("$tuple", "$list"):
            items = [self.value(e) for e in x]
            return tuple(items) if tag == "$tuple" else items
        if tag == "$dict":
            return {str(k): self.value(e) for k, e in x}
        if tag == "$kernel":
            from ._kernels import KernelSpec

            if x.get("kind") not in ("linear", "rbf", "poly", "precomputed"):
                raise _Corrupt(f"unknown kernel kind {x.get('kind')!r}")
            return KernelSpec(*(self.value(x[k]) for k in _KERNEL_FIELDS))
        if tag == "$random_state":
            name, keys, pos, has_gauss, cached = x
            rs = np.random.RandomState()
            rs.set_state((name, self.array(keys), int(pos), int(has_gauss), float(self.value(cached))))
            return rs
        if tag == "$estimator":
            return self.estimator(x)
        raise _Corrupt(f"unknown tagged value with keys {sorted(v)}")

    def estimator(self, body):
        name = body.get("class")
        cls = self.classes.get(name)
        if cls is None:
            raise _Corrupt(f"class {name!r} is not a fastrank estimator this version can load "
                           f"(known: {', '.join(sorted(self.classes))})")
        params = {k: self.value(x) for k, x in body.get("params", {}).items()}
        try:
            est = cls(**params)
        except TypeError as exc:
            raise _Corrupt(f"parameters of {name} do not match this fastrank version: {exc}") from None
        for k, x in body.get("state", {}).items():
            if not k.isidentifier() or k.startswith("__") or k in params or hasattr(cls, k):  # JSON keys are str
                raise _Corrupt(f"attribute name {k!r} is not allowed for {name}")
            est.__dict__[k] = self.value(x)
        return est


def _check_usable(model):
    """One prediction on a zero row: catches fitted arrays that are consistent with the header but
    not with each other (tampered shapes).  The ordinal learners' thresholds are checked against their
    labels first: a zero row reaches one rank only."""
    labels = np.size(model.classes_) if "classes_" in vars(model) else None  # the ordinal learners
    for k, v in vars(model).items():  # the ordinal learners: one threshold between each two consecutive labels
        if labels is not None and k.endswith("thresholds_") and np.shape(v)[-1:] != (labels - 1,):
            raise _Corrupt(f"the fitted state is inconsistent ({k} of shape {np.shape(v)} for {labels} labels)")
        if k in ("members_coef_", "members_thresholds_") and v is not None and np.ndim(v) != 2:  # a row per member
            raise _Corrupt(f"the fitted state is inconsistent ({k} of shape {np.shape(v)}, not one row per member)")
    n = getattr(model, "n_features_in_", None)
    if n is None or getattr(model, "kernel", None) == "precomputed":  # _check_model checked n
        return
    limit = dense_memory_limit()
    if limit is not None and 8.0 * float(n) > limit / 4:  # a zero row of an edited n_features_in_ = 3e9: 24 GB
        return  # predict then refuses every input by its width
    try:
        with warnings.catch_warnings():  # the probe is an array, not a frame of the model's columns
            warnings.simplefilter("ignore")
            out = np.asarray(model.predict(np.zeros((1, int(n)))))
            if "classes_" in vars(model) and "n_seen_" in vars(model):  # an on-line stream: it must continue too
                copy.deepcopy(model).partial_fit(np.zeros((1, int(n))), model.classes_[:1])
    except Exception as exc:  # noqa: BLE001 - any failure means the state is inconsistent
        detail = "" if "incompatible function arguments" in str(exc) else f": {exc}"  # pybind11's signature dump
        raise _Corrupt(f"the fitted state is inconsistent ({type(exc).__name__}{detail})") from None
    if out.shape[:1] != (1,):
        raise _Corrupt(f"the fitted state is inconsistent (prediction of shape {out.shape} for one row)")


def _read_member(zf, info, dtype, shape):
    """One archive member as an array, after checking its .npy header against the model header
    (dtype, shape) and its uncompressed size in the zip directory against both: nothing larger than
    the model header announces is ever allocated or inflated."""
    name = info.filename
    try:
        with zf.open(info) as fh:
            version = np.lib.format.read_magic(fh)  # the .npy header is read without touching the data
            if version not in ((1, 0), (2, 0)):
                raise _Corrupt(f"member {name!r} has an unsupported .npy version {version}")
            got_shape, fortran, got_dtype = getattr(np.lib.format, f"read_array_header_{version[0]}_0")(fh)
            if got_dtype != dtype or (shape is not None and list(got_shape) != shape):
                raise _Corrupt(f"member {name!r} holds dtype {got_dtype} and shape {list(got_shape)} but the header "
                               f"says {dtype} and {shape}")
            nbytes = math.prod(got_shape) * got_dtype.itemsize
            if info.file_size != fh.tell() + nbytes:
                raise _Corrupt(f"member {name!r}: its size in the zip directory ({info.file_size} bytes) does not "
                               f"match its array ({nbytes} bytes of data)")
            buf = bytearray(nbytes)
            # ZipExtFile reads up to the directory's size (checked above) and verifies the CRC-32 on reaching it
            if fh.readinto(buf) != nbytes:
                raise _Corrupt(f"member {name!r} is truncated")
    except _Corrupt:
        raise
    except (zlib.error, zipfile.BadZipFile, EOFError, OSError, ValueError, TypeError, NotImplementedError,
            RuntimeError) as exc:  # the last two: a directory entry claiming another compression method, encryption
        what = "its CRC-32 does not match" if "CRC" in str(exc) else "its compressed data is damaged or truncated"
        raise _Corrupt(f"member {name!r} cannot be read ({what})") from None
    return np.frombuffer(buf, dtype=got_dtype).reshape(got_shape, order="F" if fortran else "C")


def _entry_layout(key, entry):
    """(stored dtype, shape) of a header array entry, checked to be plain (the loaded dtype too)."""
    if not isinstance(entry, dict):
        raise _Corrupt(f"array entry {key!r} is not an object")
    try:
        dtype, loaded = (np.dtype(entry.get(k, entry["dtype"])) for k in ("stored", "dtype"))
    except (KeyError, TypeError, ValueError):
        raise _Corrupt(f"array entry {key!r} has no valid dtype") from None
    shape = entry.get("shape")
    plain = all(t.kind in _ARRAY_KINDS and t.fields is None for t in (dtype, loaded))
    if not plain or not isinstance(shape, list) or not all(
            isinstance(d, int) and not isinstance(d, bool) and d >= 0 for d in shape):
        raise _Corrupt(f"array entry {key!r}: dtype {loaded} (stored as {dtype}) / shape {shape!r} is not allowed")
    return dtype, shape


def _read_archive(p):
    """(header dict, {name: array}) of a model file.  Every size is checked before anything is inflated:
    the header member against a cap, each array member's size in the zip directory against the
    header's dtype and shape, and their total against the dense-memory limit."""
    with open(p, "rb") as fh:  # our own handle: closed even when the archive is unreadable
        if fh.read(6) == b"\x93NUMPY":
            raise ValueError(f"{p}: not a fastrank model file (a single NumPy array, not a model archive)")
        try:
            zf = zipfile.ZipFile(fh)
        except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError, RuntimeError):
            # NotImplementedError: a directory entry's "version needed" or compression byte damaged
            raise ValueError(f"{p}: not a readable fastrank model file (corrupted or truncated?): it is not a "
                             "complete zip archive") from None
        with zf:
            members = {}
            for info in zf.infolist():
                match = _MEMBER.fullmatch(info.filename)
                if match is None or match.group(1) in members:
                    raise _Corrupt(f"unexpected member {info.filename!r} in the archive")
                members[match.group(1)] = info
            if "header" not in members:
                raise ValueError(f"{p}: not a fastrank model file (no header)")
            info = members.pop("header")
            if info.file_size > _HEADER_CAP:
                raise _Corrupt(f"the header member is {info.file_size} bytes (at most {_HEADER_CAP} allowed)")
            raw = _read_member(zf, info, np.dtype(np.uint8), None)
            if raw.ndim != 1:
                raise _Corrupt("the header is not a byte string")
            try:
                header = json.loads(raw.tobytes().decode("utf-8"))
            except (UnicodeDecodeError, ValueError, RecursionError):
                raise _Corrupt("the header is not valid UTF-8 JSON") from None
            if not isinstance(header, dict) or header.get("format") != FORMAT:
                raise _Corrupt("the header does not describe a fastrank model")
            version = header.get("format_version")
            if not isinstance(version, int) or isinstance(version, bool) or version < 1:
                raise _Corrupt(f"bad format_version {version!r}")
            if version > FORMAT_VERSION:
                raise ValueError(
                    f"{p}: written in model format version {version} (by fastrank {header.get('fastrank_version')}); "
                    f"this fastrank reads versions up to {FORMAT_VERSION}: upgrade fastrank to load it")
            entries = header.get("arrays")
            if not isinstance(entries, dict):
                raise _Corrupt("the header has no array table")
            extra = set(members) - set(entries)
            if extra:
                raise _Corrupt(f"unexpected members {sorted(extra)} in the archive")
            layouts = {key: _entry_layout(key, entries[key]) for key in members}
            total = sum(info.file_size for info in members.values())
            limit = dense_memory_limit()
            if limit is not None and total > limit:
                raise _Corrupt(f"its arrays would take {total} bytes uncompressed, more than the memory limit of "
                               f"{int(limit)} bytes (FASTRANK_MAX_DENSE_BYTES or half the available memory)")
            arrays = {key: _read_member(zf, info, *layouts[key]) for key, info in members.items()}
    return header, arrays


def _check_model(est, where="model"):
    """The parameters pass the class's own checks (as at the start of fit), a fitted model (one with a public ``*_``
    attribute) holds the positive feature count predict checks its input against, and the fitted arrays are finite
    (nested estimators too)."""
    from sklearn.base import clone

    n = getattr(est, "n_features_in_", None)
    if any(k.endswith("_") and not k.startswith("_") for k in vars(est)) and (
            not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 1):
        raise _Corrupt(f"{where}: the fitted state has n_features_in_ = {n!r}, not a positive integer (the number of "
                       "features fit saw)")
    try:
        clone(est)
        params = est.get_params(deep=False)
        for name in ("alpha", "C"):
            if name in params:
                check_alpha(params[name], name)
        for name in ("alphas", "Cs"):  # RankRLSCV's and MPRankCV's grids (None: the default grid)
            if params.get(name) is not None:
                check_alphas(params[name], name)
        if callable(getattr(est, "_check_params", None)):
            est._check_params()
        if hasattr(type(est), "_parameter_constraints"):  # every FastrankEstimator: it declares them
            est._validate_params()  # fastrank's own, or scikit-learn's from _parameter_constraints
        if callable(getattr(est, "_kernel_spec", None)) and n is not None:
            est._kernel_spec(int(n))
    except (ValueError, TypeError, ArithmeticError) as exc:  # ArithmeticError: e.g. degree=10**400 as a float
        raise _Corrupt(f"{where}: a parameter fails {type(est).__name__}'s checks: {exc}") from None
    for k in ("seed_", "n_seen_", "n_samples_seen_", "n_fit_groups_"):  # counts the compiled passes take as int64
        if k in vars(est) and not (isinstance(v := vars(est)[k], numbers.Integral) and not isinstance(v, bool)
                                   and 0 <= v < 2**63):
            raise _Corrupt(f"{where}.{k} = {v!r} is not a count in [0, 2^63)")
    frozen = vars(est).get("_fitted_kernel")  # the batch kernel's (kind, gamma, degree, coef0) of its fit
    try:
        if frozen is not None and not (isinstance(frozen, (tuple, list)) and len(frozen) == 4 and frozen[0] in KERNELS
                                       and resolve_kernel(*frozen, int(n)).kind == frozen[0]):
            raise ValueError("not a kernel")
    except (ValueError, TypeError, ArithmeticError):
        raise _Corrupt(f"{where}._fitted_kernel = {frozen!r} is not a kernel's (kind, gamma, degree, coef0)") from None
    args = vars(est).get("_kernel_args", (0.0, 0, 0.0))  # the on-line kernel's (gamma, degree, coef0)
    if not (isinstance(args, (tuple, list)) and len(args) == 3
            and all(a is None or isinstance(a, numbers.Real) and not isinstance(a, bool) for a in args)):
        raise _Corrupt(f"{where}._kernel_args = {args!r} is not the kernel's (gamma, degree, coef0)")
    for k, v in vars(est).items():
        a = v.data if sp.issparse(v) else v  # a CSR matrix: its stored values
        if isinstance(a, np.ndarray) and a.dtype.kind == "c":  # no fitted model holds complex numbers
            raise _Corrupt(f"{where}.{k} is complex")
        # thresholds_ may hold +-infinity (never NaN): RankBoost's "has x_f" weak rankers (missing="q_def") store -inf;
        # cv_predictions_ NaN (never infinity) in the rows of no hold-out set
        if isinstance(a, np.ndarray) and a.dtype.kind == "f" and not sp.issparse(v) and not (
                np.isfinite(a).all() or (k == "thresholds_" and not np.isnan(a).any())
                or (k == "cv_predictions_" and not np.isinf(a).any())):
            raise _Corrupt(f"{where}.{k} contains NaN or infinity")
        if sp.issparse(v) and a.dtype.kind == "f" and not np.isfinite(a).all():
            raise _Corrupt(f"{where}.{k} contains NaN or infinity")
        if _registered(v):
            _check_model(v, f"{where}.{k}")


def load(path, *, return_metadata=False):
    """Read a model written by :func:`save`.  Nothing in the file is executed.

    Parameters
    ----------
    path : str or path-like
        The model file.
    return_metadata : bool, default=False
        Also return the ``metadata`` dict of the file's header.

    Returns
    -------
    model : estimator
        The estimator, as it was saved.
    metadata : dict
        Only with ``return_metadata=True``: the header's metadata.

    Raises
    ------
    FileNotFoundError
        If there is no such file.
    ValueError
        (naming the file) If it is not a fastrank model file, was written by a newer format version, or is truncated,
        corrupted or tampered with (the checks: docs/design/cli-and-model-files.md, "Model files").
    """
    return_metadata = check_bool(return_metadata, "return_metadata")  # "no" is a true value
    p = file_name(path)
    if not os.path.exists(p):
        raise FileNotFoundError(f"{p}: no such model file")
    if os.path.isdir(p):
        raise ValueError(f"{p}: is a directory, not a model file")
    try:
        header, arrays = _read_archive(p)
        stored = header.get("checksum")
        if header["format_version"] < 2 and stored is None:
            warnings.warn(f"{p}: written in model format version 1, which has no checksum: edits of the file cannot "
                          "be detected; save the model again to add one", ModelFileWarning,
                          stacklevel=user_stacklevel())
        elif not isinstance(stored, dict) or not isinstance(stored.get("sha256"), str):
            raise _Corrupt("the header has no checksum")
        elif _digest(header, arrays) != stored["sha256"]:
            raise _Corrupt("the checksum does not match the header and arrays (the file was edited or damaged)")
        dec = _Decoder(arrays, header["arrays"])
        model = dec.estimator(header)
        unused = set(header["arrays"]) - dec.used
        if unused:
            raise _Corrupt(f"arrays {sorted(unused)} are listed but not used")
        _check_model(model)
        _check_usable(model)
    except (ValueError, KeyError, TypeError, AttributeError, IndexError, RecursionError) as exc:
        if str(exc).startswith(f"{p}: "):  # already names the file: not a model file, a newer format
            raise
        what = str(exc) if isinstance(exc, _Corrupt) else f"{type(exc).__name__}: {exc}"
        raise ValueError(f"{p}: corrupted or tampered model file: {what}") from None
    meta = header.get("metadata", {})
    return (model, meta if isinstance(meta, dict) else {}) if return_metadata else model
