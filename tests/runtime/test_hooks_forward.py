"""Forward hooks and pre-hooks as PyTorch's: what they see, what their results replace,
order (prepend), with_kwargs, removal; and a compiled step re-captures when hooks change."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt

torch = pytest.importorskip("torch")


class Scale:
    """forward(x, factor=...) in the given library."""

    @staticmethod
    def make(lib: Any) -> Any:
        class M(lib.nn.Module):
            def forward(self, x: Any, factor: float = 1.0) -> Any:
                return x * factor

        return M()


@pytest.mark.parametrize("lib", [rt, torch], ids=["runtime", "torch"])
def test_hooks_see_and_replace_inputs_and_outputs(lib: Any) -> None:
    m = Scale.make(lib)
    log: list[str] = []

    def pre(mod: Any, args: tuple[Any, ...]) -> Any:
        log.append(f"pre {type(args).__name__} {len(args)}")
        return args[0] + 1  # a bare value: it becomes the one argument

    def post(mod: Any, args: tuple[Any, ...], out: Any) -> Any:
        log.append(f"post {float(args[0].sum())} {float(out.sum())}")
        return out * 10

    def first(mod: Any, args: tuple[Any, ...], out: Any) -> None:
        log.append("first")

    handles = [m.register_forward_pre_hook(pre), m.register_forward_hook(post),
               m.register_forward_hook(first, prepend=True)]
    out = m(lib.ones(2), factor=2.0)
    assert out.tolist() == [40.0, 40.0]
    assert log == ["pre tuple 1", "first", "post 4.0 8.0"]
    for h in handles:
        h.remove()
    h.remove()  # removing twice is harmless
    assert m(lib.ones(2)).tolist() == [1.0, 1.0]


@pytest.mark.parametrize("lib", [rt, torch], ids=["runtime", "torch"])
def test_hooks_with_kwargs_and_context_manager(lib: Any) -> None:
    m = Scale.make(lib)

    def pre(mod: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return args, {**kwargs, "factor": 3.0}

    def post(mod: Any, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any) -> Any:
        return out + kwargs["factor"]

    with m.register_forward_pre_hook(pre, with_kwargs=True), \
            m.register_forward_hook(post, with_kwargs=True):
        assert m(lib.ones(1), factor=2.0).tolist() == [6.0]
    assert m(lib.ones(1), factor=2.0).tolist() == [2.0]


def test_pre_hook_with_kwargs_must_return_a_pair() -> None:
    m = Scale.make(rt)
    m.register_forward_pre_hook(lambda mod, a, k: a, with_kwargs=True)
    with pytest.raises(RuntimeError, match="forward pre-hook must return None or a tuple of "
                       r"\(new_args, new_kwargs\)"):
        m(rt.ones(1))


def test_hook_gradients_flow_like_torch() -> None:
    outs = []
    for lib in (rt, torch):
        lib.manual_seed(0)
        layer = lib.nn.Linear(3, 3)
        with lib.no_grad():
            layer.weight.copy_(lib.tensor(np.eye(3, dtype=np.float32) * 2))
            layer.bias.zero_()
        layer.register_forward_hook(lambda mod, a, out: out * out)
        x = lib.tensor(np.array([[1.0, -2.0, 3.0]], np.float32), requires_grad=True)
        layer(x).sum().backward()
        outs.append((x.grad.numpy(), layer.weight.grad.numpy()))
    for a, b in zip(*outs, strict=True):
        np.testing.assert_allclose(a, b)


def test_compiled_step_recaptures_when_hooks_change() -> None:
    layer = rt.nn.Linear(2, 2)
    x = rt.ones(1, 2)

    def step(x: rt.Tensor) -> rt.Tensor:
        with rt.no_grad():
            return layer(x).sum()

    compiled = planner.compile(step)
    plain = float(step(x))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert float(compiled(x)) == pytest.approx(plain)
        handle = layer.register_forward_hook(lambda mod, a, out: out * 3)
        assert float(compiled(x)) == pytest.approx(3 * plain)  # not the old plan
        assert compiled.captures == 2
        assert float(compiled(x)) == pytest.approx(3 * plain)
        assert compiled.captures == 2  # the hooked plan replays
        handle.remove()
        assert float(compiled(x)) == pytest.approx(plain)
