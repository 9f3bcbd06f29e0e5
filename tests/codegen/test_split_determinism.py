"""Split kernels give the same bits whatever the thread count: a kernel with accumulated outputs
runs in chunks fixed by the kernel (``jit.split_bounds``), on as many threads as allowed, and a
pool job never uses more threads than it asks for."""

from __future__ import annotations

import ctypes
import threading
import time

import numpy as np
import pytest
from codegen_testutil import build, random_array, run

from codegen import ir as K
from codegen import jit, pool
from runtime import _threads

pytestmark = pytest.mark.skipif(not pool.available(), reason="the native pool needs Linux on "
                                "x86-64 or aarch64")
F = "float32"


def sums(rows: int) -> K.Kernel:
    """tanh(x) over (rows, 1024) with its column sums, column maxes and whole-tensor sum, all
    accumulated over the rows, besides the per-element values."""
    exprs = (K.Load(0), K.Unary("tanh", 0, F), K.Reduce("sum", 1, F))
    return K.Kernel(f"sums{rows}", (rows, 1024), 1, (K.Input("x", F, (1024, 1)),), exprs,
                    (K.Output("y", 1, F), K.Output("cols", 1, F, "sum"),
                     K.Output("colmax", 1, F, "max"), K.Output("total", 2, F, "sum")))


@pytest.fixture(scope="module")
def module():
    return build([sums(600), sums(8)])


@pytest.fixture
def budget():
    before = _threads.get_num_threads()
    yield
    _threads.set_num_threads(before)


@pytest.fixture
def chunk_calls(monkeypatch):
    """(chunks, threads) of every split of a kernel with accumulated outputs."""
    calls: list[tuple[int, int]] = []
    real = pool.run_accumulating

    def record(fn, arrays, objects, bounds, threads, partials):
        calls.append((len(bounds) - 1, threads))
        real(fn, arrays, objects, bounds, threads, partials)

    monkeypatch.setattr(pool, "run_accumulating", record)
    return calls


def test_accumulated_outputs_are_the_same_bits_on_any_thread_count(module, budget, chunk_calls):
    k = sums(600)
    x = random_array((600, 1024), F)
    with _threads.intra_op(1):
        want = run(module, k, [x])
    results = {}
    for n in (2, 3, 4):
        _threads.set_num_threads(n)
        results[n] = run(module, k, [x])
    results[7] = run(module, k, [x], threads=7)
    for n, got in results.items():
        for name, a, b in zip(("y", "cols", "colmax", "total"), want, got):
            np.testing.assert_array_equal(b, a, err_msg=f"{name}, {n} threads")
    chunks = len(jit.split_bounds(k)) - 1
    assert chunks >= 4  # the partials of several chunks are really combined
    assert chunk_calls == [(chunks, 1), (chunks, 2), (chunks, 3), (chunks, 4), (chunks, 7)]
    t = np.tanh(x.astype(np.float64))
    np.testing.assert_allclose(want[1], t.sum(0), rtol=1e-5, atol=1e-4)
    np.testing.assert_array_equal(want[2], want[0].max(0))
    np.testing.assert_allclose(want[3], t.sum(), rtol=1e-5, atol=1e-2)


def test_a_kernel_too_small_to_split_runs_in_one_call_whatever_the_threads(module, budget,
                                                                             chunk_calls):
    x = random_array((8, 1024), F)
    assert jit.split_bounds(sums(8)) == (0, 8)
    want = run(module, sums(8), [x], threads=1)
    for got in (run(module, sums(8), [x], threads=3), run(module, sums(8), [x])):
        for a, b in zip(want, got):
            np.testing.assert_array_equal(b, a)
    assert chunk_calls == []


@pytest.mark.parametrize("threads", [0, -1, 2.0, True])
def test_a_thread_count_that_is_no_positive_int_is_refused(module, threads):
    x = random_array((8, 1024), F)
    with pytest.raises(ValueError, match=f"threads must be a positive int, got {threads!r}"):
        run(module, sums(8), [x], threads=threads)


