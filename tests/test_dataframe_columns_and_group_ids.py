"""The shared input layer and the RankRLS problem: query ids that are no ids, and multi-output targets whose ties are
the same inside every query, against explicit-pair oracles of Pahikkala et al. (2009)."""

import itertools
import re

import numpy as np
import pandas as pd
import pytest

import fastrank
from fastrank import metrics, utils


def _pair_normal_equations(X, Y, groups, alpha, exclude_ties):
    """Linear RankRLS from the explicit pairs (cost (21) inside each group, eq. 28): (X^T L X + alpha I) W = X^T L Y
    with L = sum over relevant pairs of (e_i - e_j)(e_i - e_j)^T; with ``exclude_ties`` the pairs tied in column 0
    are left out (every column ties the same pairs)."""
    m = X.shape[0]
    L = np.zeros((m, m))
    for q in np.unique(groups):
        for i, j in itertools.combinations(np.flatnonzero(groups == q), 2):
            if exclude_ties and Y[i, 0] == Y[j, 0]:
                continue
            e = np.zeros(m)
            e[i], e[j] = 1.0, -1.0
            L += np.outer(e, e)
    return np.linalg.solve(X.T @ L @ X + alpha * np.eye(X.shape[1]), X.T @ L @ Y)


# -- group ids that are missing ---------------------------------------------------------------------------------------

def test_a_nan_among_object_group_ids_is_refused():
    # np.unique sorted the objects wrongly around the NaN: the rows of id 1.0 landed in two groups (labels
    # [1.0, nan, nan, 1.0, 2.0]) and every learner and measure silently used the wrong pairs
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((12, 2)), rng.standard_normal(12)
    groups = np.array([1.0, 2.0, np.nan] * 4, dtype=object)
    for call in (lambda: fastrank.RankRLS().fit(X, y, groups), lambda: metrics.pairwise_disagreement(y, y, groups),
                 lambda: fastrank.RankRLSCV(alphas=[1.0]).fit(X, y, groups)):
        with pytest.raises(ValueError, match=r"groups contains a missing group id \(nan at row 2\)"):
            call()


@pytest.mark.parametrize("groups", [pd.Series(["a", "b", None] * 4, dtype=object),
                                    pd.array(["a", "b", None] * 4, dtype="string"),
                                    pd.Series(["a", "b", np.nan] * 4),
                                    np.array(["2020-01-01", "2020-01-02", "NaT"] * 4, dtype="datetime64[D]")])
def test_missing_group_ids_are_named(groups):
    # were numpy's "'<' not supported between instances of 'NoneType' and 'str'" / "boolean value of NA is
    # ambiguous"; the NaT dates formed one query of their own
    rng = np.random.default_rng(1)
    X, y = rng.standard_normal((12, 2)), rng.standard_normal(12)
    est = fastrank.RankRLS().fit(X, y, np.tile([0, 1, 2], 4))
    before = est.predict(X)
    with pytest.raises(ValueError, match=r"groups contains a missing group id \(.* at row 2\); give every row a "
                                         r"group id"):
        est.fit(X, y, groups)
    np.testing.assert_array_equal(est.predict(X), before)  # the failed call left the fitted model as it was


_IDS = np.tile([0.0, 1.0, 2.0], 4)


@pytest.mark.parametrize("groups, cause", [
    (np.where(np.arange(12) == 5, np.nan, _IDS), "a missing group id (nan at row 5); give every row a group id"),
    (pd.array([0, 1, 2, None] * 3, dtype="Int64"), "a missing group id (nan at row 3); give every row a group id"),
    (np.where(np.arange(12) == 7, -np.inf, _IDS),
     "an infinite group id (-inf at row 7); give every row a finite group id"),
])
def test_float_and_nullable_group_ids_that_name_no_group_are_refused_with_their_row(groups, cause):
    # a float (or pandas Int64) column said only "groups contains NaN or infinity": no row, nothing to do
    rng = np.random.default_rng(7)
    X, y = rng.standard_normal((12, 2)), rng.standard_normal(12)
    est = fastrank.RankRLS().fit(X, y, _IDS)
    before = est.predict(X)
    for call, name in [(lambda: est.fit(X, y, groups), "groups"), (lambda: metrics.ndcg(y, y, groups), "groups"),
                       (lambda: utils.sizes_from_groups(groups), "groups"),
                       (lambda: utils.group_order(groups), "groups"), (lambda: utils.groups_from_qid(groups), "qid")]:
        with pytest.raises(ValueError, match="^" + re.escape(f"{name} contains {cause}") + "$"):
            call()
    np.testing.assert_array_equal(est.predict(X), before)  # the failed fit left the model as it was
    infinite = r"^groups contains an infinite group id \(-?inf at row 1\); give every row a finite group id$"
    for ids in (np.array([1, np.inf], dtype=object), pd.Series([1, np.float32(-np.inf)], dtype=object)):
        # numbers in an object column: refused as in a float column, by the estimators too (they took inf as an id)
        with pytest.raises(ValueError, match=infinite):
            utils.sizes_from_groups(ids)
        with pytest.raises(ValueError, match=infinite):
            est.fit(X[:2], y[:2], ids)
    np.testing.assert_array_equal(est.predict(X), before)


