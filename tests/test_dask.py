"""fastrank.dask on a real dask.distributed LocalCluster: every distributed fit equals the
in-memory one (and an explicit-Laplacian numpy oracle), model selection equals the single-machine
run for the same seed, and bad partitions give clear errors."""

import numpy as np
import pytest

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

import fastrank  # noqa: E402
from fastrank import model_selection as ms  # noqa: E402
from fastrank.dask import (  # noqa: E402
    DaskRankRLS,
    DaskRankRLSCV,
    fit_oapbpm,
    permutation_test_lpo,
    rankrls_path,
)

RTOL = 1e-10


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=":0")
    c = distributed.Client(cluster)
    yield c
    c.close()
    cluster.close()


def _rel(a, b):
    return np.max(np.abs(np.asarray(a) - np.asarray(b))) / np.max(np.abs(np.asarray(b)))


def _laplacian(m, groups, weighting):
    """The paper's L from its definition: sum over relevant pairs of w_ij (e_i - e_j)(e_i - e_j)^T."""
    if groups is None:
        groups, weighting = np.zeros(m), "unweighted"  # a group weighting needs groups
    L = np.zeros((m, m))
    for q in np.unique(groups):
        idx = np.flatnonzero(groups == q)
        n = idx.size
        w = {"unweighted": 1.0, "normalized": 1.0 / n, "per_query": 2.0 / (n * (n - 1)) if n > 1 else 1.0,
             "per_object": 1.0 / (n - 1) if n > 1 else 1.0}[weighting]
        for a in idx:
            for b in idx:
                if a < b:
                    L[a, a] += w
                    L[b, b] += w
                    L[a, b] -= w
                    L[b, a] -= w
    return L


def _data(m=240, n=6, seed=0, offset=0.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, n)) + offset
    Y = np.column_stack([X @ rng.normal(size=n) + rng.normal(size=m), rng.normal(size=m)])
    g = np.sort(rng.integers(0, 25, m))  # contiguous groups: several straddle the chunk borders below
    return X, Y, g


# straddling groups with an empty partition in the middle; one partition; many (> tree fan-in)
CHUNKINGS = {"straddle+empty": (50, 0, 70, 0, 120), "one": (240,), "many": (12,) * 20}


@pytest.mark.parametrize("grouping", ["object", "sorted", "shuffled"])
@pytest.mark.parametrize("weighting", ["unweighted", "normalized", "per_query", "per_object"])
def test_linear_equals_in_memory_and_oracle(client, grouping, weighting):
    X, Y, g = _data()
    groups = {"object": None, "sorted": g, "shuffled": np.random.default_rng(1).permutation(g)}[grouping]
    gd = None if groups is None else da.from_array(groups, chunks=37)  # realigned to X's chunks
    solver = "primal"  # without groups every pair weighs 1 in memory too, whatever the weighting
    L = _laplacian(X.shape[0], groups, weighting)
    for chunks, y in (("straddle+empty", Y), ("one", Y[:, 0]), ("many", Y[:, 1])):
        Xd = da.from_array(X, chunks=(CHUNKINGS[chunks], X.shape[1]))
        est = DaskRankRLS(alpha=0.7, group_weighting=weighting).fit(Xd, da.from_array(y, chunks=100), gd)
        ref = fastrank.RankRLS(alpha=0.7, solver=solver, group_weighting=weighting).fit(X, y, groups)
        assert est.fit_mode_ == "primal" and est.coef_.shape == ref.coef_.shape
        assert _rel(est.coef_, ref.coef_) < RTOL
        W = np.linalg.solve(X.T @ L @ X + 0.7 * np.eye(X.shape[1]), X.T @ L @ y)
        assert _rel(est.coef_, W) < 1e-9
        if chunks == "straddle+empty":
            p = est.predict(Xd)
            assert isinstance(p, da.Array)
            assert _rel(p.compute(), ref.predict(X)) < 1e-9


