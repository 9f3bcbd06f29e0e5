"""``torch.cpu.amp``: the deprecated CPU spellings of ``torch.amp`` (see
``runtime.amp.device_aliases``)."""

from __future__ import annotations

from .. import _dtype as D
from ..amp.device_aliases import DeviceAutocast, DeviceGradScaler


class autocast(DeviceAutocast):  # noqa: N801 - PyTorch's name
    DEVICE = "cpu"
    DEFAULT_DTYPE = D.bfloat16


class GradScaler(DeviceGradScaler):
    DEVICE = "cpu"


__all__ = ["GradScaler", "autocast"]
