"""Parity with PyTorch of the second batch of nn layers: ReLU(inplace), RNN
flatten_parameters, transposed convolutions (eager values, gradients, errors, init and a
compiled decoder equal to eager), instance norm, pixel shuffle, padding modules, and more
losses."""

from __future__ import annotations

import copy
import math
import warnings
from typing import Any

import numpy as np
import pytest

import runtime as rt

F = rt.nn.functional
DTYPES = ["float32", "float64"]


def _tol(dtype: str) -> dict[str, float]:
    return {"rtol": 1e-4, "atol": 1e-5} if dtype == "float32" else {"rtol": 1e-10, "atol": 1e-12}


def _pair(arrays: list[np.ndarray], nograd: tuple[int, ...] = ()
          ) -> tuple[list[Any], list[rt.Tensor]]:
    """The same arrays as torch and runtime leaves that require grad (floats not in
    ``nograd`` only)."""
    torch = pytest.importorskip("torch")
    grad = [a.dtype.kind == "f" and i not in nograd for i, a in enumerate(arrays)]
    theirs = [torch.tensor(a, requires_grad=g) for a, g in zip(arrays, grad)]
    ours = [rt.tensor(a, requires_grad=g) for a, g in zip(arrays, grad)]
    return theirs, ours


def _check(torch_fn: Any, rt_fn: Any, arrays: list[np.ndarray], dtype: str,
           nograd: tuple[int, ...] = ()) -> None:
    """Values of torch_fn(*torch leaves) and rt_fn(*runtime leaves), and the gradients of a
    random weighting of the result, agree."""
    torch = pytest.importorskip("torch")
    theirs, ours = _pair(arrays, nograd)
    want, got = torch_fn(*theirs), rt_fn(*ours)
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), **_tol(dtype))
    g = np.random.default_rng(1).standard_normal(tuple(want.shape)).astype(dtype)
    if not want.requires_grad:
        return
    want.backward(torch.tensor(g))
    got.backward(rt.tensor(g))
    for t, r in zip(theirs, ours):
        if t.grad is None:
            assert r.grad is None
        else:
            np.testing.assert_allclose(r.grad.numpy(), t.grad.numpy(), **_tol(dtype))


def _raises_same(torch_fn: Any, rt_fn: Any) -> None:
    """Both raise the same exception type with the same text."""
    pytest.importorskip("torch")
    with pytest.raises(Exception) as theirs:
        torch_fn()
    with pytest.raises(type(theirs.value)) as ours:
        rt_fn()
    assert str(ours.value) == str(theirs.value)


