"""The linear kernel in the dual under a large feature offset per query: S 1_q = 0, so every group's column
means may leave X before K = X X^T is formed (and W = X^T A is unchanged); otherwise X X^T cancels the offset's
digits and S K S + alpha I is not numerically positive definite."""

import math
import warnings

import numpy as np
import pytest

from fastrank import IllConditionedWarning, RankRLS, RankSVM


def _group_centred(X, groups):
    out = np.empty_like(X)
    for q in np.unique(groups):
        rows = groups == q
        out[rows] = X[rows] - [math.fsum(col) / rows.sum() for col in X[rows].T]
    return out


def _explicit_pairs_coef(X, y, groups, alpha, exclude_ties):
    """W = (X^T L X + alpha I)^-1 X^T L y with L built pair by pair inside each group (cost (21))."""
    m = X.shape[0]
    L = np.zeros((m, m))
    for i in range(m):
        for j in range(m):
            if i != j and groups[i] == groups[j] and not (exclude_ties and y[i] == y[j]):
                L[i, i] += 1.0
                L[i, j] -= 1.0
    return np.linalg.solve(X.T @ L @ X + alpha * np.eye(X.shape[1]), X.T @ L @ y)


@pytest.mark.parametrize("exclude_ties", [False, True])
def test_linear_dual_under_a_feature_offset_per_query_is_the_model_of_the_centred_rows(exclude_ties):
    rng = np.random.default_rng(0)
    groups = np.repeat(np.arange(6), 10)
    X = rng.standard_normal((60, 80)) + 1e9 * rng.standard_normal((6, 80))[groups]  # n > m: the dual's shape
    y = rng.standard_normal(60)
    y = np.round(y) if exclude_ties else y
    est = RankRLS(kernel="linear", solver="dual", alpha=1.0, exclude_ties=exclude_ties).fit(X, y, groups)
    W = _explicit_pairs_coef(_group_centred(X, groups), y, groups, 1.0, exclude_ties)
    np.testing.assert_allclose(est.coef_, W, rtol=1e-9, atol=1e-9 * np.abs(W).max())


def test_features_are_centred_in_groups_only_where_an_offset_would_cost_digits():
    from fastrank._problem import centred_in_groups, features_without_group_offsets
    from fastrank._validation import group_index

    rng = np.random.default_rng(1)
    groups = np.repeat(np.arange(5), 8)
    gi = group_index(groups, 40)
    X = rng.standard_normal((40, 4))
    X[:, 3] = 3.0 * rng.standard_normal(5)[groups]  # a query-level feature of ordinary size: its differences are 0
    assert features_without_group_offsets(X, gi) is X
    X[:, 3] *= 1e5  # beyond 1e4 times the columns' mean spread inside groups
    np.testing.assert_array_equal(features_without_group_offsets(X, gi), centred_in_groups(X, gi))
    X[:, 3] /= 1e5
    X[:, 0] += 1e5 * rng.standard_normal(5)[groups]  # an offset beyond 1e4 times the column's own spread
    np.testing.assert_array_equal(features_without_group_offsets(X, gi), centred_in_groups(X, gi))
    X[:, 0] = 1e200 * rng.standard_normal(40)  # squares overflow: centred rather than trusted
    assert features_without_group_offsets(X, gi) is not X


def _lpo_and_retrained(offset):
    from fastrank import model_selection

    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((30, 40)) + offset, rng.standard_normal(30)  # n > m: the dense linear route
    pairs = np.array([[0, 1], [2, 3], [4, 5]])
    lpo = np.asarray(model_selection.leave_pair_out(RankRLS(kernel="linear", alpha=1.0), X, y, pairs=pairs))
    keep = [np.setdiff1d(np.arange(30), p) for p in pairs]
    ref = np.array([RankRLS(kernel="linear", alpha=1.0).fit(X[k], y[k]).predict(X[p]) for k, p in zip(keep, pairs)])
    return lpo.reshape(ref.shape), ref


