"""Oracle tests of the numerical core for paths and single-alpha hold-outs (fastrank._core
functions rankrls_dual_scores_tridiag, solve_shifted_system_tridiag, cv_*_inverse) and of the
feature-space hold-out module fastrank._holdout, against explicit retraining (tests/cv_oracles.py)
and direct numpy solves."""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fastrank import _core, _holdout  # noqa: E402
from cv_oracles import laplacian, pair_weights, rbf, retrain_predict, retrain_predict_primal  # noqa: E402

ALPHAS = [1e-6, 1e-2, 1.0, 1e3]


def _close(a, b, rtol):
    a, b = np.asarray(a), np.asarray(b)
    scale = max(1.0, float(np.max(np.abs(b))))
    np.testing.assert_allclose(a, b, rtol=rtol, atol=rtol * scale)


def _groups_struct(groups, weighting):
    """(order, offsets, pair_weight): the core's groups and the pair weight c_q of every group."""
    labels, codes, counts = np.unique(groups, return_inverse=True, return_counts=True)
    order = np.argsort(codes, kind="stable")
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    pair_weight = 1.0 / counts if weighting == "normalized" else np.ones(counts.size)
    return order, offsets, pair_weight


def _data(m, d=3, v=None, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, d))
    Y = rng.normal(size=(m, 1 if v is None else v))
    return X, Y


def _kernel(X, kind):
    if kind == "rbf":
        return rbf(X, X, 0.5)
    return X @ X.T  # linear: rank d < m (rank deficient)


# ---------------------------------------------------------------------------------------------
# regularization path through the tridiagonal reduction
# ---------------------------------------------------------------------------------------------

def _direct_dual(K, offsets, scale, Y, alpha):
    """A = S (S K S + alpha I)^-1 S Y with S built explicitly (dense block-centering matrix)."""
    m = K.shape[0]
    S = np.zeros((m, m))
    for q in range(offsets.size - 1):
        o, e = offsets[q], offsets[q + 1]
        n = e - o
        S[o:e, o:e] = scale[q] * (np.eye(n) - 1.0 / n)
    A = S @ K @ S
    U = np.linalg.solve(0.5 * (A + A.T) + alpha * np.eye(m), S @ Y)
    return S @ U


def _extended_dual(K, offsets, scale, Y, alpha):
    """Predictions K A of the dual solution in extended precision (iterative refinement)."""
    m = K.shape[0]
    S = np.zeros((m, m))
    for q in range(offsets.size - 1):
        o, e = offsets[q], offsets[q + 1]
        S[o:e, o:e] = scale[q] * (np.eye(e - o) - 1.0 / (e - o))
    Sl, Kl = S.astype(np.longdouble), K.astype(np.longdouble)
    M = Sl @ Kl @ Sl + alpha * np.eye(m, dtype=np.longdouble)
    rhs = Sl @ Y.astype(np.longdouble)
    Md = M.astype(np.float64)
    u = np.linalg.solve(Md, rhs.astype(np.float64)).astype(np.longdouble)
    for _ in range(5):
        u = u + np.linalg.solve(Md, (rhs - M @ u).astype(np.float64))
    return (Kl @ (Sl @ u)).astype(np.float64)


