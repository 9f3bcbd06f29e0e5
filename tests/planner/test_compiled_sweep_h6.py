"""Compiled training steps users write (module and training-loop level): equal to eager mode,
with no fallback, found by the h6 sweep."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt

nn = rt.nn
F = rt.nn.functional


def _batches(n: int) -> list[tuple[rt.Tensor, rt.Tensor]]:
    r = np.random.default_rng(3)
    return [(rt.tensor(r.standard_normal((5, 6)).astype(np.float32)),
             rt.tensor(r.standard_normal((5, 3)).astype(np.float32))) for _ in range(n)]


def _bn_net() -> tuple[Any, Any]:
    rt.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.BatchNorm1d(8), nn.Linear(8, 3))
    return model, rt.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)


def test_module_to_float64_and_back_between_compiled_calls() -> None:
    """``model.to(float64)`` and back ``.to(float32)`` replace BatchNorm's running stats by new
    tensors: the plan captured before (float32, the old buffers) must not be replayed on the
    old objects (it was: the module's structure version did not change, so the buffers'
    identity was not re-checked, and the running stats stopped moving)."""
    runs = []
    for compiled in (False, True):
        model, opt = _bn_net()

        def step(x: rt.Tensor, y: rt.Tensor, model: Any = model, opt: Any = opt) -> Any:
            opt.zero_grad()
            dt = model[0].weight.dtype
            loss = F.mse_loss(model(x.to(dt)), y.to(dt))
            loss.backward()
            opt.step()
            return loss

        run = planner.compile(step) if compiled else step
        out = []
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for i, (x, y) in enumerate(_batches(6)):
                if i == 2:
                    model.to(rt.float64)
                if i == 4:
                    model.float()
                out.append(float(run(x, y)))
                out += [t.detach().numpy().astype(np.float64).copy()
                        for t in (*model.parameters(), *model.buffers())]
        runs.append(out)
    for got, want in zip(runs[1], runs[0], strict=True):
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6)


class _Configured(nn.Module):
    """A model whose forward reads its configuration from containers it keeps."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(6, 3)
        self.scales = [1.0, 2.0]
        self.cfg = {"mode": "plain", "k": 2.0}
        self.acts = ["tanh", "relu"]

    def forward(self, x: rt.Tensor) -> rt.Tensor:
        h = self.lin(x) * self.scales[0]
        if self.cfg["mode"] == "scaled":
            h = h * self.cfg["k"]
        for name in self.acts:
            h = getattr(F, name)(h)
        return h


def _configure(model: _Configured, what: str, i: int) -> None:
    if i == 2:
        if what == "list item":
            model.scales[0] = 3.0
        elif what == "dict item":
            model.cfg["mode"] = "scaled"
        else:
            model.acts.append("sigmoid")
    if i == 3 and what == "dict item":
        model.cfg["k"] = -1.5


def test_compiled_module_sees_its_config_containers_changed_in_place() -> None:
    """``planner.compile(model)``: a list or dict the forward reads (``self.cfg["mode"]``,
    ``self.scales[0]``, ``for a in self.acts``) changed in place between calls re-captures,
    as a compiled step over the same model does (the module's step walked no path: the plan
    kept the values of its capture, silently)."""
    for what in ("list item", "dict item", "list appended"):
        outs = []
        for compiled in (False, True):
            rt.manual_seed(0)
            model = _Configured()
            run = planner.compile(model) if compiled else model
            got = []
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                for i, (x, _) in enumerate(_batches(5)):
                    _configure(model, what, i)
                    got.append(run(x).detach().numpy())
            outs.append(got)
        for i, (got, want) in enumerate(zip(outs[1], outs[0], strict=True)):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=f"{what} {i}")


