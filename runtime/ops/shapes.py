"""Shape rules PyTorch states in its error texts: broadcasting (its ``infer_size``) and the
operand shapes of a matrix product. Each ``*_error`` gives PyTorch's message, or None where
the shapes are fine."""

from __future__ import annotations

import math
from collections.abc import Sequence


class ShapeError(RuntimeError, ValueError):
    """Operand shapes that do not fit, with PyTorch's text: a RuntimeError, as PyTorch raises,
    and a ValueError, as this runtime's shape errors are (numpy's and the shape rules')."""


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
    for shape in shapes:
        err = broadcast_error(out, shape)
        if err is not None:
            raise ShapeError(err)
        n = max(len(out), len(shape))
        a, b = (1,) * (n - len(out)) + out, (1,) * (n - len(shape)) + tuple(shape)
        out = tuple(y if x == 1 else x for x, y in zip(a, b))
    return out


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
