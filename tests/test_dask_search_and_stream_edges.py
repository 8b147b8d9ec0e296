"""Dask's permutation test scores one model in every block and checks its inputs as the single-machine call does;
folds, categories and group ids of dask inputs are read as the in-memory estimators read them; a joined on-line
ensemble reports no loss it did not see; rankboost_path names the fold a measure cannot score."""

import numpy as np
import pytest

import fastrank

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")
import fastrank.dask as fd  # noqa: E402


@pytest.fixture(autouse=True)
def _synchronous():
    with dask.config.set(scheduler="synchronous"):
        yield


def _data(m=40, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, 3))
    return X, X[:, 0] + 0.5 * rng.normal(size=m)


@pytest.mark.parametrize("random_state", [None, np.random.RandomState(3)])
def test_every_block_of_the_permutation_test_scores_one_basis(monkeypatch, random_state):
    X, y = _data()
    est = fastrank.RankRLS(kernel="rbf", gamma=0.5, basis_vectors=8, random_state=random_state)
    seen, single = [], fd._single
    monkeypatch.setattr(fd, "_single", lambda *a, **k: (lambda r: seen.append(r[0]) or r)(single(*a, **k)))
    score, perm, _ = fd.permutation_test_lpo(est, X, y, n_permutations=6, random_state=0, n_blocks=3)
    assert len(seen) == 3 and len(set(seen)) == 1 and score == seen[0]  # each block drew its own basis


def test_the_permutation_test_checks_memory_and_the_seed_first():
    X, y = _data(30)
    with pytest.raises(MemoryError, match="targets of y and its permutations"):  # the client walked 1e9 draws
        fd.permutation_test_lpo(fastrank.RankRLS(), X, y, n_permutations=10**9)
    for seed in ("x", -1):
        with pytest.raises(ValueError, match=r"random_state must be None, an int in \[0, 2\*\*32 - 1\]"):
            fd.permutation_test_lpo(fastrank.RankRLS(), X, y, n_permutations=3, random_state=seed)


def test_a_generator_of_folds_serves_every_gamma():
    from sklearn.model_selection import KFold
    X, y = _data()
    y = np.round(y)
    folds = list(KFold(4).split(X))
    got = fd.DaskRankRLSCV(gammas=[1.0, 0.5], alphas=[1.0, 10.0], cv=(f for f in folds)).fit(X, y)
    ref = fd.DaskRankRLSCV(gammas=[1.0, 0.5], alphas=[1.0, 10.0], cv=folds).fit(X, y)
    np.testing.assert_array_equal(got.cv_results_["scores"], ref.cv_results_["scores"])


def test_group_ids_of_different_types_in_different_partitions_are_named():
    X, y = _data()
    g = np.array([1] * 10 + [2] * 10 + ["a"] * 10 + ["b"] * 10, dtype=object)
    with pytest.raises(TypeError, match="group ids of different partitions must be mutually comparable, all numbers or "
                                        r"all strings; got the types \['int', 'str'\]"):
        fd.DaskRankRLS().fit(da.from_array(X, chunks=(20, 3)), da.from_array(y, chunks=20), da.from_array(g, chunks=20))


def test_an_ordered_categorical_with_unknown_categories_fits_as_in_memory():
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    rng = np.random.default_rng(0)
    df = pd.DataFrame(rng.normal(size=(40, 3)), columns=list("abc"))
    df["y"] = rng.choice(["low", "mid", "high"], 40)
    ddf = dd.from_pandas(df, npartitions=3)
    y = ddf["y"].astype("category").cat.as_ordered()
    assert not y.cat.known  # read as the one class '__UNKNOWN_CATEGORIES__'
    got = fd.fit_oapbpm(fastrank.OAPBPM(n_estimators=4, random_state=1), ddf[list("abc")], y, n_blocks=2)
    ref = fastrank.OAPBPM(n_estimators=4, random_state=1).fit(df[list("abc")], df["y"].astype("category").cat.as_ordered())
    np.testing.assert_array_equal(got.classes_, ref.classes_)
    np.testing.assert_array_equal(got.coef_, ref.coef_)


def test_a_joined_ensemble_continued_reports_no_partial_loss():
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(40, 3)), rng.integers(0, 3, 40)
    est = fastrank.OAPBPM(n_estimators=6, tau=0.5, random_state=2)
    blocks = est.member_blocks(2, np.unique(y), 3)
    for b in blocks:
        b.partial_fit(X[:30], y[:30])
    joined = fastrank.OAPBPM.from_members(blocks).partial_fit(X[30:], y[30:])
    ref = fastrank.OAPBPM(**est.get_params()).fit(X, y)
    np.testing.assert_array_equal(joined.coef_, ref.coef_)
    assert np.isnan(joined.average_rank_loss_)  # was the average over the last 10 examples only
    curve = joined.rank_loss_curve()
    assert curve.shape == (40,) and np.isnan(curve).all()
    assert ref.average_rank_loss_ == pytest.approx(ref.rank_loss_curve()[-1])


def test_rankboost_path_names_the_fold_a_measure_cannot_score():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2))
    y = np.r_[np.zeros(10), rng.integers(0, 3, 30)]  # the first fold's targets all tie
    with pytest.raises(ValueError, match=r"rankboost_path: test fold 0 \(10 rows\) cannot be scored by 'disagreement'"):
        fastrank.rankboost_path(X, y, 5, cv=4)


def test_the_gamma_search_refuses_a_precomputed_kernel_by_name():
    # a kernel matrix has no gamma to search, and the search's tags (not pairwise) let scikit-learn's splitters cut K
    # by rows only: cross_val_score failed every fold with "must be square (m, m), got shape (40, 60)"
    X, y = _data(60)
    K = np.exp(-0.5 * ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1))
    search = fd.DaskRankRLSCV(gammas=[1.0], alphas=[1.0], kernel="precomputed")
    with pytest.raises(ValueError, match="kernel='precomputed' has no gamma to search; use fastrank.RankRLSCV"):
        search.fit(K, y)
    assert not hasattr(search, "best_estimator_")
    assert fastrank.RankRLSCV(alphas=[1.0], kernel="precomputed").__sklearn_tags__().input_tags.pairwise
