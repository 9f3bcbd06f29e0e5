"""Convolution and pooling: two primitives, ``unfold`` (im2col) and ``fold`` (col2im), each
the other's backward, and composites over them (PyTorch's ``F.unfold``/``F.fold``,
``conv1d``/``conv2d``, max/avg/adaptive pooling).

A convolution is one GEMM of the weight, (groups, out/groups, C/groups*kh*kw), against the
unfolded input, (groups, C/groups*kh*kw, N*L): im2col then a single BLAS call measured
faster than a direct loop over kernel taps here, and every part is a registry op, so the
gradients and the compiled plan come for free (matmul stays BLAS, the rest fuses).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import _dtype as D
from ..amp.policy import autocast_fp32, autocast_lower
from ..autograd.node import Meta
from ..tensor import Tensor
from . import functional as F
from .composite import linked_backward, linked_to_inputs
from .dispatch import named, named_backward
from .registry import Primitive, flops_none, generated_windows, register
from .settings import is_warn_always_enabled
from .shapes import int_list_argument

Pair = tuple[int, int]
Pad4 = tuple[int, int, int, int]  # top, bottom, left, right


def _out_len(size: int, k: int, d: int, s: int, lo: int, hi: int) -> int:
    return (size + lo + hi - d * (k - 1) - 1) // s + 1


def _taps(k: Pair, d: Pair, s: Pair, out: Pair) -> list[tuple[slice, slice]]:
    """For each kernel tap (i, j), the strided window of the padded input it reads."""
    return [(slice(i * d[0], i * d[0] + s[0] * (out[0] - 1) + 1, s[0]),
             slice(j * d[1], j * d[1] + s[1] * (out[1] - 1) + 1, s[1]))
            for i in range(k[0]) for j in range(k[1])]


def _unfold_infer(x: Meta, *, kernel: Pair, dilation: Pair, padding: Pad4, stride: Pair,
                  pad_value: float) -> tuple[Any, D.DType]:
    n, c, h, w = x.shape
    oh = _out_len(h, kernel[0], dilation[0], stride[0], padding[0], padding[1])
    ow = _out_len(w, kernel[1], dilation[1], stride[1], padding[2], padding[3])
    return (n, c * kernel[0] * kernel[1], oh * ow), x.dtype


def _unfold_impl(xp: Any, x: Any, *, kernel: Pair, dilation: Pair, padding: Pad4,
                 stride: Pair, pad_value: float) -> Any:
    n, c, h, w = x.shape
    oh = _out_len(h, kernel[0], dilation[0], stride[0], padding[0], padding[1])
    ow = _out_len(w, kernel[1], dilation[1], stride[1], padding[2], padding[3])
    if any(padding):
        x = xp.pad(x, ((0, 0), (0, 0), padding[:2], padding[2:]), constant_values=pad_value)
    cols = xp.empty((n, c, kernel[0] * kernel[1], oh, ow), dtype=x.dtype)
    for t, (rows, columns) in enumerate(_taps(kernel, dilation, stride, (oh, ow))):
        cols[:, :, t] = x[:, :, rows, columns]
    return cols.reshape(n, c * kernel[0] * kernel[1], oh * ow)


def _unfold_bwd(c: Any, g: Any) -> tuple[Any]:
    a = c.attrs
    h, w = c.shape(0)[2:]
    return (fold_raw(g, (h, w), a["kernel"], a["dilation"], a["padding"], a["stride"]),)


def _fold_infer(cols: Meta, *, output_size: Pair, kernel: Pair, dilation: Pair,
                padding: Pad4, stride: Pair) -> tuple[Any, D.DType]:
    n, ckk, _ = cols.shape
    return (n, ckk // (kernel[0] * kernel[1]), *output_size), cols.dtype


def _fold_impl(xp: Any, cols: Any, *, output_size: Pair, kernel: Pair, dilation: Pair,
               padding: Pad4, stride: Pair) -> Any:
    n, ckk, _ = cols.shape
    c = ckk // (kernel[0] * kernel[1])
    h, w = output_size
    oh = _out_len(h, kernel[0], dilation[0], stride[0], padding[0], padding[1])
    ow = _out_len(w, kernel[1], dilation[1], stride[1], padding[2], padding[3])
    out = xp.zeros((n, c, h + padding[0] + padding[1], w + padding[2] + padding[3]), cols.dtype)
    taps = cols.reshape(n, c, kernel[0] * kernel[1], oh, ow)
    # windows that do not overlap (a pooling's usual stride = kernel) only move elements:
    # assignment, which numpy does faster than an accumulation
    disjoint = all(s >= d * (k - 1) + 1 for s, d, k in zip(stride, dilation, kernel))
    for t, (rows, columns) in enumerate(_taps(kernel, dilation, stride, (oh, ow))):
        if disjoint:
            out[:, :, rows, columns] = taps[:, :, t]
        else:
            out[:, :, rows, columns] += taps[:, :, t]
    return xp.ascontiguousarray(out[:, :, padding[0]:padding[0] + h, padding[2]:padding[2] + w])


def _fold_bwd(c: Any, g: Any) -> tuple[Any]:
    a = c.attrs
    return (unfold_raw(g, a["kernel"], a["dilation"], a["padding"], a["stride"]),)


def _flops_taps(out_shape: Any, arg_shapes: Any, attrs: Any) -> int:
    return math.prod(out_shape) if "output_size" not in attrs else math.prod(arg_shapes[0])


def _geometry(shape: tuple[int, ...], size: Pair, attrs: Any, dtype: Any) -> Any:
    """``codegen.windows`` and its geometry of an unfold of (n, c, *size) or the fold back to
    it, or None where its generated code does not run here (or no window fits)."""
    windows = generated_windows(dtype)
    if windows is None or not all(shape):
        return None
    h, w = size
    k, d, p, s = (attrs[name] for name in _GEOMETRY)
    out = (_out_len(h, k[0], d[0], s[0], p[0], p[1]), _out_len(w, k[1], d[1], s[1], p[2], p[3]))
    if min(out) < 1:
        return None  # no window fits (the composites refuse it first)
    return windows, windows.Geometry(shape[0] * shape[1], h, w, k, d, p, s, out)


def _unfold_specializer(arg_metas: Any, attrs: Any, out_meta: Any) -> Any:
    """A compiled plan's unfold: generated code (``codegen.windows``), numpy's bits."""
    (shape, dtype), = arg_metas
    found = _geometry(shape, shape[2:], attrs, dtype) if len(shape) == 4 else None
    if found is None:
        return None
    windows, geometry = found
    return windows.unfolder(geometry, dtype, attrs["pad_value"])


def _fold_specializer(arg_metas: Any, attrs: Any, out_meta: Any) -> Any:
    """A compiled plan's fold: generated code (``codegen.windows``), numpy's bits."""
    (_, dtype), = arg_metas
    found = _geometry(out_meta[0], attrs["output_size"], attrs, dtype)
    if found is None:
        return None
    windows, geometry = found
    return windows.folder(geometry, dtype)


_GEOMETRY = ("kernel", "dilation", "padding", "stride")
UNFOLD = register(Primitive(
    "unfold", impl=_unfold_impl, infer=_unfold_infer, backward=_unfold_bwd,
    attrs=(*_GEOMETRY, "pad_value"), flops=flops_none, specializer=_unfold_specializer))
FOLD = register(Primitive(
    "fold", impl=_fold_impl, infer=_fold_infer, backward=_fold_bwd,
    attrs=("output_size", *_GEOMETRY), flops=_flops_taps, specializer=_fold_specializer))


def unfold_raw(x: Tensor, kernel: Pair, dilation: Pair, padding: Pad4, stride: Pair,
               pad_value: float = 0.0) -> Tensor:
    return F.apply(UNFOLD, x, kernel=kernel, dilation=dilation, padding=padding,
                   stride=stride, pad_value=pad_value)


def fold_raw(cols: Tensor, output_size: Pair, kernel: Pair, dilation: Pair, padding: Pad4,
             stride: Pair) -> Tensor:
    return F.apply(FOLD, cols, output_size=tuple(output_size), kernel=kernel,
                   dilation=dilation, padding=padding, stride=stride)


# ------------------------------------------------------------------------- arguments


def _pair(v: int | Sequence[int], name: str, n: int = 2) -> tuple[int, ...]:
    if isinstance(v, (int, np.integer)):
        return (int(v),) * n
    t = tuple(int(x) for x in v)
    if len(t) == 1:
        return t * n
    if len(t) != n:
        raise RuntimeError(f"expected {name} to be a single integer value or a list of {n} "
                           f"values to match the convolution dimensions, but got {name}={list(t)}")
    return t


def _sym(p: tuple[int, int]) -> Pad4:
    return (p[0], p[0], p[1], p[1])


def _check_window(k: Pair, d: Pair, p: Pair, s: Pair) -> None:
    """PyTorch's im2col/col2im checks of the window's geometry, in its order."""
    for name, (h, w), ok, need in (("kernel size", k, k[0] > 0 and k[1] > 0, "greater than zero"),
                                   ("dilation", d, d[0] > 0 and d[1] > 0, "greater than zero"),
                                   ("padding", p, p[0] >= 0 and p[1] >= 0, "non-negative"),
                                   ("stride", s, s[0] > 0 and s[1] > 0, "greater than zero")):
        if not ok:
            label = {"kernel size": "kernel", "padding": "pad"}.get(name, name)
            raise RuntimeError(f"{name} should be {need}, but got {label}_height: {h} "
                               f"{label}_width: {w}")


def _size_of(x: Tensor, dim: int) -> int:
    """``x.size(dim)`` with PyTorch's IndexError where the dim is not there."""
    if x.ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    if dim >= x.ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of [-{x.ndim}, "
                         f"{x.ndim - 1}], but got {dim})")
    return int(x.shape[dim])


def _window_args(kernel_size: Any, dilation: Any, padding: Any, stride: Any
              ) -> tuple[Pair, Pair, Pair, Pair]:
    k, d = _pair(kernel_size, "kernel_size"), _pair(dilation, "dilation")
    p, s = _pair(padding, "padding"), _pair(stride, "stride")
    _check_window(k, d, p, s)
    return k, d, p, s  # type: ignore[return-value]


def unfold(input: Tensor, kernel_size: Any, dilation: Any = 1, padding: Any = 0,  # noqa: A002
           stride: Any = 1) -> Tensor:
    """PyTorch's ``F.unfold`` (im2col) of a (N, C, H, W) or (C, H, W) input, with its
    checks in its order."""
    k, d, p, s = _window_args(kernel_size, dilation, padding, stride)
    ndim = input.ndim
    valid = _size_of(input, 1) != 0 and _size_of(input, 2) != 0
    if not ((ndim == 3 and input.shape[0] != 0 and valid)
            or (ndim == 4 and valid and input.shape[3] != 0)):
        raise RuntimeError("Expected 3D or 4D (batch mode) tensor with possibly 0 batch size "
                           "and other non-zero dimensions for input, but got: "
                           f"{list(input.shape)}")
    h, w = input.shape[-2:]
    blocks = [_out_len(n, k[i], d[i], s[i], p[i], p[i]) for i, n in enumerate((h, w))]
    if min(blocks) < 1:
        raise RuntimeError(f"Given input with spatial size ({h}, {w}), kernel_size={k}, "
                           f"dilation={d}, padding={p}, calculated shape of the array of "
                           f"sliding blocks as ({blocks[0]}, {blocks[1]}), but its components "
                           "must be at least one.")
    batched = ndim == 4
    x = input if batched else F.unsqueeze(input, 0)
    out = unfold_raw(x, k, d, _sym(p), s)
    return out if batched else F.squeeze(out, 0)


def fold(input: Tensor, output_size: Any, kernel_size: Any, dilation: Any = 1,  # noqa: A002
         padding: Any = 0, stride: Any = 1) -> Tensor:
    """PyTorch's ``F.fold`` (col2im): sums each column back into its window; its checks in
    its order."""
    size = _pair(output_size, "output_size")
    k, d, p, s = _window_args(kernel_size, dilation, padding, stride)
    shape = list(input.shape)
    if not ((len(shape) == 2 and shape[0] != 0 and shape[1] != 0)
            or (len(shape) == 3 and shape[1] != 0 and shape[2] != 0)):
        raise RuntimeError("Expected 2D or 3D (batch mode) tensor for input with possibly 0 "
                           f"batch size and non-zero dimensions for input, but got: {shape}")
    batched = input.ndim == 3
    x = input if batched else F.unsqueeze(input, 0)
    if x.shape[1] % (k[0] * k[1]):
        raise RuntimeError(f"Expected size of input's dimension 1 to be divisible by the product "
                           f"of kernel_size, but got input.size(1)={x.shape[1]} and "
                           f"kernel_size={k}.")
    blocks = [_out_len(size[i], k[i], d[i], s[i], p[i], p[i]) for i in (0, 1)]
    if x.shape[2] != blocks[0] * blocks[1]:
        raise RuntimeError(f"Given output_size={size}, kernel_size={k}, dilation={d}, "
                           f"padding={p}, stride={s}, expected size of input's dimension 2 to "
                           f"match the calculated number of sliding blocks {blocks[0]} * "
                           f"{blocks[1]} = {blocks[0] * blocks[1]}, but got "
                           f"input.size(2)={x.shape[2]}.")
    if min(blocks) < 1:
        raise RuntimeError(f"Given output_size={size}, kernel_size={k}, dilation={d}, "
                           f"padding={p}, stride={s}, calculated shape of the array of sliding "
                           f"blocks as ({blocks[0]}, {blocks[1]}), which is too small "
                           "(non-positive)")
    out = fold_raw(x, size, k, d, _sym(p), s)
    return out if batched else F.squeeze(out, 0)


# ----------------------------------------------------------------------- convolution


_SAME_WARNED: list[bool] = []