def test_exact_cv_of_the_linear_kernel_warns_where_a_feature_offset_costs_its_digits():
    with pytest.warns(IllConditionedWarning, match="Centre the columns of X"):
        lpo, ref = _lpo_and_retrained(1e4)
    assert np.max(np.abs(lpo - ref)) > 1e-7 * np.max(np.abs(ref))  # (2e-6 measured)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        lpo, ref = _lpo_and_retrained(100.0)
    np.testing.assert_allclose(lpo, ref, rtol=1e-8, atol=1e-8 * np.max(np.abs(ref)))


@pytest.mark.parametrize("exclude_ties", [False, True])
def test_conjugate_gradient_under_a_feature_offset_per_query_is_the_model_of_the_centred_rows(exclude_ties):
    # X w cancelled the offset's digits: 1.3e-4 off at offsets 1e6 (reported converged), a breakdown at 1e9
    rng = np.random.default_rng(0)
    groups = np.repeat(np.arange(20), 20)
    X = rng.standard_normal((400, 20))
    y = X @ rng.standard_normal(20) + rng.standard_normal(400)
    y = np.round(y) if exclude_ties else y
    X += 1e6 * rng.standard_normal((20, 20))[groups]
    est = RankRLS(kernel="linear", solver="cg", alpha=1.0, tol=1e-12, exclude_ties=exclude_ties).fit(X, y, groups)
    W = _explicit_pairs_coef(_group_centred(X, groups), y, groups, 1.0, exclude_ties)
    np.testing.assert_allclose(est.coef_, W, rtol=1e-8, atol=1e-8 * np.abs(W).max())


def test_a_dominant_offset_is_detected_whatever_the_sign_of_its_rounding_noise():
    # W = S - B is rounding noise under a dominant offset, and <= 0 in about 17% of these draws: the ratio was then
    # negative and read as 0, so the offset stayed and the learners below lost the model
    from fastrank._problem import group_offset_ratio
    from fastrank._validation import group_index
    rng = np.random.default_rng(1)
    for _ in range(300):
        m = int(rng.integers(4, 12))
        X = rng.normal(size=(m, 2)) + 2.0**30
        assert group_offset_ratio(X, group_index(None, m)) > 1e8


@pytest.mark.parametrize("make", [
    lambda: RankRLS(solver="cg", tol=1e-12),
    lambda: RankRLS(solver="dual"),
    lambda: RankSVM(loss="hinge", tol=1e-12),
    lambda: RankSVM(loss="squared_hinge", tol=1e-12),
], ids=["RankRLS-cg", "RankRLS-dual", "RankSVM-hinge", "RankSVM-squared"])
def test_learners_under_an_offset_with_non_positive_noise_give_the_offset_free_model(make):
    X = np.array([[0.9, -0.24], [-0.63, 0.23], [0.7, 0.66], [1.97, 0.21], [-0.59, -0.13]])
    y = np.arange(5.0)
    Xo = X + 1e9  # its within-group sum of squares rounds to <= 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got, ref = make().fit(Xo, y).coef_, make().fit(Xo - 1e9, y).coef_
    np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-6 * np.abs(ref).max())


@pytest.mark.parametrize("grouped", [False, True])
def test_primal_under_an_offset_of_1e12_against_exact_arithmetic(grouped):
    # one pass of the group means left ~eps c in every centred row: 7.6e-7 relative at offset 1e12, spread 0.1
    from fractions import Fraction

    rng = np.random.default_rng(3)
    m = 12
    x = -1e12 + rng.uniform(-0.1, 0.1, m)
    y = rng.integers(0, 3, m).astype(float)
    groups = rng.integers(0, 3, m) if grouped else np.zeros(m, int)
    xs, ys, alpha = [Fraction(float(v)) for v in x], [Fraction(float(v)) for v in y], Fraction(0.3)

    def quad(a, b):  # a^T L b with L the Laplacian of all pairs inside each group
        total = Fraction(0)
        for q in np.unique(groups):
            rows = np.flatnonzero(groups == q)
            n = len(rows)
            total += n * sum(a[i] * b[i] for i in rows) - sum(a[i] for i in rows) * sum(b[i] for i in rows)
        return total

    exact = float(quad(xs, ys) / (quad(xs, xs) + alpha))
    for solver in ("primal", "dual"):
        w = RankRLS(alpha=0.3, solver=solver).fit(x[:, None], y, groups=groups).coef_[0]
        assert w == pytest.approx(exact, rel=1e-12), solver
