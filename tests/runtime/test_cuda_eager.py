"""Eager mode on "cuda", proven without a GPU: the strict fake CuPy (tests/fake_cupy.py) stands in
for CuPy, so a numpy call on a device array, an implicit copy to the host or an op on the wrong
device fails here as it would on a GPU. Every registry primitive runs forward and backward on
cuda tensors and matches the CPU; nn, optim and gradcheck run there; placement follows PyTorch."""

from __future__ import annotations

import copy
import threading
from types import ModuleType
from typing import Any

import numpy as np
import pytest

import runtime as rt
from runtime.ops import REGISTRY
from tests import fake_cupy
from tests.fakecuda import fake_cuda_fixture, fake_only, needs_two_devices  # noqa: F401

try:
    from . import test_ops as T
except ImportError:  # tests/runtime is not a package: pytest put its folder on sys.path
    import test_ops as T

pytestmark = pytest.mark.usefixtures("fake_cuda")
MIXED = "Expected all tensors to be on the same device, but found at least two devices, "


class OnCuda:
    """The runtime module as a test case sees it, with tensors made on cuda:0 (index tensors
    and masks included), so one case text runs on either device."""

    def __getattr__(self, name: str) -> Any:
        return getattr(rt, name)

    @staticmethod
    def tensor(data: Any, dtype: Any = None, device: Any = "cuda",
               requires_grad: bool = False) -> rt.Tensor:
        return rt.tensor(data, dtype=dtype, device=device, requires_grad=requires_grad)


def _host(t: rt.Tensor | None) -> np.ndarray | None:
    return None if t is None else t.detach().cpu().numpy()


def _run_case(c: T.Case, m: Any, device: str) -> tuple[Any, list[Any]]:
    xs = [rt.tensor(np.asarray(a), dtype=rt.float64, device=device, requires_grad=True)
          for a in c.inputs]
    out = c.fn(m, *xs)
    out.backward(rt.ones_like(out))
    return out, [x.grad for x in xs]


def _on_device_calls(record: set[str]) -> dict[str, Any]:
    """Wrap every primitive's impl to note the ones called with a device array module; returns
    the originals, for _unwrap_impls."""
    originals = {}
    for name, prim in REGISTRY.items():
        def recorded(xp: Any, *args: Any, _name: str = name, _impl: Any = prim.impl,
                     **attrs: Any) -> Any:
            if xp is not np:
                record.add(_name)
            return _impl(xp, *args, **attrs)

        originals[name] = prim.impl
        object.__setattr__(prim, "impl", recorded)  # a frozen dataclass
    return originals


def _unwrap_impls(originals: dict[str, Any]) -> None:
    for name, impl in originals.items():
        object.__setattr__(REGISTRY[name], "impl", impl)


def _integer_programs(m: Any) -> None:
    """What the float cases do not reach: integer and bool tensors, casts, int reductions."""
    i = m.tensor([[1, 2, 3], [4, 5, 6]])
    f = m.tensor([0.5, 1.5, 2.5])
    b = m.tensor([True, False, True])
    _ = (i == f, i != f, i < f, i <= 2, i > f, i >= f, i + 1, -i, b * 1.5, i.sum(), i.amax(1),
         i.float(), f.long(), rt.where(b, i, f), i.max(1), i.min(0), i[:, m.tensor([0, 2])])
    _ = i & 3, i | 1, i ^ i, i << 1, i >> 1  # the integer bitwise primitives
    _ = m.tensor([[1, 1, 2], [3, 3, 3]]).topk(2, 1)  # stl_pick: PyTorch's pick among ties
    _ = f.polygamma(2)  # special_host: a special function's series on the host


def test_every_primitive_runs_on_cuda_as_on_cpu() -> None:
    seen: set[str] = set()
    mismatched = []
    originals = _on_device_calls(seen)
    try:
        for c in T.CASES:
            want, want_grads = _run_case(c, rt, "cpu")
            got, got_grads = _run_case(c, OnCuda(), "cuda")
            assert type(got._data).__module__ == "cupy" or got.device == "cpu", c.id
            for w, g in zip([want, *want_grads], [got, *got_grads]):
                if (w is None) != (g is None) or (w is not None and not np.allclose(
                        _host(w), _host(g), rtol=1e-12, atol=1e-14)):
                    mismatched.append(c.id)
        _integer_programs(OnCuda())
    finally:
        _unwrap_impls(originals)
    assert not mismatched, f"cuda differs from cpu in cases {mismatched}"
    unseen = sorted(set(REGISTRY) - seen)
    assert not unseen, f"primitives never run on a cuda tensor (add a case): {unseen}"


