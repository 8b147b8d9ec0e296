"""A large common offset of the targets leaves RankRLS unchanged (L 1 = 0): every solver must give the
offset-free model, not lose digits to cancellation between X^T y and its mean."""

import numpy as np
import pytest

import fastrank

RNG = np.random.default_rng(20261127)
M, N = 300, 8
X = RNG.normal(size=(M, N))
Y = RNG.integers(0, 5, size=M).astype(float)
GROUPS = RNG.integers(0, 10, size=M)


def _explicit_pairs_model(exclude_ties, groups):
    """Predictions of (X^T L X + alpha I) w = X^T L y with L built from the explicit pairs (alpha = 1)."""
    same = np.ones((M, M), bool) if groups is None else groups[:, None] == groups[None, :]
    A = same & ~np.eye(M, dtype=bool)
    if exclude_ties:
        A &= Y[:, None] != Y[None, :]
    L = np.diag(A.sum(axis=1)) - A
    w = np.linalg.solve(X.T @ L @ X + np.eye(N), X.T @ (L @ Y))
    return X @ w


@pytest.mark.parametrize("exclude_ties", [False, True])
@pytest.mark.parametrize("grouped", [False, True])
@pytest.mark.parametrize("solver", ["primal", "dual", "cg"])
@pytest.mark.parametrize("offset", [1e9, 1e13, 1e14, 2.0**50])
def test_a_common_target_offset_changes_no_digit(exclude_ties, grouped, solver, offset):
    groups = GROUPS if grouped else None
    ref = _explicit_pairs_model(exclude_ties, groups)
    est = fastrank.RankRLS(alpha=1.0, solver=solver, exclude_ties=exclude_ties)
    if solver == "cg":
        est.set_params(tol=1e-12)
    pred = est.fit(X, Y + offset, groups=groups).predict(X)
    np.testing.assert_allclose(pred - pred.mean(), ref - ref.mean(), rtol=0, atol=1e-8 * np.abs(ref).max())


def test_a_common_target_offset_in_several_outputs():
    Y2 = np.column_stack([Y, 2 * Y]) + 1e12
    pred = fastrank.RankRLS(alpha=1.0, solver="primal").fit(X, Y2).predict(X)
    ref = _explicit_pairs_model(False, None)
    np.testing.assert_allclose(pred[:, 0] - pred[:, 0].mean(), ref - ref.mean(), atol=1e-8 * np.abs(ref).max())
    np.testing.assert_allclose(pred[:, 1] - pred[:, 1].mean(), 2 * (ref - ref.mean()), atol=2e-8 * np.abs(ref).max())


@pytest.mark.parametrize("kernel", ["linear", "rbf"])
@pytest.mark.parametrize("exclude_ties", [False, True])
def test_exact_cross_validation_under_a_common_target_offset_equals_retraining(kernel, exclude_ties):
    from fastrank.model_selection import leave_group_out, leave_pair_out

    groups = np.repeat(np.arange(20), 15)
    est = fastrank.RankRLS(alpha=1.0, kernel=kernel, gamma=0.1, exclude_ties=exclude_ties)
    scale = np.abs(est.fit(X, Y, groups=groups).predict(X)).max()

    lgo = leave_group_out(est, X, Y + 1e13, groups=groups)
    for q in range(20):
        out = groups == q
        ref = fastrank.RankRLS(**est.get_params()).fit(X[~out], Y[~out], groups=groups[~out]).predict(X[out])
        np.testing.assert_allclose(lgo[out], ref, rtol=0, atol=1e-8 * scale)

    pairs = np.array([[0, 7], [30, 44], [200, 299]])
    lpo = leave_pair_out(est, X, Y + 1e13, pairs=pairs)  # object ranking: every pair of the 300 rows
    for (i, j), got in zip(pairs, lpo):
        keep = np.setdiff1d(np.arange(M), [i, j])
        ref = fastrank.RankRLS(**est.get_params()).fit(X[keep], Y[keep]).predict(X[[i, j]])
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-8 * scale)


