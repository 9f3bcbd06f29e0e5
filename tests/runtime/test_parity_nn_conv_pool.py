"""Convolutions and pools against PyTorch 2.13 (the harness of test_parity_nn_layers):
outputs and gradients in float64 of every conv and pool layer, unbatched and batch-of-one
inputs included, and PyTorch's error texts for wrong ranks, channels, groups, strides,
paddings, dilations, kernel sizes and output sizes, in its order of checks."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import runtime as rt

from tests.runtime.test_parity_nn_layers import compare, outcome

torch = pytest.importorskip("torch")

# (constructor, input shapes, train mode)
LAYERS: list[tuple[str, list[Any], bool]] = [
    ("Conv1d(2, 4, 3, stride=2, padding=1, dilation=2, groups=2, padding_mode='reflect')",
     [(2, 2, 9)], True),
    ("Conv1d(2, 4, 3)", [(2, 9)], True),
    ("Conv1d(2, 4, 3)", [(1, 2, 9)], True),
    ("Conv1d(2, 4, 3)", [(1, 3, 9)], True),
    ("Conv1d(2, 4, 3)", [(9,)], True),
    ("Conv1d(2, 4, 3)", [(1, 1, 2, 9)], True),
    ("Conv1d(2, 4, 3)", [(1, 2, 2)], True),
    ("Conv1d(2, 4, 3, padding='same', padding_mode='circular')", [(2, 2, 7)], True),
    ("Conv1d(2, 4, 4, padding='same', dilation=2)", [(2, 2, 9)], True),
    ("Conv2d(2, 4, (3, 2), padding='same', padding_mode='replicate')", [(1, 2, 5, 6)], True),
    ("Conv2d(2, 4, 3, stride=(2, 1), padding=(1, 2), bias=False)", [(2, 5, 6)], True),
    ("Conv2d(4, 4, 3, groups=4, padding=1)", [(2, 4, 5, 5)], True),
    ("Conv2d(2, 4, 3)", [(2, 3, 5, 5)], True),
    ("Conv2d(2, 4, 3)", [(2, 2, 2, 2)], True),
    ("Conv2d(2, 4, 3)", [(5, 5)], True),
    ("Conv3d(2, 4, 2, stride=2, padding=1)", [(1, 2, 4, 5, 6)], True),
    ("Conv3d(2, 4, 2)", [(2, 4, 5, 6)], True),
    ("Conv3d(2, 4, 2)", [(1, 3, 4, 5, 6)], True),
    ("ConvTranspose1d(2, 4, 3, stride=2, padding=1, output_padding=1, groups=2, dilation=2)",
     [(2, 2, 5)], True),
    ("ConvTranspose1d(2, 4, 3)", [(2, 5)], True),
    ("ConvTranspose1d(2, 4, 3)", [(1, 3, 5)], True),
    ("ConvTranspose2d(2, 4, 3, stride=2, padding=1)", [(2, 2, 4, 5)], True),
    ("ConvTranspose2d(2, 4, 3, stride=2, padding=1)", [(2, 4, 5)], True),
    ("ConvTranspose3d(2, 4, 2, stride=(1, 2, 1))", [(1, 2, 3, 4, 2)], True),
    ("ConvTranspose2d(2, 4, 3)", [(2, 3, 4, 5)], True),
    ("MaxPool1d(3, 2, 1, dilation=2, ceil_mode=True)", [(2, 3, 9)], True),
    ("MaxPool1d(3, return_indices=True)", [(3, 9)], True),
    ("MaxPool1d(2)", [(9,)], True),
    ("MaxPool1d(4, padding=3)", [(1, 2, 9)], True),
    ("MaxPool2d(2)", [(2, 3, 5, 5)], True),
    ("MaxPool2d((2, 3), stride=(1, 2), padding=1, ceil_mode=True, return_indices=True)",
     [(3, 6, 7)], True),
    ("MaxPool2d(3, dilation=2)", [(1, 1, 7, 7)], True),
    ("MaxPool2d(6)", [(1, 1, 5, 5)], True),
    ("MaxPool3d(2)", [(1, 2, 4, 4, 4)], True),
    ("MaxPool3d(2, stride=1, padding=1, return_indices=True)", [(2, 3, 3, 3)], True),
    ("MaxPool3d(2, ceil_mode=True)", [(1, 1, 3, 5, 4)], True),
    ("AvgPool1d(3, 2, 1, ceil_mode=True, count_include_pad=False)", [(2, 3, 8)], True),
    ("AvgPool1d(3)", [(3, 8)], True),
    ("AvgPool1d(2)", [(1, 1, 1)], True),
    ("AvgPool2d(3, stride=1, padding=1, divisor_override=2)", [(2, 2, 4, 4)], True),
    ("AvgPool2d(2, ceil_mode=True)", [(1, 1, 5, 5)], True),
    ("AvgPool2d(3, 2, 1, ceil_mode=True, count_include_pad=False)", [(1, 5, 5)], True),
    ("AvgPool2d(2, padding=2)", [(1, 1, 5, 5)], True),
    ("AvgPool3d(2, stride=1, padding=1)", [(1, 2, 3, 3, 3)], True),
    ("AvgPool3d((1, 2, 2), ceil_mode=True, count_include_pad=False)", [(2, 3, 3, 5)], True),
    ("AdaptiveAvgPool1d(3)", [(2, 3, 7)], True),
    ("AdaptiveAvgPool1d(3)", [(3, 7)], True),
    ("AdaptiveAvgPool2d((3, None))", [(2, 3, 7, 5)], True),
    ("AdaptiveAvgPool2d(4)", [(3, 5, 9)], True),
    ("AdaptiveAvgPool3d((2, 1, 3))", [(1, 2, 3, 4, 5)], True),
    ("AdaptiveMaxPool1d(3, return_indices=True)", [(2, 3, 7)], True),
    ("AdaptiveMaxPool2d((2, 3))", [(2, 3, 7, 5)], True),
    ("AdaptiveMaxPool2d(3, return_indices=True)", [(3, 4, 4)], True),
    ("AdaptiveMaxPool2d(2)", [(0, 2, 3, 3)], True),
    ("AdaptiveMaxPool3d(2)", [(2, 3, 4, 5)], True),
    ("LPPool1d(2, 3, stride=2, ceil_mode=True)", [(2, 3, 8)], True),
    ("LPPool2d(1.5, (2, 3))", [(1, 2, 4, 6)], True),
    ("LPPool3d(2, 2)", [(1, 2, 4, 4, 4)], True),
]


@pytest.mark.parametrize(("call", "shapes", "train"), LAYERS,
                         ids=[f"{c}-{s}-{t}" for c, s, t in LAYERS])
def test_layer_against_torch(call: str, shapes: list[Any], train: bool) -> None:
    rng = np.random.default_rng(0)
    compare(call, [rng.standard_normal(s) for s in shapes], train)


CALLS = """
F.interpolate(r(1, 2, 5, 5), size=(0, 2), mode='area')
F.conv1d(r(1, 3, 4), r(2, 2, 1))|F.conv1d(r(1, 2, 4), r(2, 2, 1), r(3))
F.conv1d(r(1, 2, 4), r(3, 2, 1), groups=2)|F.conv1d(r(1, 2, 4), r(2, 1, 1), groups=0)
F.conv1d(r(1, 2, 4), r(2, 2, 5))|F.conv1d(r(1, 2, 4), r(2, 2, 1), stride=0)
F.conv1d(r(1, 2, 4), r(2, 2, 1), padding=-1)|F.conv1d(r(1, 2, 4), r(2, 2, 1), dilation=0)
F.conv1d(r(1, 2, 4), r(2, 2, 1), padding='same', stride=2)|F.conv1d(r(1, 2, 4), r(2, 2, 1), padding='bad')
F.conv2d(r(1, 2, 4, 4), r(1, 2, 1, 1), groups=2)|F.conv2d(r(1, 2, 4, 4), r(2, 2, 1, 1), dilation=(1, 0))
F.conv2d(r(1, 2, 4, 4), r(2, 2, 1, 1), dilation=(-1, 1))|F.conv2d(r(1, 3, 4, 4).double(), r(2, 2, 1, 1))
F.conv2d(r(1, 2, 4, 4), r(2, 2, 1, 1), stride=0, dilation=0)|F.conv2d(r(1, 2, 4, 4), r(2, 2, 5, 5))
F.conv3d(r(1, 3, 4, 4, 4), r(2, 2, 1, 1, 1))|F.conv3d(r(1, 2, 4, 4, 4), r(2, 2, 1, 1, 1), r(3))
F.conv3d(r(1, 2, 4, 4, 4), r(2, 2, 5, 5, 5))|F.conv3d(r(1, 2, 4, 4, 4), r(2, 2, 1, 1, 1), dilation=0)
F.conv_transpose1d(r(1, 3, 4), r(2, 2, 1))|F.conv_transpose1d(r(1, 2, 4), r(2, 2, 1), r(3))
F.conv_transpose1d(r(1, 2, 4), r(2, 2, 1), dilation=0)|F.conv_transpose1d(r(1, 3, 4), r(3, 2, 1), groups=2)
F.conv_transpose2d(r(1, 1, 4, 4), r(1, 2, 1, 1), groups=2)|F.conv_transpose2d(r(1, 2, 4, 4), r(2, 2, 1, 1), output_padding=-1)
F.conv_transpose2d(r(1, 2, 4, 4), r(2, 2, 1, 1), dilation=(1, 0))|F.conv_transpose2d(r(1, 2, 4, 4), r(2, 2, 2, 2), padding=3)
F.conv_transpose3d(r(1, 2, 4, 4, 4), r(2, 2, 1, 1, 1), r(3))|F.conv_transpose3d(r(1, 2, 4, 4, 4), r(2, 2, 1, 1, 1), dilation=0)
F.conv_transpose3d(r(1, 2, 4, 4, 4), r(2, 2, 1, 1, 1), stride=2, output_padding=(0, 2, 0))
F.conv_transpose3d(r(1, 2, 1, 4, 4), r(2, 2, 1, 1, 1), padding=(3, 0, 0))
F.max_pool1d(r(9), 2)|F.max_pool1d(r(1, 2, 9), 4, padding=3)|F.max_pool1d(r(1, 2, 9), 0)
F.max_pool1d(r(1, 2, 9), 2, stride=0)|F.max_pool1d(r(1, 2, 9), 2, padding=-1)
F.max_pool1d(r(1, 2, 9), 2, dilation=0)|F.max_pool1d(r(1, 2, 1), 2)|F.max_pool1d(r(1, 2, 9), (2, 2))
F.max_pool1d(r(1, 2, 9), 2, stride=(1, 1))|F.max_pool1d(r(1, 2, 9), 2, padding=(1, 1))
F.max_pool1d(r(1, 2, 9), 2, stride=[])|F.max_pool1d(r(9), 2, return_indices=True)
F.max_pool1d(r(1, 2, 9), 2, stride=(1, 1), return_indices=True)
F.max_pool1d(r(1, 2, 9), 2, stride=0, return_indices=True)|F.max_pool1d(r(1, 2, 1), 2, return_indices=True)
F.max_pool2d(r(1, 1, 1, 5), 2)|F.max_pool2d(r(1, 1, 5, 5), 0)|F.max_pool2d(r(1, 1, 5, 5), 0, stride=1)
F.max_pool2d(r(1, 1, 5, 5), 2, stride=0)|F.max_pool2d(r(1, 1, 5, 5), 2, dilation=0)
F.max_pool2d(r(1, 1, 5, 5), 2, padding=-1)|F.max_pool2d(r(5, 5), 2)|F.max_pool2d(r(1, 1, 5, 5), (2, 2, 2))
F.max_pool2d(r(0, 1, 4, 4), 2)|F.max_pool2d(r(1, 1, 1, 5), 2, return_indices=True)
F.avg_pool1d(r(1, 1, 1), 2)|F.avg_pool1d(r(9), 2)|F.avg_pool1d(r(1, 2, 9), 4, padding=3)
F.avg_pool1d(r(1, 2, 9), 0)|F.avg_pool1d(r(1, 2, 9), 2, padding=-1)|F.avg_pool1d(r(1, 2, 9), (2, 2))
F.avg_pool1d(r(1, 2, 9), 2, stride=(1, 1))|F.avg_pool1d(r(1, 2, 9), 2, stride=[])
F.avg_pool2d(r(1, 1, 1, 5), 2)|F.avg_pool2d(r(5, 5), 2)|F.avg_pool2d(r(1, 1, 5, 5), 2, stride=0)
F.avg_pool2d(r(1, 1, 5, 5), 2, divisor_override=0)|F.avg_pool2d(r(0, 1, 4, 4), 2)
F.max_pool3d(r(1, 1, 1, 5, 5), 2)|F.max_pool3d(r(5, 5), 2)|F.max_pool3d(r(1, 1, 4, 4, 4), 2, padding=2)
F.max_pool3d(r(1, 1, 4, 4, 4), (2, 2))|F.max_pool3d(r(1, 1, 4, 4, 4), 2, dilation=0)
F.max_pool3d(r(1, 1, 4, 4, 4), 0, stride=1)|F.max_pool3d(r(1, 1, 4, 4, 4), 2, stride=(1, 1))
F.max_pool3d(r(0, 1, 4, 4, 4), 2)|F.max_pool3d(r(1, 1, 1, 4, 4), 2, ceil_mode=True)
F.avg_pool3d(r(1, 1, 1, 5, 5), 2)|F.avg_pool3d(r(5, 5), 2)|F.avg_pool3d(r(1, 1, 4, 4, 1), 2)
F.avg_pool3d(r(1, 1, 4, 4, 4), (2, 2))|F.avg_pool3d(r(1, 1, 4, 4, 4), 2, padding=(1, 1))
F.avg_pool3d(r(1, 1, 4, 4, 4), 0, stride=1)|F.avg_pool3d(r(0, 1, 4, 4, 4), 2)
F.avg_pool3d(r(1, 1, 3, 4, 4), 2, padding=1, stride=1, divisor_override=0)
F.adaptive_avg_pool1d(r(9), 2)|F.adaptive_max_pool1d(r(9), 2)|F.adaptive_max_pool1d(r(2, 0), 1)
F.adaptive_avg_pool2d(r(9), 2)|F.adaptive_max_pool2d(r(9), 2)|F.adaptive_avg_pool3d(r(2, 9), 2)
F.adaptive_max_pool3d(r(3, 3), 1)|F.adaptive_avg_pool2d(r(1, 2, 3, 3), (1, 2, 3))
F.adaptive_avg_pool1d(r(1, 2, 3), -1)|F.adaptive_max_pool2d(r(1, 2, 3, 3), -1)
F.adaptive_avg_pool2d(r(1, 2, 0, 3), 2)|F.adaptive_max_pool2d(r(1, 2, 0, 3), 2)
F.adaptive_avg_pool2d(r(2, 0, 3), 2)|F.adaptive_max_pool2d(r(1, 0, 3, 3), 2)
F.adaptive_avg_pool2d(r(1, 0, 3, 3), 2)|F.adaptive_max_pool2d(r(1, 2, 3, 3), 0)
F.adaptive_avg_pool2d(r(1, 2, 3, 3), (0, 2))|F.adaptive_avg_pool2d(r(0, 2, 3, 3), 2)
F.adaptive_max_pool2d(r(0, 2, 3, 3), 2)|F.adaptive_avg_pool2d(r(1, 2, 3, 3), (-1, 2))
F.adaptive_max_pool2d(r(1, 2, 3, 3), (2, -2))|F.adaptive_avg_pool3d(r(1, 2, 0, 3, 3), 2)
F.adaptive_max_pool3d(r(1, 2, 0, 3, 3), 2)|F.adaptive_avg_pool3d(r(1, 2, 3, 3, 3), -1)
F.adaptive_max_pool3d(r(1, 2, 3, 3, 3), -1)
"""


@pytest.mark.parametrize("call", [c for line in CALLS.strip().splitlines()
                                  for c in line.split("|")])
def test_functional_errors(call: str) -> None:
    assert outcome(rt, call) == outcome(torch, call)
