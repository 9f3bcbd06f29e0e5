"""The DataLoader: samples read by a sampler's indices and collated into batches."""

from __future__ import annotations

import numbers
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from ...creation import Generator, tensor
from ...ops.functional import stack
from ...tensor import Tensor
from .dataset import Dataset, IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler


def default_collate(batch: Sequence[Any]) -> Any:
    """Stack a list of samples into a batch, as PyTorch's default_collate: tensors and
    numpy arrays are stacked, numbers become a tensor, strings stay a list, and dicts,
    tuples and lists are collated field by field."""
    elem = batch[0]
    if isinstance(elem, Tensor):
        return stack(list(batch), 0)
    if isinstance(elem, np.ndarray) and elem.dtype.kind in "biuf":
        return stack([tensor(b) for b in batch], 0)
    if isinstance(elem, np.generic) and elem.dtype.kind in "biuf":
        return tensor(np.array(batch))
    if isinstance(elem, bool):
        return tensor(list(batch))
    if isinstance(elem, numbers.Integral):
        return tensor(list(batch))  # int64, as PyTorch
    if isinstance(elem, numbers.Real):
        return tensor(np.array(batch, dtype=np.float64))  # float64, as PyTorch
    if isinstance(elem, (str, bytes)):
        return list(batch)
    if isinstance(elem, Mapping):
        return type(elem)({k: default_collate([d[k] for d in batch]) for k in elem}) \
            if type(elem) is not dict else {k: default_collate([d[k] for d in batch])
                                            for k in elem}
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # a namedtuple
        return type(elem)(*(default_collate(list(s)) for s in zip(*batch)))
    if isinstance(elem, Sequence):
        if any(len(e) != len(elem) for e in batch):
            raise RuntimeError("each element in list of batch should be of equal size")
        fields = [default_collate(list(s)) for s in zip(*batch)]
        return tuple(fields) if isinstance(elem, tuple) else fields
    raise TypeError("default_collate: batch must contain tensors, numpy arrays, numbers, "
                    f"dicts or lists; found {type(elem)}")


class DataLoader:
    """Batches of a dataset: ``for x, y in DataLoader(ds, batch_size=64, shuffle=True,
    generator=rt.Generator().manual_seed(0)):``. Samples are read in this process
    (``num_workers=0``, the only value accepted: workers are not implemented)."""

    def __init__(self, dataset: Dataset[Any], batch_size: int | None = 1,
                 shuffle: bool | None = None, sampler: Sampler[Any] | Iterable[Any] | None = None,
                 batch_sampler: Sampler[Any] | Iterable[Any] | None = None,
                 num_workers: int = 0, collate_fn: Callable[[list[Any]], Any] | None = None,
                 pin_memory: bool = False, drop_last: bool = False,
                 generator: Generator | None = None) -> None:
        if num_workers < 0:
            raise ValueError("num_workers option should be non-negative; use num_workers=0 "
                             "to disable multiprocessing.")
        if num_workers > 0:
            raise ValueError(f"num_workers={num_workers}: worker processes are not "
                             "implemented; use num_workers=0")
        if pin_memory:
            raise ValueError("pin_memory=True: pinned host memory is not implemented")
        iterable = isinstance(dataset, IterableDataset)
        if iterable and (shuffle not in (None, False) or sampler is not None
                         or batch_sampler is not None):
            raise ValueError("DataLoader with IterableDataset: expected unspecified shuffle, "
                             "sampler or batch_sampler option")
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
        self.dataset = dataset
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.num_workers = num_workers
        self.generator = generator
        self.collate_fn = collate_fn or (default_collate if batch_size is not None
                                         or batch_sampler is not None else _convert)

    def __iter__(self) -> Iterator[Any]:
        if isinstance(self.dataset, IterableDataset):
            yield from self._iter_stream()
        elif self.batch_sampler is not None:
            for indices in self.batch_sampler:
                yield self.collate_fn([self.dataset[i] for i in indices])
        else:
            for i in self.sampler:  # type: ignore[union-attr]
                yield self.collate_fn(self.dataset[i])

    def _iter_stream(self) -> Iterator[Any]:
        if self.batch_size is None:
            yield from (self.collate_fn(s) for s in self.dataset)  # type: ignore[attr-defined]
            return
        batch: list[Any] = []
        for sample in self.dataset:  # type: ignore[attr-defined]
            batch.append(sample)
            if len(batch) == self.batch_size:
                yield self.collate_fn(batch)
                batch = []
        if batch and not self.drop_last:
            yield self.collate_fn(batch)

    def __len__(self) -> int:
        if isinstance(self.dataset, IterableDataset):
            n = len(self.dataset)  # type: ignore[arg-type]
            if self.batch_size is None:
                return n
            return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
        if self.batch_sampler is not None:
            return len(self.batch_sampler)  # type: ignore[arg-type]
        return len(self.sampler)  # type: ignore[arg-type]


def _convert(sample: Any) -> Any:
    """Without batching, numpy arrays become tensors and everything else passes through."""
    if isinstance(sample, np.ndarray):
        return tensor(sample)
    if isinstance(sample, Mapping):
        return {k: _convert(v) for k, v in sample.items()}
    if isinstance(sample, tuple):
        return tuple(_convert(v) for v in sample)
    return sample
