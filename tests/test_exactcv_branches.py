"""Branches of the exact-CV engine, the solvers, kernels and input layers, each run from a public entry point and
checked against an oracle from the definition (retraining without the held-out rows, the normal equations, Cortes et
al.'s Proposition 2 written out) or against its exact message."""

import re
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import fastrank
from fastrank import model_selection as ms
from fastrank.exceptions import IllConditionedWarning, LinAlgError


def _data(m=12, d=3, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(m, d)), rng.normal(size=m)


def _rel(a, b):
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


# ---- fold and hold-out set validation (model_selection / _exactcv) ------------------------------------------------

def test_exact_cv_of_another_learner_names_the_learners_it_takes():
    X, y = _data()
    with pytest.raises(TypeError, match=r"^exact cross-validation needs a fastrank.RankRLS or fastrank.MPRank, got "
                                        r"RankSVM$"):
        ms.leave_pair_out(fastrank.RankSVM(), X, y)


def test_questions_a_model_cannot_answer_are_refused():
    X, y = _data()
    with pytest.raises(ValueError, match=r"^mprank_loo_approximation needs a 1-D y$"):
        ms.mprank_loo_approximation(fastrank.MPRank(), X, np.c_[y, -y])
    with pytest.raises(ValueError, match=r"^leave_group_out needs groups with at least two distinct ids$"):
        ms.leave_group_out(fastrank.RankRLS(), X, y, np.zeros(12))
    pairs = np.array([[0, 1], [2, 3], [4, 5], [1, 2]])
    with pytest.raises(ValueError, match=r"^preference_holdout_predictions needs the dense kernel model"):
        ms.preference_holdout_predictions(fastrank.RankRLS(basis_vectors=[0, 1, 2]), X, pairs, [[0]])
    with pytest.raises(ValueError, match=r"^hold-out set 0 leaves fewer than 2 training inputs \(no training pairs\)$"):
        ms.preference_holdout_predictions(fastrank.RankRLS(), X, pairs, [np.arange(11)])
    with pytest.raises(ValueError, match=r"^hold-out set 0 as a boolean mask must have shape \(12,\), one entry per "
                                         r"row$"):
        ms.holdout_predictions(fastrank.RankRLS(), X, y, [np.ones(5, bool)])


def test_preference_holdout_of_a_row_without_edges_is_the_full_model():
    """A set that touches no preference removes nothing: the prediction of the model fitted on every edge (eq. 33 with
    no removed edge), next to a set that does remove edges -- both against fit_preferences on the kept edges."""
    X, _ = _data(m=10, seed=3)
    rng = np.random.default_rng(3)
    pairs = rng.integers(0, 9, size=(40, 2))  # row 9 in no pair; more than 2 edges per row: the LU form of L K
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    weights = np.linspace(0.5, 2.0, pairs.shape[0])
    est = fastrank.RankRLS(alpha=0.7, kernel="rbf", gamma=0.3)
    sets = [np.array([9]), np.array([2, 9])]
    got = ms.preference_holdout_predictions(est, X, pairs, sets, weights=weights)
    for U, pred in zip(sets, got):
        keep = ~np.isin(pairs, U).any(axis=1)
        want = fastrank.RankRLS(alpha=0.7, kernel="rbf", gamma=0.3).fit_preferences(
            X, pairs[keep], weights=weights[keep]).predict(X[U])
        assert _rel(pred, want) < 1e-8


# ---- the linear low-rank route's spectral factor (DualRoute with S X) ---------------------------------------------

def test_mprank_loo_approximation_on_the_linear_low_rank_factor():
    """The linear kernel with n_features < m factors S K S through the n x n (S X)^T S X; the hat matrix K S V (Sigma +
    alpha)^-1 V^T S built from that rank-n factor must give the Proposition 2 predictions (000 eq. 27) of the m x m
    route on the same kernel K = X X^T (precomputed; checked against Proposition 2 written out in test_cv), and the
    exact value must be eq. 17 by retraining."""
    m, C = 11, 2.5
    X, y = _data(m=m, d=3, seed=16)
    res = ms.mprank_loo_approximation(fastrank.MPRank(C=C), X, y)
    full = ms.mprank_loo_approximation(fastrank.MPRank(C=C, kernel="precomputed"), X @ X.T, y)
    assert np.array_equal(res.pairs, full.pairs)
    assert _rel(res.approximate_predictions, full.approximate_predictions) < 1e-8
    assert res.approximate == pytest.approx(full.approximate, rel=1e-8)
    exact = []
    for i, j in res.pairs:
        train = np.setdiff1d(np.arange(m), [i, j])
        exact.append(fastrank.MPRank(C=C).fit(X[train], y[train]).predict(X[[i, j]]))
    exact = np.array(exact)
    assert _rel(res.exact_predictions, exact) < 1e-8
    eq17 = np.mean(((exact[:, 1] - y[res.pairs[:, 1]]) - (exact[:, 0] - y[res.pairs[:, 0]])) ** 2)
    assert res.exact == pytest.approx(eq17, rel=1e-8)