def test_large_feature_means_keep_digits(client):
    """Uncentred one-pass sums would cancel ~12 digits here; the centred merge does not."""
    X, Y, g = _data(offset=1e6)
    Xd = da.from_array(X, chunks=((50, 0, 70, 0, 120), 6))
    for groups in (None, g):
        est = DaskRankRLS(alpha=0.3).fit(Xd, Y[:, 0], groups)
        ref = fastrank.RankRLS(alpha=0.3, solver="primal").fit(X, Y[:, 0], groups)
        assert _rel(est.coef_, ref.coef_) < RTOL
    # the naive uncentred formula is visibly wrong on the same data (the test can fail)
    m = X.shape[0]
    naive = m * (X.T @ X) - np.outer(X.sum(0), X.sum(0))
    exact = m * (X - X.mean(0)).T @ (X - X.mean(0))
    assert _rel(naive, exact) > 1e-6


@pytest.mark.parametrize("kernel,kw", [("rbf", {"gamma": 0.3}), ("poly", {"gamma": 0.2, "degree": 3}),
                                       ("linear", {})])
def test_subset_of_regressors_equals_in_memory(client, kernel, kw):
    X, Y, g = _data()
    cases = [("straddle+empty", None, "unweighted"), ("straddle+empty", g, "normalized"), ("one", g, "unweighted")]
    if kernel == "rbf":
        cases.append(("many", g, "unweighted"))
    for chunks, groups, weighting in cases:
        Xd = da.from_array(X, chunks=(CHUNKINGS[chunks], X.shape[1]))
        params = dict(alpha=0.5, kernel=kernel, basis_vectors=30, random_state=4, group_weighting=weighting, **kw)
        est = DaskRankRLS(**params).fit(Xd, Y, groups)
        ref = fastrank.RankRLS(**params).fit(X, Y, groups)
        assert est.fit_mode_ == "sparse"
        np.testing.assert_array_equal(est.basis_indices_, ref.basis_indices_)
        assert _rel(est.dual_coef_, ref.dual_coef_) < RTOL
        assert _rel(est.predict(Xd).compute(), ref.predict(X)) < 1e-9
        if kernel == "linear":
            assert _rel(est.coef_, ref.coef_) < RTOL


def test_subset_oracle_and_explicit_basis(client):
    """eq. 41 from its definition: (K_mR^T L K_mR + alpha K_RR) a = K_mR^T L y, unsorted basis."""
    X, Y, g = _data()
    basis = np.array([200, 3, 77, 150, 12, 99, 51, 230])
    est = DaskRankRLS(alpha=0.5, kernel="rbf", gamma=0.3, basis_vectors=basis).fit(
        da.from_array(X, chunks=((50, 0, 70, 0, 120), 6)), Y[:, 0], g)
    K = np.exp(-0.3 * ((X[:, None, :] - X[None, basis, :]) ** 2).sum(-1))
    L = _laplacian(X.shape[0], g, "unweighted")
    a = np.linalg.solve(K.T @ L @ K + 0.5 * K[basis], K.T @ L @ Y[:, 0])
    assert _rel(est.dual_coef_, a) < 1e-8
    np.testing.assert_array_equal(est.X_fit_, X[basis])


def test_paths_equal_in_memory_paths(client):
    X, Y, g = _data()
    Xd = da.from_array(X, chunks=((50, 0, 70, 0, 120), 6))
    alphas = [1e-2, 1.0, 100.0]
    P = rankrls_path(Xd, Y, alphas, groups=g)
    for k, a in enumerate(alphas):
        ref = fastrank.RankRLS(alpha=a, solver="primal").fit(X, Y, g)
        assert _rel(P.coef_[k], ref.coef_) < RTOL
    assert _rel(P.predict(Xd).compute()[2], P.fitted_estimator(2).predict(X)) < 1e-12
    est = DaskRankRLS(kernel="rbf", gamma=0.3, basis_vectors=30, random_state=2, group_weighting="normalized")
    P = rankrls_path(Xd, Y[:, 0], alphas, groups=g, estimator=est)
    R = fastrank.rankrls_path(X, Y[:, 0], alphas, groups=g, estimator=fastrank.RankRLS(
        kernel="rbf", gamma=0.3, basis_vectors=30, random_state=2, group_weighting="normalized"))
    assert _rel(P.dual_coef_, R.dual_coef_) < RTOL
    assert isinstance(P.fitted_estimator(1), DaskRankRLS) and P.fitted_estimator(1).alpha == 1.0


