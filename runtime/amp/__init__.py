"""Automatic mixed precision, as PyTorch's ``torch.amp``: ``autocast`` regions and
``GradScaler``."""

from .autocast_mode import (
    autocast,
    clear_autocast_cache,
    custom_bwd,
    custom_fwd,
    get_autocast_dtype,
    is_autocast_available,
    is_autocast_cache_enabled,
    is_autocast_enabled,
    set_autocast_cache_enabled,
    set_autocast_dtype,
    set_autocast_enabled,
)
from .grad_scaler import GradScaler

__all__ = ["GradScaler", "autocast", "clear_autocast_cache", "custom_bwd", "custom_fwd",
           "get_autocast_dtype", "is_autocast_available",
           "is_autocast_cache_enabled", "is_autocast_enabled",
           "set_autocast_cache_enabled", "set_autocast_dtype", "set_autocast_enabled"]
