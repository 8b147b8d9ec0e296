"""Threads that compose: one rule for fastrank's C++ threads, BLAS threads and Python threads.

The rule (README, "Threads"):

1. fastrank's compute regions (a dense solve, a kernel matrix, a cross-validation) draw their
   threads from one process-wide budget of ``os.cpu_count()`` cores.  A region that wants ``t``
   threads (its resolved ``n_jobs``) waits until ``t`` cores are free, so concurrent fastrank
   calls from Python threads run one after another (or side by side when their thread counts
   fit) instead of oversubscribing the cores.
2. While a region runs, BLAS/LAPACK (SciPy's and numpy's OpenBLAS, reached through
   ``threadpoolctl``; the C++ core calls SciPy's OpenBLAS, so this covers the LAPACK calls made
   from C++) use the region's thread count when it runs alone and one thread when other regions
   run at the same time -- never ``cores`` BLAS threads on top of fastrank's own threads.  The
   BLAS setting is only changed when no other region is running (changing OpenBLAS's thread count
   during a call in another thread is not safe), and it is restored when the last region ends.
3. Regions nest: a region entered by a thread that already holds one runs inside the outer one's
   budget (no second wait, no deadlock).

Results never depend on this: fastrank's threaded kernels give bit-identical results for every
thread count, and BLAS results differ only in rounding (within the tests' tolerances).

Use :func:`compute_region` around any call into the C++ core that runs threads or BLAS::

    with compute_region(n_threads):
        A = _core.rankrls_fit(...)

``FASTRANK_THREAD_POLICY=off`` disables the mechanism (regions then do nothing).
"""

from __future__ import annotations

import contextlib
import os
import threading

__all__ = ["compute_region", "cpu_budget", "blas_controller"]

_cond = threading.Condition()
_free = None            # cores not held by a region (lazily os.cpu_count())
_active = 0             # regions running now
_saved_limits = None    # the BLAS limiter restoring the user's setting when the last region ends
_blas_now = 1           # BLAS threads set by the first of the running regions
_local = threading.local()
_controller = None
_controller_failed = False


def cpu_budget():
    """Cores shared by fastrank's compute regions (``os.cpu_count()``)."""
    return max(1, os.cpu_count() or 1)


def blas_controller():
    """The threadpoolctl controller of the loaded BLAS libraries (created once), or None when
    threadpoolctl is unavailable."""
    global _controller, _controller_failed
    if _controller is None and not _controller_failed:
        try:
            import scipy.linalg.cython_lapack  # noqa: F401  (load SciPy's OpenBLAS before the scan)
            from threadpoolctl import ThreadpoolController

            _controller = ThreadpoolController()
        except Exception:  # pragma: no cover - threadpoolctl missing or failing: no BLAS control
            _controller_failed = True
    return _controller


def _set_blas(n):
    """Limit BLAS to n threads; returns the limiter whose restore_original_limits undoes it."""
    ctl = blas_controller()
    if ctl is None:
        return None
    try:
        blas = ctl.select(user_api="blas")
        if all(lib.num_threads == int(n) for lib in blas.lib_controllers):
            return None  # already so (the common case n_jobs=None): no limit/restore round trip
        return blas.limit(limits=int(n))
    except Exception:  # pragma: no cover
        return None


@contextlib.contextmanager
def compute_region(n_threads):
    """Run the body with ``n_threads`` cores of the process-wide budget and BLAS limited as the
    module docstring says.  ``n_threads`` is a resolved thread count (``check_n_jobs``)."""
    global _free, _active, _saved_limits, _blas_now
    if os.environ.get("FASTRANK_THREAD_POLICY", "").strip().lower() == "off":
        yield
        return
    depth = getattr(_local, "depth", 0)
    if depth > 0:  # nested: already inside this thread's budget
        _local.depth = depth + 1
        try:
            yield
        finally:
            _local.depth = depth
        return
    total = cpu_budget()
    want = max(1, min(int(n_threads), total))
    with _cond:
        if _free is None:
            _free = total
        while True:
            # Joining running regions: this region's BLAS calls run with their BLAS setting, so
            # it reserves at least that many cores.
            need = want if _active == 0 else max(want, _blas_now)
            if _free >= need:
                break
            _cond.wait()
        want = need
        _free -= want
        _active += 1
        if _active == 1:
            # Alone: BLAS gets this region's threads (restored when the last region ends).
            _blas_now = want
            _saved_limits = _set_blas(want)
    _local.depth = 1
    try:
        yield
    finally:
        _local.depth = 0
        with _cond:
            _free += want
            _active -= 1
            if _active == 0 and _saved_limits is not None:
                try:
                    _saved_limits.restore_original_limits()
                except Exception:  # pragma: no cover
                    pass
                _saved_limits = None
            _cond.notify_all()