def _warn_same_once() -> None:
    """PyTorch's TORCH_WARN_ONCE of convolution_same (once a process)."""
    if not _SAME_WARNED or is_warn_always_enabled():  # TORCH_WARN_ONCE's rule
        _SAME_WARNED[:] = [True]
        import warnings

        warnings.warn("Using padding='same' with even kernel lengths and odd dilation may "
                      "require a zero-padded copy of the input be created", UserWarning,
                      stacklevel=4)


def _conv_padding(padding: Any, k: Pair, d: Pair, s: Pair, n: int) -> Pad4:
    if isinstance(padding, str):
        if padding == "valid":
            return (0, 0, 0, 0)
        if padding != "same":
            raise RuntimeError(f"Invalid padding string: '{padding}'")
        if any(x != 1 for x in s):
            raise RuntimeError("padding='same' is not supported for strided convolutions")
        total = [di * (ki - 1) for di, ki in zip(d, k)]  # the extra goes right, as PyTorch
        if any(t % 2 for t in total):
            _warn_same_once()
        return (total[0] // 2, total[0] - total[0] // 2, total[1] // 2, total[1] - total[1] // 2)
    return _sym(_pair(padding, "padding", n) if n == 2 else (0, _pair(padding, "padding", 1)[0]))


def _check_conv(x: Tensor, weight: Tensor, bias: Tensor | None, stride: Sequence[int],  # noqa: C901
                pads: Sequence[tuple[int, int]], dilation: Sequence[int], groups: int,
                output_padding: Sequence[int] | None = None) -> None:
    """PyTorch's checks of a convolution (transposed where ``output_padding`` is given), in
    its order, on the batched input and the weight as given: ``pads`` holds each spatial
    dim's (low, high) padding. Its kernels see a 1-d convolution as a 2-d one of height 1, so
    their texts name that height."""
    transposed = output_padding is not None
    if groups < 1:
        raise RuntimeError("non-positive groups is not supported")
    if any(lo < 0 or hi < 0 for lo, hi in pads):
        raise RuntimeError("negative padding is not supported")
    if transposed and any(o < 0 for o in output_padding):
        raise RuntimeError("negative output_padding is not supported")
    if any(si <= 0 for si in stride):
        raise RuntimeError("non-positive stride is not supported")
    if any(di < 0 for di in dilation):
        raise RuntimeError("dilation should be greater than zero")
    o = weight.shape[0]
    if o < groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be at least {groups} at "
                           f"dimension 0, but got weight of size {_shown(weight)} instead")
    if o % groups:
        raise RuntimeError(f"Given groups={groups}, expected weight to be divisible by {groups} "
                           f"at dimension 0, but got weight of size [{_shown(weight)}] instead")
    if transposed:
        _check_transposed(x, weight, bias, stride, pads, dilation, groups, output_padding)
        return
    c, cg = x.shape[1], weight.shape[1]
    if c != cg * groups:
        # padding='same' with an odd total first pads the input by the extra (on the right)
        seen = [*x.shape[:2], *(n + hi - lo for n, (lo, hi) in zip(x.shape[2:], pads))]
        raise RuntimeError(f"Given groups={groups}, weight of size {_shown(weight)}, expected "
                           f"input[{', '.join(map(str, seen))}] to have {cg * groups} "
                           f"channels, but got {c} channels instead")
    if bias is not None and tuple(bias.shape) != (o,):
        raise RuntimeError(f"Given weight of size {_shown(weight)}, expected bias to be 1-"
                           f"dimensional with {o} elements, but got bias of size "
                           f"{_shown(bias)} instead")
    padded = [size + lo + hi for size, (lo, hi) in zip(x.shape[2:], pads)]
    extent = [di * (k - 1) + 1 for di, k in zip(dilation, weight.shape[2:])]
    if any(pi < ei for pi, ei in zip(padded, extent)):
        raise RuntimeError("Calculated padded input size per channel: ("
                           + " x ".join(map(str, padded)) + "). Kernel size: ("
                           + " x ".join(map(str, extent)) + "). Kernel size can't be greater "
                           "than actual input size")
    if 0 in dilation:
        if x.dtype is D.bfloat16 or (x.dtype is D.float32 and x.shape[0] > 1):
            # PyTorch's CPU kernel for bfloat16 or a batch of float32 (oneDNN) has its text
            raise RuntimeError("non-positive dilation is not supported")
        as2d = (1, *dilation) if len(dilation) == 1 else tuple(dilation)
        raise RuntimeError(f"dilation should be greater than zero, but got {list(as2d)}")


_DIMS = ("depth", "height", "width")


def _check_transposed(x: Tensor, weight: Tensor, bias: Tensor | None, stride: Sequence[int],
                      pads: Sequence[tuple[int, int]], dilation: Sequence[int], groups: int,
                      output_padding: Sequence[int]) -> None:
    """The transposed half of ``_check_conv``: channels, bias, then its kernel's checks of
    dilation, output padding and output size, which name each dim."""
    ci, o = weight.shape[0], weight.shape[1] * groups
    if x.shape[1] != ci:
        raise RuntimeError(f"Given transposed=1, weight of size {_shown(weight)}, expected "
                           f"input{_shown(x)} to have {ci} channels, but got {x.shape[1]} "
                           "channels instead")
    if bias is not None and tuple(bias.shape) != (o,):
        raise RuntimeError(f"Given transposed=1, weight of size {_shown(weight)}, expected bias "
                           f"to be 1-dimensional with {o} elements, but got bias of size "
                           f"{_shown(bias)} instead")
    lift = (lambda v, one: (one, *v)) if len(stride) == 1 else (lambda v, one: tuple(v))
    s, d, op = lift(stride, 1), lift(dilation, 1), lift(output_padding, 0)
    p = lift([lo for lo, _ in pads], 0)
    k, size = lift(weight.shape[2:], 1), lift(x.shape[2:], 1)
    names = _DIMS[-len(s):]
    if 0 in d:
        raise RuntimeError("dilation should be greater than zero, but got "
                           + ", ".join(f"dilation_{n}: {v}" for n, v in zip(names, d)))
    if any(oi >= max(si, di) for oi, si, di in zip(op, s, d)):
        raise RuntimeError(
            "output padding must be smaller than either stride or dilation, but got "
            + " ".join(f"output_padding_{n}: {v}" for n, v in zip(names, op)) + " "
            + " ".join(f"stride_{n}: {v}" for n, v in zip(names, s)) + " "
            + " ".join(f"dilation_{n}: {v}" for n, v in zip(names, d)))
    out = [(i - 1) * si - 2 * pi + di * (ki - 1) + oi + 1
           for i, si, pi, di, ki, oi in zip(size, s, p, d, k, op)]
    if min(out) < 1:
        raise RuntimeError(f"Given input size per channel: ({' x '.join(map(str, size))}). "
                           f"Calculated output size per channel: "
                           f"({' x '.join(map(str, out))}). Output size is too small")


def _refuse_bool_conv(x: Tensor, dilation: Sequence[int], dims: int, transposed: bool
                      ) -> None:
    """PyTorch's CPU convolution kernels: the plain ones take every dtype but bool, the
    transposed and dilated ones floating point and int64 only; its error for the kernel it
    picks (by rank, transposition and dilation)."""
    if x.dtype.is_floating_point:
        return
    dilated = any(di > 1 for di in dilation)
    if transposed:
        kernel = f"slow_conv_transpose{3 if dims == 3 else 2}d_out_cpu"
    elif dilated:
        kernel = "slow_conv_dilated<>"
    else:
        kernel = "compute_columns3d" if dims == 3 else "slow_conv2d_cpu"
    plain = not (transposed or dilated)
    if x.dtype is D.int64 or (plain and x.dtype is not D.bool_):
        return
    raise NotImplementedError(f'"{kernel}" not implemented for '
                              f"'{D.scalar_type_name(x.dtype)}'")


def _conv(input: Tensor, weight: Tensor, bias: Tensor | None, stride: Pair, padding: Pad4,  # noqa: A002
          dilation: Pair, groups: int, name: str) -> Tensor:
    n, c, h, w = input.shape
    o, cg, kh, kw = weight.shape
    if input.dtype is not weight.dtype:
        raise RuntimeError(f"expected scalar type {D.scalar_type_name(input.dtype)} but found "
                           f"{D.scalar_type_name(weight.dtype)}")
    cols = unfold_raw(input, (kh, kw), dilation, padding, stride)  # (N, C*kh*kw, L)
    oh = _out_len(h, kh, dilation[0], stride[0], padding[0], padding[1])
    ow = _out_len(w, kw, dilation[1], stride[1], padding[2], padding[3])
    k, og, length = cg * kh * kw, o // groups, oh * ow
    if groups == 1:  # (O, K) @ (K, N*L): one GEMM
        rhs = F.reshape(F.permute(cols, 1, 0, 2), (k, n * length))
        out = F.matmul(F.reshape(weight, (o, k)), rhs)
    else:  # (G, O/G, K) @ (G, K, N*L): one batched GEMM
        rhs = F.reshape(F.permute(F.reshape(cols, (n, groups, k, length)), 1, 2, 0, 3),
                        (groups, k, n * length))
        out = F.matmul(F.reshape(weight, (groups, og, k)), rhs)
    out = F.reshape(out, (o, n, oh, ow))
    if bias is not None:
        out = F.add(out, F.reshape(bias, (o, 1, 1, 1)))
    # a row-major copy, as PyTorch's output (the bias added after the permute kept its
    # channel-major layout: conv(x).view(n, -1) raised)
    return F.clone(F.permute(out, 1, 0, 2, 3))


def _shown(t: Tensor) -> str:
    return "[" + ", ".join(map(str, t.shape)) + "]"


def _torch_type(t: Tensor) -> str:
    return {"float32": "float", "float64": "double", "float16": "c10::Half"}.get(
        t.dtype.name, t.dtype.name)


def _check_bias_dtype(input: Tensor, bias: Tensor | None) -> None:  # noqa: A002
    """conv1d/2d/3d's first check."""
    if bias is not None and bias.dtype is not input.dtype:
        raise RuntimeError(f"Input type ({_torch_type(input)}) and bias type "
                           f"({_torch_type(bias)}) should be the same")


def _batched(input: Tensor, weight: Tensor, spatial: int, op: str,  # noqa: A002
             stride: Any = 1) -> Tensor:
    """``op``'s input (of ``spatial`` dimensions) as a batch, an unbatched one made a batch of
    one; its rank and the weight's checked, with PyTorch's texts (its convolution takes the
    weight's rank as the truth: a stride list of another length is refused first, then the
    input's rank)."""
    n = spatial + 2
    if input.ndim not in (n - 1, n):
        raise RuntimeError(f"Expected {n - 1}D (unbatched) or {n}D (batched) input to {op}, but "
                           f"got input of size: {_shown(input)}")
    if weight.ndim < 3:
        raise RuntimeError("weight should have at least three dimensions")
    x = input if input.ndim == n else F.unsqueeze(input, 0)
    if weight.ndim != n:
        strides = list(_pair(stride, "stride", spatial))
        if spatial != 1:  # one value would have been spread to every dim
            raise RuntimeError(f"expected stride to be a single integer value or a list of "
                               f"{weight.ndim - 2} values to match the convolution dimensions, "
                               f"but got stride={strides}")
        raise RuntimeError(f"Expected {weight.ndim}-dimensional input for {weight.ndim}-"
                           f"dimensional weight {_shown(weight)}, but got {x.ndim}-dimensional "
                           f"input of size {_shown(x)} instead")
    return x


@autocast_lower
@named_backward("ConvolutionBackward0")
def conv2d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,  # noqa: A002
           padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    """PyTorch's ``F.conv2d`` on (N, C, H, W) or unbatched (C, H, W) input."""
    _check_bias_dtype(input, bias)
    x = _batched(input, weight, 2, "conv2d", stride)
    s, d = _pair(stride, "stride"), _pair(dilation, "dilation")
    pad = _conv_padding(padding, tuple(weight.shape[2:]), d, s, 2)
    _check_conv(x, weight, bias, s, (pad[:2], pad[2:]), d, groups)
    _refuse_bool_conv(x, d, 2, transposed=False)
    out = _conv(x, weight, bias, s, pad, d, groups, "conv2d")
    return out if input.ndim == 4 else F.squeeze(out, 0)


@autocast_lower
@named_backward("ConvolutionBackward0")
def conv_tbc(input: Tensor, weight: Tensor, bias: Tensor, pad: int = 0) -> Tensor:  # noqa: A002
    """PyTorch's ``F.conv_tbc``: a 1-d convolution of a (time, batch, channels) input by a
    (kernel width, in, out) weight, as conv1d on the transposed layout; its checks."""
    if input.ndim != 3:
        raise RuntimeError("Input must have 3 dims: time, batch, in_channel")
    if weight.ndim != 3:
        raise RuntimeError("Weight tensor must have 3 dims: kernel_width, in_channels, "
                           "out_channels.")
    if bias.ndim != 1:
        raise RuntimeError("Bias must be 1-D")
    if input.shape[2] != weight.shape[1]:
        raise RuntimeError("Input dim 2 (input channels) is not == dim 1 in the weight tensor")
    if weight.shape[2] != bias.shape[0]:
        raise RuntimeError("Bias size must equal dim 2 in the weight tensor (output "
                           "channels).")
    if input.shape[0] + 2 * pad - weight.shape[0] + 1 <= 0:  # torch gives an empty output
        from ..creation import zeros

        return zeros(0, input.shape[1], weight.shape[2], dtype=input.dtype,
                     device=input.device)
    out = conv1d(F.permute(input, 1, 2, 0), F.permute(weight, 2, 1, 0), bias, padding=pad)
    return F.permute(out, 2, 0, 1)


