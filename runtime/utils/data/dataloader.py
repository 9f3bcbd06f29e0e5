"""The DataLoader: samples read by a sampler's indices and collated into batches, in the
calling thread or in worker threads."""

from __future__ import annotations

import itertools
import multiprocessing
import multiprocessing.context
import os
import warnings
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ...creation import Generator
from ._utils.collate import default_collate, default_convert
from .dataset import Dataset, IterableDataset
from .loader_iter import BaseLoaderIter, SingleThreadIter, ThreadedIter
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler
from .worker import get_worker_info

# torch.utils.data.dataloader's names that user code imports from here
__all__ = ["DataLoader", "default_collate", "default_convert", "get_worker_info"]


# what PyTorch's DataLoader refuses to change once built
_FIXED_AFTER_INIT = ("batch_size", "batch_sampler", "sampler", "drop_last", "dataset",
                     "persistent_workers")


class DataLoader:
    """Batches of a dataset: ``for x, y in DataLoader(ds, batch_size=64, shuffle=True,
    generator=rt.Generator().manual_seed(0)):``, with PyTorch's arguments and checks.

    ``num_workers > 0`` fetches and collates batches in that many worker *threads* (not
    processes, as PyTorch's): numpy's copies and gathers release the GIL, and so does a
    dataset that reads files, so workers overlap loading with the training step. Batches
    come in the same order as with ``num_workers=0`` (``in_order=False``: as they are
    ready); ``prefetch_factor`` batches (default 2) are in flight per worker;
    ``persistent_workers`` keeps the threads between epochs; ``worker_init_fn(worker_id)``
    runs first in each worker; ``get_worker_info()`` there says which worker it is (threads
    share the dataset object; rt's random functions there draw from the worker's own CPU
    default generator, seeded with its worker seed as in a PyTorch worker process, and
    ``get_worker_info().rng`` holds it with a seeded ``random.Random`` and numpy generator,
    since Python's and numpy's global generators stay shared); ``timeout`` (seconds) bounds
    the wait for a worker's batch; an exception in a worker is raised again in the
    iterating thread, of the same type, naming the worker. ``multiprocessing_context`` is
    checked as PyTorch checks it (a start method's name or a context, only with workers),
    but threads have no start method: nothing reads it.

    ``pin_memory=True`` copies each batch's tensors into page-locked host memory (CuPy's)
    where a GPU is available; without one it warns, as PyTorch, and pins nothing."""

    def __init__(self, dataset: Dataset[Any], batch_size: int | None = 1,
                 shuffle: bool | None = None, sampler: Sampler[Any] | Iterable[Any] | None = None,
                 batch_sampler: Sampler[Any] | Iterable[Any] | None = None,
                 num_workers: int = 0, collate_fn: Callable[[Any], Any] | None = None,
                 pin_memory: bool = False, drop_last: bool = False, timeout: float = 0,
                 worker_init_fn: Callable[[int], None] | None = None,
                 multiprocessing_context: Any = None, generator: Generator | None = None, *,
                 prefetch_factor: int | None = None, persistent_workers: bool = False,
                 pin_memory_device: str = "", in_order: bool = True) -> None:
        _check_worker_options(num_workers, timeout, prefetch_factor, persistent_workers)
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        iterable = isinstance(dataset, IterableDataset)
        if iterable:
            if shuffle not in (None, False):
                raise ValueError("DataLoader with IterableDataset: expected unspecified "
                                 f"shuffle option, but got shuffle={shuffle}")
            if sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified "
                                 f"sampler option, but got sampler={sampler}")
            if batch_sampler is not None:
                raise ValueError("DataLoader with IterableDataset: expected unspecified "
                                 f"batch_sampler option, but got batch_sampler={batch_sampler}")
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("batch_sampler option is mutually exclusive with batch_size, "
                                 "shuffle, sampler, and drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("batch_size=None option disables auto-batching and is mutually "
                             "exclusive with drop_last")
        if sampler is None and not iterable:
            sampler = (RandomSampler(dataset, generator=generator) if shuffle
                       else SequentialSampler(dataset))  # type: ignore[arg-type]
        if batch_size is not None and batch_sampler is None and not iterable:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)  # type: ignore[arg-type]
        if iterable and batch_size is not None:
            BatchSampler([], batch_size, drop_last)  # the same checks of both
        self.dataset = dataset
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = _check_context(multiprocessing_context, num_workers)
        self.generator = generator
        self.persistent_workers = persistent_workers
        self.in_order = in_order
        self._iterable = iterable
        self._auto_collation = batch_size is not None or batch_sampler is not None
        self.collate_fn = collate_fn or (default_collate if self._auto_collation
                                         else default_convert)
        self._iterator: ThreadedIter | None = None
        self._IterableDataset_len_called: int | None = None
        self.__initialized = True
        self.check_worker_number_rationality()

    def __setattr__(self, attr: str, value: Any) -> None:
        if attr in _FIXED_AFTER_INIT and self.__dict__.get("_DataLoader__initialized"):
            raise ValueError(f"{attr} attribute should not be set after "
                             f"{type(self).__name__} is initialized")
        super().__setattr__(attr, value)

    def _task_stream(self) -> Iterator[Any]:
        """One task a batch: its indices (map-style), or its size (iterable datasets, whose
        stream ends when the dataset's does)."""
        if self._iterable:
            return itertools.repeat(self.batch_size)
        if self.batch_sampler is not None:
            return iter(self.batch_sampler)
        return iter(self.sampler)  # type: ignore[arg-type]

    def __iter__(self) -> BaseLoaderIter:
        if self.persistent_workers and self.num_workers > 0:
            if self._iterator is None:
                self._iterator = self._get_iterator()
            else:  # the same threads, a new epoch: no new check, as PyTorch's
                self._iterator.reset(self)
            return self._iterator
        return self._get_iterator()

    def _get_iterator(self) -> BaseLoaderIter:
        if self.num_workers == 0:
            return SingleThreadIter(self)
        self.check_worker_number_rationality()
        return ThreadedIter(self)

    def check_worker_number_rationality(self) -> None:
        """PyTorch's warning (at construction and at each iterator with workers) when
        ``num_workers`` exceeds the CPUs this process may use, with its text."""
        if not self.num_workers:
            return
        cpuset_checked = hasattr(os, "sched_getaffinity")
        suggest = len(os.sched_getaffinity(0)) if cpuset_checked else os.cpu_count()
        if suggest is not None and self.num_workers <= suggest:
            return
        if suggest is None:
            suggested = ("DataLoader is not able to compute a suggested max number of worker "
                         "in current system.")
        else:
            suggested = (f"Our suggested max number of worker in current system is {suggest}"
                         f"{'' if cpuset_checked else ' (`cpuset` is not taken into account)'}"
                         ", which is smaller than what this DataLoader is going to create.")
        warnings.warn(f"This DataLoader will create {self.num_workers} worker processes in "
                      f"total. {suggested} Please be aware that excessive worker creation "
                      "might get DataLoader running slow or even freeze, lower the worker "
                      "number to avoid potential slowness/freeze if necessary.", stacklevel=2)

    def __len__(self) -> int:
        if self._iterable:
            # kept, as PyTorch's: an iterator warns when the dataset yields more than this
            n = self._IterableDataset_len_called = len(self.dataset)  # type: ignore[arg-type]
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        if self.batch_sampler is not None:
            return len(self.batch_sampler)  # type: ignore[arg-type]
        return len(self.sampler)  # type: ignore[arg-type]


