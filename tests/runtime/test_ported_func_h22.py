"""PyTorch's function-transform tests, ported to rt: test/functorch/test_eager_transforms.py
(grad, grad_and_value, vjp, jvp, jacrev, jacfwd, hessian, linearize, functional_call,
stack_module_state: argnums, has_aux, pytrees, nesting, no_grad / inference_mode, error
texts) and the non-OpInfo parts of test/functorch/test_vmap.py (in_dims / out_dims, nested
pytrees, chunk_size, randomness, in-place ops, views, nested vmap, errors).

Ported mechanically (``import runtime as torch``, ``from runtime.func import ...``) for
device "cpu", float32 (PyTorch's default dtype in those files) and float64 where the test
names it; ``self.assertEqual`` is ``assert_equal`` (values within the dtype's tolerance),
``assertRaisesRegex`` is ``pytest.raises(..., match=...)``.

Left out, as outside this project's scope: CUDA, complex numbers (conj bit), sparse
layouts, functionalize / make_fx / aot_function, torch.compile / dynamo, the deprecated
functorch ``make_functional`` / ``combine_state_for_ensemble`` / ``functional_init`` APIs,
torchvision models, TorchDispatchMode, functorch internals (``torch._C._functorch``
interpreter stacks, dead wrappers, ``GradTrackingTensor`` / ``BatchedTensor`` reprs,
``*GeneratedBackward`` node names: rt's transforms have no wrapper tensors),
``torch.autograd.forward_ad`` (rt has none: forward mode is reverse mode twice), and a custom
Function's own ``vmap`` staticmethod (its info object, in_dims, returned out_dims: rt runs
``forward`` once per batch element; the checks of vmap support are ported). Also left out:
the tests of behaviour rt's vmap documents as different (it runs the function once per batch
element, see ``runtime/func/vmap.py``): the errors of in-place writes into unbatched or
captured tensors under vmap, data-dependent control flow and ``.item()`` errors, the batching rules' own error
texts (mm's "Shape mismatch", squeeze's RuntimeError: rt's are the eager ops'), the
in-place fallback's "inplace arithmetic ... is not possible" text, and randomness="different"
normal draws, which PyTorch makes for the whole batch at once (same distribution, other
numbers).
"""

from __future__ import annotations

from collections import OrderedDict, namedtuple
from collections.abc import Iterator
from functools import partial
from typing import Any

import pytest

import runtime as torch
import runtime.nn as nn
import runtime.nn.functional as F
from runtime.func import (
    functional_call,
    grad,
    grad_and_value,
    hessian,
    jacfwd,
    jacrev,
    jvp,
    linearize,
    stack_module_state,
    vjp,
    vmap,
)
from runtime.func._argnums import slice_argnums as _slice_argnums


@pytest.fixture(autouse=True)
def _seeded() -> Iterator[None]:
    torch.manual_seed(0)
    yield


def assert_equal(actual: Any, expected: Any, atol: float | None = None,
                 rtol: float | None = None) -> None:
    """PyTorch's ``TestCase.assertEqual``: pytrees compared leaf by leaf, tensors within the
    dtype's tolerance (dtypes not compared, NaNs equal), numbers against tensors."""
    if isinstance(expected, dict):
        assert isinstance(actual, dict) and list(actual) == list(expected)
        for k in expected:
            assert_equal(actual[k], expected[k], atol, rtol)
        return
    if isinstance(expected, list | tuple) and not isinstance(actual, torch.Tensor):
        assert isinstance(actual, list | tuple) and len(actual) == len(expected)
        for a, e in zip(actual, expected):
            assert_equal(a, e, atol, rtol)
        return
    if isinstance(actual, torch.Tensor) and not isinstance(expected, torch.Tensor):
        expected = torch.tensor(expected, dtype=actual.dtype)
    if isinstance(expected, torch.Tensor) and not isinstance(actual, torch.Tensor):
        actual = torch.tensor(actual, dtype=expected.dtype)
    if isinstance(actual, torch.Tensor):
        torch.testing.assert_close(actual.detach(), expected.detach(), atol=atol, rtol=rtol,
                                   check_dtype=False, equal_nan=True)
    else:
        assert actual == expected


# --- TestSliceArgnums ------------------------------------------------------------------


def test_slice_argnums_invalid_argnum_type() -> None:
    x = torch.randn(3)
    args = (x,)
    with pytest.raises(RuntimeError, match="int or Tuple"):
        _slice_argnums(args, 0.0)
    with pytest.raises(RuntimeError, match="int or Tuple"):
        _slice_argnums(args, [0])
    with pytest.raises(RuntimeError, match="must be int"):
        _slice_argnums(args, (0.0,))
    args = (0.1, 1.1, 2.1, 3.1, 4.1)
    with pytest.raises(RuntimeError, match="must be int"):
        _slice_argnums(args, ((0, 1), 2))


def test_slice_argnums_out_of_bounds_and_empty_and_duplicates() -> None:
    x = torch.randn(3)
    for argnums in (1, -2, (-2,)):
        with pytest.raises(RuntimeError, match="positional inputs"):
            _slice_argnums((x,), argnums)
    with pytest.raises(RuntimeError, match="must be non-empty"):
        _slice_argnums((x,), ())
    for argnums in ((0, 0), (0, -2)):
        with pytest.raises(RuntimeError, match="must be unique"):
            _slice_argnums((x, x), argnums)


def test_slice_argnums_flat_and_pytree_args() -> None:
    args = (0.1, 1.1, 2.1, 3.1, 4.1)
    assert _slice_argnums(args, 0) == (0.1,)
    assert _slice_argnums(args, 4) == (4.1,)
    assert _slice_argnums(args, -1) == (4.1,)
    assert _slice_argnums(args, -5) == (0.1,)
    assert _slice_argnums(args, (0, 1, 2, 3, 4)) == args
    assert _slice_argnums(args, (0, -3)) == (0.1, 2.1)
    args = ((0.1, 1.1), 2.0, [3.1])
    assert _slice_argnums(args, 0) == args[0:1]
    assert _slice_argnums(args, (0,)) == args[0:1]
    assert _slice_argnums(args, -1) == args[-1:]
    assert _slice_argnums(args, (0, -2)) == args[0:2]
    args = ((0.1, 1.1, 2.1), 3.1, 4.1)
    assert _slice_argnums(args, (1, 0)) == (args[1], args[0])


# --- TestGradTransform -----------------------------------------------------------------


def test_grad_primitive_and_composite() -> None:
    x = torch.randn([])
    assert_equal(grad(torch.sin)(x), torch.cos(x))
    x = torch.randn(2, 3, 4)
    assert_equal(grad(lambda x: torch.flatten(x).sum())(x), torch.ones_like(x))


def test_grad_linear_nd_inplace_activation() -> None:
    x = torch.randn(2, 3, 8, dtype=torch.double)
    w = torch.randn(16, 8, dtype=torch.double)
    b = torch.randn(16, dtype=torch.double)

    def f(x, w, b):
        return F.linear(x, w, b).relu_().sum()

    result = grad(f, argnums=(0, 1, 2))(x, w, b)
    xr, wr, br = (t.clone().requires_grad_() for t in (x, w, b))
    (xr @ wr.t() + br).relu().sum().backward()
    assert_equal(result, (xr.grad, wr.grad, br.grad))


def test_grad_fn_with_kwargs() -> None:
    def foo(x, y):
        return (x * y).sum()

    x, y = torch.randn(3), torch.randn(3)
    assert_equal(grad(foo)(x, y=y), grad(foo)(x, y))


def test_grad_composite_complicated_and_two_ops() -> None:
    x, y = torch.randn(3), torch.randn(3, 5)

    def foo(x, y):
        return (x @ y).sum()

    result = grad(foo)(x, y)
    x.requires_grad_()
    (expected,) = torch.autograd.grad(foo(x, y), x)
    assert_equal(result, expected)

    N, C = 2, 5
    y = torch.randn(N, C)
    targets = torch.randint(0, C, (N,))

    def bar(y, targets):
        return F.cross_entropy(y, targets)

    result = grad(bar)(y, targets)
    y.requires_grad_()
    (expected,) = torch.autograd.grad(bar(y, targets), y)
    assert_equal(result, expected)


@pytest.mark.parametrize("attr", [lambda x: x.shape, lambda x: x.dtype, lambda x: x.is_cuda,
                                  lambda x: x.numel()], ids=["shape", "dtype", "is_cuda", "numel"])
def test_grad_attributes(attr: Any) -> None:
    x = torch.randn(2, 3, 5, dtype=torch.double)
    expected = attr(x)

    def foo(x):
        assert attr(x) == expected
        return x.sum()

    grad(foo)(x)


def test_grad_inplace_and_inplace_on_views() -> None:
    x = torch.randn([])
    assert_equal(grad(lambda x: x.clone().sin_())(x), x.cos())

    def on_view(x):
        y = x.clone()
        y0 = y[0]
        y0.sin_()
        return y.sum()

    def on_view_base(x):
        y = x.clone()
        y0 = y[0]
        y.sin_()
        return y0

    for foo in (on_view, on_view_base):
        x = torch.randn(3)
        result = grad(foo)(x)
        x.requires_grad_()
        (expected,) = torch.autograd.grad(foo(x), x)
        assert_equal(result, expected)


def test_grad_nesting_and_composed_with_autograd() -> None:
    x = torch.randn([])
    assert_equal(grad(grad(torch.sin))(x), -torch.sin(x))
    x = torch.randn([], requires_grad=True)
    y = grad(torch.sin)(x)
    (result,) = torch.autograd.grad(y, x)
    assert_equal(result, -x.sin())


def test_grad_escaped_wrappers_are_ignored() -> None:
    x = torch.randn([])
    escaped = []

    def foo(x):
        y = x.sin()
        escaped.append(y)
        return y

    grad(foo)(x)
    something = escaped[0].sum()
    assert_equal(something, x.sin().sum())


def test_grad_manual_seed_inside_grad() -> None:
    x = torch.randn([])

    def f(x):
        torch.manual_seed(0)
        return x * torch.randn_like(x)

    state = torch.get_rng_state()
    result = grad(f)(x)
    x.requires_grad_()
    (expected,) = torch.autograd.grad(f(x), x)
    assert_equal(result, expected)
    torch.set_rng_state(state)


def test_vjp_simple_and_two_outputs() -> None:
    x = torch.randn([])
    out, vjp_fn = vjp(torch.sin, x)
    assert_equal(out, x.sin())
    v = torch.randn([])
    (result,) = vjp_fn(v)
    assert_equal(result, v * x.cos())

    result, vjp_fn = vjp(lambda x: (x, x), torch.tensor(1.0))
    assert_equal(vjp_fn(result), (torch.tensor(2.0),))


def test_grad_of_vjp_and_vjp_of_grad_compositions() -> None:
    x, y = torch.randn([]), torch.randn([])

    def foo(x, y):
        out, vjp_fn = vjp(torch.sin, x)
        return grad(lambda y: vjp_fn(y)[0])(y)

    assert_equal(foo(x, y), x.cos())

    def bar(x, y):
        out, vjp_fn = vjp(grad(torch.sin), x)
        return vjp_fn(y)[0]

    assert_equal(bar(x, y), -y * x.sin())

    def baz(x, y):
        df, vjp_fn = vjp(grad(lambda x: -torch.cos(x)), x)
        return grad(lambda y: vjp_fn(y)[0])(y)

    assert_equal(baz(x, y), x.cos())


def test_grad_views_and_view_inplace() -> None:
    x = torch.randn([], requires_grad=True)
    y = torch.randn([], requires_grad=True)

    def silly_sin(x):
        return x.view([]).sin()

    result = grad(silly_sin)(x) + torch.cos(y)
    grads = torch.autograd.grad(result, [x, y])
    assert_equal(grads[0], -x.sin())
    assert_equal(grads[1], -y.sin())

    def foo(x):
        x = x.clone()
        x.view([]).sin_()
        return x

    assert_equal(grad(foo)(x), x.cos())


def test_grad_invalid_argnums() -> None:
    x, y = torch.randn([]), torch.randn([])
    for argnums in (-3, 2):
        with pytest.raises(RuntimeError, match="but only"):
            grad(torch.mul, argnums=argnums)(x, y)
    with pytest.raises(RuntimeError, match="int or Tuple"):
        grad(torch.mul, argnums=[0])(x, y)
    with pytest.raises(RuntimeError, match="must be int"):
        grad(torch.mul, argnums=("0",))(x, y)
    for argnums in ((0, 0), (0, -2)):
        with pytest.raises(RuntimeError, match="must be unique"):
            grad(torch.mul, argnums=argnums)(x, y)


def test_grad_argnums_positive_negative_out_of_order() -> None:
    x, y = torch.randn([]), torch.randn([])
    assert_equal(grad(torch.mul, argnums=0)(x, y), y)
    assert_equal(grad(torch.mul, argnums=1)(x, y), x)
    assert_equal(grad(torch.mul, argnums=(0,))(x, y), (y,))
    assert_equal(grad(torch.mul, argnums=(0, 1))(x, y), (y, x))
    assert_equal(grad(torch.mul, argnums=(1, 0))(x, y), (x, y))
    assert_equal(grad(torch.mul, argnums=-2)(x, y), y)
    assert_equal(grad(torch.mul, argnums=-1)(x, y), x)
    assert_equal(grad(torch.mul, argnums=(-2,))(x, y), (y,))
    assert_equal(grad(torch.mul, argnums=(-2, -1))(x, y), (y, x))


def test_grad_pytree_inputs() -> None:
    x = torch.randn([])

    def f(a, b):
        x, y = a
        return 1 * x + 2 * y + 3 * b["foo"]

    args = ((x, x), {"foo": x})
    assert_equal(grad(f)(*args), (1.0, 2.0))
    assert_equal(grad(f, argnums=(0,))(*args), ((1.0, 2.0),))
    (gx, gy), gz = grad(f, argnums=(0, 1))(*args)
    assert_equal((gx, gy, gz["foo"]), (1.0, 2.0, 3.0))


def test_grad_aux_tensor_and_pytree() -> None:
    x = torch.randn(3)
    msg = r"grad_and_value\(f\)\(\*args\): output of function f should be a tuple"
    with pytest.raises(RuntimeError, match=msg):
        grad(lambda t: [t, t], has_aux=True)(x)
    with pytest.raises(RuntimeError, match=msg):
        grad(lambda t: (t, t + 2, t + 3), has_aux=True)(x)

    out, aux = grad(lambda t: (t.sin().sum(), t.cos()), has_aux=True)(x)
    assert_equal(aux, x.cos())
    assert_equal(out, x.cos())

    def f(x):
        return x.sin().sum(), {"a": x.cos(), "b": [x.tan()]}

    out, aux = grad(f, has_aux=True)(x)
    assert_equal(aux, f(x)[1])
    assert_equal(out, x.cos())
    for bad in [1, 1.0, "abc"]:
        with pytest.raises(RuntimeError, match=r"Expected tensors, got unsupported type"):
            grad(lambda x: (x.sum(), bad), has_aux=True)(x)
        with pytest.raises(RuntimeError, match=r"Expected tensors, got unsupported type"):
            grad(lambda x: (x.sum(), [x, bad]), has_aux=True)(x)


def test_grad_zero_and_unrelated() -> None:
    inps = {"a": torch.randn(10) + 3, "b": torch.randn(10)}
    grads = grad(lambda x: (x["a"] ** 2.0).sum())(inps)
    assert grads["a"].sum().item() != 0.0
    assert_equal(grads["b"].sum(), 0.0)

    x, y = torch.tensor(1.0), torch.tensor(2.0)
    assert_equal(grad(lambda x: y)(x), torch.zeros_like(x))
    out, vjp_fn = vjp(lambda x: y, x)
    assert_equal(vjp_fn(torch.tensor(1.0)), (torch.zeros_like(x),))

    w, x, v = torch.tensor(3.0), torch.tensor(4.0), torch.tensor(1.0)
    out, vjp_fn = vjp(lambda w, x: (y, y, x), w, x)
    assert_equal(vjp_fn((v, v, v)), (torch.zeros_like(x), torch.ones_like(x)))


def test_unrelated_hessian() -> None:
    N, M = 5, 3
    W = torch.randn(N, M)
    x = torch.randn(M)
    assert_equal(jacrev(jacrev(lambda x: W @ x))(x), torch.zeros(N, M, M))


def test_vjp_pytree_input_and_output() -> None:
    x, v = torch.randn([]), torch.randn([])
    out, vjp_fn = vjp(lambda x: x[0] * x[1][0], (x, (x, x)))
    assert_equal(out, x * x)
    assert_equal(vjp_fn(v), ((x * v, (x * v, 0.0)),))

    v1, v2, v3 = torch.randn([]), torch.randn([]), torch.randn([])
    _, vjp_fn = vjp(lambda x: (x, (x, x)), x)
    (result,) = vjp_fn((v1, (v2, v3)))
    assert_equal(result, v1 + v2 + v3)
    with pytest.raises(RuntimeError, match="Expected pytree structure"):
        vjp_fn(((v1, (v2, v3)),))


def test_vjp_outputs_can_be_any_pytree() -> None:
    x, t = torch.randn(2, 3), torch.randn(2, 3)
    for output in [None, ()]:
        with pytest.raises(RuntimeError, match=r"vjp\(f, \*primals\): Expected f to be a "
                                               r"function that has non-empty output"):
            _, vjp_fn = vjp(lambda _: output, x)
            vjp_fn(t)
    for output in [1, True, 12.2, "abc"]:
        with pytest.raises(RuntimeError, match=r"vjp\(f, \*primals\): expected f\(\*primals\) "
                                               r"to return only tensors"):
            _, vjp_fn = vjp(lambda _: output, x)
            vjp_fn(t)

    output, vjp_fn = vjp(lambda x: [x, x.sum()], x)
    (vjp_out,) = vjp_fn([t, t.sum()])
    assert isinstance(output, list) and len(output) == 2
    assert isinstance(vjp_out, torch.Tensor)

    output, vjp_fn = vjp(lambda x: {"x": x, "xsum": x.sum()}, x)
    (vjp_out,) = vjp_fn({"x": t, "xsum": t.sum()})
    assert isinstance(output, dict) and len(output) == 2 and "xsum" in output
    assert isinstance(vjp_out, torch.Tensor)

    def composite_output(x):
        out = x.sum()
        return [(out, {"a": x, "out": [x, out]})]

    output, vjp_fn = vjp(composite_output, x)
    (vjp_out,) = vjp_fn([(t.sum(), {"a": t, "out": [t, t.sum()]})])
    assert isinstance(output, list)
    assert isinstance(output[0], tuple) and isinstance(output[0][1], dict)
    assert_equal(vjp_out, 2 * t + 2 * t.sum())


def test_vjp_aux_tensor_and_pytree() -> None:
    x = torch.randn(3)
    msg = r"vjp\(f, \*primals\): output of function f should be a tuple"
    with pytest.raises(RuntimeError, match=msg):
        vjp(lambda t: [t, t], x, has_aux=True)
    with pytest.raises(RuntimeError, match=msg):
        vjp(lambda t: (t, t + 2, t + 3), x, has_aux=True)

    out, vjp_fn, aux = vjp(lambda t: (t.sin(), t.cos()), x, has_aux=True)
    assert_equal(aux, x.cos())
    assert_equal(out, x.sin())
    v = torch.randn(3)
    assert_equal(vjp_fn(v), (v * x.cos(),))

    def f(x):
        return x.sin(), {"a": x.cos(), "b": [x.tan()]}

    out, vjp_fn, aux = vjp(f, x, has_aux=True)
    expected_out, expected_aux = f(x)
    assert_equal(out, expected_out)
    assert_equal(aux, expected_aux)
    assert_equal(vjp_fn(v), (v * x.cos(),))
    for bad in [1, 1.0, "abc"]:
        with pytest.raises(RuntimeError, match=r"Expected tensors, got unsupported type"):
            vjp(lambda x: (x, bad), x, has_aux=True)
        with pytest.raises(RuntimeError, match=r"Expected tensors, got unsupported type"):
            vjp(lambda x: (x, [x, bad]), x, has_aux=True)


def test_grad_advanced_indexing() -> None:
    def f(value):
        log_prob = torch.ones(())
        val = torch.zeros(()) > 0
        log_prob[val] = 0
        return value

    result = grad(f)(torch.randn(()))
    assert_equal(result, torch.ones_like(result))

    def f2(value):
        value = value.clone()
        value[value > 0] = 0
        return value.sum()

    x = torch.randn(100)
    assert_equal(grad(f2)(x), (x <= 0).type_as(x))