@pytest.mark.parametrize("setting", ["object", "query-unweighted", "query-normalized"])
@pytest.mark.parametrize("kind", ["rbf", "linear"])
def test_tridiag_path_equals_direct_solves(setting, kind):
    m, v = 40, 3
    X, Y = _data(m, v=v, seed=1)
    K = _kernel(X, kind)
    if setting == "object":
        offsets, scale = np.array([0, m], np.int64), np.array([np.sqrt(m)])
        normalized = False
    else:
        groups = np.repeat(np.arange(5), 8)
        normalized = setting.endswith("normalized")
        _, offsets, pair_weight = _groups_struct(groups, "normalized" if normalized else "unweighted")
        scale = np.sqrt(pair_weight * np.diff(offsets))
    lam_max = np.linalg.eigvalsh(K).max()
    alphas = lam_max * np.logspace(-6, 6, 9)
    sizes = np.diff(offsets).astype(float)
    pair_weight = 1.0 / sizes if normalized else np.ones(sizes.size)
    rows = np.arange(m)  # K and Y are taken as already in group order
    A, rcond = _core.rankrls_dual_scores_tridiag(np.asfortranarray(K), rows, offsets, pair_weight, Y, alphas, 1)
    A_eig, rcond_eig = _core.rankrls_dual_scores(np.asfortranarray(K), rows, offsets, pair_weight, Y, alphas, 1)
    assert A.shape == (m, alphas.size * v)
    for k, a in enumerate(alphas):
        Ak = A[:, k * v:(k + 1) * v]
        direct = _direct_dual(K, offsets, scale, Y, a)
        if kind == "rbf" or a >= 1e-3 * lam_max:
            _close(Ak, direct, 1e-10)
        # predictions against extended precision: 1e-10, or (rank-deficient K at tiny alpha, where
        # the dense solve itself is off by ~1e-8) no worse than the direct solve
        ref = _extended_dual(K, offsets, scale, Y, a)
        err = np.max(np.abs(K @ Ak - ref)) / np.max(np.abs(ref))
        err_direct = np.max(np.abs(K @ direct - ref)) / np.max(np.abs(ref))
        assert err <= max(1e-10, 10 * err_direct), (a / lam_max, err, err_direct)
    _close(K @ A, K @ A_eig, 1e-7)
    assert rcond == pytest.approx(rcond_eig, rel=1e-8)


def test_tridiag_solver_general_and_single_alpha():
    rng = np.random.default_rng(3)
    B = rng.normal(size=(30, 12))
    G = B @ B.T  # rank 12: singular
    R = rng.normal(size=(30, 2))
    alphas = np.array([1e-3, 0.5, 7.0])
    U, rc = _core.solve_shifted_system_tridiag(np.asfortranarray(G), R, alphas)
    for k, a in enumerate(alphas):
        _close(U[:, 2 * k:2 * k + 2], np.linalg.solve(G + a * np.eye(30), R), 1e-10)
    assert rc == pytest.approx(alphas[0] / (np.linalg.eigvalsh(G).max() + alphas[0]), rel=1e-10)
    U1, _ = _core.solve_shifted_system_tridiag(np.asfortranarray(G), R, alphas[1:2])
    _close(U1, np.linalg.solve(G + alphas[1] * np.eye(30), R), 1e-10)
    # 1 x 1 and 2 x 2 systems
    for n in (1, 2):
        Gs = np.eye(n) * 2.0
        U, _ = _core.solve_shifted_system_tridiag(np.asfortranarray(Gs), np.ones((n, 1)), np.array([1.0]))
        _close(U, np.full((n, 1), 1.0 / 3.0), 1e-14)


def test_tridiag_rejects_bad_alpha_and_indefinite():
    G = np.asfortranarray(np.diag([1.0, -1.0, 2.0]))
    with pytest.raises(np.linalg.LinAlgError):
        _core.solve_shifted_system_tridiag(G, np.ones((3, 1)), np.array([0.5]))
    with pytest.raises(ValueError, match="regularization"):
        _core.solve_shifted_system_tridiag(np.asfortranarray(np.eye(3)), np.ones((3, 1)), np.array([-1.0]))
    # the input G is overwritten (documented): a C-ordered array is refused, not copied
    with pytest.raises(TypeError):
        _core.solve_shifted_system_tridiag(np.arange(9.0).reshape(3, 3), np.ones((3, 1)), np.array([1.0]))


# ---------------------------------------------------------------------------------------------
# single-alpha leave-pair-out / leave-group-out from a Cholesky factor
# ---------------------------------------------------------------------------------------------

