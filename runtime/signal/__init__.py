"""``torch.signal``: its window functions (``rt.signal.windows``)."""

from . import windows

__all__ = ["windows"]
