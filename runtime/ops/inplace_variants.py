"""PyTorch's in-place Tensor methods the runtime lacked (``tan_``, ``lt_``, ``tril_``,
``copysign_`` ...) and its torch-level in-place functions (``torch.abs_(x)``).

Each is its out-of-place method computed on a clone and written back through
``F.overwrite`` (``copy_``): version counters, the leaf and view checks, CopySlices and
capture come from the one place that does them, and the node is named as the out-of-place
op's (PyTorch's ``tan_`` is ``TanBackward0``). The result keeps self's dtype and shape:
PyTorch's errors where the op's result cannot be written into it."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from .. import _dtype as D
from ..tensor import Tensor
from . import functional as F
from .composite import no_derivative
from .inplace import check_fits
from .inplace_ops import transpose_


def in_place(name: str, node: Callable[[tuple[Any, ...]], str] | None = None,
             differentiable: bool = True) -> Callable[..., Tensor]:
    """The method ``name_``: ``Tensor.name`` of a clone of self written into self.
    ``node``: the backward node's name (PyTorch's) from the arguments, for an op whose
    result has no node of its own (a comparison's ``LtBackward0``). Not ``differentiable``:
    PyTorch has no derivative for the in-place form (acosh_): backward through it raises."""
    def method(self: Tensor, *args: Any, **kwargs: Any) -> Tensor:
        result = getattr(Tensor, name)(F.clone(self), *args, **kwargs)  # looked up late
        check_fits(self, result.shape, result.dtype)
        if not differentiable:
            result = no_derivative(result.detach(), (self,), NotImplementedError,
                                   f"the derivative for 'inplace version of {_ATEN[name]}' "
                                   "is not implemented.", f"{_ATEN[name].capitalize()}Backward1")
        out = F.overwrite(self, result)
        if node is not None and out._grad_fn is not None and result._grad_fn is None:
            F.named(out, node(args))
        return out

    method.__name__ = method.__qualname__ = name + "_"
    method.__doc__ = f"In place: ``self.{name}(...)`` written into self."
    try:
        method.__signature__ = inspect.signature(getattr(Tensor, name))  # type: ignore
    except (AttributeError, ValueError):
        pass
    return method


def _comparison_node(op: str) -> Callable[[tuple[Any, ...]], str]:
    """PyTorch's node of an in-place comparison: ``...Backward0`` against a number,
    ``...Backward1`` against a tensor."""
    return lambda args: f"{op}Backward{1 if args and isinstance(args[0], Tensor) else 0}"


def float_power_(self: Tensor, exponent: Any) -> Tensor:
    """self ** exponent in float64 (complex128 for complex), written into self, which must be
    of that dtype (PyTorch's error otherwise)."""
    if self.dtype is not D.float64:
        raise RuntimeError(f"the base given to float_power_ has dtype "
                           f"{D.scalar_type_name(self.dtype)} but the operation's result "
                           "requires dtype Double")
    return F.pow_(self, exponent.double() if isinstance(exponent, Tensor) else float(exponent))


# PyTorch has no derivative for these in place
_ATEN = {"acosh": "acosh", "asinh": "asinh", "atanh": "atanh", "arccosh": "acosh",
         "arcsinh": "asinh", "arctanh": "atanh"}
_UNARY = ("acos asin atan arccos arcsin arctan erf "
          "log10 log2 tan deg2rad rad2deg reciprocal fix").split()
_BINARY = ("atan2 arctan2 copysign floor_divide gcd lcm ldexp heaviside logical_xor "
           "nextafter tril triu addbmm addmv addr renorm").split()
_COMPARISONS = {"eq": "Eq", "ne": "Ne", "lt": "Lt", "le": "Le", "gt": "Gt", "ge": "Ge",
                "greater": "Gt", "greater_equal": "Ge", "less": "Lt", "less_equal": "Le",
                "not_equal": "Ne"}

METHODS: dict[str, Callable[..., Any]] = {n + "_": in_place(n) for n in _UNARY + _BINARY}
METHODS.update({n + "_": in_place(n, differentiable=False) for n in _ATEN})
METHODS.update({n + "_": in_place(n, _comparison_node(op)) for n, op in _COMPARISONS.items()})
def swapaxes_(self: Tensor, axis0: int, axis1: int) -> Tensor:
    return transpose_(self, axis0, axis1)


def swapdims_(self: Tensor, dim0: int, dim1: int) -> Tensor:
    return transpose_(self, dim0, dim1)


METHODS.update(float_power_=float_power_, swapaxes_=swapaxes_, swapdims_=swapdims_)

# torch.<name>_(input, ...): the method, called on input
TORCH_IN_PLACE = (
    "abs acos acosh arccos arccosh arcsin arcsinh arctan arctanh asin asinh atan atanh ceil "
    "clamp clamp_max clamp_min clip cos cosh deg2rad erf erfc exp exp2 expm1 fill fix floor frac "
    "gcd i0 lcm ldexp log log10 log1p log2 logit nan_to_num neg negative rad2deg reciprocal relu "
    "round rsqrt sigmoid sin sinc sinh sqrt square tan tanh trunc xlogy zero index_put "
    "resize_as addmv").split()


def torch_function(name: str) -> Callable[..., Any]:
    """``torch.name(input, ...)``: ``input.name(...)`` (a Tensor method, looked up late)."""
    def fn(input: Tensor, *args: Any, **kwargs: Any) -> Any:  # noqa: A002 - PyTorch's name
        if not isinstance(input, Tensor):
            raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not "
                            f"{type(input).__name__}")
        return getattr(input, name)(*args, **kwargs)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"``torch.{name}``: ``input.{name}(...)``."
    return fn


def signature_of_method(name: str) -> inspect.Signature:
    """Tensor.name's signature with its self as ``input`` (torch.name's)."""
    sig = inspect.signature(getattr(Tensor, name))
    params = list(sig.parameters.values())
    first = params[0].replace(name="input", kind=inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return sig.replace(parameters=[first, *params[1:]])


FUNCTIONS: dict[str, Callable[..., Any]] = {n + "_": torch_function(n + "_")
                                            for n in TORCH_IN_PLACE}


def finish() -> None:
    """The torch-level functions' signatures, from the methods (all installed by now)."""
    for name, fn in FUNCTIONS.items():
        fn.__signature__ = signature_of_method(name)  # type: ignore[attr-defined]
