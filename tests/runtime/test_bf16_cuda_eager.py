"""bfloat16 tensors on a GPU in eager mode: each op computes as on the CPU (widened to
float32, rounded once), the same bits, on the fake CuPy (tests/fake_cupy.py: device arrays are
no numpy arrays, and a numpy conversion of one raises, as CuPy's does). Before, every bfloat16
op on cuda failed converting its result through numpy."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import runtime as rt
from tests.fakecuda import REAL_CUPY, fake_cuda_fixture  # noqa: F401 - the fake_cuda fixture

F = rt.nn.functional
pytestmark = pytest.mark.usefixtures("fake_cuda")

OPS: dict[str, Callable[[Any, Any], Any]] = {
    "add": lambda a, b: a + b,
    "sub_number": lambda a, b: a - 0.3,
    "mul": lambda a, b: a * b,
    "div_number": lambda a, b: a / 3.0,
    "matmul": lambda a, b: a @ b.T,
    "linear": lambda a, b: F.linear(a, b),
    "relu": lambda a, b: rt.relu(a),
    "gelu": lambda a, b: F.gelu(a),
    "silu": lambda a, b: F.silu(a),
    "exp": lambda a, b: a.exp(),
    "tanh": lambda a, b: a.tanh(),
    "softmax": lambda a, b: a.softmax(-1),
    "log_softmax": lambda a, b: F.log_softmax(a, -1),
    "sum": lambda a, b: a.sum(),
    "mean": lambda a, b: a.mean(-1),
    "max": lambda a, b: a.max(-1).values,
    "layer_norm": lambda a, b: F.layer_norm(a, (4,)),
    "cat": lambda a, b: rt.cat([a, b]),
    "getitem": lambda a, b: a[1:, ::2],
    # its backward scatters with repeats: CuPy's add.at has no bfloat16 (the host adds)
    "index_repeated": lambda a, b: a[rt.tensor([0, 2, 0], device=a.device)] * 3,
    "transpose": lambda a, b: a.t() * 2,
    "to_float32": lambda a, b: a.float(),
    "cross_entropy": lambda a, b: F.cross_entropy(a, rt.tensor([0, 1, 2], device=a.device)),
    "where": lambda a, b: rt.where(a > 0, a, b),
}


def _pair(x: np.ndarray, device: str, grad: bool) -> tuple[Any, Any]:
    a = rt.tensor(x, device=device).to(rt.bfloat16)
    b = rt.tensor(x[::-1].copy(), device=device).to(rt.bfloat16)
    return a.requires_grad_(grad), b


def _host(t: Any) -> np.ndarray:
    return t.detach().float().cpu().numpy()


@pytest.mark.parametrize("name", OPS)
def test_op_on_cuda_equals_cpu(name: str) -> None:
    x = np.random.default_rng(0).standard_normal((3, 4)).astype(np.float32)
    a, b = _pair(x, "cuda", True)
    ac, bc = _pair(x, "cpu", True)
    y, yc = OPS[name](a, b), OPS[name](ac, bc)
    assert y.device.type == "cuda" and y.dtype == yc.dtype
    np.testing.assert_array_equal(_host(y), _host(yc))
    if y.requires_grad:
        y.float().sum().backward()
        yc.float().sum().backward()
        assert a.grad.dtype == rt.bfloat16 and a.grad.device.type == "cuda"
        if REAL_CUPY:  # a GPU's float32 sums add in another order: one bfloat16 rounding
            # apart, or rounding noise where the gradient cancels to 0 (softmax's)
            np.testing.assert_allclose(_host(a.grad), _host(ac.grad), rtol=2**-8, atol=1e-6)
        else:
            np.testing.assert_array_equal(_host(a.grad), _host(ac.grad))


@pytest.mark.parametrize("scalar_device", ["cpu", "cuda"])
def test_times_a_0d_float32_tensor(scalar_device: str) -> None:
    """A bfloat16 tensor times a 0-d float32 tensor (a CPU one may meet a CUDA tensor, as in
    PyTorch): the scalar's float32 value multiplies, the result is bfloat16, as on the CPU."""
    x = np.random.default_rng(1).standard_normal((5,)).astype(np.float32)
    s = rt.tensor(1.1, dtype=rt.float32, device=scalar_device)
    y = rt.tensor(x, device="cuda").to(rt.bfloat16) * s
    yc = rt.tensor(x).to(rt.bfloat16) * rt.tensor(1.1, dtype=rt.float32)
    assert y.dtype == rt.bfloat16 and y.device.type == "cuda"
    np.testing.assert_array_equal(_host(y), _host(yc))


def test_bfloat16_training_steps_on_cuda_equal_cpu() -> None:
    """A bfloat16 MLP trained 3 steps with AdamW on cuda: the same losses and weights as on
    the CPU."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((8, 6)).astype(np.float32)
    y = rng.integers(0, 3, 8)

    def run(device: str) -> tuple[list[float], list[np.ndarray]]:
        rt.manual_seed(0)
        model = rt.nn.Sequential(rt.nn.Linear(6, 5), rt.nn.GELU(), rt.nn.Linear(5, 3))
        model = model.to(device=device, dtype=rt.bfloat16)
        opt = rt.optim.AdamW(model.parameters(), lr=1e-2)
        xs = rt.tensor(x, device=device).to(rt.bfloat16)
        ys = rt.tensor(y, device=device)
        losses = []
        for _ in range(3):
            opt.zero_grad()
            loss = F.cross_entropy(model(xs), ys)
            loss.backward()
            opt.step()
            losses.append(float(loss.float().item()))
        return losses, [_host(p) for p in model.parameters()]

    (lg, pg), (lc, pc) = run("cuda"), run("cpu")
    assert lg == lc
    for a, b in zip(pg, pc):
        np.testing.assert_array_equal(a, b)
