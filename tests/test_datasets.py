from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from fastrank.datasets import load_lambdarank


def _shared_data():
    here = Path(__file__).resolve().parents[1].parent / "shared" / "data"
    return here if here.is_dir() else Path("/work/shared/data")


def test_lambdarank_shapes_groups_and_labels():
    d = load_lambdarank()
    assert d.X_train.shape == (3005, 300) and d.X_test.shape == (768, 300)
    for part in ("train", "test"):
        X, y, g = d[f"X_{part}"], d[f"y_{part}"], d[f"groups_{part}"]
        assert X.dtype == np.float64 and y.dtype == np.float64 and X.flags.c_contiguous
        assert y.shape == g.shape == (X.shape[0],)
        assert np.all((X == 0) | ((X >= 0.01) & (X <= 1.0)))
    assert np.unique(d.groups_train).size == 201
    assert np.unique(d.groups_test).size == 50
    # query ids are contiguous blocks in file order
    assert np.all(np.diff(d.groups_train) >= 0) and np.all(np.diff(d.groups_test) >= 0)
    sizes_train = np.bincount(d.groups_train)
    assert sizes_train.min() == 1 and sizes_train.max() == 27
    sizes_test = np.bincount(d.groups_test)
    assert sizes_test.min() == 6 and sizes_test.max() == 24
    # label counts from shared/data/SOURCES.md
    assert dict(zip(*np.unique(d.y_train, return_counts=True))) == {0: 645, 1: 1211, 2: 858, 3: 222, 4: 69}
    assert dict(zip(*np.unique(d.y_test, return_counts=True))) == {0: 206, 1: 256, 2: 252, 3: 44, 4: 10}
    nnz = (np.count_nonzero(d.X_train) + np.count_nonzero(d.X_test)) / 3773
    assert 94 < nnz < 96
    assert "MIT" in d.DESCR


def test_lambdarank_sparse_option_equals_dense():
    dense, sparse = load_lambdarank(), load_lambdarank(sparse=True)
    assert sp.issparse(sparse.X_train) and sparse.X_train.format == "csr"
    np.testing.assert_array_equal(sparse.X_train.toarray(), dense.X_train)
    np.testing.assert_array_equal(sparse.X_test.toarray(), dense.X_test)


def test_lambdarank_licence_shipped():
    from importlib import resources

    text = (resources.files("fastrank") / "data" / "LICENSE-lightgbm").read_text()
    assert "MIT License" in text and "Microsoft Corporation" in text


def test_lambdarank_matches_source_files_exactly():
    src = _shared_data() / "lightgbm_lambdarank"
    if not (src / "rank.train").is_file():
        pytest.skip("shared/data not available")
    from sklearn.datasets import load_svmlight_file

    d = load_lambdarank()
    for part in ("train", "test"):
        X, y = load_svmlight_file(str(src / f"rank.{part}"), n_features=300, zero_based=False)
        np.testing.assert_array_equal(d[f"X_{part}"], X.toarray())
        np.testing.assert_array_equal(d[f"y_{part}"], y)
        sizes = np.loadtxt(src / f"rank.{part}.query", dtype=np.int64)
        np.testing.assert_array_equal(d[f"groups_{part}"], np.repeat(np.arange(sizes.size), sizes))