def _object_lpo(K, Y, alpha, pairs, c=1.0):
    return _core.cv_object_lpo_inverse(np.asfortranarray(K), c, alpha, np.asfortranarray(Y),
                                       np.ascontiguousarray(pairs, dtype=np.int64), 1)


def _oracle(K, Y, alpha, pairs, groups=None, weighting="unweighted"):
    return np.array([retrain_predict(K, Y, alpha, list(p), groups, weighting) for p in pairs])  # (n, 2, v)


def _check_against_retraining(out, dual_ref, exact_ref=None, rtol=1e-8):
    """rtol against retraining.  With a rank-deficient (linear) kernel the exact reference is the
    primal retraining (n x n system); at tiny alpha the dual retraining itself is off by ~1e-8
    there, and the shortcut must be no worse than it (factor 2)."""
    if exact_ref is None:
        _close(out, dual_ref, rtol)
        return
    scale = max(1.0, np.max(np.abs(exact_ref)))
    err = np.max(np.abs(out - exact_ref)) / scale
    err_dual = np.max(np.abs(dual_ref - exact_ref)) / scale
    assert err <= max(rtol, 2 * err_dual), (err, err_dual)


@pytest.mark.parametrize("kind", ["rbf", "linear"])
@pytest.mark.parametrize("alpha", ALPHAS)
def test_object_lpo_inverse_equals_retraining(kind, alpha):
    m, v = 11, 2
    X, Y = _data(m, v=v, seed=4)
    K = _kernel(X, kind)
    i, j = np.triu_indices(m, 1)
    pairs = np.stack([i, j], 1)
    out = _object_lpo(K, Y, alpha, pairs).reshape(-1, 2, v)
    exact = None
    if kind == "linear":
        exact = np.array([retrain_predict_primal(X, Y, alpha, list(p)) for p in pairs])
    _check_against_retraining(out, _oracle(K, Y, alpha, pairs), exact)
    # reversed pair order gives the same predictions, swapped
    out_r = _object_lpo(K, Y, alpha, pairs[:, ::-1]).reshape(-1, 2, v)
    _close(out_r[:, ::-1], out, 1e-12)


def test_object_lpo_inverse_pair_weight_and_disagreement():
    m = 9
    X, Y = _data(m, seed=5)
    K = _kernel(X, "rbf")
    i, j = np.triu_indices(m, 1)
    pairs = np.stack([i, j], 1)
    c = 1.0 / m  # a one-group "normalized" weighting
    out = _object_lpo(K, Y, 0.3, pairs, c=c).reshape(-1, 2)
    # weight c on every pair == unweighted with alpha / c
    ref = _oracle(K, Y, 0.3 / c, pairs)[:, :, 0]
    _close(out, ref, 1e-8)
    dis = _core.cv_object_lpo_inverse_disagreement(np.asfortranarray(K), c, 0.3, np.asfortranarray(Y),
                                                   np.ascontiguousarray(pairs, dtype=np.int64), 2)
    dt = Y[i, 0] - Y[j, 0]
    dp = ref[:, 0] - ref[:, 1]
    wrong = np.where(dp * dt < 0, 1.0, np.where(dp == 0, 0.5, 0.0))
    assert dis[0] == pytest.approx(wrong[dt != 0].mean(), abs=1e-12)


def test_object_lpo_inverse_small_alpha_matches_direct_fit_accuracy():
    """The case that used to lose all accuracy (rbf, m = 8, alpha = 1e-8: the eigendecomposition
    route is off by several hundred percent): 1e-8 against extended-precision retraining."""
    m = 8
    X, Y = _data(m, d=2, seed=7)
    K = _kernel(X, "rbf")
    i, j = np.triu_indices(m, 1)
    pairs = np.stack([i, j], 1)
    for alpha in (1e-8, 1e-6, 1e-4):
        out = _object_lpo(K, Y, alpha, pairs).reshape(-1, 2)
        ref = np.array(_oracle_longdouble(K, Y[:, 0], alpha, pairs))
        assert np.max(np.abs(out - ref)) / np.max(np.abs(ref)) < 1e-8, alpha
    # the eigendecomposition route on the same case, for the record: it is the one that fails
    old = ms_lpo_old(K, Y, 1e-8, pairs)
    ref = np.array(_oracle_longdouble(K, Y[:, 0], 1e-8, pairs))
    assert np.max(np.abs(old - ref)) / np.max(np.abs(ref)) > 1e-2


