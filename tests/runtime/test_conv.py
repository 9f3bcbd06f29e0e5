"""Convolution, pooling, batch norm, pad, unfold/fold and Flatten against PyTorch: values
and gradients, float64 gradcheck, error texts, and compiled steps equal to eager."""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest

import runtime as rt
from runtime.autograd import gradcheck

torch = pytest.importorskip("torch")
RF, TF = rt.nn.functional, torch.nn.functional


def _check(fn_rt, fn_torch, arrays, tol=1e-10, **kw):
    ours = [rt.tensor(a, requires_grad=True) for a in arrays]
    theirs = [torch.tensor(a, requires_grad=True) for a in arrays]
    a, b = fn_rt(*ours, **kw), fn_torch(*theirs, **kw)
    if isinstance(b, tuple):
        assert np.array_equal(a[1].numpy(), b[1].numpy())
        a, b = a[0], b[0]
    assert a.shape == tuple(b.shape)
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=tol, atol=tol)
    w = np.random.default_rng(1).standard_normal(b.shape)
    (a * rt.tensor(w)).sum().backward()
    (b * torch.tensor(w)).sum().backward()
    for o, t in zip(ours, theirs):
        np.testing.assert_allclose(o.grad.numpy(), t.grad.numpy(), rtol=tol, atol=tol)


rng = np.random.default_rng(0)
X = rng.standard_normal((2, 4, 9, 8))


