"""``torch.func.vmap`` (and ``torch.vmap``), with PyTorch's signature, checks and error texts.

How it differs from PyTorch's: the function runs once per batch element, on each
argument's slice (``select`` along its ``in_dim``), and each output is the ``stack`` of
the per-element outputs along its ``out_dim``; PyTorch runs the function once on batched
tensors. For a pure function the values are the same, and so are the gradients (``select``
and ``stack`` are differentiable: ``vmap(grad(f))`` and ``grad(vmap(f))`` both work), but

- it is as slow as a Python loop over the batch (``chunk_size`` changes nothing);
- side effects happen once per element: an in-place op on an unbatched argument
  (``in_dim=None``) raises after the fact (PyTorch applies it once, or raises when a batched
  value would be written into it); one on a tensor the function captures is applied once
  per element, unnoticed; PyTorch's error for "different" in-place randomness on an
  unbatched tensor is not raised;
- what PyTorch cannot batch works here, per element: Python control flow on a tensor's
  value, ``.item()``;
- an output with ``out_dims=None`` is accepted when all elements give the same value (and
  then is that value); PyTorch asks whether it depends on a batched input;
- a batch of size 0 runs the function twice, on stand-in elements of zeros and of ones
  (each output then has size 0 along its out_dim), so a function that fails on those
  fails here;
- an op's errors are the eager op's texts (PyTorch's batching rules word some otherwise:
  mm's "Shape mismatch: ...", squeeze's RuntimeError for a dim out of range);
- randomness="different" draws each element's numbers in turn: uniform and integer draws
  are PyTorch's batched draws, normal ones (16-wide Box-Muller there) other numbers of the
  same distribution.

As PyTorch's, an output that is each element's slice of a batched input is that input (or
its ``movedim`` view), and one that is, element by element, a view of one base (``diagonal``,
``t``, ``split`` ...) is a view of it; inside a captured step (planner.compile) the latter is
stacked instead (same values: a capture lays out no storage). ``as_strided`` inside vmap
reads its storage offset relative to the batched tensor, as PyTorch's batching rule does.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from ..ops.functional import stack
from ..ops.memory_names import outside_vmap_elements, vmap_element
from ..tensor import Tensor
from ..tracing import _state as _trace_state
from ._pytree import broadcast_to_and_flatten, tree_flatten, tree_map, tree_unflatten
from ._level import transform_level
from ._randomness import check_randomness, randomness_frame

__all__ = ["vmap"]


def _name(func: Any) -> str:
    if hasattr(func, "__name__"):
        return func.__name__
    if isinstance(func, functools.partial):
        return f"functools.partial({_name(func.func)}, ...)"
    return repr(func)


def _check_out_dims(out_dims: Any, func: Any) -> None:
    def one(d: Any) -> None:
        if d is not None and not isinstance(d, int):
            raise ValueError(f"vmap({_name(func)}, ..., out_dims={out_dims}): `out_dims` must "
                             "be an int, None or a python collection of ints representing "
                             "where in the outputs the vmapped dimension should appear.")
    if not isinstance(out_dims, int):
        tree_map(one, out_dims)


def _batched_inputs(in_dims: Any, args: tuple[Any, ...], func: Any
                    ) -> tuple[int, list[int | None], list[Any], Any]:
    """PyTorch's ``_process_batched_inputs``: (batch size, flat in_dims made non-negative,
    flat args, args' structure)."""
    where = f"vmap({_name(func)}, in_dims={in_dims}, ...)(<inputs>)"
    if not isinstance(in_dims, int | tuple):
        raise ValueError(f"{where}: expected `in_dims` to be int or a (potentially nested) tuple "
                         f"matching the structure of inputs, got: {type(in_dims)}.")
    if not args:
        raise ValueError(f"vmap({_name(func)})(<inputs>): got no inputs. Maybe you forgot to add "
                         "inputs, or you are trying to vmap over a function with no inputs. The "
                         "latter is unsupported.")
    flat_args, spec = tree_flatten(args)
    flat_dims = broadcast_to_and_flatten(in_dims, spec)
    if flat_dims is None:
        raise ValueError(f"{where}: in_dims is not compatible with the structure of `inputs`. "
                         f"in_dims has structure {tree_flatten(in_dims)[1]} but inputs has "
                         f"structure {spec}.")
    for i, (arg, dim) in enumerate(zip(flat_args, flat_dims)):
        if not isinstance(dim, int) and dim is not None:
            raise ValueError(f"{where}: Got in_dim={dim} for an input but in_dim must be either "
                             "an integer dimension or None.")
        if isinstance(dim, int) and not isinstance(arg, Tensor):
            raise ValueError(f"{where}: Got in_dim={dim} for an input but the input is of type "
                             f"{type(arg)}. We cannot vmap over non-Tensor arguments, please "
                             "use None as the respective in_dim")
        if dim is not None and not -arg.dim() <= dim < arg.dim():
            raise ValueError(f"{where}: Got in_dim={dim} for some input, but that input is a "
                             f"Tensor of dimensionality {arg.dim()} so expected in_dim to "
                             f"satisfy -{arg.dim()} <= in_dim < {arg.dim()}.")
        if dim is not None and dim < 0:
            flat_dims[i] = dim % arg.dim()
    for dim in flat_dims:
        if isinstance(dim, bool):  # an int to the checks above, refused by size() (PyTorch's)
            raise TypeError("size(): argument 'dim' (position 1) must be int, not bool")
    sizes = [arg.size(dim) for arg, dim in zip(flat_args, flat_dims) if dim is not None]
    if not sizes:
        raise ValueError("vmap: Expected at least one Tensor to vmap over")
    if any(s != sizes[0] for s in sizes):
        raise ValueError("vmap: Expected all tensors to have the same size in the mapped "
                         f"dimension, got sizes {sizes} for the mapped dimension")
    return sizes[0], flat_dims, flat_args, spec


