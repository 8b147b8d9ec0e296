"""svmlight / LETOR text files with optional ``qid:`` (reading, with file:line error messages).

The fast path is ``sklearn.datasets.load_svmlight_file``; on a failure the line checker below names
the file, line and token (docs/design/cli-and-model-files.md).

Grammar (svm_light / svm_rank / LETOR / LibSVM)::

    line    := target [ "qid:" int ] { index ":" value } [ "#" comment ]
    target  := a finite real number          index := integer >= 0, strictly increasing
    value   := a finite real number          blank lines and lines starting with "#" are skipped

A file without ``qid:`` may take its groups from a query-size file (LightGBM's ``.query``, XGBoost's
``.group``): one row count per line, the consecutive rows of each query in file order.

Indices are 1-based in svm_light and LETOR and 0-based in LibSVM-style files; ``zero_based="auto"``
(the default) takes a file that never uses index 0 as 1-based.
"""

from __future__ import annotations

import bz2
import gzip
import io
import math
import numbers
import os
import re
from collections import namedtuple

import numpy as np

from ._validation import check_real, file_name

__all__ = ["read_svmlight", "read_svmlight_files", "read_scores", "SvmlightInfo"]


# How a file was read: zero_based (resolved), n_features (columns its indices need, before n_features= applies),
# query_file (the query-size file its groups came from, or None)
SvmlightInfo = namedtuple("SvmlightInfo", "zero_based n_features query_file")
_QUERY_SUFFIXES = (".query", ".group")  # LightGBM's and XGBoost's query-size files, named after the data file


_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1  # query ids the compiled reader holds (C long)
_INDEX_MAX = 2**31 - 1  # the largest feature index it takes (a C int column count: 2**31 overflows)
# The compiled reader splits lines with bytes.split(): at ASCII whitespace only.  str.split() also splits at the
# separator bytes 0x1c-0x1f, which would let the line checker pass a line that reader refuses.
_SPACE = " \t\n\r\x0b\x0c"
_tokens = re.compile(f"[^{_SPACE}]+").findall


def _convert(conv, text, message, *args):
    """conv(text); _LineError(message.format(*args)) when it raises ValueError (formatted only then) or the text holds
    "_" (int("1_0") and float("1_0") are 10: Python's digit separators, not svmlight numbers)."""
    try:
        if "_" in text:
            raise ValueError
        return conv(text)
    except ValueError:
        raise _LineError(message.format(*args)) from None


def _real(tok, what, hint=""):
    v = _convert(float, tok, "{} {!r} is not a number{}", what, tok, hint)
    if not math.isfinite(v):
        raise _LineError(f"{what} {tok!r} is not finite")
    return v


class _LineError(Exception):
    pass


def _parse_line(line):
    """(target, qid or None, indices, values) of one data line (comment stripped, not blank); _LineError with
    a readable message for anything malformed."""
    if not line.isascii():  # the compiled reader parses bytes: other digits and spaces int()/float() take fail there
        raise _LineError("a non-ASCII character outside a comment (svmlight lines are ASCII)")
    toks = _tokens(line)
    target = _real(toks[0], "target")
    qid, start = None, 1
    if len(toks) > 1 and toks[1].startswith("qid:"):
        qid = _convert(int, toks[1][4:], "query id {!r} is not an integer (expected qid:<int>)", toks[1])
        if not _INT64_MIN <= qid <= _INT64_MAX:
            raise _LineError(f"query id {toks[1]!r} is outside the 64-bit integer range")
        start = 2
    indices, values = [], []
    last = -1
    for tok in toks[start:]:
        if tok.startswith("qid:"):
            raise _LineError(f"{tok!r}: qid must come right after the target, once per line")
        idx, sep, val = tok.partition(":")
        if not sep:
            raise _LineError(f"token {tok!r} is not of the form <index>:<value>")
        i = _convert(int, idx, "feature index {!r} in {!r} is not an integer", idx, tok)
        if i < 0:
            raise _LineError(f"feature index {i} in {tok!r} is negative")
        if i > _INDEX_MAX:
            raise _LineError(f"feature index {i} in {tok!r} is beyond the largest supported index {_INDEX_MAX}")
        if i <= last:
            raise _LineError(f"feature index {i} in {tok!r} is not greater than the previous index {last} "
                             "(indices must be strictly increasing)")
        last = i
        indices.append(i)
        values.append(_real(val, f"value of feature {i}:"))
    return target, qid, indices, values


class _FileBytes(str):
    """A file's name holding the file's bytes, read once by _read_once."""

    def __new__(cls, name, data):
        self = super().__new__(cls, name)
        self.data = data
        return self


def _read_once(path):
    """``path``, or for an existing file that is not a regular file or a directory (a pipe, ``<(...)``, ``/dev/stdin``
    from a pipe: its bytes come once, and the readers make more than one pass) a _FileBytes of it."""
    if not os.path.exists(path) or os.path.isfile(path) or os.path.isdir(path):
        return path
    try:
        with _open(path) as fh:
            return _FileBytes(path, fh.read())
    except (OSError, EOFError) as exc:
        raise ValueError(f"{path}: cannot read the file ({exc})") from None


