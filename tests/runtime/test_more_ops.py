"""The inverse and hyperbolic functions, atan2, fmod and runtime.ops.more_ops: gradients
checked numerically, the in-place random fills, a compiled step equal to eager without
falling back. (Against PyTorch: test_more_ops_torch.py.)"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt
from runtime.autograd.gradcheck import gradcheck

X = np.random.default_rng(0).standard_normal((3, 4))

DIFFERENTIABLE = {
    "asin": lambda x: rt.asin(x.tanh() * 0.9),
    "acos": lambda x: (x.tanh() * 0.9).acos(),
    "atan": lambda x: rt.atan(x * 2),
    "sinh": lambda x: rt.sinh(x),
    "cosh": lambda x: x.cosh(),
    "asinh": lambda x: rt.asinh(x * 3),
    "acosh": lambda x: rt.acosh(x * x + 1.2),
    "atanh": lambda x: rt.atanh(x.tanh() * 0.8),
    "atan2": lambda x: rt.atan2(x, x.flip(1) + 0.1),
    "fmod": lambda x: rt.fmod(x * 3, x.abs() + 0.7),
    "hypot": lambda x: rt.hypot(x, x.flip(0)),
    "hstack": lambda x: rt.hstack([x, x[:, :1] * 2]),
    "vstack": lambda x: rt.vstack([x[0], x]),
    "dstack": lambda x: rt.dstack([x, x.exp()]),
    "column_stack": lambda x: rt.column_stack([x[0], x.T]),
    "meshgrid": lambda x: sum(g * (i + 1) for i, g in enumerate(
        rt.meshgrid(x[0], x[1, :2], indexing="xy"))),
    "trace": lambda x: rt.trace(x * x),
    "diff": lambda x: rt.diff(x, n=2, dim=1, prepend=x[:, :1].exp()),
    "rot90": lambda x: rt.rot90(x, 3) * rt.arange(12.0, dtype=rt.float64).reshape(4, 3),
    "tensordot": lambda x: rt.tensordot(x, x.T.exp(), dims=([1], [0])),
    "softmin": lambda x: rt.nn.functional.softmin(x, 1),
    "softshrink": lambda x: rt.nn.functional.softshrink(x, 0.3),
    "hardshrink": lambda x: rt.nn.functional.hardshrink(x, 0.3),
    "pairwise_distance": lambda x: rt.nn.functional.pairwise_distance(x[:2], x[1:], 3.0),
    "interpolate_bilinear": lambda x: rt.nn.functional.interpolate(
        x.reshape(1, 1, 3, 4), size=(5, 7), mode="bilinear"),
    "interpolate_nearest": lambda x: rt.nn.functional.interpolate(
        x.reshape(1, 2, 6), scale_factor=1.5, mode="nearest-exact"),
    "adaptive_max_pool2d": lambda x: rt.nn.functional.adaptive_max_pool2d(
        x.reshape(1, 1, 3, 4), (2, 3)),
    "clamp_tensor": lambda x: rt.clamp(x, min=x[0] * 0.3, max=x[:, :1].abs() + 0.2),
}


@pytest.mark.parametrize("name", sorted(DIFFERENTIABLE))
def test_gradients_check(name: str) -> None:
    x = rt.tensor(X, requires_grad=True)
    assert gradcheck(DIFFERENTIABLE[name], (x,))


def test_values_against_numpy() -> None:
    x = rt.tensor(X)
    for op, ref in (("asin", np.arcsin), ("acos", np.arccos), ("atan", np.arctan),
                    ("sinh", np.sinh), ("cosh", np.cosh), ("asinh", np.arcsinh),
                    ("atanh", np.arctanh)):
        y = np.tanh(X)
        np.testing.assert_array_equal(getattr(rt, op)(rt.tensor(y)).numpy(), ref(y))
    np.testing.assert_array_equal(rt.acosh(x * x + 1).numpy(), np.arccosh(X * X + 1))
    np.testing.assert_array_equal(rt.atan2(x, -x.T.T).numpy(), np.arctan2(X, -X))
    np.testing.assert_array_equal(rt.fmod(x, 0.3).numpy(), np.fmod(X, 0.3))
    np.testing.assert_array_equal(rt.hstack([x, x]).numpy(), np.hstack([X, X]))
    np.testing.assert_array_equal(rt.vstack([x[0], x]).numpy(), np.vstack([X[0], X]))
    np.testing.assert_array_equal(rt.dstack([x[0], x[1]]).numpy(), np.dstack([X[0], X[1]]))
    np.testing.assert_array_equal(rt.column_stack([x[0], x[1]]).numpy(),
                                  np.column_stack([X[0], X[1]]))
    for indexing in ("ij", "xy"):
        for got, want in zip(rt.meshgrid(x[0], x[1, :2], x[2, :3], indexing=indexing),
                             np.meshgrid(X[0], X[1, :2], X[2, :3], indexing=indexing),
                             strict=True):
            np.testing.assert_array_equal(got.numpy(), want)
    assert float(rt.trace(x)) == pytest.approx(np.trace(X))
    np.testing.assert_array_equal(rt.diff(x, 2, 0).numpy(), np.diff(X, 2, 0))
    for k in range(-2, 6):
        np.testing.assert_array_equal(rt.rot90(x, k).numpy(), np.rot90(X, k))
    np.testing.assert_allclose(rt.tensordot(x, x, ([0, 1], [0, 1])).numpy(),
                               np.tensordot(X, X, ([0, 1], [0, 1])))
    assert rt.diff(rt.tensor([True, True, False])).numpy().tolist() == [False, True]
    assert rt.empty_like(x).shape == x.shape and rt.empty_like(x, dtype=rt.float32).dtype \
        is rt.float32
    assert x.int().dtype is rt.int32 and x.int().numpy().tolist() == np.trunc(X).tolist()
    assert x.type() == "runtime.DoubleTensor" and x.type(rt.float32).dtype is rt.float32
    assert x.type("torch.LongTensor").dtype is rt.int64
    with pytest.raises(ValueError, match="invalid type"):
        x.type("torch.ComplexTensor")
    assert isinstance(x.dtype, rt.dtype) and rt.get_default_dtype() is rt.float32
    assert rt.finfo(rt.float32).eps == float(np.finfo(np.float32).eps)
    assert rt.iinfo(rt.int64).max == 2**63 - 1


@pytest.mark.parametrize("fill", ["uniform_", "normal_", "bernoulli_", "exponential_"])
def test_random_fills_work_in_place_from_a_generator(fill: str) -> None:
    args = {"uniform_": (-2.0, 3.0), "normal_": (1.0, 0.5), "bernoulli_": (0.25,),
            "exponential_": (4.0,)}[fill]
    x = rt.zeros(200, 50)
    version, alias = x._vc.v, x[3]
    assert getattr(x, fill)(*args, generator=rt.Generator().manual_seed(7)) is x
    assert x._vc.v > version
    np.testing.assert_array_equal(alias.numpy(), x.numpy()[3])  # the same storage
    y = getattr(rt.zeros(200, 50), fill)(*args, generator=rt.Generator().manual_seed(7))
    np.testing.assert_array_equal(x.numpy(), y.numpy())
    v = x.numpy()
    if fill == "uniform_":
        assert v.min() >= -2.0 and v.max() < 3.0 and abs(v.mean() - 0.5) < 0.05
    elif fill == "normal_":
        assert abs(v.mean() - 1.0) < 0.02 and abs(v.std() - 0.5) < 0.02
    elif fill == "bernoulli_":
        assert set(np.unique(v)) <= {0.0, 1.0} and abs(v.mean() - 0.25) < 0.02
    else:
        assert v.min() >= 0 and abs(v.mean() - 0.25) < 0.01


def test_random_fills_follow_autograd_in_place_rules() -> None:
    w = rt.zeros(3, 4, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        w.normal_()
    with rt.no_grad():
        w.uniform_(-0.1, 0.1)
    assert w.requires_grad and float(w.abs().max()) <= 0.1
    assert rt.zeros(3).bernoulli_(rt.tensor([0.0, 1.0, 0.0])).numpy().tolist() == [0, 1, 0]
    with pytest.raises(NotImplementedError, match='"normal_kernel_cpu" not implemented for'):
        rt.zeros(3, dtype=rt.int64).normal_()


def test_a_compiled_conv_step_with_resampling_equals_eager() -> None:
    def build() -> tuple[Any, Any]:
        rt.manual_seed(4)
        model = rt.nn.Sequential(rt.nn.Conv2d(2, 4, 3, padding=1), rt.nn.Upsample(
            scale_factor=2, mode="bilinear"), rt.nn.AdaptiveMaxPool2d((3, 5)), rt.nn.Flatten(),
            rt.nn.Linear(60, 3))
        opt = rt.optim.SGD(model.parameters(), lr=0.05)

        def step(x: Any, y: Any) -> Any:
            opt.zero_grad()
            logits = model(x).clamp(min=rt.tensor([-2.0, -1.0, -3.0]))
            loss = rt.nn.functional.nll_loss(
                rt.nn.functional.log_softmax(logits, 1, dtype=rt.float64), y)
            loss.backward()
            opt.step()
            return loss

        return step, model

    x = rt.tensor(np.random.default_rng(3).standard_normal((2, 2, 5, 6)).astype(np.float32))
    y = rt.tensor([0, 2])
    eager_step, eager_model = build()
    fn, model = build()
    step = planner.compile(fn)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = [float(step(x, y)) for _ in range(3)]
    want = [float(eager_step(x, y)) for _ in range(3)]
    np.testing.assert_allclose(got, want, rtol=1e-5)
    for p, q in zip(model.parameters(), eager_model.parameters(), strict=True):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)


def test_a_compiled_step_with_them_equals_eager() -> None:
    def build() -> tuple[Any, Any]:
        w = rt.tensor(np.random.default_rng(1).standard_normal((4, 6)).astype(np.float32),
                      requires_grad=True)
        opt = rt.optim.SGD([w], lr=0.05)

        def step(x: Any) -> Any:
            opt.zero_grad()
            h = x @ w
            h = rt.asinh(h) + rt.atan(h).sinh() + rt.atan2(h, h.flip(1) + 0.5)
            h = rt.hstack([h, rt.hypot(h, rt.ones_like(h))]) + rt.fmod(h.cosh(), 0.7).repeat(1, 2)
            h = rt.diff(h, dim=1) + rt.tensordot(h[:, :4], w, dims=([1], [0])).repeat(1, 2)[:, :11]
            loss = h.square().mean() + rt.trace(w[:, :4] @ w[:, :4].T) * 0.01
            loss.backward()
            # a plain step, not opt.step(): eager SGD rounds p - lr * g once (torch's fma)
            # where a compiled one rounds twice, and fmod's jumps turn that ulp into 0.3% of
            # the loss in three steps (runtime.optim.optimizer.add_scaled)
            with rt.no_grad():
                w.sub_(w.grad * 0.05)
            return loss

        return step, w

    x = rt.tensor(np.random.default_rng(2).standard_normal((5, 4)).astype(np.float32))
    eager_step, ew = build()
    fn, w = build()
    step = planner.compile(fn)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = [float(step(x)) for _ in range(3)]
    want = [float(eager_step(x)) for _ in range(3)]
    np.testing.assert_allclose(got, want, rtol=1e-5)
    np.testing.assert_allclose(w.detach().numpy(), ew.detach().numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize(("fn", "shape"), [("dropout1d", (6, 40, 9)), ("dropout1d", (40, 9)),
                                           ("dropout2d", (6, 40, 3, 3))])
def test_channel_dropout_zeroes_whole_channels(fn: str, shape: tuple[int, ...]) -> None:
    rt.manual_seed(0)
    x = rt.ones(*shape, requires_grad=True)
    y = getattr(rt.nn.functional, fn)(x, 0.4)
    v = y.detach().numpy()
    lead = len(shape) - (1 if fn == "dropout1d" else 2)
    per_channel = v.reshape(*shape[:lead], -1)
    assert np.all((per_channel == 0).all(-1) | np.isclose(per_channel, 1 / 0.6).all(-1))
    assert 0.2 < (per_channel[..., 0] == 0).mean() < 0.6
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), v)  # the mask and scale, again
    module = (rt.nn.Dropout1d if fn == "dropout1d" else rt.nn.Dropout2d)(0.4).eval()
    assert module(x) is x
    z = rt.ones(*shape)
    assert getattr(rt.nn.functional, fn)(z, 0.4, inplace=True) is z and float(z.min()) == 0.0


def test_dropout2d_reads_a_3d_input_as_batch_channels_length_with_a_warning() -> None:
    rt.manual_seed(1)
    with pytest.warns(UserWarning, match="interpreted as shape \\(N, C, L\\)"):
        v = rt.nn.functional.dropout2d(rt.ones(8, 30, 5), 0.5).numpy()
    assert np.all((v == 0).all(-1) | (v == 2.0).all(-1))
    with pytest.raises(RuntimeError, match="Expected 2D or 3D input, but received a 4D"):
        rt.nn.functional.dropout1d(rt.ones(2, 3, 4, 5))


def test_dropout_in_place() -> None:
    x = rt.ones(50, 40)
    assert rt.nn.functional.dropout(x, 0.5, True, True) is x
    assert float(x.min()) == 0.0 and float(x.max()) == 2.0
    y = rt.ones(10)
    assert rt.nn.Dropout(0.5, inplace=True).eval()(y) is y


def test_multinomial_draws_by_weight_from_a_generator() -> None:
    w = rt.tensor([[1.0, 2.0, 7.0, 0.0], [0.0, 0.0, 1.0, 1.0]])
    draws = rt.multinomial(w, 20_000, replacement=True, generator=rt.Generator().manual_seed(3))
    assert draws.shape == (2, 20_000) and draws.dtype is rt.int64
    freq = np.stack([np.bincount(r, minlength=4) for r in draws.numpy()]) / 20_000
    np.testing.assert_allclose(freq, (w / w.sum(1, keepdim=True)).numpy(), atol=0.015)
    again = rt.multinomial(w, 20_000, True, generator=rt.Generator().manual_seed(3))
    np.testing.assert_array_equal(draws.numpy(), again.numpy())
    once = w.multinomial(4).numpy()  # without replacement: each category once, weight 0 last
    assert all(sorted(r) == [0, 1, 2, 3] for r in once)
    assert once[0, -1] == 3 and set(once[1, :2]) == {2, 3}
    assert rt.multinomial(rt.tensor([0.2, 0.8]), 1).shape == (1,)


@pytest.mark.parametrize(("probs", "n", "replacement", "message"), [
    ([0.5, 0.5], 3, False, "cannot sample n_sample > prob_dist.size\\(-1\\) samples without"),
    ([0.0, 0.0], 1, False, "invalid multinomial distribution \\(sum of probabilities <= 0\\)"),
    ([-0.1, 1.0], 1, True, "probability tensor contains either `inf`, `nan` or element < 0"),
    ([0.5, 0.5], 0, True, "cannot sample n_sample <= 0 samples"),
])
def test_multinomial_errors(probs: list[float], n: int, replacement: bool, message: str
                            ) -> None:
    with pytest.raises(RuntimeError, match=message):
        rt.multinomial(rt.tensor(probs), n, replacement)
    with pytest.raises(RuntimeError, match="only supports floating-point dtypes for input, "
                                           "got: Long"):
        rt.multinomial(rt.tensor([1, 2]), 1)
    with pytest.raises(RuntimeError, match="prob_dist must be 1 or 2 dim"):
        rt.multinomial(rt.ones(2, 2, 2), 1)


def test_to_takes_pytorchs_forms() -> None:
    x = rt.randn(3)
    assert x.to("cpu", non_blocking=True) is x and x.to(rt.device("cpu")) is x
    assert x.to(x.dtype, copy=True) is not x
    np.testing.assert_array_equal(x.to(x.dtype, copy=True).numpy(), x.numpy())
    assert x.to(rt.float64, True, False).dtype is rt.float64
    assert x.to(device="cpu", dtype=rt.float64, non_blocking=False).dtype is rt.float64
    with pytest.raises(TypeError, match=r"to\(\) received an invalid combination of arguments "
                       r"- got \(str, sideways=bool\), but expected one of"):  # PyTorch's
        x.to("cpu", sideways=True)
    model = rt.nn.BatchNorm1d(3)
    assert model.to(rt.device("cpu"), non_blocking=True) is model
    assert model.to("cpu", rt.float64).weight.dtype is rt.float64
    assert model.num_batches_tracked.dtype is rt.int64  # integer buffers keep their dtype
    assert model.to(dtype=rt.float32).running_mean.dtype is rt.float32
    assert model.to(rt.zeros(1, dtype=rt.float64)).weight.dtype is rt.float64
    assert model.half().weight.dtype is rt.float16
    with pytest.raises(TypeError, match="only accepts floating point or complex dtypes"):
        model.to(rt.int64)
