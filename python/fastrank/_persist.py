"""Model files that are safe to load: ``fastrank.save(model, path)`` / ``fastrank.load(path)``.

Format (version 1)
------------------
A model file is a NumPy ``.npz`` archive (a zip of ``.npy`` arrays) whatever its file name:

* ``header``: a uint8 array holding UTF-8 JSON::

      {"format": "fastrank-model", "format_version": 1, "fastrank_version": "0.1.0",
       "class": "RankRLS", "params": {...}, "state": {...}, "arrays": {"a0": {...}, ...},
       "metadata": {...}}

  ``class`` is the estimator's name in the ``fastrank`` namespace; ``params`` its
  ``get_params(deep=False)``; ``state`` every attribute of the fitted estimator that is not a
  parameter (the public ``*_`` attributes and the documented private state: e.g. the online
  learners' stream position, seed and per-example losses), each encoded as JSON;
  ``arrays`` records the dtype and shape of every array member; ``metadata`` is a JSON object
  the caller chose (the command-line tool records how the training file was read).
* ``a0``, ``a1``, ...: the numeric arrays (float64 unless ``save(..., dtype="float32")``; integer,
  boolean and fixed-width string arrays as they are).  Arrays are stored with ``np.save`` rules
  (no object arrays) and loaded with ``np.load(..., allow_pickle=False)``.

JSON values are plain JSON for None/bool/int/str/finite floats and a one-key tagged object
otherwise: ``{"$array": "a3", "dtype": "<f8", "shape": [m, n]}``, ``{"$float": "nan"}``,
``{"$scalar": "<i8", "value": 3}`` (a NumPy scalar), ``{"$tuple": [...]}``, ``{"$list": [...]}``,
``{"$dict": [[key, value], ...]}``, ``{"$sparse": "csr_matrix", "shape": [m, n], "data": ...,
"indices": ..., "indptr": ...}`` (CSR parts), ``{"$kernel": {...}}`` (a resolved kernel),
``{"$random_state": [...]}`` (a ``numpy.random.RandomState``'s state) and ``{"$estimator":
{"class", "params", "state"}}`` (a nested fitted estimator, e.g. ``RankRLSCV.best_estimator_``).

Nothing in a file is executed or imported: the class is looked up in a whitelist (the
scikit-learn estimators exported by ``fastrank``), attribute names are checked, every array is
checked against the header (present, dtype, shape), and the loaded model is asked for one
prediction; any mismatch raises ``ValueError``.  Files with a newer ``format_version`` are refused
with a message naming the version that wrote them.

Size: a model stores what its ``predict`` needs.  Linear models store a weight vector (n floats).
Kernel models store their training rows ``X_fit_`` (m x n float64: a Gaussian RankRLS on 3,000
rows of 300 features is 7.2 MB raw; ``compress=True``, the default, shrinks rows with many zeros
or few distinct values) plus m dual coefficients.  ``dtype="float32"`` halves that: every float64
array of the fitted state is stored as float32 and read back as float64, which changes each
stored number by at most 2**-24 relative (about 6e-8); predictions move by a few 1e-7 of their
scale (measured 4e-7 of the largest test score for the Gaussian model on the LightGBM sample) —
harmless for ranking, but the loaded model is no longer bit-identical.
Measured on the LightGBM sample (Gaussian RankRLS, 3005 x 300 training rows): pickle 7.24 MB;
``save`` 0.61 MB (compressed; the features have two decimals) or 7.24 MB (``compress=False``);
``dtype="float32"`` 0.55 MB / 3.62 MB; ``basis_vectors=300`` 0.07 MB; the linear model 2.5 kB.
Basis-vector models (``RankRLS(kernel=..., basis_vectors=r)``) store only r rows.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import zipfile

import numpy as np
import scipy.sparse as sp

from ._registry import ESTIMATORS
from ._version import __version__

__all__ = ["save", "load", "FORMAT_VERSION"]

FORMAT = "fastrank-model"
FORMAT_VERSION = 1
_ARRAY_KINDS = "biufcUS"  # bool, ints, floats, complex, fixed-width strings; never objects
_SKIPPED_STATE = ("_metadata_request",)  # scikit-learn's routing requests: set them again after load


def _estimator_classes():
    """The whitelist: the registered estimator classes (see ``fastrank._registry``)."""
    return dict(ESTIMATORS)


class _Corrupt(ValueError):
    pass


class _Newer(ValueError):
    pass


# ----------------------------------------------------------------------------------------------
# encoding
# ----------------------------------------------------------------------------------------------
class _Encoder:
    def __init__(self, float32):
        self.arrays = {}
        self.entries = {}
        self.float32 = float32
        self.classes = _estimator_classes()

    def array(self, a, where, shrink):
        a = np.asarray(a)
        if a.dtype.kind not in _ARRAY_KINDS or a.dtype.fields is not None:
            raise TypeError(f"cannot save {where}: arrays of dtype {a.dtype} are not supported (only numeric, "
                            "boolean and fixed-width string arrays; object arrays would need pickle)")
        key = f"a{len(self.arrays)}"
        entry = {"dtype": a.dtype.str, "shape": list(a.shape)}
        stored = a
        if shrink and self.float32 and a.dtype == np.float64:
            stored = a.astype(np.float32)
            entry["stored"] = stored.dtype.str
        self.arrays[key] = stored
        self.entries[key] = entry
        return {"$array": key, **entry}

    def value(self, v, where, shrink=False):
        from ._kernels import KernelSpec

        if v is None or isinstance(v, (bool, str)):
            return v
        if isinstance(v, int):
            return v
        if isinstance(v, float):
            return v if math.isfinite(v) else {"$float": repr(v)}
        if isinstance(v, np.generic):
            if v.dtype.kind not in _ARRAY_KINDS:
                raise TypeError(f"cannot save {where}: NumPy scalar of dtype {v.dtype}")
            return {"$scalar": v.dtype.str, "value": self.value(v.item(), where)}
        if isinstance(v, np.ndarray):
            return self.array(v, where, shrink)
        if sp.issparse(v):
            c = v.tocsr()
            kind = "csr_array" if isinstance(v, getattr(sp, "sparray", ())) else "csr_matrix"
            return {"$sparse": kind, "shape": [int(s) for s in c.shape],
                    "data": self.array(c.data, where + ".data", shrink),
                    "indices": self.array(c.indices, where + ".indices", False),
                    "indptr": self.array(c.indptr, where + ".indptr", False)}
        if isinstance(v, tuple):
            return {"$tuple": [self.value(x, f"{where}[{i}]", shrink) for i, x in enumerate(v)]}
        if isinstance(v, list):
            return {"$list": [self.value(x, f"{where}[{i}]", shrink) for i, x in enumerate(v)]}
        if isinstance(v, dict):
            items = []
            for k, x in v.items():
                if not isinstance(k, str):
                    raise TypeError(f"cannot save {where}: dictionary key {k!r} is not a string")
                items.append([k, self.value(x, f"{where}[{k!r}]", shrink)])
            return {"$dict": items}
        if isinstance(v, KernelSpec):
            return {"$kernel": {"kind": v.kind, "gamma": self.value(v.gamma, where),
                                "degree": self.value(v.degree, where), "coef0": self.value(v.coef0, where)}}
        if isinstance(v, np.random.RandomState):
            name, keys, pos, has_gauss, cached = v.get_state(legacy=True)
            return {"$random_state": [name, self.array(keys, where, False), int(pos), int(has_gauss),
                                      self.value(float(cached), where)]}
        if type(v).__name__ in self.classes and type(v) is self.classes[type(v).__name__]:
            return {"$estimator": self.estimator(v, where, shrink)}
        raise TypeError(
            f"cannot save {where}: values of type {type(v).__module__}.{type(v).__qualname__} are not supported "
            "by the model format (arrays, numbers, strings, lists/tuples/dicts of them, fastrank estimators); "
            "for a parameter such as cv= or scoring= set a plain value before saving"
        )

    def estimator(self, est, where, shrink=True):
        name = type(est).__name__
        if self.classes.get(name) is not type(est):
            raise TypeError(f"cannot save {where}: {type(est).__module__}.{type(est).__qualname__} is not a fastrank "
                            f"estimator (saveable: {', '.join(sorted(self.classes))})")
        params = est.get_params(deep=False)
        enc_params = {k: self.value(v, f"{where}.{k} (parameter)") for k, v in params.items()}
        state = {}
        for k, v in vars(est).items():
            if k in params or k in _SKIPPED_STATE:
                continue
            state[k] = self.value(v, f"{where}.{k}", shrink)
        return {"class": name, "params": enc_params, "state": state}


def save(model, path, *, dtype=None, compress=True, metadata=None):
    """Write a fastrank estimator (fitted or not) to ``path`` in the documented model format.

    Parameters
    ----------
    model : a fastrank estimator (RankRLS, RankRLSCV, MPRank, PRank, OAPBPM, WidrowHoff,
        OnlineMPRank, ... any estimator class exported by ``fastrank``).  Online learners may be
        saved mid-stream: ``partial_fit`` on the loaded model continues exactly.
    path : str or path-like; written as given (no extension is added), atomically (a temporary
        file in the same folder is renamed over it).
    dtype : None or "float32"
        "float32" stores the float64 arrays of the fitted state in single precision (half the
        size; each number changes by at most 6e-8 relative).  Parameters are never rounded.
    compress : bool, default True
        zip-deflate the arrays (smaller files; a little slower to write and read).
    metadata : dict or None
        Extra JSON-serialisable information kept in the header (``load(..., return_metadata=True)``).

    Raises
    ------
    TypeError if the model is not a fastrank estimator or holds a value the format cannot store
    (the message names the attribute).
    """
    if dtype not in (None, "float32", np.float32):
        raise ValueError(f"dtype must be None or 'float32', got {dtype!r}")
    if metadata is not None:
        if not isinstance(metadata, dict):
            raise TypeError(f"metadata must be a dict or None, got {type(metadata).__name__}")
        try:
            json.dumps(metadata, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"metadata must be JSON-serialisable: {exc}") from None
    enc = _Encoder(float32=dtype is not None)
    body = enc.estimator(model, "model")
    header = {"format": FORMAT, "format_version": FORMAT_VERSION, "fastrank_version": __version__,
              **body, "arrays": enc.entries, "metadata": metadata or {}}
    raw = np.frombuffer(json.dumps(header, allow_nan=False).encode("utf-8"), dtype=np.uint8)
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".fastrank-", suffix=".tmp", dir=folder)
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


# ----------------------------------------------------------------------------------------------
# decoding
# ----------------------------------------------------------------------------------------------
class _Decoder:
    def __init__(self, arrays, entries, classes):
        self.arrays = arrays
        self.entries = entries
        self.classes = classes
        self.used = set()

    def array(self, tag):
        key = tag.get("$array")
        if key not in self.entries:
            raise _Corrupt(f"array {key!r} is not listed in the header")
        if key not in self.arrays:
            raise _Corrupt(f"array {key!r} is missing from the archive")
        entry = self.entries[key]
        a = self.arrays[key]
        want_dtype = np.dtype(entry["dtype"])
        stored = np.dtype(entry.get("stored", entry["dtype"]))
        if want_dtype.kind not in _ARRAY_KINDS or stored.kind not in _ARRAY_KINDS:
            raise _Corrupt(f"array {key!r}: dtype {want_dtype} is not allowed")
        if a.dtype != stored or list(a.shape) != list(entry["shape"]) or tag.get("shape") != entry["shape"]:
            raise _Corrupt(f"array {key!r} has dtype {a.dtype} and shape {list(a.shape)} but the header says "
                           f"{stored} and {entry['shape']}")
        self.used.add(key)
        return a.astype(want_dtype) if stored != want_dtype else a

    def value(self, v):
        if v is None or isinstance(v, (bool, int, float, str)):
            return v
        if not isinstance(v, dict) or len(v) == 0:
            raise _Corrupt(f"unexpected JSON value {v!r}")
        if "$array" in v:
            return self.array(v)
        if len(v) == 1 and "$float" in v:
            if v["$float"] not in ("nan", "inf", "-inf"):
                raise _Corrupt(f"bad float {v['$float']!r}")
            return float(v["$float"])
        if "$scalar" in v:
            dt = np.dtype(v["$scalar"])
            if dt.kind not in _ARRAY_KINDS:
                raise _Corrupt(f"bad scalar dtype {dt}")
            return dt.type(self.value(v["value"]))
        if "$sparse" in v:
            kind = v["$sparse"]
            if kind not in ("csr_matrix", "csr_array"):
                raise _Corrupt(f"unknown sparse kind {kind!r}")
            cls = sp.csr_array if kind == "csr_array" else sp.csr_matrix
            try:
                return cls((self.array(v["data"]), self.array(v["indices"]), self.array(v["indptr"])),
                           shape=tuple(v["shape"]))
            except (TypeError, ValueError) as exc:
                raise _Corrupt(f"inconsistent sparse matrix: {exc}") from None
        if len(v) == 1 and "$tuple" in v:
            return tuple(self.value(x) for x in v["$tuple"])
        if len(v) == 1 and "$list" in v:
            return [self.value(x) for x in v["$list"]]
        if len(v) == 1 and "$dict" in v:
            return {str(k): self.value(x) for k, x in v["$dict"]}
        if len(v) == 1 and "$kernel" in v:
            from ._kernels import KernelSpec

            d = v["$kernel"]
            if d.get("kind") not in ("linear", "rbf", "poly", "precomputed"):
                raise _Corrupt(f"unknown kernel kind {d.get('kind')!r}")
            return KernelSpec(d["kind"], self.value(d["gamma"]), self.value(d["degree"]), self.value(d["coef0"]))
        if len(v) == 1 and "$random_state" in v:
            name, keys, pos, has_gauss, cached = v["$random_state"]
            rs = np.random.RandomState()
            rs.set_state((name, self.array(keys), int(pos), int(has_gauss), float(self.value(cached))))
            return rs
        if len(v) == 1 and "$estimator" in v:
            return self.estimator(v["$estimator"])
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
            if not isinstance(k, str) or not k.isidentifier() or k.startswith("__") or k in params \
                    or hasattr(cls, k):
                raise _Corrupt(f"attribute name {k!r} is not allowed for {name}")
            est.__dict__[k] = self.value(x)
        return est


def _check_usable(model):
    """One prediction on a zero row: catches fitted arrays that are consistent with the header but
    not with each other (tampered shapes)."""
    n = getattr(model, "n_features_in_", None)
    if not isinstance(n, (int, np.integer)) or n < 1 or getattr(model, "kernel", None) == "precomputed":
        return
    try:
        out = np.asarray(model.predict(np.zeros((1, int(n)))))
    except Exception as exc:  # noqa: BLE001 - any failure means the state is inconsistent
        raise _Corrupt(f"the fitted state is inconsistent ({type(exc).__name__}: {exc})") from None
    if out.shape[:1] != (1,):
        raise _Corrupt(f"the fitted state is inconsistent (prediction of shape {out.shape} for one row)")


def load(path, *, return_metadata=False):
    """Read a model written by :func:`save`.  Nothing in the file is executed.

    Returns the estimator (and the header's ``metadata`` dict when ``return_metadata=True``).

    Raises
    ------
    FileNotFoundError if there is no such file; ValueError (naming the file) if it is not a
    fastrank model file, was written by a newer format version, or is truncated, corrupted or
    tampered with (unknown class, missing or reshaped array, inconsistent fitted state).
    """
    p = os.fspath(path)
    if not os.path.exists(p):
        raise FileNotFoundError(f"{p}: no such model file")
    try:
        with open(p, "rb") as fh:  # our own handle: closed even when the archive is unreadable
            z = np.load(fh, allow_pickle=False)
            if not isinstance(z, np.lib.npyio.NpzFile):
                raise ValueError(f"{p}: not a fastrank model file (a single NumPy array, not a model archive)")
            with z:
                arrays = {k: z[k] for k in z.files}
    except (ValueError, OSError, EOFError, zipfile.BadZipFile, KeyError) as exc:
        if str(exc).startswith(f"{p}: "):
            raise
        raise ValueError(f"{p}: not a readable fastrank model file (corrupted or truncated?): "
                         f"{type(exc).__name__}: {exc}") from None
    if "header" not in arrays:
        raise ValueError(f"{p}: not a fastrank model file (no header)")
    raw = arrays.pop("header")
    try:
        if raw.dtype != np.uint8 or raw.ndim != 1:
            raise _Corrupt("the header is not a byte string")
        header = json.loads(raw.tobytes().decode("utf-8"))
        if not isinstance(header, dict) or header.get("format") != FORMAT:
            raise _Corrupt("the header does not describe a fastrank model")
        version = header.get("format_version")
        if not isinstance(version, int) or isinstance(version, bool):
            raise _Corrupt(f"bad format_version {version!r}")
        if version > FORMAT_VERSION:
            raise _Newer(
                f"{p}: written in model format version {version} (by fastrank {header.get('fastrank_version')}); "
                f"this fastrank reads versions up to {FORMAT_VERSION}: upgrade fastrank to load it")
        entries = header.get("arrays")
        if not isinstance(entries, dict):
            raise _Corrupt("the header has no array table")
        extra = set(arrays) - set(entries)
        if extra:
            raise _Corrupt(f"unexpected members {sorted(extra)} in the archive")
        dec = _Decoder(arrays, entries, _estimator_classes())
        model = dec.estimator(header)
        unused = set(entries) - dec.used
        if unused:
            raise _Corrupt(f"arrays {sorted(unused)} are listed but not used")
        _check_usable(model)
    except _Newer:
        raise
    except (ValueError, KeyError, TypeError, AttributeError, IndexError, RecursionError) as exc:
        what = str(exc) if isinstance(exc, _Corrupt) else f"{type(exc).__name__}: {exc}"
        raise ValueError(f"{p}: corrupted or tampered model file: {what}") from None
    meta = header.get("metadata", {})
    return (model, meta if isinstance(meta, dict) else {}) if return_metadata else model
