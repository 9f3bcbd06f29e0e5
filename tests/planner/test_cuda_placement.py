"""Placement in a captured step (through the fake CuPy of tests/fake_cupy.py): host-device copies
are explicit to_device steps (CopySteps) in the plan's listing, a 0-d host tensor joining a
cuda op gets one too, and a step mixing devices otherwise fails at capture with PyTorch's
error. Importing the packages never needs CuPy."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from typing import Any

import pytest

import runtime as rt
from planner.capture import capture
from planner.passes import run_default_passes
from planner.plan import Plan, build_plan
from planner.steps import CopyStep
from tests.fakecuda import fake_cuda_fixture, needs_two_devices  # noqa: F401

pytestmark = pytest.mark.usefixtures("fake_cuda")
MIXED = "Expected all tensors to be on the same device, but found at least two devices, "


def _plan(step: Any, *args: Any) -> Plan:
    """The plan planner.compile makes of ``step`` (as CompiledStep._plan builds it), without
    running it."""
    cap = capture(step, args)
    captured = cap.graph.number_of_nodes()
    run_default_passes(cap.graph)
    return build_plan(cap.graph, [s.describe() for s in cap.slots], "cpu", captured)


def _copies(plan: Plan) -> list[tuple[str, str]]:
    return [(s.device, s.phase) for s in plan.steps if isinstance(s, CopyStep)]


def test_to_cuda_in_a_step_is_a_copy_step_each_way() -> None:
    w = rt.tensor([0.5, -1.0, 2.0], requires_grad=True)  # on the host
    y = rt.tensor([1.0, 2.0, 3.0], device="cuda")

    def step(y: rt.Tensor) -> rt.Tensor:
        loss = (w.to("cuda") * y).tanh().sum()
        loss.backward()
        return loss

    plan = _plan(step, y)
    # forward: w copied to the device; backward: its gradient copied back to the host
    assert _copies(plan) == [("cuda:0", "forward"), ("cpu", "backward")]
    listing = plan.listing()
    assert listing.count("to_device(") == 2
    assert "device='cuda:0'" in listing and "device='cpu'" in listing
    tanh = next(s for s in plan.steps if s.op == "tanh")
    assert tanh.device == "cuda:0"


def test_a_0d_host_tensor_in_a_cuda_op_is_copied_by_a_step() -> None:
    scale = rt.tensor(3.0)

    def step(y: rt.Tensor) -> rt.Tensor:
        return (y * scale).sum()

    plan = _plan(step, rt.ones(4, device="cuda"))
    assert _copies(plan) == [("cuda:0", "forward")]
    mul = next(s for s in plan.steps if s.op == "mul")
    assert mul.device == "cuda:0"


def test_mixing_devices_without_a_copy_fails_at_capture() -> None:
    needs_two_devices()
    host = rt.ones(4)

    def step(y: rt.Tensor) -> rt.Tensor:
        return (y + host).sum()

    with pytest.raises(RuntimeError, match=f"^{MIXED}cuda:0 and cpu!$"):
        capture(step, (rt.ones(4, device="cuda"),))
    with pytest.raises(RuntimeError, match=f"^{MIXED}cuda:0 and cuda:1!$"):
        capture(lambda a, b: a * b, (rt.ones(2, device="cuda"), rt.ones(2, device="cuda:1")))


def test_importing_the_packages_never_needs_cupy() -> None:
    """With CuPy unimportable, runtime, planner and codegen import (and import no cupy
    module), and a cuda tensor says how to install it."""
    code = textwrap.dedent("""
        import sys
        sys.modules["cupy"] = sys.modules["cupyx"] = None  # import cupy raises ImportError
        import runtime, planner, codegen
        loaded = [m for m in sys.modules if m.split(".")[0] in ("cupy", "cupyx")
                  and sys.modules[m] is not None]
        assert not loaded, loaded
        try:
            runtime.ones(2, device="cuda")
        except RuntimeError as e:
            print(e)
        else:
            raise AssertionError("a cuda tensor without CuPy")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert "device 'cuda' needs CuPy, which is not installed: pip install 'backplan[cuda]'" \
        in out.stdout
