"""Issue 11's optimizers and schedules against PyTorch 2.13 over seeded random
hyperparameters: Adam/AdamW (amsgrad, maximize, foreach, weight decay), SGD (momentum,
dampening, nesterov), RMSprop (centered, momentum), Adagrad (lr_decay,
initial_accumulator_value), one or two param groups, a parameter without a gradient every
other step: parameters after each step and the state_dict's layout (state entries' names,
types, shapes and dtypes; param_groups) equal torch's. Every lr_scheduler issue 11 names
and the others torch has, with random arguments, one or two groups, SGD momentum or Adam
betas cycled: lr, momentum/betas and get_last_lr over 38 steps, the state_dict (keys and
values) and the warnings (a schedule stepped before any optimizer step)."""

from __future__ import annotations

import math
import random
import warnings
from typing import Any

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")

OPTIONS: dict[str, list[tuple[str, list[Any]]]] = {
    "Adam": [("lr", [1e-3, 0.1]), ("betas", [(0.9, 0.999), (0.5, 0.9)]), ("eps", [1e-8, 1e-3]),
             ("weight_decay", [0, 0.1]), ("amsgrad", [True, False]),
             ("maximize", [True, False]), ("foreach", [None, True, False]), ("fused", [None])],
    "SGD": [("momentum", [0, 0.9]), ("dampening", [0, 0.5]), ("weight_decay", [0, 0.1]),
            ("nesterov", [False, True]), ("maximize", [True, False]),
            ("foreach", [None, False])],
    "RMSprop": [("lr", [1e-2, 0.1]), ("alpha", [0.99, 0.5]), ("eps", [1e-8, 1e-3]),
                ("weight_decay", [0, 0.1]), ("momentum", [0, 0.9]), ("centered", [True, False]),
                ("maximize", [True, False]), ("foreach", [None, False])],
    "Adagrad": [("lr", [1e-2, 0.1]), ("lr_decay", [0, 0.1]), ("weight_decay", [0, 0.1]),
                ("initial_accumulator_value", [0, 0.5]), ("eps", [1e-10, 1e-3]),
                ("maximize", [True, False]), ("foreach", [None, False])],
}
OPTIONS["AdamW"] = OPTIONS["Adam"]


def _hyper(r: random.Random, name: str) -> dict[str, Any]:
    kw = {k: r.choice(v) for k, v in OPTIONS[name] if r.random() < 0.5}
    if name == "SGD":
        kw["lr"] = r.choice([0.1, 0.01])
        if kw.get("nesterov"):
            kw.update(momentum=0.9, dampening=0)
    return kw


def _layout(state_dict: dict[str, Any]) -> tuple[Any, Any]:
    def entry(v: Any) -> Any:
        if not hasattr(v, "shape"):
            return type(v).__name__, v
        return type(v).__name__, tuple(v.shape), str(v.dtype).split(".")[-1]
    return ({k: {n: entry(v) for n, v in s.items()} for k, s in state_dict["state"].items()},
            state_dict["param_groups"])


def _train(lib: Any, name: str, kw: dict[str, Any], init: list[np.ndarray],
           grads: list[list[np.ndarray]], two_groups: bool, skip_first: bool) -> Any:
    ps = [lib.nn.Parameter(lib.tensor(a.copy())) for a in init]
    groups = [{"params": ps[:1]}, {"params": ps[1:], "lr": 0.05}] if two_groups else ps
    opt = getattr(lib.optim, name)(groups, **kw)
    trace = []
    for step, g in enumerate(grads):
        for j, (p, gj) in enumerate(zip(ps, g, strict=True)):
            p.grad = None if skip_first and j == 0 and step % 2 else lib.tensor(gj)
        opt.step()
        trace.append([p.detach().numpy().copy() for p in ps])
    return trace, _layout(opt.state_dict())


