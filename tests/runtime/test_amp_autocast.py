"""rt.autocast / rt.amp.autocast against PyTorch 2.13's CPU autocast: the ops each policy
casts, nesting, disabled regions, the decorator form, the weight cache, and a small MLP and
a conv net whose forward values and gradients match torch's within bfloat16 rounding."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import runtime as rt
from runtime.amp._state import state


def _torch() -> Any:
    return pytest.importorskip("torch")


def _np(t: Any) -> np.ndarray:
    return np.asarray(t.detach().float().numpy())


# --- state --------------------------------------------------------------------------------------

def test_state_defaults_and_nesting() -> None:
    assert not rt.is_autocast_enabled("cpu") and not rt.is_autocast_enabled()
    assert rt.get_autocast_dtype("cpu") is rt.bfloat16
    assert rt.get_autocast_dtype("cuda") is rt.float16
    with rt.autocast("cpu"):
        assert rt.is_autocast_enabled("cpu")
        assert not rt.is_autocast_enabled()  # no argument: CUDA's, as PyTorch's
        with rt.autocast("cpu", enabled=False):
            assert not rt.is_autocast_enabled("cpu")
            assert (rt.ones(2, 2) @ rt.ones(2, 2)).dtype is rt.float32
        with rt.amp.autocast("cpu", dtype=rt.float16):
            assert rt.get_autocast_dtype("cpu") is rt.float16
            assert (rt.ones(2, 2) @ rt.ones(2, 2)).dtype is rt.float16
        assert rt.get_autocast_dtype("cpu") is rt.bfloat16
        assert (rt.ones(2, 2) @ rt.ones(2, 2)).dtype is rt.bfloat16
    assert not rt.is_autocast_enabled("cpu")
    assert (rt.ones(2, 2) @ rt.ones(2, 2)).dtype is rt.float32
    assert not state.on and state.nesting == 0


def test_state_restored_after_an_error() -> None:
    with pytest.raises(ValueError, match="boom"), rt.autocast("cpu"):
        raise ValueError("boom")
    assert not rt.is_autocast_enabled("cpu") and not state.on


def test_decorator_form() -> None:
    @rt.autocast("cpu")
    def f(a: rt.Tensor) -> rt.Tensor:
        assert rt.is_autocast_enabled("cpu")
        return a @ a

    assert f(rt.ones(2, 2)).dtype is rt.bfloat16
    assert not rt.is_autocast_enabled("cpu")


def test_errors_and_warnings_as_torch() -> None:
    with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
        rt.autocast(3)  # type: ignore[arg-type]
    with pytest.raises(RuntimeError, match="Expected one of cpu, cuda"):
        rt.is_autocast_enabled("foo")
    with pytest.warns(UserWarning, match="In CPU autocast, but the target dtype is not "
                                         "supported. Disabling autocast."):
        ctx = rt.autocast("cpu", dtype=rt.float32)
    with ctx:
        assert not rt.is_autocast_enabled("cpu")
        assert (rt.ones(2, 2) @ rt.ones(2, 2)).dtype is rt.float32


# --- policies against torch ----------------------------------------------------------------------

def _inputs(lib: Any) -> dict[str, Any]:
    g = np.random.default_rng(0)
    f32 = {k: lib.tensor(g.standard_normal(s).astype(np.float32)) for k, s in
           (("x", (4, 8)), ("w", (8, 8)), ("b", (8,)), ("img", (2, 3, 8, 8)),
            ("k", (4, 3, 3, 3)))}
    f32["xb"] = f32["x"].bfloat16()
    f32["t"] = lib.tensor([0, 1, 2, 3])
    return f32


CASES = {
    # lower precision
    "linear": lambda lib, F, v: F.linear(v["x"], v["w"], v["b"]),
    "matmul": lambda lib, F, v: v["x"] @ v["w"],
    "matmul_1d": lambda lib, F, v: v["b"] @ v["w"],
    "mm": lambda lib, F, v: lib.mm(v["x"], v["w"]),
    "addmm": lambda lib, F, v: lib.addmm(v["b"], v["x"], v["w"]),
    "bmm": lambda lib, F, v: lib.bmm(v["x"][None], v["w"][None]),
    "baddbmm": lambda lib, F, v: lib.baddbmm(v["x"][None], v["x"][None], v["w"][None]),
    "conv2d": lambda lib, F, v: F.conv2d(v["img"], v["k"]),
    "conv1d": lambda lib, F, v: F.conv1d(v["img"][:, :, 0], v["k"][:, :, 0]),
    "conv1d_bias": lambda lib, F, v: F.conv1d(v["img"][:, :, 0], v["k"][:, :, 0],
                                              v["k"][:, 0, 0, 0]),
    "prelu": lambda lib, F, v: F.prelu(v["x"], lib.tensor([0.25])),
    "einsum": lambda lib, F, v: lib.einsum("ij,jk->ik", v["x"], v["w"]),
    "linear_f64": lambda lib, F, v: F.linear(v["x"].double(), v["w"].double()),
    "linear_mixed": lambda lib, F, v: F.linear(v["xb"], v["w"]),
    # float32 (bfloat16 inputs)
    "cross_entropy": lambda lib, F, v: F.cross_entropy(v["xb"], v["t"]),
    "nll_loss": lambda lib, F, v: F.nll_loss(v["xb"], v["t"]),
    "mse_loss": lambda lib, F, v: F.mse_loss(v["xb"], v["xb"]),
    "l1_loss": lambda lib, F, v: F.l1_loss(v["xb"], v["xb"]),
    "smooth_l1_loss": lambda lib, F, v: F.smooth_l1_loss(v["xb"], v["xb"]),
    "bce_with_logits": lambda lib, F, v: F.binary_cross_entropy_with_logits(v["xb"], v["xb"]),
    "prod": lambda lib, F, v: v["xb"].prod(),
    "cdist": lambda lib, F, v: lib.cdist(v["xb"], v["xb"]),
    "max_pool3d": lambda lib, F, v: F.max_pool3d(v["img"].bfloat16()[None], 2),
    # not listed on the CPU: they keep their input's dtype
    "softmax": lambda lib, F, v: F.softmax(v["xb"], -1),
    "log_softmax": lambda lib, F, v: F.log_softmax(v["xb"], -1),
    "layer_norm": lambda lib, F, v: F.layer_norm(v["xb"], (8,)),
    "layer_norm_f32": lambda lib, F, v: F.layer_norm(v["x"], (8,)),
    "sum": lambda lib, F, v: v["xb"].sum(),
    "gelu": lambda lib, F, v: F.gelu(v["xb"]),
    "mv": lambda lib, F, v: lib.mv(v["w"], v["b"]),
    "dot": lambda lib, F, v: lib.dot(v["b"], v["b"]),
    "outer": lambda lib, F, v: lib.outer(v["b"], v["b"]),
    "addmv": lambda lib, F, v: lib.addmv(v["b"], v["w"], v["b"]),
    "addr": lambda lib, F, v: lib.addr(v["w"], v["b"], v["b"]),
    "tensordot": lambda lib, F, v: lib.tensordot(v["x"], v["w"], 1),
    # promote
    "cat": lambda lib, F, v: lib.cat([v["x"], v["xb"]]),
    "stack": lambda lib, F, v: lib.stack([v["x"], v["xb"]]),
    "cat_f64": lambda lib, F, v: lib.cat([v["xb"][0], v["b"].double()]),
    "add": lambda lib, F, v: v["x"] + v["xb"],
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_result_dtype_as_torch(name: str) -> None:
    torch = _torch()
    with torch.autocast("cpu"):
        want = CASES[name](torch, torch.nn.functional, _inputs(torch))
    with rt.autocast("cpu"):
        got = CASES[name](rt, rt.nn.functional, _inputs(rt))
    assert got.dtype.name == str(want.dtype).removeprefix("torch."), name
    np.testing.assert_allclose(_np(got), _np(want), rtol=2 ** -7, atol=2 ** -6)


def test_two_lower_precision_dtypes_in_a_promote_op_are_torchs_error() -> None:
    with rt.autocast("cpu"), pytest.raises(
            RuntimeError, match="Unexpected floating ScalarType in at::autocast::prioritize"):
        rt.stack([rt.ones(2, dtype=rt.bfloat16), rt.ones(2, dtype=rt.float16)])


def test_an_op_inside_a_policy_op_is_not_cast_again() -> None:
    # cross_entropy (float32) runs its own steps in float32, not its inner products in bf16
    x = rt.randn(4, 8)
    with rt.autocast("cpu"):
        loss = rt.nn.functional.cross_entropy(x, rt.tensor([0, 1, 2, 3]))
    assert loss.dtype is rt.float32
    assert loss.item() == rt.nn.functional.cross_entropy(x, rt.tensor([0, 1, 2, 3])).item()


def test_weight_cache_casts_a_leaf_once_per_region() -> None:
    w = rt.randn(8, 8, requires_grad=True)
    x = rt.randn(4, 8)
    with rt.autocast("cpu"):
        a = rt.nn.functional.linear(x, w)
        b = rt.nn.functional.linear(x, w)
        assert len(state.cache) == 1
        (leaf, copy), = state.cache.values()
        assert leaf is w and copy.dtype is rt.bfloat16
        assert type(copy.grad_fn).__name__ == "ToCopyBackward0"
    assert not state.cache  # dropped on leaving the outermost region
    with rt.autocast("cpu", cache_enabled=False):
        rt.nn.functional.linear(x, w)
        assert not state.cache
    (a.sum() + b.sum()).backward()
    assert w.grad.dtype is rt.float32
    np.testing.assert_allclose(w.grad.numpy(), 2 * (rt.ones(8, 4) @ x.bfloat16().float()).T
                               .numpy().T, rtol=2 ** -7)


def test_no_grad_region_is_not_cached() -> None:
    w = rt.randn(8, 8, requires_grad=True)
    with rt.autocast("cpu"):
        with rt.no_grad():
            rt.nn.functional.linear(rt.randn(2, 8), w)
        out = rt.nn.functional.linear(rt.randn(2, 8), w)
    out.sum().backward()
    assert w.grad is not None and w.grad.dtype is rt.float32


# --- whole models against torch --------------------------------------------------------------------

def _params(seed: int, shapes: list[tuple[int, ...]]) -> list[np.ndarray]:
    g = np.random.default_rng(seed)
    return [(g.standard_normal(s) * 0.3).astype(np.float32) for s in shapes]


def _mlp(lib: Any, arrays: list[np.ndarray], x: np.ndarray, y: np.ndarray) -> list[Any]:
    F = lib.nn.functional
    ps = [lib.tensor(a).requires_grad_(True) for a in arrays]
    with lib.autocast("cpu"):
        h = F.relu(F.linear(lib.tensor(x), ps[0], ps[1]))
        out = F.linear(h, ps[2], ps[3])
        loss = F.cross_entropy(out, lib.tensor(y))
    loss.backward()
    return [h, out, loss] + [p.grad for p in ps]


def _convnet(lib: Any, arrays: list[np.ndarray], x: np.ndarray, y: np.ndarray) -> list[Any]:
    F = lib.nn.functional
    ps = [lib.tensor(a).requires_grad_(True) for a in arrays]
    with lib.autocast("cpu"):
        h = F.max_pool2d(F.relu(F.conv2d(lib.tensor(x), ps[0], ps[1], padding=1)), 2)
        out = F.linear(h.flatten(1), ps[2], ps[3])
        loss = F.cross_entropy(out, lib.tensor(y))
    loss.backward()
    return [h, out, loss] + [p.grad for p in ps]


@pytest.mark.parametrize("model", ["mlp", "convnet"])
def test_model_forward_and_grads_as_torch(model: str) -> None:
    torch = _torch()
    g = np.random.default_rng(1)
    if model == "mlp":
        run = _mlp
        arrays = _params(2, [(32, 16), (32,), (10, 32), (10,)])
        x, y = g.standard_normal((8, 16)).astype(np.float32), g.integers(0, 10, 8)
    else:
        run = _convnet
        arrays = _params(2, [(6, 3, 3, 3), (6,), (5, 6 * 4 * 4), (5,)])
        x, y = g.standard_normal((4, 3, 8, 8)).astype(np.float32), g.integers(0, 5, 4)
    got, want = run(rt, arrays, x, y), run(torch, arrays, x, y)
    dtypes = ["bfloat16", "bfloat16", "float32"] + ["float32"] * 4
    for i, (a, b, d) in enumerate(zip(got, want, dtypes)):
        assert a.dtype.name == d and str(b.dtype) == f"torch.{d}", i
        # bf16 rounding: an ulp of the largest value of each (2**-8 relative) and a few more
        # where rounding differences pass through a product
        scale = float(np.abs(_np(b)).max())
        np.testing.assert_allclose(_np(a), _np(b), rtol=0, atol=scale * 2 ** -5, err_msg=str(i))


def test_compiled_step_with_autocast_compiles_with_eagers_values() -> None:
    """A step under autocast (bfloat16) compiles (no fallback warning) and trains as eager
    within bfloat16's rounding (tests/planner/test_bf16_compiled.py checks it closely)."""
    planner = pytest.importorskip("planner")

    def run(wrap: Any) -> tuple[list[float], Any]:
        rt.manual_seed(0)
        m = rt.nn.Sequential(rt.nn.Linear(16, 32), rt.nn.ReLU(), rt.nn.Linear(32, 10))
        opt = rt.optim.SGD(m.parameters(), lr=0.1)
        x, y = rt.randn(8, 16), rt.randint(0, 10, (8,))

        def step(x: rt.Tensor, y: rt.Tensor) -> rt.Tensor:
            opt.zero_grad()
            with rt.autocast("cpu"):
                loss = rt.nn.functional.cross_entropy(m(x), y)
            loss.backward()
            opt.step()
            return loss

        step = wrap(step)
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)  # a fallback to eager warns
            return [step(x, y).item() for _ in range(3)], m

    want, _ = run(lambda f: f)
    losses, m = run(planner.compile)
    np.testing.assert_allclose(losses, want, rtol=2 ** -6)
    assert losses[2] < losses[0]
    assert all(p.dtype is rt.float32 for p in m.parameters())
    assert not rt.is_autocast_enabled("cpu")


