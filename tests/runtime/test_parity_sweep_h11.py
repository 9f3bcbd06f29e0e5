"""Autograd engine and API sweep against PyTorch 2.13 (h11): custom Functions' outputs that are
views (PyTorch's creation metas), inputs marked dirty that are views, the node's attributes."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")

LIBS = [rt, torch]

CUSTOM = ("This view was created inside a custom Function (or because an input was returned "
          "as-is) and the autograd logic to handle view+inplace would override the custom "
          "backward associated with the custom Function, leading to incorrect gradients. This "
          "behavior is forbidden. You can fix this by cloning the output of the custom Function.")
MULTI = ("This view is the output of a function that returns multiple views. Such functions do "
         "not allow the output views to be modified inplace. You should replace the inplace "
         "operation by an out-of-place one.")


def _text(e: BaseException) -> str:
    return str(e).replace("torch.", "runtime.")


def _flat_view(lib: Any) -> Any:
    class F(lib.autograd.Function):
        @staticmethod
        def forward(ctx: Any, a: Any) -> Any:
            return a.view(-1)

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            return g.view(2, 2) * 2

    return F


def _identity(lib: Any) -> Any:
    class Id(lib.autograd.Function):
        @staticmethod
        def forward(ctx: Any, a: Any) -> Any:
            return a

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            return g * 2

    return Id


def _scale_in_place(lib: Any, n_out: int = 1) -> Any:
    class Dirty(lib.autograd.Function):
        @staticmethod
        def forward(ctx: Any, a: Any) -> Any:
            a.mul_(2)
            ctx.mark_dirty(a)
            return a if n_out == 1 else (a, a * 3)

        @staticmethod
        def backward(ctx: Any, g: Any, *rest: Any) -> Any:
            return g * 2

    return Dirty


def _view_cases(lib: Any) -> dict[str, Any]:
    def x22() -> Any:
        return lib.ones(2, 2, requires_grad=True)

    def nonleaf() -> None:
        _flat_view(lib).apply(x22() * 1).mul_(2)

    def leaf() -> None:
        _flat_view(lib).apply(x22()).mul_(2)

    def setitem() -> None:
        _flat_view(lib).apply(x22() * 1)[0] = 3

    def view_of_view() -> None:
        _flat_view(lib).apply(x22() * 1)[1:].mul_(3)

    def as_is() -> None:
        _identity(lib).apply(x22() * 1).mul_(2)

    def as_is_leaf() -> None:
        _identity(lib).apply(x22()).mul_(2)

    def no_input_requires_grad() -> None:  # the view exists; writing it with grad is refused
        _flat_view(lib).apply(lib.ones(2, 2)).mul_(lib.ones(4, requires_grad=True))

    def base_written_then_backward() -> None:
        y = x22() * 1
        z = _flat_view(lib).apply(y)
        y.mul_(2)
        z.sum().backward()

    def written_under_no_grad() -> None:
        z = _flat_view(lib).apply(x22() * 1)
        with lib.no_grad():
            z.mul_(2)
        z.sum().backward()

    def two_outputs() -> None:
        class F(lib.autograd.Function):
            @staticmethod
            def forward(ctx: Any, a: Any) -> Any:
                return a[0], a * 2

            @staticmethod
            def backward(ctx: Any, g: Any, h: Any) -> Any:
                return h * 2

        z, w = F.apply(x22() * 1)
        w.mul_(2)  # not a view: fine
        z.mul_(2)

    return {k: v for k, v in locals().items() if callable(v) and k != "x22"}


VIEW_EXPECTED = {
    "nonleaf": f"Output 0 of F is a view and is being modified inplace. {CUSTOM}",
    "leaf": f"Output 0 of F is a view and is being modified inplace. {CUSTOM}",
    "setitem": f"Output 0 of Select is a view and is being modified inplace. {CUSTOM}",
    "view_of_view": f"Output 0 of Slice is a view and is being modified inplace. {CUSTOM}",
    "as_is": f"Output 0 of Id is a view and is being modified inplace. {CUSTOM}",
    "as_is_leaf": f"Output 0 of Id is a view and is being modified inplace. {CUSTOM}",
    "no_input_requires_grad": ("A view was created in no_grad mode and is being modified inplace "
                               f"with grad mode enabled. {CUSTOM}"),
    "base_written_then_backward": ("Output 0 of F is a view and its base or another view of its "
                                   f"base has been modified inplace. {CUSTOM}"),
    "written_under_no_grad": ("Output 0 of F is a view and its base or another view of its base "
                              f"has been modified inplace. {CUSTOM}"),
    "two_outputs": f"Output 0 of F is a view and is being modified inplace. {MULTI}",
}


@pytest.mark.parametrize("lib", LIBS, ids=["rt", "torch"])
@pytest.mark.parametrize("case", sorted(VIEW_EXPECTED))
def test_custom_function_view_outputs_refuse_in_place_writes(lib: Any, case: str) -> None:
    with pytest.raises(RuntimeError) as ei:
        _view_cases(lib)[case]()
    assert _text(ei.value) == VIEW_EXPECTED[case]


@pytest.mark.parametrize("lib", LIBS, ids=["rt", "torch"])
def test_custom_function_returns_a_fresh_alias_of_an_input(lib: Any) -> None:
    x = lib.ones(2, requires_grad=True)
    y = _identity(lib).apply(x)
    assert y is not x and y._base is x and y.grad_fn is not None
    with lib.no_grad():
        z = _identity(lib).apply(x)
    assert z is not x and not z.requires_grad
    b = lib.ones(2)
    c = _identity(lib).apply(b)
    assert c is not b and c._base is b
    c.mul_(2)  # nothing requires grad: a plain write through the alias
    assert b.tolist() == [2.0, 2.0]


@pytest.mark.parametrize("lib", LIBS, ids=["rt", "torch"])
def test_custom_function_dirty_view_input_rebases_its_base(lib: Any) -> None:
    x = lib.ones(2, 2, requires_grad=True)
    a = x.clone()
    v = a[0]
    b = _scale_in_place(lib).apply(v)
    assert b is v and b.grad_fn.name() == "AsStridedBackward0"
    assert "CopySlices" in a.grad_fn.name()
    b.mul_(3)
    a.sum().backward()
    np.testing.assert_array_equal(np.asarray(x.grad.tolist()), [[6.0, 6.0], [1.0, 1.0]])


@pytest.mark.parametrize("lib", LIBS, ids=["rt", "torch"])
def test_custom_function_dirty_input_errors_and_warning(lib: Any) -> None:
    x = lib.ones(2, 2, requires_grad=True)
    with pytest.raises(RuntimeError) as ei:
        _scale_in_place(lib, n_out=2).apply(x.clone()[0])
    assert str(ei.value).startswith("If your Function modifies inplace an input that is a view "
                                    "of another Tensor, your Function cannot return more than "
                                    "one Tensor. This is not supported by the current autograd "
                                    "engine.")
    with pytest.raises(RuntimeError, match="^a view of a leaf Variable that requires grad is "
                                           "being used in an in-place operation.$"):
        _scale_in_place(lib).apply(x[0])

    class NotInput(lib.autograd.Function):
        @staticmethod
        def forward(ctx: Any, a: Any) -> Any:
            b = a * 2
            b.add_(1)
            ctx.mark_dirty(b)
            return b

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            return g * 2

    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        NotInput.apply(lib.ones(2, requires_grad=True)).sum().backward()
    assert any(str(m.message).startswith("ctx.mark_dirty() received a tensor that was not an "
                                         "input. Only input Tensors that have been mutated "
                                         "should be passed to ctx.mark_dirty().") for m in w)


@pytest.mark.parametrize("lib", LIBS, ids=["rt", "torch"])
def test_custom_function_dirty_input_version_hooks_and_retained_grad(lib: Any) -> None:
    a = lib.ones(2)
    v0 = a._version
    assert _scale_in_place(lib).apply(a) is a and a._version - v0 == 2  # the write and the mark

    x = lib.ones(2, requires_grad=True)
    a = x.clone()
    with lib.no_grad():
        b = _scale_in_place(lib).apply(a)
    assert b is not a and not b.requires_grad and a.grad_fn.name() == "CloneBackward0"

    seen: list[Any] = []
    x = lib.ones(2, requires_grad=True)
    a = x.clone()
    a.register_hook(lambda g: seen.append(g.tolist()))
    a.retain_grad()
    _scale_in_place(lib).apply(a).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0] and seen == [[2.0, 2.0]]
    assert a.grad.tolist() == [1.0, 1.0]  # the gradient of its new value


@pytest.mark.parametrize("lib", LIBS, ids=["rt", "torch"])
def test_custom_function_node_attributes_and_vmap_defaults(lib: Any) -> None:
    class F(lib.autograd.Function):
        @staticmethod
        def forward(ctx: Any, a: Any, b: Any, k: float) -> Any:
            ctx.save_for_backward(a)
            return a * b * k

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            return g, None, None

    x = lib.ones(2, requires_grad=True)
    y = F.apply(x, lib.ones(2), 3.0)
    assert y.grad_fn.needs_input_grad == (True, False, False)
    assert [t is x for t in y.grad_fn.saved_tensors] == [True]
    assert F.generate_vmap_rule is False
    with pytest.raises(NotImplementedError, match="^To use autograd.Function with vmap, you must "
                                                  "either override the vmap staticmethod or set "
                                                  "generate_vmap_rule=True.$"):
        F.vmap(None, None)


# --- node hooks' results, post-accumulate hooks' results ------------------------------------
def _hooked(lib: Any, which: str, result: Any) -> Any:
    x = lib.ones(2, requires_grad=True)
    y = x * 2

    def hook(*args: Any) -> Any:
        return result(*args)

    if which == "pre":
        y.grad_fn.register_prehook(hook)
    else:
        y.grad_fn.register_hook(hook)
    y.sum().backward()
    return x.grad


HOOK_CASES = {  # (pre or post hook of MulBackward0, its result, the error)
    "pre_list": ("pre", lambda go: [go[0] * 2], TypeError,
                 "expected tuple, but hook returned 'list'"),
    "pre_count": ("pre", lambda go: (go[0], go[0]), RuntimeError,
                  "hook 'hook' has returned an incorrect number of values (got 2, but expected "
                  "1)"),
    "pre_int": ("pre", lambda go: (3,), TypeError, "expected Variable, but hook returned 'int'"),
    "pre_size": ("pre", lambda go: (go[0][:1],), RuntimeError,
                 "hook 'hook' has changed the size of value"),
    "pre_dtype": ("pre", lambda go: (go[0].double(),), RuntimeError,
                  "hook 'hook' has changed the type of value (was runtime.FloatTensor got "
                  "runtime.DoubleTensor)"),
    "post_list": ("post", lambda gi, go: [gi[0] * 2, None], TypeError,
                  "expected tuple, but hook returned 'list'"),
    "post_count": ("post", lambda gi, go: (gi[0] * 2,), RuntimeError,
                   "hook 'hook' has returned an incorrect number of values (got 1, but expected "
                   "2)"),
    "post_none_replaced": ("post", lambda gi, go: (gi[0], gi[0]), RuntimeError,
                           "can't replace a None gradient with a non-None value"),
    "post_int": ("post", lambda gi, go: (3, None), TypeError,
                 "expected Variable, but hook returned 'int'"),
    "post_size": ("post", lambda gi, go: (gi[0][:1], None), RuntimeError,
                  "hook 'hook' has changed the size of value"),
    "post_dtype": ("post", lambda gi, go: (gi[0].double(), None), RuntimeError,
                   "hook 'hook' has changed the type of value (was runtime.FloatTensor got "
                   "runtime.DoubleTensor)"),
}


@pytest.mark.parametrize("lib", LIBS, ids=["rt", "torch"])
@pytest.mark.parametrize("case", sorted(HOOK_CASES))
def test_node_hook_results_are_checked(lib: Any, case: str) -> None:
    which, result, err, text = HOOK_CASES[case]
    with pytest.raises(err) as ei:
        _hooked(lib, which, result)
    assert _text(ei.value) == text


@pytest.mark.parametrize("lib", LIBS, ids=["rt", "torch"])
def test_post_accumulate_grad_hook_must_return_none(lib: Any) -> None:
    for result, err, text in ((lambda t: t * 2, RuntimeError,
                               "Tensor post accumulate grad hooks should return None."),
                              (lambda t: 0, TypeError,
                               "expected Variable, but hook returned 'int'")):
        x = lib.ones(2, requires_grad=True)
        x.register_post_accumulate_grad_hook(result)
        with pytest.raises(err) as ei:
            (x * 2).sum().backward()
        assert str(ei.value) == text


# --- grad modes -------------------------------------------------------------------------------
@pytest.mark.parametrize("lib", LIBS, ids=["rt", "torch"])
def test_set_grad_enabled_takes_a_bool_and_keeps_mode_and_prev(lib: Any) -> None:
    for bad, name in ((1, "int"), (None, "NoneType"), (1.0, "float"), (lib.tensor(True),
                                                                      "Tensor")):
        with pytest.raises(TypeError) as ei:
            lib.set_grad_enabled(bad)
        assert str(ei.value) == ("set_grad_enabled(): argument 'enabled' (position 1) must be "
                                 f"bool, not {name}")
        assert lib.is_grad_enabled()
    ctx = lib.set_grad_enabled(False)
    try:
        assert (ctx.mode, ctx.prev, lib.is_grad_enabled()) == (False, True, False)
        assert ctx.clone().mode is False
    finally:
        lib.set_grad_enabled(True)


# --- gradcheck / gradgradcheck ----------------------------------------------------------------
def _d(lib: Any, n: int = 3, seed: int = 0) -> Any:
    return lib.tensor(np.random.RandomState(seed).randn(n), dtype=lib.float64,
                      requires_grad=True)


def _custom(lib: Any, backward: Any, materialize: bool = True, n_out: int = 1) -> Any:
    class F(lib.autograd.Function):
        @staticmethod
        def forward(ctx: Any, a: Any) -> Any:
            ctx.set_materialize_grads(materialize)
            ctx.save_for_backward(a)
            return a * 2 if n_out == 1 else (a * 2, a * 3)

        @staticmethod
        def backward(ctx: Any, *grads: Any) -> Any:
            return backward(lib, ctx.saved_tensors[0], *grads)

    return F


@pytest.mark.parametrize("lib", LIBS, ids=["rt", "torch"])
def test_gradcheck_mismatch_text_prints_tensors(lib: Any) -> None:
    f = _custom(lib, lambda lib, a, g: g * 3).apply
    with pytest.raises(RuntimeError) as ei:  # (a GradcheckError)
        lib.autograd.gradcheck(f, (lib.tensor([1.0, 2.0], dtype=lib.float64,
                                               requires_grad=True),))
    assert _text(ei.value) == (
        "Jacobian mismatch for output 0 with respect to input 0,\n"
        "numerical:tensor([[2.0000, 0.0000],\n        [0.0000, 2.0000]], dtype=runtime.float64)\n"
        "analytical:tensor([[3., 0.],\n        [0., 3.]], dtype=runtime.float64)\n")


@pytest.mark.parametrize("lib", LIBS, ids=["rt", "torch"])
def test_gradcheck_outputs_that_do_not_require_grad(lib: Any) -> None:
    gc = lib.autograd.gradcheck
    assert gc(lambda a: (a * 2, a.detach() * 3), (_d(lib),))  # only differentiable ones count
    assert gc(lambda a: (a > 0).double(), (_d(lib),))
    with pytest.raises(RuntimeError, match="^Numerical gradient for function "
                                                          "expected to be zero$"):
        gc(lambda a: a.detach() * 2, (_d(lib),))
    assert lib.autograd.gradgradcheck(lambda a, b: ((a * b).sin(), a.detach()),
                                      (_d(lib), _d(lib, seed=1)))


@pytest.mark.parametrize("lib", LIBS, ids=["rt", "torch"])
def test_gradcheck_reentrancy_and_nondet_tol(lib: Any) -> None:
    calls = [0]

    def drifting(lib: Any, a: Any, g: Any) -> Any:
        calls[0] += 1
        return g * 2 * (1 + 1e-9 * calls[0])

    f = _custom(lib, drifting).apply
    assert lib.autograd.gradcheck(f, (_d(lib),), raise_exception=False) is False
    with pytest.raises(RuntimeError) as ei:
        lib.autograd.gradcheck(f, (_d(lib),))
    assert str(ei.value).startswith(
        "Backward is not reentrant, i.e., running backward with same input and grad_output "
        "multiple times gives different values, although analytical gradient matches numerical "
        "gradient.The tolerance for nondeterminism was 0.0.\n\nNOTE: If your op relies on "
        "non-deterministic operations")
    assert lib.autograd.gradcheck(f, (_d(lib),), nondet_tol=1e-6)


@pytest.mark.parametrize("lib", LIBS, ids=["rt", "torch"])
def test_gradcheck_undefined_and_zero_grad_outputs(lib: Any) -> None:
    gc = lib.autograd.gradcheck
    ones_if_undefined = _custom(lib, lambda lib, a, g: g * 2 if g is not None else
                                lib.ones_like(a), materialize=False).apply
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(RuntimeError, match="^Expected all input grads to be "
                                                              "undefined or zero when all output "
                                                              "grads are undefined or zero"):
            gc(ones_if_undefined, (_d(lib),))
    assert gc(ones_if_undefined, (_d(lib),), check_undefined_grad=False)
    both = _custom(lib, lambda lib, a, g, h: None if g is None and h is None else
                   (0 if g is None else g * 2) + (0 if h is None else h * 3),
                   materialize=False, n_out=2).apply
    assert gc(both, (_d(lib),))
    not_scaled = _custom(lib, lambda lib, a, g: g * 2 + (g == 0).all().double()).apply
    with pytest.raises(RuntimeError, match="^backward not multiplied by "
                                                          "grad_output$"):
        gc(not_scaled, (_d(lib),), check_undefined_grad=False)


@pytest.mark.parametrize("lib", LIBS, ids=["rt", "torch"])
def test_gradcheck_options_are_checked(lib: Any) -> None:
    f = lambda a: a * 2  # noqa: E731
    with pytest.raises(TypeError, match="unexpected keyword argument 'atoll'"):
        lib.autograd.gradcheck(f, (_d(lib),), atoll=1)
    with pytest.raises(AssertionError, match="^Expected at least one of check_forward_ad or "
                                             "check_backward_ad to be True$"):
        lib.autograd.gradcheck(f, (_d(lib),), check_backward_ad=False)
    with pytest.raises(AssertionError, match="^Expected at least one of check_fwd_over_rev or "
                                             "check_rev_over_rev to be True$"):
        lib.autograd.gradgradcheck(f, (_d(lib),), check_rev_over_rev=False)
    with pytest.raises(AssertionError, match="^Setting check_undefined_grad=True requires "
                                             "check_rev_over_rev to be True$"):
        lib.autograd.gradgradcheck(f, (_d(lib),), check_rev_over_rev=False,
                                   check_fwd_over_rev=True)


# --- grad_outputs checks: batched grads, gradient edges -----------------------------------------
@pytest.mark.parametrize("lib", LIBS, ids=["rt", "torch"])
def test_batched_grad_output_errors(lib: Any) -> None:
    x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * x
    with pytest.raises(RuntimeError) as ei:
        lib.autograd.grad(y, x, lib.ones(2, 3, 4), is_grads_batched=True)
    assert _text(ei.value) == (
        "If `is_grads_batched=True`, we interpret the first dimension of each grad_output as the "
        "batch dimension. The sizes of the remaining dimensions are expected to match the shape "
        "of corresponding output, but a mismatch was detected: grad_output[0] has a shape of "
        "runtime.Size([4]) and output[0] has a shape of runtime.Size([3]). If you only want some "
        "tensors in `grad_output` to be considered batched, consider using vmap.")
    with pytest.raises(IndexError, match="^invalid index of a 0-dim tensor"):
        lib.autograd.grad(y.sum(), x, lib.tensor(1.0), is_grads_batched=True)


@pytest.mark.parametrize("lib", LIBS, ids=["rt", "torch"])
def test_gradient_edge_outputs_make_and_check_their_grads(lib: Any) -> None:
    edge_of = lib.autograd.graph.get_gradient_edge
    x = lib.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (g,) = lib.autograd.grad(edge_of((x * x).sum()), x)  # a scalar edge: ones, as a tensor's
    assert g.tolist() == [2.0, 4.0, 6.0]
    with pytest.raises(RuntimeError, match="^grad can be implicitly created only for scalar "
                                           "outputs$"):
        lib.autograd.grad(edge_of(x * x), x)
    with pytest.raises(RuntimeError) as ei:
        lib.autograd.grad(edge_of(x * x), x, lib.ones(2))
    assert _text(ei.value) == ("Mismatch in shape: grad_output[0] has a shape of "
                               "runtime.Size([2]) and output[0] has a shape of "
                               "runtime.Size([3]).")


# --- reentrant checkpoint inside a partial backward -------------------------------------------
@pytest.mark.parametrize("lib", LIBS, ids=["rt", "torch"])
def test_reentrant_checkpoint_refuses_grad_and_backward_inputs(lib: Any) -> None:
    from importlib import import_module

    checkpoint = import_module(lib.__name__ + ".utils.checkpoint").checkpoint
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    w = lib.tensor([3.0, 4.0], requires_grad=True)
    text = ("When use_reentrant=True, torch.utils.checkpoint is incompatible with .grad() or "
            "passing an `inputs` parameter to .backward(). To resolve this error, you can either "
            "set use_reentrant=False, or call .backward() without passing the `inputs` "
            "argument.")
    for run in (lambda y: lib.autograd.grad(y, x), lambda y: y.backward(inputs=[x])):
        y = checkpoint(lambda a: (a * w).exp(), x, use_reentrant=True).sum()
        with pytest.raises(RuntimeError) as ei:
            run(y)
        assert str(ei.value).split("\n")[0] == text
    assert w.grad is None
    seen: list[bool] = []
    y = x * 2
    y.register_hook(lambda g: seen.append(lib.autograd._is_checkpoint_valid()))
    y.sum().backward()
    y = x * 2
    y.register_hook(lambda g: seen.append(lib.autograd._is_checkpoint_valid()))
    lib.autograd.grad(y.sum(), x)
    assert seen == [True, False] and lib.autograd._is_checkpoint_valid()
    y = checkpoint(lambda a: (a * w).exp(), x, use_reentrant=True).sum()
    y.backward()  # a full backward: fine
    np.testing.assert_allclose(np.asarray(w.grad.tolist()), [np.exp(3.0), 2 * np.exp(8.0)],
                               rtol=1e-5)


# --- accumulating into a .grad the user set to an expand() --------------------------------------
@pytest.mark.parametrize("lib", LIBS, ids=["rt", "torch"])
def test_accumulating_into_an_expanded_grad(lib: Any) -> None:
    x = lib.ones(3, requires_grad=True)
    x.grad = lib.ones(1).expand(3)
    with pytest.raises(RuntimeError, match="^unsupported operation: more than one element of the "
                                           "written-to tensor refers to a single memory "
                                           "location. Please clone"):
        (x * 2).sum().backward()
    base = lib.ones(3, 1)
    x = lib.ones(3, 1, requires_grad=True)
    x.grad = base.expand(3, 1)  # an expand() that shares no element: written in place
    (x * 2).sum().backward()
    assert base.flatten().tolist() == [3.0, 3.0, 3.0]


# --- anomaly mode's arguments -------------------------------------------------------------------
@pytest.mark.parametrize("lib", LIBS, ids=["rt", "torch"])
def test_anomaly_mode_takes_bools_only(lib: Any) -> None:
    for args, text in (((1,), "argument 'enabled' (position 1) must be bool, not int"),
                       ((None,), "argument 'enabled' (position 1) must be bool, not NoneType"),
                       ((True, 1), "argument 'check_nan' (position 2) must be bool, not int")):
        with pytest.raises(TypeError) as ei:
            lib.autograd.set_detect_anomaly(*args)
        assert str(ei.value) == f"set_anomaly_enabled(): {text}"
        assert not lib.is_anomaly_enabled()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ctx = lib.autograd.detect_anomaly(check_nan=0)
    with pytest.raises(TypeError, match=r"^set_anomaly_enabled\(\): argument 'check_nan' "
                                        r"\(position 2\) must be bool, not int$"):
        with ctx:
            pass
    assert not lib.is_anomaly_enabled()


# --- calling a node; what grad/backward take as outputs and inputs -----------------------------
@pytest.mark.parametrize("lib", LIBS, ids=["rt", "torch"])
def test_a_node_is_callable(lib: Any) -> None:
    x = lib.ones(2, requires_grad=True)
    y = x * x
    a, b = y.grad_fn(lib.ones(2))
    assert a.tolist() == [1.0, 1.0] and b.tolist() == [1.0, 1.0]
    r = (x * 2).grad_fn(lib.tensor([1.0, 3.0]))
    assert r[0].tolist() == [2.0, 6.0] and r[1] is None  # the scalar operand's slot
    assert y.grad_fn(None) == (None, None)
    s = (x * 1).sum().grad_fn(lib.tensor(1.0))  # one output: the tensor itself
    assert s.tolist() == [1.0, 1.0]
    for args, err, text in (((lib.ones(2), lib.ones(2)), TypeError,
                             "expected 1 arguments, got 2 instead"),
                            ((), TypeError, "expected 1 arguments, got 0 instead"),
                            ((3,), TypeError, "argument 0 is not a Variable")):
        with pytest.raises(err) as ei:
            y.grad_fn(*args)
        assert str(ei.value) == text
    acc = y.grad_fn.next_functions[0][0]
    assert acc(lib.ones(2)) == () and x.grad.tolist() == [1.0, 1.0]


@pytest.mark.parametrize("lib", LIBS, ids=["rt", "torch"])
def test_grad_and_backward_refuse_non_tensor_outputs_and_inputs(lib: Any) -> None:
    x = lib.ones(2, requires_grad=True)
    for call in (lambda: lib.autograd.grad((x * x).sum(), [x, 3]),
                 lambda: (x * 2).sum().backward(inputs=[x, 3])):
        with pytest.raises(RuntimeError, match="^all inputs have to be Tensors or GradientEdges, "
                                               "but got int$"):
            call()
    for call in (lambda: lib.autograd.grad([(x * x).sum(), 3], [x]),
                 lambda: lib.autograd.backward([(x * 2).sum(), 3])):
        with pytest.raises(AssertionError) as ei:
            call()
        assert _text(ei.value) == "Expected output to be a runtime.Tensor"


# --- ctx during forward ---------------------------------------------------------------------
@pytest.mark.parametrize("lib", LIBS, ids=["rt", "torch"])
def test_ctx_saved_tensors_empty_until_forward_returns_and_save_for_forward(lib: Any) -> None:
    seen: list[int] = []

    class F(lib.autograd.Function):
        @staticmethod
        def forward(ctx: Any, a: Any) -> Any:
            ctx.save_for_backward(a)
            seen.append(len(ctx.saved_tensors))
            ctx.save_for_forward(a, None)
            seen.append(len(ctx.saved_tensors))  # now what save_for_forward kept
            return a * 2

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            return g * ctx.saved_tensors[0]

    x = lib.ones(2, requires_grad=True)
    y = F.apply(x)
    assert seen == [0, 2] and len(y.grad_fn.saved_tensors) == 1
    assert repr(y.grad_fn).startswith(f"<{lib.__name__}.autograd.function.FBackward object at ")

    class G(lib.autograd.Function):
        @staticmethod
        def forward(ctx: Any, a: Any) -> Any:
            ctx.save_for_forward(a, 3)
            return a * 2

        @staticmethod
        def backward(ctx: Any, g: Any) -> Any:
            return g

    with pytest.raises(AssertionError, match="^save_for_forward expects all arguments to be "
                                             "tensors; you should save non-tensors as "
                                             "attributes on ctx.$"):
        G.apply(x)


# --- checkpoint's own options ---------------------------------------------------------------------
@pytest.mark.parametrize("lib", LIBS, ids=["rt", "torch"])
def test_checkpoint_takes_its_options_and_does_not_pass_them_on(lib: Any) -> None:
    import contextlib
    from importlib import import_module

    ck = import_module(lib.__name__ + ".utils.checkpoint")
    x = lib.tensor([1.0, 2.0], requires_grad=True)
    for kw in ({"context_fn": ck.noop_context_fn}, {"determinism_check": "none"},
               {"debug": False}, {"early_stop": False}):
        y = ck.checkpoint(lambda a: a.exp() * 2, x, use_reentrant=False, **kw)
        (g,) = lib.autograd.grad(y.sum(), x)
        np.testing.assert_allclose(np.asarray(g.tolist()), 2 * np.exp([1.0, 2.0]), rtol=1e-6)
    for kw in ({"context_fn": lambda: (None, None)}, {"debug": True}):
        with pytest.raises(ValueError, match="^Passing `context_fn` or `debug` is only supported "
                                             "when use_reentrant=False.$"):
            ck.checkpoint(lambda a: a * 2, x, use_reentrant=True, **kw)
    with pytest.raises(ValueError, match=r"^determinism_check should be one of \['default', "
                                         r"'none'\], but got foo$"):
        ck.checkpoint(lambda a: a * 2, x, use_reentrant=False, determinism_check="foo")
    entered: list[str] = []

    @contextlib.contextmanager
    def mark(name: str) -> Any:
        entered.append(name)
        yield

    y = ck.checkpoint(lambda a: a.exp(), x, use_reentrant=False,
                      context_fn=lambda: (mark("forward"), mark("recompute")))
    assert entered == ["forward"]
    y.sum().backward()
    assert entered == ["forward", "recompute"]


# --- allow_mutation_on_saved_tensors ------------------------------------------------------------
@pytest.mark.parametrize("lib", LIBS, ids=["rt", "torch"])
def test_allow_mutation_on_saved_tensors(lib: Any) -> None:
    graph = lib.autograd.graph
    with graph.allow_mutation_on_saved_tensors():
        a = lib.ones(2, 3, requires_grad=True)
        b = a.clone()
        out = (b ** 2).sum()
        b.sin_()  # b was saved by pow: its old value is used
        out.backward()
        assert a.grad.tolist() == [[2.0] * 3] * 2
        x = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
        y = x * 1
        (g,) = lib.autograd.grad(y.pow(3).sum(), x, create_graph=True)
        y.zero_()
        (gg,) = lib.autograd.grad(g.sum(), x)
        assert g.tolist() == [3.0, 12.0] and gg.tolist() == [6.0, 12.0]
        c = lib.ones(2, requires_grad=True).clone()
        kept = (c ** 2).sum()
    with pytest.raises(AssertionError) as ei:
        kept.backward()
    assert str(ei.value) == ("Trying to backward outside of the 'allow_mutation_on_saved_tensors' "
                             "contextin which the graph was originally recorded.")
    with pytest.raises(RuntimeError, match="^allow_mutation_on_saved_tensors contexts cannot be "
                                           "nested$"):
        with graph.allow_mutation_on_saved_tensors():
            with graph.allow_mutation_on_saved_tensors():
                pass


@pytest.mark.parametrize("lib", LIBS, ids=["rt", "torch"])
def test_gradient_edges_as_inputs(lib: Any) -> None:
    edge_of = lib.autograd.graph.get_gradient_edge
    x = lib.ones(2, requires_grad=True)
    y = x * 3
    (y * y).sum().backward(inputs=[edge_of(x)])  # a leaf's edge: its .grad accumulates
    assert x.grad.tolist() == [18.0, 18.0]
    x.grad = None
    y = x * 3
    (y * y).sum().backward(inputs=[edge_of(y)])  # a non-leaf's: nothing is kept
    assert x.grad is None
    with pytest.raises(RuntimeError, match="^materialize_grads cannot be used when the given "
                                           "input is a GradientEdge$"):
        lib.autograd.grad((y * y).sum(), [edge_of(x * 4)], materialize_grads=True)


# --- the gradient layout contract ---------------------------------------------------------------
@pytest.mark.parametrize("lib", LIBS, ids=["rt", "torch"])
def test_leaf_grad_follows_the_parameters_layout(lib: Any) -> None:
    x = lib.ones(3, 2).t().requires_grad_()  # a transposed (dense) leaf
    (x * lib.arange(6.0).reshape(2, 3)).sum().backward()
    assert x.grad.stride() == x.stride() == (1, 2)
    assert x.grad.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    y = lib.ones(2, 3, requires_grad=True)
    g = lib.arange(6.0).reshape(3, 2).t().requires_grad_()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        (y * 1).backward(g, create_graph=True)  # copied into y's layout, the copy recorded
    assert y.grad.stride() == (3, 1)
    assert y.grad.grad_fn.name().endswith("CopyBackwards")
    assert y.grad.tolist() == [[0.0, 2.0, 4.0], [1.0, 3.0, 5.0]]


def test_gradcheck_options_this_runtime_cannot_run_raise() -> None:
    """check_forward_ad and check_batched_grad are refused loudly (no forward-mode AD, no
    backward under vmap here), never accepted and ignored; check_grad_dtypes runs."""
    x = rt.randn(3, dtype=rt.float64, requires_grad=True)
    for option in ("check_forward_ad", "check_batched_grad", "check_batched_forward_grad"):
        extra = {"check_forward_ad": True} if option == "check_batched_forward_grad" else {}
        with pytest.raises(NotImplementedError, match="gradcheck: check_"):
            rt.autograd.gradcheck(lambda t: t.sin(), (x,), **{option: True}, **extra)
    with pytest.raises(NotImplementedError, match="forward-mode AD"):
        rt.autograd.gradgradcheck(lambda t: t.sin(), (x,), check_fwd_over_rev=True)
    assert rt.autograd.gradcheck(lambda t: t.sin(), (x,), check_grad_dtypes=True)
