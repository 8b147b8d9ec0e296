"""Regression tests for silent garbage and unclear errors: numerically stable kernels, alpha and
integer validation, CG at extreme target scales, precomputed-kernel checks, the on-line learners'
input checks, and concurrent fits in Python threads."""

import threading

import numpy as np
import pytest
import scipy.sparse as sp

import fastrank
from fastrank import OAPBPM, PRank, OnlineMPRank, RankRLS, WidrowHoff
from fastrank import model_selection as ms
from fastrank._kernels import kernel_block, resolve_kernel
from fastrank._threads import compute_region
from fastrank._validation import (
    as_float_vector,
    check_alpha,
    check_alphas,
    check_int,
    check_n_jobs,
    check_pair_arrays,
    check_precomputed_kernel,
    pair_disagreement,
)


def exact_gaussian(Z, X, gamma):
    """Oracle: squared distances from the differences themselves (no expansion)."""
    D = Z[:, None, :] - X[None, :, :]
    return np.exp(-gamma * np.einsum("ijk,ijk->ij", D, D))


def data(m=40, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, d))
    y = X @ rng.normal(size=d) + 0.3 * rng.normal(size=m)
    return X, y


# ------------------------------------------------------------------------------------------------
# Gaussian kernel under large offsets
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("offset", [1e6, 1e8])
def test_gaussian_kernel_matches_exact_differences_under_offset(offset):
    X, _ = data(50, 4)
    Z = np.random.default_rng(1).normal(size=(7, 4))
    Xo, Zo = X + offset, Z + offset
    spec = resolve_kernel("rbf", 0.4, 3, 1, 4)
    # The oracle on the data as actually stored (X + offset rounded), centred exactly.
    Xs, Zs = Xo - offset, Zo - offset
    np.testing.assert_allclose(spec.train(Xo), exact_gaussian(Xs, Xs, 0.4), rtol=1e-11, atol=1e-13)
    np.testing.assert_allclose(spec.cross(Zo, Xo), exact_gaussian(Zs, Xs, 0.4), rtol=1e-11, atol=1e-13)
    coef = np.random.default_rng(2).normal(size=(50, 2))
    np.testing.assert_allclose(spec.predict(Zo, Xo, coef), exact_gaussian(Zs, Xs, 0.4) @ coef, rtol=1e-10,
                               atol=1e-11)


def test_gaussian_expansion_recomputes_far_clusters():
    # Two tight clusters far apart: centring by the global mean does not help inside a cluster;
    # the entries whose expansion would lose accuracy are recomputed from differences.
    rng = np.random.default_rng(3)
    X = np.vstack([rng.normal(size=(20, 3)) + 1e7, rng.normal(size=(20, 3)) - 1e7])
    spec = resolve_kernel("rbf", 0.5, 3, 1, 3)
    np.testing.assert_allclose(spec.train(X), exact_gaussian(X, X, 0.5), rtol=1e-11, atol=1e-13)


@pytest.mark.parametrize("offset", [1e6, 1e8])
@pytest.mark.parametrize("basis", [None, "idx"])
def test_rbf_models_are_translation_invariant(offset, basis):
    X, y = data(60, 4)
    Xo = X + offset
    Xs = Xo - offset  # the same points, centred exactly
    Z = Xo[:15] + 0.25
    kw = dict(alpha=0.1, kernel="rbf", gamma=0.3)
    if basis:
        kw["basis_vectors"] = np.arange(0, 60, 2)
    a = RankRLS(**kw).fit(Xo, y).predict(Z)
    b = RankRLS(**kw).fit(Xs, y).predict(Z - offset)
    np.testing.assert_allclose(a - a.mean(), b - b.mean(), rtol=1e-8, atol=1e-8 * np.abs(b).max())


@pytest.mark.parametrize("offset", [1e6, 1e8])
def test_rbf_leave_pair_out_is_translation_invariant(offset):
    X, y = data(20, 3)
    Xo = X + offset
    Xs = Xo - offset
    est = RankRLS(alpha=1.0, kernel="rbf", gamma=0.5)
    a = ms.leave_pair_out(est, Xo, y)
    b = ms.leave_pair_out(est, Xs, y)
    np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-9)