def test_factorize_rows_without_pair_structure_gives_the_zero_model():
    """Identical rows: S X = 0, so the rank-n factor of S K S is empty and the model is w = 0 (eq. 28: X^T L X = 0,
    X^T L y = 0), for the full fit and for every pair held out, at any alpha."""
    _, y = _data(m=9, seed=4)
    X = np.tile([[1.0, -2.0, 0.5]], (9, 1))
    fac = ms.factorize(fastrank.RankRLS(), X, y)
    for alpha in (1e-3, 1.0):
        assert np.array_equal(fac.solve(alpha).coef_, np.zeros(3))
        assert np.array_equal(fac.leave_pair_out(alpha=alpha), np.zeros((36, 2)))
    assert np.array_equal(fastrank.RankRLS().fit(X, y).coef_, np.zeros(3))


# ---- feature-space hold-out with more than 64 groups (no per-group cache) -----------------------------------------

def test_kfold_of_many_groups_on_the_linear_feature_route_equals_retraining():
    rng = np.random.default_rng(5)
    groups = np.repeat(np.arange(70), 3)
    X, y = rng.normal(size=(210, 4)), rng.normal(size=210)
    folds = rng.integers(0, 4, size=210)  # folds cut groups: every touched group's Gram term is recomputed
    est = fastrank.RankRLS(alpha=0.5)
    got = ms.kfold_predictions(est, X, y, folds, groups=groups)
    for f in range(4):
        test, train = folds == f, folds != f
        want = fastrank.RankRLS(alpha=0.5).fit(X[train], y[train], groups[train])
        assert _rel(got[test], want.predict(X[test])) < 1e-8


# ---- RankRLSCV / MPRankCV ------------------------------------------------------------------------------------------

def test_rankrlscv_refuses_unknown_cv_and_scoring_by_name():
    X, y = _data()
    with pytest.raises(ValueError, match=r"^cv must be None, 'lpo', 'lgo', an int, fold labels, index sets or a "
                                         r"splitter; got 'foo'$"):
        fastrank.RankRLSCV(cv="foo").fit(X, y)
    with pytest.raises(ValueError, match=r"^scoring is a measure name \(.*\); got 3$"):
        fastrank.RankRLSCV(scoring=3).fit(X, y)


class _NoSignature:
    """A scorer whose signature cannot be read (as some C-implemented callables): called as it is."""

    @property
    def __signature__(self):
        raise ValueError("no signature found")

    def __call__(self, y_true, y_pred, groups):
        return fastrank.metrics.get_measure("auc")(y_true, y_pred, groups=groups)


def test_rankrlscv_calls_a_scorer_without_a_readable_signature():
    X, y = _data(m=20, seed=6)
    alphas = [0.1, 1.0, 10.0]
    got = fastrank.RankRLSCV(alphas, cv=4, scoring=_NoSignature()).fit(X, y)
    want = fastrank.RankRLSCV(alphas, cv=4, scoring="auc").fit(X, y)
    assert np.array_equal(got.cv_results_["scores"], want.cv_results_["scores"])
    assert got.alpha_ == want.alpha_


def test_mprank_solver_cg_and_path_of_mprank_are_refused():
    X, y = _data()
    with pytest.raises(ValueError, match=r"^MPRank has no solver='cg'; use RankRLS\(solver='cg'\)"):
        fastrank.MPRank(solver="cg").fit(X, y)
    with pytest.raises(TypeError, match=r"^estimator must be a fastrank.RankRLS$"):
        fastrank.rankrls_path(X, y, [1.0, 2.0], estimator=fastrank.MPRank())


# ---- preference-graph input (_problem) ------------------------------------------------------------------------------

