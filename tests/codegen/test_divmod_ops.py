"""remainder and floor_divide of floats in the kernel IR: the LLVM kernels and the CUDA C (run
by the host emulation) give numpy's results bit for bit (npy_divmod: Python's sign rule,
signed zeros, infinities, nan, a zero divisor; a zero remainder signed as PyTorch's, fmod's),
and a compiled step fuses `%` and `//`."""

from __future__ import annotations

import shutil
import warnings
from typing import Any

import numpy as np
import pytest
from codegen_testutil import build

import planner
import runtime as rt
from codegen import ir as K

SPECIAL = [5.5, -5.5, 0.0, -0.0, 3.0, -3.0, np.inf, -np.inf, np.nan, 1e-30, -1e-30, 7.0, 1e30,
           -2.5, 2.5, 0.1, -0.7, 1.0, -1.0, 0.75]


def _grid(dtype: str) -> tuple[np.ndarray, np.ndarray]:
    vals = np.array(SPECIAL, dtype)
    rng = np.random.default_rng(0)
    a = np.concatenate([np.repeat(vals, len(vals)), rng.standard_normal(500) * 100])
    b = np.concatenate([np.tile(vals, len(vals)), rng.standard_normal(500)])
    return a.astype(dtype), b.astype(dtype)


def _kernel(op: str, dtype: str, n: int) -> K.Kernel:
    return K.Kernel(f"{op}_{dtype}", (n,), 0, (K.Input("a", dtype, (1,)), K.Input("b", dtype, (1,))),
                    (K.Load(0), K.Load(1), K.Binary(op, 0, 1, dtype)), (K.Output("y", 2, dtype),))


def _same(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    return ((got == want) & (np.signbit(got) == np.signbit(want))) | (np.isnan(got)
                                                                     & np.isnan(want))


def _numpy(op: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        if op == "remainder":  # PyTorch's: numpy's, but a zero keeps fmod's (a's) sign
            mod = np.fmod(a, b)
            return np.where((mod != 0) & ((b < 0) != (mod < 0)), mod + b, mod)
        return getattr(np, op)(a, b)


def _emulated(kernels: list[K.Kernel]) -> Any:
    from codegen.cuda_host import emulate

    return emulate(kernels)


NO_GXX = pytest.mark.skipif(shutil.which("g++") is None,
                            reason="the CUDA host emulation needs g++")


@pytest.mark.parametrize("renderer", [pytest.param(build, id="llvm"),
                                      pytest.param(_emulated, id="cuda", marks=NO_GXX)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("op", ["remainder", "floor_divide"])
def test_kernels_match_numpy_bit_for_bit(renderer: Any, op: str, dtype: str) -> None:
    """The LLVM kernel, and the CUDA C run by the host emulation."""
    a, b = _grid(dtype)
    k = _kernel(op, dtype, a.size)
    out = np.empty_like(a)
    renderer([k]).run(k, [a, b], [out])
    same = _same(out, _numpy(op, a, b))
    assert same.all(), (a[~same][:5], b[~same][:5], out[~same][:5])


def test_integers_are_not_in_the_ir() -> None:
    with pytest.raises(K.KernelIRError):
        K.validate(_kernel("remainder", "int64", 4))


def test_compiled_step_fuses_remainder_and_floor_divide() -> None:
    rng = np.random.default_rng(1)
    x = rt.tensor((rng.standard_normal(1000) * 20).astype(np.float32), requires_grad=True)
    y = rt.tensor(rng.uniform(0.5, 3.0, 1000).astype(np.float32) * rng.choice([-1, 1], 1000))

    def step(x, y):
        x.grad = None
        # floor_divide has no derivative (PyTorch's error at backward): of x's value only
        loss = ((x % y) * (x.detach() // 0.75) + x % 2.5).sum()
        loss.backward()
        return loss

    compiled = planner.compile(step, backend="llvm")
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # a fallback to eager warns
        got = compiled(x, y).item()
        grad = x.grad.numpy().copy()
    names = {getattr(s, "name", None) for s in compiled.plan.steps}
    assert not names & {"remainder", "floor_divide"}  # both inside kernels
    with np.errstate(all="ignore"):
        want = step(x, y).item()
    assert np.isfinite(want)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    np.testing.assert_array_equal(grad, x.grad.numpy())
    ints = planner.compile(lambda i: (i % 3) + (i // 2), backend="llvm")
    i = rt.tensor(np.arange(-6, 7))
    np.testing.assert_array_equal(ints(i).numpy(), np.arange(-6, 7) % 3 + np.arange(-6, 7) // 2)
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):  # integers stay numpy steps
        planner.compile(lambda i: i % 0, backend="llvm")(i)
