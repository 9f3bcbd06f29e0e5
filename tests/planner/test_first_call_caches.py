"""What a warm first call (a new process, the compiled-code cache filled by an earlier one)
no longer does again: compile its replay's written-out code (planner.compile._Replayer, from
the cache like a program's), decode a function's bytecode twice for its guards
(planner.guards), make the arrays of the same failing run over and over while its program
looks for native runs (planner.native.find_run's cuts); and what it no longer keeps alive
for the garbage collector to walk (a capture's tracer and graph)."""

from __future__ import annotations

import gc
import os
import weakref
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np
import pytest

import planner
import runtime as rt
from benchmarks.workloads import WORKLOADS
from codegen import cache
from planner import guards, native, plan_cache, program
from planner.capture import capture
from planner.program import build_program


def _wide_mlp(depth: int = 24) -> tuple[Any, tuple[Any, ...]]:
    """A step with many parameters: its replay's written-out code (a read and a store per
    parameter and gradient) is longer than planner.program.KEEP_CODE_CHARS."""
    g = np.random.default_rng(7)
    layers: list[Any] = []
    for _ in range(depth):
        layers += [rt.nn.Linear(8, 8), rt.nn.Tanh()]
    model = rt.nn.Sequential(*layers, rt.nn.Linear(8, 3))
    with rt.no_grad():
        for p in model.parameters():
            p.copy_(rt.tensor(0.3 * g.standard_normal(tuple(p.shape)).astype(np.float32)))
    opt = rt.optim.SGD(model.parameters(), lr=0.1)

    def step(x: Any, y: Any) -> Any:
        opt.zero_grad()
        loss = rt.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    return step, (rt.tensor(g.standard_normal((16, 8)).astype(np.float32)),
                  rt.tensor(g.integers(0, 3, 16)))