def _oracle_longdouble(K, y, alpha, held_sets, groups=None, weighting="unweighted"):
    """Retraining in the explicit-Laplacian normal equations (L K_TT + alpha I) a = L y_T with
    iterative refinement in extended precision (the reference for tiny alpha)."""
    m = K.shape[0]
    cw = pair_weights(groups, weighting) if groups is not None else None
    out = []
    for p in held_sets:
        p = np.asarray(p)
        T = np.setdiff1d(np.arange(m), p)
        L = laplacian(T, groups, cw).astype(np.longdouble)
        KT = K[np.ix_(T, T)].astype(np.longdouble)
        M = L @ KT + alpha * np.eye(T.size, dtype=np.longdouble)
        rhs = L @ y[T].astype(np.longdouble)
        Md = M.astype(np.float64)
        a = np.linalg.solve(Md, rhs.astype(np.float64)).astype(np.longdouble)
        for _ in range(6):
            a = a + np.linalg.solve(Md, (rhs - M @ a).astype(np.float64)).astype(np.longdouble)
        out.append((K[np.ix_(p, T)].astype(np.longdouble) @ a).astype(np.float64))
    return out


def ms_lpo_old(K, Y, alpha, pairs):
    Kf = np.asfortranarray(K)
    m = K.shape[0]
    V, sigma = _core.cv_spectral(Kf, np.arange(m), np.array([0, m], np.int64), np.ones(1), 1)
    M, mu, h = _core.cv_object_prepare(Kf, V, sigma, 1.0, alpha, np.asfortranarray(Y))
    return _core.cv_object_lpo_pairs(M, mu, h, np.asfortranarray(Y), 1.0,
                                     np.ascontiguousarray(pairs, dtype=np.int64), 1)


def _query_problem(kind, weighting, sizes=(4, 2, 6, 1, 5), v=2, seed=8, d=3, return_X=False):
    groups = np.concatenate([np.full(n, 10 * q) for q, n in enumerate(sizes)])
    rng = np.random.default_rng(seed)
    groups = groups[rng.permutation(groups.size)]
    m = groups.size
    X, Y = _data(m, d=d, v=v, seed=seed)
    K = _kernel(X, kind)
    order, offsets, pair_weight = _groups_struct(groups, weighting)
    inverse = np.empty_like(order)
    inverse[order] = np.arange(m)
    if return_X:
        return X
    return groups, K, Y, order, offsets, pair_weight, inverse


@pytest.mark.parametrize("weighting", ["unweighted", "normalized"])
@pytest.mark.parametrize("kind", ["rbf", "linear"])
@pytest.mark.parametrize("alpha", ALPHAS)
def test_query_lpo_inverse_equals_retraining(weighting, kind, alpha):
    groups, K, Y, order, offsets, pw, inverse = _query_problem(kind, weighting)
    pairs = np.array([(a, b) for a in range(groups.size) for b in range(a + 1, groups.size)
                      if groups[a] == groups[b]])
    Kg = np.asfortranarray(K[np.ix_(order, order)])
    Yg = np.asfortranarray(Y[order])
    pg = np.ascontiguousarray(inverse[pairs], dtype=np.int64)
    out = _core.cv_query_lpo_inverse(Kg, order, offsets, pw, alpha, Yg, pg, 2).reshape(-1, 2, Y.shape[1])
    ref = _oracle(K, Y, alpha, pairs, groups, weighting)
    exact = None
    if kind == "linear":
        X = _query_problem(kind, weighting, return_X=True)
        exact = np.array([retrain_predict_primal(X, Y, alpha, list(p), groups, weighting) for p in pairs])
    _check_against_retraining(out, ref, exact)
    dis = _core.cv_query_lpo_inverse_disagreement(Kg, order, offsets, pw, alpha, Yg, pg, 1)
    for k in range(Y.shape[1]):
        dt = Y[pairs[:, 0], k] - Y[pairs[:, 1], k]
        dp = ref[:, 0, k] - ref[:, 1, k]
        wrong = np.where(dp * dt < 0, 1.0, np.where(dp == 0, 0.5, 0.0))
        assert dis[k] == pytest.approx(wrong[dt != 0].mean(), abs=1e-12)


