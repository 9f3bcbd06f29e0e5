"""Shape rules PyTorch states in its error texts: dimension indices (its ``maybe_wrap_dim``),
broadcasting (its ``infer_size``), expansion and the operand shapes of a matrix product. Each
``*_error`` gives PyTorch's message, or None where the shapes are fine; ``Size`` is the shape
a tensor reports (PyTorch's ``torch.Size``)."""

from __future__ import annotations

import math
import operator
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from .._dtype import DType, scalar_type_name, type_meta_name


class _Omitted:
    """The default of a parameter PyTorch has no default for in the overload that takes it
    (``median(input)`` and ``median(input, int dim)``): omitted is the other overload, and an
    explicit None its TypeError. Shown as None."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "None"


OMITTED = _Omitted()


class ShapeError(RuntimeError, ValueError):
    """Operand shapes that do not fit, with PyTorch's text: a RuntimeError, as PyTorch raises,
    and a ValueError, as this runtime's shape errors are (numpy's and the shape rules')."""


class DTypeError(ShapeError):
    """Operand dtypes that do not fit (a matmul of float and double), with PyTorch's text: a
    RuntimeError, as PyTorch raises; a ShapeError, so that the dispatcher passes it on
    unchanged and the planner, which skips a call whose shape rule raises a ValueError, skips
    it."""


class Size(tuple):
    """A tensor's shape: a tuple of ints that knows its ``numel()`` and prints as PyTorch's,
    ``torch.Size([2, 3])``, so that a message formatting a shape reads as PyTorch's does
    (load_state_dict's size mismatch). Slicing and concatenating give plain tuples
    (PyTorch's give a Size): a Python ``__getitem__`` would make every ``shape[i]`` five
    times slower, and shapes passed on as op attributes stay plain tuples, which plans store
    and key."""

    __slots__ = ()

    def numel(self) -> int:
        """The number of elements of a tensor of this shape (1 for ``Size([])``)."""
        return math.prod(self)

    def __repr__(self) -> str:
        return f"torch.Size({list(self)})"

    def __reduce__(self) -> tuple[Any, tuple[tuple[int, ...]]]:
        return Size, (tuple(self),)


def dim_error(dim: int, ndim: int) -> IndexError:
    """PyTorch's error for ``dim`` outside the ``ndim`` dimensions (a 0-d tensor takes -1
    and 0, as one of one dimension)."""
    bound = max(ndim, 1)
    return IndexError(f"Dimension out of range (expected to be in range of [{-bound}, "
                      f"{bound - 1}], but got {dim})")


def wrap_dim(dim: Any, ndim: int) -> int:
    """``dim`` as an index in [0, ndim) (PyTorch's ``maybe_wrap_dim``): a negative one counts
    from the end; one out of range is PyTorch's IndexError. A 0-d tensor's dims -1 and 0 are
    0. Pass ``ndim + 1`` where a new dimension may be placed (unsqueeze, stack)."""
    if type(dim) is int:  # the common case first: every transpose asks twice
        if 0 <= dim < ndim:
            return dim
        if -ndim <= dim < 0:
            return dim + ndim
    d = operator.index(dim)
    bound = max(ndim, 1)
    if not -bound <= d < bound:
        if not -2**63 <= d < 2**63:  # PyTorch's argument parser reads a dim as an int64
            raise ValueError("Overflow when unpacking long long")
        raise dim_error(d, ndim)
    return d + bound if d < 0 else d


def int_dim(name: str, dim: Any, ndim: int, position: str = "") -> int:
    """A ``dim`` PyTorch's argument parser takes as an int only: its TypeError for a tuple
    or list (``position``: the parser's " (position 1)" where it names one), else wrapped
    (``wrap_dim``: a 0-d tensor's dims -1 and 0 are 0, any other PyTorch's IndexError)."""
    if isinstance(dim, (tuple, list)):
        raise TypeError(f"{name}(): argument 'dim'{position} must be int, not "
                        f"{type(dim).__name__}")
    return wrap_dim(dim, ndim)


