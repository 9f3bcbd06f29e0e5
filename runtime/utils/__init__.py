"""``rt.utils``: data loading (``rt.utils.data``), as ``torch.utils``."""

from . import data

__all__ = ["data"]
