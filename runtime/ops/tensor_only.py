"""PyTorch's binary functions whose second operand (and first) must be a tensor: a Python
number is its argument parser's TypeError (``torch.maximum(t, 2.0)``,
``t.atan2_(1.0)``), where the runtime's own functions, which its ops call with numbers, take
one. ``install_functions`` wraps runtime's exports, ``install_methods`` Tensor's methods
(their in-place variants too); the runtime's modules keep the functions they call."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ..tensor import Tensor

# name -> its two tensor parameters, as PyTorch names them
PARAMETERS: dict[str, tuple[str, str]] = {
    **{n: ("input", "other") for n in (
        "maximum minimum fmax fmin atan2 arctan2 hypot nextafter ldexp logaddexp logaddexp2 gcd "
        "lcm logical_and logical_or logical_xor dist kron igamma igammac cross vdot inner "
        "matmul isclose").split()},
    "heaviside": ("input", "values"),
    "dot": ("input", "tensor"),
    "outer": ("input", "vec2"),
    "ger": ("input", "vec2"),
    "mm": ("input", "mat2"),
    "bmm": ("input", "mat2"),
    "mv": ("input", "vec"),
    "take_along_dim": ("input", "indices"),
    "cdist": ("x1", "x2"),
    "polar": ("abs", "angle"),
    "complex": ("real", "imag"),
}
# the ops that have a Scalar overload for their second operand only: a number first is an
# invalid combination of their two overloads
SCALAR_SECOND: dict[str, str] = {
    **{n: " * (Tensor input, Tensor other, *, Tensor out = None)\n * (Tensor input, Number "
          "other, *, Tensor out = None)\n"
       for n in "copysign fmod eq ne lt gt le ge".split()},
    "rsub": " * (Tensor input, Tensor other, *, Number alpha = 1)\n * (Tensor input, Number "
            "other, Number alpha = 1)\n",
}


def type_name(value: Any) -> str:
    """The type PyTorch's argument parser names (``numpy.float64``, ``NoneType``)."""
    kind = type(value)
    return f"numpy.{kind.__name__}" if kind.__module__ == "numpy" else kind.__name__


def _check(name: str, params: tuple[str, ...], args: tuple[Any, ...],
           kwargs: dict[str, Any]) -> None:
    for i, param in enumerate(params):
        if i < len(args):
            value, where = args[i], f" (position {i + 1})"
        elif param in kwargs:
            value, where = kwargs[param], ""
        else:
            continue
        if not isinstance(value, Tensor):
            raise TypeError(f"{name}(): argument '{param}'{where} must be Tensor, not "
                            f"{type_name(value)}")


def _tensors_only(fn: Callable[..., Any], name: str, params: tuple[str, ...]
                  ) -> Callable[..., Any]:
    count = len(params)

    @functools.wraps(fn)
    def op(*args: Any, **kwargs: Any) -> Any:
        if kwargs or not all(isinstance(v, Tensor) for v in args[:count]):
            _check(name, params, args, kwargs)
        return fn(*args, **kwargs)

    return op


def _method(fn: Callable[..., Any], name: str, param: str) -> Callable[..., Any]:
    """A Tensor method: self is the tensor, the other operand is position 1."""
    @functools.wraps(fn)
    def op(self: Any, *args: Any, **kwargs: Any) -> Any:
        if kwargs or (args and not isinstance(args[0], Tensor)):
            _check(name, (param,), args, kwargs)
        return fn(self, *args, **kwargs)

    return op


def _tensor_first(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    @functools.wraps(fn)
    def op(*args: Any, **kwargs: Any) -> Any:
        if args and not isinstance(args[0], Tensor) and len(args) == 2 and not kwargs:
            raise TypeError(f"{name}() received an invalid combination of arguments - got "
                            f"({type_name(args[0])}, {type_name(args[1])}), but expected one "
                            f"of:\n{SCALAR_SECOND[name]}")
        return fn(*args, **kwargs)

    return op


def install_functions(namespace: dict[str, Any]) -> None:
    """PyTorch's refusals of numbers in a module's globals (runtime's)."""
    for n, params in PARAMETERS.items():
        if n in namespace:
            namespace[n] = _tensors_only(namespace[n], n, params)
    for n in SCALAR_SECOND:
        if n in namespace:
            namespace[n] = _tensor_first(namespace[n], n)


def install_methods(cls: type) -> None:
    """PyTorch's refusals of numbers in Tensor's methods and their in-place variants."""
    for n, params in PARAMETERS.items():
        for name in (n, n + "_"):
            fn = cls.__dict__.get(name)
            if fn is not None and callable(fn):
                setattr(cls, name, _method(fn, name, params[1]))