@pytest.mark.parametrize("seed", range(4))
def test_optimizers_match_torch(seed: int) -> None:
    r = random.Random(f"optim{seed}")
    for i in range(40):
        name = r.choice(sorted(OPTIONS))
        kw = _hyper(r, name)
        shapes = [tuple(r.randint(1, 3) for _ in range(r.randint(0, 2)))
                  for _ in range(r.randint(1, 3))]
        rng = np.random.default_rng(i)
        init = [rng.standard_normal(s) for s in shapes]
        grads = [[rng.standard_normal(s) for s in shapes] for _ in range(4)]
        two, skip = r.random() < 0.3 and len(shapes) > 1, r.random() < 0.2
        want = _train(torch, name, kw, init, grads, two, skip)
        got = _train(rt, name, kw, init, grads, two, skip)
        what = f"{name}({kw}) {shapes} two groups {two}"
        for a, b in zip(want[0], got[0], strict=True):
            for x, y in zip(a, b, strict=True):
                np.testing.assert_allclose(y, x, rtol=1e-9, atol=1e-12, err_msg=what)
        assert got[1] == want[1], what


@pytest.mark.parametrize("name", ["Adam", "AdamW", "SGD", "RMSprop", "Adagrad", "NAdam",
                                  "RAdam", "Adamax", "ASGD", "Rprop", "Adadelta"])
def test_tensor_lr_checks(name: str) -> None:
    for kw in ({"lr": [0.1, 0.2]}, {"lr": [0.1, 0.2], "foreach": True},
               {"lr": 0.1, "foreach": True}):
        texts = []
        for lib in (torch, rt):
            args = dict(kw, lr=lib.tensor(kw["lr"]))
            try:
                getattr(lib.optim, name)([lib.nn.Parameter(lib.ones(2))], **args)
                texts.append("")
            except ValueError as e:
                texts.append(str(e))
        assert texts[1] == texts[0], kw


SCHEDULE_ARGS = {
    "StepLR": lambda r: {"step_size": r.randint(1, 5), "gamma": r.choice([0.1, 0.5])},
    "MultiStepLR": lambda r: {"milestones": sorted(r.sample(range(1, 20), r.randint(1, 3)))
                              if r.random() < 0.8 else [5, 3, 5], "gamma": 0.1},
    "CosineAnnealingLR": lambda r: {"T_max": r.randint(1, 10), "eta_min": r.choice([0, 1e-3])},
    "LambdaLR": lambda r: {"lr_lambda": r.choice(["lambda e: 0.95 ** e",
                                                  "[lambda e: 0.9 ** e, lambda e: 1 / (e + 1)]"])},
    "MultiplicativeLR": lambda r: {"lr_lambda": "lambda e: 0.9"},
    "LinearLR": lambda r: {"start_factor": r.choice([1 / 3, 0.1, 1.0]),
                           "end_factor": r.choice([1.0, 0.5]), "total_iters": r.randint(1, 8)},
    "ExponentialLR": lambda r: {"gamma": r.choice([0.9, 0.5])},
    "ConstantLR": lambda r: {"factor": r.choice([1 / 3, 0.5]), "total_iters": r.randint(1, 8)},
    "PolynomialLR": lambda r: {"total_iters": r.randint(1, 10), "power": r.choice([1.0, 2.0])},
    "CosineAnnealingWarmRestarts": lambda r: {"T_0": r.randint(1, 6), "T_mult": r.choice([1, 2]),
                                              "eta_min": r.choice([0, 1e-3])},
    "OneCycleLR": lambda r: dict(
        {"max_lr": r.choice([0.1, 1.0, [0.1, 0.2]])},
        **({"total_steps": 40} if r.random() < 0.7 else {"epochs": 4, "steps_per_epoch": 10}),
        **{k: r.choice(v) for k, v in (
            ("pct_start", [0.3, 0.1, 0.5]), ("anneal_strategy", ["cos", "linear"]),
            ("cycle_momentum", [True, False]), ("base_momentum", [0.85, 0.5]),
            ("max_momentum", [0.95, 0.9]), ("div_factor", [25.0, 10.0]),
            ("final_div_factor", [1e4, 10.0]), ("three_phase", [False, True]))
           if r.random() < 0.5}),
    "CyclicLR": lambda r: dict(
        {"base_lr": r.choice([0.01, [0.01, 0.02]]), "max_lr": r.choice([0.1, 1.0])},
        **{k: r.choice(v) for k, v in (
            ("step_size_up", [3, 5]), ("step_size_down", [None, 2]),
            ("mode", ["triangular", "triangular2", "exp_range"]), ("gamma", [1.0, 0.9]),
            ("scale_mode", ["cycle", "iterations"]), ("cycle_momentum", [True, False]),
            ("base_momentum", [0.8]), ("max_momentum", [0.9])) if r.random() < 0.5}),
    "ReduceLROnPlateau": lambda r: {k: r.choice(v) for k, v in (
        ("mode", ["min", "max"]), ("factor", [0.1, 0.5]), ("patience", [0, 2, 10]),
        ("threshold", [1e-4, 0.1]), ("threshold_mode", ["rel", "abs"]), ("cooldown", [0, 2]),
        ("min_lr", [0, 0.01, [0.01, 0.001]]), ("eps", [1e-8, 0.01])) if r.random() < 0.5},
}
CHAINABLE = ["StepLR", "MultiStepLR", "CosineAnnealingLR", "LambdaLR", "MultiplicativeLR",
             "LinearLR", "ExponentialLR", "ConstantLR", "PolynomialLR"]


