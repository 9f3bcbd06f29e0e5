"""`runtime.nn.parallel`: data-parallel training across processes (and DataParallel, for
scripts written for it)."""

from runtime.nn.parallel.data_parallel import DataParallel
from runtime.nn.parallel.distributed import DistributedDataParallel

__all__ = ["DataParallel", "DistributedDataParallel"]