def _check_worker_options(num_workers: int, timeout: float, prefetch_factor: int | None,
                          persistent_workers: bool) -> None:
    """PyTorch's checks of the worker options, with its messages."""
    if num_workers < 0:
        raise ValueError("num_workers option should be non-negative; use num_workers=0 "
                         "to disable multiprocessing.")
    if timeout < 0:
        raise ValueError("timeout option should be non-negative")
    if num_workers == 0 and prefetch_factor is not None:
        raise ValueError("prefetch_factor option could only be specified in multiprocessing."
                         "let num_workers > 0 to enable multiprocessing, otherwise set "
                         "prefetch_factor to None.")
    if prefetch_factor is not None and prefetch_factor < 0:
        raise ValueError("prefetch_factor option should be non-negative")
    if persistent_workers and num_workers == 0:
        raise ValueError("persistent_workers option needs num_workers > 0")


def _check_context(context: Any, num_workers: int) -> Any:
    """PyTorch's checks of ``multiprocessing_context``: a start method's name (made its
    context) or a context object, and only with workers."""
    if context is None:
        return None
    if num_workers == 0:
        raise ValueError("multiprocessing_context can only be used with multi-process "
                         f"loading (num_workers > 0), but got num_workers={num_workers}")
    if isinstance(context, str):
        methods = multiprocessing.get_all_start_methods()
        if context not in methods:
            raise ValueError("multiprocessing_context option should specify a valid start "
                             f"method in {methods!r}, but got "
                             f"multiprocessing_context={context!r}")
        context = multiprocessing.get_context(context)
    if not isinstance(context, multiprocessing.context.BaseContext):
        raise TypeError("multiprocessing_context option should be a valid context object or "
                        "a string specifying the start method, but got "
                        f"multiprocessing_context={context}")
    return context
