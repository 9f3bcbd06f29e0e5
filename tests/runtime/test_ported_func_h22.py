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
interpreter stacks, dead wrappers, ``GradTrackingTensor`` / ``BatchedTensor`` reprs: rt's
transforms have no wrapper tensors), ``torch.autograd.forward_ad`` (rt has none: forward mode
is reverse mode twice), vmap of autograd.Function (``generate_vmap_rule``), and the tests of
behaviour rt's vmap documents as different (it runs the function once per batch element,
see ``runtime/func/vmap.py``: the in-place-on-unbatched errors, "mutate a captured Tensor",
data-dependent control flow errors, ``.item()`` errors).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import runtime as torch
import runtime.nn.functional as F
from runtime.func import (
    grad,
    grad_and_value,
    jacrev,
    jvp,
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
    dtype's tolerance (dtypes not compared), numbers against tensors."""
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
                                   check_dtype=False)
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