def _open(path, mode="rb"):
    if isinstance(path, _FileBytes):
        return io.BytesIO(path.data)
    return (gzip.open if path.endswith(".gz") else bz2.open if path.endswith(".bz2") else open)(path, mode)


def _scan(path, parse=_parse_line):
    """Yield (line number, parse(text)) for every data line (the text before any "#", not blank); a
    malformed line is a ValueError naming file:line, an unreadable file one naming the file."""
    lineno = 0
    try:
        with _open(path) as fh:
            for raw in fh:
                for part in raw.rstrip(b"\r\n").split(b"\r"):  # a lone CR ends a line too (old Mac files), as numpy
                    lineno += 1
                    try:  # a comment may hold any bytes
                        # ASCII whitespace only: str.strip() also took a trailing no-break space (U+00A0) away
                        # from the ASCII check, and the compiled parser then failed without a line number
                        line = part.split(b"#", 1)[0].decode().strip(_SPACE)
                        if line:
                            yield lineno, parse(line)
                    except UnicodeDecodeError:
                        raise ValueError(f"{path}:{lineno}: line is not valid UTF-8 text (is this a binary "
                                         "file?)") from None
                    except _LineError as exc:
                        raise ValueError(f"{path}:{lineno}: {exc}") from None
    except (OSError, EOFError) as exc:
        raise ValueError(f"{path}: cannot read the file ({exc})") from None


_UNDERSCORE_OUTSIDE_COMMENT = re.compile(rb"^[^#\r\n]*_", re.MULTILINE)


def _compiled_parser_input(path):
    """``path`` itself, or for a file with lines ending in a lone CR (old Mac files) or a _FileBytes its bytes with LF
    line ends (the compiled parser splits lines at LF only, as _scan and numpy do not); None when a data line holds
    "_", which that parser (Python's int() / float()) would read as a digit separator.  One streaming pass over whole
    lines."""
    tail, lone_cr = b"", False
    with _open(path) as fh:
        while True:
            chunk = fh.read(1 << 20)
            buf = tail + chunk
            cut = len(buf) if not chunk else buf.rfind(b"\n") + 1
            body, tail = buf[:cut], buf[cut:]
            lone_cr = lone_cr or body.count(b"\r") != body.count(b"\r\n")
            if b"_" in body and _UNDERSCORE_OUTSIDE_COMMENT.search(body.replace(b"\r", b"\n")):
                return None
            if not chunk:
                break
    if not lone_cr and not isinstance(path, _FileBytes):
        return path
    with _open(path) as fh:
        return io.BytesIO(fh.read().replace(b"\r\n", b"\n").replace(b"\r", b"\n"))


def _diagnose(path):
    """The first problem of the file as 'file:line: message', or None if the line checker finds nothing wrong."""
    has_qid = None
    try:
        for lineno, (_, qid, _, _) in _scan(path):
            q = qid is not None
            if has_qid is None:
                has_qid, first = q, lineno
            elif q != has_qid:
                with_, without = (first, lineno) if has_qid else (lineno, first)
                return (f"{path}:{lineno}: some lines have a qid: and others do not (line {with_} has one, "
                        f"line {without} has none); give every line a qid or none")
    except ValueError as exc:
        return str(exc)
    return None


# The bytes of a plain score file: decimal numbers, spaces, tabs and newlines.  Such a file is read by
# numpy's compiled text reader, whose numbers are Python's float() of the same tokens.
_PLAIN_SCORES = b"0123456789.eE+- \t\n"


def read_scores(path):
    """The first number of every data line of a score file (one score per line, as ``fastrank predict``
    writes them; ``.gz`` / ``.bz2`` too); ValueError("<file>:<line>: ...") for a malformed line."""
    p = _read_once(file_name(path))
    try:  # the fast path; anything else (comments, bad tokens, unreadable files) goes to the line scanner
        with _open(p) as fh:
            data = fh.read()
        if data.strip() and not data.translate(None, _PLAIN_SCORES):
            scores = np.loadtxt(io.BytesIO(data), dtype=np.float64, usecols=0, ndmin=1)
            if np.isfinite(scores).all():
                return scores
    except (OSError, EOFError, ValueError):
        pass
    hint = " (one score per line expected)"
    return np.array([v for _, v in _scan(p, lambda text: _real(_tokens(text)[0], "score", hint))])


def _query_size(text):
    n = _convert(int, text, "query size {!r} is not an integer (one row count per line)", text)
    if n < 0:
        raise _LineError(f"query size {n} is negative")
    return n


def read_svmlight(path, *, n_features=None, zero_based="auto", extra_features="error", query_file=None):
    """Read an svmlight/LETOR file.  Returns (X CSR float64, y float64, qid int64 or None, info).

    n_features : columns of X (None: as many as the largest index needs).  extra_features : "error" (a feature index
    beyond n_features is an error) or "ignore" (such features are dropped, as svm_rank_classify ignores features the
    model has no weight for).  query_file : None, a query-size file (one count per line: the rows of each query in file
    order) giving the groups of a file without ``qid:``, or "auto": ``path + ".query"`` or ``path + ".group"`` when the
    file has no ``qid:`` and one of them exists.
    """
    return read_svmlight_files([path], n_features=n_features, zero_based=zero_based, extra_features=extra_features,
                               query_files=[query_file])[0]


