"""Small datasets bundled with fastrank."""

from __future__ import annotations

from importlib import resources

import numpy as np
import scipy.sparse as sp
from sklearn.utils import Bunch

from ._svmlight import read_svmlight
from ._validation import check_bool, check_int

__all__ = ["load_lambdarank", "load_svmlight"]

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

        X_train : ndarray or scipy.sparse.csr_matrix of shape (3005, 300)
            Training features, float64.
        y_train : ndarray of shape (3005,)
            Relevance labels 0..4, float64.
        groups_train : ndarray of shape (3005,)
            Query id of each row (0..200), int64.
        X_test : ndarray or scipy.sparse.csr_matrix of shape (768, 300)
            Test features, float64.
        y_test : ndarray of shape (768,)
            Relevance labels 0..4, float64.
        groups_test : ndarray of shape (768,)
            Query id of each row (0..49), int64.
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


def load_svmlight(path, *, n_features=None, zero_based="auto", query_file=None):
    """Read an svmlight / LETOR / LibSVM text file (optionally gzip- or bz2-compressed).

    Each line is ``<target> [qid:<int>] <index>:<value> ... [# comment]``; blank lines and ``#``
    lines are skipped.  A malformed file raises ``ValueError("<file>:<line>: <what is wrong>")``.

    Parameters
    ----------
    path : str or path-like
        The file; names ending in ``.gz`` / ``.bz2`` are decompressed.
    n_features : int or None, default=None
        Number of columns of X, >= 0 (None: as many as the largest feature index needs).  Give it
        when a test file may not use the last features of its training file; a file with a feature
        index beyond it raises ValueError.
    zero_based : {"auto", True, False}, default="auto"
        Whether index 0 is the first column (LibSVM) or index 1 is (svm_light, LETOR).  "auto":
        zero-based if index 0 occurs in the file, else one-based.
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
    if n_features is not None:
        n_features = check_int(n_features, "n_features", low=0)  # 2.5 or "2" were cut to 2
    return read_svmlight(path, n_features=n_features, zero_based=zero_based, query_file=query_file)[:3]
