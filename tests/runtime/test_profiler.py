"""rt.profiler (torch.profiler on the CPU) and rt.autograd.profiler: events of ops, autograd
nodes, compiled steps and record_function ranges, their nesting and times, key_averages and
its table, schedules and traces."""

from __future__ import annotations

import gzip
import json
import warnings

import pytest

import planner
import runtime as rt
from runtime import _profiling
from runtime.profiler import (ProfilerAction, ProfilerActivity, profile, record_function,
                              schedule, tensorboard_trace_handler)


def _work(x: rt.Tensor) -> rt.Tensor:
    y = (x @ x).relu().sum()
    y.backward()
    return y


def test_ops_autograd_nodes_and_user_ranges_nest() -> None:
    x = rt.randn(4, 4, requires_grad=True)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
        with record_function("block"):
            _work(x)
    assert _profiling.ACTIVE is None
    events = prof.events()
    names = [e.name for e in events]
    assert names[0] == "block" and "aten::matmul" in names and "aten::sum" in names
    assert any(n.startswith("autograd::engine::evaluate_function: MmBackward0") for n in names)
    block = events[0]
    assert all(e.cpu_parent is not None for e in events[1:])  # everything ran inside block
    assert block.cpu_time_total >= sum(c.cpu_time_total for c in block.cpu_children)
    assert 0 <= block.self_cpu_time_total <= block.cpu_time_total
    matmul = next(e for e in events if e.name == "aten::matmul")
    assert matmul.input_shapes == [[4, 4], [4, 4]]
    node = next(e for e in events if e.name.endswith("MmBackward0"))
    assert any(c.name == "aten::matmul" for c in node.cpu_children)  # its backward's ops


def test_key_averages_and_table() -> None:
    x = rt.randn(3, 3, requires_grad=True)
    with profile(record_shapes=True) as prof:
        for _ in range(3):
            (x * 2).sum()
    averages = prof.key_averages()
    mul = next(a for a in averages if a.key == "aten::mul")
    assert mul.count == 3 and mul.cpu_time == pytest.approx(mul.cpu_time_total / 3)
    table = averages.table(sort_by="cpu_time_total", row_limit=5)
    lines = table.splitlines()
    assert lines[1].split() == ["Name", "Self", "CPU", "%", "Self", "CPU", "CPU", "total", "%",
                                "CPU", "total", "CPU", "time", "avg", "#", "of", "Calls"]
    assert any(line.strip().startswith("aten::mul") and line.split()[-1] == "3"
               for line in lines)
    assert lines[-1].startswith("Self CPU time total: ")
    grouped = prof.key_averages(group_by_input_shape=True).table()
    assert "Input Shapes" in grouped and "[[3, 3], []]" in grouped
    with pytest.raises(AttributeError, match="no time 'device_memory'"):
        averages.table(sort_by="device_memory")


def test_nothing_is_recorded_outside_and_recording_stops_on_error() -> None:
    x = rt.randn(2)
    with pytest.raises(ValueError, match="inside"):
        with profile() as prof:
            (x + 1).sum()
            raise ValueError("inside")
    assert _profiling.ACTIVE is None
    (x + 2).sum()
    assert [e.name for e in prof.events()] == ["aten::add", "aten::sum"]
    with record_function("unrecorded"):  # no profile: a no-op
        (x * 3).sum()


def test_a_compiled_step_is_one_event() -> None:
    model = rt.nn.Linear(8, 4)
    opt = rt.optim.SGD(model.parameters(), lr=0.1)

    def step(a: rt.Tensor) -> rt.Tensor:
        opt.zero_grad()
        loss = model(a).pow(2).mean()
        loss.backward()
        opt.step()
        return loss

    compiled = planner.compile(step)
    a = rt.randn(16, 8)
    compiled(a)
    compiled(a)
    with profile() as prof:
        compiled(a)
    assert [e.name for e in prof.events()] == [f"backplan::compiled_step: {step.__qualname__}"]


