"""runtime.func's reverse mode (grad, grad_and_value, vjp) against torch.func on the same
inputs: values, gradients, pytrees, argnums, has_aux, nesting, and PyTorch's errors."""

import numpy as np
import pytest

import runtime as rt
from runtime import func as rf

torch = pytest.importorskip("torch")
tf = torch.func

RTOL = {"float64": 1e-10, "float32": 1e-5}


def to_rt(tree, **kw):
    return tree_map_np(tree, lambda a: rt.tensor(a, **kw))


def to_th(tree, **kw):
    return tree_map_np(tree, lambda a: torch.tensor(a, **kw))


def tree_map_np(tree, fn):
    if isinstance(tree, dict):
        return {k: tree_map_np(v, fn) for k, v in tree.items()}
    if isinstance(tree, list | tuple):
        return type(tree)(tree_map_np(v, fn) for v in tree)
    return fn(tree) if isinstance(tree, np.ndarray) else tree


def assert_same(ours, theirs, rtol=1e-10):
    """Same pytree structure, tensors with equal shapes, dtypes' names and close values."""
    if isinstance(theirs, dict):
        assert isinstance(ours, dict) and list(ours) == list(theirs)
        for k in theirs:
            assert_same(ours[k], theirs[k], rtol)
    elif isinstance(theirs, list | tuple):
        assert type(ours) is type(theirs) and len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            assert_same(a, b, rtol)
    elif isinstance(theirs, torch.Tensor):
        assert isinstance(ours, rt.Tensor), type(ours)
        assert tuple(ours.shape) == tuple(theirs.shape)
        assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
        np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=rtol,
                                   atol=rtol)
    else:
        assert ours == theirs


def same_message(ours, theirs):
    """Equal error texts, dtypes named as each library names them."""
    assert str(ours).replace("runtime.", "torch.") == str(theirs)


def both(fn_of_lib, *arrays, transform, **kw):
    """``transform(fn(lib), **kw)(*inputs)`` in runtime and in torch."""
    ours = getattr(rf, transform)(fn_of_lib(rt), **kw)(*to_rt(arrays))
    theirs = getattr(tf, transform)(fn_of_lib(torch), **kw)(*to_th(arrays))
    return ours, theirs


def rng_arrays(seed, *shapes, dtype="float64"):
    r = np.random.default_rng(seed)
    return [r.standard_normal(s).astype(dtype) for s in shapes]


# --- grad -----------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("shape", [(), (4,), (2, 3)])
def test_grad_matches_torch(dtype, shape):
    (x,) = rng_arrays(0, shape, dtype=dtype)
    ours, theirs = both(lambda m: lambda x: (m.tanh(x) * x.exp()).sum(), x, transform="grad")
    assert_same(ours, theirs, RTOL[dtype])
    assert not ours.requires_grad and ours.grad_fn is None


@pytest.mark.parametrize("argnums", [0, 1, (0, 1), (1, 0), -1, (-2,)])
def test_grad_argnums(argnums):
    x, y = rng_arrays(1, (3,), (3,))
    ours, theirs = both(lambda m: lambda x, y: (x * y.sin()).sum() + (x ** 2).sum(), x, y,
                        transform="grad", argnums=argnums)
    assert_same(ours, theirs)


def test_grad_pytree_arguments_and_kwargs():
    a, b, c = rng_arrays(2, (2,), (3,), (2, 2))

    def f(m):
        def loss(params, data, scale=1.0):
            return ((params["w"] * data[0]).sum() * params["b"][1].sum() + data[1].sum()) * scale
        return loss

    ours, theirs = (tr.grad(f(lib))(conv({"w": a, "b": [c, b]}), conv((a, b)), scale=2.0)
                    for lib, conv, tr in ((rt, to_rt, rf), (torch, to_th, tf)))
    assert_same(ours, theirs)


