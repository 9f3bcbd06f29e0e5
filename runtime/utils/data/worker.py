"""DataLoader worker threads: the loop each runs, what ``get_worker_info()`` tells code
running inside one, and how an exception raised there reaches the main thread.

Workers are threads, not processes (PyTorch's default): they share the dataset object and
Python's and numpy's global random state, so each worker gets its own seeded generators in
``WorkerInfo.rng`` (PyTorch's thread workers do the same) instead of reseeding globals that
the main thread and the other workers also draw from; rt's own CPU default generator is
per worker thread (``creation.use_as_thread_default``), seeded with the worker seed as a
PyTorch worker process's."""

from __future__ import annotations

import queue
import random
import sys
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn

import numpy as np

from ...creation import Generator, use_as_thread_default
from .fetch import IterableFetcher, MapFetcher


@dataclass(frozen=True, slots=True)
class WorkerRNG:
    """Random sources seeded from the worker's seed, private to its thread."""

    random_generator: random.Random
    torch_generator: Generator
    numpy_generator: np.random.Generator


@dataclass(frozen=True, slots=True)
class WorkerInfo:
    """What ``get_worker_info()`` returns inside a worker: its ``id`` (0 to
    ``num_workers - 1``), ``num_workers``, its ``seed`` (the loader's base seed plus
    ``id``, as PyTorch), the ``dataset`` (the loader's own object: threads share it), its
    ``rng`` and ``worker_method`` ("thread")."""

    id: int  # noqa: A003 - PyTorch's name
    num_workers: int
    seed: int
    dataset: Any
    rng: WorkerRNG | None = None
    worker_method: str | None = "thread"


_local = threading.local()


def get_worker_info() -> WorkerInfo | None:
    """This worker's WorkerInfo in a DataLoader worker thread, None in any other thread;
    an IterableDataset reads it in ``__iter__`` to split its stream between workers."""
    return getattr(_local, "info", None)


class KeyErrorMessage(str):
    """A KeyError's message that prints as itself (KeyError shows the repr of its argument,
    which would print the traceback's newlines as ``\\n``), as torch._utils'."""

    def __repr__(self) -> str:
        return self


class ExceptionWrapper:
    """An exception raised in a worker, carried to the main thread and raised there again as
    PyTorch does: the same type, its message naming the worker, the original traceback
    below."""

    def __init__(self, exc: BaseException, where: str) -> None:
        self.exc_type = type(exc)
        self.exc_msg = "".join(traceback.format_exception(exc))
        self.where = where

    def reraise(self) -> NoReturn:
        msg = f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
        if self.exc_type is KeyError:  # its str() is the repr of its argument: PyTorch's fix
            msg = KeyErrorMessage(msg)
        try:
            exception = self.exc_type(msg)
        except Exception:  # noqa: BLE001 - a type that needs other arguments: as PyTorch
            raise RuntimeError(msg) from None
        raise exception


class IterableEnd:
    """A worker's answer once its iterator over an IterableDataset is spent."""

    def __init__(self, worker_id: int) -> None:
        self.worker_id = worker_id


class Resume:
    """Sent to persistent workers at a new epoch: start the dataset's iteration afresh."""


@dataclass(frozen=True)
class WorkerConfig:
    """Everything a worker thread needs, and nothing that keeps its iterator alive (an
    abandoned iterator is collected and its ``__del__`` stops the workers)."""

    iterable: bool
    dataset: Any
    auto_collation: bool
    collate_fn: Callable[[Any], Any]
    drop_last: bool
    base_seed: int
    worker_init_fn: Callable[[int], None] | None
    num_workers: int
    done: threading.Event


def _make_fetcher(cfg: WorkerConfig) -> MapFetcher | IterableFetcher:
    if cfg.iterable:
        return IterableFetcher(cfg.dataset, cfg.auto_collation, cfg.collate_fn, cfg.drop_last)
    return MapFetcher(cfg.dataset, cfg.auto_collation, cfg.collate_fn)


def worker_loop(cfg: WorkerConfig, worker_id: int, index_queue: queue.SimpleQueue[Any],
                results: queue.SimpleQueue[Any]) -> None:
    """Answer each ``(task, index)`` from ``index_queue`` with ``(task, data)`` on
    ``results`` (data an ExceptionWrapper if fetching raised) until None arrives."""
    seed = cfg.base_seed + worker_id
    rng = WorkerRNG(random.Random(seed), Generator().manual_seed(seed),
                    np.random.default_rng([worker_id, cfg.base_seed]))
    _local.info = WorkerInfo(worker_id, cfg.num_workers, seed, cfg.dataset, rng)
    # rt.rand, rt.manual_seed, rt.initial_seed here: this worker's generator, as a PyTorch
    # worker process's default generator seeded with its worker seed
    use_as_thread_default(rng.torch_generator)
    where = f"in DataLoader worker thread {worker_id}"
    init_error: ExceptionWrapper | None = None
    fetcher: MapFetcher | IterableFetcher | None = None
    try:
        if cfg.worker_init_fn is not None:
            cfg.worker_init_fn(worker_id)
        fetcher = _make_fetcher(cfg)
    except Exception as e:  # noqa: BLE001 - carried to the main thread with the first task
        init_error = ExceptionWrapper(e, where)
    ended = False
    while True:
        request = index_queue.get()
        if request is None:
            break
        if isinstance(request, Resume):
            ended = False
            try:
                fetcher = _make_fetcher(cfg)
            except Exception as e:  # noqa: BLE001 - as above
                init_error = ExceptionWrapper(e, where)
            results.put((request, None))
            continue
        if cfg.done.is_set() or ended:
            continue  # the main thread no longer waits for these
        task, index = request
        data: Any
        if init_error is not None:
            data, init_error = init_error, None
        else:
            try:
                data = fetcher.fetch(index)  # type: ignore[union-attr]
            except StopIteration:
                if not cfg.iterable:
                    data = ExceptionWrapper(sys.exc_info()[1], where)  # type: ignore[arg-type]
                else:
                    data, ended = IterableEnd(worker_id), True
            except Exception as e:  # noqa: BLE001 - re-raised in the main thread
                data = ExceptionWrapper(e, where)
        results.put((task, data))
        del data
