"""Hostile inputs to the data helpers (utils, preprocessing, datasets): a named error, never numpy's text or a
silently misread argument."""

import numpy as np
import pytest

from fastrank.datasets import load_lambdarank, load_svmlight
from fastrank.preprocessing import Log1pScaler
from fastrank.utils import groups_from_sizes


@pytest.mark.parametrize("sizes", [[1e30], [-1e30]])
def test_sizes_beyond_int64_are_refused(sizes):
    # numpy's "invalid value encountered in cast" RuntimeWarning reached the user
    with pytest.raises(ValueError, match="sizes must be whole numbers"):
        groups_from_sizes(sizes)


@pytest.mark.parametrize("sizes", [[2**62, 2**62], [10**12]])
def test_sizes_too_large_to_hold_name_the_sizes(sizes):
    # an int64 sum wrapped around ("negative dimensions are not allowed") or numpy's "Unable to allocate"
    with pytest.raises(MemoryError, match=f"sizes add up to {sum(sizes)} rows"):
        groups_from_sizes(sizes)


def test_negative_n_samples_is_refused_as_such():
    with pytest.raises(ValueError, match=r"n_samples must be an integer in \[0, inf\], got -1"):
        groups_from_sizes([1, 2], n_samples=-1)


@pytest.mark.parametrize("zscore", ["no", "False", None, 0, 1])
def test_log1p_zscore_must_be_a_bool(zscore):
    # a truthy string ("no") standardised the features
    with pytest.raises(ValueError, match="zscore must be True or False"):
        Log1pScaler(zscore=zscore).fit(np.ones((3, 2)))


@pytest.mark.parametrize("sparse", ["no", "False", None, 1])
def test_load_lambdarank_sparse_must_be_a_bool(sparse):
    with pytest.raises(ValueError, match="sparse must be True or False"):
        load_lambdarank(sparse=sparse)


@pytest.mark.parametrize("path", [None, 5])
def test_load_svmlight_path_must_be_a_file_name(path):
    with pytest.raises(TypeError, match="path must be a file name"):
        load_svmlight(path)


@pytest.fixture
def small_file(tmp_path):
    p = tmp_path / "small.txt"
    p.write_text("1 qid:1 1:0.5\n0 qid:1 2:1\n")
    return p


@pytest.mark.parametrize("n_features", [2.5, "3", True, 1e30])
def test_load_svmlight_n_features_must_be_an_integer(small_file, n_features):
    # 2.5 and "3" were cut by int(), True read as 1 column, 1e30 made a 1e30-column matrix
    with pytest.raises(TypeError, match="n_features must be an integer"):
        load_svmlight(small_file, n_features=n_features)


def test_load_svmlight_negative_n_features_is_refused_as_such(small_file):
    with pytest.raises(ValueError, match=r"n_features must be an integer in \[0, "):
        load_svmlight(small_file, n_features=-1)
    assert load_svmlight(small_file, n_features=np.int64(4))[0].shape == (2, 4)


def test_query_normalizer_overflow_is_named():
    # minmax returned 0 for an infinite range
    from fastrank.preprocessing import QueryNormalizer

    X = [[1.5e308], [-1.5e308]]
    with pytest.raises(ValueError, match="X is too large to normalise"):
        QueryNormalizer("minmax").fit(X).transform(X)


@pytest.mark.parametrize("X", [[[1e300], [2e300]], [[1.5e308], [1.6e308]], [[1.5e308], [-1.5e308]]])
def test_query_zscores_of_values_near_the_float64_limit(X):
    # the variance overflowed and these were refused; in units of a power of two they are exact: -1 and 1
    from fastrank.preprocessing import QueryNormalizer

    np.testing.assert_array_equal(QueryNormalizer("zscore").fit(X).transform(X), [[-1.0], [1.0]] if X[0][0] < X[1][0]
                                  else [[1.0], [-1.0]])


def test_query_normalizer_large_finite_values_still_normalised():
    from fastrank.preprocessing import QueryNormalizer

    X = np.array([[1e150], [3e150], [2e150]])
    np.testing.assert_allclose(QueryNormalizer("minmax").fit(X).transform(X), [[0.0], [1.0], [0.5]], rtol=1e-14)
    assert QueryNormalizer("zscore").fit(X).transform(X)[1, 0] == pytest.approx(np.sqrt(1.5), rel=1e-14)


def test_uint64_sizes_above_int64_are_refused():
    # 2**64 - 1 wrapped to -1 ("sizes[0] = -1")
    with pytest.raises(ValueError, match="sizes must be whole numbers"):
        groups_from_sizes(np.array([2**64 - 1], dtype=np.uint64))
    np.testing.assert_array_equal(groups_from_sizes(np.array([2, 1], dtype=np.uint64)), [0, 0, 1])


def test_pandas_string_query_ids_are_accepted():
    # pandas keeps strings in object columns, which were refused ("got dtype object") though fastrank's own groups
    # accept them
    import pandas as pd

    from fastrank.utils import group_order, groups_from_qid, qid_from_groups, sizes_from_groups

    q = pd.Series(["q7", "q7", "q2"])
    np.testing.assert_array_equal(groups_from_qid(q), ["q7", "q7", "q2"])
    np.testing.assert_array_equal(qid_from_groups(q), [0, 0, 1])
    np.testing.assert_array_equal(sizes_from_groups(q), [2, 1])
    np.testing.assert_array_equal(group_order(pd.Series(["b", "a", "b"])), [0, 2, 1])
    with pytest.raises(TypeError, match="qid must be an array of numbers or strings"):
        groups_from_qid(np.array(["a", 1], dtype=object))
