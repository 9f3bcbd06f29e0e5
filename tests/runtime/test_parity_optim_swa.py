"""optim.swa_utils (new here) against torch 2.13: AveragedModel with SWA and EMA averages
(per tensor, per list, with buffers), update_bn, and SWALR's schedule."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import runtime as rt
from runtime.optim import swa_utils


def _run(lib: Any, mode: str) -> list[Any]:
    """Four SGD steps under SWALR, the average updated after each, then update_bn: the
    averaged model's output, the lrs, and its state dict."""
    rng = np.random.default_rng(0)
    model = lib.nn.Sequential(lib.nn.Linear(3, 4), lib.nn.BatchNorm1d(4), lib.nn.Linear(4, 2))
    with lib.no_grad():
        for p in model.parameters():
            p.copy_(lib.tensor(rng.standard_normal(tuple(p.shape)).astype(np.float32)))
    utils = lib.optim.swa_utils
    kwargs = {"swa": {}, "ema": {"avg_fn": utils.get_ema_avg_fn(0.9)},
              "buffers": {"multi_avg_fn": utils.get_ema_multi_avg_fn(0.5),
                          "use_buffers": True}}[mode]
    averaged = utils.AveragedModel(model, **kwargs)
    opt = lib.optim.SGD(model.parameters(), lr=1e-3)
    sched = utils.SWALR(opt, swa_lr=5e-4, anneal_epochs=3,
                        anneal_strategy="linear" if mode == "swa" else "cos")
    lrs = []
    for _ in range(4):
        opt.zero_grad()
        model(lib.tensor(rng.standard_normal((5, 3)).astype(np.float32))).pow(2).sum().backward()
        opt.step()
        sched.step()
        lrs.append(sched.get_last_lr()[0])
        averaged.update_parameters(model)
    batches = [lib.tensor(rng.standard_normal((5, 3)).astype(np.float32)) for _ in range(3)]
    utils.update_bn([(b, 0) for b in batches], averaged)
    state = averaged.state_dict()
    return [averaged(batches[0]).detach().numpy(), lrs,
            {k: v.detach().numpy() for k, v in state.items()},
            averaged.module[1].momentum, sorted(sched.state_dict())]


@pytest.mark.parametrize("mode", ["swa", "ema", "buffers"])
def test_averaged_model_matches_torch(mode: str) -> None:
    ours = _run(rt, mode)
    assert int(ours[2]["n_averaged"]) == 4 and ours[3] == 0.1  # momentum restored
    torch = pytest.importorskip("torch")
    theirs = _run(torch, mode)
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-12)
    assert list(ours[2]) == list(theirs[2]) and ours[4] == theirs[4]
    for key, value in theirs[2].items():
        np.testing.assert_allclose(ours[2][key], value, rtol=1e-5, atol=1e-6, err_msg=key)


def test_swa_and_ema_by_hand() -> None:
    model = rt.nn.Linear(1, 1, bias=False)
    swa = swa_utils.AveragedModel(model)
    swa_list = swa_utils.AveragedModel(model, multi_avg_fn=swa_utils.get_swa_multi_avg_fn())
    ema = swa_utils.AveragedModel(model, multi_avg_fn=swa_utils.get_ema_multi_avg_fn(0.5))
    for value in (1.0, 2.0, 6.0):
        with rt.no_grad():
            model.weight.fill_(value)
        for averaged in (swa, swa_list, ema):
            averaged.update_parameters(model)
    assert swa.module.weight.item() == pytest.approx(3.0)  # (1 + 2 + 6) / 3
    assert swa_list.module.weight.item() == pytest.approx(3.0)
    assert ema.module.weight.item() == pytest.approx(3.75)  # 1, then 1.5, then 3.75
    assert swa(rt.ones(1, 1)).item() == pytest.approx(3.0)
    with pytest.raises(AssertionError, match="Only one of avg_fn and multi_avg_fn"):
        swa_utils.AveragedModel(model, avg_fn=swa_utils.get_swa_avg_fn(),
                                multi_avg_fn=swa_utils.get_swa_multi_avg_fn())
    with pytest.raises(ValueError, match=r"Invalid decay value 1.5 provided"):
        swa_utils.get_ema_multi_avg_fn(1.5)


def test_swalr_by_hand() -> None:
    opt = rt.optim.SGD([rt.ones(1, requires_grad=True)], lr=1.0)
    sched = swa_utils.SWALR(opt, swa_lr=0.2, anneal_epochs=4, anneal_strategy="linear")
    lrs = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(6):
            opt.step()
            sched.step()
            lrs.append(sched.get_last_lr()[0])
    # linear from 1.0 to 0.2 over 4 steps, then constant
    np.testing.assert_allclose(lrs, [0.8, 0.6, 0.4, 0.2, 0.2, 0.2], rtol=1e-12)
    with pytest.raises(ValueError, match="anneal_strategy must be one of 'cos' or 'linear'"):
        swa_utils.SWALR(opt, 0.1, anneal_strategy="step")
    with pytest.raises(ValueError, match="anneal_epochs must be equal or greater than 0"):
        swa_utils.SWALR(opt, 0.1, anneal_epochs=-1)