def _rand(*shape: int, dtype: str = "float64", seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


# ------------------------------------------------------------------------------- item 1


def test_relu_inplace_module_and_functional():
    assert repr(rt.nn.ReLU(inplace=True)) == "ReLU(inplace=True)"
    assert repr(rt.nn.ReLU()) == "ReLU()"
    x = rt.tensor([-1.0, 2.0, 0.0], requires_grad=True)
    y = x * 1
    out = rt.nn.ReLU(True)(y)
    assert out is y and y.tolist() == [0.0, 2.0, 0.0]
    out.sum().backward()
    assert x.grad.tolist() == [0.0, 1.0, 0.0]
    z = rt.tensor([-3.0, 4.0])
    assert F.relu(z, inplace=True) is z and z.tolist() == [0.0, 4.0]
    assert F.relu(rt.tensor([-3.0, 4.0])).tolist() == [0.0, 4.0]


def test_relu_inplace_on_leaf_requiring_grad_raises_as_torch():
    torch = pytest.importorskip("torch")
    _raises_same(lambda: torch.nn.functional.relu(torch.ones(2, requires_grad=True), True),
                 lambda: F.relu(rt.ones(2, requires_grad=True), True))


@pytest.mark.parametrize("cls", ["RNN", "LSTM", "GRU"])
def test_flatten_parameters_is_a_no_op(cls):
    m = getattr(rt.nn, cls)(3, 4)
    before = [p.detach().numpy().copy() for p in m.parameters()]
    assert m.flatten_parameters() is None
    assert all(np.array_equal(a, p.detach().numpy()) for a, p in zip(before, m.parameters()))
    assert m.flatten_parameters.__doc__


# ------------------------------------------------------------------------------- item 2

CASES_2D = [  # n, c_in, c_out, kernel, stride, padding, output_padding, groups, dilation, hw
    (2, 4, 6, 3, 2, 1, 1, 2, 1, (5, 6)),
    (1, 3, 2, (2, 3), (3, 2), (0, 1), (2, 1), 1, (1, 2), (4, 4)),
    (2, 2, 4, 3, 1, 0, 1, 1, 2, (3, 3)),  # output_padding >= stride, < dilation
    (2, 4, 4, 1, 1, 0, 0, 4, 1, (3, 3)),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", CASES_2D)
def test_conv_transpose2d_values_and_grads(case, dtype):
    torch = pytest.importorskip("torch")
    n, c, o, k, s, p, op, g, d, hw = case
    kk = (k, k) if isinstance(k, int) else k
    arrays = [_rand(n, c, *hw, dtype=dtype), _rand(c, o // g, *kk, dtype=dtype, seed=1),
              _rand(o, dtype=dtype, seed=2)]
    _check(lambda x, w, b: torch.nn.functional.conv_transpose2d(x, w, b, s, p, op, g, d),
           lambda x, w, b: F.conv_transpose2d(x, w, b, s, p, op, g, d), arrays, dtype)
    _check(lambda x, w, b: torch.nn.functional.conv_transpose2d(x[0], w, None, s, p, op, g, d),
           lambda x, w, b: F.conv_transpose2d(x[0], w, None, s, p, op, g, d), arrays, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_conv_transpose1d_values_and_grads(dtype):
    torch = pytest.importorskip("torch")
    arrays = [_rand(2, 4, 7, dtype=dtype), _rand(4, 3, 3, dtype=dtype, seed=1),
              _rand(6, dtype=dtype, seed=2)]
    _check(lambda x, w, b: torch.nn.functional.conv_transpose1d(x, w, b, 2, 1, 1, 2, 1),
           lambda x, w, b: F.conv_transpose1d(x, w, b, 2, 1, 1, 2, 1), arrays, dtype)
    _check(lambda x, w, b: torch.nn.functional.conv_transpose1d(x[1], w, b[:3], dilation=2),
           lambda x, w, b: F.conv_transpose1d(x[1], w, b[:3], dilation=2), arrays, dtype)


def test_conv_transpose_hand_checked():
    # stride 2, a 2-tap kernel of ones: each input lands on two outputs, no overlap
    x = rt.tensor([[[1.0, 2.0, 3.0]]])
    w = rt.ones(1, 1, 2)
    assert F.conv_transpose1d(x, w, stride=2).tolist() == [[[1.0, 1.0, 2.0, 2.0, 3.0, 3.0]]]
    # stride 1: overlapping taps add
    assert F.conv_transpose1d(x, w).tolist() == [[[1.0, 3.0, 5.0, 3.0]]]


def test_conv_transpose_modules_init_repr_and_output_size():
    torch = pytest.importorskip("torch")
    args = dict(stride=2, padding=1, output_padding=1, groups=2, dilation=2, bias=False)
    ours, theirs = rt.nn.ConvTranspose2d(4, 6, 3, **args), torch.nn.ConvTranspose2d(4, 6, 3, **args)
    assert repr(ours) == repr(theirs)
    assert repr(rt.nn.ConvTranspose1d(4, 6, 3)) == repr(torch.nn.ConvTranspose1d(4, 6, 3))
    assert tuple(ours.weight.shape) == tuple(theirs.weight.shape) == (4, 3, 3, 3)
    m = rt.nn.ConvTranspose2d(16, 8, 3)
    bound = 1 / np.sqrt(8 * 9)  # fan_in of a transposed weight is out/groups * k*k
    assert np.abs(m.bias.detach().numpy()).max() <= bound
    assert np.abs(m.weight.detach().numpy()).max() <= bound
    tm = torch.nn.ConvTranspose2d(4, 3, 3, stride=2)
    rm = rt.nn.ConvTranspose2d(4, 3, 3, stride=2)
    rm.load_state_dict({k: rt.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
    x = _rand(1, 4, 5, 5, dtype="float32")
    for size in [(12, 12), (11, 12), [1, 3, 12, 11]]:
        want = tm(torch.tensor(x), output_size=size)
        got = rm(rt.tensor(x), output_size=size)
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)
    _raises_same(lambda: tm(torch.tensor(x), output_size=(20, 20)),
                 lambda: rm(rt.tensor(x), output_size=(20, 20)))
    t1, r1 = torch.nn.ConvTranspose1d(2, 2, 3, stride=3), rt.nn.ConvTranspose1d(2, 2, 3, stride=3)
    r1.load_state_dict({k: rt.tensor(v.detach().numpy()) for k, v in t1.state_dict().items()})
    x1 = _rand(2, 2, 4, dtype="float32")
    np.testing.assert_allclose(r1(rt.tensor(x1), output_size=[14]).detach().numpy(),
                               t1(torch.tensor(x1), output_size=[14]).detach().numpy(),
                               rtol=1e-5, atol=1e-6)


def test_conv_transpose_errors_as_torch():
    torch = pytest.importorskip("torch")
    tf = torch.nn.functional
    w = _rand(4, 3, 3, 3, dtype="float32")
    cases = [
        ((1, 5, 8, 8), {}), ((1, 4, 8, 8), {"bias": _rand(5, dtype="float32")}),
        ((1, 4, 8, 8), {"stride": 2, "output_padding": 2}), ((1, 4, 2, 2), {"padding": 3}),
        ((1, 4, 8, 8), {"groups": 3}), ((4, 8, 8, 8, 8), {}), ((1, 4, 3, 3), {"stride": 0}),
        ((1, 4, 3, 3), {"dilation": 0}), ((1, 4, 3, 3), {"padding": -1}),
    ]
    for shape, kw in cases:
        x = _rand(*shape, dtype="float32")
        tk = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
        rk = {k: rt.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
        _raises_same(lambda: tf.conv_transpose2d(torch.tensor(x), torch.tensor(w), **tk),
                     lambda: F.conv_transpose2d(rt.tensor(x), rt.tensor(w), **rk))
    _raises_same(lambda: tf.conv_transpose1d(torch.ones(4, 8, 8, 8), torch.ones(4, 3, 3)),
                 lambda: F.conv_transpose1d(rt.ones(4, 8, 8, 8), rt.ones(4, 3, 3)))
    _raises_same(lambda: torch.nn.ConvTranspose2d(4, 3, 3, padding_mode="reflect"),
                 lambda: rt.nn.ConvTranspose2d(4, 3, 3, padding_mode="reflect"))


def test_compiled_conv_transpose_decoder_with_instance_norm_equals_eager():
    import planner

    rt.manual_seed(0)
    model = rt.nn.Sequential(
        rt.nn.Conv2d(2, 4, 3, stride=2, padding=1),
        rt.nn.InstanceNorm2d(4, affine=True, track_running_stats=True), rt.nn.ReLU(),
        rt.nn.ConvTranspose2d(4, 4, 3, stride=2, padding=1, output_padding=1, groups=2),
        rt.nn.ReLU(inplace=True), rt.nn.ConvTranspose2d(4, 2, 3, padding=1))
    twin = copy.deepcopy(model)

    def trainer(m):
        opt = rt.optim.SGD(m.parameters(), lr=0.05)

        def step(x):
            opt.zero_grad()
            loss = F.mse_loss(m(x), x)
            loss.backward()
            opt.step()
            return loss
        return step

    compiled, eager = planner.compile(trainer(model)), trainer(twin)
    x = rt.randn(3, 2, 8, 8)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = [float(compiled(x)) for _ in range(3)]
    want = [float(eager(x)) for _ in range(3)]
    assert compiled.captures == 1
    np.testing.assert_allclose(got, want, rtol=1e-5)
    for (name, a), (_, b) in zip(model.state_dict().items(), twin.state_dict().items()):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-4,
                                   atol=1e-6, err_msg=name)


# ------------------------------------------------------------------------------- item 3


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(3, 4, 6), (2, 3, 4, 5)])
def test_instance_norm_functional_values_and_grads(shape, dtype):
    torch = pytest.importorskip("torch")
    c = shape[1]
    arrays = [_rand(*shape, dtype=dtype), _rand(c, dtype=dtype, seed=1),
              _rand(c, dtype=dtype, seed=2)]
    _check(lambda x, w, b: torch.nn.functional.instance_norm(x, weight=w, bias=b, eps=1e-3),
           lambda x, w, b: F.instance_norm(x, weight=w, bias=b, eps=1e-3), arrays, dtype)
    rm, rv = np.abs(_rand(c, dtype=dtype, seed=3)), np.abs(_rand(c, dtype=dtype, seed=4)) + 0.5
    _check(lambda x, w, b: torch.nn.functional.instance_norm(
               x, torch.tensor(rm), torch.tensor(rv), w, b, use_input_stats=False),
           lambda x, w, b: F.instance_norm(x, rt.tensor(rm), rt.tensor(rv), w, b,
                                           use_input_stats=False), arrays, dtype)


@pytest.mark.parametrize("cls,shape", [("InstanceNorm1d", (3, 4, 6)),
                                       ("InstanceNorm1d", (4, 6)),
                                       ("InstanceNorm2d", (2, 4, 3, 5)),
                                       ("InstanceNorm2d", (4, 3, 5))])
def test_instance_norm_modules_train_eval_running_stats(cls, shape):
    torch = pytest.importorskip("torch")
    for kw in [{}, {"affine": True}, {"track_running_stats": True, "momentum": 0.3},
               {"affine": True, "track_running_stats": True, "momentum": None},
               {"affine": True, "bias": False}]:
        theirs, ours = getattr(torch.nn, cls)(4, **kw), getattr(rt.nn, cls)(4, **kw)
        assert repr(ours) == repr(theirs)
        assert list(ours.state_dict()) == list(theirs.state_dict())
        for step in range(2):
            x = _rand(*shape, dtype="float32", seed=step)
            got = ours(rt.tensor(x, requires_grad=True))
            want = theirs(torch.tensor(x, requires_grad=True))
            np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-5,
                                       atol=1e-6)
        for (k, a), (_, b) in zip(ours.state_dict().items(), theirs.state_dict().items()):
            np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5,
                                       atol=1e-6, err_msg=k)
        ours.eval(), theirs.eval()
        x = _rand(*shape, dtype="float32", seed=5)
        np.testing.assert_allclose(ours(rt.tensor(x)).detach().numpy(),
                                   theirs(torch.tensor(x)).detach().numpy(), rtol=1e-5,
                                   atol=1e-6)


def test_instance_norm_hand_checked_and_errors():
    torch = pytest.importorskip("torch")
    out = F.instance_norm(rt.tensor([[[1.0, 3.0]]]))
    np.testing.assert_allclose(out.numpy(), [[[-1.0, 1.0]]], rtol=1e-4)  # eps shrinks it a bit
    tf = torch.nn.functional
    _raises_same(lambda: tf.instance_norm(torch.ones(2, 3, 4), use_input_stats=False),
                 lambda: F.instance_norm(rt.ones(2, 3, 4), use_input_stats=False))
    _raises_same(lambda: tf.instance_norm(torch.ones(2, 3, 1)),
                 lambda: F.instance_norm(rt.ones(2, 3, 1)))
    _raises_same(lambda: torch.nn.InstanceNorm1d(3)(torch.ones(2, 3, 4, 5)),
                 lambda: rt.nn.InstanceNorm1d(3)(rt.ones(2, 3, 4, 5)))
    _raises_same(lambda: torch.nn.InstanceNorm2d(3, affine=True)(torch.ones(2, 4, 4, 5)),
                 lambda: rt.nn.InstanceNorm2d(3, affine=True)(rt.ones(2, 4, 4, 5)))
    with pytest.warns(UserWarning, match="does not match num_features"):
        rt.nn.InstanceNorm2d(3)(rt.randn(2, 4, 4, 5))


# ------------------------------------------------------------------------------- item 4


@pytest.mark.parametrize("dtype", DTYPES)
def test_pixel_shuffle_and_unshuffle(dtype):
    torch = pytest.importorskip("torch")
    tf = torch.nn.functional
    _check(lambda x: tf.pixel_shuffle(x, 2), lambda x: F.pixel_shuffle(x, 2),
           [_rand(2, 8, 3, 4, dtype=dtype)], dtype)
    _check(lambda x: tf.pixel_shuffle(x, 3), lambda x: F.pixel_shuffle(x, 3),
           [_rand(2, 2, 9, 3, 2, dtype=dtype)], dtype)
    _check(lambda x: tf.pixel_unshuffle(x, 2), lambda x: F.pixel_unshuffle(x, 2),
           [_rand(3, 4, 6, dtype=dtype)], dtype)
    x = rt.arange(8.0).reshape(1, 4, 1, 2)
    # channel c*4 + i*2 + j goes to row i, column j of each 2x2 block
    assert F.pixel_shuffle(x, 2).tolist() == [[[[0.0, 2.0, 1.0, 3.0], [4.0, 6.0, 5.0, 7.0]]]]
    assert F.pixel_unshuffle(F.pixel_shuffle(x, 2), 2).tolist() == x.tolist()
    m, tm = rt.nn.PixelShuffle(2), torch.nn.PixelShuffle(2)
    assert repr(m) == repr(tm)
    assert repr(rt.nn.PixelUnshuffle(3)) == repr(torch.nn.PixelUnshuffle(3))
    for args in [((2, 3), 2), ((5, 2, 2), 2)]:
        _raises_same(lambda: tf.pixel_shuffle(torch.ones(*args[0]), args[1]),
                     lambda: F.pixel_shuffle(rt.ones(*args[0]), args[1]))
    for shape in [(1, 5, 3), (1, 4, 3), (4, 3)]:
        _raises_same(lambda: tf.pixel_unshuffle(torch.ones(*shape), 2),
                     lambda: F.pixel_unshuffle(rt.ones(*shape), 2))


PADS = [("ZeroPad1d", (1,), (2, 3, 4)), ("ZeroPad2d", ((1, 2, 0, 3),), (2, 3, 4)),
        ("ConstantPad1d", (2, 3.5), (2, 3, 4)), ("ConstantPad2d", ((1, 0, 2, 1), -1.0), (3, 4, 5)),
        ("ReflectionPad1d", (2,), (2, 3, 4)), ("ReflectionPad2d", ((1, 0, 2, 1),), (1, 3, 4, 5)),
        ("ReplicationPad1d", ((3, 1),), (3, 4)), ("ReplicationPad2d", (2,), (2, 3, 4, 5)),
        ("CircularPad1d", (2,), (2, 3, 4)), ("CircularPad2d", ((1, 2, 2, 1),), (2, 3, 4, 5))]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name,args,shape", PADS)
def test_padding_modules(name, args, shape, dtype):
    torch = pytest.importorskip("torch")
    theirs, ours = getattr(torch.nn, name)(*args), getattr(rt.nn, name)(*args)
    assert repr(ours) == repr(theirs)
    _check(theirs, ours, [_rand(*shape, dtype=dtype)], dtype)


def test_padding_module_errors():
    torch = pytest.importorskip("torch")
    _raises_same(lambda: torch.nn.ReflectionPad1d(1)(torch.ones(3)),
                 lambda: rt.nn.ReflectionPad1d(1)(rt.ones(3)))
    _raises_same(lambda: torch.nn.ZeroPad2d(1)(torch.ones(3)),
                 lambda: rt.nn.ZeroPad2d(1)(rt.ones(3)))


@pytest.mark.parametrize("dtype", DTYPES)
def test_unfold_fold_modules(dtype):
    torch = pytest.importorskip("torch")
    for args in [(2,), ((2, 3), 1, 1, 2)]:
        theirs, ours = torch.nn.Unfold(*args), rt.nn.Unfold(*args)
        assert repr(ours) == repr(theirs)
        _check(theirs, ours, [_rand(2, 3, 5, 6, dtype=dtype)], dtype)
    theirs, ours = torch.nn.Fold((4, 5), 2), rt.nn.Fold((4, 5), 2)
    assert repr(ours) == repr(theirs)
    _check(theirs, ours, [_rand(2, 12, 12, dtype=dtype)], dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_upsampling_aliases_and_softmax2d(dtype):
    torch = pytest.importorskip("torch")
    x = [_rand(2, 3, 4, 5, dtype=dtype)]
    for name, kw in [("UpsamplingNearest2d", {"scale_factor": 2}),
                     ("UpsamplingBilinear2d", {"size": (3, 7)}),
                     ("UpsamplingBilinear2d", {"scale_factor": 2})]:
        theirs, ours = getattr(torch.nn, name)(**kw), getattr(rt.nn, name)(**kw)
        assert repr(ours) == repr(theirs)
        _check(theirs, ours, x, dtype)
    assert repr(rt.nn.Softmax2d()) == "Softmax2d()"
    _check(torch.nn.Softmax2d(), rt.nn.Softmax2d(), x, dtype)
    _check(torch.nn.Softmax2d(), rt.nn.Softmax2d(), [x[0][0]], dtype)
    _raises_same(lambda: torch.nn.Softmax2d()(torch.ones(2, 3)),
                 lambda: rt.nn.Softmax2d()(rt.ones(2, 3)))


@pytest.mark.parametrize("dtype", DTYPES)
def test_bilinear(dtype):
    torch = pytest.importorskip("torch")
    tf = torch.nn.functional
    arrays = [_rand(2, 3, 4, dtype=dtype), _rand(2, 3, 5, dtype=dtype, seed=1),
              _rand(6, 4, 5, dtype=dtype, seed=2), _rand(6, dtype=dtype, seed=3)]
    _check(tf.bilinear, F.bilinear, arrays, dtype)
    _check(lambda a, b, w, c: tf.bilinear(a[0], b[0], w),
           lambda a, b, w, c: F.bilinear(a[0], b[0], w), arrays, dtype)
    x1, x2 = rt.tensor([[1.0, 2.0]]), rt.tensor([[3.0]])
    w = rt.tensor([[[1.0], [10.0]]])
    assert F.bilinear(x1, x2, w, rt.tensor([0.5])).tolist() == [[63.5]]  # 3*1 + 2*3*10 + .5
    theirs, ours = torch.nn.Bilinear(4, 5, 6), rt.nn.Bilinear(4, 5, 6, bias=True)
    assert repr(ours) == repr(theirs)
    assert repr(rt.nn.Bilinear(4, 5, 6, bias=False)) == repr(torch.nn.Bilinear(4, 5, 6, False))
    assert np.abs(ours.weight.detach().numpy()).max() <= 0.5  # 1/sqrt(in1_features)
    ours.load_state_dict({k: rt.tensor(v.detach().numpy()) for k, v in theirs.state_dict().items()})
    a, b = _rand(3, 4, dtype="float32"), _rand(3, 5, dtype="float32", seed=1)
    np.testing.assert_allclose(ours(rt.tensor(a), rt.tensor(b)).detach().numpy(),
                               theirs(torch.tensor(a), torch.tensor(b)).detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    _raises_same(lambda: tf.bilinear(torch.ones(2, 3), torch.ones(2, 4), torch.ones(5, 3, 3)),
                 lambda: F.bilinear(rt.ones(2, 3), rt.ones(2, 4), rt.ones(5, 3, 3)))


def test_alpha_dropout():
    torch = pytest.importorskip("torch")
    x = rt.randn(200000, dtype=rt.float64)
    m = rt.nn.AlphaDropout(0.2)
    assert repr(m) == repr(torch.nn.AlphaDropout(0.2))
    assert repr(rt.nn.AlphaDropout(inplace=True)) == repr(torch.nn.AlphaDropout(inplace=True))
    y = m(x).numpy()
    # zero mean and unit variance kept, and dropped elements share one value, as PyTorch's
    assert abs(y.mean()) < 0.02 and abs(y.var() - 1) < 0.02
    alpha = 1.7580993408473766
    a = 1 / math.sqrt((alpha ** 2 * 0.2 + 1) * 0.8)
    dropped = np.isclose(y, -alpha * a + alpha * a * 0.2)
    assert abs(dropped.mean() - 0.2) < 0.01
    m.eval()
    assert m(x) is x
    assert F.alpha_dropout(x, 0.5) is x  # training defaults to False
    assert F.alpha_dropout(rt.ones(3), 1.0, True).tolist() == [0.0, 0.0, 0.0]
    _raises_same(lambda: torch.nn.functional.alpha_dropout(torch.ones(2), 1.5),
                 lambda: F.alpha_dropout(rt.ones(2), 1.5))
    leaf = rt.randn(50, requires_grad=True)
    out = F.alpha_dropout(leaf, 0.3, True)
    out.sum().backward()
    kept = ~np.isclose(out.detach().numpy(), -alpha * (1 / math.sqrt((alpha ** 2 * 0.3 + 1)
                                                                      * 0.7)) * 0.7)
    a3 = 1 / math.sqrt((alpha ** 2 * 0.3 + 1) * 0.7)
    np.testing.assert_allclose(leaf.grad.numpy(), np.where(kept, a3, 0.0), rtol=1e-6)


# ------------------------------------------------------------------------------- item 5

REDUCTIONS = ["none", "mean", "sum"]


def _signs(n: int, seed: int = 7) -> np.ndarray:
    return np.where(np.random.default_rng(seed).random(n) < 0.5, -1.0, 1.0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_margin_hinge_soft_margin_losses(reduction, dtype):
    torch = pytest.importorskip("torch")
    tf = torch.nn.functional
    y = _signs(6).astype(dtype)
    a, b = _rand(6, dtype=dtype), _rand(6, dtype=dtype, seed=1)
    _check(lambda x1, x2, t: tf.margin_ranking_loss(x1, x2, t, 0.3, reduction=reduction),
           lambda x1, x2, t: F.margin_ranking_loss(x1, x2, t, 0.3, reduction=reduction),
           [a, b, y], dtype)
    _check(lambda x, t: tf.hinge_embedding_loss(x, t, 0.7, reduction=reduction),
           lambda x, t: F.hinge_embedding_loss(x, t, 0.7, reduction=reduction), [a, y], dtype)
    _check(lambda x, t: tf.soft_margin_loss(x * 30, t, reduction=reduction),
           lambda x, t: F.soft_margin_loss(x * 30, t, reduction=reduction), [a, y], dtype,
           nograd=(1,))
    for name, kw in [("MarginRankingLoss", {"margin": 0.3}), ("HingeEmbeddingLoss", {}),
                     ("SoftMarginLoss", {})]:
        theirs = getattr(torch.nn, name)(reduction=reduction, **kw)
        ours = getattr(rt.nn, name)(reduction=reduction, **kw)
        args = [a, b, y] if name == "MarginRankingLoss" else [a, y]
        _check(theirs, ours, args, dtype, nograd=(len(args) - 1,))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cosine_embedding_and_triplet_losses(reduction, dtype):
    torch = pytest.importorskip("torch")
    tf = torch.nn.functional
    a, b, c = (_rand(5, 4, dtype=dtype, seed=s) for s in range(3))
    y = _signs(5).astype(dtype)
    _check(lambda x1, x2, t: tf.cosine_embedding_loss(x1, x2, t, 0.2, reduction=reduction),
           lambda x1, x2, t: F.cosine_embedding_loss(x1, x2, t, 0.2, reduction=reduction),
           [a, b, y], dtype)
    _check(lambda x1, x2, t: tf.cosine_embedding_loss(x1[0], x2[0], t[0], reduction=reduction),
           lambda x1, x2, t: F.cosine_embedding_loss(x1[0], x2[0], t[0], reduction=reduction),
           [a, b, y], dtype)
    for kw in [{}, {"p": 1.0, "swap": True, "margin": 2.0}, {"p": 3.0, "eps": 1e-3}]:
        _check(lambda x, p, n: tf.triplet_margin_loss(x, p, n, reduction=reduction, **kw),
               lambda x, p, n: F.triplet_margin_loss(x, p, n, reduction=reduction, **kw),
               [a, b, c], dtype)
        _check(torch.nn.TripletMarginLoss(reduction=reduction, **kw),
               rt.nn.TripletMarginLoss(reduction=reduction, **kw), [a, b, c], dtype)
    _check(torch.nn.CosineEmbeddingLoss(0.1, reduction=reduction),
           rt.nn.CosineEmbeddingLoss(0.1, reduction=reduction), [a, b, y], dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_multilabel_soft_margin_and_multi_margin_losses(reduction, dtype):
    torch = pytest.importorskip("torch")
    tf = torch.nn.functional
    x = _rand(4, 5, dtype=dtype)
    labels = (np.random.default_rng(3).random((4, 5)) < 0.5).astype(dtype)
    w = np.abs(_rand(5, dtype=dtype, seed=4))
    _check(lambda i, t: tf.multilabel_soft_margin_loss(i, t, reduction=reduction),
           lambda i, t: F.multilabel_soft_margin_loss(i, t, reduction=reduction),
           [x, labels], dtype)
    _check(lambda i, t, v: tf.multilabel_soft_margin_loss(i, t, v, reduction=reduction),
           lambda i, t, v: F.multilabel_soft_margin_loss(i, t, v, reduction=reduction),
           [x, labels, w], dtype)
    _check(torch.nn.MultiLabelSoftMarginLoss(torch.tensor(w), reduction=reduction),
           rt.nn.MultiLabelSoftMarginLoss(rt.tensor(w), reduction=reduction), [x, labels], dtype)
    target = np.array([0, 4, 2, 2])
    for kw in [{}, {"p": 2, "margin": 0.5}]:
        _check(lambda i, t: tf.multi_margin_loss(i, t, reduction=reduction, **kw),
               lambda i, t: F.multi_margin_loss(i, t, reduction=reduction, **kw),
               [x, target], dtype)
        _check(lambda i, t, v: tf.multi_margin_loss(i, t, weight=v, reduction=reduction, **kw),
               lambda i, t, v: F.multi_margin_loss(i, t, weight=v, reduction=reduction, **kw),
               [x, target, w], dtype, nograd=(2,))
    _check(lambda i, t: tf.multi_margin_loss(i[0], t[1], reduction=reduction),
           lambda i, t: F.multi_margin_loss(i[0], t[1], reduction=reduction), [x, target], dtype)
    _check(torch.nn.MultiMarginLoss(2, 0.7, torch.tensor(w), reduction=reduction),
           rt.nn.MultiMarginLoss(2, 0.7, rt.tensor(w), reduction=reduction), [x, target], dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_poisson_and_gaussian_nll_losses(reduction, dtype):
    torch = pytest.importorskip("torch")
    tf = torch.nn.functional
    x = _rand(3, 4, dtype=dtype)
    counts = np.random.default_rng(5).poisson(2.0, (3, 4)).astype(dtype)
    rate = np.abs(x) + 0.1
    for kw in [{}, {"full": True}]:
        _check(lambda i, t: tf.poisson_nll_loss(i, t, reduction=reduction, **kw),
               lambda i, t: F.poisson_nll_loss(i, t, reduction=reduction, **kw),
               [x, counts], dtype, nograd=(1,))
        _check(lambda i, t: tf.poisson_nll_loss(i, t, False, reduction=reduction, **kw),
               lambda i, t: F.poisson_nll_loss(i, t, False, reduction=reduction, **kw),
               [rate, counts], dtype, nograd=(1,))
    _check(torch.nn.PoissonNLLLoss(False, True, eps=1e-3, reduction=reduction),
           rt.nn.PoissonNLLLoss(False, True, eps=1e-3, reduction=reduction), [rate, counts], dtype,
           nograd=(1,))
    target = _rand(3, 4, dtype=dtype, seed=6)
    var = np.abs(_rand(3, 4, dtype=dtype, seed=7))
    var[0, 0] = 1e-9  # below eps: clamped, the gradient passing through
    for v in [var, var[:, 0], var[:, :1], var[:1]]:
        for kw in [{}, {"full": True, "eps": 1e-3}]:
            _check(lambda i, t, s: tf.gaussian_nll_loss(i, t, s, reduction=reduction, **kw),
                   lambda i, t, s: F.gaussian_nll_loss(i, t, s, reduction=reduction, **kw),
                   [x, target, v], dtype)
    _check(lambda i, t: tf.gaussian_nll_loss(i, t, 0.5, reduction=reduction),
           lambda i, t: F.gaussian_nll_loss(i, t, 0.5, reduction=reduction), [x, target], dtype)
    _check(torch.nn.GaussianNLLLoss(full=True, reduction=reduction),
           rt.nn.GaussianNLLLoss(full=True, reduction=reduction), [x, target, var], dtype)


def test_losses_hand_checked():
    y = rt.tensor([1.0, -1.0])
    assert F.margin_ranking_loss(rt.tensor([1.0, 1.0]), rt.tensor([0.0, 0.0]), y,
                                 reduction="none").tolist() == [0.0, 1.0]
    assert F.hinge_embedding_loss(rt.tensor([0.5, 0.25]), y, reduction="none").tolist() == \
        [0.5, 0.75]
    # sample 0: target 0, x = [1, 0.5]: max(0, 1 - 1 + 0.5) / 2 = 0.25
    assert F.multi_margin_loss(rt.tensor([[1.0, 0.5]]), rt.tensor([0])).tolist() == 0.25
    assert float(F.soft_margin_loss(rt.tensor([0.0]), rt.tensor([1.0]))) == pytest.approx(
        math.log(2))


def test_loss_errors_as_torch():
    torch = pytest.importorskip("torch")
    tf = torch.nn.functional

    def both(name: str, *shapes: Any, **kw: Any) -> None:
        def make(lib: Any) -> list[Any]:
            return [lib.tensor(s) if isinstance(s, list) else lib.ones(*s) for s in shapes]

        _raises_same(lambda: getattr(tf, name)(*make(torch), **kw),
                     lambda: getattr(F, name)(*make(rt), **kw))

    both("margin_ranking_loss", (3,), (3,), (3, 1))
    both("margin_ranking_loss", (3,), (3,), (3,), reduction="x")
    both("hinge_embedding_loss", (3,), (3,), reduction="x")
    both("cosine_embedding_loss", (2, 3, 4), (2, 3, 4), (2,))
    both("cosine_embedding_loss", (2, 3), (2, 3), (2, 1))
    both("triplet_margin_loss", (2, 3), (2, 3), (3,))
    both("triplet_margin_loss", (2, 3), (2, 3), (2, 3), margin=0.0)
    both("multi_margin_loss", (2, 3), [0, 1], p=3)
    both("multi_margin_loss", (2, 3), [0, 1, 1])
    both("multi_margin_loss", (2, 3), [0, 5])
    both("gaussian_nll_loss", (3, 2), (3, 2), (3, 3))
    both("gaussian_nll_loss", (3, 2), (3, 2), (3, 2), reduction="x")
    both("poisson_nll_loss", (3,), (3,), reduction="x")
    _raises_same(lambda: tf.multi_margin_loss(torch.ones(2, 3), torch.tensor([0, 1]),
                                              weight=torch.ones(2)),
                 lambda: F.multi_margin_loss(rt.ones(2, 3), rt.tensor([0, 1]), weight=rt.ones(2)))
    _raises_same(lambda: tf.gaussian_nll_loss(torch.ones(2), torch.ones(2), -1.0),
                 lambda: F.gaussian_nll_loss(rt.ones(2), rt.ones(2), -1.0))
    _raises_same(lambda: torch.nn.TripletMarginLoss(margin=0),
                 lambda: rt.nn.TripletMarginLoss(margin=0))
    _raises_same(lambda: torch.nn.MultiMarginLoss(p=3), lambda: rt.nn.MultiMarginLoss(p=3))
    with pytest.raises(ValueError, match="var has negative entry"):
        F.gaussian_nll_loss(rt.ones(2), rt.ones(2), rt.tensor([1.0, -1.0]))


def test_compiled_layers_and_losses_equal_eager():
    """The new layers and losses capture once (no eager fallback) and train as eager."""
    import planner

    rt.manual_seed(0)
    model = rt.nn.ModuleDict({
        "conv": rt.nn.Conv2d(2, 8, 3, padding=1), "shuffle": rt.nn.PixelShuffle(2),
        "pad": rt.nn.ReflectionPad2d(1), "unshuffle": rt.nn.PixelUnshuffle(2),
        "norm": rt.nn.InstanceNorm1d(8, affine=True),
        "bil": rt.nn.Bilinear(8, 8, 5), "soft": rt.nn.Softmax2d()})
    twin = copy.deepcopy(model)

    def trainer(m):
        opt = rt.optim.SGD(m.parameters(), lr=0.05)

        def step(x, target, labels, var):
            opt.zero_grad()
            maps = m["soft"](m["unshuffle"](m["pad"](m["shuffle"](m["conv"](x)))))
            h = F.adaptive_avg_pool2d(maps, 1).flatten(1)[:, :8]
            z = m["bil"](h, m["norm"](maps.flatten(2)[:, :8]).pow(2).mean(-1))
            loss = (F.multi_margin_loss(z, target, p=2)
                    + F.multilabel_soft_margin_loss(z, labels)
                    + F.gaussian_nll_loss(z, labels, var)
                    + F.poisson_nll_loss(z, labels, full=True)
                    + F.soft_margin_loss(z, labels * 2 - 1)
                    + F.cosine_embedding_loss(z, z.flip(0), target.float() - 1)
                    + F.triplet_margin_loss(z, z.flip(0), z.roll(1, 0), swap=True)
                    + F.margin_ranking_loss(z[:, 0], z[:, 1], labels[:, 0] * 2 - 1)
                    + F.hinge_embedding_loss(z, labels * 2 - 1))
            loss.backward()
            opt.step()
            return loss
        return step

    compiled, eager = planner.compile(trainer(model)), trainer(twin)
    x = rt.randn(4, 2, 6, 6)
    target = rt.tensor([0, 4, 2, 1])
    labels = (rt.rand(4, 5) < 0.5).float()
    var = rt.rand(4, 5) + 0.1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = [float(compiled(x, target, labels, var)) for _ in range(3)]
    want = [float(eager(x, target, labels, var)) for _ in range(3)]
    assert compiled.captures == 1
    np.testing.assert_allclose(got, want, rtol=1e-5)
    for (name, a), (_, b) in zip(model.state_dict().items(), twin.state_dict().items()):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-4,
                                   atol=1e-6, err_msg=name)


def test_batch_norm_bias_keyword_and_repr():
    torch = pytest.importorskip("torch")
    for kw in [{}, {"bias": False}, {"affine": False}]:
        theirs, ours = torch.nn.BatchNorm2d(3, **kw), rt.nn.BatchNorm2d(3, **kw)
        assert repr(ours) == repr(theirs)
        assert list(ours.state_dict()) == list(theirs.state_dict())
        x = _rand(4, 3, 2, 2, dtype="float32")
        np.testing.assert_allclose(ours(rt.tensor(x)).detach().numpy(),
                                   theirs(torch.tensor(x)).detach().numpy(), rtol=1e-5,
                                   atol=1e-6)


@pytest.mark.parametrize("name,shapes", [
    ("margin_ranking_loss", [(3,), (4,), (3,)]), ("hinge_embedding_loss", [(3,), (4,)]),
    ("cosine_embedding_loss", [(2, 3), (2, 4), (2,)]),
    ("cosine_embedding_loss", [(2, 3), (2, 3), (3,)]),
    ("triplet_margin_loss", [(2, 3), (2, 3), (2, 4)]), ("soft_margin_loss", [(3,), (4,)]),
    ("multilabel_soft_margin_loss", [(2, 3), (2, 4)]), ("poisson_nll_loss", [(3,), (4,)]),
    ("gaussian_nll_loss", [(3,), (4,), (3,)])])
def test_loss_shape_mismatch_errors_as_torch(name, shapes):
    torch = pytest.importorskip("torch")
    _raises_same(lambda: getattr(torch.nn.functional, name)(*[torch.ones(*s) for s in shapes]),
                 lambda: getattr(F, name)(*[rt.ones(*s) for s in shapes]))


@pytest.mark.parametrize("shape,pad,mode", [
    ((3,), (1, 1), "reflect"), ((2, 3, 4, 5, 6), (1, 1), "reflect"),
    ((2, 3, 4, 5), (1, 1), "replicate"), ((3, 4), (1, 1, 1, 1), "circular"),
    ((2, 3, 4, 5, 6, 7), (1, 1, 1, 1, 1, 1), "reflect")])
def test_pad_unsupported_sizes_as_torch(shape, pad, mode):
    torch = pytest.importorskip("torch")
    _raises_same(lambda: torch.nn.functional.pad(torch.ones(*shape), pad, mode),
                 lambda: F.pad(rt.ones(*shape), pad, mode))


def test_losses_refuse_gradients_torch_has_no_formula_for():
    torch = pytest.importorskip("torch")
    tf = torch.nn.functional
    _raises_same(lambda: tf.soft_margin_loss(torch.ones(3), torch.ones(3, requires_grad=True)),
                 lambda: F.soft_margin_loss(rt.ones(3), rt.ones(3, requires_grad=True)))
    _raises_same(lambda: tf.multi_margin_loss(torch.ones(2, 3), torch.tensor([0, 1]),
                                              weight=torch.ones(3, requires_grad=True)),
                 lambda: F.multi_margin_loss(rt.ones(2, 3), rt.tensor([0, 1]),
                                             weight=rt.ones(3, requires_grad=True)))
    with rt.no_grad():
        F.soft_margin_loss(rt.ones(3), rt.ones(3, requires_grad=True))
