"""runtime.func.vmap (and rt.vmap) against torch.vmap: in_dims/out_dims as ints, None and
pytrees, negative dims, kwargs, nesting, vmap of grad (per-sample gradients with
functional_call), grad of vmap, randomness, and PyTorch's errors; functional_call and
stack_module_state (model ensembling)."""

import numpy as np
import pytest

import runtime as rt
from runtime import func as rf

torch = pytest.importorskip("torch")
tf = torch.func

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
    elif isinstance(theirs, torch.Tensor):
        assert isinstance(ours, rt.Tensor)
        assert tuple(ours.shape) == tuple(theirs.shape)
        assert str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
        np.testing.assert_allclose(ours.detach().numpy(), theirs.detach().numpy(), rtol=rtol,
                                   atol=rtol)
    else:
        assert ours == theirs


def same_error(call):
    with pytest.raises(Exception) as theirs:
        call(torch, tf)
    with pytest.raises(type(theirs.value)) as ours:
        call(rt, rf)
    assert str(ours.value).replace("runtime.", "torch.") == str(theirs.value)


def arrays(seed, *shapes, dtype="float64"):
    r = np.random.default_rng(seed)
    return [r.standard_normal(s).astype(dtype) for s in shapes]


def vmapped(make_f, *args, **kw):
    """``vmap(make_f(lib), **kw)(*args)`` in both libraries."""
    return [lib.vmap(make_f(lib), **kw)(*conv(lib, args)) for lib, _ in LIBS]


def test_exported_as_torch_does():
    assert rt.vmap is rf.vmap


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("in_dims,shapes", [
    (0, [(4, 3), (4, 3)]),
    (1, [(3, 4), (2, 4)]),
    ((0, None), [(4, 3), (3,)]),
    ((None, -1), [(3, 2), (2, 3, 4)]),
    ((-2, 0), [(2, 4, 3), (4, 3)]),
])
def test_vmap_in_dims(in_dims, shapes, dtype):
    x, y = arrays(0, *shapes, dtype=dtype)
    ours, theirs = vmapped(lambda lib: lambda a, b: lib.tanh(a) * b.sum() + a.sum(0),
                           x, y, in_dims=in_dims)
    assert_same(ours, theirs, 1e-10 if dtype == "float64" else 1e-5)


@pytest.mark.parametrize("out_dims", [0, 1, -1, (1, 0), (0, None), ((0, 1),)])
def test_vmap_out_dims_and_pytree_outputs(out_dims):
    x, c = arrays(1, (5, 2, 3), (2,))
    if isinstance(out_dims, tuple) and isinstance(out_dims[0], tuple):  # a nested pytree
        def make(lib):
            return lambda a: ((a * 2, a.sum(0)),)
    elif out_dims in ((0, None),):  # an unbatched output, kept whole
        def make(lib):
            return lambda a: (a.exp(), lib.tensor(c))
    else:  # (PyTorch's expand of an unbatched output to out_dims=1 fails: not tested)
        def make(lib):
            return lambda a: (a.exp(), a.sum(0) * lib.tensor(c)[0])
    ours, theirs = vmapped(make, x, out_dims=out_dims)
    assert_same(ours, theirs)


def test_vmap_nested_in_dims_dicts_and_kwargs():
    w, b, x = arrays(2, (3, 2), (4, 2), (4, 3))

    def make(lib):
        def f(params, inp, *, shift):
            return inp @ params["w"] + params["b"] + shift
        return f

    shift = np.array(0.5)
    ours, theirs = (lib.vmap(make(lib), in_dims=({"w": None, "b": 0}, 0))(
        conv(lib, {"w": w, "b": b}), lib.tensor(x), shift=lib.tensor(shift)) for lib, _ in LIBS)
    assert_same(ours, theirs)
    # a kwarg is not mapped: a batched-looking tensor passed by keyword stays whole
    ours, theirs = (lib.vmap(lambda a, scale: a * scale.sum())(lib.tensor(x), scale=lib.tensor(x))
                    for lib, _ in LIBS)
    assert_same(ours, theirs)


