"""Fused plans: elementwise segments run as LLVM kernels and agree with eager and the
reference interpreter."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt
from benchmarks.workloads import WORKLOADS
from planner.fusion import segments


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BACKPLAN_CACHE_DIR", str(tmp_path))


def _outputs(name: str, backend: str | None, steps: int = 3) -> tuple[dict[str, Any], Any]:
    wl = WORKLOADS[name]
    case = wl.build(rt, wl.make_arrays(0))
    fn = case.fn if backend is None else planner.compile(case.fn, backend=backend)
    for _ in range(steps):
        out = case.outputs(fn(*case.args))
    return out, fn


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_llvm_backend_matches_eager(name: str) -> None:
    eager, _ = _outputs(name, None)
    fused, step = _outputs(name, "llvm")
    for key in eager:
        np.testing.assert_allclose(fused[key], eager[key], rtol=2e-5, atol=2e-5, err_msg=key)
    plan = step.plan
    assert plan.kernels and all(k.language == "llvm" and k.device == "cpu" for k in plan.kernels)
    assert all("define" in k.source for k in plan.kernels)
    assert plan.stats["kernels"] == len(plan.kernels) == sum(s.op == "kernel" for s in plan.steps)


def test_kernel_steps_read_only_earlier_buffers() -> None:
    _, step = _outputs("eltwise", "llvm", steps=2)
    plan = step.plan
    defined = {b for _, b in plan.inputs} | {b for _, b in plan.reads} | set(plan.consts)
    for s in plan.steps:
        for kind, v in s.args:
            if kind == "buf":
                assert v in defined, (s.op, v)
        defined.update(s.attrs["outs"] if s.op == "kernel" else [s.out])


def test_segments_keep_one_shape_and_elementwise_ops() -> None:
    wl = WORKLOADS["chain"]
    case = wl.build(rt, wl.make_arrays(0))
    plan = planner.compile(case.fn).lower(*case.args)
    segs = segments(plan)
    assert segs
    for seg in segs:
        assert all(s.shape == seg.shape for s in seg.steps)
        assert all(rt.ops.REGISTRY[s.op].lower is not None for s in seg.steps)


def test_fused_plan_summary_and_round_trip() -> None:
    _, step = _outputs("mlp_small", "llvm", steps=2)
    plan = step.plan
    assert "kernels" in plan.summary()
    again = planner.Plan.loads(plan.dumps())
    assert [s.op for s in again.steps] == [s.op for s in plan.steps]
