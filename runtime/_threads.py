"""One CPU thread budget for intra-op parallelism: BLAS threads and split fused kernels.

``set_num_threads(n)`` (PyTorch's name) sets both. ``intra_op(n)`` narrows them for a block,
process-wide: a plan that runs W steps at once on a budget of B threads gives each step B // W,
so that its workers and their BLAS and kernel threads never oversubscribe the cores.

BLAS is set through threadpoolctl (it finds numpy's bundled OpenBLAS, or MKL, BLIS), with the
library controllers looked up once and cached: ``threadpool_limits()`` scans the loaded shared
libraries on every call (milliseconds), a cached controller's setter costs about a microsecond.
Until the first ``set_num_threads`` or ``intra_op``, BLAS keeps the count it chose at start-up
(``OPENBLAS_NUM_THREADS`` or ``OMP_NUM_THREADS`` where the user set one); that count stays the
BLAS base until ``set_num_threads`` replaces it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


def cores() -> int:
    """The cores this process may run on (its affinity mask where the OS has one): the budget
    that plan workers and their intra-op threads share."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


_lock = threading.Lock()
_base = cores()  # intra-op threads outside every intra_op block
_blas_base: int | None = None  # BLAS threads outside intra_op blocks; None: BLAS's own choice
_narrowed: list[int] = []  # the n of every intra_op block open now, in any thread
_threads = _base  # the intra-op count in force: the least of _base and _narrowed


def _check(name: str, n: object) -> int:
    if type(n) is not int:  # bool is an int subclass, refused as PyTorch does
        raise RuntimeError(f"{name} expects an int, but got {type(n).__name__}")
    if n < 1:
        raise RuntimeError(f"{name} expects a positive integer")
    return n


def get_num_threads() -> int:
    """The intra-op thread count in force: how many chunks a big fused kernel is split into."""
    return _threads


def set_num_threads(n: int) -> None:
    """Use ``n`` intra-op threads: big fused kernels split into ``n`` chunks and BLAS runs on
    ``n`` threads (inside an ``intra_op`` block, at most that block's count)."""
    global _base, _blas_base
    _check("set_num_threads", n)
    with _lock:
        _base = _blas_base = n
        _apply()


@contextmanager
def intra_op(n: int) -> Iterator[None]:
    """At most ``n`` intra-op threads (kernel splits and BLAS) inside the block, for the whole
    process. Blocks nest, and blocks open in several threads at once combine: the count in
    force is the smallest of ``set_num_threads``'s and every open block's, so no thread gets
    more than it asked for; each block's end removes only its own limit."""
    _check("intra_op", n)
    with _lock:
        _narrowed.append(n)
        _apply()
    try:
        yield
    finally:
        with _lock:
            _narrowed.remove(n)
            _apply()


def _apply() -> None:
    """Bring the count in force and the BLAS threads up to date (called holding ``_lock``)."""
    global _threads, _blas_base
    _threads = min([_base, *_narrowed])
    if _blas_base is None and not _narrowed:
        return  # BLAS untouched so far, and nothing narrows it
    controllers = _blas_controllers()
    if _blas_base is None:
        _blas_base = min((c.get_num_threads() for c in controllers), default=_base)
    for c in controllers:
        c.set_num_threads(min([_blas_base, *_narrowed]))


_controllers: list[Any] | None = None


def _blas_controllers() -> list[Any]:
    """threadpoolctl's controllers of the BLAS libraries loaded when first asked (numpy's)."""
    global _controllers
    if _controllers is None:
        from threadpoolctl import ThreadpoolController

        _controllers = ThreadpoolController().select(user_api="blas").lib_controllers
    return _controllers


def blas_threads() -> int | None:
    """The thread count of the (first) BLAS library threadpoolctl finds; None if it finds none."""
    return next((c.get_num_threads() for c in _blas_controllers()), None)


def _after_fork() -> None:
    global _lock
    _lock = threading.Lock()  # another thread may have held it at the fork


os.register_at_fork(after_in_child=_after_fork)
