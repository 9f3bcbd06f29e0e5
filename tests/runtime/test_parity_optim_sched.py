"""lr schedulers against torch 2.13: every scheduler's values over 50 steps (lr, momentum,
get_last_lr), resuming from a state dict, two schedulers chained on one optimizer, CyclicLR
(new here) and torch's warnings."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import runtime as rt
from runtime.optim import lr_scheduler as S


def _optimizer(lib: Any, name: str = "SGD") -> Any:
    groups = [{"params": [lib.ones(2, requires_grad=True)], "lr": 0.1},
              {"params": [lib.ones(1, requires_grad=True)], "lr": 0.2}]
    if name == "SGD":
        return lib.optim.SGD(groups, lr=0.1, momentum=0.9)
    return getattr(lib.optim, name)(groups, lr=0.1)


def _sched(lib: Any) -> Any:
    return lib.optim.lr_scheduler


CASES: dict[str, Callable[[Any, Any], Any]] = {
    "StepLR": lambda lib, o: _sched(lib).StepLR(o, 7, gamma=0.5),
    "MultiStepLR": lambda lib, o: _sched(lib).MultiStepLR(o, [3, 10, 10, 30], gamma=0.3),
    "ConstantLR": lambda lib, o: _sched(lib).ConstantLR(o, factor=0.25, total_iters=8),
    "LinearLR": lambda lib, o: _sched(lib).LinearLR(o, 0.1, 0.9, total_iters=20),
    "ExponentialLR": lambda lib, o: _sched(lib).ExponentialLR(o, 0.95),
    "PolynomialLR": lambda lib, o: _sched(lib).PolynomialLR(o, total_iters=30, power=2.0),
    "CosineAnnealingLR": lambda lib, o: _sched(lib).CosineAnnealingLR(o, 12, eta_min=1e-3),
    "CosineAnnealingWarmRestarts": lambda lib, o: _sched(lib).CosineAnnealingWarmRestarts(
        o, T_0=5, T_mult=2, eta_min=0.01),
    "LambdaLR": lambda lib, o: _sched(lib).LambdaLR(o, [lambda e: 0.9 ** e,
                                                         lambda e: 1 / (e + 1)]),
    "MultiplicativeLR": lambda lib, o: _sched(lib).MultiplicativeLR(o, lambda e: 0.97),
    "OneCycleLR": lambda lib, o: _sched(lib).OneCycleLR(o, max_lr=[1.0, 2.0], total_steps=60),
    "OneCycleLR3": lambda lib, o: _sched(lib).OneCycleLR(
        o, 1.0, epochs=6, steps_per_epoch=10, three_phase=True, anneal_strategy="linear"),
    "CyclicLR": lambda lib, o: _sched(lib).CyclicLR(o, 0.01, 0.1, step_size_up=4),
    "CyclicLR2": lambda lib, o: _sched(lib).CyclicLR(
        o, [0.01, 0.02], 0.1, step_size_up=3, step_size_down=5, mode="triangular2"),
    "CyclicLR3": lambda lib, o: _sched(lib).CyclicLR(o, 0.01, 0.1, step_size_up=3,
                                                      mode="exp_range", gamma=0.9),
    "SequentialLR": lambda lib, o: _sched(lib).SequentialLR(
        o, [_sched(lib).LinearLR(o, 0.1, total_iters=5), _sched(lib).ExponentialLR(o, 0.9)],
        milestones=[5]),
    "ChainedScheduler": lambda lib, o: _sched(lib).ChainedScheduler(
        [_sched(lib).StepLR(o, 4, 0.5), _sched(lib).ExponentialLR(o, 0.9)]),
    "ReduceLROnPlateau": lambda lib, o: _sched(lib).ReduceLROnPlateau(o, patience=2,
                                                                      factor=0.5, cooldown=1),
}


def _metric(i: int) -> float:
    return [5, 4, 4, 4, 4, 3, 3, 3, 3, 3][i % 10] + i // 10


def _run(lib: Any, name: str, opt_name: str = "SGD", steps: int = 50) -> np.ndarray:
    """Per step: get_last_lr(), each group's lr and momentum (or beta1)."""
    opt = _optimizer(lib, opt_name)
    sched = CASES[name](lib, opt)
    rows = []
    for i in range(steps):
        opt.step()
        sched.step(_metric(i)) if name == "ReduceLROnPlateau" else sched.step()
        rows.append([*sched.get_last_lr(),
                     *(g.get("momentum", g.get("betas", (0,))[0]) for g in opt.param_groups),
                     *(g["lr"] for g in opt.param_groups)])
    return np.array(rows, dtype=np.float64)


