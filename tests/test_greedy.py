"""Cohen, Schapire & Singer's greedy ordering: hand example, naive recomputation, 1/2 bound."""

import functools
import itertools
import re

import numpy as np
import pytest

from fastrank import RankBoost, RankRLS, greedy_order


def agreement(P, order):
    order = np.asarray(order)
    i, j = np.triu_indices(order.size, 1)
    return float(P[order[i], order[j]].sum())


@functools.lru_cache(maxsize=None)
def permutations(n):
    return np.array(list(itertools.permutations(range(n))), dtype=np.int8)


def best_agreement(P):
    n = P.shape[0]
    perms = permutations(n)
    i, j = np.triu_indices(n, 1)
    return float(P[perms[:, i], perms[:, j]].sum(axis=1).max())


def naive_greedy(P):
    """Recompute every net preference over the remaining set at each step (no incremental update)."""
    left = list(range(P.shape[0]))
    out = []
    while left:
        pi = [sum(P[v, u] - P[u, v] for u in left if u != v) for v in left]
        k = int(np.argmax(pi))
        out.append(left.pop(k))
    return out


def slides_example():
    a, b, c, d = range(4)
    P = np.zeros((4, 4))
    P[a, b], P[a, c], P[a, d] = 0, 1 / 4, 1 / 8
    P[b, a], P[b, c], P[b, d] = 1, 1, 1
    P[c, a], P[c, b], P[c, d] = 3 / 4, 0, 1 / 8
    P[d, a], P[d, b], P[d, c] = 7 / 8, 0, 7 / 8
    return P


def test_hand_worked_example_from_the_slides():
    order, picked = greedy_order(slides_example(), return_scores=True)
    np.testing.assert_array_equal(order, [1, 3, 2, 0])  # b > d > c > a
    np.testing.assert_allclose(picked, [3, 12 / 8, 2 / 4, 0], atol=1e-15)


def test_callable_equals_matrix():
    P = slides_example()
    np.testing.assert_array_equal(greedy_order(lambda u, v: P[u, v], n_items=4), [1, 3, 2, 0])


@pytest.mark.parametrize("kind", ["binary", "soft"])
def test_half_of_optimum_on_random_tournaments(kind):
    rng = np.random.default_rng(0)
    for trial in range(60):
        n = int(rng.integers(2, 9)) if trial % 10 else 8
        if kind == "binary":
            U = (rng.random((n, n)) < 0.5).astype(float)
        else:
            U = rng.random((n, n))
        P = np.triu(U, 1) + np.tril(1 - U.T, -1)  # PREF(u, v) + PREF(v, u) = 1
        order = greedy_order(P)
        assert sorted(order.tolist()) == list(range(n))
        assert order.tolist() == naive_greedy(P)
        assert agreement(P, order) >= 0.5 * best_agreement(P) - 1e-12


def test_general_preferences_match_naive_recomputation():
    rng = np.random.default_rng(1)
    for n in (1, 2, 5, 30):
        P = rng.random((n, n))  # PREF need not be complementary
        assert greedy_order(P).tolist() == naive_greedy(P)


def test_fitted_ranker_step_and_sigmoid():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(40, 3))
    y = np.round(X[:, 0] + rng.normal(size=40))
    for est in (RankRLS(alpha=1.0).fit(X, y), RankBoost(n_estimators=5).fit(X, y)):
        s = est.predict(X)
        # a consistent (transitive) preference: greedy recovers the score order, ties by index
        np.testing.assert_array_equal(greedy_order(est, X), np.argsort(-s, kind="stable"))
        order = greedy_order(est, X, pairwise="sigmoid", temperature=0.5)
        d = s[:, None] - s[None, :]
        assert order.tolist() == naive_greedy(1 / (1 + np.exp(-d / 0.5)))


def test_bad_input():
    with pytest.raises(ValueError, match="square"):
        greedy_order(np.zeros((3, 4)))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        greedy_order(np.array([[0, 2.0], [0, 0]]))
    with pytest.raises(ValueError, match="NaN"):
        greedy_order(np.array([[0, np.nan], [0, 0]]))
    with pytest.raises(ValueError, match="n_items"):
        greedy_order(lambda u, v: 0.5)
    with pytest.raises(ValueError, match="needs X"):
        greedy_order(RankRLS().fit(np.eye(3), [0, 1, 2]))
    with pytest.raises(ValueError, match="temperature"):
        greedy_order(RankRLS().fit(np.eye(3), [0, 1, 2]), np.eye(3), pairwise="sigmoid", temperature=0)
    with pytest.raises(ValueError, match="pairwise"):
        greedy_order(RankRLS().fit(np.eye(3), [0, 1, 2]), np.eye(3), pairwise="x")
    with pytest.raises(TypeError, match="preference"):
        greedy_order(np.array([["a", "b"], ["c", "d"]]))