@pytest.mark.parametrize("params", [{}, {"kernel": "rbf", "gamma": 0.3, "basis_vectors": 30, "random_state": 2},
                                    {"kernel": "linear", "basis_vectors": 20, "random_state": 1}])
def test_to_local_is_the_in_memory_model(client, params):
    X, Y, g = _data()
    Xd = da.from_array(X, chunks=((50, 0, 70, 0, 120), 6))
    for y in (Y[:, 0], Y):
        est = DaskRankRLS(alpha=0.4, **params).fit(Xd, y, g)
        local = est.to_local()
        ref = fastrank.RankRLS(alpha=0.4, **params).fit(X, y, g)
        assert type(local) is fastrank.RankRLS and local.alpha == 0.4
        assert _rel(local.predict(X), ref.predict(X)) < 1e-9
        assert _rel(local.predict(X), est.predict(X)) < 1e-12


def test_dataframe_input(client):
    pd = pytest.importorskip("pandas")
    dd = pytest.importorskip("dask.dataframe")
    X, Y, g = _data()
    df = pd.DataFrame(X, columns=[f"f{k}" for k in range(6)]).assign(y=Y[:, 0], qid=g)
    ddf = dd.from_pandas(df, npartitions=4)
    feats = [f"f{k}" for k in range(6)]
    est = DaskRankRLS(alpha=0.7).fit(ddf[feats], ddf["y"], ddf["qid"])
    ref = fastrank.RankRLS(alpha=0.7, solver="primal").fit(X, Y[:, 0], g)
    assert _rel(est.coef_, ref.coef_) < RTOL
    assert _rel(est.predict(ddf[feats]).compute(), ref.predict(X)) < 1e-9  # unknown chunks are fine here
    with pytest.raises(ValueError, match="partitioned alike"):
        DaskRankRLS().fit(ddf[feats], dd.from_pandas(df["y"], npartitions=3), ddf["qid"])
    y_shifted = dd.from_pandas(df["y"].iloc[:200], npartitions=4)  # 4 partitions of 50: misaligned rows
    msg = r"y partition \d \(rows \d+:\d+\) has 50 rows but the matching X partition has 60"
    with pytest.raises(ValueError, match=msg):
        DaskRankRLS().fit(ddf[feats], y_shifted)
    bad = df.copy()
    bad.loc[200, "f3"] = np.nan  # in the last of the 4 partitions
    bddf = dd.from_pandas(bad, npartitions=4)
    with pytest.raises(ValueError, match=r"X partition 3 \(rows 180:240\) contains NaN"):
        DaskRankRLS().fit(bddf[feats], bddf["y"], bddf["qid"])


# ---------------------------------------------------------------------------------------------
# bad input
# ---------------------------------------------------------------------------------------------
def test_misaligned_rows(client):
    X, Y, g = _data()
    Xd = da.from_array(X, chunks=(60, 6))
    with pytest.raises(ValueError, match="y has 239 rows but X has 240"):
        DaskRankRLS().fit(Xd, Y[:-1, 0])
    with pytest.raises(ValueError, match="groups has 241 rows but X has 240"):
        DaskRankRLS().fit(Xd, Y[:, 0], np.append(g, 0))


def test_unknown_chunk_sizes(client):
    X, Y, _ = _data()
    Xd = da.from_array(X, chunks=(60, 6))
    Xnan = Xd[Xd[:, 0] > -10]  # boolean indexing: NaN chunk sizes
    with pytest.raises(ValueError, match="unknown chunk sizes"):
        DaskRankRLS().fit(Xnan, Y[:, 0])
    yd = da.from_array(Y[:, 0], chunks=60)
    with pytest.raises(ValueError, match="unknown chunk sizes"):
        DaskRankRLS().fit(Xd, yd[yd > -100])


