"""The estimator classes fastrank exports, by name: the whitelist that model files may name and
the learners the command line can train.  A new learner is added here and in ``__init__``."""

from ._cv import MPRankCV, RankRLSCV
from ._rankboost import RankBoost
from ._rankrls import MPRank, RankRLS
from ._ranksvm import RankSVM
from ._svrank import SVRank
from .online import OAPBPM, OnlineMPRank, PRank, PRankVP, WidrowHoff

__all__ = ["ESTIMATORS"]

ESTIMATORS = {cls.__name__: cls for cls in (RankRLS, MPRank, RankRLSCV, MPRankCV, RankSVM, SVRank, PRank, PRankVP,
                                                   OAPBPM, WidrowHoff, OnlineMPRank, RankBoost)}
