"""planner.compile(module) and rt.compile: torch.compile's OptimizedModule API (``_orig_mod``,
parameters, modes, state dict, attribute forwarding, repr) over a compiled forward and
backward, and torch.compile's signature, defaults and errors."""

from __future__ import annotations

import copy
import warnings
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt
import runtime.nn as nn
import runtime.nn.functional as F
from planner.optimized_module import OptimizedModule
from planner.torch_api import InvalidBackend

torch = pytest.importorskip("torch")


@pytest.fixture(autouse=True)
def _no_fallback() -> Iterator[None]:
    with warnings.catch_warnings():
        # an eager fallback or an unfused plan warns (RuntimeWarning): an error here
        warnings.simplefilter("error", RuntimeWarning)
        yield


def _mlp(lib: Any) -> Any:
    model = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.ReLU(), lib.nn.Dropout(0.0),
                              lib.nn.Linear(4, 2))
    model.hidden = 4
    return model


def _weights_from(torch_model: Any, model: Any) -> None:
    with rt.no_grad():
        for p, q in zip(model.parameters(), torch_model.parameters(), strict=True):
            p.copy_(rt.tensor(q.detach().numpy()))


# --- the module API, against torch.compile's ---------------------------------------------------
def test_wrapper_is_a_module_holding_the_original() -> None:
    model = _mlp(rt)
    cm = planner.compile(model)
    tm = torch.compile(_mlp(torch))
    assert isinstance(cm, nn.Module) and isinstance(cm, OptimizedModule)
    assert type(cm).__name__ == type(tm).__name__
    assert cm._orig_mod is model
    assert [n for n, _ in cm.named_children()] == [n for n, _ in tm.named_children()]
    assert [n for n, _ in cm.named_modules()] == [n for n, _ in tm.named_modules()]
    assert repr(cm) == repr(tm)
    assert len(cm) == len(tm) == 4
    with pytest.raises(TypeError, match=r"^Linear does not support len\(\)$"):
        len(planner.compile(nn.Linear(2, 2)))


def test_parameters_are_the_same_objects_and_state_dict_keys_as_torch() -> None:
    model = _mlp(rt)
    cm = planner.compile(model)
    tm = torch.compile(_mlp(torch))
    assert all(a is b for a, b in zip(cm.parameters(), model.parameters(), strict=True))
    assert [n for n, _ in cm.named_parameters()] == [n for n, _ in tm.named_parameters()]
    assert list(cm.state_dict()) == list(tm.state_dict())
    assert list(cm.state_dict())[0] == "_orig_mod.0.weight"
    assert cm.state_dict()["_orig_mod.0.weight"] is not None


def test_load_state_dict_round_trip_and_torch_error() -> None:
    rt.manual_seed(0)
    source, target = planner.compile(_mlp(rt)), planner.compile(_mlp(rt))
    result = target.load_state_dict(source.state_dict())
    assert repr(result) == repr(torch.compile(_mlp(torch)).load_state_dict(
        torch.compile(_mlp(torch)).state_dict()))
    for a, b in zip(target.parameters(), source.parameters(), strict=True):
        np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())
    # the plain module's keys lack the prefix: torch's error, word for word
    tm = torch.compile(_mlp(torch))
    with pytest.raises(RuntimeError) as want:
        tm.load_state_dict(tm._orig_mod.state_dict())
    with pytest.raises(RuntimeError) as got:
        target.load_state_dict(target._orig_mod.state_dict())
    assert str(got.value) == str(want.value)


def test_train_eval_flags_are_the_original_modules() -> None:
    model = _mlp(rt)
    cm = planner.compile(model)
    tm = torch.compile(_mlp(torch))
    for mode in (False, True):
        assert cm.train(mode) is cm and tm.train(mode) is tm
        assert cm.training is model.training is mode is tm.training
        assert all(m.training is mode for m in model.modules())
    assert cm.eval() is cm and not model[2].training
    model.train()
    assert cm.training


