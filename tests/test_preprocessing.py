"""fastrank.preprocessing against explicit per-query loops, in pipelines, and scikit-learn's checks."""

import re

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp
import sklearn
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

import fastrank.preprocessing
from fastrank import RankRLS
from fastrank.preprocessing import NORMALIZERS, Log1pScaler, QueryNormalizer, make_normalizer


def _raw(seed=0, m=60, n=7):
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.poisson(3, m), rng.lognormal(6, 2, m), rng.normal(20, 5, m), rng.uniform(0, 1e5, m),
                         np.full(m, 0.1), rng.integers(0, 2, m), rng.exponential(1e-3, m)])[:, :n]
    groups = rng.integers(0, 9, m) * 7 + 100  # interleaved, unsorted ids
    return X.astype(float), groups


def _loop_oracle(X, groups, method):
    out = np.empty_like(X)
    for q in np.unique(groups):
        rows = np.flatnonzero(groups == q)
        for j in range(X.shape[1]):
            col = X[rows, j]
            if method == "minmax":
                lo, hi = col.min(), col.max()
                out[rows, j] = (col - lo) / (hi - lo) if hi > lo else 0.0
            else:
                out[rows, j] = (col - col.mean()) / col.std() if col.max() > col.min() else 0.0
    return out


@pytest.mark.parametrize("method", ["minmax", "zscore"])
def test_query_normalizer_matches_per_query_loop(method):
    X, groups = _raw()
    got = QueryNormalizer(method).fit(X, groups=groups).transform(X, groups=groups)
    np.testing.assert_allclose(got, _loop_oracle(X, groups, method), rtol=1e-12, atol=1e-12)
    # the constant feature is 0 everywhere, min-max stays inside [0, 1]
    assert np.all(got[:, 4] == 0)
    if method == "minmax":
        assert got.min() >= 0 and got.max() <= 1


