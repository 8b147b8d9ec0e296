"""Messages of the exact-CV searches and of the memory limit, each against its exact text: non-finite scores name the
grid values on one line, fold counts outside the data name the argument and its range, and the MemoryError states
the solver's fractional kernel-matrix count."""

import numpy as np
import pytest

import fastrank
from fastrank import model_selection as ms


def test_non_finite_cv_scores_name_the_grid_values_on_one_line():
    """A scoring callable returning NaN: the message listed the alphas as numpy's wrapped array print (line breaks,
    1.00000000e-03 ...); it names them as numbers."""
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(12, 3)), rng.normal(size=12)

    def scoring(y_true, y_pred, groups):
        return np.nan

    with pytest.raises(ValueError) as info:
        fastrank.RankRLSCV(np.logspace(-3, 3, 13), cv=3, scoring=scoring).fit(X, y)
    assert str(info.value) == ("the cross-validation score is not finite for alpha in [0.001, 0.00316228, 0.01, "
                               "0.0316228, 0.1, 0.316228, 1, 3.16228, 10, 31.6228, 100, 316.228, 1000]")


def test_fold_counts_outside_the_data_name_the_argument_and_the_range():
    """cv=3 with two groups said "cannot make 3 folds from 2 groups" (and cv=1 "the number of folds must be at least
    2"): neither named the argument (kfold_predictions' folds, RankRLSCV's cv) nor the values it takes."""
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(12, 3)), rng.normal(size=12)
    groups = np.repeat([0, 1, 2], 4)
    with pytest.raises(ValueError, match=r"^folds \(RankRLSCV's cv\) = 1 must be between 2 and the number of inputs "
                                         r"\(12\)$"):
        ms.kfold_predictions(fastrank.RankRLS(), X, y, 1)
    with pytest.raises(ValueError, match=r"^folds \(RankRLSCV's cv\) = 13 must be between 2 and the number of inputs "
                                         r"\(12\)$"):
        ms.kfold_predictions(fastrank.RankRLS(), X, y, 13)
    with pytest.raises(ValueError, match=r"^folds \(RankRLSCV's cv\) = 4 must be between 2 and the number of groups "
                                         r"\(3\)$"):
        fastrank.RankRLSCV(cv=4).fit(X, y, groups)


def test_memory_error_states_a_fractional_matrix_count(monkeypatch):
    """The dual solver announces 1.2 kernel matrices (its measured peak): the MemoryError said "1 x a dense 12 x 12
    kernel matrix", the count truncated to an integer."""
    monkeypatch.setenv("FASTRANK_MAX_DENSE_BYTES", "1000")
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(12, 3)), rng.normal(size=12)
    with pytest.raises(MemoryError, match=r"^fastrank: this step would allocate 1\.2 x a dense 12 x 12 kernel matrix "
                                          r"\(1\.[34] KB\), more than the limit of 1000 B"):
        fastrank.RankRLS(kernel="rbf").fit(X, y)


@pytest.mark.parametrize("kernel", ["linear", "rbf"])  # one leave-group-out per alpha; a shared eigendecomposition
def test_a_long_alpha_grid_is_held_to_the_memory_limit(monkeypatch, kernel):
    # the leave-group-out predictions of every alpha were not counted: 200,000 alphas on 48 rows took 230 MB under a
    # 5 MB limit, and 1e8 alphas ran to 14 GB
    rng = np.random.default_rng(1)
    X, y, groups = rng.normal(size=(48, 3)), rng.normal(size=48), np.repeat(np.arange(8), 6)
    alphas, need = np.logspace(-3, 3, 200), 3 * 8 * 200 * 48
    monkeypatch.setenv("FASTRANK_MAX_DENSE_BYTES", str(need - 1))
    if kernel == "rbf":
        with pytest.raises(MemoryError, match=r"3 x a dense 200 x 48 leave-group-out predictions and coefficients of "
                                              r"every alpha .* Use a shorter grid of alphas"):
            fastrank.RankRLSCV(alphas=alphas, kernel=kernel).fit(X, y, groups)
        monkeypatch.setenv("FASTRANK_MAX_DENSE_BYTES", str(need))
    # else one alpha's predictions at a time: nothing of the grid's size is held
    assert fastrank.RankRLSCV(alphas=alphas, kernel=kernel).fit(X, y, groups).cv_results_["scores"].shape == (200,)