def test_nested_vmap_is_an_outer_product():
    x, y = arrays(3, (3, 2), (4, 2))
    ours, theirs = ((lib.vmap(lib.vmap(lambda a, b: (a * b).sum(), in_dims=(None, 0)),
                              in_dims=(0, None))(lib.tensor(x), lib.tensor(y))) for lib, _ in LIBS)
    assert_same(ours, theirs)
    assert tuple(ours.shape) == (3, 4)


def test_vmap_of_grad_and_grad_of_vmap():
    x, y = arrays(4, (5, 3), (3,))
    ours, theirs = ((lib.vmap(tr.grad(lambda a, b: (a.sin() * b).sum()), in_dims=(0, None))(
        lib.tensor(x), lib.tensor(y))) for lib, tr in LIBS)
    assert_same(ours, theirs)
    ours, theirs = ((tr.grad(lambda b: lib.vmap(lambda a: (a * b).exp().sum())(lib.tensor(x))
                             .pow(2).sum())(lib.tensor(y))) for lib, tr in LIBS)
    assert_same(ours, theirs)
    ours, theirs = ((lib.vmap(tr.jacrev(lambda a: a.sin() * a.sum()))(lib.tensor(x)))
                    for lib, tr in LIBS)
    assert_same(ours, theirs)
    ours, theirs = ((lib.vmap(tr.hessian(lambda a: (a.sin() * a).sum()))(lib.tensor(x)))
                    for lib, tr in LIBS)
    assert_same(ours, theirs)


def _model(nn, seed):
    torch.manual_seed(seed)
    ref = torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.Tanh(), torch.nn.Linear(5, 3))
    if nn is torch.nn:
        return ref.double()
    ours = rt.nn.Sequential(rt.nn.Linear(4, 5), rt.nn.Tanh(), rt.nn.Linear(5, 3))
    for p, q in zip(ours.parameters(), ref.double().parameters()):
        p.data = rt.tensor(q.detach().numpy())
    return ours


def test_per_sample_gradients_match_a_loop_and_torch():
    """The classic: vmap(grad(loss), in_dims=(None, 0, 0))(params, x, y) with
    functional_call, against per-example backward passes and torch.func."""
    x, = arrays(5, (6, 4))
    y = np.random.default_rng(5).integers(0, 3, 6)
    results = []
    for lib, tr in LIBS:
        model = _model(lib.nn, 0)
        params = {k: v.detach() for k, v in model.named_parameters()}

        def loss(p, xi, yi, model=model, lib=lib, tr=tr):
            out = tr.functional_call(model, p, (xi.unsqueeze(0),))
            return lib.nn.functional.cross_entropy(out, yi.unsqueeze(0))

        per_sample = lib.vmap(tr.grad(loss), in_dims=(None, 0, 0))(params, lib.tensor(x),
                                                                  lib.tensor(y))
        results.append(per_sample)
    assert_same(*results)
    model = _model(rt.nn, 0)
    for i in range(6):
        model.zero_grad()
        out = model(rt.tensor(x[i:i + 1]))
        rt.nn.functional.cross_entropy(out, rt.tensor(y[i:i + 1])).backward()
        for name, p in model.named_parameters():
            np.testing.assert_allclose(results[0][name][i].numpy(), p.grad.numpy(), rtol=1e-10)


def test_model_ensembling_with_stack_module_state():
    (x,) = arrays(6, (2, 4))
    results = []
    for lib, tr in LIBS:
        models = [_model(lib.nn, s) for s in range(3)]
        params, buffers = tr.stack_module_state(models)
        assert all(p.is_leaf and p.requires_grad for p in params.values())
        base = models[0]

        def call(p, b, xb, base=base, tr=tr):
            return tr.functional_call(base, (p, b), (xb,))

        results.append((lib.vmap(call, in_dims=(0, 0, None))(params, buffers, lib.tensor(x)),
                        {k: v.shape for k, v in params.items()}))
    assert_same(results[0][0], results[1][0])
    assert {k: tuple(s) for k, s in results[0][1].items()} == \
        {k: tuple(s) for k, s in results[1][1].items()}