@pytest.mark.parametrize("what", ["X", "y", "groups"])
def test_nan_in_a_partition_is_named(client, what):
    X, Y, g = _data()
    est = DaskRankRLS(alpha=2.0).fit(X, Y[:, 0], g)
    before = est.coef_.copy()
    X, y, groups = X.copy(), Y[:, 0].copy(), g.astype(float)
    {"X": X[:, 2], "y": y, "groups": groups}[what][130] = np.nan  # row 130: partition 2 of (60, 60, 60, 60)
    cause = r"a missing group id \(nan at row 130\)" if what == "groups" else "NaN"
    with pytest.raises(ValueError, match=rf"{what} partition 2 \(rows 120:180\) contains {cause}"):
        est.fit(da.from_array(X, chunks=(60, 6)), da.from_array(y, chunks=60), da.from_array(groups, chunks=60))
    np.testing.assert_array_equal(est.coef_, before)  # a failed fit leaves the model as it was


def test_nan_in_prediction_block(client):
    X, Y, _ = _data()
    est = DaskRankRLS().fit(da.from_array(X, chunks=(60, 6)), Y[:, 0])
    X = X.copy()
    X[70, 1] = np.inf
    with pytest.raises(ValueError, match=r"partition 1 \(rows 60:120\)"):
        est.predict(da.from_array(X, chunks=(60, 6))).compute()


def test_bad_parameters(client):
    X, Y, g = _data()
    Xd = da.from_array(X, chunks=(60, 6))
    with pytest.raises(ValueError, match="needs basis_vectors"):
        DaskRankRLS(kernel="rbf").fit(Xd, Y[:, 0])
    with pytest.raises(ValueError, match="group_weighting"):
        DaskRankRLS(group_weighting="bogus").fit(Xd, Y[:, 0], g)
    with pytest.raises(ValueError, match="every group has a single row"):
        DaskRankRLS().fit(Xd, Y[:, 0], np.arange(240))
    with pytest.raises(ValueError, match="tied"):
        DaskRankRLS().fit(Xd, np.repeat(np.arange(24.0), 10), np.repeat(np.arange(24), 10))


def test_import_fastrank_does_not_import_dask():
    """No fastrank module but fastrank.dask imports dask/distributed at module level (so
    ``import fastrank`` works without the extra); checked on the sources, in-process."""
    import ast
    import pathlib

    pkg = pathlib.Path(fastrank.__file__).parent
    offenders = []
    for path in sorted(pkg.glob("*.py")):
        if path.name == "dask.py":
            continue
        for node in ast.parse(path.read_text()).body:  # module-level statements only
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            offenders += [f"{path.name}: {n}" for n in names if n.split(".")[0] in ("dask", "distributed")]
    assert offenders == []
    assert "dask" not in {n.split(".")[0] for n in fastrank.__all__}


# ---------------------------------------------------------------------------------------------
# model selection
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("grouped", [False, True])
def test_permutation_test_equals_single_machine(client, grouped):
    rng = np.random.default_rng(3)
    X = rng.normal(size=(60, 4))
    y = X[:, 0] + 0.5 * rng.normal(size=60)
    groups = rng.integers(0, 5, 60) if grouped else None
    est = fastrank.RankRLS(alpha=1.0, kernel="rbf", gamma=0.2)
    ref = ms.permutation_test_lpo(est, X, y, 13, random_state=11, groups=groups)
    for n_blocks in (None, 3):
        out = permutation_test_lpo(est, X, y, 13, random_state=11, groups=groups, n_blocks=n_blocks)
        assert out[0] == ref[0] and out[2] == ref[2]
        np.testing.assert_array_equal(out[1], ref[1])
    # a RandomState instance is advanced exactly as the single-machine run advances it
    r1, r2 = np.random.RandomState(5), np.random.RandomState(5)
    ms.permutation_test_lpo(est, X, y, 7, random_state=r1, groups=groups)
    permutation_test_lpo(est, X, y, 7, random_state=r2, groups=groups, n_blocks=2)
    assert r1.randint(1 << 30) == r2.randint(1 << 30)


