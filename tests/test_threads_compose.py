"""fastrank's threads compose (docs/design/robustness.md, "Threads"): every learner's C++ threads run inside a compute
region of the process-wide core budget, the budget follows the cores the process may use while it runs, and results
never depend on n_jobs."""

import os
import select
import signal
import threading
import warnings
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import scipy.sparse as sp
from threadpoolctl import threadpool_limits

import fastrank
from fastrank import _threads
from fastrank.metrics import pairwise_disagreement


def _regression(m, d, seed=0, groups=None):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((m, d))
    y = np.round(X @ rng.standard_normal(d) + 0.5 * rng.standard_normal(m), 1)
    return X, y, None if groups is None else np.sort(rng.integers(0, groups, m))


def test_a_fit_after_the_budget_grows_does_not_wait_for_ever(monkeypatch):
    # the pool was sized once, at import, while every region re-read the budget: a region wanting the grown budget
    # waited for cores the pool never had (OMP_NUM_THREADS unset or a wider affinity after import: a silent hang)
    monkeypatch.setattr(_threads, "cpu_budget", lambda: 1)
    with _threads.compute_region(1):
        pass
    monkeypatch.setattr(_threads, "cpu_budget", lambda: 3)
    X, y, _ = _regression(200, 5)
    done = []
    worker = threading.Thread(target=lambda: done.append(fastrank.RankRLS(1.0, n_jobs=3).fit(X, y)), daemon=True)
    worker.start()
    worker.join(timeout=60)
    assert done, "the fit waited for cores the budget's pool never had"
    monkeypatch.setattr(_threads, "cpu_budget", lambda: 1)  # and shrinks again: regions still run
    fastrank.RankRLS(1.0, n_jobs=3).fit(X, y)
    monkeypatch.undo()
    with _threads.compute_region(1):  # the pool back at the real budget
        pass
    assert _threads._BUDGET.free == _threads._BUDGET.total == _threads.cpu_budget()


def _ordinal(y):
    return np.digitize(y, np.quantile(y, [0.25, 0.5, 0.75]))


@pytest.mark.parametrize("make, target, kernel_predictions", [
    (lambda: fastrank.RankSVM(n_jobs=2), None, False),
    (lambda: fastrank.RankSVM(kernel="rbf", gamma=0.1, n_jobs=2), None, True),
    (lambda: fastrank.SVRank(n_jobs=2), None, False),
    (lambda: fastrank.RankBoost(n_estimators=5, n_jobs=2), None, False),
    (lambda: fastrank.OnlineMPRank(kernel="rbf", gamma=0.1, n_jobs=2), None, True),
    (lambda: fastrank.OAPBPM(n_estimators=4, kernel="rbf", gamma=0.1, n_jobs=2, random_state=0), _ordinal, True),
    (lambda: fastrank.PRankVP(kernel="rbf", gamma=0.1), _ordinal, True),
])
def test_every_learner_runs_its_threads_in_a_compute_region(monkeypatch, make, target, kernel_predictions):
    # RankSVM, SVRank, RankBoost and the on-line learners called the core's threads outside any region: 4 fits from
    # Python threads ran up to 9 threads on 2 cores
    X, y, _ = _regression(120, 4)
    y = y if target is None else target(y)
    seen, acquire = [], _threads._BUDGET.acquire
    monkeypatch.setattr(_threads._BUDGET, "acquire", lambda n, *blas: seen.append(n) or acquire(n, *blas))
    model = make().fit(X, y)
    assert seen, "fit took no cores from the budget"
    seen.clear()
    model.predict(X)  # linear and boosted scores are numpy products on this thread
    assert bool(seen) == kernel_predictions


