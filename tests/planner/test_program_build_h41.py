"""The cost cuts of a native program's build (issue 12's first call: planner.native's
find_run, _checked_run and emit_run) change nothing it builds: the same source, the same
runs, as a build that tries every start in full."""

from __future__ import annotations

from typing import Any

import pytest

import planner
import runtime as rt
from benchmarks.workloads import WORKLOADS
from planner import native
from planner.program import build_program


def _plan(name: str) -> Any:
    wl = WORKLOADS[name]
    case = wl.build(rt, wl.make_arrays(0))
    step = planner.compile(case.fn, backend="llvm", background=False)
    for _ in range(2):
        step(*case.args)
    return step.plan


@pytest.mark.parametrize("name", ["mlp_small", "cnn", "rnn", "gpt", "chain"])
def test_a_program_built_twice_has_the_same_source(name: str) -> None:
    plan = _plan(name)
    for in_place in (True, False):
        first = build_program(plan, native=True, in_place=in_place)
        second = build_program(plan, native=True, in_place=in_place)
        assert (first is None) == (second is None)
        if first is not None:
            assert first.source == second.source
            assert sorted(first.__globals__) == sorted(second.__globals__)
        assert build_program(plan).source == build_program(plan).source


def test_starts_a_cut_leaves_short_of_calls_are_not_walked(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """cnn's 46 starts before one cut each walked every member up to it (1000 member visits)
    to find fewer than MIN_CALLS calls: the first such start marks them barren, and the
    program is the one a search that walks every start in full builds."""
    plan = _plan("cnn")
    find = native.find_run
    walked: list[int] = []

    def counting(*args: Any, **kwargs: Any) -> Any:
        if args[1] >= args[6].barren:
            walked.append(args[1])
        return find(*args, **kwargs)

    monkeypatch.setattr(native, "find_run", counting)
    searched = build_program(plan, native=True, in_place=True)
    walks = len(walked)

    def in_full(*args: Any, **kwargs: Any) -> Any:
        return find(*args[:6], native.Search(), **kwargs)

    monkeypatch.setattr(native, "find_run", in_full)
    full = build_program(plan, native=True, in_place=True)
    assert searched is not None and full is not None
    assert searched.source == full.source
    assert walks < 40, walked


class _CountingRoot(native._Root):
    """A root that counts the reads of its ``end`` (how often the layout looks at it)."""

    reads = 0

    def __getattribute__(self, name: str) -> Any:
        if name == "end":
            _CountingRoot.reads += 1
        return super().__getattribute__(name)


def _first_fit(roots: list[Any]) -> list[int]:
    """The layout's offsets as the plain first fit by liveness places them (every root
    placed so far tested for overlap)."""
    placed: list[tuple[int, int, int]] = []  # (end, offset, bytes)
    offsets = {}
    for k, r in sorted(enumerate(roots), key=lambda kr: kr[1].start):
        offset = 0
        for _, at, n in sorted((p for p in placed if p[0] >= r.start), key=lambda p: p[1]):
            if offset + r.nbytes <= at:
                break
            offset = max(offset, at + n)
        offsets[k] = offset
        placed.append((r.end, offset, r.nbytes))
    return [offsets[k] for k in range(len(roots))]


def test_the_layout_looks_at_a_dead_root_no_more() -> None:
    """rnn's 118-step run placed each root against every root placed before it: a root dead
    before one root's start is dead before every later one's, so the layout drops it (the
    offsets are first fit's, as before)."""
    import numpy as np

    g = np.random.default_rng(0)
    roots = []
    for k in range(600):
        start = int(g.integers(0, 1200))
        roots.append(_CountingRoot(k, (int(g.integers(1, 300)),), np.dtype(np.float32),
                                   start, start + int(g.integers(0, 6))))
    run = native.Run([])
    run.roots = roots
    expected = _first_fit(roots)
    _CountingRoot.reads = 0
    run.lay_out()
    assert [r.offset for r in roots] == expected
    assert run.peak == max(r.offset + r.nbytes for r in roots)
    assert _CountingRoot.reads < 20 * len(roots)


def test_a_hint_is_matched_once_a_source(monkeypatch: pytest.MonkeyPatch) -> None:
    """gpt's program binds 3500 names, most from hints bound before: a hint is checked
    (``_HINT``) the first time a source names from it, and still refused when bad."""
    from planner import source

    matched: list[str] = []
    pattern = source._HINT

    class Counting:
        def fullmatch(self, text: str) -> Any:
            matched.append(text)
            return pattern.fullmatch(text)

    monkeypatch.setattr(source, "_HINT", Counting())
    src = source.Source()
    names = [src.name("shape", (k,)) for k in range(50)]
    assert names[:3] == ["_shape", "_shape_1", "_shape_2"] and len(set(names)) == 50
    assert matched == ["shape"]
    with pytest.raises(AssertionError, match="bad name hint"):
        src.name("no good", 1)


@pytest.mark.parametrize("name", ["cnn", "gpt"])
def test_a_step_is_specialized_once_a_build(name: str, monkeypatch: pytest.MonkeyPatch
                                            ) -> None:
    """A step the run search specialized (its member) and then left out of every run gets
    that fast path for its plain line instead of specializing again (cnn's window
    functions: 2 ms); the program is the one a build specializing again writes."""
    from planner.steps import PrimitiveStep
    from runtime.ops.registry import Primitive

    plan = _plan(name)
    before = build_program(plan, native=True, in_place=True)
    asked: list[Any] = []
    specialize = Primitive.specialize

    def counting(self: Any, arg_metas: Any, attrs: Any, out_meta: Any) -> Any:
        asked.append((self.name, out_meta))
        return specialize(self, arg_metas, attrs, out_meta)

    monkeypatch.setattr(Primitive, "specialize", counting)
    again = build_program(plan, native=True, in_place=True)
    assert before is not None and again is not None and again.source == before.source
    primitives = sum(isinstance(s, PrimitiveStep) for s in plan.steps)
    assert len(asked) <= primitives


@pytest.mark.parametrize("name", ["cnn", "rnn"])
def test_a_members_inputs_are_listed_once_a_build(name: str,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A run's tests and emission read each member's inputs many times (rnn's build listed
    steps' buffers 536 times for 215 steps): a member lists them once (``_Member.inputs``)
    and every start tried, every test and the emission share that list."""
    from planner import steps

    plan = _plan(name)
    before = build_program(plan, native=True, in_place=True)
    listed = [0]
    buffers = steps.Step.buffers

    def counting(self: Any) -> list[int]:
        listed[0] += 1
        return buffers.fget(self)

    monkeypatch.setattr(steps.Step, "buffers", property(counting))
    again = build_program(plan, native=True, in_place=True)
    assert before is not None and again is not None and again.source == before.source
    assert listed[0] < 1.5 * len(plan.steps)
