"""The Hurwitz zeta function and polygamma, as PyTorch computes them (ATen's Math.h, after
Cephes): zeta(x, q) = sum_k (k + q)^-x by Euler-Maclaurin summation, trigamma by its
recurrence and asymptotic series, and polygamma(n, x) = (-1)^(n+1) n! zeta(n + 1, x) for
n >= 2. The values are numpy's, in float64 (rounded once to a float32 input's dtype); the
gradients are PyTorch's formulas, written with these ops so they differentiate again:
polygamma(n, x)' = polygamma(n + 1, x), d zeta(x, q) / dq = -x zeta(x + 1, q), and none for
zeta's x (PyTorch's "not implemented")."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import _dtype as D
from ..autograd.grad_mode import _state as _grad_state
from ..autograd.node import SavedTensor
from ..tensor import Tensor
from . import functional as F
from . import prims as P
from .dispatch import PrimitiveBackward, apply, named

# Euler-Maclaurin's coefficients (2k)! / B_2k and the series' cut-off, PyTorch's
_A = (12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9, 7.47242496e10,
      -2.950130727918164224e12, 1.1646782814350067249e14, -4.5979787224074726105e15,
      1.8152105401943546773e17, -7.1661652561756670113e18)
_MACHEP = 1.11022302462515654042e-16


def _zeta_regular(x: np.ndarray, q: np.ndarray) -> np.ndarray:
    """zeta of 1-d x > 1 and q (not a pole), each element leaving the loops where PyTorch's
    scalar code returns."""
    s = np.power(q, -x)
    a = q.copy()
    b = np.zeros_like(x)
    out = np.full_like(x, np.nan)
    live = np.ones(x.shape, dtype=bool)  # still in the first loop
    i = 0
    while True:
        live &= (i < 9) | (a <= 9.0)
        if not live.any():
            break
        i += 1
        a = np.where(live, a + 1.0, a)
        b = np.where(live, np.power(a, -x), b)
        s = np.where(live, s + b, s)
        hit = live & (-_MACHEP * s < b) & (b < _MACHEP * s)
        out[hit] = s[hit]
        live &= ~hit
    todo = np.isnan(out) & ~np.isnan(s)  # left the first loop without returning
    todo |= np.isnan(out) & np.isnan(s)  # NaN: the series below keeps it NaN
    w = a
    s = s + b * w / (x - 1.0)
    s = s - 0.5 * b
    a = np.ones_like(x)
    k = 0.0
    for coefficient in _A:
        a = a * (x + k)
        b = b / w
        t = a * b / coefficient
        s = s + t
        hit = todo & (np.abs(t / s) < _MACHEP)
        out[hit] = s[hit]
        todo &= ~hit
        k += 1.0
        a = a * (x + k)
        b = b / w
        k += 1.0
    out[todo] = s[todo]
    return out


def zeta_array(x: Any, q: Any) -> np.ndarray:
    """Hurwitz zeta of arrays (broadcast), float64, with PyTorch's special values: inf at
    x = 1 and at the poles q = 0, -1, ...; NaN for x < 1 and for q < 0 with x not an
    integer."""
    x, q = np.broadcast_arrays(np.asarray(x, dtype=np.float64), np.asarray(q, dtype=np.float64))
    out = np.empty(x.shape, dtype=np.float64)
    with np.errstate(all="ignore"):
        below = x < 1.0
        pole = (q <= 0.0) & (q == np.floor(q))
        undefined = (q <= 0.0) & ~pole & (x != np.floor(x))
        special = (x == 1.0) | below | pole | undefined
        out[(x == 1.0) | (pole & ~below)] = np.inf
        out[below] = np.nan
        out[undefined & ~(x == 1.0) & ~below] = np.nan
        regular = ~special
        out[regular] = _zeta_regular(x[regular].ravel(), q[regular].ravel())
    return out


def trigamma_array(x: np.ndarray) -> np.ndarray:
    """PyTorch's calc_trigamma, in x's own float dtype as PyTorch's (a float32 sin(pi x) at
    a pole is its rounding's 1.7e-7, not 0): reflection below 1/2, six steps up, then the
    asymptotic series."""
    dt = x.dtype.type
    one, pi = dt(1.0), dt(math.pi)
    with np.errstate(all="ignore"):
        low = x < dt(0.5)
        sin_pi_x = np.sin(pi * x)
        result = np.where(low, -(pi * pi) / (sin_pi_x * sin_pi_x), dt(0.0)).astype(x.dtype)
        y = np.where(low, one - x, x).astype(x.dtype)
        for _ in range(6):
            result = result + one / (y * y)
            y = y + one
        ixx = one / (y * y)
        result = result + (one + one / (dt(2.0) * y) + ixx * (dt(1.0 / 6) - ixx * (
            dt(1.0 / 30) - ixx * dt(1.0 / 42)))) / y
        return np.where(low, -result, result).astype(x.dtype)


def polygamma_array(n: int, x: np.ndarray) -> np.ndarray:
    """polygamma(n, x) for n >= 1 (n = 0 is digamma, an op of its own): trigamma in x's
    dtype, the others through zeta in float64."""
    if n == 1:
        return trigamma_array(x)
    with np.errstate(all="ignore"):
        return (1.0 if n % 2 else -1.0) * math.exp(math.lgamma(n + 1.0)) * zeta_array(
            n + 1.0, x)


# --- ops -------------------------------------------------------------------------------------


def _float_of(*values: Any) -> D.DType:
    """The result dtype of a special function of these operands: their promoted dtype, the
    default float for integers and bools."""
    tensors = [v for v in values if isinstance(v, Tensor)]
    scalars = [v for v in values if not isinstance(v, Tensor)]
    dt = D.result_dtype([t.dtype for t in tensors], scalars, [t.ndim for t in tensors])
    return dt if dt.is_floating_point else D.default_float


class _CustomBackward(PrimitiveBackward):
    """The node of ``where(True, value, x)``: a value computed off the graph, whose gradient
    w.r.t. x the subclass's ``gradient(g, x)`` gives (x: the saved input)."""

    __slots__ = ()

    def gradient(self, g: Tensor, x: Tensor) -> Tensor:
        raise NotImplementedError

    def apply(self, grads: list[Any]) -> list[Any]:
        g = grads[0]
        if g is None or self.next_edges[2] is None:
            return [None, None, None]
        x = self.saved["x"].unpack(self)
        return [None, None, F.sum_to(self.gradient(g, x), self.metas[2].shape)]