@pytest.mark.parametrize("make", [
    lambda: fastrank.RankRLS(kernel="rbf", n_jobs=2),
    lambda: fastrank.RankRLS(kernel="rbf", basis_vectors=20, random_state=0, n_jobs=2),
    lambda: fastrank.RankSVM(kernel="rbf", n_jobs=2),
    lambda: fastrank.RankSVM(kernel="rbf", basis_vectors=20, random_state=0, n_jobs=2),
    lambda: fastrank.SVRank(kernel="rbf", n_jobs=2),
    lambda: fastrank.OnlineMPRank(kernel="rbf", n_jobs=2),
])
def test_small_kernel_fits_and_predictions_take_one_core_whatever_n_jobs(monkeypatch, make):
    # two threads made Gaussian fits of 300 rows 1.1-1.5x slower than one (LAPACK and the kernel map on two cores
    # against OpenBLAS's spinning workers): the threads follow the work, n_jobs caps them
    monkeypatch.setattr(_threads, "cpu_budget", lambda: 2)
    X, y, _ = _regression(120, 4)
    seen, acquire = [], _threads._BUDGET.acquire
    monkeypatch.setattr(_threads._BUDGET, "acquire", lambda n, *blas: seen.append(n) or acquire(n, *blas))
    model = make().fit(X, y)
    model.predict(X)
    assert seen and set(seen) == {1}


@pytest.mark.parametrize("n_features, blas", [(4, 1), (130, None)])
def test_kernel_work_of_few_features_runs_blas_on_one_thread(monkeypatch, n_features, blas):
    # OpenBLAS's workers, spinning after a threaded product, slowed the kernel map's and the solvers' threads: Gaussian
    # predictions of 3000 x 2000 at 10 features took 28.0 ms on two threads with BLAS on two, 20.2 ms with BLAS on one
    monkeypatch.setattr(_threads, "cpu_budget", lambda: 2)
    X, y, _ = _regression(1500, n_features)
    seen, acquire = [], _threads._BUDGET.acquire
    monkeypatch.setattr(_threads._BUDGET, "acquire", lambda n, blas=None: seen.append((n, blas)) or acquire(n, blas))
    model = fastrank.RankRLS(kernel="rbf", n_jobs=2).fit(X, y)
    assert seen == [(2, None)]  # the dual solve's Cholesky keeps BLAS's threads
    seen.clear()
    model.predict(X)
    assert seen == [(2, blas)]
    seen.clear()
    fastrank.SVRank(kernel="rbf", max_iter=3, n_jobs=2).fit(X, y)
    assert seen == [(2, blas)]


@pytest.mark.parametrize("loss, n_features, blas", [("hinge", 4, 1), ("hinge", 1030, None), ("squared_hinge", 4, None)])
def test_the_linear_hinge_runs_blas_on_one_thread_below_1024_features(monkeypatch, loss, n_features, blas):
    # its exact Newton steps' dsyrk and dpotrf left OpenBLAS's workers spinning beside the threaded sweeps that follow:
    # CSR m = 20,000 x 136 in groups took 5.9 s with BLAS on two threads, 3.8 s on one; from ~1000 features the
    # factorization's threads pay more (100 Newton steps at 1500 features: 8.57 s on two, 10.13 s on one)
    X, y, _ = _regression(60, n_features)
    seen, acquire = [], _threads._BUDGET.acquire
    monkeypatch.setattr(_threads._BUDGET, "acquire", lambda n, blas=None: seen.append((n, blas)) or acquire(n, blas))
    fastrank.RankSVM(loss=loss, n_jobs=2).fit(X, np.round(y))
    assert [b for _, b in seen] == [blas]


def test_regions_with_blas_on_one_thread_and_threaded_blas_run_together_like_serial():
    # kernel predictions (BLAS on one thread under fastrank's threads) beside Gaussian fits (BLAS on the region's
    # threads) from four Python threads: the same numbers as one after another, and the user's BLAS setting after
    X, y, _ = _regression(1500, 6)
    model = fastrank.RankRLS(kernel="rbf", n_jobs=2).fit(X[:1000], y[:1000])
    jobs = [lambda: model.predict(X), lambda: fastrank.RankRLS(kernel="rbf", n_jobs=2).fit(X, y).dual_coef_] * 2
    serial = [job() for job in jobs]
    libs = [lib for lib, _ in _threads._blas_libraries()]
    before = [lib.num_threads for lib in libs]
    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        out = list(pool.map(lambda job: job(), jobs))
    np.testing.assert_allclose(np.concatenate(out), np.concatenate(serial), rtol=1e-10, atol=1e-12)
    assert [lib.num_threads for lib in libs] == before
    assert _threads._BUDGET.free == _threads._BUDGET.total


