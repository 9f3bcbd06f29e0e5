"""`torch.nn.utils.spectral_norm` and `remove_spectral_norm`: the older, hook-based spectral
normalization (parameter ``<name>_orig``, buffers ``<name>_u`` and ``<name>_v``; a forward
pre-hook recomputes ``<name>``, with a power-iteration step first while training)."""

from __future__ import annotations

from typing import Any

from runtime.autograd import no_grad
from runtime.creation import randn
from runtime.nn.module import Module
from runtime.nn.parameter import Parameter
from runtime.nn.utils.parametrizations import weight_to_matrix
from runtime.ops import functional as F
from runtime.ops.vectors import normalize
from runtime.tensor import Tensor


class SpectralNorm:
    """The forward pre-hook: ``<name> = <name>_orig / sigma``, sigma = u · (W v)."""

    _version = 1

    def __init__(self, name: str = "weight", n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12) -> None:
        if n_power_iterations <= 0:
            raise ValueError(f"Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.name, self.dim = name, dim
        self.n_power_iterations, self.eps = n_power_iterations, eps

    def compute_weight(self, module: Module, do_power_iteration: bool) -> Tensor:
        weight = getattr(module, self.name + "_orig")
        u, v = getattr(module, self.name + "_u"), getattr(module, self.name + "_v")
        mat = weight_to_matrix(weight, self.dim)
        if do_power_iteration:
            with no_grad():
                plain = mat.detach()
                for _ in range(self.n_power_iterations):
                    v.copy_(normalize(F.matmul(F.transpose(plain, 0, 1), u), dim=0,
                                      eps=self.eps))
                    u.copy_(normalize(F.matmul(plain, v), dim=0, eps=self.eps))
            u, v = F.clone(u), F.clone(v)
        sigma = F.sum(F.mul(u, F.matmul(mat, v)))
        return F.div(weight, sigma)

    def remove(self, module: Module) -> None:
        with no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        for suffix in ("", "_u", "_v", "_orig"):
            delattr(module, self.name + suffix)
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self.name, self.compute_weight(module, module.training))

    @staticmethod
    def apply(module: Module, name: str, n_power_iterations: int, dim: int,
              eps: float) -> SpectralNorm:
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise RuntimeError(f"Cannot register two spectral_norm hooks on the same "
                                   f"parameter {name}")
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters[name]
        if weight is None:
            raise ValueError(f"`SpectralNorm` cannot be applied as parameter `{name}` is None")
        with no_grad():
            h, w = weight_to_matrix(weight, dim).shape
            u = normalize(randn(h, dtype=weight.dtype, device=weight.device), dim=0, eps=eps)
            v = normalize(randn(w, dtype=weight.dtype, device=weight.device), dim=0, eps=eps)
        delattr(module, name)
        module.register_parameter(name + "_orig", weight)
        setattr(module, name, weight.detach())
        module.register_buffer(name + "_u", u)
        module.register_buffer(name + "_v", v)
        module.register_forward_pre_hook(fn)
        return fn


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None) -> Module:
    from runtime.nn.conv import _ConvTransposeNd

    if dim is None:
        dim = 1 if isinstance(module, _ConvTransposeNd) else 0
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module: Module, name: str = "weight") -> Module:
    for k, hook in module._forward_pre_hooks.items():
        if isinstance(hook, SpectralNorm) and hook.name == name:
            hook.remove(module)
            del module._forward_pre_hooks[k]
            return module
    raise ValueError(f"spectral_norm of '{name}' not found in {module}")


__all__ = ["remove_spectral_norm", "spectral_norm"]
