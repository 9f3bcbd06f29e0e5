"""`runtime.nn.modules`: PyTorch's path to the module machinery
(``torch.nn.modules.module.register_module_forward_hook`` and its kin)."""

from runtime.nn import module
from runtime.nn.modules import utils

__all__ = ["module", "utils"]
