"""The package's structure: imports point one way, and only estimators change estimators."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "python" / "fastrank"

# Layers by rule, from the import graph and the estimator registry (the README's "Design" section
# draws them): private and public helpers (modules that reach no learner) < the learners' modules
# (``fastrank._registry`` names them) < modules built on learners (cross-validation, model files,
# integrations) < the package facade ``__init__`` < applications (modules that only applications
# import: the CLI, the demo, the Dask and plotting integrations, which may use ``import fastrank``
# like any user).  A module may import only
# a lower layer or its own (a learner built on a learner, e.g. RankRLSCV on RankRLS); so a library
# module that starts using the CLI, or the facade, stops being a library module and fails.
ROLES = ("helper", "learner", "consumer", "facade", "application")


def _learner_modules():
    import fastrank  # noqa: F401  (importing the package registers every learner)
    from fastrank._registry import ESTIMATORS

    return {cls.__module__.rsplit(".", 1)[-1] for cls in ESTIMATORS.values() if cls.__module__.startswith("fastrank")}


def _roles(graph, learners):
    reach = {}

    def reachable(mod):
        if mod not in reach:
            reach[mod] = set()
            for dep in graph.get(mod, ()):
                reach[mod] |= {dep} | reachable(dep)
        return reach[mod]

    importers = {mod: {other for other, deps in graph.items() if mod in deps} for mod in graph}
    apps = set()
    changed = True
    while changed:  # applications: modules that only applications import (the CLI, integrations)
        changed = False
        for mod in graph:
            if mod not in apps and mod != "__init__" and mod not in learners and importers[mod] <= apps:
                apps.add(mod)
                changed = True
    role = {}
    for mod in graph:
        if mod == "__init__":
            role[mod] = "facade"
        elif mod in learners:
            role[mod] = "learner"
        elif mod in apps:
            role[mod] = "application"
        elif reachable(mod) & learners:
            role[mod] = "consumer"
        else:
            role[mod] = "helper"
    role.setdefault("_core", "helper")
    return role


def _modules():
    return {p.stem: p for p in sorted(PKG.glob("*.py"))}


def _package_imports(path, known):
    """Names of fastrank modules that a module imports anywhere (module level or inside functions);
    ``import fastrank`` and ``from fastrank import name`` count as importing ``__init__``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    out = set()

    def names_from_package(aliases):
        for a in aliases:
            out.add(a.name if a.name in known else "__init__")

    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1 and node.module is None:  # from . import x
                names_from_package(node.names)
            elif node.level == 1:  # from .x import y
                out.add(node.module.split(".")[0])
            elif node.level == 0 and node.module and node.module.split(".")[0] == "fastrank":
                parts = node.module.split(".")
                if len(parts) > 1:
                    out.add(parts[1])
                else:
                    names_from_package(node.names)
        elif isinstance(node, ast.Import):
            for a in node.names:
                parts = a.name.split(".")
                if parts[0] == "fastrank":
                    out.add(parts[1] if len(parts) > 1 else "__init__")
    return {m for m in out if m in known}


def _graph():
    mods = _modules()
    known = set(mods) | {"_core"}
    return {name: _package_imports(path, known) - {name} for name, path in mods.items()}


def test_import_graph_has_no_cycle():
    graph = _graph()
    state = {}

    def visit(node, stack):
        state[node] = "open"
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                cycle = stack[stack.index(nxt):] + [nxt]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if nxt not in state:
                visit(nxt, stack + [nxt])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])


def _layer_violations(graph, learners):
    role = _roles(graph, learners)
    bad = []
    for mod, deps in graph.items():
        for dep in deps:
            r_mod, r_dep = ROLES.index(role[mod]), ROLES.index(role.get(dep, "helper"))
            if r_mod < r_dep:
                bad.append(f"{mod} ({role[mod]}) imports {dep} ({role.get(dep, 'helper')})")
    # the registry is a leaf: any module may register a learner without an import cycle
    bad += [f"_registry imports {dep}" for dep in graph.get("_registry", ())]
    return bad


def test_imports_point_down_the_layers():
    bad = _layer_violations(_graph(), _learner_modules())
    assert not bad, "\n".join(bad)


def test_every_learner_module_is_a_learner_and_the_roles_are_not_empty():
    role = _roles(_graph(), _learner_modules())
    assert {"_rankrls", "_ranksvm", "_svrank", "_rankboost", "online", "_cv"} <= \
        {m for m, r in role.items() if r == "learner"}
    assert role["cli"] == "application" and role["_validation"] == "helper" and role["model_selection"] == "consumer"


