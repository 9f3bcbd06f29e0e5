"""PyTorch 2.13's test/optim/test_lrscheduler.py, ported to runtime (``import runtime as
torch``): the TestLRScheduler bodies with its helpers (_test, _test_get_last_lr,
_test_with_epoch, _test_against_closed_form) inlined as functions over a fresh net and SGD.

Left out (outside this project's scope): torch.compile/dynamo variants, pickling of whole
schedulers, and CUDA."""

from __future__ import annotations

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
    ConstantLR,
    CosineAnnealingLR,
    CyclicLR,
    ExponentialLR,
    LinearLR,
    LRScheduler,
    MultiStepLR,
    PolynomialLR,
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
    gc.collect()
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
