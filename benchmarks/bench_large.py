"""asv benchmarks for the large-scale RankRLS solvers: conjugate gradient on sparse
data and sparse (subset-of-regressors) RankRLS.  Self-contained (seeded data generators here),
so ratios_large.py can import it directly."""

import functools

import numpy as np
import scipy.sparse as sp


@functools.lru_cache(maxsize=None)
def zipf_csr(m=50_000, n=20_000, nnz_per_row=30, seed=0, exponent=1.0):
    """CSR (m, n), ~nnz_per_row distinct non-zeros per row, column popularity ~ 1/rank^exponent;
    y from a sparse linear model; 1,000 query groups."""
    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, n + 1) ** exponent
    p /= p.sum()
    perm = rng.permutation(n)
    draws = int(nnz_per_row * 1.2)  # popular columns repeat inside a row; merged duplicates
    rows = np.repeat(np.arange(m), draws)
    cols = perm[rng.choice(n, size=m * draws, p=p)]
    X = sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(m, n))
    X.sum_duplicates()
    X.data = rng.random(X.nnz)  # fresh values (not counts)
    y = X @ rng.normal(size=n) + 0.1 * rng.normal(size=m)
    groups = rng.integers(0, 1000, size=m)
    return X, y, groups


@functools.lru_cache(maxsize=None)
def gaussian_data(m=20_000, d=50, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, d))
    y = np.sin(X[:, 0]) + X[:, 1] ** 2 + 0.1 * rng.normal(size=m)
    return X, y


def scipy_products(X, repeats):
    """The yardstick: repeats x (X @ v + X.T @ u) with SciPy."""
    v = np.ones(X.shape[1])
    u = np.ones(X.shape[0])
    XT = X.T
    for _ in range(repeats):
        X @ v
        XT @ u


def numpy_basis_yardstick(X, basis, gamma):
    """m x |R| Gaussian kernel block + one |R| x |R| G^T G product + one |R| x |R| eigh."""
    XR = X[basis]
    sq = np.einsum("ij,ij->i", X, X)
    G = sq[:, None] + sq[basis][None, :] - 2.0 * (X @ XR.T)
    np.maximum(G, 0.0, out=G)
    np.exp(-gamma * G, out=G)
    H = G.T @ G
    np.linalg.eigh(H)


class CGSparse:
    """200 fixed CG iterations on m=50,000 x n=20,000 CSR (~30 nnz/row)."""

    params = ["object", "query"]
    param_names = ["setting"]
    timeout = 600

    def setup(self, setting):
        from fastrank._validation import group_index

        self.X, self.y, groups = zipf_csr()
        self.gi = group_index(groups if setting == "query" else None, self.X.shape[0])

    def _fit(self):
        from fastrank._solvers import fit_cg

        fit_cg(self.X, self.y, group_index=self.gi, alpha=1.0, tol=0.0, max_iter=200, n_jobs=-1, warn=False)

    def time_fastrank_cg_200(self, setting):
        self._fit()

    def time_scipy_200_products(self, setting):
        scipy_products(self.X, 200)

    def peakmem_fastrank_cg_200(self, setting):
        self._fit()


class SparseRankRLS:
    """Gaussian subset-of-regressors RankRLS, m=20,000, |R|=500."""

    timeout = 600

    def setup(self):
        from fastrank._solvers import select_basis

        self.X, self.y = gaussian_data()
        self.basis = select_basis(self.X.shape[0], 500, random_state=0)

    def time_fastrank_sparse_rankrls(self):
        import fastrank

        fastrank.RankRLS(1.0, kernel="rbf", gamma=1.0 / 50, basis_vectors=self.basis, n_jobs=-1).fit(self.X, self.y)

    def time_numpy_kernel_block_gram_eigh(self):
        numpy_basis_yardstick(self.X, self.basis, 1.0 / 50)