def test_fit_preferences_refuses_unknown_costs_negative_magnitudes_and_sparse_kernels():
    X, _ = _data()
    pairs = np.array([[0, 1], [2, 3]])
    with pytest.raises(ValueError, match=r"^cost must be one of \('binary', 'magnitude', 'normalized'\), got 'hinge'$"):
        fastrank.RankRLS().fit_preferences(X, pairs, cost="hinge")
    with pytest.raises(ValueError, match=r"^magnitudes must be >= 0 \(swap the pair to reverse a preference\)$"):
        fastrank.RankRLS().fit_preferences(X, pairs, magnitudes=[1.0, -1.0])
    K = X @ X.T
    with pytest.raises(TypeError, match=r"^X is a sparse matrix; a precomputed kernel must be a dense \(m, m\) array"):
        fastrank.RankRLS(kernel="precomputed").fit_preferences(sp.csr_matrix(K), pairs)


def test_sparse_x_with_too_few_rows_is_refused():
    with pytest.raises(ValueError, match=r"^Found array with 1 sample\(s\) while a minimum of 2 is required\.$"):
        fastrank.RankRLS().fit(sp.csr_matrix(np.ones((1, 3))), [1.0])


# ---- CG with exclude_ties reports progress -------------------------------------------------------------------------

def test_cg_with_exclude_ties_reports_progress_and_solves_the_normal_equations(capsys):
    """verbose: the tie-excluding CG's callback drives the progress bar; the solution is the one of
    (X^T L' X + alpha I) w = X^T L' y with L' the Laplacian of the untied pairs (written out pair by pair)."""
    rng = np.random.default_rng(7)
    X, y = rng.normal(size=(15, 4)), rng.integers(0, 3, size=15).astype(float)
    est = fastrank.RankRLS(alpha=0.8, solver="cg", exclude_ties=True, tol=1e-13, verbose=1).fit(X, y)
    assert re.search(r"RankRLS conjugate gradient: \d+/\d+ it", capsys.readouterr().err)
    L = np.zeros((15, 15))
    for i in range(15):
        for j in range(i + 1, 15):
            if y[i] != y[j]:
                L[[i, j], [i, j]] += 1
                L[i, j] -= 1
                L[j, i] -= 1
    w = np.linalg.solve(X.T @ L @ X + 0.8 * np.eye(4), X.T @ L @ y)
    assert _rel(est.coef_, w) < 1e-8


# ---- sparse input: kernel overflow, CSR arrays --------------------------------------------------------------------

@pytest.mark.parametrize("kernel, scale, message", [
    ("rbf", 1e200, "Gaussian kernel (gamma=1): squared distances between rows of X overflow float64; rescale X"),
    ("poly", 1e100, "polynomial kernel (gamma=0.333333, degree=3, coef0=1): kernel values overflow float64; use a "
                    "smaller gamma, degree or coef0, or rescale X"),
    ("linear", 1e200, "linear kernel: inner products of rows of X overflow float64; rescale X"),
])
def test_sparse_basis_kernel_overflow_is_refused_by_kernel(kernel, scale, message):
    X, y = _data()
    est = fastrank.RankRLS(kernel=kernel, gamma=1.0 if kernel == "rbf" else None, basis_vectors=5, random_state=0)
    with pytest.raises(ValueError, match="^" + re.escape(message) + "$"):
        est.fit(sp.csr_matrix(X * scale), y)  # the basis block K(X, X_R) of sparse rows


