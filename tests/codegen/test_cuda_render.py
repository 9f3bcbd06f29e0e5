"""The CUDA renderer without any compiler: what it writes, what it refuses, the launch
configuration it is launched with, and its errors (no CuPy, a rejected module)."""

from __future__ import annotations

import builtins
import math
import re
import subprocess
import sys

import pytest
from cuda_testutil import random_kernel, workload_kernels

from codegen import cuda
from codegen import ir as K
from codegen.cuda import COMBINE, LAUNCH_BOUNDS, MAX_BLOCK, CUDARenderError, render
from codegen.renderer import CUDARenderer
from codegen.cuda_module import (
    SM80,
    SM90,
    CudaModule,
    DeviceProps,
    compile_error_message,
    launch_config,
)
from codegen.renderer import renderer_for

F = "float32"
L, U, B, R, Out = K.Load, K.Unary, K.Binary, K.Reduce, K.Output


def test_renderer_registry_gives_the_cuda_renderer() -> None:
    r = renderer_for("cuda:1")
    assert isinstance(r, CUDARenderer) and r.device_type == r.language == "cuda"
    kernel = workload_kernels()["chain"][0]
    assert r.kernel_source(kernel) == render([kernel])


def test_every_workload_kernel_renders_as_an_extern_c_global_with_restrict_pointers() -> None:
    for name, kernels in workload_kernels().items():
        source = render(list(kernels))
        for k in kernels:
            assert re.search(rf'extern "C" __global__ void {re.escape(LAUNCH_BOUNDS)} '
                             rf'{k.name}\(', source), (name, k.name)
            if any(o.accumulate for o in k.outputs):
                assert f"void {LAUNCH_BOUNDS} {k.name}{COMBINE}(" in source
        assert ("__restrict__" in source) == bool(kernels) and "atomic" not in source
        # CUDA's accurate math: no intrinsics of the fast-math family
        assert not re.search(r"__(expf|logf|sinf|cosf|fdividef|powf)\(", source)


def test_row_reductions_use_warp_shuffles_and_shared_memory() -> None:
    kernel = workload_kernels()["eltwise"][0]
    source = render([kernel])
    assert "bp_block_reduce(" in source and "__shfl_down_sync" in source
    assert re.search(r"__shared__ float bp_s\d+\[2048\];", source), "row scratch in shared"


