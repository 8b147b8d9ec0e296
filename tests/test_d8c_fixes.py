"""Defects of the learners beside RankRLS (on-line learners, fastrank.dask) found by driving them as a user would,
each checked against the single-machine estimator or a plain numpy transcription."""

import numpy as np
import pytest

import fastrank


def test_dask_gamma_grid_default_cv_is_the_single_machine_default():
    # RankRLSCV's default cv=None is leave-one-group-out with groups; DaskRankRLSCV promises a loop of RankRLSCV over
    # the gammas, so its default must judge on unseen queries too (not leave-pair-out inside the queries).
    pytest.importorskip("dask")
    from fastrank.dask import DaskRankRLSCV

    rng = np.random.default_rng(4)
    X = rng.normal(size=(48, 3))
    y = np.sin(2 * X[:, 0]) + 0.3 * rng.normal(size=48)
    g = rng.integers(0, 4, 48)
    gammas, alphas = [0.1, 1.0], [0.01, 1.0, 100.0]
    for groups in (g, None):
        cvd = DaskRankRLSCV(gammas=gammas, alphas=alphas).fit(X, y, groups)
        refs = [fastrank.RankRLSCV(alphas=alphas, kernel="rbf", gamma=gm).fit(X, y, groups) for gm in gammas]
        np.testing.assert_array_equal(cvd.cv_results_["scores"], np.stack([r.cv_results_["scores"] for r in refs]))
        assert {r.cv_results_["cv"] for r in refs} == {"lgo" if groups is not None else "lpo"}