@pytest.mark.parametrize("name", list(CASES))
def test_values_match_torch(name: str) -> None:
    torch = pytest.importorskip("torch")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SequentialLR steps its first scheduler early
        np.testing.assert_allclose(_run(rt, name), _run(torch, name), rtol=1e-13, atol=1e-16)


@pytest.mark.parametrize("name", ["CyclicLR", "OneCycleLR"])
def test_beta1_cycles_as_torchs(name: str) -> None:
    torch = pytest.importorskip("torch")
    np.testing.assert_allclose(_run(rt, name, "Adam", 20), _run(torch, name, "Adam", 20),
                               rtol=1e-13)


def test_cyclic_by_hand() -> None:
    opt = _optimizer(rt)
    sched = S.CyclicLR(opt, base_lr=1.0, max_lr=3.0, step_size_up=2, step_size_down=1,
                       mode="triangular2", base_momentum=0.5, max_momentum=0.9)
    lrs, momenta = [], []
    for _ in range(7):
        lrs.append(sched.get_last_lr()[0])
        momenta.append(opt.param_groups[0]["momentum"])
        opt.step()
        sched.step()
    # up over 2 steps, down over 1; triangular2 halves the amplitude each cycle
    np.testing.assert_allclose(lrs, [1.0, 2.0, 3.0, 1.0, 1.5, 2.0, 1.0])
    np.testing.assert_allclose(momenta, [0.9, 0.7, 0.5, 0.9, 0.8, 0.7, 0.9])
    with pytest.raises(ValueError, match="mode is invalid and scale_fn is None"):
        S.CyclicLR(opt, 0.1, 1.0, mode="sawtooth")
    with pytest.raises(ValueError, match="must support momentum or beta1"):
        S.CyclicLR(rt.optim.Adagrad([rt.ones(1, requires_grad=True)]), 0.1, 1.0)


class _Halving:
    """A callable object: its attributes are its state, kept in a state dict."""

    def __init__(self) -> None:
        self.base = 0.5

    def __call__(self, x: float) -> float:
        return self.base ** x


def test_cyclic_custom_scale_fn_state_dict() -> None:
    opt = _optimizer(rt)
    fn = _Halving()
    sched = S.CyclicLR(opt, 0.1, 1.0, step_size_up=2, scale_fn=fn, scale_mode="iterations")
    for _ in range(3):
        opt.step()
        sched.step()
    assert sched.get_last_lr()[0] == pytest.approx(0.1 + 0.9 * 0.5 * 0.5 ** 3)
    fn.base = 0.25
    state = sched.state_dict()
    assert state["_scale_fn_custom"] == {"base": 0.25}
    other = _Halving()
    resumed = S.CyclicLR(_optimizer(rt), 0.1, 1.0, step_size_up=2, scale_fn=other,
                         scale_mode="iterations")
    resumed.load_state_dict(state)
    assert other.base == 0.25 and resumed.last_epoch == 3
    plain = S.CyclicLR(_optimizer(rt), 0.1, 1.0, scale_fn=lambda x: 1.0)
    assert plain.state_dict()["_scale_fn_custom"] is None


@pytest.mark.parametrize("name", ["StepLR", "CosineAnnealingLR", "OneCycleLR", "CyclicLR2",
                                  "LambdaLR", "CosineAnnealingWarmRestarts",
                                  "SequentialLR", "ReduceLROnPlateau"])
