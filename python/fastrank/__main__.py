"""``python -m fastrank``: the command-line program (``python -m fastrank train ...``, see ``fastrank -h``), or without
a command the demo on the bundled LightGBM sample (``python -m fastrank [--plot cv.png]``)."""

from __future__ import annotations

import sys

from . import _demo, cli


def main(argv=None):
    """Dispatch: a command (train, predict, evaluate, cv, -h) goes to :mod:`fastrank.cli` and
    returns its exit code; otherwise the demo runs and returns its result rows."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and (argv[0] in cli.COMMANDS + ("-h", "--help", "--version") or not argv[0].startswith("-")):
        return cli.main(argv)  # a word that is no command: the program's "invalid choice" naming the commands
    return _demo.main(argv)


if __name__ == "__main__":
    out = main()
    sys.exit(out if isinstance(out, int) else 0)
