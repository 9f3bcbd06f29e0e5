"""Samplers: which dataset indices a DataLoader reads, in which order."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence, Sized
from typing import Generic, TypeVar

import numpy as np

from ...creation import (Generator, as_tensor, cpu_default_generator, multinomial,
                         torch_permutation)
from ...tensor import Tensor
from ... import _dtype as D
from ... import _torch_rng

T = TypeVar("T")


def rng_of(generator: Generator | None) -> np.random.Generator:
    """The numpy stream a sampler draws from: ``generator``'s own, or (as PyTorch seeds a
    fresh one from the default generator) one seeded from ``rt.manual_seed``'s stream."""
    if generator is not None:
        return generator._rng
    return np.random.default_rng(int(cpu_default_generator()._rng.integers(1 << 63)))


def torch_stream(generator: Generator | None) -> Generator:
    """The generator a PyTorch sampler permutes with: ``generator``, or a fresh one seeded
    by a 64-bit draw of the default generator's PyTorch stream (its RandomSampler's
    ``torch.empty((), dtype=torch.int64).random_()``)."""
    if generator is not None:
        return generator
    return Generator().manual_seed(cpu_default_generator()._torch_random64())


class Sampler(Generic[T]):
    """Base class: an iterable over indices (or lists of indices). As PyTorch's (since 2.2) it
    takes no data_source."""

    def __iter__(self) -> Iterator[T]:
        raise NotImplementedError


class SequentialSampler(Sampler[int]):
    def __init__(self, data_source: Sized) -> None:
        self.data_source = data_source

    def __iter__(self) -> Iterator[int]:
        return iter(range(len(self.data_source)))

    def __len__(self) -> int:
        return len(self.data_source)


class RandomSampler(Sampler[int]):
    """A permutation of the indices (or ``num_samples`` draws with replacement)."""

    def __init__(self, data_source: Sized, replacement: bool = False,
                 num_samples: int | None = None, generator: Generator | None = None) -> None:
        if not isinstance(replacement, bool):
            raise TypeError("replacement should be a boolean value, but got "
                            f"replacement={replacement}")
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError("num_samples should be a positive integer value, but got "
                             f"num_samples={self.num_samples}")

    @property
    def num_samples(self) -> int:
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self) -> Iterator[int]:
        # PyTorch's draws from its stream: randint(high=n) 32 at a time (a 32-bit draw
        # modulo n each), or whole permutations (the last one drawn even when none of it is
        # used), so that the orders equal PyTorch's for the same seed
        n, g = len(self.data_source), torch_stream(self.generator)
        if self.replacement:
            # lazily: makemore's InfiniteDataLoader asks for 1e10 samples, and a list of the
            # chunk sizes was 2.5 GB and 5 s before the first index
            for _ in range(self.num_samples // 32):
                yield from _torch_rng.integers(g._rng, (32,), 0, n).tolist()
            yield from _torch_rng.integers(g._rng, (self.num_samples % 32,), 0, n).tolist()
            return
        for _ in range(self.num_samples // n):
            yield from torch_permutation(n, g).tolist()
        yield from torch_permutation(n, g).tolist()[:self.num_samples % n]

    def __len__(self) -> int:
        return self.num_samples


class WeightedRandomSampler(Sampler[int]):
    """``num_samples`` indices drawn with probabilities proportional to ``weights`` (with
    replacement by default)."""

    def __init__(self, weights: Sequence[float] | Tensor, num_samples: int,
                 replacement: bool = True, generator: Generator | None = None) -> None:
        if (not isinstance(num_samples, int) or isinstance(num_samples, bool)
                or num_samples <= 0):
            raise ValueError("num_samples should be a positive integer value, but got "
                             f"num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError("replacement should be a boolean value, but got "
                             f"replacement={replacement}")
        weights_tensor = as_tensor(weights, dtype=D.float64)
        if weights_tensor.ndim != 1:
            raise ValueError("weights should be a 1d sequence but given weights have shape "
                             f"{tuple(weights_tensor.shape)}")
        self.weights = weights_tensor
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        drawn = multinomial(self.weights, self.num_samples, self.replacement,
                            generator=self.generator)
        yield from iter(drawn.tolist())

    def __len__(self) -> int:
        return self.num_samples


class SubsetRandomSampler(Sampler[int]):
    """The given indices in a random order."""

    def __init__(self, indices: Sequence[int], generator: Generator | None = None) -> None:
        self.indices = indices
        self.generator = generator

    def __iter__(self) -> Iterator[int]:
        for i in torch_permutation(len(self.indices), self.generator).tolist():
            yield self.indices[i]

    def __len__(self) -> int:
        return len(self.indices)


class BatchSampler(Sampler[list[int]]):
    """Groups another sampler's indices into lists of ``batch_size``."""

    def __init__(self, sampler: Sampler[int] | Iterable[int], batch_size: int,
                 drop_last: bool) -> None:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size <= 0:
            raise ValueError("batch_size should be a positive integer value, but got "
                             f"batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError("drop_last should be a boolean value, but got "
                             f"drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self) -> Iterator[list[int]]:
        batch: list[int] = []
        for i in self.sampler:
            batch.append(i)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self) -> int:
        n = len(self.sampler)  # type: ignore[arg-type]
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)


