"""Threads that compose (docs/design/robustness.md, "Threads"): compute regions draw their threads from one process-wide
budget of the usable cores (:func:`cpu_budget`; a region that wants ``t`` threads waits until ``t`` cores are free;
regions nest, no deadlock); while regions run, SciPy's OpenBLAS (the C++ core's) gets the region's threads when it runs
alone (never above the limit in force; one where the region's work is fastrank's own threads, ``kernel_blas_threads``)
and one otherwise, every other BLAS copy (numpy's) one (two threaded OpenBLAS
pools used alternately spin against each other: exact linear cross-validation 3-15x slower on 2 cores;
``OPENBLAS_NUM_THREADS`` does not reach both), set only when no other region runs and restored when the last ends
unless the caller changed BLAS meanwhile.  An interrupt (Ctrl-C) anywhere gives the cores and the BLAS setting back; a
forked child starts with every core free and the user's BLAS setting.  Results depend on this only through BLAS's
rounding (OpenBLAS's threaded LAPACK: 2e-10 relative on a Gaussian RankRLS fit).  Wrap any call
into the C++ core that runs threads or BLAS in ``with compute_region(n_threads):``; ``FASTRANK_THREAD_POLICY=off``
disables it.
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading

__all__ = ["compute_region", "cpu_budget", "blas_controller", "kernel_blas_threads", "threads_for_kernel",
           "threads_for_work"]


def cpu_budget():
    """Cores shared by fastrank's compute regions: the CPUs this process may run on (its affinity, as ``taskset`` or a
    container sets it; ``os.cpu_count()`` where unknown), at most ``OMP_NUM_THREADS`` (its first entry) when set
    (joblib's workers set it to their share, so a search with ``n_jobs`` processes does not run ``n_jobs`` x cores
    threads)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    omp = os.environ.get("OMP_NUM_THREADS", "").split(",")[0].strip()  # OpenMP's list form "2,1": the outer level
    return max(1, min(cores, int(omp)) if omp.isdigit() and int(omp) > 0 else cores)


# Work (flops) that pays for one more thread's start-up and synchronisation: on 2 cores exact linear leave-query-out
# at m = 5000, p = 136 (~1e8 flops) is no faster with two threads than with one, a Gaussian fit at m = 1000 (~3e8) is.
_FLOPS_PER_THREAD = 2e8


# Kernel work, entries x (n_features + 50) (the product's multiply-adds and the map's exp), that pays for a thread: on 2
# cores Gaussian fits and predictions were slower on two threads than on one up to ~1e6 kernel entries at 10 features
# (3e5 at 136) and faster from ~2e6 (1e6): the kernel's BLAS product leaves OpenBLAS's workers spinning on the cores
# the kernel map's threads then need, which only enough work amortizes.
_KERNEL_WORK_PER_THREAD = 5e7


