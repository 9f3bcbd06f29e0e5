"""Compiled training steps as users write them (functional level): equal to eager mode and
to PyTorch, errors included, with no fallback warning."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt

torch = pytest.importorskip("torch")


def _raised(fn: Any) -> tuple[str, str]:
    try:
        fn()
    except Exception as e:  # noqa: BLE001 - the error's type and text are compared
        return type(e).__name__, str(e)
    return "", ""


@pytest.mark.parametrize("index, vshape, accumulate", [
    ([5, 0], (2, 6), True), ([-6, 0], (2, 6), True), ([1, 1], (1, 2, 6), True),
    ([1, 1], (3,), True), ([1, 1], (1, 2, 6), False)])
def test_index_put_checks_as_pytorch_eager_and_compiled(index: list[int], vshape: tuple[int, ...],
                                                        accumulate: bool) -> None:
    """index_put(accumulate=True) checked no index (its scatter's numpy error, a ValueError
    naming index_backward, eagerly; numpy's IndexError compiled), and a value with a leading
    one that index_put does not drop reached a reshape's ValueError: PyTorch's IndexError and
    shape-mismatch RuntimeError, eager and compiled alike."""
    def body(lib: Any, w: Any, v: Any, i: Any) -> Any:
        return w.index_put((i,), v, accumulate=accumulate).pow(2).sum()

    def run(lib: Any, fn: Any = None) -> tuple[str, str]:
        w = lib.zeros(5, 6, requires_grad=True)
        v = lib.ones(*vshape, requires_grad=True)
        return _raised(lambda: (fn or (lambda *a: body(lib, *a)))(w, v, lib.tensor(index)))

    expected = run(torch)
    assert expected[0] in ("IndexError", "RuntimeError")
    for fn in (None, planner.compile(lambda w, v, i: body(rt, w, v, i))):
        kind, text = run(rt, fn)
        assert text == expected[1]
        assert kind == expected[0] or (kind, expected[0]) == ("ShapeError", "RuntimeError")


def test_index_put_accumulate_out_of_range_in_a_compiled_step() -> None:
    """The index is the step's argument: a later call's out-of-range index raises PyTorch's
    IndexError from the compiled plan (a check step), and an in-range one replays."""
    w = rt.zeros(5, 3, requires_grad=True)

    def step(i: rt.Tensor) -> rt.Tensor:
        w.grad = None
        loss = w.index_put((i,), rt.ones(2, 3), accumulate=True).pow(2).sum()
        loss.backward()
        return loss

    compiled = planner.compile(step)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert compiled(rt.tensor([1, 1])).item() == 12.0
        with pytest.raises(IndexError) as info:
            compiled(rt.tensor([5, 0]))
        assert str(info.value) == "index 5 is out of bounds for dimension 0 with size 5"
        assert compiled(rt.tensor([-5, 4])).item() == 6.0
    assert compiled.captures == 1


def _draws(fn: Any, x: rt.Tensor, compiled: bool, calls: int = 3) -> tuple[list[Any], Any]:
    """``fn(x)`` over ``calls`` calls from seed 0 (compiled or not), and the generator's next
    numbers after them."""
    step = planner.compile(fn) if compiled else fn
    rt.manual_seed(0)
    got = [step(x).detach().numpy().copy() for _ in range(calls)]
    return got, rt.rand(4).numpy()


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("sampler", ["exponential_", "cauchy_", "gumbel_softmax"])
def test_samplers_compiled_draw_pytorchs_numbers(sampler: str, dtype: str) -> None:
    """A captured exponential_ or cauchy_ of a float32 (or half) tensor drew a uniform of
    that dtype (a 32-bit draw an element) where PyTorch and eager mode draw a float64 one and
    compute in float64: other numbers, and the generator left elsewhere (gumbel_softmax draws
    through exponential_)."""
    def fn(lib: Any, x: Any) -> Any:
        if sampler == "gumbel_softmax":
            return lib.nn.functional.gumbel_softmax(x, tau=0.5)
        draws = getattr(lib.empty(3, 7, dtype=getattr(lib, dtype)), sampler)(*(
            (2.0,) if sampler == "exponential_" else (1.0, 0.5)))
        return draws.float() * x

    x = np.random.default_rng(0).standard_normal((3, 7)).astype(np.float32)
    torch.manual_seed(0)
    expected = [fn(torch, torch.tensor(x)).numpy() for _ in range(3)]
    after = torch.rand(4).numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for compiled in (False, True):
            got, got_after = _draws(lambda t: fn(rt, t), rt.tensor(x), compiled)
            for g, e in zip(got, expected, strict=True):
                np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)
            np.testing.assert_array_equal(got_after, after)


def test_rrelu_training_in_a_compiled_step_runs_eagerly() -> None:
    """rrelu(training=True) draws a slope for each element at most 0 only (PyTorch's CPU
    kernel): a capture drew one for every element, so a compiled step gave other slopes and
    left the generator elsewhere, silently. It now runs the step eagerly, with the warning."""
    x = np.random.default_rng(1).standard_normal((4, 6)).astype(np.float32)
    w0 = np.random.default_rng(2).standard_normal((4, 6)).astype(np.float32)

    def make() -> tuple[Any, rt.Tensor]:
        w = rt.tensor(w0, requires_grad=True)

        def step(x: rt.Tensor) -> rt.Tensor:
            w.grad = None
            loss = rt.nn.functional.rrelu(w * x, 0.1, 0.3, training=True).pow(2).sum()
            loss.backward()
            return w.grad

        return step, w

    eager, _ = make()
    compiled, _ = make()
    expected, after = _draws(eager, rt.tensor(x), compiled=False)
    with pytest.warns(RuntimeWarning, match="rrelu"):
        got, got_after = _draws(compiled, rt.tensor(x), compiled=True)
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-6)
    np.testing.assert_array_equal(got_after, after)
    tw = torch.tensor(w0, requires_grad=True)
    torch.manual_seed(0)
    torch.nn.functional.rrelu(tw * torch.tensor(x), 0.1, 0.3, training=True).pow(2).sum().backward()
    np.testing.assert_allclose(expected[0], tw.grad.numpy(), rtol=1e-5)


def test_log_normal_of_16_or_more_compiled_equals_eager() -> None:
    """log_normal_ draws one normal_distribution<double> an element; a capture drew randn's
    vectorized fill from 16 elements on (other numbers): it now runs eagerly there, with the
    warning (under 16 it compiles: randn draws as it does there)."""
    x = rt.tensor(np.linspace(0.5, 1.5, 40, dtype=np.float32).reshape(2, 20))

    def fn(t: rt.Tensor) -> rt.Tensor:
        return rt.empty(2, 20).log_normal_(0.1, 0.5) * t

    expected, after = _draws(fn, x, compiled=False)
    with pytest.warns(RuntimeWarning, match="log_normal_"):
        got, got_after = _draws(fn, x, compiled=True)
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-6)
    np.testing.assert_array_equal(got_after, after)


@pytest.mark.parametrize("kind", ["swa", "ema", "ema_buffers"])
def test_averaged_model_update_in_a_compiled_step(kind: str) -> None:
    """AveragedModel.update_parameters branched on ``bool(n_averaged == 0)`` (a read of a
    tensor's value): a training step that keeps an EMA or SWA copy ran eagerly. Captured, it
    picks the copy or the average by the count: eager mode's values, one capture."""
    su = rt.optim.swa_utils
    options: dict[str, Any] = {
        "swa": {}, "ema": {"multi_avg_fn": su.get_ema_multi_avg_fn(0.9)},
        "ema_buffers": {"avg_fn": su.get_ema_avg_fn(0.8), "use_buffers": True}}[kind]

    def make() -> tuple[Any, list[rt.Tensor]]:
        rt.manual_seed(0)
        model = rt.nn.Sequential(rt.nn.Linear(6, 8), rt.nn.BatchNorm1d(8), rt.nn.Linear(8, 3))
        opt = rt.optim.SGD(model.parameters(), lr=0.1)
        averaged = su.AveragedModel(model, **options)

        def step(x: rt.Tensor) -> Any:
            opt.zero_grad()
            loss = model(x).pow(2).mean()
            loss.backward()
            opt.step()
            averaged.update_parameters(model)
            return loss, averaged(x)

        return step, [*averaged.parameters(), *averaged.buffers()]

    eager, eager_state = make()
    step, state = make()
    compiled = planner.compile(step)
    r = np.random.default_rng(5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(4):
            x = r.standard_normal((5, 6)).astype(np.float32)
            for g, e in zip(compiled(rt.tensor(x)), eager(rt.tensor(x)), strict=True):
                np.testing.assert_allclose(g.detach().numpy(), e.detach().numpy(), rtol=2e-5,
                                           atol=2e-6)
            for g, e in zip(state, eager_state, strict=True):
                np.testing.assert_allclose(g.detach().numpy(), e.detach().numpy(), rtol=2e-5,
                                           atol=2e-6)
    assert compiled.captures == 1


def test_arguments_by_keyword_or_position_are_one_capture() -> None:
    """``step(x, y)``, ``step(x, y=y)`` and ``step(x=x, y=y)`` bind the same arguments: one
    capture (torch.compile guards the frame's bound arguments), where each call structure was
    captured anew; a keyword that is not the next parameter stays a keyword, and Python's
    errors for a bad call are the eager ones."""
    w = rt.zeros(6, 3, requires_grad=True)

    def step(x: rt.Tensor, y: rt.Tensor, scale: float = 1.0, *, bias: float = 0.0) -> Any:
        w.grad = None
        loss = ((x @ w - y) ** 2).mean() * scale + bias
        loss.backward()
        with rt.no_grad():
            w.sub_(0.1 * w.grad)
        return loss

    compiled = planner.compile(step)
    r = np.random.default_rng(0)
    data = [(rt.tensor(r.standard_normal((5, 6)).astype(np.float32)),
             rt.tensor(r.standard_normal((5, 3)).astype(np.float32))) for _ in range(4)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compiled(*data[0])
        assert "step replays a cached plan" in planner.explain(compiled, data[1][0],
                                                               y=data[1][1])
        compiled(data[1][0], y=data[1][1])
        compiled(x=data[2][0], y=data[2][1])
        assert compiled.captures == 1
        compiled(data[3][0], data[3][1], bias=0.0)  # a keyword-only argument stays one
    expected = rt.zeros(6, 3, requires_grad=True)
    for x, y in data:
        expected.grad = None
        ((x @ expected - y) ** 2).mean().backward()
        with rt.no_grad():
            expected.sub_(0.1 * expected.grad)
    np.testing.assert_allclose(w.detach().numpy(), expected.detach().numpy(), rtol=1e-5,
                               atol=1e-7)
    x, y = data[0]
    for args, kwargs in (((x, y), {"y": y}), ((x,), {"z": y}), ((), {"y": y})):
        expected_error = _raised(lambda: step(*args, **kwargs))
        assert expected_error[0] == "TypeError"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # (y twice: that call runs eagerly, and raises)
            assert _raised(lambda: compiled(*args, **kwargs)) == expected_error


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16"])
@pytest.mark.parametrize("exponent", [0.5, -0.5])
def test_power_of_a_half_is_pytorchs_sqrt_and_rsqrt(exponent: float, dtype: str) -> None:
    """PyTorch computes x ** 0.5 as sqrt(x) and x ** -0.5 as 1 / sqrt(x) (float32, float64,
    bfloat16; float16 takes pow): -0.0 ** 0.5 is -0.0 and -inf ** 0.5 nan, -0.0 ** -0.5
    -inf and -inf ** -0.5 nan. Eager mode (numpy's power) had 0.5 right and -0.5 as pow; a
    fused kernel took both as pow (+0.0, inf; +inf, 0)."""
    x = np.array([-0.0, 0.0, -np.inf, np.inf, np.nan, -1.0, 4.0, 1e-30, 2.0], np.float32)

    def fn(lib: Any, t: Any) -> Any:
        return ((t * 1) ** exponent + 1) * 2, (t * 1) ** exponent

    expected = fn(torch, torch.tensor(x).to(getattr(torch, dtype)))
    xr = rt.tensor(x).to(getattr(rt, dtype))
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("error")
        results = [fn(rt, xr), planner.compile(lambda t: fn(rt, t))(xr)]
    for got in results:
        for g, e in zip(got, expected, strict=True):
            g, e = g.float().numpy(), e.float().numpy()
            np.testing.assert_array_equal(np.signbit(g) | np.isnan(g), np.signbit(e) | np.isnan(e))
            np.testing.assert_allclose(g, e, rtol=1e-2 if dtype == "bfloat16" else 1e-6)


@pytest.mark.parametrize("alias", ["detach", "data"])
def test_gradient_penalty_on_a_detached_argument_is_captured_once(alias: str) -> None:
    """A gradient penalty's ``xi = x.detach().requires_grad_()`` (or ``x.data``) is a leaf the
    step makes, sharing the argument's memory: backward sets its .grad, which the capture took
    for state of the plan (guarded None, found set at the next call: a recapture every call,
    up to the recompile limit, then eager). It is the step's own: one capture, eager's values."""
    def make() -> tuple[Any, list[rt.Tensor]]:
        rt.manual_seed(0)
        model = rt.nn.Sequential(rt.nn.Linear(6, 8), rt.nn.LayerNorm(8), rt.nn.GELU(),
                                 rt.nn.Linear(8, 1))
        opt = rt.optim.Adam(model.parameters(), lr=0.01)

        def step(x: rt.Tensor) -> Any:
            opt.zero_grad()
            xi = getattr(x, alias)
            xi = (xi() if callable(xi) else xi).requires_grad_(True)
            out = model(xi)
            g, = rt.autograd.grad(out.sum(), xi, create_graph=True)
            loss = out.mean() + 10 * ((g.norm(2, dim=1) - 1) ** 2).mean()
            loss.backward()
            opt.step()
            return loss, xi.grad.norm()

        return step, list(model.parameters())

    eager, eager_params = make()
    step, params = make()
    compiled = planner.compile(step)
    r = np.random.default_rng(5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(5):
            x = r.standard_normal((5, 6)).astype(np.float32)
            for g, e in zip(compiled(rt.tensor(x)), eager(rt.tensor(x)), strict=True):
                np.testing.assert_allclose(g.detach().numpy(), e.detach().numpy(), rtol=2e-5,
                                           atol=2e-6)
    for g, e in zip(params, eager_params, strict=True):
        np.testing.assert_allclose(g.detach().numpy(), e.detach().numpy(), rtol=2e-5, atol=2e-6)
    assert compiled.captures == 1


@pytest.mark.parametrize("write", ["mul_", "copy_", "clamp_"])
def test_in_place_write_to_an_expanded_argument_raises_pytorchs_error(write: str) -> None:
    """An in-place write to an argument that is an expand() (elements sharing memory): eager
    mode and PyTorch raise the internal-overlap RuntimeError at the write; a compiled call
    captured it and failed at its write-back with numpy's ValueError ('assignment destination
    is read-only')."""
    def step(lib: Any, x: Any) -> Any:
        if write == "copy_":
            x.copy_(lib.ones(5, 6))
        elif write == "clamp_":
            x.clamp_(0.0, 0.5)
        else:
            x.mul_(2)
        return x.sum()

    expected = _raised(lambda: step(torch, torch.ones(1, 6).expand(5, 6)))
    assert expected[0] == "RuntimeError"
    compiled = planner.compile(lambda x: step(rt, x))
    base = rt.ones(1, 6)
    for fn in (lambda x: step(rt, x), compiled, compiled):
        assert _raised(lambda: fn(base.expand(5, 6))) == expected
    np.testing.assert_array_equal(base.numpy(), np.ones((1, 6), np.float32))


def test_fill_of_an_expanded_argument_runs_eagerly() -> None:
    """zero_ and fill_ of an expand() are allowed (PyTorch's and eager mode's fill): a
    capture runs that step eagerly, with the warning (it failed at the write-back)."""
    def step(x: rt.Tensor) -> rt.Tensor:
        x.zero_()
        x.fill_(3.0)
        return x.sum()

    base = rt.ones(1, 6)
    with pytest.warns(RuntimeWarning, match="fill_ of a tensor whose elements share memory"):
        assert planner.compile(step)(base.expand(5, 6)).item() == 90.0
    np.testing.assert_array_equal(base.numpy(), np.full((1, 6), 3.0, np.float32))


def test_explain_keys_float_arguments_as_the_call_does() -> None:
    """A float argument met with a second value is an input of the plan (automatic dynamic):
    later values replay without a capture, and planner.explain says so (it keyed the value
    itself and said the step recompiles)."""
    w = rt.ones(3, requires_grad=True)

    def step(x: rt.Tensor, lr: float) -> rt.Tensor:
        w.grad = None
        loss = (w * x).pow(2).sum()
        loss.backward()
        with rt.no_grad():
            w.sub_(lr * w.grad)
        return loss

    compiled = planner.compile(step)
    x = rt.tensor([0.5, -1.0, 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        compiled(x, 0.1)
        compiled(x, 0.2)  # a second value: lr is read at each call from now on
        captures = compiled.captures
        for lr in (0.3, 0.05):
            assert "replays a cached plan" in planner.explain(compiled, x, lr)
            compiled(x, lr)
    assert compiled.captures == captures


def test_randint_in_a_compiled_step_draws_pytorchs_numbers() -> None:
    """randint inside a step (random indices, an integer noise, a random mask) made the
    step run eagerly ("randint inside a captured step"); it is a random step of the plan
    now, drawing PyTorch's numbers in eager mode's order (dtype= too), the generator left
    where PyTorch leaves it, and a kept plan reloads it."""
    def make(lib: Any) -> Any:
        def step(x: Any, w: Any) -> Any:
            w.grad = None
            idx = lib.randint(0, 5, (3,))
            noise = lib.randint(-3, 4, (5, 6), dtype=lib.float32)
            mask = lib.randint(2, (5, 6)).bool()
            loss = ((x * w + noise * 0.01).masked_fill(mask, 0.0)[idx]).pow(2).sum() \
                + lib.nn.functional.dropout(x, 0.3).sum()
            loss.backward()
            return loss, idx, noise, lib.randint(10, 20, (2,), dtype=lib.int32), w.grad

        return step

    x = np.random.default_rng(0).standard_normal((5, 6)).astype(np.float32)
    runs = []
    for lib, compiled in ((torch, False), (rt, False), (rt, True)):
        lib.manual_seed(0)
        w = lib.ones(6, requires_grad=True)
        step = make(lib)
        if compiled:
            step = planner.compile(step)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got = [[t.detach().numpy().copy() for t in step(lib.tensor(x * (i + 1)), w)]
                   for i in range(3)]
        runs.append((got, lib.rand(3).numpy()))
        if compiled:
            assert step.captures == 1
            again = planner.Plan.loads(step.plan.dumps())
            assert again.dumps() == step.plan.dumps()
    (expected, after), *ours = runs
    for got, got_after in ours:
        for g_call, e_call in zip(got, expected, strict=True):
            for g, e in zip(g_call, e_call, strict=True):
                assert g.dtype == e.dtype
                np.testing.assert_allclose(g, e, rtol=1e-5)
        np.testing.assert_array_equal(got_after, after)


def test_mixup_step_with_randperm_compiled_draws_pytorchs_permutations() -> None:
    """A mixup step's ``perm = randperm(batch)`` ran the step eagerly ("randperm inside a
    captured step"); it is a random step of the plan now: PyTorch's permutations (dtype=
    too), the generator left where PyTorch leaves it, one capture."""
    def make(lib: Any) -> Any:
        def step(x: Any, y: Any, w: Any) -> Any:
            w.grad = None
            perm = lib.randperm(x.shape[0])
            mixed = 0.7 * x + 0.3 * x[perm]
            out = mixed @ w
            f = lib.nn.functional
            loss = 0.7 * f.cross_entropy(out, y) + 0.3 * f.cross_entropy(out, y[perm])
            loss.backward()
            return loss, perm, lib.randperm(5, dtype=lib.float32), w.grad

        return step

    r = np.random.default_rng(0)
    x, y = r.standard_normal((8, 6)).astype(np.float32), r.integers(0, 3, 8)
    runs = []
    for lib, compiled in ((torch, False), (rt, True)):
        lib.manual_seed(0)
        w = lib.ones(6, 3, requires_grad=True)
        step = make(lib)
        if compiled:
            step = planner.compile(step)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got = [[t.detach().numpy().copy() for t in step(lib.tensor(x * (i + 1)),
                                                            lib.tensor(y), w)]
                   for i in range(3)]
        runs.append((got, lib.rand(3).numpy()))
        if compiled:
            assert step.captures == 1
            assert planner.Plan.loads(step.plan.dumps()).dumps() == step.plan.dumps()
    (expected, after), (got, got_after) = runs
    for g_call, e_call in zip(got, expected, strict=True):
        for g, e in zip(g_call, e_call, strict=True):
            assert g.dtype == e.dtype
            # float32 through PyTorch's BLAS against fused kernels: 1.7e-5 apart with MKL on
            # an Intel CPU (the permutations, integers, are exact)
            np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-6)
    np.testing.assert_array_equal(got_after, after)


def _lr_run(compiled: bool, inside: bool) -> tuple[list[Any], Any]:
    rt.manual_seed(0)
    model = rt.nn.Linear(6, 3)
    opt = rt.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    sched = rt.optim.lr_scheduler.ExponentialLR(opt, 0.5)

    def step(x: rt.Tensor) -> Any:
        opt.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()
        if inside:
            sched.step()
        return loss.item(), opt.param_groups[0]["lr"], sched.get_last_lr()[0]

    fn = planner.compile(step) if compiled else step
    got = []
    for i in range(4):
        got.append(fn(rt.ones(5, 6) * (i + 1)))
        if not inside:
            sched.step()
    return got, fn


def test_a_returned_learning_rate_is_read_at_each_call() -> None:
    """``return loss, opt.param_groups[0]["lr"]`` (or ``sched.get_last_lr()[0]``) with the
    schedule stepped between calls: the plan returned the lr met at capture at every call
    (0.1, 0.1, ...), silently; it reads the group's value at each replay now, one capture."""
    expected, _ = _lr_run(compiled=False, inside=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got, step = _lr_run(compiled=True, inside=False)
    assert [g[1:] for g in got] == [e[1:] for e in expected] == [(0.1, 0.1), (0.05, 0.05),
                                                               (0.025, 0.025),
                                                               (0.0125, 0.0125)]
    np.testing.assert_allclose([g[0] for g in got], [e[0] for e in expected], rtol=1e-5)
    assert step.captures == 1


def test_a_learning_rate_returned_after_an_in_step_schedule_runs_eagerly() -> None:
    """With sched.step() inside the step the capture defers the schedule to each replay, so
    the lr it met is the one before it: a plan returned that (0.1 every call) where eager
    mode returns 0.05, 0.025, ...; such a step now runs eagerly, with the warning."""
    expected, _ = _lr_run(compiled=False, inside=True)
    # sched.get_last_lr() read after sched.step(): the first of the step's two reads that
    # stop the capture (the other: the group's lr returned)
    with pytest.warns(RuntimeWarning,
                      match=r"reads ExponentialLR.get_last_lr\(\) after ExponentialLR.step"):
        got, _ = _lr_run(compiled=True, inside=True)
    assert [g[1:] for g in got] == [e[1:] for e in expected]
    np.testing.assert_allclose([g[0] for g in got], [e[0] for e in expected], rtol=1e-5)