def _schedule(lib: Any, opt: Any, name: str, kw: dict[str, Any]) -> Any:
    kw = {k: eval(v) if k == "lr_lambda" else v for k, v in kw.items()}  # noqa: S307
    return getattr(lib.optim.lr_scheduler, name)(opt, **kw)


def _run_schedule(lib: Any, spec: tuple[Any, ...]) -> tuple[str, Any, Any, Any]:
    name, kw, inner, opt_name, opt_kw, two, skip_opt = spec
    ps = [lib.nn.Parameter(lib.ones(2)), lib.nn.Parameter(lib.ones(3))]
    groups = [{"params": [ps[0]]}, {"params": [ps[1]], "lr": 0.05}] if two else ps
    log: list[Any] = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            opt = getattr(lib.optim, opt_name)(groups, **opt_kw)
            if inner:
                subs = [_schedule(lib, opt, n, k) for n, k in inner]
                sched = getattr(lib.optim.lr_scheduler, name)(opt, subs, **kw) \
                    if name == "SequentialLR" else \
                    getattr(lib.optim.lr_scheduler, name)(subs, optimizer=opt)
            else:
                sched = _schedule(lib, opt, name, kw)
            log.append([g["lr"] for g in opt.param_groups])
            for step in range(38):
                if not skip_opt:
                    for p in ps:
                        p.grad = lib.ones_like(p)
                    opt.step()
                if name == "ReduceLROnPlateau":
                    sched.step(math.sin(step) + (0 if step < 10 else 5))
                else:
                    sched.step()
                log.append([g["lr"] for g in opt.param_groups]
                           + [g.get("momentum", g.get("betas")) for g in opt.param_groups]
                           + [sched.get_last_lr()])
            state = {k: v for k, v in sched.state_dict().items()
                     if k not in ("lr_lambdas", "_schedulers", "_scale_fn_ref",
                                  "_scale_fn_custom")}
        texts = sorted({f"{w.category.__name__}: {w.message}" for w in caught})
        return "", log, state, texts
    except Exception as e:  # noqa: BLE001 - the texts are compared
        return f"{type(e).__name__}: {str(e).replace('torch', 'runtime')}", None, None, None


def _flat(entry: list[Any]) -> np.ndarray:
    out: list[float] = []
    for v in entry:
        out.extend(v if isinstance(v, (list, tuple)) else [] if v is None else [v])
    return np.array(out, dtype=float)


def _spec(r: random.Random) -> tuple[Any, ...]:
    name = r.choice([*SCHEDULE_ARGS, "SequentialLR", "ChainedScheduler"])
    inner = None
    kw: dict[str, Any] = {}
    if name in ("SequentialLR", "ChainedScheduler"):
        inner = [(n, SCHEDULE_ARGS[n](r)) for n in r.choices(CHAINABLE, k=r.randint(1, 3))]
        if name == "SequentialLR":
            kw = {"milestones": sorted(r.sample(range(1, 12), len(inner) - 1))}
    else:
        kw = SCHEDULE_ARGS[name](r)
    opt_name = r.choice(["SGD", "Adam", "AdamW"])
    opt_kw: dict[str, Any] = {"lr": r.choice([0.1, 1.0])}
    if opt_name == "SGD" and r.random() < 0.7:
        opt_kw["momentum"] = 0.9
    return name, kw, inner, opt_name, opt_kw, r.random() < 0.3, r.random() < 0.1


