"""Real sparse data (RLScore's legacy ranking set: 100 documents, 195,098 sparse features, query
groups): conjugate gradient vs the dense dual solution, and sparse RankRLS with the shipped basis
vectors vs eq. 41."""

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from fastrank._kernels import resolve_kernel
from fastrank._kernels import predict_basis
from fastrank._solvers import fit_basis, fit_cg
from fastrank._validation import group_index

from _large_oracles import laplacian_groups, pairwise_error


def _data_dir():
    here = Path(__file__).resolve().parents[1].parent / "shared" / "data"
    return here if here.exists() else Path("/work/shared/data")


@pytest.fixture(scope="module")
def rank_data():
    from sklearn.datasets import load_svmlight_file

    d = _data_dir() / "rlscore_legacy"
    if not (d / "rank_train.light").exists():
        pytest.skip("shared data not available")
    Xtr, ytr, qtr = load_svmlight_file(str(d / "rank_train.light"), n_features=195098, query_id=True)
    Xte, yte, qte = load_svmlight_file(str(d / "rank_test.light"), n_features=195098, query_id=True)
    basis = np.loadtxt(d / "bvectors.indices", dtype=np.int64).reshape(-1)
    return Xtr.tocsr(), ytr, qtr, Xte.tocsr(), yte, qte, basis


@pytest.mark.parametrize("normalized", [False, True])
def test_cg_matches_dense_dual_on_real_sparse_data(rank_data, normalized):
    Xtr, ytr, qtr, Xte, yte, qte, _ = rank_data
    alpha = 1.0
    gi = group_index(qtr, Xtr.shape[0])  # qids used as given (not numerically sorted)
    res = fit_cg(Xtr, ytr, group_index=gi, normalized=normalized, alpha=alpha, tol=1e-12, preconditioner="jacobi",
                 n_jobs=2)
    assert res.converged.all()
    # dense dual (linear kernel): a = (L K + alpha I)^-1 L y, predictions K(Z, X) a
    K = (Xtr @ Xtr.T).toarray()
    L = laplacian_groups(qtr, normalized)
    a = np.linalg.solve(L @ K + alpha * np.eye(K.shape[0]), L @ ytr)
    p_dual = (Xte @ Xtr.T) @ a
    p_cg = (Xte @ res.coef)[:, 0]
    assert np.abs(p_cg - p_dual).max() / np.abs(p_dual).max() < 1e-6
    err = pairwise_error(yte, p_cg, qte)
    print(f"rank_test pairwise error (normalized={normalized}): {err:.4f}")
    assert err < 0.45  # far better than random ordering (0.5)


def test_sparse_rls_with_shipped_basis_vectors(rank_data):
    Xtr, ytr, qtr, Xte, yte, qte, basis = rank_data
    gi = group_index(qtr, Xtr.shape[0])
    spec = resolve_kernel("linear", None, 3, 1, Xtr.shape[1])
    C = fit_basis(Xtr, ytr, group_index=gi, alphas=[0.1, 1.0], kernel_spec=spec, basis_indices=basis)
    K = (Xtr @ Xtr.T).toarray()
    L = laplacian_groups(qtr)
    KR = K[basis]
    for a, Ca in zip([0.1, 1.0], C):
        A = np.linalg.solve(KR @ L @ KR.T + a * K[np.ix_(basis, basis)], KR @ L @ ytr)
        assert np.abs(KR.T @ Ca[:, 0] - KR.T @ A).max() / np.abs(KR.T @ A).max() < 1e-8
    p = predict_basis(Xte, Xtr[basis], C[1], spec)
    assert sp.issparse(Xte) and p.shape == (Xte.shape[0], 1)
    err = pairwise_error(yte, p[:, 0], qte)
    print(f"rank_test pairwise error, sparse RankRLS |R|={basis.size}: {err:.4f}")
    assert err < 0.5
