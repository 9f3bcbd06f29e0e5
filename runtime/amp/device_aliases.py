"""The deprecated per-device spellings ``torch.cuda.amp`` and ``torch.cpu.amp`` (``autocast``,
``GradScaler``, and on CUDA ``custom_fwd``/``custom_bwd``): ``torch.amp``'s with the device
filled in, warning PyTorch's FutureWarning when made. Scripts written before PyTorch 2.4
(nanoGPT's ``torch.cuda.amp.GradScaler(enabled=...)``) use them."""

from __future__ import annotations

import functools
import warnings
from typing import Any

from .. import _dtype as D
from .autocast_mode import autocast, custom_bwd, custom_fwd
from .grad_scaler import GradScaler


def _warn_deprecated(device: str, name: str, replacement: str) -> None:
    warnings.warn(f"`torch.{device}.amp.{name}(args...)` is deprecated. Please use "
                  f"`{replacement}` instead.", FutureWarning, stacklevel=3)


class DeviceAutocast(autocast):
    """``torch.<device>.amp.autocast(enabled, dtype, cache_enabled)``."""

    DEVICE = ""
    DEFAULT_DTYPE: D.DType

    def __init__(self, enabled: bool = True, dtype: Any = None,
                 cache_enabled: bool = True) -> None:
        _warn_deprecated(self.DEVICE, "autocast",
                         f"torch.amp.autocast('{self.DEVICE}', args...)")
        super().__init__(self.DEVICE, dtype=self.DEFAULT_DTYPE if dtype is None else dtype,
                         enabled=enabled, cache_enabled=cache_enabled)


class DeviceGradScaler(GradScaler):
    """``torch.<device>.amp.GradScaler(init_scale, ..., enabled)``."""

    DEVICE = ""

    def __init__(self, init_scale: float = 2.0**16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000,
                 enabled: bool = True) -> None:
        _warn_deprecated(self.DEVICE, "GradScaler",
                         f"torch.amp.GradScaler('{self.DEVICE}', args...)")
        super().__init__(self.DEVICE, init_scale=init_scale, growth_factor=growth_factor,
                         backoff_factor=backoff_factor, growth_interval=growth_interval,
                         enabled=enabled)


def cuda_custom_fwd(fwd: Any = None, *, cast_inputs: Any = None) -> Any:
    """``torch.cuda.amp.custom_fwd``: ``torch.amp.custom_fwd(device_type="cuda")``."""
    _warn_deprecated("cuda", "custom_fwd", "torch.amp.custom_fwd(args..., device_type='cuda')")
    return functools.partial(custom_fwd, device_type="cuda")(fwd=fwd, cast_inputs=cast_inputs)


def cuda_custom_bwd(bwd: Any) -> Any:
    """``torch.cuda.amp.custom_bwd``: ``torch.amp.custom_bwd(device_type="cuda")``."""
    _warn_deprecated("cuda", "custom_bwd", "torch.amp.custom_bwd(args..., device_type='cuda')")
    return functools.partial(custom_bwd, device_type="cuda")(bwd)
