"""PyTorch's ``torch.utils.data._utils``: the collate module, which user code imports to
extend ``default_collate`` (``default_collate_fn_map``) or to build its own (``collate``)."""

from . import collate

__all__ = ["collate"]
