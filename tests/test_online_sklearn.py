"""scikit-learn compatibility of the on-line learners (check_estimator with documented exceptions)."""

import pytest
from sklearn.utils.estimator_checks import check_estimator

from fastrank import OAPBPM, OnlineMPRank, PRank, WidrowHoff

# Justified exceptions for the ordinal classifiers:
ORDINAL_EXPECTED_FAILURES = {
    "check_classifiers_classes": (
        "decision_function is the ordinal score (w~.x, or the mean member rank on the 1..k scale): one real per "
        "sample, not scikit-learn's (n_samples, n_classes) per-class scores nor a signed binary margin"
    ),
    "check_classifiers_train": (
        "same decision_function convention; and a single on-line pass from w = 0 (the paper's setting, n_epochs=1) "
        "does not always reach the check's 0.83 training accuracy on its 3-blob data (the blobs are not ordered "
        "along one direction)"
    ),
}


@pytest.mark.parametrize(
    "estimator",
    [
        PRank(),
        OAPBPM(n_estimators=8, random_state=0),
        OAPBPM(n_estimators=8, variant="voted", random_state=0),
        OAPBPM(n_estimators=4, variant="bagging", kernel="rbf", random_state=0),
        # LMS diverges for eta >= 2/||x||^2; the checks' data is unscaled, so a small step
        WidrowHoff(eta=1e-5),  # below 2 / (||x||^2 + 1) on the checks' data: no overshoot warning
    ],
    ids=["PRank", "OAPBPM-bpm", "OAPBPM-voted", "OAPBPM-bagging-rbf", "WidrowHoff"],
)
def test_ordinal_learners_pass_check_estimator(estimator):
    check_estimator(estimator, expected_failed_checks=ORDINAL_EXPECTED_FAILURES, on_skip=None)


def test_online_mprank_passes_check_estimator():
    check_estimator(OnlineMPRank(), on_skip=None)
