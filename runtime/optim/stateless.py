"""``swap_in_optimizer_params_and_state`` (torch 2.13's ``torch.optim``): an optimizer run for a
while on other parameters and an ``optimizer.state_dict()``-shaped state, its own restored on
exit; its checks and texts are torch's."""

from __future__ import annotations

import contextlib
from collections import defaultdict
from collections.abc import Iterator
from typing import Any, NamedTuple

from runtime.optim.optimizer import Optimizer
from runtime.tensor import Tensor

_NAME = "swap_in_optimizer_params_and_state"


class _GroupSwapIn(NamedTuple):
    """A live param group, the group to install from the state dict, and its parameters."""

    live_group: dict[str, Any]
    swapin_group: dict[str, Any]
    swapin_params: list[Tensor]


def _checked_state(state: Any) -> dict[Any, Any]:
    if not isinstance(state, dict):
        raise RuntimeError(f"{_NAME} requires swapin_optim_state['state'] to be a dict mapping "
                           f"packed parameter ids to per-param state dicts, got "
                           f"{type(state).__name__}.")
    if any(isinstance(k, Tensor) for k in state):
        raise RuntimeError(f"{_NAME} requires optimizer.state_dict()-style state keyed by "
                           f"packed parameter ids.")
    if any(isinstance(k, int) and not isinstance(v, dict) for k, v in state.items()):
        raise RuntimeError(f"{_NAME} requires per-parameter optimizer state entries to be "
                           f"dictionaries.")
    return state


def _checked_groups(optimizer: Optimizer, groups: Any) -> list[dict[str, Any]]:
    if not isinstance(groups, list):
        raise RuntimeError(f"{_NAME} requires swapin_optim_state['param_groups'] to be a list "
                           f"of param-group dicts, got {type(groups).__name__}.")
    if len(optimizer.param_groups) != len(groups):
        raise RuntimeError("swapin_optim_state has a different number of parameter groups "
                           "than the live optimizer.")
    return groups


def _checked_group(index: int, group: dict[str, Any], swapin: Any) -> list[int]:
    """The packed parameter ids of one group to install, after torch's checks: a dict, a list
    of ints as long as the live group's params, the live group's keys exactly."""
    if not isinstance(swapin, dict):
        raise RuntimeError(f"{_NAME} requires each optimizer param group to be a dictionary.")
    ids = swapin.get("params")
    if not isinstance(ids, list) or not all(isinstance(i, int) for i in ids):
        raise RuntimeError(f"{_NAME} requires optimizer.state_dict()-style "
                           f"param_groups[*]['params'] entries keyed by packed parameter ids.")
    if len(group["params"]) != len(ids):
        raise RuntimeError(f"swapin_optim_state param group {index} has a different number of "
                           f"params than the live optimizer param group.")
    swapin_only = [k for k in swapin if k not in group]
    live_only = [k for k in group if k not in swapin]
    if swapin_only or live_only:
        raise RuntimeError(f"{_NAME} requires optimizer.state_dict()-style param group keys to "
                           f"exactly match the live optimizer group keys for group {index}. "
                           f"Keys only in swap-in: {swapin_only}. Keys only in live: "
                           f"{live_only}.")
    return ids


def _prepare(optimizer: Optimizer, parameters: dict[str, Tensor], optim_state: Any
             ) -> tuple[dict[Any, Any], list[_GroupSwapIn]]:
    """The state to install and each group's swap, the parameters taken in the order of
    optimizer.param_groups (as torch's)."""
    if not optimizer.state:
        raise RuntimeError(f"{_NAME} requires initialized optimizer state.")
    if not isinstance(optim_state, dict):
        raise RuntimeError(f"{_NAME} requires a DCP-style optimizer state_dict.")
    state = _checked_state(optim_state.get("state"))
    groups = _checked_groups(optimizer, optim_state.get("param_groups"))
    flat = list(parameters.values())
    offset = 0
    seen: set[int] = set()
    swaps = []
    for index, (group, swapin) in enumerate(zip(optimizer.param_groups, groups, strict=True)):
        ids = _checked_group(index, group, swapin)
        seen.update(ids)
        end = offset + len(ids)
        if end > len(flat):
            raise RuntimeError(f"{_NAME} requires the explicit parameter state to match "
                               f"optimizer.param_groups ordering.")
        swaps.append(_GroupSwapIn(group, swapin, flat[offset:end]))
        offset = end
    extra = [k for k in state if k not in seen]
    if extra:
        raise RuntimeError(f"{_NAME} requires swapin_optim_state['state'] to be keyed only by "
                           f"packed parameter ids from param_groups[*]['params']; got extra "
                           f"keys {extra!r}.")
    return state, swaps


@contextlib.contextmanager
def swap_in_optimizer_params_and_state(optimizer: Optimizer,
                                       swapin_parameters: dict[str, Tensor],
                                       swapin_optim_state: dict[str, Any]) -> Iterator[None]:
    """Within the context, ``optimizer`` works on ``swapin_parameters`` (in the order of its
    param groups' parameters) with the state and group settings of ``swapin_optim_state`` (an
    ``optimizer.state_dict()``-shaped dict); its own are restored on exit. In-place updates
    of the swapped-in state tensors reach the caller's dict; new entries do not."""
    state, swaps = _prepare(optimizer, swapin_parameters, swapin_optim_state)
    original_state = optimizer.state
    snapshots = [dict(g) for g in optimizer.param_groups]
    try:
        swapped: defaultdict[Tensor, Any] = defaultdict(dict)
        for swap in swaps:
            swap.live_group["params"] = swap.swapin_params
            for key, value in swap.swapin_group.items():
                if key != "params":
                    swap.live_group[key] = value
            for param, pid in zip(swap.swapin_params, swap.swapin_group["params"], strict=True):
                swapped[param] = dict(state.get(pid, {}))
        optimizer.state = swapped
        yield
    finally:
        for group, snapshot in zip(optimizer.param_groups, snapshots, strict=True):
            group.clear()
            group.update(snapshot)
        optimizer.state = original_state
