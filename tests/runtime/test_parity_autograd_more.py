"""Autograd semantics against PyTorch: each test runs on runtime and on torch (when importable)
with the same hand-written expectation, so the expectation is checked against the reference
and still holds the runtime to it without torch."""

from __future__ import annotations

import re
from typing import Any

import pytest

import runtime as rt
from tests.fakecuda import fake_cuda_fixture, needs_two_devices  # noqa: F401


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
    assert x.data.is_inference() and not lib.ones(3).data.is_inference()
    with lib.inference_mode():
        made = (lib.tensor([1.0]), lib.arange(3), lib.randn(2), lib.zeros_like(x), x * 2)
    assert all(t.is_inference() for t in made)
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


def test_nothing_recorded_in_inference_mode_even_under_enable_grad(lib: Any) -> None:
    w = lib.ones(2, requires_grad=True)
    with lib.inference_mode():
        with lib.enable_grad():
            y = w * 2
            z = _inference_ones(lib, 2, requires_grad=True) * 2  # nothing saved: no error
        with lib.set_grad_enabled(True):
            v = w.exp()
        u = lib.enable_grad()(lambda: w * 3)()
    for t in (y, z, v, u):
        assert t.grad_fn is None and not t.requires_grad and t.is_inference()
    assert lib.is_grad_enabled() and (w * 2).grad_fn is not None


# --- post-accumulate-grad hooks, requires_grad and .grad setters -------------------------------
def test_register_post_accumulate_grad_hook_method(lib: Any) -> None:
    x = lib.ones(3, requires_grad=True)
    seen: list[float] = []
    handle = x.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.sum().item()))
    (x * 2).sum().backward()
    (x * 2).sum().backward()
    handle.remove()
    (x * 2).sum().backward()
    assert seen == [6.0, 12.0] and x.grad.tolist() == [6.0, 6.0, 6.0]
    with pytest.raises(RuntimeError, match="^post accumulate grad hooks cannot be registered on "
                       "non-leaf tensors$"):
        (x * 2).register_post_accumulate_grad_hook(print)
    with pytest.raises(RuntimeError, match="^cannot register a hook on a tensor that doesn't "
                       "require gradient$"):
        lib.ones(3).register_post_accumulate_grad_hook(print)


def test_requires_grad_setter_errors(lib: Any) -> None:
    y = lib.ones(3, requires_grad=True) * 2
    assert y.requires_grad_(True) is y
    with pytest.raises(RuntimeError, match=r"^you can only change requires_grad flags of leaf "
                       r"variables.$"):
        y.requires_grad = True
    detach_hint = "If you want to use a computed variable in a subgraph"
    for clear in (lambda: y.requires_grad_(False), lambda: setattr(y, "requires_grad", False)):
        with pytest.raises(RuntimeError, match=detach_hint):
            clear()
    n = lib.ones(3, dtype=lib.int64)
    with pytest.raises(RuntimeError, match="^only Tensors of floating point dtype can require "
                       "gradients$"):
        n.requires_grad_()
    with pytest.raises(RuntimeError, match="^only Tensors of floating point and complex dtype "
                       "can require gradients$"):
        n.requires_grad = True
    n.requires_grad = False
    assert not n.requires_grad_(False).requires_grad
    with pytest.raises(RuntimeError, match="^requires_grad must be a bool$"):
        lib.ones(3).requires_grad = 1


