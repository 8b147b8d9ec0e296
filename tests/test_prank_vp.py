"""PRank-VP (Harrington 2003, Sect. 3.1 / 4.1: PRank with the voted perceptron) against a
line-by-line transcription of Algorithm 1 plus the voted rule, on random streams."""

import pickle

import numpy as np
import pytest
from sklearn.base import clone

from fastrank import PRank, PRankVP


def transcription(X, y, k, kernel=None):
    """Algorithm 1 (PRank) run over the stream; every update starts a new hypothesis whose
    survival time v_i is the number of correct predictions until the next update."""
    T, d = X.shape
    w = np.zeros(d)
    alpha, xs = [], []  # kernel form: f(x) = sum_t alpha_t K(x_t, x)
    c = np.zeros(k - 1)
    hyps = [(w.copy(), c.copy(), 0)]
    votes = [0]

    def score(x):
        if kernel is None:
            return w @ x
        return sum(a * kernel(xt, x) for a, xt in zip(alpha, xs))

    for t in range(T):
        x, yt = X[t], y[t]
        s = score(x)
        # 1: predict yhat = min{r : w.x - c(r) < 0}, c(k) = +inf
        yhat = k
        for r in range(1, k):
            if s - c[r - 1] < 0:
                yhat = r
                break
        if yhat != yt:  # 2
            lab = np.array([-1.0 if yt <= r else 1.0 for r in range(1, k)])  # 3-5
            a = np.array([lab[r] if (s - c[r]) * lab[r] <= 0 else 0.0 for r in range(k - 1)])  # 6-9
            if kernel is None:
                w = w + a.sum() * x  # 10
            else:
                alpha.append(a.sum())
                xs.append(x.copy())
            c = c - a  # 11
            hyps.append((w.copy(), c.copy(), len(alpha)))
            votes.append(0)
        else:
            votes[-1] += 1

    def predict(Z):
        out_H = []
        for z in Z:
            ranks = []
            for (wi, ci, ni) in hyps:
                s = wi @ z if kernel is None else sum(a * kernel(xt, z) for a, xt in zip(alpha[:ni], xs[:ni]))
                r = k
                for q in range(1, k):
                    if s - ci[q - 1] < 0:
                        r = q
                        break
                ranks.append(r)
            v = np.array(votes, float)
            H = (np.dot(v, ranks) / v.sum()) if v.sum() > 0 else np.mean(ranks)
            out_H.append(H)
        return np.array(out_H)

    return hyps, np.array(votes), predict


def _stream(seed, T=300, d=5, k=4):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(T, d))
    s = X @ rng.normal(size=d) + 0.5 * rng.normal(size=T)
    y = np.digitize(s, np.quantile(s, np.linspace(0, 1, k + 1)[1:-1])) + 1
    return X, y


@pytest.mark.parametrize("seed", range(4))
def test_linear_equals_transcription(seed):
    X, y = _stream(seed)
    k = 4
    hyps, votes, predict = transcription(X[:250], y[:250], k)
    est = PRankVP().fit(X[:250], y[:250])
    np.testing.assert_array_equal(est.vote_counts_, votes)
    np.testing.assert_allclose(est.vote_coef_, np.array([h[0] for h in hyps]), rtol=0, atol=1e-12)
    np.testing.assert_allclose(est.vote_thresholds_, np.array([h[1] for h in hyps]), rtol=0, atol=1e-12)
    H = predict(X[250:])
    np.testing.assert_allclose(est.decision_function(X[250:]), H, rtol=1e-12)
    np.testing.assert_array_equal(est.predict(X[250:]), np.floor(H + 0.5).astype(int))
    # training is plain PRank: same final rule, same on-line losses
    pr = PRank().fit(X[:250], y[:250])
    np.testing.assert_array_equal(est.coef_, pr.coef_)
    np.testing.assert_array_equal(est.rank_loss_curve(), pr.rank_loss_curve())
    np.testing.assert_array_equal(est.vote_coef_[-1], pr.coef_)


def test_kernel_equals_transcription():
    X, y = _stream(11, T=160, d=2, k=3)
    k = 3

    def poly(a, b):
        return (0.5 * (a @ b) + 1.0) ** 2

    hyps, votes, predict = transcription(X[:120], y[:120], k, kernel=poly)
    est = PRankVP(kernel="poly", gamma=0.5, degree=2, coef0=1.0).fit(X[:120], y[:120])
    np.testing.assert_array_equal(est.vote_counts_, votes)
    np.testing.assert_allclose(est.vote_thresholds_, np.array([h[1] for h in hyps]), atol=1e-12)
    np.testing.assert_allclose(est.decision_function(X[120:]), predict(X[120:]), rtol=1e-10)
    # precomputed kernel gives the same model
    K = np.array([[poly(a, b) for b in X[:120]] for a in X])
    pre = PRankVP(kernel="precomputed").fit(K[:120, :120], y[:120])
    np.testing.assert_allclose(pre.decision_function(K[120:, :120]), predict(X[120:]), rtol=1e-10)


def test_partial_fit_chunks_epochs_pickle_clone():
    X, y = _stream(5, T=400)
    one = PRankVP().partial_fit(X, y)
    parts = PRankVP()
    for lo in range(0, 400, 37):
        parts.partial_fit(X[lo:lo + 37], y[lo:lo + 37], classes=[1, 2, 3, 4])
    np.testing.assert_array_equal(parts.vote_counts_, one.vote_counts_)
    np.testing.assert_array_equal(parts.vote_coef_, one.vote_coef_)
    np.testing.assert_array_equal(parts.predict(X), one.predict(X))
    two = PRankVP(n_epochs=2).fit(X, y)
    hyps, votes, predict = transcription(np.vstack([X, X]), np.r_[y, y], 4)
    np.testing.assert_array_equal(two.vote_counts_, votes)
    np.testing.assert_allclose(two.decision_function(X[:50]), predict(X[:50]), rtol=1e-12)
    again = pickle.loads(pickle.dumps(one))
    np.testing.assert_array_equal(again.predict(X), one.predict(X))
    assert clone(one).get_params() == one.get_params()
    assert "budget" not in PRankVP().get_params()


def test_check_estimator():
    from sklearn.utils.estimator_checks import check_estimator

    from test_online_sklearn import ORDINAL_EXPECTED_FAILURES

    check_estimator(PRankVP(), expected_failed_checks=ORDINAL_EXPECTED_FAILURES, on_skip=None)
