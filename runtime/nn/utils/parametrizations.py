"""`torch.nn.utils.parametrizations`: ``orthogonal``, ``weight_norm`` and ``spectral_norm``
as parametrizations (`parametrize.register_parametrization`), PyTorch's math, names and state
dict keys."""

from __future__ import annotations

from enum import Enum, auto
from typing import Any

import numpy as np

from runtime import _dtype as D
from runtime.autograd import no_grad
from runtime.nn.module import Module
from runtime.nn.utils import parametrize
from runtime.ops import functional as F
from runtime.ops.dispatch import named
from runtime.ops.reductions import vector_norm
from runtime.ops.tensor_ops import tril
from runtime.ops.vectors import normalize
from runtime.linalg import matrix_exp
from runtime.tensor import Tensor


def norm_except_dim(v: Tensor, pow: float = 2, dim: int = 0) -> Tensor:  # noqa: A002
    """PyTorch's ``torch.norm_except_dim``: the norm over every dimension but ``dim``, kept
    as size-1 dims (``dim=-1``: the norm of the whole tensor, 0-dim)."""
    if dim == -1:
        return vector_norm(v, pow)
    others = tuple(d for d in range(v.ndim) if d != dim)
    return vector_norm(v, pow, others, keepdim=True) if others else F.abs(v)


def _weight_norm(v: Tensor, g: Tensor, dim: int = 0) -> Tensor:
    """PyTorch's ``torch._weight_norm``: ``v`` scaled to the norm ``g`` (along ``dim``). Its
    node is WeightNormInterfaceBackward0 where PyTorch runs its fused kernel (``dim`` the first
    or the last dimension), else its composite's MulBackward0."""
    out = F.mul(v, F.div(g, norm_except_dim(v, 2, dim)))
    return named(out, "WeightNormInterfaceBackward0") if dim in (0, v.ndim - 1) else out


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


# ------------------------------------------------------------------------------ orthogonal


def _eye_like(x: Tensor, n: int, m: int | None = None) -> Tensor:
    from runtime.creation import eye

    return eye(n, n if m is None else m, dtype=x.dtype, device=x.device)


def _householder_product(a: Tensor, tau: Tensor) -> Tensor:
    """``torch.linalg.householder_product``: the first n columns of H_1 ... H_k, H_i =
    I - tau_i v_i v_i^T, v_i the i-th column of ``a`` below the diagonal with a 1 on it;
    differentiable in both."""
    m, n = a.shape[-2:]
    reflectors = F.add(tril(a, -1), _eye_like(a, m, n))
    q = _eye_like(a, m)
    for i in range(tau.shape[-1]):
        v = reflectors[..., :, i:i + 1]
        t = F.unsqueeze(F.unsqueeze(tau[..., i], -1), -1)
        q = F.sub(q, F.mul(F.matmul(F.matmul(q, v), F.transpose(v, -2, -1)), t))
    return q[..., :, :n]


def _geqrf(a: Tensor) -> tuple[Tensor, Tensor]:
    """``torch.geqrf`` (LAPACK's, through numpy's raw QR): the reflectors below the diagonal
    and R on and above it, and the reflectors' scales. Not differentiable, as torch's."""
    from runtime.creation import tensor

    h, tau = np.linalg.qr(a.detach().numpy(), mode="raw")
    return (tensor(np.ascontiguousarray(np.swapaxes(h, -2, -1)), dtype=a.dtype,
                   device=a.device),
            tensor(tau, dtype=a.dtype, device=a.device))


def _is_orthogonal(q: Tensor) -> bool:
    n, k = q.shape[-2:]
    eps = 10.0 * n * float(np.finfo(q.detach().numpy().dtype).eps)
    gram = F.matmul(F.transpose(q, -2, -1), q).detach().numpy()
    return bool(np.allclose(gram, np.eye(k), atol=eps))


def _make_orthogonal(a: Tensor) -> Tensor:
    """The Q of a = QR (a tall) with diag(R) >= 0."""
    x, tau = _geqrf(a)
    q = _householder_product(x, tau)
    return F.mul(q, F.unsqueeze(F.sign(x.diagonal(0, -2, -1)), -2))


class _OrthMaps(Enum):
    matrix_exp = auto()
    cayley = auto()
    householder = auto()


