"""Identical rows get identical scores from the on-line learners' averaged rule and from fastrank.dask's predict,
as from the in-memory learners (BLAS's matrix-vector product and the blocked kernel product round a row by its
place in a block; the ranking measures count a tie 1/2)."""

import numpy as np
import pytest

from fastrank import OAPBPM, PRank, WidrowHoff

RNG = np.random.default_rng(0)


def _repeated(n_features, n_rows):
    distinct = RNG.standard_normal((5, n_features))
    which = np.r_[0, 1, 2, 3, 4, RNG.integers(0, 5, n_rows - 5)]
    return distinct, which, distinct[which]


def _ties_exactly(scores, which):
    first = scores[np.unique(which, return_index=True)[1]]
    return np.array_equal(scores, first[which])


@pytest.mark.parametrize("make", [lambda: PRank(), lambda: PRank(kernel="rbf", gamma=0.5),
                                  lambda: OAPBPM(n_estimators=5, random_state=0),
                                  lambda: WidrowHoff()])
def test_on_line_scores_of_identical_rows_tie(make):
    X, y = RNG.standard_normal((200, 300)), RNG.integers(0, 3, 200)
    model = make().fit(X, y)
    distinct, which, Z = _repeated(300, 7)
    scores = model.decision_function(Z)
    one_by_one = np.array([model.decision_function(distinct[[k]])[0] for k in range(5)])
    np.testing.assert_allclose(scores, one_by_one[which], rtol=1e-9)
    assert _ties_exactly(scores, which)


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
def test_dask_scores_of_identical_rows_in_a_block_tie(kernel):
    da = pytest.importorskip("dask.array")
    from fastrank.dask import DaskRankRLS

    X, y = RNG.standard_normal((200, 300)), RNG.standard_normal(200)
    model = DaskRankRLS(kernel=kernel, basis_vectors=None if kernel == "linear" else 50, random_state=0).fit(X, y)
    distinct, which, Z = _repeated(300, 7)
    scores = model.predict(da.from_array(Z, chunks=7)).compute()
    assert _ties_exactly(scores, which)
