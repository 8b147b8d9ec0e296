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
