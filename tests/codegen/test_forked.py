"""codegen.forked: a kernel module emitted in parts by forked children: the same results as
one module, one engine a part, a failed child's part emitted by the caller."""

from __future__ import annotations

import contextlib
import os
import time

import numpy as np
import pytest
from codegen_testutil import random_array, run

from codegen import cache, forked, target
from codegen import ir as K

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="no os.fork here")


def _kernel(n: int, name: str, unary: str = "exp") -> K.Kernel:
    f = "float32"
    inputs = (K.Input("a", f, (1,)), K.Input("b", f, (1,)))
    exprs = (K.Load(0), K.Load(1), K.Unary(unary, 0, f), K.Binary("mul", 2, 1, f),
             K.Binary("add", 3, 0, f))
    return K.Kernel(name, (n,), 0, inputs, exprs, (K.Output("out", 4, f),))


def _kernels() -> list[K.Kernel]:
    # 14 functions of 6 element-exprs (past PARALLEL_MIN_EXPRS); k0 and k14 are one
    return [_kernel(100 + 7 * (i % 14), f"k{i}", ("exp", "tanh")[i % 14 % 2])
            for i in range(18)]


def test_parts_balance_and_keep_shared_functions_together() -> None:
    kernels = _kernels()
    split = forked.parts(kernels, 2)
    assert len(split) == 2 and sorted(k.name for p in split for k in p) == sorted(
        k.name for k in kernels)
    part_of = {k.name: i for i, p in enumerate(split) for k in p}
    for i in range(4):  # k{i} and k{i+14} are one function
        assert part_of[f"k{i}"] == part_of[f"k{i + 14}"]
    assert abs(len(split[0]) - len(split[1])) <= 3
    assert forked.parts(kernels[:2], 2) == [kernels[:2]]  # too light to split
    assert forked.parts(kernels, 1) == [kernels]


def test_a_module_in_parts_runs_as_one_module(monkeypatch: pytest.MonkeyPatch,
                                              tmp_path) -> None:
    kernels = _kernels()
    monkeypatch.setenv(forked.WORKERS_ENV, "1")
    one = cache.get_compiled(kernels, tmp_path / "one")
    monkeypatch.setenv(forked.WORKERS_ENV, "3")
    cache.clear_cache(tmp_path / "one", disk=False)  # compiled anew, not from memory
    # get_compiled emits through forked.emit_in_parts: three parts are its object code (one
    # module emitted whole is one part)
    split = cache.get_compiled(kernels, tmp_path / "split")
    assert len(split.code.parts()) == 3 and len(split._engines) == 1  # all in one engine
    for k in kernels:
        arrays = [random_array(k.domain, "float32") for _ in range(2)]
        for a, b in zip(run(one, k, arrays), run(split, k, arrays), strict=True):
            np.testing.assert_array_equal(a, b)
        assert split.asm(k.name)
    cache.clear_cache(tmp_path / "split", disk=False)  # a new process: from the disk entry
    again = cache.get_compiled(kernels, tmp_path / "split")
    assert len(again.code.parts()) == 3
    k = kernels[5]
    arrays = [random_array(k.domain, "float32") for _ in range(2)]
    np.testing.assert_array_equal(run(again, k, arrays)[0], run(one, k, arrays)[0])


def test_a_failed_child_leaves_its_part_to_the_caller(monkeypatch: pytest.MonkeyPatch) -> None:
    parent, real = os.getpid(), target.emit

    def only_here(module):  # a child's emission fails (it exits 1); the caller's works
        if os.getpid() != parent:
            raise RuntimeError("no LLVM in the child")
        return real(module)

    monkeypatch.setattr(target, "emit", only_here)
    monkeypatch.setenv(forked.WORKERS_ENV, "2")
    code = forked.emit_in_parts(_kernels())
    assert code is not None and len(code.parts()) == 2
    assert all(p.object_file for p in code.parts())


