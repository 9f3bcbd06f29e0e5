"""requires_grad_ takes a bool only, as PyTorch's argument parser (an int, None or numpy bool
is a TypeError naming its type), on tensors and through Module.requires_grad_."""

from __future__ import annotations

import numpy as np
import pytest

import runtime as rt


@pytest.mark.parametrize(("value", "name"), [(3, "int"), (None, "NoneType"),
                                             (np.bool_(True), "numpy.bool"), (1.0, "float")])
def test_non_bool_is_a_type_error(value: object, name: str) -> None:
    text = f"requires_grad_(): argument 'requires_grad' (position 1) must be bool, not {name}"
    with pytest.raises(TypeError) as info:
        rt.zeros(2).requires_grad_(value)
    assert str(info.value) == text
    with pytest.raises(TypeError):
        rt.nn.Linear(1, 1).requires_grad_(value)


@pytest.mark.parametrize("value", [3, None, np.bool_(True)])
def test_same_text_as_torch(value: object) -> None:
    torch = pytest.importorskip("torch")
    with pytest.raises(TypeError) as theirs:
        torch.zeros(2).requires_grad_(value)
    with pytest.raises(TypeError) as ours:
        rt.zeros(2).requires_grad_(value)
    assert str(ours.value) == str(theirs.value)


def test_bools_still_work() -> None:
    assert rt.zeros(2).requires_grad_().requires_grad
    assert not rt.zeros(2).requires_grad_(False).requires_grad
    m = rt.nn.Linear(1, 1).requires_grad_(False)
    assert not any(p.requires_grad for p in m.parameters())
