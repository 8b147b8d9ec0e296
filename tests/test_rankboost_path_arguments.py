"""rankboost_path checks y, the group ids and explicit folds against X's rows before indexing with them."""

import numpy as np
import pytest

from fastrank._rankboost import rankboost_path


def _data():
    rng = np.random.default_rng(0)
    return rng.normal(size=(12, 3)), np.arange(12.0)


def test_explicit_folds_outside_the_rows_are_named():
    X, y = _data()
    with pytest.raises(ValueError, match="cv test set has indices outside"):
        rankboost_path(X, y, 3, cv=[(np.arange(6), np.arange(6, 20))])
    with pytest.raises(ValueError, match="cv must be a number of folds, a splitter or an iterable"):
        rankboost_path(X, y, 3, cv=1.5)


def test_y_and_groups_must_match_the_rows():
    X, y = _data()
    folds = [(np.arange(4), np.arange(4, 8)), (np.arange(4, 8), np.arange(4))]
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        rankboost_path(X, y[:5], 3, cv=folds)
    with pytest.raises(ValueError, match="groups has 5 entries but X has 12 rows"):
        rankboost_path(X, y, 3, np.zeros(5), cv=folds)