def test_grad_setter_errors(lib: Any) -> None:
    x = lib.ones(2, 3)
    with pytest.raises(TypeError, match="^assigned grad expected to be a Tensor or None but got "
                       "grad of type int$"):
        x.grad = 3
    with pytest.raises(RuntimeError, match="^can't assign Variable as its own grad$"):
        x.grad = x
    for dt, name in ((lib.float64, "double"), (lib.int64, "long int"), (lib.bool, "bool")):
        with pytest.raises(RuntimeError, match=f"^attempting to assign a gradient with dtype "
                           f"'{name}' to a tensor with grad_dtype 'Float'. The gradient must "
                           "match the tensor's grad_dtype"):
            x.grad = lib.ones(2, 3, dtype=dt)
    with pytest.raises(RuntimeError, match=re.escape(
            "attempting to assign a gradient of size '[3, 2]' to a tensor of size '[2, 3]'. "
            "Please ensure that the gradient and the tensor are the same size")):
        x.grad = lib.ones(3, 2)
    x.grad = lib.full((2, 3), 2.0)
    assert x.grad.sum().item() == 12.0
    x.grad = None
    assert x.grad is None
    n = lib.ones(2, dtype=lib.int64)
    n.grad = lib.ones(2, dtype=lib.int64)  # an integer tensor takes a grad of its dtype
    assert n.grad.tolist() == [1, 1]
    del n.grad
    assert n.grad is None


def test_grad_setter_device_errors(fake_cuda: Any) -> None:
    needs_two_devices()
    x = rt.ones(3)
    same = "'. Please ensure that the gradient and the tensor are on the same device"
    with pytest.raises(RuntimeError, match=re.escape(
            "attempting to assign a gradient with device type 'cuda' to a tensor with device "
            "type 'cpu" + same)):
        x.grad = rt.ones(3, device="cuda")
    with pytest.raises(RuntimeError, match=re.escape(
            "attempting to assign a gradient located on device with index '1' to a tensor "
            "located on device with index '0" + same)):
        rt.ones(3, device="cuda:0").grad = rt.ones(3, device="cuda:1")
    c = rt.ones(3, device="cuda")
    c.grad = rt.zeros(3, device="cuda")
    assert c.grad.device == "cuda:0"


def test_data_setter_errors(lib: Any) -> None:
    x = lib.ones(3, requires_grad=True)
    with pytest.raises(TypeError, match="^Variable data has to be a tensor, but got int$"):
        x.data = 5
    with pytest.raises(RuntimeError, match="^data set to a tensor that requires gradients must "
                       "be floating point or complex dtype$"):
        x.data = lib.zeros(3, dtype=lib.int64)
    x.data = lib.zeros(2, 2)  # any shape, as long as the dtype can require grad
    assert x.shape == (2, 2) and x.requires_grad and x.sum().item() == 0.0
    n = lib.ones(3)
    n.data = lib.zeros(3, dtype=lib.int64)
    assert n.dtype == lib.int64


# --- signs: sign of NaN, signed zeros ----------------------------------------------------------
NAN = float("nan")


def test_sign_of_nan_and_zeros(lib: Any) -> None:
    for dt in (lib.float32, lib.float64, lib.float16):
        x = lib.tensor([NAN, -0.0, 0.0, -2.5, 3.0, float("inf"), -float("inf")], dtype=dt)
        for y in (lib.sign(x), x.sign(), x.sgn()):
            assert y.dtype == dt
            assert y.tolist() == [0.0, 0.0, 0.0, -1.0, 1.0, 1.0, -1.0]
            assert not lib.signbit(y[:3]).any()
    assert lib.sign(lib.tensor([3, -2, 0])).tolist() == [1, -1, 0]
    x = lib.tensor([NAN, -0.0, 2.0], dtype=lib.float64, requires_grad=True)
    lib.sign(x).sum().backward()
    assert x.grad.tolist() == [0.0, 0.0, 0.0]


def test_clamp_keeps_signed_zero(lib: Any) -> None:
    x = lib.tensor([-0.0, 0.0, -1.0, NAN, 2.0])
    signbits = {
        "clamp min": lib.clamp(x, min=0.0), "clamp_min": x.clamp_min(0),
        "clamp max": lib.clamp(x, max=-0.0), "clamp both": lib.clamp(x, min=0.0, max=0.0),
        "elu": lib.nn.functional.elu(x), "abs": lib.abs(x),
    }
    expect = {"clamp min": [True, False, False, False, False],
              "clamp_min": [True, False, False, False, False],
              "clamp max": [True, False, True, False, True],
              "clamp both": [True, False, False, False, False],
              "elu": [True, False, True, False, False], "abs": [False] * 5}
    assert {k: lib.signbit(v).tolist() for k, v in signbits.items()} == expect
    assert lib.clamp(x, min=0.0).isnan().tolist() == [False, False, False, True, False]
    y = x.clone()
    y.clamp_(min=0.0)
    assert lib.signbit(y).tolist() == expect["clamp min"]


