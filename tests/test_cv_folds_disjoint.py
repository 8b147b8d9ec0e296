"""Hold-out folds of RankRLSCV and kfold_predictions must be disjoint: each row's cross-validated prediction comes
from the one model retrained without it (with overlapping test folds a row would be scored by another fold's model,
which may have trained on it)."""
import numpy as np
import pytest

import fastrank
from fastrank import model_selection as ms


def test_overlapping_folds_raise_in_both_fold_users():
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(20, 3)), rng.normal(size=20)
    folds = [np.arange(8), np.arange(5, 12)]
    with pytest.raises(ValueError, match="folds must be disjoint"):
        fastrank.RankRLSCV(alphas=[0.1, 1.0], cv=folds).fit(X, y)
    with pytest.raises(ValueError, match="folds must be disjoint"):
        ms.kfold_predictions(fastrank.RankRLS(), X, y, folds)
    with pytest.raises(ValueError, match="row 5 is in more than one hold-out set"):
        ms.kfold_predictions(fastrank.RankRLS(), X, y, folds)


def test_no_hold_out_set():
    """An empty list of sets: no predictions to make (holdout_predictions) or no folds to score (kfold_predictions),
    never numpy's concatenate error."""
    rng = np.random.default_rng(1)
    X, y = rng.normal(size=(12, 3)), rng.normal(size=12)
    assert ms.holdout_predictions(fastrank.RankRLS(), X, y, []) == []
    with pytest.raises(ValueError, match="the folds hold no hold-out set"):
        ms.kfold_predictions(fastrank.RankRLS(), X, y, [])
    with pytest.raises(ValueError, match="the folds hold no hold-out set"):
        fastrank.RankRLSCV(alphas=[1.0], cv=[]).fit(X, y)
