"""PyTorch's ``torch/signal/windows/windows.py``: each window is computed from rt's own ops
(linspace, then exp/sin/cos/i0 of it) in the order torch computes it, so its values are
torch's and ``requires_grad=True`` gives the same graph (a leaf linspace, or general_cosine's
coefficients and indices, with the window computed from them)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from ..._dtype import float32, float64
from ...ops.layouts import strided
from ...tensor import Tensor


def _rt() -> Any:
    import runtime  # the package's namespace, set up after this module is imported

    return runtime


def _window_function_checks(function_name: str, M: int, dtype: Any,  # noqa: N803
                            layout: Any) -> None:
    if M < 0:
        raise ValueError(f"{function_name} requires non-negative window length, got M={M}")
    if layout is not strided:
        raise ValueError(f"{function_name} is implemented for strided tensors only, got: "
                         f"{layout}")
    if dtype not in (float32, float64):
        raise ValueError(f"{function_name} expects float32 or float64 dtypes, got: {dtype}")


def _prepare(function_name: str, M: int, dtype: Any, layout: Any) -> Any:  # noqa: N803
    """The window's dtype (the default one where None), after torch's argument checks."""
    dtype = _rt().get_default_dtype() if dtype is None else dtype
    _window_function_checks(function_name, M, dtype, layout)
    return dtype


def _short(M: int, dtype: Any, device: Any, requires_grad: bool) -> Tensor:  # noqa: N803
    """The window of ``M`` (0 or 1) points: empty, or a one."""
    rt = _rt()
    make = rt.empty if M == 0 else rt.ones
    return make((M,), dtype=dtype, device=device, requires_grad=requires_grad)


def _linspace(start: Any, end: Any, M: int, dtype: Any, device: Any,  # noqa: N803
              requires_grad: bool) -> Tensor:
    return _rt().linspace(start, end, M, dtype=dtype, device=device,
                          requires_grad=requires_grad)


def exponential(M: int, *, center: float | None = None, tau: float = 1.0,  # noqa: N803
                sym: bool = True, dtype: Any = None, layout: Any = strided, device: Any = None,
                requires_grad: bool = False) -> Tensor:
    """exp(-|n - center| / tau)."""
    dtype = _prepare("exponential", M, dtype, layout)
    if tau <= 0:
        raise ValueError(f"Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise ValueError("Center must be None for symmetric windows")
    if M == 0:
        return _short(M, dtype, device, requires_grad)
    if center is None:
        center = (M if not sym and M > 1 else M - 1) / 2.0
    constant = 1 / tau
    k = _linspace(-center * constant, (-center + (M - 1)) * constant, M, dtype, device,
                  requires_grad)
    return _rt().exp(-_rt().abs(k))


def cosine(M: int, *, sym: bool = True, dtype: Any = None, layout: Any = strided,  # noqa: N803
           device: Any = None, requires_grad: bool = False) -> Tensor:
    """sin(pi (n + 1/2) / M): a sine arch."""
    dtype = _prepare("cosine", M, dtype, layout)
    if M == 0:
        return _short(M, dtype, device, requires_grad)
    start = 0.5
    constant = math.pi / (M + 1 if not sym and M > 1 else M)
    k = _linspace(start * constant, (start + (M - 1)) * constant, M, dtype, device,
                  requires_grad)
    return _rt().sin(k)


def gaussian(M: int, *, std: float = 1.0, sym: bool = True, dtype: Any = None,  # noqa: N803
             layout: Any = strided, device: Any = None, requires_grad: bool = False) -> Tensor:
    """exp(-(n - (M - 1) / 2)^2 / (2 std^2))."""
    dtype = _prepare("gaussian", M, dtype, layout)
    if std <= 0:
        raise ValueError(f"Standard deviation must be positive, got: {std} instead.")
    if M == 0:
        return _short(M, dtype, device, requires_grad)
    start = -(M if not sym and M > 1 else M - 1) / 2.0
    constant = 1 / (std * math.sqrt(2))
    k = _linspace(start * constant, (start + (M - 1)) * constant, M, dtype, device,
                  requires_grad)
    return _rt().exp(-(k ** 2))


def kaiser(M: int, *, beta: float = 12.0, sym: bool = True, dtype: Any = None,  # noqa: N803
           layout: Any = strided, device: Any = None, requires_grad: bool = False) -> Tensor:
    """I0(beta sqrt(1 - (2n / (M - 1) - 1)^2)) / I0(beta)."""
    rt = _rt()
    dtype = _prepare("kaiser", M, dtype, layout)
    if beta < 0:
        raise ValueError(f"beta must be non-negative, got: {beta} instead.")
    if M <= 1:
        return _short(M, dtype, device, requires_grad)
    beta_t = rt.tensor(beta, dtype=dtype, device=device)  # in dtype: no NaN at the ends
    start = -beta_t
    constant = 2.0 * beta_t / (M if not sym else M - 1)
    end = rt.minimum(beta_t, start + (M - 1) * constant)
    k = _linspace(start, end, M, dtype, device, requires_grad)
    return rt.i0(rt.sqrt(beta_t * beta_t - rt.pow(k, 2))) / rt.i0(beta_t)


def hamming(M: int, *, sym: bool = True, dtype: Any = None, layout: Any = strided,  # noqa: N803
            device: Any = None, requires_grad: bool = False) -> Tensor:
    """general_hamming with alpha 0.54."""
    return general_hamming(M, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def hann(M: int, *, sym: bool = True, dtype: Any = None, layout: Any = strided,  # noqa: N803
         device: Any = None, requires_grad: bool = False) -> Tensor:
    """general_hamming with alpha 0.5."""
    return general_hamming(M, alpha=0.5, sym=sym, dtype=dtype, layout=layout, device=device,
                           requires_grad=requires_grad)


def blackman(M: int, *, sym: bool = True, dtype: Any = None, layout: Any = strided,  # noqa: N803
             device: Any = None, requires_grad: bool = False) -> Tensor:
    """general_cosine with a = [0.42, 0.5, 0.08]."""
    dtype = _prepare("blackman", M, dtype, layout)
    return general_cosine(M, a=[0.42, 0.5, 0.08], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


def bartlett(M: int, *, sym: bool = True, dtype: Any = None, layout: Any = strided,  # noqa: N803
             device: Any = None, requires_grad: bool = False) -> Tensor:
    """1 - |2n / (M - 1) - 1|: a triangle."""
    dtype = _prepare("bartlett", M, dtype, layout)
    if M <= 1:
        return _short(M, dtype, device, requires_grad)
    start = -1
    constant = 2 / (M if not sym else M - 1)
    k = _linspace(start, start + (M - 1) * constant, M, dtype, device, requires_grad)
    return 1 - _rt().abs(k)


def general_cosine(M: int, *, a: Iterable[float], sym: bool = True,  # noqa: N803
                   dtype: Any = None, layout: Any = strided, device: Any = None,
                   requires_grad: bool = False) -> Tensor:
    """sum_i (-1)^i a_i cos(2 pi i n / (M - 1))."""
    rt = _rt()
    dtype = _prepare("general_cosine", M, dtype, layout)
    if M <= 1:
        return _short(M, dtype, device, requires_grad)
    if not isinstance(a, Iterable):
        raise TypeError("Coefficients must be a list/tuple")
    if not a:
        raise ValueError("Coefficients cannot be empty")
    constant = 2 * math.pi / (M if not sym else M - 1)
    k = _linspace(0, (M - 1) * constant, M, dtype, device, requires_grad)
    a_i = rt.tensor([(-1) ** i * w for i, w in enumerate(a)], device=device, dtype=dtype,
                    requires_grad=requires_grad)
    i = rt.arange(a_i.shape[0], dtype=a_i.dtype, device=a_i.device,
                  requires_grad=a_i.requires_grad)
    return (a_i.unsqueeze(-1) * rt.cos(i.unsqueeze(-1) * k)).sum(0)


def general_hamming(M: int, *, alpha: float = 0.54, sym: bool = True,  # noqa: N803
                    dtype: Any = None, layout: Any = strided, device: Any = None,
                    requires_grad: bool = False) -> Tensor:
    """alpha - (1 - alpha) cos(2 pi n / (M - 1))."""
    return general_cosine(M, a=[alpha, 1.0 - alpha], sym=sym, dtype=dtype, layout=layout,
                          device=device, requires_grad=requires_grad)


def nuttall(M: int, *, sym: bool = True, dtype: Any = None, layout: Any = strided,  # noqa: N803
            device: Any = None, requires_grad: bool = False) -> Tensor:
    """general_cosine with Nuttall's four terms."""
    return general_cosine(M, a=[0.3635819, 0.4891775, 0.1365995, 0.0106411], sym=sym,
                          dtype=dtype, layout=layout, device=device,
                          requires_grad=requires_grad)