def column_sum(rows: int, cols: int) -> K.Kernel:
    return K.Kernel("colsum", (rows, cols), 0, (K.Input("x", F, (cols, 1)),), (K.Load(0),),
                    (K.Output("s", 0, F, accumulate="sum"),))


def total(rows: int, cols: int) -> K.Kernel:
    """A whole-tensor sum: rows summed, their sums accumulated (a partial of one float)."""
    return K.Kernel("total", (rows, cols), 1, (K.Input("x", F, (cols, 1)),),
                    (K.Load(0), K.Reduce("sum", 0, F)), (K.Output("t", 1, F, accumulate="sum"),))


@pytest.mark.parametrize("kernel,chunks", [
    (column_sum(448, 1024), 4),    # ~50 us: 4 chunks of whole ROW_BLOCKs, 3 or 4 of them
    (column_sum(4096, 4096), 24),  # its 16 KiB partials keep it below the 60 CHUNK_US allows
    (column_sum(64, 65536), 2),    # a 256 KiB partial per chunk: as few chunks as split at all
    (total(1000, 4096), 60),       # the most EVEN_CHUNKS has
    (total(100, 4096), 6),         # too few rows for 6 chunks of a ROW_BLOCK each: any rows
    (total(1, 1 << 20), 1),        # one row cannot split
    (column_sum(96, 1024), 1),     # below PARALLEL_MIN_US
])
def test_split_bounds_depend_on_the_kernel_alone(kernel, chunks):
    rows = kernel.outer_size
    bounds = jit.split_bounds(kernel)
    assert len(bounds) - 1 == chunks and bounds[0] == 0 and bounds[-1] == rows
    assert all(lo < hi for lo, hi in zip(bounds, bounds[1:]))
    if rows >= chunks * 32:
        assert all(b % 32 == 0 for b in bounds[:-1])  # the kernel folds every 32 rows
    sizes = [hi - lo for lo, hi in zip(bounds, bounds[1:])]
    assert max(sizes) - min(sizes) <= (32 if rows >= chunks * 32 else 1)


def _recording_chunk(names: list[str], pause_s: float):
    """A chunk function (the kernels' C ABI) that notes the thread it runs on and sleeps, so
    that every admitted thread has time to take chunks."""
    def chunk(ptrs: int, lo: int, hi: int) -> None:
        names.append(threading.current_thread().name)
        time.sleep(pause_s)
    fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)(chunk)
    return fn, ctypes.cast(fn, ctypes.c_void_p).value


def test_a_job_uses_no_more_threads_than_it_asks_for_in_a_bigger_pool():
    names: list[str] = []
    fn, address = _recording_chunk(names, 0.05)
    table = (ctypes.c_void_p * 1)()
    pool.run_chunks(address, table, list(range(9)), threads=8)
    assert pool.workers() >= 7
    assert len(set(names)) > 2  # a job may use the grown pool
    caller = threading.current_thread().name
    for threads in (2, 3):
        names.clear()
        pool.run_chunks(address, table, list(range(17)), threads=threads)
        assert len(names) == 16
        helpers = {f"backplan-pool-{i}" for i in range(threads - 1)}
        assert set(names) <= {caller} | helpers, (threads, set(names))
    names.clear()
    pool.run_chunks(address, table, list(range(5)), threads=1)
    assert set(names) == {caller}


def sum_and_max(dtype: str, rows: int) -> K.Kernel:
    return K.Kernel(f"sum_max_{dtype}", (rows, 64), 0, (K.Input("x", dtype, (64, 1)),),
                    (K.Load(0),), (K.Output("s", 0, dtype, "sum"), K.Output("m", 0, dtype, "max")))


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
def test_every_combine_of_partials_gives_numpys_result(dtype):
    k = sum_and_max(dtype, 4096)
    assert len(jit.split_bounds(k)) - 1 >= 4
    cm = build([k])
    x = random_array((4096, 64), dtype)
    got = run(cm, k, [x], threads=1)
    for threads in (2, 3):
        for a, b in zip(got, run(cm, k, [x], threads=threads)):
            np.testing.assert_array_equal(b, a)
    if dtype == "int64":
        np.testing.assert_array_equal(got[0], x.sum(0))
    else:
        np.testing.assert_allclose(got[0], x.astype(np.float64).sum(0), rtol=1e-6, atol=1e-4)
    np.testing.assert_array_equal(got[1], x.max(0))


