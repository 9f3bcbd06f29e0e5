"""Plans kept across processes (planner.plan_cache): a capture planned once is found again by a
new process, runs as the planned one did, and is found only by a capture it was planned for."""

from __future__ import annotations

import dataclasses
import functools
import io
import json
import os
import pickle
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
import pytest

import planner
import runtime as rt
from codegen import cache
from planner import fusion, plan_cache
from planner.capture import capture
from planner.returned_graphs import ReturnedNode
from runtime.ops.registry import REGISTRY

ROOT = Path(__file__).resolve().parents[2]


def _mlp(seed: int = 0, make_opt: Any = None, set_to_none: bool = True
         ) -> tuple[Any, Any, tuple[Any, ...]]:
    """A model, its training step and a batch; the step's optimizer is ``make_opt(params)``
    (default SGD, lr 0.1): one step function's code for every optimizer."""
    g = np.random.default_rng(seed)
    model = rt.nn.Sequential(rt.nn.Linear(8, 16), rt.nn.Tanh(), rt.nn.Linear(16, 3))
    with rt.no_grad():
        for p in model.parameters():
            p.copy_(rt.tensor(g.standard_normal(tuple(p.shape)).astype(np.float32)))
    opt = (make_opt or functools.partial(rt.optim.SGD, lr=0.1))(model.parameters())

    def step(x: Any, y: Any) -> Any:
        opt.zero_grad(set_to_none=set_to_none)
        loss = rt.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    x = rt.tensor(g.standard_normal((32, 8)).astype(np.float32))
    y = rt.tensor(g.integers(0, 3, 32))
    return model, step, (x, y)


def _key(fn: Any, *args: Any, backend: str = "llvm") -> str | None:
    cap = capture(fn, args)
    return plan_cache.key(cap.graph, [s.describe() for s in cap.slots], "cpu", backend)


def test_a_second_compile_loads_the_plan_and_trains_the_same(tmp_path: Path) -> None:
    losses = []
    weights = []
    for _ in range(2):
        model, fn, args = _mlp()
        step = planner.compile(fn, cache_dir=tmp_path)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            losses.append([float(step(*args)) for _ in range(4)])
        weights.append([p.detach().numpy().copy() for p in model.parameters()])
        assert step.captures == 1
        first = step
    assert first.plans_loaded == 1  # the second compile found the first one's plan
    assert losses[0] == losses[1]
    for a, b in zip(*weights):
        np.testing.assert_array_equal(a, b)
    model, fn, args = _mlp()
    eager = [float(fn(*args)) for _ in range(4)]
    np.testing.assert_allclose(losses[0], eager, rtol=1e-5)


def test_a_loaded_plan_is_the_planned_one_with_this_captures_numbers(tmp_path: Path) -> None:
    _, fn, args = _mlp()
    planned = planner.compile(fn, cache_dir=tmp_path)
    planned(*args)
    _, fn2, args2 = _mlp()
    loaded = planner.compile(fn2, cache_dir=tmp_path)
    loaded(*args2)
    assert loaded.plans_loaded == 1 and planned.plans_loaded == 0
    a, b = planned.plan, loaded.plan
    assert "graph" not in vars(b)  # a loaded plan's graph is unpickled where it is asked for
    assert a.listing() == b.listing() and a.stats == b.stats and a.slots == b.slots
    assert [k.kernel for k in a.kernels] == [k.kernel for k in b.kernels]
    assert sorted(a.graph.edges) == sorted(b.graph.edges)
    # the autograd numbers are the second capture's (numbers count up through a process),
    # not the first's that the entry was written with
    numbered = [v for v, d in a.graph.nodes(data=True) if d.get("sequence_nr") is not None]
    assert numbered
    assert all(b.graph.nodes[v]["sequence_nr"] > a.graph.nodes[v]["sequence_nr"]
               for v in numbered)


_CHILD = """
import json, sys, warnings
warnings.simplefilter("error")
sys.path.insert(0, {tests!r})
from test_plan_cache import _mlp
import planner
model, fn, args = _mlp()
step = planner.compile(fn)
losses = [float(step(*args)) for _ in range(3)]
print(json.dumps({{"losses": losses, "loaded": step.plans_loaded,
                  "w": [p.detach().numpy().tolist() for p in model.parameters()]}}))
"""