def _mine(lib: Any, cast_inputs: Any) -> Any:
    """A Function with custom_fwd/custom_bwd (PyTorch's recipe), recording dtypes seen."""
    seen: dict[str, Any] = {}

    class MyMM(lib.autograd.Function):
        @staticmethod
        @lib.amp.custom_fwd(device_type="cpu", cast_inputs=cast_inputs)
        def forward(ctx: Any, a: Any, b: Any) -> Any:
            ctx.save_for_backward(a, b)
            seen["fwd"] = (a.dtype, lib.is_autocast_enabled("cpu"))
            return a.mm(b)

        @staticmethod
        @lib.amp.custom_bwd(device_type="cpu")
        def backward(ctx: Any, grad: Any) -> Any:
            a, b = ctx.saved_tensors
            seen["bwd"] = lib.is_autocast_enabled("cpu")
            return grad.mm(b.t()), a.t().mm(grad)

    return MyMM, seen


@pytest.mark.parametrize("cast_inputs", [None, "float32"])
def test_custom_fwd_bwd_as_torch(cast_inputs: Any) -> None:
    torch = _torch()
    results = []
    for lib in (rt, torch):
        fn, seen = _mine(lib, None if cast_inputs is None else getattr(lib, cast_inputs))
        a = lib.ones(2, 3, requires_grad=True)
        b = lib.ones(3, 2, requires_grad=True)
        with lib.autocast("cpu"):
            out = fn.apply(a, b)
        out.float().sum().backward()
        results.append((str(seen["fwd"][0]).split(".")[-1], seen["fwd"][1], seen["bwd"],
                        str(out.dtype).split(".")[-1], str(a.grad.dtype).split(".")[-1]))
    assert results[0] == results[1]
    with pytest.raises(ValueError, match="Expected `device_type` of type `str`"):
        rt.amp.custom_fwd(device_type=3)  # type: ignore[arg-type]


def test_state_is_per_thread() -> None:
    import threading

    seen: list[Any] = []

    def other() -> None:
        seen.append((rt.is_autocast_enabled("cpu"), (rt.ones(2, 2) @ rt.ones(2, 2)).dtype))

    with rt.autocast("cpu"):
        t = threading.Thread(target=other)
        t.start()
        t.join()
        assert (rt.ones(2, 2) @ rt.ones(2, 2)).dtype is rt.bfloat16
    assert seen == [(False, rt.float32)]
