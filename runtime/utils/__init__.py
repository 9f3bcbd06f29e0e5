"""``rt.utils``: data loading (``rt.utils.data``), activation checkpointing
(``rt.utils.checkpoint``) and the deterministic fill switch (``rt.utils.deterministic``), as
``torch.utils``."""

from . import checkpoint, data, deterministic

__all__ = ["checkpoint", "data", "deterministic"]
