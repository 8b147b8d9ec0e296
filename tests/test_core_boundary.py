"""The compiled core refuses malformed arguments with a ValueError naming them, also when called directly (the Python
layer validates first; these calls read or wrote out of bounds, or hit undefined behaviour, under AddressSanitizer
and UndefinedBehaviorSanitizer before the bindings checked them)."""

import numpy as np
import pytest

from fastrank import _core


def _one_group(m):
    return _core.GroupIndex.from_codes(np.zeros(m, np.int64), 1)


Y3 = np.array([[1.0], [2.0], [3.0]])


@pytest.mark.parametrize("indices, indptr, match", [
    (np.array([0, 1, 100000], np.int32), np.array([0, 1, 2, 3], np.int32), "column indices"),
    (np.array([0, -1, 2], np.int32), np.array([0, 1, 2, 3], np.int32), "column indices"),
    (np.array([0, 1, 2], np.int32), np.array([0, 2, 1, 3], np.int32), "non-decreasing"),
    (np.array([0, 1, 2], np.int32), np.array([0, 1, 2, 3], np.int64), "one integer dtype"),
    (np.array([0, 1, 2], np.float64), np.array([0, 1, 2, 3], np.float64), "one integer dtype"),
])
def test_csr_structure_is_checked_by_every_sparse_binding(indices, indptr, match):
    g = _one_group(3)
    data = np.ones(3)
    with pytest.raises(ValueError, match=match):
        _core.cg_jacobi_diagonal((data, indices, indptr), 3, 3, order=g.order, offsets=g.offsets)
    if indices.dtype.kind == "i" and indptr.dtype == indices.dtype:
        with pytest.raises(ValueError, match=match):
            _core.cg_rankrls_csr(data, indices, indptr, 3, 3, Y3, order=g.order, offsets=g.offsets)
        with pytest.raises(ValueError, match=match):
            _core.ranksvm_fit_csr(data, indices, indptr, 3, 3, 1.0, 0, 1e-6, 10, 1, y=Y3[:, 0], order=g.order,
                                  offsets=g.offsets)


def test_a_valid_csr_still_gives_the_dense_result():
    g = _one_group(3)
    X = np.array([[1.0, 0.0, 2.0], [0.0, 3.0, 0.0], [4.0, 0.0, 5.0]])
    data, indices, indptr = np.array([1.0, 2.0, 3.0, 4.0, 5.0]), np.array([0, 2, 1, 0, 2]), np.array([0, 2, 3, 5])
    for dtype in (np.int32, np.int64):
        got = _core.cg_jacobi_diagonal((data, indices.astype(dtype), indptr.astype(dtype)), 3, 3, order=g.order,
                                       offsets=g.offsets)
        np.testing.assert_allclose(got, _core.cg_jacobi_diagonal(X, 3, 3, order=g.order, offsets=g.offsets),
                                   rtol=1e-15)


def test_pair_statistics_needs_a_permutation():
    g = _core.GroupIndex.from_codes(np.array([0, 0, 0, 1, 1, 1], np.int64), 2)
    ranks, values = np.array([0, 1, 0, 1, 0, 1], np.int32), np.array([0.0, 1.0])
    for f_order in (np.full(6, 3, np.int64), np.array([0, 1, 2, 3, 4, 4], np.int64), np.array([0, 1, 2, 3, 4, 6])):
        with pytest.raises(ValueError, match="f_order"):
            _core.pair_statistics(np.ones(6), f_order, ranks, values, g.order, g.offsets, True, 1)
    ok = _core.pair_statistics(np.ones(6), np.arange(6, dtype=np.int64), ranks, values, g.order, g.offsets, True, 1)
    assert ok.shape == (2, 6)


