"""Compiled plans on "cuda", run without a GPU: the strict fake CuPy (tests/fake_cupy.py) holds
the device arrays. Every benchmark workload's step, built with its model and data on cuda,
compiles to a plan on cuda:0 whose results equal CPU eager's."""

from __future__ import annotations

import os
import types
import warnings
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt
from benchmarks.workloads import WORKLOADS
from tests import fake_cupy
from tests.fakecuda import REAL_CUPY, fake_cuda_fixture, fake_only  # noqa: F401

STEPS = 2
TOL = 1e-6
FUSED_TOL = 2e-5  # fused kernels round as compiled kernels do (as the CPU's fused plans)


def cuda_lib() -> types.SimpleNamespace:
    """``runtime`` as the workloads' builders use it, with their tensors and layers on cuda."""
    lib = types.SimpleNamespace(**{k: getattr(rt, k) for k in dir(rt) if not k.startswith("_")})
    lib.nn = types.SimpleNamespace(**{k: getattr(rt.nn, k) for k in dir(rt.nn)
                                      if not k.startswith("_")})
    for k in dir(rt.nn):  # every layer made on cuda
        cls = getattr(rt.nn, k)
        if isinstance(cls, type) and issubclass(cls, rt.nn.Module) and cls is not rt.nn.Module:
            setattr(lib.nn, k, lambda *a, _cls=cls, **kw: _cls(*a, **kw).to("cuda"))
    lib.from_numpy = lambda a: rt.from_numpy(a).to("cuda")
    lib.tensor = lambda *a, **k: rt.tensor(*a, **{**k, "device": "cuda"})
    lib.zeros = lambda *a, **k: rt.zeros(*a, **{**k, "device": "cuda"})
    return lib


def run_on_cuda(name: str, backend: str, steps: int = STEPS, **options: Any
                ) -> tuple[Any, list[dict[str, np.ndarray]], list[dict[str, np.ndarray]]]:
    """The workload's step compiled on cuda (with planner.compile's ``options``) and run
    ``steps`` times beside CPU eager: the compiled step and both runs' outputs (host
    arrays)."""
    wl = WORKLOADS[name]
    arrays = wl.make_arrays(0)
    eager, compiled = wl.build(rt, arrays), wl.build(cuda_lib(), arrays)
    step = planner.compile(compiled.fn, backend=backend, **options)
    want, got = [], []
    for _ in range(steps):
        # copies: a CPU tensor's array is the parameter itself, which the next step updates
        want.append({k: v.copy() for k, v in eager.outputs(eager.run()).items()})
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)  # no fallback, to eager or unfused
            got.append(compiled.outputs(step(*compiled.args)))
    return step, want, got


def assert_same_runs(want: list[dict[str, np.ndarray]], got: list[dict[str, np.ndarray]],
                     tol: float = TOL) -> None:
    for i, (w, g) in enumerate(zip(want, got, strict=True)):
        assert g.keys() == w.keys()
        for k in w:
            assert g[k].dtype == w[k].dtype and g[k].shape == w[k].shape, (i, k)
            np.testing.assert_allclose(g[k], w[k], rtol=tol, atol=tol, err_msg=f"step {i} {k}")


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_interpreted_cuda_plan_equals_cpu_eager(fake_cuda: Any, name: str) -> None:
    step, want, got = run_on_cuda(name, "interpreter")
    assert step.plan.device == "cuda:0"
    assert not step.plan.kernels
    # a real GPU's math library (exp, tanh, ...) and reductions round in their own way
    assert_same_runs(want, got, FUSED_TOL if REAL_CUPY else TOL)


@pytest.fixture(name="host_gpu")
def host_gpu_fixture(fake_cuda: Any) -> Any:
    """The fake CuPy with its RawModule building CUDA C for the host (codegen.cuda_host): a
    plan's fused CUDA kernels run, as rendered and launched for a GPU, on this machine."""
    from codegen.cuda_host import HostCompilerMissing, HostModule, compiler

    try:
        compiler()
    except HostCompilerMissing as e:
        pytest.skip(str(e))
    previous = fake_cupy.set_raw_module_backend(HostModule)
    yield fake_cuda
    fake_cupy.set_raw_module_backend(previous)


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_fused_cuda_plan_equals_cpu_eager(host_gpu: Any, name: str) -> None:
    step, want, got = run_on_cuda(name, "cuda")
    plan = step.plan
    if name == "one_op":  # its gradient, 2 everywhere, is folded to a constant: no kernel
        assert plan.device == "cuda:0" and not plan.kernels
        return
    assert plan.device == "cuda:0" and plan.kernels
    # an optimizer's step count stays a CPU scalar (as PyTorch's): its arithmetic may fuse
    # into a CPU kernel; every kernel on the GPU is CUDA C
    gpu = [k for k in plan.kernels if k.device == "cuda:0"]
    assert gpu and all(k.device == "cpu" for k in plan.kernels if k not in gpu)
    assert all(k.language == "cuda" and 'extern "C" __global__' in k.source for k in gpu)
    assert_same_runs(want, got, FUSED_TOL)


def test_cache_dir_holds_cupys_kernel_cache_while_a_module_compiles(
        host_gpu: Any, tmp_path: Any) -> None:
    fake_only("the host launcher records the cache folder each build sees")
    from codegen.cuda_host import HostModule

    seen = []

    def build(code: str, options: tuple[str, ...]) -> Any:
        seen.append(os.environ.get("CUPY_CACHE_DIR"))
        return HostModule(code, options)

    fake_cupy.set_raw_module_backend(build)
    before = os.environ.get("CUPY_CACHE_DIR")
    x = rt.ones(1000, device="cuda", requires_grad=True)

    def step(x: Any) -> Any:
        y = (x.exp() * 3.0).sum()
        y.backward()
        return y.detach()

    compiled = planner.compile(step, backend="cuda", cache_dir=tmp_path)
    got = compiled(x)
    assert seen == [str(tmp_path / "cuda")] and (tmp_path / "cuda").is_dir()
    assert os.environ.get("CUPY_CACHE_DIR") == before
    np.testing.assert_allclose(got.cpu().numpy(), 3 * np.e * 1000, rtol=1e-6)
    np.testing.assert_allclose(x.grad.cpu().numpy(), np.full(1000, 3 * np.e), rtol=1e-6)


def test_a_cuda_plan_without_cupy_says_how_to_install_it() -> None:
    x = rt.ones(8, requires_grad=True)

    def step(x: Any) -> Any:
        y = (x.sin() * 2).sum()
        y.backward()
        return y.detach()

    compiled = planner.compile(step, device="cuda", backend="cuda")
    plan = compiled.lower(x)  # renders without CuPy
    assert [k.language for k in plan.kernels] == ["cuda"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # straight to the hint: no fallback warning first
        with pytest.raises(RuntimeError, match=r"needs CuPy.*pip install 'backplan\[cuda\]'"):
            compiled(x)
    with pytest.raises(RuntimeError, match=r"needs CuPy"):
        planner.compile(step, device="cuda")(x)  # under "auto" too
