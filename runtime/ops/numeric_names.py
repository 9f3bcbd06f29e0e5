"""PyTorch's numeric functions the runtime lacked: the window functions (hann, hamming,
blackman, bartlett, kaiser), histogram, gradient (finite differences), mvlgamma and the
regularized incomplete gamma functions igamma/igammac, with PyTorch's dtypes, defaults,
errors and derivatives."""

from __future__ import annotations

import builtins
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import _dtype as D
from ..autograd.grad_mode import is_grad_enabled
from ..tensor import Tensor
from . import functional as F
from . import prims as P
from .dispatch import apply
from .layouts import check_factory_options

# --- windows ------------------------------------------------------------------------------------


def _window(name: str, values: Callable[[int, np.dtype], np.ndarray]) -> Callable[..., Tensor]:
    """``torch.<name>_window(window_length, periodic=True, *, dtype, ...)``: ``values(n, dt)``
    is the symmetric window of n points in numpy dtype dt; a periodic one is the first N of
    N + 1."""
    def window(window_length: int, periodic: bool = True, *, dtype: Any = None,
               layout: Any = None, device: Any = None, pin_memory: bool | None = None,
               requires_grad: bool = False) -> Tensor:
        from ..creation import tensor

        check_factory_options(f"{name}_window", layout, pin_memory)
        dt = D.as_dtype(dtype) if dtype is not None else D.default_float
        if not dt.is_floating_point:
            raise RuntimeError(f"{name}_window expects floating point dtypes, got: "
                               f"{_tensor_options(dt, device, layout)}")
        if window_length < 0:
            raise RuntimeError(f"{name}_window requires non-negative window_length, got "
                               f"window_length={window_length}")
        if window_length <= 1:
            data = np.ones(window_length)
        else:
            n = window_length + 1 if periodic else window_length
            data = values(n, dt.np)[:window_length]
        return tensor(np.asarray(data).astype(dt.np), dtype=dt, device=device,
                      requires_grad=requires_grad)

    window.__name__ = window.__qualname__ = f"{name}_window"
    window.__doc__ = f"PyTorch's ``{name}_window`` (periodic by default)."
    return window


def _tensor_options(dt: D.DType, device: Any, layout: Any) -> str:
    """PyTorch's printed TensorOptions of a window factory's arguments (its dtype error)."""
    from .._device import device as as_device

    where = "cpu" if device is None else str(as_device(device))
    shape = "Strided (default)" if layout is None else "Strided"
    return (f"TensorOptions(dtype={D.type_meta_name(dt)}, device={where}, layout={shape}, "
            "requires_grad=false (default), pinned_memory=false, memory_format=(nullopt))")


def _stepper(dt: np.dtype) -> tuple[Callable[[float], Any], Callable[[Any], np.ndarray]]:
    """PyTorch's arithmetic on a tensor of dtype dt, as its in-place ops chained on one
    window tensor compute it: a scalar operand rounded to dt, each op in float32 (float64 for
    float64) and its result rounded to dt (bit for bit with PyTorch's float64 windows, within
    an ulp of its lower precisions)."""
    op = np.float64 if dt == np.float64 else np.float32
    return (lambda v: op(np.asarray(v).astype(dt)),
            lambda a: np.asarray(a, dtype=op).astype(dt).astype(op))


def _cosine_window(alpha: float, beta: float) -> Callable[[int, np.dtype], np.ndarray]:
    """alpha - beta cos(2 pi n / (N - 1)), as PyTorch's hamming_window computes it."""
    def values(n: int, dt: np.dtype) -> np.ndarray:
        op, r = _stepper(dt)
        w = r(np.arange(n))
        w = r(w * op(2.0 * math.pi / (n - 1)))
        return r(r(r(np.cos(w)) * op(-beta)) + op(alpha))

    return values


def _blackman(n: int, dt: np.dtype) -> np.ndarray:
    op, r = _stepper(dt)
    w = r(r(np.arange(n)) * op(math.pi / (n - 1)))
    four = r(r(np.cos(r(w * op(4)))) * op(0.08))
    two = r(r(np.cos(r(w * op(2)))) * op(0.5))
    return r(r(four - two) + op(0.42))