def test_grad_and_value_has_aux():
    (x,) = rng_arrays(3, (5,))

    def f(m):
        def g(x):
            y = m.sin(x)
            return y.sum(), {"y": y, "pair": (x * 2, y.mean())}
        return g

    ours, theirs = both(f, x, transform="grad_and_value", has_aux=True)
    assert_same(ours, theirs)
    ours, theirs = both(f, x, transform="grad", has_aux=True)
    assert_same(ours, theirs)
    assert not ours[1]["y"].requires_grad


def test_grad_of_unused_or_independent_input_is_zeros():
    x, y = rng_arrays(4, (3,), (2,))
    ours, theirs = both(lambda m: lambda x, y: (x * 3).sum(), x, y, transform="grad",
                        argnums=(0, 1))
    assert_same(ours, theirs)
    ours, theirs = both(lambda m: lambda x: m.ones(()) * 2, x, transform="grad")
    assert_same(ours, theirs)

    def under_no_grad(m):
        def f(x):
            with m.no_grad():
                c = x ** 2
            return (x - c).sum()
        return f

    ours, theirs = both(under_no_grad, x, transform="grad")
    assert_same(ours, theirs)


def test_grad_inside_no_grad_still_differentiates():
    (x,) = rng_arrays(5, (3,))
    with rt.no_grad():
        ours = rf.grad(lambda x: (x ** 3).sum())(rt.tensor(x, requires_grad=True))
    with torch.no_grad():
        theirs = tf.grad(lambda x: (x ** 3).sum())(torch.tensor(x, requires_grad=True))
    assert_same(ours, theirs)
    assert ours.grad_fn is None and theirs.grad_fn is None


@pytest.mark.parametrize("order", [2, 3])
@pytest.mark.parametrize("x0", [0.7, -1.3])
def test_nested_grad_is_higher_derivative(x0, order):
    fo = ft = lambda v: v.sin() * v ** 3  # noqa: E731
    for _ in range(order):
        fo, ft = rf.grad(fo), tf.grad(ft)
    assert_same(fo(rt.tensor(x0, dtype=rt.float64)), ft(torch.tensor(x0, dtype=torch.float64)))


def test_grad_composes_with_outer_autograd():
    """An input that requires grad: the gradient stays differentiable by the user's own
    backward (as PyTorch's level-0 autograd sees through grad)."""
    (x,) = rng_arrays(6, (4,))
    xo, xt = rt.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    go = rf.grad(lambda v: (v.sin() * v).sum())(xo)
    gt = tf.grad(lambda v: (v.sin() * v).sum())(xt)
    assert go.requires_grad and gt.requires_grad
    go.pow(2).sum().backward()
    gt.pow(2).sum().backward()
    assert_same(xo.grad, xt.grad)


def test_grad_of_closure_parameter_keeps_its_graph():
    (x,) = rng_arrays(7, (3,))
    wo, wt = rt.tensor(1.5, dtype=rt.float64, requires_grad=True), \
        torch.tensor(1.5, dtype=torch.float64, requires_grad=True)
    go = rf.grad(lambda v: (v * wo).tanh().sum())(rt.tensor(x))
    gt = tf.grad(lambda v: (v * wt).tanh().sum())(torch.tensor(x))
    assert_same(go, gt)
    go.sum().backward()
    gt.sum().backward()
    assert_same(wo.grad, wt.grad)


def test_grad_of_grad_wrt_other_argument():
    """Mixed second derivative d/dy (d/dx f)."""
    x, y = rng_arrays(8, (), ())

    def f(x, y):
        return (x * y).sin() * y

    ours = rf.grad(lambda y, x: rf.grad(f)(x, y), argnums=0)(rt.tensor(y), rt.tensor(x))
    theirs = tf.grad(lambda y, x: tf.grad(f)(x, y), argnums=0)(torch.tensor(y), torch.tensor(x))
    assert_same(ours, theirs)


def test_grad_against_gradcheck_float64():
    (x,) = rng_arrays(9, (3,))
    g = rf.grad(lambda v: (v.sin() * v.cos()).sum() * v.exp().sum())
    assert rt.autograd.gradcheck(lambda v: g(v), (rt.tensor(x, requires_grad=True),))


