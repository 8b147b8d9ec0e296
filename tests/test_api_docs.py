"""Every public function, class and method documents its parameters in a numpydoc Parameters section, in the
signature's order and with nothing that is not a parameter, and says what it returns (``Returns`` or ``Yields``) when
it returns a value: the contract ``help()`` and the API reference show."""

import ast
import importlib
import inspect
import re
import textwrap

import pytest

import fastrank

MODULES = ["metrics", "model_selection", "bounds", "preprocessing", "datasets", "utils", "online", "plotting",
           "exceptions", "dask", "cli"]


def _public_objects():
    found = {}

    def add(path, obj):
        if id(obj) in {id(o) for o in found.values()}:
            return
        found[path] = obj
        if not inspect.isclass(obj):
            return
        for name in dir(obj):  # the methods fastrank defines, inherited ones under the first class that shows them
            owner = next((k for k in obj.__mro__ if name in vars(k)), None)
            if name.startswith("_") or not owner.__module__.startswith("fastrank"):
                continue
            raw = vars(owner)[name]
            if isinstance(raw, (classmethod, staticmethod)):
                raw = raw.__func__
            if inspect.isfunction(raw) and id(raw) not in {id(o) for o in found.values()}:
                found[f"{path}.{name}"] = raw

    for name in fastrank.__all__:
        obj = getattr(fastrank, name)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            add(f"fastrank.{name}", obj)
    for module in MODULES:
        try:
            mod = importlib.import_module(f"fastrank.{module}")
        except ImportError:  # fastrank.dask without Dask installed
            continue
        for name in mod.__all__:
            obj = getattr(mod, name)
            if inspect.isclass(obj) or inspect.isfunction(obj):
                add(f"fastrank.{module}.{name}", obj)
    return found


OBJECTS = _public_objects()
_SECTION = re.compile(r"^(\w[\w ]*)\n-+\n", re.M)


def _sections(doc):
    """{section title: body} of a numpydoc docstring."""
    doc = inspect.cleandoc(doc or "")
    heads = list(_SECTION.finditer(doc))
    return {h.group(1): doc[h.end():heads[i + 1].start() if i + 1 < len(heads) else len(doc)]
            for i, h in enumerate(heads)}


def _entries(body):
    """Names of the entries of a Parameters section (``a, b : type`` documents a and b)."""
    names = []
    for line in body.splitlines():
        if line and not line[0].isspace():
            names += [n.strip() for n in line.partition(" : ")[0].split(",")]
    return names


def _parameters(obj):
    """The parameters a caller passes, with ``*args`` / ``**kwargs`` spelled as numpydoc spells them."""
    target = obj.__init__ if inspect.isclass(obj) else obj
    if inspect.isclass(obj) and not getattr(target, "__module__", "").startswith("fastrank"):
        return []  # the constructor of a base outside fastrank (exceptions, named tuples)
    names = []
    for p in inspect.signature(target).parameters.values():
        if p.name in ("self", "cls"):
            continue
        names.append({p.VAR_POSITIONAL: "*", p.VAR_KEYWORD: "**"}.get(p.kind, "") + p.name)
    return names


def _returns_value(func):
    """Whether func's own body returns something other than None (or yields)."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(func)))
    except (OSError, TypeError):
        return False
    body = tree.body[0]

    def walk(node):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                continue
            if isinstance(child, (ast.Yield, ast.YieldFrom)):
                yield "yield"
            if isinstance(child, ast.Return) and child.value is not None and not (
                    isinstance(child.value, ast.Constant) and child.value.value is None):
                yield "return"
            yield from walk(child)

    return set(walk(body))


def _doc_of(obj):
    return obj.__doc__ if inspect.isclass(obj) or obj.__doc__ else None


@pytest.mark.parametrize("path", sorted(OBJECTS))
def test_parameters_section_matches_the_signature(path):
    obj = OBJECTS[path]
    params = _parameters(obj)
    doc = _doc_of(obj)
    assert doc and doc.strip(), f"{path} has no docstring"
    if not params:
        return
    sections = _sections(doc)
    assert "Parameters" in sections, f"{path}: no Parameters section for {params}"
    documented = _entries(sections["Parameters"])
    assert not set(params) - set(documented), f"{path}: not documented: {sorted(set(params) - set(documented))}"
    assert not set(documented) - set(params), f"{path}: not parameters: {sorted(set(documented) - set(params))}"
    assert documented == params, f"{path}: documented in the order {documented}, the signature's is {params}"


@pytest.mark.parametrize("path", sorted(p for p, o in OBJECTS.items() if inspect.isfunction(o)))
def test_a_returned_value_is_documented(path):
    kinds = _returns_value(OBJECTS[path])
    sections = _sections(OBJECTS[path].__doc__)
    if "yield" in kinds:
        assert "Yields" in sections, f"{path} yields but documents no Yields section"
    elif "return" in kinds:
        assert "Returns" in sections, f"{path} returns a value but documents no Returns section"


def test_the_checks_catch_what_they_check():
    def f(a, b=1, *args, c, **kw):
        """Summary.

        Parameters
        ----------
        a, b : int
        *args, c : object
        **kw : dict
            More.

        Returns
        -------
        int
        """
        if a:
            return a
        return None

    assert _parameters(f) == ["a", "b", "*args", "c", "**kw"] == _entries(_sections(f.__doc__)["Parameters"])
    assert _returns_value(f) == {"return"}

    def g(a):
        """Summary.

        Parameters
        ----------
        a : int
        Attributes (after plot): x_, y_
        """
        def inner():
            return 1
        yield inner

    assert _entries(_sections(g.__doc__)["Parameters"]) == ["a", "Attributes (after plot): x_", "y_"]
    assert _returns_value(g) == {"yield"}
