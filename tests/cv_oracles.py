"""Slow, obvious numpy oracles for the cross-validation shortcuts: drop the held-out inputs,
build the retained pairs explicitly, solve the normal equations, predict."""

import numpy as np


def rbf(X, Z, gamma):
    d = ((X[:, None, :] - Z[None, :, :]) ** 2).sum(-1)
    return np.exp(-gamma * d)


def pair_weights(groups, weighting):
    """Per-row pair weight c_q of the FULL data (normalized: 1/n_q; never renormalised)."""
    m = len(groups)
    if groups is None:
        return None
    groups = np.asarray(groups)
    _, codes, counts = np.unique(groups, return_inverse=True, return_counts=True)
    n = counts[codes].astype(float)
    if weighting == "normalized":
        return 1.0 / n
    if weighting == "per_query":  # a query's pairs weigh 1 in total
        return np.where(n >= 2, 2.0 / np.maximum(n * (n - 1), 1.0), 1.0)
    if weighting == "per_object":  # a row's n - 1 pairs weigh 1 in total
        return np.where(n >= 2, 1.0 / np.maximum(n - 1, 1.0), 1.0)
    return np.ones(m)


def laplacian(rows, groups, cw):
    """Laplacian of all pairs among `rows` (inside groups), explicit pair loop."""
    n = len(rows)
    L = np.zeros((n, n))
    for a in range(n):
        for b in range(a + 1, n):
            i, j = rows[a], rows[b]
            if groups is not None and groups[i] != groups[j]:
                continue
            w = 1.0 if cw is None else cw[i]
            L[a, a] += w
            L[b, b] += w
            L[a, b] -= w
            L[b, a] -= w
    return L


def retrain_predict(K, Y, alpha, held, groups=None, weighting="unweighted"):
    """Dual: train on the rows not in `held` (all pairs among them), predict the held rows.

    Normal equations (L K + alpha I) A = L Y (eq. 17) solved in the equivalent symmetric form
    (S K S + alpha I) U = S Y, A = S U with S = L^{1/2} (better conditioned for small alpha)."""
    m = K.shape[0]
    held = np.asarray(held)
    T = np.setdiff1d(np.arange(m), held)
    cw = pair_weights(groups, weighting) if groups is not None else None
    L = laplacian(T, None if groups is None else np.asarray(groups), cw)
    lam, Q = np.linalg.eigh(L)
    S = (Q * np.sqrt(np.maximum(lam, 0.0))) @ Q.T
    A = S @ K[np.ix_(T, T)] @ S
    U = np.linalg.solve(0.5 * (A + A.T) + alpha * np.eye(T.size), S @ Y[T])
    return K[np.ix_(held, T)] @ (S @ U)


def retrain_predict_primal(X, Y, alpha, held, groups=None, weighting="unweighted"):
    m = X.shape[0]
    held = np.asarray(held)
    T = np.setdiff1d(np.arange(m), held)
    cw = pair_weights(groups, weighting) if groups is not None else None
    L = laplacian(T, None if groups is None else np.asarray(groups), cw)
    XT = X[T]
    W = np.linalg.solve(XT.T @ L @ XT + alpha * np.eye(X.shape[1]), XT.T @ L @ Y[T])
    return X[held] @ W
