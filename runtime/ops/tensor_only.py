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
_TWO = (" * (Tensor input, Tensor other, *, Tensor out = None)\n * (Tensor input, Number "
        "other, *, Tensor out = None)\n")
_SELF_NUMBER = (" * (Tensor input, Tensor other, *, Tensor out = None)\n * (Number self, Tensor "
                "other, *, Tensor out = None)\n * (Tensor input, Number other, *, Tensor out = "
                "None)\n")
_CLAMP = (" * (Tensor input, Tensor min = None, Tensor max = None, *, Tensor out = None)\n * "
          "(Tensor input, Number min = None, Number max = None, *, Tensor out = None)\n")
# name -> (PyTorch's name in its error, its overloads, whether a number is refused only where
# the second operand is one too): a number first is an invalid combination of the overloads
TENSOR_FIRST: dict[str, tuple[str, str, bool]] = {
    **{n: (n, _TWO, False) for n in "copysign fmod eq ne lt gt le ge".split()},
    "rsub": ("rsub", " * (Tensor input, Tensor other, *, Number alpha = 1)\n * (Tensor input, "
                     "Number other, Number alpha = 1)\n", False),
    "clamp": ("clamp", _CLAMP, False),
    "clip": ("clip", _CLAMP, False),
    "lerp": ("lerp", " * (Tensor input, Tensor end, Tensor weight, *, Tensor out = None)\n * "
                     "(Tensor input, Tensor end, Number weight, *, Tensor out = None)\n", False),
    "xlogy": ("xlogy", _SELF_NUMBER, True),
}
SPECIAL_TENSOR_FIRST: dict[str, tuple[str, str, bool]] = {
    "xlogy": ("special_xlogy", _SELF_NUMBER, True),
    "xlog1py": ("special_xlog1py", _SELF_NUMBER, True),
}
# runtime.special's functions of one tensor: its parameter's name and position (torch.special's
# argument parser refuses a number there: special_i0(0.5) is its TypeError)
SPECIAL_TENSOR_INPUT: dict[str, tuple[str, int]] = {
    **{n: ("input", 1) for n in (
        "digamma entr erf erfc erfcx erfinv exp2 expit expm1 gammaln i0 i0e i1 i1e log1p "
        "log_ndtr logit ndtr ndtri psi round sinc softmax log_softmax logsumexp multigammaln "
        "bessel_j0 bessel_j1 bessel_y0 bessel_y1 modified_bessel_i0 modified_bessel_i1 "
        "modified_bessel_k0 modified_bessel_k1").split()},
    **{n: ("x", 1) for n in ("airy_ai scaled_modified_bessel_k0 scaled_modified_bessel_k1 "
                             "spherical_bessel_j0").split()},
    "polygamma": ("input", 2),
}
# runtime.special's functions of two tensors, under their torch.special names
SPECIAL_PARAMETERS: dict[str, tuple[str, str]] = {"gammainc": ("input", "other"),
                                                  "gammaincc": ("input", "other")}
# unary predicates whose input must be a tensor (torch.isinf(1): its argument parser's
# TypeError, where the runtime's raised AttributeError)
UNARY = "isfinite isinf isnan isposinf isneginf isreal signbit".split()
# ops PyTorch takes two numbers for, the first wrapped as a tensor (torch.add(2, 3): tensor(5))
NUMBERS_WRAPPED = "add sub mul div true_divide floor_divide".split()


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


def _tensor_argument(fn: Callable[..., Any], name: str, param: str, position: int
                     ) -> Callable[..., Any]:
    """fn whose ``param`` (at ``position``, from 1) must be a tensor: PyTorch's TypeError."""
    @functools.wraps(fn)
    def op(*args: Any, **kwargs: Any) -> Any:
        if len(args) >= position:
            value, where = args[position - 1], f" (position {position})"
        elif param in kwargs:
            value, where = kwargs[param], ""
        else:
            return fn(*args, **kwargs)
        if not isinstance(value, Tensor):
            raise TypeError(f"{name}(): argument '{param}'{where} must be Tensor, not "
                            f"{type_name(value)}")
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


def _is_number(value: Any) -> bool:
    return isinstance(value, (bool, int, float)) and not isinstance(value, Tensor)


def _tensor_first(fn: Callable[..., Any], spec: tuple[str, str, bool]) -> Callable[..., Any]:
    name, overloads, both = spec

    @functools.wraps(fn)
    def op(*args: Any, **kwargs: Any) -> Any:
        if args and not isinstance(args[0], Tensor) and (
                not both or (len(args) > 1 and not isinstance(args[1], Tensor))):
            got = [type_name(a) for a in args] + [f"{k}={type_name(v)}"
                                                  for k, v in sorted(kwargs.items())]
            raise TypeError(f"{name}() received an invalid combination of arguments - got "
                            f"({', '.join(got)}), but expected one of:\n{overloads}")
        return fn(*args, **kwargs)

    return op


def _numbers_wrapped(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def op(*args: Any, **kwargs: Any) -> Any:
        if len(args) > 1 and _is_number(args[0]) and _is_number(args[1]):
            from ..creation import tensor

            args = (tensor(args[0]), *args[1:])
        return fn(*args, **kwargs)

    return op


def install_functions(namespace: dict[str, Any]) -> None:
    """PyTorch's refusals of numbers in a module's globals (runtime's)."""
    for n, params in PARAMETERS.items():
        if n in namespace:
            namespace[n] = _tensors_only(namespace[n], n, params)
    for n in UNARY:
        if n in namespace:
            namespace[n] = _tensors_only(namespace[n], n, ("input",))
    for n, spec in TENSOR_FIRST.items():
        if n in namespace:
            namespace[n] = _tensor_first(namespace[n], spec)
    for n in NUMBERS_WRAPPED:
        if n in namespace:
            namespace[n] = _numbers_wrapped(namespace[n])


def install_special(module: Any) -> None:
    """PyTorch's refusals of numbers in ``runtime.special``: of two in xlogy and xlog1py, of
    any in its functions of tensors (their texts naming ``special_<name>``)."""
    for n, spec in SPECIAL_TENSOR_FIRST.items():
        fn = getattr(module, n, None)
        if fn is not None:
            setattr(module, n, _tensor_first(fn, spec))
    for n, (param, position) in SPECIAL_TENSOR_INPUT.items():
        setattr(module, n, _tensor_argument(getattr(module, n), f"special_{n}", param, position))
    for n, params in SPECIAL_PARAMETERS.items():
        setattr(module, n, _tensors_only(getattr(module, n), f"special_{n}", params))


def install_methods(cls: type) -> None:
    """PyTorch's refusals of numbers in Tensor's methods and their in-place variants."""
    for n, params in PARAMETERS.items():
        for name in (n, n + "_"):
            fn = cls.__dict__.get(name)
            if fn is not None and callable(fn):
                setattr(cls, name, _method(fn, name, params[1]))