def test_object_group_ids_without_missing_ones_group_as_their_values():
    rng = np.random.default_rng(2)
    X, y = rng.standard_normal((12, 2)), rng.standard_normal(12)
    ids = np.tile([1.5, 2.5, 7.0], 4)
    W = _pair_normal_equations(X, y[:, None], ids, 0.3, False)[:, 0]
    for groups in (ids.astype(object), pd.Series(ids, dtype=object), pd.Series(ids.astype(str))):
        np.testing.assert_allclose(fastrank.RankRLS(0.3).fit(X, y, groups).coef_, W, rtol=1e-8)


# -- exclude_ties with several outputs ---------------------------------------------------------------------------------

@pytest.mark.parametrize("solver", ["primal", "dual", "cg"])
def test_exclude_ties_outputs_that_tie_the_same_pairs_inside_every_group(solver):
    # the check compared the columns' tie classes over ALL rows: y and a per-query shift of it tie the same pairs
    # (pairs lie inside a query) but were refused with "needs every output column of y to tie the same pairs"
    rng = np.random.default_rng(3)
    m, groups = 24, np.repeat([4, 1, 9, 2], 6)
    X = rng.standard_normal((m, 3))
    y0 = rng.integers(0, 3, size=m).astype(float)
    Y = np.c_[y0, 2.0 * y0 + 10.0 * groups]
    W = _pair_normal_equations(X, Y, groups, 0.7, True)
    est = fastrank.RankRLS(0.7, solver=solver, exclude_ties=True, tol=1e-13, max_iter=500).fit(X, Y, groups)
    np.testing.assert_allclose(est.coef_, W, rtol=1e-8)


def test_exclude_ties_outputs_that_tie_different_pairs_are_still_refused():
    rng = np.random.default_rng(4)
    X, groups = rng.standard_normal((8, 2)), np.repeat([0, 1], 4)
    y0 = np.array([1.0, 2, 2, 3, 1, 2, 2, 3])
    for other in (np.arange(8.0), np.array([1.0, 1, 2, 3, 1, 2, 2, 3])):
        with pytest.raises(ValueError, match="tie the same pairs"):
            fastrank.RankRLS(exclude_ties=True).fit(X, np.c_[y0, other], groups)


def test_pandas_missing_values_in_features_and_targets_are_named_as_nan():
    # a nullable pandas column with NA reached the user as Python's "float() argument must be a string or a real
    # number, not 'NAType'"; None in an object array already read as NaN
    rng = np.random.default_rng(5)
    X = pd.DataFrame({"a": pd.array([1, 2, None, 4, 5, 6], dtype="Int64"), "b": rng.standard_normal(6)})
    y = pd.Series(pd.array([1, 2, None, 4, 5, 6], dtype="Int64"))
    with pytest.raises(ValueError, match="Input X contains NaN"):
        fastrank.RankRLS().fit(X, np.arange(6.0))
    with pytest.raises(ValueError, match="Input y contains NaN"):
        fastrank.RankSVM().fit(X.fillna(0), y)
    with pytest.raises(TypeError, match="X must be numeric: .*dict"):  # other objects are still no numbers
        fastrank.RankRLS().fit(np.array([[1.0, {}], [2.0, 3.0]], dtype=object), [1.0, 2.0])


def test_dask_refuses_a_missing_group_id_in_a_partition():
    # a NaN among object ids split one id into several groups per partition: the merged counts failed with
    # "RuntimeError: internal error: incomplete groups after merging the partitions"
    da = pytest.importorskip("dask.array")
    from fastrank.dask import DaskRankRLS

    rng = np.random.default_rng(6)
    X, y = rng.standard_normal((40, 2)), rng.standard_normal(40)
    groups = np.array([1.0, 2.0, 5.0, 1.0, 2.0, 5.0, 5.0, 5.0] * 5, dtype=object)
    groups[22] = np.nan
    with pytest.raises(ValueError, match=r"groups partition 1 \(rows 20:40\) contains a missing group id \(nan at "
                                         r"row 22\)"):
        DaskRankRLS(group_weighting="per_query").fit(da.from_array(X, chunks=20), da.from_array(y, chunks=20),
                                                     da.from_array(groups, chunks=20))