def _bartlett(n: int, dt: np.dtype) -> np.ndarray:
    op, r = _stepper(dt)
    w = r(r(np.arange(n)) * op(2.0 / (n - 1)))
    half = ((n - 1) >> 1) + 1
    w[half:] = r(r(w[half:] * op(-1)) + op(2))
    return w


hann_window = _window("hann", _cosine_window(0.5, 0.5))
blackman_window = _window("blackman", _blackman)
bartlett_window = _window("bartlett", _bartlett)


def hamming_window(window_length: int, periodic: bool = True, alpha: float = 0.54,
                   beta: float = 0.46, *, dtype: Any = None, layout: Any = None,
                   device: Any = None, pin_memory: bool | None = None,
                   requires_grad: bool = False) -> Tensor:
    """alpha - beta cos(2 pi n / (N - 1))."""
    return _window("hamming", _cosine_window(alpha, beta))(
        window_length, periodic, dtype=dtype, layout=layout, device=device,
        pin_memory=pin_memory, requires_grad=requires_grad)


def kaiser_window(window_length: int, periodic: bool = True, beta: float = 12.0, *,
                  dtype: Any = None, layout: Any = None, device: Any = None,
                  pin_memory: bool | None = None, requires_grad: bool = False) -> Tensor:
    """I0(beta sqrt(1 - (2n / (N - 1) - 1)^2)) / I0(beta) (in float64, then rounded)."""
    return _window("kaiser", lambda n, dt: np.kaiser(n, beta))(
        window_length, periodic, dtype=dtype, layout=layout, device=device,
        pin_memory=pin_memory, requires_grad=requires_grad)


# --- histogram ----------------------------------------------------------------------------------


def _bin_edges(values: np.ndarray, bins: Any, span: Sequence[float] | None, d: int,
               dt: np.dtype) -> np.ndarray:
    """The edges along dimension d: a tensor's, or ``bins`` equal bins over ``span``
    (default: the values' min and max; an empty span widened by 1, as PyTorch's)."""
    if isinstance(bins, Tensor):
        return np.asarray(bins.detach().cpu().numpy())
    if bins <= 0:
        raise RuntimeError(f"torch.histogramdd(): bins must be > 0, but got {bins} for "
                           f"dimension {d}")
    lo, hi = (float(span[0]), float(span[1])) if span is not None else (
        (float(values.min()), float(values.max())) if values.size else (0.0, 0.0))
    if lo > hi:
        raise RuntimeError(f"torch.histogramdd(): for dimension {d}, min ({lo}) is greater "
                           f"than max ({hi})")
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    return np.linspace(np.asarray(lo, dt), np.asarray(hi, dt), bins + 1).astype(dt)


def _histogram_dd(input: Tensor, dims: int, bins: Any, span: Sequence[float] | None,  # noqa: A002
                  weight: Tensor | None, density: bool) -> tuple[Tensor, list[Tensor]]:
    """The counts of input's rows (``dims`` values each) and each dimension's edges."""
    from ..creation import tensor

    if not input.dtype.is_floating_point:
        raise NotImplementedError(f"\"histogramdd\" not implemented for "
                                  f"'{D.scalar_type_name(input.dtype)}'")
    per_dim = list(bins) if isinstance(bins, (list, tuple)) else [bins] * dims
    for b in per_dim:
        if isinstance(b, Tensor) and b.dtype is not input.dtype:
            raise RuntimeError(f"torch.histogramdd: input tensor and bins tensors should have "
                               f"the same dtype, but got input {D.type_meta_name(input.dtype)} "
                               f"and bins {D.type_meta_name(b.dtype)}")
    if weight is not None and tuple(weight.shape) != tuple(input.shape[:-1]):
        raise RuntimeError("torch.histogramdd: if weight tensor is provided it should have the "
                           "same shape as the input tensor excluding its innermost dimension, "
                           f"but got input with shape {list(input.shape)} and weight with "
                           f"shape {list(weight.shape)}")
    rows = np.asarray(input.detach().cpu().numpy()).reshape(-1, dims)
    w = None if weight is None else np.asarray(weight.detach().cpu().numpy()).reshape(-1)
    dt = input.dtype.np
    edges = [_bin_edges(rows[:, d], per_dim[d], None if span is None else span[2 * d:2 * d + 2],
                        d, dt) for d in builtins.range(dims)]
    hist, _ = np.histogramdd(rows.astype(np.float64), bins=[e.astype(np.float64) for e in edges],
                             weights=w, density=density)
    return (tensor(hist.astype(dt), device=input.device),
            [tensor(e.astype(dt), device=input.device) for e in edges])