def _replay_compiles(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The texts of the replays compiled from now on (planner.program.code_of)."""
    compiled: list[str] = []

    def counting(text: str, filename: str, mode: str) -> Any:
        if filename == "<replay>":
            compiled.append(text)
        return compile(text, filename, mode)

    monkeypatch.setattr(program, "compile", counting, raising=False)
    return compiled


def test_a_new_process_loads_its_replays_code(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    compiled = _replay_compiles(monkeypatch)
    fn, args = _wide_mlp()
    first = planner.compile(fn, cache_dir=tmp_path)
    want = [float(first(*args)) for _ in range(3)]
    assert len(compiled) == 1 and len(compiled[0]) >= program.KEEP_CODE_CHARS
    kept = cache.plan_entries(tmp_path, cache.PROGRAMS_DIR)
    compiled.clear()
    fn, args = _wide_mlp()
    second = planner.compile(fn, cache_dir=tmp_path)  # a new process's step, as far as it sees
    got = [float(second(*args)) for _ in range(3)]
    assert second.plans_loaded == 1 and got == want
    assert compiled == []  # its code came from the entry the first one kept
    assert cache.plan_entries(tmp_path, cache.PROGRAMS_DIR) == kept


def test_an_altered_replay_entry_is_rejected_and_compiled_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    compiled = _replay_compiles(monkeypatch)
    fn, args = _wide_mlp()
    want = [float(planner.compile(fn, cache_dir=tmp_path)(*args)) for _ in range(2)]
    replay = compiled[0]
    for entry in cache.plan_entries(tmp_path, cache.PROGRAMS_DIR):
        data = bytearray(entry.read_bytes())
        data[-20] ^= 1
        entry.write_bytes(bytes(data))
    compiled.clear()
    fn, args = _wide_mlp()
    step = planner.compile(fn, cache_dir=tmp_path)
    with pytest.warns(RuntimeWarning, match="rejected: digest mismatch"):
        got = [float(step(*args)) for _ in range(2)]
    assert got == want and step.plans_loaded == 1 and compiled == [replay]


def test_a_short_replay_is_compiled_and_not_kept(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    compiled = _replay_compiles(monkeypatch)
    fn, args = _wide_mlp(depth=1)
    step = planner.compile(fn, cache_dir=tmp_path)
    for _ in range(2):
        step(*args)
    assert len(compiled) == 1 and len(compiled[0]) < program.KEEP_CODE_CHARS
    assert cache.plan_entries(tmp_path, cache.PROGRAMS_DIR) == []  # nor its short program


def test_guards_decode_a_function_once() -> None:
    def helper(a: Any) -> Any:
        return a * 2

    guards._instructions.cache_clear()
    found = guards.accesses(helper, {})  # its stored names, then its walk
    info = guards._instructions.cache_info()
    assert (info.misses, info.hits) == (1, 1)
    assert found.writes == {} and found.reads == []


def test_the_sources_digest_is_os_walks(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every Python source of the planning packages by path, size and modification time, in
    os.walk's order (sorted names, files before subfolders)."""
    import hashlib

    root = Path(plan_cache.__file__).resolve().parents[1]
    h = hashlib.sha256()
    for package in ("runtime", "planner", "codegen"):
        for folder, subfolders, files in os.walk(root / package):
            subfolders.sort()
            where = folder[len(str(root)) + 1:]
            for name in sorted(files):
                if name.endswith(".py"):
                    st = os.stat(os.path.join(folder, name))
                    h.update(f"{where}/{name}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
    assert plan_cache._sources_digest.__wrapped__() == h.hexdigest()


def _cnn_plan() -> Any:
    wl = WORKLOADS["cnn"]
    case = wl.build(rt, wl.make_arrays(0))
    step = planner.compile(case.fn, backend="llvm", background=False)
    for _ in range(2):
        step(*case.args)
    return step.plan


def test_cuts_find_the_runs_the_full_search_finds(monkeypatch: pytest.MonkeyPatch) -> None:
    """cnn's program tries 45 starts in a row whose runs fail at one view: with the cuts it
    makes that run's arrays far fewer times, and finds the same runs (the same program) as a
    search that tries every start in full."""
    plan = _cnn_plan()
    checked: list[int] = []
    check = native._checked_run

    def counting(p: Any, members: list[Any], known: Any) -> Any:
        checked.append(members[0].index)
        return check(p, members, known)

    monkeypatch.setattr(native, "_checked_run", counting)
    with_cuts = build_program(plan, native=True, in_place=True)
    tries_with_cuts = len(checked)
    checked.clear()
    find = native.find_run

    def without_cuts(*args: Any, **kwargs: Any) -> Any:
        search = args[6]  # what earlier starts learned, but none of their cuts
        return find(*args[:6], native.Search(search.members), **kwargs)

    monkeypatch.setattr(native, "find_run", without_cuts)
    full = build_program(plan, native=True, in_place=True)
    assert with_cuts is not None and full is not None
    assert with_cuts.source == full.source
    assert tries_with_cuts < len(checked) // 2


def test_a_capture_is_freed_without_a_garbage_collection() -> None:
    """A capture's tracer, graph and tensors are freed when the capture is dropped: nothing
    of it is held by a cycle (a recursive closure over the tracer's ``device_of`` held them
    all, gpt's 16000 objects, until the next collection)."""
    fn, args = _wide_mlp(depth=2)
    was = gc.isenabled()
    gc.disable()
    try:
        cap = capture(fn, args)
        graph = weakref.ref(cap.graph)
        assert cap.returned_graphs  # the loss, which requires grad
        del cap
        assert graph() is None
    finally:
        if was:
            gc.enable()


def test_a_loaded_plan_keeps_the_captures_numbers_not_its_graph(tmp_path: Path) -> None:
    """A plan loaded from the cache numbers its graph's nodes as this process's capture did,
    where its graph is asked for: it keeps those numbers, not the capture's whole graph."""
    fn, args = _wide_mlp(depth=2)
    planned = planner.compile(fn, cache_dir=tmp_path)
    planned(*args)
    fn, args = _wide_mlp(depth=2)
    loaded = planner.compile(fn, cache_dir=tmp_path)
    loaded(*args)
    assert loaded.plans_loaded == 1
    loader = vars(loaded.plan)["_graph_loader"]
    held = [*loader.args, *loader.keywords.values()]
    assert not any(isinstance(a, nx.DiGraph) for a in held)
    a, b = planned.plan.graph, loaded.plan.graph
    numbered = [v for v, d in a.nodes(data=True) if d.get("sequence_nr") is not None]
    assert numbered and all(b.nodes[v]["sequence_nr"] > a.nodes[v]["sequence_nr"]
                            for v in numbered)


def test_the_first_replay_builds_its_program_with_the_collector_held_off(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A first call's capture, planning and program build are one burst of allocations: no
    collection walks what they made halfway (gpt's made 4); the collector is on after it."""
    from planner import executable

    enabled: list[bool] = []
    build = executable.build_program

    def recording(*args: Any, **kwargs: Any) -> Any:
        enabled.append(gc.isenabled())
        return build(*args, **kwargs)

    monkeypatch.setattr(executable, "build_program", recording)
    fn, args = _wide_mlp(depth=2)
    step = planner.compile(fn, backend="llvm", background=False)
    assert gc.isenabled()
    step(*args)
    assert enabled and not any(enabled)
    assert gc.isenabled()