def test_importing_codegen_and_rendering_need_no_cupy() -> None:
    code = ("import sys; sys.modules['cupy'] = None\n"
            "import codegen, codegen.cuda, codegen.cuda_module, codegen.cuda_host\n"
            "from codegen import ir as K\n"
            "k = K.Kernel('k0', (3,), 0, (K.Input('x', 'float32', (1,)),), (K.Load(0),),\n"
            "             (K.Output('y', 0, 'float32'),))\n"
            "print('__global__' in codegen.cuda.render([k]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == "True", done.stderr


def test_compile_without_cupy_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def no_cupy(name: str, *args, **kwargs):
        if name == "cupy" or name.startswith("cupy."):
            raise ImportError("No module named 'cupy'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_cupy)
    with pytest.raises(RuntimeError, match=r"pip install 'backplan\[cuda\]'"):
        CUDARenderer().compile(list(workload_kernels()["chain"]))


def test_an_op_without_a_rule_is_named_with_kernel_expr_and_dtypes(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(cuda.UNARY_RULES, ("erf", "float"))
    kernel = K.Kernel("k7", (4,), 0, (K.Input("x", "float64", (1,)),),
                      (L(0), U("erf", 0, "float64")), (Out("y", 1, "float64"),))
    with pytest.raises(CUDARenderError, match=r"kernel 'k7'.*expr 1 .*op erf, operand dtypes "
                                              r"\('float64',\)"):
        render([kernel])


@pytest.mark.parametrize("name", ["div", "expf", "bp_total", "__x", "k-1", "1k"])
def test_kernel_names_that_would_clash_or_are_no_identifier_are_refused(name: str) -> None:
    kernel = K.Kernel(name, (4,), 0, (K.Input("x", F, (1,)),), (L(0),), (Out("y", 0, F),))
    with pytest.raises(CUDARenderError, match=re.escape(repr(name))):
        render([kernel])


def test_duplicate_kernel_names_are_refused() -> None:
    kernel = random_kernel(1, "k0")
    with pytest.raises(CUDARenderError, match="duplicate kernel names"):
        render([kernel, kernel])


SIZES = [0, 1, 31, 33, 1025, 2 ** 20 + 3]


def _kernels(n: int) -> list[K.Kernel]:
    """An elementwise kernel over n elements, one accumulating columns of n rows, a row
    reduction over n rows of 33 and one over one row of n."""
    x = K.Input("x", F, (1,))
    return [
        K.Kernel("flat", (n,), 0, (x,), (L(0), U("exp", 0, F)), (Out("y", 1, F),)),
        K.Kernel("cols", (n, 5), 0, (K.Input("x", F, (5, 1)),), (L(0),),
                 (Out("s", 0, F, accumulate="sum"),)),
        K.Kernel("rows", (n, 33), 1, (K.Input("x", F, (33, 1)),), (L(0), R("sum", 0, F)),
                 (Out("s", 1, F), Out("t", 1, F, accumulate="sum"))),
        K.Kernel("row", (n,), 1, (x,), (L(0), R("max", 0, F)), (Out("m", 1, F),)),
    ]


@pytest.mark.parametrize("props", [SM80, SM90], ids=["sm_80", "sm_90"])
@pytest.mark.parametrize("n", SIZES)
def test_launch_configuration_fits_the_device(props: DeviceProps, n: int) -> None:
    for kernel in _kernels(n):
        c = launch_config(kernel, props)
        threads = c.block[0]
        assert c.block[1:] == (1, 1) and 0 < threads <= min(MAX_BLOCK,
                                                            props.max_threads_per_block)
        assert threads % props.warp_size == 0
        assert all(0 < g <= m for g, m in zip(c.grid, props.max_grid)), (kernel.name, c)
        blocks = math.prod(c.grid)
        assert blocks * threads <= props.sm_count * props.max_threads_per_sm or blocks == 1
        assert c.static_shared <= props.shared_per_block
        if any(o.accumulate for o in kernel.outputs):
            assert c.parts >= 1 and c.workspace_bytes >= c.parts * 4
            assert 0 < c.combine_block[0] <= MAX_BLOCK and c.combine_grid[0] > 0
        else:
            assert c.parts == 0 and c.workspace_bytes == 0
        if kernel.name == "rows":
            assert c.grid[0] == max(1, min(n, props.sm_count * props.max_threads_per_sm // 64))
            assert c.parts == c.grid[0]
        if kernel.name == "flat" and n:
            assert blocks * threads >= min(n, props.sm_count * props.max_threads_per_sm // 2)


def test_launch_configuration_refuses_a_warp_that_is_not_32() -> None:
    with pytest.raises(ValueError, match="warp of 32"):
        launch_config(_kernels(5)[0], DeviceProps("sm_xx", 4, warp_size=64))


class _FakeFunction:
    def __init__(self, calls: list, name: str) -> None:
        self.calls, self.name = calls, name

    def __call__(self, grid, block, args, shared_mem: int = 0) -> None:
        self.calls.append((self.name, grid, block, args))


class _FakeRawModule:
    def __init__(self) -> None:
        self.calls: list = []

    def get_function(self, name: str) -> _FakeFunction:
        return _FakeFunction(self.calls, name)


def test_module_launches_the_kernel_then_its_combine_with_int64_parts() -> None:
    import numpy as np

    kernel = _kernels(100)[2]
    raw = _FakeRawModule()
    module = CudaModule([kernel], raw, np, SM80)
    x = np.zeros(3300, np.float32)
    s, t = np.zeros(100, np.float32), np.zeros((), np.float32)
    module.launcher(kernel)([x, s, t])
    (main, g, b, args), (comb, cg, cb, cargs) = raw.calls
    config = module.configs["rows"]
    assert (main, g, b) == ("rows", config.grid, config.block) and args[:3] == (x, s, t)
    assert args[3].nbytes == config.workspace_bytes
    assert comb == "rows" + COMBINE and cargs[0] is t and cargs[1] is args[3]
    assert isinstance(cargs[2], np.int64) and cargs[2] == config.parts
    with pytest.raises(ValueError, match="input x needs a C-contiguous float32 array of at "
                                         "least 3300 elements, got float64"):
        module.run(kernel, [x.astype(np.float64)], [s, t])
    with pytest.raises(ValueError, match="takes 1 inputs and 2 outputs"):
        module.run(kernel, [x], [s])


def test_a_rejected_module_names_the_kernel_and_shows_the_log() -> None:
    kernels = [random_kernel(2, "k0"), random_kernel(5, "k1")]
    source = render(kernels)
    line, k0_line = (next(n for n, text in enumerate(source.splitlines(), 1)
                          if f"void {LAUNCH_BOUNDS} {name}(" in text) + 2 for name in ("k1", "k0"))
    log = (f"kernel.cu({k0_line}): warning #177-D: variable \"v4\" was declared but never "
           f"referenced\nkernel.cu({line}): error: identifier \"nope\" is undefined\n"
           "1 error detected")
    message = compile_error_message(source, log)
    assert message.startswith("NVRTC rejected the CUDA module in kernel 'k1':")
    assert 'identifier "nope" is undefined' in message
    assert "(module prelude)" in compile_error_message(source, "kernel.cu(3): error: x")
    assert "(no line named in the log)" in compile_error_message(source, "out of memory")