def _flat_out_dims(output: Any, out_dims: Any, func: Any) -> tuple[list[Any], list[Any], Any]:
    """The flat outputs of one element, their out_dims and the output's structure."""
    flat, spec = tree_flatten(output)
    if isinstance(output, Tensor):  # PyTorch's edge case: a one-tuple out_dims fits too
        if isinstance(out_dims, int) or out_dims is None:
            return flat, [out_dims], spec
        if isinstance(out_dims, tuple) and len(out_dims) == 1:
            return flat, list(out_dims), spec
        dims = None
    else:
        dims = broadcast_to_and_flatten(out_dims, spec)
    if dims is None:
        raise ValueError(f"vmap({_name(func)}, ..., out_dims={out_dims})(<inputs>): out_dims is "
                         "not compatible with the structure of `outputs`. out_dims has structure "
                         f"{tree_flatten(out_dims)[1]} but outputs has structure {spec}.")
    return flat, dims, spec


def _same_value(a: Any, b: Any) -> bool:
    if a is b:
        return True
    if not (isinstance(a, Tensor) and isinstance(b, Tensor)):
        return bool(a == b)
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    x, y = a.detach().cpu().numpy(), b.detach().cpu().numpy()
    return bool(np.array_equal(x, y, equal_nan=x.dtype.kind in "fc"))


def _combine(name: str, per_element: list[Any], out_dim: int | None) -> Any:
    """One flat output from its per-element values."""
    first = per_element[0]
    if out_dim is None:
        if isinstance(first, Tensor) and not all(_same_value(first, o) for o in per_element):
            raise ValueError(f"vmap({name}, ...): `{name}` can not return a BatchedTensor when "
                             "out_dim is None")
        return first
    for o in per_element:
        if not isinstance(o, Tensor):
            raise ValueError(f"vmap({name}, ...): `{name}` must only return Tensors, got type "
                             f"{type(o)}. Did you mean to set out_dims= to None for output?")
    return stack(per_element, dim=out_dim)


def _passed_through(column: list[Any], slices: list[list[Any]], flat_args: list[Any],
                    flat_dims: list[int | None], out_dim: int | None) -> Tensor | None:
    """PyTorch's result for an output that is, element by element, the slice of one batched
    input the function got (``lambda x: x``, an in-place method returning ``self``): that input
    itself when its in_dim is the out_dim, else its ``movedim`` view; None otherwise."""
    if out_dim is None or not slices:
        return None
    for k, (arg, dim) in enumerate(zip(flat_args, flat_dims)):
        if dim is None or not all(o is s[k] for o, s in zip(column, slices)):
            continue
        if not -arg.dim() <= out_dim < arg.dim():
            return None  # stack raises PyTorch's error
        return arg if out_dim % arg.dim() == dim else arg.movedim(dim, out_dim)
    return None


def _strided_view(column: list[Any], out_dim: int | None) -> Tensor | None:
    """PyTorch's vmap of a view op gives a view of the input: when each element's output is
    a view of one base, all of one shape and strides, at evenly spaced offsets (``diagonal``,
    ``select``, ``t``, ``split`` of the slices), the output is that base's ``as_strided``
    view (a write into it reaches the input); None otherwise."""
    first = column[0]
    if _trace_state.tracer is not None:  # a capture lays out no storage: stacked, same values
        return None
    if out_dim is None or not isinstance(first, Tensor) or first._base is None:
        return None
    base, shape, strides = first._base, tuple(first.shape), first.stride()
    for o in column:
        if (not isinstance(o, Tensor) or o._base is not base or tuple(o.shape) != shape
                or o.stride() != strides or o.dtype != base.dtype
                or o.requires_grad != base.requires_grad):
            return None
    offsets = [o.storage_offset() for o in column]
    delta = offsets[1] - offsets[0] if len(offsets) > 1 else 1
    if delta < 0 or any(b - a != delta for a, b in zip(offsets, offsets[1:])):
        return None
    ndim = len(shape) + 1
    if not -ndim <= out_dim < ndim:
        return None  # stack raises PyTorch's error
    d = out_dim % ndim
    with outside_vmap_elements():  # an outer vmap's element must not shift the offset
        return base.as_strided(shape[:d] + (len(column),) + shape[d:],
                               strides[:d] + (delta,) + strides[d:], offsets[0])


