"""Collectives over the default process group, in torch.distributed's shape, on a tensor's
numpy storage (MPI reads and writes it in place), and the bucket all-reduce that data-parallel
training (DDP eagerly, and a compiled plan's communication steps) averages gradients with."""

from __future__ import annotations

import enum
import os
import pickle
from typing import Any

import numpy as np

from .group import get_world_size, group, wait


class ReduceOp(enum.Enum):
    SUM = "sum"
    PRODUCT = "product"
    MIN = "min"
    MAX = "max"
    AVG = "avg"  # SUM, then divided by the world size


def _mpi_op(op: ReduceOp) -> Any:
    from mpi4py import MPI

    if not isinstance(op, ReduceOp):
        raise TypeError(f"op must be a runtime.distributed.ReduceOp, got {op!r}")
    return {ReduceOp.SUM: MPI.SUM, ReduceOp.AVG: MPI.SUM, ReduceOp.PRODUCT: MPI.PROD,
            ReduceOp.MIN: MPI.MIN, ReduceOp.MAX: MPI.MAX}[op]


def _storage(tensor: Any, where: str) -> np.ndarray:
    from runtime.tensor import Tensor

    if not isinstance(tensor, Tensor):
        raise TypeError(f"{where}: expected a Tensor, got {type(tensor).__name__}")
    data = tensor._data
    if type(data) is not np.ndarray:
        raise TypeError(f"{where}: the mpi backend works on CPU tensors, got one on "
                        f"{tensor.device}")
    if not data.flags.c_contiguous:
        raise ValueError(f"{where}: tensors must be contiguous")
    return data


def _no_group(g: Any) -> None:
    if g is not None:
        raise ValueError("only the default process group (group=None) exists with the mpi "
                         "backend here")


class Work:
    """A collective in flight (``async_op=True``): ``wait()`` blocks until it is done,
    bounded by the process group's timeout."""

    def __init__(self, request: Any, what: str, then: Any = None) -> None:
        self._request, self._what, self._then = request, what, then
        self._done = False

    def is_completed(self) -> bool:
        return self._done or bool(self._request.Test())

    def wait(self, timeout: Any = None) -> bool:
        if not self._done:
            wait(self._request, self._what)
            self._done = True
            if self._then is not None:
                self._then()
        return True


def _finish(work: Work, async_op: bool) -> Work | None:
    if async_op:
        return work
    work.wait()
    return None


def all_reduce(tensor: Any, op: ReduceOp = ReduceOp.SUM, group: Any = None,
               async_op: bool = False) -> Work | None:
    """Reduce ``tensor`` across all ranks, in place: every rank ends with the result."""
    _no_group(group)
    data = _storage(tensor, "all_reduce")
    from mpi4py import MPI

    request = _comm().Iallreduce(MPI.IN_PLACE, data, op=_mpi_op(op))

    def then() -> None:
        if op is ReduceOp.AVG:
            np.divide(data, get_world_size(), out=data, casting="unsafe")
        tensor._vc.v += 1

    return _finish(Work(request, "all_reduce", then), async_op)


def broadcast(tensor: Any, src: int, group: Any = None, async_op: bool = False) -> Work | None:
    """Copy rank ``src``'s ``tensor`` into every other rank's, in place."""
    _no_group(group)
    data = _storage(tensor, "broadcast")
    size = get_world_size()
    if type(src) is not int or not 0 <= src < size:
        raise ValueError(f"broadcast: src must be a rank in [0, {size}), got {src!r}")

    def then() -> None:
        tensor._vc.v += 1

    return _finish(Work(_comm().Ibcast(data, root=src), "broadcast", then), async_op)


def barrier(group: Any = None, async_op: bool = False) -> Work | None:
    """Wait until every rank reaches the barrier."""
    _no_group(group)
    return _finish(Work(_comm().Ibarrier(), "barrier"), async_op)


def all_gather_object(object_list: list[Any], obj: Any, group: Any = None) -> None:
    """Fill ``object_list`` (one entry a rank) with every rank's picklable ``obj``."""
    _no_group(group)
    size = get_world_size()
    if not isinstance(object_list, list) or len(object_list) != size:
        raise ValueError(f"all_gather_object: object_list must be a list of world size "
                         f"{size}, got {object_list!r}")
    data = np.frombuffer(pickle.dumps(obj), dtype=np.uint8)
    lengths = np.zeros(size, dtype=np.int64)
    Work(_comm().Iallgather(np.array([data.size], dtype=np.int64), lengths),
         "all_gather_object").wait()
    gathered = np.empty(int(lengths.sum()), dtype=np.uint8)
    Work(_comm().Iallgatherv(data, [gathered, lengths]), "all_gather_object").wait()
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    for r in range(size):
        object_list[r] = pickle.loads(gathered[offsets[r]:offsets[r + 1]].tobytes())


def _comm() -> Any:
    return group().comm


class Bucket:
    """Gradients packed into one flat array and summed across ranks by a non-blocking MPI
    request, started on construction; ``average()`` waits and gives each gradient's mean over
    the ranks (a view of the flat array, in the order and shapes given)."""

    def __init__(self, arrays: list[np.ndarray] | tuple[np.ndarray, ...]) -> None:
        from mpi4py import MPI

        self.shapes = [np.shape(a) for a in arrays]
        self.flat = np.concatenate([np.ravel(a) for a in arrays])
        self.request = _comm().Iallreduce(MPI.IN_PLACE, self.flat, op=MPI.SUM)

    def average(self) -> list[np.ndarray]:
        wait(self.request, f"the all-reduce of a gradient bucket of {self.flat.size} elements")
        np.divide(self.flat, get_world_size(), out=self.flat, casting="unsafe")
        out, at = [], 0
        for shape in self.shapes:
            n = int(np.prod(shape, dtype=np.int64))
            out.append(self.flat[at:at + n].reshape(shape))
            at += n
        return out


def save_checkpoint(obj: Any, path: str | os.PathLike[str]) -> None:
    """``rt.save(obj, path)`` on rank 0 only (atomic: a temporary file renamed over the
    target, so a reader never sees half a file); every rank returns once it is on disk."""
    if group().rank == 0:
        from runtime.serialization import save

        save(obj, path)
    barrier()