@pytest.mark.parametrize("c", [c.param() for c in T.GG_CASES])
def test_gradcheck_on_cuda(c: T.Case) -> None:
    xs = [rt.tensor(np.asarray(a), dtype=rt.float64, device="cuda", requires_grad=True)
          for a in c.inputs]
    assert rt.autograd.gradcheck(lambda *a: c.fn(OnCuda(), *a), xs)


def test_gradcheck_on_cuda_detects_a_wrong_gradient() -> None:
    class Twice(rt.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: rt.Tensor) -> rt.Tensor:
            return x * 2

        @staticmethod
        def backward(ctx: Any, g: rt.Tensor) -> rt.Tensor:
            return g * 3

    x = rt.tensor([0.5, -1.0], dtype=rt.float64, device="cuda", requires_grad=True)
    with pytest.raises(rt.autograd.GradcheckError, match="Jacobian mismatch"):
        rt.autograd.gradcheck(Twice.apply, (x,))


def _linear_mse_sgd(model: Any, x: rt.Tensor, y: rt.Tensor, steps: int) -> list[float]:
    opt = rt.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = rt.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def test_linear_mse_sgd_on_cuda_matches_cpu() -> None:
    rt.manual_seed(0)
    cpu_model = rt.nn.Sequential(rt.nn.Linear(5, 4), rt.nn.Tanh(), rt.nn.Linear(4, 2))
    cuda_model = copy.deepcopy(cpu_model).cuda()
    assert all(p.device == "cuda:0" for p in cuda_model.parameters())
    x, y = rt.randn(8, 5), rt.randn(8, 2)
    want = _linear_mse_sgd(cpu_model, x, y, 3)
    got = _linear_mse_sgd(cuda_model, x.cuda(), y.to("cuda"), 3)
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert got[-1] < got[0]
    for p, q in zip(cpu_model.parameters(), cuda_model.parameters()):
        assert q.device == "cuda:0" and q.grad.device == "cuda:0"
        np.testing.assert_allclose(q.detach().cpu().numpy(), p.detach().numpy(), rtol=1e-6)


def test_adam_on_cuda_matches_cpu() -> None:
    rt.manual_seed(1)
    w = rt.randn(3, 4, requires_grad=True)
    wc = w.detach().cuda().requires_grad_()
    for t, opt in ((w, rt.optim.Adam([w], lr=0.01)), (wc, rt.optim.Adam([wc], lr=0.01))):
        for _ in range(2):
            opt.zero_grad()
            (t * t).sum().backward()
            opt.step()
    np.testing.assert_allclose(wc.detach().cpu().numpy(), w.detach().numpy(), rtol=1e-6)


def test_composites_on_cuda() -> None:
    """tanh, both gelus, affine layer_norm and cross_entropy (its target given on the host, as
    PyTorch allows) against the CPU, values and gradients."""
    rng = np.random.default_rng(3)
    x, w, b = rng.standard_normal((4, 6)), rng.standard_normal(6), rng.standard_normal(6)
    target = np.array([0, 5, 2, 2])
    F = rt.nn.functional

    def step(device: str) -> list[np.ndarray]:
        xt, wt, bt = (rt.tensor(a, dtype=rt.float64, device=device, requires_grad=True)
                      for a in (x, w, b))
        h = F.layer_norm(xt, (6,), wt, bt)
        h = F.gelu(h) + F.gelu(h, approximate="tanh") + rt.tanh(h)
        loss = F.cross_entropy(h, rt.tensor(target))
        loss.backward()
        return [_host(t) for t in (loss, xt.grad, wt.grad, bt.grad)]  # type: ignore[misc]

    for got, want in zip(step("cuda"), step("cpu")):
        np.testing.assert_allclose(got, want, rtol=1e-12)


# --- placement --------------------------------------------------------------------------------