def test_attributes_read_and_written_through_to_the_original() -> None:
    model = _mlp(rt)
    cm = planner.compile(model)
    tm = torch.compile(_mlp(torch))
    assert cm.hidden == tm.hidden == 4
    cm.hidden = 7
    tm.hidden = 7
    assert model.hidden == 7 and "hidden" not in cm.__dict__ and "hidden" not in tm.__dict__
    cm.extra = "x"
    assert model.extra == "x"
    del cm.extra
    assert not hasattr(model, "extra")
    with pytest.raises(AttributeError) as want:
        tm.nonexistent  # noqa: B018
    with pytest.raises(AttributeError) as got:
        cm.nonexistent  # noqa: B018
    assert str(got.value) == str(want.value) == "'Sequential' object has no attribute " \
        "'nonexistent'"
    assert "hidden" in dir(cm) and "_orig_mod" in dir(cm)
    with pytest.raises(TypeError, match="'OptimizedModule' object is not subscriptable"):
        cm[0]  # as torch's: indexing is the module's (cm._orig_mod[0])
    with pytest.raises(TypeError, match="'OptimizedModule' object is not subscriptable"):
        tm[0]


def test_to_zero_grad_and_requires_grad_reach_the_original() -> None:
    model = _mlp(rt)
    cm = planner.compile(model)
    assert cm.double() is cm and model[0].weight.dtype == rt.float64
    assert cm.to(rt.float32) is cm and model[0].weight.dtype == rt.float32
    cm(rt.randn(2, 3)).sum().backward()
    assert all(p.grad is not None for p in model.parameters())
    cm.zero_grad()
    assert all(p.grad is None for p in model.parameters())
    cm.requires_grad_(False)
    assert not any(p.requires_grad for p in model.parameters())


def test_forward_is_the_compiled_step_and_inspection_reaches_it() -> None:
    model = _mlp(rt)
    cm = planner.compile(model)
    x = rt.randn(5, 3)
    assert isinstance(cm.forward, planner.CompiledStep) and cm.forward.fn is model
    out = cm(x)
    assert out.grad_fn.name() == "CompiledFunctionBackward"
    assert cm.forward.captures == cm.captures == 1
    assert cm.plan is cm.forward.plan is not None
    assert cm.forward.lower(x).steps
    assert "replays a cached plan" in planner.explain(cm, x)
    np.testing.assert_allclose(cm.forward(x).detach().numpy(), model(x).detach().numpy(),
                               rtol=1e-6)


def test_hooks_of_the_original_run_inside_of_the_wrapper_outside() -> None:
    model = _mlp(rt)
    cm = planner.compile(model)
    seen: list[str] = []
    model.register_forward_hook(lambda m, a, out: seen.append("inner") or out * 2)
    cm.register_forward_hook(lambda m, a, out: seen.append("outer") or None)
    x = rt.randn(2, 3)
    out = cm(x)
    assert seen == ["inner", "outer"]  # torch's order
    seen.clear()
    with rt.no_grad():
        want = model(x)
    np.testing.assert_allclose(out.detach().numpy(), want.numpy(), rtol=1e-6)
    assert seen == ["inner"]


def test_deepcopy_compiles_the_copy() -> None:
    model = _mlp(rt)
    cm = planner.compile(model, backend="interpreter")
    twin = copy.deepcopy(cm)
    assert isinstance(twin, OptimizedModule) and twin._orig_mod is not model
    assert twin.forward is not cm.forward and twin.forward.backend == "interpreter"
    x = rt.randn(3, 3)
    np.testing.assert_allclose(twin(x).detach().numpy(), cm(x).detach().numpy(), rtol=1e-6)


def test_pickle_compiles_the_copy_with_the_same_options() -> None:
    import pickle

    cm = planner.compile(_mlp(rt), backend="interpreter", recompile_limit=2)
    twin = pickle.loads(pickle.dumps(cm))
    assert isinstance(twin, OptimizedModule) and twin.forward.backend == "interpreter"
    assert twin.forward.recompile_limit == 2 and twin.hidden == 4
    x = rt.randn(3, 3)
    np.testing.assert_allclose(twin(x).detach().numpy(), cm(x).detach().numpy(), rtol=1e-6)


def test_a_hook_added_later_is_guarded() -> None:
    model = _mlp(rt)
    cm = planner.compile(model)
    x = rt.randn(2, 3)
    first = cm(x).detach().numpy()
    cm(x)
    assert cm.captures == 1
    handle = model.register_forward_hook(lambda m, a, out: out + 1)
    np.testing.assert_allclose(cm(x).detach().numpy(), first + 1, rtol=1e-6)
    assert cm.captures == 2
    handle.remove()
    np.testing.assert_allclose(cm(x).detach().numpy(), first, rtol=1e-6)


