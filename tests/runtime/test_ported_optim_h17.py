"""PyTorch 2.13's test/optim/test_lrscheduler.py, ported to runtime (``import runtime as
torch``): the TestLRScheduler bodies with its helpers (_test, _test_get_last_lr,
_test_with_epoch, _test_against_closed_form) inlined as functions over a fresh net and SGD.

Left out (outside this project's scope): torch.compile/dynamo variants, pickling of whole
schedulers, and CUDA."""

from __future__ import annotations

import math
import types
import warnings
from typing import Any

import pytest

import runtime as torch
import runtime.nn.functional as F
from runtime.nn import Parameter
from runtime.optim import SGD
from runtime.optim.lr_scheduler import (
    EPOCH_DEPRECATION_WARNING,
    ChainedScheduler,
    ConstantLR,
    CosineAnnealingLR,
    CyclicLR,
    ExponentialLR,
    LinearLR,
    LRScheduler,
    MultiStepLR,
    PolynomialLR,
    ReduceLROnPlateau,
    SequentialLR,
    StepLR,
)


class _SchedulerTestNet(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, 1, 1)
        self.conv2 = torch.nn.Conv2d(1, 1, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.conv2(F.relu(self.conv1(x)))


def _make_opt() -> Any:
    net = _SchedulerTestNet()
    return SGD([{"params": net.conv1.parameters()},
                {"params": net.conv2.parameters(), "lr": torch.tensor(0.5)}], lr=0.05)


@pytest.fixture
def opt() -> Any:
    return _make_opt()


def _close(expected: Any, actual: Any) -> None:
    torch.testing.assert_close(torch.as_tensor(actual, dtype=torch.float64),
                               torch.as_tensor(expected, dtype=torch.float64),
                               atol=1e-5, rtol=0)


def _check_warning_is_epoch_deprecation_warning(w: list, num_warnings: int = 1) -> None:
    assert len(w) == num_warnings
    for warning in w:
        assert len(warning.message.args) == 1
        assert warning.message.args[0] == EPOCH_DEPRECATION_WARNING


def _test(opt: Any, schedulers: Any, targets: list, epochs: int = 10) -> None:
    if isinstance(schedulers, LRScheduler):
        schedulers = [schedulers]
    for epoch in range(epochs):
        for param_group, target in zip(opt.param_groups, targets):
            _close(target[epoch], param_group["lr"])
        for scheduler in schedulers:
            scheduler.step()


def _test_get_last_lr(schedulers: Any, targets: list, epochs: int = 10) -> None:
    if isinstance(schedulers, LRScheduler):
        schedulers = [schedulers]
    optimizers = {scheduler.optimizer for scheduler in schedulers}
    for epoch in range(epochs):
        result = [scheduler.get_last_lr() for scheduler in schedulers]
        for optimizer in optimizers:
            optimizer.step()
        for scheduler in schedulers:
            scheduler.step()
        target = [[t[epoch] for t in targets]] * len(schedulers)
        for t, r in zip(target, result):
            _close(t, [float(x) for x in r])


def _test_with_epoch(opt: Any, schedulers: Any, targets: list, epochs: int = 10) -> None:
    if isinstance(schedulers, LRScheduler):
        schedulers = [schedulers]
    optimizers = {scheduler.optimizer for scheduler in schedulers}
    for epoch in range(epochs):
        for optimizer in optimizers:
            optimizer.step()
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            for scheduler in schedulers:
                scheduler.step(epoch)
            _check_warning_is_epoch_deprecation_warning(w, num_warnings=len(schedulers))
        for param_group, target in zip(opt.param_groups, targets):
            _close(target[epoch], param_group["lr"])


def test_error_when_getlr_has_epoch() -> None:
    class MyMultiStepLR(LRScheduler):
        def __init__(self, optimizer, gamma, milestones, last_epoch=-1):
            self.init_lr = [group["lr"] for group in optimizer.param_groups]
            self.gamma = gamma
            self.milestones = milestones
            super().__init__(optimizer, last_epoch)

        def get_lr(self, step):
            return [init_lr for init_lr in self.init_lr]

    optimizer = SGD([torch.rand(1)], lr=1)
    with pytest.raises(TypeError):
        MyMultiStepLR(optimizer, gamma=1, milestones=[10, 20])


def test_no_cyclic_references() -> None:
    import gc
    from runtime.optim.lr_scheduler import LambdaLR
    param = Parameter(torch.empty(10))
    optim = SGD([param], lr=0.5)
    scheduler = LambdaLR(optim, lambda epoch: 1.0)
    del scheduler
    assert len(gc.get_referrers(optim)) == 0, "Optimizer should contain no cyclic references"
    # torch's single gc.collect() here, repeated until it finds nothing: what earlier tests
    # left can take two collections (a ctypes array type, freed by the first, goes in the
    # second), and only the optimizer's garbage is counted below
    for _ in range(10):
        if gc.collect() == 0:
            break
    del optim
    assert gc.collect() == 0, "Optimizer should be garbage-collected on __del__"


def test_no_cyclic_references_in_step() -> None:
    import gc
    import weakref
    from runtime.optim.lr_scheduler import LambdaLR

    def run() -> Any:
        param = torch.empty(10, requires_grad=True)
        optim = SGD(params=[param], lr=0.5)
        scheduler = LambdaLR(optim, lambda epoch: 1.0)
        param.sum().backward()
        optim.step()
        scheduler.step()
        return weakref.ref(scheduler)

    gc.disable()
    try:
        ref = run()
        assert ref() is None
    finally:
        gc.enable()


def _no_warnings(fn: Any) -> Any:
    with warnings.catch_warnings(record=True) as ws:
        warnings.simplefilter("always")
        result = fn()
    assert len(ws) == 0, "No warning should be raised"
    return result


def _old_pattern(opt: Any, scheduler: Any, epochs: int = 35) -> None:
    with pytest.warns(UserWarning, match=r"how-to-adjust-learning-rate"):
        for _ in range(epochs):
            scheduler.step()
            opt.step()


def test_old_pattern_warning(opt: Any) -> None:
    scheduler = _no_warnings(lambda: StepLR(opt, gamma=0.1, step_size=3))
    _old_pattern(opt, scheduler)


def test_old_pattern_warning_resuming(opt: Any) -> None:
    for group in opt.param_groups:
        group["initial_lr"] = 0.01
    scheduler = _no_warnings(lambda: StepLR(opt, gamma=0.1, step_size=3, last_epoch=10))
    _old_pattern(opt, scheduler)


def _override_step(opt: Any) -> None:
    old_step = opt.step

    def new_step(o, *args, **kwargs):
        return old_step(*args, **kwargs)

    opt.step = types.MethodType(new_step, opt)


def test_old_pattern_warning_with_overridden_optim_step(opt: Any) -> None:
    for group in opt.param_groups:
        group["initial_lr"] = 0.01
    scheduler = _no_warnings(lambda: StepLR(opt, gamma=0.1, step_size=3, last_epoch=10))
    _override_step(opt)
    _old_pattern(opt, scheduler)


def test_new_pattern_no_warning(opt: Any) -> None:
    scheduler = _no_warnings(lambda: StepLR(opt, gamma=0.1, step_size=3))

    def new_pattern() -> None:
        for _ in range(35):
            opt.step()
            scheduler.step()

    _no_warnings(new_pattern)


def test_new_pattern_no_warning_with_overridden_optim_step(opt: Any) -> None:
    scheduler = _no_warnings(lambda: StepLR(opt, gamma=0.1, step_size=3))
    _override_step(opt)
    with pytest.warns(UserWarning, match=r"`optimizer.step\(\)` has been overridden"):
        for _ in range(35):
            opt.step()
            scheduler.step()


@pytest.mark.parametrize("make", [
    lambda o: StepLR(o, 2), lambda o: ExponentialLR(o, gamma=0.9), lambda o: ConstantLR(o),
    lambda o: LinearLR(o), lambda o: PolynomialLR(o, power=0.9)],
    ids=["step", "exponential", "constant", "linear", "polynomial"])
def test_lr_is_constant_for_constant_epoch(opt: Any, make: Any) -> None:
    scheduler = make(opt)
    lrs = []
    for _ in range(10):
        scheduler.optimizer.step()
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            scheduler.step(2)
            _check_warning_is_epoch_deprecation_warning(w)
        lrs.append(opt.param_groups[0]["lr"])
    assert min(lrs) == max(lrs)


def test_step_lr(opt: Any) -> None:
    single_targets = [0.05] * 3 + [0.005] * 3 + [0.0005] * 3 + [0.00005] * 3
    targets = [single_targets, [x * 10 for x in single_targets]]
    _test(opt, StepLR(opt, gamma=0.1, step_size=3), targets, 10)


def test_get_last_lr_step_lr() -> None:
    optimizer = SGD([Parameter(torch.randn(2, 2, requires_grad=True))], 0.1)
    targets = [[0.1] * 3 + [0.01] * 3 + [0.001] * 3 + [0.0001]]
    _test_get_last_lr(StepLR(optimizer, 3, gamma=0.1), targets, 10)


def test_get_last_lr_multi_step_lr(opt: Any) -> None:
    single_targets = [0.05] * 2 + [0.005] * 3 + [0.0005] * 4 + [0.00005] * 1
    targets = [single_targets, [x * 10 for x in single_targets]]
    _test_get_last_lr(MultiStepLR(opt, gamma=0.1, milestones=[2, 5, 9]), targets, 10)


def test_raise_error_when_last_epoch_is_greater_than_0_and_initial_lr_is_not_specified() -> None:
    optimizer = SGD([Parameter(torch.randn(2, 2, requires_grad=True))], 0.1)
    with pytest.raises(KeyError, match=r"param \'initial_lr\' is not specified in "
                       r"param_groups\[0\] when resuming scheduler with last_epoch >= 0"):
        StepLR(optimizer, step_size=3, gamma=0.1, last_epoch=1)


def test_multi_step_lr(opt: Any) -> None:
    single_targets = [0.05] * 2 + [0.005] * 3 + [0.0005] * 4 + [0.00005] * 3
    targets = [single_targets, [x * 10 for x in single_targets]]
    _test(opt, MultiStepLR(opt, gamma=0.1, milestones=[2, 5, 9]), targets, 10)


def test_multi_step_lr_with_epoch(opt: Any) -> None:
    single_targets = [0.05] * 2 + [0.005] * 3 + [0.0005] * 4 + [0.00005] * 3
    targets = [single_targets, [x * 10 for x in single_targets]]
    _test_with_epoch(opt, MultiStepLR(opt, gamma=0.1, milestones=[2, 5, 9]), targets, 10)


def test_get_last_lr_constantlr(opt: Any) -> None:
    single_targets = [0.025] * 5 + [0.05] * 5
    targets = [single_targets, [x * 10 for x in single_targets]]
    _test_get_last_lr(ConstantLR(opt, factor=1.0 / 2, total_iters=5), targets, 10)


def test_cosine_then_cyclic() -> None:
    max_lr, base_lr, optim_lr = 0.3, 0.1, 0.5
    model = torch.nn.Linear(2, 1)
    optimizer = SGD(model.parameters(), lr=optim_lr)
    lr_scheduler_1 = CosineAnnealingLR(optimizer, T_max=20, eta_min=0.1)
    lr_scheduler_2 = CyclicLR(optimizer, base_lr=base_lr, max_lr=max_lr, step_size_up=1,
                              step_size_down=3)
    for i in range(40):
        optimizer.step()
        if i <= lr_scheduler_1.T_max:
            lr_scheduler_1.step()
        else:
            lr_scheduler_2.step()
        last_lr = optimizer.param_groups[0]["lr"]
    assert last_lr <= max_lr


def _targets(single: list[float]) -> list[list[float]]:
    return [single, [x * 10 for x in single]]


def test_constantlr(opt: Any) -> None:
    _test(opt, ConstantLR(opt, factor=1.0 / 2, total_iters=5), _targets([0.025] * 5 + [0.05] * 5))


def test_constantlr_with_epoch(opt: Any) -> None:
    _test_with_epoch(opt, ConstantLR(opt, factor=1.0 / 2, total_iters=5),
                     _targets([0.025] * 5 + [0.05] * 5))


def _linear_targets(start: float, end: float, iters: int, epochs: int = 10) -> list[float]:
    interpolation = [start + i * (end - start) / iters for i in range(iters)]
    return [x * 0.05 for x in interpolation] + [0.05 * end] * (epochs - iters)


def test_get_last_lr_linearlr(opt: Any) -> None:
    scheduler = LinearLR(opt, start_factor=1.0 / 4, end_factor=3.0 / 5, total_iters=4)
    _test_get_last_lr(scheduler, _targets(_linear_targets(1.0 / 4, 3.0 / 5, 4)), 10)


def test_linearlr(opt: Any) -> None:
    _test(opt, LinearLR(opt, start_factor=0.5, total_iters=4),
          _targets(_linear_targets(0.5, 1.0, 4)))


def test_linearlr_with_epoch(opt: Any) -> None:
    _test_with_epoch(opt, LinearLR(opt, start_factor=0.5, total_iters=4),
                     _targets(_linear_targets(0.5, 1.0, 4)))


@pytest.mark.parametrize("start_factor", [0.0, 1.1])
def test_linearlr_start_factor_limits(opt: Any, start_factor: float) -> None:
    with pytest.raises(ValueError):
        LinearLR(opt, start_factor=start_factor, total_iters=4)


def test_exp_lr(opt: Any) -> None:
    _test(opt, ExponentialLR(opt, gamma=0.9), _targets([0.05 * (0.9**x) for x in range(10)]))


def test_poly_lr(opt: Any) -> None:
    single = [(1.0 - x / 5) ** 0.9 * 0.05 for x in range(5)] + [0.0] * 5
    _test(opt, PolynomialLR(opt, power=0.9, total_iters=5), _targets(single))


def test_cos_anneal_lr(opt: Any) -> None:
    eta_min = 1e-10
    single = [eta_min + (0.05 - eta_min) * (1 + math.cos(math.pi * x / 10)) / 2
              for x in range(10)]
    _test(opt, CosineAnnealingLR(opt, T_max=10, eta_min=eta_min), _targets(single))


@pytest.mark.parametrize("make", [
    lambda o: StepLR(o, gamma=0.1, step_size=3),
    lambda o: LinearLR(o, start_factor=1.0 / 3, end_factor=0.7, total_iters=4),
    lambda o: ConstantLR(o, factor=1.0 / 3, total_iters=4),
    lambda o: MultiStepLR(o, gamma=0.1, milestones=[2, 5, 9]),
    lambda o: ExponentialLR(o, gamma=0.9),
    lambda o: PolynomialLR(o, power=0.9),
    lambda o: CosineAnnealingLR(o, T_max=5, eta_min=1e-10)],
    ids=["step", "linear", "constant", "multi_step", "exp", "poly", "cos_anneal"])
def test_closed_form(make: Any) -> None:
    # torch's _test_against_closed_form re-runs setUp, so it reads a fresh optimizer no
    # scheduler drives (it cannot fail); here each scheduler drives the optimizer it is
    # read from, and step(epoch + 1) is the closed form of epoch + 1 chained steps
    epochs = 20
    opt = _make_opt()
    closed_form_scheduler = make(opt)
    targets = []
    for epoch in range(epochs):
        closed_form_scheduler.optimizer.step()
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            closed_form_scheduler.step(epoch + 1)  # the epoch the chained steps reach
            _check_warning_is_epoch_deprecation_warning(w)
        # float(): a tensor lr is updated in place (fill_), as torch's
        targets.append([float(group["lr"]) for group in opt.param_groups])
    opt = _make_opt()
    scheduler = make(opt)
    for epoch in range(epochs):
        opt.step()
        scheduler.step()
        for i, param_group in enumerate(opt.param_groups):
            _close(targets[epoch][i], param_group["lr"])


def test_cos_anneal_lr_continue(opt: Any) -> None:
    scheduler = CosineAnnealingLR(opt, T_max=5, eta_min=0.1)
    opt.step()
    scheduler.step()
    original_lrs = scheduler._last_lr
    new_scheduler = CosineAnnealingLR(opt, T_max=5, eta_min=0.1, last_epoch=0)
    torch.testing.assert_close(original_lrs, new_scheduler._last_lr, rtol=1e-4, atol=1e-5)


def _test_reduce_lr_on_plateau(opt: Any, schedulers: Any, targets: list, metrics: list,
                               epochs: int = 10) -> None:
    if isinstance(schedulers, (LRScheduler, ReduceLROnPlateau)):
        schedulers = [schedulers]
    for epoch in range(epochs):
        opt.step()
        for scheduler in schedulers:
            if isinstance(scheduler, ReduceLROnPlateau):
                scheduler.step(metrics[epoch])
            else:
                scheduler.step()
        for param_group, target in zip(opt.param_groups, targets):
            _close(target[epoch], param_group["lr"])


_PLATEAU_CASES = [
    (10, [[0.5] * 20], [10 - i * 0.0167 for i in range(20)],
     dict(threshold_mode="abs", mode="min", threshold=0.01, patience=5, cooldown=5)),
    (22, [[0.5] * 6 + [0.05] * 7 + [0.005] * 7 + [0.0005] * 2],
     [10 - i * 0.0165 for i in range(22)],
     dict(patience=5, cooldown=0, threshold_mode="abs", mode="min", threshold=0.1)),
    (22, [[0.5] * (2 + 6) + [0.05] * (5 + 6) + [0.005] * 4], [-0.8] * 2 + [-0.234] * 20,
     dict(mode="max", patience=5, cooldown=5, threshold_mode="abs")),
    (20, [[0.5] * 20], [1.5 * (1.025**i) for i in range(20)],
     dict(mode="max", patience=3, threshold_mode="rel", threshold=0.1)),
    (20, [[0.5] * 6 + [0.05] * (5 + 6) + [0.005] * 4], [1.5 * (1.005**i) for i in range(20)],
     dict(mode="max", threshold_mode="rel", threshold=0.1, patience=5, cooldown=5)),
    (20, [[0.5] * 20], [1.5 * (0.85**i) for i in range(20)],
     dict(mode="min", threshold_mode="rel", threshold=0.1)),
    (20, [[0.5] * 6 + [0.05] * (5 + 6) + [0.005] * 4], [1] * 7 + [0.6] + [0.5] * 12,
     dict(mode="min", threshold_mode="rel", threshold=0.1, patience=5, cooldown=5)),
    (20, [[0.5] * 6 + [0.4] * 14, [0.5] * 6 + [0.3] * 14], [1.5 * (1.005**i) for i in range(20)],
     dict(mode="max", threshold_mode="rel", min_lr=[0.4, 0.3], threshold=0.1, patience=5,
          cooldown=5)),
]


@pytest.mark.parametrize("case", range(1, 9))
def test_reduce_lr_on_plateau(opt: Any, case: int) -> None:
    epochs, targets, metrics, kwargs = _PLATEAU_CASES[case - 1]
    for param_group in opt.param_groups:
        param_group["lr"] = 0.5
    scheduler = ReduceLROnPlateau(opt, **kwargs)
    _test_reduce_lr_on_plateau(opt, scheduler, targets, metrics, epochs)


def test_reduce_lr_on_plateau_get_last_lr_before_step(opt: Any) -> None:
    for param_group in opt.param_groups:
        param_group["lr"] = 0.5
    scheduler = ReduceLROnPlateau(opt)
    assert scheduler.get_last_lr() == [0.5 for _ in opt.param_groups]


def test_reduce_lr_on_plateau_preserves_lr_type(opt: Any) -> None:
    kinds = [type(group["lr"]) for group in opt.param_groups]
    scheduler = ReduceLROnPlateau(opt, mode="min", patience=0)
    scheduler.step(1.0)
    scheduler.step(2.0)
    for group, kind in zip(opt.param_groups, kinds):
        assert type(group["lr"]) is kind


def test_sequentiallr1(opt: Any) -> None:
    targets = [[0.05, 0.04, 0.032] + [0.05] * 4 + [0.005] * 4 + [0.0005] * 4 + [0.00005] * 4]
    schedulers = [ExponentialLR(opt, gamma=0.8), StepLR(opt, gamma=0.1, step_size=4)]
    _test(opt, SequentialLR(opt, schedulers=schedulers, milestones=[3]), targets, 19)


def test_sequentiallr2(opt: Any) -> None:
    targets = [[0.005, 0.005, 0.005] + [0.05 * 0.9**x for x in range(10)]]
    schedulers = [ConstantLR(opt, factor=0.1, total_iters=3), ExponentialLR(opt, gamma=0.9)]
    _test(opt, SequentialLR(opt, schedulers=schedulers, milestones=[3]), targets, 13)


def _three_schedulers(opt: Any) -> list[Any]:
    return [ConstantLR(opt, factor=0.1, total_iters=3), ExponentialLR(opt, gamma=0.8),
            StepLR(opt, gamma=0.1, step_size=2)]


_THREE_TARGETS = [0.005] * 3 + [0.05, 0.04, 0.032] + [0.05, 0.05, 0.005, 0.005, 0.0005, 0.0005]


def test_sequentiallr3(opt: Any) -> None:
    scheduler = SequentialLR(opt, schedulers=_three_schedulers(opt), milestones=[3, 6])
    _test(opt, scheduler, [_THREE_TARGETS], 12)


def test_sequentiallr4() -> None:
    optimizer = SGD([torch.tensor(0.5)], lr=0.1)
    prev_lr = optimizer.param_groups[0]["lr"]
    schedulers = [ConstantLR(optimizer, factor=1), ConstantLR(optimizer, factor=0.1)]
    SequentialLR(optimizer, schedulers, milestones=[10])
    assert prev_lr == optimizer.param_groups[0]["lr"]


def test_sequentiallr5(opt: Any) -> None:
    targets = [[0.0005, 0.0014, 0.0023, 0.0032, 0.0041] + [0.025] * 5]
    const_sched = ConstantLR(optimizer=opt, factor=0.1, total_iters=5)
    lin_sched = LinearLR(optimizer=opt, start_factor=0.1, total_iters=5)
    chained = ChainedScheduler([lin_sched, const_sched])
    const_sched2 = ConstantLR(optimizer=opt, factor=0.5, total_iters=5)
    scheduler = SequentialLR(opt, schedulers=[chained, const_sched2], milestones=[5])
    _test(opt, scheduler, targets, 10)


def test_sequentiallr_no_warnings(opt: Any) -> None:
    scheduler1 = LinearLR(opt, start_factor=0.5, end_factor=0.1, total_iters=5)
    scheduler2 = ExponentialLR(opt, gamma=0.9)
    scheduler = SequentialLR(opt, schedulers=[scheduler1, scheduler2], milestones=[5])
    for _ in range(10):
        opt.step()
        _no_warnings(scheduler.step)


def test_get_last_lr_sequentiallr(opt: Any) -> None:
    scheduler = SequentialLR(opt, schedulers=_three_schedulers(opt), milestones=[3, 6])
    _test_get_last_lr(scheduler, _targets(_THREE_TARGETS), 12)


def test_sequentiallr_does_not_alias_lr_and_initial_lr() -> None:
    net = _SchedulerTestNet()
    opt = SGD(net.parameters(), lr=torch.tensor(2.0))
    schedulers = [LinearLR(opt, 0.1, 0.8, total_iters=4), LinearLR(opt, 0.8, 0.1, total_iters=4)]
    scheduler = SequentialLR(opt, schedulers, milestones=[4])
    _test(opt, scheduler, [[0.2, 0.55, 0.9, 1.25, 1.6, 1.25, 0.9, 0.55]], 8)


def test_chained_lr2_get_last_lr_before_step(opt: Any) -> None:
    schedulers = [LinearLR(opt, start_factor=0.4, total_iters=3),
                  MultiStepLR(opt, milestones=[4, 8, 10], gamma=0.1)]
    scheduler = ChainedScheduler(schedulers)
    assert scheduler.get_last_lr() == schedulers[-1].get_last_lr()


_CHAINED = {
    "1": (10, lambda o: [StepLR(o, gamma=0.1, step_size=3)],
          [[0.05] * 3 + [0.005] * 3 + [0.0005] * 3 + [0.00005] * 3]),
    "2": (10, lambda o: [LinearLR(o, start_factor=0.4, total_iters=3)],
          [[0.02, 0.03, 0.04] + [0.05] * 9]),
    "3": (10, lambda o: [LinearLR(o, start_factor=0.4, total_iters=3),
                         MultiStepLR(o, milestones=[4, 8, 10], gamma=0.1)],
          [[0.02, 0.03, 0.04, 0.05] + [0.005] * 4 + [0.0005] * 3 + [0.00005] * 3]),
    "4": (9, lambda o: [ExponentialLR(o, gamma=0.9), ConstantLR(o, factor=0.2, total_iters=4),
                        StepLR(o, gamma=0.1, step_size=3)],
          [[0.05 * 0.2 * 0.9**x for x in range(3)] + [0.05 * 0.2 * 0.9**3 * 0.1]
           + [0.05 * 0.9**x * 0.1 for x in range(4, 6)]
           + [0.05 * 0.9**x * 0.01 for x in range(6, 9)]]),
    "5": (10, lambda o: [PolynomialLR(o, power=0.9, total_iters=5), ConstantLR(o, factor=0.1)],
          [[0.1 * lr * (1.0 - x / 5) ** 0.9 for x in range(5)] + [0.0] * 5
           for lr in (0.05, 0.5)]),
}


@pytest.mark.parametrize("case", sorted(_CHAINED))
def test_chained_lr(opt: Any, case: str) -> None:
    epochs, make, targets = _CHAINED[case]
    schedulers = make(opt)
    scheduler = ChainedScheduler(schedulers)
    _test(opt, [scheduler], targets, epochs)
    assert scheduler.get_last_lr() == schedulers[-1].get_last_lr()


def _cosine(epochs: int = 10, eta_min: float = 1e-10) -> list[float]:
    return [eta_min + (0.05 - eta_min) * (1 + math.cos(math.pi * x / epochs)) / 2
            for x in range(epochs)]


def _linear_factor(targets: list[float], iters: int, start: float, end: float = 1.0
                   ) -> list[float]:
    out = list(targets)
    for i in range(iters):
        out[i] *= start + i / iters * (end - start)
    return out


_COMPOUND = {
    "step_and_multistep": (
        lambda o: [StepLR(o, gamma=0.1, step_size=3), MultiStepLR(o, gamma=0.1,
                                                                  milestones=[2, 5, 9])],
        [[0.05] * 2 + [0.005] * 1 + [5e-4] * 2 + [5e-5] + [5e-6] * 3 + [5e-8]]),
    "step_and_exp": (
        lambda o: [StepLR(o, gamma=0.1, step_size=3), ExponentialLR(o, gamma=0.9)],
        _targets([0.05 * 0.1 ** (x // 3) * 0.9**x for x in range(12)])),
    "exp_and_multistep": (
        lambda o: [MultiStepLR(o, gamma=0.1, milestones=[2, 5, 9]), ExponentialLR(o, gamma=0.9)],
        _targets([0.05 * (0.9**x) for x in range(2)] + [0.005 * (0.9**x) for x in range(2, 5)]
                 + [0.0005 * (0.9**x) for x in range(5, 9)]
                 + [0.00005 * (0.9**x) for x in range(9, 11)])),
    "exp_and_linearlr": (
        lambda o: [LinearLR(o, start_factor=0.4, end_factor=0.9, total_iters=4),
                   ExponentialLR(o, gamma=0.9)],
        _targets(_linear_factor([0.05 * (0.9**x) for x in range(4)], 4, 0.4, 0.9)
                 + [0.05 * (0.9**x) * 0.9 for x in range(4, 11)])),
    "step_and_constantlr": (
        lambda o: [StepLR(o, gamma=0.1, step_size=3), ConstantLR(o, factor=0.4, total_iters=4)],
        _targets([0.05 * 0.4] * 3 + [0.005 * 0.4] + [0.005] * 2 + [0.0005] * 3
                 + [0.00005] * 3)),
    "linearlr_and_multistep": (
        lambda o: [MultiStepLR(o, gamma=0.1, milestones=[2, 5, 9]),
                   LinearLR(o, start_factor=0.4, total_iters=4)],
        _targets(_linear_factor([0.05] * 2 + [0.005] * 3 + [0.0005] * 4 + [0.00005] * 2, 4,
                                0.4))),
    "cosanneal_and_step": (
        lambda o: [CosineAnnealingLR(o, T_max=10, eta_min=1e-10),
                   StepLR(o, gamma=0.1, step_size=3)],
        _targets([x * 0.1 ** (i // 3) for i, x in enumerate(_cosine())])),
    "cosanneal_and_multistep": (
        lambda o: [CosineAnnealingLR(o, T_max=10, eta_min=1e-10),
                   MultiStepLR(o, gamma=0.1, milestones=[2, 5, 9])],
        _targets([x * y for x, y in zip(_cosine(), [1] * 2 + [0.1] * 3 + [0.01] * 4
                                        + [0.001])])),
    "cosanneal_and_linearlr": (
        lambda o: [LinearLR(o, start_factor=0.4, total_iters=4),
                   CosineAnnealingLR(o, T_max=10, eta_min=1e-10)],
        _targets(_linear_factor(_cosine(), 4, 0.4))),
    "cosanneal_and_exp": (
        lambda o: [CosineAnnealingLR(o, T_max=10, eta_min=1e-10), ExponentialLR(o, gamma=0.1)],
        _targets([x * 0.1**i for i, x in enumerate(_cosine())])),
}


@pytest.mark.parametrize("case", sorted(_COMPOUND))
def test_compound(opt: Any, case: str) -> None:
    make, targets = _COMPOUND[case]
    _test(opt, make(opt), targets, 10)


def test_cycle_lr_invalid_mode(opt: Any) -> None:
    with pytest.raises(ValueError):
        CyclicLR(opt, base_lr=0, max_lr=0, mode="CATS")


def test_cycle_lr_triangular_mode_one_lr() -> None:
    net = _SchedulerTestNet()
    opt = SGD([{"params": net.conv1.parameters()},
               {"params": net.conv2.parameters(), "lr": 0.5}], lr=0.05, momentum=0.9)
    lr_target = [1, 2, 3, 4, 5, 4, 3, 2, 1, 2, 3]
    momentum_target = [5, 4, 3, 2, 1, 2, 3, 4, 5, 4, 3]
    scheduler = CyclicLR(opt, base_lr=1, max_lr=5, step_size_up=4, cycle_momentum=True,
                         base_momentum=1, max_momentum=5, mode="triangular")
    for batch_num in range(len(lr_target)):
        for group in opt.param_groups:
            _close(lr_target[batch_num], group["lr"])
            _close(momentum_target[batch_num], group["momentum"])
        opt.step()
        scheduler.step()


_COMPOUND_PLATEAU = {
    "1": (10, 0.5, lambda m, o: [m.ReduceLROnPlateau(o, threshold_mode="abs", mode="min",
                                                     threshold=0.01, patience=5, cooldown=5),
                                 m.StepLR(o, gamma=0.1, step_size=3)],
          [10 - i * 0.0167 for i in range(20)]),
    "2": (22, 0.5, lambda m, o: [m.ReduceLROnPlateau(o, patience=5, cooldown=0,
                                                     threshold_mode="abs", mode="min",
                                                     threshold=0.1),
                                 m.MultiStepLR(o, gamma=0.1, milestones=[3, 8, 12])],
          [10 - i * 0.0165 for i in range(22)]),
    "3": (22, 0.5, lambda m, o: [m.ReduceLROnPlateau(o, mode="max", patience=5, cooldown=5,
                                                     threshold_mode="abs"),
                                 m.ExponentialLR(o, gamma=0.1)],
          [-0.8] * 2 + [-0.234] * 20),
    "4": (10, 0.05, lambda m, o: [m.ReduceLROnPlateau(o, mode="max", patience=3,
                                                      threshold_mode="rel", threshold=0.1),
                                  m.CosineAnnealingLR(o, 10, 1e-10)],
          [1.5 * (1.025**i) for i in range(20)]),
    "5": (22, 0.5, lambda m, o: [m.ReduceLROnPlateau(o, patience=5, cooldown=0,
                                                     threshold_mode="abs", mode="min",
                                                     threshold=0.1),
                                 m.LinearLR(o, start_factor=0.4, total_iters=4)],
          [10 - i * 0.0165 for i in range(22)]),
}


def _plateau_trajectory(lib: Any, case: str) -> list[list[float]]:
    epochs, lr, make, metrics = _COMPOUND_PLATEAU[case]
    params = [lib.nn.Parameter(lib.zeros(2)), lib.nn.Parameter(lib.zeros(2))]
    opt = lib.optim.SGD([{"params": params[:1]}, {"params": params[1:]}], lr=lr)
    schedulers = make(lib.optim.lr_scheduler, opt)
    lrs = []
    for epoch in range(epochs):
        opt.step()
        for scheduler in schedulers:
            if isinstance(scheduler, lib.optim.lr_scheduler.ReduceLROnPlateau):
                scheduler.step(metrics[epoch])
            else:
                scheduler.step()
        lrs.append([float(g["lr"]) for g in opt.param_groups])
    return lrs


@pytest.mark.parametrize("case", sorted(_COMPOUND_PLATEAU))
def test_compound_reduce_lr_on_plateau(case: str) -> None:
    # PyTorch's test slices its targets to nothing ("test runs step before checking lr"):
    # here the lr of every epoch is compared with PyTorch's own schedulers instead
    reference = pytest.importorskip("torch")
    expected = _plateau_trajectory(reference, case)
    for got, want in zip(_plateau_trajectory(torch, case), expected):
        _close(want, got)
