"""Exceptions and warnings raised by fastrank.

* Invalid user input raises :class:`ValueError` or :class:`TypeError`.
* Numerical breakdown (for example a kernel system that is not numerically positive definite
  because ``alpha`` is tiny compared with the kernel's scale) raises :class:`LinAlgError`, a
  subclass of :class:`numpy.linalg.LinAlgError`.
* A solve that succeeded but is badly conditioned emits :class:`IllConditionedWarning`.
* An iterative solver that stopped at ``max_iter`` emits
  :class:`sklearn.exceptions.ConvergenceWarning`.
"""

from sklearn.exceptions import ConvergenceWarning

from ._core import LinAlgError

__all__ = ["LinAlgError", "IllConditionedWarning", "ConvergenceWarning", "ModelFileWarning"]


class IllConditionedWarning(UserWarning):
    """The linear system was solved but its estimated condition number is so large that the
    solution may be dominated by rounding error (increase ``alpha``)."""


class ModelFileWarning(UserWarning):
    """A model file loaded, but without the integrity check of the current format (an older
    format version with no checksum): save the model again."""


LinAlgError.__module__ = "fastrank.exceptions"
LinAlgError.__doc__ = (
    "Numerical breakdown in a fastrank solver (subclass of numpy.linalg.LinAlgError): the system "
    "is singular or not positive definite to working precision. Increase alpha or check the kernel."
)