def _output(name: str, column: list[Any], out_dim: int | None, slices: list[list[Any]],
            flat_args: list[Any], flat_dims: list[int | None]) -> Any:
    """One flat output from its per-element values: a batched input passed through, a
    view of one base, else the values stacked."""
    out = _passed_through(column, slices, flat_args, flat_dims, out_dim)
    if out is None and slices:
        out = _strided_view(column, out_dim)
    return _combine(name, column, out_dim) if out is None else out


def _stand_in(arg: Tensor, dim: int, fill: int) -> Tensor:
    """For a batch of size 0: ``fill`` (0 or 1) shaped as one element of ``arg``; floating
    ones computed from ``arg`` (a sum over its empty ``dim``), so a gradient reaches it."""
    if arg.is_floating_point():
        return arg.sum(dim) + fill
    from ..creation import full

    shape = tuple(arg.shape[:dim]) + tuple(arg.shape[dim + 1:])
    return full(shape, fill, dtype=arg.dtype, device=arg.device)


def _vmap_call(func: Callable[..., Any], in_dims: Any, out_dims: Any, randomness: str,
               args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    _check_out_dims(out_dims, func)
    size, flat_dims, flat_args, spec = _batched_inputs(in_dims, args, func)
    unbatched = [(a, a._version) for a, d in zip(flat_args, flat_dims)
                 if d is None and isinstance(a, Tensor)]
    batched = [(a, d) for a, d in zip(flat_args, flat_dims) if d is not None]
    outputs, slices = [], []
    with randomness_frame(randomness) as frame, transform_level("vmap"):
        # a batch of size 0: two runs, on stand-in elements of zeros and of ones, so that
        # an out_dims=None output that depends on a batched input is refused as usual
        for i in range(size if size else 2):
            frame.element = i
            sliced = [a if d is None else a.select(d, i) if size else _stand_in(a, d, i)
                      for a, d in zip(flat_args, flat_dims)]
            if size:
                slices.append(sliced)
            with vmap_element(batched, i):
                outputs.append(func(*tree_unflatten(sliced, spec), **kwargs))
    if any(a._version != version for a, version in unbatched):
        raise RuntimeError(f"vmap({_name(func)}): `{_name(func)}` modified an unbatched argument "
                           "(in_dim=None) in place; here the function runs once per batch "
                           f"element, so that happened {size or 2} times (PyTorch's vmap does it "
                           "once or raises)")
    flat0, dims, out_spec = _flat_out_dims(outputs[0], out_dims, func)
    columns: list[list[Any]] = [[] for _ in flat0]
    for out in outputs:
        flat, this_spec = tree_flatten(out)
        if this_spec != out_spec:
            raise ValueError(f"vmap({_name(func)}, ...): `{_name(func)}` returned outputs of "
                             f"different structures for different batch elements: {out_spec} "
                             f"and {this_spec}")
        for column, value in zip(columns, flat):
            column.append(value)
    combined = [_output(_name(func), column, d, slices, flat_args, flat_dims)
                for column, d in zip(columns, dims)]
    if size == 0:  # the runs were on stand-in elements: keep none of them
        combined = [o.narrow(d, 0, 0) if d is not None else o for o, d in zip(combined, dims)]
    return tree_unflatten(combined, out_spec)


def vmap(func: Callable[..., Any], in_dims: int | tuple[Any, ...] = 0,
         out_dims: int | tuple[Any, ...] | None = 0, randomness: str = "error", *,
         chunk_size: int | None = None) -> Callable[..., Any]:
    """``func`` mapped over dimension ``in_dims`` of its inputs (an int, or a pytree
    matching the positional arguments with an int or None per tensor; keyword arguments
    are not mapped), its outputs stacked along ``out_dims``. See the module docstring for
    how it runs."""
    check_randomness(randomness)
    if not (chunk_size is None or chunk_size > 0):
        raise ValueError(f"vmap: chunk_size should be None or greater than 0. (got {chunk_size})")

    @functools.wraps(func)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        return _vmap_call(func, in_dims, out_dims, randomness, args, kwargs)

    return wrapped