def histogram(input: Tensor, bins: Any = 100, *, range: Sequence[float] | None = None,  # noqa: A002
              weight: Tensor | None = None, density: bool = False, out: Any = None
              ) -> tuple[Tensor, Tensor]:
    """(hist, bin_edges): counts (or summed weights, or a density) of input's values in
    ``bins`` equal bins over ``range`` (default: the values' min and max), or between the
    edges of a tensor ``bins``; floats only, as PyTorch's."""
    from collections import namedtuple

    if weight is not None and tuple(weight.shape) != tuple(input.shape):
        raise RuntimeError("torch.histogramdd: if weight tensor is provided it should have the "
                           "same shape as the input tensor excluding its innermost dimension, "
                           f"but got input with shape {list(input.shape) + [1]} and weight "
                           f"with shape {list(weight.shape)}")
    hist, edges = _histogram_dd(F.reshape(input, (-1, 1)), 1, bins, range,
                                None if weight is None else F.reshape(weight, (-1,)), density)
    result = namedtuple("histogram", ["hist", "bin_edges"])(hist, edges[0])
    if out is not None:
        for o, r in zip(out, result):
            F.written_to(o, r, "histogram")
        return out
    return result


def histogramdd(input: Tensor, bins: Any = 10, *,  # noqa: A002
                range: Sequence[float] | None = None,  # noqa: A002
                weight: Tensor | None = None, density: bool = False
                ) -> tuple[Tensor, list[Tensor]]:
    """(hist, bin_edges) of the rows of input (..., D) in D dimensions: ``bins`` an int,
    one per dimension, or one tensor of edges per dimension; ``range`` min0, max0, min1, ..."""
    from collections import namedtuple

    if input.ndim < 2:
        raise RuntimeError("torch.histogramdd: input tensor should have at least 2 dimensions")
    hist, edges = _histogram_dd(input, input.shape[-1], bins, range, weight, density)
    return namedtuple("histogramdd", ["hist", "bin_edges"])(hist, edges)


# --- gradient (finite differences) --------------------------------------------------------------


def _dims(input: Tensor, dim: Any) -> list[int]:  # noqa: A002
    from .shapes import wrap_dim

    if dim is None:
        return list(builtins.range(input.ndim))
    dims = [dim] if isinstance(dim, int) else list(dim)
    return [wrap_dim(d, input.ndim) for d in dims]



def _along(t: Tensor, d: int, start: int | None, stop: int | None) -> Tensor:
    return t[(slice(None),) * d + (slice(start, stop),)]


def _spaced(t: Tensor, d: int, shape_len: int, values: Tensor) -> Tensor:
    """1-d ``values`` laid along dim d of a tensor of ``shape_len`` dims."""
    shape = [1] * shape_len
    shape[d] = values.shape[0]
    return F.reshape(values, tuple(shape))


def _uniform_gradient(f: Tensor, d: int, h: float, edge_order: int) -> Tensor:
    interior = F.div(F.sub(_along(f, d, 2, None), _along(f, d, None, -2)), 2.0 * h)
    if edge_order == 1:
        first = F.div(F.sub(_along(f, d, 1, 2), _along(f, d, 0, 1)), h)
        last = F.div(F.sub(_along(f, d, -1, None), _along(f, d, -2, -1)), h)
    else:
        first = F.div(F.add(F.sub(F.mul(_along(f, d, 1, 2), 2.0),
                                  F.mul(_along(f, d, 0, 1), 1.5)),
                            F.mul(_along(f, d, 2, 3), -0.5)), h)
        last = F.div(F.add(F.sub(F.mul(_along(f, d, -1, None), 1.5),
                                 F.mul(_along(f, d, -2, -1), 2.0)),
                           F.mul(_along(f, d, -3, -2), 0.5)), h)
    return F.cat([first, interior, last], d)