def test_grad_tensor_ctor_inside_grad() -> None:
    x = torch.tensor(3.14)
    assert_equal(grad(lambda x: x * torch.tensor(2.0))(x), 2.0)


def test_print_captured_tensor_inside_transform() -> None:
    x = torch.tensor([1.0, 2.0, 3.0])
    out = []

    def f(y):
        out.append(repr(x))
        return y

    vjp(f, torch.randn(4))
    assert out == [repr(x)]


def test_no_grad_outside_and_inside() -> None:
    x = torch.randn([], requires_grad=True)
    with torch.no_grad():
        y = grad(torch.sin)(x)
    assert_equal(y, x.cos())
    assert not y.requires_grad

    def f(x):
        with torch.no_grad():
            shift = x**2
        return x**2 - shift

    x = torch.randn([])
    assert_equal(grad(f)(x), 2 * x)
    assert_equal(grad(grad(f))(x), 2)
    x = torch.randn([], requires_grad=True)
    y = grad(f)(x)
    (z,) = torch.autograd.grad(y, x)
    assert_equal(z, 2)
    with torch.no_grad():
        y = grad(f)(x)
    assert_equal(y, 2 * x)
    assert not y.requires_grad


def test_no_grad_nested_simple_complicated_and_value() -> None:
    def h(x):
        with torch.no_grad():
            shift = grad(lambda x: 0.25 * x**4)(x)
        return x**3 - shift

    x = torch.tensor(1.5, requires_grad=True)
    y = grad(h)(x)
    assert_equal(y, 3 * x**2)
    (z,) = torch.autograd.grad(y, x)
    assert_equal(z, 6 * x)

    def f(x):
        with torch.no_grad():
            shift = x**3
        return x**3 - shift

    def g(x):
        r1 = grad(f)(x)
        with torch.no_grad():
            shift = grad(f)(x)
        return r1 - shift

    x = torch.randn([], requires_grad=True)
    y = grad(g)(x)
    assert_equal(y, 6 * x)
    (z,) = torch.autograd.grad(y, x)
    assert_equal(z, 6)

    def k(x):
        with torch.no_grad():
            gvalue, value = grad_and_value(lambda x: x**3)(x)
        return x**3 - value

    x = torch.tensor(1.6, requires_grad=True)
    y = grad(k)(x)
    assert_equal(y, 3 * x**2)
    (z,) = torch.autograd.grad(y, x)
    assert_equal(z, 6 * x)


def test_no_grad_outside_vjp_variants() -> None:
    def h(x):
        return x**2

    x = torch.tensor(2.0, requires_grad=True)
    with torch.no_grad():
        out, vjp_fn = vjp(h, x)
        (y,) = vjp_fn(torch.tensor(1.0))
    assert_equal(y, 2 * x)
    assert not y.requires_grad and not out.requires_grad

    x = torch.tensor(3.14, requires_grad=True)
    out, vjp_fn = vjp(h, x)
    with torch.no_grad():
        (y,) = vjp_fn(torch.tensor(1.0))
    assert_equal(y, 2 * x)
    assert not y.requires_grad and out.requires_grad
    (z,) = torch.autograd.grad(out, x)
    assert_equal(z, 2 * x)

    x = torch.tensor(3.14, requires_grad=True)
    with torch.no_grad():
        out, vjp_fn = vjp(h, x)
    (y,) = vjp_fn(torch.tensor(1.0))
    assert_equal(y, 2 * x)
    assert not out.requires_grad
    assert y.requires_grad  # PyTorch's "a little weird" case
    (z,) = torch.autograd.grad(y, x)
    assert_equal(z, 2)


def test_inference_mode_outside_transforms() -> None:
    x = torch.randn(3)
    t = torch.ones(3)
    with torch.inference_mode():
        assert_equal(grad(lambda x: (x**2).sum())(x), 2 * x)
        with torch.no_grad():
            assert_equal(grad(lambda x: (x**2).sum())(x), 2 * x)
        out, vjp_fn = vjp(lambda x: (x**2).sum(), x)
        assert_equal(vjp_fn(torch.tensor(1.0)), (2 * x,))
        _, y = jvp(lambda x: (x**2).sum(), (x,), (t,))
        assert_equal(y, (2 * x * t).sum())
        assert_equal(jacrev(lambda x: x**2)(x), torch.diag(2 * x))
        xs = torch.randn(5, 3)
        assert_equal(vmap(grad(lambda x: (x**2).sum()))(xs), 2 * xs)
        assert_equal(grad(lambda x: vmap(lambda x: (x**2).sum())(x).sum())(x), 2 * x)
        s = torch.randn([])
        assert_equal(grad(grad(lambda x: x**3))(s), 6 * s)
        assert_equal(jacrev(grad(lambda x: (x**3).sum()))(x), torch.diag(6 * x))


def test_inference_mode_inside_grad_and_restored() -> None:
    def f(x):
        with torch.inference_mode():
            c = x**2
        return x - c

    x = torch.randn(3)
    with torch.inference_mode():
        y = grad(lambda x: f(x).sum())(x)
    assert_equal(y, torch.ones_like(x))

    assert not torch.is_inference_mode_enabled()
    with torch.inference_mode():
        assert torch.is_inference_mode_enabled()
        grad(lambda x: (x**2).sum())(torch.randn(3))
        assert torch.is_inference_mode_enabled()
    assert not torch.is_inference_mode_enabled()


# --- TestAutogradFunction (the parts without setup_context-only machinery) ----------------


def test_autograd_function_set_materialize_grads() -> None:
    seen = []

    class A(torch.autograd.Function):
        @staticmethod
        def forward(x, y):
            return x, y

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.set_materialize_grads(False)

        @staticmethod
        def backward(ctx, gx, gy):
            seen.append((gx is not None, gy is None))
            return gx, gy

    def f(y, x):
        x, y = A.apply(x, y)
        return x**2

    x, y = torch.tensor(2.0), torch.tensor(3.0)
    grad(f)(y, x)
    grad(grad(f))(y, x)
    assert seen and all(s == (True, True) for s in seen)


def test_autograd_function_needs_input_grads() -> None:
    seen = []

    class A(torch.autograd.Function):
        @staticmethod
        def forward(x, y):
            return x * y

        @staticmethod
        def setup_context(ctx, inputs, output):
            return

        @staticmethod
        def backward(ctx, grad_output):
            seen.append(tuple(ctx.needs_input_grad))
            return None, None

    x, y = torch.tensor(2.0), torch.tensor(3.0)
    grad(A.apply)(x, y)
    grad(grad(A.apply))(x, y)
    assert seen and all(s == (True, False) for s in seen)


def test_autograd_function_once_differentiable_vjp() -> None:
    class NumpyCubeNotComposable(torch.autograd.Function):
        @staticmethod
        def forward(input):
            input_np = input.cpu().numpy()
            return torch.tensor(input_np**3), input_np

        @staticmethod
        def setup_context(ctx, inputs, output):
            ctx.input_np = output[1]

        @staticmethod
        @torch.autograd.function.once_differentiable
        def backward(ctx, grad_output, grad_saved):
            return torch.tensor(3 * (ctx.input_np**2)) * grad_output

    def f(x):
        y, _ = NumpyCubeNotComposable.apply(x)
        return y

    x = torch.randn([], requires_grad=True)
    grad_y = torch.randn_like(x, requires_grad=True)
    _, vjp_fn = vjp(f, x)
    (gx,) = vjp_fn(grad_y)
    assert_equal(gx, 3 * x**2 * grad_y)
    with pytest.raises(RuntimeError, match="marked with @once_differentiable"):
        gx.backward()