class _Counting(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(6, 3)
        self.calls = 0
        self.seen: list[rt.Tensor] = []

    def forward(self, x: rt.Tensor) -> rt.Tensor:
        self.calls += 1
        out = self.lin(x)
        self.seen.append(out.detach().sum())
        return out


def test_compiled_module_that_changes_its_attributes_runs_eagerly() -> None:
    """A forward that changes the module's own attributes (a call counter, a list it appends
    to) cannot be replayed: ``planner.compile(model)`` runs it eagerly and says so, as a
    compiled step calling the model does (the counter stayed at 1 and the list kept the
    capture's traced tensors)."""
    rt.manual_seed(0)
    model = _Counting()
    compiled = planner.compile(model)
    xs = [x for x, _ in _batches(3)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outs = [compiled(x) for x in xs]
    assert any("runs eagerly: the step changes self." in str(w.message) for w in caught)
    assert model.calls == 3
    for x, out, seen in zip(xs, outs, model.seen, strict=True):
        want = model.lin(x)
        np.testing.assert_allclose(out.detach().numpy(), want.detach().numpy(), rtol=1e-6)
        np.testing.assert_allclose(seen.item(), want.sum().item(), rtol=1e-5)


def _train(model: Any, opt: Any, cfg: dict[str, float], x: rt.Tensor, y: rt.Tensor) -> Any:
    opt.zero_grad()
    loss = F.mse_loss(model(x), y) * cfg["weight"]
    loss.backward()
    opt.step()
    return loss


def test_partial_step_guards_what_it_reads() -> None:
    """``planner.compile(functools.partial(train, model, opt, cfg))``: the function is walked
    with the partial's arguments as the step's objects, so ``cfg["weight"]`` and the model's
    ``self.scales[0]`` changed between calls re-capture (a partial has no code of its own: no
    path was guarded, and the plan replayed the values of its capture)."""
    import functools

    runs = []
    for compiled in (False, True):
        rt.manual_seed(0)
        model = _Configured()
        opt = rt.optim.SGD(model.parameters(), lr=0.1)
        cfg = {"weight": 1.0}
        step = functools.partial(_train, model, opt, cfg)
        run = planner.compile(step) if compiled else step
        got = []
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for i, (x, y) in enumerate(_batches(5)):
                if i == 2:
                    model.scales[0] = 3.0
                if i == 3:
                    cfg["weight"] = 2.0
                got.append(float(run(x, y)))
        runs.append(got)
    np.testing.assert_allclose(runs[1], runs[0], rtol=1e-5)


class _Trainer:
    """A training step as an object: ``planner.compile(trainer)``."""

    def __init__(self, model: Any, opt: Any) -> None:
        self.model, self.opt, self.weight = model, opt, 1.0

    def __call__(self, x: rt.Tensor, y: rt.Tensor) -> Any:
        self.opt.zero_grad()
        loss = F.mse_loss(self.model(x), y) * self.weight
        loss.backward()
        self.opt.step()
        return loss


def test_callable_object_step_guards_what_it_reads() -> None:
    """A callable object compiled is walked as its ``__call__`` bound to it: its
    ``self.weight`` changed between calls re-captures (it had no ``__code__``: no path was
    guarded, and the plan kept the captured weight)."""
    runs = []
    for compiled in (False, True):
        rt.manual_seed(0)
        model = nn.Linear(6, 3)
        trainer = _Trainer(model, rt.optim.SGD(model.parameters(), lr=0.1))
        run = planner.compile(trainer) if compiled else trainer
        got = []
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for i, (x, y) in enumerate(_batches(4)):
                if i == 2:
                    trainer.weight = 3.0
                got.append(float(run(x, y)))
        runs.append(got)
    np.testing.assert_allclose(runs[1], runs[0], rtol=1e-5)


MODEL: Any = None
OPT: Any = None
LOSS: Any = None


def _global_step(x: rt.Tensor, y: rt.Tensor) -> Any:
    OPT.zero_grad()
    loss = LOSS(MODEL(x), y)
    loss.backward()
    OPT.step()
    return loss


def test_a_global_model_optimizer_or_loss_rebound_captures_again() -> None:
    """A script that makes a new model and optimizer (a new fold, a restart) or picks another
    loss between calls of a step reading them as globals: the next call captures again (the
    plan held the first model's parameters, optimizer and loss, and kept training them)."""
    global MODEL, OPT, LOSS
    runs = []
    for compiled in (False, True):
        rt.manual_seed(0)
        MODEL = nn.Linear(6, 3)
        OPT = rt.optim.SGD(MODEL.parameters(), lr=0.1)
        LOSS = nn.MSELoss()
        run = planner.compile(_global_step) if compiled else _global_step
        got = []
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for i, (x, y) in enumerate(_batches(6)):
                if i == 2:
                    OPT = rt.optim.Adam(MODEL.parameters(), lr=0.1)
                if i == 3:
                    MODEL = nn.Linear(6, 3)
                    OPT = rt.optim.SGD(MODEL.parameters(), lr=0.1)
                if i == 4:
                    LOSS = F.l1_loss
                got.append(float(run(x, y)))
            got += [float(v) for v in MODEL.weight.detach().numpy().ravel()]
        runs.append(got)
        if compiled:
            assert run.captures == 4
    np.testing.assert_allclose(runs[1], runs[0], rtol=1e-5, atol=1e-6)


def _train_state(state: dict[str, Any], x: rt.Tensor, y: rt.Tensor) -> Any:
    state["opt"].zero_grad()
    loss = F.mse_loss(state["model"](x), y)
    loss.backward()
    state["opt"].step()
    return loss


def test_a_model_kept_in_a_dict_handed_on_by_star_args_is_guarded() -> None:
    """``planner.compile(lambda *batch: train(state, *batch))``: the model the step finds in
    ``state`` has its forward walked from that path, so ``self.scales[0]`` changed in place
    re-captures (the call through ``*batch`` bound no path and the plan kept the old value)."""
    runs = []
    for compiled in (False, True):
        rt.manual_seed(0)
        model = _Configured()
        state = {"model": model, "opt": rt.optim.SGD(model.parameters(), lr=0.1)}

        def step(*batch: rt.Tensor) -> Any:
            return _train_state(state, *batch)  # noqa: B023 - called in this iteration

        run = planner.compile(step) if compiled else step
        got = []
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for i, (x, y) in enumerate(_batches(4)):
                if i == 2:
                    model.scales[0] = 3.0
                got.append(float(run(x, y)))
        runs.append(got)
    np.testing.assert_allclose(runs[1], runs[0], rtol=1e-5)


def test_a_default_argument_the_step_reads_is_guarded() -> None:
    """``def step(x, y, cfg=CFG)``: what the step reads in a default argument the call leaves
    out (a dict, a list, an object's attribute) changed between calls re-captures (defaults
    were no path roots: the plan kept the captured value)."""

    class Cfg:
        weight = 1.0

    runs = []
    for compiled in (False, True):
        rt.manual_seed(0)
        model = nn.Linear(6, 3)
        opt = rt.optim.SGD(model.parameters(), lr=0.1)
        cfg, scales, obj = {"weight": 1.0}, [1.0], Cfg()

        def step(x: rt.Tensor, y: rt.Tensor, cfg: dict[str, float] = cfg,
                 scales: list[float] = scales, obj: Cfg = obj) -> Any:
            return _train(model, opt, cfg, x * scales[0] * obj.weight, y)  # noqa: B023

        run = planner.compile(step) if compiled else step
        got = []
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for i, (x, y) in enumerate(_batches(5)):
                if i == 1:
                    cfg["weight"] = 2.0
                if i == 2:
                    scales[0] = 0.5
                if i == 3:
                    obj.weight = -1.0
                got.append(float(run(x, y)))
        runs.append(got)
    np.testing.assert_allclose(runs[1], runs[0], rtol=1e-5)


def _hooked_runs(register: Any, remove_at: int | None = None) -> list[list[float]]:
    runs = []
    for compiled in (False, True):
        rt.manual_seed(0)
        model = nn.Sequential(nn.Linear(6, 4), nn.Tanh(), nn.Linear(4, 3))
        opt = rt.optim.SGD(model.parameters(), lr=0.1)

        def step(x: rt.Tensor, y: rt.Tensor, model: Any = model, opt: Any = opt) -> Any:
            opt.zero_grad()
            loss = F.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            return loss

        run = planner.compile(step) if compiled else step
        got = []
        handle = None
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for i, (x, y) in enumerate(_batches(5)):
                if i == 2:
                    handle = register(model)
                if i == remove_at and handle is not None:
                    handle.remove()
                got.append(float(run(x, y)))
        got += [float(v) for p in model.parameters() for v in p.detach().numpy().ravel()]
        runs.append(got)
    return runs


def test_a_gradient_hook_registered_or_removed_between_calls_captures_again() -> None:
    """``p.register_hook(fn)`` on a parameter between compiled calls (gradient clipping or
    scaling per tensor), and its handle removed later: the plan ran the hooks the leaves had
    when captured and kept doing so (a hook added later was silently skipped)."""
    def weight(model: Any) -> Any:
        return model[0].weight.register_hook(lambda g: g.clamp(-0.01, 0.01))

    def post(model: Any) -> Any:
        def halve(p: Any) -> None:
            p.grad.mul_(0.5)
        return model[2].bias.register_post_accumulate_grad_hook(halve)

    for register in (weight, post):
        for remove_at in (None, 4):
            got, want = _hooked_runs(register, remove_at)
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6,
                                       err_msg=f"{register.__name__} {remove_at}")


def test_hooks_that_keep_tensors_make_the_step_run_eagerly() -> None:
    """A forward hook keeping activations and a gradient hook keeping gradient norms (a
    feature extractor, a gradient logger): the capture's tensors must not leak into the
    user's lists (they did, shape-only, and later calls appended nothing); the step runs
    eagerly, saying so, and the lists hold every call's values as in eager mode."""
    kept = []
    for compiled in (False, True):
        rt.manual_seed(0)
        model = nn.Sequential(nn.Linear(6, 4), nn.Tanh(), nn.Linear(4, 3))
        opt = rt.optim.SGD(model.parameters(), lr=0.1)
        acts: list[rt.Tensor] = []
        norms: list[rt.Tensor] = []
        model[0].register_forward_hook(lambda mod, inp, out: acts.append(out.detach()))
        model[2].weight.register_hook(lambda g: norms.append(g.norm()))

        def step(x: rt.Tensor, y: rt.Tensor, model: Any = model, opt: Any = opt) -> Any:
            opt.zero_grad()
            loss = F.mse_loss(model(x), y)
            loss.backward()
            opt.step()
            return loss

        run = planner.compile(step) if compiled else step
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            losses = [float(run(x, y)) for x, y in _batches(3)]
        if compiled:
            assert any("runs eagerly" in str(w.message) for w in caught)
        kept.append((losses, [a.sum().item() for a in acts], [n.item() for n in norms]))
    for got, want in zip(kept[1], kept[0], strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-5)


def test_checkpointed_batchnorm_runs_eagerly_as_its_recomputation_updates_it_again() -> None:
    """A BatchNorm inside ``rt.utils.checkpoint`` updates its running statistics in the
    forward and again in the backward's recomputation (PyTorch's behaviour, and eager mode's):
    a compiled step ran the function once and counted each batch once; it runs eagerly now,
    saying so. A checkpointed function without state still compiles."""
    from runtime.utils.checkpoint import checkpoint

    for reentrant in (False, True):
        stats = []
        for compiled in (False, True):
            rt.manual_seed(0)
            lin, bn = nn.Linear(6, 4), nn.BatchNorm1d(4)

            def step(x: rt.Tensor, lin: Any = lin, bn: Any = bn,
                     reentrant: bool = reentrant) -> Any:
                out = checkpoint(lambda t: bn(lin(t)), x, use_reentrant=reentrant)
                loss = out.pow(2).sum()
                loss.backward()
                return loss

            run = planner.compile(step) if compiled else step
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                for x, _ in _batches(3):
                    run(x.requires_grad_())
            if compiled:
                assert any("checkpointed function updates state" in str(w.message)
                           for w in caught)
            stats.append([int(bn.num_batches_tracked), *bn.running_mean.numpy().tolist(),
                          *bn.running_var.numpy().tolist()])
        assert stats[0][0] == 6
        np.testing.assert_allclose(stats[1], stats[0], rtol=1e-5, atol=1e-7)

    rt.manual_seed(0)
    lin = nn.Linear(6, 4)

    def plain(x: rt.Tensor) -> Any:
        loss = checkpoint(lambda t: F.silu(lin(t)), x, use_reentrant=False).sum()
        loss.backward()
        return loss

    compiled_plain = planner.compile(plain)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for x, _ in _batches(2):
            compiled_plain(x)
    assert compiled_plain.captures == 1


def test_a_step_under_inference_mode_returns_inference_tensors() -> None:
    """An evaluation step written ``with rt.inference_mode(): return model(x)``: eager mode
    returns inference tensors (``is_inference()``, and saving one for backward raises, as
    PyTorch's); a replay, whose Python does not run the region, returned normal tensors."""
    rt.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 4), nn.BatchNorm1d(4))

    def evaluate(x: rt.Tensor) -> Any:
        model.eval()
        with rt.inference_mode():
            out = model(x)
            return out.softmax(1), {"logits": out}

    compiled = planner.compile(evaluate)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for x, _ in _batches(3):
            (got, extra), (want, _) = compiled(x), evaluate(x)
            assert got.is_inference() and extra["logits"].is_inference()
            assert want.is_inference()
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    w = rt.ones(4, requires_grad=True)
    with pytest.raises(RuntimeError, match="Inference tensors cannot be saved for backward"):
        (got * w).sum()
    assert compiled.captures == 1