_CLASSES: dict[tuple[type, int], type[_CustomBackward]] = {}


def _recorded(value: Tensor, x: Tensor, base: type[_CustomBackward], name: str,
              order: int = 0) -> Tensor:
    """``value`` in a node of class ``base`` (named ``name``, its ``order`` a class attribute)
    whose gradient reaches x."""
    if not (x.requires_grad and _grad_state.enabled):
        return value
    out = F.where(_true(), value, x)
    node = out._grad_fn
    if isinstance(node, PrimitiveBackward):
        cls = _CLASSES.get((base, order))
        if cls is None:
            cls = _CLASSES[base, order] = type(name, (base,), {"__slots__": (), "order": order})
        named(out, name)
        node.__class__ = cls
        node.saved["x"] = SavedTensor(x, False)
    return out


def _true() -> Tensor:
    return Tensor._make(np.array(True), D.bool_, "cpu")


class _PolygammaBackward(_CustomBackward):
    """PyTorch's: g polygamma(n + 1, x)."""

    __slots__ = ()
    order = 0

    def gradient(self, g: Tensor, x: Tensor) -> Tensor:
        return F.mul(g, polygamma(self.order + 1, x))


def polygamma(n: int, input: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """The n-th derivative of digamma (n = 0: digamma itself)."""
    if out is not None:
        return F.written_to(out, polygamma(n, input), "polygamma")
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"polygamma(): argument 'n' (position 1) must be int, not "
                        f"{type(n).__name__}")
    if n < 0:
        raise RuntimeError("polygamma(n, x) does not support negative n.")
    dtype = _float_of(input)
    x = input if input.dtype is dtype else F.cast(input, dtype)
    if n == 0:
        from .math_ops import digamma

        value = digamma(x.detach())
    else:
        value = apply(P.SPECIAL_HOST, x.detach(), fn="polygamma", n=int(n), dtype=dtype)
    return _recorded(value, x, _PolygammaBackward, "PolygammaBackward0", int(n))