@pytest.mark.parametrize("offset", [0.0, 1e6, 1e8])
def test_sparse_kernel_block_matches_exact(offset):
    rng = np.random.default_rng(4)
    X = rng.normal(size=(30, 5)) * (rng.random((30, 5)) < 0.5)
    X[:, 0] += offset
    Z = X[:9] + 0.1
    exact = exact_gaussian(Z - [offset, 0, 0, 0, 0], X - [offset, 0, 0, 0, 0], 0.3)
    spec = resolve_kernel("rbf", 0.3, 3, 1, 5)
    for A, B in [(sp.csr_matrix(Z), sp.csr_matrix(X)), (Z, sp.csr_matrix(X)), (sp.csr_matrix(Z), X), (Z, X)]:
        K = kernel_block(spec, A, B)
        assert K.flags.f_contiguous and K.shape == (9, 30)
        np.testing.assert_allclose(K, exact, rtol=1e-10, atol=1e-12)
    for name, deg in [("poly", 3), ("linear", 3)]:
        spec = resolve_kernel(name, 0.2, deg, 1.0, 5)
        Zd, Xd = np.ascontiguousarray(Z[:, 1:]), np.ascontiguousarray(X[:, 1:])
        np.testing.assert_allclose(kernel_block(spec, sp.csr_matrix(Zd), sp.csr_matrix(Xd)), spec.cross(Zd, Xd),
                                   rtol=1e-12)


# ------------------------------------------------------------------------------------------------
# Polynomial / linear kernel values are checked
# ------------------------------------------------------------------------------------------------
def test_polynomial_noninteger_degree_negative_base_raises():
    X, _ = data(10, 3)
    spec = resolve_kernel("poly", 1.0, 2.5, 0.0, 3)
    with pytest.raises(ValueError, match=r"polynomial kernel \(gamma=1, degree=2.5, coef0=0\).*not an integer"):
        spec.train(X)
    with pytest.raises(ValueError, match="not an integer"):
        kernel_block(spec, sp.csr_matrix(X), X)
    # Non-negative base: defined, and equals the power.
    ok = resolve_kernel("poly", 1.0, 2.5, 100.0, 3)
    np.testing.assert_allclose(ok.train(X), (X @ X.T + 100.0) ** 2.5, rtol=1e-12)


def test_oapbpm_noninteger_degree_negative_base_raises_not_nan():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    y = rng.integers(1, 4, size=40)
    with pytest.raises(ValueError, match="polynomial kernel"):
        OAPBPM(n_estimators=3, kernel="poly", degree=1.5, coef0=0.0, random_state=0).fit(X, y)


@pytest.mark.parametrize("degree", [2.0**40, 3e9 + 1.0, 2.0**31])
def test_polynomial_huge_degree_no_ub(degree):
    X, _ = data(8, 2)
    spec = resolve_kernel("poly", 1.0, degree, 1.0, 2)
    with pytest.raises(ValueError, match="overflow"):
        spec.train(X * 10)
    # base in (0, 1): a huge integral degree is a well-defined (tiny) number, no error
    small = resolve_kernel("poly", 1e-3, degree, 0.5, 2)
    K = small.train(X * 0.1)
    assert np.isfinite(K).all()


def test_polynomial_huge_gamma_raises_naming_parameters():
    X, _ = data(10, 3)
    with pytest.raises(ValueError, match=r"gamma=1e\+200.*overflow"):
        resolve_kernel("poly", 1e200, 3, 1.0, 3).train(X)
    with pytest.raises(ValueError, match="polynomial kernel"):
        RankRLS(kernel="poly", gamma=1e200).fit(X, X[:, 0])


def test_linear_and_gaussian_overflow_raise():
    X, _ = data(10, 3)
    with pytest.raises(ValueError, match="linear kernel.*overflow"):
        resolve_kernel("linear", None, 3, 1, 3).train(X * 1e160)
    with pytest.raises(ValueError, match="linear kernel.*overflow"):
        resolve_kernel("linear", None, 3, 1, 3).cross(X * 1e160, X * 1e160)
    with pytest.raises(ValueError, match="Gaussian kernel.*overflow"):
        resolve_kernel("rbf", 1.0, 3, 1, 3).train(X * 1e160)