def test_state_dict_resumes_the_schedule(name: str) -> None:
    """20 steps, then a new optimizer and scheduler load both state dicts: the next 30
    steps give the values of an uninterrupted run."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        whole = _run(rt, name)
        opt = _optimizer(rt)
        sched = CASES[name](rt, opt)
        for i in range(20):
            opt.step()
            sched.step(_metric(i)) if name == "ReduceLROnPlateau" else sched.step()
        opt2 = _optimizer(rt)
        sched2 = CASES[name](rt, opt2)
        opt2.load_state_dict(opt.state_dict())
        sched2.load_state_dict(sched.state_dict())
        for i in range(20, 50):
            opt2.step()
            sched2.step(_metric(i)) if name == "ReduceLROnPlateau" else sched2.step()
            np.testing.assert_allclose(sched2.get_last_lr(), whole[i, :2], rtol=1e-13)


def test_two_schedulers_on_one_optimizer() -> None:
    """Each step multiplies in both factors (torch's chainable form), by hand and as torch."""
    def run(lib: Any) -> list[float]:
        opt = _optimizer(lib)
        a = lib.optim.lr_scheduler.StepLR(opt, 3, gamma=0.5)
        b = lib.optim.lr_scheduler.ExponentialLR(opt, 0.9)
        out = []
        for _ in range(8):
            opt.step()
            a.step()
            b.step()
            out.append(opt.param_groups[0]["lr"])
        return out

    expected = [0.1 * 0.5 ** ((i + 1) // 3) * 0.9 ** (i + 1) for i in range(8)]
    np.testing.assert_allclose(run(rt), expected, rtol=1e-12)
    torch = pytest.importorskip("torch")
    np.testing.assert_allclose(run(rt), run(torch), rtol=1e-14)


def test_resume_with_last_epoch() -> None:
    opt = _optimizer(rt)
    for group in opt.param_groups:
        group["initial_lr"] = group["lr"]
    sched = S.CosineAnnealingLR(opt, T_max=10, last_epoch=4)
    assert sched.get_last_lr()[0] == 0.1 and sched.last_epoch == 5  # lr as it was
    opt.step()
    sched.step()  # torch's recursive form: the current lr times the cosines' ratio
    ratio = (1 + np.cos(np.pi * 6 / 10)) / (1 + np.cos(np.pi * 5 / 10))
    assert sched.get_last_lr()[0] == pytest.approx(0.1 * ratio, rel=1e-12)
    torch = pytest.importorskip("torch")
    topt = _optimizer(torch)
    for group in topt.param_groups:
        group["initial_lr"] = group["lr"]
    tsched = torch.optim.lr_scheduler.CosineAnnealingLR(topt, T_max=10, last_epoch=4)
    topt.step()
    tsched.step()
    assert sched.get_last_lr() == tsched.get_last_lr()
    with pytest.raises(KeyError, match="param 'initial_lr' is not specified"):
        S.StepLR(_optimizer(rt), 2, last_epoch=3)


def _warned(lib: Any, scenario: int) -> list[str]:
    opt = _optimizer(lib)
    sched = lib.optim.lr_scheduler
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if scenario == 0:
            s = sched.StepLR(opt, 2)
            opt.step()
            s.step()
            opt.step()
            s.step()  # in order: no warning
        elif scenario == 1:
            s = sched.StepLR(opt, 2)
            opt.step()
            s.step(3)  # the deprecated epoch argument
        elif scenario == 2:
            sched.ExponentialLR(opt, 0.5).get_lr()  # outside a step
        elif scenario == 3:
            s = sched.ReduceLROnPlateau(opt)
            s.step(1.0, 3)
        else:
            s = sched.CosineAnnealingWarmRestarts(opt, 3)
            opt.step()
            s.step()
            s.step(1.5)  # fractional epochs are its documented use: no warning
    return [str(w.message) for w in caught]


@pytest.mark.parametrize("scenario", range(5))
def test_warnings_as_torchs(scenario: int) -> None:
    ours = _warned(rt, scenario)
    assert len(ours) == (0 if scenario in (0, 4) else 1)
    torch = pytest.importorskip("torch")
    assert ours == _warned(torch, scenario)


def _plain(value: Any) -> Any:
    """A state dict value as plain Python data (a Counter as a dict)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


@pytest.mark.parametrize("name", list(CASES))
def test_state_dict_contents_are_torchs(name: str) -> None:
    """After 7 steps, every entry of the state dict equals torch's (OneCycleLR's phase
    table, named _phases here and _schedule_phases in torch, apart)."""
    torch = pytest.importorskip("torch")
    states = []
    for lib in (rt, torch):
        opt = _optimizer(lib)
        sched = CASES[name](lib, opt)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for i in range(7):
                opt.step()
                sched.step(_metric(i)) if name == "ReduceLROnPlateau" else sched.step()
        state = _plain(sched.state_dict())
        for key in ("_phases", "_schedule_phases"):
            state.pop(key, None)
        states.append(state)
    assert states[0] == states[1]
