"""Standard Gamma draws with an implicit reparameterization gradient.

A draw ``x ~ Gamma(alpha, 1)`` has ``dx/dalpha = -(dP(alpha, x)/dalpha) / p(x; alpha)`` (P the
regularized lower incomplete gamma function, p the density). With the series
``P = x^alpha e^-x sum_n x^n / Gamma(alpha + n + 1)`` the quotient needs no exponentials:
``term_n / p = x^(n+1) Gamma(alpha) / Gamma(alpha + n + 1)`` and
``d term_n / dalpha = term_n (log x - digamma(alpha + n + 1))``, so

    dx/dalpha = -sum_n r_n (log x - digamma(alpha + n + 1)),  r_0 = x / alpha,
                r_n = r_(n-1) x / (alpha + n).

The sum cancels where x lies far in the upper tail (its terms grow to about one over the
tail's probability): a draw whose tail probability is under 1e-10 loses that many digits, and
such draws do not occur in practice. The sum needs about 9 sqrt(alpha) terms, so above
``_LARGE_ALPHA`` the Wilson-Hilferty form ``x = alpha (1 - s + z sqrt(s))^3``, ``s = 1/(9 alpha)``
is differentiated at fixed ``z`` instead (relative error 2e-7 at alpha = 1e4, less above).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import _dtype as D
from ..autograd.function import Function
from ..creation import _device_generator
from ..tensor import Tensor
from ..tracing import GraphBreak, active_tracer

_MAX_TERMS = 100_000
_LARGE_ALPHA = 1e4


def digamma_np(a: np.ndarray) -> np.ndarray:
    """digamma of positive float64 values: shifted up to 10 by the recurrence, then the
    asymptotic series (error below 1e-15)."""
    a = np.array(a, dtype=np.float64, copy=True)
    shift = np.zeros_like(a)
    while np.any(small := a < 10.0):
        shift = np.where(small, shift + 1.0 / np.where(small, a, 1.0), shift)
        a = np.where(small, a + 1.0, a)
    inv2 = 1.0 / (a * a)
    tail = inv2 * (1 / 12 - inv2 * (1 / 120 - inv2 * (1 / 252 - inv2 * (
        1 / 240 - inv2 * (1 / 132)))))
    return np.log(a) - 0.5 / a - tail - shift


def standard_gamma_grad(alpha: np.ndarray, x: np.ndarray) -> np.ndarray:
    """dx/dalpha of standard Gamma draws ``x`` (float64 arrays of one shape)."""
    alpha, x = np.broadcast_arrays(np.asarray(alpha, dtype=np.float64),
                                   np.asarray(x, dtype=np.float64))
    large = alpha > _LARGE_ALPHA
    if not large.any():
        return _series_grad(alpha, x)
    out = np.empty_like(x)
    out[large] = _wilson_hilferty_grad(alpha[large], x[large])
    out[~large] = _series_grad(alpha[~large], x[~large])
    return out


def _wilson_hilferty_grad(alpha: np.ndarray, x: np.ndarray) -> np.ndarray:
    s = 1.0 / (9.0 * alpha)
    c = np.cbrt(x / alpha)                      # 1 - s + z sqrt(s)
    z_root_s = c - 1.0 + s
    return c ** 3 + 3.0 * c ** 2 * (s - z_root_s / 2.0)


def _series_grad(alpha: np.ndarray, x: np.ndarray) -> np.ndarray:
    if alpha.size == 0:
        return np.empty_like(x)
    log_x = np.log(x)
    psi = digamma_np(alpha) + 1.0 / alpha          # digamma(alpha + 1)
    r = x / alpha
    total = r * (log_x - psi)
    for n in range(1, _MAX_TERMS):
        r = r * x / (alpha + n)
        psi = psi + 1.0 / (alpha + n)
        step = r * (log_x - psi)
        total = total + step
        shrinking = x < alpha + n
        if np.all(shrinking & (np.abs(step) <= 1e-17 * np.abs(total))):
            break
    return -total


def _rng(device: str) -> np.random.Generator:
    """The numpy source of ``device``'s default generator (a GPU's own, as torch draws a
    GPU tensor from that GPU's generator)."""
    return _device_generator(str(device))._rng


class _StandardGamma(Function):
    """Draws of Gamma(alpha, 1), one per element of ``alpha``; differentiable in alpha. A
    native op in PyTorch, so usable inside runtime.func's transforms (setup_context style,
    generate_vmap_rule)."""

    generate_vmap_rule = True

    @staticmethod
    def forward(alpha: Tensor) -> Tensor:  # type: ignore[override]
        a = np.asarray(alpha.detach().cpu().numpy(), dtype=np.float64)
        x = _rng(alpha.device).standard_gamma(a)
        tiny = np.finfo(alpha.dtype.np).tiny
        out = np.maximum(x.astype(alpha.dtype.np), tiny)
        return Tensor._make(out, alpha.dtype, "cpu").to(alpha.device)

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Tensor) -> None:
        a = np.asarray(inputs[0].detach().cpu().numpy(), dtype=np.float64)
        drawn = output.detach().cpu().numpy().astype(np.float64)
        ctx.grad = standard_gamma_grad(a, drawn) if ctx.needs_input_grad[0] else None

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> Tensor:  # type: ignore[override]
        local = Tensor._make(ctx.grad.astype(grad.dtype.np), grad.dtype, "cpu").to(grad.device)
        return grad * local


def standard_gamma(alpha: Tensor, kernel: str = "gamma_cpu") -> Tensor:
    """Gamma(alpha, 1) draws with reparameterized gradients in ``alpha`` (torch's
    ``_standard_gamma``); drawn on the host, so a captured step runs it eagerly. ``kernel``
    names torch's kernel in the error for a dtype it lacks ("dirichlet" for Dirichlet's)."""
    if active_tracer() is not None:
        raise GraphBreak("a Gamma draw inside a captured step")
    if alpha.dtype not in (D.float32, D.float64):  # torch's CPU kernel has no other
        raise NotImplementedError(
            f"\"{kernel}\" not implemented for '{D.scalar_type_name(alpha.dtype)}'")
    return _StandardGamma.apply(alpha)


def host_draw(kind: str, shape: tuple[int, ...], dtype: D.DType, device: str,
              params: dict[str, np.ndarray]) -> Tensor:
    """A host draw of numpy's sampler ``kind`` (poisson, binomial, gamma) with ``params``
    (its keyword arguments) broadcast to ``shape``."""
    if active_tracer() is not None:
        raise GraphBreak(f"a {kind} draw inside a captured step")
    arr = getattr(_rng(device), kind)(**{k: np.broadcast_to(v, shape) for k, v in params.items()})
    arr = np.asarray(arr).astype(dtype.np)
    return Tensor._make(arr, dtype, "cpu").to(device)
