"""The one group encoding: group_index (dense codes, stable group order, offsets) against the
definition (np.unique + a stable argsort), and the core's validation of (order, offsets)."""

import numpy as np
import pytest

from fastrank import _core
from fastrank._validation import group_index

CASES = {
    "small ints": np.random.default_rng(0).integers(-5, 5, 300),
    "many groups (> 2^16)": np.random.default_rng(1).integers(0, 150_000, 150_000),
    "descending, one row each": np.arange(70_000)[::-1].copy(),
    "int8 extremes": np.array([-128, 127, 0, 127], dtype=np.int8),
    "uint64 beyond int64": np.array([2**64 - 1, 3, 2**64 - 1], dtype=np.uint64),
    "wide range": np.array([10**15, -(10**15), 7]),
    "strings": np.array(["b", "a", "b", "c"]),
    "floats": np.array([0.5, -1.0, 0.5, 2.0]),
    "one row": np.array([5]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_group_index_matches_the_definition(name):
    groups = CASES[name]
    labels, codes = np.unique(groups, return_inverse=True)
    codes = codes.reshape(-1)
    gi = group_index(groups, groups.size)
    assert gi.labels.dtype == labels.dtype and np.array_equal(gi.labels, labels)
    assert np.array_equal(gi.codes, codes)
    assert np.array_equal(gi.order, np.argsort(codes, kind="stable"))
    assert np.array_equal(gi.offsets, np.r_[0, np.cumsum(np.bincount(codes))])
    assert gi.order.dtype == np.int64 and gi.offsets.dtype == np.int64
    assert np.array_equal(gi.inverse[gi.order], np.arange(groups.size))
    assert gi.is_identity == bool(np.all(gi.order == np.arange(groups.size)))


@pytest.mark.parametrize("order, offsets, message", [
    ([0, 1, 2, 2], [0, 2, 4], "order must be a permutation"),
    ([0, 1, 2, 4], [0, 2, 4], "order must be a permutation"),
    ([0, 1, 2], [0, 2, 3], "order has 3 entries for 4 rows"),
    ([0, 1, 2, 3], [1, 2, 4], "offsets must start at 0"),
    ([0, 1, 2, 3], [0, 3, 2, 4], "offsets must be non-decreasing"),
    ([0, 1, 2, 3], [0, 2, 3], "offsets must end at the number of rows"),
])
def test_core_rejects_malformed_groups(order, offsets, message):
    z = np.arange(4, dtype=np.float64)
    with pytest.raises(ValueError, match=message):
        _core.threshold_pair_sums(z, np.array(order), np.array(offsets), 0.0, 1)
