"""PyTorch's test/test_autograd.py (class TestAutograd and its helpers), ported to rt.

Ported mechanically: ``import runtime as torch``, ``self.assertX`` as plain asserts or the
helpers below, ``TestCase.assertEqual`` as ``assert_equal`` (values within the dtype's
tolerance, dtypes not compared, as PyTorch's assertEqual does by default); the tests use
float64 as their default dtype, as PyTorch's file does (the ``_double_default`` fixture).

Left out, as outside this project's scope: CUDA and multi-device tests, sparse tensors and
sparse gradients, complex numbers, forward-mode AD (dual numbers, ``fwAD``, jvp through
forward AD), functorch internals and vmap of custom Functions, torch.jit / TorchScript, the
profiler and ``record_function``, multiprocessing / fork / thread-shutdown tests, torch
dispatch modes (``TorchDispatchMode``, ``FlopCounterMode``), C++ extensions (``load_inline``),
linear-algebra gradchecks that test LAPACK kernels rather than autograd (slogdet, cholesky,
eig, symeig, svd, pinverse, triangular_solve), and tests of PyTorch internals with no
counterpart here (``torch._C._functions.UndefinedGrad`` / ``DelayedError``, legacy
non-static Functions, ``Variable._execution_engine``, ``assertExpected`` golden files).
"""

from __future__ import annotations

import gc
import math
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

import runtime as torch

Function = torch.autograd.Function
once_differentiable = torch.autograd.function.once_differentiable
gradcheck = torch.autograd.gradcheck
gradgradcheck = torch.autograd.gradgradcheck


@pytest.fixture(autouse=True)
def _double_default() -> Iterator[None]:
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        yield
    finally:
        torch.set_default_dtype(old)


def assert_equal(actual: Any, expected: Any, atol: float | None = None,
                 rtol: float | None = None) -> None:
    if isinstance(actual, torch.Tensor) and not isinstance(expected, torch.Tensor):
        expected = torch.tensor(expected, dtype=actual.dtype)
    if isinstance(expected, torch.Tensor) and not isinstance(actual, torch.Tensor):
        actual = torch.tensor(actual, dtype=expected.dtype)
    torch.testing.assert_close(actual, expected, atol=atol, rtol=rtol, check_dtype=False)


def graph_desc(fn: Any) -> str:
    if fn is None:
        return "None"
    result = type(fn).__name__ + "("
    next_functions = fn.next_functions
    for next_fn, _ in next_functions:
        result += graph_desc(next_fn)
        result += ", "
    if next_functions:
        result = result[:-2]
    return result + ")"


def _function_test(cls: Any) -> tuple[Any, Any]:
    x = torch.randn(5, 5, requires_grad=True)
    y = torch.randn(5, 5, requires_grad=True)
    result = cls.apply(x, 2, y)
    go = torch.ones((), requires_grad=True)
    result.sum().backward(go, create_graph=True)

    assert_equal(x.grad, y + torch.ones(5, 5))
    assert_equal(y.grad, x + torch.ones(5, 5) * 2)
    assert x.grad.grad_fn is not None
    assert y.grad.grad_fn is not None
    return x, y


def test_function() -> None:
    class MyFunction(Function):
        @staticmethod
        def forward(ctx, tensor1, pyscalar, tensor2):
            ctx.pyscalar = pyscalar
            ctx.save_for_backward(tensor1, tensor2)
            return tensor1 + pyscalar * tensor2 + tensor1 * tensor2

        @staticmethod
        def backward(ctx, grad_output):
            var1, var2 = ctx.saved_tensors
            assert isinstance(var1, torch.Tensor)
            assert isinstance(var2, torch.Tensor)
            assert isinstance(grad_output, torch.Tensor)
            return (grad_output + grad_output * var2, None,
                    grad_output * ctx.pyscalar + grad_output * var1)

    _function_test(MyFunction)