def test_malformed_sparse_shapes_are_refused():
    with pytest.raises(ValueError, match=r"^X must be 2-D, got 1-D$"):
        fastrank.RankRLS().fit(sp.coo_array(np.array([1.0, 2.0, 0.0])), [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match=r"^X has shape \(3, 0\); at least one row and one column are needed$"):
        fastrank.RankRLS().fit(sp.csr_matrix((3, 0)), np.arange(3.0))
    X, y = _data()
    A = sp.csr_matrix(X)
    A.indptr = A.indptr[:-1]
    with pytest.raises(ValueError, match=r"^X.indptr must have 13 entries, got 12$"):
        fastrank.RankRLS(solver="cg").fit(A, y)


def test_csr_with_other_index_dtypes_fits_the_same_model():
    X, y = _data()
    X[X < 0.3] = 0.0
    want = fastrank.RankRLS(solver="cg", tol=1e-14).fit(sp.csr_matrix(X), y).coef_
    A = sp.csr_matrix(X)
    A.indices = A.indices.astype(np.int16)  # set by hand: SciPy itself keeps int32 / int64
    got = fastrank.RankRLS(solver="cg", tol=1e-14).fit(A, y).coef_
    assert np.array_equal(got, want)


def test_all_zero_sparse_x_fits_the_zero_model():
    _, y = _data()
    est = fastrank.RankRLS(solver="cg").fit(sp.csr_matrix((12, 3)), y)
    assert np.array_equal(est.coef_, np.zeros(3)) and est.converged_


def test_kernel_kappa_of_float32_sparse_rows_is_that_of_their_float64_values():
    X, _ = _data()
    X[X < 0.2] = 0.0
    X32 = X.astype(np.float32)
    sq = (X32.astype(np.float64) ** 2).sum(axis=1)
    A = sp.csr_matrix(X32)
    assert fastrank.bounds.kernel_kappa(A, "linear") == pytest.approx(np.sqrt(sq.max()), rel=1e-12)
    want = np.sqrt(np.max((0.5 * sq + 2.0) ** 3))
    assert fastrank.bounds.kernel_kappa(A, "poly", gamma=0.5, degree=3, coef0=2.0) == pytest.approx(want, rel=1e-12)


def test_boolean_mask_hold_out_sets_are_their_rows():
    X, y = _data(m=14, seed=9)
    mask = np.zeros(14, bool)
    mask[[1, 4, 5, 11]] = True
    est = fastrank.RankRLS(alpha=0.3, kernel="rbf", gamma=0.5)
    got = ms.holdout_predictions(est, X, y, [mask])[0]
    want = fastrank.RankRLS(alpha=0.3, kernel="rbf", gamma=0.5).fit(X[~mask], y[~mask]).predict(X[mask])
    assert _rel(got, want) < 1e-8


# ---- environment settings --------------------------------------------------------------------------------------

@pytest.mark.parametrize("value", ["-5", "nan"])
def test_memory_limit_that_is_not_positive_is_refused(monkeypatch, value):
    monkeypatch.setenv("FASTRANK_MAX_DENSE_BYTES", value)
    X, y = _data()
    with pytest.raises(ValueError, match=rf"^FASTRANK_MAX_DENSE_BYTES='{value}' must be a finite byte count of at "
                                         r"least 1 \(or 0 / none: no limit\)$"):
        fastrank.RankRLS(kernel="rbf").fit(X, y)


def test_thread_policy_off_leaves_blas_alone(monkeypatch):
    """BLAS at 2 threads and a one-thread fit: the region limits BLAS (and restores it), unless
    FASTRANK_THREAD_POLICY=off; the model is the same either way."""
    threadpoolctl = pytest.importorskip("threadpoolctl")
    from fastrank import _threads
    calls = []
    real = _threads._set_threads
    monkeypatch.setattr(_threads, "_set_threads", lambda want: calls.append(want) or real(want))
    X, y = _data(m=30, seed=8)
    with threadpoolctl.threadpool_limits(limits=2, user_api="blas"):
        monkeypatch.delenv("FASTRANK_THREAD_POLICY", raising=False)
        want = fastrank.RankRLS(kernel="rbf", n_jobs=1).fit(X, y).dual_coef_
        assert calls  # limited, then restored
        monkeypatch.setenv("FASTRANK_THREAD_POLICY", "off")
        calls.clear()
        got = fastrank.RankRLS(kernel="rbf", n_jobs=1).fit(X, y).dual_coef_
    assert calls == []
    assert _rel(got, want) < 1e-12  # BLAS threads change rounding only


def test_blas_already_at_the_regions_threads_is_not_reset(monkeypatch):
    threadpoolctl = pytest.importorskip("threadpoolctl")
    from fastrank import _threads
    calls = []
    monkeypatch.setattr(_threads, "_set_threads", lambda want: calls.append(want))
    X, y = _data(m=30, seed=8)
    with threadpoolctl.threadpool_limits(limits=1, user_api="blas"):
        fastrank.RankRLS(kernel="rbf", n_jobs=1).fit(X, y)
    assert calls == []


@pytest.mark.parametrize("sets", [[[0]], [[0, 1]], [[0, 1, 2, 3, 4]]])
def test_a_singular_hold_out_system_names_the_callers_alpha(sets):
    # object sets factor at alpha m / (m - u) (004 eqs. 36-37), and the error named that value (1.11e-20, 1.25e-20,
    # 2e-20)
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(10, 3)), rng.normal(size=10)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IllConditionedWarning)
        with pytest.raises(LinAlgError, match=r"not numerically positive definite at alpha=1e-20 "):
            ms.holdout_predictions(fastrank.RankRLS(alpha=1e-20, solver="dual"), X, y, sets)


