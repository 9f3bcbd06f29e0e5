"""``torch.func.replace_all_batch_norm_modules_``: batch norm modules made to use the batch's
statistics only, so that vmap over a model with one does not write running statistics
(an in-place write of batched values into unbatched buffers, which vmap refuses)."""

from __future__ import annotations

from ..nn.batchnorm import _BatchNorm
from ..nn.module import Module

__all__ = ["replace_all_batch_norm_modules_"]


def _without_running_stats(module: Module) -> None:
    if isinstance(module, _BatchNorm) and module.track_running_stats:
        module.running_mean = None
        module.running_var = None
        module.num_batches_tracked = None
        module.track_running_stats = False


def replace_all_batch_norm_modules_(root: Module) -> Module:
    """In place: every batch norm module in ``root`` (``root`` included) gets
    ``running_mean``, ``running_var`` and ``num_batches_tracked`` None and
    ``track_running_stats`` False; returns ``root``."""
    _without_running_stats(root)
    for module in root.modules():
        _without_running_stats(module)
    return root
