"""layer_norm's and rms_norm's normalized_shape checks: PyTorch's errors and texts."""

from __future__ import annotations

import pytest

import runtime as rt

CASES = [((2, 5), [4]), ((2, 5), [2, 4]), ((5,), [2, 5]), ((2, 5), [5]), ((3, 2, 5), [2, 5])]
# PyTorch 2.13's texts (its rms_norm writes the expected shape "[*4]", layer_norm "[*, 4]")
LAYER = {0: "Given normalized_shape=[4], expected input with shape [*, 4], but got input of "
            "size[2, 5]",
         1: "Given normalized_shape=[2, 4], expected input with shape [*, 2, 4], but got input "
            "of size[2, 5]",
         2: "Given normalized_shape=[2, 5], expected input with shape [*, 2, 5], but got input "
            "of size[5]"}
RMS = {0: (RuntimeError, "Given normalized_shape=[4], expected input with shape [*4], but got "
                         "input of size[2, 5]"),
       1: (RuntimeError, "Given normalized_shape=[2, 4], expected input with shape [*2, 4], but "
                         "got input of size[2, 5]"),
       2: (ValueError, "Input tensor must have at least 2 dimensions, but got 1")}


def _outcome(fn, x, shape):
    try:
        return tuple(fn(x, shape).shape)
    except (RuntimeError, ValueError) as e:
        return type(e), str(e)


@pytest.mark.parametrize("i", range(len(CASES)))
def test_normalized_shape_errors(i: int) -> None:
    xs, ns = CASES[i]
    F = rt.nn.functional
    got_layer, got_rms = _outcome(F.layer_norm, rt.ones(*xs), ns), _outcome(F.rms_norm,
                                                                             rt.ones(*xs), ns)
    assert got_layer == ((RuntimeError, LAYER[i]) if i in LAYER else xs)
    assert got_rms == (RMS[i] if i in RMS else xs)
    torch = pytest.importorskip("torch")
    tF = torch.nn.functional
    for got, fn in ((got_layer, tF.layer_norm), (got_rms, tF.rms_norm)):
        want = _outcome(fn, torch.ones(*xs), ns)
        assert got == (tuple(want) if isinstance(want[0], int) else want)
