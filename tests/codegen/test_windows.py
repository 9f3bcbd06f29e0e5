"""Generated unfold (im2col) and fold (col2im) (codegen.windows): numpy's bits on random
geometries (kernel, dilation, padding, stride, pad value; overlapping and disjoint windows;
-0.0 kept where numpy keeps it), and a compiled convolution step that uses them."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import planner
import runtime as rt
from codegen import windows
from runtime.ops.conv import _fold_impl, _out_len, _unfold_impl

pytestmark = pytest.mark.skipif(not windows.available(),
                                reason="the generated windows are called as builtins")


def _geometries(count: int, seed: int) -> list[tuple]:
    rng = np.random.default_rng(seed)
    found = []
    while len(found) < count:
        n, c = (int(v) for v in rng.integers(1, 4, 2))
        h, w = (int(v) for v in rng.integers(1, 10, 2))
        k = tuple(int(v) for v in rng.integers(1, 4, 2))
        d = tuple(int(v) for v in rng.integers(1, 3, 2))
        s = tuple(int(v) for v in rng.integers(1, 4, 2))
        pad = tuple(int(v) for v in rng.integers(0, 3, 4))
        out = (_out_len(h, k[0], d[0], s[0], pad[0], pad[1]),
               _out_len(w, k[1], d[1], s[1], pad[2], pad[3]))
        if min(out) >= 1:
            found.append((n, c, h, w, k, d, s, pad, out))
    return found


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_unfold_and_fold_give_numpys_bits(dtype: type) -> None:
    rng = np.random.default_rng(0)
    for i, (n, c, h, w, k, d, s, pad, out) in enumerate(_geometries(120, 1)):
        geometry = windows.Geometry(n * c, h, w, k, d, pad, s, out)
        x = rng.standard_normal((n, c, h, w)).astype(dtype)
        x.flat[::5] = -0.0
        pad_value = (0.0, -np.inf, 1.5)[i % 3]
        want = _unfold_impl(np, x, kernel=k, dilation=d, padding=pad, stride=s,
                            pad_value=pad_value)
        got = windows.unfolder(geometry, np.dtype(dtype), pad_value)(x)
        assert got.shape == want.shape and got.dtype == want.dtype
        assert got.tobytes() == want.tobytes(), (n, c, h, w, k, d, s, pad)
        cols = rng.standard_normal(want.shape).astype(dtype)
        cols.flat[::7] = -0.0
        want = _fold_impl(np, cols, output_size=(h, w), kernel=k, dilation=d, padding=pad,
                          stride=s)
        got = windows.folder(geometry, np.dtype(dtype))(cols)
        assert got.shape == want.shape and got.dtype == want.dtype
        assert got.tobytes() == want.tobytes(), (n, c, h, w, k, d, s, pad)


def test_any_input_layout_is_made_contiguous_first() -> None:
    x = np.random.default_rng(2).standard_normal((3, 2, 6, 5)).astype(np.float32)
    view = np.swapaxes(np.swapaxes(x, 2, 3).copy(), 2, 3)  # the same values, not C-ordered
    geometry = windows.Geometry(6, 6, 5, (3, 2), (1, 1), (1, 0, 1, 1), (2, 1), (3, 6))
    unfold = windows.unfolder(geometry, np.dtype(np.float32), 0.0)
    np.testing.assert_array_equal(unfold(view), unfold(x))


def test_compiled_conv_pool_step_uses_them_and_equals_eager() -> None:
    rng = np.random.default_rng(3)
    x = rt.tensor(rng.standard_normal((4, 2, 9, 7)).astype(np.float32))
    models = []
    for _ in range(2):
        rt.manual_seed(5)
        models.append(rt.nn.Sequential(
            rt.nn.Conv2d(2, 3, 3, padding=1, stride=(1, 2)), rt.nn.ReLU(),
            rt.nn.MaxPool2d(2, ceil_mode=True), rt.nn.Conv2d(3, 4, 2, dilation=2, padding=2),
            rt.nn.AvgPool2d(2, padding=1)))

    def make(model: rt.nn.Module) -> object:
        opt = rt.optim.SGD(model.parameters(), lr=0.1)

        def step(x: rt.Tensor) -> rt.Tensor:
            opt.zero_grad()
            loss = (model(x) ** 2).mean()
            loss.backward()
            opt.step()
            return loss
        return step

    eager, compiled = make(models[0]), planner.compile(make(models[1]))
    for _ in range(3):
        want = float(eager(x))
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert float(compiled(x)) == pytest.approx(want, rel=1e-5)
    names = {s.name for s in compiled.plan.steps if hasattr(s, "name")}
    assert {"unfold", "fold"} <= names
    program = compiled.plan.executable.program()
    native = {getattr(v, "__qualname__", "") for v in program.__globals__.values()
              if getattr(v, "__module__", "") == "codegen.windows"}
    assert {"unfolder.<locals>.unfold", "folder.<locals>.fold"} <= native
    for a, b in zip(models[0].parameters(), models[1].parameters(), strict=True):
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)
