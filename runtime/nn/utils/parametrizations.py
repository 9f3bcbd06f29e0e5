"""`torch.nn.utils.parametrizations`: ``weight_norm`` and ``spectral_norm`` as
parametrizations (`parametrize.register_parametrization`), PyTorch's math, names and state
dict keys."""

from __future__ import annotations

from typing import Any

from runtime.autograd import no_grad
from runtime.nn.module import Module
from runtime.nn.utils import parametrize
from runtime.ops import functional as F
from runtime.ops.reductions import vector_norm
from runtime.ops.vectors import normalize
from runtime.tensor import Tensor


def norm_except_dim(v: Tensor, pow: float = 2, dim: int = 0) -> Tensor:  # noqa: A002
    """PyTorch's ``torch.norm_except_dim``: the norm over every dimension but ``dim``, kept
    as size-1 dims (``dim=-1``: the norm of the whole tensor, 0-dim)."""
    if dim == -1:
        return vector_norm(v, pow)
    others = tuple(d for d in range(v.ndim) if d != dim)
    return vector_norm(v, pow, others, keepdim=True) if others else F.abs(v)


def _weight_norm(v: Tensor, g: Tensor, dim: int = 0) -> Tensor:
    """PyTorch's ``torch._weight_norm``: ``v`` scaled to the norm ``g`` (along ``dim``)."""
    return F.mul(v, F.div(g, norm_except_dim(v, 2, dim)))


class _WeightNorm(Module):
    def __init__(self, dim: int | None = 0) -> None:
        super().__init__()
        self.dim = -1 if dim is None else dim

    def forward(self, weight_g: Tensor, weight_v: Tensor) -> Tensor:
        return _weight_norm(weight_v, weight_g, self.dim)

    def right_inverse(self, weight: Tensor) -> tuple[Tensor, Tensor]:
        return norm_except_dim(weight, 2, self.dim), weight


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    """``module.<name>`` as ``g * v / ||v||``: ``parametrizations.<name>.original0`` is g
    (the norms along ``dim``), ``original1`` is v. A state dict of the older
    ``nn.utils.weight_norm`` (``<name>_g``, ``<name>_v``) loads into it."""
    parametrize.register_parametrization(module, name, _WeightNorm(dim), unsafe=True)

    def compat(state_dict: dict[str, Any], prefix: str, *args: Any) -> None:
        g_key, v_key = f"{prefix}{name}_g", f"{prefix}{name}_v"
        if g_key in state_dict and v_key in state_dict:
            state_dict[f"{prefix}parametrizations.{name}.original0"] = state_dict.pop(g_key)
            state_dict[f"{prefix}parametrizations.{name}.original1"] = state_dict.pop(v_key)

    module._register_load_state_dict_pre_hook(compat)
    return module


def weight_to_matrix(weight: Tensor, dim: int) -> Tensor:
    """The weight as a matrix whose rows run along ``dim`` (spectral norm's view)."""
    if dim != 0:
        weight = F.permute(weight, dim, *(d for d in range(weight.ndim) if d != dim))
    return F.reshape(weight, (weight.shape[0], -1))


class _SpectralNorm(Module):
    """``weight / sigma``, sigma the largest singular value of the weight as a matrix
    (``dim`` first), estimated by power iteration: one step per training forward."""

    def __init__(self, weight: Tensor, n_power_iterations: int = 1, dim: int = 0,
                 eps: float = 1e-12) -> None:
        super().__init__()
        ndim = weight.ndim
        if dim >= ndim or dim < -ndim:
            raise IndexError(f"Dimension out of range (expected to be in range of [-{ndim}, "
                             f"{ndim - 1}] but got {dim})")
        if n_power_iterations <= 0:
            raise ValueError(f"Expected n_power_iterations to be positive, but got "
                             f"n_power_iterations={n_power_iterations}")
        self.dim = dim if dim >= 0 else dim + ndim
        self.eps = eps
        if ndim > 1:
            from runtime.creation import randn

            self.n_power_iterations = n_power_iterations
            mat = self._reshape_weight_to_matrix(weight)
            h, w = mat.shape
            self.register_buffer("_u", normalize(randn(h, dtype=mat.dtype, device=mat.device),
                                                 dim=0, eps=eps))
            self.register_buffer("_v", normalize(randn(w, dtype=mat.dtype, device=mat.device),
                                                 dim=0, eps=eps))
            self._power_method(mat, 15)

    def _reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        return weight_to_matrix(weight, self.dim)

    def _power_method(self, mat: Tensor, n_power_iterations: int) -> None:
        with no_grad():
            mat = mat.detach()
            for _ in range(n_power_iterations):
                self._u.copy_(normalize(F.matmul(mat, self._v), dim=0, eps=self.eps))
                self._v.copy_(normalize(F.matmul(F.transpose(mat, 0, 1), self._u), dim=0,
                                        eps=self.eps))

    def forward(self, weight: Tensor) -> Tensor:
        if weight.ndim == 1:
            return normalize(weight, dim=0, eps=self.eps)
        mat = self._reshape_weight_to_matrix(weight)
        if self.training:
            self._power_method(mat, self.n_power_iterations)
        u, v = F.clone(self._u), F.clone(self._v)
        sigma = F.sum(F.mul(u, F.matmul(mat, v)))
        return F.div(weight, sigma)

    def right_inverse(self, value: Tensor) -> Tensor:
        return value


def spectral_norm(module: Module, name: str = "weight", n_power_iterations: int = 1,
                  eps: float = 1e-12, dim: int | None = None) -> Module:
    """``module.<name>`` divided by its spectral norm (dim 1 first for a transposed
    convolution, else dim 0); the power iteration's vectors are the buffers ``_u``, ``_v``
    of ``parametrizations.<name>.0``."""
    from runtime.nn.conv import _ConvTransposeNd

    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if dim is None:
        dim = 1 if isinstance(module, _ConvTransposeNd) else 0
    parametrize.register_parametrization(
        module, name, _SpectralNorm(weight, n_power_iterations, dim, eps))
    return module


__all__ = ["spectral_norm", "weight_norm"]