def test_kernel_parameter_errors_name_the_parameter():
    with pytest.raises(ValueError, match="degree"):
        resolve_kernel("poly", 1.0, float("nan"), 1.0, 2)
    with pytest.raises(ValueError, match="degree"):
        resolve_kernel("poly", 1.0, "3", 1.0, 2)
    with pytest.raises(ValueError, match="coef0"):
        resolve_kernel("poly", 1.0, 3, float("inf"), 2)
    with pytest.raises(ValueError, match="gamma"):
        resolve_kernel("rbf", float("nan"), 3, 1.0, 2)


# ------------------------------------------------------------------------------------------------
# alpha, integers, non-numeric input
# ------------------------------------------------------------------------------------------------
def test_subnormal_alpha_refused():
    X, y = data()
    for a in (1e-310, 5e-324):
        with pytest.raises(ValueError, match="subnormal"):
            RankRLS(alpha=a).fit(X, y)
    with pytest.raises(ValueError, match="too large"):
        check_alpha(1e305)
    assert check_alpha(1e-300) == 1e-300


def test_alphas_checked_one_by_one():
    with pytest.raises(ValueError, match="alphas"):
        check_alphas([1.0, 1e-320])
    with pytest.raises(ValueError, match="alphas"):
        check_alphas(["a"])
    with pytest.raises(TypeError, match="alphas"):
        check_alphas("1.0")


def test_bounded_integers():
    X, y = data()
    for n in (2**40, -(2**40), 2**70):
        with pytest.raises(ValueError, match="n_jobs"):
            RankRLS(n_jobs=n).fit(X, y)
    import os

    assert check_n_jobs(10**6) == 4 * (os.cpu_count() or 1)  # capped, never handed to C++ as is
    with pytest.raises(ValueError, match=r"k must be an integer in \[1, 2147483647\]"):
        check_int(2**70, "k", low=1)
    with pytest.raises(TypeError, match="max_iter"):
        check_int(2.5, "max_iter", low=0)
    yt = np.abs(y)
    assert fastrank.metrics.ndcg(yt, y, k=2**70) == fastrank.metrics.ndcg(yt, y)
    assert fastrank.metrics.ndcg(yt, y, k=10**6) == fastrank.metrics.ndcg(yt, y, k=None)


def test_non_numeric_inputs_name_the_argument():
    X, y = data()
    with pytest.raises(ValueError, match="X must be numeric"):
        RankRLS().fit(np.array([["a", "b", "c"]] * len(y)), y)
    with pytest.raises(TypeError, match="X must be numeric"):
        RankRLS().fit(np.array([[{}, 1, 2]] * len(y), dtype=object), y)
    with pytest.raises(ValueError, match="X must be a rectangular array"):
        RankRLS().fit([[1.0, 2.0], [3.0]], [1.0, 2.0])
    with pytest.raises(ValueError, match="y must be real-valued"):
        RankRLS().fit(X, np.array(["a"] * len(y)))
    with pytest.raises(ValueError, match="magnitudes must be numeric"):
        as_float_vector(["a", "b"], "magnitudes")
    with pytest.raises(ValueError, match="magnitudes must have 3 entries"):
        as_float_vector([1.0, 2.0], "magnitudes", 3)


# ------------------------------------------------------------------------------------------------
# CG at extreme target scales
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("scale", [1e-200, 1e-300, 1e200, 2.0**-1000])
def test_cg_scaled_targets(scale):
    X, y = data(80, 5)
    ref = RankRLS(alpha=1.0, solver="cg", tol=1e-10).fit(X, y)
    got = RankRLS(alpha=1.0, solver="cg", tol=1e-10).fit(X, y * scale)
    assert got.converged_
    assert np.abs(got.coef_).max() > 0
    np.testing.assert_allclose(got.coef_ / scale, ref.coef_, rtol=1e-9)
    oracle = np.linalg.solve(X.T @ (len(y) * np.eye(len(y)) - 1) @ X + np.eye(5),
                             X.T @ (len(y) * np.eye(len(y)) - 1) @ y)
    np.testing.assert_allclose(got.coef_ / scale, oracle, rtol=1e-7)


def test_cg_power_of_two_scaling_is_exact():
    X, y = data(80, 5)
    a = RankRLS(alpha=1.0, solver="cg", tol=1e-10).fit(X, y)
    b = RankRLS(alpha=1.0, solver="cg", tol=1e-10).fit(X, y * 2.0**-600)
    np.testing.assert_array_equal(b.coef_ * 2.0**600, a.coef_)
    assert a.n_iter_ == b.n_iter_


