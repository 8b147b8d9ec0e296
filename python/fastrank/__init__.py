"""fastrank: learning to rank with regularized least squares and online perceptron ensembles.

RankRLS (Pahikkala et al. 2009) from scores, scores inside query groups, or explicit preference
graphs; MPRank (Cortes, Mohri, Rastogi); fast exact cross-validation; conjugate-gradient and
subset-of-regressors solvers for large data; PRank and the OAP-BPM family (Harrington 2003); and
fast ranking measures.  The compiled core routes every O(m^3) factorization to SciPy's LAPACK.
"""

from . import exceptions
from .exceptions import IllConditionedWarning, LinAlgError

from ._version import __version__

# --- public estimators and modules (one import line per area) ---
from ._rankrls import MPRank, RankRLS, RankRLSPath, rankrls_path
from . import datasets, metrics
from . import bounds
from . import model_selection
from ._cv import RankRLSCV
from .online import OAPBPM, OnlineMPRank, PRank, PRankVP, WidrowHoff
from ._ranksvm import RankSVM, ranksvm_path
from ._svrank import SVRank
from ._rankboost import RankBoost
from ._greedy import greedy_order
from ._persist import load, save
from . import utils

__all__ = [
    "RankRLS", "MPRank", "RankRLSPath", "rankrls_path",
    "RankRLSCV", "model_selection",
    "PRank", "PRankVP", "OAPBPM", "WidrowHoff", "OnlineMPRank",
    "RankSVM", "ranksvm_path", "SVRank", "RankBoost", "greedy_order",
    "datasets", "metrics", "bounds",
    "save", "load", "utils",
    "LinAlgError", "IllConditionedWarning", "exceptions", "__version__",
]