@pytest.mark.parametrize("call", [
    lambda: _core.solve_shifted_system(np.zeros((0, 0), order="F"), np.ones((0, 1)), np.array([1.0, 2.0])),
    lambda: _core.solve_shifted_system_tridiag(np.zeros((0, 0), order="F"), np.ones((0, 1)), np.array([1.0, 2.0])),
    lambda: _core.solve_shifted_system(np.zeros((2, 2), order="F"), np.ones((3, 1)), np.array([1.0])),
], ids=["eigh", "tridiagonal", "rows"])
def test_shifted_systems_refuse_empty_or_mismatched_g(call):
    with pytest.raises(ValueError, match="G must be square"):
        call()


def test_empty_feature_or_output_columns_are_refused():
    g2 = _core.GroupIndex.from_codes(np.array([0, 0, 1, 1], np.int64), 2)
    with pytest.raises(ValueError, match="at least one column"):
        _core.rankrls_primal_scores(np.ones((4, 0)), g2.order, g2.offsets, np.ones(2), np.ones((4, 1)),
                                    np.array([1.0]), 1)
    g = _one_group(3)
    with pytest.raises(ValueError, match="at least one column"):
        _core.cg_rankrls_dense(np.ones((3, 0)), np.ones((3, 1)), order=g.order, offsets=g.offsets)
    g8 = _core.GroupIndex.from_codes(np.repeat(np.arange(2), 4).astype(np.int64), 2)
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="at least one column"):
        _core.cv_feature_leave_group_out(rng.random((8, 3)), np.zeros((8, 0)), g8.order, g8.offsets, np.ones(2), 1.0, 1)
    with pytest.raises(ValueError, match="at least one column"):
        _core.cv_feature_leave_all_pairs_out(np.zeros((8, 0)), rng.random((8, 1)), g8.order, g8.offsets, np.ones(2),
                                             1.0, 1)
    with pytest.raises(ValueError, match="at least one entry"):
        _core.simplex_qp(np.zeros((0, 0)), np.zeros(0), np.zeros(0))


def test_integer_and_nan_arguments_are_range_checked():
    with pytest.raises(ValueError, match="n_groups"):
        _core.GroupIndex.from_codes(np.zeros(3, np.int64), 2**63 - 1)
    with pytest.raises(ValueError, match="y must be finite"):
        _core.dense_ranks_small(np.array([1.0, np.nan, 2.0, 3.0]), 10)
    for tau in (np.nan, np.inf, 0.0, 1.5):
        with pytest.raises(ValueError, match="tau"):
            _core.oap_draws(1, 2, 0, 5, tau)
    assert _core.oap_draws(1, 2, 0, 5, 1.0).all()


def test_codes_and_ranges_of_the_learners_are_checked():
    with pytest.raises(ValueError, match="y must hold ranks"):
        _core.widrow_hoff_fit(np.ones((2, 2)), np.array([-2**31, 1], np.int64), 3, 0.1, True, np.zeros(2), 0.0)
    X6 = np.random.default_rng(0).random((6, 2))
    with pytest.raises(ValueError, match="n_thresholds"):
        _core.rankboost_fit_graph(X6, np.array([0, 1, 2]), np.array([3, 4, 5]), 3, 2**62, 1)
    X, ranks = np.ones((2, 2)), np.array([1, 2], np.int64)
    W, C, V = np.zeros((1, 2)), np.zeros((1, 1)), np.zeros(1, np.int64)
    for variant, tau, match in ((77, 1.0, "variant"), (-1, 1.0, "variant"), (0, 0.0, "tau")):
        with pytest.raises(ValueError, match=match):
            _core.oap_linear_fit(X, ranks, 2, tau, 1, 0, variant, 1, W, C, V)
    g = _one_group(3)
    y, f = np.array([1.0, 0.0, 2.0]), np.array([0.3, 0.1, 0.2])
    with pytest.raises(ValueError, match="gain"):
        _core.dcg_statistics(y, f, g.order, g.offsets, 2, 7, 1)
    oracle = _core.ranksvm_oracle(y, g.order, g.offsets)
    with pytest.raises(ValueError, match="loss"):
        oracle(np.ones((3, 2)), np.zeros(2), 7)
    with pytest.raises(ValueError, match="w0"):
        _core.ranksvm_fit_dense(np.ones((3, 2)), 1.0, 0, 1e-6, 10, 1, y=y, order=g.order, offsets=g.offsets,
                                w0=np.zeros(5))