def test_once_differentiable() -> None:
    class MyFunction(Function):
        @staticmethod
        def forward(ctx, tensor1, pyscalar, tensor2):
            ctx.pyscalar = pyscalar
            ctx.save_for_backward(tensor1, tensor2)
            return tensor1 + pyscalar * tensor2 + tensor1 * tensor2

        @staticmethod
        @once_differentiable
        def backward(ctx, grad_output):
            assert not torch.is_grad_enabled()
            t1, t2 = ctx.saved_tensors
            return (grad_output + grad_output * t2, None,
                    grad_output * ctx.pyscalar + grad_output * t1)

    x, y = _function_test(MyFunction)
    assert graph_desc(x.grad.grad_fn) == (
        "CopyBackwards(None, Error(AccumulateGrad(), None, AccumulateGrad()))")
    assert graph_desc(y.grad.grad_fn) == (
        "CopyBackwards(None, Error(AccumulateGrad(), None, AccumulateGrad()))")


def test_function_returns_input() -> None:
    class MyFunction(Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, grad):
            return grad * 2

    for shape in [(1,), ()]:
        v = torch.ones(shape, requires_grad=True)
        MyFunction.apply(v).backward()
        assert_equal(v.grad, torch.full(shape, 2.0))

        with torch.no_grad():
            v.grad.zero_()
        MyFunction.apply(v.clone()).backward()
        assert_equal(v.grad, torch.full(shape, 2.0))


def test_function_returns_undefined_tensor() -> None:
    class MyFunction(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad):
            return None

    x = torch.ones(1, requires_grad=True)
    MyFunction.apply(x).backward()
    assert x.grad is None
    MyFunction.apply(x ** 2).backward()
    assert x.grad is None
    MyFunction.apply(x).sum().backward()
    assert x.grad is None
    assert torch.autograd.grad(MyFunction.apply(x), x, allow_unused=True)[0] is None


def test_set_materialize_non_diff_grads() -> None:
    class Func(Function):
        @staticmethod
        def forward(ctx, x):
            out0 = x.clone()
            out1 = x.clone()
            ctx.mark_non_differentiable(out1)
            ctx._materialize_non_diff_grads = False
            return out0, out1

        @staticmethod
        def backward(ctx, g0, g1):
            assert g1 is None
            return g0

    a = torch.tensor(1.0, requires_grad=True)
    out = Func.apply(a)[0]
    out.backward()


def test_unused_grad_requires_grad_with_materialize() -> None:
    x = torch.ones(10, requires_grad=True)
    y = torch.ones(10, requires_grad=True)
    z = (x ** 2).sum()
    g = torch.autograd.grad(z, (x, y), allow_unused=True, materialize_grads=True,
                            create_graph=False)
    assert not g[0].requires_grad
    assert not g[1].requires_grad


class SimulateBackwardError(Function):
    @staticmethod
    def forward(ctx, input):
        return input.clone()

    @staticmethod
    @once_differentiable
    def backward(ctx, input):
        raise Exception("Simulate error on backward pass")  # noqa: TRY002


def test_custom_function_exception() -> None:
    t1 = torch.rand((3, 3), requires_grad=True)
    t2 = torch.rand((3, 3), requires_grad=True)
    tmp = (t1 + t2) * (t1 + t2)
    t3 = SimulateBackwardError.apply(tmp)
    with pytest.raises(Exception, match="Simulate error on backward pass"):
        t3.sum().backward()


def test_custom_function_non_tensor_inputs_outputs() -> None:
    class MyFunction(Function):
        @staticmethod
        def forward(ctx, t1, t2, scale, t3):
            t4 = t1 + t2 * t3
            t5 = t1 * t2 + t3
            t4 *= scale
            t5 *= scale
            ctx.scale = scale
            ctx.save_for_backward(t1, t2, t3)
            return scale, t4, None, True, t5, "bar", t1

        @staticmethod
        @once_differentiable
        def backward(ctx, *grads):
            assert len(grads) == 7
            assert grads[0] is None
            assert grads[2] is None
            assert grads[3] is None
            assert grads[5] is None
            scale = ctx.scale
            var1, var2, var3 = ctx.saved_tensors
            return (
                grads[1] * scale + grads[4] * var2 * scale + grads[6],
                grads[1] * var3 * scale + grads[4] * var1 * scale,
                None,
                grads[1] * var2 * scale + grads[4] * scale,
            )

    t1 = torch.rand(10, dtype=torch.double, requires_grad=True)
    t2 = torch.rand(10, dtype=torch.double, requires_grad=True)
    t3 = torch.rand(10, dtype=torch.double)
    scale = 7
    res = MyFunction.apply(t1, t2, scale, t3)
    assert res[0] == scale
    assert_equal(res[1], (t1 + t2 * t3) * scale)
    assert res[2] is None
    assert res[3] is True
    assert_equal(res[4], (t1 * t2 + t3) * scale)
    assert res[5] == "bar"
    assert_equal(res[6], t1)

    torch.autograd.backward([res[1].sum(), res[4].sum(), res[6].sum()])
    assert t1.grad is not None
    assert t2.grad is not None
    assert t3.grad is None

    def foo(t1, t2, t3):
        res = MyFunction.apply(t1, t2, scale, t3)
        return res[1], res[4], res[6]

    assert gradcheck(foo, (t1, t2, t3))