def test_query_normalizer_without_groups_is_one_query_and_sparse_equals_dense():
    X, groups = _raw(1)
    qn = QueryNormalizer("zscore").fit(X)
    np.testing.assert_allclose(qn.transform(X), _loop_oracle(X, np.zeros(len(X)), "zscore"), rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(qn.transform(sp.csr_matrix(X), groups=groups), qn.transform(X, groups=groups))


def test_query_normalizer_errors_name_the_argument():
    X, groups = _raw()
    with pytest.raises(ValueError, match="method must be one of"):
        QueryNormalizer("l2").fit(X)
    with pytest.raises(ValueError, match="groups has 3 entries but X has 60 rows"):
        QueryNormalizer().fit(X).transform(X, groups=[1, 2, 3])


@pytest.mark.parametrize("X, shown", [(5, "5"), (np.float64(5.0), "np.float64(5.0)"), ("ab", "'ab'"), (None, "None")])
@pytest.mark.parametrize("call", [lambda X: QueryNormalizer().fit(X, groups=[1]),
                                  lambda X: QueryNormalizer("zscore").fit_transform(X, groups=[1]),
                                  lambda X: QueryNormalizer().fit(np.ones((2, 2))).transform(X, groups=[1]),
                                  lambda X: Log1pScaler().fit(X), lambda X: Log1pScaler().fit_transform(X),
                                  lambda X: Log1pScaler().fit(np.ones((2, 2))).transform(X),
                                  lambda X: make_normalizer("zscore").fit(X)])
def test_a_scalar_X_is_refused_as_scikit_learn_refuses_it(call, X, shown):
    # with groups, QueryNormalizer.fit counted X's rows with len(): Python's "object of type 'int' has no len()"
    # (np.float64: "tuple index out of range"); a str reached numpy's "could not convert string to float"
    message = f"Expected 2D array, got scalar array instead: X={shown}; pass the features as an array of shape " \
              "(n_samples, n_features)"
    with pytest.raises(ValueError, match="^" + re.escape(message) + "$"):
        call(X)


@pytest.mark.parametrize("column, error, shown", [
    (pd.Categorical(["x", "y"] * 5), ValueError, "'x' (str) at row 0, column 1 is not a number"),
    (pd.array(["x", "y"] * 5, dtype="string"), ValueError, "'x' (str) at row 0, column 1 is not a number"),
    (pd.to_datetime(np.arange(10) * 10**9), TypeError, "Timestamp('19...-01 00:00:00') (Timestamp) at row 0, column 1 "
     "is no number (every argument must be a string or a real number)"),
    (pd.arrays.IntervalArray.from_breaks(np.arange(11)), TypeError, "Interval(0, 1, closed='right') (Interval) at "
     "row 0, column 1 is no number (every argument must be a string or a real number)")])
def test_a_non_numeric_column_is_refused_as_the_learners_refuse_it(column, error, shown):
    # numpy's "could not convert string to float", its DTypePromotionError or Python's float() text came through
    X = pd.DataFrame({"bm25": np.arange(10.0), "extra": column})
    good = pd.DataFrame({"bm25": np.arange(10.0), "extra": np.ones(10)})
    groups = np.repeat([0, 1], 5)
    message = "^" + re.escape(f"X must be numeric: {shown}") + "$"
    with pytest.raises(error, match=message):
        RankRLS().fit(X, np.arange(10.0), groups)
    for transformer in (QueryNormalizer(), Log1pScaler()):
        kw = {"groups": groups} if isinstance(transformer, QueryNormalizer) else {}
        for call in (transformer.fit, transformer.fit_transform, transformer.fit(good, **kw).transform):
            with pytest.raises(error, match=message):
                call(X, **kw)
    with pytest.raises(ValueError, match=r"^X must be numeric, got dtype datetime64\[ns\]$"):
        Log1pScaler().fit(pd.DataFrame({"t": pd.to_datetime(np.arange(10) * 10**9)}))  # was read as nanoseconds


def test_array_valued_options_are_refused_by_name():
    # `in` compared the array elementwise: numpy's "truth value of an array ... is ambiguous"
    with pytest.raises(ValueError, match=r"^method must be one of \('minmax', 'zscore'\), got array"):
        QueryNormalizer(np.array(["minmax", "zscore"])).fit(np.ones((2, 2)))
    with pytest.raises(ValueError, match="^normalization must be one of none, zscore, .* got array"):
        make_normalizer(np.array(["zscore", "none"]))


def test_log1p_scaler_matches_formula():
    X, _ = _raw(2)
    X[:3, 2] = -X[:3, 2]  # negative entries: the signed log keeps the order
    L = np.sign(X) * np.log1p(np.abs(X))
    mean, sd = L.mean(axis=0), L.std(axis=0)
    sd = np.where(sd > 1e-10, sd, 1.0)  # a constant column: rounding leaves sd ~ 1e-16, not 0
    expected = (L - mean) / sd
    Xt = _raw(3)[0]
    s = Log1pScaler().fit(X)
    np.testing.assert_allclose(s.transform(X), expected, rtol=1e-12, atol=1e-12)
    Lt = np.sign(Xt) * np.log1p(np.abs(Xt))
    np.testing.assert_allclose(s.transform(Xt), (Lt - mean) / sd, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(Log1pScaler(zscore=False).fit_transform(X), L, rtol=1e-15)


def test_make_normalizer_names():
    assert make_normalizer("none") is None
    for name in NORMALIZERS[1:]:
        assert hasattr(make_normalizer(name), "transform")
    with pytest.raises(ValueError, match="normalization must be one of"):
        make_normalizer("l2")


def test_pipeline_routes_groups_to_fit_and_transform():
    X, groups = _raw(4)
    y = np.random.default_rng(4).integers(0, 3, len(X)).astype(float)
    Xt, gt = _raw(5)
    manual = RankRLS().fit(_loop_oracle(X, groups, "minmax"), y, groups)
    expected = manual.predict(_loop_oracle(Xt, gt, "minmax"))
    with sklearn.config_context(enable_metadata_routing=True):
        pipe = make_pipeline(QueryNormalizer(), RankRLS().set_fit_request(groups=True))
        pipe.fit(X, y, groups=groups)
        got = pipe.predict(Xt, groups=gt)
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12)
    # without routing: step-prefixed fit parameters, and the test features normalised as the module docstring says
    recipe = re.search(r"Without routing, ``(.+?)``.*?\(``(.+?)``\)", fastrank.preprocessing.__doc__, re.S)
    scope = {"pipe": make_pipeline(QueryNormalizer(), RankRLS()), "QueryNormalizer": QueryNormalizer, "X": X, "y": y,
             "qid": groups, "X_test": Xt, "qid_test": gt}
    eval(recipe[1], scope)
    np.testing.assert_allclose(scope["pipe"][-1].coef_, manual.coef_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(eval(recipe[2], scope), expected, rtol=1e-9, atol=1e-12)


@parametrize_with_checks(
    [QueryNormalizer(), QueryNormalizer("zscore"), Log1pScaler(), Log1pScaler(zscore=False)],
    expected_failed_checks=lambda est: (
        {"check_methods_subset_invariance": "without groups the rows of one transform call are one query: "
                                            "a subset is normalised by its own statistics"}
        if isinstance(est, QueryNormalizer) else {}),
)
def test_sklearn_checks(estimator, check):
    check(estimator)


@pytest.mark.parametrize("scale", [1e-150, 1e-170, 1e-300, 2.0**-1000, 1e300])
def test_log1p_scaler_standardises_features_of_any_scale(scale):
    # below ~1e-154 the variance underflowed to 0 and StandardScaler took the feature for constant: it came back only
    # centred (~1e-170); oracle: the z-score of log1p(x) ~ x computed in units of the scale
    X = np.array([[1.0, 5.0], [3.0, 5.0], [0.0, 5.0], [2.5, 5.0]]) * [scale, 1.0]
    L = np.sign(X) * np.log1p(np.abs(X))
    unit = L[:, 0] / (scale if scale < 1 else 1.0)
    want = (unit - unit.mean()) / unit.std()
    got = Log1pScaler().fit_transform(X)
    np.testing.assert_allclose(got[:, 0], want, rtol=1e-12 if scale < 1 else 1e-9)
    assert np.all(np.abs(got[:, 1]) < 1e-15)  # constant in training: 0, scale_ 1 as StandardScaler's
    assert Log1pScaler().fit(X).scale_[1] == 1.0


def test_log1p_scaler_matches_standard_scaler_bit_for_bit_at_ordinary_scales():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 4)) * [1.0, 100.0, 1e-3, 0.0]
    log = np.sign(X) * np.log1p(np.abs(X))
    ref, got = StandardScaler().fit(log), Log1pScaler().fit(X)
    np.testing.assert_array_equal(got.mean_, ref.mean_)
    np.testing.assert_array_equal(got.scale_, ref.scale_)