@pytest.mark.parametrize("weighting", ["unweighted", "normalized"])
@pytest.mark.parametrize("kind", ["rbf", "linear"])
@pytest.mark.parametrize("alpha", ALPHAS)
def test_leave_group_out_inverse_equals_retraining(weighting, kind, alpha):
    groups, K, Y, order, offsets, pw, inverse = _query_problem(kind, weighting)
    out = _core.cv_leave_group_out_inverse(np.asfortranarray(K[np.ix_(order, order)]), order, offsets, pw, alpha,
                                           np.asfortranarray(Y[order]), 2)
    ref = np.empty_like(Y)
    for g in np.unique(groups):
        rows = np.flatnonzero(groups == g)
        if rows.size == 1:  # holding out a single row removes no pair: full-data prediction
            ref[rows] = _full_prediction(K, Y, alpha, groups, weighting)[rows]
        else:
            ref[rows] = retrain_predict(K, Y, alpha, rows, groups, weighting)
    exact = None
    if kind == "linear":
        X = _query_problem(kind, weighting, return_X=True)
        exact = np.empty_like(Y)
        for g in np.unique(groups):
            rows = np.flatnonzero(groups == g)
            exact[rows] = retrain_predict_primal(X, Y, alpha, rows if rows.size > 1 else [], groups, weighting) \
                if rows.size > 1 else ref[rows]
    _check_against_retraining(out, ref, exact)
    # the existing Cholesky route agrees (where it is accurate)
    if alpha >= 1e-2:
        old = _core.cv_leave_group_out_cholesky(np.asfortranarray(K[np.ix_(order, order)]), order, offsets, pw,
                                                alpha, np.asfortranarray(Y[order]), 1)
        _close(out, old, 1e-7)


def _full_prediction(K, Y, alpha, groups, weighting):
    m = K.shape[0]
    L = laplacian(np.arange(m), np.asarray(groups), pair_weights(groups, weighting))
    A = np.linalg.solve(L @ K + alpha * np.eye(m), L @ Y)
    return K @ A


@pytest.mark.parametrize("weighting", ["unweighted", "normalized"])
def test_inverse_routes_small_alpha_query(weighting):
    """alpha in {1e-8, 1e-6} with query groups: 1e-8 against extended-precision retraining, for
    leave-pair-out and leave-group-out."""
    groups, K, Y, order, offsets, pw, inverse = _query_problem("rbf", weighting, sizes=(5, 6, 2, 4), v=1)
    pairs = np.array([(a, b) for a in range(groups.size) for b in range(a + 1, groups.size)
                      if groups[a] == groups[b]])
    Kg, Yg = np.asfortranarray(K[np.ix_(order, order)]), np.asfortranarray(Y[order])
    for alpha in (1e-8, 1e-6):
        out = _core.cv_query_lpo_inverse(Kg, order, offsets, pw, alpha, Yg, np.ascontiguousarray(inverse[pairs]), 1)
        ref = np.array(_oracle_longdouble(K, Y[:, 0], alpha, pairs, groups, weighting))
        assert np.max(np.abs(out - ref)) / np.max(np.abs(ref)) < 1e-8, alpha
        lgo = _core.cv_leave_group_out_inverse(Kg, order, offsets, pw, alpha, Yg, 1)[:, 0]
        sets = [np.flatnonzero(groups == g) for g in np.unique(groups)]
        ref = np.empty(groups.size)
        for U, r in zip(sets, _oracle_longdouble(K, Y[:, 0], alpha, sets, groups, weighting)):
            ref[U] = r
        assert np.max(np.abs(lgo - ref)) / np.max(np.abs(ref)) < 1e-8, alpha


