"""rt.compiler (torch.compiler) over the planner: set_stance's stances as a function, context
manager and decorator, force_backend, disable, is_compiling, reset, list_backends; and
rt.random.fork_rng."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import runtime as rt
from planner.compile import CompileError


def _training_step():
    rt.manual_seed(0)
    model = rt.nn.Linear(4, 2)
    opt = rt.optim.SGD(model.parameters(), lr=0.1)

    def step(x: rt.Tensor) -> rt.Tensor:
        opt.zero_grad()
        loss = model(x).pow(2).mean()
        loss.backward()
        opt.step()
        return loss

    return model, step


@pytest.fixture(autouse=True)
def _default_stance():
    yield
    rt.compiler.set_stance("default")


def test_force_eager_runs_as_written_and_default_compiles() -> None:
    model, step = _training_step()
    compiled = rt.compile(step)
    x = rt.randn(8, 4)
    with rt.compiler.set_stance("force_eager"):
        compiled(x)
    assert compiled.captures == 0
    compiled(x)
    assert compiled.captures == 1
    rt.compiler.set_stance("force_eager")  # as a function: from now on
    compiled(rt.randn(3, 4))
    assert compiled.captures == 1
    rt.compiler.set_stance("default")

    @rt.compiler.set_stance("force_eager")  # as a decorator: for each call only
    def eager_calls() -> int:
        compiled(rt.randn(5, 4))
        return compiled.captures

    assert rt.compiler.stance().stance == "default"
    assert eager_calls() == 1 and rt.compiler.stance().stance == "default"


def test_recompile_stances() -> None:
    model, step = _training_step()
    compiled = rt.compile(step)
    x = rt.randn(8, 4)
    compiled(x)
    with rt.compiler.set_stance("fail_on_recompile"):
        compiled(x)  # its plan fits: replayed
        with pytest.raises(RuntimeError, match="Detected recompile when torch.compile stance "
                           "is 'fail_on_recompile'.(.|\n)*shape"):
            compiled(rt.randn(3, 4))
    before = [p.detach().numpy().copy() for p in model.parameters()]
    with rt.compiler.set_stance("eager_on_recompile"):
        loss = compiled(rt.ones(3, 4))  # runs eagerly: no capture
        compiled(x)  # replays the plan it has
    assert compiled.captures == 1
    assert np.isfinite(float(loss)) and not np.allclose(before[0], model.weight.detach().numpy())


def test_eager_then_compile() -> None:
    _, step = _training_step()
    compiled = rt.compile(step)
    x = rt.randn(8, 4)
    with rt.compiler.set_stance("eager_then_compile"):
        compiled(x)
        assert compiled.captures == 0
        compiled(x)
        assert compiled.captures == 1


def test_compiled_equals_eager_under_every_stance() -> None:
    data = [np.random.default_rng(i).standard_normal((8, 4)).astype(np.float32)
            for i in range(4)]
    losses = {}
    for stance in ("eager", "default", "force_eager", "eager_then_compile",
                   "eager_on_recompile"):
        _, step = _training_step()
        run = step if stance == "eager" else rt.compile(step)
        with (rt.compiler.set_stance(stance) if stance != "eager" else warnings.catch_warnings()):
            losses[stance] = [float(run(rt.tensor(d))) for d in data]
    for stance, values in losses.items():
        np.testing.assert_allclose(values, losses["eager"], rtol=1e-5, err_msg=stance)


def test_force_backend() -> None:
    _, step = _training_step()
    compiled = rt.compile(step)
    x = rt.randn(8, 4)
    with rt.compiler.set_stance(force_backend="eager"):
        compiled(x)
    assert compiled.captures == 0
    with rt.compiler.set_stance(force_backend="aot_eager"):
        compiled(x)
        compiled(x)
    assert compiled._forced["interpreter"].captures == 1 and compiled.captures == 0
    with pytest.raises(RuntimeError, match="non-default stance cannot have force_backend"):
        rt.compiler.set_stance("force_eager", force_backend="eager")
    with pytest.raises(Exception, match="Invalid backend"):
        rt.compiler.set_stance(force_backend="nope")


def test_bad_stances_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown stance 'bogus'"):
        rt.compiler.set_stance("bogus")
    with pytest.raises(NotImplementedError, match="skip_guard_eval_unsafe"):
        rt.compiler.set_stance(skip_guard_eval_unsafe=True)
    assert rt.compiler.stance().stance == "default"


def test_disable_makes_the_step_run_eagerly() -> None:
    @rt.compiler.disable
    def helper(t: rt.Tensor) -> rt.Tensor:
        return t * 2

    def step(x: rt.Tensor) -> rt.Tensor:
        return helper(x).sum()

    x = rt.randn(5)
    compiled = rt.compile(step)
    with pytest.warns(RuntimeWarning, match="helper is torch.compiler.disable'd"):
        out = compiled(x)
    assert float(out) == pytest.approx(float(x.sum()) * 2, rel=1e-6)
    assert helper(x).shape == (5,)  # outside a capture: as written
    strict_helper = rt.compiler.disable(lambda t: t * 1, reason="not traced")
    with pytest.raises(CompileError, match="disable'd: not traced"):
        rt.compile(lambda t: strict_helper(t).sum(), fullgraph=True)(x)


def test_is_compiling_inside_a_capture_only() -> None:
    assert not rt.compiler.is_compiling() and not rt.compiler.is_dynamo_compiling()
    assert not rt.compiler.is_exporting()

    def step(x: rt.Tensor) -> rt.Tensor:
        return x * (3.0 if rt.compiler.is_compiling() else 2.0)

    assert float(rt.compile(step)(rt.ones(1))[0]) == 3.0  # the capture's branch is the plan
    assert float(step(rt.ones(1))[0]) == 2.0


def test_reset_forgets_every_plan() -> None:
    _, step = _training_step()
    compiled = rt.compile(step)
    x = rt.randn(8, 4)
    compiled(x)
    assert compiled.captures == 1 and compiled.plan is not None
    rt.compiler.reset()
    assert compiled.captures == 0 and compiled.plan is None
    compiled(x)
    assert compiled.captures == 1


def test_list_backends_and_compile_alias() -> None:
    assert rt.compiler.list_backends() == ["cudagraphs", "inductor"]
    assert {"eager", "aot_eager", "inductor"} <= set(rt.compiler.list_backends(exclude_tags=()))
    f = rt.compiler.compile(lambda t: (t * 2).sum())
    assert float(f(rt.ones(3))) == 6.0
    assert rt.compiler.allow_in_graph(len) is len


def test_fork_rng_puts_the_state_back() -> None:
    rt.manual_seed(3)
    with rt.random.fork_rng():
        inside = rt.rand(4)
    after = rt.rand(4)
    np.testing.assert_array_equal(inside.numpy(), after.numpy())
    with rt.random.fork_rng(enabled=False):
        rt.rand(4)
    assert not np.array_equal(rt.rand(4).numpy(), after.numpy())
    with pytest.raises(RuntimeError, match="has no module of `xpu`"):
        with rt.random.fork_rng(device_type="xpu"):
            pass
    assert rt.random.initial_seed() == 3 and rt.random.get_rng_state().dtype is rt.uint8
    assert rt.default_generator is rt.random.default_generator  # torch.default_generator
    assert rt.default_generator.initial_seed() == 3
