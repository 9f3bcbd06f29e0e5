"""rt.utils.checkpoint (activation checkpointing, as torch.utils.checkpoint): the same values
and gradients as running the function plainly, both variants, and PyTorch's warnings and
errors."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np
import pytest

import runtime as rt
from runtime.utils.checkpoint import (CheckpointError, checkpoint, checkpoint_sequential,
                                     set_checkpoint_early_stop)

VARIANTS = [True, False]  # use_reentrant


def mlp(lib: ModuleType, p: float = 0.0) -> Any:
    nn = lib.nn
    return nn.Sequential(nn.Linear(4, 6), nn.GELU(), nn.Dropout(p), nn.LayerNorm(6),
                         nn.Linear(6, 6), nn.Tanh(), nn.Linear(6, 2))


def grads(model: Any, x: Any, run: Callable[[Any], Any]) -> list[np.ndarray | None]:
    """The output and the gradients of ``(run(x) * [1, -2]).sum()`` for x and each parameter
    (None: no gradient)."""
    y = run(x)
    (y * x.new_tensor([1.0, -2.0])).sum().backward()
    return [y.detach().numpy()] + [None if t.grad is None else t.grad.numpy()
                                   for t in (x, *model.parameters())]


def twin(p: float = 0.0) -> tuple[Any, Any, Any]:
    rt.manual_seed(0)
    a, b = mlp(rt, p), mlp(rt, p)
    b.load_state_dict(a.state_dict())
    return a, b, rt.from_numpy(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4))


@pytest.mark.parametrize("reentrant", VARIANTS)
def test_checkpoint_equals_plain_run(reentrant: bool) -> None:
    plain, checked, x = twin()
    want = grads(plain, x.clone().requires_grad_(), plain)
    got = grads(checked, x.clone().requires_grad_(),
                lambda t: checkpoint(checked, t, use_reentrant=reentrant))
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("reentrant", VARIANTS)
def test_rerun_draws_the_first_runs_dropout(reentrant: bool) -> None:
    """Dropout in the checkpointed function: the rerun draws the same mask, and the generator
    goes on from where the first run left it."""
    plain, checked, x = twin(p=0.5)
    rt.manual_seed(3)
    want = grads(plain, x.clone().requires_grad_(), plain)
    after = rt.rand(4).numpy()
    rt.manual_seed(3)
    got = grads(checked, x.clone().requires_grad_(),
                lambda t: checkpoint(checked, t, use_reentrant=reentrant))
    np.testing.assert_array_equal(rt.rand(4).numpy(), after)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("reentrant", VARIANTS)
def test_checkpoint_sequential_equals_plain_run(reentrant: bool) -> None:
    plain, checked, x = twin()
    want = grads(plain, x.clone().requires_grad_(), plain)
    got = grads(checked, x.clone().requires_grad_(),
                lambda t: checkpoint_sequential(checked, 3, t, use_reentrant=reentrant))
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-7)


def test_non_reentrant_reaches_parameters_from_an_input_without_grad() -> None:
    """use_reentrant=False takes keyword arguments, and the parameters get their gradients
    where no input requires grad (the reentrant variant's backward cannot start there)."""
    plain, checked, x = twin()
    plain(x).sum().mul(2.0).backward()
    checkpoint(lambda t, scale: checked(t) * scale, x, use_reentrant=False, scale=2.0
               ).sum().backward()
    for p, q in zip(plain.parameters(), checked.parameters(), strict=True):
        np.testing.assert_allclose(q.grad.numpy(), p.grad.numpy(), rtol=1e-6)


@pytest.mark.parametrize("reentrant", VARIANTS)
def test_gradcheck(reentrant: bool) -> None:
    x = rt.tensor(np.linspace(-1, 1, 6).reshape(2, 3), requires_grad=True)
    w = rt.tensor(np.linspace(0.5, 2, 3), requires_grad=True)

    def fn(a: rt.Tensor, b: rt.Tensor) -> rt.Tensor:
        return checkpoint(lambda s, t: (s * t).sin().exp(), a, b, use_reentrant=reentrant)
    if reentrant:  # gradcheck's autograd.grad: PyTorch's reentrant checkpoint refuses it
        with pytest.raises(RuntimeError, match="^When use_reentrant=True, torch.utils.checkpoint "
                                               "is incompatible with .grad()"):
            rt.autograd.gradcheck(fn, (x, w))
        return
    assert rt.autograd.gradcheck(fn, (x, w))


def test_rerun_saving_other_tensors_raises() -> None:
    calls = []

    def changes(t: rt.Tensor) -> rt.Tensor:
        calls.append(1)
        return t.exp() if len(calls) == 1 else t.exp().exp()
    # PyTorch's early stop (the default) ends the rerun once it has remade what the forward
    # saved: no error; without it, the extra save raises
    checkpoint(changes, rt.ones(2, requires_grad=True), use_reentrant=False).sum().backward()
    calls.clear()
    with set_checkpoint_early_stop(False):
        y = checkpoint(changes, rt.ones(2, requires_grad=True), use_reentrant=False)
    with pytest.raises(CheckpointError, match="trying to save more tensors during "
                                              "recomputation than during the original forward"):
        y.sum().backward()


def outcome(lib: ModuleType, ck: Any, reentrant: bool | None, x_grad: bool,
            weights: dict[str, np.ndarray] | None) -> tuple[Any, ...]:
    """What a checkpointed call and its backward give: outputs and gradients, or the error;
    and the warnings raised."""
    model = mlp(lib)
    if weights is not None:
        model.load_state_dict({k: lib.from_numpy(v.copy()) for k, v in weights.items()})
    x = lib.from_numpy(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result: Any = grads(model, x.requires_grad_(x_grad),
                                lambda t: ck.checkpoint(model, t, use_reentrant=reentrant))
        except RuntimeError as e:
            result = str(e)
    return result, [str(w.message) for w in caught]


@pytest.mark.parametrize("reentrant", [None, True, False])
@pytest.mark.parametrize("x_grad", [True, False])
def test_checkpoint_as_pytorch(reentrant: bool | None, x_grad: bool) -> None:
    """Values, gradients, warnings (use_reentrant not passed; no input requiring grad) and
    the error of a reentrant backward with nothing to start from, as PyTorch's."""
    torch = pytest.importorskip("torch")
    torch_checkpoint = pytest.importorskip("torch.utils.checkpoint")
    torch.manual_seed(0)
    weights = {k: v.numpy().copy() for k, v in mlp(torch).state_dict().items()}
    want, want_warnings = outcome(torch, torch_checkpoint, reentrant, x_grad, weights)
    got, got_warnings = outcome(rt, rt.utils.checkpoint, reentrant, x_grad, weights)
    assert got_warnings == want_warnings
    if isinstance(want, str):
        assert got == want
        return
    for g, w in zip(got, want, strict=True):
        assert (g is None) == (w is None)
        if w is not None:
            np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("lib_name", ["torch", "runtime"])
def test_reentrant_refuses_keyword_arguments(lib_name: str) -> None:
    lib = pytest.importorskip(lib_name)
    ck = pytest.importorskip(f"{lib_name}.utils.checkpoint")
    with pytest.raises(ValueError, match="^Unexpected keyword arguments: scale$"):
        ck.checkpoint(lambda t, scale: t * scale, lib.ones(2), use_reentrant=True, scale=2.0)


def test_reentrant_under_autograd_grad_raises() -> None:
    """PyTorch refuses a reentrant checkpoint inside autograd.grad (its backward would set
    the parameters' .grad, which grad() never does)."""
    model = rt.nn.Linear(3, 2)
    x = rt.ones(4, 3, requires_grad=True)
    y = checkpoint(model, x, use_reentrant=True)
    with pytest.raises(RuntimeError, match="When use_reentrant=True, torch.utils.checkpoint is "
                                           "incompatible with .grad()"):
        rt.autograd.grad(y.sum(), x)
