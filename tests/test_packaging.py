"""What `pip install` promises: the test extra covers the tests' imports, and optional features name their extra."""

import ast
import importlib
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# import name -> the requirement of pyproject's dependencies or test extra that provides it
PROVIDED_BY = {"numpy": "numpy", "scipy": "scipy", "sklearn": "scikit-learn", "threadpoolctl": "threadpoolctl",
               "pytest": "pytest", "hypothesis": "hypothesis", "mpmath": "mpmath", "matplotlib": "matplotlib",
               "dask": "dask", "distributed": "distributed", "pandas": "dask"}  # pandas: dask's dataframe extra


def _requirement_names(requirements):
    return {r.split("[")[0].split(">")[0].split("=")[0].split("<")[0].strip() for r in requirements}


def _third_party_imports():
    local = {p.stem for p in (ROOT / "tests").glob("*.py")} | {"fastrank", "tests", "common"}
    names = set()
    for path in (ROOT / "tests").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    return names - local - set(sys.stdlib_module_names)


def test_the_test_extra_provides_every_import_of_the_tests():
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = _requirement_names(project["dependencies"] + project["optional-dependencies"]["test"])
    imports = _third_party_imports()
    assert {"mpmath", "hypothesis", "sklearn"} <= imports  # the scan sees the tests' imports
    unknown = imports - set(PROVIDED_BY)
    assert not unknown, f"tests import {sorted(unknown)}: add them to PROVIDED_BY and to the test extra"
    missing = {name for name in imports if PROVIDED_BY[name] not in declared}
    assert not missing, f"pyproject's test extra lacks the distributions of {sorted(missing)}"


def test_fastrank_dask_without_dask_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "dask", None)  # import dask raises ImportError
    monkeypatch.delitem(sys.modules, "fastrank.dask", raising=False)
    with pytest.raises(ImportError, match=r'pip install "fastrank-rls\[dask\]"'):
        importlib.import_module("fastrank.dask")


def test_demo_plot_without_matplotlib_is_refused_before_the_comparison(monkeypatch, tmp_path, capsys):
    from fastrank import _demo

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setattr(_demo, "lambdarank_comparison", lambda **kw: pytest.fail("the comparison ran"))
    with pytest.raises(SystemExit) as exc:
        _demo.main(["--plot", str(tmp_path / "curve.png")])
    assert exc.value.code == 2 and "--plot needs matplotlib" in capsys.readouterr().err
    assert not (tmp_path / "curve.png").exists()


def test_plots_without_matplotlib_name_the_distribution(monkeypatch):
    from fastrank import plotting

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(ImportError, match=r'fastrank-rls\[plot\]'):
        plotting._axes(None)
