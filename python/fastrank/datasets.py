"""Small datasets bundled with fastrank."""

from __future__ import annotations

import os
from collections.abc import Iterable
from importlib import resources

import numpy as np
import scipy.sparse as sp
from sklearn.utils import Bunch

from ._svmlight import read_svmlight_files
from ._validation import check_bool, check_int

__all__ = ["load_lambdarank", "load_svmlight", "load_svmlight_files"]

_DESCR = """\
LightGBM lambdarank example (learning to rank with query groups)
================================================================

Source: github.com/microsoft/LightGBM, examples/lambdarank/ (rank.train, rank.test and their
.query files), commit bae0b7ba; MIT licence, Copyright (c) Microsoft Corporation (the licence is
shipped as fastrank/data/LICENSE-lightgbm; provenance in fastrank/data/PROVENANCE.md). The
origin of the data is not documented upstream.

- 300 features, values in [0.01, 1] (two decimals), about 95 non-zeros per row (sparse in the
  source; absent entries are 0).
- Relevance labels 0..4 (graded).
- Train: 3005 rows in 201 queries (1-27 documents each); labels 0:645 1:1211 2:858 3:222 4:69.
- Test: 768 rows in 50 queries (6-24 documents each); labels 0:206 1:256 2:252 3:44 4:10.
- groups_train / groups_test: one query id per row (0..200 and 0..49, in file order; the
  two id ranges are separate queries).
"""


def load_lambdarank(*, sparse=False):
    """Load the LightGBM lambdarank sample (MIT) bundled with fastrank.

    Parameters
    ----------
    sparse : bool, default=False
        Return X_train / X_test as scipy.sparse CSR matrices instead of dense arrays.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        Dictionary-like object with the attributes below; the values are exactly those of the svmlight source files.

        X_train, X_test : ndarray or scipy.sparse.csr_matrix of shape (3005, 300) and (768, 300)
            Training and test features, float64.
        y_train, y_test : ndarray of shape (3005,) and (768,)
            Relevance labels 0..4, float64.
        groups_train, groups_test : ndarray of shape (3005,) and (768,)
            Query id of each row (0..200 and 0..49), int64.
        n_features : int
            The feature count, 300.
        DESCR : str
            Description of the dataset.
    """
    check_bool(sparse, "sparse")
    with resources.as_file(resources.files("fastrank") / "data" / "lambdarank.npz") as p, np.load(p) as z:
        n_features = int(z["n_features"])
        out = {}
        for part in ("train", "test"):
            indptr = z[f"{part}_indptr"].astype(np.int64)
            X = sp.csr_matrix((z[f"{part}_data_x100"].astype(np.float64) / 100.0, z[f"{part}_indices"].astype(np.int64),
                               indptr), shape=(indptr.size - 1, n_features))
            out[f"X_{part}"] = X if sparse else X.toarray()
            out[f"y_{part}"] = z[f"{part}_y"].astype(np.float64)
            out[f"groups_{part}"] = z[f"{part}_groups"].astype(np.int64)
    return Bunch(**out, n_features=n_features, DESCR=_DESCR)