def int_argument(name: str, argument: str, position: int, value: Any) -> int:
    """``value`` as an int (anything with ``__index__``), else PyTorch's argument parser's
    TypeError for an int argument (a str, a float, ...)."""
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError(f"{name}(): argument '{argument}' (position {position}) must be int, "
                        f"not {type(value).__name__}") from None


def wrap_dims(dims: Iterable[Any], ndim: int) -> tuple[int, ...]:
    """Each of ``dims`` wrapped (``wrap_dim``), in the order given; a dim named twice (after
    wrapping: 0 and -2 of a matrix) is PyTorch's RuntimeError."""
    out: list[int] = []
    for dim in dims:
        d = wrap_dim(dim, ndim)
        if d in out:
            raise RuntimeError(f"dim {d} appears multiple times in the list of dims")
        out.append(d)
    return tuple(out)


def expand_error(shape: Sequence[int], target: Sequence[int], tensor_type: str = "FloatTensor"
                 ) -> str | None:
    """PyTorch's message where ``shape`` does not expand to ``target`` (``-1`` in target
    keeps a size; a new leading dimension cannot be -1), or None where it does; PyTorch names
    the tensor's type (``tensor_type``: "FloatTensor", "LongTensor", ...) in one of them."""
    if len(target) < len(shape):
        return (f"expand(torch.{tensor_type}{{{list(shape)}}}, size={list(target)}): the number "
                f"of sizes provided ({len(target)}) must be greater or equal to the number of "
                f"dimensions in the tensor ({len(shape)})")
    lead = len(target) - len(shape)
    for i in range(len(target) - 1, -1, -1):
        t = target[i]
        if i < lead:
            if t < 0:
                return (f"The expanded size of the tensor ({t}) isn't allowed in a leading, "
                        f"non-existing dimension {i}")
            continue
        s = shape[i - lead]
        if t != -1 and s != t and s != 1:
            return (f"The expanded size of the tensor ({t}) must match the existing size ({s}) "
                    f"at non-singleton dimension {i}.  Target sizes: {list(target)}.  Tensor "
                    f"sizes: {list(shape)}")
    return None


def broadcast_error(a: Sequence[int], b: Sequence[int]) -> str | None:
    """PyTorch's message for shapes a and b that do not broadcast: the first mismatch from the
    right, as its infer_size finds it."""
    n = max(len(a), len(b))
    for dim in range(n - 1, -1, -1):
        i, j = dim - (n - len(a)), dim - (n - len(b))
        sa = a[i] if i >= 0 else 1
        sb = b[j] if j >= 0 else 1
        if sa != sb and sa != 1 and sb != 1:
            return (f"The size of tensor a ({sa}) must match the size of tensor b ({sb}) at "
                    f"non-singleton dimension {dim}")
    return None


def broadcast_shapes(*shapes: Sequence[int]) -> tuple[int, ...]:
    """The shape ``shapes`` broadcast to, folded pairwise left to right as PyTorch's
    infer_size; a ShapeError with its text where two do not broadcast."""
    out: tuple[int, ...] = ()
    for shape in shapes:  # one pass a pair (a capture asks this of most ops it records)
        shape = tuple(shape)
        if shape == out or not shape:
            continue
        if not out:
            out = shape
            continue
        n = max(len(out), len(shape))
        folded = []
        for x, y in zip((1,) * (n - len(out)) + out, (1,) * (n - len(shape)) + shape):
            if x == y or y == 1:
                folded.append(x)
            elif x == 1:
                folded.append(y)
            else:
                raise ShapeError(broadcast_error(out, shape))
        out = tuple(folded)
    return out