def test_invalid_gradients() -> None:
    class MyFunction(Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, grad_output):
            return torch.randn(10, dtype=torch.float)

    with pytest.raises(RuntimeError, match="expected shape"):
        input = torch.randn(5, 5, dtype=torch.float, requires_grad=True)
        MyFunction.apply(input).sum().backward()


def test_accumulate_grad() -> None:
    grad_output = torch.ones(5, 5)

    def compute_grad(create_graph):
        x = torch.randn(5, 5, requires_grad=True)
        y = x + 2
        y.backward(grad_output, retain_graph=True)
        x_grad = x.grad
        x_grad_clone = x.grad.clone()
        y.backward(grad_output, create_graph=create_graph)
        return x_grad, x_grad_clone

    # accumulates in place without create_graph
    x_grad, x_grad_clone = compute_grad(create_graph=False)
    assert_equal(x_grad, x_grad_clone * 2)
    # out of place with create_graph
    x_grad, x_grad_clone = compute_grad(create_graph=True)
    assert_equal(x_grad, x_grad_clone)


def test_accumulate_grad_tensor_reference() -> None:
    def _test_grad_tensor(params_grad_tensor, backward_grad_tensor, should_preserve_reference,
                          create_graph):
        params = torch.tensor([1.5, 1.5]).requires_grad_()
        params.grad = params_grad_tensor
        grad_saved = params.grad
        params.backward(backward_grad_tensor, create_graph=create_graph)
        assert (id(grad_saved) == id(params.grad)) == should_preserve_reference

    for create_graph in (False, True):
        _test_grad_tensor(torch.tensor([1.5, 1.5]), torch.tensor([1.5, 1.5]),
                          not create_graph, create_graph)


def test_sum_to_with_empty_dim_grad() -> None:
    a = torch.rand(4, 0, requires_grad=True)
    b = torch.rand(4, 1, requires_grad=True)
    c = a + b
    assert c.shape == (4, 0)
    c.sum().backward()
    assert_equal(b.grad, torch.zeros(4, 1))
    assert_equal(a.grad, torch.zeros(4, 0))


def test_hessian_vector() -> None:
    x = torch.randn(2, 2, requires_grad=True)
    y = torch.randn(2, 2, requires_grad=True)
    z = x ** 2 + y * x + y ** 2
    z.backward(torch.ones(2, 2), create_graph=True)

    with torch.no_grad():
        x_grad = 2 * x + y
        y_grad = x + 2 * y
    assert_equal(x.grad, x_grad)
    assert_equal(y.grad, y_grad)

    grad_sum = 2 * x.grad + y.grad
    grad_sum.backward(torch.ones(2, 2))
    x_hv = torch.ones(2, 2) * 5
    y_hv = torch.ones(2, 2) * 4
    assert_equal(x.grad, x_grad + x_hv)
    assert_equal(y.grad, y_grad + y_hv)