def test_a_new_process_finds_the_plan_whatever_its_hash_seed(tmp_path: Path) -> None:
    runs = []
    for seed in ("1", "2"):
        env = dict(os.environ, BACKPLAN_CACHE_DIR=str(tmp_path), PYTHONHASHSEED=seed)
        child = _CHILD.format(tests=str(Path(__file__).parent))
        out = subprocess.run([sys.executable, "-c", child], env=env, cwd=ROOT, check=True,
                             capture_output=True, text=True)
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    assert [r["loaded"] for r in runs] == [0, 1]
    assert runs[0]["losses"] == runs[1]["losses"] and runs[0]["w"] == runs[1]["w"]


def test_the_key_tells_apart_what_planning_reads() -> None:
    x = rt.tensor(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4))
    c = np.float32(2.5)

    def f(x: Any) -> Any:
        return (x * rt.full((4,), float(c))).tanh().sum(dim=1) * 3.0

    base = _key(f, x)
    assert base is not None and base == _key(f, x)  # sequence numbers differ, the key does not
    assert _key(lambda x: (x * rt.full((4,), float(c))).tanh().sum(dim=0) * 3.0, x) != base
    bumped = float(np.nextafter(c, np.float32(9)))
    assert _key(lambda x: (x * rt.full((4,), bumped)).tanh().sum(dim=1) * 3.0, x) != base
    assert _key(lambda x: (x * rt.full((4,), float(c))).tanh().sum(dim=1) * 3.0000001,
                x) != base  # a scalar argument
    assert _key(f, rt.tensor(np.ones((2, 4), np.float32))) != base  # a shape
    assert _key(f, x.double()) != base  # a dtype
    assert _key(f, x, backend="interpreter") != base
    with mock.patch.object(fusion, "MIN_ELEMENTS", 1):  # a setting of the fusion pass
        assert _key(f, x) != base
    tanh = REGISTRY["tanh"]
    with mock.patch.dict(REGISTRY, {"tanh": dataclasses.replace(tanh, lower=None)}):
        assert _key(f, x) != base  # the primitive as registered now
    # a tensor the step reads is state, read at each replay: its values are not the plan's
    t = rt.tensor(np.ones(4, np.float32))
    before = _key(lambda x: x * t, x)
    t.data.copy_(rt.tensor(np.full(4, 7, np.float32)))
    assert _key(lambda x: x * t, x) == before


def test_a_capture_the_key_cannot_describe_is_planned_and_not_kept(tmp_path: Path) -> None:
    tanh = REGISTRY["tanh"]
    mine = dataclasses.replace(tanh, impl=lambda xp, a: xp.tanh(a))  # not the project's code
    x = rt.tensor(np.linspace(-1, 1, 8, dtype=np.float32))

    def f(x: Any) -> Any:
        return x.tanh() * 2

    with mock.patch.dict(REGISTRY, {"tanh": mine}):
        assert _key(f, x) is None
        step = planner.compile(f, cache_dir=tmp_path)
        np.testing.assert_allclose(step(x).numpy(), np.tanh(x.numpy()) * 2, rtol=1e-6)
    assert not list((tmp_path / cache.PLANS_DIR / cache.ENTRY_DIR).glob("*.module"))


def _only_entry(tmp_path: Path) -> Path:
    (entry,) = (tmp_path / cache.PLANS_DIR / cache.ENTRY_DIR).glob("*.module")
    return entry


def test_an_altered_entry_is_rejected_and_planned_again(tmp_path: Path) -> None:
    _, fn, args = _mlp()
    want = float(planner.compile(fn, cache_dir=tmp_path)(*args))
    entry = _only_entry(tmp_path)
    data = bytearray(entry.read_bytes())
    data[-20] ^= 1
    entry.write_bytes(bytes(data))
    _, fn, args = _mlp()
    step = planner.compile(fn, cache_dir=tmp_path)
    with pytest.warns(RuntimeWarning, match="rejected: digest mismatch"):
        got = float(step(*args))
    assert got == want and step.plans_loaded == 0
    _, fn, args = _mlp()
    step = planner.compile(fn, cache_dir=tmp_path)  # planned again, and kept again
    assert float(step(*args)) == want and step.plans_loaded == 1


class _Evil:
    def __reduce__(self) -> Any:
        return (os.system, ("echo owned",))