def test_functional_call_dicts_and_errors():
    (x,) = arrays(7, (2, 4))
    results = []
    for lib, tr in LIBS:
        model = _model(lib.nn, 1)
        params = {k: v.detach() * 2 for k, v in model.named_parameters()}
        first = {k: v for k, v in params.items() if k.startswith("0.")}
        rest = {k: v for k, v in params.items() if not k.startswith("0.")}
        results.append((tr.functional_call(model, params, lib.tensor(x)),
                        tr.functional_call(model, (first, rest), (lib.tensor(x),)),
                        tr.functional_call(model, [first], args=(), kwargs={"input": lib.tensor(x)})))
    assert_same(results[0], results[1])

    def bad(dicts):
        return lambda lib, tr: tr.functional_call(_model(lib.nn, 1), dicts, (lib.ones(1, 4),))

    same_error(bad(({"0.weight": 1}, {"0.weight": 2})))
    same_error(bad(({"0.weight": 1}, 3)))
    same_error(bad(3))
    same_error(lambda lib, tr: tr.stack_module_state([]))
    same_error(lambda lib, tr: tr.stack_module_state([lib.nn.Linear(2, 2), lib.nn.Tanh()]))
    same_error(lambda lib, tr: tr.stack_module_state([lib.nn.Linear(2, 2),
                                                      lib.nn.Linear(2, 2).eval()]))

    def mixed_requires_grad(lib, tr):
        a, b = lib.nn.Linear(2, 2), lib.nn.Linear(2, 2)
        b.bias.requires_grad_(False)
        return tr.stack_module_state([a, b])

    same_error(mixed_requires_grad)


# --- randomness ------------------------------------------------------------------------------
@pytest.mark.parametrize("draw", [
    lambda lib, a: a + lib.randn(3),
    lambda lib, a: lib.nn.functional.dropout(a, 0.5),
    lambda lib, a: a * lib.rand(()),
    lambda lib, a: lib.randn_like(a),
])
def test_randomness_error_raises(draw):
    same_error(lambda lib, tr: lib.vmap(lambda a: draw(lib, a))(lib.ones(4, 3)))


def test_randomness_same_and_different():
    rt.manual_seed(0)
    same = rt.vmap(lambda a: a + rt.randn(3), randomness="same")(rt.zeros(4, 3)).numpy()
    assert np.all(same == same[0]) and np.unique(same[0]).size == 3
    masks = rt.vmap(lambda a: rt.nn.functional.dropout(a, 0.5), randomness="same")(
        rt.ones(5, 50)).numpy()
    assert np.all(masks == masks[0]) and 0 < (masks[0] == 0).sum() < 50
    different = rt.vmap(lambda a: a + rt.randn(3), randomness="different")(rt.zeros(4, 3))
    assert np.unique(different.numpy()).size == 12
    # nested: the inner "same" repeats draws across its batch, the outer "different" does not
    nested = rt.vmap(rt.vmap(lambda a: a + rt.rand(()), randomness="same"),
                     randomness="different")(rt.zeros(3, 4)).numpy()
    assert np.all(nested == nested[:, :1]) and np.unique(nested[:, 0]).size == 3
    # the generator draws as usual again after the vmap
    assert rt.randn(2).shape == (2,)


def test_randomness_error_outside_random_free_code_and_bad_value():
    assert tuple(rt.vmap(lambda a: a * 2)(rt.ones(2, 2)).shape) == (2, 2)
    same_error(lambda lib, tr: lib.vmap(lambda a: a, randomness="sometimes"))
    same_error(lambda lib, tr: lib.vmap(lambda a: a, chunk_size=0))


# --- errors ----------------------------------------------------------------------------------
def named(a, b=None):
    return a


