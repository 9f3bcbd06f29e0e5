"""``rt.utils``: data loading (``rt.utils.data``) and activation checkpointing
(``rt.utils.checkpoint``), as ``torch.utils``."""

from . import checkpoint, data

__all__ = ["checkpoint", "data"]
