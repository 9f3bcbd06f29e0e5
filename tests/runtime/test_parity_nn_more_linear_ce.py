"""F.linear_cross_entropy and nn.LinearCrossEntropyLoss (new in PyTorch 2.13) against
torch: class indices or probabilities, K-dimensional weights, bias, class weights,
ignore_index, label smoothing, reductions, unbatched; values and float64 gradients; the
module's repr, state dict and checks; the functional's errors."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")

CASES = [
    ("indices", (5, 4), (3, 4), "long", {}),
    ("bias weight ignore", (5, 4), (3, 4), "long",
     {"bias": (3,), "weight": (3,), "ignore_index": 1}),
    ("smoothing sum", (5, 4), (3, 4), "long", {"label_smoothing": 0.2, "reduction": "sum"}),
    ("probabilities none", (5, 4), (3, 4), "prob", {"reduction": "none"}),
    ("K-dim", (5, 4), (3, 2, 4), "long", {"bias": (3, 2)}),
    ("unbatched", (4,), (3, 4), "long", {}),
]


def _run(lib: Any, x_shape: Any, w_shape: Any, target: str, kw: dict[str, Any]) -> Any:
    rng = np.random.default_rng(0)
    x = lib.tensor(rng.standard_normal(x_shape), requires_grad=True)
    w = lib.tensor(rng.standard_normal(w_shape), requires_grad=True)
    classes, out = w_shape[0], w_shape[1:-1]
    batch = x_shape[:-1]
    if target == "long":
        y = lib.tensor(rng.integers(0, classes, (*batch, *out)))
    else:
        y = lib.tensor(rng.dirichlet(np.ones(classes), batch).reshape(*batch, classes))
    extra: dict[str, Any] = {}
    leaves = [x, w]
    for name in ("bias", "weight"):
        if name in kw:
            t = lib.tensor(rng.random(kw[name]) + 0.5, requires_grad=name == "bias")
            extra["linear_bias" if name == "bias" else "weight"] = t
            if name == "bias":
                leaves.append(t)
    extra.update({k: v for k, v in kw.items() if k not in ("bias", "weight")})
    loss = lib.nn.functional.linear_cross_entropy(x, w, y, **extra)
    (loss * lib.tensor(rng.standard_normal(tuple(loss.shape)))).sum().backward()
    return loss.detach().numpy(), [t.grad.numpy() for t in leaves]


@pytest.mark.parametrize("name,x_shape,w_shape,target,kw", CASES, ids=[c[0] for c in CASES])
def test_linear_cross_entropy_matches_torch(name, x_shape, w_shape, target, kw):
    (t_loss, t_grads), (r_loss, r_grads) = (_run(lib, x_shape, w_shape, target, kw)
                                            for lib in (torch, rt))
    np.testing.assert_allclose(r_loss, t_loss, rtol=1e-10, atol=1e-12)
    for a, b in zip(r_grads, t_grads):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-12)


def test_linear_cross_entropy_loss_module_matches_torch():
    def run(lib: Any) -> Any:
        lib.manual_seed(0)
        m = lib.nn.LinearCrossEntropyLoss(4, 3, out_features=(2,), bias=True,
                                          label_smoothing=0.1).double()
        return m

    tm, rm = run(torch), run(rt)
    assert repr(rm) == repr(tm)
    assert list(rm.state_dict()) == list(tm.state_dict())
    rm.load_state_dict({k: rt.tensor(v.numpy()) for k, v in tm.state_dict().items()})
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((5, 4)), rng.integers(0, 3, (5, 2))
    want, got = tm(torch.tensor(x), torch.tensor(y)), rm(rt.tensor(x), rt.tensor(y))
    np.testing.assert_allclose(got.item(), want.item(), rtol=1e-10)
    want.backward()
    got.backward()
    np.testing.assert_allclose(rm.linear.weight.grad.numpy(), tm.linear.weight.grad.numpy(),
                               rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("call", [
    "F.linear_cross_entropy(r(2, 3, 4), r(3, 4), L(0, 1))",
    "F.linear_cross_entropy(r(2, 4), r(4), L(0, 1))",
    "F.linear_cross_entropy(r(2, 4), r(3, 5), L(0, 1))",
    "F.linear_cross_entropy(r(2, 4), r(3, 4), L(0, 1), linear_bias=r(4))",
    "F.linear_cross_entropy(r(4), r(3, 2, 4), L(0, 1))",
    "F.linear_cross_entropy(r(2, 4), r(3, 4), r(2, 3), ignore_index=1)",
    "nn.LinearCrossEntropyLoss(4, 3, weight=r(4))",
    "nn.LinearCrossEntropyLoss(4, 3, label_smoothing=1.5)",
])
def test_linear_cross_entropy_errors_match_torch(call):
    def run(lib: Any) -> str:
        env = {"F": lib.nn.functional, "nn": lib.nn,
               "r": lambda *s: lib.tensor(np.ones(s)), "L": lambda *v: lib.tensor(list(v))}
        with pytest.raises(Exception) as info:
            eval(call, env)  # noqa: S307
        return f"{type(info.value).__name__}: {info.value}"

    assert run(rt) == run(torch)
