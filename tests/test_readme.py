"""Every Python code block of the README runs as written (in order, in one scratch folder, each
block in a fresh namespace), and the quick start prints what the README says it prints."""

import contextlib
import importlib.util
import io
import os
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
OPTIONAL = {"matplotlib": "matplotlib", "fastrank.dask": "dask", "distributed": "distributed"}


def _blocks():
    text = README.read_text()
    return re.findall(r"```python\n(.*?)```", text, flags=re.S), re.findall(r"```text\n(.*?)```", text, flags=re.S)


def test_readme_has_the_two_commands_first():
    lines = README.read_text().splitlines()
    assert lines[3].startswith("pip install . && python -m fastrank")
    assert lines[4].startswith('pip install ".[test]" && python -m pytest -q')
    ci = (README.parent / ".ci" / "run").read_text()
    assert 'pip install ".[test]" && python -m pytest -q' in ci


def test_every_python_block_runs(tmp_path, monkeypatch):
    code_blocks, text_blocks = _blocks()
    assert len(code_blocks) >= 6
    monkeypatch.chdir(tmp_path)
    outputs = []
    for k, code in enumerate(code_blocks):
        for needle, module in OPTIONAL.items():
            if needle in code and importlib.util.find_spec(module) is None:
                pytest.skip(f"README block {k} needs {module}")
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(code, f"README.md block {k}", "exec"), {"__name__": f"readme_block_{k}"})
        outputs.append(out.getvalue())
    # the quick start's printed lines are the README's text block right after it
    assert outputs[0].strip() == text_blocks[0].strip()
    assert os.path.exists("model.frk") and os.path.exists("train.txt")
