"""`runtime.distributed`: processes that train together, in the shape of `torch.distributed`,
over MPI (mpi4py; launch with ``mpiexec -n N python train.py``). Importing it loads no MPI:
``init_process_group`` does."""

from .collectives import (
    Bucket,
    ReduceOp,
    Work,
    all_gather_object,
    all_reduce,
    barrier,
    broadcast,
    save_checkpoint,
)
from .group import (
    destroy_process_group,
    get_rank,
    get_world_size,
    init_process_group,
    is_initialized,
)

__all__ = [
    "Bucket",
    "ReduceOp",
    "Work",
    "all_gather_object",
    "all_reduce",
    "barrier",
    "broadcast",
    "destroy_process_group",
    "get_rank",
    "get_world_size",
    "init_process_group",
    "is_initialized",
    "save_checkpoint",
]
