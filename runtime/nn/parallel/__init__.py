"""`runtime.nn.parallel`: data-parallel training across processes."""

from runtime.nn.parallel.distributed import DistributedDataParallel

__all__ = ["DistributedDataParallel"]