def test_grad() -> None:
    x = torch.randn(2, 2, requires_grad=True)
    y = torch.randn(2, 2, requires_grad=True)
    z = x ** 2 + y * x + y ** 2
    z.backward(torch.ones(2, 2), create_graph=True)

    x_grad = 2 * x + y
    y_grad = x + 2 * y
    assert_equal(x.grad, x_grad)
    assert_equal(y.grad, y_grad)

    grad_sum = 2 * x.grad + y.grad
    x_hv = torch.autograd.grad(outputs=[grad_sum], grad_outputs=[torch.ones(2, 2)],
                               inputs=[x], create_graph=True)
    expected_x_hv = torch.ones(2, 2) * 5
    assert_equal(x_hv[0], expected_x_hv)
    assert_equal(x.grad, x_grad)
    assert_equal(y.grad, y_grad)

    grad_out = torch.ones(2)
    with pytest.raises(RuntimeError) as info:
        torch.autograd.grad(outputs=[grad_sum], grad_outputs=[grad_out], inputs=[x],
                            create_graph=True)
    assert str(info.value) == (
        "Mismatch in shape: grad_output[0] has a shape of " + str(grad_out.shape)
        + " and output[0] has a shape of " + str(grad_sum.shape) + ".")


def test_grad_to_node() -> None:
    def check_matches(out, inp):
        ref = torch.autograd.grad(out.sum(), inp)
        edge = torch.autograd.graph.get_gradient_edge(inp)
        new = torch.autograd.grad(out.sum(), edge)
        assert_equal(ref, new)

    x = torch.rand(2, requires_grad=True)
    out = x.clone()
    check_matches(out, x)

    x = x.clone()
    out = x.clone()
    check_matches(out, x)

    x = torch.var_mean(x)[1]
    out = x.clone()
    check_matches(out, x)


def test_grad_nonleaf() -> None:
    x_init = torch.randn(2, 2, requires_grad=True)
    x = x_init
    y = torch.randn(2, 2, requires_grad=True)
    grad_output = torch.ones(2, 2)

    def fn(x):
        return x ** 2 + y * x + y ** 2

    for _ in range(5):
        (grad_x,) = torch.autograd.grad(fn(x), x, grad_outputs=grad_output, create_graph=True)
        grad_x_expected = 2 * x + y
        assert y.grad is None
        assert x.grad is None
        assert_equal(grad_x, grad_x_expected)
        x = x + 0.05 * grad_x

    val_init = fn(x_init).sum()
    val_final = fn(x).sum()
    assert val_final > val_init

    x.backward(grad_output)
    assert y.grad is not None
    assert x_init.grad is not None


def test_grad_nonleaf_many_outputs() -> None:
    x = torch.randn(4, 2, requires_grad=True)
    a, b = x.chunk(2)

    def hook(*grads):
        hook_called[0] = True

    hook_called = [False]
    x.register_hook(hook)

    go = torch.randn(2, 2)
    grad_a, grad_b = torch.autograd.grad((a + 2 * b), [a, b], grad_outputs=go,
                                         create_graph=True)
    assert_equal(grad_a, go)
    assert_equal(grad_b, go * 2)
    assert not hook_called[0]
    assert x.grad is None


def test_grad_nonleaf_register_hook() -> None:
    x = torch.randn(5, requires_grad=True)
    x_list = x.unbind()

    x0 = x_list[0]
    hook_results = [None]

    def hook(grad):
        hook_results[0] = grad

    x0.register_hook(hook)

    x_list[0].backward()
    assert_equal(hook_results[0], torch.tensor(1.0))
    expected_grad = torch.tensor([1.0, 0, 0, 0, 0])
    assert_equal(x.grad, expected_grad)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert x_list[0].grad is None

    for i in range(1, 5, 1):
        x_list[i].backward()
        assert hook_results[0] is None
        expected_grad[i] = 1.0
        assert_equal(x.grad, expected_grad)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert x_list[i].grad is None


def test_hook_with_no_name() -> None:
    class MyHookClass:
        def __call__(self, grad):
            return grad.clone()

    x = torch.randn(5, requires_grad=True).clone()
    x.register_hook(MyHookClass())
    x.sum().backward()


def test_sharded_grad() -> None:
    leaves = [torch.zeros(5, 5, requires_grad=True) for _ in range(10)]
    intermediates = [l * i + l * l for i, l in enumerate(leaves)]  # noqa: E741
    loss = sum(v * i for i, v in enumerate(intermediates)).sum()

    def group(l, group_size):  # noqa: E741
        return (l[i:i + group_size] for i in range(0, len(l), group_size))

    shard_size = 2
    d_intermediates = [d_i for intermediates_batch in group(intermediates, shard_size)
                       for d_i in torch.autograd.grad(loss, intermediates_batch)]
    torch.autograd.backward(intermediates, d_intermediates)
    for i, l in enumerate(leaves):  # noqa: E741
        assert_equal(l.grad, i * i * (1 + l))


