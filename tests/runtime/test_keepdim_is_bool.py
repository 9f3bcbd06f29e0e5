"""A reduction's ``keepdim`` is PyTorch's ``bool`` parameter: its argument parser takes a bool
only (None, an int, a numpy bool, a float are its TypeError, naming the position where it was
given by position). rt took None and 1 silently in prod, logsumexp, median, nanmedian,
argmax, argmin, mode and kthvalue, and raised numpy's error in sum, amax, amin and nansum."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")

NAMES = "sum prod logsumexp argmax argmin median nanmedian mode kthvalue amax amin nansum".split()


def _outcome(lib: Any, name: str, how: str, value: Any) -> str:
    t = lib.ones(2, 3)
    args = (1, 1) if name == "kthvalue" else (1,)
    try:
        if how == "keyword":
            getattr(lib, name)(t, *args, keepdim=value)
        elif how == "position":
            getattr(lib, name)(t, *args, value)
        else:
            getattr(t, name)(*args, keepdim=value)
    except TypeError as e:
        return str(e)
    return "taken"


@pytest.mark.parametrize("how", ["keyword", "position", "method"])
@pytest.mark.parametrize("value", [None, 1, 0, np.bool_(True), 1.0, True, False],
                         ids=["None", "1", "0", "np_bool", "float", "True", "False"])
@pytest.mark.parametrize("name", NAMES)
def test_keepdim_takes_a_bool_only(name: str, value: Any, how: str) -> None:
    assert _outcome(rt, name, how, value) == _outcome(torch, name, how, value)
