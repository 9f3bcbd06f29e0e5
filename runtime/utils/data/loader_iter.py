"""The iterators a DataLoader hands out: batches fetched in the main thread, or by worker
threads (PyTorch's ``_SingleProcessDataLoaderIter`` and ``_MultiProcessingDataLoaderIter``,
with threads for processes).

The threaded iterator follows PyTorch's bookkeeping: task ``k`` (the ``k``-th batch's
indices) goes to the next active worker in turn, at most ``prefetch_factor * num_workers``
tasks are in flight, and results are yielded in task order (``in_order=True``) or as they
arrive."""

from __future__ import annotations

import itertools
import queue
import threading
import warnings
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from .fetch import IterableFetcher, MapFetcher
from .pin import can_pin, pin_memory
from ...creation import cpu_default_generator
from .worker import ExceptionWrapper, IterableEnd, Resume, WorkerConfig, worker_loop

if TYPE_CHECKING:
    from .dataloader import DataLoader


class BaseLoaderIter:
    """What both iterators share: the sampler's stream of tasks, the base seed (drawn from
    the loader's generator at the start, as PyTorch, so the sampler's draws that follow are
    the same whatever ``num_workers``) and pinning."""

    def __init__(self, loader: DataLoader) -> None:
        self._loader = loader
        self._iterable = loader._iterable
        self._auto_collation = loader._auto_collation
        self._collate_fn = loader.collate_fn
        self._drop_last = loader.drop_last
        if loader.pin_memory and loader.pin_memory_device:
            warnings.warn("pin_memory_device is deprecated, the current accelerator will be "
                          "used as the device,ignore pin_memory_device="
                          f"'{loader.pin_memory_device}'.", stacklevel=3)
        if loader.pin_memory and not can_pin():
            warnings.warn("'pin_memory' argument is set as true but no accelerator is found, "
                          "then device pinned memory won't be used.", stacklevel=3)
        self._pin = loader.pin_memory and can_pin()
        self._base_seed = (loader.generator or cpu_default_generator())._torch_random64()
        self._reset_tasks()

    def _reset_tasks(self) -> None:
        self._tasks: Iterator[Any] = self._loader._task_stream()
        self._num_yielded = 0
        # the IterableDataset's length len(loader) read (None: never read), as PyTorch's
        self._len_called = getattr(self._loader, "_IterableDataset_len_called", None)

    def __iter__(self) -> BaseLoaderIter:
        return self

    def __len__(self) -> int:
        return len(self._loader)

    def _finish(self, data: Any) -> Any:
        self._num_yielded += 1
        if self._iterable and self._len_called is not None \
                and self._num_yielded > self._len_called:
            message = (f"Length of IterableDataset {self._loader.dataset} was reported to be "
                       f"{self._len_called}(when accessing len(dataloader)), but "
                       f"{self._num_yielded} samples have been fetched. ")
            if self._loader.num_workers > 0:
                message += ("For multiprocessing data-loading, this could be caused by not "
                            "properly configuring the IterableDataset replica at each worker. "
                            "Please see https://pytorch.org/docs/stable/data.html#torch.utils."
                            "data.IterableDataset for examples.")
            warnings.warn(message, stacklevel=3)
        return pin_memory(data) if self._pin else data


class SingleThreadIter(BaseLoaderIter):
    """``num_workers=0``: each batch fetched in the calling thread when asked for."""

    def __init__(self, loader: DataLoader) -> None:
        super().__init__(loader)
        if loader.timeout != 0:  # PyTorch's: a timeout bounds the wait for a worker only
            raise AssertionError("_SingleProcessDataLoaderIter requires timeout == 0")
        self._fetcher: MapFetcher | IterableFetcher
        if self._iterable:
            self._fetcher = IterableFetcher(loader.dataset, self._auto_collation,
                                            self._collate_fn, self._drop_last)
        else:
            self._fetcher = MapFetcher(loader.dataset, self._auto_collation, self._collate_fn)

    def __next__(self) -> Any:
        return self._finish(self._fetcher.fetch(next(self._tasks)))


