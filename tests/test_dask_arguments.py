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