def test_csr_shape_and_permutations_are_checked():
    g = _one_group(3)
    data, indices, indptr = np.ones(3), np.array([0, 1, 2], np.int32), np.array([0, 1, 2, 3], np.int32)
    for n_rows, n_cols in ((3, 0), (-1, 3)):
        with pytest.raises(ValueError, match="CSR shape|one entry per row"):
            _core.ranksvm_fit_csr(data, indices, indptr, n_rows, n_cols, 1.0, 0, 1e-6, 10, 1, y=Y3[:, 0],
                                  order=g.order, offsets=g.offsets)
    with pytest.raises(ValueError, match="CSR shape"):
        _core.cg_jacobi_diagonal((data, indices, indptr), 3, 0, order=g.order, offsets=g.offsets)
    y = np.array([3.0, 1.0, 2.0, 1.0])
    with pytest.raises(ValueError, match="permutation"):
        _core.dense_ranks_from_order(y, np.array([1, 1, 2, 0], np.int64))
    ranks, values = _core.dense_ranks_from_order(y, np.argsort(y, kind="stable").astype(np.int64))
    np.testing.assert_array_equal(ranks, [2, 0, 1, 0])
    np.testing.assert_array_equal(values, [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="max_distinct"):
        _core.dense_ranks_small(y, -1)
    ranks, values = _core.dense_ranks_small(y + 0.5 ** 40, 2**62)  # not integral: the hash route, m slots
    np.testing.assert_array_equal(ranks, [2, 0, 1, 0])
    with pytest.raises(ValueError, match="every code"):
        _core.GroupIndex.from_codes(np.array([0, 0, 2, 2], np.int64), 3)


def test_empty_basis_counters_and_warm_starts_are_checked():
    with pytest.raises(ValueError, match="at least one vector"):
        _core.sparse_rls_path_gram(np.zeros((0, 0)), np.zeros((0, 1)), np.zeros((0, 0)), np.array([1.0]))
    X, ranks = np.ones((2, 2)), np.array([1, 2], np.int64)
    W, C = np.zeros((1, 2)), np.zeros((1, 1))
    for t0, votes, match in ((-1, 0, "t0"), (2**63 - 2, 0, "t0"), (0, 2**63 - 2, "vote counts"), (0, -1, "vote")):
        with pytest.raises(ValueError, match=match):
            _core.oap_linear_fit(X, ranks, 2, 1.0, 1, t0, 0, 1, W, C, np.array([votes], np.int64))
    X6 = np.random.default_rng(0).random((6, 2))
    with pytest.raises(ValueError, match="n_rounds"):
        _core.rankboost_fit_graph(X6, np.array([0, 1, 2]), np.array([3, 4, 5]), -1, 0, 1)
    g = _one_group(6)
    y6 = np.arange(6.0)
    args = (X6, y6, g.order, g.offsets, 1.0, 0.1, 1e-6, 50, 1)
    warm = {}
    ref = _core.svrank_linear(*args, warm=warm)
    for key, bad in (("w0", np.zeros(5)), ("planes", np.zeros((5, 1))), ("deltas", np.zeros(7)), ("weights", "x")):
        broken = dict(warm, **{key: bad})
        with pytest.raises(ValueError, match="warm"):
            _core.svrank_linear(*args, warm=broken)
    with pytest.raises(ValueError, match="warm"):
        _core.svrank_linear(*args, warm={"w0": np.zeros(2)})
    again = _core.svrank_linear(*args, warm=warm)  # a well-formed warm start is still taken
    np.testing.assert_allclose(again[0], ref[0], rtol=1e-6, atol=1e-9)
