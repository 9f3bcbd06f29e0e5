"""nn.functional's functions take their tensor as ``input``, PyTorch's name: called by keyword
(``F.softmax(input=x, dim=1)``) they equal the positional call."""

from __future__ import annotations

import inspect
from typing import Any

import numpy as np
import pytest

import runtime as rt

F = rt.nn.functional

CASES: list[tuple[str, tuple[int, ...], dict[str, Any]]] = [
    ("elu", (3, 4), {}), ("celu", (3, 4), {}), ("selu", (3, 4), {}), ("hardtanh", (3, 4), {}),
    ("relu6", (3, 4), {}), ("hardsigmoid", (3, 4), {}), ("hardswish", (3, 4), {}),
    ("mish", (3, 4), {}), ("softsign", (3, 4), {}), ("tanhshrink", (3, 4), {}),
    ("threshold", (3, 4), {"threshold": 0.1, "value": 0.0}), ("glu", (3, 4), {}),
    ("softmin", (3, 4), {"dim": 1}), ("sigmoid", (3, 4), {}), ("silu", (3, 4), {}),
    ("leaky_relu", (3, 4), {"negative_slope": 0.1}), ("softmax", (3, 4), {"dim": 1}),
    ("log_softmax", (3, 4), {"dim": 1}), ("layer_norm", (3, 4), {"normalized_shape": (4,)}),
    ("rms_norm", (3, 4), {"normalized_shape": (4,)}), ("dropout", (3, 4), {"p": 0.0}),
    ("dropout1d", (2, 4, 3), {"p": 0.0}), ("dropout2d", (2, 4, 3, 3), {"p": 0.0}),
    ("dropout3d", (2, 4, 3, 3, 3), {"p": 0.0}), ("group_norm", (2, 4, 3), {"num_groups": 2}),
    ("local_response_norm", (2, 4, 3), {"size": 2}),
]


@pytest.mark.parametrize(("name", "shape", "kwargs"), CASES, ids=[c[0] for c in CASES])
def test_input_by_keyword_equals_positional(name: str, shape: tuple[int, ...],
                                            kwargs: dict[str, Any]) -> None:
    fn = getattr(F, name)
    x = rt.from_numpy(np.random.default_rng(0).standard_normal(shape).astype(np.float32))
    np.testing.assert_array_equal(fn(input=x, **kwargs).numpy(), fn(x, **kwargs).numpy())
    assert next(iter(inspect.signature(fn).parameters)) == "input"


def test_first_parameter_names_match_torch() -> None:
    torch_f = pytest.importorskip("torch.nn.functional")
    for name, _, _ in CASES:
        theirs = next(iter(inspect.signature(getattr(torch_f, name)).parameters))
        assert next(iter(inspect.signature(getattr(F, name)).parameters)) == theirs, name


def test_add_and_sub_scale_a_number_by_alpha() -> None:
    """``add(t, 3.0, alpha=2)`` is ``t + 6.0`` (it raised: alpha scaled the number as a
    tensor)."""
    t = rt.ones(2, requires_grad=True)
    np.testing.assert_array_equal(rt.add(t, 3.0, alpha=2).detach().numpy(), [7.0, 7.0])
    np.testing.assert_array_equal(rt.sub(t, 3, alpha=2).detach().numpy(), [-5.0, -5.0])
    np.testing.assert_array_equal(t.add(3.0, alpha=2).detach().numpy(), [7.0, 7.0])
    rt.add(t, 3.0, alpha=2).sum().backward()
    np.testing.assert_array_equal(t.grad.numpy(), [1.0, 1.0])


def test_a_bool_mask_assignment_is_captured() -> None:
    """``x[x < 0] = 0`` (and a mask over leading dims, an int tensor's number) in a compiled
    step: captured as masked_fill_ (it ran eagerly: the mask's values were read), equal to
    eager."""
    import warnings

    import planner

    def fn(x: Any, y: Any, k: Any) -> Any:
        h = x * 2
        h[h < 0] = 0.0
        y[y[:, 0] > 0] = -1.0
        k[k > 2] = 7
        return h.sum() + y.sum() + k.sum()

    step = planner.compile(fn)
    rng = np.random.default_rng(0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # a fallback to eager warns
        for _ in range(3):
            x = rng.standard_normal((4, 5)).astype(np.float32)
            y = rng.standard_normal((3, 2, 2)).astype(np.float32)
            k = rng.integers(0, 5, (6,))
            got = step(rt.from_numpy(x.copy()), rt.from_numpy(y.copy()), rt.from_numpy(k.copy()))
            want = fn(rt.from_numpy(x.copy()), rt.from_numpy(y.copy()), rt.from_numpy(k.copy()))
            np.testing.assert_allclose(got.item(), want.item(), rtol=1e-6)


@pytest.mark.parametrize("name", ["gelu", "hardshrink", "logsigmoid", "pdist", "softplus",
                                  "softshrink"])
def test_activations_take_input_by_keyword(name: str) -> None:
    x = rt.from_numpy(np.random.default_rng(1).standard_normal((3, 4)).astype(np.float32))
    fn = getattr(F, name)
    np.testing.assert_array_equal(fn(input=x).numpy(), fn(x).numpy())


def test_linear_and_prelu_take_input_by_keyword() -> None:
    rng = np.random.default_rng(2)
    x = rt.from_numpy(rng.standard_normal((3, 4)).astype(np.float32))
    w = rt.from_numpy(rng.standard_normal((2, 4)).astype(np.float32))
    np.testing.assert_array_equal(F.linear(input=x, weight=w).numpy(), F.linear(x, w).numpy())
    a = rt.tensor([0.25])
    np.testing.assert_array_equal(F.prelu(input=x, weight=a).numpy(), F.prelu(x, a).numpy())


def test_rrelu_refuses_a_lower_bound_above_the_upper() -> None:
    for training in (False, True):
        with pytest.raises(RuntimeError, match="Lower bound should be less than or equal to "
                                               "the upper bound"):
            F.rrelu(rt.ones(3), 0.5, 0.2, training=training)
