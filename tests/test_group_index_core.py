"""_core.GroupIndex, the query groups built once in C++: its arrays are read-only views that the
measure bindings read in place, with the same results as validated copies of the same arrays."""

import numpy as np
import pytest

from fastrank import _core
from fastrank._validation import group_index


@pytest.fixture
def grouped():
    rng = np.random.default_rng(3)
    m = 3000
    groups = rng.integers(0, 40, m) * 7 - 100  # sparse, negative ids
    y = rng.integers(0, 4, m).astype(np.float64)
    f = np.round(rng.normal(size=m) + 0.3 * y, 1)
    return groups, y, f


def test_arrays_are_read_only_views_of_one_core_object(grouped):
    groups, _, _ = grouped
    gi = group_index(groups, groups.size)
    for a in (gi.order, gi.offsets, gi.codes):
        assert isinstance(a.base, _core.GroupIndex) and a.base is gi.order.base
        assert not a.flags.writeable
        with pytest.raises(ValueError):
            a[0] = 1
        with pytest.raises(ValueError):
            a.setflags(write=True)


def test_from_ids_matches_the_table_definition(grouped):
    groups, _, _ = grouped
    core = _core.GroupIndex.from_ids(groups, int(groups.min()), int(groups.max()))
    labels, codes = np.unique(groups, return_inverse=True)
    assert np.array_equal(core.labels, labels) and np.array_equal(core.codes, codes)
    assert np.array_equal(core.order, np.argsort(codes, kind="stable"))
    assert np.array_equal(core.offsets, np.r_[0, np.cumsum(np.bincount(codes))])
    with pytest.raises(ValueError, match="ids must lie in lo..hi"):
        _core.GroupIndex.from_ids(groups, int(groups.min()) + 1, int(groups.max()))
    with pytest.raises(ValueError, match="id range too wide"):
        _core.GroupIndex.from_ids(np.array([0, 10**6]), 0, 10**6)


def _measures(y, f, order, offsets):
    """Every measure binding that takes groups, on (order, offsets) as given."""
    from fastrank.metrics import _label_ranks

    yrank, values = _label_ranks(y)
    f_order = np.argsort(f)
    return [
        _core.pair_statistics(f, f_order, yrank, values, order, offsets, True, 2),
        _core.dcg_statistics(y, f, order, offsets, 5, 1, 2),
        _core.dominance_sums(y, f, order, offsets, 2),
        _core.threshold_pair_sums(f - y, order, offsets, 0.25, 2),
    ]


def test_measures_read_the_core_object_as_they_read_validated_copies(grouped):
    groups, y, f = grouped
    gi = group_index(groups, y.size)
    in_place = _measures(y, f, gi.order, gi.offsets)
    copies = _measures(y, f, gi.order.copy(), gi.offsets.copy())
    lists = _measures(y, f, gi.order.tolist(), gi.offsets.tolist())
    for a, b, c in zip(in_place, copies, lists):
        assert np.array_equal(a, b) and np.array_equal(a, c)
    # the oracle for the group structure itself: one row of statistics per group, in label order
    rows = [np.flatnonzero(groups == g) for g in np.unique(groups)]
    assert in_place[0].shape[0] == len(rows)
    assert np.array_equal(in_place[0][:, 0], [r.size * (r.size - 1) / 2 for r in rows])


def test_a_core_object_of_other_rows_or_mixed_objects_are_refused(grouped):
    groups, y, f = grouped
    gi = group_index(groups, y.size)
    with pytest.raises(ValueError, match="the group index has 3000 rows for 2999 rows"):
        _core.threshold_pair_sums(f[:-1] - y[:-1], gi.order, gi.offsets, 0.0, 1)
    other = group_index(groups[::-1].copy(), y.size)
    # order of one object with offsets of another: validated as plain arrays
    mixed = _core.threshold_pair_sums(f - y, gi.order, other.offsets, 0.0, 1)
    assert mixed.shape[0] == other.n_groups
    with pytest.raises(ValueError, match="order must be a permutation"):
        _core.threshold_pair_sums(f - y, np.zeros(y.size, np.int64), gi.offsets, 0.0, 1)