def test_inverse_routes_reject_bad_input():
    X, Y = _data(6, seed=9)
    K = np.asfortranarray(_kernel(X, "rbf"))
    Yf = np.asfortranarray(Y)
    with pytest.raises(ValueError, match="invalid"):
        _core.cv_object_lpo_inverse(K, 1.0, 0.1, Yf, np.array([[0, 0]], np.int64), 1)
    with pytest.raises(ValueError, match="invalid"):
        _core.cv_object_lpo_inverse(K, 1.0, 0.1, Yf, np.array([[0, 6]], np.int64), 1)
    with pytest.raises(ValueError, match="alpha"):
        _core.cv_object_lpo_inverse(K, 1.0, -1.0, Yf, np.array([[0, 1]], np.int64), 1)
    with pytest.raises(np.linalg.LinAlgError):
        _core.cv_object_lpo_inverse(np.asfortranarray(-K), 1.0, 1e-3, Yf, np.array([[0, 1]], np.int64), 1)
    rows, offsets, pw = np.arange(6), np.array([0, 3, 6], np.int64), np.ones(2)
    with pytest.raises(ValueError, match="crosses groups"):
        _core.cv_query_lpo_inverse(K, rows, offsets, pw, 0.1, Yf, np.array([[0, 4]], np.int64), 1)
    with pytest.raises(ValueError, match="no training pairs"):
        _core.cv_leave_group_out_inverse(K, rows, np.array([0, 5, 6], np.int64), pw, 0.1, Yf, 1)
    with pytest.raises(ValueError, match="order must be a permutation"):
        _core.cv_leave_group_out_inverse(K, np.array([0, 1, 2, 3, 4, 4]), offsets, pw, 0.1, Yf, 1)
    with pytest.raises(ValueError, match="offsets must end at the number of rows"):
        _core.cv_leave_group_out_inverse(K, rows, np.array([0, 3, 5], np.int64), pw, 0.1, Yf, 1)


# ---------------------------------------------------------------------------------------------
# feature-space hold-out (linear kernel, basis vectors): fastrank._holdout
# ---------------------------------------------------------------------------------------------

def _codes(groups, m):
    if groups is None:
        return np.zeros(m, np.int64), 1
    _, codes = np.unique(groups, return_inverse=True)
    return codes.astype(np.int64), int(codes.max()) + 1


def _grouped_data(m=23, d=4, v=2, seed=11):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, d)) + 3.0  # an offset: the centring must not lose it
    Y = rng.normal(size=(m, v))
    groups = rng.integers(0, 5, size=m)
    groups[0] = 7  # a one-row group
    return X, Y, groups


@pytest.mark.parametrize("weighting", ["unweighted", "normalized"])
@pytest.mark.parametrize("alpha", [1e-8] + ALPHAS)
def test_linear_feature_leave_group_out_equals_retraining(weighting, alpha):
    X, Y, groups = _grouped_data()
    codes, q = _codes(groups, X.shape[0])
    out = _holdout.feature_leave_group_out(_holdout.linear_features(X), Y, codes, q, alpha,
                                           normalized=weighting == "normalized")
    ref = np.empty_like(Y)
    for g in np.unique(groups):
        rows = np.flatnonzero(groups == g)
        ref[rows] = retrain_predict_primal(X, Y, alpha, rows, groups, weighting)
    _close(out, ref, 1e-8)