# ------------------------------------------------------------------------------------------------
# Misleading messages
# ------------------------------------------------------------------------------------------------
def test_linear_dual_is_exact_under_a_large_offset():
    # ranking is invariant to a common feature offset; the linear dual centres X before X X^T,
    # so X + 1e8 gives the model of X (it used to fail with "not positive definite")
    X, y = data(30, 3)
    far = RankRLS(alpha=1e-3, solver="dual").fit(X + 1e8, y)
    near = RankRLS(alpha=1e-3, solver="dual").fit(X, y)
    np.testing.assert_allclose(far.coef_, near.coef_, rtol=1e-6)
    np.testing.assert_allclose(far.dual_coef_, near.dual_coef_, rtol=1e-6, atol=1e-9)


def test_non_finite_system_message():
    X, y = data(12, 2)
    pairs = np.array([[i, i + 1] for i in range(11)])
    est = RankRLS(alpha=1.0, kernel="rbf", solver="dual")
    with pytest.raises((fastrank.LinAlgError, ValueError), match="NaN or infinity|overflow"):
        est.fit_preferences(X, pairs, magnitudes=np.full(11, 1e-300), cost="normalized")


# ------------------------------------------------------------------------------------------------
# Precomputed kernels, pair disagreement
# ------------------------------------------------------------------------------------------------
def test_check_precomputed_kernel():
    rng = np.random.default_rng(0)
    A = rng.normal(size=(6, 6))
    K = A @ A.T
    out = check_precomputed_kernel(K)
    assert out.flags.f_contiguous and np.array_equal(out, out.T)
    with pytest.raises(ValueError, match="must be symmetric"):
        check_precomputed_kernel(A)
    with pytest.raises(ValueError, match="square"):
        check_precomputed_kernel(K[:, :5])
    with pytest.raises(ValueError, match="NaN or infinity"):
        check_precomputed_kernel(np.where(K > 0, np.nan, K))
    with pytest.raises(ValueError, match=r"shape \(n_samples, 6\)"):
        check_precomputed_kernel(K[:3, :5], n_train=6)
    assert check_precomputed_kernel(K[:3], n_train=6).shape == (3, 6)


def test_pair_disagreement_validated():
    P = np.array([[1.0, 0.0], [0.0, 1.0], [2.0, 2.0]])
    T = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    assert pair_disagreement(P, T) == pytest.approx((0 + 1 + 0.5) / 3)
    assert pair_disagreement(P, T) == ms.pairwise_disagreement(P, T)
    with pytest.raises(ValueError, match="pair_predictions contains NaN"):
        pair_disagreement(np.array([[np.nan, 1.0], [2.0, 1.0]]), T[:2])
    with pytest.raises(ValueError, match="same shape"):
        pair_disagreement(P, T[:2])
    with pytest.raises(ValueError, match=r"shape \(n_pairs, 2\)"):
        check_pair_arrays(P[:, :1], T[:, :1])
    with pytest.raises(ValueError, match="pair_targets must be numeric"):
        check_pair_arrays(P, np.array([["a", "b"]] * 3))


# ------------------------------------------------------------------------------------------------
# On-line learners
# ------------------------------------------------------------------------------------------------
def test_online_mprank_refuses_one_row():
    with pytest.raises(ValueError, match="at least 2 samples"):
        OnlineMPRank().fit([[1.0, 2.0]], [1.0])
    with pytest.raises(ValueError, match="at least 2 samples"):
        OnlineMPRank().partial_fit([[1.0, 2.0]], [1.0])


def test_online_mprank_precomputed_validated():
    X, y = data(12, 2)
    K = X @ X.T
    bad = K.copy()
    bad[0, 1] += 1.0
    with pytest.raises(ValueError, match="symmetric"):
        OnlineMPRank(kernel="precomputed").fit(bad, y)
    nan = K.copy()
    nan[2, 3] = nan[3, 2] = np.nan
    with pytest.raises(ValueError, match="NaN or infinity"):
        OnlineMPRank(kernel="precomputed").fit(nan, y)
    m = OnlineMPRank(kernel="precomputed", max_iter=50).fit(K, y)
    with pytest.raises(ValueError, match=r"shape \(n_samples, 12\)"):
        m.predict(K[:, :5])