@pytest.mark.parametrize("seed", range(4))
def test_schedules_match_torch(seed: int) -> None:
    r = random.Random(f"sched{seed}")
    for _ in range(40):
        spec = _spec(r)
        want, got = _run_schedule(torch, spec), _run_schedule(rt, spec)
        what = str(spec)
        assert got[0] == want[0], what
        if want[1] is None:
            continue
        for a, b in zip(want[1], got[1], strict=True):
            np.testing.assert_allclose(_flat(b), _flat(a), rtol=1e-12, atol=1e-15, err_msg=what)
        assert set(got[2]) == set(want[2]), what
        for key, value in want[2].items():
            if isinstance(value, float):
                assert math.isclose(got[2][key], value, rel_tol=1e-12), (what, key)
            else:
                assert got[2][key] == value, (what, key)
        assert [t.replace("runtime", "torch") for t in got[3]] == want[3], what


def _schedule_outcome(lib: Any, code: str) -> str:
    scope = {"lib": lib, "S": lib.optim.lr_scheduler}
    setup = "p = lib.nn.Parameter(lib.ones(1)); o = lib.optim.SGD([p], lr=0.1, momentum=0.9)\n"
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            exec(setup + code, scope)  # noqa: S102 - the table below
    except Exception as e:  # noqa: BLE001 - the texts are compared
        return f"{type(e).__name__}: {e}".replace("torch", "X").replace("runtime", "X")
    texts = sorted({str(w.message) for w in caught})
    return repr((scope.get("r"), texts)).replace("torch", "X").replace("runtime", "X")