def test_a_signed_entry_naming_a_function_is_refused(tmp_path: Path) -> None:
    _, fn, args = _mlp()
    want = float(planner.compile(fn, cache_dir=tmp_path)(*args))
    key = _only_entry(tmp_path).name.removesuffix(".module")
    # as if the cache's secret were known: the entry verifies, and still names only data
    cache.store_plan(key, pickle.dumps(_Evil()), tmp_path)
    calls = []
    _, fn, args = _mlp()
    step = planner.compile(fn, cache_dir=tmp_path)
    with mock.patch.object(os, "system", lambda cmd: calls.append(cmd) or 0), \
            pytest.warns(RuntimeWarning, match="may not name posix.system"):
        got = float(step(*args))
    assert calls == [] and got == want and step.plans_loaded == 0
    with pytest.raises(pickle.UnpicklingError, match="may not name"):
        plan_cache._PlanUnpickler(io.BytesIO(pickle.dumps(_Evil()))).load()


def test_clearing_the_cache_deletes_the_plans(tmp_path: Path) -> None:
    _, fn, args = _mlp()
    planner.compile(fn, cache_dir=tmp_path)(*args)
    entry = _only_entry(tmp_path)
    assert entry in cache.clear_cache(tmp_path)
    assert not entry.exists()


def test_every_workload_plan_pickles_through_the_unpickler() -> None:
    from benchmarks.workloads import WORKLOADS

    for name in ("mlp_small", "chain", "cnn"):
        wl = WORKLOADS[name]
        case = wl.build(rt, wl.make_arrays(0))
        plan = planner.compile(case.fn).lower(*case.args)
        loaded = plan_cache._PlanUnpickler(io.BytesIO(pickle.dumps(plan, protocol=5))).load()
        assert loaded.listing() == plan.listing()


def test_a_loaded_plan_runs_its_fast_program(tmp_path: Path) -> None:
    """Its dtypes are the runtime's and numpy's own objects (the program compares them with
    ``is``): a copy would send every call to the checked program, slower and holding more."""
    from runtime import _dtype as D

    for _ in range(2):
        _, fn, args = _mlp()
        step = planner.compile(fn, cache_dir=tmp_path)
        step(*args)
    assert step.plans_loaded == 1
    plan = step.plan
    assert all(s.dtype is D.as_dtype(s.dtype.name) for s in plan.steps)
    assert all(dtype is np.dtype(dtype.str) for _, dtype in plan.schedule.metas.values())
    step(*args)  # the first replay has run (it builds the programs)
    fast = plan.executable.program()

    def checked(*a: Any) -> Any:
        raise AssertionError("the fast program fell back to the checked one")

    # planner.native: the native program and the plain one may both run
    programs = [fast.native, fast.plain_program()] if hasattr(fast, "native") else [fast]
    for program in programs:
        program.__globals__["_checked"] = checked
    step(*args)


def _counting_captures() -> tuple[list[int], Any]:
    captures: list[int] = []
    real = planner.compile.__globals__["capture"]

    def counting(*a: Any, **k: Any) -> Any:
        captures[-1] += 1
        return real(*a, **k)

    return captures, mock.patch.dict(planner.compile.__globals__, {"capture": counting})


@pytest.mark.parametrize(("make_opt", "set_to_none", "expected", "warmups"), [
    # Adam holds no state before its first step: it makes it outside the capture
    # (Optimizer._lazy_state), so no call runs eagerly
    (functools.partial(rt.optim.Adam, lr=0.01), True, [1, 1, 1], 0),
    # the first backward makes the .grads zero_grad(set_to_none=False) found None: the first
    # compile captures to learn it, runs eagerly and captures again; a later one with the
    # same cache runs eagerly at once; another cache knows nothing of it
    (functools.partial(rt.optim.SGD, lr=0.1), False, [2, 1, 2], 1)])