VMAP_ERRORS = [
    lambda lib: lib.vmap(lambda a, b: a, in_dims=(0, 0, 0))(lib.ones(3), lib.ones(3)),
    lambda lib: lib.vmap(named, in_dims=[0])(lib.ones(3)),
    lambda lib: lib.vmap(named, in_dims=0.5)(lib.ones(3)),
    lambda lib: lib.vmap(named, in_dims=(0.5,))(lib.ones(3)),
    lambda lib: lib.vmap(named, in_dims=2)(lib.ones(3)),
    lambda lib: lib.vmap(named, in_dims=-3)(lib.ones(3, 2)),
    lambda lib: lib.vmap(named)(lib.ones(3), lib.ones(4)),
    lambda lib: lib.vmap(named, in_dims=(None,))(lib.ones(3)),
    lambda lib: lib.vmap(named)(),
    lambda lib: lib.vmap(named)(1.0),
    lambda lib: lib.vmap(lambda a: 1.0)(lib.ones(3)),
    lambda lib: lib.vmap(lambda a: (a, a), out_dims=(0, 0, 0))(lib.ones(3)),
    lambda lib: lib.vmap(named, out_dims=(0, 0))(lib.ones(3)),
    lambda lib: lib.vmap(named, out_dims="a")(lib.ones(3)),
    lambda lib: lib.vmap(named, out_dims=None)(lib.arange(3.0)),
    lambda lib: lib.vmap(named, out_dims=1)(lib.ones(3)),
    lambda lib: lib.vmap(lambda a: a.sum(), out_dims=1)(lib.ones(3, 2)),
    lambda lib: lib.vmap(named, in_dims=({"x": 0},))({"y": lib.ones(3)}),
]


@pytest.mark.parametrize("call", VMAP_ERRORS)
def test_vmap_errors_match_torch(call):
    same_error(lambda lib, tr: call(lib))


def test_unbatched_output_with_out_dims_none():
    c = np.arange(3.0)
    ours, theirs = vmapped(lambda lib: lambda a: (a * 2, lib.tensor(c)), np.ones((4, 2)),
                           out_dims=(0, None))
    assert_same(ours, theirs)


def test_functional_call_strict_and_tied_weights():
    def tied(lib):
        class Tied(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.a = lib.nn.Linear(2, 2)
                self.b = lib.nn.Linear(2, 2)
                self.b.weight = self.a.weight

            def forward(self, x):
                return self.b(self.a(x))
        return Tied()

    results = []
    for lib, tr in LIBS:
        m = tied(lib)
        given = {"a.weight": lib.eye(2) * 2, "a.bias": lib.zeros(2), "b.bias": lib.ones(2)}
        results.append((tr.functional_call(m, given, (lib.ones(1, 2),)),
                        tr.functional_call(m, given, (lib.ones(1, 2),), tie_weights=False)
                        .shape))
    assert_same(results[0][0], results[1][0])
    assert tuple(results[0][1]) == tuple(results[1][1])
    same_error(lambda lib, tr: tr.functional_call(lib.nn.Linear(2, 2), {"weight": lib.ones(2, 2)},
                                                  (lib.ones(1, 2),), strict=True))
    same_error(lambda lib, tr: tr.functional_call(
        tied(lib), {"a.weight": lib.eye(2), "b.weight": lib.ones(2, 2)}, (lib.ones(1, 2),)))


def test_in_place_on_unbatched_argument_raises():
    z = rt.zeros(2)
    with pytest.raises(RuntimeError, match="modified an unbatched argument"):
        rt.vmap(lambda a, z: z.add_(1) + a, in_dims=(0, None))(rt.ones(3, 2), z)
    # in place on the batched argument's slices is each element's own: as PyTorch's
    ours, theirs = ((lib.vmap(lambda a: a.mul_(2).sum())(x), x)
                    for lib, x in ((rt, rt.ones(3, 2)), (torch, torch.ones(3, 2))))
    assert_same(ours, theirs)
