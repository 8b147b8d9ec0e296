"""The one estimator registry: every learner registers its class here (``@register_estimator``), and the package's
exports, the model files' class whitelist, the command line's ``--model`` choices and the architecture test read their
lists from :data:`ESTIMATORS`."""

__all__ = ["ESTIMATORS", "register_estimator"]

ESTIMATORS = {}


def register_estimator(cls):
    """Class decorator: make ``cls`` a fastrank learner by name (model files may name it, the CLI can train it).

    Parameters
    ----------
    cls : type
        The learner class, registered under its ``__name__``.

    Returns
    -------
    cls : type
        The class itself, unchanged.

    Raises
    ------
    ValueError
        If another class is registered under the same name."""
    name = cls.__name__
    other = ESTIMATORS.get(name)
    if other is not None and (other.__module__, other.__qualname__) != (cls.__module__, cls.__qualname__):
        raise ValueError(f"an estimator named {name!r} is already registered ({other.__module__}.{name}); "
                         "give the new learner another class name")
    ESTIMATORS[name] = cls
    return cls