def test_mixed_devices_raise_pytorchs_error() -> None:
    needs_two_devices()
    gpu, cpu = rt.ones(3, device="cuda"), rt.ones(3)
    # PyTorch names the op's device (the first off the CPU) first, whatever the order
    for a, b in ((gpu, cpu), (cpu, gpu)):
        with pytest.raises(RuntimeError, match=f"^{MIXED}cuda:0 and cpu!$"):
            _ = a + b
    with pytest.raises(RuntimeError, match=f"^{MIXED}cuda:0 and cuda:1!$"):
        _ = gpu * rt.ones(3, device="cuda:1")
    with pytest.raises(RuntimeError, match=f"^{MIXED}cuda:0 and cpu!$"):
        rt.where(gpu > 0, cpu, gpu)
    with pytest.raises(RuntimeError, match=f"^{MIXED}cuda:0 and cpu!$"):
        rt.ones(2, 3, device="cuda") @ rt.ones(3, 2)
    with pytest.raises(RuntimeError, match=f"^{MIXED}cuda:0 and cpu!$"):
        rt.cat([gpu, rt.tensor([2.0])])


def test_a_0d_cpu_tensor_joins_a_cuda_op_and_gets_its_gradient_back() -> None:
    s = rt.tensor(3.0, requires_grad=True)  # 0-d, on the host
    x = rt.tensor([1.0, 2.0], device="cuda", requires_grad=True)
    for y in (s * x, x * s, rt.where(x > 1, s, x)):
        assert y.device == "cuda:0" and type(y._data).__module__ == "cupy"
    (s * x).sum().backward()
    assert s.grad.device == "cpu" and s.grad.item() == 3.0
    assert x.grad.device == "cuda:0" and x.grad.tolist() == [3.0, 3.0]
    with pytest.raises(RuntimeError, match=f"^{MIXED}cuda:0 and cpu!$"):
        rt.ones(2, 2, device="cuda") @ s  # not elementwise: no scalar exception
    y = rt.ones(2, device="cuda")
    y.mul_(rt.tensor(2.0))  # in place too
    assert y.device == "cuda:0" and y.tolist() == [2.0, 2.0]
    with pytest.raises(RuntimeError, match=f"^{MIXED}cuda:0 and cpu!$"):
        rt.ones(2).mul_(rt.tensor(2.0, device="cuda"))  # the written tensor is no scalar


def test_backward_runs_each_device_on_its_own_queue() -> None:
    """.to() records a copy node whose backward copies the gradient back; the cuda nodes run on
    the cuda:0 worker, the host ones on the calling thread."""
    seen: dict[str, str] = {}

    def on(name: str) -> Any:
        def hook(g: rt.Tensor) -> None:
            seen[name] = f"{threading.current_thread().name} {g.device}"

        return hook

    x = rt.tensor([1.0, -2.0], dtype=rt.float64, requires_grad=True)
    y = x.to("cuda")
    assert y.device == "cuda:0" and y.grad_fn.name() == "ToDeviceBackward0"
    z = (y * y).tanh()
    z.register_hook(on("z"))
    x.register_hook(on("x"))
    z.sum().backward()
    assert seen == {"z": "autograd-cuda:0 cuda:0", "x": f"{threading.main_thread().name} cpu"}
    np.testing.assert_allclose(x.grad.numpy(), 2 * np.array([1.0, -2.0])
                               * (1 - np.tanh(np.array([1.0, 4.0])) ** 2), rtol=1e-6)


def test_second_device_runs_under_its_own_guard() -> None:
    """A cuda:1 op's arrays sit on device 1 and its kernels run with device 1 current, on the
    caller's thread and on the cuda:1 backward worker (the fake refuses any other)."""
    needs_two_devices()
    x = rt.randn(2, 3, device="cuda:1", requires_grad=True)
    y = (x * 2 + rt.ones(3, device="cuda:1")).sum()
    assert y._data.device.id == 1
    y.backward()
    assert x.grad.device == "cuda:1" and x.grad._data.device.id == 1
    assert x.to("cuda:0")._data.device.id == 0


# --- tensors and creation -------------------------------------------------------------------


def test_numpy_of_a_cuda_tensor_raises_pytorchs_error() -> None:
    t = rt.ones(2, device="cuda")
    with pytest.raises(TypeError, match=r"^can't convert cuda:0 device type tensor to numpy\. "
                       r"Use Tensor\.cpu\(\) to copy the tensor to host memory first\.$"):
        t.numpy()
    assert t.cpu().numpy().tolist() == [1.0, 1.0]