def test_called_within_a_compiled_training_step() -> None:
    rt.manual_seed(0)
    eager = _classifier()
    rt.manual_seed(0)
    model = rt.compile(_classifier())
    rng = np.random.default_rng(1)
    x = rt.tensor(rng.standard_normal((8, 6)).astype(np.float32))
    y = rt.tensor(rng.integers(0, 4, 8))

    def make(m: Any) -> Any:
        opt = rt.optim.SGD(m.parameters(), lr=0.1)

        def step(x: Any, y: Any) -> Any:
            opt.zero_grad()
            loss = F.cross_entropy(m(x), y)
            loss.backward()
            opt.step()
            return loss
        return step

    step, want_step = planner.compile(make(model)), make(eager)
    got = [float(step(x, y)) for _ in range(3)]
    want = [float(want_step(x, y)) for _ in range(3)]
    np.testing.assert_allclose(got, want, rtol=1e-5)
    assert step.captures == 1 and model.captures == 0  # inlined into the step's capture


def test_lazy_module() -> None:
    cm = rt.compile(nn.Sequential(nn.LazyLinear(4), nn.ReLU()))
    for _ in range(3):
        cm(rt.randn(2, 5)).sum().backward()
    assert [tuple(p.shape) for p in cm.parameters()] == [(4, 5), (4,)]
    assert cm.captures == 1


class _Named(nn.Module):
    """A module whose attributes share the compiled step's names."""

    def __init__(self) -> None:
        super().__init__()
        self.layer = nn.Linear(2, 2)
        self.fn = F.relu
        self.device = "cuda"
        self.plan = "mine"

    def forward(self, x: Any) -> Any:
        y = self.fn(self.layer(x)) + 100
        if self.plan == "break":
            return y * float(y.sum())  # a value read in Python: eager, saying so
        return y


def test_module_attributes_named_as_the_steps_are_the_modules() -> None:
    model = _Named()
    cm = planner.compile(model)
    x = rt.randn(3, 2)
    # the step called the module's ``fn`` (relu), not the module, silently: no + 100
    np.testing.assert_allclose(cm(x).detach().numpy(), model(x).detach().numpy(), rtol=1e-6)
    assert cm.forward.fn is model and cm.forward.device is None
    assert cm.fn is model.fn and cm.device == "cuda" and cm.plan == "mine"
    assert cm.captures == 1


def test_fallback_warning_names_the_module_class() -> None:
    model = _Named()
    model.plan = "break"
    cm = planner.compile(model)
    with pytest.warns(RuntimeWarning, match=r"^planner: _Named runs eagerly: ") as record:
        cm(rt.randn(3, 2))
    assert record[0].filename == __file__  # the caller's line, not the wrapper's
    cm.register_forward_hook(lambda m, a, out: None)  # a call through Module.__call__
    with pytest.warns(RuntimeWarning, match=r"^planner: _Named runs eagerly: "):
        cm(rt.randn(4, 2))


def test_forward_replaced_is_called_as_torchs() -> None:
    model = _mlp(rt)
    cm = planner.compile(model)
    tm = torch.compile(_mlp(torch))
    cm.forward = lambda x: x * 3
    tm.forward = lambda x: x * 3
    assert "forward" not in model.__dict__  # the wrapper's, not the module's
    assert float(cm(rt.ones(1))) == float(tm(torch.ones(1))) == 3.0


def test_global_hook_warns_as_torch() -> None:
    from runtime.nn.module import register_module_forward_hook

    cm = planner.compile(nn.Linear(2, 2))
    handle = register_module_forward_hook(lambda *a: None)
    try:
        with pytest.warns(UserWarning, match="global hooks on modules"):
            cm(rt.randn(1, 2))
    finally:
        handle.remove()


def test_function_still_gives_a_compiled_step() -> None:
    def step(x: Any) -> Any:
        return (x * 2).sum()

    compiled = planner.compile(step)
    assert isinstance(compiled, planner.CompiledStep) and compiled.__name__ == "step"
    assert float(compiled(rt.ones(3))) == 6.0


# --- training and evaluation ----------------------------------------------------------------
def _classifier() -> Any:
    return nn.Sequential(nn.Linear(6, 16), nn.GELU(), nn.LayerNorm(16), nn.Linear(16, 4))