def _coordinate_gradient(f: Tensor, d: int, x: Tensor, edge_order: int) -> Tensor:
    """numpy's second-order formula on unevenly spaced coordinates ``x`` (1-d)."""
    x = F.cast(x, f.dtype) if x.dtype is not f.dtype else x
    dx = F.sub(x[1:], x[:-1])
    dx1, dx2 = dx[:-1], dx[1:]
    n = f.ndim
    a = F.neg(F.div(dx2, F.mul(dx1, F.add(dx1, dx2))))
    b = F.div(F.sub(dx2, dx1), F.mul(dx1, dx2))
    c = F.div(dx1, F.mul(dx2, F.add(dx1, dx2)))
    interior = F.add(F.add(F.mul(_spaced(f, d, n, a), _along(f, d, None, -2)),
                           F.mul(_spaced(f, d, n, b), _along(f, d, 1, -1))),
                     F.mul(_spaced(f, d, n, c), _along(f, d, 2, None)))
    if edge_order == 1:
        first = F.div(F.sub(_along(f, d, 1, 2), _along(f, d, 0, 1)), dx[0])
        last = F.div(F.sub(_along(f, d, -1, None), _along(f, d, -2, -1)), dx[-1])
    else:
        d1, d2 = dx[0], dx[1]
        a0 = F.neg(F.div(F.add(F.mul(d1, 2.0), d2), F.mul(d1, F.add(d1, d2))))
        b0 = F.div(F.add(d1, d2), F.mul(d1, d2))
        c0 = F.neg(F.div(d1, F.mul(d2, F.add(d1, d2))))
        first = F.add(F.add(F.mul(_along(f, d, 0, 1), a0), F.mul(_along(f, d, 1, 2), b0)),
                      F.mul(_along(f, d, 2, 3), c0))
        d1, d2 = dx[-2], dx[-1]
        a1 = F.div(d2, F.mul(d1, F.add(d1, d2)))
        b1 = F.neg(F.div(F.add(d2, d1), F.mul(d1, d2)))
        c1 = F.div(F.add(F.mul(d2, 2.0), d1), F.mul(d2, F.add(d1, d2)))
        last = F.add(F.add(F.mul(_along(f, d, -3, -2), a1), F.mul(_along(f, d, -2, -1), b1)),
                     F.mul(_along(f, d, -1, None), c1))
    return F.cat([first, interior, last], d)


def gradient(input: Tensor, *, spacing: Any = None, dim: Any = None,  # noqa: A002
             edge_order: int = 1) -> tuple[Tensor, ...]:
    """The derivative of input along each of ``dim`` by central differences (one-sided of
    ``edge_order`` 1 or 2 at the ends); ``spacing``: a number, one per dim, or one tensor of
    coordinates per dim. Integer inputs give the default float dtype."""
    if edge_order not in (1, 2):
        raise RuntimeError("torch.gradient only supports edge_order=1 and edge_order=2.")
    dims = _dims(input, dim)
    spacing = 1 if spacing is None else spacing
    spacings = list(spacing) if isinstance(spacing, (list, tuple)) else [spacing] * len(dims)
    if len(spacings) != len(dims):
        raise RuntimeError(f"torch.gradient expected spacing to be unspecified, a scalar or "
                           f"it's spacing and dim arguments to have the same length, but got "
                           f"a spacing argument of length {len(spacings)} and a dim argument "
                           f"of length {len(dims)}.")
    for d in dims:
        if input.shape[d] < edge_order + 1:
            raise RuntimeError("torch.gradient expected each dimension size to be at least "
                               "edge_order+1")
    f = input if input.dtype.is_floating_point else F.cast(input, D.default_float)
    out = []
    for d, h in zip(dims, spacings):
        if isinstance(h, Tensor) and h.ndim == 1:
            if h.shape[0] != input.shape[d]:
                raise RuntimeError(f"torch.gradient expected each tensor to be on the same "
                                   f"device and have the same size as the corresponding "
                                   f"dimension of input, but got size {h.shape[0]} for "
                                   f"dimension {d} of size {input.shape[d]}")
            out.append(_coordinate_gradient(f, d, h, edge_order))
        else:
            out.append(_uniform_gradient(f, d, float(h.item() if isinstance(h, Tensor) else h),
                                         edge_order))
    return tuple(out)