def test_log1p_scaler_transforms_with_what_fit_learnt():
    # set_params(zscore=True) after fit(zscore=False) raised a raw AttributeError ('mean_'), and zscore="no" set after
    # fit was read as True; the setting takes effect at the next fit, as scikit-learn's hyper-parameters do
    X = np.random.default_rng(0).uniform(0, 100, size=(10, 3))
    log = np.log1p(X)
    plain = Log1pScaler(zscore=False).fit(X)
    np.testing.assert_array_equal(plain.set_params(zscore=True).transform(X), log)
    scaled = Log1pScaler().fit(X)
    want = StandardScaler().fit_transform(log)
    np.testing.assert_array_equal(scaled.set_params(zscore="no").transform(X), want)
    with pytest.raises(ValueError, match="zscore must be True or False"):
        scaled.fit(X)
    np.testing.assert_array_equal(scaled.set_params(zscore=False).fit(X).transform(X), log)
    assert not hasattr(scaled, "mean_")


def _exact_zscores(col):
    """(x - mean) / population std in exact rationals, rounded once."""
    from fractions import Fraction

    c = [Fraction(float(v)) for v in col]
    mu = sum(c) / len(c)
    var = sum((v - mu) ** 2 for v in c) / len(c)
    return np.array([float(np.sign(float(v - mu))) * float(np.sqrt(float((v - mu) ** 2 / var))) for v in c])


