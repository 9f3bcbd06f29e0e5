"""scatter_reduce on a device whose ufunc has ``at`` but refuses to run it (CuPy 14's
multiply.at raises NotImplementedError, maximum.at for some dtypes): the host computes it,
as where the module has no ``at`` at all."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import runtime as rt
from tests.fakecuda import fake_cuda_fixture  # noqa: F401


@pytest.mark.parametrize("reduce", ["prod", "amax", "amin", "sum"])
def test_a_refused_ufunc_at_falls_back_to_the_host(fake_cuda: Any, reduce: str,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    ufunc = getattr(fake_cuda, {"prod": "multiply", "amax": "maximum", "amin": "minimum",
                                "sum": "add"}[reduce])

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise NotImplementedError("not supported on this device")

    monkeypatch.setattr(ufunc, "at", refuse, raising=False)
    x = rt.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    index = rt.tensor([[0, 1, 0], [1, 0, 1]])
    src = rt.tensor([[2.0, 3.0, 4.0], [5.0, 6.0, 7.0]])
    want = x.scatter_reduce(1, index, src, reduce)
    got = x.to("cuda").scatter_reduce(1, index.to("cuda"), src.to("cuda"), reduce)
    assert got.device.type == "cuda"
    np.testing.assert_array_equal(got.cpu().numpy(), want.numpy())
