"""Shared numpydoc parameter entries and the placeholders that fill them into docstrings (SciPy's ``doccer``
spelling): ``help()`` shows the full text, the source states it once.  A section whose entries are all shared is one
line with its headers: ``%(Parameters)s %(X_predict)s %(Returns)s %(ranking_scores)s``."""

import re

__all__ = ["PARAM_DOCS", "fill_param_docs", "with_param_docs"]

# The numpydoc entries of parameters that several learners share: a class docstring names them on a line of
# placeholders, ``%(kernel)s %(gamma)s`` (SciPy's ``doccer`` spelling), and lines indented below it continue the last
# entry; ``help()`` shows the full text.
PARAM_DOCS = {
    "C": "C : float, default=1.0\n    Trade-off, > 0.",
    "random_state": """random_state : int, RandomState or None, default=None
    Seed for drawing ``basis_vectors`` rows.""",
    "kernel": """kernel : {"linear", "rbf"/"gaussian", "poly"/"polynomial", "precomputed"}, default="linear"
    ``x.z``, ``exp(-gamma |x - z|^2)`` or ``(gamma x.z + coef0) ** degree``; "precomputed": ``fit`` takes the (m, m)
    kernel matrix, ``predict`` the (p, m) kernel against the training rows.""",
    "gamma": "gamma : float or None, default=None\n    RBF/polynomial scale; None means 1 / n_features.",
    "degree": "degree : float, default=3\n    Polynomial degree.",
    "coef0": "coef0 : float, default=1.0\n    Polynomial offset.",
    "n_jobs": """n_jobs : int or None, default=None
    Threads of the C++ core: None or -1 every usable core (the process's CPU affinity, at most OMP_NUM_THREADS when
    set), -2 all but one, k > 0 k threads.
    A call takes at most that many, fewer when its work is too small for more to pay (kernel fits and predictions,
    dense RankRLS fits, exact cross-validation, the learners' threaded loops).""",
    "verbose": 'verbose : int, bool or "auto", default=0\n    Progress on stderr (:mod:`fastrank._progress`).',
    "group_weighting": """group_weighting : {"unweighted", "per_query", "per_object", "normalized"}, default="unweighted"
    Weight c_q of each pair inside a group of n_q rows (P_q = n_q (n_q - 1) / 2 pairs): "unweighted" 1 (the paper's
    Laplacian, eq. 25; a query weighs P_q); "per_query" 1 / P_q (every query weighs 1, end of Sect. 2.4);
    "per_object" 1 / (n_q - 1) (every ROW's pairs weigh 1; the papers' "object" is the query, i.e. "per_query");
    "normalized" 1 / n_q (blocks I - 11^T/n_q: least squares on query-centred scores).  Without groups (object
    ranking) every pair weighs 1.""",
    "exclude_ties": """exclude_ties : bool, default=False
    Drop the pairs with equal targets (no preference) instead of fitting their score difference to 0 (the paper keeps
    them, Sect. 3); exact without forming pairs: a group's Laplacian splits into between- and within-tie-class
    centrings, so S = L^{1/2} stays O(m) to apply.  With ``group_weighting="per_query"`` a pair weighs 1 / E_q, E_q
    its query's untied pairs (every query still weighs 1).""",
    # the methods' entries (keys differ from the names they document where the meaning differs by method)
    "X_fit": """X : {array-like, sparse matrix} of shape (n_samples, n_features)
    Training rows (sparse where the estimator accepts it), or the (n_samples, n_samples) kernel matrix for
    ``kernel="precomputed"``.""",
    "X_predict": """X : {array-like, sparse matrix} of shape (n_test, n_features)
    Rows to score, or their (n_test, n_samples) kernel against the training rows for ``kernel="precomputed"``.""",
    "groups_fit": """groups : array-like of shape (n_samples,) or None, default=None
    Query id of each row (any order or type): only pairs inside a query count; None: every pair of rows.""",
    "pairs": """pairs : array-like of int of shape (n_pairs, 2)
    Row ``pairs[e, 0]`` is preferred over row ``pairs[e, 1]``; repeated pairs add up.""",
    "X_preferences": """X : {array-like, sparse matrix} of shape (n_samples, n_features)
    The rows the preferences refer to, or the (n_samples, n_samples) kernel for ``kernel="precomputed"``.""",
    "X_stored": """X : {array-like, sparse matrix} of shape (n_test, n_features)
    Test rows (for a precomputed kernel, their kernel against the stored examples).""",
    "Cs_path": "Cs : array-like of float > 0\n    The values of C.",
    "verbose_path": 'verbose : int, bool or "auto", default=0\n    Progress per value of C.',
    "fitted_self": "self : object\n    The fitted estimator.",
    "ranking_scores": """scores : ndarray of shape (n_test,)
    Ranking scores: higher ranks higher; only their differences are meaningful.""",
    # numpydoc's section headers, for a placeholder line that lists a whole section:
    # ``%(Parameters)s %(X_predict)s %(Returns)s %(ranking_scores)s``
    "Parameters": "Parameters\n----------",
    "Returns": "\nReturns\n-------",
}

_PLACEHOLDERS = re.compile(r"^( *)((?:%\(\w+\)s ?)+)$", re.M)


def fill_param_docs(doc, entries=None):
    """``doc`` with each line of ``%(name)s`` placeholders replaced by the :data:`PARAM_DOCS` entries (and a module's
    own ``entries``, which take precedence), so indented."""
    if not doc:
        return doc
    known = PARAM_DOCS if entries is None else {**PARAM_DOCS, **entries}

    def filled(match):
        names = re.findall(r"%\((\w+)\)s", match.group(2))
        return "\n".join(match.group(1) + line if line else line
                         for name in names for line in known[name].splitlines())

    return _PLACEHOLDERS.sub(filled, doc)


def with_param_docs(entries=None):
    """Decorator: a function's or class's docstring with its ``%(name)s`` placeholders filled
    (:func:`fill_param_docs`)."""

    def fill(obj):
        obj.__doc__ = fill_param_docs(obj.__doc__, entries)
        return obj

    return fill
