"""Datasets: indexable (map-style) and iterable sources of samples, and random_split."""

from __future__ import annotations

import bisect
import math
import warnings
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Generic, TypeVar

from ...creation import Generator, cpu_default_generator, default_generator, randperm
from ...tensor import Tensor

T = TypeVar("T")


class Dataset(Generic[T]):
    """A map-style dataset: ``__getitem__(index)`` and (for samplers) ``__len__``."""

    def __getitem__(self, index: int) -> T:
        raise NotImplementedError("Subclasses of Dataset should implement __getitem__.")

    def __add__(self, other: Dataset[T]) -> ConcatDataset[T]:
        return ConcatDataset([self, other])


class IterableDataset(Dataset[T], Iterable[T]):
    """A stream of samples: ``__iter__``; a DataLoader batches what it yields. As PyTorch's,
    an abstract ``collections.abc.Iterable``: a subclass without ``__iter__`` cannot be
    instantiated."""

    def __add__(self, other: Dataset[T]) -> ChainDataset[T]:  # type: ignore[override]
        """Both, one after the other (as torch's: a ChainDataset, not a ConcatDataset)."""
        return ChainDataset([self, other])


class ChainDataset(IterableDataset[T]):
    """Several iterable datasets one after another (chained as they are iterated)."""

    def __init__(self, datasets: Iterable[Dataset[T]]) -> None:
        self.datasets = datasets

    def __iter__(self) -> Iterator[T]:
        for d in self.datasets:
            yield from _iterable(d)

    def __len__(self) -> int:
        return sum(len(_iterable(d)) for d in self.datasets)  # type: ignore[arg-type]


def _iterable(d: Dataset[T]) -> IterableDataset[T]:
    if not isinstance(d, IterableDataset):
        raise AssertionError("ChainDataset only supports IterableDataset")
    return d


class StackDataset(Dataset[Any]):
    """Sample i of several same-length datasets together: a tuple of theirs (datasets given
    positionally) or a dict (given by keyword)."""

    def __init__(self, *args: Dataset[Any], **kwargs: Dataset[Any]) -> None:
        if args and kwargs:
            raise ValueError("Supported either ``tuple``- (via ``args``) or``dict``- (via "
                             "``kwargs``) like input/output, but both types are given.")
        if not args and not kwargs:
            raise ValueError("At least one dataset should be passed")
        datasets = list(args or kwargs.values())
        self._length = len(datasets[0])  # type: ignore[arg-type]
        if any(self._length != len(d) for d in datasets):  # type: ignore[arg-type]
            raise ValueError("Size mismatch between datasets")
        self.datasets: tuple[Dataset[Any], ...] | dict[str, Dataset[Any]] = args or kwargs

    def __getitem__(self, index: int) -> Any:
        if isinstance(self.datasets, dict):
            return {k: d[index] for k, d in self.datasets.items()}
        return tuple(d[index] for d in self.datasets)

    def __getitems__(self, indices: list[int]) -> list[Any]:
        """The samples at ``indices`` in one call to each dataset's ``__getitems__`` where it
        has one (a DataLoader's batched fetch), as torch's."""
        datasets = self.datasets
        named = isinstance(datasets, dict)
        columns = []
        for dataset in (datasets.values() if named else datasets):  # type: ignore[union-attr]
            if callable(getattr(dataset, "__getitems__", None)):
                items = dataset.__getitems__(indices)
                if len(items) != len(indices):
                    raise ValueError("Nested dataset's output size mismatch. Expected "
                                     f"{len(indices)}, got {len(items)}")
            else:
                items = [dataset[i] for i in indices]
            columns.append(items)
        if named:
            return [dict(zip(datasets, row, strict=True)) for row in zip(*columns, strict=True)]
        return [tuple(row) for row in zip(*columns, strict=True)]

    def __len__(self) -> int:
        return self._length