def matmul_dtype_error(sa: Sequence[int], sb: Sequence[int], a: DType, b: DType) -> str | None:
    """PyTorch's message for ``a @ b`` (shapes sa and sb, each at least 1-D) of different
    dtypes, by the kernel its matmul reaches: dot, addmv (a's leading axes folded into
    rows), mm (b 2-D) or bmm."""
    if a is b:
        return None
    if len(sa) == 1 and len(sb) == 1:
        return (f"dot : expected both vectors to have same dtype, but found "
                f"{scalar_type_name(a)} and {scalar_type_name(b)}")
    if len(sb) == 1:
        return (f"addmv input tensors must have the same dtype, but got {scalar_type_name(b)}, "
                f"{scalar_type_name(a)}, and {scalar_type_name(b)}")
    if len(sb) == 2:
        return (f"expected m1 and m2 to have the same dtype, but got: {type_meta_name(a)} != "
                f"{type_meta_name(b)}")
    return f"expected scalar type {scalar_type_name(a)} but found {scalar_type_name(b)}"


def matmul_error(sa: Sequence[int], sb: Sequence[int]) -> str | None:
    """PyTorch's message for ``a @ b`` of shapes sa and sb (each at least 1-D) whose sizes do
    not fit, by the path its matmul takes: a dot product, a matrix-vector product (a's leading
    axes folded into rows), a matrix product (a's leading axes folded where b is 2-D), or a
    batched product over the broadcast leading axes."""
    if len(sa) == 1 and len(sb) == 1:
        if sa[0] != sb[0]:
            return (f"inconsistent tensor size, expected tensor [{sa[0]}] and src [{sb[0]}] "
                    f"to have the same number of elements, but got {sa[0]} and {sb[0]} "
                    f"elements respectively")
        return None
    if len(sb) == 1:
        if sa[-1] != sb[0]:
            rows = math.prod(sa[:-1])
            return f"size mismatch, got input ({rows}), mat ({rows}x{sa[-1]}), vec ({sb[0]})"
        return None
    if len(sb) == 2:
        if sa[-1] != sb[0]:
            rows = math.prod(sa[:-1])
            return (f"mat1 and mat2 shapes cannot be multiplied ({rows}x{sa[-1]} and "
                    f"{sb[0]}x{sb[1]})")
        return None
    batch_a, batch_b = tuple(sa[:-2]), tuple(sb[:-2])
    err = broadcast_error(batch_a, batch_b)
    if err is not None:
        return err
    if sa[-1] != sb[-2]:
        size = math.prod(broadcast_shapes(batch_a, batch_b))
        return (f"Expected size for first two dimensions of batch2 tensor to be: "
                f"[{size}, {sa[-1]}] but got: [{size}, {sb[-2]}].")
    return None


def parses_as_int(v: Any) -> bool:
    """Whether PyTorch's argument parser takes ``v`` as an int: an int (not a bool), a numpy
    integer, or a one-element integer tensor."""
    if isinstance(v, bool):
        return False
    if isinstance(v, (int, np.integer)):
        return True
    dtype = getattr(v, "dtype", None)
    return hasattr(v, "numel") and getattr(dtype, "is_floating_point", True) is False and \
        getattr(dtype, "is_complex", False) is False and getattr(dtype, "name", "") != "bool" \
        and v.numel() == 1


def int_list_argument(op: str, what: str, position: int, value: Any, single: bool) -> None:
    """PyTorch's argument parser for an int list argument of ``op`` (``single``: one int
    stands for the list, as ``int[1] output_size``): its TypeError for any other value (None,
    a float, a str, a tensor) or an element that is no int (a float, a bool)."""
    if single and parses_as_int(value):
        return
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        raise TypeError(f"{op}(): argument '{what}' (position {position}) must be tuple of "
                        f"ints, not {type(value).__name__}")
    # the parser checks the first element's type, then unpacks the rest (a bool taken there)
    if len(value) and not parses_as_int(value[0]):
        raise TypeError(f"{op}(): argument '{what}' (position {position}) must be tuple of "
                        f"ints, but found element of type {type(value[0]).__name__} at pos 0")
    for i, v in enumerate(value[1:], 2):
        if not (isinstance(v, bool) or parses_as_int(v)):
            raise TypeError(f"{op}(): argument '{what}' failed to unpack the object at pos {i} "
                            f"with error \"type must be tuple of ints,but got "
                            f"{type(v).__name__}\"")
