"""runtime.func's jvp, linearize, jacrev, jacfwd and hessian against torch.func on the same
inputs (float64 and float32, pytrees, argnums, has_aux), and PyTorch's errors."""

import numpy as np
import pytest

import runtime as rt
from runtime import func as rf

torch = pytest.importorskip("torch")
tf = torch.func

RTOL = {"float64": 1e-10, "float32": 2e-5}
LIBS = ((rt, rf), (torch, tf))


def conv(lib, tree):
    if isinstance(tree, dict):
        return {k: conv(lib, v) for k, v in tree.items()}
    if isinstance(tree, list | tuple):
        return type(tree)(conv(lib, v) for v in tree)
    return lib.tensor(tree) if isinstance(tree, np.ndarray) else tree


def assert_same(ours, theirs, rtol=1e-10):
    if isinstance(theirs, dict):
        assert isinstance(ours, dict) and list(ours) == list(theirs)
        for k in theirs:
            assert_same(ours[k], theirs[k], rtol)
    elif isinstance(theirs, list | tuple):
        assert type(ours) is type(theirs) and len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            assert_same(a, b, rtol)
    else:
        assert isinstance(ours, rt.Tensor) and isinstance(theirs, torch.Tensor)
        assert tuple(ours.shape) == tuple(theirs.shape)
        assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
        np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=rtol,
                                   atol=rtol)


def same_error(call):
    """``call(lib, func_module)`` raises the same exception type and text in both."""
    with pytest.raises(Exception) as theirs:
        call(torch, tf)
    with pytest.raises(type(theirs.value)) as ours:
        call(rt, rf)
    assert str(ours.value).replace("runtime.", "torch.") == str(theirs.value)


def arrays(seed, *shapes, dtype="float64"):
    r = np.random.default_rng(seed)
    return [r.standard_normal(s).astype(dtype) for s in shapes]


def run(transform, make_f, *args, **kw):
    """The transform applied to the same function in both libraries, called on ``args``."""
    return [getattr(tr, transform)(make_f(lib), **kw)(*conv(lib, args)) for lib, tr in LIBS]


def mixed(lib):
    """R^(2x3) x R^3 -> a pytree of outputs, nonlinear in both arguments."""
    def f(x, y):
        return {"p": lib.tanh(x) * y, "q": ((x ** 2).sum(0) * y.sin(), (x * y).sum())}
    return f


# --- jvp / linearize ------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_jvp_matches_torch(dtype):
    x, y, tx, ty = arrays(0, (2, 3), (3,), (2, 3), (3,), dtype=dtype)
    ours, theirs = (tr.jvp(mixed(lib), conv(lib, (x, y)), conv(lib, (tx, ty))) for lib, tr in LIBS)
    assert_same(ours, theirs, RTOL[dtype])


def test_jvp_pytree_primals_has_aux_and_independent_output():
    a, b, ta, tb = arrays(1, (3,), (2,), (3,), (2,))

    def make(lib):
        def f(d):
            return (d["a"].exp().sum() * d["b"], lib.ones(2)), d["a"] * 2
        return f

    ours, theirs = ((tr.jvp(make(lib), (conv(lib, {"a": a, "b": b}),),
                            (conv(lib, {"a": ta, "b": tb}),), has_aux=True)) for lib, tr in LIBS)
    assert_same(ours, theirs)
    assert not ours[2].requires_grad


def test_jvp_nested_in_grad():
    """grad of a jvp (forward-over-reverse's mirror): d/dx <J(x) t> summed."""
    x, t = arrays(2, (4,), (4,))

    def outer(lib, tr):
        return tr.grad(lambda v: tr.jvp(lambda z: (z.sin() * z).exp(), (v,),
                                        (lib.tensor(t),))[1].sum())

    ours, theirs = (outer(lib, tr)(lib.tensor(x)) for lib, tr in LIBS)
    assert_same(ours, theirs)


def test_linearize_matches_jvp():
    x, y, t1, t2, s1, s2 = arrays(3, (2, 3), (3,), (2, 3), (3,), (2, 3), (3,))
    results = []
    for lib, tr in LIBS:
        out, jvp_fn = tr.linearize(mixed(lib), *conv(lib, (x, y)))
        results.append((out, jvp_fn(*conv(lib, (t1, t2))), jvp_fn(*conv(lib, (s1, s2)))))
    assert_same(*results)


