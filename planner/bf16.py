"""bfloat16 steps of a plan, computed as eager mode computes them.

Eager mode runs a primitive with a bfloat16 operand through ``runtime.ops.dispatch``'s
``_bf16_impl``: the operands widened to float32, the impl run in float32, a bfloat16 result
rounded once (PyTorch's CPU kernels; numpy's sums over ml_dtypes' bfloat16 would round at
every step). A plan's step that is no kernel runs the same wrapper (``eager_impl``), never the
primitive's impl or fast path on the bfloat16 arrays themselves; its matrix products too
(numpy has no bfloat16 BLAS: float32 products rounded once, eager's values). Fused kernels
load bfloat16 as float32 and round once at their stores (``codegen.ir.STORAGE_ONLY``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from runtime import _dtype as D
from runtime.ops.dispatch import _bf16_impl, _promoted_dtype, opmath_scalar
from runtime.ops.registry import Primitive
from runtime.tensor import Tensor

BF16 = D.bfloat16


def needs_wrapper(prim: Primitive, arg_dtypes: Sequence[D.DType | None]) -> bool:
    """Whether eager mode runs ``prim`` on arguments of these dtypes (None: not a tensor)
    through the bfloat16 wrapper: a bfloat16 tensor among them, and no view or transfer."""
    return any(dt is BF16 for dt in arg_dtypes) and not prim.view and not prim.transfer


def eager_impl(prim: Primitive, arg_metas: Sequence[Any]) -> Callable[..., Any]:
    """``prim``'s impl as eager mode runs it on arguments described by ``arg_metas``: per
    argument ``(shape, DType)`` for a tensor, else the value itself. The impl takes the
    arrays (and values) of a call, ``impl(xp, *arrays, **attrs)``."""
    dtypes = [m[1] if _is_tensor_meta(m) else None for m in arg_metas]
    if not needs_wrapper(prim, dtypes):
        return prim.impl
    # placeholders of the arguments' shapes and dtypes, holding no memory: the wrapper reads
    # their dtypes and ranks (promotion) once, never their values
    args = tuple(_placeholder(m) if _is_tensor_meta(m) else m for m in arg_metas)
    if opmath_scalar(prim, args, _promoted_dtype(prim, args)) is not None:
        # eager's mul/div read a one-element operand's value (PyTorch's CPU scalar): the
        # wrapper is made per call, over the call's array (a capture casts it to the promoted
        # dtype, so a plan has none unless it promotes apart)
        first, dtype = args[0], dtypes[1]

        def per_call(xp: Any, a: Any, b: Any, **attrs: Any) -> Any:
            scalar = Tensor._make(np.asarray(b), dtype, "cpu")  # type: ignore[arg-type]
            return _bf16_impl(prim, (first, scalar))(xp, a, b, **attrs)

        return per_call
    return _bf16_impl(prim, args)


def _is_tensor_meta(m: Any) -> bool:
    return type(m) is tuple and len(m) == 2 and isinstance(m[1], D.DType)


def _placeholder(meta: tuple[tuple[int, ...], D.DType]) -> Tensor:
    shape, dtype = meta
    return Tensor._make(np.broadcast_to(np.zeros((), dtype.np), tuple(shape)), dtype, "cpu")
