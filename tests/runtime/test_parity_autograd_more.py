"""Autograd semantics against PyTorch: each test runs on runtime and on torch (when importable)
with the same hand-written expectation, so the expectation is checked against the reference
and still holds the runtime to it without torch."""

from __future__ import annotations

import re
from typing import Any

import pytest

import runtime as rt


@pytest.fixture(params=["runtime", "torch"])
def lib(request: pytest.FixtureRequest) -> Any:
    if request.param == "torch":
        return pytest.importorskip("torch")
    return rt


ERR_INFERENCE_SAVED = "Inference tensors cannot be saved for backward."
ERR_INFERENCE_INPLACE = "Inplace update to inference tensor outside InferenceMode is not allowed."


def _inference_ones(lib: Any, *shape: int, **kw: Any) -> Any:
    with lib.inference_mode():
        return lib.ones(*shape, **kw)


# --- inference tensors ------------------------------------------------------------------------
def test_inference_mode_makes_inference_tensors(lib: Any) -> None:
    x = _inference_ones(lib, 3)
    assert x.is_inference() and not lib.ones(3).is_inference()
    assert x.view(3).is_inference() and x[1:].is_inference() and x.detach().is_inference()
    assert not x.clone().is_inference() and not (x * 2).is_inference()
    assert x.grad_fn is None and x.is_leaf and not x.requires_grad


def test_normal_tensor_inside_inference_mode(lib: Any) -> None:
    x = lib.ones(3)
    w = lib.ones(3, requires_grad=True)
    with lib.inference_mode():
        view, new = x[1:], x * 2
        x.add_(1)
        y = w * 2
    assert not view.is_inference() and new.is_inference() and not x.is_inference()
    assert x._version == 1
    assert y.is_inference() and not y.requires_grad and y.grad_fn is None


def test_inference_tensor_cannot_be_saved(lib: Any) -> None:
    x = _inference_ones(lib, 2, 3)
    w = lib.ones(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=re.escape(ERR_INFERENCE_SAVED)):
        x * w  # mul saves x for w's gradient
    with pytest.raises(RuntimeError, match=re.escape(ERR_INFERENCE_SAVED)):
        lib.nn.functional.linear(x, w.view(1, 3))
    assert (x + w).sum().item() == 12.0  # add saves nothing
    assert (x.clone() * w).sum().item() == 6.0  # the workaround the message names


def test_inference_tensor_inplace_outside(lib: Any) -> None:
    x = _inference_ones(lib, 3)
    for write in (lambda: x.add_(1), lambda: x.zero_(), lambda: x.__setitem__(0, 2.0),
                  lambda: x[:2].mul_(2), lambda: x.copy_(lib.zeros(3))):
        with pytest.raises(RuntimeError, match=re.escape(ERR_INFERENCE_INPLACE)):
            write()
        with lib.no_grad(), pytest.raises(RuntimeError, match=re.escape(ERR_INFERENCE_INPLACE)):
            write()
    # (PyTorch raises after its kernel wrote; the runtime raises before writing)
    with lib.inference_mode():
        x.fill_(1).add_(1)
    assert x.tolist() == [2.0, 2.0, 2.0]


def test_inference_tensor_version_and_requires_grad(lib: Any) -> None:
    x = _inference_ones(lib, 3)
    with pytest.raises(RuntimeError, match="^Inference tensors do not track version counter.$"):
        x._version
    with pytest.raises(RuntimeError, match="^Inference tensors do not track version counter.$"):
        x.view(3)._version
    msg = "^Setting requires_grad=True on inference tensor outside InferenceMode is not allowed.$"
    with pytest.raises(RuntimeError, match=msg):
        x.requires_grad_()
    with pytest.raises(RuntimeError, match=msg):
        x.requires_grad = True
    assert not x.requires_grad_(False).requires_grad
    with lib.inference_mode():
        assert x.requires_grad_().requires_grad
    y = _inference_ones(lib, 3, requires_grad=True)
    assert y.requires_grad and y.is_inference()


def test_inference_mode_false_enables_grad(lib: Any) -> None:
    with lib.no_grad(), lib.inference_mode(False):
        assert lib.is_grad_enabled() and not lib.is_inference_mode_enabled()
    with lib.inference_mode():
        with lib.inference_mode(False):
            x = lib.ones(3)
            assert lib.is_grad_enabled() and not lib.is_inference_mode_enabled()
        assert not lib.is_grad_enabled() and lib.is_inference_mode_enabled()
    assert not x.is_inference()