def _train(model: Any, data: list[tuple[Any, Any]]) -> tuple[list[float], Any]:
    opt = rt.optim.AdamW(model.parameters(), lr=1e-2, weight_decay=0.1)
    losses = []
    for x, y in data:
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(float(loss))
    return losses, model


@pytest.mark.parametrize("backend", ["inductor", "aot_eager"])
def test_training_loop_equals_eager(backend: str) -> None:
    rng = np.random.default_rng(0)
    data = [(rt.tensor(rng.standard_normal((8, 6)).astype(np.float32)),
             rt.tensor(rng.integers(0, 4, 8))) for _ in range(5)]
    rt.manual_seed(0)
    eager = _classifier()
    rt.manual_seed(0)
    model = _classifier()
    model = rt.compile(model, backend=backend)
    want, _ = _train(eager, data)
    got, _ = _train(model, data)
    np.testing.assert_allclose(got, want, rtol=1e-5)
    for a, b in zip(model.parameters(), eager.parameters(), strict=True):
        np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), rtol=1e-5,
                                   atol=1e-7)
    assert model.captures == 1  # every step replayed the plan
    assert bool(model.plan.kernels) == (backend == "inductor")  # fused, or the interpreter


def test_eval_under_no_grad() -> None:
    rt.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Dropout(0.5), nn.Linear(8, 2))
    cm = rt.compile(model)
    x = rt.randn(6, 4)
    cm(x).sum().backward()  # training: batch statistics, dropout
    cm.eval()
    with rt.no_grad():
        out = cm(x)
        want = model(x)
    assert not out.requires_grad and out.grad_fn is None
    np.testing.assert_allclose(out.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)
    with rt.no_grad():
        np.testing.assert_allclose(cm(x).numpy(), want.numpy(), rtol=1e-5, atol=1e-6)


# --- rt.compile: torch.compile's signature ----------------------------------------------------
def test_signature_is_torchs() -> None:
    import inspect

    ours = inspect.signature(rt.compile).parameters
    theirs = inspect.signature(torch.compile).parameters
    assert list(ours) == list(theirs)
    assert [(p.kind, p.default) for p in ours.values()] == \
        [(p.kind, p.default) for p in theirs.values()]


def test_disable_returns_the_model_unchanged() -> None:
    model = nn.Linear(2, 2)

    def f(x: Any) -> Any:
        return x

    assert rt.compile(model, disable=True) is model
    assert rt.compile(f, disable=True) is f
    assert rt.compile(disable=True)(f) is f


def test_decorator_forms() -> None:
    @rt.compile
    def plain(x: Any) -> Any:
        return (x + 1).sum()

    @rt.compile(backend="eager", fullgraph=True)
    def with_args(x: Any) -> Any:
        return (x + 1).sum()

    assert isinstance(plain, planner.CompiledStep) and plain.backend == "auto"
    assert plain.__name__ == "plain" and float(plain(rt.ones(2))) == 4.0
    assert isinstance(with_args, planner.CompiledStep) and with_args.backend == "eager"
    assert with_args.fullgraph and float(with_args(rt.ones(2))) == 4.0
    assert isinstance(rt.compile()(nn.Linear(2, 2)), OptimizedModule)
    with pytest.raises(RuntimeError, match="^Model can't be None$"):
        rt.compile()(None)


@pytest.mark.parametrize(("backend", "planned"), [
    (None, "auto"), ("inductor", "auto"), ("cudagraphs", "auto"), ("aot_eager", "interpreter"),
    ("eager", "eager")])
def test_backend_names_map_onto_the_planners(backend: str | None, planned: str) -> None:
    cm = rt.compile(nn.Linear(2, 2), backend=backend)
    torch.compile(torch.nn.Linear(2, 2), backend=backend)  # a name torch accepts
    assert cm.forward.backend == planned


def _same_error(call: Callable[[Any], Any]) -> str:
    """Run ``call`` with torch and with runtime: the same exception type and text."""
    with pytest.raises(Exception) as want:  # noqa: PT011 - compared below
        call(torch)
    with pytest.raises(Exception) as got:  # noqa: PT011
        call(rt)
    assert isinstance(got.value, RuntimeError) == isinstance(want.value, RuntimeError)
    assert str(got.value) == str(want.value)
    return str(got.value)