@pytest.mark.parametrize("kw", [
    {}, {"stride": 2, "padding": 1}, {"dilation": 2, "padding": (2, 1)}, {"padding": "same"},
    {"padding": "same", "dilation": (2, 1)}, {"padding": "valid", "stride": (1, 3)},
    {"groups": 2}, {"groups": 4, "stride": 2, "padding": 1},
])
@pytest.mark.parametrize("bias", [True, False])
def test_conv2d(kw, bias):
    g = kw.get("groups", 1)
    w = rng.standard_normal((8, 4 // g, 3, 2))
    b = rng.standard_normal(8)
    if bias:
        _check(RF.conv2d, TF.conv2d, [X, w, b], **kw)
    else:
        _check(RF.conv2d, TF.conv2d, [X, w], **kw)


@pytest.mark.parametrize("kw", [{}, {"stride": 2, "padding": 2}, {"padding": "same", "dilation": 2},
                                {"groups": 2}])
def test_conv1d(kw):
    g = kw.get("groups", 1)
    _check(RF.conv1d, TF.conv1d,
           [rng.standard_normal((3, 4, 11)), rng.standard_normal((6, 4 // g, 3)),
            rng.standard_normal(6)], **kw)


def test_unbatched_and_modules_match_torch():
    _check(RF.conv2d, TF.conv2d, [X[0], rng.standard_normal((5, 4, 3, 3))])
    for mode in ("zeros", "reflect", "replicate", "circular"):
        torch.manual_seed(0)
        tm = torch.nn.Conv2d(4, 6, 3, padding=1, padding_mode=mode)
        om = rt.nn.Conv2d(4, 6, 3, padding=1, padding_mode=mode)
        om.load_state_dict({k: rt.tensor(v.detach().numpy()) for k, v in tm.state_dict().items()})
        om.double(), tm.double()
        np.testing.assert_allclose(om(rt.tensor(X)).detach().numpy(),
                                   tm(torch.tensor(X)).detach().numpy(),
                                   rtol=1e-9, atol=1e-9, err_msg=mode)
    m = rt.nn.Conv1d(4, 6, 3)
    assert m.weight.shape == (6, 4, 3) and m.bias.shape == (6,)
    bound = 1 / np.sqrt(4 * 3)
    assert np.abs(m.weight.detach().numpy()).max() <= bound


@pytest.mark.parametrize("kw", [
    {"kernel_size": 2}, {"kernel_size": 3, "stride": 2, "padding": 1},
    {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True},
    {"kernel_size": (2, 3), "stride": (1, 2), "dilation": 2},
    {"kernel_size": 3, "stride": 2, "return_indices": True, "ceil_mode": True},
])
def test_max_pool2d(kw):
    _check(RF.max_pool2d, TF.max_pool2d, [X], **kw)


def test_max_pool_gradient_goes_to_the_first_maximum():
    x = np.zeros((1, 1, 2, 4))  # every window is a tie
    _check(RF.max_pool2d, TF.max_pool2d, [x], kernel_size=2)


@pytest.mark.parametrize("kw", [
    {"kernel_size": 2}, {"kernel_size": 3, "stride": 2, "padding": 1},
    {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True},
    {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True, "count_include_pad": False},
    {"kernel_size": 2, "divisor_override": 3},
])
def test_avg_pool2d(kw):
    _check(RF.avg_pool2d, TF.avg_pool2d, [X], **kw)


@pytest.mark.parametrize("size", [1, (3, 4), (4, 3), (None, 2), 9])
def test_adaptive_avg_pool2d(size):
    _check(RF.adaptive_avg_pool2d, TF.adaptive_avg_pool2d, [X], output_size=size)


def test_pool1d():
    x = rng.standard_normal((2, 3, 10))
    _check(RF.max_pool1d, TF.max_pool1d, [x], kernel_size=3, stride=2, padding=1)
    _check(RF.avg_pool1d, TF.avg_pool1d, [x], kernel_size=3, stride=2, padding=1)


def test_unfold_fold():
    _check(RF.unfold, TF.unfold, [X], kernel_size=(2, 3), dilation=2, padding=1, stride=(1, 2))
    cols = rng.standard_normal((2, 4 * 6, 16))
    _check(RF.fold, TF.fold, [cols], output_size=(5, 6), kernel_size=(2, 3))


@pytest.mark.parametrize("mode,pad", [("constant", (1, 2)), ("constant", (1, 0, 2, 3)),
                                      ("constant", (-1, 2, 0, -2)), ("reflect", (2, 1, 1, 3)),
                                      ("replicate", (3, 0, 2, 1)), ("circular", (2, 3, 1, 0))])
def test_pad(mode, pad):
    kw = {"value": 1.5} if mode == "constant" else {}
    _check(lambda x: RF.pad(x, pad, mode=mode, **kw), lambda x: TF.pad(x, pad, mode=mode, **kw),
           [X])


@pytest.mark.parametrize("cls,shape", [("BatchNorm2d", (4, 3, 5, 5)), ("BatchNorm1d", (6, 3)),
                                       ("BatchNorm1d", (4, 3, 7))])
@pytest.mark.parametrize("momentum", [0.1, None])
def test_batchnorm_train_and_eval_match_torch(cls, shape, momentum):
    ours, theirs = getattr(rt.nn, cls)(3, momentum=momentum), getattr(torch.nn, cls)(3,
                                                                                  momentum=momentum)
    ours.double(), theirs.double()
    for step in range(3):
        x = rng.standard_normal(shape) * (step + 1) + step
        _check(lambda t: ours(t), lambda t: theirs(t), [x], tol=1e-9)
    for name, b in theirs.named_buffers():
        np.testing.assert_allclose(dict(ours.named_buffers())[name].numpy(), b.numpy(),
                                   rtol=1e-9, err_msg=name)
    ours.eval(), theirs.eval()
    _check(lambda t: ours(t), lambda t: theirs(t), [rng.standard_normal(shape)], tol=1e-9)


def test_flatten_unflatten():
    _check(lambda t: rt.nn.Flatten()(t), lambda t: torch.nn.Flatten()(t), [X])
    _check(lambda t: rt.nn.Flatten(0, 2)(t), lambda t: torch.nn.Flatten(0, 2)(t), [X])
    _check(lambda t: rt.nn.Unflatten(1, (2, -1))(t), lambda t: torch.nn.Unflatten(1, (2, -1))(t),
           [X])


def test_float64_gradcheck():
    x = rt.tensor(rng.standard_normal((2, 2, 5, 5)), requires_grad=True)
    w = rt.tensor(rng.standard_normal((4, 1, 3, 3)), requires_grad=True)
    b = rt.tensor(rng.standard_normal(4), requires_grad=True)
    assert gradcheck(lambda x, w, b: RF.conv2d(x, w, b, stride=2, padding=1, groups=2),
                     (x, w, b))
    assert gradcheck(lambda x: RF.max_pool2d(x, 3, 2, 1, ceil_mode=True), (x,))
    assert gradcheck(lambda x: RF.avg_pool2d(x, 3, 2, 1, ceil_mode=True,
                                             count_include_pad=False), (x,))
    assert gradcheck(lambda x: RF.pad(x, (1, 2, 2, 1), mode="reflect"), (x,))
    assert gradcheck(lambda x: RF.batch_norm(x, None, None, training=True), (x,))


ERRORS = [
    (lambda F, lib: F.conv2d(lib.ones(2, 4, 8, 8), lib.ones(8, 3, 3, 3)),
     "Given groups=1, weight of size [8, 3, 3, 3], expected input[2, 4, 8, 8] to have 3 "
     "channels, but got 4 channels instead"),
    (lambda F, lib: F.conv2d(lib.ones(2, 3, 2, 2), lib.ones(8, 3, 3, 3)),
     "Kernel size can't be greater than actual input size"),
    (lambda F, lib: F.conv2d(lib.ones(2, 3), lib.ones(8, 3, 3, 3)),
     "Expected 3D (unbatched) or 4D (batched) input to conv2d"),
    (lambda F, lib: F.conv2d(lib.ones(1, 3, 5, 5), lib.ones(8, 3, 3, 3), stride=2,
                             padding="same"),
     "padding='same' is not supported for strided convolutions"),
    (lambda F, lib: F.max_pool2d(lib.ones(1, 1, 5, 5), 2, padding=2),
     "pad should be at most half of effective kernel size"),
    (lambda F, lib: F.pad(lib.ones(1, 1, 3), (3, 0), mode="reflect"),
     "Padding size should be less than the corresponding input dimension"),
    (lambda F, lib: F.batch_norm(lib.ones(1, 3), None, None, training=True),
     "Expected more than 1 value per channel when training"),
]


@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_errors_match_torch(case):
    fn, text = ERRORS[case]
    with pytest.raises(Exception) as theirs:
        fn(TF, torch)
    with pytest.raises(type(theirs.value)) as ours:
        fn(RF, rt)
    assert text in str(ours.value) and text in str(theirs.value)


def test_compiled_cnn_with_batchnorm_equals_eager_and_updates_running_stats():
    import planner

    rt.manual_seed(0)
    model = rt.nn.Sequential(
        rt.nn.Conv2d(3, 6, 3, padding=1, groups=3), rt.nn.BatchNorm2d(6), rt.nn.ReLU(),
        rt.nn.MaxPool2d(2, ceil_mode=True),
        rt.nn.AvgPool2d(2, padding=1), rt.nn.AdaptiveAvgPool2d(2), rt.nn.Flatten(),
        rt.nn.Linear(24, 5))
    twin = copy.deepcopy(model)

    def trainer(m):
        opt = rt.optim.SGD(m.parameters(), lr=0.1, momentum=0.9)

        def step(x, y):
            opt.zero_grad()
            loss = RF.cross_entropy(m(RF.pad(x, (1, 1, 1, 1), mode="reflect")), y)
            loss.backward()
            opt.step()
            return loss
        return step

    compiled, eager = planner.compile(trainer(model)), trainer(twin)
    x, y = rt.randn(8, 3, 7, 7), rt.randint(0, 5, (8,))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = [float(compiled(x, y)) for _ in range(4)]
    want = [float(eager(x, y)) for _ in range(4)]
    np.testing.assert_allclose(got, want, rtol=1e-5)
    for (name, a), (_, b) in zip(model.state_dict().items(), twin.state_dict().items()):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-4,
                                   atol=1e-5, err_msg=name)
    assert int(model[1].num_batches_tracked) == 4
    model.eval(), twin.eval()
    with rt.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("error")  # inference with the running statistics compiles too
        got = planner.compile(lambda x: model(x))(x).numpy()
        np.testing.assert_allclose(got, twin(x).numpy(), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("op", ["conv1d", "conv2d", "conv3d", "conv_transpose1d",
                                "conv_transpose2d", "conv_transpose3d"])
def test_rank_errors_are_pytorchs(op: str) -> None:
    n = int(op[-2]) + 2
    F = rt.nn.functional
    with pytest.raises(RuntimeError, match=r"^weight should have at least three dimensions$"):
        getattr(F, op)(rt.ones(*(2,) * n), rt.ones(3, 3))
    with pytest.raises(RuntimeError, match=rf"^Expected {n - 1}D \(unbatched\) or {n}D "
                                           rf"\(batched\) input to {op}, but got input of size"):
        getattr(F, op)(rt.ones(4, 4, 4, 4, 4, 4, 4)[(0,) * (7 - n + 2)], rt.ones(*(1,) * n))
    # torch takes the weight's rank as the truth: a stride list of another length is
    # refused, and where one value spreads to every dim (1-d ops), the input's rank
    want = (rf"^Expected {n + 1}-dimensional input for {n + 1}-dimensional weight "
            rf"\[1, 1, 1, 1\], but got 3-dimensional input of size \[2, 2, 2\] instead$"
            if n == 3 else rf"^expected stride to be a single integer value or a list of "
            rf"{n - 1} values to match the convolution dimensions, but got stride=\[1(, 1)+\]$")
    with pytest.raises(RuntimeError, match=want):
        getattr(F, op)(rt.ones(*(2,) * n), rt.ones(*(1,) * (n + 1)))
