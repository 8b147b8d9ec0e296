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