def test_compiled_sign_of_nan() -> None:
    np = pytest.importorskip("numpy")
    import planner

    step = planner.compile(lambda x: rt.sign(x * 2.0) + 1.0)
    for k, expect in ((1.0, [1.0, 1.0, 1.0, 0.0, 2.0]), (-3.0, [1.0, 1.0, 1.0, 2.0, 0.0])):
        x = rt.tensor(np.array([NAN, -0.0, 0.0, -2.0, 3.0] * 4) * k)  # capture, then replay
        assert step(x).tolist() == expect * 4


def test_vector_norm_ord_zero_is_recorded(lib: Any) -> None:
    x = lib.tensor([[0.0, 2.0, float("inf")], [0.0, -0.0, NAN]], dtype=lib.float64,
                   requires_grad=True)
    y = lib.linalg.vector_norm(x, 0, dim=1)
    assert y.tolist() == [2.0, 1.0] and y.grad_fn is not None
    y.sum().backward()
    # PyTorch's gradient is undefined (None), the runtime's zeros: no value flows either way
    assert x.grad is None or x.grad.abs().sum().item() == 0.0
    z = lib.linalg.vector_norm(lib.zeros(2, 3, requires_grad=True), 0)
    assert z.item() == 0.0 and not lib.signbit(z) and z.requires_grad


# --- backward() and friends -------------------------------------------------------------------
def test_detach_inplace_of_view_error(lib: Any) -> None:
    x = lib.ones(3, requires_grad=True)
    for view in (x[1:], x.view(3), lib.ones(3)[1:]):
        with pytest.raises(RuntimeError, match=r"^Can't detach views in-place. Use detach\(\) "
                           r"instead. If you are using DistributedDataParallel \(DDP\) for "
                           r"training, and gradient_as_bucket_view is set as True"):
            view.detach_()
    y = x * 2
    assert y.detach_() is y and not y.requires_grad and y.grad_fn is None and y.is_leaf


def test_backward_create_graph_warns_once(monkeypatch: pytest.MonkeyPatch) -> None:
    import runtime.autograd.api as api

    monkeypatch.setattr(api, "_create_graph_warned", False)
    x = rt.ones(3, requires_grad=True)
    with pytest.warns(UserWarning, match=r"^Using backward\(\) with create_graph=True will "
                      "create a reference cycle between the parameter and its gradient"):
        (x * x).sum().backward(create_graph=True)
    assert x.grad.requires_grad and x.grad.tolist() == [2.0, 2.0, 2.0]
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # once a process, as PyTorch's TORCH_WARN_ONCE
        (x * x).sum().backward(create_graph=True)
        rt.autograd.grad((x * x).sum(), x, create_graph=True)  # grad() never warns


def test_gradcheck_warns_of_single_precision_inputs(lib: Any) -> None:
    x = lib.tensor([0.5, 1.5], requires_grad=True)
    with pytest.warns(UserWarning, match=re.escape(
            "Input #1 requires gradient and is not a double precision floating point or "
            "complex. This check will likely fail if all the inputs are not of double precision "
            "floating point or complex.")):
        lib.autograd.gradcheck(lambda k, t: t * k, (3.0, x), raise_exception=False)
    with pytest.raises(ValueError, match="^gradcheck expects at least one input tensor to "
                       "require gradient, but none of them have requires_grad=True.$"):
        lib.autograd.gradcheck(lambda t: t * 2, (x.detach().double(),))