class ThreadedIter(BaseLoaderIter):
    """``num_workers > 0``: worker threads fetch and collate ahead of the consumer."""

    def __init__(self, loader: DataLoader) -> None:
        super().__init__(loader)
        self._num_workers = loader.num_workers
        self._prefetch = loader.prefetch_factor or 0
        if self._prefetch <= 0:
            raise AssertionError(
                "prefetch_factor must be greater than 0 for MultiProcessingDataLoaderIter")
        self._in_order = loader.in_order
        self._timeout = loader.timeout
        self._persistent = loader.persistent_workers
        self._done = threading.Event()
        cfg = WorkerConfig(self._iterable, loader.dataset, self._auto_collation,
                           self._collate_fn, self._drop_last, self._base_seed,
                           loader.worker_init_fn, self._num_workers, self._done)
        self._results: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._index_queues: list[queue.SimpleQueue[Any]] = []
        self._workers: list[threading.Thread] = []
        for i in range(self._num_workers):
            q: queue.SimpleQueue[Any] = queue.SimpleQueue()
            t = threading.Thread(target=worker_loop, args=(cfg, i, q, self._results),
                                 name=f"rt_data_worker_{i}", daemon=True)
            t.start()
            self._index_queues.append(q)
            self._workers.append(t)
        self._shutdown = False
        self._start_epoch()

    def _start_epoch(self) -> None:
        self._send_idx = 0  # the next task to hand out
        self._rcvd_idx = 0  # the next task to yield
        # task -> (worker,) while outstanding, (worker, data) once fetched out of order
        self._task_info: dict[int, tuple[Any, ...]] = {}
        self._outstanding = 0
        self._active = [True] * self._num_workers
        self._worker_tasks = [0] * self._num_workers
        self._queue_cycle = itertools.cycle(range(self._num_workers))
        for _ in range(self._prefetch * self._num_workers):
            self._try_put_index()

    def reset(self, loader: DataLoader) -> None:
        """A new epoch on the same (persistent) workers: a fresh sampler pass, and each
        worker restarts its iterator over an IterableDataset."""
        self._reset_tasks()
        for q in self._index_queues:
            q.put(Resume())
        acks = 0
        while acks < self._num_workers:  # drop what the last epoch left in flight
            task, _ = self._get()
            if isinstance(task, Resume):
                acks += 1
        self._start_epoch()

    def _try_put_index(self) -> None:
        try:
            index = next(self._tasks)
        except StopIteration:
            return
        max_tasks = self._prefetch * self._num_workers
        for _ in range(self._num_workers):  # the next active worker with room, if any
            worker = next(self._queue_cycle)
            if self._active[worker] and (
                    self._in_order or self._worker_tasks[worker] < max_tasks // sum(self._active)):
                break
        else:
            return
        self._index_queues[worker].put((self._send_idx, index))
        self._task_info[self._send_idx] = (worker,)
        self._worker_tasks[worker] += 1
        self._outstanding += 1
        self._send_idx += 1

    def _get(self) -> tuple[Any, Any]:
        try:
            return self._results.get(timeout=self._timeout if self._timeout > 0 else None)
        except queue.Empty:
            raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds") from None

    def __next__(self) -> Any:
        while True:
            while self._rcvd_idx < self._send_idx:  # skip tasks of spent workers
                info = self._task_info.get(self._rcvd_idx)
                if info and (len(info) == 2 or self._active[info[0]]):
                    break
                self._task_info.pop(self._rcvd_idx, None)
                self._rcvd_idx += 1
            else:
                if not self._persistent:
                    self._stop_workers(join=True)
                raise StopIteration
            if len(self._task_info[self._rcvd_idx]) == 2:
                worker, data = self._task_info.pop(self._rcvd_idx)
                self._rcvd_idx += 1
                return self._process(data, worker)
            task, data = self._get()
            self._outstanding -= 1
            if isinstance(data, IterableEnd):
                self._active[data.worker_id] = False
                self._try_put_index()
                continue
            if task != self._rcvd_idx:
                if not self._in_order:
                    worker = self._task_info.pop(task)[0]
                    return self._process(data, worker)
                self._task_info[task] += (data,)
                continue
            worker = self._task_info.pop(task)[0]
            self._rcvd_idx += 1
            return self._process(data, worker)

    def _process(self, data: Any, worker: int) -> Any:
        self._worker_tasks[worker] -= 1
        self._try_put_index()
        if isinstance(data, ExceptionWrapper):
            data.reraise()
        return self._finish(data)

    def _stop_workers(self, join: bool) -> None:
        """Tell every worker to stop; ``join`` waits for them (they are idle once every task
        is answered; an abandoned iterator's workers may be inside a slow fetch, so they are
        left to finish it on their own, as daemon threads)."""
        if self._shutdown:
            return
        self._shutdown = True
        self._done.set()
        for q in self._index_queues:
            q.put(None)
        if join:
            for t in self._workers:
                t.join()

    def __del__(self) -> None:
        if getattr(self, "_workers", None) is not None:
            self._stop_workers(join=False)