@pytest.mark.parametrize("grouped", [False, True])
@pytest.mark.parametrize("alpha", ALPHAS)
def test_linear_feature_holdout_sets_equal_retraining(grouped, alpha):
    import scipy.sparse as sp

    X, Y, groups = _grouped_data(seed=12)
    g = groups if grouped else None
    codes, q = _codes(g, X.shape[0])
    rng = np.random.default_rng(0)
    sets = [rng.choice(X.shape[0], size=k, replace=False) for k in (1, 2, 3, 5, 9)]
    for Phi in (_holdout.linear_features(X), _holdout.linear_features(sp.csr_matrix(X))):
        out = _holdout.feature_holdout(Phi, Y, codes, q, alpha, sets)
        for U, o in zip(sets, out):
            _close(o, retrain_predict_primal(X, Y, alpha, U, g, "unweighted"), 1e-8)


@pytest.mark.parametrize("weighting", ["unweighted", "normalized"])
@pytest.mark.parametrize("alpha", [1e-2, 1.0])
def test_linear_feature_holdout_many_groups_without_a_loop_over_groups(weighting, alpha, monkeypatch):
    """Over 64 groups a set's update gathers the rows of the groups it touches at once: no Python pass over the
    groups (GroupIndex.rows, which made k folds of m / 2 groups of 2 quadratic in m), and each set is still the
    retrained model: folds of whole groups, folds cutting groups and unsorted sets, rounded targets (ties)."""
    from fastrank._validation import GroupIndex

    rng = np.random.default_rng(21)
    m = 180
    X = rng.normal(size=(m, 3)) + 2.0
    Y = np.round(rng.normal(size=(m, 2)))
    groups = rng.integers(0, 80, size=m) * 2 + 1
    codes, q = _codes(groups, m)
    assert q > 64
    whole = (np.arange(q) % 3)[codes]
    cut = rng.integers(0, 4, size=m)
    sets = [np.flatnonzero(whole == k) for k in range(3)] + [np.flatnonzero(cut == k) for k in range(4)]
    sets += [rng.choice(m, size=s, replace=False) for s in (1, 7, 40)]
    monkeypatch.setattr(GroupIndex, "rows", lambda self: pytest.fail("the hold-out enumerated the groups"))
    out = _holdout.feature_holdout(X, Y, codes, q, alpha, sets, normalized=weighting == "normalized")
    for U, o in zip(sets, out):
        _close(o, retrain_predict_primal(X, Y, alpha, U, groups, weighting), 1e-10)


def _basis_oracle(K, Y, alpha, held, R, groups=None, weighting="unweighted"):
    """Subset of regressors retrained without `held` (eq. 41), the basis rows R kept as basis
    functions: a = (K_TR^T L K_TR + alpha K_RR)^-1 K_TR^T L y_T, predictions K_UR a."""
    m = K.shape[0]
    T = np.setdiff1d(np.arange(m), held)
    cw = pair_weights(groups, weighting) if groups is not None else None
    L = laplacian(T, None if groups is None else np.asarray(groups), cw)
    KTR = K[np.ix_(T, R)]
    a = np.linalg.solve(KTR.T @ L @ KTR + alpha * K[np.ix_(R, R)], KTR.T @ L @ Y[T])
    return K[np.ix_(held, R)] @ a


@pytest.mark.parametrize("alpha", ALPHAS)
def test_basis_feature_holdout_equals_retraining_through_the_estimator(alpha):
    import fastrank

    X, Y, groups = _grouped_data(m=26, seed=13)
    y = Y[:, 0]
    m = X.shape[0]
    R = np.array([1, 4, 6, 9, 15, 20])
    K = rbf(X, X, 0.3)
    Phi, _ = _holdout.basis_features(K[:, R], K[np.ix_(R, R)])
    codes, q = _codes(groups, m)
    rng = np.random.default_rng(1)
    others = np.setdiff1d(np.arange(m), R)
    sets = [rng.choice(others, size=k, replace=False) for k in (1, 2, 4)]
    sets.append(np.flatnonzero((groups == groups[2]) & ~np.isin(np.arange(m), R)))
    out = _holdout.feature_holdout(Phi, y, codes, q, alpha, sets)
    for U, o in zip(sets, out):
        train = np.setdiff1d(np.arange(m), U)
        idx = np.searchsorted(train, R)  # the same basis rows, as positions in X[train]
        est = fastrank.RankRLS(alpha=alpha, kernel="rbf", gamma=0.3, basis_vectors=idx)
        est.fit(X[train], y[train], groups[train])
        ref = est.predict(X[U])
        _close(o[:, 0], ref, 1e-8)
        _close(o, _basis_oracle(K, Y[:, :1], alpha, U, R, groups), 1e-8)


