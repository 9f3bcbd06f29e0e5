"""PyTorch's argument parser for the ``int`` parameters of its functions and Tensor methods
(a dim, an offset, a count): any other value (a str, a float, None, a bool, a tuple, a tensor
that is not a 0-d integer one) is its TypeError, which names the parameter and, where it was
given by position, that position (``cumsum(): argument 'dim' (position 2) must be int, not
str``; a method's counts from the argument after self). The runtime's own functions take
what they are given (their errors were numpy's or Python's); ``install_functions`` wraps
runtime's exports, ``install_methods`` Tensor's methods and their in-place variants, where
PyTorch's parser has one overload of that call, so that its text is this one."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from ..tensor import Tensor
from .tensor_only import type_name

# op -> its int parameters (PyTorch's names; "?": None is taken, as ``int? dim``; "*": a
# tuple of ints, one int standing for it)
PARAMETERS: dict[str, tuple[str, ...]] = {
    **{n: ("dim",) for n in (
        "cumsum cumprod logcumsumexp cummax cummin softmax log_softmax unsqueeze mode median "
        "nanmedian unbind index_select gather index_add index_copy scatter_add kthvalue "
        "unflatten").split()},
    **{n: ("dim?",) for n in "argmax argmin take_along_dim cross".split()},
    "renorm": ("dim",),
    "logsumexp": ("dim*",),
    "flatten": ("start_dim", "end_dim"),
    "transpose": ("dim0", "dim1"),
    "swapdims": ("dim0", "dim1"),
    "swapaxes": ("axis0", "axis1"),
    "select": ("dim", "index"),
    "chunk": ("chunks", "dim"),
    "diagonal": ("offset", "dim1", "dim2"),
    "diag_embed": ("offset", "dim1", "dim2"),
    "topk": ("k", "dim"),
    "tril": ("diagonal",),
    "triu": ("diagonal",),
    "diag": ("diagonal",),
    "diff": ("n", "dim"),
    "rot90": ("k",),
    # a reduction's ``bool keepdim`` ("!": a bool parameter; PyTorch's parser takes a bool
    # only: ``sum(): argument 'keepdim' must be bool, not NoneType``)
    **{n: ("keepdim!",) for n in "sum prod amax amin nansum".split()},
}
for _n in "argmax argmin median nanmedian mode kthvalue logsumexp".split():
    PARAMETERS[_n] += ("keepdim!",)
# functions only (PyTorch's Tensor has no such method)
FUNCTION_PARAMETERS: dict[str, tuple[str, ...]] = {"cat": ("dim",), "stack": ("dim",)}
# in-place methods: as their out-of-place op's
IN_PLACE = ("cumsum cumprod unsqueeze index_add index_copy scatter_add transpose swapdims "
            "swapaxes tril triu").split()


def takes_int(value: Any) -> bool:
    """Whether PyTorch's parser takes ``value`` for an ``int``: an int or numpy integer (not
    a bool), or a 0-d integer tensor."""
    if isinstance(value, bool):
        return False
    if isinstance(value, Tensor):
        dtype = value.dtype
        return value.ndim == 0 and not (dtype.is_floating_point or dtype.is_complex
                                        or dtype.name == "bool")
    return hasattr(type(value), "__index__")


def _spec(fn: Callable[..., Any], params: tuple[str, ...]
          ) -> list[tuple[str, int | None, bool, str]]:
    """Each int parameter of ``fn``: (name, its index among the positional arguments after
    the tensor (None: keyword-only or absent), whether None is taken, the kind PyTorch's
    error names)."""
    names = [p.name for p in inspect.signature(fn).parameters.values()
             if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)][1:]
    out = []
    for param in params:
        name, optional = param.rstrip("?*!"), param.endswith("?")
        kind = "tuple of ints" if param.endswith("*") else "bool" if param.endswith("!") \
            else "int"
        out.append((name, names.index(name) if name in names else None, optional, kind))
    return out


def _checked(fn: Callable[..., Any], name: str, params: tuple[str, ...], method: bool
             ) -> Callable[..., Any]:
    spec = _spec(fn, params)
    offset = 1 if method else 2  # PyTorch's position of the first argument after the input

    @functools.wraps(fn)
    def op(*args: Any, **kwargs: Any) -> Any:
        rest = args[1:]
        for param, at, optional, kind in spec:
            if at is not None and at < len(rest):
                value, where = rest[at], f" (position {at + offset})"
            elif param in kwargs:
                value, where = kwargs[param], ""
            else:
                continue
            if kind == "bool":
                if type(value) is not bool:
                    raise TypeError(f"{name}(): argument '{param}'{where} must be bool, not "
                                    f"{type_name(value)}")
            elif not takes_int(value) and not (optional and value is None) and not (
                    kind != "int" and isinstance(value, (tuple, list))):
                raise TypeError(f"{name}(): argument '{param}'{where} must be {kind}, not "
                                f"{type_name(value)}")
        return fn(*args, **kwargs)

    return op


def _cat_checked(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    """cat and stack: their dim is the second argument (the first is the tensors)."""
    @functools.wraps(fn)
    def op(tensors: Any, *args: Any, **kwargs: Any) -> Any:
        if args:
            value, where = args[0], " (position 2)"
        elif "dim" in kwargs:
            value, where = kwargs["dim"], ""
        else:
            return fn(tensors, *args, **kwargs)
        if not takes_int(value):
            raise TypeError(f"{name}(): argument 'dim'{where} must be int, not "
                            f"{type_name(value)}")
        return fn(tensors, *args, **kwargs)

    return op


def _squeeze_error(name: str, method: bool, value: Any, keyword: bool) -> TypeError:
    """PyTorch's error for squeeze's (or squeeze_'s) ``dim`` that is neither an int nor a
    tuple of them (None included): its three overloads, why each did not match."""
    kind = type_name(value)
    shown = f"dim={kind}" if keyword else kind
    if method:
        got, arg, bad = f"{shown}, " if keyword else shown, "", f"!{shown}!" + (
            ", " if keyword else "")
        first = (" * ()\n      didn't match because some of the keywords were incorrect: dim\n"
                 if keyword else f" * ()\n      didn't match because some of the arguments "
                 f"have invalid types: ({bad})\n")
    else:
        got, arg, bad = f"Tensor, {shown}", "Tensor input, ", f"Tensor, !{shown}!"
        first = " * (Tensor input)\n"
    why = f"      didn't match because some of the arguments have invalid types: ({bad})\n"
    return TypeError(f"{name}() received an invalid combination of arguments - got ({got}), "
                     f"but expected one of:\n{first} * ({arg}int dim)\n{why} * ({arg}tuple of "
                     f"ints dim)\n{why}")


def _squeeze_checked(fn: Callable[..., Any], name: str, method: bool) -> Callable[..., Any]:
    @functools.wraps(fn)
    def op(input: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: A002
        if args or "dim" in kwargs:
            value = args[0] if args else kwargs["dim"]
            if not takes_int(value) and not isinstance(value, (tuple, list)):
                raise _squeeze_error(name, method, value, not args)
        return fn(input, *args, **kwargs)

    return op


# ops whose parameters are PyTorch's ``int[]`` (a tuple of ints; a method also takes its one
# spread, ``x.flip(0, 1)``): their names ("?": None is taken by keyword)
INT_LISTS: dict[str, tuple[str, ...]] = {
    "flip": ("dims",), "permute": ("dims",), "repeat": ("repeats",), "reshape": ("shape",),
    "expand": ("size",), "tile": ("dims",), "roll": ("shifts?", "dims?")}


def int_list_error(name: str, param: str, given: tuple[Any, ...], position: int | None,
                   accepts: Callable[[Any], bool] = takes_int) -> TypeError | None:
    """PyTorch's parser's error for an ``int[]`` parameter given ``given`` (the positional
    values, spread, or one sequence or number; ``position`` the first one's, None for a
    keyword), None where it takes them (``accepts``: what it takes for an int): its
    overload matched on the first element (a bool there too fails), so a later bad one fails
    to unpack."""
    if not given:
        return None
    one = given[0]
    items = one if len(given) == 1 and isinstance(one, (tuple, list)) else given
    if all(type(v) is int for v in items):  # the usual call, at the cost of one pass
        return None
    spread = items is given and len(given) > 1
    where = "" if position is None else f" (position {position})"
    for pos, v in enumerate(items):
        if accepts(v) if not isinstance(v, bool) else pos:  # a later bool unpacks as an int
            continue
        if pos:
            return TypeError(f"{name}(): argument '{param}' failed to unpack the object at pos "
                             f"{pos + 1} with error \"type must be tuple of ints,but got "
                             f"{type_name(v)}\"")
        if spread:
            return TypeError(f"{name}() takes 1 positional argument but {len(given)} were "
                             "given")
        if isinstance(one, (tuple, list)) and position is not None:  # its first element bad
            return TypeError(f"{name}(): argument '{param}'{where} must be tuple of ints, but "
                             f"found element of type {type_name(v)} at pos 0")
        # a number, or a keyword's sequence (named by its own type: "not tuple")
        return TypeError(f"{name}(): argument '{param}'{where} must be tuple of ints, not "
                         f"{type_name(one if position is None else v)}")
    return None


def _check_int_lists(name: str, params: tuple[tuple[str, bool], ...], args: tuple[Any, ...],
                     kwargs: dict[str, Any], first: int, spread: bool) -> None:
    """Raise PyTorch's error for the first bad ``int[]`` among ``params`` (name, whether None
    is taken by keyword), given by position
    (``args``, the first at ``first``; ``spread``: the one parameter's values spread, a
    method's ``x.flip(0, 1)``) or by keyword."""
    for i, (param, optional) in enumerate(params):
        keyword = param in kwargs and not (optional and kwargs[param] is None)
        if spread:
            err = int_list_error(name, param, args, first)
        elif i < len(args):
            err = int_list_error(name, param, (args[i],), first + i)
        else:
            err = None
        if err is None and keyword:
            err = int_list_error(name, param, (kwargs[param],), None)
        if err is not None:
            raise err


def _int_list_checked(fn: Callable[..., Any], name: str, params: tuple[str, ...], method: bool
                      ) -> Callable[..., Any]:
    """``fn`` checking its ``int[]`` parameters ``params`` as PyTorch's parser: a method's
    one parameter may be given spread (every op of INT_LISTS but roll)."""
    spread = method and len(params) == 1
    parsed = tuple((p.rstrip("?"), p.endswith("?")) for p in params)
    first = 1 if method else 2

    @functools.wraps(fn)
    def op(input: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: A002
        _check_int_lists(name, parsed, args, kwargs, first, spread)
        return fn(input, *args, **kwargs)

    return op


def install_functions(namespace: dict[str, Any]) -> None:
    """The functions of PARAMETERS in a module's globals (runtime's) checking their ints."""
    for n, params in PARAMETERS.items():
        fn = namespace.get(n)
        if callable(fn):
            namespace[n] = _checked(fn, n, params, method=False)
    for n in FUNCTION_PARAMETERS:
        fn = namespace.get(n)
        if callable(fn):
            namespace[n] = _cat_checked(fn, n)
    if callable(namespace.get("squeeze")):
        namespace["squeeze"] = _squeeze_checked(namespace["squeeze"], "squeeze", method=False)
    for n, params in INT_LISTS.items():
        if callable(namespace.get(n)):
            namespace[n] = _int_list_checked(namespace[n], n, params, method=False)


def install_methods(cls: type) -> None:
    """The methods of PARAMETERS of ``cls`` (Tensor), and their in-place variants, checking
    their ints."""
    names = [(n, n) for n in PARAMETERS] + [(n + "_", n) for n in IN_PLACE]
    for attr, n in names:
        fn = cls.__dict__.get(attr)
        if fn is not None and callable(fn):
            setattr(cls, attr, _checked(fn, attr, PARAMETERS[n], method=True))
    for attr in ("squeeze", "squeeze_"):
        fn = cls.__dict__.get(attr)
        if fn is not None and callable(fn):
            setattr(cls, attr, _squeeze_checked(fn, attr, method=True))
    for n, params in INT_LISTS.items():
        fn = cls.__dict__.get(n)
        if fn is not None and callable(fn):
            setattr(cls, n, _int_list_checked(fn, n, params, method=True))
