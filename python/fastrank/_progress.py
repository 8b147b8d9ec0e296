"""Progress reporting for long work, cheap enough to call between chunks of C++ work::

    with progress(total=n_permutations, desc="permutation test", verbose=verbose) as bar:
        for chunk in chunks:
            ...                       # C++ work on a chunk (GIL released, no callback inside)
            bar.update(len(chunk))    # between chunks only, never from inside a C++ loop
    for a in progress.iterate(alphas, desc="RankRLSCV", unit="alpha", verbose=verbose): ...
    with stage("factorizing the kernel", verbose=verbose): ...   # one step with its timing

``verbose`` (scikit-learn's): 0 / False / None -> silent (``update`` is an empty method call; overheads
in docs/design/cli-and-model-files.md); 1 / True -> a ``tqdm`` bar when tqdm is installed and stderr is
a terminal, otherwise a log line to stderr at most every ``min_interval`` seconds (default 2 s) and
one at the end, and the timings of :func:`stage`; 2 or more -> as 1; "auto" -> 1 on a terminal, 0
otherwise (the command-line default).  ``tqdm`` is optional and imported only when a bar is shown.
"""

from __future__ import annotations

import sys
import time

__all__ = ["progress", "stage", "resolve_verbose", "write_line"]

_open_bars = []  # tqdm bars being drawn: a log line must go through tqdm.write or it breaks them


def write_line(text, file=None):
    """Print one log line to ``file`` (default stderr) without breaking a tqdm bar being drawn."""
    stream = sys.stderr if file is None else file
    if _open_bars:
        from tqdm.auto import tqdm

        tqdm.write(text, file=stream)
        stream.flush()
    else:
        print(text, file=stream, flush=True)


def resolve_verbose(verbose, file=None):
    """The integer verbosity (0 silent) for ``verbose`` in {None, bool, int >= 0, "auto"}."""
    if verbose is None:
        return 0
    if isinstance(verbose, str) and verbose == "auto":
        return 1 if getattr(sys.stderr if file is None else file, "isatty", lambda: False)() else 0
    try:
        v = -1 if isinstance(verbose, str) else int(verbose)
    except (TypeError, ValueError, OverflowError):
        v = -1
    if v < 0 or v != verbose:  # 2.5 is not cut to 2
        raise ValueError(f"verbose must be an integer >= 0, a bool or 'auto', got {verbose!r}")
    return v


def _fmt_seconds(s):
    if s < 60:
        return f"{s:.1f} s"
    m, s = divmod(int(round(s)), 60)
    return f"{m} min {s:02d} s" if m < 60 else f"{m // 60} h {m % 60:02d} min"


class _Silent:
    """verbose=0: every method is a no-op; leaving a ``with`` closes (on an exception too if close_on_error)."""

    close_on_error = True

    def update(self, n=1):
        pass

    def note(self, text):
        pass

    def close(self):
        pass

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *exc):
        if exc_type is None or self.close_on_error:
            self.close()
        return False


class _LogLines(_Silent):
    """Log lines to a stream, rate-limited; no final line after an exception."""

    close_on_error = False

    def __init__(self, total, desc, unit, file, min_interval):
        self.total, self.desc, self.unit = total, desc, unit
        self.file, self.min_interval = file, min_interval  # file None: write_line's stderr
        self.n = 0
        self.start = self.last = time.monotonic()
        self._extra = ""

    def _line(self, final=False):
        el = time.monotonic() - self.start
        frac = self.n / self.total
        eta = "" if final or self.n == 0 else f", ~{_fmt_seconds(el * (1 - frac) / frac)} left"
        body = f"{self.n}/{self.total} {self.unit} ({100 * frac:.0f}%), {_fmt_seconds(el)}{eta}"
        write_line(f"[fastrank] {self.desc}: {body}{self._extra}{' done' if final else ''}", self.file)

    def update(self, n=1):
        self.n += n
        now = time.monotonic()
        if now - self.last >= self.min_interval:
            self.last = now
            self._line()

    def note(self, text):
        self._extra = f" ({text})" if text else ""

    def close(self):
        self._line(final=True)


class _Bar(_Silent):
    def __init__(self, total, desc, unit, file, min_interval):
        from tqdm.auto import tqdm

        self.bar = tqdm(total=total, desc=desc, unit=f" {unit}", file=sys.stderr if file is None else file,
                        mininterval=min(min_interval, 0.5), leave=False, dynamic_ncols=True)
        _open_bars.append(self.bar)

    def update(self, n=1):
        self.bar.update(n)

    def note(self, text):
        self.bar.set_postfix_str(text, refresh=False)

    def close(self):
        _open_bars.remove(self.bar)
        self.bar.close()


def progress(total, desc="working", *, verbose=0, unit="it", file=None, min_interval=2.0, backend="auto"):
    """A reporter of ``total`` (> 0) steps with ``update(n)``, ``note(text)``, ``close()``; usable as a context manager.
    ``progress.iterate(iterable, ...)`` wraps an iterable.  ``backend``: "auto" (a tqdm bar on a terminal, else
    log lines), "tqdm" (a bar when tqdm is installed) or "log"."""
    if backend not in ("auto", "tqdm", "log"):
        raise ValueError(f"backend must be 'auto', 'tqdm' or 'log', got {backend!r}")
    if not resolve_verbose(verbose, file):
        return _Silent()
    if backend == "tqdm" or (backend == "auto" and resolve_verbose("auto", file)):  # a bar on a terminal
        try:
            return _Bar(total, desc, unit, file, min_interval)
        except ImportError:  # tqdm is optional
            pass
    return _LogLines(total, desc, unit, file, min_interval)


def _iterate(iterable, desc="working", **kwargs):
    with progress(len(iterable), desc, **kwargs) as bar:
        for item in iterable:
            yield item
            bar.update(1)


progress.iterate = _iterate


class stage:
    """``with stage("fitting RankRLS", verbose=v):`` -> '[fastrank] fitting RankRLS ...' before and
    '... done in 1.2 s' after (verbose >= 1); silent at verbose 0.  ``elapsed`` holds the time."""

    def __init__(self, desc, *, verbose=0, file=None):
        self.desc = desc
        self.v = resolve_verbose(verbose, file)
        self.file = file
        self.elapsed = 0.0

    def __enter__(self):
        self.t0 = time.monotonic()
        if self.v:
            write_line(f"[fastrank] {self.desc} ...", self.file)
        return self

    def __exit__(self, exc_type, *exc):
        self.elapsed = time.monotonic() - self.t0
        if self.v and exc_type is None:
            write_line(f"[fastrank] {self.desc}: done in {_fmt_seconds(self.elapsed)}", self.file)
        return False