def test_kernel_work_takes_threads_by_its_size(monkeypatch):
    monkeypatch.setattr(_threads, "cpu_budget", lambda: 2)
    assert _threads.threads_for_kernel(1000 * 1000, 10) == 1 == _threads.threads_for_kernel(300 * 1000, 136)
    assert _threads.threads_for_kernel(1500 * 1500, 10) == 2 == _threads.threads_for_kernel(1000 * 1000, 136)
    # with BLAS on one thread the region's threads are fastrank's own: a fit takes two from about 1e6 entries, a
    # prediction (all threaded kernel map) from about 1e5
    assert _threads.threads_for_kernel(700 * 700, 10, 1) == 1
    assert _threads.threads_for_kernel(1000 * 1000, 10, 1) == 2
    assert _threads.threads_for_kernel(30 * 1000, 10, 1, prediction=True) == 1
    assert _threads.threads_for_kernel(100 * 1000, 10, 1, prediction=True) == 2
    assert _threads.threads_for_kernel(300 * 1000, 136, None, prediction=True) == 1


def test_threaded_measures_run_in_a_compute_region(monkeypatch):
    rng = np.random.default_rng(1)
    y, f = rng.integers(0, 5, 60_000).astype(float), rng.standard_normal(60_000)
    seen, acquire = [], _threads._BUDGET.acquire
    monkeypatch.setattr(_threads._BUDGET, "acquire", lambda n, *blas: seen.append(n) or acquire(n, *blas))
    pairwise_disagreement(y, f, n_jobs=1)
    assert seen == []  # one thread: nothing to share, no region
    assert pairwise_disagreement(y, f, n_jobs=2) == pairwise_disagreement(y, f, n_jobs=1)
    assert seen == [2]
    seen.clear()
    pairwise_disagreement(y[:2000], f[:2000], n_jobs=2)  # threads cost more than they save: one, whatever n_jobs
    assert seen == []


@pytest.mark.parametrize("measure", [
    lambda y, f, g, n: fastrank.metrics.ndcg(y, f, g, k=10, n_jobs=n),
    lambda y, f, g, n: fastrank.metrics.discrete_ranking_loss(y, f, g, n_jobs=n),
    lambda y, f, g, n: fastrank.metrics.magnitude_preserving_cost(y, f, g, cost="hmp", n_jobs=n),
    lambda y, f, g, n: fastrank.metrics.magnitude_preserving_cost(y, f, g, cost="svr", epsilon=0.5, n_jobs=n),
    lambda y, f, g, n: fastrank.metrics.stability_ranking_loss(y, f, g, n_jobs=n),
])
def test_threaded_measure_sweeps_equal_one_thread_bit_for_bit(measure):
    # below 50,000 rows the sweeps run on one thread whatever n_jobs: their threaded paths are checked here
    rng = np.random.default_rng(2)
    m = 60_000
    y, f = rng.integers(0, 5, m).astype(float), np.round(rng.standard_normal(m), 2)
    g = np.sort(rng.integers(0, 300, m))
    assert measure(y, f, g, 2) == measure(y, f, g, 1)


def test_large_linear_fits_are_bit_identical_for_every_n_jobs():
    # X^T g summed one partial product per thread: RankSVM (dense from 8192 rows, CSR from 40,000 non-zeros) and CG on
    # CSR changed by up to 4.7e-12 between n_jobs=1 and 2; the chunks now depend on the matrix only
    X, y, g = _regression(9000, 10, groups=400)
    rng = np.random.default_rng(2)
    Xs = sp.random(20000, 50, density=0.1, format="csr", random_state=1)
    ys = np.round(Xs @ rng.standard_normal(50) + 0.5 * rng.standard_normal(20000), 1)
    gs = np.sort(rng.integers(0, 500, 20000))
    cases = [(lambda nj: fastrank.RankSVM(1.0, n_jobs=nj), X, y, g),
             (lambda nj: fastrank.RankSVM(1.0, loss="hinge", n_jobs=nj), X, y, g),
             (lambda nj: fastrank.RankSVM(1.0, loss="hinge", n_jobs=nj), Xs, ys, gs),
             (lambda nj: fastrank.RankRLS(1.0, solver="cg", n_jobs=nj), Xs, ys, gs)]
    with threadpool_limits(1):  # BLAS's own threads aside
        for make, A, t, q in cases:
            one, two, three = (make(nj).fit(A, t, q).coef_ for nj in (1, 2, 3))
            np.testing.assert_array_equal(one, two)
            np.testing.assert_array_equal(one, three)