def test_online_mprank_failed_fit_leaves_model():
    X, y = data(12, 2)
    est = OnlineMPRank(kernel="rbf", max_iter=20).fit(X, y)
    before = (est.dual_coef_.copy(), est.X_fit_.copy(), est.predict(X))
    with pytest.raises(ValueError):
        est.fit(X * 1e160, y)  # Gaussian distances overflow
    with pytest.raises(ValueError):
        est.partial_fit(np.full((2, 2), 1e160), [0.0, 1.0])
    np.testing.assert_array_equal(est.dual_coef_, before[0])
    np.testing.assert_array_equal(est.X_fit_, before[1])
    np.testing.assert_array_equal(est.predict(X), before[2])


def test_online_mprank_huge_kernel_message_is_not_about_eta():
    X, y = data(12, 2)
    with pytest.raises(ValueError, match="overflow|step size"):
        OnlineMPRank(kernel="poly", gamma=1e150, degree=3).fit(X, y)


def test_online_mprank_memory_guard(monkeypatch):
    X, y = data(40, 2)
    monkeypatch.setenv("FASTRANK_MAX_DENSE_BYTES", str(8 * 40 * 40 * 4))
    with pytest.raises(MemoryError, match="OnlineMPRank"):
        OnlineMPRank(kernel="rbf").fit(X, y)
    monkeypatch.setenv("FASTRANK_MAX_DENSE_BYTES", str(8 * 40 * 40 * 5))
    OnlineMPRank(kernel="rbf").fit(X, y)


@pytest.mark.parametrize("cls", [PRank, OAPBPM, WidrowHoff])
def test_nan_class_labels_refused(cls):
    X = np.random.default_rng(0).normal(size=(6, 2))
    with pytest.raises(ValueError, match="NaN"):
        cls().partial_fit(X, [1.0, 2.0, 1.0, 2.0, 1.0, 2.0], classes=[1.0, 2.0, np.nan])
    missing = r"^y contains a missing label \(nan at row 2\); give every row a label$"
    with pytest.raises(ValueError, match=missing):
        cls().fit(X, np.array([1, 2, float("nan"), 1, 2, 1], dtype=object))
    with pytest.raises(ValueError, match=missing):
        cls().partial_fit(X, np.array([1, 2, float("nan"), 1, 2, 1], dtype=object), classes=[1, 2])


def test_widrow_hoff_changed_classes_refused():
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(10, 2)), rng.integers(1, 4, size=10)
    est = WidrowHoff().partial_fit(X, y, classes=[1, 2, 3])
    coef = est.coef_.copy()
    with pytest.raises(ValueError, match="differs from classes_"):
        est.partial_fit(X, y, classes=[1, 2, 3, 4])
    np.testing.assert_array_equal(est.coef_, coef)  # a failed call leaves the model as it was
    est.partial_fit(X, y, classes=[3, 2, 1])  # same set: fine