# --- vjp -----------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_vjp_matches_torch(dtype):
    x, y, v1, v2 = rng_arrays(10, (2, 3), (3,), (2, 3), (3,), dtype=dtype)

    def f(m):
        return lambda x, y: {"a": m.sin(x) * y, "b": (x * x).sum(0) + y}

    outs = []
    for lib, conv, tr in ((rt, to_rt, rf), (torch, to_th, tf)):
        out, fn = tr.vjp(f(lib), *conv((x, y)))
        outs.append((out, fn(conv({"a": v1, "b": v2}))))
    assert_same(*outs, rtol=RTOL[dtype])


def test_vjp_has_aux_and_create_graph():
    (x,) = rng_arrays(11, (4,))
    res = []
    for conv, tr in ((to_rt, rf), (to_th, tf)):
        xi = conv(x)
        out, fn, aux = tr.vjp(lambda v: (v.exp(), v.sum()), xi, has_aux=True)
        (g,) = fn(conv(np.ones(4)))
        res.append((out, g, aux))
    assert_same(*res)
    # vjp of vjp: d/dx <exp(x), v> = v * exp(x); its vjp again gives v * exp(x) * w
    for conv, tr in ((to_rt, rf), (to_th, tf)):
        def inner(v, tr=tr, conv=conv):
            _, fn = tr.vjp(lambda z: z.exp(), v)
            return fn(conv(np.full(4, 2.0)))[0]
        out, fn = tr.vjp(inner, conv(x))
        res.append(fn(conv(np.full(4, 3.0)))[0])
    assert_same(res[2], res[3])


def test_vjp_errors_match_torch():
    xo, xt = rt.tensor([1.0, 2.0, 3.0]), torch.tensor([1.0, 2.0, 3.0])
    cases = [
        lambda tr, x: tr.vjp(lambda v: v.long(), x),
        lambda tr, x: tr.vjp(lambda v: (v, 1.0), x),
        lambda tr, x: tr.vjp(lambda v: (), x),
        lambda tr, x: tr.vjp(lambda v: v, x)[1]((x,)),
        lambda tr, x: tr.vjp(lambda v: v, x, has_aux=True),
        lambda tr, x: tr.vjp(lambda v: v.sum(), 1.0),
    ]
    for case in cases:
        with pytest.raises(Exception) as theirs:
            case(tf, xt)
        with pytest.raises(type(theirs.value)) as ours:
            case(rf, xo)
        same_message(ours.value, theirs.value)


# --- errors ----------------------------------------------------------------------------------
GRAD_ERRORS = [
    dict(f=lambda v: (v.sum(), 1.0), has_aux=True),
    dict(f=lambda v: v.sum(), has_aux=True),
    dict(f=lambda v: (v.sum(),), has_aux=True),
    dict(f=lambda v: v),
    dict(f=lambda v: 1.0),
    dict(f=lambda v: v.sum(), argnums=1),
    dict(f=lambda v: v.sum(), argnums=(0, 0)),
    dict(f=lambda v: v.sum(), argnums=()),
    dict(f=lambda v: v.sum(), argnums=[0]),
    dict(f=lambda v: v.sum(), argnums=0.0),
    dict(f=lambda v: v.sum(), argnums=(0.0,)),
    dict(f=lambda v: v.sum(), arg=1.0),
    dict(f=lambda v: v.sum(), arg="int"),
]


@pytest.mark.parametrize("case", GRAD_ERRORS)
def test_grad_errors_match_torch(case):
    case = dict(case)
    f, arg = case.pop("f"), case.pop("arg", None)

    def call(tr, lib):
        x = lib.tensor([1.0, 2.0]) if arg is None else \
            lib.tensor([1, 2]) if arg == "int" else arg
        return tr.grad(f, **case)(x)

    with pytest.raises(Exception) as theirs:
        call(tf, torch)
    with pytest.raises(type(theirs.value)) as ours:
        call(rf, rt)
    same_message(ours.value, theirs.value)