def test_object_code_parts_round_trip() -> None:
    a, b = target.ObjectCode(b"\x7fELF one", "ir a"), target.ObjectCode(b"\x7fELF two!", "ir b")
    joined = target.ObjectCode.joined([a, b])
    assert joined.parts() == [a, b]
    assert target.ObjectCode.joined([a]) is a and a.parts() == [a]


@pytest.mark.parametrize("value", ["0", "-2", "two"])
def test_workers_setting_is_checked(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(forked.WORKERS_ENV, value)
    with pytest.raises(ValueError, match=forked.WORKERS_ENV):
        forked.workers()


def test_children_reaped_by_the_system_still_deliver(monkeypatch: pytest.MonkeyPatch) -> None:
    """With SIGCHLD ignored, the system reaps children itself (waitpid finds none): a part
    read whole from its pipe is used."""
    import signal

    previous = signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    try:
        monkeypatch.setenv(forked.WORKERS_ENV, "2")
        code = forked.emit_in_parts(_kernels())
    finally:
        signal.signal(signal.SIGCHLD, previous)
    assert code is not None and len(code.parts()) == 2


def test_a_fork_waits_for_a_thread_inside_llvmlite(monkeypatch: pytest.MonkeyPatch) -> None:
    """A thread inside an llvmlite call (loading a built module) holds llvmlite's lock: a
    child forked then inherited it held, and waited for it for good (its part emitted by the
    caller after TIMEOUT_S: ten minutes)."""
    import threading

    monkeypatch.setenv(forked.WORKERS_ENV, "2")
    monkeypatch.setattr(forked, "TIMEOUT_S", 30.0)
    inside, done = threading.Event(), threading.Event()

    def llvmlite_call() -> None:
        with forked._llvmlite_lock():
            inside.set()
            done.wait(10)

    holder = threading.Thread(target=llvmlite_call)
    holder.start()
    inside.wait()
    threading.Timer(0.3, done.set).start()
    try:
        started = forked.start(_kernels())
    finally:
        done.set()
        holder.join()
    assert started is not None and len(started.children) == 2
    pending = list(started.children)
    started.children.clear()
    try:
        for pid, fd in pending:
            assert forked._collect(pid, fd, time.monotonic() + 30.0) is not None
    finally:
        forked.cancel(started)


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="no /proc here")
def test_children_do_not_outlive_their_parent(monkeypatch: pytest.MonkeyPatch) -> None:
    """Children started for a module never collected (a background compile whose step was
    not called again) are stopped when the process exits (``_stop_all``, at exit); and a child
    holds no read end of a sibling's pipe, which kept that sibling's write blocked for good
    once its parent was gone (40 such children outlived a run of the fuzzer)."""
    monkeypatch.setenv(forked.WORKERS_ENV, "2")
    a = forked.start(_kernels())
    b = forked.start(_kernels()[:16])
    assert a is not None and b is not None
    try:
        a_reads = {os.readlink(f"/proc/self/fd/{fd}") for _, fd in a.children}
        for pid, _ in b.children:  # closed as the child begins (it compiles for a second)
            deadline = time.monotonic() + 2.0
            while a_reads & _fds(pid) and time.monotonic() < deadline:
                time.sleep(0.01)
            assert not a_reads & _fds(pid), f"child {pid} holds a sibling's read end"
        pids = [pid for pid, _ in a.children + b.children]
        forked._stop_all()
        assert not a.children and not b.children and a not in forked._LIVE
        assert not [p for p in pids if _alive(p)]
    finally:
        forked.cancel(a)
        forked.cancel(b)


def _fds(pid: int) -> set[str]:
    found = set()
    with contextlib.suppress(OSError):
        for fd in os.listdir(f"/proc/{pid}/fd"):
            with contextlib.suppress(OSError):
                found.add(os.readlink(f"/proc/{pid}/fd/{fd}"))
    return found


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1][0] not in "ZX"
    except FileNotFoundError:
        return False
