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
    return build([sums(300), sums(8)])


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
    k = sums(300)
    x = random_array((300, 1024), F)
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


def column_sum(rows: int, cols: int) -> K.Kernel:
    return K.Kernel("colsum", (rows, cols), 0, (K.Input("x", F, (cols, 1)),), (K.Load(0),),
                    (K.Output("s", 0, F, accumulate="sum"),))


@pytest.mark.parametrize("rows,cols,chunks", [
    (448, 1024, 6),     # ~90 us estimated: 6 chunks of whole ROW_BLOCKs (2 or 3 of them)
    (4096, 4096, 60),   # the most EVEN_CHUNKS has
    (100, 2048, 2),     # too few rows for 4 chunks of a ROW_BLOCK each: any rows
    (64, 65536, 2),     # a 256 KiB partial per chunk: as few chunks as split at all
    (1, 1 << 20, 1),    # one row cannot split
])
def test_split_bounds_depend_on_the_kernel_alone(rows, cols, chunks):
    bounds = jit.split_bounds(column_sum(rows, cols))
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
