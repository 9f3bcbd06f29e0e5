"""Training steps as issue 11's users write them (a CNN, a transformer block, an RNN, MLPs
with every optimizer, schedules stepped inside the step and between calls, clipping, the
losses), compiled with ``rt.compile`` and ``planner.compile``: each call's loss (its value,
requires_grad and grad_fn), the parameters, gradients, optimizer state, learning rates and
buffers equal eager mode's on the same inputs, with no fallback warning and one capture."""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt

F = rt.nn.functional
nn = rt.nn


class Setup:
    """A model, its optimizer and schedule, the step over them, and its inputs per call."""

    def __init__(self, model: Any, opt: Any, sched: Any, body: Callable[..., Any],
                 inputs: Callable[[np.random.Generator], tuple[Any, ...]],
                 sched_outside: bool = False) -> None:
        self.model, self.opt, self.sched, self.body = model, opt, sched, body
        self.inputs, self.sched_outside = inputs, sched_outside

    def step(self) -> Callable[..., Any]:
        model, opt, sched, body = self.model, self.opt, self.sched, self.body

        def step(*args: Any) -> Any:
            return body(model, opt, sched, *args)

        return step


def train(model: Any, opt: Any, sched: Any, loss: rt.Tensor, clip: str = "norm") -> None:
    opt.zero_grad()
    loss.backward()
    if clip == "norm":
        nn.utils.clip_grad_norm_(model.parameters(), 0.5)
    elif clip == "value":
        nn.utils.clip_grad_value_(model.parameters(), 0.02)
    opt.step()
    if sched is not None:
        sched.step()


def cnn() -> Setup:
    # no bias before the batch norm: its gradient is zero but for rounding, which AdamW
    # turns into steps of lr either way
    model = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1, bias=False), nn.BatchNorm2d(4), nn.ReLU(),
                          nn.MaxPool2d(2), nn.Conv2d(4, 4, 3, padding="same", groups=2,
                                                     dilation=2),
                          nn.AvgPool2d(2), nn.Flatten(), nn.Linear(16, 10))
    opt = rt.optim.AdamW(model.parameters(), lr=0.01, weight_decay=0.05)
    sched = rt.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.05, total_steps=20)

    def body(model: Any, opt: Any, sched: Any, x: rt.Tensor, y: rt.Tensor) -> Any:
        model.train()
        loss = F.cross_entropy(model(x), y, label_smoothing=0.1)
        train(model, opt, sched, loss)
        return loss

    return Setup(model, opt, sched, body, lambda rng: (
        rt.tensor(rng.standard_normal((4, 1, 8, 8)).astype(np.float32)),
        rt.tensor(rng.integers(0, 10, 4))))


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(11, 8, padding_idx=0)
        self.attn = nn.MultiheadAttention(8, 2, batch_first=True)
        self.ln = nn.LayerNorm(8)
        self.rms = nn.RMSNorm(8)
        self.head = nn.Linear(8, 11)
        self.q = nn.Linear(8, 8)

    def forward(self, tokens: rt.Tensor) -> rt.Tensor:
        h = self.emb(tokens)
        t = tokens.shape[1]
        mask = rt.ones(t, t, dtype=rt.bool).triu(1)
        a, _ = self.attn(self.ln(h), h, h, attn_mask=mask, need_weights=False)
        h = h + a
        q = self.q(h).reshape(h.shape[0], t, 2, 4).transpose(1, 2)
        s = F.scaled_dot_product_attention(q, q, q, is_causal=True)
        h = h + F.gelu(s.transpose(1, 2).reshape(h.shape[0], t, 8))
        return self.head(self.rms(h))


def transformer() -> Setup:
    model = Block()
    # eps well above the rounding noise of the key projection's bias gradient (zero but
    # for rounding: a softmax does not see a shift of every key)
    opt = rt.optim.AdamW(model.parameters(), lr=0.01, betas=(0.9, 0.95), eps=1e-3)
    sched = rt.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=4, eta_min=1e-4)

    def body(model: Any, opt: Any, sched: Any, x: rt.Tensor, y: rt.Tensor) -> Any:
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, 11), y.reshape(-1), ignore_index=0)
        train(model, opt, None, loss)
        return loss

    return Setup(model, opt, sched, body, lambda rng: (
        rt.tensor(rng.integers(0, 11, (2, 5))), rt.tensor(rng.integers(0, 11, (2, 5)))),
        sched_outside=True)


class Elman(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.ih = nn.Linear(3, 6)
        self.hh = nn.Linear(6, 6, bias=False)
        self.out = nn.Linear(6, 2)

    def forward(self, x: rt.Tensor) -> rt.Tensor:
        h = rt.zeros(x.shape[0], 6)
        for t in range(x.shape[1]):
            h = rt.tanh(self.ih(x[:, t]) + self.hh(h))
        return self.out(h)


def rnn() -> Setup:
    model = Elman()
    opt = rt.optim.RMSprop(model.parameters(), lr=0.01, centered=True, momentum=0.9)
    sched = rt.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)

    def body(model: Any, opt: Any, sched: Any, x: rt.Tensor, y: rt.Tensor) -> Any:
        loss = F.smooth_l1_loss(model(x), y, beta=0.5)
        train(model, opt, sched, loss, clip="value")
        return loss

    return Setup(model, opt, sched, body, lambda rng: (
        rt.tensor(rng.standard_normal((4, 5, 3)).astype(np.float32)),
        rt.tensor(rng.standard_normal((4, 2)).astype(np.float32))))