def threads_for_work(flops, per_thread=_FLOPS_PER_THREAD):
    """The default thread count (``n_jobs=None``) for a call of about ``flops`` floating-point operations: one thread
    per ``per_thread`` of work, at least 1, at most every core."""
    return int(max(1, min(cpu_budget(), float(flops) // per_thread)))


# Features below which a kernel's BLAS product is a small part of its work: its region runs BLAS on one thread, as
# OpenBLAS's workers, spinning after each threaded call, slowed the kernel map's and the solvers' threads that follow
# (Gaussian predictions of 3000 rows against 2000 at 10 features 28.0 -> 19.6 ms on two threads, a hinge RankSVM at
# m = 1500 166-175 -> 124-129 ms); from 256 features the product's threads pay more (those predictions 66.8 ms with
# BLAS on two threads, 71.9 ms on one).
_KERNEL_BLAS_FEATURES = 128


def kernel_blas_threads(n_features):
    """The BLAS threads of a region whose BLAS work is a kernel's inner products (and small systems): one below
    ``_KERNEL_BLAS_FEATURES`` features, else None (the region's)."""
    return 1 if n_features < _KERNEL_BLAS_FEATURES else None


# With BLAS on one thread (kernel_blas_threads) a region's threads are fastrank's own and pay earlier.  A prediction is
# then all threaded kernel map: Gaussian predictions against 1000 rows at 10-100 features were x0.99-1.01 on two threads
# at 3e4 kernel entries, x0.94-0.97 at 1e5, x0.75-0.82 at 5e5.  A kernel SVRank fit at 10 features x1.04-1.06 at
# m = 700, x0.95 at 850, x0.87-0.88 at 1000 (the kernel RankSVM x0.99-1.01 at 850-1000).
_KERNEL_MAP_WORK_PER_THREAD = 3e6
_KERNEL_OWN_WORK_PER_THREAD = 3e7


def threads_for_kernel(entries, n_features, blas_threads=None, prediction=False):
    """:func:`threads_for_work` for a kernel fit or prediction of ``entries`` kernel values on ``n_features`` features
    (0 for a precomputed kernel) in a region of ``blas_threads`` (:func:`kernel_blas_threads`)."""
    per_thread = _KERNEL_WORK_PER_THREAD if blas_threads != 1 else \
        _KERNEL_MAP_WORK_PER_THREAD if prediction else _KERNEL_OWN_WORK_PER_THREAD
    return threads_for_work(float(entries) * (n_features + 50.0), per_thread)


class _Local(threading.local):
    depth = 0  # this thread's nesting of regions
    taken = 0  # the cores this thread's outermost region holds


class _ThreadBudget:
    """The process-wide budget of cores that compute regions draw from, and the BLAS limit in force while regions run
    (one instance, ``_BUDGET``).

    An interrupt (KeyboardInterrupt, raised at any call into Python code) must not leak cores or BLAS settings: the
    cores a thread holds are recorded in ``local.taken`` together with the counts, with no call in between, and
    :meth:`release` gives back what is recorded, so it can run again when an interrupt stops it."""

    def __init__(self):
        self.lock = threading.RLock()
        self.cond = threading.Condition(self.lock)
        self.total = cpu_budget()  # the budget the pool was last sized to
        self.free = self.total     # cores not held by a region
        self.active = 0            # regions running now
        self.saved_limits = None   # (library, user's threads, regions' threads) while regions changed BLAS
        self.blas_now = 1          # BLAS threads set by the first of the running regions
        self.local = _Local()

    def set_blas(self, n):
        """SciPy's BLAS to n threads, every other BLAS copy to one (module docstring), recording in ``saved_limits``
        what restores the user's setting (before any change, so an interrupted change is undone too)."""
        with contextlib.suppress(Exception):  # threadpoolctl failing: BLAS left as it is
            # never above the limit in force (the caller's threadpool_limits, a joblib worker's share)
            want = [(lib, lib.num_threads, min(int(n), lib.num_threads) if scipy_blas else 1)
                    for lib, scipy_blas in _blas_libraries()]
            if any(now != k for _, now, k in want):  # else already so: no limit/restore round trip
                self.saved_limits = want
                _set_threads([(lib, k) for lib, _, k in want])

    def acquire(self, n_threads, blas_threads=None):
        with self.lock:
            while True:
                # The budget can change while the process runs (OMP_NUM_THREADS unset, a wider affinity): the pool
                # follows it, or a region wanting more cores than the pool was sized to would wait for ever.
                budget = cpu_budget()
                self.free += budget - self.total
                self.total = budget
                want = max(1, min(int(n_threads), budget))
                # Joining running regions: this region's BLAS calls run with their BLAS setting,
                # so it reserves at least that many cores (never more than the budget).
                need = want if self.active == 0 else min(budget, max(want, self.blas_now))
                if self.free >= need:
                    break
                self.cond.wait()
            self.free -= need
            self.active += 1
            self.local.taken = need
            if self.active == 1:
                # Alone: BLAS gets this region's threads (restored when the last region ends).
                self.blas_now = need if blas_threads is None else max(1, min(int(blas_threads), need))
                self.set_blas(self.blas_now)
        return need

    def release(self):
        """Give back the cores this thread holds, restore BLAS when no region runs and wake the waiting regions; safe
        to repeat."""
        with self.lock:
            taken, self.local.taken = self.local.taken, 0
            if taken:
                self.free += taken
                self.active -= 1
            try:
                if self.active == 0 and self.saved_limits is not None:
                    # under the lock, so that no region starts from a half-restored setting
                    _finish(_restore, self.saved_limits)
                    self.saved_limits = None
            finally:
                self.cond.notify_all()


def _finish(step, *args):
    """``step(*args)``, run once more if an interrupt (any exception) stops it, which is then raised; step must be safe
    to repeat."""
    try:
        step(*args)
    except BaseException:
        step(*args)
        raise


def _restore(saved):
    """Put the BLAS libraries of ``saved`` ((library, user's threads, regions' threads) triples) back at the user's
    threads, unless one is at neither count: then the caller set BLAS while the regions ran (``threadpool_limits`` in
    another thread) and that setting stays in force.  Safe to repeat."""
    with contextlib.suppress(Exception):  # threadpoolctl failing: BLAS left as it is
        if saved and all(lib.num_threads in (user, k) for lib, user, k in saved):
            _set_threads([(lib, user) for lib, user, _ in saved])


def _is_scipy_blas(lib):
    """Whether a threadpoolctl library controller is SciPy's bundled BLAS (the C++ core's)."""
    path = str(getattr(lib, "filepath", "")).replace("\\", "/")
    return "/scipy.libs/" in path or "/scipy/" in path  # also macOS's /scipy/.dylibs/


def _set_threads(want):
    """Set each library of the (library, threads) pairs ``want`` to its thread count."""
    for lib, k in want:
        if lib.num_threads != k:
            # threadpoolctl >= 3.8 lets one "controlling" thread change a process-wide OpenBLAS pool and silently
            # ignores the others (a worker thread's region then ran BLAS on every core, its results differing in the
            # last bit); the budget's lock orders these changes, so any thread takes control and hands it back.
            handover = getattr(type(lib), "clear_controlling_thread", None)
            try:
                if handover is not None:
                    handover(force=True)
                lib.set_num_threads(k)
            finally:
                if handover is not None:
                    handover()


_BUDGET = _ThreadBudget()


def _reset_in_child():
    """In a forked child the parent's regions (their threads are not copied) hold no cores and BLAS is the user's."""
    saved = _BUDGET.saved_limits
    _BUDGET.__init__()
    _restore(saved)


if hasattr(os, "register_at_fork"):
    # the lock held across the fork: the child never copies a budget or a BLAS setting in the middle of a change
    os.register_at_fork(before=lambda: _BUDGET.lock.acquire(), after_in_parent=lambda: _BUDGET.lock.release(),
                        after_in_child=_reset_in_child)


@functools.lru_cache(maxsize=None)
def _blas_libraries():
    """The BLAS libraries of :func:`blas_controller`, each with whether it is SciPy's, found once (selecting them
    on every region took most of its 40-75 us)."""
    ctl = blas_controller()
    libs = () if ctl is None else ctl.select(user_api="blas").lib_controllers
    return tuple((lib, _is_scipy_blas(lib)) for lib in libs)


@functools.lru_cache(maxsize=None)
def blas_controller():
    """The threadpoolctl controller of the loaded BLAS libraries (created once), or None without threadpoolctl."""
    try:
        import scipy.linalg.cython_lapack  # noqa: F401  (load SciPy's OpenBLAS before the scan)
        from threadpoolctl import ThreadpoolController

        return ThreadpoolController()
    except Exception:  # pragma: no cover - threadpoolctl missing or failing: no BLAS control
        return None


def _policy_off():
    """Whether ``FASTRANK_THREAD_POLICY`` turns the policy off ("off", "0", "false", "no"); "on", "1", "true", "yes"
    or unset keep it; any other value is refused by name rather than read as either."""
    value = os.environ.get("FASTRANK_THREAD_POLICY", "").strip().lower()
    if value in ("off", "0", "false", "no"):
        return True
    if value in ("", "on", "1", "true", "yes"):
        return False
    raise ValueError(f"FASTRANK_THREAD_POLICY={value!r}: use off (or 0, false, no) to disable fastrank's thread "
                     "policy, or on (1, true, yes)")


@contextlib.contextmanager
def compute_region(n_threads, blas_threads=None):
    """Run the body with ``n_threads`` cores (a resolved thread count, ``check_n_jobs``) of the process-wide budget and
    BLAS limited as the module docstring says; ``blas_threads``, when given, caps SciPy's BLAS below ``n_threads`` (a
    region whose threads are fastrank's own: :func:`kernel_blas_threads`)."""
    if _policy_off():
        yield
        return
    local = _BUDGET.local
    depth = local.depth
    try:
        if depth == 0:  # a nested region runs on its thread's cores
            _BUDGET.acquire(n_threads, blas_threads)
        local.depth = depth + 1
        yield
    finally:
        local.depth = depth
        if depth == 0 and local is _BUDGET.local:  # else entered before a fork: this child's budget never lent cores
            _finish(_BUDGET.release)
