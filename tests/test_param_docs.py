"""Every public estimator documents every constructor parameter in its rendered docstring (what
``help()`` shows), and the shared parameter descriptions of ``fastrank._docs.PARAM_DOCS`` are filled
in with the defaults the estimators really have."""

import ast
import inspect
import re

import pytest

import fastrank
from fastrank._docs import PARAM_DOCS, fill_param_docs
from fastrank._registry import ESTIMATORS
from fastrank.preprocessing import Log1pScaler, QueryNormalizer

# the package's own learners (test modules register learners of their own)
OURS = sorted((name, cls) for name, cls in ESTIMATORS.items() if cls.__module__.startswith("fastrank."))
ESTIMATOR_CLASSES = [pytest.param(cls, id=name) for name, cls in OURS]
ESTIMATOR_CLASSES += [pytest.param(cls, id=cls.__name__) for cls in (QueryNormalizer, Log1pScaler)]


def _parameter_entries(doc):
    """{name: entry header} of the numpydoc Parameters section (``a, b : type`` documents a and b)."""
    doc = inspect.cleandoc(doc)
    section = re.search(r"^Parameters\n-+\n(.*?)(?:^\S[^\n]*\n-+\n|\Z)", doc, re.S | re.M)
    assert section, "no numpydoc Parameters section"
    entries = {}
    for line in section.group(1).splitlines():
        if line and not line[0].isspace():
            names, _, kind = line.partition(" : ")
            for name in names.split(","):
                entries[name.strip()] = kind
    return entries


@pytest.mark.parametrize("cls", ESTIMATOR_CLASSES)
def test_rendered_docstring_documents_every_parameter(cls):
    doc = cls.__doc__
    assert "%(" not in doc, "a shared-parameter placeholder was not filled in"
    missing = set(cls().get_params(deep=False)) - set(_parameter_entries(doc))
    assert not missing, f"{cls.__name__} does not document {sorted(missing)}"


@pytest.mark.parametrize("cls", [p for p in ESTIMATOR_CLASSES if not p.marks])
def test_shared_entries_state_the_real_default(cls):
    defaults = {k: v.default for k, v in inspect.signature(cls).parameters.items()}
    checked = []
    for name, kind in _parameter_entries(cls.__doc__).items():
        shared = PARAM_DOCS.get(name)
        if shared is None or not shared.startswith(f"{name} : {kind}\n"):
            continue  # the estimator's own entry
        default = re.search(r"default=(.+)$", kind).group(1)
        assert ast.literal_eval(default) == defaults[name], f"{cls.__name__}.{name}: documented {default}"
        checked.append(name)
    # PRankVP and WidrowHoff document theirs "as for PRank"
    assert checked or cls in (QueryNormalizer, Log1pScaler, fastrank.PRankVP, fastrank.WidrowHoff)


def test_fill_param_docs_indents_entries_and_keeps_continuation_lines():
    doc = """Title.

    Parameters
    ----------
    %(gamma)s %(n_jobs)s
        More about n_jobs.
    """
    filled = fill_param_docs(doc)
    gamma, n_jobs = PARAM_DOCS["gamma"].splitlines(), PARAM_DOCS["n_jobs"].splitlines()
    expected = "\n".join("    " + line for line in gamma + n_jobs) + "\n        More about n_jobs.\n"
    assert filled.rstrip(" ").endswith(expected)
    assert fill_param_docs(None) is None


def test_a_section_line_fills_numpydoc_headers_without_trailing_spaces():
    doc = """Title.

        %(Parameters)s %(X_predict)s %(Returns)s %(ranking_scores)s
        """
    X, scores = PARAM_DOCS["X_predict"].splitlines(), PARAM_DOCS["ranking_scores"].splitlines()
    lines = ["Parameters", "----------", *X, "", "Returns", "-------", *scores]
    expected = "Title.\n\n" + "\n".join("        " + line if line else "" for line in lines) + "\n        "
    assert fill_param_docs(doc) == expected


def test_help_shows_the_shared_text():
    assert PARAM_DOCS["kernel"].splitlines()[1].strip() in fastrank.RankSVM.__doc__
    assert PARAM_DOCS["group_weighting"].splitlines()[-1].strip() in fastrank.RankRLSCV.__doc__


def test_shared_entries_name_only_parameters_the_estimator_has():
    # the shared group_weighting entry described a weighting "with ``exclude_ties``" to DaskRankRLS / DaskRankRLSCV,
    # which have no such parameter
    dask = pytest.importorskip("fastrank.dask")
    classes = [cls for _, cls in OURS] + [dask.DaskRankRLS, dask.DaskRankRLSCV]
    known = {name for cls in classes for name in inspect.signature(cls).parameters}
    checked = set()
    for cls in classes:
        own = set(inspect.signature(cls).parameters)
        for name in _parameter_entries(cls.__doc__):
            shared = PARAM_DOCS.get(name, "")
            if shared and shared.splitlines()[1].strip() in cls.__doc__:  # the shared text, not an own entry
                named = set(re.findall(r"``(\w+)``", shared)) & known
                assert named <= own, f"{cls.__name__}.{name} speaks of {sorted(named - own)}"
                checked.add((cls.__name__, name))
    assert {("DaskRankRLS", "group_weighting"), ("DaskRankRLSCV", "group_weighting")} <= checked
