"""Views made in no_grad mode of a tensor that requires grad (PyTorch's creation meta
NO_GRAD_MODE): they require grad, have no history and no gradient edge, and writing one in
place with grad mode enabled is PyTorch's error; eager and compiled alike."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

import planner
import runtime as rt

NO_GRAD_TAIL = (" Given that this use case is ambiguous and error-prone, it is forbidden. You can "
                "clarify your code by moving both the view and the inplace either both inside "
                "the no_grad block (if you don't want the inplace to be tracked) or both outside "
                "(if you want the inplace to be tracked).")
DIRECT = ("A view was created in no_grad mode and is being modified inplace with grad mode "
          "enabled." + NO_GRAD_TAIL)
INDIRECT = ("A view was created in no_grad mode and its base or another view of its base has "
            "been modified inplace with grad mode enabled." + NO_GRAD_TAIL)


def _libs() -> list[Any]:
    libs: list[Any] = [rt]
    try:
        import torch
    except ImportError:
        return libs
    return [*libs, torch]


VIEWS = {
    "slice": lambda w: w[0:2],
    "view": lambda w: w.view(3),
    "unsqueeze": lambda w: w.unsqueeze(0),
    "expand": lambda w: w.expand(2, 3),
    "reshape": lambda w: w.reshape(3),
    "select": lambda w: w[1],
}


@pytest.mark.parametrize("lib", _libs(), ids=lambda m: m.__name__)
@pytest.mark.parametrize("make", VIEWS.values(), ids=VIEWS.keys())
def test_view_requires_grad_without_history(lib: Any, make: Any) -> None:
    w = lib.ones(3, requires_grad=True)
    with lib.no_grad():
        v = make(w)
    assert v.requires_grad and v.is_leaf and v.grad_fn is None
    assert v._base is w


@pytest.mark.parametrize("lib", _libs(), ids=lambda m: m.__name__)
def test_split_and_unbind_in_no_grad_require_grad(lib: Any) -> None:
    w = lib.ones(3, requires_grad=True)
    with lib.no_grad():
        assert [p.requires_grad for p in w.split(1)] == [True] * 3
        assert [p.requires_grad for p in w.unbind()] == [True] * 3
        assert not w.detach()[0:2].requires_grad
        assert not lib.ones(3)[0:2].requires_grad
        assert not w.clone().requires_grad


@pytest.mark.parametrize("lib", _libs(), ids=lambda m: m.__name__)
def test_gradient_goes_nowhere(lib: Any) -> None:
    w = lib.ones(3, requires_grad=True)
    with lib.no_grad():
        v = w[0:2]
    y = (v * 2).sum()
    assert y.grad_fn is not None
    with pytest.raises(RuntimeError, match="at index 0 appears to not have been used"):
        lib.autograd.grad(y, v, retain_graph=True)
    assert lib.autograd.grad(y, [v, w], allow_unused=True, retain_graph=True) == (None, None)
    y.backward(inputs=[v], retain_graph=True)
    y.backward()
    assert v.grad is None and w.grad is None
    with pytest.raises(RuntimeError, match="element 0 of tensors does not require grad and "
                                           "does not have a grad_fn"):
        v.backward(lib.ones(2))


@pytest.mark.parametrize("lib", _libs(), ids=lambda m: m.__name__)
def test_inplace_with_grad_is_an_error(lib: Any) -> None:
    w = lib.ones(3, requires_grad=True)
    with lib.no_grad():
        v = w[0:2]
    with pytest.raises(RuntimeError) as e:
        v.mul_(2)
    assert str(e.value) == DIRECT
    with lib.no_grad():
        v.mul_(2)  # both in no_grad: allowed, not tracked
    assert w.detach().tolist() == [2.0, 2.0, 1.0]
    with pytest.raises(RuntimeError) as e:
        (v * 2).sum()  # its base was written since: asking its history is the error
    assert str(e.value) == INDIRECT


@pytest.mark.parametrize("lib", _libs(), ids=lambda m: m.__name__)
def test_view_of_a_no_grad_view(lib: Any) -> None:
    w = lib.ones(3, requires_grad=True)
    with lib.no_grad():
        v = w[0:2]
    v2 = v[0:1]
    assert v2.requires_grad and not v2.is_leaf
    assert type(v2.grad_fn).__name__ == "SliceBackward0"
    with pytest.raises(RuntimeError) as e:
        v2.mul_(2)
    assert str(e.value) == ("Output 0 of Slice is a view of a view which was created in no_grad "
                            "mode and is being modified inplace with grad mode enabled."
                            + NO_GRAD_TAIL)


@pytest.mark.parametrize("lib", _libs(), ids=lambda m: m.__name__)
def test_base_written_with_grad(lib: Any) -> None:
    w = lib.ones(3, requires_grad=True).clone()
    with lib.no_grad():
        v = w[0:2]
        xv = w.view(3)
    with pytest.raises(RuntimeError) as e:
        xv.add_(1)
    assert str(e.value) == DIRECT
    w.mul_(2)
    with pytest.raises(RuntimeError) as e:
        v.grad_fn
    assert str(e.value) == INDIRECT


def test_gradient_edge_asserts() -> None:
    w = rt.ones(3, requires_grad=True)
    with rt.no_grad():
        v = w[0:2]
    with pytest.raises(AssertionError, match="Expected gradient function to be set"):
        rt.autograd.graph.get_gradient_edge(v)


def test_compiled_step_sees_eager_flags() -> None:
    w = rt.ones(3, requires_grad=True)

    def step(x: Any) -> Any:
        with rt.no_grad():
            v = w[0:2]
        return (v * x[0:2]).sum().detach(), v.requires_grad, v.is_leaf

    compiled = planner.compile(step)
    x = rt.ones(3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(3):
            assert compiled(x)[1:] == step(x)[1:] == (True, True)
            assert compiled(x)[0].item() == step(x)[0].item() == 2.0


@pytest.mark.parametrize("write", ["no_grad_view", "split_piece", "view_of_a_split_piece"])
def test_compiled_step_raises_eagers_error(write: str) -> None:
    w = rt.ones(4, requires_grad=True)

    def step(x: Any) -> Any:
        if write == "no_grad_view":
            with rt.no_grad():
                v = w[0:2]
        else:
            v = (w * 1).split(2)[0]
            if write == "view_of_a_split_piece":
                v = v[0:1]
        v.mul_(x[0])
        return v

    with pytest.raises(RuntimeError) as eager:
        step(rt.ones(4))
    with pytest.raises(RuntimeError) as compiled:
        planner.compile(step)(rt.ones(4))
    assert str(compiled.value) == str(eager.value)