class TensorDataset(Dataset[tuple[Tensor, ...]]):
    """Sample i is ``tuple(t[i] for t in tensors)``."""

    def __init__(self, *tensors: Tensor) -> None:
        # as torch's: no tensors is accepted (len() fails), one without dimensions is an
        # IndexError (its size(0))
        if any(tensors[0].size(0) != t.size(0) for t in tensors):
            raise AssertionError("Size mismatch between tensors")
        self.tensors = tensors

    def __getitem__(self, index: Any) -> tuple[Tensor, ...]:
        return tuple(t[index] for t in self.tensors)

    def __len__(self) -> int:
        return self.tensors[0].size(0)


def getitems(dataset: Any, indices: list[int]) -> list[Any]:
    """``dataset``'s samples at ``indices``: by its ``__getitems__`` if it has one (as
    PyTorch's fetcher), else one by one."""
    if callable(getattr(dataset, "__getitems__", None)):
        return dataset.__getitems__(indices)
    return [dataset[i] for i in indices]


class Subset(Dataset[T]):
    """The samples of ``dataset`` at ``indices``."""

    def __init__(self, dataset: Dataset[T], indices: Sequence[int]) -> None:
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, idx: int | list[int]) -> Any:
        if isinstance(idx, list):
            return self.dataset[[self.indices[i] for i in idx]]  # type: ignore[index]
        return self.dataset[self.indices[idx]]

    def __getitems__(self, indices: list[int]) -> list[Any]:
        return getitems(self.dataset, [self.indices[i] for i in indices])

    def __len__(self) -> int:
        return len(self.indices)


class ConcatDataset(Dataset[T]):
    """Several map-style datasets one after another."""

    def __init__(self, datasets: Sequence[Dataset[T]]) -> None:
        self.datasets = list(datasets)
        if not self.datasets:
            raise AssertionError("datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise AssertionError("ConcatDataset does not support IterableDataset")
        self.cumulative_sizes: list[int] = self.cumsum(self.datasets)

    @staticmethod
    def cumsum(sequence: Sequence[Any]) -> list[int]:
        """The running totals of the lengths in ``sequence``."""
        out, total = [], 0
        for d in sequence:
            total += len(d)
            out.append(total)
        return out

    @property
    def cummulative_sizes(self) -> list[int]:
        """torch's old misspelled name of ``cumulative_sizes``, with its FutureWarning."""
        warnings.warn("`cummulative_sizes` attribute is renamed to `cumulative_sizes`",
                      FutureWarning, stacklevel=2)
        return self.cumulative_sizes

    def __len__(self) -> int:
        return self.cumulative_sizes[-1]

    def __getitem__(self, idx: int) -> T:
        if idx < 0:
            if -idx > len(self):
                raise ValueError("absolute value of index should not exceed dataset length")
            idx += len(self)
        which = bisect.bisect_right(self.cumulative_sizes, idx)
        start = self.cumulative_sizes[which - 1] if which else 0
        return self.datasets[which][idx - start]


def random_split(dataset: Dataset[T], lengths: Sequence[int | float],
                 generator: Generator | None = default_generator) -> list[Subset[T]]:
    """Split into non-overlapping random subsets of the given lengths (or fractions)."""
    n = len(dataset)  # type: ignore[arg-type]
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        for i, frac in enumerate(lengths):
            if frac < 0 or frac > 1:
                raise ValueError(f"Fraction at index {i} is not between 0 and 1")
        subset_lengths = [int(math.floor(n * frac)) for frac in lengths]
        for i in range(n - sum(subset_lengths)):  # the remainder, round-robin
            subset_lengths[i % len(subset_lengths)] += 1
        lengths = subset_lengths
        for i, length in enumerate(lengths):
            if length == 0:
                warnings.warn(f"Length of split at index {i} is 0. This might result in an "
                              "empty dataset.", stacklevel=2)
    if sum(lengths) != n:
        raise ValueError("Sum of input lengths does not equal the length of the input dataset!")
    g = cpu_default_generator() if generator is None or generator is default_generator \
        else generator
    # PyTorch's randperm of the lengths' sum: lengths that are floats but no fractions
    # ([2.0, 3.0]) are its TypeError
    perm = randperm(sum(lengths), generator=g).tolist()  # type: ignore[arg-type]
    out, start = [], 0
    for length in lengths:
        out.append(Subset(dataset, perm[start:start + int(length)]))
        start += int(length)
    return out
