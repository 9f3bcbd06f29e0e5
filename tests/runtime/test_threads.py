"""runtime.set_num_threads / get_num_threads and runtime._threads.intra_op: one thread budget
for split kernels and BLAS."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
import threadpoolctl

import runtime as rt
from runtime import _threads
from tests.threads import in_threads

ROOT = Path(__file__).resolve().parents[2]


def blas() -> int:
    """BLAS threads as threadpoolctl reports them, independently of runtime._threads."""
    counts = {i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"}
    assert len(counts) == 1, counts
    return counts.pop()


@pytest.fixture(autouse=True)
def budget():
    before = rt.get_num_threads()
    yield
    rt.set_num_threads(before)


def test_default_is_the_cores_this_process_may_use():
    done = subprocess.run([sys.executable, "-c", "import os, runtime as rt; "
                           "print(rt.get_num_threads(), len(os.sched_getaffinity(0)))"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    threads, cores = done.stdout.split()
    assert threads == cores, done.stderr


def test_set_num_threads_sets_kernel_splits_and_blas():
    assert rt.set_num_threads is _threads.set_num_threads
    rt.set_num_threads(1)
    assert rt.get_num_threads() == 1 and blas() == 1
    rt.set_num_threads(3)
    assert rt.get_num_threads() == 3 and blas() == 3


@pytest.mark.parametrize("bad, message", [
    (0, "set_num_threads expects a positive integer"),
    (-2, "set_num_threads expects a positive integer"),
    ("2", "set_num_threads expects an int, but got str"),
    (2.0, "set_num_threads expects an int, but got float"),
    (True, "set_num_threads expects an int, but got bool"),
    (None, "set_num_threads expects an int, but got NoneType"),
])
def test_bad_counts_raise_pytorchs_errors(bad, message):
    rt.set_num_threads(2)
    with pytest.raises(RuntimeError, match=f"^{message}$"):
        rt.set_num_threads(bad)
    with pytest.raises(RuntimeError, match=message.replace("set_num_threads", "intra_op")):
        with _threads.intra_op(bad):
            pass
    assert rt.get_num_threads() == 2 and blas() == 2


def test_intra_op_narrows_nests_and_restores():
    rt.set_num_threads(4)
    with _threads.intra_op(2):
        assert rt.get_num_threads() == 2 and blas() == 2
        with _threads.intra_op(3):  # never more than an enclosing block allows
            assert rt.get_num_threads() == 2
        with _threads.intra_op(1):
            assert rt.get_num_threads() == 1 and blas() == 1
        assert rt.get_num_threads() == 2 and blas() == 2
        rt.set_num_threads(6)  # a new base; the block still narrows
        assert rt.get_num_threads() == 2
    assert rt.get_num_threads() == 6 and blas() == 6


def test_intra_op_restores_after_an_exception():
    rt.set_num_threads(3)
    with pytest.raises(KeyError), _threads.intra_op(1):
        raise KeyError
    assert rt.get_num_threads() == 3 and blas() == 3


def test_blocks_open_in_two_threads_combine_and_each_removes_only_its_own():
    rt.set_num_threads(4)
    both_in, first_out = threading.Barrier(2), threading.Event()
    seen: dict[str, int] = {}

    def first():
        with _threads.intra_op(3):
            both_in.wait()
            seen["first, both open"] = rt.get_num_threads()
        first_out.set()

    def second():
        with _threads.intra_op(2):
            both_in.wait()
            first_out.wait()
            seen["second, alone"] = rt.get_num_threads()

    in_threads(first, second)
    assert seen == {"first, both open": 2, "second, alone": 2}
    assert rt.get_num_threads() == 4 and blas() == 4


def test_blas_controllers_are_looked_up_once(monkeypatch):
    made = []

    class Counting(threadpoolctl.ThreadpoolController):
        def __init__(self) -> None:
            made.append(1)
            super().__init__()

    monkeypatch.setattr(threadpoolctl, "ThreadpoolController", Counting)
    monkeypatch.setattr(_threads, "_controllers", None)
    for n in (1, 2, 1, 2):
        rt.set_num_threads(n)
        with _threads.intra_op(1):
            assert _threads.blas_threads() == 1
    assert made == [1]
    monkeypatch.undo()
    assert blas() == 2


def test_blas_starts_from_openblas_num_threads_set_by_the_user():
    code = """
import os
import runtime as rt
from runtime import _threads
from tests.runtime.test_threads import blas
cores = len(os.sched_getaffinity(0))
assert blas() == 1 and rt.get_num_threads() == cores  # OPENBLAS_NUM_THREADS is BLAS's alone
with _threads.intra_op(2):
    assert blas() == 1 and rt.get_num_threads() == min(2, cores)
assert blas() == 1 and rt.get_num_threads() == cores
rt.set_num_threads(2)
assert blas() == 2
print("ok")
"""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=60)
    assert done.stdout.strip() == "ok", done.stderr