def test_backward_badcalls() -> None:
    x = torch.ones(1)
    with pytest.raises(RuntimeError, match="does not require grad"):
        x.backward()


def test_grad_badcalls() -> None:
    x = torch.ones(1)
    y = x ** 2
    with pytest.raises(RuntimeError, match="does not require grad"):
        torch.autograd.grad(x, y)
    with pytest.raises(RuntimeError, match="does not require grad"):
        torch.autograd.grad(y, x)

    x = torch.ones(1, requires_grad=True)
    y = x ** 2
    torch.autograd.grad(y, x)


def test_grad_empty_inputs() -> None:
    x = torch.tensor([1.0], requires_grad=True)
    # PyTorch 2.13's text and type (older releases raised ValueError)
    with pytest.raises(RuntimeError, match=r"`inputs` argument to `grad\(\)` cannot be empty\."):
        torch.autograd.grad(2 * x, [], grad_outputs=torch.tensor([1.0]))


def test_grad_fn_badcalls() -> None:
    error_regex = "expected .* arguments, got .* instead"
    x = torch.ones(1, requires_grad=True)
    y = x ** 2
    with pytest.raises(TypeError, match=error_regex):
        y.grad_fn(x.detach(), x.detach())
    with pytest.raises(TypeError, match=error_regex):
        y.grad_fn()
    y.grad_fn(x.detach())


def test_grad_unreachable() -> None:
    x = torch.ones(1, requires_grad=True)
    y = torch.ones(1, requires_grad=True)
    z = x * 2
    w = y * 2
    del z, w

    grad_x, grad_y = torch.autograd.grad(x * 2, [x, y], allow_unused=True)
    assert_equal(grad_x, x * 2)
    assert grad_y is None

    z = torch.ones(1, requires_grad=True)
    grad_x, grad_z = torch.autograd.grad(x * 2, [x, z], allow_unused=True)
    assert_equal(grad_x, x * 2)
    assert grad_z is None

    with pytest.raises(RuntimeError, match="Set allow_unused=True"):
        grad_x, grad_y = torch.autograd.grad(x * 2, [x, y], allow_unused=False)


def test_grad_unreachable_discovery() -> None:
    class MyFunc(Function):
        @staticmethod
        def forward(ctx, x):
            return x

        @staticmethod
        def backward(ctx, x):
            pytest.fail("This node should not be executed!")

    x = MyFunc.apply(torch.randn(1, requires_grad=True) * 2)
    y = torch.randn(1, requires_grad=True)
    (gY,) = torch.autograd.grad(x, (y,), allow_unused=True)
    assert gY is None

    x = MyFunc.apply(torch.randn(1, requires_grad=True) * 2)
    y = torch.randn(1, requires_grad=True)
    z = torch.randn(1, requires_grad=True)
    (gY, gZ) = torch.autograd.grad(x + z, (y, z), allow_unused=True)
    assert gY is None
    assert gZ is not None

    x = MyFunc.apply(torch.randn(1, requires_grad=True) * 2)
    y = torch.randn(1, requires_grad=True)
    torch.autograd.backward(x, inputs=(y,))
    assert y.grad is None


def test_grad_batched_grad() -> None:
    x = torch.randn(2, 2, requires_grad=True)

    out = x.clone()
    batched_grad = torch.arange(3).expand(2, 2, 3).transpose(0, 2)
    (grad,) = torch.autograd.grad(out, (x,), (batched_grad,), is_grads_batched=True)
    assert_equal(grad, torch.arange(3).expand(2, 2, 3).transpose(0, 2).to(dtype=x.dtype))

    with pytest.raises(RuntimeError, match="If `is_grads_batched=True`, we interpret"):
        torch.autograd.grad(out, (x,), (torch.tensor([1, 2, 3]),), is_grads_batched=True)
