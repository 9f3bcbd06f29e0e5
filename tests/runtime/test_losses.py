"""The loss functions against PyTorch (values and input gradients, every reduction),
float64 gradcheck, PyTorch's error texts, and compiled steps equal to eager."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import runtime as rt
from runtime.autograd import gradcheck

torch = pytest.importorskip("torch")
RF, TF = rt.nn.functional, torch.nn.functional
REDUCTIONS = ("mean", "sum", "none")


def _pair(a: np.ndarray, grad: bool = True) -> tuple[rt.Tensor, torch.Tensor]:
    return (rt.tensor(a, requires_grad=grad and a.dtype.kind == "f"),
            torch.tensor(a, requires_grad=grad and a.dtype.kind == "f"))


def _check(name: str, arrays: list[np.ndarray], kwargs: dict, rt_kwargs: dict | None = None,
           tol: float = 1e-5, target_grad: bool = True) -> None:
    """Run loss ``name`` in both libraries on the same arrays; compare value and grads."""
    ours, theirs = zip(*(_pair(a, i == 0 or target_grad) for i, a in enumerate(arrays)))
    rk = {k: (rt.tensor(v) if isinstance(v, np.ndarray) else v)
          for k, v in (rt_kwargs or kwargs).items()}
    tk = {k: (torch.tensor(v) if isinstance(v, np.ndarray) else v) for k, v in kwargs.items()}
    a = getattr(RF, name)(*ours, **rk)
    b = getattr(TF, name)(*theirs, **tk)
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=tol, atol=tol)
    w = np.random.default_rng(0).standard_normal(b.shape).astype(arrays[0].dtype)
    (a * rt.tensor(w)).sum().backward()
    (b * torch.tensor(w)).sum().backward()
    for o, t in zip(ours, theirs):
        if t.requires_grad:
            np.testing.assert_allclose(o.grad.numpy(), t.grad.numpy(), rtol=tol, atol=tol)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(7)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape", [(6, 5), (3, 4, 2, 3), (5,)])
def test_cross_entropy_index_targets(rng, reduction, shape):
    x = rng.standard_normal(shape).astype(np.float32)
    c = shape[0] if len(shape) == 1 else shape[1]
    tshape = () if len(shape) == 1 else (shape[0], *shape[2:])
    w = rng.random(c).astype(np.float32) + 0.5
    for ignore, extra in ((-100, {}), (-100, {"label_smoothing": 0.2}), (-100, {"weight": w}),
                          (1, {"weight": w, "label_smoothing": 0.1, "ignore_index": 1})):
        t = rng.integers(0, c, size=tshape)
        if t.ndim:
            t.flat[0] = ignore
        elif t == ignore:  # a lone ignored target: PyTorch's 0/0 (nan) loss, not compared
            t = (t + 1) % c
        _check("cross_entropy", [x, t], {"reduction": reduction, **extra})


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_probability_targets(rng, reduction):
    x = rng.standard_normal((4, 3, 2)).astype(np.float32)
    p = rng.random((4, 3, 2)).astype(np.float32)
    p /= p.sum(1, keepdims=True)
    _check("cross_entropy", [x, p], {"reduction": reduction})
    _check("cross_entropy", [x, p], {"reduction": reduction, "label_smoothing": 0.3,
                                     "weight": np.array([1.0, 2.0, 0.5], np.float32)})


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_nll_loss(rng, reduction):
    x = rng.standard_normal((5, 4, 3)).astype(np.float32)
    t = rng.integers(0, 4, size=(5, 3))
    t[1, 1] = 2
    _check("nll_loss", [x, t], {"reduction": reduction, "ignore_index": 2})
    _check("nll_loss", [x, t], {"reduction": reduction,
                                "weight": rng.random(4).astype(np.float32)})


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_losses(rng, reduction):
    x = (rng.standard_normal((6, 3)) * 4).astype(np.float32)
    t = (rng.random((6, 3)) > 0.5).astype(np.float32)
    w = rng.random((6, 3)).astype(np.float32)
    pw = np.array([0.5, 2.0, 3.0], np.float32)
    _check("binary_cross_entropy_with_logits", [x, t], {"reduction": reduction})
    _check("binary_cross_entropy_with_logits", [x, t],
           {"reduction": reduction, "weight": w, "pos_weight": pw})
    p = (1 / (1 + np.exp(-x))).clip(1e-6, 1 - 1e-6).astype(np.float32)
    _check("binary_cross_entropy", [p, t], {"reduction": reduction, "weight": w}, tol=1e-4)
    # at exactly 0 and 1 each log is clamped at -100, as PyTorch's
    edge = [rt.tensor([0.0, 1.0, 0.0, 1.0]), rt.tensor([1.0, 0.0, 0.0, 1.0])]
    np.testing.assert_allclose(
        RF.binary_cross_entropy(*edge, reduction="none").numpy(),
        TF.binary_cross_entropy(*(torch.tensor(e.numpy()) for e in edge),
                                reduction="none").numpy())


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_regression_losses(rng, reduction):
    x = (rng.standard_normal((4, 5)) * 2).astype(np.float32)
    y = (rng.standard_normal((4, 5)) * 2).astype(np.float32)
    _check("l1_loss", [x, y], {"reduction": reduction})
    _check("mse_loss", [x, y], {"reduction": reduction})
    for beta in (0.0, 0.5, 1.0, 3.0):
        _check("smooth_l1_loss", [x, y], {"reduction": reduction, "beta": beta})
    for delta in (0.5, 1.0, 2.5):
        _check("huber_loss", [x, y], {"reduction": reduction, "delta": delta})


@pytest.mark.parametrize("reduction", ["batchmean", "sum", "none"])
@pytest.mark.parametrize("log_target", [False, True])
def test_kl_div(rng, reduction, log_target):
    x = np.log(rng.dirichlet(np.ones(5), size=4)).astype(np.float32)
    t = rng.dirichlet(np.ones(5), size=4).astype(np.float32)
    t[0, 0] = 0.0
    if log_target:
        t = np.log(t + 1e-3).astype(np.float32)
    # the gradient for a target of 0 is log(0): PyTorch's nan, not compared
    _check("kl_div", [x, t], {"reduction": reduction, "log_target": log_target},
           target_grad=log_target)


def test_modules_match_functions(rng):
    x = rng.standard_normal((6, 4)).astype(np.float32)
    t = rng.integers(0, 4, size=6)
    w = rng.random(4).astype(np.float32)
    ours = rt.nn.CrossEntropyLoss(weight=rt.tensor(w), ignore_index=t[0], label_smoothing=0.1)
    theirs = torch.nn.CrossEntropyLoss(weight=torch.tensor(w), ignore_index=int(t[0]),
                                       label_smoothing=0.1)
    np.testing.assert_allclose(ours(rt.tensor(x), rt.tensor(t)).item(),
                               theirs(torch.tensor(x), torch.tensor(t)).item(), rtol=1e-5)
    assert "weight" in dict(ours.named_buffers())
    y = rng.standard_normal((6, 4)).astype(np.float32)
    for mod in ("L1Loss", "SmoothL1Loss", "HuberLoss", "MSELoss"):
        a = getattr(rt.nn, mod)(reduction="sum")(rt.tensor(x), rt.tensor(y)).item()
        b = getattr(torch.nn, mod)(reduction="sum")(torch.tensor(x), torch.tensor(y)).item()
        np.testing.assert_allclose(a, b, rtol=1e-5, err_msg=mod)
    p = (rng.random((6, 4)) > 0.5).astype(np.float32)
    a = rt.nn.BCEWithLogitsLoss(pos_weight=rt.tensor(w))(rt.tensor(x), rt.tensor(p)).item()
    b = torch.nn.BCEWithLogitsLoss(pos_weight=torch.tensor(w))(torch.tensor(x),
                                                                torch.tensor(p)).item()
    np.testing.assert_allclose(a, b, rtol=1e-5)
    logp = rt.tensor(x).log_softmax(1) if hasattr(rt.Tensor, "log_softmax") else \
        RF.log_softmax(rt.tensor(x), 1)
    a = rt.nn.NLLLoss()(logp, rt.tensor(t)).item()
    b = torch.nn.NLLLoss()(torch.tensor(x).log_softmax(1), torch.tensor(t)).item()
    np.testing.assert_allclose(a, b, rtol=1e-5)


def test_float64_gradcheck(rng):
    x = rt.tensor(rng.standard_normal((4, 3)), requires_grad=True)
    t = rt.tensor(rng.integers(0, 3, size=4))
    y = rt.tensor(rng.standard_normal((4, 3)))
    b = rt.tensor((rng.random((4, 3)) > 0.5).astype(np.float64))
    assert gradcheck(lambda x: RF.cross_entropy(x, t, label_smoothing=0.2), (x,))
    assert gradcheck(lambda x: RF.binary_cross_entropy_with_logits(
        x, b, pos_weight=rt.tensor([1.0, 2.0, 0.5], dtype=rt.float64)), (x,))
    assert gradcheck(lambda x: RF.smooth_l1_loss(x, y, beta=0.7), (x,))
    assert gradcheck(lambda x: RF.huber_loss(x, y, delta=0.7), (x,))
    assert gradcheck(lambda x: RF.kl_div(RF.log_softmax(x, 1), RF.softmax(y, 1),
                                         reduction="batchmean"), (x,))


def test_error_texts_match_torch():
    x, t = rt.randn(3, 4), rt.tensor([0, 1, 2])
    cases = [
        (lambda lib, x, t: lib.nn.functional.cross_entropy(x, t[:2]),
         "Expected input batch_size (3) to match target batch_size (2)."),
        (lambda lib, x, t: lib.nn.functional.cross_entropy(x, t.float()),
         "expected target dtype to be Long or Byte, but got Float"),
        (lambda lib, x, t: lib.nn.functional.binary_cross_entropy_with_logits(x, x[:, :2]),
         "must be the same as input size"),
        (lambda lib, x, t: lib.nn.functional.cross_entropy(x, t, label_smoothing=1.5),
         "label_smoothing must be between 0.0 and 1.0"),
        (lambda lib, x, t: lib.nn.functional.cross_entropy(x, t, weight=lib.ones(3)),
         "weight tensor should be defined either for all 4 classes"),
        (lambda lib, x, t: lib.nn.functional.l1_loss(x, x, reduction="avg"),
         "avg is not a valid value for reduction"),
    ]
    for fn, text in cases:
        tx, tt = torch.tensor(x.numpy()), torch.tensor(t.numpy())
        with pytest.raises(Exception) as theirs:
            fn(torch, tx, tt)
        with pytest.raises(type(theirs.value)) as ours:
            fn(rt, x, t)
        if text:
            assert text in str(ours.value) and text in str(theirs.value)


@pytest.mark.parametrize("target", [4, -1, -101])
def test_target_out_of_range_is_an_error_eager_and_compiled(target):
    import planner

    x = rt.randn(3, 4, requires_grad=True)
    t = rt.tensor([0, target, 1])
    with pytest.raises(IndexError, match=f"Target {target} is out of bounds."):
        RF.cross_entropy(x, t)
    step = planner.compile(lambda x, t: RF.cross_entropy(x, t).backward())
    step(x, rt.tensor([0, 1, 2]))
    with pytest.raises(IndexError, match=f"Target {target} is out of bounds."):
        step(x, t)


def test_compiled_losses_equal_eager_without_fallback(rng):
    import copy

    import planner

    x = rt.tensor(rng.standard_normal((8, 5, 3)).astype(np.float32))
    t = rt.tensor(rng.integers(0, 4, size=(8, 3)))
    t[0, 0] = -100
    y = rt.tensor(rng.standard_normal((8, 4)).astype(np.float32))
    rt.manual_seed(0)
    model = rt.nn.Linear(5, 4)

    def trainer(m):
        opt = rt.optim.SGD(m.parameters(), lr=0.1)

        def step(x, t, y):
            opt.zero_grad()
            h = m(x.transpose(1, 2)).transpose(1, 2)  # (8, 4, 3): classes in dim 1
            pooled = h.mean(2)
            loss = (RF.cross_entropy(h, t, label_smoothing=0.1)
                    + RF.nll_loss(RF.log_softmax(h, 1), t, weight=rt.tensor([1.0, 2, 1, .5]))
                    + RF.binary_cross_entropy_with_logits(pooled, (y > 0).float(),
                                                          pos_weight=rt.ones(4) * 2)
                    + RF.smooth_l1_loss(pooled, y, beta=0.5) + RF.huber_loss(pooled, y)
                    + RF.l1_loss(pooled, y)
                    + RF.kl_div(RF.log_softmax(pooled, 1), RF.softmax(y, 1),
                                reduction="batchmean"))
            loss.backward()
            opt.step()
            return loss
        return step

    twin = copy.deepcopy(model)
    compiled, eager = planner.compile(trainer(model)), trainer(twin)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = [float(compiled(x, t, y)) for _ in range(3)]
    want = [float(eager(x, t, y)) for _ in range(3)]
    np.testing.assert_allclose(got, want, rtol=1e-5)
    np.testing.assert_allclose(model.weight.detach().numpy(), twin.weight.detach().numpy(),
                               rtol=1e-5, atol=1e-6)
