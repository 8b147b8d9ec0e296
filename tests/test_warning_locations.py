"""Every warning fastrank emits points at the user's line (the first frame outside the package), whatever
wrappers, shared solvers or routes lie between: Python shows that location, and the default filter
de-duplicates by it."""

import warnings

import numpy as np
import pytest

import fastrank
from fastrank import model_selection as ms
from fastrank import metrics


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 4))
    y = np.round(X @ rng.normal(size=4) + rng.normal(size=60))
    return X, y, np.repeat(np.arange(6), 10)


def _v1_model_file(path, X, y, g):
    import test_persist as tp
    fastrank.save(fastrank.RankRLS(alpha=2.0).fit(X, y, g), path)
    h, a = tp._read(path)
    del h["checksum"]
    h["format_version"] = 1
    tp._write(path, h, a, checksum=False)
    return path


CASES = {
    "RankSVM.fit, max_iter": lambda X, y, g, tmp: fastrank.RankSVM(max_iter=1).fit(X, y),
    "RankSVM.fit, capped C": lambda X, y, g, tmp: fastrank.RankSVM(C=1e30).fit(X * 1e10, y),
    "ranksvm_path, max_iter": lambda X, y, g, tmp: fastrank.ranksvm_path(X, y, [1.0], max_iter=1),
    "ranksvm_path, capped C": lambda X, y, g, tmp: fastrank.ranksvm_path(X * 1e10, y, [1e30]),
    "SVRank.fit, max_iter": lambda X, y, g, tmp: fastrank.SVRank(max_iter=1).fit(X, y),
    "RankRLS.fit, CG": lambda X, y, g, tmp: fastrank.RankRLS(solver="cg", max_iter=1, alpha=1e-3).fit(X, y),
    "RankRLS.fit, CG without ties": lambda X, y, g, tmp: fastrank.RankRLS(
        solver="cg", max_iter=1, alpha=1e-3, exclude_ties=True).fit(X, y, g),
    "RankRLS.fit, ill-conditioned": lambda X, y, g, tmp: fastrank.RankRLS(alpha=1e-13, kernel="rbf", gamma=0.01).fit(
        X, y),
    "RankRLSCV.fit, ill-conditioned": lambda X, y, g, tmp: fastrank.RankRLSCV(
        alphas=[1e-13, 1.0], kernel="rbf", gamma=0.01, cv=3).fit(X, y),
    "kfold_predictions, small alpha": lambda X, y, g, tmp: ms.kfold_predictions(
        fastrank.RankRLS(alpha=1e-14, kernel="rbf"), X, y, folds=3, groups=g),
    "leave_group_out, small alpha, ties": lambda X, y, g, tmp: ms.leave_group_out(
        fastrank.RankRLS(alpha=1e-14, kernel="rbf", exclude_ties=True), X, y, g),
    "RankRLSCV.fit, small alpha, ties": lambda X, y, g, tmp: fastrank.RankRLSCV(
        alphas=[1e-14, 1.0], kernel="rbf", exclude_ties=True).fit(X, y, g),
    "pairwise_disagreement(ties=)": lambda X, y, g, tmp: metrics.pairwise_disagreement(y, X[:, 0], ties="half"),
    "scorer without groups": lambda X, y, g, tmp: metrics.make_ranking_scorer("ndcg")(
        fastrank.RankRLS().fit(X, y, g), X, y - y.min()),
    "load, format version 1": lambda X, y, g, tmp: fastrank.load(_v1_model_file(tmp / "v1", X, y, g)),
}


@pytest.mark.parametrize("case", list(CASES))
def test_warnings_point_at_the_callers_line(case, data, tmp_path):
    X, y, g = data
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        CASES[case](X, y, g, tmp_path)
    ours = [w for w in caught if issubclass(w.category, (UserWarning, FutureWarning))]
    assert ours, f"{case}: no warning"
    assert {w.filename for w in ours} == {__file__}, [(w.filename, w.lineno, str(w.message)[:60]) for w in ours]