def test_unknown_backend_mode_and_both_mode_and_options_are_torchs_errors() -> None:
    text = _same_error(lambda lib: lib.compile(lib.nn.Linear(2, 2), backend="nope"))
    assert text.startswith("Invalid backend: 'nope'")
    with pytest.raises(InvalidBackend):
        rt.compile(nn.Linear(2, 2), backend="nope", disable=True)  # checked first, as torch
    _same_error(lambda lib: lib.compile(backend="nope")(lib.nn.Linear(2, 2)))
    _same_error(lambda lib: lib.compile(lib.nn.Linear(2, 2), mode="nope"))
    _same_error(lambda lib: lib.compile(lib.nn.Linear(2, 2), mode="default", options={}))
    _same_error(lambda lib: lib.compile(3))


@pytest.mark.parametrize("mode", ["max-autotune", "max-autotune-no-cudagraphs", "lite"])
def test_other_modes_are_refused_not_ignored(mode: str) -> None:
    torch.compile(torch.nn.Linear(2, 2), mode=mode)  # torch knows it
    with pytest.raises(RuntimeError, match=f"mode={mode!r} is not supported"):
        rt.compile(nn.Linear(2, 2), mode=mode)


def test_modes_accepted() -> None:
    for mode in (None, "default"):
        assert isinstance(rt.compile(nn.Linear(2, 2), mode=mode), OptimizedModule)
    assert isinstance(rt.compile(nn.Linear(2, 2), options={}), OptimizedModule)


def test_cuda_graph_modes_and_options_reach_the_planner() -> None:
    """mode="reduce-overhead", options={"triton.cudagraphs": ...} and backend="cudagraphs"
    say whether a GPU plan replays as a CUDA graph (planner.cuda_graph)."""
    def graphs(**kwargs: Any) -> bool:
        return rt.compile(lambda x: x * 2, **kwargs).cuda_graphs

    assert graphs(mode="reduce-overhead") is True
    assert graphs(backend="cudagraphs") is True
    assert graphs(options={"triton.cudagraphs": False}) is False
    assert graphs(options={"triton.cudagraphs": True}) is True
    with pytest.raises(TypeError, match=r"options\['triton.cudagraphs'\] must be a bool"):
        rt.compile(nn.Linear(2, 2), options={"triton.cudagraphs": 1})


def test_options_refused_and_other_backends() -> None:
    with pytest.raises(RuntimeError, match=r"Inductor options are not supported \(got "
                                           r"\['max_autotune'\];"):
        rt.compile(nn.Linear(2, 2), options={"max_autotune": True})
    with pytest.raises(RuntimeError, match="backend 'tvm' is not supported"):
        rt.compile(nn.Linear(2, 2), backend="tvm")
    with pytest.raises(TypeError, match="backend must be a backend name"):
        rt.compile(nn.Linear(2, 2), backend=lambda gm, inputs: gm)
    with pytest.raises(RuntimeError, match="shapes_spec is not supported"):
        rt.compile(nn.Linear(2, 2), shapes_spec=object())


def test_options_pass_through() -> None:
    cm = rt.compile(nn.Linear(2, 2), fullgraph=True, dynamic=True, recompile_limit=3)
    assert cm.forward.fullgraph and cm.forward.dynamic is True
    assert cm.forward.recompile_limit == 3
    assert rt.compile(nn.Linear(2, 2)).forward.recompile_limit == 8  # torch's default
    assert planner.compile(nn.Linear(2, 2), backend="interpreter").forward.backend == \
        "interpreter"


def test_runtime_does_not_import_planner() -> None:
    import subprocess
    import sys

    code = "import sys, runtime; print('planner' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


def test_the_name_is_what_warnings_call_the_step() -> None:
    def step(x: Any) -> Any:
        return (x * 2).sum().item() + 1  # a graph break: the warning names the step

    compiled = rt.compile(step, name="my_step")
    with pytest.warns(RuntimeWarning, match="planner: my_step runs eagerly"):
        compiled(rt.ones(3))
    module = rt.compile(rt.nn.Linear(3, 1), name="my_model")
    assert module.forward.name == "my_model"
    with pytest.raises(TypeError, match="name must be a str"):
        rt.compile(step, name=3)