def test_the_layer_rule_catches_a_learner_using_the_facade_or_a_consumer():
    graph = {"_h": set(), "_l": {"__init__", "_h"}, "__init__": {"_l"}, "cli": {"__init__"}}
    assert _layer_violations(graph, {"_l"}) == ["_l (learner) imports __init__ (facade)"]
    graph = {"_l": {"_c"}, "_c": {"_l2"}, "_l2": set(), "__init__": {"_l"}, "cli": {"__init__"}}
    assert _layer_violations(graph, {"_l", "_l2"}) == ["_l (learner) imports _c (consumer)"]
    graph = {"_h": set(), "_l": {"_h"}, "_c": {"_l"}, "__init__": {"_c", "_l"}, "cli": {"__init__"},
             "_registry": {"_l"}}
    assert _layer_violations(graph, {"_l"}) == ["_registry imports _l"]


def test_lists_of_estimators_derive_from_the_registry():
    import fastrank
    from fastrank import _persist, cli
    from fastrank._registry import ESTIMATORS

    ours = {name: cls for name, cls in ESTIMATORS.items() if cls.__module__.startswith("fastrank.")}
    assert len(ours) >= 11 and set(ours) <= set(fastrank.__all__)
    assert all(getattr(fastrank, name) is cls for name, cls in ours.items())
    assert _persist._estimator_classes() == ESTIMATORS
    assert cli._estimators() == ESTIMATORS


def test_the_architecture_test_sees_a_cycle(tmp_path, monkeypatch):
    # the checks above must be able to fail: a module importing its importer is reported
    fake = tmp_path / "fastrank"
    fake.mkdir()
    (fake / "a.py").write_text("def f():\n    from .b import g\n")
    (fake / "b.py").write_text("from . import a\n")
    monkeypatch.setattr(sys.modules[__name__], "PKG", fake)
    with pytest.raises(pytest.fail.Exception, match="import cycle"):
        test_import_graph_has_no_cycle()


def _foreign_attribute_writes(path):
    """Attribute assignments/deletions (and setattr/delattr calls) inside functions on an object
    the function did not create (a function it defines is its own): a parameter other than ``self``/``cls``, or a
    global.  A docstring (``__doc__``) is not state: decorators fill them in."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        own = {"self", "cls"}
        local = {t.id for node in ast.walk(fn) if isinstance(node, (ast.Assign, ast.AnnAssign, ast.For, ast.With))
                 for t in ast.walk(node) if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store)}
        local -= {a.arg for a in fn.args.args + fn.args.kwonlyargs + fn.args.posonlyargs}
        local |= {node.name for node in ast.walk(fn) if isinstance(node, ast.FunctionDef) and node is not fn}

        def foreign(base):
            while isinstance(base, (ast.Attribute, ast.Subscript)):
                base = base.value
            return not (isinstance(base, ast.Name) and (base.id in own or base.id in local))

        for node in ast.walk(fn):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("setattr", "delattr"):
                if not node.args or foreign(node.args[0]):
                    found.append((node.lineno, ast.unparse(node)))
                continue
            targets = []
            if isinstance(node, (ast.Assign, ast.Delete)):
                targets = node.targets
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
                targets = [node.target]
            for t in targets:
                for sub in ast.walk(t):
                    if isinstance(sub, ast.Attribute) and isinstance(sub.ctx, (ast.Store, ast.Del)) \
                            and sub.attr != "__doc__" and foreign(sub.value):
                        found.append((sub.lineno, ast.unparse(sub)))
    return sorted(set(found))


def test_only_methods_set_attributes_on_their_own_object():
    # "Estimators are changed only by their own methods": no function sets attributes on an
    # object it was handed (e.g. ``est.coef_ = ...``); solvers return records instead.
    bad = [f"{p.name}:{line}: {text}" for p in _modules().values() for line, text in _foreign_attribute_writes(p)]
    assert not bad, "\n".join(bad)


def test_the_attribute_lint_catches_a_mutating_function(tmp_path):
    src = tmp_path / "m.py"
    src.write_text("def fit_into(est, X):\n    est.coef_ = X\n    setattr(est, 'n_iter_', 1)\n"
                   "    tags = object()\n    tags.x = 1\n    est.__doc__ = ''\n"
                   "class A:\n    def fit(self, other):\n        self.a_ = 1\n        other.b_ = 2\n")
    assert [line for line, _ in _foreign_attribute_writes(src)] == [2, 3, 10]


def test_import_fastrank_loads_no_optional_dependency():
    code = ("import sys, fastrank; bad = [m for m in ('dask', 'distributed', 'matplotlib', 'tqdm') "
            "if m in sys.modules]; print(','.join(bad))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