def polygamma_method(self: Tensor, n: int) -> Tensor:
    """Tensor.polygamma(n): its n comes first, as PyTorch's."""
    return polygamma(n, self)


def polygamma_(self: Tensor, n: int) -> Tensor:
    """Tensor.polygamma_(n): the result written into self."""
    return F.copy_(self, polygamma(n, F.clone(self)))


class _ZetaBackward(_CustomBackward):
    """PyTorch's d zeta(x, q) / dq: -x zeta(x + 1, q) g, x saved as "s"."""

    __slots__ = ()

    def gradient(self, g: Tensor, q: Tensor) -> Tensor:
        s = self.saved["s"].unpack(self)
        return F.mul(g, F.neg(F.mul(s, zeta(F.add(s, 1.0), q))))


class _ZetaSelfBackward(_CustomBackward):
    """zeta's x: PyTorch has no derivative for it (its error, when a backward reaches it)."""

    __slots__ = ()

    def apply(self, grads: list[Any]) -> list[Any]:
        if grads[0] is not None and self.next_edges[2] is not None:
            raise NotImplementedError("the derivative for 'zeta' is not implemented.")
        return [None, grads[0], None]


_ZETA_OVERLOADS = (" * (Tensor input, Tensor other, *, Tensor out = None)\n"
                   " * (Number self, Tensor other, *, Tensor out = None)\n"
                   " * (Tensor input, Number other, *, Tensor out = None)\n")


def zeta(input: Any, other: Any, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """The Hurwitz zeta function sum_k (k + other)^-input (``torch.special.zeta``); either
    operand may be a Python number."""
    if not isinstance(input, Tensor) and not isinstance(other, Tensor):
        from .tensor_only import type_name

        given = [type_name(input), type_name(other)] + ([] if out is None else ["out=Tensor"])
        raise TypeError("special_zeta() received an invalid combination of arguments - got "
                        f"({', '.join(given)}), but expected one of:\n{_ZETA_OVERLOADS}")
    if out is not None:
        return F.written_to(out, zeta(input, other), "special_zeta")
    like = input if isinstance(input, Tensor) else other
    dtype = _float_of(input, other)
    from ..creation import full

    s, q = (v if isinstance(v, Tensor) else full((), float(v), dtype=dtype, device=like.device)
            for v in (input, other))
    s, q = (t if t.dtype is dtype else F.cast(t, dtype) for t in (s, q))
    shape = tuple(np.broadcast_shapes(tuple(s.shape), tuple(q.shape)))
    value = apply(P.SPECIAL_HOST, s.detach(), q.detach(), fn="zeta", n=0, dtype=dtype)
    if q.requires_grad and _grad_state.enabled:
        value = _recorded(value, F.expand(q, shape) if tuple(q.shape) != shape else q,
                          _ZetaBackward, "SpecialZetaBackward0")
        node = value._grad_fn
        if isinstance(node, _ZetaBackward):
            node.saved["s"] = SavedTensor(s.detach(), False)
    if s.requires_grad and _grad_state.enabled:
        value = _recorded(value, F.expand(s, shape) if tuple(s.shape) != shape else s,
                          _ZetaSelfBackward, "SpecialZetaBackward0")
    return value