def test_memory_guard_counts_the_matrices_really_allocated(monkeypatch):
    """3,000 items: one 3000 x 3000 float64 matrix (72 MB) for a ranker, two for a matrix or callable."""
    import tracemalloc

    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 4))
    ranker = RankRLS().fit(X[:200], X[:200, 0])
    monkeypatch.setenv("FASTRANK_MAX_DENSE_BYTES", "60M")
    with pytest.raises(MemoryError, match=r"3000 x 3000 preference matrix \(greedy_order\).*FASTRANK_MAX_DENSE"):
        greedy_order(ranker, X)
    monkeypatch.setenv("FASTRANK_MAX_DENSE_BYTES", "100M")  # one matrix fits
    tracemalloc.start()
    try:
        order = greedy_order(ranker, X)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 100 * 2**20  # what the guard was told is what was allocated (72 MB + O(n))
    assert np.array_equal(order, np.argsort(-ranker.predict(X), kind="stable"))
    P = np.full((3000, 3000), 0.5)
    with pytest.raises(MemoryError, match=r"2 x a dense 3000 x 3000 preference matrix"):
        greedy_order(P)
    with pytest.raises(MemoryError, match="preference matrix"):
        greedy_order(lambda u, v: 0.5, n_items=3000)  # refused before three million calls


@pytest.mark.parametrize("bad", [None, "0.5", [0.5], np.array([0.5, 0.5]), 1j, True])
def test_callable_returning_a_non_number_names_the_pair(bad):
    with pytest.raises(TypeError, match=r"returned .* for \(u, v\) = \(0, 1\).*number in \[0, 1\]"):
        greedy_order(lambda u, v: bad, n_items=3)


def test_callable_numpy_scalars_accepted():
    order = greedy_order(lambda u, v: np.float32(1.0) if u < v else np.array(0.0), n_items=4)
    assert list(order) == [0, 1, 2, 3]


def test_sigmoid_with_scores_beyond_float64_differences():
    class Scores:
        def predict(self, X):
            return np.array([1e308, -1e308, 0.0])

    assert list(greedy_order(Scores(), np.zeros((3, 1)), pairwise="sigmoid", temperature=1e-300)) == [0, 2, 1]


def test_arguments_the_preference_does_not_read_are_refused():
    P = np.array([[0, 1, 1], [0, 0, 1], [0, 0, 0.0]])
    for kwargs, name in [({"n_items": 5}, "n_items=5"), ({"X": np.ones((7, 2))}, "X"),
                         ({"pairwise": "nonsense"}, "pairwise='nonsense'"), ({"temperature": -3}, "temperature=-3")]:
        with pytest.raises(ValueError, match=rf"^{re.escape(name)} does not apply to a preference matrix"):
            greedy_order(P, **kwargs)
    with pytest.raises(ValueError, match="pairwise='sigmoid' does not apply to a callable preference"):
        greedy_order(lambda u, v: 0.5, n_items=3, pairwise="sigmoid")
    np.testing.assert_array_equal(greedy_order(P, pairwise="step", temperature=1), [0, 1, 2])  # the defaults
    import scipy.sparse as sp
    with pytest.raises(TypeError, match=r"a scipy.sparse matrix: preference.toarray\(\)"):
        greedy_order(sp.csr_matrix(P))


def test_the_memory_guard_advice_fits_greedy_order(monkeypatch):
    monkeypatch.setenv("FASTRANK_MAX_DENSE_BYTES", "10000000")
    with pytest.raises(MemoryError, match=r"np.argsort\(-model.predict\(X\)\)") as info:
        greedy_order(np.full((2000, 2000), 0.5))
    assert "RankRLS" not in str(info.value)


@pytest.mark.parametrize("temperature", [1.0, 1e300, 1e308, 1.7e308])
def test_sigmoid_preferences_follow_the_scores_at_any_finite_temperature(temperature):
    # 2 T overflowed to inf for T >= 9e307: every preference became 1/2 and the items came back in index order; the
    # logistic preference is strictly monotone in s_u - s_v at any finite T (tanh(1 / 2T) is still a subnormal > 0)
    class FirstColumn:
        def predict(self, X):
            return np.asarray(X, dtype=float)[:, 0]

    X = np.array([[1.0], [3.0], [2.0]])
    assert greedy_order(FirstColumn(), X, pairwise="sigmoid", temperature=temperature).tolist() == [1, 2, 0]


def test_a_nullable_pandas_matrix_is_a_matrix_of_numbers():
    pd = pytest.importorskip("pandas")
    P = np.array([[0.0, 0.8, 1.0], [0.2, 0.0, 0.4], [0.0, 0.6, 0.0]])
    want = greedy_order(P, return_scores=True)
    for frame in (pd.DataFrame(P).astype("Float64"), pd.DataFrame((P > 0.5).astype(int)).astype("Int64")):
        got = greedy_order(frame, return_scores=True)
        ref = greedy_order(frame.to_numpy(dtype=float), return_scores=True)
        np.testing.assert_array_equal(got[0], ref[0])
        np.testing.assert_array_equal(got[1], ref[1])
    np.testing.assert_array_equal(greedy_order(pd.DataFrame(P).astype("Float64"), return_scores=True)[1], want[1])
    with pytest.raises(ValueError, match="preference contains NaN"):  # a missing preference is no number
        greedy_order(pd.DataFrame(P).astype("Float64").where(P > 0.1))