@autocast_lower
@named_backward("ConvolutionBackward0")
def conv1d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,  # noqa: A002
           padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    """PyTorch's ``F.conv1d`` on (N, C, L) or unbatched (C, L) input: a conv2d of height 1."""
    _check_bias_dtype(input, bias)
    x = _batched(input, weight, 1, "conv1d", stride)
    s, d = (1, _pair(stride, "stride", 1)[0]), (1, _pair(dilation, "dilation", 1)[0])
    if isinstance(padding, str):
        pad = _conv_padding(padding, (1, weight.shape[2]), d, s, 2)
    else:
        p = _pair(padding, "padding", 1)[0]
        pad = (0, 0, p, p)
    _check_conv(x, weight, bias, s[1:], (pad[2:],), d[1:], groups)
    _refuse_bool_conv(x, d, 1, transposed=False)
    out = _conv(F.unsqueeze(x, 2), F.unsqueeze(weight, 2), bias, s, pad, d, groups, "conv1d")
    out = F.squeeze(out, 2)
    return out if input.ndim == 3 else F.squeeze(out, 0)


@autocast_lower
@named_backward("ConvolutionBackward0")
def conv3d(input: Tensor, weight: Tensor, bias: Tensor | None = None, stride: Any = 1,  # noqa: A002
           padding: Any = 0, dilation: Any = 1, groups: int = 1) -> Tensor:
    """PyTorch's ``F.conv3d`` on (N, C, D, H, W) or unbatched (C, D, H, W) input: for each
    depth tap of the kernel, one conv2d of the input's depth slices it meets (batched as
    N * D_out images), summed over the taps."""
    _check_bias_dtype(input, bias)
    x = _batched(input, weight, 3, "conv3d", stride)
    s, d = _pair(stride, "stride", 3), _pair(dilation, "dilation", 3)
    k = tuple(weight.shape[2:])
    if isinstance(padding, str):  # depth first, then (top, bottom, left, right)
        hw = _conv_padding(padding, k[1:], d[1:], s, 2)  # (checks the string and strides)
        total = d[0] * (k[0] - 1) if padding == "same" else 0
        if total % 2:
            _warn_same_once()
        depth = (total // 2, total - total // 2)
    else:
        p = _pair(padding, "padding", 3)
        depth, hw = (p[0], p[0]), _sym(p[1:])
    _check_conv(x, weight, bias, s, (depth, hw[:2], hw[2:]), d, groups)
    _refuse_bool_conv(x, d, 3, transposed=False)
    padded = (x.shape[2] + sum(depth), x.shape[3] + hw[0] + hw[1], x.shape[4] + hw[2] + hw[3])
    extent = tuple(di * (ki - 1) + 1 for di, ki in zip(d, k))
    if any(depth):
        x = pad(x, (0, 0, 0, 0, *depth))
    n, c, _, h, w = x.shape
    d_out = (padded[0] - extent[0]) // s[0] + 1
    out = None
    for tap in range(k[0]):
        start = tap * d[0]
        planes = x[:, :, start:start + s[0] * (d_out - 1) + 1:s[0]]  # (N, C, D_out, H, W)
        planes = F.reshape(F.permute(planes, 0, 2, 1, 3, 4), (n * d_out, c, h, w))
        y = _conv(planes, weight[:, :, tap], None, s[1:], hw, d[1:], groups, "conv3d")
        out = y if out is None else F.add(out, y)
    assert out is not None
    out = F.reshape(out, (n, d_out, *out.shape[1:]))
    if bias is not None:
        out = F.add(out, F.reshape(bias, (1, 1, -1, 1, 1)))
    out = F.clone(F.permute(out, 0, 2, 1, 3, 4))  # row-major, as PyTorch's output
    return out if input.ndim == 5 else F.squeeze(out, 0)


# --------------------------------------------------------------------------- pooling


_POOL_ARG_TEXTS = {  # PyTorch's texts for a pool argument of the wrong length, by op
    "max_pool2d": ("kernel_size must either be a single int, or a tuple of two ints",
                   "stride must either be omitted, a single int, or a tuple of two ints",
                   "padding must either be a single int, or a tuple of two ints",
                   "dilation must be either a single int, or a tuple of two ints"),
    "avg_pool2d": ("kernel_size must either be a single int, or a tuple of two ints",
                   "stride must either be omitted, a single int, or a tuple of two ints",
                   "padding must either be a single int, or a tuple of two ints", ""),
    "max_pool3d": ("kernel_size must either be a single int, or a tuple of three ints",
                   "stride must either be omitted, a single int, or a tuple of three ints",
                   "padding must either be a single int, or a tuple of three ints",
                   "dilation must be either a single int, or a tuple of three ints"),
    "avg_pool3d": ("kernel_size must be a single int, or a tuple of three ints",
                   "stride must be omitted, a single int, or a tuple of three ints",
                   "padding must be a single int, or a tuple of three ints", ""),
}


def _pool_args(name: str, kernel_size: Any, stride: Any, padding: Any, dilation: Any
               ) -> tuple[tuple[int, ...], ...]:
    """A pool's kernel_size, stride (omitted: the kernel), padding and dilation, one per
    spatial dim, with PyTorch's text for one of another length."""
    n = 3 if name.endswith("3d") else 2
    texts = _POOL_ARG_TEXTS[name]

    def one(value: Any, text: str) -> tuple[int, ...]:
        t = (int(value),) if isinstance(value, (int, np.integer)) else tuple(map(int, value))
        if len(t) not in (1, n):
            raise RuntimeError(f"{name}: {text}")
        return t * n if len(t) == 1 else t

    k = one(kernel_size, texts[0])
    omitted = stride is None or (not isinstance(stride, (int, np.integer)) and not len(stride))
    return k, k if omitted else one(stride, texts[1]), one(padding, texts[2]), \
        one(dilation, texts[3])


def _pool_out(size: int, k: int, s: int, p: int, d: int, ceil_mode: bool) -> int:
    """PyTorch's pooling_output_shape (with its checks of stride and padding)."""
    if s == 0:
        raise RuntimeError("stride should not be zero")
    if p < 0:
        raise RuntimeError(f"pad must be non-negative, but got pad: {p}")
    if p > (d * (k - 1) + 1) // 2:
        raise RuntimeError(f"pad should be at most half of effective kernel size, but got "
                           f"pad={p}, kernel_size={k} and dilation={d}")
    span = size + 2 * p - d * (k - 1) - 1
    o = (-(-span // s) if ceil_mode else span // s) + 1
    if ceil_mode and (o - 1) * s >= size + p:
        o -= 1  # the last window must start inside the input or its left padding
    return o


def _pool_shape(x: Tensor, k: Sequence[int], s: Sequence[int], p: Sequence[int],
                d: Sequence[int], ceil_mode: bool, image_check: bool = False,
                input: Tensor | None = None) -> list[int]:  # noqa: A002
    """A 2-d or 3-d pool's output size, checked as PyTorch's pool2d/pool3d_shape_check
    (``image_check``: avg_pool3d's input-smaller-than-kernel check)."""
    n = len(k)
    spatial = tuple(x.shape[-n:])
    out = [_pool_out(*args, ceil_mode) for args in zip(spatial, k, s, p, d)]
    names = ("T", "H", "W")[-n:]
    for values, what, label in ((k, "kernel size", "k"), (s, "stride", "d"),
                                (d, "dilation", "dilation")):
        if min(values) <= 0:
            got = " ".join(f"{label}{name}: {v}" for name, v in zip(names, values))
            raise RuntimeError(f"{what} should be greater than zero, but got {got}")
    if n == 2 and 0 in x.shape[-3:]:  # PyTorch's pool2d_shape_check: only the batch may be 0
        raise RuntimeError("Expected 3D or 4D (batch mode) tensor with optional 0 dim batch "
                           f"size for input, but got:{_shown(x if input is None else input)}")
    if image_check and any(si < ki for si, ki in zip(spatial, k)):
        raise RuntimeError("input image (" + " ".join(f"{a}: {v}" for a, v in zip(names, spatial))
                           + ") smaller than kernel size (" + " ".join(
                               f"k{a}: {v}" for a, v in zip(names, k)) + ")")
    if any(pi > ki // 2 for pi, ki in zip(p, k)):
        got = (f"padW = {p[1]}, padH = {p[0]}, kW = {k[1]}, kH = {k[0]}" if n == 2 else
               f"kT: {k[0]} kW: {k[2]} kH: {k[1]} padT: {p[0]} padW: {p[2]} padH: {p[1]}")
        raise RuntimeError(f"pad should be smaller than or equal to half of kernel size, but got "
                           f"{got}")
    if min(out) < 1:
        c = x.shape[-n - 1]
        raise RuntimeError(f"Given input size: ({'x'.join(map(str, (c, *spatial)))}). "
                           f"Calculated output size: ({'x'.join(map(str, (c, *out)))}). Output "
                           "size is too small")
    return out


def _pool_geometry(x: Tensor, kernel_size: Any, stride: Any, padding: Any, dilation: Any,
                   ceil_mode: bool, name: str, input: Tensor  # noqa: A002
                   ) -> tuple[Pair, Pair, Pair, Pair, Pair, Pad4]:
    """Kernel, stride, padding, dilation, output size, and the padding unfold needs (the
    right/bottom side grown where ceil_mode lets a last window start inside the input);
    ``input``: the pool's argument (x unbatched), as its errors show it."""
    k, s, p, d = _pool_args(name, kernel_size, stride, padding, dilation)
    out = _pool_shape(x, k, s, p, d, ceil_mode, input=input)
    extra = [max(0, (o - 1) * si + di * (ki - 1) + 1 - size - 2 * pi)
             for size, o, ki, si, pi, di in zip(x.shape[-2:], out, k, s, p, d)]
    pad4 = (p[0], p[0] + extra[0], p[1], p[1] + extra[1])
    return k, s, p, d, (out[0], out[1]), pad4


def _as4d(x: Tensor, name: str) -> Tensor:
    if x.ndim not in (3, 4):
        if name == "max_pool2d":
            raise RuntimeError("non-empty 3D or 4D (batch mode) tensor expected for input")
        # PyTorch's avg_pool2d reads size(-3) first
        raise IndexError(f"Dimension out of range (expected to be in range of [{-x.ndim}, "
                         f"{x.ndim - 1}], but got -3)")
    return x if x.ndim == 4 else F.unsqueeze(x, 0)


def max_pool2d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,  # noqa: A002
               dilation: Any = 1, ceil_mode: bool = False,
               return_indices: bool = False) -> Any:
    """PyTorch's ``F.max_pool2d``: the gradient goes to the first maximum of each window."""
    from .tensor_ops import gather

    x = _as4d(input, "max_pool2d")
    k, s, p, d, out, pad4 = _pool_geometry(x, kernel_size, stride, padding, dilation,
                                           ceil_mode, "max_pool2d", input)
    _refuse_bool(input, "max_pool2d")
    n, c, h, w = x.shape
    fill = -math.inf if x.dtype.is_floating_point else int(np.iinfo(x.dtype.np).min) \
        if x.dtype.category == 1 else False
    cols = F.reshape(unfold_raw(x, k, d, pad4, s, fill), (n, c, k[0] * k[1], out[0] * out[1]))
    arg = _window_argmax(cols.detach(), 2)
    if fill == -math.inf and any(pad4):
        arg = _first_input_tap(cols, arg, _tap_positions(h, w, k, d, pad4, s))
    # the first maximum of each window picked by a mask, not a gather: a where and a sum,
    # which fuse (forward and backward) where a gather's scatter-add backward would not
    from ..creation import arange

    taps = F.reshape(arange(k[0] * k[1], device=x.device), (1, 1, k[0] * k[1], 1))
    picked = F.where(F.eq(taps, arg), cols, 0)
    values = F.reshape(F.sum(picked, 2), (n, c, *out))
    if values.dtype is not x.dtype:  # an integer sum is int64
        values = F.cast(values, x.dtype)
    if fill == -math.inf and any(pad4):
        values = _grad_of_empty_windows(values, x, _tap_positions(h, w, k, d, pad4, s),
                                        _window_starts(out, s, p, d, w))
    values = linked_backward(values if input.ndim == 4 else F.squeeze(values, 0),
                             "MaxPool2DWithIndicesBackward0", input)
    if not return_indices:
        return values
    # each tap's flat input position (-1 in padding), then the one argmax picked
    where = _tap_positions(h, w, k, d, pad4, s)
    where = np.where(where < 0, _window_starts(out, s, p, d, w), where)
    from ..creation import tensor

    table = F.expand(tensor(where, device=x.device), (n, c, k[0] * k[1], out[0] * out[1]))
    indices = F.reshape(gather(table, 2, arg), (n, c, *out))
    return values, (indices if input.ndim == 4 else F.squeeze(indices, 0))


def _window_argmax(cols: Tensor, dim: int) -> Tensor:
    """Each window's (along ``dim``, kept) maximum as PyTorch's CPU max pools pick it: the
    first maximum, or the last NaN where the window holds one (their scan replaces the
    running maximum by a greater value or by any NaN)."""
    if not cols.dtype.is_floating_point:
        return F.argmax(cols, dim, keepdim=True)
    from ..creation import arange

    shape = [1] * cols.ndim
    shape[dim] = cols.shape[dim]
    taps = F.reshape(arange(cols.shape[dim], device=cols.device), tuple(shape))
    if cols.dtype is not D.float64:
        # one argmax of a float64 key: the value itself, +inf below every NaN's key, a NaN's
        # key 2**1000 past its tap (the last NaN the greatest); a second pass for the NaNs
        # (an amax over the taps, not fused) made the cnn workload's step 26 % slower
        wide = F.cast(cols, D.float64)
        key = F.where(F.eq(wide, math.inf), 2.0**999, wide)
        key = F.where(F.ne(wide, wide), F.mul(F.add(F.cast(taps, D.float64), 1.0),
                                              2.0**1000), key)
        return F.argmax(key, dim, keepdim=True)
    arg = F.argmax(cols, dim, keepdim=True)
    last_nan = F.amax(F.where(F.ne(cols, cols), taps, -1), dim, keepdim=True)
    return F.where(F.ge(last_nan, 0), last_nan, arg)


@functools.lru_cache(maxsize=64)
def _tap_positions(h: int, w: int, k: Pair, d: Pair, pad4: Pad4, s: Pair) -> np.ndarray:
    """Each tap's flat input position in an (h, w) plane, -1 in the padding: (1, 1, taps,
    windows), read-only (cached)."""
    grid = np.arange(h * w, dtype=np.float64).reshape(1, 1, h, w)
    where = _unfold_impl(np, grid, kernel=k, dilation=d, padding=pad4, stride=s,
                         pad_value=-1.0).astype(np.int64).reshape(1, 1, k[0] * k[1], -1)
    where.flags.writeable = False
    return where


def _grad_of_empty_windows(values: Tensor, x: Tensor, where: np.ndarray,
                           starts: np.ndarray) -> Tensor:
    """PyTorch's max pool sends the gradient of a window with no tap in the input (wholly
    in the padding: its value -inf) to its index, the element ``starts`` names, where that
    lies in the plane (past it, torch writes out of bounds: none here). The value stays:
    the term added is x - x.detach(), 0 (none where x is not finite: inf - inf)."""
    from ..creation import tensor
    from .tensor_ops import index_select

    n, c, h, w = x.shape
    starts = starts.reshape(-1)
    chosen = ~(where >= 0).any(axis=2).reshape(-1) & (starts >= 0) & (starts < h * w)
    if not chosen.any():
        return values
    flat = F.reshape(x, (n, c, h * w))
    picked = index_select(flat, 2, tensor(np.where(chosen, starts, 0), device=x.device))
    finite = F.lt(F.abs(picked.detach()), math.inf)
    keep = F.logical_and(tensor(chosen, device=x.device), finite)
    term = F.where(keep, F.sub(picked, picked.detach()), 0.0)
    mask = F.reshape(tensor(chosen, device=x.device), (1, 1, *values.shape[2:]))
    return F.where(mask, F.add(values, F.reshape(term, values.shape)), values)


def _first_input_tap(cols: Tensor, arg: Tensor, where: np.ndarray) -> Tensor:
    """PyTorch's max pool reads only a window's taps in the input: where none is above -inf,
    its maximum is the first of them (which takes the gradient), not a tap in the padding
    (``where``: each tap's flat input position, -1 in the padding)."""
    from ..creation import tensor

    first = tensor(np.argmax(where >= 0, axis=2)[:, :, None, :], device=cols.device)
    top = F.amax(cols.detach(), 2, keepdim=True)
    return F.where(F.eq(top, -math.inf), first, arg)


def _window_starts(out: Sequence[int], s: Sequence[int], p: Sequence[int], d: Sequence[int],
                   width: int) -> np.ndarray:
    """The index PyTorch's max pool gives a window with no tap above -inf (one wholly in the
    padding included): its first row and column stepped by the dilation out of the padding,
    row * width + column, even where that lies past the input; (1, 1, 1, out_h * out_w)."""
    starts = []
    for oi, si, pi, di in zip(out, s, p, d):
        first = np.arange(oi) * si - pi
        starts.append(np.where(first < 0, first + (-first + di - 1) // di * di, first))
    return (starts[0][:, None] * width + starts[1][None, :]).reshape(1, 1, 1, -1)


def _avg_divisor(size: Sequence[int], k: Sequence[int], s: Sequence[int], p: Sequence[int],
                 out: Sequence[int], count_include_pad: bool) -> np.ndarray:
    """How many taps each output of an average pool divides by (PyTorch's rule: a window is
    clipped to the padded input, and to the input itself unless count_include_pad), for
    any number of axes."""
    axes = []
    for size_i, ki, si, pi, oi in zip(size, k, s, p, out):
        start = np.arange(oi) * si - pi
        end = np.minimum(start + ki, size_i + pi)
        if not count_include_pad:
            start, end = np.maximum(start, 0), np.minimum(end, size_i)
        axes.append(end - start)
    return functools.reduce(np.multiply.outer, axes).astype(np.float64)


def _refuse_bool(input: Tensor, kernel: str) -> None:  # noqa: A002
    """PyTorch's max pools take every dtype but bool: its error for that."""
    if input.dtype is D.bool_:
        raise NotImplementedError(f'"{kernel}" not implemented for \'Bool\'')


def _integer_pool(input: Tensor, kernel: str, int64: bool = True) -> None:  # noqa: A002
    """PyTorch's error for a pool of an integer (or bool) input its kernel has no case for:
    the average pools take int64 only, the adaptive ones and grid sampling none."""
    if not (int64 and input.dtype is D.int64):
        raise NotImplementedError(f'"{kernel}" not implemented for '
                                  f"'{D.scalar_type_name(input.dtype)}'")


def _truncated(mean: Tensor) -> Tensor:
    """An integer average pool's result: the float64 mean (exact sums of int64 values below
    2**53, so the quotient never rounds across an integer) truncated toward zero, as C++'s
    integer division."""
    return F.cast(F.trunc(mean), D.int64)


@linked_to_inputs("AvgPool2DBackward0")
def avg_pool2d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,  # noqa: A002
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> Tensor:
    """PyTorch's ``F.avg_pool2d`` (of an int64 input: its truncating integer division)."""
    from ..creation import tensor

    x = _as4d(input, "avg_pool2d")
    k, s, p, d, out, pad4 = _pool_geometry(x, kernel_size, stride, padding, 1, ceil_mode,
                                           "avg_pool2d", input)
    if not input.dtype.is_floating_point:
        _integer_pool(input, "avg_pool2d")
        return _truncated(avg_pool2d(F.cast(input, D.float64), kernel_size, stride, padding,
                                     ceil_mode, count_include_pad, divisor_override))
    n, c, h, w = x.shape
    cols = F.reshape(unfold_raw(x, k, d, pad4, s), (n, c, k[0] * k[1], out[0] * out[1]))
    total = F.reshape(F.sum(cols, 2), (n, c, *out))
    if divisor_override is not None:
        if divisor_override == 0:
            raise RuntimeError("divisor must be not zero")
        result = F.div(total, float(divisor_override))
    else:
        div = _avg_divisor((h, w), k, s, p, out, count_include_pad)
        if np.all(div == div.flat[0]):
            result = F.div(total, float(div.flat[0]))
        else:
            result = F.div(total, tensor(div.astype(x.dtype.np), device=x.device))
    return result if input.ndim == 4 else F.squeeze(result, 0)


def _adaptive_size(output_size: Any, size: Pair, name: str) -> Pair:
    """An adaptive pool's (oh, ow): an int for both, or a pair where None keeps that dim of
    the input (PyTorch's ``AdaptiveAvgPool2d((2, None))``)."""
    if isinstance(output_size, (int, np.integer)):
        output_size = (output_size, output_size)
    if output_size is None:
        raise TypeError("object of type 'NoneType' has no len()")
    if len(output_size) != 2:
        raise RuntimeError(f"{name}(): internal error: output_size.size() must be 2"
                           if "max" in name else f"{name}: output_size must be 2")
    size = (0,) * (2 - len(size)) + tuple(size)  # an input of too few dims is refused later
    oh, ow = (n if o is None else int(o) for o, n in zip(output_size, size))
    return oh, ow


def _list_with_default(output_size: Any, input: Tensor) -> None:  # noqa: A002
    """PyTorch's functional wrappers refuse a sequence of output sizes as long as the input's
    rank (an unbatched 2-D input under ``adaptive_*_pool2d((2, None))``)."""
    if not isinstance(output_size, (int, np.integer)) and output_size is not None \
            and input.ndim <= len(output_size):
        raise ValueError(f"Input dimension should be at least {len(output_size) + 1}")


def _mean_of_planes(input: Tensor, sizes: Sequence[int]) -> Tensor | None:  # noqa: A002
    """PyTorch's adaptive average pool to one cell is a mean over the last len(sizes) dims,
    taken before any check of the input's rank (a 2-D input to ``adaptive_avg_pool2d(x, 1)``
    gives a 1x1 mean); None for any other output size."""
    if any(s != 1 for s in sizes):
        return None
    return F.mean(input, tuple(range(-len(sizes), 0)), keepdim=True)


def _check_adaptive(input: Tensor, sizes: Sequence[int], name: str) -> None:  # noqa: A002
    """PyTorch's checks of an adaptive pool over len(sizes) spatial dims: the output sizes, the
    input's rank and its empty dims (an average pool's spatial ones, a max pool's every one
    but the first)."""
    n, avg = len(sizes), "avg" in name
    if avg and min(sizes) < 0:
        shown = ", ".join(map(str, sizes)) if n == 2 else f"{sizes[0]}, {sizes[1]},{sizes[2]}"
        raise RuntimeError(f"{name}: elements of output_size must be greater than or equal to "
                           f"0 but received {{{shown}}}")
    if input.ndim not in (n + 1, n + 2):
        raise RuntimeError(f"{name}(): Expected {n + 1}D or {n + 2}D tensor, but got"
                           f"{'' if avg else ':'} {_shown(input)}")
    dims = range(input.ndim - n, input.ndim) if avg else range(1, input.ndim)
    for i in dims:
        if input.shape[i] == 0:
            raise RuntimeError(f"{name}(): Expected input to have non-zero size for non-batch "
                               f"dimensions, but input has sizes {_shown(input)} with dimension "
                               f"{i} being empty")
    if min(sizes) < 0:
        shape = (*input.shape[:-n], *sizes)
        raise RuntimeError(f"Trying to create tensor with negative dimension {min(sizes)}: "
                           f"{list(shape)}")
    _check_output_bytes((*input.shape[:-n], *sizes), 8 if not avg else input.dtype.itemsize,
                        avg)


_INT64_MAX = 2 ** 63 - 1


def _check_output_bytes(shape: tuple[int, ...], itemsize: int, check_numel: bool) -> None:
    """PyTorch's refusal of an output whose element count (``check_numel``) or byte count
    (a max pool's: its int64 indices) overflows int64, before any work (a window loop over
    such an output would not end)."""
    numel = math.prod(shape)
    if check_numel and numel > _INT64_MAX:
        raise RuntimeError("numel: integer multiplication overflow")
    if numel * itemsize > _INT64_MAX:
        raise RuntimeError(f"Storage size calculation overflowed with sizes={list(shape)}")


def adaptive_avg_pool2d(input: Tensor, output_size: Any) -> Tensor:  # noqa: A002
    """PyTorch's ``F.adaptive_avg_pool2d``: output cell i averages input rows
    floor(i*H/oh) .. ceil((i+1)*H/oh) (and columns alike)."""
    _list_with_default(output_size, input)
    oh, ow = _adaptive_size(output_size, tuple(input.shape[-2:]), "adaptive_avg_pool2d")
    mean = _mean_of_planes(input, (oh, ow))
    if mean is not None:
        return mean
    _check_adaptive(input, (oh, ow), "adaptive_avg_pool2d")
    if not input.dtype.is_floating_point:
        _integer_pool(input, "adaptive_avg_pool2d", int64=False)
    x = _as4d(input, "adaptive_avg_pool2d")
    h, w = x.shape[-2:]
    if oh == 0 or ow == 0 or x.shape[1] == 0:  # PyTorch's empty result (no channels taken)
        out = F.reshape(x[:, :, :0, :0], (*x.shape[:2], oh, ow))
    elif h % oh == 0 and w % ow == 0:  # uniform windows: one average pool
        out = avg_pool2d(x, (h // oh, w // ow))
    else:
        rows = [F.mean(x[:, :, (i * h) // oh:-(-((i + 1) * h) // oh), :], 2, keepdim=True)
                for i in range(oh)]
        xr = F.cat(rows, 2)
        out = F.cat([F.mean(xr[:, :, :, (j * w) // ow:-(-((j + 1) * w) // ow)], 3,
                            keepdim=True) for j in range(ow)], 3)
    # PyTorch's: a mean over the plane for output size 1
    out = linked_backward(out, "MeanBackward1" if oh == ow == 1 else
                          "AdaptiveAvgPool2DBackward0", input)
    return out if input.ndim == 4 else F.squeeze(out, 0)


def adaptive_max_pool2d(input: Tensor, output_size: Any, return_indices: bool = False  # noqa: A002
                        ) -> Any:
    """PyTorch's ``F.adaptive_max_pool2d``: output cell (i, j) is the maximum of input rows
    floor(i*H/oh) .. ceil((i+1)*H/oh) and columns alike (its first maximum takes the
    gradient); ``return_indices`` also gives each maximum's flat position in its plane."""
    _list_with_default(output_size, input)
    oh, ow = _adaptive_size(output_size, tuple(input.shape[-2:]), "adaptive_max_pool2d")
    _check_adaptive(input, (oh, ow), "adaptive_max_pool2d")
    from .tensor_ops import gather

    _refuse_bool(input, "adaptive_max_pool2d")
    x = _as4d(input, "adaptive_max_pool2d")
    n, c, h, w = x.shape
    if oh == 0 or ow == 0 or c == 0:  # PyTorch's empty result (an unbatched one: no channels)
        empty = F.reshape(x[:, :, :0, :0], (n, c, oh, ow))
        out = (empty, F.cast(empty, D.int64)) if return_indices else empty
    elif h % oh == 0 and w % ow == 0:  # uniform windows: one max pool
        out = max_pool2d(x, (h // oh, w // ow), return_indices=return_indices)
    else:
        values, indices = [], []
        for i in range(oh):
            r0, r1 = (i * h) // oh, -(-((i + 1) * h) // oh)
            for j in range(ow):
                c0, c1 = (j * w) // ow, -(-((j + 1) * w) // ow)
                cell = F.reshape(x[:, :, r0:r1, c0:c1], (n, c, (r1 - r0) * (c1 - c0)))
                k = _window_argmax(cell.detach(), 2)
                values.append(F.squeeze(gather(cell, 2, k), 2))
                k = F.squeeze(k, 2)
                if return_indices:
                    cw = c1 - c0
                    rows = F.add(F.floor_divide(k, cw), r0)
                    indices.append(F.add(F.mul(rows, w), F.add(F.remainder(k, cw), c0)))
        out = linked_backward(F.reshape(F.stack(values, 2), (n, c, oh, ow)),
                              "AdaptiveMaxPool2DBackward0", input)
        if return_indices:
            out = (out, F.reshape(F.stack(indices, 2), (n, c, oh, ow)))
    if input.ndim == 3:
        return tuple(F.squeeze(o, 0) for o in out) if return_indices else F.squeeze(out, 0)
    return out


def _squeeze_height(out: Any) -> Any:
    """A 2-d pool's result (or its (values, indices)) over a height of 1, back to 1-d; an
    index in a plane of height 1 is the position along the length."""
    if isinstance(out, tuple):
        return tuple(F.squeeze(o, -2) for o in out)
    return F.squeeze(out, -2)


def _check_max_pool1d(input: Tensor, kernel_size: Any, stride: Any, padding: Any,  # noqa: A002
                      dilation: Any, ceil_mode: bool) -> None:
    """PyTorch's check_max_pool1d (max_pool1d without indices)."""
    if input.ndim not in (2, 3) or 0 in input.shape[-2:]:  # only a batch may be empty
        raise RuntimeError("max_pool1d: Expected 2D or 3D (batch mode) tensor with optional 0 "
                           f"dim batch size for input, but got:{_shown(input)}")

    def ints(v: Any) -> list[int]:
        return [int(v)] if isinstance(v, (int, np.integer)) else [int(x) for x in v]

    k, p, d = ints(kernel_size), ints(padding), ints(dilation)
    s = [] if stride is None else ints(stride)
    for values, text, allowed in (
            (k, "kernel_size must be an int, list of ints or tuple of ints", (1,)),
            (s, "stride must be None, an int, list of ints, or tuple of ints", (0, 1)),
            (p, "padding must be an int, list of ints, or tuple of ints", (1,)),
            (d, "dilation must be an int, list of ints or tuple of ints", (1,))):
        if len(values) not in allowed:
            raise RuntimeError(f"max_pool1d() {text} of size 1 but got size {len(values)}")
    s = s or k
    for ok, text in ((k[0] > 0, f"kernel_size must be greater than zero, but got {k[0]}"),
                     (s[0] > 0, f"stride must be greater than zero, but got {s[0]}"),
                     (p[0] >= 0, f"padding must be non-negative, but got {p[0]}"),
                     (p[0] <= k[0] // 2, "padding should be at most half of kernel size, but "
                                         f"got padding={p[0]} and kernel_size={k[0]}"),
                     (d[0] > 0, f"dilation must be greater than zero, but got {d[0]}")):
        if not ok:
            raise RuntimeError(f"max_pool1d() {text}")
    out = _pool_out(input.shape[-1], k[0], s[0], p[0], d[0], ceil_mode)
    if out <= 0:
        raise RuntimeError(f"max_pool1d() Invalid computed output size: {out}")


def _pool1d_args(input: Tensor, name: str, **args: Any) -> dict[str, Any]:  # noqa: A002
    """A 1-d pool's input rank and arguments checked as PyTorch's argument parser and its
    checkDimRange do: each argument one int (an omitted stride None)."""
    if input.ndim not in (2, 3):
        raise RuntimeError(f"Expected 2 to 3 dimensions, but got {input.ndim}-dimensional "
                           f"tensor for argument #1 'self' (while checking arguments for {name})")
    out = {}
    for what, value in args.items():
        if value is None or isinstance(value, (int, np.integer)):
            out[what] = value
            continue
        if what == "stride" and not len(value):
            out[what] = None
            continue
        if len(value) != 1:
            raise RuntimeError(f"{name}() argument '{what}' should contain one int (got "
                               f"{len(value)})")
        out[what] = int(value[0])
    return out


def max_pool1d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,  # noqa: A002
               dilation: Any = 1, ceil_mode: bool = False,
               return_indices: bool = False) -> Any:
    """``max_pool2d`` over a height of 1."""
    if not return_indices:
        _check_max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode)
        _refuse_bool(input, "max_pool1d_impl")
    a = _pool1d_args(input, "max_pool1d", kernel_size=kernel_size, stride=stride,
                     padding=padding, dilation=dilation)
    k = a["kernel_size"]
    s = k if a["stride"] is None else a["stride"]
    out = max_pool2d(F.unsqueeze(input, -2), (1, k), (1, s), (0, a["padding"]),
                     (1, a["dilation"]), ceil_mode, return_indices)
    return _squeeze_height(out)


def _output_size1d(input: Tensor, name: str, output_size: Any) -> int:  # noqa: A002
    """A 1-d adaptive pool's output size, checked in PyTorch's order: the argument's type,
    the input's rank, the argument's length."""
    int_list_argument(name, "output_size", 2, output_size, single=True)
    return int(_pool1d_args(input, name, output_size=output_size)["output_size"])


def adaptive_avg_pool1d(input: Tensor, output_size: Any) -> Tensor:  # noqa: A002
    """``adaptive_avg_pool2d`` over a height of 1."""
    size = _output_size1d(input, "adaptive_avg_pool1d", output_size)
    return F.squeeze(adaptive_avg_pool2d(F.unsqueeze(input, -2), (1, size)), -2)


def adaptive_max_pool1d(input: Tensor, output_size: Any,  # noqa: A002
                        return_indices: bool = False) -> Any:
    """``adaptive_max_pool2d`` over a height of 1."""
    size = _output_size1d(input, "adaptive_max_pool1d", output_size)
    if 0 in input.shape[1:]:
        raise RuntimeError("adaptive_max_pool1d(): Expected input to have non-zero size for "
                           f"non-batch dimensions, but input has sizes {_shown(input)} with "
                           f"dimension {input.shape.index(0, 1)} being empty")
    return _squeeze_height(adaptive_max_pool2d(F.unsqueeze(input, -2), (1, size),
                                               return_indices))


def avg_pool1d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,  # noqa: A002
               ceil_mode: bool = False, count_include_pad: bool = True) -> Tensor:
    a = _pool1d_args(input, "avg_pool1d", kernel_size=kernel_size, stride=stride,
                     padding=padding)
    k = a["kernel_size"]
    s = k if a["stride"] is None else a["stride"]
    out = avg_pool2d(F.unsqueeze(input, -2), (1, k), (1, s), (0, a["padding"]), ceil_mode,
                     count_include_pad)
    return F.squeeze(out, -2)


# ------------------------------------------------------------------------ 3-d pooling
#
# A 3-d pool window is a box, and max, sum and adaptive means are separable: each pools the
# (H, W) planes of every depth with the 2-d pool, then pools along the depth with a 2-d pool
# whose window is one column wide, over planes (D, H_out * W_out).


def _as5d(x: Tensor, message: str) -> Tensor:
    """A 3-d pool's (N, C, D, H, W) input (a batch of none allowed), an unbatched one made a
    batch of one."""
    if x.ndim not in (4, 5) or 0 in x.shape[-4:]:
        raise RuntimeError(message)
    return x if x.ndim == 5 else F.unsqueeze(x, 0)


def _by_depth(planes: Tensor, n: int, c: int, depth: int) -> Tensor:
    """(N, C·D, h, w) -> (N·C, 1, D, h·w): the depth as the rows of one plane."""
    return F.reshape(planes, (n * c, 1, depth, planes.shape[-2] * planes.shape[-1]))


def _volume(cols: Tensor, n: int, c: int, hw: tuple[int, int], input: Tensor) -> Tensor:  # noqa: A002
    """(N·C, 1, D_out, h·w) back to (N, C, D_out, h, w) (unbatched as ``input`` was)."""
    out = F.reshape(cols, (n, c, cols.shape[2], *hw))
    return out if input.ndim == 5 else F.squeeze(out, 0)


def _indices3d(depth_idx: Tensor, plane_idx: Tensor, n: int, c: int, depth: int,
               hw_in: tuple[int, int], hw_out: tuple[int, int], input: Tensor  # noqa: A002
               ) -> Tensor:
    """Flat (D·H·W) positions of the maxima: the depth pool's index (d · h_out·w_out + j)
    picks the depth d, whose plane pool's index at column j is the (H·W) position."""
    from .tensor_ops import gather

    cols = hw_out[0] * hw_out[1]
    d = F.floor_divide(depth_idx, cols)
    within = gather(_by_depth(plane_idx, n, c, depth), 2, d)
    return _volume(F.add(F.mul(d, hw_in[0] * hw_in[1]), within), n, c, hw_out, input)


@autocast_fp32
def max_pool3d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,  # noqa: A002
               dilation: Any = 1, ceil_mode: bool = False,
               return_indices: bool = False) -> Any:
    """PyTorch's ``F.max_pool3d`` on (N, C, D, H, W) or (C, D, H, W)."""
    k, s, p, d = _pool_args("max_pool3d", kernel_size, stride, padding, dilation)
    x = _as5d(input, "non-empty 4D or 5D (batch mode) tensor expected for input")
    _pool_shape(x, k, s, p, d, ceil_mode)
    _refuse_bool(input, "max_pool3d")
    n, c, depth, h, w = x.shape
    planes = max_pool2d(F.reshape(x, (n, c * depth, h, w)), k[1:], s[1:], p[1:], d[1:],
                        ceil_mode, return_indices)
    values = planes[0] if return_indices else planes
    hw = tuple(values.shape[-2:])
    cols = max_pool2d(_by_depth(values, n, c, depth), (k[0], 1), (s[0], 1), (p[0], 0),
                      (d[0], 1), ceil_mode, return_indices)
    if not return_indices:
        return _volume(cols, n, c, hw, input)
    return (_volume(cols[0], n, c, hw, input),
            _indices3d(cols[1], planes[1], n, c, depth, (h, w), hw, input))


@autocast_fp32
def avg_pool3d(input: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0,  # noqa: A002
               ceil_mode: bool = False, count_include_pad: bool = True,
               divisor_override: int | None = None) -> Tensor:
    """PyTorch's ``F.avg_pool3d``: window sums (planes, then depth) over PyTorch's divisor
    (of an int64 input: its truncating integer division)."""
    from ..creation import tensor

    k, s, p, _ = _pool_args("avg_pool3d", kernel_size, stride, padding, 1)
    x = _as5d(input, "non-empty 4D or 5D (batch mode) tensor expected for input")
    _pool_shape(x, k, s, p, (1, 1, 1), ceil_mode, image_check=True)
    if not input.dtype.is_floating_point:
        _integer_pool(input, "avg_pool3d_out_frame")
        return _truncated(avg_pool3d(F.cast(input, D.float64), kernel_size, stride, padding,
                                     ceil_mode, count_include_pad, divisor_override))
    if divisor_override == 0:
        raise RuntimeError("divisor must be not zero")
    n, c, depth, h, w = x.shape
    planes = avg_pool2d(F.reshape(x, (n, c * depth, h, w)), k[1:], s[1:], p[1:], ceil_mode,
                        True, 1)
    hw = tuple(planes.shape[-2:])
    total = _volume(avg_pool2d(_by_depth(planes, n, c, depth), (k[0], 1), (s[0], 1),
                               (p[0], 0), ceil_mode, True, 1), n, c, hw, input)
    if divisor_override is not None:
        if divisor_override == 0:
            raise RuntimeError("divisor must be not zero")
        return F.div(total, float(divisor_override))
    div = _avg_divisor((depth, h, w), k, s, p, (total.shape[-3], *hw), count_include_pad)
    return F.div(total, tensor(div.astype(x.dtype.np), device=x.device))


def _adaptive3d_sizes(input: Tensor, output_size: Any, name: str) -> tuple[int, ...]:  # noqa: A002
    _list_with_default(output_size, input)
    sizes = (output_size,) * 3 if isinstance(output_size, (int, np.integer)) else output_size
    if len(sizes) != 3:
        raise RuntimeError(f"{name}: internal error: output_size.size() must be 3")
    spatial = (0,) * (3 - min(input.ndim, 3)) + tuple(input.shape[-3:])
    return tuple(n if o is None else int(o) for o, n in zip(sizes, spatial))


def _adaptive3d(input: Tensor, output_size: Any, name: str) -> tuple[Tensor, tuple[int, ...]]:  # noqa: A002
    full = _adaptive3d_sizes(input, output_size, name)
    _check_adaptive(input, full, name)
    return input if input.ndim == 5 else F.unsqueeze(input, 0), full


@autocast_fp32
def adaptive_avg_pool3d(input: Tensor, output_size: Any) -> Tensor:  # noqa: A002
    """PyTorch's ``F.adaptive_avg_pool3d``: the mean over each box of adaptive windows."""
    mean = _mean_of_planes(input, _adaptive3d_sizes(input, output_size, "adaptive_avg_pool3d"))
    if mean is not None:
        return mean
    x, (od, oh, ow) = _adaptive3d(input, output_size, "adaptive_avg_pool3d")
    if not input.dtype.is_floating_point:
        _integer_pool(input, "adaptive_avg_pool3d_cpu", int64=False)
    n, c, depth, h, w = x.shape
    planes = adaptive_avg_pool2d(F.reshape(x, (n, c * depth, h, w)), (oh, ow))
    cols = adaptive_avg_pool2d(_by_depth(planes, n, c, depth), (od, oh * ow))
    return _volume(cols, n, c, (oh, ow), input)


def adaptive_max_pool3d(input: Tensor, output_size: Any,  # noqa: A002
                        return_indices: bool = False) -> Any:
    """PyTorch's ``F.adaptive_max_pool3d`` (indices: flat D·H·W positions)."""
    x, (od, oh, ow) = _adaptive3d(input, output_size, "adaptive_max_pool3d")
    _refuse_bool(input, "adaptive_max_pool3d_cpu")
    n, c, depth, h, w = x.shape
    planes = adaptive_max_pool2d(F.reshape(x, (n, c * depth, h, w)), (oh, ow), return_indices)
    values = planes[0] if return_indices else planes
    cols = adaptive_max_pool2d(_by_depth(values, n, c, depth), (od, oh * ow), return_indices)
    if not return_indices:
        return _volume(cols, n, c, (oh, ow), input)
    return (_volume(cols[0], n, c, (oh, ow), input),
            _indices3d(cols[1], planes[1], n, c, depth, (h, w), (oh, ow), input))


# ----------------------------------------------- pools with indices, power pools, unpools


# PyTorch's signatures: return_indices is taken, and ignored (the indices always come back)


def max_pool1d_with_indices(input: Tensor, kernel_size: Any, stride: Any = None,  # noqa: A002
                            padding: Any = 0, dilation: Any = 1, ceil_mode: bool = False,
                            return_indices: bool = False) -> Any:
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(input: Tensor, kernel_size: Any, stride: Any = None,  # noqa: A002
                            padding: Any = 0, dilation: Any = 1, ceil_mode: bool = False,
                            return_indices: bool = False) -> Any:
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool3d_with_indices(input: Tensor, kernel_size: Any, stride: Any = None,  # noqa: A002
                            padding: Any = 0, dilation: Any = 1, ceil_mode: bool = False,
                            return_indices: bool = False) -> Any:
    return max_pool3d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def adaptive_max_pool1d_with_indices(input: Tensor, output_size: Any,  # noqa: A002
                                     return_indices: bool = False) -> Any:
    return adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(input: Tensor, output_size: Any,  # noqa: A002
                                     return_indices: bool = False) -> Any:
    return adaptive_max_pool2d(input, output_size, True)


def adaptive_max_pool3d_with_indices(input: Tensor, output_size: Any,  # noqa: A002
                                     return_indices: bool = False) -> Any:
    return adaptive_max_pool3d(input, output_size, True)


# ------------------------------------------------------------------ fractional max pools


def _dim_size(x: Tensor, dim: int) -> int:
    """``x.size(dim)`` for a negative dim, with PyTorch's IndexError past the first."""
    if dim < -x.ndim:
        raise IndexError(f"Dimension out of range (expected to be in range of [-{x.ndim}, "
                         f"{x.ndim - 1}], but got {dim})")
    return int(x.shape[dim])


def _intervals(samples: Tensor, n_in: int, n_out: int, pool: int) -> Tensor:
    """PyTorch's generate_intervals: each output's window start along one axis (a trailing
    axis of ``n_out``), from each plane's sample in [0, 1), computed in the input's precision
    as there; tensor ops, so a compiled step captures them with the samples it draws."""
    from ..creation import arange

    steps = arange(n_out, device=samples.device)
    last = F.eq(steps, n_out - 1)
    u = F.unsqueeze(samples, -1)
    if n_out > 1:
        ftype = samples.dtype.np.type
        alpha = float(ftype(n_in - pool) / ftype(n_out - 1))
        seq = F.sub(F.cast(F.mul(F.add(F.cast(steps, samples.dtype), u), alpha), D.int64),
                    F.cast(F.mul(u, alpha), D.int64))
    else:
        seq = F.cast(F.mul(u, 0), D.int64)
    return F.where(last, n_in - pool, seq)


def _check_fractional(input: Tensor, k: Sequence[int], size: Sequence[int],  # noqa: A002
                      samples: Tensor, dims: int) -> None:
    """PyTorch's fractional_max_pool{2,3}d checks, in its order."""
    name = f"fractional_max_pool{dims}d"
    kernel_name = name + ("()" if dims == 2 else "_out()")
    ints = "tuple of Ints" if dims == 2 else "tuple of three Ints"
    if len(k) != dims:
        raise RuntimeError(f"{name}: kernel_size must either be a single Int or {ints}")
    if len(size) != dims:
        raise RuntimeError(f"{name}: output_size must either be a single Int or {ints}")
    if input.ndim not in (dims + 1, dims + 2):
        raise RuntimeError(f"{kernel_name}: Expected {dims + 1}D or {dims + 2}D tensor, but "
                           f"got: {list(input.shape)}")
    for i in range(1, input.ndim):
        if input.shape[i] <= 0:
            raise RuntimeError(f"{kernel_name}: Expected input to have non-zero size for "
                               f"non-batch dimensions, but got{list(input.shape)} with "
                               f"dimension {i} being empty.")
    axes = ("height", "width") if dims == 2 else ("time", "height", "width")
    for axis, o, kk, n in zip(axes, size, k, input.shape[-dims:]):
        if o + kk - 1 > n:
            raise RuntimeError(f"{kernel_name}: pool {axis} {kk} too large relative to input "
                               f"{axis} {n}")
    if samples.dtype is not input.dtype:
        raise RuntimeError("Expect _random_samples to have the same dtype as input")
    if samples.ndim != 3:
        raise RuntimeError(f"Expect _random_samples to have 3 dimensions, got {samples.ndim}")
    if samples.shape[0] < (input.shape[0] if input.ndim == dims + 2 else 1):
        raise RuntimeError("Expect _random_samples.size(0) no less then input batch size.")
    if samples.shape[1] != input.shape[-dims - 1]:
        raise RuntimeError("Expect _random_samples.size(1) equals to input channel size.")
    if samples.shape[2] != dims:
        raise RuntimeError(f"Expect _random_samples.size(2) equals to {dims}; got "
                           f"{samples.shape[2]}.")


def _fractional_max_pool(input: Tensor, kernel_size: Any, output_size: Any,  # noqa: A002
                         output_ratio: Any, return_indices: bool, samples: Tensor | None,
                         dims: int) -> Any:
    """PyTorch's ``F.fractional_max_pool{2,3}d``: the max of pseudo-random windows, whose
    starts come from ``_random_samples`` (one sample per plane and axis, drawn when not
    given); a gather of every window, then a max over it."""
    from ..creation import arange, rand, zeros
    from .tensor_ops import gather

    name = f"fractional_max_pool{dims}d"
    if output_size is None and output_ratio is None:
        raise ValueError(f"{name} requires specifying either an output_size or an "
                         "output_ratio")
    if output_size is None:
        if dims == 2 and len(output_ratio) > 2:
            raise ValueError(f"{name} requires output_ratio to either be a single Int or "
                             "tuple of Ints.")
        ratio = (float(output_ratio),) * dims if isinstance(output_ratio, (int, float)) \
            else tuple(float(v) for v in output_ratio)
        output_size = [int(_dim_size(input, i - dims) * ratio[i]) for i in range(dims)]
    if samples is None:
        batch = 1 if input.ndim == dims + 1 else _dim_size(input, 0)
        samples = rand(batch, _dim_size(input, -dims - 1), dims, dtype=input.dtype,
                       device=input.device)
    k = (int(kernel_size),) * dims if isinstance(kernel_size, (int, np.integer)) \
        else tuple(int(v) for v in kernel_size)
    size = (int(output_size),) * dims if isinstance(output_size, (int, np.integer)) \
        else tuple(int(v) for v in output_size)
    _check_fractional(input, k, size, samples, dims)
    x = input if input.ndim == dims + 2 else F.unsqueeze(input, 0)
    n, c, spatial = x.shape[0], x.shape[1], tuple(x.shape[2:])
    picks = samples.detach()[:n]  # (n, c, dims)
    # the sample of each axis: W then H in 2-d, T, H, W in 3-d (PyTorch's order)
    order = (1, 0) if dims == 2 else (0, 1, 2)
    index = zeros((n, c, *size, *k), dtype=D.int64, device=x.device)
    stride = 1
    for axis in reversed(range(dims)):
        starts = _intervals(picks[..., order[axis]], spatial[axis], size[axis], k[axis])
        shape = [n, c] + [1] * (2 * dims)
        shape[2 + axis] = size[axis]
        taps = [1] * (2 + 2 * dims)
        taps[2 + dims + axis] = k[axis]
        pos = F.add(F.reshape(starts, tuple(shape)),
                    F.reshape(arange(k[axis], device=x.device), tuple(taps)))
        index = F.add(index, F.mul(pos, stride))
        stride *= spatial[axis]
    index = F.reshape(index, (n, c, math.prod(size), math.prod(k)))
    values = gather(F.reshape(x, (n, c, -1)), 2, F.reshape(index, (n, c, -1)))
    cols = F.reshape(values, (n, c, math.prod(size), math.prod(k)))
    arg = _window_argmax(cols.detach(), 3)  # the first maximum, or the last NaN
    out = F.reshape(gather(cols, 3, arg), (n, c, *size))
    indices = F.reshape(gather(index, 3, arg), (n, c, *size))
    if input.ndim == dims + 1:
        out, indices = F.squeeze(out, 0), F.squeeze(indices, 0)
    return (out, indices) if return_indices else out


def fractional_max_pool2d_with_indices(input: Tensor, kernel_size: Any,  # noqa: A002
                                       output_size: Any = None, output_ratio: Any = None,
                                       return_indices: bool = False,
                                       _random_samples: Tensor | None = None) -> Any:
    return _fractional_max_pool(input, kernel_size, output_size, output_ratio, True,
                                _random_samples, 2)


def fractional_max_pool2d(input: Tensor, kernel_size: Any, output_size: Any = None,  # noqa: A002
                          output_ratio: Any = None, return_indices: bool = False,
                          _random_samples: Tensor | None = None) -> Any:
    return _fractional_max_pool(input, kernel_size, output_size, output_ratio,
                                return_indices, _random_samples, 2)


def fractional_max_pool3d_with_indices(input: Tensor, kernel_size: Any,  # noqa: A002
                                       output_size: Any = None, output_ratio: Any = None,
                                       return_indices: bool = False,
                                       _random_samples: Tensor | None = None) -> Any:
    return _fractional_max_pool(input, kernel_size, output_size, output_ratio, True,
                                _random_samples, 3)


def fractional_max_pool3d(input: Tensor, kernel_size: Any, output_size: Any = None,  # noqa: A002
                          output_ratio: Any = None, return_indices: bool = False,
                          _random_samples: Tensor | None = None) -> Any:
    return _fractional_max_pool(input, kernel_size, output_size, output_ratio,
                                return_indices, _random_samples, 3)


def _lp_pool(input: Tensor, norm_type: float, kernel_size: Any, stride: Any,  # noqa: A002
             ceil_mode: bool, dims: int) -> Tensor:
    """PyTorch's power-average pool: (sum of x^p over each window)^(1/p), from an average
    pool (inf: the max of |x|)."""
    k = _pair(kernel_size, "kernel_size", dims)
    pools = {1: (max_pool1d, avg_pool1d), 2: (max_pool2d, avg_pool2d),
             3: (max_pool3d, avg_pool3d)}[dims]
    if norm_type == math.inf:
        return pools[0](F.abs(input), k, stride, 0, 1, ceil_mode)
    if norm_type == -math.inf:
        return F.neg(pools[0](F.neg(F.abs(input)), k, stride, 0, 1, ceil_mode))
    out = pools[1](F.pow(input, norm_type), k, stride, 0, ceil_mode)
    # torch's sign(out) * relu(|out|): sign passes no gradient (detached, so an infinite
    # window's 0 * inf makes no NaN) and relu none where |out| <= 0 (a where, not a product
    # with 0; a NaN's passes, as its threshold_backward)
    magnitude = F.abs(out)
    out = F.mul(F.sign(out.detach()),
                F.where(F.le(magnitude, 0.0), magnitude.detach(), magnitude))
    return F.pow(F.mul(out, math.prod(k)), 1.0 / norm_type)


def lp_pool1d(input: Tensor, norm_type: float, kernel_size: Any, stride: Any = None,  # noqa: A002
              ceil_mode: bool = False) -> Tensor:
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 1)


def lp_pool2d(input: Tensor, norm_type: float, kernel_size: Any, stride: Any = None,  # noqa: A002
              ceil_mode: bool = False) -> Tensor:
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 2)


def lp_pool3d(input: Tensor, norm_type: float, kernel_size: Any, stride: Any = None,  # noqa: A002
              ceil_mode: bool = False) -> Tensor:
    return _lp_pool(input, norm_type, kernel_size, stride, ceil_mode, 3)


def _unpool_size(input: Tensor, k: tuple[int, ...], s: tuple[int, ...],  # noqa: A002
                 p: tuple[int, ...], output_size: Any) -> list[int]:
    """PyTorch's ``_unpool_output_size``."""
    n = len(k)
    default = [(input.shape[-n + i] - 1) * s[i] + k[i] - 2 * p[i] for i in range(n)]
    if output_size is None:
        return default
    size = [int(v) for v in output_size]
    if len(size) == n + 2:
        size = size[2:]
    if len(size) != n:
        raise ValueError(f"output_size should be a sequence containing {n} or {n + 2} "
                         f"elements, but it has a length of '{len(size)}'")
    for i in range(n):
        lo, hi = default[i] - s[i], default[i] + s[i]
        if not lo < size[i] < hi:
            raise ValueError(f'invalid output_size "{output_size}" (dim {i} must be between '
                             f'{lo} and {hi})')
    return size


def _check_unpool(input: Tensor, indices: Tensor, size: list[int],  # noqa: A002
                  stride: tuple[int, ...]) -> None:
    """PyTorch's max_unpooling{2,3}d checks, in its order, on the input as its kernel sees it
    (a 1-d unpool is a 2-d one of width 1)."""
    dims = len(size)
    if indices.dtype is not D.int64:
        raise RuntimeError("elements in indices should be type int64" + (
            f" but got: {D.scalar_type_name(indices.dtype)}" if dims == 2 else ""))
    if input.ndim not in (dims + 1, dims + 2):
        raise RuntimeError(f"Input to max_unpooling{dims}d should be a {dims + 1}d or "
                           f"{dims + 2}d Tensor, but got a tensor with {input.ndim} "
                           "dimensions.")
    if tuple(input.shape) != tuple(indices.shape):
        raise RuntimeError(f"Expected shape of indices to be same as that of the input tensor "
                           f"({list(input.shape)}) but got indices tensor with shape: "
                           f"{list(indices.shape)}")
    for i in range(1, input.ndim):
        if input.shape[i] <= 0:
            raise RuntimeError(f"max_unpooling{dims}d_forward_out_cpu(): Expected input to "
                               f"have non-zero size for non-batch dimensions, but got "
                               f"{list(input.shape)} with dimension {i} being empty.")
    if dims == 3 and min(stride) <= 0:
        raise RuntimeError(f"strides should be greater than zero, but got stride: "
                           f"{list(stride)}")
    if indices.numel():  # a primitive: a compiled step checks it too
        from .tensor_ops import flip

        volume = "x".join(str(v) for v in size)
        # PyTorch's kernel keeps the last invalid index it meets (in one thread's order;
        # threads race for it): the first of the indices reversed
        F.check_bounds(flip(F.reshape(indices, (-1,)), [0]), 0, math.prod(size),
                       "Found an invalid max index: {} (output volumes are of size "
                       + volume + ")", error="RuntimeError")


def _max_unpool(input: Tensor, indices: Tensor, kernel_size: Any, stride: Any,  # noqa: A002
                padding: Any, output_size: Any, dims: int) -> Tensor:
    """PyTorch's ``F.max_unpool{1,2,3}d``: each value written at its flat index (as the max
    pool returned it) in a zero output plane."""
    from ..creation import zeros
    from .tensor_ops import scatter

    k = _pair(kernel_size, "kernel_size", dims)
    s = k if stride is None else _pair(stride, "stride", dims)
    size = _unpool_size(input, k, s, _pair(padding, "padding", dims), output_size)
    if dims == 1:  # PyTorch unpools (..., L, 1) in 2-d
        _check_unpool(F.unsqueeze(input, -1), F.unsqueeze(indices, -1), [*size, 1], (*s, 1))
    else:
        _check_unpool(input, indices, size, s)
    lead = tuple(input.shape[:-dims])
    flat = (*lead, math.prod(input.shape[-dims:]))
    plane = zeros(*lead, math.prod(size), dtype=input.dtype, device=input.device)
    out = scatter(plane, -1, F.reshape(indices, flat), F.reshape(input, flat))
    return F.reshape(out, (*lead, *size))


def max_unpool1d(input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None,  # noqa: A002
                 padding: Any = 0, output_size: Any = None) -> Tensor:
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 1)


def max_unpool2d(input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None,  # noqa: A002
                 padding: Any = 0, output_size: Any = None) -> Tensor:
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 2)


def max_unpool3d(input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None,  # noqa: A002
                 padding: Any = 0, output_size: Any = None) -> Tensor:
    return _max_unpool(input, indices, kernel_size, stride, padding, output_size, 3)


# ------------------------------------------------------------------- batch norm, pad


def batch_norm(input: Tensor, running_mean: Tensor | None, running_var: Tensor | None,  # noqa: A002
               weight: Tensor | None = None, bias: Tensor | None = None,
               training: bool = False, momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """PyTorch's ``F.batch_norm``: its Python checks (one value per channel in training, a
    positive eps in training, a non-negative one otherwise), the op's parser (a momentum of
    None is refused), then the op (batch_norm_op)."""
    if training and input.ndim:  # _verify_batch_size
        if input.shape[0] * math.prod(input.shape[2:]) == 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input "
                             f"size {_torch_size(input)}")
    if training and eps <= 0.0:
        raise ValueError(f"batch_norm eps must be positive during training, but got {eps}")
    if eps < 0.0:
        raise ValueError(f"batch_norm eps must be non-negative, but got {eps}")
    if momentum is None or isinstance(momentum, (str, bytes)):
        raise TypeError(f"batch_norm(): argument 'momentum' (position 7) must be float, not "
                        f"{type(momentum).__name__}")
    return batch_norm_op(input, running_mean, running_var, weight, bias, training, momentum, eps)


@named_backward("NativeBatchNormBackward0")
def batch_norm_op(input: Tensor, running_mean: Tensor | None,  # noqa: A002
                  running_var: Tensor | None, weight: Tensor | None = None,
                  bias: Tensor | None = None, training: bool = False,
                  momentum: float | None = 0.1, eps: float = 1e-5) -> Tensor:
    """PyTorch's batch_norm op over dim 1 of (N, C, ...): in training, batch statistics
    normalize and (when given) the running ones are updated in place, with the unbiased
    variance; otherwise the running statistics normalize."""
    from ..autograd.grad_mode import no_grad

    if input.ndim < 2:  # PyTorch reads size(1): a statistic given is checked against none
        for name, stat in (("running_mean", running_mean), ("running_var", running_var)):
            if stat is not None and stat.numel():
                raise RuntimeError(f"{name} should contain 0 elements not {stat.numel()}")
        raise IndexError(f"Dimension out of range (expected to be in range of [{-input.ndim}, "
                         f"{input.ndim - 1}], but got 1)")
    c = input.shape[1]
    for name, stat in (("running_mean", running_mean), ("running_var", running_var)):
        if stat is not None and stat.numel() != c:
            raise RuntimeError(f"{name} should contain {c} elements not {stat.numel()}")
    if input.numel():  # (an empty input returns early, unchecked)
        for name, param in (("weight", weight), ("bias", bias)):
            if param is not None and param.numel() != c:
                raise RuntimeError(f"{name} should contain {c} elements not {param.numel()}")
    if not input.dtype.is_floating_point:
        _integer_pool(input, "batch_norm", int64=False)
    if input.numel() == 0:  # at::batch_norm's early return: no statistic read or updated
        out = F.clone(input)
        if c == 0 and (weight is not None or bias is not None):
            raise IndexError("select(): index 0 out of range for tensor of size [0] at "
                             "dimension 0")
        if weight is not None:
            out = F.mul(out, weight[0])
        if bias is not None:
            out = F.add(out, bias[0])
        return out
    half = input.dtype  # float32 parameters of a half input: computed in float32, as torch
    if check_norm_dtypes(input, weight, bias, running_mean, running_var):
        input = F.cast(input, D.float32)  # noqa: A001
    from ..autograd.grad_mode import is_grad_enabled

    one_value = training and c and input.numel() // c == 1  # F.batch_norm's check comes first
    for name, stat in (("running_mean", running_mean), ("running_var", running_var)):
        if stat is not None and stat.requires_grad and is_grad_enabled() and not one_value:
            raise RuntimeError(f"The function 'native_batch_norm' is not differentiable with "
                               f"respect to argument '{name}'. This input cannot have "
                               "requires_grad True.")
    axes = (0, *range(2, input.ndim))
    shape = (1, c) + (1,) * (input.ndim - 2)
    if training:
        count = input.numel() // c if c else 0
        if count == 1:  # none at all is PyTorch's empty result
            raise ValueError(f"Expected more than 1 value per channel when training, got input "
                             f"size {_torch_size(input)}")
        if (running_mean is None) != (running_var is None):  # one would go un-updated
            raise ValueError("running_mean and running_var must either both be None or "
                             "neither be None")
        mean = F.mean(input, axes, keepdim=True)
        centered = F.sub(input, mean)
        var = F.mean(F.mul(centered, centered), axes, keepdim=True)
        if running_mean is not None and running_var is not None:
            m = 0.1 if momentum is None else momentum
            with no_grad():
                unbiased = F.mul(F.reshape(var.detach(), (c,)), count / (count - 1))
                running_mean.mul_(1 - m).add_(F.mul(F.reshape(mean.detach(), (c,)), m))
                running_var.mul_(1 - m).add_(F.mul(unbiased, m))
        out = F.mul(centered, F.div(1.0, F.sqrt(F.add(var, eps))))
    else:
        for name, stat in (("running_mean", running_mean), ("running_var", running_var)):
            if stat is None:
                raise RuntimeError(f"{name} must be defined in evaluation mode")
        inv = F.div(1.0, F.sqrt(F.add(F.reshape(running_var, shape), eps)))
        out = F.mul(F.sub(input, F.reshape(running_mean, shape)), inv)
    if weight is not None:
        out = F.mul(out, F.reshape(weight, shape))
    if bias is not None:
        out = F.add(out, F.reshape(bias, shape))
    return out if out.dtype is half else F.cast(out, half)


def check_norm_dtypes(input: Tensor, *parameters: Tensor | None) -> bool:  # noqa: A002
    """PyTorch's CPU batch/layer/group norm dtypes: the parameters and statistics (those given) share the
    input's dtype, or are all float32 under a half (bfloat16, float16) input (True: mixed);
    otherwise its error, "mixed dtype" where the first of them is not the input's dtype."""
    given = [p for p in parameters if p is not None]
    if not given or given[0].dtype is input.dtype:
        for p in given:
            if p.dtype is not input.dtype:
                raise RuntimeError(f"expected scalar type {D.scalar_type_name(input.dtype)} but "
                                   f"found {D.scalar_type_name(p.dtype)}")
        return False
    if any(p.dtype is not D.float32 for p in given):
        raise RuntimeError("mixed dtype (CPU): expect parameter to have scalar type of Float")
    if input.dtype not in (D.bfloat16, D.float16):
        raise RuntimeError("mixed dtype (CPU): all inputs must share same datatype.")
    return True


def _torch_size(t: Tensor) -> str:
    return f"torch.Size({list(t.shape)})"


def pad(input: Tensor, pad: Sequence[int], mode: str = "constant",  # noqa: A002
        value: float | None = None) -> Tensor:
    """PyTorch's ``F.pad``: ``pad`` gives (before, after) pairs from the last dim backwards;
    negative amounts crop. Modes constant, reflect, replicate and circular, with at::pad's
    checks in its order (those of constant_pad_nd, reflection/replication_padNd and
    _pad_circular)."""
    int_list_argument("pad", "pad", 2, pad, single=False)
    if value is not None and (isinstance(value, (str, bytes)) or not (
            isinstance(value, (int, float, np.number)) or hasattr(value, "item"))
            or isinstance(value, (complex, np.complexfloating))):
        raise TypeError(f"pad(): argument 'value' (position 4) must be float, not "
                        f"{type(value).__name__}")
    if len(pad) % 2:
        raise RuntimeError("Padding length must be divisible by 2")
    if len(pad) // 2 > input.ndim:
        raise RuntimeError("Padding length should be less than or equal to two times the "
                           "input dimension but got padding length "
                           f"{len(pad)} and input of dimension {input.ndim}")
    if mode not in ("constant", "reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    pairs = [(int(pad[2 * i]), int(pad[2 * i + 1])) for i in range(len(pad) // 2)]
    if mode == "constant":
        out = _pad_constant(input, pairs, value)
    else:
        if value not in (None, 0, 0.0):
            raise RuntimeError(f"Padding mode \"{mode}\" doesn't take in value argument")
        _check_pad_mode(input, len(pad), mode)
        out = _pad_indexed(input, pairs, mode)
    out = out if out is not input else F.clone(input)
    name = _PAD_NODES.get(mode)
    return out if name is None else named(out, name.format(len(pad) // 2))


def _pad_constant(input: Tensor, pairs: list[tuple[int, int]],  # noqa: A002
                  value: float | None) -> Tensor:
    """constant_pad_nd: negative amounts narrow the input (outermost padded dim first, as
    at::narrow, with its error), positive ones concatenate blocks of ``value``."""
    from ..creation import full

    out = input
    for i in reversed(range(len(pairs))):  # the outermost padded dim first
        dim = input.ndim - 1 - i
        lo, hi = pairs[i]
        for amount, start in ((lo, True), (hi, False)):
            if amount < 0:
                n = out.shape[dim] + amount
                if n < 0:
                    raise RuntimeError("narrow(): length must be non-negative.")
                key = (slice(None),) * dim + ((slice(-amount, None) if start else slice(0, n)),)
                out = out[key]
    for i, (lo, hi) in enumerate(pairs):
        dim = input.ndim - 1 - i
        if lo <= 0 and hi <= 0:
            continue
        fill = 0.0 if value is None else value
        if out.shape == (0,):  # cat skips a 1-D empty tensor, and with it the gradient's edge
            n = max(lo, 0) + max(hi, 0)
            block = full((n,), fill, dtype=out.dtype, device=out.device)
            out = F.index_put(block, out, key=(slice(max(lo, 0), max(lo, 0)),))
            continue
        parts = []
        for amount in (max(lo, 0), max(hi, 0)):
            shape = list(out.shape)
            shape[dim] = amount
            parts.append(full(tuple(shape), fill, dtype=out.dtype, device=out.device))
        out = F.cat([parts[0], out, parts[1]], dim)
    return out


def _check_pad_mode(input: Tensor, length: int, mode: str) -> None:  # noqa: A002
    """at::pad's dispatch of a reflect/replicate/circular pad by the number of padded dims,
    then check_valid_input of the reflection and replication kernels."""
    k = length // 2
    if k not in (1, 2, 3) or input.ndim not in (k + 1, k + 2):
        raise NotImplementedError(
            f"Padding size {length} is not supported for {input.ndim}D input tensor.\n"
            "Supported combinations for non-constant padding:\n"
            "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
            "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
            "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)")
    if mode == "circular":
        return
    if input.dtype is D.bool_:
        kernel = "reflection" if mode == "reflect" else "replication"
        raise NotImplementedError(f"\"{kernel}_pad{k}d\" not implemented for 'Bool'")
    sizes = input.shape[1:] if input.ndim == k + 2 else input.shape
    if 0 in sizes:
        raise RuntimeError(f"Expected {k + 1}D or {k + 2}D (batch mode) tensor with possibly 0 "
                           "batch size and other non-zero dimensions for input, but got: "
                           f"{list(input.shape)}")


def _pad_sizes_error(mode: str, ins: list[int], outs: list[int]) -> str:
    """The "is too small" text of reflection/replication_padNd (sizes outermost first)."""
    if len(ins) == 1:
        return f"input (W: {ins[0]}) is too small. Calculated output W: {outs[0]}"
    if len(ins) == 2:
        gap = " " if mode == "replicate" else ""
        return (f"input (H: {ins[0]}, W: {ins[1]}{gap}) is too small. Calculated output "
                f"H: {outs[0]} W: {outs[1]}")
    return (f"input (D: {ins[0]} H: {ins[1]}, W: {ins[2]}) is too small. Calculated output "
            f"D: {outs[0]} H: {outs[1]} W: {outs[2]}")


def _check_pad_sizes(input: Tensor, pairs: list[tuple[int, int]], mode: str) -> None:  # noqa: A002
    """The size checks of reflection/replication_padNd and _pad_circular, in their order."""
    k = len(pairs)
    dims = [input.ndim - 1 - i for i in range(k)]  # innermost first, as pad lists them
    if mode == "circular":
        for i in reversed(range(k)):
            (lo, hi), n = pairs[i], input.shape[dims[i]]
            if lo > n or hi > n:
                raise RuntimeError("Padding value causes wrapping around more than once.")
            if n + lo + hi < 0:
                raise RuntimeError("Negative padding value is resulting in an empty dimension")
        return
    if mode == "reflect":
        for i, ((lo, hi), dim) in enumerate(zip(pairs, dims)):
            if lo >= input.shape[dim] or hi >= input.shape[dim]:
                raise RuntimeError(
                    f"Argument #{4 + 2 * i}: Padding size should be less than the "
                    f"corresponding input dimension, but got: padding ({lo}, {hi}) at "
                    f"dimension {dim} of input {list(input.shape)}")
    ins = [input.shape[d] for d in reversed(dims)]
    outs = [n + lo + hi for n, (lo, hi) in zip(ins, reversed(pairs))]
    if max(outs) < 1:
        raise RuntimeError(_pad_sizes_error(mode, ins, outs))
    if min(outs) < 0:
        if mode == "reflect" and k == 2:
            raise RuntimeError("numel: integer multiplication overflow")
        shape = list(input.shape[:input.ndim - k]) + outs
        first = next(n for n in outs if n < 0)
        raise RuntimeError(f"Trying to create tensor with negative dimension {first}: {shape}")


def _pad_indexed(input: Tensor, pairs: list[tuple[int, int]], mode: str) -> Tensor:  # noqa: A002
    """A reflect, replicate or circular pad: per padded dim, output j reads the input at
    m = j - before, reflected or clamped into [0, n), or (circular) wrapped into what is left
    after the negative amounts crop; an index_select each."""
    from ..creation import tensor
    from .tensor_ops import index_select

    _check_pad_sizes(input, pairs, mode)
    out = input
    for i, (lo, hi) in enumerate(pairs):
        dim = input.ndim - 1 - i
        n = input.shape[dim]
        if not lo and not hi:
            continue
        m = np.arange(n + lo + hi) - lo
        if mode == "reflect":
            m = np.abs(m)
            m = np.where(m > n - 1, 2 * (n - 1) - m, m)
        elif mode == "replicate":
            m = np.clip(m, 0, n - 1)
        else:  # _pad_circular crops first and wraps within what is left
            a, b = max(-lo, 0), max(-hi, 0)
            if max(lo, 0) > n - a - b or max(hi, 0) > n - a - b:  # torch reads unset memory
                raise RuntimeError("Padding value causes wrapping around more than once.")
            m = np.mod(m + lo - max(lo, 0), max(n - a - b, 1)) + a
        out = index_select(out, dim, tensor(m.astype(np.int64), device=out.device))
    return out


# PyTorch's backward node of F.pad by mode (of the number of padded dims)
_PAD_NODES = {"constant": "ConstantPadNdBackward0", "reflect": "ReflectionPad{}DBackward0",
              "replicate": "ReplicationPad{}DBackward0"}


# ------------------------------------------------------------- transposed convolution


def _conv_transpose(x: Tensor, weight: Tensor, bias: Tensor | None, s: Pair, p: Pair,  # noqa: C901
                    op: Pair, groups: int, d: Pair) -> Tensor:
    """The gradient of a convolution with respect to its input: one (batched) GEMM of the
    weight's transpose against the input, (G, C_out/G*kh*kw, C_in/G) @ (G, C_in/G, N*H*W),
    whose columns ``fold`` (col2im) sums into the output; both are registry ops, so the
    gradients and a compiled plan come for free, as for ``_conv``."""
    n, c, h, w = x.shape
    ci, og, kh, kw = weight.shape
    o = og * groups
    size = [(i - 1) * si - 2 * pi + di * (k - 1) + oi + 1
            for i, si, pi, di, k, oi in zip((h, w), s, p, d, (kh, kw), op)]
    if x.dtype is not weight.dtype:
        raise RuntimeError(f"expected scalar type {D.scalar_type_name(x.dtype)} but found "
                           f"{D.scalar_type_name(weight.dtype)}")
    ig, kk, length = ci // groups, kh * kw, h * w
    if groups == 1:  # (O*kh*kw, C) @ (C, N*L): one GEMM
        rhs = F.reshape(F.permute(F.reshape(x, (n, c, length)), 1, 0, 2), (c, n * length))
        cols = F.matmul(F.transpose(F.reshape(weight, (c, o * kk)), 0, 1), rhs)
    else:  # (G, O/G*kh*kw, C/G) @ (G, C/G, N*L): one batched GEMM
        rhs = F.reshape(F.permute(F.reshape(x, (n, groups, ig, length)), 1, 2, 0, 3),
                        (groups, ig, n * length))
        cols = F.matmul(F.transpose(F.reshape(weight, (groups, ig, og * kk)), 1, 2), rhs)
    cols = F.permute(F.reshape(cols, (o * kk, n, length)), 1, 0, 2)  # (N, O*kh*kw, L)
    # fold recovers H windows from the output size only when output_padding < stride; a
    # larger one (allowed below the dilation) takes it out of the padding at the end (those
    # outputs are the full transposed convolution's, cropped no more) and pads with zeros
    # what is past the full one
    direct = all(oi < si for oi, si in zip(op, s))
    if direct:
        out = fold_raw(cols, tuple(size), (kh, kw), d, _sym(p), s)
    else:
        end = [max(pi - oi, 0) for pi, oi in zip(p, op)]
        zeros = [max(oi - pi, 0) for pi, oi in zip(p, op)]
        folded = tuple(si - zi for si, zi in zip(size, zeros))
        out = fold_raw(cols, folded, (kh, kw), d, (p[0], end[0], p[1], end[1]), s)
        if any(zeros):
            out = pad(out, (0, zeros[1], 0, zeros[0]))
    if bias is not None:
        out = F.add(out, F.reshape(bias, (1, o, 1, 1)))
    return out


@autocast_lower
@named_backward("ConvolutionBackward0")
def conv_transpose2d(input: Tensor, weight: Tensor, bias: Tensor | None = None,  # noqa: A002
                     stride: Any = 1, padding: Any = 0, output_padding: Any = 0, groups: int = 1,
                     dilation: Any = 1) -> Tensor:
    """PyTorch's ``F.conv_transpose2d`` on (N, C, H, W) or unbatched (C, H, W) input; the
    weight is (C_in, C_out/groups, kh, kw)."""
    x = _batched(input, weight, 2, "conv_transpose2d", stride)
    s, p = _pair(stride, "stride"), _pair(padding, "padding")
    op, d = _pair(output_padding, "output_padding"), _pair(dilation, "dilation")
    _check_conv(x, weight, bias, s, [(pi, pi) for pi in p], d, groups, op)
    _refuse_bool_conv(x, d, 2, transposed=True)
    out = _conv_transpose(x, weight, bias, s, p, op, groups, d)
    return out if input.ndim == 4 else F.squeeze(out, 0)


@autocast_lower
@named_backward("ConvolutionBackward0")
def conv_transpose1d(input: Tensor, weight: Tensor, bias: Tensor | None = None,  # noqa: A002
                     stride: Any = 1, padding: Any = 0, output_padding: Any = 0, groups: int = 1,
                     dilation: Any = 1) -> Tensor:
    """PyTorch's ``F.conv_transpose1d`` on (N, C, L) or (C, L): a conv_transpose2d of height
    1."""
    x = _batched(input, weight, 1, "conv_transpose1d", stride)
    s, p = _pair(stride, "stride", 1), _pair(padding, "padding", 1)
    op, d = _pair(output_padding, "output_padding", 1), _pair(dilation, "dilation", 1)
    _check_conv(x, weight, bias, s, [(p[0], p[0])], d, groups, op)
    _refuse_bool_conv(x, d, 1, transposed=True)
    out = _conv_transpose(F.unsqueeze(x, 2), F.unsqueeze(weight, 2), bias, (1, *s), (0, *p),
                          (0, *op), groups, (1, *d))
    out = F.squeeze(out, 2)
    return out if input.ndim == 3 else F.squeeze(out, 0)


@autocast_lower
@named_backward("ConvolutionBackward0")
def conv_transpose3d(input: Tensor, weight: Tensor, bias: Tensor | None = None,  # noqa: A002
                     stride: Any = 1, padding: Any = 0, output_padding: Any = 0, groups: int = 1,
                     dilation: Any = 1) -> Tensor:
    """PyTorch's ``F.conv_transpose3d`` on (N, C, D, H, W) or (C, D, H, W): for each depth tap
    of the (C_in, C_out/groups, kd, kh, kw) weight, a conv_transpose2d of every depth plane,
    spread along the output depth (input depth i lands at i*stride + tap*dilation, less the
    padding) and summed."""
    x = _batched(input, weight, 3, "conv_transpose3d", stride)
    s, p = _pair(stride, "stride", 3), _pair(padding, "padding", 3)
    op, d = _pair(output_padding, "output_padding", 3), _pair(dilation, "dilation", 3)
    _check_conv(x, weight, bias, s, [(pi, pi) for pi in p], d, groups, op)
    _refuse_bool_conv(x, d, 3, transposed=True)
    n, c, depth, h, w = x.shape
    d_out = (depth - 1) * s[0] - 2 * p[0] + d[0] * (weight.shape[2] - 1) + op[0] + 1
    planes = F.reshape(F.permute(x, 0, 2, 1, 3, 4), (n * depth, c, h, w))
    spread = (depth - 1) * s[0] + 1  # the input's depths, stride - 1 zero planes between
    out = None
    for tap in range(weight.shape[2]):
        y = _conv_transpose(planes, weight[:, :, tap], None, s[1:], p[1:], op[1:], groups,
                            d[1:])
        y = F.reshape(y, (n, depth, 1, *y.shape[1:]))
        if s[0] > 1:
            y = pad(y, (0, 0, 0, 0, 0, 0, 0, s[0] - 1))  # zero planes after each depth
        y = F.reshape(y, (n, depth * s[0], *y.shape[3:]))[:, :spread]
        start = tap * d[0] - p[0]  # where input depth 0 lands in the output
        y = F.permute(y, 0, 2, 1, 3, 4)
        lo = max(0, -start)  # the planes before the output's first (cropped by padding)
        first = min(start + lo, d_out)
        keep = max(0, min(spread - lo, d_out - first))
        y = pad(y[:, :, lo:lo + keep], (0, 0, 0, 0, first, d_out - first - keep))
        out = y if out is None else F.add(out, y)
    assert out is not None
    if bias is not None:
        out = F.add(out, F.reshape(bias, (1, -1, 1, 1, 1)))
    return out if input.ndim == 5 else F.squeeze(out, 0)


# ------------------------------------------------------------------------ instance norm


def instance_norm(input: Tensor, running_mean: Tensor | None = None,  # noqa: A002
                  running_var: Tensor | None = None, weight: Tensor | None = None,
                  bias: Tensor | None = None, use_input_stats: bool = True,
                  momentum: float = 0.1, eps: float = 1e-5) -> Tensor:
    """PyTorch's ``F.instance_norm`` over the spatial dims of (N, C, ...), each (n, c) with its
    own statistics. PyTorch runs a batch norm of (1, N*C, ...) with the running statistics
    repeated N times, then keeps their mean over N: the update below is that mean, written
    out (the unbiased variance of each instance, as batch norm's)."""
    from ..autograd.grad_mode import no_grad

    if input.ndim < 3:
        raise ValueError(f"expected 3D or more input (got {input.ndim}D input)")
    c = input.shape[1]
    # PyTorch's batch norm of N*C channels, each of these repeated N times: its checks
    for name, t in (("running_mean", running_mean), ("running_var", running_var),
                    ("weight", weight), ("bias", bias)):
        if t is not None and t.numel() != c:
            n = input.shape[0]
            raise RuntimeError(f"{name} should contain {n * c} elements not {t.numel() * n}")
    if not input.dtype.is_floating_point:  # PyTorch runs a batch norm
        _integer_pool(input, "batch_norm", int64=False)
    # batch norm's dtype checks of the weight and bias (not the running statistics, of any
    # float dtype): float32 ones of a half input taken; the result has the input's dtype
    half = input.dtype
    if check_norm_dtypes(input, weight, bias):
        input = F.cast(input, D.float32)  # noqa: A001
    axes = tuple(range(2, input.ndim))
    shape = (1, c) + (1,) * (input.ndim - 2)
    if use_input_stats:
        count = math.prod(input.shape[2:])
        if count == 1:
            raise ValueError(f"Expected more than 1 spatial element when training, got input "
                             f"size {_torch_size(input)}")
        mean = F.mean(input, axes, keepdim=True)
        centered = F.sub(input, mean)
        var = F.mean(F.mul(centered, centered), axes, keepdim=True)
        if running_mean is not None and running_var is not None:
            with no_grad():
                n = input.shape[0]
                batch_mean = F.mean(F.reshape(mean.detach(), (n, c)), 0)
                unbiased = F.mul(F.mean(F.reshape(var.detach(), (n, c)), 0),
                                 count / (count - 1))
                running_mean.mul_(1 - momentum).add_(F.mul(batch_mean, momentum))
                running_var.mul_(1 - momentum).add_(F.mul(unbiased, momentum))
        out = F.mul(centered, F.div(1.0, F.sqrt(F.add(var, eps))))
    else:
        if running_mean is None or running_var is None:
            raise RuntimeError("Expected running_mean and running_var to be defined when "
                               "use_input_stats is false")
        inv = F.div(1.0, F.sqrt(F.add(F.reshape(running_var, shape), eps)))
        out = F.mul(F.sub(input, F.reshape(running_mean, shape)), inv)
    if weight is not None:
        out = F.mul(out, F.reshape(weight, shape))
    if bias is not None:
        out = F.add(out, F.reshape(bias, shape))
    return out if out.dtype is half else F.cast(out, half)
