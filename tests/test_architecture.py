"""The package's structure: imports point one way, and only estimators change estimators."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parents[1] / "python" / "fastrank"

# Lower layers never import higher ones (the README's "Design" section draws this).  Modules not
# listed are applications of the library (CLI, demo, optional integrations): nothing imports them,
# and they may use the package facade ``import fastrank`` like any user.
LAYERS = {
    "_core": 0, "_version": 0,
    "exceptions": 1,
    "_validation": 2, "_memory": 2, "_sparse": 2, "_threads": 2, "_progress": 2, "_svmlight": 2, "utils": 2,
    "_kernels": 3, "metrics": 3, "preprocessing": 3,
    "_problem": 4,
    "_solvers": 5, "_shortcuts": 5.5, "_holdout": 4,
    "_rankrls": 6, "online": 6, "_svrank": 6, "_ranksvm": 6, "_rankboost": 6, "_greedy": 6,
    "_cv": 7, "model_selection": 7,
    "datasets": 8, "_registry": 8,
    "_persist": 9, "plotting": 9, "bounds": 7, "dask": 9,
    "__init__": 50,  # the package facade: only applications (CLI, demo) may import it
    "_demo": 90, "cli": 90, "__main__": 95,
}
TOP = 100


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


def test_imports_point_down_the_layers():
    bad = []
    for mod, deps in _graph().items():
        for dep in deps:
            if LAYERS.get(mod, TOP) <= LAYERS.get(dep, TOP):
                bad.append(f"{mod} (layer {LAYERS.get(mod, TOP)}) imports {dep} (layer {LAYERS.get(dep, TOP)})")
    assert not bad, "\n".join(bad)


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
    the function did not create: a parameter other than ``self``/``cls``, or a global."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        own = {"self", "cls"}
        local = {t.id for node in ast.walk(fn) if isinstance(node, (ast.Assign, ast.AnnAssign, ast.For, ast.With))
                 for t in ast.walk(node) if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store)}
        local -= {a.arg for a in fn.args.args + fn.args.kwonlyargs + fn.args.posonlyargs}

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
                            and foreign(sub.value):
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
                   "    tags = object()\n    tags.x = 1\n"
                   "class A:\n    def fit(self, other):\n        self.a_ = 1\n        other.b_ = 2\n")
    assert [line for line, _ in _foreign_attribute_writes(src)] == [2, 3, 9]


def test_import_fastrank_loads_no_optional_dependency():
    code = ("import sys, fastrank; bad = [m for m in ('dask', 'distributed', 'matplotlib', 'tqdm') "
            "if m in sys.modules]; print(','.join(bad))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
