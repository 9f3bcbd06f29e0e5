"""NumPy's keyword names that PyTorch's argument parser takes for its native functions and
Tensor methods: ``axis`` for ``dim`` and ``keepdims`` for ``keepdim`` (``x.sum(axis=1,
keepdims=True)``). Its Python-level functions (torch.norm, Tensor.split, torch.unique,
nn.functional's) do not take them, and neither does an op given both names."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

ALIASES = (("axis", "dim"), ("keepdims", "keepdim"))
_ALIAS_NAMES = frozenset(alias for alias, _ in ALIASES)
_REAL = dict(ALIASES)

# the ops whose PyTorch function (torch.<name>) takes the aliases
FUNCTIONS = (
    "all amax amin aminmax any argmax argmin argsort cat chunk concat concatenate "
    "count_nonzero cross cummax cummin cumprod cumsum diff gather index_add index_copy "
    "index_fill index_select kthvalue log_softmax logcumsumexp logsumexp max mean median min "
    "mode nanmean nanmedian nanquantile nansum narrow prod quantile repeat_interleave scatter "
    "scatter_add scatter_reduce select softmax sort squeeze stack std std_mean sum "
    "take_along_dim tensor_split topk unbind unflatten unsqueeze var var_mean").split()
# the Tensor methods that take them
METHODS = (
    "all amax amin aminmax any argmax argmin argsort chunk count_nonzero cross cummax cummin "
    "cumprod cumsum diff gather index_add index_add_ index_copy index_copy_ index_fill "
    "index_fill_ index_select kthvalue log_softmax logcumsumexp logsumexp max mean median min "
    "mode nanmean nanmedian nanquantile nansum narrow prod quantile repeat_interleave scatter "
    "scatter_ scatter_add scatter_add_ scatter_reduce scatter_reduce_ select size softmax sort "
    "split_with_sizes squeeze squeeze_ std stride sum take_along_dim tensor_split topk unbind "
    "unsqueeze unsqueeze_ var").split()


def _positions(fn: Callable[..., Any]) -> dict[str, int | None]:
    """fn's parameters ``dim`` and ``keepdim``: each one's position among the positional
    ones (None: keyword-only)."""
    params = list(inspect.signature(fn).parameters.values())
    return {p.name: i if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) else None
            for i, p in enumerate(params) if p.name in ("dim", "keepdim")}


def numpy_aliases(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    """fn taking ``axis=`` and ``keepdims=`` for ``dim=`` and ``keepdim=`` (where it has
    them; given as well, the alias is PyTorch's unexpected keyword)."""
    positions = _positions(fn)

    @functools.wraps(fn)
    def op(*args: Any, **kwargs: Any) -> Any:
        if kwargs and not _ALIAS_NAMES.isdisjoint(kwargs):
            for alias, real in ALIASES:
                if alias not in kwargs:
                    continue
                at = positions.get(real, -1)
                if at == -1 or real in kwargs or at is not None and len(args) > at:
                    # PyTorch's parser names the first alias it was given
                    first = next(k for k in kwargs if k in _ALIAS_NAMES)
                    raise TypeError(f"{name}() got an unexpected keyword argument '{first}'")
            kwargs = {_REAL.get(k, k): v for k, v in kwargs.items()}
        return fn(*args, **kwargs)

    return op


def install_functions(namespace: dict[str, Any]) -> None:
    """The FUNCTIONS in a module's globals (runtime's) made to take the aliases."""
    for n in FUNCTIONS:
        if n in namespace:
            namespace[n] = numpy_aliases(namespace[n], n)


def install_methods(cls: type) -> None:
    """The METHODS of ``cls`` (Tensor) made to take the aliases."""
    for n in METHODS:
        fn = cls.__dict__.get(n)
        if fn is not None and callable(fn):
            setattr(cls, n, numpy_aliases(fn, n))