def test_permutation_test_checks_its_arguments_as_the_single_machine_one(client):
    X = np.random.default_rng(0).normal(size=(20, 3))
    y = X[:, 0]
    est = fastrank.RankRLS()
    with pytest.raises(ValueError, match="scoring"):  # passed on, not silently replaced by "auc"
        permutation_test_lpo(est, X, y, 3, scoring="disagreement")
    with pytest.raises(ValueError, match="n_permutations"):
        permutation_test_lpo(est, X, y, 0)
    with pytest.raises(ValueError, match="n_blocks"):
        permutation_test_lpo(est, X, y, 3, n_blocks=0)


def test_gamma_grid_equals_single_machine(client):
    rng = np.random.default_rng(4)
    X = rng.normal(size=(70, 3))
    y = np.sin(2 * X[:, 0]) + 0.3 * rng.normal(size=70)
    g = rng.integers(0, 4, 70)
    gammas, alphas = [0.05, 0.5, 2.0], [0.01, 0.1, 1.0, 10.0]
    for groups, cv in ((None, "lpo"), (g, "lgo")):
        cvd = DaskRankRLSCV(gammas=gammas, alphas=alphas, cv=cv).fit(X, y, groups)
        refs = [fastrank.RankRLSCV(alphas=alphas, cv=cv, kernel="rbf", gamma=gm).fit(X, y, groups) for gm in gammas]
        scores = np.stack([r.cv_results_["scores"] for r in refs])
        np.testing.assert_array_equal(cvd.cv_results_["scores"], scores)
        kg, ka = np.unravel_index(np.argmax(scores), scores.shape)
        assert (cvd.gamma_, cvd.alpha_) == (gammas[kg], alphas[ka])
        np.testing.assert_array_equal(cvd.predict(X), refs[kg].predict(X))


def test_default_gamma_grid_surrounds_the_kernels_default_gamma(client):
    # gammas=None was accepted by the constructor and refused by fit; it is now five scales around 1 / n_features
    rng = np.random.default_rng(5)
    X = rng.normal(size=(60, 4))
    y = np.sin(2 * X[:, 0]) + 0.3 * rng.normal(size=60)
    cvd = DaskRankRLSCV(alphas=[0.1, 1.0]).fit(da.from_array(X, chunks=20), y)
    np.testing.assert_array_equal(cvd.cv_results_["gammas"], np.logspace(-2, 2, 5) / 4)
    ref = DaskRankRLSCV(gammas=np.logspace(-2, 2, 5) / 4, alphas=[0.1, 1.0]).fit(X, y)
    # at gamma = 25 the kernel is nearly the identity and many pairs are near ties: the same bits in every thread
    np.testing.assert_array_equal(cvd.cv_results_["scores"], ref.cv_results_["scores"])
    linear = DaskRankRLSCV(alphas=[0.1, 1.0], kernel="linear").fit(X, y)
    assert linear.cv_results_["scores"].shape == (1, 2)
    lin_ref = fastrank.RankRLSCV(alphas=[0.1, 1.0]).fit(X, y)
    np.testing.assert_array_equal(linear.cv_results_["scores"][0], lin_ref.cv_results_["scores"])


def test_gamma_grid_takes_the_minimum_of_a_loss(client):
    # "msd" is a loss: the best (gamma, alpha) is the one with the smallest score, as RankRLSCV chooses.
    rng = np.random.default_rng(6)
    X = rng.normal(size=(60, 3))
    y = np.sin(2 * X[:, 0]) + 0.3 * rng.normal(size=60)
    g = rng.integers(0, 4, 60)
    gammas, alphas = [0.05, 0.5, 2.0], [0.01, 1.0, 100.0]
    cvd = DaskRankRLSCV(gammas=gammas, alphas=alphas, cv="lgo", scoring="msd").fit(X, y, g)
    scores = cvd.cv_results_["scores"]
    assert np.ptp(scores) > 0
    kg, ka = np.unravel_index(np.argmin(scores), scores.shape)
    assert (cvd.gamma_, cvd.alpha_) == (gammas[kg], alphas[ka])
    ref = fastrank.RankRLSCV(alphas=alphas, cv="lgo", scoring="msd", kernel="rbf", gamma=gammas[kg]).fit(X, y, g)
    assert ref.alpha_ == cvd.alpha_ and ref.cv_results_["greater_is_better"] is False


