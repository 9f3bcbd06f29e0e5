"""runtime.distributed without a process group: errors in PyTorch's words, and no MPI loaded
by importing the runtime."""

from __future__ import annotations

import subprocess
import sys

import pytest

import runtime as rt
from runtime import distributed as dist


def test_importing_runtime_loads_no_mpi() -> None:
    code = ("import sys, runtime, planner; import runtime.nn.parallel; "
            "print('mpi4py' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize("call, error, message", [
    (dist.get_rank, ValueError, "Default process group has not been initialized"),
    (dist.get_world_size, ValueError, "Default process group has not been initialized"),
    (dist.barrier, ValueError, "Default process group has not been initialized"),
    (dist.destroy_process_group, AssertionError, "Process group cannot be None")])
def test_calls_before_init_process_group(call: object, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        call()  # type: ignore[operator]
    torch = pytest.importorskip("torch")
    with pytest.raises(error, match=message):
        getattr(torch.distributed, call.__name__)()  # type: ignore[attr-defined]


def test_bad_arguments_are_named() -> None:
    assert not dist.is_initialized()
    with pytest.raises(ValueError, match="backend 'nccl' is not available"):
        dist.init_process_group("nccl")
    with pytest.raises(ValueError, match="init_method 'tcp://x:1'"):
        dist.init_process_group(init_method="tcp://x:1")
    with pytest.raises(TypeError, match="timeout must be a datetime.timedelta"):
        dist.init_process_group(timeout=5)
    with pytest.raises(ValueError, match="Default process group has not been initialized"):
        rt.nn.parallel.DistributedDataParallel(rt.nn.Linear(2, 2))