def read_svmlight_files(paths, *, n_features=None, zero_based="auto", extra_features="error", query_files=None):
    """:func:`read_svmlight` of every file of ``paths`` (``query_files``: None or one query_file per path) with one
    index base ("auto": zero-based if any file uses index 0) and one column count (None: as many as the largest index
    of any file needs).  Returns a list of (X, y, qid, info), one per file."""
    if zero_based not in ("auto", True, False):
        raise ValueError(f"zero_based must be 'auto', True or False, got {zero_based!r}")
    if extra_features not in ("error", "ignore"):
        raise ValueError(f"extra_features must be 'error' or 'ignore', got {extra_features!r}")
    if n_features is not None:
        n_features = check_real(n_features, "n_features", "None or an integer >= 0",
                                lambda v: 0 <= v <= _INT64_MAX, numbers.Integral)
    files = [_read_as_written(path, query_file)
             for path, query_file in zip(paths, query_files or [None] * len(paths))]
    has_zero = [bool(X.nnz) and X.indices.min() == 0 for _, X, *_ in files]
    zb = any(has_zero) if zero_based == "auto" else bool(zero_based)
    columns = [max(X.shape[1] - (not zb), 0) for _, X, *_ in files]  # the columns each file's indices need
    n = max(columns) if n_features is None else n_features
    out = []
    for (p, X, y, qid, q), width, zero in zip(files, columns, has_zero):
        if not zb:
            if zero:
                row = int(np.searchsorted(X.indptr, np.flatnonzero(X.indices == 0)[0], side="right")) - 1
                line = next(lineno for k, (lineno, _) in enumerate(_scan(p)) if k == row)
                raise ValueError(f"{p}:{line}: feature index 0 in a file read as 1-based (zero_based=False)")
            X = X[:, 1:]
        if width > n and extra_features == "error":
            raise ValueError(f"{p}: has feature index {width - zb} but n_features={n} ({'0' if zb else '1'}-based "
                             "indices); give extra_features='ignore' to drop the features beyond n_features, as "
                             "fastrank predict does")
        X.resize(X.shape[0], n)  # drops the columns beyond n or adds empty ones
        X.sort_indices()
        out.append((X, y, qid, SvmlightInfo(zb, width, q)))
    return out


def _read_as_written(path, query_file):
    """(file name, X with the indices as written (index i: column i), y float64, qid int64 or None, the query file
    read or None) of one file; see :func:`read_svmlight`."""
    from sklearn.datasets import load_svmlight_file

    p = file_name(path)
    if not os.path.exists(p):
        raise FileNotFoundError(f"{p}: no such file")
    if os.path.isdir(p):
        raise ValueError(f"{p}: is a directory, not a data file")
    p = _read_once(p)
    auto = isinstance(query_file, str) and query_file == "auto"
    q = None if query_file is None or auto else file_name(query_file, "query_file")
    if q is not None and not os.path.exists(q):
        raise FileNotFoundError(f"{q}: no such query file")
    try:
        # Read with zero_based=True (indices as written); the caller resolves the index base, so the
        # decision is known (the CLI stores it in the model for the test files).
        source = _compiled_parser_input(p)
        if source is None:
            raise ValueError("a number with '_'")
        X, y, qid = load_svmlight_file(source, zero_based=True, query_id=True, dtype=np.float64)
    except Exception as exc:  # the compiled parser says what, the line checker says where
        where = _diagnose(p) or f"{p}: not a valid svmlight/LETOR file ({type(exc).__name__}: {exc})"
        raise ValueError(where) from None
    if y.shape[0] == 0:
        raise ValueError(f"{p}: the file has no data lines")
    if qid.shape[0] not in (0, y.shape[0]):
        raise ValueError(_diagnose(p) or f"{p}: some lines have a qid: and others do not")
    if not (np.isfinite(y).all() and np.isfinite(X.data).all()):
        raise ValueError(_diagnose(p) or f"{p}: contains NaN or infinite values")
    if qid.shape[0] and q is not None:
        raise ValueError(f"{p}: has qid: on its lines; give no query file ({q}) for it")
    if not qid.shape[0] and auto:
        q = next((p + s for s in _QUERY_SUFFIXES if os.path.isfile(p + s)), None)
    if q is not None:  # query ids 0, 1, ...: one row count per line, in row order
        sizes = [n for _, n in _scan(q, _query_size)]
        if sum(sizes) != y.shape[0]:
            raise ValueError(f"{q}: its {len(sizes)} query sizes add up to {sum(sizes)} rows but {p} has {y.shape[0]} "
                             "rows")
        qid = np.repeat(np.arange(len(sizes), dtype=np.int64), sizes)
    return p, X, np.asarray(y, dtype=np.float64), (np.asarray(qid, dtype=np.int64) if qid.shape[0] else None), q
