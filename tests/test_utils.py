"""fastrank.utils: LightGBM group sizes / XGBoost qid <-> fastrank per-row groups."""

import numpy as np
import pytest

import fastrank

from conftest import shared_data
from fastrank.utils import group_order, groups_from_qid, groups_from_sizes, qid_from_groups, sizes_from_groups


def _oracle_groups(sizes):
    out = []
    for k, s in enumerate(sizes):
        out += [k] * s
    return np.array(out, dtype=np.int64)


@pytest.mark.parametrize("seed", range(5))
def test_sizes_roundtrip_against_oracle(seed):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 9, size=rng.integers(1, 30))
    g = groups_from_sizes(sizes, n_samples=int(sizes.sum()))
    assert g.dtype == np.int64 and np.array_equal(g, _oracle_groups(sizes))
    assert np.array_equal(sizes_from_groups(g), sizes)
    assert np.array_equal(qid_from_groups(g), g)
    # any relabelling of contiguous blocks gives the same sizes
    labels = rng.permutation(1000)[: sizes.size].astype(str)
    assert np.array_equal(sizes_from_groups(labels[g]), sizes)
    assert np.array_equal(qid_from_groups(labels[g]), g)


def test_group_order_makes_queries_contiguous_stably():
    rng = np.random.default_rng(1)
    g = rng.integers(0, 6, size=60)
    order = group_order(g)
    assert sorted(order.tolist()) == list(range(60))
    go = g[order]
    sizes = sizes_from_groups(go)  # contiguous now (would raise otherwise)
    assert sizes.sum() == 60
    first_seen = list(dict.fromkeys(g.tolist()))
    assert list(dict.fromkeys(go.tolist())) == first_seen
    for q in first_seen:  # rows inside a query keep their order
        assert np.array_equal(order[go == q], np.flatnonzero(g == q))


def test_rlscore_qids_sorted_as_strings():
    """Contiguous but not numerically sorted qids: run lengths, not np.unique counts."""
    q = np.loadtxt(shared_data("rlscore_legacy") / "rank_train.qids", dtype=np.int64)
    sizes = sizes_from_groups(q)
    assert sizes.sum() == q.size == 100 and sizes.size == np.unique(q).size == 22
    _, counts = np.unique(q, return_counts=True)
    assert not np.array_equal(sizes, counts)  # np.unique's order would be wrong here
    assert np.array_equal(np.repeat(q[np.concatenate([[0], np.cumsum(sizes)[:-1]])], sizes), q)
    qid = qid_from_groups(q)
    assert np.all(np.diff(qid) >= 0) and np.array_equal(groups_from_sizes(sizes), qid)
    assert np.array_equal(groups_from_qid(q), q)


def test_clear_errors():
    with pytest.raises(ValueError, match=r"add up to 6 rows but there are 7 rows"):
        groups_from_sizes([2, 4], n_samples=7)
    with pytest.raises(ValueError, match=r"sizes\[1\] = 0"):
        groups_from_sizes([2, 0, 3])
    with pytest.raises(ValueError, match="whole numbers"):
        groups_from_sizes([2.5, 1])
    with pytest.raises(ValueError, match="1-D"):
        groups_from_sizes([[1, 2]])
    with pytest.raises(ValueError, match=r"query 1 are not contiguous \(row 1 .* row 3\); sort the rows"):
        sizes_from_groups([1, 1, 2, 1])
    with pytest.raises(ValueError, match="XGBoost needs"):
        qid_from_groups(np.array(["a", "b", "a"]))
    with pytest.raises(ValueError, match=r"^qid contains a missing group id \(nan at row 1\); give every row a "
                                         r"group id$"):
        groups_from_qid([1.0, np.nan])
    with pytest.raises(ValueError, match="whole numbers"):
        groups_from_qid([1.5, 2.0])
    assert np.array_equal(groups_from_qid([3.0, 3.0, 1.0]), [3, 3, 1])
    assert groups_from_sizes([]).size == 0 and sizes_from_groups([]).size == 0


def test_groups_from_qid_takes_every_float_width_and_mixed_ids_stay_apart():
    import warnings

    from fastrank.utils import groups_from_qid, sizes_from_groups
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's "overflow encountered in cast" comparing float16 ids with 2**63
        for dtype in (np.float16, np.float32, np.float64):
            np.testing.assert_array_equal(groups_from_qid(np.array([3, 3, 7], dtype=dtype)), [3, 3, 7])
    # numpy turns [1, "1", 2, 2] into the strings "1", "1", "2", "2": queries 1 and "1" became one
    for call in (sizes_from_groups, groups_from_qid,
                 lambda g: fastrank.RankRLS().fit(np.eye(4), [0.0, 1.0, 0.0, 1.0], g)):
        with pytest.raises(TypeError, match="numbers or strings|mutually comparable"):
            call([1, "1", 2, 2])