def test_a_path_accepts_every_alpha_fit_accepts():
    # one alpha: Cholesky, refusing alpha <= eps max diag(S K S); several: the tridiagonal reduction, refusing alpha <=
    # eps lambda_max (23 times higher here), so [a, 1.0] raised LinAlgError for an a that fit and [a] accept
    rng = np.random.default_rng(14)
    X = rng.normal(size=(300, 3))
    y = X @ [1.0, 2.0, 3.0] + rng.normal(size=300)
    a = 2.72e-11
    with pytest.warns(IllConditionedWarning):
        fastrank.RankRLS(alpha=a, solver="dual").fit(X, y)
    with pytest.warns(IllConditionedWarning):
        path = fastrank.rankrls_path(X, y, [a, 1.0, 0.5], estimator=fastrank.RankRLS(solver="dual"))
    assert np.all(np.isfinite(path.coef_))
    for k, alpha in [(1, 1.0), (2, 0.5)]:  # the well-conditioned alphas: the normal equations (X^T L X + alpha I)
        L = 300 * np.eye(300) - np.ones((300, 300))
        want = np.linalg.solve(X.T @ L @ X + alpha * np.eye(3), X.T @ L @ y)
        np.testing.assert_allclose(path.fitted_estimator(k).coef_, want, rtol=1e-9)


@pytest.mark.parametrize("question", ["lgo", "lpo", "all_pairs", "kfold", "holdout", "RankRLSCV"])
def test_feature_route_checks_the_system_as_fit_does(question):
    # raw LETOR features (scales 1e-2..1e7): fit refused alpha=1 (X^T L X + alpha I singular to working precision)
    # while leave-group-out answered without a word, 1.1e-4 off a 60-digit retraining; hold-out sets and k folds
    # answered with SciPy's LinAlgWarning, RankRLSCV(cv=3) raised numpy's LinAlgError with SciPy's text
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 5))
    y = X @ [1.0, 1.0, 1.0, 0.0, 0.0] + rng.normal(size=200)
    g = np.repeat(np.arange(20), 10)
    ask = {"lgo": lambda est, X: ms.leave_group_out(est, X, y, g),
           "lpo": lambda est, X: ms.leave_pair_out(est, X, y, pairs=[[0, 1], [10, 12]], groups=g),
           "all_pairs": lambda est, X: ms.leave_pair_out(est, X, y, groups=g),
           "kfold": lambda est, X: ms.kfold_predictions(est, X, y, 3, groups=g),
           "holdout": lambda est, X: ms.holdout_predictions(est, X, y, [np.arange(5), np.arange(30, 50)], groups=g),
           "RankRLSCV": lambda est, X: fastrank.RankRLSCV(alphas=[est.alpha], cv=3).fit(X, y, g)}[question]
    singular = X * [1e10, 1, 1, 1, 1]
    with pytest.raises(LinAlgError, match="singular to working precision for alpha=1"):
        fastrank.RankRLS(alpha=1.0).fit(singular, y, g)
    with pytest.raises(LinAlgError, match="singular to working precision for alpha=1 "):
        ask(fastrank.RankRLS(alpha=1.0), singular)
    poor = X * [1e7, 1, 1, 1, 1]
    with pytest.warns(IllConditionedWarning):
        fastrank.RankRLS(alpha=1e3).fit(poor, y, g)
    with pytest.warns(IllConditionedWarning, match="ill-conditioned"):
        ask(fastrank.RankRLS(alpha=1e3), poor)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # well-conditioned: silent
        ask(fastrank.RankRLS(alpha=1e8), poor)


def test_holdout_set_whose_retrained_system_is_singular_is_refused_as_fit_refuses_it():
    # the second column lives in group 0 only: without that group the retrained system is alpha against 1e18
    rng = np.random.default_rng(1)
    g = np.repeat(np.arange(4), 10)
    X = np.column_stack([rng.normal(size=40), np.where(g == 0, rng.normal(size=40), 0.0)]) * 1e9
    y = rng.normal(size=40)
    est = fastrank.RankRLS(alpha=1.0, solver="primal")
    est.fit(X, y, g)  # the full-data system is well-conditioned
    with pytest.raises(LinAlgError, match="singular to working precision"):
        fastrank.RankRLS(alpha=1.0, solver="primal").fit(X[g != 0], y[g != 0], g[g != 0])
    with pytest.raises(LinAlgError, match=r"^the linear RankRLS system of hold-out set 1 \(the training data without "
                                          r"it\) is singular to working precision for alpha=1 \(reciprocal"):
        ms.holdout_predictions(est, X, y, [np.arange(10, 20), np.arange(10)], groups=g)
