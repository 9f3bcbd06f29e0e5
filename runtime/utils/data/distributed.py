"""DistributedSampler: each of ``num_replicas`` processes reads its own share of a dataset
(the same shuffled order on every rank, from ``seed + epoch``), as torch's."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sized
from typing import TypeVar

from ...creation import Generator, randperm
from .sampler import Sampler

T = TypeVar("T")


class DistributedSampler(Sampler[T]):
    """Rank ``rank``'s indices: every ``num_replicas``-th of the (shuffled) indices, padded
    by repeating the first ones to a multiple of ``num_replicas`` (or, with ``drop_last``,
    cut to one). ``num_replicas`` and ``rank`` default to ``runtime.distributed``'s world
    size and rank; call ``set_epoch`` each epoch for a new order."""

    def __init__(self, dataset: Sized, num_replicas: int | None = None,
                 rank: int | None = None, shuffle: bool = True, seed: int = 0,
                 drop_last: bool = False) -> None:
        if num_replicas is None or rank is None:
            from ... import distributed as dist

            num_replicas = dist.get_world_size() if num_replicas is None else num_replicas
            rank = dist.get_rank() if rank is None else rank
        if rank >= num_replicas or rank < 0:
            raise ValueError(f"Invalid rank {rank}, rank should be in the interval [0, "
                             f"{num_replicas - 1}]")
        self.dataset = dataset
        self.num_replicas = num_replicas
        self.rank = rank
        self.epoch = 0
        self.drop_last = drop_last
        if drop_last and len(dataset) % num_replicas != 0:
            self.num_samples = math.ceil((len(dataset) - num_replicas) / num_replicas)
        else:
            self.num_samples = math.ceil(len(dataset) / num_replicas)
        self.total_size = self.num_samples * num_replicas
        self.shuffle = shuffle
        self.seed = seed

    def __iter__(self) -> Iterator[T]:
        n = len(self.dataset)
        if self.shuffle:
            g = Generator().manual_seed(self.seed + self.epoch)
            indices = randperm(n, generator=g).tolist()
        else:
            indices = list(range(n))
        if self.drop_last:
            indices = indices[:self.total_size]
        else:
            padding = self.total_size - n
            indices += (indices * math.ceil(padding / n))[:padding] if n else []
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self) -> int:
        return self.num_samples

    def set_epoch(self, epoch: int) -> None:
        self.epoch = epoch
