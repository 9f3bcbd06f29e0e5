"""The native worker pool (codegen.pool) and the kernel splits that run on it."""

from __future__ import annotations

import array
import ctypes
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from codegen_testutil import build, random_array, run

from codegen import ir as K
from codegen import jit, pool
from runtime import _threads
from tests.threads import in_threads

pytestmark = pytest.mark.skipif(not pool.available(), reason="the native pool needs Linux on "
                                "x86-64 or aarch64")
ROOT = Path(__file__).resolve().parents[2]
F = "float32"


def sin_exp(rows: int) -> K.Kernel:
    """An elementwise kernel over (rows, 1024): big enough to split by default from 8 rows."""
    return K.Kernel(f"sin_exp{rows}", (rows, 1024), 0, (K.Input("x", F, (1024, 1)),),
                    (K.Load(0), K.Unary("sin", 0, F), K.Unary("exp", 1, F)),
                    (K.Output("y", 2, F),))


def column_sums(rows: int) -> K.Kernel:
    """Sums over the outer axis, accumulated across chunks (partials combined in order)."""
    return K.Kernel("colsum", (rows, 256), 0, (K.Input("x", F, (256, 1)),),
                    (K.Load(0), K.Unary("tanh", 0, F)),
                    (K.Output("s", 1, F, accumulate="sum"),))


@pytest.fixture(scope="module")
def module():
    return build([sin_exp(64), sin_exp(2), column_sums(509)])


@pytest.fixture
def budget():
    """Tests set the thread budget; it is restored afterwards."""
    before = _threads.get_num_threads()
    yield
    _threads.set_num_threads(before)


@pytest.mark.parametrize("threads", [2, 3, 4, 7])
def test_split_elementwise_results_equal_one_thread_bit_for_bit(module, threads):
    x = random_array((64, 1024), F)
    one = run(module, sin_exp(64), [x], threads=1)[0]
    np.testing.assert_array_equal(run(module, sin_exp(64), [x], threads=threads)[0], one)
    np.testing.assert_allclose(one, np.exp(np.sin(x)), rtol=1e-5)


def test_accumulated_split_is_deterministic_and_right(module):
    k = column_sums(509)  # a prime row count: uneven chunks
    x = random_array((509, 256), F)
    first = run(module, k, [x], threads=3)[0]
    for _ in range(20):
        np.testing.assert_array_equal(run(module, k, [x], threads=3)[0], first)
    want = np.tanh(x.astype(np.float64)).sum(0)
    np.testing.assert_allclose(first, want, rtol=1e-5, atol=1e-3)  # column sums near 0


def test_four_python_threads_calling_at_once_each_get_their_own_result(module):
    k, kc = sin_exp(64), column_sums(509)

    def caller(seed: int):
        def go():
            rng = np.random.default_rng(seed)
            x = rng.standard_normal((64, 1024)).astype(np.float32)
            xc = rng.standard_normal((509, 256)).astype(np.float32)
            want, want_c = run(module, k, [x], threads=1)[0], run(module, kc, [xc], threads=2)[0]
            for i in range(150):
                np.testing.assert_array_equal(run(module, k, [x], threads=2 + i % 3)[0], want)
                np.testing.assert_array_equal(run(module, kc, [xc], threads=2)[0], want_c)
        return go

    in_threads(*(caller(seed) for seed in range(4)))


def _recording_chunk(record: list[tuple[int, int, int]], pause_s: float):
    """A chunk function (the kernels' C ABI) written in Python: it notes (lo, hi, thread) and
    sleeps, so chunks can only overlap if they run on different threads."""
    def chunk(ptrs: int, lo: int, hi: int) -> None:
        record.append((lo, hi, threading.get_ident()))
        time.sleep(pause_s)
    fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)(chunk)
    return fn, ctypes.cast(fn, ctypes.c_void_p).value


def test_a_worker_takes_chunks_also_after_sleeping():
    record: list[tuple[int, int, int]] = []
    fn, address = _recording_chunk(record, 0.1)  # time enough for a sleeper to wake
    table = (ctypes.c_void_p * 1)()
    for _ in range(2):  # the second time every worker has slept on the futex for a while
        record.clear()
        pool.run_chunks(address, table, [0, 5, 9])
        assert sorted(r[:2] for r in record) == [(0, 5), (5, 9)]
        assert len({r[2] for r in record}) == 2  # the caller and a worker
        time.sleep(20 * pool.SPIN_NS / 1e9)


def test_a_caller_that_finds_the_pool_busy_runs_every_chunk_itself():
    record: list[tuple[int, int, int]] = []
    fn, address = _recording_chunk(record, 0.0)
    table = (ctypes.c_void_p * 1)()
    with pool._job_lock:  # another thread's job
        pool.run_chunks(address, table, [0, 1, 2, 3])
    assert record == [(i, i + 1, threading.get_ident()) for i in range(3)]


