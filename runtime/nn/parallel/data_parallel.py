"""DataParallel, as PyTorch's on a machine without GPUs: it holds the module (state dict
keys ``module.*``) and its forward is the module's. With one GPU it runs the module there,
the inputs moved to it (torch's scatter to one device); splitting a batch over several GPUs is
refused with a pointer to DistributedDataParallel rather than run on one silently."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from runtime.nn.module import Module
from runtime.tensor import Tensor


def _device_index(device: Any) -> int:
    if isinstance(device, int):
        return device
    text = str(device)
    return int(text.split(":")[1]) if ":" in text else 0


def _to(value: Any, device: str) -> Any:
    if isinstance(value, Tensor):
        return value.to(device)
    if isinstance(value, (tuple, list)):
        return type(value)(_to(v, device) for v in value)
    if isinstance(value, dict):
        return {k: _to(v, device) for k, v in value.items()}
    return value


class DataParallel(Module):
    def __init__(self, module: Module, device_ids: Sequence[Any] | None = None,
                 output_device: Any = None, dim: int = 0) -> None:
        from runtime import cuda

        super().__init__()
        if not cuda.is_available():
            self.module = module
            self.device_ids: list[int] = []
            return
        if device_ids is None:
            device_ids = list(range(cuda.device_count()))
        if len(device_ids) > 1:
            raise NotImplementedError("DataParallel over several GPUs is not supported here: "
                                      "use DistributedDataParallel, one process per GPU")
        self.dim = dim
        self.module = module
        self.device_ids = [_device_index(d) for d in device_ids]
        self.output_device = _device_index(device_ids[0] if output_device is None
                                           else output_device)
        self.src_device = f"cuda:{self.device_ids[0]}"
        self.module.to(self.src_device)

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        if not self.device_ids:
            return self.module(*inputs, **kwargs)
        return self.module(*_to(inputs, self.src_device), **_to(kwargs, self.src_device))
