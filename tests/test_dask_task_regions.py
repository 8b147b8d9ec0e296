"""Dask tasks take their cores in their own process: a graph whose tasks run fastrank (teacher scores computed lazily)
fits on the threaded scheduler, and a lazy prediction that overflows raises as the in-memory predict does."""

import threading

import numpy as np
import pytest

import fastrank

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")
import fastrank.dask as fd  # noqa: E402


def _finishes(fn, seconds=120):
    out, thread = {}, threading.Thread(target=lambda: out.update(value=fn()), daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), "the call did not return (a compute region waited for ever)"
    return out["value"]


@pytest.mark.parametrize("basis", [None, 30])
def test_a_graph_that_runs_fastrank_in_its_tasks_fits_on_the_threaded_scheduler(basis):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 5))
    q = np.repeat(np.arange(100), 20)
    teacher = fastrank.RankRLS(alpha=1.0, kernel="rbf").fit(X[:200], X[:200, 0] ** 2)
    Xd = da.from_array(X, chunks=500)
    yd = Xd.map_blocks(teacher.predict, drop_axis=1, dtype=float)  # each task enters a compute region
    params = dict(alpha=1.0) if basis is None else dict(alpha=1.0, kernel="rbf", basis_vectors=basis, random_state=0)
    with dask.config.set(scheduler="threads", num_workers=2):
        model = _finishes(lambda: fd.DaskRankRLS(**params).fit(Xd, yd, da.from_array(q, chunks=500)))
        path = _finishes(lambda: fd.rankrls_path(Xd, yd, [0.5, 2.0], groups=da.from_array(q, chunks=500)))
        scores = _finishes(lambda: model.predict(Xd).compute())
    exact = fastrank.RankRLS(**params, solver="primal" if basis is None else "auto").fit(X, teacher.predict(X), q)
    np.testing.assert_allclose(scores, exact.predict(X), rtol=1e-9, atol=1e-12 * np.abs(scores).max())
    assert path is not None


def test_a_lazy_prediction_that_overflows_raises_when_computed():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3))
    model = fd.DaskRankRLS(alpha=1.0).fit(da.from_array(X, chunks=100), da.from_array(X @ [1.0, 2.0, 3.0], chunks=100))
    lazy = model.predict(da.from_array(np.full((4, 3), 1e308), chunks=2))  # nothing computed yet
    with dask.config.set(scheduler="synchronous"), pytest.raises(ValueError, match=r"DaskRankRLS\.predict: the "
                                                                                    r"scores of X overflow float64"):
        lazy.compute()


@pytest.mark.parametrize("weighting", ["unweighted", "normalized"])
def test_a_partition_is_scattered_in_pieces_merged_as_partitions_are(monkeypatch, weighting):
    # K(X_p, X_R) is formed a few rows at a time (|R| / n times the partition whole); groups straddle the pieces
    rng = np.random.default_rng(1)
    X = rng.normal(size=(240, 4)) + 1e6 * rng.normal(size=4)  # a common offset the pieces' centring must keep
    q = np.repeat(np.arange(24), 10)
    y = X[:, 0] - X[:, 1] + rng.normal(size=240) + 1e9
    params = dict(alpha=0.5, kernel="rbf", gamma=1e-1, basis_vectors=15, random_state=0, group_weighting=weighting)
    monkeypatch.setattr(fd, "_PIECE_VALUES", 7 * 15)  # 7 rows a piece
    pieces, piece_stats = [], fd._piece_stats
    monkeypatch.setattr(fd, "_piece_stats", lambda Xp, *args: pieces.append(len(Xp)) or piece_stats(Xp, *args))
    chunks = (100, 60, 80)
    with dask.config.set(scheduler="synchronous"):
        model = fd.DaskRankRLS(**params).fit(da.from_array(X, chunks=(chunks, 4)), da.from_array(y, chunks=chunks),
                                             da.from_array(q, chunks=chunks))
    assert max(pieces) == 7 and sum(pieces) == 240
    exact = fastrank.RankRLS(**params).fit(X, y, q)
    np.testing.assert_allclose(model.predict(X), exact.predict(X), rtol=1e-9)
