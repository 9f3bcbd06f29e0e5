"""Engine semantics as torch 2.13: anomaly mode, saved-tensor version errors, tensor-hook result
checks, custom Function argument handling, gradcheck's input check."""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

import runtime as rt


def npa(t):
    return t.detach().numpy()


# --- anomaly mode -------------------------------------------------------------------------------
def test_set_detect_anomaly_is_a_context_manager_with_check_nan():
    assert not rt.autograd.is_anomaly_enabled()
    with rt.autograd.set_detect_anomaly(True, check_nan=False):
        assert rt.autograd.is_anomaly_enabled()
        assert not rt.autograd.is_anomaly_check_nan_enabled()
    assert not rt.autograd.is_anomaly_enabled() and rt.autograd.is_anomaly_check_nan_enabled()


def test_detect_anomaly_warns_and_check_nan_false_lets_nan_through():
    x = rt.tensor([0.0, 1.0], requires_grad=True)
    with pytest.warns(UserWarning, match="^Anomaly Detection has been enabled"):
        ctx = rt.autograd.detect_anomaly(check_nan=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with ctx:
            (x.sqrt() * 0).sum().backward()
    assert np.isnan(npa(x.grad)[0])


def test_anomaly_error_in_backward_warns_with_the_forward_traceback():
    x = rt.tensor([0.0, 1.0], requires_grad=True)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with rt.autograd.detect_anomaly():
            y = (x.sqrt() * 0).sum()
            with pytest.raises(RuntimeError, match=r"^Function 'SqrtBackward0' returned nan values "
                               r"in its 0th output\."):
                y.backward()
    texts = [str(m.message) for m in w]
    assert any(t.startswith("Error detected in SqrtBackward0. Traceback of forward call that "
                            "caused the error:") and "x.sqrt()" in t for t in texts)


def test_detect_anomaly_decorates():
    with pytest.warns(UserWarning, match="^Anomaly Detection has been enabled"):
        @rt.autograd.detect_anomaly()
        def f():
            return rt.autograd.is_anomaly_enabled()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert f() and not rt.autograd.is_anomaly_enabled()


# --- saved tensors modified in place ----------------------------------------------------------
HINT = ("Hint: enable anomaly detection to find the operation that failed to compute its "
        "gradient, with runtime.autograd.set_detect_anomaly(True, check_nan=False).")


def test_version_error_names_the_op_and_omits_it_for_a_leaf():
    x = rt.tensor([1.0, 2.0], dtype=rt.float64, requires_grad=True)
    a = x.tanh()
    a.add_(1)  # tanh saved its output
    with pytest.raises(RuntimeError) as ei:
        a.sum().backward()
    assert str(ei.value) == (
        "one of the variables needed for gradient computation has been modified by an inplace "
        "operation: [runtime.DoubleTensor [2]], which is output 0 of Tanh, is at version 1; "
        f"expected version 0 instead. {HINT}")
    w = rt.tensor([1.0, 2.0], dtype=rt.float32)
    y = (rt.tensor([1.0, 2.0], requires_grad=True) * w).sum()
    w.add_(1)  # a leaf: no "which is output ..."
    with pytest.raises(RuntimeError, match=re.escape(
            "inplace operation: [runtime.FloatTensor [2]] is at version 1; expected version 0 "
            "instead. ")):
        y.backward()


def test_version_error_hint_under_anomaly_mode():
    x = rt.tensor([1.0, 2.0], requires_grad=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with rt.autograd.detect_anomaly():
            a = x.exp()
            a.mul_(2)
            with pytest.raises(RuntimeError, match=r"Hint: the backtrace further above shows the "
                               r"operation that failed to compute its gradient\. The variable in "
                               r"question was changed in there or anywhere later\. Good luck!"):
                a.sum().backward()


# --- tensor hooks -------------------------------------------------------------------------------
@pytest.mark.parametrize("leaf", [True, False])
def test_hook_results_are_checked(leaf):
    def run(hook):
        x = rt.tensor([1.0, 2.0], requires_grad=True)
        y = x if leaf else x * 3
        y.register_hook(hook)
        (y * 2).sum().backward()
        return x.grad

    def shrink(g):
        return g.sum()

    with pytest.raises(RuntimeError, match=r"^hook 'shrink' has changed the size of value"):
        run(shrink)
    with pytest.raises(RuntimeError, match=r"^hook '<lambda>' has changed the type of value \(was "
                       r"runtime.FloatTensor got runtime.DoubleTensor\)"):
        run(lambda g: g.double())
    with pytest.raises(TypeError, match=r"^expected Variable, but hook returned 'int'"):
        run(lambda g: 3)
    np.testing.assert_array_equal(npa(run(lambda g: g * 10)), [20.0, 20.0] if leaf else [60.0, 60.0])


# --- custom Functions ----------------------------------------------------------------------------
class Scale(rt.autograd.Function):
    @staticmethod
    def forward(ctx, x, k, y):
        ctx.save_for_backward(x)
        ctx.k = k
        return x * k * y

    @staticmethod
    def backward(ctx, g):
        return g * ctx.k, None, g


def test_function_edges_only_for_tensor_arguments():
    x = rt.tensor([1.0, 2.0], requires_grad=True)
    y = Scale.apply(x * 1, 2.0, rt.ones(2))
    fns = y.grad_fn.next_functions
    assert len(fns) == 2 and fns[0][0].name() == "MulBackward0" and fns[1] == (None, 0)
    assert y.grad_fn.saved_tensors[0].shape == (2,)
    y.sum().backward()
    np.testing.assert_array_equal(npa(x.grad), [2.0, 2.0])
    with pytest.raises(RuntimeError, match=re.escape(
            "Trying to backward through the graph a second time")):
        y.grad_fn.saved_tensors


def test_function_gradient_for_a_non_tensor_argument_is_refused():
    class Bad(rt.autograd.Function):
        @staticmethod
        def forward(ctx, x, k):
            return x * k

        @staticmethod
        def backward(ctx, g):
            return g, g

    x = rt.tensor([1.0], requires_grad=True)
    with pytest.raises(RuntimeError, match=r"^function BadBackward returned a gradient different "
                       r"than None at position 2, but the corresponding forward input was not a "
                       r"Variable"):
        Bad.apply(x, 2.0).sum().backward()


def test_gradcheck_needs_an_input_requiring_grad():
    with pytest.raises(ValueError, match=r"^gradcheck expects at least one input tensor to require "
                       r"gradient, but none of them have requires_grad=True\.$"):
        rt.autograd.gradcheck(lambda a: a.exp(), rt.tensor([1.0], dtype=rt.float64))


def test_semantics_match_torch():
    torch = pytest.importorskip("torch")

    def messages(lib):
        out = []
        for hook in (lambda g: g.sum(), lambda g: g.double()):
            x = lib.tensor([1.0, 2.0], requires_grad=True)
            x.register_hook(hook)
            try:
                (x * 2).sum().backward()
            except RuntimeError as e:
                out.append(str(e))
        x = lib.tensor([1.0, 2.0], dtype=lib.float64, requires_grad=True)
        a = x.sigmoid() if lib is torch else x.exp()  # both save their output
        a.mul_(2)
        try:
            a.sum().backward()
        except RuntimeError as e:
            out.append(re.sub(r"output 0 of \w+", "output 0 of OP", str(e)))
        return [m.replace("torch", "runtime") for m in out]

    assert messages(rt) == messages(torch)


# --- post-accumulate-grad hooks (the engine side of Tensor.register_post_accumulate_grad_hook) --
def test_post_accumulate_grad_hook_runs_after_each_accumulation():
    from runtime.autograd.node import register_post_accumulate_grad_hook

    x = rt.tensor([1.0, 2.0], requires_grad=True)
    seen = []
    handle = register_post_accumulate_grad_hook(x, lambda p: seen.append(npa(p.grad).tolist()))
    (x * 2).sum().backward()
    (x * 2).sum().backward()
    rt.autograd.grad((x * 2).sum(), x)  # grad() accumulates nothing: no call
    handle.remove()
    (x * 2).sum().backward()
    assert seen == [[2.0, 2.0], [4.0, 4.0]]
    np.testing.assert_array_equal(npa(x.grad), [6.0, 6.0])
    with pytest.raises(RuntimeError, match="^post accumulate grad hooks cannot be registered on "
                       "non-leaf tensors$"):
        register_post_accumulate_grad_hook(x * 2, print)
    with pytest.raises(RuntimeError, match="^cannot register a hook on a tensor that doesn't "
                       "require gradient$"):
        register_post_accumulate_grad_hook(rt.tensor([1.0]), print)


def test_function_vjp_name_legacy_call_and_ctx_checks():
    class Double(rt.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def vjp(ctx, g):
            return g * 2

    x = rt.tensor([1.0], requires_grad=True)
    Double.apply(x).sum().backward()
    np.testing.assert_array_equal(npa(x.grad), [2.0])
    with pytest.raises(RuntimeError, match="^Legacy autograd function with non-static forward"):
        Double()(x)

    class SavesInt(rt.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x, None, 3)
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(TypeError, match="^save_for_backward can only save variables, but argument "
                       "2 is of type int$"):
        SavesInt.apply(x)

    class DirtyNotReturned(rt.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            x.mul_(2)
            ctx.mark_dirty(x)
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return g

    with pytest.raises(RuntimeError, match="^Some elements marked as dirty during the forward "
                       "method were not returned as output"):
        DirtyNotReturned.apply(x.clone())


@pytest.mark.parametrize("make", [rt.no_grad, lambda: rt.set_grad_enabled(False),
                                  rt.inference_mode])
def test_grad_mode_decorates_generators_step_by_step(make):
    ctx = make()
    rt.set_grad_enabled(True)  # set_grad_enabled(False) switches it off at construction

    @ctx
    def gen():
        yield rt.is_grad_enabled()
        yield rt.is_grad_enabled()

    g = gen()
    assert next(g) is False
    assert rt.is_grad_enabled()  # the caller's code between steps runs outside
    assert next(g) is False
    with ctx.clone():
        assert not rt.is_grad_enabled()
    assert rt.is_grad_enabled()


def test_node_metadata_is_a_dict_kept_by_the_node():
    x = rt.tensor([1.0], requires_grad=True)
    y = x * 2
    y.grad_fn.metadata["tag"] = "scale"
    assert y.grad_fn.metadata == {"tag": "scale"}
    assert y.grad_fn.next_functions[0][0].metadata == {}


def test_anomaly_warning_without_forward_information():
    x = rt.tensor([0.0, 1.0], requires_grad=True)
    y = (x.sqrt() * 0).sum()  # recorded before anomaly mode
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        with rt.autograd.detect_anomaly(), pytest.raises(RuntimeError, match="returned nan"):
            y.backward()
    assert ("Error detected in SqrtBackward0. No forward pass information available. Enable "
            "detect anomaly during forward pass for more information.") in [str(m.message)
                                                                           for m in w]
