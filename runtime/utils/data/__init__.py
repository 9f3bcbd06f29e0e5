"""``rt.utils.data``: datasets, samplers and the DataLoader, with PyTorch's names."""

from .dataloader import DataLoader, default_collate, default_convert
from .dataset import ConcatDataset, Dataset, IterableDataset, Subset, TensorDataset, random_split
from .sampler import (
    BatchSampler,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
)
from .worker import WorkerInfo, get_worker_info

__all__ = [
    "BatchSampler", "ConcatDataset", "DataLoader", "Dataset", "IterableDataset",
    "RandomSampler", "Sampler", "SequentialSampler", "Subset", "SubsetRandomSampler",
    "TensorDataset", "WorkerInfo", "default_collate", "default_convert", "get_worker_info",
    "random_split",
]
