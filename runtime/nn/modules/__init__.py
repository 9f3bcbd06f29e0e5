"""`runtime.nn.modules`: PyTorch's path to the module machinery
(``torch.nn.modules.module.register_module_forward_hook`` and its kin) and to the batch norm
base classes (``torch.nn.modules.batchnorm._BatchNorm``, which code that resets or finds
batch norm layers tests for, as torch's swa_utils tests do)."""

from runtime.nn import batchnorm, module
from runtime.nn.modules import utils

__all__ = ["batchnorm", "module", "utils"]