SCHEDULE_CODES = [
    "s = S.StepLR(o, 2, last_epoch=3)",
    "s = S.StepLR(o, 2); o.step(); s.step(); r = s.get_lr()",
    "s = S.StepLR(o, 2); o.step(); s.step(3); r = s.get_last_lr()",
    "s = S.StepLR(o, 0)",
    "s = S.StepLR(o, 2.5); o.step(); s.step(); r = s.get_last_lr()",
    "s = S.StepLR(3, 2)",
    "s = S.LambdaLR(o, [lambda e: 1, lambda e: 2])",
    "s = S.LambdaLR(o, 3)",
    "s = S.MultiStepLR(o, [5, 2]); r = s.milestones",
    "s = S.LinearLR(o, start_factor=0)",
    "s = S.LinearLR(o, start_factor=1.5)",
    "s = S.LinearLR(o, end_factor=2)",
    "s = S.ConstantLR(o, factor=1.5)",
    "s = S.ConstantLR(o, factor=-0.5)",
    "s = S.CosineAnnealingLR(o, T_max=0); o.step(); s.step(); r = s.get_last_lr()",
    "s = S.CosineAnnealingWarmRestarts(o, T_0=0)",
    "s = S.CosineAnnealingWarmRestarts(o, T_0=2, T_mult=0)",
    "s = S.CosineAnnealingWarmRestarts(o, T_0=2.5)",
    "s = S.CosineAnnealingWarmRestarts(o, T_0=2); o.step(); s.step(1.5); r = s.get_last_lr()",
    "s = S.CosineAnnealingWarmRestarts(o, T_0=2); o.step(); s.step(-1)",
    "s = S.OneCycleLR(o, max_lr=1.0)",
    "s = S.OneCycleLR(o, max_lr=1.0, total_steps=0)",
    "s = S.OneCycleLR(o, max_lr=1.0, total_steps=10, pct_start=1.5)",
    "s = S.OneCycleLR(o, max_lr=1.0, total_steps=10, anneal_strategy='foo')",
    "s = S.OneCycleLR(o, max_lr=[1.0, 2.0], total_steps=10)",
    "s = S.OneCycleLR(lib.optim.SGD([p], lr=0.1), max_lr=1.0, total_steps=10)",
    "s = S.OneCycleLR(lib.optim.Adam([p]), max_lr=1.0, total_steps=10); r = o.param_groups[0].get('betas')",
    "s = S.OneCycleLR(o, max_lr=1.0, total_steps=2); [(o.step(), s.step()) for _ in range(3)]",
    "s = S.CyclicLR(o, 0.1, 1.0, mode='foo')",
    "s = S.CyclicLR(lib.optim.SGD([p], lr=0.1), 0.1, 1.0)",
    "s = S.CyclicLR(lib.optim.Adam([p]), 0.1, 1.0); r = s.use_beta1",
    "s = S.CyclicLR(o, 0.1, 1.0); r = sorted(k for k in s.state_dict())",
    "s = S.SequentialLR(o, [S.StepLR(o, 2)], milestones=[3])",
    "s = S.SequentialLR(o, [S.StepLR(o, 2), S.StepLR(o, 3)], milestones=[])",
    "s = S.SequentialLR(o, [], milestones=[])",
    "s = S.SequentialLR(o, [S.StepLR(o, 2), S.StepLR(lib.optim.SGD([p], lr=1.0), 3)], milestones=[2])",
    "s = S.SequentialLR(o, [S.StepLR(o, 2), 3], milestones=[2])",
    "s = S.SequentialLR(o, [S.StepLR(o, 2), S.ReduceLROnPlateau(o)], milestones=[2])",
    "s = S.ChainedScheduler([S.StepLR(o, 2), S.StepLR(lib.optim.SGD([p], lr=1.0), 3)])",
    "s = S.ChainedScheduler([])",
    "s = S.ChainedScheduler([S.StepLR(o, 2), S.ReduceLROnPlateau(o)])",
    "s = S.ChainedScheduler([S.StepLR(o, 2)]); r = sorted(s.state_dict())",
    "s = S.SequentialLR(o, [S.StepLR(o, 2), S.ExponentialLR(o, 0.5)], milestones=[2]); r = sorted(s.state_dict())",
    "s = S.ReduceLROnPlateau(o, mode='foo')",
    "s = S.ReduceLROnPlateau(o, threshold_mode='foo')",
    "s = S.ReduceLROnPlateau(o, factor=1.0)",
    "s = S.ReduceLROnPlateau(o, min_lr=[0.1, 0.2])",
    "s = S.ReduceLROnPlateau(o); s.step(1.0); r = (s.get_last_lr(), s.num_bad_epochs, s.best, s.last_epoch)",
    "s = S.ReduceLROnPlateau(o); s.step(lib.tensor(1.0)); r = s.best",
    "s = S.ReduceLROnPlateau(o); s.step(1.0, 5); r = s.last_epoch",
    "s = S.ReduceLROnPlateau(o); r = sorted(s.state_dict())",
    "s = S.ReduceLROnPlateau(o, patience=0); [s.step(1.0) for _ in range(3)]; r = s.get_last_lr()",
    "s = S.PolynomialLR(o, total_iters=3, power=2.0); [(o.step(), s.step()) for _ in range(5)]; r = s.get_last_lr()",
    "s = S.ExponentialLR(o, 0.5); r = sorted(s.state_dict())",
    "s = S.LambdaLR(o, lambda e: 0.5); r = sorted(s.state_dict())",
    "s = S.MultiplicativeLR(o, lambda e: 0.5); o.step(); s.step(); r = s.get_last_lr()",
    "s = S.StepLR(o, 2); r = (s.last_epoch, s._step_count, s.base_lrs, o.param_groups[0]['initial_lr'])",
    "s = S.StepLR(o, 2); s2 = S.StepLR(o, 3); r = (s2.base_lrs)",
    "s = S.LRScheduler(o); r = 1",
    "s = S.StepLR(o, 2); o.step(); s.step(); sd = s.state_dict(); s2 = S.StepLR(o, 5); s2.load_state_dict(sd); r = (s2.step_size, s2.last_epoch)",
]


@pytest.mark.parametrize("code", SCHEDULE_CODES)
def test_schedule_arguments_and_api_match_torch(code: str) -> None:
    assert _schedule_outcome(rt, code) == _schedule_outcome(torch, code)


@pytest.mark.parametrize("name", ["Adam", "AdamW", "RMSprop", "Adamax", "NAdam", "RAdam",
                                  "ASGD", "Adadelta", "Rprop"])
def test_capturable_on_the_cpu_is_torchs_assertion(name: str) -> None:
    texts = []
    for lib in (torch, rt):
        p = lib.nn.Parameter(lib.ones(2))
        opt = getattr(lib.optim, name)([p], capturable=True)
        opt.step()  # no gradient: nothing checked
        p.grad = lib.ones(2)
        with pytest.raises(AssertionError) as info:
            opt.step()
        texts.append(str(info.value))
    assert texts[1] == texts[0]