@pytest.mark.parametrize("offset", [0.0, 1.0, 50.0, 150.0, 1e6])
def test_primal_gram_of_offset_nearly_collinear_features_against_exact_normal_equations(offset):
    # m (X^T X - m mu mu^T) rounds by eps mu^2 / var of the centred Gram, which the solve multiplies by the condition
    # number: 3.4e-2 off at offset 50 beside a nearly collinear twin (rcond 2e-11), 4e-6 at offsets 0 and 150
    from fractions import Fraction
    rng = np.random.default_rng(1)
    m = 30
    x1, x3 = rng.normal(size=m), rng.normal(size=m)
    X = np.c_[x1, x1 + 1e-5 * rng.normal(size=m), x3] + offset
    y, alpha = x1 + 0.5 * x3 + 0.1 * rng.normal(size=m), 1e-10
    F = [[Fraction(v) for v in row] for row in X]
    mean = [sum(F[i][j] for i in range(m)) / m for j in range(3)]
    C = [[F[i][j] - mean[j] for j in range(3)] for i in range(m)]  # X^T L X = m Xc^T Xc, X^T L y = m Xc^T y
    A = [[m * sum(C[i][j] * C[i][k] for i in range(m)) + (Fraction(alpha) if j == k else 0) for k in range(3)]
         + [m * sum(C[i][j] * Fraction(y[i]) for i in range(m))] for j in range(3)]
    for j in range(3):  # Gauss-Jordan in rational arithmetic
        A[j] = [v / A[j][j] for v in A[j]]
        for r in range(3):
            if r != j:
                A[r] = [a - A[r][j] * b for a, b in zip(A[r], A[j])]
    exact = np.array([float(A[j][3]) for j in range(3)])
    coef = fastrank.RankRLS(alpha=alpha, solver="primal").fit(X, y).coef_
    assert np.abs(coef - exact).max() <= 5e-5 * np.abs(exact).max()  # eps / rcond = 1.2e-5


def test_primal_mean_of_near_equal_large_features_is_corrected_before_the_gram():
    # the column sum down 4100 rows of 4.07e14 +- 0.0625 was off by 27 (m eps |mu|), and the one-pass correction of
    # the Gram by that mean cancelled digits: 7.4e-6 off the exact normal equations
    from fractions import Fraction
    rng = np.random.default_rng(0)
    m = 4100
    k = rng.choice([-1.0, 0.0, 1.0], p=[0.005, 0.99, 0.005], size=m)
    X = np.c_[4.0716583328068375e14 + 0.0625 * k, 0.0625 * k + 1e-7 * rng.normal(size=m)]
    y, alpha = 3.0 * k + 0.01 * rng.normal(size=m), 1e-3
    Xf, yf = [[Fraction(v) for v in r] for r in X.tolist()], [Fraction(v) for v in y.tolist()]
    s, sy = [sum(r[j] for r in Xf) for j in range(2)], sum(yf)
    A = [[m * sum(r[a] * r[b] for r in Xf) - s[a] * s[b] + (Fraction(alpha) if a == b else 0) for b in range(2)]
         for a in range(2)]
    b = [m * sum(r[a] * t for r, t in zip(Xf, yf)) - s[a] * sy for a in range(2)]
    det = A[0][0] * A[1][1] - A[0][1] * A[1][0]
    exact = np.array([float((b[0] * A[1][1] - A[0][1] * b[1]) / det), float((A[0][0] * b[1] - A[1][0] * b[0]) / det)])
    coef = fastrank.RankRLS(alpha=alpha, solver="primal").fit(X, y).coef_
    assert np.abs(coef - exact).max() <= 2e-9 * np.abs(exact).max()  # 2.6e-10 measured; two-pass numpy 2.4e-9
