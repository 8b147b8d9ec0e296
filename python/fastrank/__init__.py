"""fastrank: learning to rank with regularized least squares and online perceptron ensembles.

RankRLS (Pahikkala et al. 2009) from scores, scores inside query groups, or explicit preference
graphs; MPRank (Cortes, Mohri, Rastogi); fast exact cross-validation; conjugate-gradient and
subset-of-regressors solvers for large data; PRank and the OAP-BPM family (Harrington 2003); and
fast ranking measures.  The compiled core routes every O(m^3) factorization to SciPy's LAPACK.
"""

from . import exceptions
from .exceptions import IllConditionedWarning, LinAlgError

from ._version import __version__

# --- the learners: importing a learner's module registers its classes in ``_registry`` ---
from . import _rankrls, _cv, online, _ranksvm, _svrank, _rankboost  # noqa: F401
from ._registry import ESTIMATORS as _ESTIMATORS, register_estimator

globals().update(_ESTIMATORS)

# --- public functions and modules ---
from . import bounds, datasets, metrics, model_selection, preprocessing, utils
from ._rankrls import RankRLSPath, rankrls_path
from ._ranksvm import ranksvm_path
from ._rankboost import rankboost_path
from ._svrank import svrank_path
from ._greedy import greedy_order
from ._persist import load, save

__all__ = [
    *_ESTIMATORS, "register_estimator", "RankRLSPath", "rankrls_path", "ranksvm_path", "rankboost_path", "svrank_path",
    "greedy_order", "model_selection", "datasets", "metrics", "bounds", "save", "load", "utils", "preprocessing",
    "LinAlgError", "IllConditionedWarning", "exceptions", "__version__",
]