def test_conversions_and_scalars() -> None:
    needs_two_devices()
    t = rt.tensor([[1.5, -2.0]], device="cuda")
    assert t.is_cuda and t.device == "cuda:0" and t.cuda() is t and t.to("cuda:0") is t
    assert t.to("cpu").device == "cpu" and t.cpu().cuda().device == "cuda:0"
    assert t.cuda(1).device == "cuda:1" and t.to("cuda:1").cpu().tolist() == [[1.5, -2.0]]
    d = t.to(rt.float64)
    assert d.device == "cuda:0" and d.dtype is rt.float64
    assert float(t[0, 0]) == 1.5 and t[0, 1].item() == -2.0 and int(t.sum()) == 0
    assert bool(t[0, 0] > 0) and t.tolist() == [[1.5, -2.0]]
    assert "device='cuda:0'" in repr(t)
    assert rt.tensor(t._data).device == "cpu"  # from a CuPy array: copied to the host


def test_creation_functions_take_a_device() -> None:
    needs_two_devices()
    made = [rt.zeros(2, 3, device="cuda"), rt.ones(2, device="cuda:1"),
            rt.full((2,), 7.0, device="cuda"), rt.empty(4, device="cuda"),
            rt.arange(5, device="cuda"), rt.randn(3, device="cuda"), rt.rand(3, device="cuda"),
            rt.randint(0, 4, (3,), device="cuda"), rt.tensor([1, 2], device="cuda"),
            rt.zeros_like(rt.ones(2, device="cuda")), rt.ones(2).new_zeros(3)]
    devices = ["cuda:0", "cuda:1", "cuda:0", "cuda:0", "cuda:0", "cuda:0", "cuda:0", "cuda:0",
               "cuda:0", "cuda:0", "cpu"]
    for t, dev in zip(made, devices):
        assert t.device == dev
        assert (type(t._data).__module__ == "cupy") == (dev != "cpu")
        if dev != "cpu":
            assert t._data.device.id == int(dev[5:])
    assert made[4].tolist() == [0, 1, 2, 3, 4] and made[2].tolist() == [7.0, 7.0]


def test_random_draws_on_cuda_follow_manual_seed_as_on_cpu() -> None:
    """Drawn on the host and copied explicitly: the same stream as the CPU's, so eager cuda
    and cpu runs of a seeded step see the same numbers."""
    values = []
    for device in ("cuda", "cpu", "cuda"):
        rt.manual_seed(42)
        t = rt.randn(4, device=device)
        drop = rt.nn.functional.dropout(rt.ones(6, device=device), 0.5)
        values.append((t.tolist(), drop.tolist()))
    assert values[0] == values[1] == values[2]


def test_the_fake_is_strict(fake_cuda: ModuleType) -> None:
    """What the tests above rely on: a numpy call or a numpy operand on a device array fails."""
    fake_only("CuPy forwards numpy's functions that the fake refuses")
    cupy = fake_cuda
    a = cupy.asarray([1.0, 2.0])
    with pytest.raises(TypeError, match="Implicit conversion to a NumPy array is not allowed"):
        np.asarray(a)
    with pytest.raises(TypeError, match=r"numpy\.exp was called on a cupy array"):
        np.exp(a)
    with pytest.raises(TypeError, match=r"numpy\.result_type was called on a cupy array"):
        np.result_type(a, 1.0)
    with pytest.raises(TypeError, match="Unsupported type <class 'numpy.ndarray'>"):
        _ = a + np.ones(2)
    with pytest.raises(TypeError, match=r"numpy\.add was called on a cupy array"):
        _ = np.ones(2) + a
    with cupy.cuda.Device(1):
        with pytest.raises(ValueError, match="array device = 0 while current = 1"):
            _ = a * 2
    assert type(a.sum()) is fake_cupy.ndarray and a.sum().ndim == 0  # never a numpy scalar
    with pytest.raises(NotImplementedError, match="set_raw_module_backend"):
        cupy.RawModule(code="extern \"C\" __global__ void k() {}").get_function("k")


def test_gpu_draws_come_from_that_gpus_generator() -> None:
    """As PyTorch: a tensor made on a GPU draws from ``cuda.default_generators[i]``, which
    ``manual_seed`` seeds with the CPU's and ``cuda.manual_seed`` alone; a CPU draw does not
    move the GPU's stream."""
    rt.manual_seed(3)
    first = rt.randn(5, device="cuda").cpu().numpy()
    rt.manual_seed(3)
    rt.randn(7)  # the CPU's stream only
    again = rt.randn(5, device="cuda").cpu().numpy()
    np.testing.assert_array_equal(first, again)
    rt.cuda.manual_seed(11)
    a = rt.rand(4, device="cuda").cpu().numpy()
    rt.cuda.manual_seed(11)
    np.testing.assert_array_equal(rt.rand(4, device="cuda").cpu().numpy(), a)
    assert rt.cuda.default_generators[0].initial_seed() == 11
