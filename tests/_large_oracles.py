"""Slow, obvious numpy oracles for the large-scale solvers (explicit pair lists, normal equations)."""

import numpy as np


def group_pairs(groups, normalized=False):
    """All pairs (i, j), i < j, inside each group with weight c_q (1 or 1/n_q)."""
    groups = np.asarray(groups)
    out = []
    for q in np.unique(groups):
        idx = np.flatnonzero(groups == q)
        c = 1.0 / idx.size if normalized else 1.0
        for a in range(idx.size):
            for b in range(a + 1, idx.size):
                out.append((idx[a], idx[b], c))
    return out


def primal_pairs_solution(X, Y, pairs, alpha):
    """argmin_w sum_pairs c ((y_i - y_j) - (x_i - x_j) w)^2 + alpha |w|^2 by normal equations."""
    X = np.asarray(X, dtype=float)
    Y = np.asarray(Y, dtype=float).reshape(X.shape[0], -1)
    D = np.array([np.sqrt(c) * (X[i] - X[j]) for i, j, c in pairs])
    Z = np.array([np.sqrt(c) * (Y[i] - Y[j]) for i, j, c in pairs])
    return np.linalg.solve(D.T @ D + alpha * np.eye(X.shape[1]), D.T @ Z)


def graph_edges(Y, n_edges, rng, cost):
    """Random preference edges head > tail (by y) with the three costs (20), (21), (22)."""
    m = Y.shape[0]
    heads, tails = [], []
    while len(heads) < n_edges:
        i, j = rng.integers(0, m, size=2)
        if abs(Y[i] - Y[j]) < 0.05:  # no ties; keeps the normalized cost's 1/g weights moderate
            continue
        h, t = (i, j) if Y[i] > Y[j] else (j, i)
        heads.append(h)
        tails.append(t)
    heads, tails = np.array(heads), np.array(tails)
    g = Y[heads] - Y[tails]
    if cost == "binary":        # (20)
        z, w = np.ones_like(g), np.ones_like(g)
    elif cost == "magnitude":   # (21)
        z, w = g, np.ones_like(g)
    else:                       # (22) normalized
        z, w = g, 1.0 / g
    return heads, tails, w, z


def primal_graph_solution(X, heads, tails, w, z, alpha):
    """argmin_w sum_e w_e^2 (z_e - (x_h - x_t) w)^2 + alpha |w|^2."""
    X = np.asarray(X, dtype=float)
    D = w[:, None] * (X[heads] - X[tails])
    Z = (w[:, None] * np.asarray(z).reshape(len(heads), -1))
    return np.linalg.solve(D.T @ D + alpha * np.eye(X.shape[1]), D.T @ Z)


def laplacian_groups(groups, normalized=False):
    groups = np.asarray(groups)
    m = groups.size
    L = np.zeros((m, m))
    for i, j, c in group_pairs(groups, normalized):
        L[i, i] += c
        L[j, j] += c
        L[i, j] -= c
        L[j, i] -= c
    return L


def laplacian_graph(m, heads, tails, w):
    L = np.zeros((m, m))
    for h, t, we in zip(heads, tails, w):
        L[h, h] += we**2
        L[t, t] += we**2
        L[h, t] -= we**2
        L[t, h] -= we**2
    return L


def pairwise_error(y, p, groups, w=None):
    """Mean over queries of the fraction of discordant pairs (score ties count 1/2); with row
    weights w a pair weighs w_a w_b."""
    w = np.ones(len(y)) if w is None else w
    errs = []
    for q in np.unique(groups):
        idx = np.flatnonzero(groups == q)
        bad = tot = 0.0
        for a in idx:
            for b in idx:
                if y[a] > y[b]:
                    tot += w[a] * w[b]
                    bad += w[a] * w[b] * (1.0 if p[a] < p[b] else (0.5 if p[a] == p[b] else 0.0))
        if tot:
            errs.append(bad / tot)
    return float(np.mean(errs))