def test_a_step_that_created_state_runs_eagerly_first_in_a_later_process(
        tmp_path: Path, make_opt: Any, set_to_none: bool, expected: list[int],
        warmups: int) -> None:
    """A step whose first call creates state runs it eagerly and captures once after it;
    all train as eager mode does."""
    captures, patch = _counting_captures()
    losses, weights = [], []
    for cache_dir in (tmp_path, tmp_path, tmp_path / "other"):
        model, fn, args = _mlp(make_opt=make_opt, set_to_none=set_to_none)
        step = planner.compile(fn, backend="llvm", cache_dir=cache_dir)
        captures.append(0)
        with patch:
            losses.append([float(step(*args)) for _ in range(3)])
        weights.append([p.detach().numpy().copy() for p in model.parameters()])
        assert (step.warmups, step.captures) == (warmups, 1)
    assert captures == expected
    model, fn, args = _mlp(make_opt=make_opt, set_to_none=set_to_none)
    eager = [float(fn(*args)) for _ in range(3)]
    for got in losses:
        np.testing.assert_allclose(got, eager, rtol=1e-5)
    assert losses[0] == losses[1]
    for a, b in zip(weights[0], weights[1]):
        np.testing.assert_array_equal(a, b)


def test_the_same_code_stepping_another_optimizer_finds_no_marker(tmp_path: Path) -> None:
    """SGD with momentum creates its buffers on the first step, plain SGD nothing: the same
    step code with plain SGD, after the momentum one left its marker, captures and replays
    its first call (its result is the plan's, not an eager tensor)."""
    _, fn, args = _mlp(make_opt=functools.partial(rt.optim.SGD, lr=0.1, momentum=0.9))
    planner.compile(fn, cache_dir=tmp_path)(*args)
    _, fn, args = _mlp(make_opt=functools.partial(rt.optim.SGD, lr=0.1))
    step = planner.compile(fn, cache_dir=tmp_path)
    loss = step(*args)
    assert step.warmups == 0 and isinstance(loss.grad_fn, ReturnedNode)


def test_the_warm_up_key_is_none_where_another_process_could_not_find_it() -> None:
    _, fn, args = _mlp(make_opt=functools.partial(rt.optim.Adam, lr=0.01))
    key = ("leaf", True, ("T", (32, 8), "float32", "cpu", False))
    assert plan_cache.warm_up_key(fn, key) == plan_cache.warm_up_key(fn, key)
    assert plan_cache.warm_up_key(fn, key) != plan_cache.warm_up_key(fn, key[:2])
    assert plan_cache.warm_up_key(fn, key + (("O", "object", 1234),)) is None
    assert plan_cache.warm_up_key(len, key) is None  # a builtin has no code
    assert plan_cache.warm_up_key(lambda x: x * 2, key) is None  # it steps no optimizer
    fn(*args)  # the optimizer holds state now: another key
    assert plan_cache.warm_up_key(fn, key) != plan_cache.warm_up_key(
        _mlp(make_opt=functools.partial(rt.optim.Adam, lr=0.01))[1], key)


def _deep_mlp() -> tuple[Any, tuple[Any, ...]]:
    """A step whose program is long enough to be kept (planner.program.KEEP_CODE_CHARS)."""
    g = np.random.default_rng(5)
    layers: list[Any] = []
    for _ in range(6):
        layers += [rt.nn.Linear(16, 16), rt.nn.Tanh()]
    model = rt.nn.Sequential(*layers, rt.nn.Linear(16, 3))
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

    return step, (rt.tensor(g.standard_normal((32, 16)).astype(np.float32)),
                  rt.tensor(g.integers(0, 3, 32)))


