"""Compiled plans on "cuda", run without a GPU: the strict fake CuPy (tests/fake_cupy.py) holds
the device arrays. Every benchmark workload's step, built with its model and data on cuda,
compiles to a plan on cuda:0 whose results equal CPU eager's."""

from __future__ import annotations

import types
import warnings
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt
from benchmarks.workloads import WORKLOADS
from tests.fakecuda import fake_cuda_fixture  # noqa: F401

STEPS = 2
TOL = 1e-6


def cuda_lib() -> types.SimpleNamespace:
    """``runtime`` as the workloads' builders use it, with their tensors and layers on cuda."""
    lib = types.SimpleNamespace(**{k: getattr(rt, k) for k in dir(rt) if not k.startswith("_")})
    lib.nn = types.SimpleNamespace(**{k: getattr(rt.nn, k) for k in dir(rt.nn)
                                      if not k.startswith("_")})
    lib.nn.Linear = lambda *a, **k: rt.nn.Linear(*a, **k).to("cuda")
    lib.from_numpy = lambda a: rt.from_numpy(a).to("cuda")
    lib.tensor = lambda *a, **k: rt.tensor(*a, **{**k, "device": "cuda"})
    return lib


def run_on_cuda(name: str, backend: str) -> tuple[Any, list[dict[str, np.ndarray]],
                                                  list[dict[str, np.ndarray]]]:
    """The workload's step compiled on cuda and run STEPS times beside CPU eager: the compiled
    step and both runs' outputs (host arrays)."""
    wl = WORKLOADS[name]
    arrays = wl.make_arrays(0)
    eager, compiled = wl.build(rt, arrays), wl.build(cuda_lib(), arrays)
    step = planner.compile(compiled.fn, backend=backend)
    want, got = [], []
    for _ in range(STEPS):
        # copies: a CPU tensor's array is the parameter itself, which the next step updates
        want.append({k: v.copy() for k, v in eager.outputs(eager.run()).items()})
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)  # no fallback, to eager or unfused
            got.append(compiled.outputs(step(*compiled.args)))
    return step, want, got


def assert_same_runs(want: list[dict[str, np.ndarray]], got: list[dict[str, np.ndarray]]
                     ) -> None:
    for i, (w, g) in enumerate(zip(want, got, strict=True)):
        assert g.keys() == w.keys()
        for k in w:
            assert g[k].dtype == w[k].dtype and g[k].shape == w[k].shape, (i, k)
            np.testing.assert_allclose(g[k], w[k], rtol=TOL, atol=TOL, err_msg=f"step {i} {k}")


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_interpreted_cuda_plan_equals_cpu_eager(fake_cuda: Any, name: str) -> None:
    step, want, got = run_on_cuda(name, "interpreter")
    assert step.plan.device == "cuda:0"
    assert not step.plan.kernels
    assert_same_runs(want, got)
