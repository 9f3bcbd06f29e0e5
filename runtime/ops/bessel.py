"""torch.special's Airy and Bessel functions of x (``airy_ai``, ``bessel_j0`` ...
``spherical_bessel_j0``) and its orthogonal polynomials of (x, n) (``chebyshev_polynomial_t``
... ``legendre_polynomial_p``): the ``special_host`` primitive over runtime.ops.cephes's
ports of ATen's Math.h, so a captured step computes them at each replay.

As PyTorch's: integer and bool inputs give the default float dtype, half and bfloat16 its
"not implemented" error; a polynomial's x or n may be a Python number (not both); ``out=``;
no gradient: the result never requires grad (PyTorch's have no grad_fn).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import _dtype as D
from ..tensor import Tensor
from . import functional as F
from . import prims as P
from .dispatch import apply
from .math_ops import takes_out
from .shapes import broadcast_shapes
from .tensor_only import type_name
from .zeta import _float_of

_POLYNOMIAL_OVERLOADS = (" * (Tensor x, Tensor n, *, Tensor out = None)\n"
                         " * (Number x, Tensor n, *, Tensor out = None)\n"
                         " * (Tensor x, Number n, *, Tensor out = None)\n")


def _computed_in(name: str, like: Tensor, *values: Any) -> D.DType:
    """The result dtype, float32 or float64 (PyTorch's kernels have no other: its error)."""
    dtype = _float_of(*values)
    if dtype not in (D.float32, D.float64):
        raise NotImplementedError(f'"{name}_{like.device.type}" not implemented for '
                                  f"'{D.scalar_type_name(dtype)}'")
    return dtype


def _unary(name: str, param: str = "input") -> Callable[..., Tensor]:
    """torch.special.<name>, its tensor parameter named ``param`` as PyTorch's (``input``, or
    ``x`` for some); runtime.ops.tensor_only refuses a number there with PyTorch's text."""
    def compute(value: Tensor) -> Tensor:
        dtype = _computed_in(name, value, value)
        x = value if value.dtype is dtype else F.cast(value, dtype)
        return apply(P.SPECIAL_HOST, x.detach(), fn=name, n=0, dtype=dtype)

    if param == "x":
        def op(x: Tensor) -> Tensor:
            return compute(x)
    else:
        def op(input: Tensor) -> Tensor:  # noqa: A002
            return compute(input)

    op.__name__ = op.__qualname__ = name
    op.__doc__ = f"torch.special.{name}: Math.h's (Cephes's) {name.replace('_', ' ')}."
    return takes_out(f"special_{name}")(op)


def _as_tensor(value: Any, dtype: D.DType, like: Tensor) -> Tensor:
    from ..creation import full

    if isinstance(value, Tensor):
        return value if value.dtype is dtype else F.cast(value, dtype)
    return full((), value, dtype=dtype, device=like.device)


def _polynomial(name: str) -> Callable[..., Tensor]:
    def op(x: Any, n: Any, *, out: Tensor | None = None) -> Tensor:
        if not isinstance(x, Tensor) and not isinstance(n, Tensor):
            given = [type_name(x), type_name(n)] + ([] if out is None else ["out=Tensor"])
            raise TypeError(f"special_{name}() received an invalid combination of arguments - "
                            f"got ({', '.join(given)}), but expected one of:\n"
                            f"{_POLYNOMIAL_OVERLOADS}")
        like = x if isinstance(x, Tensor) else n
        dtype = _computed_in(name, like, x, n)
        xt, nt = _as_tensor(x, dtype, like), _as_tensor(n, dtype, like)
        broadcast_shapes(tuple(xt.shape), tuple(nt.shape))
        result = apply(P.SPECIAL_HOST, xt.detach(), nt.detach(), fn=name, n=0, dtype=dtype)
        return result if out is None else F.written_to(out, result, f"special_{name}")

    op.__name__ = op.__qualname__ = name
    op.__doc__ = (f"torch.special.{name}(x, n): Math.h's {name.replace('_', ' ')} of degree n "
                  "(n truncated toward zero; 0 for a negative n).")
    return op


airy_ai = _unary("airy_ai", "x")
bessel_j0 = _unary("bessel_j0")
bessel_j1 = _unary("bessel_j1")
bessel_y0 = _unary("bessel_y0")
bessel_y1 = _unary("bessel_y1")
modified_bessel_i0 = _unary("modified_bessel_i0")
modified_bessel_i1 = _unary("modified_bessel_i1")
modified_bessel_k0 = _unary("modified_bessel_k0")
modified_bessel_k1 = _unary("modified_bessel_k1")
scaled_modified_bessel_k0 = _unary("scaled_modified_bessel_k0", "x")
scaled_modified_bessel_k1 = _unary("scaled_modified_bessel_k1", "x")
spherical_bessel_j0 = _unary("spherical_bessel_j0", "x")
chebyshev_polynomial_t = _polynomial("chebyshev_polynomial_t")
chebyshev_polynomial_u = _polynomial("chebyshev_polynomial_u")
chebyshev_polynomial_v = _polynomial("chebyshev_polynomial_v")
chebyshev_polynomial_w = _polynomial("chebyshev_polynomial_w")
shifted_chebyshev_polynomial_t = _polynomial("shifted_chebyshev_polynomial_t")
shifted_chebyshev_polynomial_u = _polynomial("shifted_chebyshev_polynomial_u")
shifted_chebyshev_polynomial_v = _polynomial("shifted_chebyshev_polynomial_v")
shifted_chebyshev_polynomial_w = _polynomial("shifted_chebyshev_polynomial_w")
hermite_polynomial_h = _polynomial("hermite_polynomial_h")
hermite_polynomial_he = _polynomial("hermite_polynomial_he")
laguerre_polynomial_l = _polynomial("laguerre_polynomial_l")
legendre_polynomial_p = _polynomial("legendre_polynomial_p")

