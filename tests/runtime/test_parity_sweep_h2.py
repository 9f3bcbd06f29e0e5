"""Differential sweep against torch 2.13 (issue 11, items 3 and 5): lr schedulers,
optimizers, gradient clipping, data loading and checkpoints. Each test here failed before its
fix."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")


def _sgd(lib: Any) -> Any:
    groups = [{"params": [lib.nn.Parameter(lib.zeros(2))], "lr": 0.1},
              {"params": [lib.nn.Parameter(lib.zeros(2))], "lr": 0.05}]
    return lib.optim.SGD(groups, lr=0.1, momentum=0.9)


def _nested_sequential(lib: Any, opt: Any) -> Any:
    s = lib.optim.lr_scheduler
    inner = s.SequentialLR(opt, [s.ConstantLR(opt, 0.5, 2), s.ExponentialLR(opt, 0.8)], [2])
    return s.SequentialLR(opt, [inner, s.StepLR(opt, 2, 0.5)], milestones=[6])


def test_sequential_lr_nested_undoes_the_inner_schedulers_first_steps() -> None:
    """A SequentialLR of a SequentialLR: torch moves back the inner one's schedulers (not the
    inner one's own epoch), so the first value is the inner ConstantLR's factor."""
    got = []
    for lib in (torch, rt):
        opt = _sgd(lib)
        sched = _nested_sequential(lib, opt)
        lrs = [sched.get_last_lr()]
        for _ in range(12):
            opt.step()
            sched.step()
            lrs.append(sched.get_last_lr())
        got.append(lrs)
    np.testing.assert_allclose(got[1], got[0], rtol=1e-12)
    assert got[1][0] == pytest.approx([0.05, 0.025])
