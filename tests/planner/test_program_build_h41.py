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
