"""``vmap``'s ``randomness``: every random draw of the runtime goes through a
``Generator``'s numpy source (``generator._rng``), so while a vmap runs, that attribute is
read through a descriptor that applies the innermost vmaps' modes:

- ``"error"``: any draw raises PyTorch's error;
- ``"different"``: nothing to do, each batch element runs on its own and draws afresh;
- ``"same"``: each batch element starts every generator it draws from at the state that
  generator had when the first element first drew from it, so all elements see the same
  numbers (the generator ends where one element's draws leave it).

The descriptor is on the ``Generator`` class only while some vmap runs (a count under a
lock); the modes are per thread, so other threads draw as usual meanwhile."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any

from ..creation import Generator, traced_draws
from ..tensor import Tensor
from ..tracing import GraphBreak

__all__ = ["RandomnessFrame", "check_randomness", "randomness_frame"]

ERROR_TEXT = ("vmap: called random operation while in randomness error mode. Please either use "
              "the 'same' or 'different' randomness flags on vmap or perform the randomness "
              "operation out of vmap")


def check_randomness(randomness: Any) -> None:
    if randomness not in ("error", "different", "same"):
        raise RuntimeError("Only allowed values for randomness are 'error', 'different', or "
                           f"'same'. Got {randomness}")


class RandomnessFrame:
    """One vmap call's mode and, for "same", each generator's starting state."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.element = 0
        self._start: dict[int, tuple[Generator, Any]] = {}
        self._reset_in: dict[int, int] = {}
        # a captured step's draws in "same" mode, per generator (held: ids stay theirs)
        self._traced_first: dict[int, tuple[int, Generator]] = {}
        self._traced_at: dict[int, tuple[int, int]] = {}
        self._traced: dict[int, list[tuple[tuple[Any, ...], Tensor]]] = {}

    def on_draw(self, gen: Generator) -> None:
        if self.mode == "error":
            raise RuntimeError(ERROR_TEXT)
        if self.mode != "same":
            return
        key = id(gen)
        rng = gen.__dict__["_rng"]
        if key not in self._start:  # the state and Box-Muller's kept sample (runtime._torch_rng)
            self._start[key] = (gen, (rng.bit_generator.state, gen.__dict__.get("_normal_cache")))
        elif self._reset_in.get(key) != self.element:
            rng.bit_generator.state, gen._normal_cache = self._start[key][1]
        self._reset_in[key] = self.element

    def on_traced_draw(self, gen: Generator, key: tuple[Any, ...],
                       make: Callable[[], Tensor]) -> Tensor:
        """A draw a captured step records (``runtime.creation.traced_random``): refused in
        "error" mode; in "same" mode the element that drew first records its draws and the
        others get them again, in order (copies: an element may write into its own)."""
        if self.mode == "error":
            raise RuntimeError(ERROR_TEXT)
        if self.mode != "same":
            return make()
        k = id(gen)
        first = self._traced_first.setdefault(k, (self.element, gen))[0]
        if self._traced_at.get(k, (None, 0))[0] != self.element:
            self._traced_at[k] = (self.element, 0)
        n = self._traced_at[k][1]
        self._traced_at[k] = (self.element, n + 1)
        draws = self._traced.setdefault(k, [])
        if self.element == first:
            draws.append((key, make()))
        elif n >= len(draws) or draws[n][0] != key:
            raise GraphBreak("vmap(randomness='same') whose batch elements draw different "
                             "random numbers cannot be captured")
        return draws[n][1].clone()


class _Frames(threading.local):
    def __init__(self) -> None:
        self.stack: list[RandomnessFrame] = []


_frames = _Frames()
_lock = threading.Lock()
_active = 0


class _RngThroughFrames:
    """The data descriptor standing for ``Generator._rng`` while a vmap runs."""

    def __get__(self, gen: Generator | None, owner: type) -> Any:
        if gen is None:
            return self
        for frame in _frames.stack:  # outermost first: an outer "same" resets first
            frame.on_draw(gen)
        return gen.__dict__["_rng"]

    def __set__(self, gen: Generator, rng: Any) -> None:
        gen.__dict__["_rng"] = rng


def _install() -> None:
    global _active
    with _lock:
        if _active == 0:
            Generator._rng = _RngThroughFrames()  # type: ignore[attr-defined]
        _active += 1


def _uninstall() -> None:
    global _active
    with _lock:
        _active -= 1
        if _active == 0:
            del Generator._rng  # type: ignore[attr-defined]


@contextlib.contextmanager
def randomness_frame(mode: str) -> Iterator[RandomnessFrame]:
    """A frame for one vmap call, innermost while the block runs; set ``element`` as the
    block moves from one batch element to the next."""
    frame = RandomnessFrame(mode)
    _install()
    _frames.stack.append(frame)
    traced_draws.hook = _on_traced_draw
    try:
        yield frame
    finally:
        _frames.stack.pop()
        if not _frames.stack:
            traced_draws.hook = None
        _uninstall()


def _on_traced_draw(gen: Generator, key: tuple[Any, ...], make: Callable[[], Tensor]) -> Tensor:
    """The calling thread's vmaps' modes applied to a captured draw, outermost first (an outer
    "same" hands back what its first element drew, inner vmaps' draws included)."""
    stack = list(_frames.stack)

    def through(i: int) -> Tensor:
        if i == len(stack):
            return make()
        return stack[i].on_traced_draw(gen, key, lambda: through(i + 1))

    return through(0)