# --- jacrev / jacfwd / hessian ----------------------------------------------------------------
@pytest.mark.parametrize("transform", ["jacrev", "jacfwd"])
@pytest.mark.parametrize("argnums", [0, 1, (0, 1), (1,), -1])
def test_jacobian_pytree_output_argnums(transform, argnums):
    x, y = arrays(4, (2, 3), (3,))
    ours = getattr(rf, transform)(mixed(rt), argnums=argnums)(*conv(rt, (x, y)))
    # PyTorch's jacfwd differentiates by nothing with a negative argnums (its
    # _replace_args compares the position with -1 as given): jacrev's answer is the right one
    reference = "jacrev" if argnums == -1 else transform
    theirs = getattr(tf, reference)(mixed(torch), argnums=argnums)(*conv(torch, (x, y)))
    assert_same(ours, theirs)


@pytest.mark.parametrize("transform", ["jacrev", "jacfwd"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("shapes", [[(), ()], [(4,), (4,)], [(2, 2), (3,)]])
def test_jacobian_shapes_dtypes(transform, dtype, shapes):
    x, y = arrays(5, *shapes, dtype=dtype)
    ours, theirs = run(transform, lambda lib: lambda x, y: (x.sin() * y.sum()).exp(), x, y)
    assert_same(ours, theirs, RTOL[dtype])


@pytest.mark.parametrize("transform", ["jacrev", "jacfwd"])
def test_jacobian_has_aux_and_pytree_input(transform):
    a, b = arrays(6, (3,), (2,))

    def make(lib):
        def f(d):
            out = d["a"] * d["b"].sum()
            return out, {"aux": out.sum()}
        return f

    ours, theirs = run(transform, make, {"a": a, "b": b}, has_aux=True)
    assert_same(ours, theirs)


def test_jacrev_chunk_size_and_independent_output():
    x, y = arrays(7, (3,), (2,))
    for chunk in (1, 2, None):
        ours, theirs = run("jacrev", lambda lib: lambda x, y: (x * 2, y.sum() * x),
                           x, y, argnums=(0, 1), chunk_size=chunk)
        assert_same(ours, theirs)
    ours, theirs = run("jacrev", lambda lib: lambda x: lib.ones(2) * 3.0, x)
    assert_same(ours, theirs)


@pytest.mark.parametrize("argnums", [0, 1, (0, 1)])
def test_hessian_matches_torch(argnums):
    x, y = arrays(8, (3,), (2,))
    ours, theirs = run("hessian", lambda lib: lambda x, y: (x.sin() * x).sum() * y.exp().sum()
                       + (x[:2] * y).pow(2).sum(), x, y, argnums=argnums)
    assert_same(ours, theirs)


def test_hessian_of_an_mlp_loss_pytree():
    w, b, xs = arrays(9, (3, 2), (2,), (4, 3))

    def make(lib):
        def loss(p):
            return lib.tanh(xs_ @ p["w"] + p["b"]).pow(2).mean()
        xs_ = lib.tensor(xs)
        return loss

    ours, theirs = run("hessian", make, {"w": w, "b": b})
    assert_same(ours, theirs)


def test_jacobians_of_jacobians():
    (x,) = arrays(10, (3,))
    f = lambda x: x.sin() * x.sum()  # noqa: E731
    for outer in ("jacrev", "jacfwd"):
        for inner in ("jacrev", "jacfwd"):
            ours = getattr(rf, outer)(getattr(rf, inner)(f))(rt.tensor(x))
            theirs = getattr(tf, outer)(getattr(tf, inner)(f))(torch.tensor(x))
            assert_same(ours, theirs)


def test_jacfwd_randomness_error():
    same_error(lambda lib, tr: tr.jacfwd(lambda v: v * lib.rand(()))(lib.ones(2)))
    same_error(lambda lib, tr: tr.jacfwd(lambda v: v, randomness="sometimes")(lib.ones(2)))
    jac = rf.jacfwd(lambda v: v * rt.rand(()), randomness="same")(rt.ones(3))
    assert np.allclose(jac.numpy(), np.eye(3) * jac.numpy()[0, 0])


# --- errors ----------------------------------------------------------------------------------
JVP_ERRORS = [
    lambda lib, tr: tr.jvp(lambda v: v, lib.ones(3), lib.ones(3)),
    lambda lib, tr: tr.jvp(lambda v: v, (lib.ones(3),), (lib.ones(3), lib.ones(3))),
    lambda lib, tr: tr.jvp(lambda v: v, (lib.ones(3),), (lib.ones(4),)),
    lambda lib, tr: tr.jvp(lambda v: 1.0, (lib.ones(3),), (lib.ones(3),)),
    lambda lib, tr: tr.jvp(lambda v: lib.ones(2), (lib.ones(3),), (lib.ones(3),), strict=True),
    lambda lib, tr: tr.jvp(lambda v: v, (), ()),
    lambda lib, tr: tr.jvp(lambda v: v, (1.0,), (1.0,)),
    lambda lib, tr: tr.jvp(lambda v: v, (lib.ones(3),), (lib.ones(3),), has_aux=True),
    lambda lib, tr: tr.jacrev(lambda v: v, chunk_size=0),
    lambda lib, tr: tr.jacrev(lambda v: v.long())(lib.ones(3)),
    lambda lib, tr: tr.jacrev(lambda v: v, argnums=2)(lib.ones(3)),
    lambda lib, tr: tr.linearize(lambda v: v, lib.ones(3))[1](lib.ones(2)),
    lambda lib, tr: tr.linearize(lambda v: v, lib.ones(3))[1](lib.ones(3), lib.ones(3)),
]


@pytest.mark.parametrize("call", JVP_ERRORS)
def test_errors_match_torch(call):
    same_error(call)


# forward mode here is reverse mode twice: each op's backward must itself be differentiable,
# with respect to the incoming gradient (jvp) and again to the input (hessian)
OPS = {
    "sin": lambda m, x: x.sin(), "exp": lambda m, x: x.exp(), "tanh": lambda m, x: x.tanh(),
    "sigmoid": lambda m, x: x.sigmoid(), "relu": lambda m, x: m.relu(x),
    "abs": lambda m, x: x.abs(), "log": lambda m, x: (x.abs() + 1).log(),
    "sqrt": lambda m, x: (x * x + 1).sqrt(), "pow": lambda m, x: x.pow(3),
    "div": lambda m, x: x / (x * x + 1), "softmax": lambda m, x: m.softmax(x, 0),
    "log_softmax": lambda m, x: m.log_softmax(x, 0),
    "matmul": lambda m, x: (x.reshape(2, 3) @ x.reshape(3, 2)).reshape(-1),
    "max": lambda m, x: x.max().reshape(1) * x, "var": lambda m, x: x.var() * x,
    "norm": lambda m, x: x.norm() * x, "cumsum": lambda m, x: x.cumsum(0) * x,
    "prod": lambda m, x: x.prod() * x, "gelu": lambda m, x: m.nn.functional.gelu(x),
    "silu": lambda m, x: m.nn.functional.silu(x),
    "softplus": lambda m, x: m.nn.functional.softplus(x),
    "layer_norm": lambda m, x: m.nn.functional.layer_norm(x, (6,)),
    "logsumexp": lambda m, x: x.logsumexp(0) * x, "clamp": lambda m, x: x.clamp(-0.5, 0.5) * x,
    "where": lambda m, x: m.where(x > 0, x * x, x.sin()),
    "index": lambda m, x: x[[0, 2, 2]] * x[1:4], "cat": lambda m, x: m.cat([x, x * 2]) * m.cat([x, x]),
    "erf": lambda m, x: x.erf(), "atan": lambda m, x: x.atan(),
    "cross_entropy": lambda m, x: m.nn.functional.cross_entropy(
        x.reshape(2, 3), m.tensor([0, 2])).reshape(1) * x,
    "expand": lambda m, x: x[:1].expand(6) * x, "minimum": lambda m, x: m.minimum(x, x * x),
    "conv1d": lambda m, x: m.nn.functional.conv1d(x.reshape(1, 1, 6),
                                                  x[:3].reshape(1, 1, 3)).reshape(-1),
    "max_pool": lambda m, x: m.nn.functional.max_pool1d((x * x).reshape(1, 1, 6), 2).reshape(-1),
}


@pytest.mark.parametrize("name", sorted(OPS))
def test_forward_mode_and_hessian_through_each_op(name):
    (x,) = arrays(11, (6,))
    op = OPS[name]
    ours, theirs = run("jacfwd", lambda lib: lambda v: op(lib, v), x)
    assert_same(ours, theirs)
    ours, theirs = run("hessian", lambda lib: lambda v: op(lib, v).sum(), x)
    assert_same(ours, theirs)
