"""planner.aot: a compiled function that returns tensors requiring grad (``cm =
planner.compile(model); loss = f(cm(x)); loss.backward()`` outside) runs a compiled forward
plan and, through one CompiledFunctionBackward node, a compiled backward plan: values and every
.grad equal eager mode's, and no call falls back to eager."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt
import runtime.nn as nn
import runtime.nn.functional as F
from planner.aot import ERR_DOUBLE_BACKWARD, NODE_NAME
from tests.fakecuda import fake_cuda_fixture  # noqa: F401


@pytest.fixture(autouse=True)
def _no_fallback() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an eager fallback warns: an error here
        yield


def _grads(module: Any, *tensors: Any) -> list[np.ndarray | None]:
    found = [p.grad for p in module.parameters()] + [t.grad for t in tensors]
    return [None if g is None else g.numpy().copy() for g in found]


def _clear(module: Any, *tensors: Any) -> None:
    module.zero_grad(set_to_none=True)
    for t in tensors:
        t.grad = None


def _assert_close(got: list[Any], want: list[Any], rtol: float, atol: float) -> None:
    assert len(got) == len(want)
    for i, (a, b) in enumerate(zip(got, want)):
        assert (a is None) == (b is None), i
        if a is not None:
            np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, err_msg=f"entry {i}")


def _twins(make: Callable[[], Any], seed: int = 0) -> tuple[Any, Any]:
    rt.manual_seed(seed)
    eager = make()
    rt.manual_seed(seed)
    return eager, make()


def _check_module(make: Callable[[], Any], inputs: list[Any], calls: int = 3,
                  loss: Callable[[Any], Any] = lambda out: (out * out).sum(),
                  rtol: float = 1e-4, atol: float = 1e-5, backend: str = "auto") -> Any:
    """The compiled module against its eager twin over ``calls`` forward + backward calls
    (the same seed before each: dropout draws the same mask): outputs, the grads of the
    parameters and of the inputs that require grad, and the state (running statistics)."""
    eager, twin = _twins(make)
    compiled = planner.compile(twin, backend=backend)
    grad_inputs = [t for t in inputs if t.requires_grad]
    for call in range(calls):
        _clear(eager, *grad_inputs)
        rt.manual_seed(100 + call)
        want = eager(*inputs)
        loss(want).backward()
        want_grads = _grads(eager, *grad_inputs)
        _clear(twin, *grad_inputs)
        rt.manual_seed(100 + call)
        got = compiled(*inputs)
        assert got.grad_fn is not None and got.grad_fn.name() == NODE_NAME
        loss(got).backward()
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=rtol,
                                   atol=atol)
        _assert_close(_grads(twin, *grad_inputs), want_grads, rtol, atol)
    for (name, a), b in zip(twin.state_dict().items(), eager.state_dict().values()):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=rtol, atol=atol, err_msg=name)
    assert compiled.captures == 1
    return compiled


def _mlp(dtype: Any = None) -> nn.Module:
    return nn.Sequential(nn.Linear(6, 16, dtype=dtype), nn.ReLU(), nn.Linear(16, 16, dtype=dtype),
                         nn.Tanh(), nn.Linear(16, 3, dtype=dtype))


@pytest.mark.parametrize("backend", ["auto", "interpreter"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_mlp_forward_and_backward_equal_eager(dtype, backend):
    dt = getattr(rt, dtype)
    tol = {"float32": (1e-4, 1e-5), "float64": (1e-10, 1e-12)}[dtype]
    x = rt.randn(8, 6, dtype=dt, requires_grad=True)
    compiled = _check_module(lambda: _mlp(dt), [x], rtol=tol[0], atol=tol[1], backend=backend)
    assert compiled.plan is not None
    assert bool(compiled.plan.kernels) == (backend == "auto")  # fused, or the interpreter
    assert compiled._cache and next(iter(compiled._cache.values())).bindings[0].aot.backward


def test_mlp_equals_pytorch():
    torch = pytest.importorskip("torch")
    rt.manual_seed(0)
    model = _mlp()
    theirs = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.ReLU(), torch.nn.Linear(16, 16),
                                 torch.nn.Tanh(), torch.nn.Linear(16, 3))
    with torch.no_grad():
        for p, q in zip(model.parameters(), theirs.parameters()):
            q.copy_(torch.from_numpy(p.detach().numpy()))
    x = np.random.default_rng(0).standard_normal((8, 6)).astype(np.float32)
    out = planner.compile(model)(rt.tensor(x))
    F.cross_entropy(out, rt.tensor(np.arange(8) % 3)).backward()
    want = theirs(torch.from_numpy(x))
    torch.nn.functional.cross_entropy(want, torch.arange(8) % 3).backward()
    np.testing.assert_allclose(out.detach().numpy(), want.detach().numpy(), rtol=1e-5, atol=1e-6)
    for p, q in zip(model.parameters(), theirs.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), rtol=1e-4, atol=1e-6)


def test_gradcheck_through_the_compiled_node():
    """float64 central differences against the compiled backward (each numeric probe replays
    the forward plan)."""
    rt.manual_seed(0)
    lin = nn.Linear(4, 3, dtype=rt.float64)

    def f(x, y):
        return (F.gelu(lin(x)) * y).tanh()

    compiled = planner.compile(f)
    x = rt.randn(5, 4, dtype=rt.float64, requires_grad=True)
    y = rt.randn(5, 3, dtype=rt.float64, requires_grad=True)
    assert rt.autograd.gradcheck(compiled, (x, y))
    assert compiled(x, y).grad_fn.name() == NODE_NAME


class _CNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.c1 = nn.Conv2d(1, 4, 3, padding=1)
        self.b1 = nn.BatchNorm2d(4)
        self.c2 = nn.Conv2d(4, 8, 3)
        self.drop = nn.Dropout(0.3)
        self.fc = nn.Linear(32, 10)

    def forward(self, x: Any) -> Any:
        x = F.max_pool2d(F.relu(self.b1(self.c1(x))), 2)
        x = F.max_pool2d(F.relu(self.c2(x)), 2)
        return self.fc(self.drop(x.flatten(1)))


def test_cnn_float64():
    x = rt.randn(3, 1, 12, 12, dtype=rt.float64, requires_grad=True)
    _check_module(lambda: _CNN().double(), [x], rtol=1e-10, atol=1e-12,
                  loss=lambda out: F.cross_entropy(out, rt.tensor([1, 2, 3])))


def test_cnn_batchnorm_running_stats_dropout_maxpool():
    x = rt.randn(3, 1, 12, 12, requires_grad=True)
    compiled = _check_module(_CNN, [x], loss=lambda out: F.cross_entropy(out, rt.tensor([1, 2, 3])))
    assert compiled.plan.writes  # the running statistics and the batch count
    # eval mode: another plan, reading the running statistics instead of writing them
    model = compiled.fn
    model.eval()
    x.grad = None
    out = compiled(x)
    assert compiled.captures == 2 and not compiled.plan.writes
    out.sum().backward()
    got = x.grad.numpy().copy()
    x.grad = None
    want = model(x)
    want.sum().backward()
    np.testing.assert_allclose(out.detach().numpy(), want.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got, x.grad.numpy(), rtol=1e-4, atol=1e-6)


class _Block(nn.Module):
    def __init__(self, d: int = 16, heads: int = 2) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.ln2 = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)

    def forward(self, x: Any) -> Any:
        y = self.ln1(x)
        x = x + self.attn(y, y, y, need_weights=False)[0]
        return x + self.fc2(F.gelu(self.fc1(self.ln2(x))))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_transformer_block(dtype):
    if dtype == "float32":
        _check_module(_Block, [rt.randn(2, 5, 16, requires_grad=True)])
    else:
        _check_module(lambda: _Block().double(),
                      [rt.randn(2, 5, 16, dtype=rt.float64, requires_grad=True)],
                      rtol=1e-10, atol=1e-12)


class _Elman(nn.Module):
    """An RNN unrolled in its forward (the rnn workload's model, smaller)."""

    def __init__(self) -> None:
        super().__init__()
        self.cell_in = nn.Linear(3, 8)
        self.cell_h = nn.Linear(8, 8)
        self.head = nn.Linear(8, 2)

    def forward(self, x: Any) -> Any:
        h = rt.zeros(x.shape[0], 8)
        for t in range(x.shape[1]):
            h = rt.tanh(self.cell_in(x[:, t]) + self.cell_h(h))
        return self.head(h)


def test_rnn_unrolled_in_the_compiled_forward():
    _check_module(_Elman, [rt.randn(4, 6, 3, requires_grad=True)])


def test_rnn_loop_of_compiled_cells():
    """A compiled cell called in a loop: from the second step its hidden state is the
    previous call's output (a non-leaf whose history reaches the same parameters)."""
    eager, twin = _twins(lambda: nn.RNNCell(3, 5))
    compiled = planner.compile(twin)
    xs = rt.randn(4, 2, 3, requires_grad=True)

    def run(cell: Any) -> Any:
        h = rt.zeros(2, 5)
        outs = []
        for t in range(4):
            h = cell(xs[t], h)
            outs.append(h)
        return rt.stack(outs)

    (run(eager) ** 2).sum().backward()
    want = _grads(eager, xs)
    xs.grad = None
    (run(compiled) ** 2).sum().backward()
    _assert_close(_grads(twin, xs), want, 1e-5, 1e-6)
    assert compiled.captures == 2  # h without grad, then h requiring grad


def test_several_outputs_and_one_that_does_not_require_grad():
    rt.manual_seed(0)
    lin = nn.Linear(3, 4)

    def f(x):
        y = lin(x)
        return y.tanh(), y.argmax(1), {"sum": y.sum(), "n": 3}

    compiled = planner.compile(f)
    x = rt.randn(5, 3, requires_grad=True)
    for use_both in (True, False):
        lin.zero_grad()
        x.grad = None
        a, idx, d = f(x)
        ((a.sum() * 2 + d["sum"]) if use_both else d["sum"]).backward()
        want = _grads(lin, x)
        lin.zero_grad()
        x.grad = None
        a, idx, d = compiled(x)
        assert a.grad_fn is d["sum"].grad_fn and a.grad_fn.name() == NODE_NAME
        assert (a.output_nr, d["sum"].output_nr) == (0, 1)
        assert not idx.requires_grad and idx.grad_fn is None and d["n"] == 3
        ((a.sum() * 2 + d["sum"]) if use_both else d["sum"]).backward()
        _assert_close(_grads(lin, x), want, 1e-5, 1e-6)


def test_compiled_function_in_the_middle_of_an_eager_graph():
    """Non-leaf arguments: the gradient flows on into the caller's graph (before) and comes
    from it (after); two calls before one backward keep their own saved values."""
    rt.manual_seed(0)
    pre, mid, post = nn.Linear(4, 6), nn.Linear(6, 6), nn.Linear(6, 2)
    compiled = planner.compile(lambda h: F.silu(mid(h)))
    x = rt.randn(3, 4)

    def run(middle: Callable[[Any], Any]) -> Any:
        h = pre(x)
        return (post(middle(h)) + post(middle(h * 2))).pow(2).sum()

    run(lambda h: F.silu(mid(h))).backward()
    want = [g for m in (pre, mid, post) for g in _grads(m)]
    for m in (pre, mid, post):
        m.zero_grad(set_to_none=True)
    run(compiled).backward()
    _assert_close([g for m in (pre, mid, post) for g in _grads(m)], want, 1e-5, 1e-6)


def test_parameter_hooks_fire_through_the_engine():
    eager, twin = _twins(_mlp)
    compiled = planner.compile(twin)
    x = rt.randn(4, 6)
    seen: dict[str, list[Any]] = {"eager": [], "compiled": []}
    for name, model in (("eager", eager), ("compiled", twin)):
        first = next(iter(model.parameters()))
        first.register_hook(lambda g, name=name: seen[name].append(("hook", g.shape)) or g * 3)
        first.register_post_accumulate_grad_hook(
            lambda p, name=name: seen[name].append(("post", float(p.grad.sum()))))
    for _ in range(2):
        eager(x).sum().backward()
        compiled(x).sum().backward()
    assert [kind for kind, _ in seen["compiled"]] == ["hook", "post", "hook", "post"]
    assert [kind for kind, _ in seen["eager"]] == ["hook", "post", "hook", "post"]
    assert seen["compiled"][0] == seen["eager"][0]
    np.testing.assert_allclose([v for _, v in seen["compiled"][1::2]],
                               [v for _, v in seen["eager"][1::2]], rtol=1e-5)
    _assert_close(_grads(twin), _grads(eager), 1e-5, 1e-6)  # accumulated over both calls


def test_retain_graph_and_the_second_backward_error():
    rt.manual_seed(0)
    model = _mlp()
    compiled = planner.compile(model)
    x = rt.randn(4, 6)
    loss = compiled(x).sum()
    loss.backward(retain_graph=True)
    once = _grads(model)
    loss.backward()
    _assert_close(_grads(model), [2 * g for g in once], 1e-6, 1e-7)
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        loss.backward()
    torch = pytest.importorskip("torch")
    w = torch.ones(2, requires_grad=True)
    y = (w * w).sum()
    y.backward()
    with pytest.raises(RuntimeError) as theirs:
        y.backward()
    assert str(theirs.value).startswith("Trying to backward through the graph a second time")


def test_no_grad_calls_run_a_forward_only_plan():
    rt.manual_seed(0)
    model = _mlp()
    compiled = planner.compile(model)
    x = rt.randn(4, 6)
    with rt.no_grad():
        out = compiled(x)
        want = model(x)
    assert out.grad_fn is None and not out.requires_grad
    np.testing.assert_allclose(out.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    plans = [b for e in compiled._cache.values() for b in e.bindings]
    assert len(plans) == 1 and plans[0].aot is None
    assert compiled(x).grad_fn.name() == NODE_NAME  # grad mode on: the other plan
    assert compiled.captures == 2


def test_create_graph_through_the_node_raises():
    rt.manual_seed(0)
    lin = nn.Linear(3, 3)
    compiled = planner.compile(lambda x: lin(x).tanh())
    x = rt.randn(2, 3, requires_grad=True)
    out = compiled(x).sum()
    with pytest.raises(RuntimeError, match="double backward"):
        rt.autograd.grad(out, x, create_graph=True)
    assert "create_graph=True" in ERR_DOUBLE_BACKWARD
    (g,) = rt.autograd.grad(compiled(x).sum(), x)  # without it: fine
    (want,) = rt.autograd.grad(lin(x).tanh().sum(), x)
    np.testing.assert_allclose(g.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("body", ["linear_tanh", "view_of_weight"])
def test_a_saved_parameter_modified_in_place_raises_pytorchs_error(body):
    """Also where the backward reads a view of it (a slice of the flattened weight)."""
    rt.manual_seed(0)
    lin = nn.Linear(3, 4)
    if body == "linear_tanh":
        compiled, x = planner.compile(lambda x: lin(x).tanh()), rt.randn(2, 3, requires_grad=True)
    else:
        compiled = planner.compile(lambda x: (lin.weight.reshape(-1)[1:6] * x).tanh())
        x = rt.randn(5, requires_grad=True)
    out = compiled(x)
    with rt.no_grad():
        lin.weight.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


class _Steered(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x: Any) -> Any:
        y = self.lin(x)
        if y.sum().item() > 0:  # a value steering Python: not capturable
            return y * 2
        return y


def test_uncapturable_function_falls_back_loudly_once():
    eager, twin = _twins(_Steered)
    compiled = planner.compile(twin)
    x = rt.randn(2, 3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            compiled(x).sum().backward()
    fallbacks = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(fallbacks) == 1 and "runs eagerly" in fallbacks[0], fallbacks
    for _ in range(3):
        eager(x).sum().backward()
    _assert_close(_grads(twin), _grads(eager), 1e-6, 1e-7)


def test_adamw_loop_equals_eager():
    """(An attention block's key bias has a zero gradient up to rounding, which Adam's
    normalization turns into steps of lr: an MLP here.)"""
    eager, twin = _twins(_mlp)
    compiled = planner.compile(twin)
    opts = [rt.optim.AdamW(m.parameters(), lr=1e-2, weight_decay=0.1) for m in (eager, twin)]
    rng = np.random.default_rng(0)
    batches = [rt.tensor(rng.standard_normal((8, 6)).astype(np.float32)) for _ in range(5)]
    losses: dict[str, list[float]] = {"eager": [], "compiled": []}
    for x in batches:
        for name, fn, opt in (("eager", eager, opts[0]), ("compiled", compiled, opts[1])):
            opt.zero_grad()
            loss = (fn(x) - 1).pow(2).mean()
            loss.backward()
            opt.step()
            losses[name].append(float(loss))
    np.testing.assert_allclose(losses["compiled"], losses["eager"], rtol=1e-5, atol=1e-6)
    for p, q in zip(twin.parameters(), eager.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-4, atol=1e-5)
    assert compiled.captures == 1


def test_guards_recompile_on_shape_and_requires_grad():
    rt.manual_seed(0)
    model = _mlp()
    compiled = planner.compile(model)
    compiled(rt.randn(4, 6)).sum().backward()
    compiled(rt.randn(5, 6)).sum().backward()  # another batch size: captured again
    assert compiled.captures == 2
    first = next(iter(model.parameters()))
    first.requires_grad_(False)
    model.zero_grad(set_to_none=True)
    compiled(rt.randn(5, 6)).sum().backward()
    assert compiled.captures == 3 and first.grad is None
    assert all(p.grad is not None for p in list(model.parameters())[1:])


def test_an_input_without_a_gradient_before_one_with_it():
    """A tensor requiring grad that the forward reads off the autograd path (detached) gets no
    edge; the gradients after it still reach their own inputs."""
    rt.manual_seed(0)
    other = nn.Parameter(rt.randn(3))
    lin = nn.Linear(3, 3)

    def f(x):
        return other.detach().sum() + lin(x).tanh()

    x = rt.randn(2, 3, requires_grad=True)
    f(x).sum().backward()
    want = _grads(lin, x)
    _clear(lin, x)
    out = planner.compile(f)(x)
    assert len(out.grad_fn.next_functions) == 3  # the weight, the bias, x: not `other`
    out.sum().backward()
    _assert_close(_grads(lin, x), want, 1e-5, 1e-6)
    assert other.grad is None


def test_an_output_the_backward_reads_modified_in_place_raises():
    rt.manual_seed(0)
    lin = nn.Linear(3, 3)
    x = rt.randn(2, 3, requires_grad=True)
    for fn in (lambda x: lin(x).tanh(), planner.compile(lambda x: lin(x).tanh())):
        out = fn(x)
        out.mul_(2)  # tanh's backward reads its result
        with pytest.raises(RuntimeError, match="modified by an inplace operation.*is at version 1; "
                                               "expected version 0"):
            out.sum().backward()


def test_backward_reading_an_argument_written_in_place_falls_back():
    """Eager mode saved ``x`` before the write: its backward raises the version error. The
    trace of the backward meets that error too (a capture moves the version of an argument it
    writes, as eager mode does), so the call runs eagerly, saying why (and its backward raises
    as eager mode's does)."""
    rt.manual_seed(0)
    w = nn.Parameter(rt.randn(3))

    def f(x):
        y = w * x
        x.add_(1)
        return y

    compiled = planner.compile(f)
    with pytest.warns(RuntimeWarning, match="its backward cannot be traced .RuntimeError: one "
                      "of the variables needed for gradient computation has been modified by an "
                      "inplace operation"):
        out = compiled(rt.randn(3))
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        out.sum().backward()


def test_compiled_module_called_inside_a_compiled_training_step_is_inlined():
    eager, twin = _twins(_mlp)
    inner = planner.compile(twin)
    opts = [rt.optim.SGD(m.parameters(), lr=0.1, momentum=0.9) for m in (eager, twin)]

    def make(model: Any, opt: Any) -> Callable[..., Any]:
        def step(x, y):
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()
            return loss
        return step

    outer = planner.compile(make(inner, opts[1]))
    plain = make(eager, opts[0])
    x, y = rt.randn(8, 6), rt.tensor(np.arange(8) % 3)
    for _ in range(3):
        np.testing.assert_allclose(float(outer(x, y)), float(plain(x, y)), rtol=1e-5)
    assert outer.captures == 1 and inner.captures == 0  # one plan: the inner call inlined
    for p, q in zip(twin.parameters(), eager.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=1e-4, atol=1e-6)
    x.requires_grad_(True)
    inner(x).sum().backward()  # called on its own: its own compiled forward and backward
    assert inner.captures == 1 and x.grad is not None


def test_the_plan_pair_is_kept_in_the_plan_cache():
    rt.manual_seed(0)
    model = _Block()
    x = rt.randn(3, 7, 16, requires_grad=True)  # a shape of its own in this session's cache
    first = planner.compile(model)
    first(x).sum().backward()
    want = _grads(model, x)
    assert first.plans_loaded == 0
    _clear(model, x)
    again = planner.compile(model)  # another compiled function, the same capture
    out = again(x)
    assert again.plans_loaded == 1 and out.grad_fn.name() == NODE_NAME
    out.sum().backward()
    _assert_close(_grads(model, x), want, 1e-6, 1e-7)


def test_on_cuda_with_the_fake_cupy(fake_cuda):
    """A plan pair on cuda:0 (tests/fake_cupy.py holds the device arrays), an output's
    gradient left None (materialized as zeros on the device)."""
    eager, twin = _twins(_mlp)
    twin.to("cuda")
    compiled = planner.compile(twin, backend="interpreter")  # the fake builds no CUDA C
    x = rt.randn(4, 6)
    want = eager(x)
    (want * 2).sum().backward()
    assert compiled(x.to("cuda")).grad_fn.name() == NODE_NAME

    def two(x):
        y = twin(x)
        return y * 2, y.sum()

    first, second = planner.compile(two, backend="interpreter")(x.to("cuda"))
    assert first.device == "cuda:0" and first.grad_fn.name() == NODE_NAME
    first.sum().backward()  # `second`'s gradient: None
    np.testing.assert_allclose(first.detach().cpu().numpy(), 2 * want.detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    _assert_close([g for g in (p.grad.cpu().numpy() for p in twin.parameters())],
                  _grads(eager), 1e-5, 1e-6)
    assert second.grad_fn is first.grad_fn


def test_returning_a_leaf_made_inside_falls_back():
    def f(x):
        w = rt.ones(3, requires_grad=True)
        return x * w, w

    compiled = planner.compile(f)
    with pytest.warns(RuntimeWarning, match="returns a leaf tensor it made"):
        out, w = compiled(rt.ones(3))
    out.sum().backward()
    assert w.is_leaf and w.grad is not None  # as eager mode: the leaf's .grad


class _NoBackward(rt.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: Any) -> Any:
        return x * 2

    @staticmethod
    def backward(ctx: Any, g: Any) -> Any:
        raise NotImplementedError("no backward here")


def test_a_backward_that_cannot_be_traced_falls_back_at_the_call():
    """Eager mode raises only at backward(), if ever: the forward still runs (eagerly)."""
    compiled = planner.compile(lambda x: _NoBackward.apply(x).sin())
    x = rt.ones(3, requires_grad=True)
    with pytest.warns(RuntimeWarning, match="its backward cannot be traced"):
        y = compiled(x)
    np.testing.assert_allclose(y.detach().numpy(), np.sin(2.0) * np.ones(3), rtol=1e-6)
    with pytest.raises(NotImplementedError, match="no backward here"):
        y.sum().backward()


def test_hooks_and_retain_grad_on_a_non_leaf_argument():
    """The argument's hooks run once per backward, on the real gradient (not in the trace)."""
    rt.manual_seed(0)
    lin = nn.Linear(3, 3)
    w = rt.randn(2, 3, requires_grad=True)
    found = {}
    for name, fn in (("eager", lambda h: lin(h).tanh()),
                     ("compiled", planner.compile(lambda h: lin(h).tanh()))):
        seen: list[float] = []
        w.grad = None
        for _ in range(2):
            h = w * 2
            h.retain_grad()
            h.register_hook(lambda g, seen=seen: seen.append(float(g.sum())) or g * 10)
            fn(h).sum().backward()
        found[name] = (seen, h.grad.numpy().copy(), w.grad.numpy().copy())
    assert len(found["compiled"][0]) == 2
    np.testing.assert_allclose(found["compiled"][0], found["eager"][0], rtol=1e-5)
    for got, want in zip(found["compiled"][1:], found["eager"][1:]):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_a_gradient_that_is_the_outputs_gradient_is_a_copy():
    """grad(x) of x + b is the output's gradient itself: the .grad made from it is not the
    caller's tensor (an in-place change of one leaves the other)."""
    b = nn.Parameter(rt.zeros(3))
    compiled = planner.compile(lambda x: x + b)
    x = rt.randn(2, 3, requires_grad=True)
    g = rt.ones(2, 3)
    compiled(x).backward(g)
    x.grad.mul_(5)
    np.testing.assert_array_equal(g.numpy(), np.ones((2, 3), np.float32))
    np.testing.assert_array_equal(b.grad.numpy(), np.full(3, 2, np.float32))


def test_a_python_float_argument_the_backward_reads():
    """Whether the float is a constant of each plan or an input of one (dynamic), the
    gradients use the call's value."""
    rt.manual_seed(0)
    lin = nn.Linear(3, 3)
    compiled = planner.compile(lambda x, scale: lin(x).tanh() * scale)
    x = rt.randn(2, 3, requires_grad=True)
    for scale in (0.5, 0.7, 1.5):
        _clear(lin, x)
        (lin(x).tanh() * scale).sum().backward()
        want = _grads(lin, x)
        _clear(lin, x)
        compiled(x, scale).sum().backward()
        _assert_close(_grads(lin, x), want, 1e-5, 1e-6)


def test_remat_recomputes_a_gelu_in_the_backward_plan():
    """As in a compiled step (tests/planner/test_remat.py): the forward's GELU kernel writes
    its result only, the backward plan's kernel recomputes the rest from the product; an
    output's gradient counts as coming after the whole forward (it is the backward plan's
    input), not as a source fusion could join to it."""
    rng = np.random.default_rng(1)
    w0 = rng.standard_normal((64, 256)).astype(np.float32) * 0.1
    w1 = rng.standard_normal((256, 8)).astype(np.float32) * 0.1
    x = rt.tensor(rng.standard_normal((256, 64)).astype(np.float32))
    ws = [(rt.tensor(w0.copy(), requires_grad=True), rt.tensor(w1.copy(), requires_grad=True))
          for _ in range(2)]

    def make(w: Any, w2: Any) -> Callable[[Any], Any]:
        return lambda x: F.gelu(x @ w) @ w2

    (make(*ws[0])(x) ** 2).sum().backward()
    compiled = planner.compile(make(*ws[1]), backend="llvm")
    (compiled(x) ** 2).sum().backward()
    for got, want in zip(ws[1], ws[0]):
        np.testing.assert_allclose(got.grad.numpy(), want.grad.numpy(), rtol=1e-4, atol=1e-4)
    backward = next(iter(compiled._cache.values())).bindings[0].aot.backward
    erf = [k.kernel for k in compiled.plan.kernels + backward.kernels
           if any(getattr(e, "op", None) == "erf" for e in k.kernel.exprs)]
    assert len(erf) == 2 and [len(k.outputs) for k in erf] == [1, 1]


def test_an_output_the_function_retains_grad_on():
    rt.manual_seed(0)
    lin = nn.Linear(3, 2)

    def f(x):
        y = lin(x)
        y.retain_grad()
        return y, y.tanh()

    x = rt.randn(4, 3)
    compiled = planner.compile(f)
    with pytest.warns(RuntimeWarning, match="retain_grad"):  # eager: y.grad sums z's too
        compiled(x)
    for fn in (f, compiled):
        y, z = fn(x)
        (z * 3).sum().backward()
        np.testing.assert_allclose(y.grad.numpy(), 3 * (1 - np.tanh(y.detach().numpy()) ** 2),
                                   rtol=1e-5, atol=1e-6)
