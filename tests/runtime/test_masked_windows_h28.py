"""rt.masked (torch.masked's functional reductions and normalizations) and rt.signal.windows
against PyTorch: values, dtypes, shapes, the masked-out positions, error types and texts, and
float64 gradients (gradcheck, and torch's own)."""
from __future__ import annotations

import pytest

import runtime as rt


@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
def test_scan_to_bool_raises_as_torch(name: str) -> None:
    """torch's cumsum/cumprod have no bool kernel: dtype=bool (or a bool out=) raises; rt
    scanned in int64 and cast the result to bool."""
    x = rt.tensor([1, 0, 1])
    msg = f'"{name}_out_cpu" not implemented for \'Bool\''
    with pytest.raises(NotImplementedError, match=msg):
        getattr(rt, name)(x, 0, dtype=rt.bool)
    with pytest.raises(NotImplementedError, match=msg):
        getattr(rt, name)(x, 0, out=rt.empty(3, dtype=rt.bool))
    assert getattr(rt, name)(x.bool(), 0).dtype is rt.int64