@pytest.mark.parametrize("variant", ["bpm", "bagging", "voted"])
def test_oapbpm_member_blocks_equal_single_machine(client, variant):
    rng = np.random.default_rng(5)
    X = rng.normal(size=(2500, 5))
    y = np.clip(np.rint(X[:, 0] + X[:, 1]), -2, 2).astype(int)
    params = dict(n_estimators=13, tau=0.4, variant=variant, random_state=9, n_epochs=2)
    ref = fastrank.OAPBPM(**params).fit(X, y)
    for n_blocks, chunks in ((3, 600), (13, 2500)):
        out = fit_oapbpm(fastrank.OAPBPM(**params), da.from_array(X, chunks=(chunks, 5)),
                         da.from_array(y, chunks=chunks), n_blocks=n_blocks)
        np.testing.assert_array_equal(out.members_coef_, ref.members_coef_)
        np.testing.assert_array_equal(out.members_thresholds_, ref.members_thresholds_)
        np.testing.assert_array_equal(out.members_counts_, ref.members_counts_)
        np.testing.assert_array_equal(out.coef_, ref.coef_)
        np.testing.assert_array_equal(out.predict(X), ref.predict(X))
    # a different seed gives different members (the block seeds really follow random_state)
    other = fit_oapbpm(fastrank.OAPBPM(**{**params, "random_state": 10}), X, y, n_blocks=2)
    assert not np.array_equal(other.members_coef_, ref.members_coef_)


def test_block_seed_inverts_splitmix():
    from fastrank.online import _block_seed, _splitmix64, _splitmix64_inverse

    for z in (0, 1, 2**63 + 5, 2**64 - 1, 123456789):
        assert _splitmix64_inverse(_splitmix64(z)) == z
    assert _splitmix64(_block_seed(42, 7)) == (_splitmix64(42) + 7) % 2**64


def test_oapbpm_rejects_unsupported(client):
    X = np.random.default_rng(0).normal(size=(50, 3))
    y = (X[:, 0] > 0).astype(int)
    with pytest.raises(ValueError, match="linear kernel only"):
        fit_oapbpm(fastrank.OAPBPM(kernel="rbf"), X, y)
    with pytest.raises(ValueError, match="shuffle=False"):
        fit_oapbpm(fastrank.OAPBPM(shuffle=True), X, y)


def test_n_jobs_is_resolved_on_the_cores_of_the_worker_that_runs_the_task(client, monkeypatch):
    # n_jobs=None was resolved on the client and shipped as a thread count: a worker with fewer or more cores than the
    # client ran that many kernel threads
    import contextlib
    import threading

    main = threading.get_ident()
    monkeypatch.setattr(fastrank._validation, "cpu_budget", lambda: 3 if threading.get_ident() == main else 1)
    seen = []
    region = fastrank.dask.compute_region

    @contextlib.contextmanager
    def recording(n_threads):
        seen.append((threading.get_ident() == main, n_threads))
        with region(n_threads):
            yield

    monkeypatch.setattr(fastrank.dask, "compute_region", recording)
    rng = np.random.default_rng(3)
    X = rng.normal(size=(60, 3))
    y = X[:, 0] + 0.1 * rng.normal(size=60)
    Xd = da.from_array(X, chunks=20)
    est = DaskRankRLS(kernel="rbf", basis_vectors=10, random_state=0).fit(Xd, y)
    pred = est.predict(Xd).compute()
    in_tasks = [n for in_main, n in seen if not in_main]
    assert len(in_tasks) == 6 and set(in_tasks) == {1}  # three partitions' statistics, three blocks' predictions
    np.testing.assert_allclose(pred, est.to_local().predict(X), rtol=1e-12)
