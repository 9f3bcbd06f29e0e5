"""``torch.cpu``: for now its ``amp`` submodule, the deprecated CPU spellings of
``torch.amp``."""

from . import amp

__all__ = ["amp"]