def test_nested_profiles_are_refused() -> None:
    with profile():
        with pytest.raises(RuntimeError, match="already enabled"):
            with profile():
                pass
    assert _profiling.ACTIVE is None


@pytest.mark.parametrize("flag", ["profile_memory", "with_stack", "with_flops", "with_modules"])
def test_what_is_not_recorded_is_refused(flag: str) -> None:
    with pytest.raises(NotImplementedError, match=flag):
        profile(**{flag: True})


def test_cuda_activity_without_a_gpu_warns_and_profiles_the_cpu() -> None:
    if rt.cuda.is_available():
        pytest.skip("a GPU is present")
    with pytest.warns(UserWarning, match="CUDA is not available"):
        prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
    assert prof.activities == {ProfilerActivity.CPU}


SCHEDULES = [dict(wait=1, warmup=1, active=2), dict(wait=0, warmup=2, active=1, repeat=2),
             dict(wait=2, warmup=1, active=3, repeat=1, skip_first=3),
             dict(wait=2, warmup=1, active=1, skip_first_wait=1)]


@pytest.mark.parametrize("kwargs", SCHEDULES)
def test_schedule_as_torch(kwargs) -> None:
    torch = pytest.importorskip("torch")
    ours, theirs = schedule(**kwargs), torch.profiler.schedule(**kwargs)
    assert [ours(s).name for s in range(25)] == [theirs(s).name for s in range(25)]


def test_schedule_drives_recording_and_on_trace_ready() -> None:
    x = rt.randn(2)
    ready: list[list[int]] = []

    def on_ready(prof: profile) -> None:
        ready.append([int(float(e.name.split(":")[-1])) for e in prof.events()
                      if e.kind == "user"])

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # warmup=0 warns, as torch's
        plan = schedule(wait=1, warmup=0, active=2, repeat=2)
    assert plan(0) is ProfilerAction.NONE and plan(2) is ProfilerAction.RECORD_AND_SAVE
    with profile(schedule=plan, on_trace_ready=on_ready) as prof:
        for i in range(8):
            with record_function(f"step:{i}"):
                (x + i).sum()
            prof.step()
    assert ready == [[1, 2], [4, 5]]


def test_chrome_trace_and_tensorboard_handler(tmp_path) -> None:
    x = rt.randn(3)
    with profile(record_shapes=True) as prof:
        (x * x).sum()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    trace = json.loads(path.read_text())
    names = [e["name"] for e in trace["traceEvents"]]
    assert names == ["aten::mul", "aten::sum"]
    assert all(e["ph"] == "X" and e["dur"] >= 0 for e in trace["traceEvents"])
    assert trace["traceEvents"][0]["args"]["Input Dims"] == [[3], [3]]
    handler = tensorboard_trace_handler(str(tmp_path / "tb"), worker_name="w", use_gzip=True)
    with profile(on_trace_ready=handler):
        (x + 1).sum()
    written = list((tmp_path / "tb").iterdir())
    assert len(written) == 1 and written[0].name.startswith("w.")
    assert written[0].name.endswith(".pt.trace.json.gz")
    with gzip.open(written[0], "rt") as f:
        assert [e["name"] for e in json.load(f)["traceEvents"]] == ["aten::add", "aten::sum"]


def test_legacy_autograd_profiler() -> None:
    x = rt.randn(4, 4, requires_grad=True)
    with rt.autograd.profiler.profile(record_shapes=True) as prof:
        with rt.autograd.profiler.record_function("fwd"):
            _work(x)
    assert prof.function_events[0].name == "fwd"
    assert "aten::matmul" in prof.table() and prof.self_cpu_time_total > 0
    with rt.autograd.profiler.profile(enabled=False) as off:
        _work(x)
    with pytest.raises(RuntimeError, match="didn't finish"):
        off.key_averages()