# ------------------------------------------------------------------------------------------------
# Threads
# ------------------------------------------------------------------------------------------------
def test_four_threads_fit_like_serial():
    datasets = [data(150, 5, seed=s) for s in range(4)]
    est = dict(alpha=0.5, kernel="rbf", gamma=0.2, solver="dual")
    serial = [RankRLS(**est).fit(X, y).dual_coef_ for X, y in datasets]
    for policy in (False, True):
        out = [None] * 4

        def run(i):
            X, y = datasets[i]
            if policy:
                with compute_region(2):
                    out[i] = RankRLS(**est).fit(X, y).dual_coef_
            else:
                out[i] = RankRLS(**est).fit(X, y).dual_coef_

        threads = [threading.Thread(target=run, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        # concurrent fits corrupt nothing; inside a region of 2 cores the core's LAPACK runs OpenBLAS on 2 threads,
        # whose blocking rounds differently from 1 (2e-10 relative on these fits with SciPy 1.17's OpenBLAS 0.3.30)
        for a, b in zip(serial, out):
            np.testing.assert_allclose(b, a, rtol=1e-8, atol=1e-12)


def test_compute_region_budget_and_nesting():
    import fastrank._threads as th

    total = th.cpu_budget()
    seen = []
    lock = threading.Lock()
    running = [0]

    def work():
        with compute_region(total):  # takes every core: regions must not overlap
            with lock:
                running[0] += 1
                seen.append(running[0])
            with compute_region(1):  # nested: no second wait, no deadlock
                pass
            threading.Event().wait(0.01)
            with lock:
                running[0] -= 1

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert not any(t.is_alive() for t in threads)
    assert max(seen) == 1
    assert th._BUDGET.active == 0 and th._BUDGET.free == total


def test_sparse_kernel_block_duplicates_not_mutated():
    # duplicate entries add up (SciPy's meaning); the caller's matrix keeps its own format
    X = sp.csr_matrix((np.array([1.0, 2.0, 3.0, 0.5]), np.array([1, 1, 0, 2]), np.array([0, 2, 4])), shape=(2, 3))
    data_before = X.data.copy()
    spec = resolve_kernel("rbf", 0.7, 3, 1, 3)
    K = kernel_block(spec, X, X)
    D = X.toarray()
    np.testing.assert_allclose(K, exact_gaussian(D, D, 0.7), rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(X.data, data_before)
    assert X.nnz == 4



def test_csr_storage_past_nnz_is_unused_as_scipy_reads_it():
    # data / indices longer than indptr[-1] are a valid CSR matrix whose extra slots SciPy ignores (toarray is exact);
    # the kernel twin-row hash, RankRLSCV and leave-pair-out read them and raised numpy's "out is the wrong size"
    rng = np.random.default_rng(9)
    X = np.round(rng.normal(size=(24, 4)) * 8) / 8
    X[rng.random((24, 4)) < 0.4] = 0
    y = rng.integers(0, 4, size=24).astype(float)
    A = sp.csr_matrix(X)
    A.data, A.indices = np.r_[A.data, 1e30], np.r_[A.indices, 0].astype(A.indices.dtype)  # one unused slot
    assert np.array_equal(A.toarray(), X)
    rbf = RankRLS(kernel="rbf").fit(X, y)
    np.testing.assert_allclose(rbf.predict(A), rbf.predict(X), rtol=1e-12, atol=1e-12)
    cv = [fastrank.RankRLSCV(alphas=[1, 10]).fit(Z, y).cv_results_["scores"] for Z in (A, X)]
    np.testing.assert_allclose(cv[0], cv[1], rtol=1e-12)
    pairs = np.array([[0, 5], [3, 17]])
    np.testing.assert_allclose(ms.leave_pair_out(RankRLS(), A, y, pairs=pairs),
                               ms.leave_pair_out(RankRLS(), X, y, pairs=pairs), rtol=1e-10, atol=1e-12)
    svm = [fastrank.RankSVM(tol=1e-10).fit(Z, y).coef_ for Z in (A, sp.csr_matrix(X))]  # the 1e30 sets no scale
    np.testing.assert_array_equal(svm[0], svm[1])

# ---- dense Cholesky: blocked above one LAPACK panel (SciPy's OpenBLAS dpotrf crashes at large orders) ----
def test_blocked_cholesky_matches_lapack_and_detects_late_failure():
    from fastrank import _core

    nb = _core.cholesky_panel
    n = 2 * nb + 5  # three panels, the last one short
    rng = np.random.default_rng(3)
    A = rng.normal(size=(n, 40))
    G = A @ A.T + n * np.eye(n)
    F = np.asfortranarray(G)
    assert _core.cholesky_lower(F) is True
    L = np.tril(F)
    want = np.linalg.cholesky(G)  # numpy's own LAPACK call: the unblocked oracle
    assert np.max(np.abs(L - want)) <= 1e-12 * np.max(np.abs(want))
    # not positive definite only in the second panel: the leading nb + 100 minor is fine
    bad = np.asfortranarray(G.copy())
    bad[nb + 100, nb + 100] = -1.0
    assert _core.cholesky_lower(bad) is False
    with pytest.raises(TypeError):
        _core.cholesky_lower(np.ascontiguousarray(G[:3, :3]) + 0.0j)


_CRASH_SIZE_SCRIPT = """
import numpy as np, fastrank
rng = np.random.default_rng(0)
X = rng.normal(size=(16000, 3))
y = X[:, 0] + 0.1 * rng.normal(size=16000)
est = fastrank.RankRLS(kernel="rbf", alpha=1.0, n_jobs=2).fit(X, y)
print(float(est.predict(X[:1])[0]))
"""


@pytest.mark.slow
def test_rbf_fit_at_the_openblas_crash_size_in_a_subprocess():
    """m = 16,000 rows: one LAPACK dpotrf with 2 OpenBLAS threads segfaulted from n ~ 15,900
    (cho_factor alone reproduces it); fastrank factorizes by panels and must finish."""
    import os
    import subprocess
    import sys

    from fastrank._memory import available_memory

    avail = available_memory()
    if avail is None or avail < 8 * 2**30:
        pytest.skip(f"needs 8 GiB of free memory for two 16,000 x 16,000 float64 matrices (available: "
                    f"{'unknown' if avail is None else f'{avail / 2**30:.1f} GiB'})")
    env = dict(os.environ, FASTRANK_MAX_DENSE_BYTES="none", OPENBLAS_NUM_THREADS="2")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (os.path.dirname(os.path.dirname(fastrank.__file__)),
                                                    env.get("PYTHONPATH")) if p)
    out = subprocess.run([sys.executable, "-c", _CRASH_SIZE_SCRIPT], env=env, capture_output=True, text=True,
                         timeout=900)
    assert out.returncode == 0, f"exit {out.returncode} (-11 is the segfault): {out.stderr[-2000:]}"
    assert np.isfinite(float(out.stdout.split()[-1]))


# ---- complex input refused; every sparse dtype converted to float64 once at the boundary ----
@pytest.mark.parametrize("call", [
    lambda X, y, g: OnlineMPRank(max_iter=5).fit(X, y + 0j),
    lambda X, y, g: OnlineMPRank().fit(X, y).partial_fit(X, y + 1j),
    lambda X, y, g: fastrank.RankSVM().fit_preferences(X, np.array([[0, 1], [2, 3]]), weights=np.ones(2) + 0j),
    lambda X, y, g: RankRLS().fit(X, y, g + 0j),
    lambda X, y, g: fastrank.RankRLS().fit(X, y + 0j),
], ids=["onlinemprank-y", "onlinemprank-partial-y", "ranksvm-weights", "groups", "rankrls-y"])
def test_complex_input_is_refused_not_cast(call):
    import warnings

    X, y = data(m=30)
    g = np.repeat(np.arange(3), 10)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a ComplexWarning cast would be an error here, not a pass
        with pytest.raises(ValueError, match=r"(?i)complex|real-valued"):
            call(X, y, g)


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
@pytest.mark.parametrize("dtype,fmt", [(bool, "csr"), (np.float32, "csr"), (np.int8, "csc"), (bool, "coo")])
def test_sparse_dtypes_with_basis_vectors_match_float64(kernel, dtype, fmt):
    """Sparse bool products are logical (True @ True = True): they differed from the float64 model by
    up to 240%.  Fit and predict with every dtype must equal the float64 model."""
    rng = np.random.default_rng(0)
    B = rng.random((200, 20)) < 0.3
    Bt = rng.random((50, 20)) < 0.3
    y = B[:, :3].sum(axis=1) + 0.1 * rng.normal(size=200)
    make = lambda: RankRLS(kernel=kernel, basis_vectors=30, random_state=0)  # noqa: E731
    want = make().fit(B.astype(np.float64), y).predict(Bt.astype(np.float64))
    sparse = lambda A: sp.csr_matrix(A.astype(dtype)).asformat(fmt)  # noqa: E731
    got = make().fit(sparse(B), y).predict(sparse(Bt))
    assert np.max(np.abs(got - want)) <= 1e-10 * np.max(np.abs(want))
    ref = make().fit(B.astype(np.float64), y)
    assert np.max(np.abs(ref.predict(sparse(Bt)) - want)) <= 1e-10 * np.max(np.abs(want))


@pytest.mark.parametrize("name, call", [
    ("groups", lambda X, y, g, lab: RankRLS().fit(X, y, sp.coo_array(g))),
    ("groups", lambda X, y, g, lab: RankRLS().fit(X, y, sp.csr_matrix(g).T)),
    ("y", lambda X, y, g, lab: fastrank.RankSVM().fit(X, sp.csr_matrix(y).T, g)),
    ("y", lambda X, y, g, lab: PRank().fit(X, sp.csr_matrix(lab).T)),
    ("y", lambda X, y, g, lab: RankRLS().fit(X, sp.coo_array(y), g)),
    ("y_true", lambda X, y, g, lab: fastrank.metrics.mean_rank_loss(sp.coo_array(lab), lab)),
    ("y_true", lambda X, y, g, lab: fastrank.metrics.ndcg(sp.coo_array(np.abs(y)), y)),
    ("sample_weight", lambda X, y, g, lab: RankRLS().fit(X, y).score(X, y, sample_weight=sp.coo_array(np.ones(20)))),
])
def test_sparse_vectors_are_refused_as_sparse(name, call):
    # numpy makes a sparse matrix a 0-d object array: the messages said "got shape ()" or "<COOrdinate ...> is no
    # number"
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(20, 3)), rng.normal(size=20)
    with pytest.raises(TypeError, match=rf"^{name} is a scipy\.sparse \w+ of shape \(20,( 1)?\); it must be dense: "
                                        rf"call {name}\.toarray\(\)$"):
        call(X, y, np.repeat(np.arange(4), 5), (y > 0).astype(int))


@pytest.mark.parametrize("kind", [object, float])
def test_row_indices_as_objects_or_whole_floats_mean_the_integers(kind):
    # a pandas object column of ints (or whole floats) names the same rows as int64, for pairs, hold-out sets and
    # basis vectors alike ("must hold integer row indices" before, TypeError in some places and ValueError in others)
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(12, 3)), rng.normal(size=12)
    pairs = np.array([[0, 1], [2, 3], [4, 5], [6, 7]])
    calls = [lambda P: RankRLS().fit_preferences(X, P).predict(X),
             lambda P: fastrank.RankSVM().fit_preferences(X, P).predict(X),
             lambda P: fastrank.metrics.edge_disagreement(P, y),
             lambda P: ms.leave_pair_out(RankRLS(), X, y, pairs=P),
             lambda P: ms.holdout_predictions(RankRLS(), X, y, [P[:, 0]])[0],
             lambda P: RankRLS(kernel="rbf", basis_vectors=P[:, 0]).fit(X, y).predict(X)]
    for call in calls:
        np.testing.assert_array_equal(call(pairs.astype(kind)), call(pairs))
    with pytest.raises(ValueError, match="integer row indices"):
        ms.holdout_predictions(RankRLS(), X, y, [np.array([0, 1.5], dtype=kind)])
    with pytest.raises(ValueError, match="outside"):
        ms.holdout_predictions(RankRLS(), X, y, [np.array([0, 1e30], dtype=kind)])