class _Orthogonal(Module):
    """An orthogonal matrix (or a batch of them) from an unconstrained one: the exponential
    or the Cayley transform of its skew-symmetric part, or a product of Householder
    reflectors; with ``use_trivialization`` it is multiplied by the buffer ``base``, the
    orthogonal matrix last assigned."""

    def __init__(self, weight: Tensor, orthogonal_map: _OrthMaps, *,
                 use_trivialization: bool = True) -> None:
        super().__init__()
        self.shape = weight.shape
        self.orthogonal_map = orthogonal_map
        if use_trivialization:
            self.register_buffer("base", None)

    def forward(self, X: Tensor) -> Tensor:  # noqa: N803 - PyTorch's name
        n, k = X.shape[-2:]
        transposed = n < k
        if transposed:
            X = F.transpose(X, -2, -1)
            n, k = k, n
        if self.orthogonal_map is _OrthMaps.householder:
            a = tril(X, -1)
            tau = F.div(2.0, F.add(F.sum(F.mul(a, a), -2), 1.0))
            q = _householder_product(a, tau)
            # the diagonal of X holds the signs (1 or -1), not differentiated
            signs = F.cast(F.cast(X.diagonal(0, -2, -1).detach(), D.int32), X.dtype)
            q = F.mul(q, F.unsqueeze(signs, -2))
        else:
            a = tril(X)
            if n != k:  # embedded in a square matrix
                from runtime.creation import zeros

                pad = zeros(*X.shape[:-2], n, n - k, dtype=X.dtype, device=X.device)
                a = F.cat([a, pad], -1)
            a = F.sub(a, F.transpose(a, -2, -1))  # skew-symmetric
            if self.orthogonal_map is _OrthMaps.matrix_exp:
                q = matrix_exp(a)
            else:  # Cayley: (I - A/2)^{-1} (I + A/2)
                from runtime.linalg import solve

                eye = _eye_like(a, n)
                q = solve(F.sub(eye, F.mul(a, 0.5)), F.add(eye, F.mul(a, 0.5)))
            if n != k:
                q = q[..., :k]
        if "base" in self._buffers:
            q = F.matmul(self.base, q)
        return F.transpose(q, -2, -1) if transposed else q

    def right_inverse(self, Q: Tensor) -> Tensor:  # noqa: N803 - PyTorch's name
        with no_grad():
            return self._right_inverse(Q)

    def _right_inverse(self, q: Tensor) -> Tensor:
        from runtime.creation import randn, zeros_like

        if tuple(q.shape) != tuple(self.shape):
            raise ValueError(f"Expected a matrix or batch of matrices of shape {self.shape}. "
                             f"Got a tensor of shape {q.shape}.")
        q_init = q
        n, k = q.shape[-2:]
        transpose = n < k
        if transpose:
            q = F.transpose(q, -2, -1)
            n, k = k, n
        if "base" not in self._buffers:
            if self.orthogonal_map is not _OrthMaps.householder:
                raise NotImplementedError("It is not possible to assign to the matrix "
                                          "exponential or the Cayley parametrizations when "
                                          "use_trivialization=False.")
            a, tau = _geqrf(q)
            # diag(R) > 0, so that the decomposition is unique; LAPACK's tau is 0 exactly
            # where it used no reflection
            values = a.numpy().copy()
            idx = np.arange(k)
            signs = np.sign(values[..., idx, idx])
            values[..., idx, idx] = np.where(tau.numpy() == 0.0, -signs, signs)
            a = _like(a, values)
            return F.transpose(a, -2, -1) if transpose else a
        if n == k:
            q = F.clone(q) if _is_orthogonal(q) else _make_orthogonal(q)
        else:  # completed to a square orthogonal matrix
            extra = randn(*q.shape[:-2], n, n - k, dtype=q.dtype, device=q.device)
            q = _make_orthogonal(F.cat([q, extra], -1))
        self.base = q
        # -I: the householder map of it is the identity (its diagonal holds the signs)
        neg_id = zeros_like(q_init)
        return F.sub(neg_id, _eye_like(q_init, *q_init.shape[-2:]))


def _like(x: Tensor, values: np.ndarray) -> Tensor:
    from runtime.creation import tensor

    return tensor(values, dtype=x.dtype, device=x.device)


def orthogonal(module: Module, name: str = "weight", orthogonal_map: str | None = None, *,
               use_trivialization: bool = True) -> Module:
    """``module.<name>`` kept orthogonal (orthonormal columns, or rows when it is wide; a
    batch of matrices past 2 dims), PyTorch's ``orthogonal``: ``orthogonal_map`` is
    "matrix_exp" (the default for a square matrix), "cayley" or "householder" (the default
    otherwise)."""
    weight = getattr(module, name, None)
    if not isinstance(weight, Tensor):
        raise ValueError(f"Module '{module}' has no parameter or buffer with name '{name}'")
    if weight.ndim < 2:
        raise ValueError("Expected a matrix or batch of matrices. "
                         f"Got a tensor of {weight.ndim} dimensions.")
    if orthogonal_map is None:
        orthogonal_map = "matrix_exp" if weight.shape[-2] == weight.shape[-1] else \
            "householder"
    orth_enum = getattr(_OrthMaps, orthogonal_map, None)
    if orth_enum is None:
        raise ValueError('orthogonal_map has to be one of "matrix_exp", "cayley", '
                         f'"householder". Got: {orthogonal_map}')
    orth = _Orthogonal(weight, orth_enum, use_trivialization=use_trivialization)
    parametrize.register_parametrization(module, name, orth, unsafe=True)
    return module


__all__ = ["orthogonal", "spectral_norm", "weight_norm"]
