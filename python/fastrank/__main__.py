"""``python -m fastrank``: the command-line program (``python -m fastrank train ...``, see
``fastrank -h``), or without a command the demo on the bundled LightGBM sample
(``python -m fastrank [--plot cv.png]``)."""

from __future__ import annotations

import sys


def main(argv=None):
    """Dispatch: a command (train, predict, evaluate, cv, -h) goes to :mod:`fastrank.cli` and
    returns its exit code; otherwise the demo runs and returns its result rows."""
    argv = list(sys.argv[1:] if argv is None else argv)
    from .cli import COMMANDS

    if argv and (argv[0] in COMMANDS or argv[0] in ("-h", "--help", "--version")):
        from .cli import main as cli_main

        return cli_main(argv)
    from ._demo import main as demo_main

    return demo_main(argv)


if __name__ == "__main__":
    out = main()
    sys.exit(out if isinstance(out, int) else 0)
