"""A plan's kernel module rendered and emitted in parts, the parts past the first by forked
child processes, so that a first call with an empty cache uses the cores it may use.

LLVM holds one lock per process (``codegen.target.LOCK``; llvmlite's own too), so threads
cannot overlap two modules' optimization; processes can. ``emit_in_parts`` splits the
kernels (each group of kernels that are one function kept together: ``codegen.llvm.distinct``)
into balanced parts, forks a child for each part but the first, renders and emits the first
itself, and reads each child's object code and optimized IR back through a pipe; the module's
``ObjectCode`` holds one object file a part (``ObjectCode.joined``; ``codegen.jit.load``
gives each part its engine). A child that fails or runs past TIMEOUT_S leaves its part to
the caller, which emits it as it would have: the same code either way, as each part is the
same IR text whichever process renders it.

The fork happens with ``codegen.target.LOCK`` and llvmlite's own lock held: no other thread of
this process is inside LLVM then, so the child's copy of LLVM's state is consistent, and the
child's copies of the locks are released as the ``with`` block it was forked in ends. A child
closes the read ends of its siblings' pipes, and the children left when the process exits are
stopped: none outlives its parent. The child runs nothing but the
rendering and emission of its part, and leaves with ``os._exit``.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import select
import signal
import struct
import time
from collections.abc import Sequence
from typing import Any

from codegen import ir as kir
from codegen import target
from codegen.target import ObjectCode

# kernels of fewer element-exprs (over the distinct functions) are emitted in one part: below
# it the fork and the second engine cost more than half the module's emission saves
PARALLEL_MIN_EXPRS = 80
MAX_PARTS = 8
WORKERS_ENV = "BACKPLAN_COMPILE_WORKERS"  # processes a module's emission may use (1: none)
TIMEOUT_S = 600.0  # a child that has not answered by then is killed: the caller emits its part

# the read ends of the pipes of this process's children not yet collected: a child forked
# later closes its copies at once, so that a child whose parent is gone (or dropped its read
# end) meets a broken pipe and leaves, where a sibling's copy of the read end kept its write
# blocked for good once its code passed the pipe's buffer
_READS: set[int] = set()
# the module parts started (``start``) and not yet collected or cancelled: stopped when the
# process exits (a plan compiling in the background whose step was never called again)
_LIVE: list[Started] = []


def usable_cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def workers() -> int:
    """How many processes may emit a module's parts: BACKPLAN_COMPILE_WORKERS, else the usable
    cores (at most MAX_PARTS); 1 where ``os.fork`` does not exist."""
    if not hasattr(os, "fork"):
        return 1
    text = os.environ.get(WORKERS_ENV)
    if text is None:
        return min(usable_cores(), MAX_PARTS)
    try:
        n = int(text)
    except ValueError:
        raise ValueError(f"{WORKERS_ENV} must be a positive integer, got {text!r}") from None
    if n < 1:
        raise ValueError(f"{WORKERS_ENV} must be a positive integer, got {text!r}")
    return min(n, MAX_PARTS)


def parts(kernels: Sequence[kir.Kernel], count: int) -> list[list[kir.Kernel]]:
    """``kernels`` in at most ``count`` parts of about equal weight (element-exprs), each
    group of kernels that share a function in one part, each part in the kernels' order;
    one part where the kernels weigh less than PARALLEL_MIN_EXPRS."""
    from codegen.llvm import distinct

    same = distinct(kernels)
    groups: dict[str, list[kir.Kernel]] = {}
    for k in kernels:
        groups.setdefault(same[k.name], []).append(k)
    weight = {name: len(group[0].exprs) + 1 for name, group in groups.items()}
    count = min(count, len(groups))
    if count < 2 or sum(weight.values()) < PARALLEL_MIN_EXPRS:
        return [list(kernels)]
    loads = [0] * count
    part_of: dict[str, int] = {}
    for name in sorted(groups, key=lambda n: -weight[n]):  # heaviest first, to the lightest
        i = loads.index(min(loads))
        part_of[name] = i
        loads[i] += weight[name]
    return [[k for k in kernels if part_of[same[k.name]] == i] for i in range(count)]


def emit_in_parts(kernels: Sequence[kir.Kernel]) -> ObjectCode | None:
    """The module of ``kernels`` (``codegen.llvm.render``) emitted in parts as the module
    docstring says, or None where it is one part (the caller emits it as one module)."""
    split = parts(kernels, workers())
    if len(split) < 2:
        return None
    from codegen.jit import optimize_and_emit
    from codegen.llvm import render

    started = _forked(split[1:])
    try:
        first = optimize_and_emit(render(split[0]))
    except BaseException:
        cancel(started)
        raise
    return ObjectCode.joined([first, *_collected(started)])


class Started:
    """A module's parts being emitted by forked children (``start``), collected by
    ``finish``."""

    def __init__(self, split: list[list[kir.Kernel]], children: list[tuple[int, int]]) -> None:
        self.split = split
        self.children = children  # (pid, read end) a part
        _LIVE.append(self)


def start(kernels: Sequence[kir.Kernel]) -> Started | None:
    """Fork a child for every part of the module of ``kernels``, so that the caller holds no
    LLVM lock while they run and goes on with its own work: split as ``emit_in_parts`` splits
    it (the first part included), one part where it is small; None where no child may be
    forked (``workers``: 1). Over one process fewer, the caller keeps a core, but the module
    takes longer: gpt's was in use 2.0 to 2.3 s after its first call began, against 1.6 with
    every core compiling (1.4 s compiling in the first call)."""
    if workers() < 2:
        return None
    return _forked(parts(kernels, workers()))


def finish(started: Started) -> ObjectCode:
    """The module ``start`` forked children for: each part as its child sent it, or emitted
    here where the child failed or ran out of time (the same code either way)."""
    return ObjectCode.joined(_collected(started))


def cancel(started: Started) -> None:
    """Stop and reap the children of ``started`` that were not collected."""
    for pid, fd in started.children:
        _stop(pid, fd)
    started.children.clear()
    with contextlib.suppress(ValueError):
        _LIVE.remove(started)


@atexit.register
def _stop_all() -> None:
    """Stop every child still emitting a part when the process exits."""
    for started in list(_LIVE):
        cancel(started)


def _forked(split: list[list[kir.Kernel]]) -> Started:
    """A child forked for each part of ``split``; none left behind where a fork fails."""
    started = Started(split, [])
    try:
        for part in split:
            started.children.append(_fork(part))
    except BaseException:
        cancel(started)
        raise
    return started


def _collected(started: Started) -> list[ObjectCode]:
    """Each part's code as its child sent it, or emitted here where the child failed or ran
    out of time (the same code either way); the children left are stopped if interrupted."""
    from codegen.llvm import render

    codes = []
    deadline = time.monotonic() + TIMEOUT_S
    try:
        for part in started.split:
            pid, fd = started.children.pop(0)
            code = _collect(pid, fd, deadline)
            codes.append(code if code is not None else target.emit(render(part)))
    finally:
        cancel(started)  # interrupted: leave nothing behind
    return codes


def fork(wait: bool = True) -> int | None:
    """``os.fork()`` with no thread of this process inside LLVM: ``target.LOCK`` and
    llvmlite's own lock are held across it (a thread emitting a module held the first, one
    loading a built module's object code the second, and a child forked then waited for its
    copy for good), so the child's copy of LLVM's state is consistent and the child can take
    both. Where ``wait`` is False and another thread is emitting code now (``target.LOCK``),
    nothing is forked (None); llvmlite's lock is waited for either way (a thread holds it for
    one call of LLVM's C API outside an emission, a short one). The child closes its copies of
    the read ends of this process's other children's pipes (``_READS``), so that a child whose
    parent is gone meets a broken pipe."""
    if not target.LOCK.acquire(wait):
        return None
    try:
        with _llvmlite_lock():
            pid = os.fork()
    finally:
        target.LOCK.release()
    if pid == 0:
        for fd in list(_READS):
            with contextlib.suppress(OSError):
                os.close(fd)
    return pid


def _fork(part: list[kir.Kernel]) -> tuple[int, int]:
    from codegen.llvm import render

    read, write = os.pipe()
    pid = fork()
    assert pid is not None  # (a fork that waits always forks)
    if pid == 0:  # the child: its part's code down the pipe, then leave
        status = 1
        try:
            with contextlib.suppress(OSError):
                os.close(read)
            code = target.emit(render(part))
            ir_bytes = code.optimized_ir.encode()
            data = struct.pack("<QQ", len(ir_bytes), len(code.object_file)) + ir_bytes + \
                code.object_file
            view = memoryview(data)
            while view:
                view = view[os.write(write, view):]
            status = 0
        finally:
            os._exit(status)
    os.close(write)
    _READS.add(read)
    return pid, read


def _llvmlite_lock() -> Any:
    """llvmlite's lock around every call into LLVM's C API (``llvmlite.binding.ffi``), an
    RLock: held across a fork by the forking thread, it is released in the child as in the
    parent."""
    from llvmlite.binding import ffi

    return ffi.lib._lock


def _collect(pid: int, fd: int, deadline: float) -> ObjectCode | None:
    """A child's part, or None where it failed, ran out of time or sent something else; the
    child waited for and its pipe closed either way."""
    chunks: list[bytes] = []
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                kill_child(pid)
                return None
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
    except BaseException:
        kill_child(pid)
        raise
    finally:
        _close(fd)
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:  # reaped already (SIGCHLD ignored): what it sent decides
        status = 0
    data = b"".join(chunks)
    if status != 0 or len(data) < 16:
        return None
    n_ir, n_obj = struct.unpack_from("<QQ", data)
    if len(data) != 16 + n_ir + n_obj:
        return None
    return ObjectCode(data[16 + n_ir:], data[16:16 + n_ir].decode())


def _stop(pid: int, fd: int) -> None:
    kill_child(pid)
    _close(fd)


def _close(fd: int) -> None:
    _READS.discard(fd)
    os.close(fd)


def kill_child(pid: int) -> None:
    """Kill a child and wait for it."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)