def test_a_region_in_another_thread_sets_blas_and_gives_the_same_bits():
    # threadpoolctl >= 3.8 lets only its "controlling" thread change a pthreads OpenBLAS pool: once the main thread had
    # set BLAS threads, a region in any other thread left SciPy's BLAS on every core (oversubscribed beside the
    # region's threads) and exact leave-pair-out came out different in the last bit
    libs = [lib for lib, scipy_blas in _threads._blas_libraries() if scipy_blas]
    if not libs or _threads.cpu_budget() < 2 or libs[0].num_threads < 2:
        pytest.skip("needs SciPy's BLAS under threadpoolctl with two threads")
    lib = libs[0]
    outside = lib.num_threads
    lib.set_num_threads(outside)  # the main thread takes threadpoolctl's control, as a user's call would
    rng = np.random.default_rng(0)
    X = rng.standard_normal((60, 4))
    y = X @ rng.standard_normal(4) + 0.3 * rng.standard_normal(60)
    model = fastrank.RankRLS(kernel="rbf", gamma=0.5, alpha=1.0)
    main = fastrank.model_selection.leave_pair_out(model, X, y)
    seen = {}

    def worker():
        with _threads.compute_region(1):
            seen["inside"] = lib.num_threads
        seen["lpo"] = fastrank.model_selection.leave_pair_out(model, X, y)

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join()
    assert seen["inside"] == 1 and lib.num_threads == outside
    np.testing.assert_array_equal(seen["lpo"], main)


def _blas_or_skip():
    """Every BLAS library under threadpoolctl, when a one-thread region changes them all (else the test skips)."""
    libs = [lib for lib, _ in _threads._blas_libraries()]
    if _threads.cpu_budget() < 2 or not libs or min(lib.num_threads for lib in libs) < 2:
        pytest.skip("needs BLAS under threadpoolctl with two threads")
    return libs


def _assert_budget_as_before(libs, before):
    budget = _threads._BUDGET
    assert (budget.free, budget.active, budget.saved_limits) == (budget.total, 0, None)
    assert (budget.local.depth, budget.local.taken) == (0, 0)
    assert [lib.num_threads for lib in libs] == before


@pytest.mark.parametrize("at", range(1, 5))  # the 4 changes: both libraries to 1 thread, then both back
@pytest.mark.parametrize("after", [False, True])
def test_an_interrupt_while_blas_changes_gives_the_cores_and_blas_back(monkeypatch, at, after):
    # a Ctrl-C landing in threadpoolctl's Python code escaped acquire after the cores were taken (compute_region's
    # finally not yet entered) or release before it gave BLAS back and woke the waiters: the next fit wanting every
    # core waited for ever, BLAS stayed at the region's thread count
    libs = _blas_or_skip()
    before = [lib.num_threads for lib in libs]
    calls, nested, real = [], [], type(libs[0]).set_num_threads

    def interrupted(lib, k):
        if nested:  # threadpoolctl calls itself once it holds control
            return real(lib, k)
        calls.append(k)
        nested.append(k)
        try:
            if after:
                real(lib, k)
            if len(calls) == at:
                raise KeyboardInterrupt
            if not after:
                real(lib, k)
        finally:
            nested.clear()

    monkeypatch.setattr(type(libs[0]), "set_num_threads", interrupted)
    X, y, _ = _regression(40, 3)
    with pytest.raises(KeyboardInterrupt):
        fastrank.RankRLS(1.0, n_jobs=1).fit(X, y)
    _assert_budget_as_before(libs, before)


