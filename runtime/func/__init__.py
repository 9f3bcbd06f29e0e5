"""``torch.func`` as ``runtime.func``: composable function transforms over the eager
autograd engine. Reverse mode is the engine's; forward mode (``jvp``, ``jacfwd``,
``linearize``) is reverse mode twice (the double-vjp trick); ``vmap`` runs the function once
per batch element (see ``runtime.func.vmap`` for what that changes)."""

from .batch_norm_replacement import replace_all_batch_norm_modules_
from .forward import jacfwd, jvp, linearize
from .functional_call import functional_call, stack_module_state
from .grad import grad, grad_and_value, vjp
from .jacobians import hessian, jacrev
from .vmap import vmap

__all__ = ["functional_call", "grad", "grad_and_value", "hessian", "jacfwd", "jacrev", "jvp",
           "linearize", "replace_all_batch_norm_modules_", "stack_module_state", "vjp", "vmap"]
