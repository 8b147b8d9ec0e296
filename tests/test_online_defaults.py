"""Default on-line learners on real, standardised LETOR features (the bundled LightGBM sample, 300
features): the defaults converge and beat trivial predictors."""

import numpy as np
import pytest
from sklearn.preprocessing import StandardScaler

import fastrank
from fastrank.exceptions import ConvergenceWarning
from fastrank.datasets import load_lambdarank
from fastrank.metrics import pairwise_disagreement


@pytest.fixture(scope="module")
def standardised():
    d = load_lambdarank()
    sc = StandardScaler().fit(d.X_train)
    return sc.transform(d.X_train), d.y_train.astype(int), sc.transform(d.X_test), d.y_test.astype(int), d.groups_test


def test_widrow_hoff_default_converges_where_a_fixed_step_diverges(standardised):
    X, y, Xt, yt, qt = standardised
    with pytest.warns(ConvergenceWarning, match="its updates overshoot"), \
            pytest.raises(ValueError, match="Widrow-Hoff diverged"):
        fastrank.WidrowHoff(eta=0.1).fit(X, y)  # the old default: 0.1 > 2 / ||x||^2 ~ 2 / 300
    est = fastrank.WidrowHoff().fit(X, y)
    assert np.all(np.isfinite(est.coef_))
    median = np.abs(np.median(y) - yt).mean()  # predicting the training median: 0.75
    assert np.abs(est.predict(Xt) - yt).mean() < median
    assert pairwise_disagreement(yt, est.decision_function(Xt), qt) < 0.45


def test_widrow_hoff_auto_step_is_normalised_lms_and_independent_of_chunking(standardised):
    X, y = standardised[0][:400], standardised[1][:400]
    est = fastrank.WidrowHoff().fit(X, y)
    # oracle: the normalised LMS recursion written out, w += 0.2 (r - s) x / (||x||^2 + 1)
    classes = np.unique(y)
    w, b = np.zeros(X.shape[1]), 0.0
    for x, r in zip(X, np.searchsorted(classes, y) + 1.0):
        e = 0.2 * (r - (w @ x + b)) / (x @ x + 1.0)
        w, b = w + e * x, b + e
    np.testing.assert_allclose(est.coef_, w, rtol=1e-9, atol=1e-12)
    assert est.intercept_ == pytest.approx(b, rel=1e-9)
    chunked = fastrank.WidrowHoff()
    for lo in range(0, 400, 150):
        chunked.partial_fit(X[lo:lo + 150], y[lo:lo + 150], classes=classes)
    np.testing.assert_allclose(chunked.coef_, est.coef_, rtol=1e-12, atol=1e-15)