@pytest.mark.parametrize("where", ["acquire", "release"])
def test_an_interrupt_around_a_region_gives_the_cores_back(monkeypatch, where):
    # between acquire's return and compute_region's try, or as release starts
    libs = _blas_or_skip()
    before = [lib.num_threads for lib in libs]
    real, calls = getattr(_threads._BUDGET, where), []

    def interrupted(*args):
        calls.append(where)
        if where == "acquire":
            real(*args)
        if len(calls) == 1:
            raise KeyboardInterrupt
        return real(*args)

    monkeypatch.setattr(_threads._BUDGET, where, interrupted)
    with pytest.raises(KeyboardInterrupt):
        with _threads.compute_region(1):
            pass
    monkeypatch.undo()
    _assert_budget_as_before(libs, before)


def test_an_interrupt_while_waking_the_waiting_regions_still_wakes_them(monkeypatch):
    cond, total = _threads._BUDGET.cond, _threads.cpu_budget()
    waiting, real_wait, real_notify, calls = threading.Event(), cond.wait, cond.notify_all, []
    monkeypatch.setattr(cond, "wait", lambda *args: waiting.set() or real_wait(*args))

    def interrupted():
        calls.append(1)
        if len(calls) == 1:
            raise KeyboardInterrupt
        real_notify()

    def other_region():
        with _threads.compute_region(total):
            pass

    waiter = threading.Thread(target=other_region, daemon=True)
    with pytest.raises(KeyboardInterrupt):
        with _threads.compute_region(total):
            waiter.start()
            assert waiting.wait(30)  # the lock is free once the waiter waits
            monkeypatch.setattr(cond, "notify_all", interrupted)
    waiter.join(30)
    assert not waiter.is_alive(), "the waiting region was never woken"
    assert _threads._BUDGET.free == _threads._BUDGET.total


def test_a_region_ending_inside_the_callers_threadpool_limits_leaves_them():
    # a region ending in a worker thread put back the BLAS counts of its start inside the main thread's
    # threadpool_limits(1): SciPy's BLAS ran on 2 threads in the caller's one-thread block
    libs = _blas_or_skip()
    before = [lib.num_threads for lib in libs]
    inside, leave, done = threading.Event(), threading.Event(), threading.Event()

    def worker():
        with _threads.compute_region(2):
            inside.set()
            leave.wait(30)
        done.set()

    thread = threading.Thread(target=worker)
    thread.start()
    inside.wait(30)
    try:
        with threadpool_limits(limits=1, user_api="blas"):
            leave.set()
            assert done.wait(30)
            assert [lib.num_threads for lib in libs] == [1] * len(libs)
    finally:
        leave.set()
        thread.join()
        # threadpoolctl puts back what it found on entry, numpy's BLAS at the region's one thread
        with _threads._BUDGET.lock:
            _threads._set_threads(list(zip(libs, before)))
    assert _threads._BUDGET.free == _threads._BUDGET.total and _threads._BUDGET.saved_limits is None


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_child_forked_while_a_region_runs_starts_with_every_core_free():
    # the child inherited the budget with the cores of a region whose thread is not in the child: its fits wanting
    # every core waited for ever; and numpy's BLAS at the region's one thread
    libs = _blas_or_skip()
    before = [lib.num_threads for lib in libs]
    inside, leave = threading.Event(), threading.Event()

    def hold():
        with _threads.compute_region(_threads.cpu_budget()):
            inside.set()
            leave.wait(60)

    thread = threading.Thread(target=hold)
    thread.start()
    inside.wait(30)
    r, w = os.pipe()
    try:
        assert [lib.num_threads for lib in libs] != before
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads (Python >= 3.12)
            pid = os.fork()
        if pid == 0:
            try:
                b = _threads._BUDGET
                state = [b.free, b.total, b.active, b.saved_limits, [lib.num_threads for lib in libs]]
                X, y, _ = _regression(60, 3)
                fastrank.RankRLS(1.0, kernel="rbf", n_jobs=-1).fit(X, y)
                os.write(w, repr(state).encode())
            finally:
                os._exit(0)
        os.close(w)
        ready = select.select([r], [], [], 60)[0]
        if not ready:
            os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        assert ready, "the child's fit waited for the parent's cores"
        total = _threads.cpu_budget()
        assert os.read(r, 1000).decode() == repr([total, total, 0, None, before])
    finally:
        os.close(r)
        leave.set()
        thread.join()
    assert [lib.num_threads for lib in libs] == before
