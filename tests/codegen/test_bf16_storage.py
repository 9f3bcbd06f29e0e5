"""bfloat16 as a storage dtype of the kernel IR (``ir.STORAGE_ONLY``): a kernel loads a
bfloat16 input as the float32 of its bits, computes in float32 and stores a bfloat16 output
rounded to nearest even (a NaN the quiet NaN of its sign), as ml_dtypes' conversion does; a
``round_bfloat16`` is that rounding inside a kernel. Checked on the LLVM renderer here (the
CUDA renderer through the host emulation: its CUDA C built by g++)."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from codegen_testutil import broadcast_strides, build

from codegen import ir as K
from codegen.cuda import render as render_cuda

BF16 = np.dtype(ml_dtypes.bfloat16)


def _emulated(kernels: list[K.Kernel]) -> Any:
    from codegen.cuda_host import emulate
    return emulate(kernels)


@pytest.fixture(name="compiled", params=["llvm", "cuda"])
def compiled_fixture(request: pytest.FixtureRequest) -> Callable[[list[K.Kernel]], Any]:
    """Builds kernels with one renderer: LLVM, or CUDA C run by the host emulation."""
    if request.param == "cuda" and shutil.which("g++") is None:
        pytest.skip("the CUDA host emulation needs g++, not found on PATH")
    return build if request.param == "llvm" else _emulated


def run(cm: Any, kernel: K.Kernel, arrays: list[np.ndarray]) -> list[np.ndarray]:
    outs = [np.full(K.output_shape(kernel, o), 7, o.dtype)
            for o in kernel.outputs]
    cm.run(kernel, [np.ascontiguousarray(a) for a in arrays], outs)
    return outs


def special_floats() -> np.ndarray:
    """float32s around every rounding case: ties (odd and even), just above and below,
    subnormals, the largest finite bfloat16's neighbourhood (rounding up to inf), infs,
    signed zeros, NaNs with payloads of both signs, and random bits."""
    bits = [0x3F808000, 0x3F818000, 0x3F808001, 0x3F807FFF, 0x3F817FFF, 0x00000001,
            0x00008000, 0x00018000, 0x007FFFFF, 0x80008000, 0x7F7F7FFF, 0x7F7F8000,
            0x7F7FFFFF, 0xFF7F8000, 0x7F800000, 0xFF800000, 0x00000000, 0x80000000,
            0x7FC00000, 0xFFC00000, 0x7F800001, 0xFF800001, 0x7FA00000, 0x7F810000,
            0xFFFFFFFF]
    rng = np.random.default_rng(0)
    return np.concatenate([np.array(bits, np.uint32),
                           rng.integers(0, 1 << 32, 4000, dtype=np.uint32)]).view(np.float32)


def round_kernel(n: int) -> K.Kernel:
    """float32 in, ``round_bfloat16``, float32 out (test_cuda_emulate's coverage counts it)."""
    return _elementwise("round_bf16", "float32", "float32", n, "round_bfloat16")


def _elementwise(name: str, in_dtype: str, out_dtype: str, n: int, op: str | None = None
                 ) -> K.Kernel:
    exprs: list[K.Expr] = [K.Load(0)]
    if op is not None:
        exprs.append(K.Unary(op, 0, "float32"))
    return K.Kernel(name, (n,), 0, (K.Input("in0", in_dtype, (1,)),), tuple(exprs),
                    (K.Output("out0", len(exprs) - 1, out_dtype),))


@pytest.mark.filterwarnings("ignore:invalid value encountered in cast")  # NaN's own
def test_store_rounds_as_ml_dtypes(compiled: Callable[[list[K.Kernel]], Any]) -> None:
    x = special_floats()
    k = _elementwise("store_bf16", "float32", "bfloat16", x.size)
    got, = run(compiled([k]), k, [x])
    assert got.dtype == BF16
    np.testing.assert_array_equal(got.view(np.uint16), x.astype(BF16).view(np.uint16))


def test_load_is_exact(compiled: Callable[[list[K.Kernel]], Any]) -> None:
    bits = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    x = bits.view(BF16)
    k = _elementwise("load_bf16", "bfloat16", "float32", x.size)
    got, = run(compiled([k]), k, [x])
    np.testing.assert_array_equal(got.view(np.uint32), bits.astype(np.uint32) << 16)


@pytest.mark.filterwarnings("ignore:invalid value encountered in cast")
def test_round_bfloat16_op(compiled: Callable[[list[K.Kernel]], Any]) -> None:
    x = special_floats()
    k = round_kernel(x.size)
    got, = run(compiled([k]), k, [x])
    np.testing.assert_array_equal(got.view(np.uint32),
                                  x.astype(BF16).astype(np.float32).view(np.uint32))


def chain_kernel(dom: tuple[int, int]) -> K.Kernel:
    """(a * b + a).exp() of bfloat16 a (rows) and b (a row), and its row sums."""
    exprs = (K.Load(0), K.Load(1), K.Binary("mul", 0, 1, "float32"),
             K.Binary("add", 2, 0, "float32"), K.Unary("exp", 3, "float32"),
             K.Reduce("sum", 4, "float32"))
    return K.Kernel("chain_bf16", dom, 1,
                    (K.Input("in0", "bfloat16", broadcast_strides(dom, dom)),
                     K.Input("in1", "bfloat16", broadcast_strides(dom[1:], dom))),
                    exprs, (K.Output("out0", 4, "bfloat16"), K.Output("out1", 5, "bfloat16")))


def sgd_kernel(dom: tuple[int, int]) -> K.Kernel:
    """p -= 0.1 * g written into the bfloat16 p (float32 g)."""
    exprs = (K.Load(0), K.Load(1), K.Const(0.1, "float32"), K.Binary("mul", 1, 2, "float32"),
             K.Binary("sub", 0, 3, "float32"))
    return K.Kernel("sgd_bf16", dom, 0, (K.Input("in0", "bfloat16", (dom[1], 1)),
                                         K.Input("in1", "float32", (dom[1], 1))), exprs,
                    (K.Output("out0", 4, "bfloat16", into=0),))


def test_bf16_chain_computes_in_float32_and_rounds_once(
        compiled: Callable[[list[K.Kernel]], Any]) -> None:
    """One rounding at the store, sums in float32."""
    rng = np.random.default_rng(1)
    a = rng.standard_normal((7, 300)).astype(BF16)
    b = rng.standard_normal((300,)).astype(BF16)
    k = chain_kernel(a.shape)
    elem, rows = run(compiled([k]), k, [a, b])
    wide = np.exp(a.astype(np.float64) * b.astype(np.float64) + a.astype(np.float64))
    # float32 compute, one rounding: within half a bfloat16 ulp plus float32 error
    np.testing.assert_allclose(elem.astype(np.float64), wide, rtol=2.0**-8 + 1e-5)
    np.testing.assert_allclose(rows.astype(np.float64), wide.sum(1), rtol=2.0**-8 + 1e-5)
    assert elem.dtype == rows.dtype == BF16


def test_validate_rules() -> None:
    with pytest.raises(K.KernelIRError, match="round_bfloat16 does not take float64"):
        K.validate(K.Kernel("r", (3,), 0, (K.Input("in0", "float64", (1,)),),
                            (K.Load(0), K.Unary("round_bfloat16", 0, "float64")),
                            (K.Output("out0", 1, "float64"),)))
    with pytest.raises(K.KernelIRError, match="unknown dtype 'bfloat16'"):
        K.validate(K.Kernel("c", (3,), 0, (K.Input("in0", "float32", (1,)),),
                            (K.Load(0), K.Cast(0, "bfloat16")), (K.Output("out0", 1, "float32"),)))
    # a bfloat16 load is a float32 value: an output of it as bfloat16 or float32, not float64
    k = _elementwise("o", "bfloat16", "float64", 3)
    with pytest.raises(K.KernelIRError, match="dtype float64 but expr 0 is float32"):
        K.validate(k)
    with pytest.raises(K.KernelIRError, match="cannot accumulate bfloat16"):
        K.validate(K.Kernel("a", (4, 3), 0, (K.Input("in0", "bfloat16", (3, 1)),), (K.Load(0),),
                            (K.Output("out0", 0, "bfloat16", accumulate="sum"),)))


def test_bf16_update_in_place(compiled: Callable[[list[K.Kernel]], Any]) -> None:
    """An update written into its bfloat16 input (an optimizer step on bfloat16 params)."""
    rng = np.random.default_rng(2)
    p = rng.standard_normal((5, 8)).astype(BF16)
    g = rng.standard_normal((5, 8)).astype(np.float32)
    dom = p.shape
    k = sgd_kernel(dom)
    want = (p.astype(np.float32) - g * np.float32(0.1)).astype(BF16)
    untouched = np.full(dom, 7.0, BF16)
    compiled([k]).run(k, [p, g], [untouched])
    np.testing.assert_array_equal(p.view(np.uint16), want.view(np.uint16))
    assert (untouched == 7.0).all()


def test_cuda_source_uses_integer_bf16_helpers() -> None:
    k = _elementwise("src_bf16", "bfloat16", "bfloat16", 8, "exp")
    code = render_cuda([k])
    assert "bp_bf16* __restrict__ out0" in code and "const bp_bf16* __restrict__ in0" in code
    assert "bp_bf16_store(" in code and "bp_bf16_load(in0[" in code
    assert "cuda_bf16.h" not in code and "__nv_bfloat16" not in code


def test_bf16_kernels_compile_with_nvcc(tmp_path: Any) -> None:
    """The bfloat16 kernels' CUDA C (row reductions, elementwise, into) is valid for sm_80."""
    import subprocess

    from cuda_testutil import nvcc

    from codegen.cuda_module import compile_error_message

    compiler = nvcc()
    if compiler is None:
        pytest.skip("nvcc (CUDA toolkit) is not on PATH or at /usr/local/bin/nvcc")
    src = tmp_path / "bf16.cu"
    src.write_text(render_cuda([round_kernel(8), chain_kernel((7, 300)), sgd_kernel((5, 8)),
                                _elementwise("src_bf16", "bfloat16", "bfloat16", 8, "exp")]))
    done = subprocess.run([compiler, "--std=c++17", "-arch=sm_80", "-cubin", "-o",
                           str(tmp_path / "bf16.cubin"), str(src)], capture_output=True, text=True)
    assert done.returncode == 0, compile_error_message(src.read_text(), done.stderr)
