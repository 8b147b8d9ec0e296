import contextlib
import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the oracles module


def shared_data(name):
    """A dataset folder of ../shared/data (CI clones the repo with shared/ beside it)."""
    for root in (Path(__file__).resolve().parents[1].parent / "shared" / "data", Path("/work/shared/data")):
        if (root / name).is_dir():
            return root / name
    pytest.fail(f"shared dataset {name!r} not found beside the repository (../shared/data/{name})")


@contextlib.contextmanager
def pipe_path(data):
    """The path of a pipe holding the bytes ``data`` (at most the 64 KiB a pipe buffers), as ``<(...)`` gives: its
    bytes can be read once."""
    r, w = os.pipe()
    os.write(w, data)
    os.close(w)
    try:
        yield f"/dev/fd/{r}"
    finally:
        os.close(r)
