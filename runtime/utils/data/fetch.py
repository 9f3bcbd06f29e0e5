"""Fetchers: one task of a DataLoader (a batch's indices, or one index) turned into data.

The same fetcher runs in the main thread (``num_workers=0``) and in each worker thread,
so the two paths produce the same batches by construction."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from .dataset import Dataset, getitems

Collate = Callable[[Any], Any]


class MapFetcher:
    """``collate_fn([dataset[i] for i in indices])`` with auto-batching (or, as PyTorch, the
    dataset's own ``__getitems__(indices)`` where it has one), else
    ``collate_fn(dataset[index])``."""

    def __init__(self, dataset: Dataset[Any], auto_collation: bool, collate_fn: Collate) -> None:
        self.dataset, self.auto_collation, self.collate_fn = dataset, auto_collation, collate_fn

    def fetch(self, index: Any) -> Any:
        if self.auto_collation:
            return self.collate_fn(getitems(self.dataset, index))
        return self.collate_fn(self.dataset[index])


class IterableFetcher:
    """The next ``batch_size`` samples of one iterator over the dataset; raises
    StopIteration once it is spent (or, with ``drop_last``, when a batch would be short).

    A task's ``index`` is the batch size (auto-batching) or None (one sample)."""

    def __init__(self, dataset: Any, auto_collation: bool, collate_fn: Collate,
                 drop_last: bool) -> None:
        self.iterator: Iterator[Any] = iter(dataset)
        self.auto_collation, self.collate_fn, self.drop_last = (auto_collation, collate_fn,
                                                               drop_last)
        self.ended = False

    def fetch(self, index: Any) -> Any:
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            return self.collate_fn(next(self.iterator))
        data = []
        for _ in range(index):
            try:
                data.append(next(self.iterator))
            except StopIteration:
                self.ended = True
                break
        if not data or (self.drop_last and len(data) < index):
            raise StopIteration
        return self.collate_fn(data)