# --- mvlgamma and the incomplete gamma functions ------------------------------------------------


def mvlgamma(input: Tensor, p: int, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
    """The multivariate log-gamma of dimension p: sum_i lgamma(x - i/2) + p(p-1)/4 log(pi)."""
    from .math_ops import lgamma

    if out is not None:
        return F.written_to(out, mvlgamma(input, p), "mvlgamma")
    if p < 1:
        raise RuntimeError("p has to be greater than or equal to 1")
    x = input if input.dtype.is_floating_point else F.cast(input, D.default_float)
    total = F.add(lgamma(x), p * (p - 1) / 4.0 * math.log(math.pi))
    for i in builtins.range(1, p):
        total = F.add(total, lgamma(F.sub(x, i / 2.0)))
    return F.named(total, "MvlgammaBackward0")


def mvlgamma_(self: Tensor, p: int) -> Tensor:
    return F.overwrite(self, mvlgamma(F.clone(self), p))


def _lgamma_array(a: np.ndarray) -> np.ndarray:
    return np.frompyfunc(math.lgamma, 1, 1)(a).astype(np.float64)


def _lower_series(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """P(a, x) by its power series (x < a + 1)."""
    term = 1.0 / a
    total = term.copy()
    ap = a.copy()
    for _ in builtins.range(10000):
        ap = ap + 1.0
        term = term * x / ap
        total = total + term
        if np.all(np.abs(term) <= np.abs(total) * 1e-17):
            break
    return total * np.exp(-x + a * np.log(x) - _lgamma_array(a))


def _upper_fraction(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Q(a, x) by its continued fraction (modified Lentz; x >= a + 1)."""
    tiny = 1e-300
    b = x + 1.0 - a
    c = np.full_like(x, 1.0 / tiny)
    d = 1.0 / b
    h = d.copy()
    for i in builtins.range(1, 10000):
        an = -i * (i - a)
        b = b + 2.0
        d = an * d + b
        d = np.where(np.abs(d) < tiny, tiny, d)
        c = b + an / c
        c = np.where(np.abs(c) < tiny, tiny, c)
        d = 1.0 / d
        delta = d * c
        h = h * delta
        if np.all(np.abs(delta - 1.0) <= 1e-16):
            break
    return np.exp(-x + a * np.log(x) - _lgamma_array(a)) * h


def _igamma_array(a: np.ndarray, x: np.ndarray, upper: bool) -> np.ndarray:
    """The regularized lower (P) or upper (Q) incomplete gamma, PyTorch's values at the
    edges: NaN for a or x negative (or both zero, or both inf), P = 1 where a = 0 or x = inf,
    P = 0 where x = 0 or a = inf."""
    a, x = np.broadcast_arrays(a.astype(np.float64), x.astype(np.float64))
    p = np.full(a.shape, np.nan)
    ok = (a >= 0) & (x >= 0) & ~np.isnan(a) & ~np.isnan(x) & ~((a == 0) & (x == 0))
    p[ok & (x == 0)] = 0.0
    p[ok & (a == 0) & (x > 0)] = 1.0
    p[ok & np.isinf(x) & (a > 0) & np.isfinite(a)] = 1.0  # (calc_igamma: inf, inf is NaN)
    p[ok & np.isinf(a) & np.isfinite(x)] = 0.0
    inner = ok & (a > 0) & (x > 0) & np.isfinite(a) & np.isfinite(x)
    series = inner & (x < a + 1.0)
    fraction = inner & ~series
    q = 1.0 - p
    if series.any():
        p[series] = _lower_series(a[series], x[series])
        q[series] = 1.0 - p[series]
    if fraction.any():
        q[fraction] = _upper_fraction(a[fraction], x[fraction])
        p[fraction] = 1.0 - q[fraction]
    return q if upper else p


def _incomplete_gamma(name: str, upper: bool) -> Callable[..., Tensor]:
    def fn(input: Tensor, other: Tensor, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
        """The regularized incomplete gamma function (lower: igamma, upper: igammac) of a
        (input) and x (other); differentiable in x, as PyTorch's (not in a)."""
        from ..creation import tensor
        from .composite import no_derivative, straight_through
        from .math_ops import lgamma

        if out is not None:
            return F.written_to(out, fn(input, other), name)
        for arg, position, label in ((input, 1, "input"), (other, 2, "other")):
            if not isinstance(arg, Tensor):
                raise TypeError(f"{name}(): argument '{label}' (position {position}) must be "
                                f"Tensor, not {type(arg).__name__}")
        dt = D.result_dtype([input.dtype, other.dtype], [], [input.ndim, other.ndim])
        if not dt.is_floating_point:
            raise NotImplementedError(f"\"{name}_cpu\" not implemented for "
                                      f"'{D.scalar_type_name(dt)}'")
        value = apply(P.SPECIAL_HOST, input.detach(), other.detach(), fn=name, n=0, dtype=dt)
        node = f"{name.capitalize()}Backward0"
        a_grad = input.requires_grad and is_grad_enabled()
        x_grad = other.requires_grad and is_grad_enabled()
        if not (a_grad or x_grad):
            return value
        shape = tuple(value.shape)
        paths = []
        if x_grad:
            a = F.cast(input.detach(), dt)
            x = other if other.dtype is dt else F.cast(other, dt)
            # d/dx P(a, x) = exp(-x) x^(a-1) / Gamma(a); Q = 1 - P
            slope = F.div(F.mul(F.exp(F.neg(x)), F.pow(x, F.sub(a, 1.0))), F.exp(lgamma(a)))
            path = F.mul(F.sub(x, x.detach()), F.neg(slope) if upper else slope)
            paths.append(path if tuple(path.shape) == shape else F.expand(path, *shape))
        if a_grad:
            # a zero on its own node toward input: it raises only where input's gradient is
            # asked for (backward), as torch's not_implemented, not for grad(out, [other])
            zero = tensor(np.zeros(shape, dtype=dt.np), device=input.device)
            paths.append(no_derivative(zero, (input,), NotImplementedError,
                                       f"the derivative for '{name}: input' is not "
                                       "implemented.", node))
        return straight_through(value, paths[0] if len(paths) == 1 else F.add(*paths), node)

    fn.__name__ = fn.__qualname__ = name
    return fn


igamma = _incomplete_gamma("igamma", False)
igammac = _incomplete_gamma("igammac", True)


def igamma_(self: Tensor, other: Tensor) -> Tensor:
    return F.overwrite(self, igamma(F.clone(self), other), kept=True)


def igammac_(self: Tensor, other: Tensor) -> Tensor:
    return F.overwrite(self, igammac(F.clone(self), other), kept=True)


def norm_except_dim(v: Tensor, pow: float = 2, dim: int = 0) -> Tensor:  # noqa: A002
    """The ``pow`` norm of v over every dim but ``dim``, kept as size-1 dims (-1: over all of
    v), as weight_norm takes it."""
    from .reductions import vector_norm

    if dim == -1:
        return vector_norm(v, pow)
    d = dim + v.ndim if dim < 0 else dim
    axes = tuple(a for a in builtins.range(v.ndim) if a != d)
    return vector_norm(v, pow, axes, keepdim=True)


FUNCTIONS: dict[str, Callable[..., Any]] = {fn.__name__: fn for fn in (
    norm_except_dim, histogramdd, hann_window, hamming_window, blackman_window, bartlett_window, kaiser_window, histogram,
    gradient, mvlgamma, igamma, igammac)}
METHODS: dict[str, Any] = {fn.__name__: fn for fn in (
    histogram, mvlgamma, mvlgamma_, igamma, igammac, igamma_, igammac_)}