class _MySin(torch.autograd.Function):
    """A Function of the pre-2.0 style (forward takes ctx, no setup_context)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.sin()

    @staticmethod
    def backward(ctx, gy):
        (x,) = ctx.saved_tensors
        return gy * x.cos()


_TRANSFORMS = {
    "vmap": lambda f, x: vmap(f)(x),
    "grad": lambda f, x: grad(lambda t: f(t).sum())(x),
    "grad_and_value": lambda f, x: grad_and_value(lambda t: f(t).sum())(x),
    "vjp": lambda f, x: vjp(f, x),
    "jvp": lambda f, x: jvp(f, (x,), (x,)),
    "jacrev": lambda f, x: jacrev(f)(x),
    "jacfwd": lambda f, x: jacfwd(f)(x),
    "hessian": lambda f, x: hessian(lambda t: f(t).sum())(x),
}


@pytest.mark.parametrize("transform", list(_TRANSFORMS))
def test_autograd_function_no_setup_context(transform: str) -> None:
    """PyTorch refuses a Function without setup_context inside any functorch transform
    (test_autograd_function_no_setup_context, TestTransformFailure); rt ran it."""
    x = torch.randn(3)
    with pytest.raises(RuntimeError, match="must override the setup_context"):
        _TRANSFORMS[transform](_MySin.apply, x)
    y = _MySin.apply(x.requires_grad_())  # outside transforms: as before
    assert type(y.grad_fn).__name__ == "_MySinBackward" and torch.is_grad_enabled()


class _SinNoVmap(torch.autograd.Function):
    @staticmethod
    def forward(x):
        return x.sin()

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.save_for_backward(inputs[0])

    @staticmethod
    def backward(ctx, gy):
        (x,) = ctx.saved_tensors
        return gy * x.cos()

    @staticmethod
    def jvp(ctx, tx):
        (x,) = ctx.saved_tensors
        return tx * x.cos()


def test_autograd_function_vmap_support() -> None:
    """Inside vmap (jacfwd, hessian: vmap over jvp), PyTorch asks a Function for a vmap rule
    or generate_vmap_rule=True, not both; grad, vjp, jvp and jacrev do not."""
    x = torch.randn(3)
    for name in ("vmap", "jacfwd", "hessian"):
        with pytest.raises(RuntimeError, match="You tried to vmap over _SinNoVmap, but it does "
                                               "not have vmap support"):
            _TRANSFORMS[name](_SinNoVmap.apply, x)
    with pytest.raises(RuntimeError, match="does not have vmap support"):
        vmap(lambda t: t + _SinNoVmap.apply(x))(torch.randn(2, 3))
    for name in ("grad", "vjp", "jvp", "jacrev"):
        _TRANSFORMS[name](_SinNoVmap.apply, x)
    assert_equal(jacrev(_SinNoVmap.apply)(x), torch.diag(x.cos()))

    class Generated(_SinNoVmap):
        generate_vmap_rule = True

    assert_equal(vmap(Generated.apply)(torch.ones(2, 3)), torch.ones(2, 3).sin())
    assert_equal(jacfwd(Generated.apply)(x), torch.diag(x.cos()))

    class Both(Generated):
        @staticmethod
        def vmap(info, in_dims, x):
            return x.sin(), in_dims[0]

    with pytest.raises(RuntimeError, match="it has both generate_vmap_rule=True and an "
                                           "overridden vmap staticmethod"):
        vmap(Both.apply)(torch.ones(2, 3))


def test_autograd_function_jvp_needs_a_jvp() -> None:
    class NoJvp(torch.autograd.Function):
        generate_vmap_rule = True

        @staticmethod
        def forward(x):
            return x * 2

        @staticmethod
        def setup_context(ctx, inputs, output):
            pass

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = torch.randn(3)
    for name in ("jvp", "jacfwd"):
        with pytest.raises(NotImplementedError, match="You must implement the jvp function for "
                                                      "custom autograd.Function to use it with "
                                                      "forward mode AD."):
            _TRANSFORMS[name](NoJvp.apply, x)
    assert_equal(jacrev(NoJvp.apply)(x), 2 * torch.eye(3))


# --- TestVmapOfGrad ------------------------------------------------------------------------


def test_per_sample_grads_inplace_view_and_simple() -> None:
    def compute_loss(weight, x, t):
        x = x.mm(weight)
        y = x.squeeze_(0)
        return (y - t).sum()

    weight = torch.randn(16, 2)
    x = torch.randn(8, 1, 16)
    t = torch.randn(8, 2)
    result = vmap(partial(grad(compute_loss), weight))(x, t)
    expected = torch.stack([grad(compute_loss)(weight, x[i], t[i]) for i in range(8)])
    assert_equal(result, expected, atol=0, rtol=5e-4)

    def simple_loss(weight, x, t):
        y = x @ weight
        return ((y - t) ** 2).sum()

    x = torch.randn(8, 16)
    result = vmap(partial(grad(simple_loss), weight))(x, t)
    expected = torch.stack([grad(simple_loss)(weight, x[i], t[i]) for i in range(8)])
    assert_equal(result, expected, atol=0, rtol=5e-4)


@pytest.mark.parametrize("new", ["new_zeros", "new_empty"])
def test_new_zeros_new_empty_materialize_tensor(new: str) -> None:
    N, C = 3, 5

    def foo(y, x):
        result = getattr(x, new)((C,))
        result.copy_(y)
        return result.sum()

    x, y = torch.randn(N), torch.randn(N, C)
    assert_equal(vmap(grad(foo))(y, x), torch.ones_like(y))


def test_per_sample_grads_embeddingnet_functional_call() -> None:
    class SampleNet(nn.Module):
        def __init__(self, vocab_size: int):
            super().__init__()
            self.emb = nn.Embedding(vocab_size, 16)
            self.fc1 = nn.Linear(16, 16)
            self.fc2 = nn.Linear(16, 2)

        def forward(self, x):
            x = self.emb(x)
            x = torch.transpose(x, -1, -2)
            x = torch.mean(x, -1)
            x = F.relu(self.fc1(x))
            return self.fc2(x)

    vocab_size, B = 50, 4
    data = torch.randint(0, vocab_size, (B, 5))
    targets = torch.randint(0, 1, (B,))
    net = SampleNet(vocab_size)
    criterion = nn.CrossEntropyLoss()
    weights = dict(net.named_parameters())

    def compute_loss(weights, data, target):
        return criterion(functional_call(net, weights, (data,)), target)

    expected = [grad(compute_loss)(weights, data[i], targets[i]) for i in range(B)]
    result = vmap(partial(grad(compute_loss), weights))(data, targets)
    for key in result:
        assert_equal(result[key], torch.stack([e[key] for e in expected]), atol=0, rtol=1.5e-3)


def test_vmap_of_vjp_log_softmax() -> None:
    x, v = torch.randn(3, 5), torch.randn(5)

    def foo(x, v):
        _, vjp_fn = vjp(partial(torch.log_softmax, dim=-1), x)
        return vjp_fn(v)[0]

    result = vmap(foo, (0, None))(x, v)
    v = v.expand_as(x)
    x.requires_grad_()
    torch.log_softmax(x, dim=-1).backward(v)
    assert_equal(result, x.grad)


# --- TestJac (jacrev and jacfwd) -------------------------------------------------------------

jacapis = pytest.mark.parametrize("jacapi", [jacrev, jacfwd], ids=["jacrev", "jacfwd"])


@jacapis
def test_jac_simple_not_flat_take_diff_numel(jacapi: Any) -> None:
    x = torch.randn(3)
    assert_equal(jacapi(torch.sin)(x), torch.diagflat(x.cos()))
    x = torch.randn(2, 3)
    assert_equal(jacapi(torch.sin)(x), torch.diagflat(x.view(-1).cos()).view(2, 3, 2, 3))

    x = torch.rand(5)

    def func(x):
        return torch.take(x, torch.ones(3, dtype=torch.long))

    assert_equal(jacapi(func)(x), torch.autograd.functional.jacobian(func, x))

    x = torch.randn(2, 4)
    y = jacapi(lambda x: x[0, 1:].unsqueeze(-1))(x)
    assert y.shape == (3, 1, 2, 4)
    expected = x.new_zeros(3, 1, 2, 4)
    expected[0, 0, 0, 1] = 1
    expected[1, 0, 0, 2] = 1
    expected[2, 0, 0, 3] = 1
    assert_equal(y, expected)


@jacapis
def test_jac_vmap_on_jac_and_nested(jacapi: Any) -> None:
    x = torch.randn(2, 3)
    expected = torch.stack([torch.diagflat(x[i].cos()) for i in range(2)])
    assert_equal(vmap(jacapi(torch.sin))(x), expected)
    x = torch.randn(3)
    assert_equal(jacapi(jacapi(lambda x: x.sin().sum()))(x), torch.diagflat(-x.sin()))


@jacapis
def test_jac_multiple_args_outputs_argnums(jacapi: Any) -> None:
    x, y = torch.randn(3), torch.randn(3)
    assert_equal(jacapi(torch.multiply, argnums=1)(x, y), torch.diagflat(x))

    def f(x, y):
        return 2 * x + 3 * y, 4 * x + 5 * y

    def d(v):
        return torch.diagflat(torch.full_like(x, v))

    z = jacapi(f, argnums=(0, 1))(x, y)
    assert isinstance(z, tuple) and isinstance(z[0], tuple)
    assert_equal(z, ((d(2), d(3)), (d(4), d(5))))
    z = jacapi(f, argnums=0)(x, y)
    assert isinstance(z, tuple) and len(z) == 2
    assert_equal(z, (d(2), d(4)))
    z = jacapi(f, argnums=(0,))(x, y)
    assert isinstance(z[0], tuple)
    assert_equal(z, ((d(2),), (d(4),)))

    z = jacapi(lambda x, y: {"left": 2 * x + 3 * y, "right": 4 * x + 5 * y},
               argnums=(0, 1))(x, y)
    assert isinstance(z, dict) and isinstance(z["left"], tuple)
    assert_equal(z, {"left": (d(2), d(3)), "right": (d(4), d(5))})


@jacapis
def test_jac_multiple_inputs_pytree_and_dimensionality(jacapi: Any) -> None:
    def f(a, b, c):
        a0, a1 = a
        return a0 + a1 * 2 + b * 3 + c * 4

    x = torch.randn([])
    args = ((x, x), x, x)
    assert_equal(jacapi(f, argnums=(0, 1, 2))(*args), ((1.0, 2.0), 3.0, 4.0))
    assert_equal(jacapi(f, argnums=(0,))(*args), ((1.0, 2.0),))
    assert_equal(jacapi(f)(*args), (1.0, 2.0))

    result = jacapi(lambda x: x)(x)
    assert result.dim() == 0
    assert_equal(result, torch.ones_like(x))
    x = torch.randn([1])
    result = jacapi(lambda x: x)(x)
    assert result.dim() == 2
    assert_equal(result, x.new_ones(1, 1))


@jacapis
def test_jac_aux_tensor_and_pytree(jacapi: Any) -> None:
    x = torch.randn(3)

    def f(x):
        y = x.clone()
        return y, y.cos()

    result, aux = jacapi(f, has_aux=True)(x)
    assert_equal(result, torch.eye(3, 3))
    assert_equal(aux, x.cos())

    def g(x):
        y = x.clone()
        return y, {"a": y.cos(), "b": [y.tan()]}

    result, aux = jacapi(g, has_aux=True)(x)
    assert_equal(result, torch.eye(3, 3))
    assert_equal(aux, g(x)[1])
    for bad in [1, 1.0, "abc"]:
        with pytest.raises(RuntimeError, match=r"Expected tensors, got unsupported type"):
            jacapi(lambda x: (x, bad), has_aux=True)(x)
        with pytest.raises(RuntimeError, match=r"Expected tensors, got unsupported type"):
            jacapi(lambda x: (x, [x, bad]), has_aux=True)(x)


@jacapis
def test_jac_outputs_can_be_any_pytree(jacapi: Any) -> None:
    x = torch.randn(2, 3)
    for output in [None, ()]:
        with pytest.raises(RuntimeError, match=r"(vjp|jvp).+: Expected f to be a function that "
                                               r"has non-empty output"):
            jacapi(lambda _: output)(x)
    for output in [1, True, 12.2, "abc"]:
        with pytest.raises(RuntimeError, match=r"(vjp|jvp).+: expected f\(\*primals\) to "
                                               r"return only tensors"):
            jacapi(lambda _: output)(x)
    out = jacapi(lambda x: [x, x.sum()])(x)
    assert isinstance(out, list) and len(out) == 2
    out = jacapi(lambda x: {"x": x, "xsum": x.sum()})(x)
    assert isinstance(out, dict) and len(out) == 2 and "xsum" in out

    def composite_output(x):
        out = x.sum()
        return [(out, {"a": x, "out": [x, out]})]

    out = jacapi(composite_output)(x)
    assert isinstance(out, list)
    assert isinstance(out[0], tuple) and isinstance(out[0][1], dict)


@jacapis
def test_jac_multiple_inputs_outputs_pytree(jacapi: Any) -> None:
    def f(a, b, c):
        a0, a1 = a
        return a0 + a1 * 2, {"foo": b * 3 + c * 4}

    x = torch.randn([])
    zero = torch.zeros([])
    args = ((x, x), x, x)
    assert_equal(jacapi(f)(*args), ((1.0, 2.0), {"foo": (zero, zero)}))
    assert_equal(jacapi(f, argnums=(0,))(*args), (((1.0, 2.0),), {"foo": ((zero, zero),)}))
    assert_equal(jacapi(f, argnums=(0, 1))(*args),
                 (((1.0, 2.0), zero), {"foo": ((zero, zero), 3.0)}))

    def g(dct):
        return {"c": dct["a"].sin(), "d": dct["b"].cos()}

    x = torch.randn(3)
    expected = {"c": {"a": x.cos().diagflat(), "b": x.new_zeros(3, 3)},
                "d": {"a": x.new_zeros(3, 3), "b": -x.sin().diagflat()}}
    assert_equal(jacapi(g)({"a": x, "b": x}), expected)


@jacapis
def test_jac_unrelated_input_output_and_empty_output(jacapi: Any) -> None:
    x, y = torch.randn(2, 3), torch.randn(2, 3)
    result = jacapi(lambda x, y: x, argnums=(0, 1))(x, y)
    assert isinstance(result, tuple)
    assert_equal(result, (torch.eye(6, 6).view(2, 3, 2, 3), y.new_zeros(2, 3, 2, 3)))
    assert_equal(jacapi(lambda x: y)(x), x.new_zeros(2, 3, 2, 3))
    with pytest.raises(RuntimeError, match="xpected"):
        jacapi(lambda x, y: ())(x, y)


@jacapis
def test_jac_argnums_errors_and_effects(jacapi: Any) -> None:
    x, y = torch.randn(3), torch.randn(3)
    z = jacapi(torch.multiply, argnums=(0, 1))(x, y)
    assert len(z) == 2
    assert_equal(z, (torch.diagflat(y), torch.diagflat(x)))
    z = jacapi(torch.multiply, argnums=(0,))(x, y)
    assert isinstance(z, tuple) and len(z) == 1
    assert_equal(z[0], torch.diagflat(y))
    z = jacapi(torch.multiply, argnums=0)(x, y)
    assert isinstance(z, torch.Tensor)
    assert_equal(jacapi(lambda x, y: x * 2 + y * 3)(x, y), torch.diagflat(torch.full_like(x, 2)))
    with pytest.raises(RuntimeError, match="must be non-empty"):
        jacapi(torch.sin, argnums=())(x)
    for argnums in (2, -2):
        with pytest.raises(RuntimeError, match="only 1 positional inputs"):
            jacapi(torch.sin, argnums=argnums)(x)
    with pytest.raises(RuntimeError, match="must be unique"):
        jacapi(torch.sin, argnums=(0, 0))(x)
    with pytest.raises(RuntimeError, match="must be int or Tuple"):
        jacapi(torch.sin, argnums=0.0)(x)
    with pytest.raises(RuntimeError, match="must be int"):
        jacapi(torch.multiply, argnums=(1, 0.0))(x, x)


def _jac_against_reference(f: Any, inputs: tuple[Any, ...], jacapi: Any) -> None:
    expected = torch.autograd.functional.jacobian(f, inputs)
    assert_equal(jacapi(lambda inputs: f(*inputs))(inputs), expected)


@jacapis
def test_jac_against_reference(jacapi: Any) -> None:
    _jac_against_reference(lambda x: 3 * x**2, (torch.randn(2, 3),), jacapi)
    _jac_against_reference(lambda x, y: (x.cos() * x) @ y.sin(),
                           (torch.randn(2, 3), torch.randn(3, 2)), jacapi)
    _jac_against_reference(lambda x, y: ((x * x) @ y, x @ (x.sum(1) * y), y.sum()),
                           (torch.randn(2, 3), torch.randn(3, 2)), jacapi)
    _jac_against_reference(lambda x, y: (x, y, x, y), (torch.randn(2), torch.randn(3)), jacapi)
    _jac_against_reference(lambda x, y: (x.sum(), y.sum(), x * y),
                           (torch.randn(3), torch.randn(3)), jacapi)
    _jac_against_reference(lambda x: torch.stack([x, x, x]), (torch.randn([]),), jacapi)
    _jac_against_reference(lambda x, y: (y.sum(), x * y), (torch.randn([]), torch.randn(1)),
                           jacapi)
    _jac_against_reference(lambda x, y: (x * y, (x * y).to(device="cpu")),
                           (torch.randn(3), torch.randn(3)), jacapi)

    def f(x, y, z=3.0):
        return x * y * z

    _jac_against_reference(f, (torch.randn(3), torch.randn(3)), jacapi)


@jacapis
def test_jac_inplace(jacapi: Any) -> None:
    def f(x, y):
        y.copy_(x)
        return y

    x, y = torch.randn(2), torch.randn(2)
    assert_equal(jacapi(f, argnums=0)(x, y), torch.eye(y.shape[0]))

    def g(x, y, z):
        x[:2] = y
        return torch.vstack([(x**2).sum(), (z**3).sum()])

    x, y, z = torch.randn(3), torch.randn(2), torch.randn(2)
    expected = (torch.zeros(2, 1, 2), torch.zeros(2, 1, 2))
    expected[0][0][0] = 2 * y
    expected[1][1][0] = 3 * (z**2)
    assert_equal(jacapi(g, argnums=(1, 2))(x, y, z), expected)


@pytest.mark.parametrize("_preallocate_and_copy", (True, False))
def test_chunk_jacrev(_preallocate_and_copy: bool) -> None:
    x, y = torch.randn(4, 2), torch.randn(1, 2)

    def f(x, y):
        return (x.sin(), x + y), (x + 2, x.sum())

    expected = jacrev(f, argnums=(0, 1))(x, y)
    for chunk_size in (1, 3, 1000):
        actual = jacrev(f, argnums=(0, 1), chunk_size=chunk_size,
                        _preallocate_and_copy=_preallocate_and_copy)(x, y)
        assert_equal(actual, expected)
    err_msg = "jacrev: `chunk_size` should be greater than 0."
    for chunk_size in (0, -2):
        with pytest.raises(ValueError, match=err_msg):
            jacrev(f, argnums=(0,), chunk_size=chunk_size)(x, y)


def test_chunk_jacrev_composition() -> None:
    x = torch.randn(2, 2)

    def f(x):
        return (x.sin(), x), (x + 2, x.sum())

    expected = vmap(jacrev(jacrev(f)))(x)
    actual = vmap(jacrev(jacrev(f, chunk_size=3, _preallocate_and_copy=True), chunk_size=3))(x)
    assert_equal(actual, expected)


@jacapis
def test_jac_with_non_tensor_args(jacapi: Any) -> None:
    def f(t, int_x):
        return t + int_x

    t = torch.randn(3, 3)
    assert_equal(jacapi(f)(t, 3), torch.autograd.functional.jacobian(partial(f, int_x=3), t))


# --- TestHessian ---------------------------------------------------------------------------


def _hessian_against_reference(f: Any, inputs: tuple[Any, ...]) -> None:
    expected = torch.autograd.functional.hessian(f, inputs)
    assert_equal(hessian(lambda inputs: f(*inputs))(inputs), expected)


def test_hessian_simple_and_against_reference() -> None:
    x = torch.randn(3)
    assert_equal(hessian(lambda x: x.sin())(x), torch.diag_embed(torch.diagflat(-x.sin())))
    _hessian_against_reference(lambda x: (3 * x**2).sum(), (torch.randn(2, 3),))
    _hessian_against_reference(lambda x, y, z: ((x.relu() * x) @ y.sin() @ z).sum(),
                               (torch.randn(2, 3), torch.randn(3, 2), torch.randn(2, 2)))
    _hessian_against_reference(lambda x, y: (x**2).sum(), (torch.randn(2), torch.randn(3)))
    _hessian_against_reference(lambda x, y: torch.ones([]), (torch.randn(2), torch.randn(3)))


def test_jacfwd_different_levels() -> None:
    b, n, d = 2, 5, 2
    x1 = torch.randn(b, n, d)
    x2 = x1
    A = 0.1 * torch.randn(b, d, d)

    def loss(A, x1, x2):
        x2_hat = (A @ (x1.T)).T
        return ((x2 - x2_hat) ** 2).sum()

    assert_equal(vmap(hessian(loss))(A, x1, x2), vmap(jacrev(jacrev(loss)))(A, x1, x2))


# --- TestJvp -------------------------------------------------------------------------------


def test_jvp_simple_multiple_inputs_outputs() -> None:
    x, t = torch.randn(2, 3), torch.randn(2, 3)
    result = jvp(torch.sin, (x,), (t,))
    assert isinstance(result, tuple)
    assert_equal(result, (x.sin(), x.cos() * t))

    y, tx, ty = torch.randn(2, 3), torch.randn(2, 3), torch.randn(2, 3)
    result = jvp(lambda x, y: x * y, (x, y), (tx, ty))
    assert_equal(result, (x * y, y * tx + x * ty))

    def f(x):
        return torch.sin(x), torch.cos(x)

    assert_equal(jvp(f, (x,), (t,)), (f(x), (x.cos() * t, -x.sin() * t)))

    def g(x, y):
        return 2 * x + 3 * y, 4 * x + 5 * y

    assert_equal(jvp(g, (x, y), (tx, ty)), (g(x, y), g(tx, ty)))


def test_jvp_pytree_inputs_and_errors() -> None:
    def f(x, y, z):
        a, b = x
        return a + 2 * b + 3 * y + 4 * z

    one = torch.tensor(1.0)
    primal_outs, tangent_outs = jvp(f, ((one, one), one, one), ((one, one), one, one))
    assert_equal(primal_outs, one * 10)
    assert_equal(tangent_outs, one * 10)

    def ident(x):
        return x

    with pytest.raises(RuntimeError, match="Expected primals to be a tuple"):
        jvp(ident, one, one)
    with pytest.raises(RuntimeError, match="same python structure"):
        jvp(ident, ((one, one), one), (one, one))
    with pytest.raises(RuntimeError, match="only contain Tensors"):
        jvp(ident, ((one, one), 1), ((one, one), one))
    with pytest.raises(RuntimeError, match="only contain Tensors"):
        jvp(ident, ((one, one), 1), ((1, one), one))
    with pytest.raises(RuntimeError, match="at least one Tensor"):
        jvp(ident, ((),), ((),))


def test_jvp_unrelated_input_output_and_strict() -> None:
    x, y = torch.randn(2, 3), torch.randn(2, 3)
    tx, ty = torch.randn(2, 3), torch.randn(2, 3)
    result = jvp(lambda x, y: x, (x, y), (tx, ty))
    assert isinstance(result, tuple)
    assert_equal(result, (x, tx))
    assert_equal(jvp(lambda x: y, (x,), (tx,)), (y, torch.zeros_like(y)))
    with pytest.raises(RuntimeError, match="strict"):
        jvp(lambda x: (x, y), (x,), (tx,), strict=True)


def test_jvp_new_tensor() -> None:
    x = torch.rand(10, 10)
    tangents = torch.zeros_like(x)

    def f(x):
        return x + x.new_tensor(0.5)

    assert_equal(jvp(f, (x,), (tangents,)), (f(x), torch.zeros_like(x)))


def test_jvp_primals_tangents_errors() -> None:
    x, t = torch.randn(2, 3), torch.randn(2, 3)
    with pytest.raises(RuntimeError, match="same python structure"):
        jvp(torch.sin, (x,), (t, t))
    with pytest.raises(RuntimeError, match="same python structure"):
        jvp(torch.sin, (x, x), (t, t, t))
    with pytest.raises(RuntimeError, match="at least one Tensor"):
        jvp(torch.sin, (), ())
    with pytest.raises(RuntimeError, match="be a tuple"):
        jvp(torch.sin, x, (t,))
    for tangents in (t, [t]):
        with pytest.raises(RuntimeError, match="same python structure"):
            jvp(torch.sin, (x,), tangents)
    with pytest.raises(RuntimeError, match="only contain Tensors"):
        jvp(torch.sin, (1.0,), (t,))
    with pytest.raises(RuntimeError, match="only contain Tensors"):
        jvp(torch.sin, (x,), (1.0,))


def test_jvp_outputs_can_be_any_pytree() -> None:
    x, t = torch.randn(2, 3), torch.randn(2, 3)
    for output in [None, ()]:
        with pytest.raises(RuntimeError, match=r"jvp\(f, primals, tangents\): Expected f to be "
                                               r"a function that has non-empty output"):
            jvp(lambda _: output, (x,), (t,))
    for output in [1, True, 12.2, "abc"]:
        with pytest.raises(RuntimeError, match=r"jvp\(f, primals, tangents\): expected "
                                               r"f\(\*primals\) to return only tensors"):
            jvp(lambda _: output, (x,), (t,))
    out = jvp(lambda x: [x, x.sum()], (x,), (t,))
    for i in range(2):
        assert isinstance(out[i], list) and len(out[i]) == 2
    out = jvp(lambda x: {"x": x, "xsum": x.sum()}, (x,), (t,))
    for i in range(2):
        assert isinstance(out[i], dict) and len(out[i]) == 2 and "xsum" in out[i]

    def composite_output(x):
        out = x.sum()
        return [(out, {"a": x, "out": [x, out]})]

    out = jvp(composite_output, (x,), (t,))
    for i in range(2):
        assert isinstance(out[i], list)
        assert isinstance(out[i][0], tuple) and isinstance(out[i][0][1], dict)
    assert_equal(out[1][0][1]["out"][1], t.sum())


def test_jvp_aux_tensor_and_pytree() -> None:
    x, t = torch.randn(3), torch.randn(3)
    msg = r"jvp\(f, primals, tangents\): output of function f should be a tuple"
    with pytest.raises(RuntimeError, match=msg):
        jvp(lambda t: [t, t], (x,), (t,), has_aux=True)
    with pytest.raises(RuntimeError, match=msg):
        jvp(lambda t: (t, t + 2, t + 3), (x,), (t,), has_aux=True)

    out, jvp_out, aux = jvp(lambda z: (z.sin(), z.cos()), (x,), (t,), has_aux=True)
    assert_equal((out, jvp_out, aux), (x.sin(), t * x.cos(), x.cos()))

    def f(x):
        return x.sin(), {"a": x.cos(), "b": [x.tan()]}

    out, jvp_out, aux = jvp(f, (x,), (t,), has_aux=True)
    expected_out, expected_aux = f(x)
    assert_equal((out, aux, jvp_out), (expected_out, expected_aux, t * x.cos()))
    for bad in [1, 1.0, "abc"]:
        with pytest.raises(RuntimeError, match=r"Expected tensors, got unsupported type"):
            jvp(lambda x: (x, bad), (x,), (t,), has_aux=True)
        with pytest.raises(RuntimeError, match=r"Expected tensors, got unsupported type"):
            jvp(lambda x: (x, [x, bad]), (x,), (t,), has_aux=True)


def test_jvp_inside_autograd_function() -> None:
    class MySin(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            t = torch.ones_like(x)
            _, neg_sin_x = jvp(torch.cos, (x,), (t,))
            ctx.save_for_backward(x)
            return -neg_sin_x

        @staticmethod
        def backward(ctx, gx):
            (x,) = ctx.saved_tensors
            t = torch.ones_like(x)
            _, cos_x = jvp(torch.sin, (x,), (t,))
            return gx * cos_x

    x = torch.randn([], requires_grad=True)
    y = MySin.apply(x)
    assert_equal(y, x.sin())
    (gx,) = torch.autograd.grad(y, x)
    assert_equal(gx, x.cos())


def test_zerotensor_vmapjvp_interaction() -> None:
    dummy = torch.ones(4, 1)
    x = torch.randn(4, 2)
    x_tangent = torch.randn(2)

    def push_jvp(dummy, x):
        return jvp(torch.cov, (x,), (x_tangent,))

    out, tangent = vmap(vmap(push_jvp, (0, None)))(dummy, x)
    assert out.shape == (4, 1) and tangent.shape == (4, 1)


# --- TestLinearize -------------------------------------------------------------------------


def test_linearize_basic_and_return() -> None:
    x_p, x_t = torch.randn(3, 1), torch.randn(3, 1)
    for fn in (lambda x: x.cos(), lambda x: (x.cos(), x.sum())):
        actual_output, jvp_fn = linearize(fn, x_p)
        expected_output, expected_jvp = jvp(fn, (x_p,), (x_t,))
        assert_equal(actual_output, expected_output)
        assert_equal(jvp_fn(x_t), expected_jvp)


def test_linearize_composition_vmap_and_grad() -> None:
    x_p, x_t = torch.randn(3, 1), torch.randn(3, 3, 1)

    def fn(x):
        return (x.cos(), x.sum())

    _, jvp_fn = linearize(fn, x_p)
    expected = vmap(lambda t: jvp(fn, (x_p,), (t,))[1])(x_t)
    assert_equal(vmap(jvp_fn)(x_t), expected)

    x_p, x_t = torch.randn(3), torch.randn(3)

    def gn(x):
        z = torch.ones(3)
        return grad(lambda x: z @ x)(x)

    _, jvp_fn = linearize(gn, x_p)
    assert_equal(jvp_fn(x_t), jvp(gn, (x_p,), (x_t,))[1])


def test_linearize_nested_input_nested_output() -> None:
    x_p, x_t, y_p, y_t, z_p, z_t = (torch.randn(3, 1) for _ in range(6))

    def fn(arg):
        x = arg["x"]
        y, z = arg["yz"]
        return {"a": x.sum(), "b": {"c": y + z, "d": (x * z, y.exp())}}

    inp_p = {"x": x_p, "yz": (y_p, z_p)}
    inp_t = {"x": x_t, "yz": (y_t, z_t)}
    actual_output, jvp_fn = linearize(fn, inp_p)
    expected_output, expected_jvp = jvp(fn, (inp_p,), (inp_t,))
    assert_equal(actual_output, expected_output)
    assert_equal(jvp_fn(inp_t), expected_jvp)


def test_linearize_errors() -> None:
    x_p, x_t = torch.randn(3, 1), torch.randn(3, 1)
    _, jvp_fn = linearize(lambda x: x.sin(), x_p)
    with pytest.raises(RuntimeError, match="to have the same argspec as the primals"):
        jvp_fn((x_t, x_t))
    with pytest.raises(RuntimeError, match="in flattened pytree doesn't match the shape"):
        jvp_fn(x_t.unsqueeze(0))
    with pytest.raises(RuntimeError, match="in flattened pytree doesn't match the dtype"):
        jvp_fn(x_t.to(torch.double))


# --- TestVmapJvpInplaceView ----------------------------------------------------------------


def _push_jvp(f: Any) -> Any:
    def inner(x, xt, y, yt):
        return jvp(f, (x, y), (xt, yt))
    return inner


def test_vmap_jvp_all_dual_no_view() -> None:
    B = 2

    def f(x, y):
        x.copy_(y)
        return x

    x, xt, y, yt = (torch.randn(3, B) for _ in range(4))
    out, out_tangent = vmap(_push_jvp(f), in_dims=1)(x, xt, y, yt)
    assert_equal(out, x.movedim(1, 0))
    assert_equal(out_tangent, yt.movedim(1, 0))

    x, xt = torch.randn(3, B), torch.randn(3, B)
    y, yt = torch.randn(3, 3)[:, 1], torch.randn(6)[::2]
    out, out_tangent = vmap(_push_jvp(f), in_dims=(1, 1, None, None))(x, xt, y, yt)
    assert_equal(out, x.movedim(1, 0))
    assert_equal(out_tangent, yt.expand(B, 3))


def test_jvp_inplace_on_primal_writes_through() -> None:
    """PyTorch's dual tensors take in-place ops, and the write reaches the caller's tensor."""
    x = torch.tensor([1.0, 2.0, 3.0])
    out, tangent = jvp(lambda x: x.mul_(2), (x,), (torch.ones(3),))
    assert_equal(out, [2.0, 4.0, 6.0])
    assert_equal(tangent, [2.0, 2.0, 2.0])
    assert_equal(x, [2.0, 4.0, 6.0])
    x = torch.tensor([1.0, 2.0])
    assert_equal(jacfwd(lambda x: x.mul_(2))(x), [[2.0, 0.0], [0.0, 2.0]])


def test_vmap_jvp_all_dual_base_view_inplace() -> None:
    B = 2

    def f(x, y):
        view = x[:, ::2]
        view.copy_(y)
        return view, x

    orig_x, orig_xt = torch.randn(2, 6, B), torch.randn(2, 6, B)
    x, xt = orig_x.clone(), orig_xt.clone()
    y, yt = torch.randn(2, B, 3), torch.randn(2, B, 3)
    out, out_tangent = vmap(_push_jvp(f), in_dims=(2, 2, 1, 1))(x, xt, y, yt)
    expected_out = vmap(f, in_dims=(2, 1))(orig_x.clone(), y)
    assert_equal(out, expected_out)
    assert_equal(out_tangent[0], yt.movedim(1, 0))
    expected_x_tangent = orig_xt.movedim(-1, 0).clone()
    expected_x_tangent[:, :, ::2].copy_(yt.movedim(1, 0))
    assert_equal(out_tangent[1], expected_x_tangent)
    expected = orig_x.movedim(2, 0).clone()
    expected[:, :, ::2] = y.movedim(1, 0)
    assert_equal(x.movedim(2, 0), expected)


def test_vmap_jvp_all_dual_base_inplace() -> None:
    B = 2

    def f(x, y):
        view = x[0, ::2]
        x.copy_(y)
        return x, view

    x, xt = torch.randn(2, B, 6), torch.randn(2, 6, B)
    y, yt = torch.randn(2, B, 6), torch.randn(2, B, 6)
    out, out_tangent = vmap(_push_jvp(f), in_dims=(1, 2, 1, 1))(x.clone(), xt, y, yt)
    expected_out = vmap(f, in_dims=(1, 1))(x.clone(), y)
    assert_equal(out, expected_out)
    assert_equal(out_tangent[0], yt.movedim(1, 0))
    assert_equal(out_tangent[1], yt.movedim(1, 0)[:, 0, ::2])


def test_vmap_jvp_right_dual_view_and_base_prop() -> None:
    B = 2

    def f(x, y):
        x = x.clone()
        view = x[0]
        view.copy_(y)
        return view, x

    def push_jvp(x, y, yt):
        return jvp(partial(f, x), (y,), (yt,))

    x, y, yt = torch.randn(2, B, 6), torch.randn(6, B), torch.randn(6, B)
    outs, tangents = vmap(push_jvp, in_dims=(1, 1, 1))(x, y, yt)
    assert_equal(outs, vmap(f, in_dims=(1, 1))(x.clone(), y))
    assert_equal(tangents[0], yt.movedim(1, 0))
    expected_tangent_1 = torch.zeros_like(x).movedim(1, 0)
    expected_tangent_1[:, 0].copy_(yt.movedim(1, 0))
    assert_equal(tangents[1], expected_tangent_1)

    def g(x, y):
        x = x.clone()
        view = x[0]
        x.copy_(y)
        return view, x

    def push_jvp_g(x, y, yt):
        return jvp(partial(g, x), (y,), (yt,))

    x, y, yt = torch.randn(2, B, 6), torch.randn(2, 6, B), torch.randn(2, 6, B)
    outs, tangents = vmap(push_jvp_g, in_dims=(1, 2, 2))(x, y, yt)
    assert_equal(outs, vmap(g, in_dims=(1, 2))(x, y))
    assert_equal(tangents[0], yt.movedim(2, 0)[:, 0])
    assert_equal(tangents[1], yt.movedim(2, 0))


# --- TestComposability ---------------------------------------------------------------------


def test_composability_grad_vmap_vjp() -> None:
    x = torch.randn([])
    assert_equal(grad(grad(torch.sin))(x), -x.sin())
    x = torch.randn(3)
    assert_equal(grad(lambda x: vmap(torch.sin)(x).sum())(x), x.cos())

    def foo(x):
        _, vjp_fn = vjp(torch.sin, x)
        return vjp_fn(x)[0].sum()

    assert_equal(grad(foo)(x), grad(lambda x: (x * x.cos()).sum())(x))
    assert_equal(vmap(grad(torch.sin))(x), x.cos())
    x2 = torch.randn(2, 3)
    assert_equal(vmap(vmap(torch.sin))(x2), x2.sin())


def test_composability_vmap_vjp_and_vjp_of_transforms() -> None:
    x = torch.randn(3)
    _, vjp_fn = vjp(torch.sin, x)

    def foo(x):
        _, vjp_fn = vjp(torch.sin, x)
        return vjp_fn(x)

    assert_equal(vmap(foo)(x), vjp_fn(x))
    xs = torch.randn(5, 3)
    expected = torch.stack([vjp_fn(x)[0] for x in xs])
    assert_equal(vmap(lambda x: vjp_fn(x)[0])(xs), expected)

    x = torch.randn([])
    y, vjp_fn = vjp(grad(torch.sin), x)
    assert_equal(y, x.cos())
    v = torch.randn([])
    assert_equal(vjp_fn(v)[0], -x.sin() * v)

    x = torch.randn(3)
    y, vjp_fn = vjp(vmap(torch.sin), x)
    assert_equal(y, x.sin())
    v = torch.randn(3)
    assert_equal(vjp_fn(v)[0], x.cos() * v)

    y, vjp_fn = vjp(torch.sin, x)
    assert_equal(y, x.sin())
    y, vjp_fn = vjp(lambda x: vjp_fn(x)[0], x)
    assert_equal(y, x * x.cos())
    assert_equal(vjp_fn(x)[0], x * x.cos())


def test_requires_grad_and_retain_grad_inside_transform() -> None:
    """PyTorch refuses ``requires_grad_()`` / ``retain_grad()`` on a transform's tensors; here
    the checked part: the gradient is right where the call is harmless (rt's transforms have
    no wrapper tensors to refuse it on) -- see the module docstring."""
    def f(x):
        y = x.sin()
        y.retain_grad()
        return y.sum()

    x = torch.randn(3)
    assert_equal(grad(f)(x), x.cos())


def test_grad_name_wrapping_and_functional_call_multiple_dicts() -> None:
    def my_fn(x):
        return x.sum()

    assert grad(my_fn).__name__ == "my_fn"
    assert vmap(my_fn).__name__ == "my_fn"
    mod = nn.Linear(1, 1)
    x = torch.randn((1, 1))
    params = ({"weight": torch.zeros(1, 1)}, {"bias": torch.ones(1)})
    assert_equal(functional_call(mod, params, x), torch.ones(1, 1))


def test_tolist_inside_grad() -> None:
    def f(x):
        assert x.tolist() == [1.0, 2.0, 3.0]
        return (x**2).sum()

    x = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    assert_equal(grad(f)(x), [2.0, 4.0, 6.0])

    def g(x):
        def h(y):
            assert isinstance(y.tolist(), list)
            return (y**2).sum()

        assert isinstance(x.tolist(), list)
        return grad(h)(x).sum()

    assert_equal(grad(g)(x), [2.0, 2.0, 2.0])


# --- TestMakeFunctional (functional_call / stack_module_state) ------------------------------


class _LinearBuffer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(3, 3)
        self.buffer = nn.Buffer(torch.randn(3))

    def forward(self, x):
        return self.linear(x) + self.buffer


@pytest.mark.parametrize("detach_params", [True, False])
def test_using_detach_functional_call(detach_params: bool) -> None:
    mod = _LinearBuffer()
    x = torch.randn(3, 3)
    named = mod.named_parameters()
    params = {k: v.detach() for k, v in named} if detach_params else dict(named)
    out = functional_call(mod, (params, dict(mod.named_buffers())), x)
    assert (out.grad_fn is None) == detach_params


def test_parameter_tying_grad_functional_call() -> None:
    class Foo(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear = nn.Linear(3, 3)
            self.weight = self.linear.weight
            self.bias = self.linear.bias

        def forward(self, x):
            return F.linear(self.linear(x), self.weight, self.bias)

    x = torch.randn(2, 3)
    mod = Foo()
    expected = torch.autograd.grad(mod(x).sum(), list(mod.parameters()))
    params = dict(mod.named_parameters())
    result = grad(lambda p, x: functional_call(mod, p, (x,)).sum())(params, x)
    assert list(result) == ["weight", "bias"]  # named_parameters: own ones first
    assert_equal(tuple(result.values()), expected)


def test_parameter_tying_ensemble_stack_module_state() -> None:
    class Foo(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear = nn.Linear(3, 3)
            self.weight = self.linear.weight
            self.bias = self.linear.bias
            self.buffer = nn.Buffer(torch.randn(3))
            self.buffer_tied = self.buffer

        def forward(self, x):
            x = F.linear(self.linear(x), self.weight, self.bias)
            return x + self.buffer + self.buffer_tied

    num_models = 2
    xs = torch.randn(num_models, 4, 3)
    models = [Foo() for _ in range(num_models)]
    params, buffers = stack_module_state(models)
    assert list(params) == ["weight", "bias"] and list(buffers) == ["buffer"]

    def fmodel(params, buffers, x):
        return functional_call(models[0], (params, buffers), (x,))

    result = vmap(fmodel)(params, buffers, xs)
    expected = torch.stack([model(x) for model, x in zip(models, xs)])
    assert_equal(result, expected)


def test_stack_module_state_smoke_leaf_and_errors() -> None:
    models = [nn.Linear(2, 2) for _ in range(3)]
    params, buffers = stack_module_state(models)
    for param in params.values():
        assert param.requires_grad and param.is_leaf
    assert params["weight"].shape == (3, 2, 2) and buffers == {}

    models[0].weight.requires_grad_(False)
    with pytest.raises(RuntimeError, match="same .requires_grad"):
        stack_module_state(models)
    with pytest.raises(RuntimeError, match="stack_module_state:.* Expected at least one model"):
        stack_module_state([])
    models = [nn.Linear(2, 2) for _ in range(3)]
    models[1].eval()
    with pytest.raises(RuntimeError, match="stack_module_state:.* same training/eval mode."):
        stack_module_state(models)
    models = [nn.Linear(2, 2) for _ in range(3)]
    models[1] = nn.Conv2d(3, 3, (3, 3))
    with pytest.raises(RuntimeError, match="stack_module_state:.* models to be of the same class"):
        stack_module_state(models)


def test_functional_call_state_correctly_returned_after_forward() -> None:
    mod = nn.Sequential(nn.Linear(3, 3))
    old_weight, old_bias = mod[0].weight, mod[0].bias
    functional_call(mod, {k: v * 2 for k, v in mod.named_parameters()}, torch.randn(4, 3))
    assert mod[0].weight is old_weight and mod[0].bias is old_bias


# --- TestExamplesCorrectness ----------------------------------------------------------------


def test_maml_regression_functional_call() -> None:
    net = nn.Sequential(nn.Linear(1, 8), nn.ReLU(), nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 1))
    params = dict(net.named_parameters())
    K, num_tasks, alpha = 5, 3, 0.1

    def mse_loss(x, y):
        return torch.mean((x - y) ** 2)

    task = [torch.randn(num_tasks, K, 1) for _ in range(4)]

    def get_loss_for_task(use_transform, x1, y1, x2, y2):
        def inner_loss(params, x1, y1):
            return mse_loss(functional_call(net, params, (x1,)), y1)

        if use_transform:
            grads = grad(inner_loss)(params, x1, y1)
        else:
            loss = inner_loss(params, x1, y1)
            flat = torch.autograd.grad(loss, list(params.values()), create_graph=True)
            grads = dict(zip(params, flat))
        new_params = {k: params[k] - alpha * grads[k] for k in params}
        return mse_loss(functional_call(net, new_params, (x2,)), y2)

    inner_losses = vmap(partial(get_loss_for_task, True))(*task)
    result_grads = torch.autograd.grad(inner_losses.sum() / num_tasks, list(params.values()))
    inner_losses = [get_loss_for_task(False, *(t[i] for t in task)) for i in range(num_tasks)]
    expected_grads = torch.autograd.grad(sum(inner_losses) / num_tasks, list(params.values()))
    assert_equal(result_grads, expected_grads)


@pytest.mark.parametrize("jac", [jacfwd, jacrev], ids=["jacfwd", "jacrev"])
def test_lennard_jones_batched_jac(jac: Any) -> None:
    sigma, epsilon = 0.5, 4.0

    def lennard_jones(r):
        return epsilon * ((sigma / r) ** 12 - (sigma / r) ** 6)

    def lennard_jones_force(r):
        return -epsilon * ((-12 * sigma**12 / r**13) + (6 * sigma**6 / r**7))

    r = torch.linspace(0.5, 2 * sigma, steps=6, requires_grad=True)
    drs = torch.outer(r, torch.tensor([1.0, 0, 0]))
    norms = torch.norm(drs, dim=1).reshape(-1, 1)
    training_energies = torch.stack(list(map(lennard_jones, norms))).reshape(-1, 1)
    training_forces = torch.stack(
        [force * dr for force, dr in zip(map(lennard_jones_force, norms), drs)])
    model = nn.Sequential(nn.Linear(1, 8), nn.Tanh(), nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 1))

    def make_prediction(model, drs, use_functorch):
        norms = torch.norm(drs, dim=1).reshape(-1, 1)
        energies = model(norms)
        if use_functorch:
            network_derivs = vmap(jac(model))(norms).squeeze(-1)
            forces = -network_derivs * drs / norms
        else:
            forces = torch.cat([-torch.autograd.functional.jacobian(model, r, create_graph=True)
                                * dr / r for r, dr in zip(norms, drs)])
        return energies, forces

    def loss_fn(energies, forces, predicted_energies, predicted_forces):
        return (F.mse_loss(energies, predicted_energies)
                + 0.01 * F.mse_loss(forces, predicted_forces) / 3)

    energies, forces = make_prediction(model, drs, use_functorch=True)
    result = torch.autograd.grad(loss_fn(training_energies, training_forces, energies, forces),
                                 list(model.parameters()))
    energies, forces = make_prediction(model, drs, use_functorch=False)
    expected = torch.autograd.grad(loss_fn(training_energies, training_forces, energies, forces),
                                   list(model.parameters()))
    assert_equal(result, expected)


def test_ensemble_regression_stack_module_state() -> None:
    points, labels = torch.randn(20, 2), torch.randint(0, 2, (20,))

    class MLPClassifier(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc1 = nn.Linear(2, 8)
            self.fc2 = nn.Linear(8, 2)

        def forward(self, x):
            return F.log_softmax(self.fc2(F.relu(self.fc1(x))), -1)

    loss_fn = nn.NLLLoss()
    model = MLPClassifier()

    def train_step_fn(use_transform, weights, batch, targets, lr=0.2):
        def compute_loss(weights, batch, targets):
            return loss_fn(functional_call(model, weights, (batch,)), targets)

        if use_transform:
            grad_weights, loss = grad_and_value(compute_loss)(weights, batch, targets)
        else:
            loss = compute_loss(weights, batch, targets)
            flat = torch.autograd.grad(loss, list(weights.values()))
            grad_weights = dict(zip(weights, flat))
        return loss, {k: weights[k] - lr * grad_weights[k] for k in weights}

    batched_weights = stack_module_state([MLPClassifier() for _ in range(2)])[0]
    result_loss, result_weights = vmap(partial(train_step_fn, True), in_dims=(0, None, None))(
        batched_weights, points, labels)
    expected = [train_step_fn(False, {k: w[i].detach().requires_grad_()
                                      for k, w in batched_weights.items()}, points, labels)
                for i in range(2)]
    assert_equal(result_loss, torch.stack([e[0] for e in expected]))
    assert_equal(result_weights, {k: torch.stack([e[1][k] for e in expected])
                                  for k in batched_weights})


@pytest.mark.parametrize("dropout_layer", [nn.Dropout, nn.AlphaDropout, nn.FeatureAlphaDropout],
                         ids=["Dropout", "AlphaDropout", "FeatureAlphaDropout"])
def test_find_learning_rate_ensembling(dropout_layer: Any) -> None:
    import copy

    points, labels = torch.randn(10, 2, 2, 2, 2), torch.randint(0, 2, (10,))

    class MLPClassifier(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.dropout = dropout_layer()
            self.fc1 = nn.Linear(16, 8)
            self.fc2 = nn.Linear(8, 2)

        def forward(self, x):
            x = torch.flatten(self.dropout(x), start_dim=1)
            return F.log_softmax(self.fc2(F.relu(self.fc1(x))), -1)

    loss_fn = nn.NLLLoss()
    og_model = MLPClassifier()

    def train_step_fn(weights, batch, targets, lr):
        def compute_loss(weights, batch, targets):
            return loss_fn(functional_call(og_model, weights, (batch,)), targets)

        grad_weights, loss = grad_and_value(compute_loss)(weights, batch, targets)
        return (loss, *[weights[k] - lr * grad_weights[k] for k in weights])

    batched_weights = stack_module_state([copy.deepcopy(og_model) for _ in range(2)])[0]
    lrs = torch.tensor([0.2, 0.4])
    result = vmap(train_step_fn, in_dims=(0, None, None, 0), randomness="same")(
        batched_weights, points, labels, lrs)
    assert_equal(result[0][0], result[0][1])
    assert any(not torch.equal(w[0], w[1]) for w in result[1:])


# === test/functorch/test_vmap.py: TestVmapAPI ================================================
# (rt's vmap stacks per-element results, so its outputs are new tensors: the data_ptr checks of
# the identity function are left out; the values and shapes are checked)


def test_vmap_non_tensor_output_raises() -> None:
    with pytest.raises(ValueError, match="got type <class 'float'>"):
        vmap(lambda x: 3.14)(torch.ones(3))
    with pytest.raises(ValueError, match="got type <class 'int'>"):
        vmap(lambda x: (x, 3))(torch.ones(3))


def test_vmap_different_map_dim_size_raises() -> None:
    x, y = torch.randn(2), torch.randn(3)
    expected_msg = "Expected all tensors to have the same size in the mapped dimension"
    with pytest.raises(ValueError, match=expected_msg):
        vmap(torch.mul)(x, y)
    with pytest.raises(ValueError, match=expected_msg):
        vmap(lambda z: z[0] + z[1], in_dims=((0, 0),))((x, y))
    with pytest.raises(ValueError, match=expected_msg):
        vmap(lambda z: z["x"] + z["y"], in_dims=({"x": 0, "y": 0},))({"x": x, "y": y})


def test_vmap_func_with_no_inputs_or_no_tensors() -> None:
    def foo():
        return torch.randn(3)

    def bar(x):
        return torch.randn(3)

    with pytest.raises(ValueError, match="got no inputs"):
        vmap(foo)()
    with pytest.raises(ValueError, match="got no inputs"):
        vmap(bar)()
    with pytest.raises(ValueError, match="at least one Tensor"):
        vmap(bar, (None,))(1)


def test_vmap_constant_single_multiple_inputs_outputs() -> None:
    assert_equal(vmap(lambda x: torch.tensor(3.14))(torch.ones(3)), [3.14, 3.14, 3.14])
    x, y = torch.randn(2, 3), torch.randn(2, 3)
    assert_equal(vmap(lambda x: x * x)(x), x * x)
    assert_equal(vmap(torch.mul)(x, y), x * y)
    x = torch.randn(3)
    outputs = vmap(lambda x: (x * x, x * x * x))(x)
    assert_equal(outputs, (x * x, x * x * x))
    assert isinstance(vmap(lambda x: (x, x))(x), tuple)
    assert isinstance(vmap(lambda x: [x, x])(x), list)
    assert isinstance(vmap(lambda x: [x])(x), list)


def test_vmap_nested_same_and_different_map_dim() -> None:
    x, y = torch.randn(2, 3, 5), torch.randn(2, 3, 5)
    assert_equal(vmap(vmap(torch.mul))(x, y), x * y)
    assert_equal(vmap(vmap(vmap(torch.mul)))(x, y), x * y)
    x3 = torch.randn(3, 3, 5)
    assert_equal(vmap(vmap(torch.diag_embed))(x3), torch.diag_embed(x3))

    x, y = torch.randn(2, 3), torch.randn(5, 3)
    output = vmap(lambda x: vmap(lambda y: x * y)(y))(x)
    assert output.shape == (2, 5, 3)
    assert_equal(output, x.view(2, 1, 3) * y)
    z = torch.randn(7, 3)
    output = vmap(lambda x: vmap(lambda y: vmap(lambda z: x * y * z)(z))(y))(x)
    assert output.shape == (2, 5, 7, 3)
    assert_equal(output, x.view(2, 1, 1, 3) * y.view(5, 1, 3) * z)

    x, y = torch.randn(3), torch.randn(5)
    assert_equal(vmap(lambda x: vmap(lambda y: x)(y))(x), x.view(3, 1).expand(3, 5))


def test_vmap_nonzero_and_multiple_out_dims() -> None:
    tensor = torch.randn(2, 3)
    assert_equal(vmap(lambda x: x, out_dims=1)(tensor), tensor.permute(1, 0))
    tensor = torch.randn(2, 3, 5, 7)
    assert_equal(vmap(lambda x: x, out_dims=2)(tensor), tensor.permute(1, 2, 0, 3))
    assert_equal(vmap(lambda x: x, out_dims=-1)(tensor), tensor.permute(1, 2, 3, 0))
    other = torch.randn(2, 3, 5, 7)
    assert_equal(vmap(lambda x, y: (x, y), out_dims=2)(tensor, other),
                 (tensor.permute(1, 2, 0, 3), other.permute(1, 2, 0, 3)))
    ndims = 64
    tensor = torch.randn([2] + [1] * (ndims - 1))
    assert list(vmap(lambda x: x, out_dims=2)(tensor).shape) == [1, 1, 2] + [1] * (ndims - 3)

    x, y = torch.randn(2, 3, 5), torch.randn(2, 3, 5)
    assert_equal(vmap(lambda x, y: (x, x * y, x * y * y), out_dims=1)(x, y),
                 (x.permute(1, 0, 2), (x * y).permute(1, 0, 2), (x * y * y).permute(1, 0, 2)))
    assert_equal(vmap(lambda x: (x, x), out_dims=(0, 1))(x), (x, x.permute(1, 0, 2)))
    assert_equal(vmap(lambda x, y: (x, x, x, x * y), out_dims=(-1, 0, 1, 2))(x, y),
                 (x.permute(1, 2, 0), x, x.permute(1, 0, 2), (x * y).permute(1, 2, 0)))


def test_vmap_nested_out_dims() -> None:
    y = torch.randn(2, 3, 5, 7)
    result = vmap(lambda y: vmap(lambda x: x, out_dims=1)(y))(y)
    assert result.shape == (2, 5, 3, 7)
    assert_equal(result, y.permute(0, 2, 1, 3))
    result = vmap(lambda y: vmap(lambda x: x, out_dims=1)(y), out_dims=1)(y)
    assert result.shape == (5, 2, 3, 7)
    assert_equal(result, y.permute(2, 0, 1, 3))
    result = vmap(lambda y: vmap(lambda x: x, out_dims=-1)(y), out_dims=-1)(y)
    assert result.shape == (5, 7, 3, 2)
    assert_equal(result, y.permute(2, 3, 1, 0))
    x, y = torch.randn(2, 3), torch.randn(5, 3)
    result = vmap(lambda y: vmap(lambda x: x * y, out_dims=1)(x), out_dims=-1)(y)
    assert result.shape == (3, 2, 5)
    assert_equal(result, (y.view(5, 1, 3) * x).permute(2, 1, 0))


def test_vmap_out_dims_edge_case_and_none() -> None:
    tensor = torch.randn(2, 3)
    assert_equal(vmap(lambda x: x, out_dims=(1,))(tensor), vmap(lambda x: x, out_dims=1)(tensor))

    result = vmap(lambda x: (x, "hello world"), out_dims=(0, None))(tensor)
    assert result[1] == "hello world"
    assert_equal(result[0], tensor)

    def foo(x):
        x.add_(1)
        return None, "hello world"

    assert vmap(foo, out_dims=(None, None))(tensor) == (None, "hello world")
    with pytest.raises(ValueError, match="can not return a BatchedTensor when out_dim is None"):
        vmap(lambda x: x, out_dims=None)(tensor)

    def bar(x):
        x.add_(1)
        return "hello world"

    assert vmap(bar, out_dims=None)(tensor) == "hello world"
    assert list(vmap(lambda x: torch.arange(3))(tensor).shape) == [2, 3]
    assert_equal(vmap(lambda x: torch.arange(3), out_dims=None)(tensor), torch.arange(3))


def test_vmap_pytree_returns() -> None:
    x = torch.randn(2, 3)

    def f(x):
        y = x.sin()
        return y, (y, y), [y, (y, y)]

    y0, (y1, y2), (y3, (y4, y5)) = vmap(f)(x)
    for y in (y0, y1, y2, y3, y4, y5):
        assert_equal(y, x.sin())

    def g(t):
        return OrderedDict([("sin", t.sin()), ("cos", t.cos())])

    out = vmap(g)(x)
    assert isinstance(out, OrderedDict)
    assert_equal(out["sin"], x.sin())
    assert_equal(out["cos"], x.cos())

    def h(x):
        y = x.sin()
        return y, (y, y)

    y0, (y1, y2) = vmap(h, out_dims=(0, (0, 1)))(x)
    assert_equal((y0, y1, y2), (x.sin(), x.sin(), x.sin().t()))
    y0, (y1, y2) = vmap(h, out_dims=1)(x)
    assert_equal((y0, y1, y2), (x.sin().t(), x.sin().t(), x.sin().t()))
    y0, (y1, y2) = vmap(h, out_dims=(0, 1))(x)
    assert_equal((y0, y1, y2), (x.sin(), x.sin().t(), x.sin().t()))


def test_vmap_out_dims_errors() -> None:
    msg = "must be an int, None or a python collection of ints"
    tensor = torch.randn(2, 3)
    with pytest.raises(ValueError, match=msg):
        vmap(lambda x: x, out_dims="lol")(tensor)
    with pytest.raises(ValueError, match=msg):
        vmap(lambda x: x, out_dims=("lol",))(tensor)

    x = torch.randn(2, 3, 5)
    for f, out_dims in ((lambda x: x, (0, 0)), (lambda x: (x, x, x), (0, 0, 0, 0)),
                        (lambda x: (x, x), (0,)), (lambda x: (x, x, x), (0, 0))):
        with pytest.raises(ValueError, match="not compatible"):
            vmap(f, out_dims=out_dims)(x)
    for out_dims in (3, -4):
        with pytest.raises(IndexError, match="Dimension out of range"):
            vmap(lambda x: x, out_dims=out_dims)(x)


def test_vmap_identity_returns_the_input_or_its_view() -> None:
    """PyTorch's vmap hands back an input the function returned slice by slice: the input
    itself when its in_dim is the out_dim (``result is x``), else a ``movedim`` view of it; a
    write into the result reaches the input."""
    x = torch.randn(2, 3, 5)
    assert vmap(lambda x: x)(x) is x
    assert vmap(lambda x: x, in_dims=1, out_dims=1)(x) is x
    assert vmap(lambda x: x, out_dims=-3)(x) is x
    result = vmap(lambda x: x, in_dims=2, out_dims=1)(x)
    assert result._base is x and result.shape == (2, 5, 3)
    assert_equal(result, x.transpose(1, 2))
    r0, r1 = vmap(lambda x, y: (x, y))(x, x)
    assert r0 is x and r1 is x
    result = vmap(lambda x: x, out_dims=1)(x)
    result.add_(1)
    assert_equal(result, x.permute(1, 0, 2))
    xr = torch.randn(2, 3, requires_grad=True)
    result = vmap(lambda x: x)(xr)
    assert result is xr and result.grad_fn is None


def test_vmap_none_nested_negative_in_dims() -> None:
    x, y = torch.randn(2, 3), torch.randn(3, 2)
    assert_equal(vmap(torch.mul, (0, 1))(x, y), x * y.t())
    assert_equal(vmap(torch.mul, (1, 0))(x, y), x.t() * y)
    y = torch.randn(2, 3)
    output = vmap(torch.mul, (0, None))(x, y)
    assert output.shape == (2, 2, 3)
    assert_equal(output, x.view(2, 1, 3) * y)
    assert_equal(vmap(torch.mul, (0, None))(x, 2), x * 2)
    output = vmap(torch.mul, (-1, -1))(x, y)
    assert output.shape == (3, 2)
    assert_equal(output, (x * y).permute(1, 0))
    x, y = torch.rand(5, 2, 3), torch.rand(3, 5, 2)
    result = vmap(vmap(vmap(torch.mul), (1, 0)), (1, 2))(x, y)
    assert_equal(result, x.permute(1, 2, 0) * y.permute(2, 0, 1))


def test_vmap_non_default_in_dims_out_dims() -> None:
    x = torch.randn(2, 3, 5)
    assert_equal(vmap(lambda x: x * 2, in_dims=1, out_dims=1)(x), x * 2)
    result = vmap(lambda x: x * 2, in_dims=2, out_dims=1)(x)
    assert result.shape == (2, 5, 3)
    assert_equal(result, (x * 2).transpose(1, 2))
    assert_equal(vmap(vmap(lambda x: x * 2, 1, 1), 1, 1)(x), x * 2)


def test_vmap_accepts_nested_inputs() -> None:
    x, y = torch.randn(2, 3), torch.randn(2, 3)
    for z in ((x, y), [x, y]):
        for in_dims in (0, (0,), (type(z)([0, 0]),)):
            assert_equal(vmap(lambda z: z[0] + z[1], in_dims=in_dims)(z), x + y)
    d = {"x": x, "y": y}
    for in_dims in (0, (0,), ({"x": 0, "y": 0},)):
        assert_equal(vmap(lambda z: z["x"] + z["y"], in_dims=in_dims)(d), x + y)
    out_fn = vmap(lambda z: z["x"][0] + z["x"][1][0] + z["y"][0] + z["y"][1])
    assert_equal(out_fn({"x": [x, (x,)], "y": [y, y]}), x + x + y + y)


def test_vmap_in_dims_errors() -> None:
    x, y = torch.randn(3), torch.randn(3)
    msg = r"expected `in_dims` to be int or a \(potentially nested\) tuple"
    for in_dims in ([0, 0], {0}, "lol"):
        with pytest.raises(ValueError, match=msg):
            vmap(torch.mul, in_dims)(x, y)
    with pytest.raises(ValueError, match=msg):
        vmap(lambda z: z[0] + z[1], in_dims=[0, 0])([x, y])
    vmap(torch.mul, (0, 0))(x, y)

    msg = r"in_dims is not compatible with the structure of `inputs`"
    for in_dims in ((0,), (0, 0, 0)):
        with pytest.raises(ValueError, match=msg):
            vmap(torch.mul, in_dims)(x, y)
    for in_dims in (([0],), ((0, 0),)):
        with pytest.raises(ValueError, match=msg):
            vmap(lambda z: z[0] + z[1], in_dims=in_dims)([x, y])

    x = torch.randn(2, 3)
    msg = "Got in_dim=0 for an input but the input is of type"
    with pytest.raises(ValueError, match=msg):
        vmap(torch.sum)(x, 0)
    with pytest.raises(ValueError, match=msg):
        vmap(torch.sum, (0, 0))(x, 0)
    with pytest.raises(ValueError, match=msg):
        vmap(lambda z: z[0] + z[1], in_dims=([0, 0],))([x, 1])
    assert_equal(vmap(torch.sum, (0, None))(x, 0), x.sum(1))

    y = torch.randn(2, 3)
    msg = r"Got in_dim=-?\w for some input, but that input is a Tensor of dimensionality \w"
    with pytest.raises(ValueError, match=msg):
        vmap(lambda x: x * x)(torch.randn([]))
    with pytest.raises(ValueError, match=msg):
        vmap(lambda x: x * x, in_dims=(0,))(torch.randn([]))
    with pytest.raises(ValueError, match=msg):
        vmap(lambda x: x * x, in_dims=(-3,))(x)
    with pytest.raises(ValueError, match=msg):
        vmap(lambda x: x * x, in_dims=(2,))(y)
    with pytest.raises(ValueError, match=msg):
        vmap(lambda z: z[0] + z[1], in_dims=([3, 0],))([x, y])
    vmap(lambda x: x * x, in_dims=(1,))(torch.randn(2, 3))


def test_vmap_fallback_ops_copysign_var_mean() -> None:
    op = torch.copysign
    x, y = torch.randn(7, 11, 5), torch.randn(5, 7, 11)
    assert_equal(vmap(op, (2, 0))(x, y), op(x.permute(2, 0, 1), y))
    assert_equal(vmap(vmap(op), (2, 0))(x, y), op(x.permute(2, 0, 1), y))
    x, y = torch.randn(4, 3, 2, 5), torch.randn(4, 3, 2)
    assert_equal(vmap(vmap(vmap(op)))(x, y), op(x, y.view(4, 3, 2, 1)))

    tensor = torch.randn(2, 10)
    assert_equal(vmap(torch.var_mean)(tensor), torch.var_mean(tensor, dim=1))
    tensor = torch.randn(2, 3, 10)
    assert_equal(vmap(vmap(torch.var_mean))(tensor), torch.var_mean(tensor, dim=2))


def test_vmap_inplace_fallback_unary() -> None:
    op = torch.Tensor.acos_
    x_orig = torch.rand(2, 5)
    x = x_orig.clone()
    result = vmap(op)(x)
    assert result is x
    assert_equal(result, x_orig.acos())

    x_orig = torch.rand(2, 5)
    x = x_orig.clone()
    result = vmap(op, out_dims=(1,))(x)
    assert result._base is x
    assert_equal(result, x_orig.t().acos())

    x_orig = torch.rand(2, 3, 5)
    x = x_orig.clone()
    result = vmap(vmap(op))(x)
    assert result is x
    assert_equal(result, x_orig.acos())


def test_vmap_inplace_fallback_nary_same_levels() -> None:
    op, outplace_op = torch.Tensor.atan2_, torch.atan2
    x_orig, y = torch.randn(7, 11, 5), torch.randn(5, 7, 11)
    x = x_orig.clone()
    vmap(op, (2, 0))(x, y)
    assert_equal(x, outplace_op(x_orig, y.movedim(0, 2)))
    x_orig, y = torch.randn(7, 11, 5), torch.randn(5, 7, 11)
    x = x_orig.clone()
    vmap(vmap(op), (2, 0))(x, y)
    assert_equal(x, outplace_op(x_orig, y.movedim([0, 1], [2, 0])))


# --- TestVmapOperators: view ops (the output is a view of the input), as_strided --------------


def _vmap_test(op: Any, inputs: Any, in_dims: Any = 0, out_dims: Any = 0,
               check_view: bool = False, check_propagates_grad: bool = True) -> None:
    """PyTorch's ``_vmap_test``: against a loop over the batch and ``stack``; a view op's
    outputs are views of the first input; the first output requires grad when input 0 does."""
    result = vmap(op, in_dims, out_dims)(*inputs)
    dims = (in_dims,) * len(inputs) if isinstance(in_dims, int) else in_dims
    size = next(a.size(d) for a, d in zip(inputs, dims) if d is not None)
    per = [op(*[a if d is None else a.select(d, i) for a, d in zip(inputs, dims)])
           for i in range(size)]
    if isinstance(per[0], tuple | list):
        outs = (out_dims,) * len(per[0]) if isinstance(out_dims, int) else out_dims
        expected = tuple(torch.stack(col, od) for col, od in zip(zip(*per), outs))
    else:
        expected = torch.stack(per, out_dims if isinstance(out_dims, int) else out_dims[0])
    assert_equal(result, expected)
    results = result if isinstance(result, tuple | list) else (result,)
    if check_view:
        base = inputs[0] if inputs[0]._base is None else inputs[0]._base
        for output in results:
            assert output._base is base, "result was not a view of the first input!"
    if check_propagates_grad:
        clone = [inputs[0].clone().requires_grad_(), *inputs[1:]]
        result = vmap(op, in_dims, out_dims)(*clone)
        assert (result if isinstance(result, torch.Tensor) else result[0]).requires_grad


def _vmap_view_test(*args: Any, **kwargs: Any) -> None:
    _vmap_test(*args, **kwargs, check_view=True)


def test_vmap_as_strided() -> None:
    def _test(sizes, strides, offset, tensor, lambd):
        result = vmap(lambda t: t.as_strided(sizes, strides, offset))(tensor)
        expected = vmap(lambd)(tensor)
        assert result._base is expected._base
        assert_equal(result, expected)
        tensor = tensor.movedim(0, -1)
        result = vmap(lambda t: t.as_strided(sizes, strides, offset), -1)(tensor)
        expected = vmap(lambd, -1)(tensor)
        assert result._base is expected._base
        assert_equal(result, expected)

    B0 = 3
    tensors = [
        torch.randn(B0, 2, 3),
        torch.randn(B0, 3, 2).transpose(1, 2),
        torch.randn(3, 2, B0).movedim(-1, 0).transpose(1, 2),
        torch.randn(2, B0, 2, 3)[1],
        torch.randn(2, 2, B0, 3)[1].movedim(1, 0),
        torch.randn(B0, 2, 4, 3, 7)[:, :, 0, :, 0],
        torch.randn(2, 4, B0, 3, 7).movedim(2, 0)[:, :, 0, :, 0],
        torch.randn(B0, 2, 4, 3, 7)[:, :, 2, :, 1],
        torch.randn(2, 4, 3, 7, B0).movedim(-1, 0)[:, :, 2, :, 1],
    ]
    for x in tensors:
        S0, S1 = x.stride()[1:]
        offset = x.storage_offset()
        _test([5, 5, 2, 3], [0, 0, S0, S1], offset, x, lambda x: x.expand(5, 5, 2, 3))
        _test([3, 2], [S1, S0], offset, x, lambda x: x.transpose(0, 1))
        _test([2], [S0], offset + S1, x, lambda x: x[:, 1])
        _test([2], [S0 + S1], offset, x, lambda x: x.diagonal())
        _test([2], [S1 * 2], offset, x, lambda x: x[0, ::2])

    x = torch.randn(2, B0, 2, 3)
    S0, S1 = x.stride()[2:]
    result = vmap(vmap(lambda t: t.as_strided([5, 5, 2, 3], [0, 0, S0, S1])), in_dims=1)(x)
    expected = vmap(vmap(lambda t: t.expand(5, 5, 2, 3)), in_dims=1)(x)
    assert result._base is expected._base
    assert_equal(result, expected)

    msg = "This is not supported inside of vmap"
    with pytest.raises(RuntimeError, match=msg):
        vmap(lambda x: x.as_strided([3], [1], 1))(torch.randn(B0, 3))
    with pytest.raises(RuntimeError, match=msg):
        vmap(lambda x: x.as_strided([4, 4], [4, 1], 0))(torch.randn(B0, 3, 5))
    with pytest.raises(RuntimeError, match=msg):
        vmap(vmap(lambda x: x.as_strided([4, 4], [4, 1], 0)))(torch.randn(B0, 2, 3, 5))
    with pytest.raises(RuntimeError, match=msg):
        x = torch.randn(2, B0, 3)[1]
        vmap(lambda x: x.as_strided([3], [1], B0 * 3 - 1))(x)
    with pytest.raises(RuntimeError, match=msg):
        vmap(lambda x: x.as_strided([3], [1]))(torch.randn(B0, 0, 3))


def test_vmap_as_strided_message_is_pytorchs() -> None:
    with pytest.raises(RuntimeError) as info:
        vmap(lambda x: x.as_strided([3], [1], 1))(torch.randn(5, 3))
    assert str(info.value) == (
        "result = tensor.as_strided([3], [1], 1) can access memory outside of `tensor`. `result` "
        "can access some memory in range [1, 4], but `tensor` can only access some memory in "
        "range [0, 3]. This is not supported inside of vmap, please try to rewrite the "
        "`as_strided` call as a sequence of PyTorch view operations")


def test_vmap_diagonal_chunk_split_unbind_views() -> None:
    tensor = torch.randn(3, 5, 7, 4, 2)
    op = torch.diagonal
    _vmap_view_test(op, (tensor, 1, 0, 1), in_dims=(0, None, None, None))
    _vmap_view_test(op, (tensor, 0, 2, -1), in_dims=(0, None, None, None))
    _vmap_view_test(op, (tensor, 2, 1, 2), in_dims=(1, None, None, None))
    _vmap_view_test(op, (tensor, 0, -2, -1), in_dims=(1, None, None, None), out_dims=1)
    _vmap_view_test(vmap(lambda t: op(t, 0, 0, -1)), (tensor,), in_dims=1, out_dims=1)

    _vmap_view_test(torch.chunk, (torch.rand(4, 2, 30), 15, -1), in_dims=(0, None, None))
    _vmap_view_test(torch.chunk, (torch.rand(2, 4, 30), 9, 1), in_dims=(1, None, None))
    _vmap_view_test(torch.split, (torch.rand(4, 2, 30), 7, -1), in_dims=(0, None, None))
    _vmap_view_test(torch.split, (torch.rand(4, 2, 30), [3, 27], -1), in_dims=(0, None, None))
    _vmap_view_test(torch.unbind, (torch.rand(4, 3, 2), 1), in_dims=(0, None))


def test_vmap_expand_as_select_narrow_t_transpose_views() -> None:
    op = torch.Tensor.expand_as
    _vmap_view_test(op, (torch.rand(4, 1, 5), torch.rand(4, 2, 3, 5)))
    _vmap_view_test(op, (torch.rand(4, 1, 5), torch.rand(2, 3, 5)), in_dims=(0, None))
    _vmap_view_test(vmap(op), (torch.rand(4, 3, 1, 5), torch.rand(4, 3, 2, 3, 5)))
    x = torch.randn(4, 3, 5)
    _vmap_view_test(lambda t: t.select(0, 1), (x,))
    _vmap_view_test(lambda t: t.select(1, -1), (x,), in_dims=2)
    _vmap_view_test(lambda t: t.narrow(1, 1, 3), (x,))
    _vmap_view_test(lambda t: t[1:, ::2], (x,), in_dims=1, out_dims=2)
    _vmap_view_test(torch.t, (x,))
    _vmap_view_test(lambda t: t.T, (x,), in_dims=2)
    _vmap_view_test(lambda t: t.transpose(0, 1), (x,), in_dims=1)
    _vmap_view_test(lambda t: t.movedim(0, 1), (x,), out_dims=2)
    _vmap_view_test(lambda t: t.permute(1, 0), (x,))
    _vmap_view_test(lambda t: t.unsqueeze(0), (x,))
    _vmap_view_test(lambda t: t.view(15), (x,))
    _vmap_view_test(lambda t: t.unfold(0, 2, 1), (x,))
    _vmap_view_test(lambda t: t.view_as(torch.empty(15)), (x,))


def test_vmap_view_output_writes_reach_the_input() -> None:
    x = torch.zeros(3, 2, 2)
    diag = vmap(torch.diagonal)(x)
    diag.fill_(1.0)
    assert_equal(x, torch.eye(2).expand(3, 2, 2))


def test_vmap_contiguous_and_stride_inside_vmap() -> None:
    x = torch.randn(3, 2, 5, 7).movedim(0, 2)
    assert vmap(torch.Tensor.contiguous, in_dims=2, out_dims=2)(x) is x

    def foo(x):
        assert x.stride() == (7 * 5, 7, 1)
        return x

    vmap(foo)(torch.randn(3, 2, 5, 7))

    def bar(x):
        assert x.stride() == (7 * 5 * 3, 7, 1)
        return x

    vmap(bar)(torch.randn(2, 3, 5, 7).movedim(1, 0))


def test_vmap_is_floating_point_and_is_contiguous() -> None:
    def foo(x):
        return torch.tensor(1) if x.is_floating_point() else torch.tensor(0)

    assert_equal(vmap(foo)(torch.tensor([1.0, 2.0, 3.0])), torch.tensor([1, 1, 1]))
    assert_equal(vmap(foo)(torch.tensor([1, 2, 3])), torch.tensor([0, 0, 0]))

    def bar(x):
        return torch.tensor(1.0) if x.is_contiguous() else torch.tensor(0.0)

    B0, B1 = 3, 5
    assert_equal(vmap(bar)(torch.randn(B0, 2, 7)), torch.ones(B0))
    assert_equal(vmap(bar, in_dims=1)(torch.randn(2, B0, 7)), torch.zeros(B0))
    assert_equal(vmap(bar)(torch.randn(2, B0, 7).movedim(1, 0)), torch.zeros(B0))
    assert_equal(vmap(bar, in_dims=2)(torch.randn(2, 7, B0)), torch.zeros(B0))
    assert_equal(vmap(vmap(bar))(torch.randn(B0, B1, 3)), torch.ones(B0, B1))
    assert_equal(vmap(vmap(bar), in_dims=1)(torch.randn(B1, B0, 3)), torch.ones(B0, B1))
    assert_equal(vmap(vmap(bar))(torch.randn(B1, B0, 3).movedim(0, 1)), torch.ones(B0, B1))
    assert_equal(vmap(vmap(bar, in_dims=1))(torch.randn(B0, 3, B1)), torch.zeros(B0, B1))

    def baz(x):
        assert x.is_contiguous()
        return x

    vmap(baz)(torch.randn(B0, 0, 3))
    vmap(baz, in_dims=1)(torch.randn(0, B0, 3))
    vmap(baz)(torch.randn(B0, 0, 3).transpose(-1, -2))


def test_vmap_unsqueeze_movedim_narrow_select_slice_squeeze_views() -> None:
    B0, B1, B2 = 3, 2, 4
    op = torch.unsqueeze
    for dim in (0, 2, -1):
        _vmap_view_test(op, (torch.rand(B0, 2, 5), dim), in_dims=(0, None))
        _vmap_view_test(op, (torch.rand(2, B0, 5), dim), in_dims=(1, None))
    _vmap_view_test(vmap(lambda x: torch.unsqueeze(x, 0)), (torch.rand(B1, 2, B0),), in_dims=2)
    _vmap_view_test(vmap(lambda x: torch.unsqueeze(x, -1), in_dims=1), (torch.rand(2, B1, B0),),
                    in_dims=2)

    op = torch.movedim
    _vmap_view_test(op, (torch.rand(B0, 2, 5), 0, 1), in_dims=(0, None, None))
    _vmap_view_test(vmap(op, in_dims=(0, None, None)), (torch.rand(B1, 2, B0, 5), 0, 1),
                    in_dims=(2, None, None))
    _vmap_view_test(op, (torch.rand(2, 3, B0, 5), [1, 0], [0, 2]), in_dims=(1, None, None))

    op = torch.narrow
    _vmap_view_test(op, (torch.rand(B0, 2, 5), -1, 1, 3), in_dims=(0, None, None, None))
    _vmap_view_test(vmap(vmap(op, in_dims=(2, None, None, None)), in_dims=(0, None, None, None)),
                    (torch.rand(B1, 2, B0, 5, B2), -1, 2, 3), in_dims=(2, None, None, None))

    op = torch.select
    _vmap_view_test(op, (torch.rand(B0, 2, 5), 0, 0), in_dims=(0, None, None))
    _vmap_view_test(op, (torch.rand(2, B0, 5), 1, 1), in_dims=(1, None, None))
    _vmap_view_test(vmap(vmap(lambda t: op(t, 1, 1), in_dims=1)), (torch.rand(B1, 2, B0, B2, 5),),
                    in_dims=2)

    _vmap_view_test(lambda t: t[0:1], (torch.rand(B0, 3, 5),))
    _vmap_view_test(lambda t: t[:, 1:3], (torch.rand(3, 5, B0),), in_dims=2)
    _vmap_view_test(vmap(vmap(lambda t: t[0:1], in_dims=2), in_dims=2),
                    (torch.rand(3, 5, B0, B1, B2),), in_dims=2)

    for op in (torch.squeeze, lambda x: torch.squeeze(x, dim=0)):
        for b in (1, 4):
            _vmap_view_test(op, (torch.rand(b),))
            _vmap_view_test(op, (torch.rand(b, 3, 5),))
            _vmap_view_test(op, (torch.rand(1, b, 5),), in_dims=1)
            _vmap_view_test(op, (torch.rand(b, 0, 1, 5, 1),))
            _vmap_view_test(vmap(op), (torch.rand(b, B1, 1, 3, 4),))


def test_vmap_new_empty_new_zeros_shapes() -> None:
    assert list(vmap(lambda x: x.new_empty([2, 3]))(torch.randn(3)).shape) == [3, 2, 3]
    assert list(vmap(lambda x: x.new_empty([]))(torch.randn(3)).shape) == [3]
    assert list(vmap(vmap(lambda x: x.new_empty([2, 3])))(torch.randn(3, 4)).shape) == [3, 4, 2, 3]
    _vmap_test(lambda x: x.new_zeros(2, 3), (torch.rand(3),), check_propagates_grad=False)
    _vmap_test(vmap(lambda x: x.new_zeros(3, 5)), (torch.rand(3, 2),), check_propagates_grad=False)


def test_vmap_mm_mv_dot_bmm_and_shape_errors() -> None:
    B0, B1 = 3, 2
    # PyTorch's mm batching rule words it "Shape mismatch: Got incorrect dims for mm(a, b)...";
    # rt runs mm on each element, so the text is eager mm's ("self must be a matrix")
    with pytest.raises(RuntimeError, match="self must be a matrix"):
        vmap(torch.mm)(torch.randn(B0, 2, 2, 2), torch.randn(B0, 2))
    with pytest.raises(RuntimeError):
        vmap(torch.mv)(torch.randn(B0, 2, 2, 2), torch.randn(B0, 2))
    with pytest.raises(RuntimeError):
        vmap(torch.dot)(torch.randn(B0, 2, 2, 2), torch.randn(B0, 2))
    with pytest.raises(RuntimeError):
        vmap(torch.bmm)(torch.randn(B0, 2, 2, 2), torch.randn(B0, 2))
    _vmap_test(torch.mm, (torch.rand(B0, 2, 5), torch.rand(5, 2)), in_dims=(0, None))
    _vmap_test(vmap(torch.mm), (torch.rand(B1, B0, 2, 5), torch.rand(B0, B1, 5, 2)),
               in_dims=(1, 0))
    _vmap_test(torch.mv, (torch.rand(2, 5), torch.rand(B0, 5)), in_dims=(None, 0))
    _vmap_test(torch.dot, (torch.rand(B0, 5), torch.rand(B0, 5)))
    _vmap_test(vmap(torch.bmm, in_dims=(0, None)),
               (torch.rand(B1, 2, 3, 5), torch.rand(B0, 2, 5, 3)), in_dims=(None, 0))


def test_vmap_cat_stack_roll_nll_loss_pool() -> None:
    B0 = 3

    def cat(dim):
        return lambda *tensors: torch.cat(tensors, dim=dim)

    _vmap_test(cat(0), (torch.rand(B0, 2), torch.rand(B0, 3)))
    _vmap_test(cat(0), (torch.rand(2), torch.rand(B0, 0)), in_dims=(None, 0))
    _vmap_test(cat(-1), (torch.rand(17, 2), torch.rand(17, 3, B0)), in_dims=(None, 2))
    _vmap_test(lambda *t: torch.stack(t, dim=-1), (torch.rand(2, 7), torch.rand(2, 7, B0)),
               in_dims=(None, 2))
    _vmap_test(torch.roll, (torch.rand(2, B0, 5), 3), in_dims=(1, None))
    y, t = torch.randn(B0, 2, 5), torch.randint(0, 5, (B0, 2))
    for reduction in ("mean", "sum", "none"):
        _vmap_test(partial(F.nll_loss, reduction=reduction), (y, t))
    _vmap_test(partial(F.adaptive_avg_pool2d, output_size=(3, 3)), (torch.randn(3, 2, 7, 9, 4),),
               in_dims=(4,))


def test_vmap_fill_zero_inplace_and_copy_() -> None:
    for op in (lambda t: t.fill_(0.1), lambda t: t.fill_(torch.tensor(0.2)), lambda t: t.zero_()):
        _vmap_test(op, [torch.randn(3, 3)], check_propagates_grad=False)
        _vmap_test(op, [torch.randn(2, 5, 3, 3)], in_dims=2, out_dims=2,
                   check_propagates_grad=False)
        _vmap_test(vmap(op), [torch.randn(3, 2)], check_propagates_grad=False)
    _vmap_test(torch.Tensor.fill_, [torch.randn(3, 5), torch.randn(3)], check_propagates_grad=False)

    x, y = torch.randn(3), torch.randn(3)
    vmap(torch.Tensor.copy_)(x, y)
    assert_equal(x, y)
    x, y = torch.randn(3), torch.randn(3, 2)
    vmap(torch.Tensor.copy_, in_dims=(1, None))(y, x)
    assert_equal(y, x.expand(2, 3).t())


@pytest.mark.parametrize("name", ["abs", "acos", "ceil", "exp", "log1p", "neg", "relu", "sigmoid",
                                  "sin", "sqrt", "tanh", "trunc"])
def test_vmap_unary_pointwise_and_inplace(name: str) -> None:
    op = getattr(torch, name)
    method = getattr(torch.Tensor, name + "_")
    for f, grads in ((op, True), (method, False)):
        _vmap_test(f, [torch.rand(3, 3)], check_propagates_grad=grads)
        _vmap_test(f, [torch.rand(2, 5, 3, 3)], in_dims=2, out_dims=2, check_propagates_grad=grads)
        _vmap_test(vmap(f), [torch.rand(3, 2)], check_propagates_grad=grads)
        _vmap_test(vmap(f, in_dims=2), [torch.rand(2, 5, 3, 2, 3)], in_dims=2, out_dims=2,
                   check_propagates_grad=grads)


@pytest.mark.parametrize("op", [torch.add, torch.sub, torch.mul, torch.div, torch.pow],
                         ids=["add", "sub", "mul", "div", "pow"])
def test_vmap_arithmetic(op: Any) -> None:
    def get(shape, dtype=torch.float):
        return torch.rand(shape, dtype=dtype) + 1

    B0, B1 = 3, 2
    _vmap_test(op, (get([B0, 3]), get([B0, 3])))
    _vmap_test(op, (get([B0]), get([B0, 2, 3])))
    _vmap_test(op, (get([B0]), get([2, B0, 3])), in_dims=(0, 1), out_dims=1)
    _vmap_test(op, (get([B0]), get([2, 3])), in_dims=(0, None))
    _vmap_test(vmap(op), (get([B0, B1, 2, 3]), get([B0, B1, 3])))
    _vmap_test(lambda t: op(t, 2.5), (get([B0, 3]),))
    _vmap_test(lambda t: op(2.5, t), (get([B0, 3]),))
    _vmap_test(op, (get([B0]), get([B0], torch.double)))
    _vmap_test(op, (get([B0, 2]), get([B0], torch.double)))


def test_vmap_sum_scalar_isnan_isinf_flatten_group_norm() -> None:
    x = torch.tensor([10.0])
    for f in (torch.sum, lambda x: x.sum(0), lambda x: x.sum(-1)):
        assert_equal(vmap(f)(x), x)
    x = torch.randn(2, 3, 4, 5)
    x[x > 0] = float("nan")
    _vmap_test(torch.isnan, (x,), check_propagates_grad=False)
    x = torch.randn(2, 3, 4, 5)
    x[x > 0] = float("inf")
    _vmap_test(torch.isinf, (x,), check_propagates_grad=False)
    _vmap_test(torch.flatten, (torch.randn(2, 3, 4, 5), 1, 2), in_dims=(0, None, None),
               check_propagates_grad=False)
    x = torch.randn(2, 3, 6, 2, 3)
    _vmap_test(F.group_norm, (x, 3, torch.randn(6), torch.randn(6)),
               in_dims=(0, None, None, None), check_propagates_grad=False)
    _vmap_test(F.group_norm, (x, 2, torch.randn(2, 6), torch.randn(2, 6)),
               in_dims=(0, None, 0, 0), check_propagates_grad=False)
    for op in (torch.ones_like, torch.zeros_like):
        assert vmap(op)(x).shape == x.shape


def test_vmap_index_put() -> None:
    def check(f, t, idx, values):
        base = f(t[0].clone(), idx[0], values[0])
        assert_equal(vmap(f, in_dims=(0, 0, 0))(t.clone(), idx, values)[0], base)
        assert_equal(vmap(f, in_dims=(0, None, None))(t.clone(), idx[0], values[0])[0], base)
        assert_equal(vmap(f, in_dims=(0, None, 0))(t.clone(), idx[0], values)[0], base)
        assert_equal(vmap(f, in_dims=(0, 0, None))(t.clone(), idx, values[0])[0], base)

    def f(x, y, z):
        x[y] = z
        return x

    check(f, torch.randn(3, 4, 5), torch.zeros((3, 2)).long(), torch.randn(3, 2, 5))

    def g(t, idx, values):
        t[:, idx] = values
        return t

    check(g, torch.zeros((3, 2, 3)), torch.tensor([[1, 2]]).expand((3, 2)), torch.ones((3, 1, 2)))

    tensor, value = torch.zeros(3, 3, 4), torch.ones(3, 2)
    idxs = (torch.tensor([[0], [1], [2]]), torch.tensor([[0]]), torch.tensor([1, 2]))
    expected = torch.index_put_(tensor.clone(), idxs, value)

    def h(t, idx, v):
        torch.index_put_(t, idx, v)
        return t

    assert_equal(vmap(h, in_dims=(0, (None, None), 0))(tensor.clone(), idxs[1:], value), expected)
    assert_equal(vmap(h, in_dims=(0, (None, None), None))(tensor.clone(), idxs[1:], value[0]),
                 expected)


def test_vmap_return_types_and_namedtuple_returns() -> None:
    t = torch.randn(3, 2, 2)
    assert isinstance(vmap(torch.min, (0, None))(t, 0), torch.return_types.min)
    assert isinstance(vmap(torch.max, (0, None))(t, 0), torch.return_types.max)
    assert isinstance(vmap(torch.topk, (0, None, None))(t, 1, 0), torch.return_types.topk)
    values, indices = vmap(torch.max, (0, None))(t, 0)
    assert_equal(values, t.max(1).values)
    assert_equal(indices, t.max(1).indices)

    Point = namedtuple("Point", ["x", "y"])
    out = vmap(lambda x, y: Point(x=x, y=y))(torch.randn(2, 5), torch.randn(2, 3))
    assert isinstance(out, Point) and out.x.shape == (2, 5)


def test_vmap_of_vjp_inplace_on_view() -> None:
    def func(leaf):
        base = leaf * leaf
        view = base.transpose(0, 1)
        view[2:4, 2:4] *= 2
        view[0:2, 0:2].diagonal().sin_()
        view = view[1:3, 1:3]
        view.cos_()
        return view

    def push_vjp(leaf, gout):
        _, vjp_fn = vjp(func, leaf)
        return vjp_fn(gout)[0]

    leaf, gout = torch.randn(3, 4, 4), torch.randn(3, 2, 2)
    expected = torch.stack([push_vjp(leaf[i], gout[i]) for i in range(3)])
    assert_equal(vmap(push_vjp)(leaf, gout), expected)
    expected = torch.stack([push_vjp(leaf[0], gout[i]) for i in range(3)])
    assert_equal(vmap(push_vjp, in_dims=(None, 0))(leaf[0], gout), expected)


def test_vmap_advanced_and_nested_advanced_indexing() -> None:
    idxes = (torch.tensor([0, 1, 2]), torch.tensor([0, 1, 2]).reshape(3, 1))
    for inp in (torch.randn(3, 4, 4), torch.randn(3, 4, 4, 4)):
        for idx in idxes:
            for f in (lambda x, i: x[:, i], lambda x, i: x[i, :], lambda x, i: x[..., i]):
                expected = torch.stack([f(inp[b], idx) for b in range(3)])
                assert_equal(vmap(f, in_dims=(0, None))(inp, idx), expected)

    e = torch.rand(7, 4)
    idx = torch.tensor([0, 1]).view(2, 1)

    def _fake_vmap(f, in_dims=0, out_dims=0):
        def w(input):
            return torch.stack([f(input.select(in_dims, i)) for i in range(input.size(in_dims))],
                               out_dims)
        return w

    def with_vmap(_vmap):
        def g(idx_):
            return _vmap(lambda e_: e_[idx_], in_dims=1)(e)
        return _vmap(g)(idx)

    assert_equal(with_vmap(vmap), with_vmap(_fake_vmap))


def test_vmap_multi_dot_failure_and_anomaly_detection() -> None:
    inputs = (torch.randn(3, 3), torch.randn(3), torch.randn(3, 3))
    with pytest.raises(RuntimeError, match="tensor 1 must be 2D but got 1D"):
        torch.linalg.multi_dot(inputs)
    inputs = tuple(i.expand(i.shape[0], i.shape[0]) for i in inputs)
    with pytest.raises(RuntimeError, match="tensor 1 must be 2D but got 1D"):
        vmap(torch.linalg.multi_dot)(inputs)

    with torch.autograd.set_detect_anomaly(True):
        x = torch.zeros(3) - 1
        assert_equal(vmap(grad(lambda x: x.sum()))(x), torch.ones_like(x))
        with pytest.raises(RuntimeError,
                           match="Function 'SqrtBackward0' returned nan values in its 0th output."):
            vmap(grad(lambda x: x.sqrt().sum()))(x)


def test_multi_dot_checks_are_pytorchs() -> None:
    """Found porting test_vmap_multi_dot_failure_1D_input: rt's multi_dot chained matmuls
    with no checks (a 1-D middle tensor was multiplied, shape errors were matmul's). The
    texts are PyTorch 2.13's for these shapes."""
    cases = {((3, 3), (3,), (3, 3)): "tensor 1 must be 2D but got 1D",
             ((3, 3), (3, 3, 3)): "the last tensor must be 1D or 2D but got 3D",
             ((3, 3, 3), (3, 3)): "the first tensor must be 1D or 2D but got 3D",
             ((3, 3), (4, 4)): "tensors 0 and 1 with shapes [3, 3] and [4, 4] cannot be multiplied",
             ((3,), (4, 4)): "tensors 0 and 1 with shapes [3] and [4, 4] cannot be multiplied",
             ((2, 3), (3, 4), (5,)): "tensors 1 and 2 with shapes [3, 4] and [5] cannot be "
                                     "multiplied",
             ((3,), (4,)): "tensors 0 and 1 with shapes [3] and [4] cannot be multiplied",
             ((3, 3),): "expected at least 2 tensors but got 1"}
    for case, text in cases.items():
        with pytest.raises(RuntimeError) as ours:
            torch.linalg.multi_dot([torch.ones(s) for s in case])
        assert str(ours.value) == f"multi_dot(): {text}"
    with pytest.raises(RuntimeError, match="tensor 0 is float and tensor 1 double"):
        torch.linalg.multi_dot([torch.ones(3, 3), torch.ones(3, 3, dtype=torch.double)])
    a, b, c = torch.randn(3), torch.randn(3, 4), torch.randn(4)
    assert_equal(torch.linalg.multi_dot([a, b, c]), a @ b @ c)


# --- TestRandomness ---------------------------------------------------------------------------


def _get_image(batched_input: str, batch_size: int) -> Any:
    if batched_input == "first":
        return torch.ones([batch_size, 3, 3, 4, 4])
    if batched_input == "last":
        return torch.ones([3, 3, 4, 4, batch_size])
    return torch.ones([3, 3, 4, 4])


def _assert_all_slices_equal(tensor: Any) -> None:
    assert bool((tensor == tensor[0]).all())


def _assert_all_slices_unique(tensor: Any) -> None:
    B0 = tensor.shape[0]
    slices_equal = vmap(vmap(lambda x, y: (x == y).all(), (0, None)), (None, 0))(tensor, tensor)
    assert slices_equal.shape == (B0, B0)
    slices_equal.diagonal().zero_()
    assert_equal(slices_equal, torch.zeros_like(slices_equal))


def _in_dims(*batched_strings: str) -> tuple[Any, ...]:
    dims = {"first": 0, "last": -1, "none": None}
    return tuple(dims[b] for b in (*batched_strings, "first"))


def _reset_random(generator: Any, orig_state: Any, use_generator: bool, seed: int) -> Any:
    if use_generator:
        generator.set_state(orig_state)
        return generator
    torch.manual_seed(seed)
    return generator


@pytest.mark.parametrize("randomness", ["same", "different", "error"])
@pytest.mark.parametrize("use_generator", [True, False])
def test_randomness_factory_ops(randomness: str, use_generator: bool) -> None:
    generator = torch.Generator()
    orig_state = generator.get_state()
    kwargs = {"generator": generator} if use_generator else {}
    ops = [
        lambda _, shape: torch.randn(shape, **kwargs),
        lambda _, shape: torch.rand(shape, **kwargs),
        lambda _, shape: torch.randint(100, shape, **kwargs),
        lambda _, shape: torch.randint(5, 100, shape, **kwargs),
        lambda _, shape: torch.normal(0.0, 1.0, shape, **kwargs),
    ]
    B0, shape, seed = 4, (3, 3), 1234567
    for op in ops:
        passed = torch.randn(B0)
        if randomness == "error":
            with pytest.raises(RuntimeError,
                               match=r"called random operation while in randomness error mode"):
                vmap(op, in_dims=(0, None), randomness=randomness)(passed, shape)
            continue
        generator = _reset_random(generator, orig_state, use_generator, seed)
        vmap_result = vmap(op, in_dims=(0, None), randomness=randomness)(passed, shape)
        generator = _reset_random(generator, orig_state, use_generator, seed)
        if randomness == "different":
            expected = op(passed, [B0, *shape])
            _assert_all_slices_unique(vmap_result)
            if op in ops[:1] or op in ops[4:]:
                # normal draws: PyTorch's vmap draws the batch at once, and its 16-wide
                # Box-Muller fills 36 numbers otherwise than 4 x 9 (rt draws per element)
                assert vmap_result.shape == expected.shape
                continue
            assert_equal(vmap_result, expected)
        else:
            expected = op(passed, shape)
            _assert_all_slices_equal(vmap_result)
            for i in range(B0):
                assert_equal(vmap_result[i], expected)


@pytest.mark.parametrize("randomness", ["same", "different", "error"])
@pytest.mark.parametrize("use_generator", [True, False])
def test_randomness_randperm(randomness: str, use_generator: bool) -> None:
    B0, seed = 4, 1234567
    passed = torch.randn(B0)
    torch.manual_seed(seed)
    generator = torch.Generator()
    orig_state = generator.get_state()
    kwargs = {"generator": generator} if use_generator else {}
    if randomness == "error":
        with pytest.raises(RuntimeError,
                           match=r"called random operation while in randomness error mode"):
            vmap(lambda _: torch.randperm(10, **kwargs), randomness=randomness)(passed)
        return
    vmap_result = vmap(lambda _: torch.randperm(10, **kwargs), randomness=randomness)(passed)
    generator.set_state(orig_state)
    torch.manual_seed(seed)
    if randomness == "different":
        for i in range(B0):
            assert_equal(vmap_result[i], torch.randperm(10, **kwargs))
    else:
        expected = torch.randperm(10, **kwargs)
        for i in range(B0):
            assert_equal(vmap_result[i], expected)


@pytest.mark.parametrize("randomness", ["error", "same", "different"])
@pytest.mark.parametrize("batched_input", ["first", "last", "none"])
def test_randomness_dropouts(randomness: str, batched_input: str) -> None:
    B0 = 4
    always_batched = torch.randn((B0,))
    in_dims = _in_dims(batched_input)
    for f, feature in ((F.dropout, False), (F.alpha_dropout, False), (F.dropout2d, True)):
        passed = _get_image(batched_input, B0)

        def op(t, ignored):
            return f(torch.ones_like(t), training=True)  # noqa: B023

        if randomness == "error":
            with pytest.raises(RuntimeError,
                               match=r"called random operation while in randomness error mode"):
                vmap(op, randomness=randomness, in_dims=in_dims)(passed, always_batched)
            continue
        vmap_result = vmap(op, randomness=randomness, in_dims=in_dims)(passed, always_batched)
        if f is F.dropout:
            p_estimate = vmap_result.mean() / 2
            assert 0.25 < p_estimate.item() < 0.75
        if feature:
            planes = vmap_result.sum([-1, -2])
            planes_numel = 2 * 4 * 4
            assert bool(((planes == 0) ^ (planes == planes_numel)).all())
        if randomness == "different":
            _assert_all_slices_unique(vmap_result)
        else:
            _assert_all_slices_equal(vmap_result)


@pytest.mark.parametrize("randomness", ["error", "same", "different"])
@pytest.mark.parametrize("batched_input", ["first", "last", "none"])
def test_randomness_like_functions(randomness: str, batched_input: str) -> None:
    seed, B0 = 1234567, 4
    supported_ops = [
        lambda t, _: torch.randint_like(t, 20),
        lambda t, _: torch.randint_like(t, 0, 20),
        lambda t, _: torch.rand_like(t),
        lambda t, _: torch.randn_like(t),
    ]
    for op in supported_ops:
        always_batched = torch.randn(B0)
        passed = _get_image(batched_input, B0)
        in_dims = _in_dims(batched_input)
        if randomness == "error":
            with pytest.raises(RuntimeError,
                               match=r"called random operation while in randomness error mode"):
                vmap(op, in_dims=in_dims, randomness=randomness)(passed, always_batched)
            continue
        torch.manual_seed(seed)
        vmap_result = vmap(op, randomness=randomness, in_dims=in_dims)(passed, always_batched)
        torch.manual_seed(seed)
        if batched_input == "last":
            passed = passed.movedim(-1, 0)
        if randomness == "different":
            if batched_input == "none":
                passed = passed.expand(B0, *passed.shape)
            _assert_all_slices_unique(vmap_result)
            assert_equal(vmap_result, op(passed, 0))
            continue
        if batched_input != "none":
            passed = passed[0]
        expected = op(passed, 0)
        _assert_all_slices_equal(vmap_result)
        for i in range(B0):
            assert_equal(vmap_result[i], expected)


@pytest.mark.parametrize("use_generator", [True, False])
@pytest.mark.parametrize("randomness", ["error", "same", "different"])
@pytest.mark.parametrize("batched_input", ["first", "last"])
def test_randomness_random_unary_inplace(use_generator: bool, randomness: str,
                                         batched_input: str) -> None:
    generator = torch.Generator()
    orig_state = generator.get_state()
    kwargs = {"generator": generator} if use_generator else {}
    ops = [
        lambda t, _: t.random_(**kwargs),
        lambda t, _: t.random_(100, **kwargs),
        lambda t, _: t.random_(-5, 100, **kwargs),
        lambda t, _: t.normal_(**kwargs),
        lambda t, _: t.bernoulli_(**kwargs),
        lambda t, _: t.cauchy_(**kwargs),
        lambda t, _: t.exponential_(**kwargs),
        lambda t, _: t.geometric_(0.5, **kwargs),
        lambda t, _: t.log_normal_(**kwargs),
        lambda t, _: t.uniform_(**kwargs),
    ]
    B0, seed = 4, 1234567
    in_dims = _in_dims(batched_input)
    for op in ops:
        always_batched = torch.randn(B0)
        passed = _get_image(batched_input, B0)
        passed_expected = passed.clone()
        if randomness == "error":
            with pytest.raises(RuntimeError,
                               match=r"called random operation while in randomness error mode"):
                vmap(op, in_dims=in_dims, randomness=randomness)(passed, always_batched)
            continue
        generator = _reset_random(generator, orig_state, use_generator, seed)
        vmap_result = vmap(op, in_dims=in_dims, randomness=randomness)(passed, always_batched)
        if batched_input == "last":
            passed_expected = passed_expected.movedim(-1, 0)
        generator = _reset_random(generator, orig_state, use_generator, seed)
        if randomness == "different":
            expected = op(passed_expected, always_batched)
            _assert_all_slices_unique(vmap_result)
            assert_equal(vmap_result, expected)
        else:
            expected = op(passed_expected[0].clone(), always_batched)
            _assert_all_slices_equal(vmap_result)
            for i in range(B0):
                assert_equal(vmap_result[i], expected)


@pytest.mark.parametrize("in_dim", [0, 2])
@pytest.mark.parametrize("out_dim", [0, 1])
def test_randomness_vmap_chunksize(in_dim: int, out_dim: int) -> None:
    x = torch.randn(4, 5, 6)

    def f(x):
        return x.sin() + torch.rand_like(x)

    for chunk_size in [1, 3, 100]:
        output = vmap(f, in_dims=in_dim, out_dims=out_dim, randomness="different",
                      chunk_size=chunk_size)(x)
        _assert_all_slices_unique(output.movedim(out_dim, 0))


def test_randomness_jacfwd_and_dropout_unbatched() -> None:
    x = torch.rand(3, 4)
    with pytest.raises(RuntimeError, match=r"called random operation while in randomness error mode"):
        jacfwd(torch.bernoulli)(x)
    assert jacfwd(torch.bernoulli, randomness="same")(x).shape == (3, 4, 3, 4)
    assert jacfwd(torch.bernoulli, randomness="different")(x).shape == (3, 4, 3, 4)

    x, y = torch.randn(3), torch.randn(1, 3)

    def fn(x, y):
        return x + F.dropout(y, p=0.5).mean(1)

    with pytest.raises(RuntimeError):
        vmap(fn, in_dims=(0, None), randomness="error")(x, y)
    for randomness in ("same", "different"):
        assert vmap(fn, in_dims=(0, None), randomness=randomness)(x, y).shape == (3, 1)


def test_vmap_mode_key_nested_different() -> None:
    def vmap_f(x):
        return x + torch.randn(())

    torch.manual_seed(0)
    out1 = vmap(vmap(vmap_f, randomness="different"), randomness="different")(torch.ones(2, 3))
    torch.manual_seed(0)
    assert_equal(out1, torch.ones(2, 3) + torch.randn(2, 3))
    torch.manual_seed(0)
    out1 = vmap(vmap(vmap_f, randomness="different"), randomness="different")(torch.ones(2, 3, 4))
    torch.manual_seed(0)
    assert_equal(out1, torch.ones(2, 3, 4) + torch.randn(2, 3, 1))
    assert torch.randn(()).dim() == 0


@pytest.mark.parametrize("in_dim", [0, 2])
@pytest.mark.parametrize("out_dim", [0, 1])
@pytest.mark.parametrize("randomness", ["error", "same"])
def test_vmap_chunksize_equals_unchunked(in_dim: int, out_dim: int, randomness: str) -> None:
    x = torch.randn(4, 5, 6)
    y = torch.randn_like(x)
    noisy = randomness != "error"

    def f(x):
        return x.sin() + (torch.rand_like(x) if noisy else 0)

    def f1(pair):
        x, y = pair
        z = x.sin() + y.cos()
        return z + (torch.rand_like(z) if noisy else 0)

    def f2(x):
        y = f(x)
        return {"out": y, "out1": y + 2}

    def f3(inp_dict):
        z = inp_dict["inp"] + inp_dict["inp1"].cos()
        z = z + (torch.rand_like(z) if noisy else 0)
        return {"z": z, "tuple": (z, z + 1)}

    kw = {"out_dims": out_dim, "randomness": randomness}
    cases = ((f, (x,), {"in_dims": in_dim}), (f1, ((x, y),), {"in_dims": ((in_dim,) * 2,)}),
             (f2, (x,), {"in_dims": in_dim}),
             (f3, ({"inp": x.index_select(in_dim, torch.tensor([0])).squeeze(in_dim), "inp1": y},),
              {"in_dims": ({"inp": None, "inp1": in_dim},)}),
             (f3, ({"inp": 2.0, "inp1": y},), {"in_dims": ({"inp": None, "inp1": in_dim},)}))
    for fn, args, dims in cases:
        rs = torch.get_rng_state()
        expected = vmap(fn, **dims, **kw)(*args)
        for chunk_size in (1, 3, 100):
            torch.set_rng_state(rs)
            assert_equal(vmap(fn, chunk_size=chunk_size, **dims, **kw)(*args), expected)
    rs = torch.get_rng_state()
    expected = vmap(vmap(f, randomness=randomness), randomness=randomness)(x)
    torch.set_rng_state(rs)
    assert_equal(vmap(vmap(f, randomness=randomness, chunk_size=2), randomness=randomness,
                      chunk_size=3)(x), expected)


def test_vmap_chunksize_errors() -> None:
    x = torch.randn(4, 5, 6)
    for chunk_size in (-1, 0):
        with pytest.raises(ValueError, match="vmap: chunk_size should be None or greater than 0."):
            vmap(torch.sin, chunk_size=chunk_size)(x)
    with pytest.raises(ValueError, match="out_dims is not compatible with the structure of "
                                         "`outputs`"):
        vmap(torch.sin, out_dims=(0, 0), chunk_size=2)(x)


# --- TestVmapBatchedGradient --------------------------------------------------------------------


def _differentiable(args: Any) -> tuple[Any, ...]:
    args = args if isinstance(args, tuple | list) else (args,)
    return tuple(a for a in args if isinstance(a, torch.Tensor) and a.requires_grad)


def _construct_v(output: Any, batch_size: int, contig: bool) -> Any:
    if contig:
        return torch.randn(batch_size, *output.shape, dtype=output.dtype)
    return torch.randn(*output.shape, batch_size, dtype=output.dtype).movedim(-1, 0)


def _batched_grad_test(op: Any, args: tuple[Any, ...], grad_grad: bool = True) -> None:
    outputs = _differentiable(op(*args))
    for contig in (True, False):
        vectors = tuple(_construct_v(out, 3, contig) for out in outputs)

        def vjp_of(*v):
            return torch.autograd.grad(outputs, _differentiable(args), v, retain_graph=True)

        _vmap_test(vjp_of, vectors, check_propagates_grad=False)
    if not grad_grad:
        return
    outputs = _differentiable(op(*args))
    first = _differentiable(torch.autograd.grad(outputs, _differentiable(args),
                                                tuple(torch.ones_like(o) for o in outputs),
                                                create_graph=True))
    assert len(first) > 0
    for contig in (True, False):
        vectors = tuple(_construct_v(g, 3, contig) for g in first)

        def vhp(*v):
            outs = torch.autograd.grad(first, _differentiable(args), v, retain_graph=True,
                                       allow_unused=True)
            return tuple(o for o in outs if o is not None)

        _vmap_test(vhp, vectors, check_propagates_grad=False)


def _rand_no_zeros(*shape: int) -> Any:
    return torch.rand(*shape).clamp_min_(0.1).requires_grad_(True)


def test_batched_gradient_arithmetic() -> None:
    x, y = torch.randn(2, 3, requires_grad=True), _rand_no_zeros(2, 3)
    for op, gg in ((torch.add, False), (lambda a, b: a - b, False), (torch.mul, True),
                   (lambda a, b: a / b, True)):
        _batched_grad_test(op, (x, y), gg)
        _batched_grad_test(op, (3.14, y), False)
        _batched_grad_test(op, (x, 3.14), False)


def test_batched_gradient_unary_and_reductions() -> None:
    x = torch.randn(2, 3, requires_grad=True)
    p = _rand_no_zeros(2, 3)
    _batched_grad_test(partial(torch.log_softmax, dim=-1), (x,))
    _batched_grad_test(torch.Tensor.lgamma, (x,))
    _batched_grad_test(torch.log, (p,))
    _batched_grad_test(torch.log1p, (p,))
    _batched_grad_test(lambda t: torch.logsumexp(t, -1), (p,))
    _batched_grad_test(lambda t: (t * t)[torch.tensor([[0, 0], [1, 1]])], (x,))
    _batched_grad_test(lambda t: t.expand(5, 5, 2, 3), (x,), False)
    _batched_grad_test(torch.max, (x,), False)
    _batched_grad_test(torch.median, (x,), False)
    z = torch.randn(2, 3, 5, requires_grad=True)
    _batched_grad_test(lambda t: t.permute(2, 0, 1), (z,), False)
    _batched_grad_test(lambda t: t.reshape(2 * 3, 5), (z,), False)
    s = F.sigmoid(torch.randn(3, 2, requires_grad=True))
    _batched_grad_test(partial(F.binary_cross_entropy, target=torch.rand(3, 2)), (s,))


def test_batched_gradient_basic_partial_and_nn_module() -> None:
    N = 3
    x, y = torch.randn(N, requires_grad=True), torch.randn(N)

    def vjp_mul(v):
        return torch.autograd.grad([x * y], [x], grad_outputs=[v])[0]

    assert_equal(vmap(vjp_mul)(torch.eye(N)), torch.diagflat(y))
    x, y = torch.randn(3), torch.randn(2, 3)
    assert_equal(vmap(partial(torch.mul, x))(y), x * y)
    tensor = torch.randn(2, 3)
    model = nn.Linear(3, 3, bias=False)
    assert_equal(vmap(model)(tensor), model(tensor))

    def f(x, y):
        return x + torch.dot(y, torch.ones(2))

    x, y = torch.randn(7, 5), torch.randn(3, 2)
    out = vmap(vmap(f, in_dims=(0, None)), in_dims=(None, 0))(x, y)
    assert_equal(out, torch.mv(y, torch.ones(2)).view(3, 1, 1) + x)


def test_batched_gradient_views_and_inplace_views() -> None:
    x = torch.randn(2, 3, requires_grad=True)
    y = torch.randn(2, 3, requires_grad=True)
    _batched_grad_test(torch.Tensor.sigmoid, (x,))
    _batched_grad_test(lambda a, b: torch.stack([a, b]), (x, y), False)
    for op in (lambda t: t[1], lambda t: t.select(1, 2), lambda t: t.select(-1, 0)):
        _batched_grad_test(op, (x,), False)
    z = torch.randn(2, 3, 5, requires_grad=True)
    for op in (lambda t: t[0:1], lambda t: t[:, 1:3], lambda t: t[..., 1:3]):
        _batched_grad_test(op, (z,), False)
    _batched_grad_test(torch.Tensor.trace, (x,), False)
    _batched_grad_test(lambda t: F.threshold(t, 0.5, 0.0), (x,), False)
    _batched_grad_test(lambda t: t.diagonal(0, -1, -2), (z,), False)

    def sum_grad_trace(t):
        return grad(torch.trace)(t).sum()

    output = vmap(grad(sum_grad_trace))(torch.randn(3, 2, 2))
    assert_equal(output, torch.zeros_like(output))

    leaf = torch.randn(4, 5, requires_grad=True)

    def func(leaf):
        view = (leaf * leaf)[0]
        view.cos_()
        return view

    _batched_grad_test(func, (leaf,))
    leaf = torch.randn(4, 4, 5, requires_grad=True)

    def many(leaf):
        view = (leaf * leaf).transpose(0, 2)[1].diagonal()[::2]
        view.cos_()
        return view

    _batched_grad_test(many, (leaf,))


def test_batched_gradient_unrelated_output() -> None:
    x = torch.randn([], requires_grad=True)
    y = torch.randn([], requires_grad=True)
    gy = torch.randn(3, requires_grad=True)

    def vjp_of(v):
        (res,) = torch.autograd.grad(y, x, v, allow_unused=True)
        return torch.zeros_like(x) if res is None else res

    vjp_of(gy[0])
    assert_equal(vmap(vjp_of)(gy), torch.zeros(3))


@pytest.mark.parametrize("originally_track_running_stats", [True, False])
def test_update_batch_norm(originally_track_running_stats: bool) -> None:
    """TestExamplesCorrectness.test_update_batch_norm: per-example gradients through batch
    norm once replace_all_batch_norm_modules_ dropped its running statistics (torch.func's
    function, which rt lacked)."""
    from runtime.func import replace_all_batch_norm_modules_

    net = nn.Sequential(nn.Conv2d(4, 4, 3),
                        nn.BatchNorm2d(4, affine=True,
                                       track_running_stats=originally_track_running_stats),
                        nn.ReLU(), nn.Flatten(), nn.Linear(4 * 4 * 4, 5)).to(torch.double)
    assert replace_all_batch_norm_modules_(net) is net
    bn = net[1]
    assert not bn.track_running_stats and bn.running_mean is None and bn.running_var is None
    assert bn.num_batches_tracked is None
    params, buffers = dict(net.named_parameters()), dict(net.named_buffers())
    criterion = nn.CrossEntropyLoss()

    def compute_loss(x, y, params, buffers):
        return criterion(functional_call(net, (params, buffers), (x,)), y)

    x = torch.randn(2, 1, 4, 6, 6, dtype=torch.double)
    y = torch.randint(0, 5, (2, 1))
    result = vmap(grad(compute_loss, argnums=2), in_dims=(0, 0, None, None))(x, y, params, buffers)
    flat = list(params.values())
    expected = [torch.autograd.grad(compute_loss(x[i], y[i], params, buffers), flat)
                for i in range(2)]
    for k, (name, _) in enumerate(params.items()):
        assert_equal(result[name], torch.stack([e[k] for e in expected]))


@pytest.mark.parametrize("op", [torch.sum, torch.mean], ids=["sum", "mean"])
def test_vmap_sum_mean_dims_argmax_repeat_slogdet_trace(op: Any) -> None:
    B0, B1 = 3, 2
    _vmap_test(lambda x: op(x, 0), [torch.randn([B0])])
    _vmap_test(lambda x: op(x, -1), [torch.randn([2, 5, B0, 3])], in_dims=2)
    _vmap_test(lambda x: op(x, 2), [torch.randn([2, 5, B0, 3])], in_dims=2, out_dims=2)
    _vmap_test(vmap(lambda x: op(x, -2)), [torch.randn([B1, 2, 5, B0, 3])], in_dims=2)
    _vmap_test(op, [torch.randn([B0])])
    _vmap_test(vmap(op), [torch.randn([2, 5, B0, B1, 3])], in_dims=2)
    for f in (torch.argmax, lambda x: torch.argmax(x, 0), lambda x: torch.argmax(x, -1)):
        _vmap_test(f, [torch.randn(B0, 2, 3)], check_propagates_grad=False)
    _vmap_test(lambda x: x.repeat((2, 3)), (torch.rand(1, B0, 1),), in_dims=1)
    for shape in ((B0, 1, 1), (B0, 2, 2), (B0, 3, 2, 2)):
        _vmap_test(torch.linalg.slogdet, (torch.rand(shape),), check_propagates_grad=False)
    _vmap_test(torch.trace, (torch.rand(2, B0, 5),), in_dims=1)
    _vmap_test(vmap(vmap(torch.trace, in_dims=2)), (torch.rand(B1, 2, B0, 5, 4),), in_dims=2)


def test_vmap_reshape_view_view_as_and_their_errors() -> None:
    B0, B1, B2 = 3, 2, 4
    _vmap_test(torch.reshape, (torch.rand(B0, 2 * 5), [2, 5]), in_dims=(0, None), check_view=True)
    _vmap_test(torch.reshape, (torch.rand(2, B0, 5), [1, 1, 10]), in_dims=(1, None))
    _vmap_test(vmap(lambda t: t.reshape([-1])), (torch.rand(B0, B1, 2, 5),), check_view=True)
    op = torch.Tensor.reshape_as
    _vmap_test(op, (torch.rand(B0, 2 * 5), torch.rand(B0, 2, 5)), check_view=True)
    _vmap_test(op, (torch.rand(2 * 5), torch.rand(B0, 2, 5)), in_dims=(None, 0), check_view=True)
    _vmap_test(op, (torch.rand(2, B0, 5), torch.rand(1, 1, 10)), in_dims=(1, None))

    with pytest.raises(RuntimeError):
        vmap(torch.Tensor.view, in_dims=(1, None))(torch.rand(2, B0, 5), [10])
    _vmap_view_test(torch.Tensor.view, (torch.rand(B0, 2 * 5), [2, 5]), in_dims=(0, None))
    _vmap_view_test(torch.Tensor.view, (torch.rand(B0, 4, 5), [1, 2, 1, 10]), in_dims=(0, None))
    _vmap_view_test(vmap(lambda t: t.view([-1])), (torch.rand(B0, B1, 2, 5, 3),))
    op = torch.Tensor.view_as
    with pytest.raises(RuntimeError):
        vmap(op, in_dims=(1, 0))(torch.rand(2, B0, 5), torch.rand(B0, 10))
    _vmap_view_test(op, (torch.rand(B0, 2 * 5), torch.rand(B0, 2, 5)))
    _vmap_view_test(op, (torch.rand(2 * 5), torch.rand(B0, 2, 5)), in_dims=(None, 0))
    _vmap_view_test(vmap(vmap(op, in_dims=(0, None)), in_dims=(0, None)),
                    (torch.rand(B1, B2, B0, 3, 2, 5), torch.rand(B0, 3 * 2 * 5)), in_dims=(2, 0))
    # PyTorch's squeeze batching rule raises RuntimeError("Dimension is out of range ...");
    # rt squeezes each element, so the error is eager squeeze's IndexError
    with pytest.raises(IndexError, match="Dimension out of range"):
        vmap(lambda x: torch.squeeze(x, dim=1))(torch.rand(10))


def test_vmap_tensor_split_split_unbind_transpose_t_unfold_views() -> None:
    B0, B1, B2 = 3, 2, 4
    op = torch.tensor_split
    _vmap_view_test(op, (torch.rand(B0, 2, 64), 5, -1), in_dims=(0, None, None))
    _vmap_view_test(op, (torch.rand(B0, 2, 64), [5, 10, 3, 40], -1), in_dims=(0, None, None))
    _vmap_view_test(vmap(vmap(lambda t: op(t, 4, 1), in_dims=2)), (torch.rand(B1, 2, B0, 16, B2),),
                    in_dims=2)
    op = torch.split
    _vmap_view_test(op, (torch.rand(2, B0, 64), [1, 60, 3], 1), in_dims=(1, None, None))
    _vmap_view_test(vmap(op, in_dims=(0, None, None)), (torch.rand(B1, 63, B0, 5), 16, 0),
                    in_dims=(2, None, None))
    op = torch.unbind
    _vmap_view_test(op, (torch.rand(B0, 2, 16), -1), in_dims=(0, None))
    _vmap_view_test(op, (torch.rand(B0, 2, 0),))
    _vmap_view_test(vmap(lambda t: op(t, dim=1), in_dims=2), (torch.rand(B1, 2, B0, 8),))
    op = torch.transpose
    _vmap_view_test(lambda x: op(x, 3, 1), (torch.rand(B0, 2, 5, 4, 6),))
    _vmap_view_test(vmap(vmap(lambda x: op(x, 0, 1), in_dims=2)), (torch.rand(B1, 2, B0, 5, B2),),
                    in_dims=2)
    _vmap_view_test(vmap(torch.t), (torch.rand(B1, 2, B0, 5),), in_dims=2)
    _vmap_view_test(vmap(lambda t: t.T), (torch.rand(B1, 2, B0, 3, 5),), in_dims=2)
    op = torch.Tensor.unfold
    _vmap_view_test(op, (torch.rand(7, B0, 11), 1, 4, 2), in_dims=(1, None, None, None))
    _vmap_view_test(vmap(op, in_dims=(0, None, None, None)), (torch.rand(B1, 7, B0, 11), 1, 5, 1),
                    in_dims=(2, None, None, None))


def test_vmap_to_result_type_and_conv() -> None:
    B0 = 3
    _vmap_test(lambda t: t.to("cpu"), (torch.rand(B0),))
    _vmap_test(lambda t: t.to(torch.double), (torch.rand(B0),))
    _vmap_test(lambda t, o: t.to(o), (torch.rand(B0), torch.randn(B0, dtype=torch.float64)),
               in_dims=(0, None))
    _vmap_test(lambda t: t.double(), (torch.rand(B0),))
    _vmap_test(lambda t: t.long(), (torch.rand(B0),), check_propagates_grad=False)

    def op(*args):
        return torch.ones([], dtype=torch.result_type(*args))

    for args in ((torch.randn(B0), torch.randn(B0, dtype=torch.float64)),
                 (torch.randn(B0), torch.randint(10, [B0], dtype=torch.int64)),
                 (torch.randn(B0, 2), torch.randn(B0, dtype=torch.float64))):
        _vmap_test(op, args, check_propagates_grad=False)
    _vmap_test(lambda x: op(x, torch.tensor(1.6, dtype=torch.double)), (torch.randn(B0, 2),),
               check_propagates_grad=False)

    for conv_mod, conv_fn, inp_shape in ((nn.Conv1d, torch.conv1d, [2, 4, 9]),
                                         (nn.Conv2d, torch.conv2d, [2, 4, 7, 8])):
        mod = conv_mod(4, 8, kernel_size=3, groups=2, stride=2, padding=1, dilation=2)
        x = torch.randn(inp_shape)
        kw = {"groups": 2, "stride": 2, "padding": 1, "dilation": 2}
        _vmap_test(lambda x, w, b: conv_fn(x.unsqueeze(0), w, b, **kw)[0],  # noqa: B023
                   (x, mod.weight, mod.bias), in_dims=(0, None, None))
        ws = torch.stack([mod.weight, mod.weight * 2])
        _vmap_test(lambda w: conv_fn(x, w, None, **kw), (ws,))  # noqa: B023


_RANDOM_OUT_OF_PLACE = {
    "normal_std": lambda t, _: torch.normal(0.0, torch.abs(t)),
    "normal_mean": lambda t, _: torch.normal(t, 1.0),
    "bernoulli_p": lambda t, _: torch.bernoulli(t - 0.5),
    "bernoulli": lambda t, _: torch.bernoulli(t, 0.5),
    "poisson": lambda t, _: torch.poisson(t),
    "normal_tensors": lambda t, _: torch.normal(t, t),
    "binomial": lambda t, _: torch.binomial(t, t - 0.5),
}


@pytest.mark.parametrize("randomness", ["error", "same", "different"])
@pytest.mark.parametrize("batched_input", ["first", "last", "none"])
def test_randomness_random_out_of_place(randomness: str, batched_input: str) -> None:
    """test_random_unary_out_of_place / test_random_binary_out_of_place; PyTorch refuses
    "same" with a batched tensor parameter ("Vmap does not currently support same
    randomness with a batched tensor input"), which rt does not: those cases are left out."""
    B0, seed = 4, 1234567
    in_dims = _in_dims(batched_input)
    for op in _RANDOM_OUT_OF_PLACE.values():
        always_batched = torch.randn(B0)
        passed = _get_image(batched_input, B0)
        if randomness == "error":
            with pytest.raises(RuntimeError,
                               match=r"called random operation while in randomness error mode"):
                vmap(op, in_dims=in_dims, randomness=randomness)(passed, always_batched)
            continue
        if randomness == "same" and batched_input != "none":
            continue
        torch.manual_seed(seed)
        vmap_result = vmap(op, in_dims=in_dims, randomness=randomness)(passed, always_batched)
        torch.manual_seed(seed)
        if randomness == "different":
            if batched_input == "none":
                passed = passed.expand(B0, *passed.shape)
            if batched_input == "last":
                passed = passed.movedim(-1, 0)
            _assert_all_slices_unique(vmap_result)
            assert_equal(vmap_result, op(passed, always_batched))
        else:
            expected = op(passed, always_batched)
            _assert_all_slices_equal(vmap_result)
            for i in range(B0):
                assert_equal(vmap_result[i], expected)


@pytest.mark.parametrize("randomness", ["error", "same", "different"])
@pytest.mark.parametrize("batched_input", ["first", "none"])
def test_randomness_multinomial(randomness: str, batched_input: str) -> None:
    B0, seed = 4, 1234567
    passed = _get_image(batched_input, B0)
    passed = passed.flatten(1) if batched_input == "first" else passed.flatten()

    def op(input, _):
        return torch.multinomial(input, 10)

    in_dims = _in_dims(batched_input)
    always_batched = torch.randn(B0)
    if randomness == "error":
        with pytest.raises(RuntimeError,
                           match=r"called random operation while in randomness error mode"):
            vmap(op, in_dims=in_dims, randomness=randomness)(passed, always_batched)
        return
    if randomness == "same" and batched_input != "none":
        return
    torch.manual_seed(seed)
    vmap_result = vmap(op, in_dims=in_dims, randomness=randomness)(passed, always_batched)
    torch.manual_seed(seed)
    if randomness == "different":
        if batched_input == "none":
            passed = passed.expand(B0, *passed.shape)
        _assert_all_slices_unique(vmap_result)
        assert_equal(vmap_result, op(passed, always_batched))
    else:
        expected = op(passed, always_batched)
        _assert_all_slices_equal(vmap_result)
        for i in range(B0):
            assert_equal(vmap_result[i], expected)


def test_view_requires_grad_after_its_base_is_written() -> None:
    """A view whose base is written in place with a value requiring grad requires grad (as
    PyTorch's), read without regenerating its history: reading it never raises, even for a
    view whose grad_fn would (PyTorch 2.13's results)."""
    y = torch.randn(3, requires_grad=True)
    x = torch.zeros(3)
    v = x[0:2]
    x.copy_(y)
    assert v.requires_grad

    base = torch.randn(3, requires_grad=True) * 1
    with torch.no_grad():
        w = base[0:2]
    base.mul_(2)
    assert w.requires_grad
    with pytest.raises(RuntimeError, match="A view was created in no_grad mode"):
        w.grad_fn  # noqa: B018

    x = torch.zeros(2, 3)
    u = x.unbind(0)[0]
    x.copy_(y)
    assert u.requires_grad
    with pytest.raises(RuntimeError, match="output of a function that returns multiple views"):
        u.grad_fn  # noqa: B018

    x = torch.zeros(3)
    d = x[0:2]
    with torch.no_grad():
        x.add_(1)
    assert not d.requires_grad


@pytest.mark.parametrize("inner_requires_grad", [True, False])
@pytest.mark.parametrize("save_for", ["jvp", "vjp"])
@pytest.mark.parametrize("save_tensors", ["input", "output", "neither"])
@pytest.mark.parametrize("mark_dirty", [True, False])
def test_autograd_function_returns_input(inner_requires_grad: bool, save_for: str,
                                         save_tensors: str, mark_dirty: bool) -> None:
    """TestAutogradFunction.test_function_returns_input, but for its forward-AD half (rt has
    no dual tensors): a setup_context Function returning an input as-is that it saves is
    refused, in transforms and out, with PyTorch's text."""
    class A(torch.autograd.Function):
        @staticmethod
        def forward(x):
            return x

        @staticmethod
        def setup_context(ctx, inputs, output):
            save_fn = ctx.save_for_forward if save_for == "jvp" else ctx.save_for_backward
            if mark_dirty:
                ctx.mark_dirty(inputs[0])
            if save_tensors == "input":
                save_fn(inputs[0])
            elif save_tensors == "output":
                save_fn(output)

        @staticmethod
        def backward(ctx, grad_output):
            return grad_output

        @staticmethod
        def jvp(ctx, x_t):
            return x_t.add_(0) if mark_dirty else x_t.view_as(x_t)

    def fn(x):
        return A.apply(x.clone())

    err_msg = "An input that has been returned as-is"
    refused = save_tensors in ("input", "output") and not mark_dirty
    a = torch.tensor(2.0, requires_grad=inner_requires_grad)
    a_t = torch.tensor(2.0, requires_grad=inner_requires_grad)
    if refused:
        with pytest.raises(RuntimeError, match=err_msg):
            grad(fn)(a)
        with pytest.raises(RuntimeError, match=err_msg):
            jvp(fn, (a,), (a_t,))
        with pytest.raises(RuntimeError, match=err_msg):
            A.apply(torch.tensor(2.0, requires_grad=inner_requires_grad).clone())
        return
    assert_equal(grad(fn)(a), 1.0)
    assert_equal(jvp(fn, (a,), (a_t,))[1], 2.0)
    a = torch.tensor(2.0, requires_grad=inner_requires_grad).clone()
    b = A.apply(a)
    if mark_dirty:
        assert a is b


def test_inplace_on_captures() -> None:
    """TestGradTransform/TestJvp.test_inplace_on_captures: writing in place into a tensor the
    function captures (made before the transform, not one of its arguments) is refused inside
    grad and jvp; rt wrote it and returned a gradient. Arguments (differentiated or not,
    keyword ones, pytree leaves) and tensors made inside may be written, as in PyTorch."""
    x = torch.tensor([1.0, 2.0, 3.0])
    captured = torch.randn(3)

    def foo(x):
        captured.copy_(x)
        return (x * captured).sum()

    with pytest.raises(RuntimeError, match="mutate a captured Tensor"):
        grad(foo)(x)
    with pytest.raises(RuntimeError, match="mutate a captured Tensor"):
        jvp(lambda x: (captured.add_(1), x * 2)[1], (x,), (x,))
    before = captured.clone()
    with pytest.raises(RuntimeError, match=r"attempted to call in-place operation \(aten::copy_\)"):
        grad(lambda x: (captured[0:2].copy_(x[0:2]), x.sum())[1])(x)
    assert_equal(captured, before)  # refused before writing

    b = torch.zeros(3)
    grad(lambda x, b: (b.add_(1), x.sum())[1])(x, b)
    grad(lambda x, b=None: (b.add_(1), x.sum())[1])(x, b=b)
    grad(lambda x, d: (d["b"].add_(1), x.sum())[1])(x, {"b": b})
    assert_equal(b, torch.full((3,), 3.0))
    assert_equal(grad(lambda x: (lambda y: (y.copy_(x), (y * x).sum())[1])(torch.zeros(3)))(x),
                 2 * x)

    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4))
    params, buffers = dict(model.named_parameters()), dict(model.named_buffers())
    inputs = torch.randn(5, 3)
    grad(lambda p, b, x: functional_call(model, (p, b), (x,)).sum())(params, buffers, inputs)
    with pytest.raises(RuntimeError, match="mutate a captured Tensor"):  # BatchNorm's stats
        grad(lambda p, x: functional_call(model, p, (x,)).sum())(params, inputs)
