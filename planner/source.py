"""The text of a plan's generated program: its lines and the names they read
(``Source``), the integers a plan puts into it (``lit``), and what the fast program knows of
its values while it is generated (``Known``). ``planner.program`` writes the program,
``planner.native`` its native runs."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

Program = Callable[[Any, list[Any], dict[int, Any], list[Any]], tuple[Any, list[Any]]]



def lit(v: Any) -> str:
    """An integer of the plan (a buffer id, an argument index, a slot) as source text: only a
    true ``int`` is ever written into the source, so no plan text can reach it."""
    if type(v) is not int:
        raise ValueError(f"plan value {v!r} is not an integer")
    return str(v)


_HINT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class Source:
    """Lines of the generated function and the names they read (its globals).

    Every name in the source is the generator's own: buffers are ``b<int>`` locals, and any
    other value of the plan (an attribute, a constant, a scalar, a kernel) is bound as a global
    through ``name`` and referred to by a name made from a hint the generator chose."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.names: dict[str, Any] = {"_nd": np.ndarray}
        self._named: dict[tuple[str, int], str] = {}  # (hint, id of a bound value) -> name
        self._counts: dict[str, int] = {}  # hint -> names made from it so far

    def buf(self, v: Any) -> str:
        """The local holding buffer ``v``."""
        if type(v) is not int or v < 0:
            raise ValueError(f"plan buffer id {v!r} is not a non-negative integer")
        return f"b{v}"

    def name(self, hint: str, value: Any) -> str:
        """The global holding ``value``: ``_<hint>``, ``_<hint>_1``, ... (a value named from
        the same hint before keeps its name). Constant time: gpt's program binds 3500 names,
        some hints hundreds of times."""
        key = self._named.get((hint, id(value)))
        if key is not None and self.names[key] is value:
            return key
        n = self._counts.get(hint)
        if n is None:  # a hint new to this source (hints are the generator's: never fires)
            if not _HINT.fullmatch(hint):
                raise AssertionError(f"bad name hint {hint!r}")
            n = 0
        key = f"_{hint}_{n}" if n else f"_{hint}"
        while key in self.names:  # bound directly (``names[...] = ...``)
            n += 1
            key = f"_{hint}_{n}"
        self._counts[hint] = n + 1
        self.names[key] = value
        self._named[(hint, id(value))] = key
        return key

    def line(self, text: str) -> None:
        self.lines.append("    " + text)



@dataclass
class Known:
    """What the fast program knows of its values before running: which are plain numpy
    arrays of their planned dtype, and which of those are C-contiguous."""

    typed: set[int]
    contiguous: set[int]