def _program_compiles(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The file names of the plan programs compiled from now on (planner.program)."""
    from planner import program

    compiled: list[str] = []

    def counting(text: str, filename: str, mode: str) -> Any:
        if filename.startswith("<plan program"):
            compiled.append(filename)
        return compile(text, filename, mode)

    monkeypatch.setattr(program, "compile", counting, raising=False)
    return compiled


def test_a_new_process_loads_the_programs_bytecode(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The first replay of a plan kept by an earlier process loads its program's code from
    the cache instead of compiling its text again, and trains the same."""
    from planner import program

    compiled = _program_compiles(monkeypatch)
    fn, args = _deep_mlp()
    first = planner.compile(fn, cache_dir=tmp_path)
    want = [float(first(*args)) for _ in range(3)]
    assert len(first.plan.executable.program().source) >= program.KEEP_CODE_CHARS
    assert compiled and cache.plan_entries(tmp_path, cache.PROGRAMS_DIR)
    compiled.clear()
    fn, args = _deep_mlp()
    second = planner.compile(fn, cache_dir=tmp_path)  # a new process's step, as far as it sees
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = [float(second(*args)) for _ in range(3)]
    assert second.plans_loaded == 1 and got == want
    assert compiled == []
    assert "programs' bytecode" in _cache_info(tmp_path)
    cache.clear_cache(tmp_path)
    assert not cache.plan_entries(tmp_path, cache.PROGRAMS_DIR)


def _cache_info(directory: Path) -> str:
    import contextlib
    import types

    from planner.cli_cache import run_cache

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        run_cache(types.SimpleNamespace(dir=directory, clear=False, action="info"))
    return out.getvalue()


def test_an_altered_program_entry_is_rejected_and_compiled_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    compiled = _program_compiles(monkeypatch)
    fn, args = _deep_mlp()
    want = [float(planner.compile(fn, cache_dir=tmp_path)(*args)) for _ in range(2)]
    for entry in cache.plan_entries(tmp_path, cache.PROGRAMS_DIR):
        data = bytearray(entry.read_bytes())
        data[-20] ^= 1
        entry.write_bytes(bytes(data))
    compiled.clear()
    fn, args = _deep_mlp()
    step = planner.compile(fn, cache_dir=tmp_path)
    with pytest.warns(RuntimeWarning, match="rejected: digest mismatch"):
        got = [float(step(*args)) for _ in range(2)]
    assert got == want and step.plans_loaded == 1 and compiled


def test_a_tensor_size_keys_and_loads() -> None:
    """``Tensor.shape`` is an ``rt.Size`` (a tuple subclass): one reaching a capture's
    attributes still keys (the key pickler refused every class it did not know, and such a
    plan was silently never kept) and a kept plan holding one loads."""
    from runtime.ops.shapes import Size

    out = io.BytesIO()
    plan_cache._KeyPickler(out, protocol=plan_cache.PROTOCOL).dump({"shape": Size((2, 3))})
    data = pickle.dumps({"shape": Size((2, 3))}, protocol=plan_cache.PROTOCOL)
    back = plan_cache._PlanUnpickler(io.BytesIO(data)).load()
    assert type(back["shape"]) is Size and back["shape"] == (2, 3)


def test_a_kept_plan_loads_its_schedule_instead_of_computing_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The kept plan carries its schedule (``Plan.kept_state``): a new process loads it
    (equal to the one computed from the steps) and computes none."""
    from planner import plan as plan_module
    from planner.schedule import compute, needed_buffers

    _, fn, args = _mlp()
    planner.compile(fn, cache_dir=tmp_path)(*args)

    def no_compute(*a: Any, **k: Any) -> Any:
        raise AssertionError("the schedule was computed again")

    _, fn, args = _mlp()
    step = planner.compile(fn, cache_dir=tmp_path)
    real = plan_module.compute
    monkeypatch.setattr(plan_module, "compute", no_compute)
    step(*args)
    assert step.plans_loaded == 1
    monkeypatch.setattr(plan_module, "compute", real)
    plan = step.plan
    outputs = plan.graph.graph.get("outputs", ())
    assert plan.schedule == compute(plan.steps, needed_buffers(plan.steps, plan.writes,
                                                               plan.returns, outputs))
    copied = pickle.loads(pickle.dumps(plan))  # a plain copy still computes its own
    assert copied.schedule == plan.schedule and copied.schedule is not plan.schedule


def test_a_kept_plan_keeps_its_kernels_digests(tmp_path: Any) -> None:
    """A plan kept across processes holds each kernel's launch digest (codegen.cache's module
    key), so a warm first call finds its module without hashing the kernels again."""
    import pickle

    from codegen.cache import cache_key, launch_digest
    from planner.executable import kernels_by_device

    x = rt.randn(4, 3, requires_grad=True)

    def step(x: Any) -> Any:
        loss = (x.tanh() * 2).sum()
        loss.backward()
        return loss

    compiled = planner.compile(step, backend="llvm", cache_dir=tmp_path, background=False)
    compiled(x)
    kernels = [k for ks in kernels_by_device(compiled.plan).values() for k in ks]
    assert kernels and all("_launch_digest" in k.__dict__ for k in kernels)
    again = pickle.loads(pickle.dumps(kernels, 5))
    assert [k.__dict__["_launch_digest"] for k in again] == [launch_digest(k) for k in kernels]
    assert cache_key(again) == cache_key(kernels)
