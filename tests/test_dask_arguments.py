"""fastrank.dask's permutation test refuses a missing y as the single-machine one does (checked before any task)."""

import numpy as np
import pytest

pytest.importorskip("dask")

import fastrank  # noqa: E402
from fastrank import model_selection as ms  # noqa: E402
from fastrank.dask import permutation_test_lpo  # noqa: E402


def test_permutation_test_without_y_is_the_single_machine_error():
    X = np.random.default_rng(0).normal(size=(10, 3))
    for test in (ms.permutation_test_lpo, permutation_test_lpo):
        with pytest.raises(ValueError, match="needs a 1-D y"):
            test(fastrank.RankRLS(), X, None, 3)


def test_partitions_training_scores_and_model_files_are_checked_as_in_memory(tmp_path):
    import warnings

    import dask
    import dask.array as da

    from fastrank.dask import DaskRankRLS, DaskRankRLSCV
    from fastrank.exceptions import ConstantModelWarning
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(30, 3)), rng.normal(size=30)
    # a chunk narrower than the array declares: numpy's "operands could not be broadcast" from fit and predict
    bad = da.concatenate([da.from_delayed(dask.delayed(lambda: X[:10, :2])(), shape=(10, 3), dtype=float),
                          da.from_array(X[10:], chunks=20)])
    narrow = r"^X partition 0 \(rows 0:10\) has 2 columns, but the dask array declares 3"
    with pytest.raises(ValueError, match=narrow):
        DaskRankRLS().fit(bad, y)
    with pytest.raises(ValueError, match=narrow):
        DaskRankRLS().fit(X, y).predict(bad).compute()
    # a text entry is named at its row in the whole array, as a NaN is (it was the row inside its partition)
    text = X.astype(object)
    text[12, 1] = "x"
    with pytest.raises(ValueError, match=r"^X partition 1 \(rows 10:20\) must be numeric: 'x' \(str\) at row 12, "
                                         r"column 1 is not a number$"):
        DaskRankRLS().fit(da.from_array(text, chunks=(10, 3)), y)
    # training scores that underflow warn as RankRLS's do (the model ranked nothing, silently)
    tiny = X * 1e-200
    with pytest.warns(ConstantModelWarning, match=r"^RankRLS's scores X @ coef_ underflow") as local:
        fastrank.RankRLS(solver="primal").fit(tiny, y)
    with pytest.warns(ConstantModelWarning, match=r"^DaskRankRLS's scores X @ coef_ underflow") as on_dask:
        DaskRankRLS().fit(da.from_array(tiny, chunks=10), y)
    assert str(on_dask[0].message).replace("DaskRankRLS", "RankRLS") == str(local[0].message)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConstantModelWarning)
        DaskRankRLS().fit(da.from_array(X, chunks=10), y)
    # a DaskRankRLSCV names the model a file can hold
    search = DaskRankRLSCV(alphas=[0.1, 1.0]).fit(da.from_array(X, chunks=10), y)
    with pytest.raises(TypeError, match=r"save its chosen in-memory model, est.best_estimator_$"):
        fastrank.save(search, tmp_path / "m.frk")
    fastrank.save(search.best_estimator_, tmp_path / "m.frk")
    np.testing.assert_array_equal(fastrank.load(tmp_path / "m.frk").predict(X), search.best_estimator_.predict(X))


def test_a_frame_whose_column_names_mix_strings_and_numbers_is_refused():
    # as in memory (scikit-learn's rule): such names could be neither recorded nor checked
    import pandas as pd
    import dask.dataframe as dd

    from fastrank.dask import DaskRankRLS, DaskRankRLSCV
    rng = np.random.default_rng(0)
    named = pd.DataFrame(rng.normal(size=(30, 3)), columns=["bm25", "tf", "pagerank"])
    mixed = pd.concat([named[["bm25", "tf"]], pd.DataFrame({0: named["pagerank"]})], axis=1)
    y, g = rng.normal(size=30), np.repeat([0, 1, 2], 10)
    message = r"^X has column names of the types \['int', 'str'\]: give every column a string name"
    for cls in (DaskRankRLS, DaskRankRLSCV):
        with pytest.raises(TypeError, match=message):
            cls(kernel="linear").fit(dd.from_pandas(mixed, npartitions=2), y, g)
    est = DaskRankRLS().fit(dd.from_pandas(named, npartitions=2), y, g)
    with pytest.raises(TypeError, match=message):
        est.predict(dd.from_pandas(mixed, npartitions=2))


def test_scipy_sparse_chunks_are_refused_by_name_as_a_sparse_x_is():
    # dask's sparse pattern (da.from_array(csr, asarray=False)) reached SciPy's "sparse array length is ambiguous"
    import dask
    import dask.array as da
    import scipy.sparse as sp

    from fastrank.dask import DaskRankRLS, DaskRankRLSCV
    rng = np.random.default_rng(0)
    X, y, g = rng.normal(size=(60, 4)), rng.normal(size=60), np.repeat(np.arange(10), 6)
    sparse = da.from_array(sp.csr_matrix(X), chunks=(20, 4), asarray=False)
    message = (r"^X partition 0 \(rows 0:20\) is a scipy.sparse matrix; fastrank.dask takes dense dask or numpy arrays "
               r"and dataframes: make the chunks dense \(X.map_blocks\(lambda b: b.toarray\(\), dtype=float\)\), or "
               r"fit fastrank.RankRLS, which takes sparse X, in memory$")
    with dask.config.set(scheduler="synchronous"):
        with pytest.raises(TypeError, match=message):
            DaskRankRLS().fit(sparse[:20], y[:20], g[:20])
        model = DaskRankRLS().fit(da.from_array(X, chunks=(20, 4)), y, g)
        with pytest.raises(TypeError, match=message):
            model.predict(sparse[:20]).compute()
        dense = sparse.map_blocks(lambda b: b.toarray(), dtype=float)  # the advice
        np.testing.assert_array_equal(DaskRankRLS().fit(dense, y, g).coef_, model.coef_)
        np.testing.assert_array_equal(model.predict(dense).compute(), model.predict(X))
        # the search reads X in memory: refused before computing it, with the same advice (not "call X.toarray()")
        with pytest.raises(TypeError, match=r"^X is a scipy.sparse matrix; .* make the chunks dense \(X.map_blocks"):
            DaskRankRLSCV(alphas=[1.0]).fit(sparse, y, g)
