"""Exceptions and warnings raised by fastrank (when: docs/design/robustness.md, "Errors and warnings"): invalid user
input raises :class:`ValueError` or :class:`TypeError`; numerical breakdown :class:`LinAlgError`, a subclass of
:class:`numpy.linalg.LinAlgError`; an iterative solver stopped at ``max_iter`` emits
:class:`sklearn.exceptions.ConvergenceWarning`."""

import os
import sys

from sklearn.exceptions import ConvergenceWarning

from ._core import LinAlgError

__all__ = ["LinAlgError", "IllConditionedWarning", "MissingGroupsWarning", "ModelFileWarning", "ConvergenceWarning",
           "ConstantModelWarning"]


class IllConditionedWarning(UserWarning):
    """The linear system was solved but its estimated condition number is so large that the solution may be dominated by
    rounding error, or exact cross-validation ran at an alpha so small against the largest eigenvalue of S K S that its
    hold-out predictions lose digits (docs/design/exact-cv.md, "Accuracy"): increase ``alpha``."""


class ConstantModelWarning(UserWarning):
    """The fitted model scores every row alike (a zero weight vector, no boosting round): no feature tells apart the
    rows of any preference pair (constant features, or pairs of identical rows), so its predictions rank nothing.  Also
    for a linear model whose training scores ``X @ coef_`` underflow float64 (features near 1e-160 or smaller against
    their weights): its predictions tie or keep a few bits; rescale X.  And for RankRLS / MPRank targets that differ
    by less than 2.2e-308 (subnormal numbers): predictions of their size keep a few bits; rescale y."""


class ModelFileWarning(UserWarning):
    """A model file loaded, but without the integrity check of the current format (an older format version with no
    checksum): save the model again."""


class MissingGroupsWarning(UserWarning):
    """A per-query ranking measure was computed without the query groups although the rows come from several queries
    (the estimator was fitted on several groups, or scikit-learn's model selection was given groups): each test fold was
    scored as one query.  In a scikit-learn search the groups reach the scorer only through metadata routing:
    ``sklearn.set_config(enable_metadata_routing=True)`` and ``scorer.set_score_request(groups=True)``."""


_PACKAGE = os.path.dirname(__file__) + os.sep  # as the code objects of the package spell their files

# wrappers around fastrank's methods that are not the user's line: scikit-learn's set_output wrapper of transform,
# numpy's errstate used as a decorator
_WRAPPERS = (os.path.join("sklearn", "utils", "_set_output.py"), os.path.join("numpy", "_core", "_ufunc_config.py"))


def user_stacklevel():
    """The ``stacklevel`` of a warning raised by the caller that points at the first frame outside fastrank (the
    user's line), however many of fastrank's frames (fit wrappers, shared solvers, routes) lie between: a count
    written by hand at each warning drifts whenever a frame is added."""
    frame, level = sys._getframe(1), 1
    while frame is not None and (frame.f_code.co_filename.startswith(_PACKAGE)
                                 or frame.f_code.co_filename.endswith(_WRAPPERS)):
        frame, level = frame.f_back, level + 1
    return level


LinAlgError.__module__ = "fastrank.exceptions"
LinAlgError.__doc__ = ("Numerical breakdown in a fastrank solver (subclass of numpy.linalg.LinAlgError): the system is "
                       "singular or not positive definite to working precision. Increase alpha or check the kernel.")