def mlp(make_opt: Callable[[Any], Any], loss_of: Callable[..., rt.Tensor],
        target: Callable[[np.random.Generator], rt.Tensor]) -> Callable[[], Setup]:
    def setup() -> Setup:
        model = nn.Sequential(nn.Linear(6, 8), nn.SiLU(), nn.BatchNorm1d(8),
                              nn.LeakyReLU(0.1), nn.Linear(8, 4), nn.Softplus())
        opt = make_opt(model.parameters())
        sched = rt.optim.lr_scheduler.LambdaLR(opt, lambda e: 1.0 / (e + 1))

        def body(model: Any, opt: Any, sched: Any, x: rt.Tensor, y: rt.Tensor) -> Any:
            out = model(F.pad(x, (1, 1), mode="reflect")[:, 1:-1])
            loss = loss_of(out, y)
            train(model, opt, sched, loss, clip="none")
            return loss, out.argmax(1), out.detach().topk(2, 1).values

        return Setup(model, opt, sched, body, lambda rng: (
            rt.tensor(rng.standard_normal((5, 6)).astype(np.float32)), target(rng)))

    return setup


def classes(rng: np.random.Generator) -> rt.Tensor:
    return rt.tensor(rng.integers(0, 4, 5))


def floats(rng: np.random.Generator) -> rt.Tensor:
    return rt.tensor(rng.standard_normal((5, 4)).astype(np.float32))


def probabilities(rng: np.random.Generator) -> rt.Tensor:
    return rt.tensor(rng.dirichlet(np.ones(4), 5).astype(np.float32))


SETUPS: dict[str, Callable[[], Setup]] = {
    "cnn": cnn, "transformer": transformer, "rnn": rnn,
    "adagrad_nll": mlp(lambda p: rt.optim.Adagrad(p, lr=0.1, lr_decay=0.01),
                       lambda o, y: F.nll_loss(F.log_softmax(o, 1), y, reduction="sum"),
                       classes),
    "sgd_nesterov_huber": mlp(lambda p: rt.optim.SGD(p, lr=0.05, momentum=0.9, nesterov=True,
                                                     weight_decay=0.01),
                              lambda o, y: F.huber_loss(o, y, delta=0.5), floats),
    "sgd_dampening_l1": mlp(lambda p: rt.optim.SGD(p, lr=0.05, momentum=0.5, dampening=0.3),
                            lambda o, y: F.l1_loss(o, y), floats),
    "adam_amsgrad_bce": mlp(lambda p: rt.optim.Adam(p, lr=0.01, amsgrad=True),
                            lambda o, y: F.binary_cross_entropy_with_logits(
                                o, (y > 0).float(), pos_weight=rt.full((4,), 2.0)), floats),
    "rmsprop_soft_targets": mlp(lambda p: rt.optim.RMSprop(p, lr=0.01, momentum=0.5),
                                lambda o, y: F.cross_entropy(o, y, label_smoothing=0.2),
                                probabilities),
}


def state(setup: Setup) -> list[np.ndarray | float]:
    found: list[np.ndarray | float] = []
    for p in setup.model.parameters():
        found.append(p.detach().numpy().copy())
        found.append(p.grad.numpy().copy() if p.grad is not None else np.zeros(0))
        for value in setup.opt.state.get(p, {}).values():
            found.append(value.numpy().copy() if isinstance(value, rt.Tensor) else value)
    found += [b.numpy().copy() for b in setup.model.buffers()]
    found += [g["lr"] for g in setup.opt.param_groups]
    return found


def results(value: Any) -> list[rt.Tensor]:
    return list(value) if isinstance(value, tuple) else [value]


@pytest.mark.parametrize("compile_with", ["rt.compile", "planner.compile"])
@pytest.mark.parametrize("name", list(SETUPS))
def test_compiled_training_step_equals_eager(name: str, compile_with: str) -> None:
    rt.manual_seed(0)
    eager = SETUPS[name]()
    compiled = copy.deepcopy(eager)
    fn = (rt.compile if compile_with == "rt.compile" else planner.compile)(compiled.step())
    eager_fn = eager.step()
    for call in range(5):
        rng = np.random.default_rng(call)
        args = eager.inputs(rng)
        if eager.sched_outside and call:
            eager.sched.step()
            compiled.sched.step()
        want = results(eager_fn(*args))
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            got = results(fn(*args))
        for g, w in zip(got, want, strict=True):
            assert (g.requires_grad, g.is_leaf, g.dtype) == (w.requires_grad, w.is_leaf, w.dtype)
            assert type(g.grad_fn).__name__ == type(w.grad_fn).__name__
            np.testing.assert_allclose(g.detach().numpy(), w.detach().numpy(), rtol=2e-4,
                                       atol=2e-5)
        # RMSprop divides each gradient by its running scale: a near-zero gradient whose fused
        # sums round otherwise moves a weight by a part of lr (0.01), not of the weight
        atol = 1e-3 if name.startswith("rmsprop") else 2e-5
        for g, w in zip(state(compiled), state(eager), strict=True):
            np.testing.assert_allclose(g, w, rtol=2e-4, atol=atol)
    assert fn.captures == 1
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        got[0].backward()