@pytest.mark.parametrize("weighting", ["unweighted", "normalized"])
@pytest.mark.parametrize("alpha", ALPHAS)
def test_basis_feature_leave_group_out_with_held_out_basis_rows(weighting, alpha):
    X, Y, groups = _grouped_data(m=24, seed=14)
    R = np.array([0, 3, 5, 8, 13, 21, 22])  # every group holds some basis rows
    K = rbf(X, X, 0.5)
    Phi, _ = _holdout.basis_features(K[:, R], K[np.ix_(R, R)])
    codes, q = _codes(groups, X.shape[0])
    out = _holdout.feature_leave_group_out(Phi, Y, codes, q, alpha, normalized=weighting == "normalized")
    ref = np.empty_like(Y)
    for g in np.unique(groups):
        rows = np.flatnonzero(groups == g)
        ref[rows] = _basis_oracle(K, Y, alpha, rows, R, groups, weighting)
    _close(out, ref, 1e-8)


def test_basis_features_rank_deficient_kernel_block():
    """Duplicate basis rows make K_RR singular: the eigen fallback keeps the exact predictions."""
    X, Y, groups = _grouped_data(m=20, seed=15)
    X[5] = X[2]
    R = np.array([2, 5, 7, 11])
    K = X @ X.T + 1.0  # rank <= d + 1 (also singular on its own)
    Phi, _ = _holdout.basis_features(K[:, R], K[np.ix_(R, R)])
    assert Phi.shape[1] < R.size
    codes, q = _codes(groups, 20)
    sets = [np.array([0, 1]), np.array([3, 9, 14])]
    out = _holdout.feature_holdout(Phi, Y, codes, q, 0.5, sets)
    for U, o in zip(sets, out):
        m = 20
        T = np.setdiff1d(np.arange(m), U)
        L = laplacian(T, groups, None)
        KTR = K[np.ix_(T, R)]
        a = np.linalg.lstsq(KTR.T @ L @ KTR + 0.5 * K[np.ix_(R, R)], KTR.T @ L @ Y[T], rcond=None)[0]
        _close(o, K[np.ix_(U, R)] @ a, 1e-8)


@pytest.mark.parametrize("grouped", [False, True])
def test_linear_and_basis_feature_leave_pair_out(grouped):
    X, Y, groups = _grouped_data(m=15, seed=16)
    g = groups if grouped else None
    codes, q = _codes(g, 15)
    pairs = np.array([(a, b) for a in range(15) for b in range(a + 1, 15) if g is None or g[a] == g[b]])
    out = _holdout.feature_leave_pair_out(_holdout.linear_features(X), Y, codes, q, 1e-6, pairs)
    ref = np.array([retrain_predict_primal(X, Y, 1e-6, list(p), g, "unweighted") for p in pairs])
    _close(out, ref, 1e-8)
    R = np.array([0, 4, 9])
    K = rbf(X, X, 0.2)
    Phi, _ = _holdout.basis_features(K[:, R], K[np.ix_(R, R)])
    out = _holdout.feature_leave_pair_out(Phi, Y, codes, q, 0.1, pairs)
    ref = np.array([_basis_oracle(K, Y, 0.1, list(p), R, g) for p in pairs])
    _close(out, ref, 1e-8)