def test_run_chunks_rejects_bad_arguments():
    table = (ctypes.c_void_p * 2)()
    with pytest.raises(ValueError, match="1 to 16777215 chunks, got 1 bounds"):
        pool.run_chunks(1234, table, [0])
    with pytest.raises(ValueError, match="null function address"):
        pool.run_chunks(0, table, [0, 1])
    with pytest.raises(ValueError, match="threads must be a positive int, got 0"):
        pool.run_chunks(1234, table, [0, 1], threads=0)
    with pytest.raises(ValueError, match="2 chunks of 2 pointers each need a table of 4, got 2"):
        pool.run_chunks(1234, table, [0, 1, 2], stride=2)
    with pytest.raises(TypeError, match="table must be a ctypes array of pointer-sized items"):
        pool.run_chunks(1234, [table], [0, 1])
    with pytest.raises(TypeError, match="got array"):
        pool.run_chunks(1234, array.array("b", [0]), [0, 1])


def test_default_split_follows_the_thread_budget(module, budget, monkeypatch):
    chunks: list[int] = []
    real = pool.run_checked  # a split's way into the pool (past run_chunks' checks)
    monkeypatch.setattr(pool, "run_checked",
                        lambda fn, table, stride, bounds, threads: (
                            chunks.append(len(bounds) - 1),
                            real(fn, table, stride, bounds, threads)))
    x = random_array((64, 1024), F)
    want = np.exp(np.sin(x))
    for n in (3, 1, 2):
        _threads.set_num_threads(n)
        np.testing.assert_allclose(run(module, sin_exp(64), [x])[0], want, rtol=1e-5)
    with _threads.intra_op(1):
        run(module, sin_exp(64), [x])
    run(module, sin_exp(2), [x[:2]])  # too small to split at any budget
    assert chunks == [3, 2]


def test_a_kernel_that_splits_by_default_never_has_an_object_entry(module, budget):
    for n in (1, 4):
        _threads.set_num_threads(n)
        assert module.object_entry(sin_exp(64)) is None  # a plan's program follows later calls
        assert module.object_entry(sin_exp(2)) is not None


def _python(code: str, timeout: float = 60) -> subprocess.CompletedProcess:
    prelude = textwrap.dedent("""
        import numpy as np
        from codegen import compile_module, ir as K, render
        f = "float32"
        k = K.Kernel("sin_exp", (64, 1024), 0, (K.Input("x", f, (1024, 1)),),
                     (K.Load(0), K.Unary("sin", 0, f), K.Unary("exp", 1, f)),
                     (K.Output("y", 2, f),))
        cm = compile_module(render([k]), [k])
        x = np.linspace(-1, 1, 64 * 1024, dtype=np.float32).reshape(64, 1024)

        def run(cm, k, arrays, threads):
            y = np.empty_like(x)
            cm.run(k, arrays, [y], threads=threads)
            return [y]

        want = run(cm, k, [x], threads=1)[0]
        """)
    return subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code)], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout)


def test_a_forked_child_gets_a_pool_of_its_own():
    done = _python("""
        import os
        from codegen import pool
        assert (run(cm, k, [x], threads=2)[0] == want).all()
        parent_pool = pool._pool
        pid = os.fork()
        if pid == 0:
            ok = pool._pool is None and (run(cm, k, [x], threads=2)[0] == want).all()
            ok = ok and pool._pool is not parent_pool and pool.workers() == 1
            os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0, status
        assert (run(cm, k, [x], threads=2)[0] == want).all()
        print("ok")
        """)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


def test_interpreter_exit_stops_the_workers_even_during_jobs():
    done = _python("""
        import threading
        def forever():
            while True:
                run(cm, k, [x], threads=2)
        threading.Thread(target=forever, daemon=True).start()
        for _ in range(50):
            assert (run(cm, k, [x], threads=2)[0] == want).all()
        print("ok")
        """)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr


@pytest.mark.parametrize("threads", [1, 3])
def test_data_pointers_where_the_object_entry_does_not_fit(module, monkeypatch, threads):
    x, xc = random_array((64, 1024), F), random_array((509, 256), F)
    want = [run(module, sin_exp(64), [x], threads=threads)[0],
            run(module, column_sums(509), [xc], threads=threads)[0]]
    monkeypatch.setattr(jit, "object_entry_ok", lambda: False)  # another Python: a.ctypes.data
    np.testing.assert_array_equal(run(module, sin_exp(64), [x], threads=threads)[0], want[0])
    np.testing.assert_array_equal(run(module, column_sums(509), [xc], threads=threads)[0],
                                  want[1])


def test_handoff_benchmark_prints_its_figures(capsys):
    from benchmarks import handoff

    handoff.main(["--repeats", "2"])
    out = capsys.readouterr().out
    assert "ThreadPoolExecutor" in out and "native pool" in out and "split in 2" in out
    with pytest.raises(SystemExit):
        handoff.main(["--repeats", "0"])
