"""The default process group: MPI's COMM_WORLD, set up by ``init_process_group``.

mpi4py is imported here, on first use, and nowhere else is it needed before a process group
exists: importing ``runtime`` never loads MPI. A rank that dies must not leave the others
waiting in a collective for ever, so once the group exists an uncaught exception (main thread
or any other) prints its traceback and aborts every rank (``MPI_Abort``), and every wait on a
request is bounded by the group's timeout, after which this rank aborts them all too.
"""

from __future__ import annotations

import datetime
import os
import sys
import threading
import time
from typing import Any

# torch.distributed's default for its gloo/MPI backends: long enough for a slow first compile
DEFAULT_TIMEOUT = datetime.timedelta(minutes=10)
# between two tests of a pending request: MPI (mpich) moves a transfer on only inside such
# calls, so short against a bucket's transfer; a sleep, not a spin, so that a waiting thread
# leaves the core to the backward it overlaps. On this 2-core machine (2 ranks, load average
# about 5 from other jobs) 20 us made mlp_large's bucketed step 0.92-0.97x the one-bucket
# step, 200 us 0.85-0.91x (examples/ddp_overlap.py, one run each)
_POLL_S = 20e-6

_NOT_INITIALIZED = ("Default process group has not been initialized, please make sure to call "
                    "init_process_group.")


class _Group:
    def __init__(self, comm: Any, timeout: float) -> None:
        self.comm = comm
        self.rank: int = comm.Get_rank()
        self.size: int = comm.Get_size()
        self.timeout = timeout


_group: _Group | None = None
_hooks: tuple[Any, Any] | None = None  # (sys.excepthook, threading.excepthook) before ours


def init_process_group(backend: str | None = None, init_method: str | None = None,
                       timeout: datetime.timedelta | None = None, world_size: int = -1,
                       rank: int = -1) -> None:
    """Join the processes ``mpiexec`` started (backend "mpi", the only one; None picks it).
    ``world_size`` and ``rank``, when given, must be what MPI says; ``init_method`` must be
    None or "env://" (MPI finds its peers itself); ``timeout`` bounds every wait."""
    global _group, _hooks
    if backend not in (None, "mpi"):
        raise ValueError(f"init_process_group: backend {backend!r} is not available; this "
                         f"runtime has the 'mpi' backend only (launch with mpiexec)")
    if init_method not in (None, "env://"):
        raise ValueError(f"init_process_group: init_method {init_method!r} is not supported: "
                         f"MPI finds its peers itself (use None)")
    if timeout is not None and not isinstance(timeout, datetime.timedelta):
        raise TypeError(f"init_process_group: timeout must be a datetime.timedelta, got "
                        f"{type(timeout).__name__}")
    if _group is not None:
        raise RuntimeError("trying to initialize the default process group twice!")
    try:
        from mpi4py import MPI
    except ImportError as exc:
        raise ImportError("runtime.distributed needs mpi4py and an MPI: "
                          "pip install -e '.[dist]'") from exc
    comm = MPI.COMM_WORLD
    for name, given, actual in (("world_size", world_size, comm.Get_size()),
                                ("rank", rank, comm.Get_rank())):
        if given != -1 and given != actual:
            raise ValueError(f"init_process_group: {name}={given}, but MPI started this "
                             f"process with {name} {actual}")
    seconds = (timeout or DEFAULT_TIMEOUT).total_seconds()
    if seconds <= 0:
        raise ValueError(f"init_process_group: timeout must be positive, got {timeout}")
    _group = _Group(comm, seconds)
    _hooks = (sys.excepthook, threading.excepthook)
    sys.excepthook = _abort_on_exception
    threading.excepthook = _abort_on_thread_exception


def destroy_process_group() -> None:
    """Leave the group: the exception hooks are restored; MPI itself ends with the process."""
    global _group, _hooks
    if _group is None:
        raise AssertionError("Process group cannot be None")  # torch's error, word for word
    _group = None
    if _hooks is not None:
        sys.excepthook, threading.excepthook = _hooks
        _hooks = None


def is_initialized() -> bool:
    return _group is not None


def group() -> _Group:
    if _group is None:
        raise ValueError(_NOT_INITIALIZED)
    return _group


def get_rank() -> int:
    return group().rank


def get_world_size() -> int:
    return group().size


def abort(message: str) -> None:
    """Print ``message`` naming this rank and end every rank of the job (never returns)."""
    g = _group
    rank = g.rank if g is not None else "?"
    sys.stderr.write(f"[rank {rank}] {message}; aborting all ranks\n")
    sys.stderr.flush()
    if g is not None:
        # mpiexec forwards a rank's output through a pipe; an abort at once can kill the
        # forwarding before it has passed on the traceback just written, leaving no error
        time.sleep(0.5)
        g.comm.Abort(1)
    os._exit(1)


def wait(request: Any, what: str) -> None:
    """Wait for an MPI request, testing it so that the wait is bounded by the group's timeout
    (a peer that hangs, or never makes the matching call, aborts the job instead)."""
    if request.Test():
        return
    deadline = time.monotonic() + group().timeout
    while not request.Test():
        if time.monotonic() > deadline:
            abort(f"{what} did not complete within {group().timeout:g} s (a rank hangs, "
                  f"died, or runs different code)")
        time.sleep(_POLL_S)


def _abort_on_exception(kind: type[BaseException], value: BaseException, tb: Any) -> None:
    if _hooks is not None:
        _hooks[0](kind, value, tb)
    abort(f"uncaught {kind.__name__}")


def _abort_on_thread_exception(args: Any) -> None:
    if _hooks is not None:
        _hooks[1](args)
    abort(f"uncaught {args.exc_type.__name__} in thread "
          f"{getattr(args.thread, 'name', '?')}")
