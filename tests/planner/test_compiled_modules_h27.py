"""nn modules that agree with torch's module_db, inside compiled training steps (forward, loss,
backward, SGD step): two calls equal eager mode's, with no fallback to eager."""
from __future__ import annotations

import copy
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt

nn = rt.nn
TOL = 1e-9


def _randn(*shape: int) -> rt.Tensor:
    return rt.from_numpy(np.random.default_rng(sum(shape)).standard_normal(shape))


def _sin_loss(out: Any) -> rt.Tensor:
    """A scalar from every floating output, each weighted differently."""
    outs = out if isinstance(out, (tuple, list)) else (out,)
    flat = [t for o in outs for t in (o if isinstance(o, (tuple, list)) else (o,))]
    return sum((t * (k + 1.5)).sin().sum() for k, t in enumerate(flat))


def _step(model: nn.Module, loss_of: Callable[..., rt.Tensor]) -> Callable[..., rt.Tensor]:
    opt = rt.optim.SGD(model.parameters(), lr=0.1)

    def step(*args: rt.Tensor) -> rt.Tensor:
        opt.zero_grad()
        loss = loss_of(model, *args)
        loss.backward()
        opt.step()
        return loss

    return step


def _check(make: Callable[[], nn.Module], loss_of: Callable[..., rt.Tensor],
           args: tuple[rt.Tensor, ...], modes: tuple[str, ...] = ("train", "train")) -> None:
    eager_model = make().double()
    compiled_model = copy.deepcopy(eager_model)
    eager, compiled = _step(eager_model, loss_of), planner.compile(_step(compiled_model, loss_of))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a fallback to eager is a failure here
        for mode in modes:
            getattr(eager_model, mode)()
            getattr(compiled_model, mode)()
            a1 = tuple(a.clone().requires_grad_(a.dtype.is_floating_point) for a in args)
            a2 = tuple(a.clone().requires_grad_(a.dtype.is_floating_point) for a in args)
            want, got = eager(*a1), compiled(*a2)
            np.testing.assert_allclose(got.item(), want.item(), rtol=TOL, atol=TOL)
            for x1, x2 in zip(a1, a2, strict=True):
                if x1.grad is not None:
                    np.testing.assert_allclose(x2.grad.numpy(), x1.grad.numpy(), rtol=TOL,
                                               atol=TOL)
            state2 = compiled_model.state_dict()
            for name, value in eager_model.state_dict().items():
                np.testing.assert_allclose(state2[name].numpy(), value.numpy(), rtol=TOL,
                                           atol=TOL, err_msg=name)
    assert compiled.plan is not None


def _call_sin(model: nn.Module, *args: rt.Tensor) -> rt.Tensor:
    return _sin_loss(model(*args))


@pytest.mark.parametrize("make, shape", [
    (lambda: nn.Sequential(nn.Conv1d(3, 4, 3, padding=1), nn.GroupNorm(2, 4), nn.Mish(),
                           nn.LPPool1d(2, 3)), (2, 3, 6)),
    (lambda: nn.Sequential(nn.ConvTranspose2d(2, 3, 3, stride=2), nn.LocalResponseNorm(3),
                           nn.ReflectionPad2d(1), nn.AdaptiveMaxPool2d(3)), (1, 2, 3, 3)),
    (lambda: nn.LSTM(3, 4, num_layers=2, proj_size=2), (4, 2, 3)),
    (lambda: nn.TransformerEncoderLayer(4, 2, 8, dropout=0.0), (3, 2, 4)),
])
def test_compiled_module_step_equals_eager(make: Callable[[], nn.Module],
                                           shape: tuple[int, ...]) -> None:
    _check(make, _call_sin, (_randn(*shape),))


def test_compiled_batchnorm_step_follows_train_and_eval_as_eager() -> None:
    """Running statistics updated in train mode and read in eval mode, switched between calls."""
    _check(lambda: nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4, momentum=None)),
           _call_sin, (_randn(5, 4),), modes=("train", "eval", "train"))


def test_compiled_kl_div_and_ctc_loss_steps_equal_eager() -> None:
    """kl_div through xlogy (a target with zeros) and CTC's alignment recursion, captured."""
    target = rt.from_numpy(np.array([[0.0, 0.2, 0.8, 0.0], [0.5, 0.5, 0.0, 0.0]]))

    def kl(model: nn.Module, x: rt.Tensor, t: rt.Tensor) -> rt.Tensor:
        return nn.functional.kl_div(model(x).log_softmax(1), t, reduction="batchmean")

    _check(lambda: nn.Linear(3, 4), kl, (_randn(2, 3), target))
    ctc = nn.CTCLoss()
    targets, in_lens, tgt_lens = rt.tensor([[1, 2], [3, 3]]), rt.tensor([5, 4]), rt.tensor([2, 1])

    def ctc_loss(model: nn.Module, x: rt.Tensor) -> rt.Tensor:
        return ctc(model(x).log_softmax(2), targets, in_lens, tgt_lens)

    _check(lambda: nn.Linear(3, 4), ctc_loss, (_randn(5, 2, 3),))