# -- DataFrame columns ------------------------------------------------------------------------------------------------

def _fitted_on_a_frame(name, X, y, groups):
    cls = fastrank._registry.ESTIMATORS[name]
    if issubclass(cls, fastrank.online._OnlineOrdinal):
        return cls().fit(X, y)
    return cls().fit(X, y.astype(float), groups)


@pytest.mark.parametrize("name", sorted(fastrank._registry.ESTIMATORS))
def test_a_frame_with_its_columns_in_another_order_is_refused(name):
    # predict read the values by position: the columns of a DataFrame in another order were scored with the wrong
    # weights, silently (scikit-learn's estimators record feature_names_in_ and refuse them)
    rng = np.random.default_rng(7)
    X = pd.DataFrame(rng.standard_normal((30, 3)), columns=["bm25", "tf", "pagerank"])
    y, groups = rng.integers(0, 3, size=30), np.repeat([0, 1, 2], 10)
    est = _fitted_on_a_frame(name, X, y, groups)
    np.testing.assert_array_equal(est.feature_names_in_, ["bm25", "tf", "pagerank"])
    with pytest.warns(UserWarning, match="X does not have valid feature names"):  # scikit-learn's warning
        np.testing.assert_array_equal(est.predict(X), est.predict(X.to_numpy()))  # same names or no names
    with pytest.raises(ValueError, match=r"X has the columns \['pagerank', 'bm25', 'tf'\], but .* was fitted with "
                                         r"\['bm25', 'tf', 'pagerank'\]"):
        est.predict(X[["pagerank", "bm25", "tf"]])
    assert not hasattr(est.fit(X.to_numpy(), y) if isinstance(est, fastrank.online._OnlineOrdinal)
                       else est.fit(X.to_numpy(), y.astype(float), groups), "feature_names_in_")


_MIXED = re.escape("X has column names of the types ['int', 'str']: give every column a string name "
                   "(X.columns = X.columns.astype(str)), so that they can be checked by name, or none")


@pytest.mark.parametrize("name", sorted(fastrank._registry.ESTIMATORS))
def test_a_frame_whose_column_names_mix_strings_and_numbers_is_refused(name):
    # pd.concat of a named and an unnamed frame: no feature_names_in_ was recorded, and the same frame with its
    # columns reordered was scored with the wrong weights, silently (scikit-learn refuses such names, TypeError)
    rng = np.random.default_rng(7)
    named = pd.DataFrame(rng.standard_normal((30, 3)), columns=["bm25", "tf", "pagerank"])
    mixed = pd.concat([named[["bm25", "tf"]], pd.DataFrame({0: named["pagerank"]})], axis=1)
    y, groups = rng.integers(0, 3, size=30), np.repeat([0, 1, 2], 10)
    with pytest.raises(TypeError, match=_MIXED):
        _fitted_on_a_frame(name, mixed, y, groups)
    est = _fitted_on_a_frame(name, named, y, groups)
    before = est.predict(named)
    with pytest.raises(TypeError, match=_MIXED):
        est.predict(mixed)
    np.testing.assert_array_equal(est.feature_names_in_, ["bm25", "tf", "pagerank"])
    np.testing.assert_array_equal(est.predict(named), before)


def test_partial_fit_refuses_a_batch_with_the_columns_in_another_order():
    rng = np.random.default_rng(8)
    X = pd.DataFrame(rng.standard_normal((20, 2)), columns=["a", "b"])
    y = rng.standard_normal(20)
    est = fastrank.OnlineMPRank().partial_fit(X[:10], y[:10])
    before = est.predict(X)
    with pytest.raises(ValueError, match="give them in that order"):
        est.partial_fit(X[10:][["b", "a"]], y[10:])
    np.testing.assert_array_equal(est.predict(X), before)


def test_the_column_names_survive_a_model_file(tmp_path):
    rng = np.random.default_rng(9)
    X = pd.DataFrame(rng.standard_normal((20, 2)), columns=["a", "b"])
    est = fastrank.RankRLS().fit(X, rng.standard_normal(20))
    fastrank.save(est, tmp_path / "m.npz")
    loaded = fastrank.load(tmp_path / "m.npz")
    np.testing.assert_array_equal(loaded.feature_names_in_, ["a", "b"])
    with pytest.raises(ValueError, match="was fitted with"):
        loaded.predict(X[["b", "a"]])
