"""What a ported script passes by keyword reaches the same parameter: the modules', the
optimizers', the LR schedulers', the data utilities' and nn.utils' signatures (names, kinds
and defaults) are PyTorch's."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest

import runtime as rt
import runtime.utils.data

AREAS = {
    "nn": ("torch.nn", rt.nn),
    "optim": ("torch.optim", rt.optim),
    "lr_scheduler": ("torch.optim.lr_scheduler", rt.optim.lr_scheduler),
    "data": ("torch.utils.data", runtime.utils.data),
    "nn.utils": ("torch.nn.utils", rt.nn.utils),
    "nn.utils.rnn": ("torch.nn.utils.rnn", rt.nn.utils.rnn),
    "nn.init": ("torch.nn.init", rt.nn.init),
}


def parameters(fn: Any) -> list[tuple[str, Any, Any]] | None:
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    return [(p.name, p.kind, _default(p.default)) for p in signature.parameters.values()]


def _default(value: Any) -> Any:
    """A default as compared: a generator object by its kind only, a function (F.relu, a
    Transformer's activation) by its name."""
    if type(value).__name__ == "Generator":
        return "a Generator"
    return value.__name__ if inspect.isfunction(value) else value


# PyTorch's base classes a script does not build (their signatures are internal)
INTERNAL = {"RNNCellBase"}


def public_callables(theirs: ModuleType, ours: ModuleType) -> Iterator[tuple[str, Any, Any]]:
    for name in sorted(dir(theirs)):
        if name.startswith("_") or name in INTERNAL or name[0].islower() \
                and not name.endswith("_") and not callable(getattr(ours, name, None)):
            continue
        mine, their = getattr(ours, name, None), getattr(theirs, name)
        if callable(mine) and callable(their) and getattr(their, "__module__", "").startswith(
                theirs.__name__.split(".")[0]):
            yield name, their, mine


@pytest.mark.parametrize("area", list(AREAS))
def test_signatures_are_pytorchs(area: str) -> None:
    torch_name, ours = AREAS[area]
    theirs = pytest.importorskip(torch_name)
    compared, differ = 0, []
    for name, their, mine in public_callables(theirs, ours):
        want, got = parameters(their), parameters(mine)
        if want is None or got is None or want == [("args", inspect.Parameter.VAR_POSITIONAL,
                                                     inspect.Parameter.empty),
                                                    ("kwargs", inspect.Parameter.VAR_KEYWORD,
                                                     inspect.Parameter.empty)]:
            continue
        compared += 1
        if got != want:
            differ.append(f"{name}: {got} != {want}")
    assert compared >= 5
    assert not differ, "\n".join(differ)


def test_hardtanh_takes_pytorchs_deprecated_names() -> None:
    with pytest.warns(FutureWarning, match="keyword argument `max_value` is deprecated and "
                                           "renamed to `max_val`"):
        act = rt.nn.Hardtanh(max_value=3.0)
    assert (act.min_val, act.max_val) == (-1.0, 3.0)


def test_default_convert_takes_data_by_keyword() -> None:
    assert runtime.utils.data.default_convert(data=(1, "a")) == [1, "a"]
