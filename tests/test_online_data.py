"""Real ordinal data: ANES 1996 party identification (0-6), OAP-BPM vs PRank vs Widrow-Hoff."""

from pathlib import Path

import numpy as np
import pytest

from fastrank import OAPBPM, PRank, WidrowHoff

_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
if not _DATA.exists():
    _DATA = Path("/work/shared/data")
ANES = _DATA / "statsmodels_anes96" / "anes96.csv"
FEATURES = ["popul", "TVnews", "selfLR", "ClinLR", "DoleLR", "age", "educ", "income"]


def load_anes():
    with open(ANES) as fh:
        names = [n.strip().strip("'") for n in fh.readline().split("\t")]
    A = np.loadtxt(ANES, delimiter="\t", skiprows=1)
    X = A[:, [names.index(n) for n in FEATURES]]
    X[:, 0] = np.log1p(X[:, 0])  # population in 1000s is heavy-tailed
    return X, A[:, names.index("PID")].astype(int)


@pytest.mark.skipif(not ANES.exists(), reason="shared data not available")
def test_anes96_party_id_rank_loss():
    X, y = load_anes()
    assert X.shape == (944, 8) and set(np.unique(y)) == set(range(7))
    losses = {"OAP-BPM": [], "PRank": [], "WH": [], "median": []}
    for seed in range(5):
        p = np.random.default_rng(seed).permutation(y.size)
        tr, te = p[:660], p[660:]
        Xs = (X - X[tr].mean(0)) / X[tr].std(0)
        models = {"OAP-BPM": OAPBPM(100, 0.3, random_state=seed, n_jobs=2), "PRank": PRank(),
                  "WH": WidrowHoff(eta=0.01)}
        for name, est in models.items():
            pred = est.fit(Xs[tr], y[tr]).predict(Xs[te])
            assert set(np.unique(pred)) <= set(range(7))
            losses[name].append(np.abs(pred - y[te]).mean())
        losses["median"].append(np.abs(np.median(y[tr]) - y[te]).mean())
    mean = {k: float(np.mean(v)) for k, v in losses.items()}
    print("\nANES96 test rank loss (5 splits, one pass):", {k: round(v, 3) for k, v in mean.items()})
    for name in ("OAP-BPM", "PRank", "WH"):
        assert mean[name] < mean["median"]  # better than always predicting the training median
    assert mean["OAP-BPM"] < mean["PRank"]
