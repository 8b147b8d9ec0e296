"""Slow, obvious numpy implementations written straight from the papers' definitions.

Nothing here is clever: pair lists are built explicitly, Laplacians from incidence matrices,
and systems solved with numpy.linalg.solve.  The fast paths are tested against these."""

import itertools

import numpy as np


def scoring_pairs(y, groups=None, weighting="unweighted", exclude_ties=False):
    """Edges (i, j, w, z) of the scoring setting: every pair i < j (inside a group), target
    z = y_i - y_j (cost 21), weight w with w^2 = c_q of the weighting.  With ``exclude_ties`` the
    tied pairs are dropped, and "per_query" divides by the query's remaining edges (004, end of
    Sect. 2.4: each edge weighs the inverse of its query's number of edges)."""
    y = np.asarray(y, dtype=float)
    m = y.shape[0]
    g = np.zeros(m) if groups is None else np.asarray(groups)
    pairs = [(i, j) for i, j in itertools.combinations(range(m), 2)
             if g[i] == g[j] and not (exclude_ties and np.all(y[i] == y[j]))]
    n_edges = {}
    for i, _ in pairs:
        n_edges[g[i]] = n_edges.get(g[i], 0) + 1
    edges = []
    for i, j in pairs:
        n_q = np.sum(g == g[i])
        # pair weight c: 1; 1/n_q; 1/(edges of the query); 1/(pairs of each row in the query)
        c = {"unweighted": 1.0, "normalized": 1.0 / n_q, "per_query": 1.0 / n_edges[g[i]],
             "per_object": 1.0 / (n_q - 1)}[weighting]
        w = np.sqrt(c)
        edges.append((i, j, w, y[i] - y[j]))
    return edges


def incidence(edges, m):
    """M (m x l) of eq. 12 and N (l x v) of eq. 13 from (head, tail, weight, target) edges."""
    l = len(edges)
    M = np.zeros((m, l))
    N = np.zeros((l, np.atleast_1d(edges[0][3]).size))
    for e, (h, t, w, z) in enumerate(edges):
        M[h, e] += w
        M[t, e] -= w
        N[e] = w * np.atleast_1d(z)
    return M, N


def rankrls_dual(K, edges, alpha):
    """Eq. 17: A = (M M^T K + alpha I)^-1 M N."""
    m = K.shape[0]
    M, N = incidence(edges, m)
    return np.linalg.solve(M @ M.T @ K + alpha * np.eye(m), M @ N)


def rankrls_primal(X, edges, alpha):
    """Eq. 28: W = (X^T M M^T X + alpha I)^-1 X^T M N."""
    M, N = incidence(edges, X.shape[0])
    H = X.T
    return np.linalg.solve(H @ M @ M.T @ H.T + alpha * np.eye(X.shape[1]), H @ M @ N)


def pairwise_objective(f, edges, alpha, reg):
    """The pinned objective sum w^2 (z - (f_i - f_j))^2 + alpha * reg."""
    return sum(w * w * (z - (f[i] - f[j])) ** 2 for i, j, w, z in edges) + alpha * reg


def scoring_edges_multi(Y, groups=None, weighting="unweighted"):
    """Scoring edges with vector targets (multi-output)."""
    Y = np.asarray(Y, dtype=float)
    base = scoring_pairs(Y[:, 0], groups, weighting)
    return [(i, j, w, Y[i] - Y[j]) for i, j, w, _ in base]


def mprank_cortes_dual(K, y, C, K_test):
    """Cortes, Mohri, Rastogi eq. 13-14: h(x') = C' K' (I + Kbar)^-1 (Y - Ybar), C' = 2C/m,
    Kbar = C' * (doubly centred K), K' = test kernel rows centred over the training inputs."""
    m = K.shape[0]
    Cp = 2.0 * C / m
    J = np.eye(m) - np.ones((m, m)) / m
    Kbar = Cp * (J @ K @ J)
    Kprime = K_test - K_test.mean(axis=1, keepdims=True)
    return Cp * Kprime @ np.linalg.solve(np.eye(m) + Kbar, y - y.mean())


def no_preference_case(case, y):
    """(y, groups, message) of an input with no preference to learn from: "constant" targets,
    targets "tied_in_groups", or "single_rows" groups (24 rows)."""
    groups = np.repeat(np.arange(6), 4)
    if case == "constant":
        y, groups = np.full(24, 2.5), None
    elif case == "tied_in_groups":
        y = groups * 1.5
    else:
        groups = np.arange(24)
    return y, groups, "every group has a single row" if case == "single_rows" else "no preferences to learn from"