def test_mean_rank_loss_reads_an_object_column_of_numbers():
    import pandas as pd

    y, p = np.array([1, 2, 3, 2]), np.array([1, 3, 3, 1])
    assert fastrank.metrics.mean_rank_loss(pd.Series(y, dtype=object), p) == fastrank.metrics.mean_rank_loss(y, p)
    with pytest.raises(ValueError, match=r"y_true must be numeric for scale='values' .*'a' \(str\) at row 1"):
        fastrank.metrics.mean_rank_loss(np.array([1, "a", 2, 3], dtype=object), p)


def test_sparse_pairs_and_classes_are_refused_as_sparse():
    X = np.random.default_rng(0).normal(size=(8, 3))
    pairs = sp.csr_matrix(np.array([[0, 1], [2, 3]]))
    with pytest.raises(TypeError, match=r"^pairs is a scipy\.sparse csr_matrix of shape \(2, 2\); .*pairs\.toarray"):
        RankRLS().fit_preferences(X, pairs)
    with pytest.raises(TypeError, match=r"^classes is a scipy\.sparse csr_matrix .*classes\.toarray"):
        PRank().partial_fit(X, np.arange(8) % 3, classes=sp.csr_matrix(np.arange(3)))


def test_group_sizes_held_as_objects_are_the_integers():
    from fastrank.utils import groups_from_sizes

    np.testing.assert_array_equal(groups_from_sizes(np.array([2, 3], dtype=object)), groups_from_sizes([2, 3]))
    for bad in ([2, 2.5], [2, True], [2, "3"]):
        with pytest.raises(ValueError, match="sizes must be whole numbers"):
            groups_from_sizes(np.array(bad, dtype=object))