def load_svmlight(path, *, n_features=None, zero_based="auto", extra_features="error", query_file=None):
    """Read an svmlight / LETOR / LibSVM text file (optionally gzip- or bz2-compressed).

    Each line is ``<target> [qid:<int>] <index>:<value> ... [# comment]``; blank lines and ``#``
    lines are skipped.  A malformed file raises ``ValueError("<file>:<line>: <what is wrong>")``.
    A training file and its test file are best read together, by :func:`load_svmlight_files`, which gives them one
    index base and one feature count.

    Parameters
    ----------
    path : str or path-like
        The file; names ending in ``.gz`` / ``.bz2`` are decompressed.
    n_features : int or None, default=None
        Number of columns of X, >= 0 (None: as many as the largest feature index needs).  Give a test
        file read on its own its training file's feature count (a test file may not use the last
        features), and its index base too (``zero_based``); a feature index beyond it raises
        ValueError unless ``extra_features="ignore"``.
    zero_based : {"auto", True, False}, default="auto"
        Whether index 0 is the first column (LibSVM) or index 1 is (svm_light, LETOR).  "auto":
        zero-based if index 0 occurs in the file, else one-based.  The choice is the file's own: a
        test file that never uses index 0 is read as one-based even if its training file was read as
        zero-based, which shifts every column by one, so give a test file read on its own the base of
        its training file (True if that file uses index 0).
    extra_features : {"error", "ignore"}, default="error"
        A feature index beyond ``n_features``: "error" raises ValueError, "ignore" drops the feature
        (as ``fastrank predict`` and svm_rank_classify ignore the features a model never saw).
    query_file : str, path-like, "auto" or None, default=None
        The groups of a file without ``qid:`` from a query-size file (LightGBM's ``.query``,
        XGBoost's ``.group``): one count per line, the number of consecutive rows of each query.
        "auto": ``path + ".query"`` or ``path + ".group"`` if the file has no ``qid:`` and one of
        them exists.  A file with ``qid:`` and a query file is an error.

    Returns
    -------
    X : scipy.sparse.csr_matrix of shape (n_samples, n_features)
        The features, float64 (call ``X.toarray()`` for a dense array).
    y : ndarray of shape (n_samples,)
        The targets (relevance labels), float64.
    qid : ndarray of shape (n_samples,) or None
        The query id of every row, int64 (fastrank's ``groups``; 0, 1, ... from a query file), or None
        when the file has no ``qid:`` and no query file is read.

    Examples
    --------
    >>> X, y, qid = load_svmlight("train.txt")                  # doctest: +SKIP
    >>> RankRLS(alpha=10).fit(X.toarray(), y, groups=qid)       # doctest: +SKIP
    """
    return tuple(load_svmlight_files([path], n_features=n_features, zero_based=zero_based,
                                     extra_features=extra_features, query_file=[query_file]))


def load_svmlight_files(paths, *, n_features=None, zero_based="auto", extra_features="error", query_file=None):
    """Read svmlight / LETOR / LibSVM files (a training and a test file) with one index base and one feature count.

    Every file is read as :func:`load_svmlight` reads it, but with the index base and the number of columns of
    all: the columns of a test file are those of its training file, whichever indices each file uses (as
    scikit-learn's ``load_svmlight_files``).

    Parameters
    ----------
    paths : list of str or path-like
        The files; names ending in ``.gz`` / ``.bz2`` are decompressed.
    n_features : int or None, default=None
        Number of columns of every X, >= 0 (None: as many as the largest feature index of any file
        needs); a feature index beyond it raises ValueError unless ``extra_features="ignore"``.
    zero_based : {"auto", True, False}, default="auto"
        Whether index 0 is the first column (LibSVM) or index 1 is (svm_light, LETOR).  "auto":
        zero-based if index 0 occurs in any of the files, else one-based.
    extra_features : {"error", "ignore"}, default="error"
        A feature index beyond ``n_features``: "error" raises ValueError, "ignore" drops the feature
        (as ``fastrank predict`` and svm_rank_classify ignore the features a model never saw).
    query_file : "auto", list or None, default=None
        The groups of files without ``qid:`` from query-size files (LightGBM's ``.query``, XGBoost's
        ``.group``; see :func:`load_svmlight`): "auto" looks for each file's own, a list gives one
        query file (or None) per file.

    Returns
    -------
    data : list
        ``[X_1, y_1, qid_1, X_2, y_2, qid_2, ...]``: the X (scipy.sparse.csr_matrix of shape (n_samples_i,
        n_features), float64), targets and query ids (None without ``qid:`` or query file) of each file, as
        :func:`load_svmlight` returns them.

    Examples
    --------
    >>> X, y, qid, Xt, yt, qidt = load_svmlight_files(["train.txt", "test.txt"])  # doctest: +SKIP
    """
    if isinstance(paths, (str, bytes, os.PathLike)) or not isinstance(paths, Iterable):
        raise TypeError(f"paths must be a list of file names (load_svmlight reads one file), got {paths!r}")
    paths = list(paths)
    if not paths:
        raise ValueError("paths must name at least one file")
    if query_file is None or isinstance(query_file, str) and query_file == "auto":
        query_files = [query_file] * len(paths)
    elif isinstance(query_file, (list, tuple)) and len(query_file) == len(paths):
        query_files = query_file
    else:
        raise ValueError(f"query_file must be None, 'auto' or a list of one query file (or None) for each of the "
                         f"{len(paths)} paths, got {query_file!r}")
    if n_features is not None:
        n_features = check_int(n_features, "n_features", low=0)  # 2.5 or "2" were cut to 2
    files = read_svmlight_files(paths, n_features=n_features, zero_based=zero_based, extra_features=extra_features,
                                query_files=query_files)
    return [part for X, y, qid, _ in files for part in (X, y, qid)]
