"""``torch.cuda.amp``: the deprecated CUDA spellings of ``torch.amp`` (see
``runtime.amp.device_aliases``)."""

from __future__ import annotations

from .. import _dtype as D
from ..amp.device_aliases import DeviceAutocast, DeviceGradScaler
from ..amp.device_aliases import cuda_custom_bwd as custom_bwd
from ..amp.device_aliases import cuda_custom_fwd as custom_fwd


class autocast(DeviceAutocast):  # noqa: N801 - PyTorch's name
    DEVICE = "cuda"
    DEFAULT_DTYPE = D.float16


class GradScaler(DeviceGradScaler):
    DEVICE = "cuda"


__all__ = ["GradScaler", "autocast", "custom_bwd", "custom_fwd"]