@pytest.mark.parametrize("col", [
    [1.0, 1.0 + np.finfo(float).eps, 1.0 + np.finfo(float).eps],  # one pass: [-1.73, 0, 0]
    1e9 + np.array([0.0, 1e-6, 2e-6, 5e-6, 3e-6, 8e-6, 1e-6]),  # one pass: every z-score off by 0.04
    [-1e-320, -1e-320, 4e-320],  # subnormal: the mean kept few digits (7e-5 off)
    [1e300, 2e300, 4e300],  # the variance overflowed: refused
], ids=["ulps", "offset", "subnormal", "huge"])
def test_query_zscores_against_exact_arithmetic(col):
    col = np.asarray(col, dtype=float)
    X = np.column_stack([col, np.arange(col.size, dtype=float)])
    got = QueryNormalizer("zscore").fit_transform(X, groups=np.zeros(col.size, int))
    np.testing.assert_allclose(got[:, 0], _exact_zscores(col), rtol=0, atol=1e-14)
    np.testing.assert_allclose(got[:, 1], _exact_zscores(X[:, 1]), rtol=0, atol=1e-14)


def test_query_zscores_are_the_same_bits_at_every_power_of_two_scale():
    # columns of ordinary magnitude skip the power-of-two units; both routes, and queries of either kind in one X,
    # give the z-scores of scale 1 to the bit
    rng = np.random.default_rng(5)
    X, g = rng.normal(size=(400, 3)) * [1.0, 3.0, 0.5] + [0.0, 7.0, -1.0], rng.integers(0, 60, 400)
    ref = QueryNormalizer("zscore").fit_transform(X, groups=g)
    for k in (-1000, -540, -420, -399, -1, 1, 399, 420, 515, 1000):
        np.testing.assert_array_equal(QueryNormalizer("zscore").fit_transform(X * 2.0**k, groups=g), ref)
    mixed = np.where((g % 2 == 0)[:, None], X * 2.0**-1000, X)
    np.testing.assert_array_equal(QueryNormalizer("zscore").fit_transform(mixed, groups=g), ref)


def test_zscore_normalizer_at_any_feature_scale():
    # --normalize zscore was StandardScaler: a feature of 1e-170 was left unscaled (its variance underflowed) and one
    # of 1e155 became NaN; in power-of-two units both z-score as at scale 1, and ordinary data keep every bit
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3)) + [0.0, 5.0, -2.0]
    ref = StandardScaler().fit(X)
    tr = make_normalizer("zscore").fit(X)
    np.testing.assert_array_equal(tr.mean_, ref.mean_)
    np.testing.assert_array_equal(tr.scale_, ref.scale_)
    np.testing.assert_array_equal(tr.transform(X), ref.transform(X))
    for scale in (2.0**-565, 2.0**515):  # ~1e-170 and ~1e155: exact multiples of X
        np.testing.assert_array_equal(make_normalizer("zscore").fit_transform(X * scale), ref.transform(X))


@pytest.mark.parametrize("make", [lambda: Log1pScaler(), lambda: Log1pScaler(zscore=False)])
def test_log1p_fit_transform_is_fit_then_transform_to_the_bit(make):
    # fit_transform takes the logarithm once (it was fit, then transform: twice the work)
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 6)) * rng.lognormal(size=6) * 10.0 ** rng.integers(-3, 4, 6)
    np.testing.assert_array_equal(make().fit_transform(X), make().fit(X).transform(X))