def test_infinities_and_nans_in_one_chunk_reach_the_combined_sums():
    k = sum_and_max("float32", 2048)
    x = random_array((2048, 64), F)
    x[1500, 0] = np.inf             # one chunk's sum is inf: the compensation must not turn
    x[10, 1], x[2000, 1] = np.inf, -np.inf  # it into nan, and inf - inf across chunks is nan
    x[700, 2] = np.nan
    sums, maxes = run(build([k]), k, [x], threads=2)
    assert sums[0] == np.inf and np.isnan(sums[1]) and np.isnan(sums[2])
    assert maxes[0] == np.inf and maxes[1] == np.inf and np.isnan(maxes[2])
    assert np.isfinite(sums[3:]).all()


def test_workers_a_job_leaves_out_go_to_sleep_while_jobs_go_on():
    """Jobs that exclude a worker do not keep it spinning: it sleeps SPIN_NS after the last job
    it could join, so an idle part of a pool grown earlier does not take cores from others."""
    table = (ctypes.c_void_p * 1)()
    grow, grow_address = _recording_chunk([], 0.0)
    pool.run_chunks(grow_address, table, list(range(6)), threads=5)
    assert pool.workers() >= 4
    sleepers = ctypes.c_int64.from_address(pool._pool.state + 8 * pool._SLEEPERS)
    seen: list[int] = []
    start = time.perf_counter()

    def chunk(ptrs: int, lo: int, hi: int) -> None:
        if time.perf_counter() - start > 200 * pool.SPIN_NS / 1e9:
            seen.append(sleepers.value)

    fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)(chunk)
    address = ctypes.cast(fn, ctypes.c_void_p).value
    # until all but worker 0 sleep, for 2 s at most (a worker the machine's load held off its
    # core may take its SPIN_NS late)
    while len(seen) < 20 or (max(seen) < pool.workers() - 1 and time.perf_counter() - start < 2):
        pool.run_chunks(address, table, [0, 1, 2], threads=2)  # worker 0 may join
    assert max(seen) >= pool.workers() - 1, seen


def _elementwise(rows: int) -> K.Kernel:
    """exp(sin(x)) over (rows, 1024): split across the threads, no accumulated output."""
    exprs = (K.Load(0), K.Unary("sin", 0, F), K.Unary("exp", 1, F))
    return K.Kernel(f"ew{rows}", (rows, 1024), 0, (K.Input("x", F, (1024, 1)),), exprs,
                    (K.Output("y", 2, F),))


def test_launcher_of_a_split_kernel_gives_runs_bits_and_checks_every_call(budget):
    """A plan's launcher of a kernel split across the threads (one with fixed chunks of
    accumulated outputs, one without) gives ``run``'s bits on 1 and 3 threads, and refuses
    arrays that do not match its signature on every call."""
    ew, acc = _elementwise(600), sums(600)
    cm = build([ew, acc])
    assert cm.splits(ew) and cm.splits(acc)
    x = random_array((600, 1024), F)
    for k in (ew, acc):
        want = run(cm, k, [x], threads=1)
        outs = [o.shape for o in want]
        signature = [(x.shape, x.dtype)] + [(s, np.dtype(F)) for s in outs]
        launch = cm.launcher(k, signature)
        for threads in (1, 3):
            _threads.set_num_threads(threads)
            got = [np.empty(s, F) for s in outs]
            launch([x, *got])
            for a, b in zip(want, got):
                np.testing.assert_array_equal(b, a, err_msg=f"{k.name}, {threads} threads")
        for bad in (x[:, ::2], x.astype(np.float64), x[:300]):
            with pytest.raises(ValueError, match=f"kernel '{k.name}'"):
                launch([bad, *[np.empty(s, F) for s in outs]])
