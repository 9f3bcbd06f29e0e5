"""Training steps built on rt.masked, compiled by planner.compile: two calls give eager mode's
loss, gradients and updated parameters, with no fallback to eager."""
from __future__ import annotations

import copy
import warnings
from collections.abc import Callable

import numpy as np

import planner
import runtime as rt

nn = rt.nn
TOL = 1e-9
_RNG = np.random.default_rng(28)
LossOf = Callable[[nn.Module, rt.Tensor, rt.Tensor], rt.Tensor]


def _padding_mask(lengths: list[int], steps: int) -> rt.Tensor:
    """(batch, steps) True where a sequence has a token, False over its padding."""
    return rt.tensor(np.arange(steps)[None, :] < np.array(lengths)[:, None])


def _step(model: nn.Module, loss_of: LossOf) -> Callable[[rt.Tensor, rt.Tensor], rt.Tensor]:
    opt = rt.optim.SGD(model.parameters(), lr=0.1)

    def step(x: rt.Tensor, mask: rt.Tensor) -> rt.Tensor:
        opt.zero_grad()
        loss = loss_of(model, x, mask)
        loss.backward()
        opt.step()
        return loss

    return step


def _check(model: nn.Module, loss_of: LossOf, calls: list[tuple[rt.Tensor, rt.Tensor]]
           ) -> None:
    eager_model, compiled_model = model.double(), copy.deepcopy(model.double())
    eager, compiled = _step(eager_model, loss_of), planner.compile(_step(compiled_model, loss_of))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a fallback to eager is a failure here
        for x, mask in calls:
            want, got = eager(x, mask), compiled(x, mask)
            np.testing.assert_allclose(got.item(), want.item(), rtol=TOL, atol=TOL)
            for (name, p1), p2 in zip(eager_model.named_parameters(),
                                      compiled_model.parameters(), strict=True):
                np.testing.assert_allclose(p2.grad.numpy(), p1.grad.numpy(), rtol=TOL,
                                           atol=TOL, err_msg=name)
                np.testing.assert_allclose(p2.detach().numpy(), p1.detach().numpy(), rtol=TOL,
                                           atol=TOL, err_msg=name)
    assert compiled.plan is not None


def _calls(shape: tuple[int, ...], lengths: list[list[int]]) -> list[tuple[rt.Tensor, rt.Tensor]]:
    return [(rt.from_numpy(_RNG.standard_normal(shape)), _padding_mask(n, shape[1]))
            for n in lengths]


def test_masked_mean_loss_over_padded_sequences() -> None:
    """A per-token squared error averaged over the real tokens only (masked mean), plus a
    masked variance of the predictions per sequence."""
    def loss_of(model: nn.Module, x: rt.Tensor, mask: rt.Tensor) -> rt.Tensor:
        pred = model(x).squeeze(-1)  # (batch, steps)
        err = (pred - x.sum(-1)) ** 2
        spread = rt.masked.var(pred, 1, mask=mask).sum()
        return rt.masked.mean(err, mask=mask) + 0.1 * spread

    _check(nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1)), loss_of,
           _calls((2, 5, 3), [[5, 2], [3, 4]]))


class _Attention(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.q, self.k, self.v = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, dim)

    def forward(self, x: rt.Tensor, mask: rt.Tensor) -> rt.Tensor:
        scores = self.q(x) @ self.k(x).transpose(1, 2) / x.shape[-1] ** 0.5
        keys = mask.unsqueeze(1)  # (batch, 1, steps): every query sees the real keys only
        return rt.masked.softmax(scores, -1, mask=keys) @ self.v(x)


def test_masked_softmax_attention() -> None:
    """Attention over padded keys (a masked softmax, the mask broadcast over queries), pooled
    by a masked amax and logsumexp over the real tokens."""
    def loss_of(model: nn.Module, x: rt.Tensor, mask: rt.Tensor) -> rt.Tensor:
        out = model(x, mask)  # (batch, steps, dim)
        tokens = mask.unsqueeze(-1)
        pooled = rt.masked.amax(out, 1, mask=tokens) + rt.masked.logsumexp(out, 1, mask=tokens)
        return (pooled ** 2).sum() + rt.masked.norm(out, 2.0, (1, 2), mask=tokens).sum()

    _check(_Attention(4), loss_of, _calls((2, 5, 4), [[5, 3], [2, 4]]))
