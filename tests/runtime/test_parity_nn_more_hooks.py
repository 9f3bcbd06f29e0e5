"""Module.register_backward_hook (PyTorch's deprecated, non-full backward hook) and
Module.share_memory, against torch: what the hook sees and returns, its FutureWarnings, the
refusal to mix it with full hooks, the module-wide form."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import runtime as rt
from runtime.nn import module as rt_module

torch = pytest.importorskip("torch")


def _exp_module(lib: Any) -> Any:
    class Exp(lib.nn.Module):
        def forward(self, x: Any) -> Any:
            return x.exp()

    return Exp()


def _run(lib: Any, x: np.ndarray, *, leaf_input: bool, scale: float | None) -> dict[str, Any]:
    """A hook on a module computing exp: what it saw, the warnings, and x's gradient."""
    module, seen = _exp_module(lib), []

    def hook(mod: Any, grad_input: tuple[Any, ...], grad_output: tuple[Any, ...]) -> Any:
        assert mod is module
        seen.append(([g.detach().numpy().copy() for g in grad_input],
                     [g.detach().numpy().copy() for g in grad_output]))
        return None if scale is None else tuple(g * scale for g in grad_input)

    handle = module.register_backward_hook(hook)
    leaf = lib.tensor(x, requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = module(leaf if leaf_input else leaf * 1.0)
    out.sum().backward()
    handle.remove()
    module(leaf).sum().backward()  # removed: runs no more
    return {"seen": seen, "warnings": [(w.category, str(w.message)) for w in caught],
            "grad": leaf.grad.numpy()}


@pytest.mark.parametrize("leaf_input", [True, False])
@pytest.mark.parametrize("scale", [None, 3.0])
def test_register_backward_hook_matches_torch(leaf_input, scale):
    x = np.random.default_rng(0).standard_normal((2, 3))
    want, got = _run(torch, x, leaf_input=leaf_input, scale=scale), \
        _run(rt, x, leaf_input=leaf_input, scale=scale)
    assert got["warnings"] == want["warnings"]
    assert len(got["seen"]) == len(want["seen"]) == 1
    for ours, theirs in zip(got["seen"][0], want["seen"][0]):
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            np.testing.assert_allclose(a, b, rtol=1e-12)
    np.testing.assert_allclose(got["grad"], want["grad"], rtol=1e-12)
    if scale is not None:  # the hook's grad_input replaced the node's
        np.testing.assert_allclose(got["grad"], np.exp(x) * (scale + 1), rtol=1e-12)


def _warnings_of(lib: Any, forward: Any, *args: Any) -> list[str]:
    class M(lib.nn.Module):
        def forward(self, *a: Any) -> Any:
            return forward(*a)

    m = M()
    m.register_backward_hook(lambda *_: None)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m(*args)
    return [str(w.message) for w in caught if w.category is FutureWarning]


@pytest.mark.parametrize("case", ["dict_out", "two_nodes", "list_in"])
def test_register_backward_hook_warnings_match_torch(case):
    def run(lib: Any) -> list[str]:
        a = lib.ones(2, requires_grad=True) * 1.0
        b = lib.ones(2, requires_grad=True) * 1.0
        if case == "dict_out":
            return _warnings_of(lib, lambda x: {"y": x.exp()}, a)
        if case == "two_nodes":
            return _warnings_of(lib, lambda x, y: (x.exp(), y.exp()), a, b)
        return _warnings_of(lib, lambda xs: xs[0].exp(), [a])

    assert run(rt) == run(torch) != []


def test_backward_hooks_of_both_kinds_are_refused_as_torch(monkeypatch):
    def errors(lib: Any, first: str, second: str) -> str:
        m = lib.nn.Linear(2, 2)
        getattr(m, first)(lambda *_: None)
        with pytest.raises(RuntimeError) as info:
            getattr(m, second)(lambda *_: None)
        return str(info.value)

    for pair in (("register_backward_hook", "register_full_backward_hook"),
                 ("register_full_backward_hook", "register_backward_hook")):
        assert errors(rt, *pair) == errors(torch, *pair)
    # module-wide: the first kind registered decides, as torch's
    monkeypatch.setattr(rt_module, "_global_is_full_backward_hook", None)
    handle = rt_module.register_module_backward_hook(lambda *_: None)
    with pytest.raises(RuntimeError, match="Cannot use both regular backward hooks and full "
                       "backward hooks as a global Module hook. Please use only one of them."):
        rt_module.register_module_full_backward_hook(lambda *_: None)
    handle.remove()


def test_module_wide_backward_hook_runs_on_every_module(monkeypatch):
    monkeypatch.setattr(rt_module, "_global_is_full_backward_hook", None)
    calls: list[str] = []
    handle = rt_module.register_module_backward_hook(
        lambda m, gi, go: calls.append(type(m).__name__))
    try:
        m = _exp_module(rt)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            m(rt.ones(2, requires_grad=True)).sum().backward()
    finally:
        handle.remove()
    assert calls == ["Exp"]


def test_share_memory_returns_the_module_and_keeps_its_tensors():
    m = rt.nn.Linear(3, 2)
    weight, before = m.weight, m.weight.detach().numpy().copy()
    assert m.share_memory() is m
    assert m.weight is weight
    np.testing.assert_array_equal(m.weight.detach().numpy(), before)
    m(rt.ones(1, 3)).sum().backward()
    assert m.weight.grad is not None
    tm = torch.nn.Linear(3, 2)
    assert tm.share_memory() is tm


def test_a_compiled_step_with_an_older_backward_hook_runs_eagerly():
    """The hook runs Python during backward, which a plan cannot replay: the step falls back
    to eager (a warning), and the hook runs on every call."""
    planner = pytest.importorskip("planner")
    module, calls = _exp_module(rt), []
    module.register_backward_hook(lambda m, gi, go: calls.append(1))
    x = rt.ones(3, requires_grad=True)

    def step(a: rt.Tensor) -> rt.Tensor:
        loss = module(a * 1.0).sum()
        loss.backward()
        return loss

    compiled = planner.compile(step)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled(x)
        compiled(x)
    assert len(calls) == 2
    assert any("Exp has a backward hook, which runs Python" in str(w.message) for w in caught)
