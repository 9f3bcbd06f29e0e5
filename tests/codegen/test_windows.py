"""Generated unfold (im2col) and fold (col2im) (codegen.windows): numpy's bits on random
geometries (kernel, dilation, padding, stride, pad value; overlapping and disjoint windows;
-0.0 kept where numpy keeps it), and a compiled convolution step that uses them."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import planner
import runtime as rt
from codegen import llvm_math, windows
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


@pytest.mark.parametrize("tables", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_unfold_and_fold_give_numpys_bits(dtype: type, tables: bool) -> None:
    """Both ways: through index tables (gathers) and by rows."""
    rng = np.random.default_rng(0)
    for i, (n, c, h, w, k, d, s, pad, out) in enumerate(_geometries(120, 1)):
        geometry = windows.Geometry(n * c, h, w, k, d, pad, s, out)
        x = rng.standard_normal((n, c, h, w)).astype(dtype)
        x.flat[::5] = -0.0
        pad_value = (0.0, -np.inf, 1.5)[i % 3]
        want = _unfold_impl(np, x, kernel=k, dilation=d, padding=pad, stride=s,
                            pad_value=pad_value)
        got = windows.unfolder(geometry, np.dtype(dtype), pad_value, tables)(x)
        assert got.shape == want.shape and got.dtype == want.dtype
        assert got.tobytes() == want.tobytes(), (n, c, h, w, k, d, s, pad)
        cols = rng.standard_normal(want.shape).astype(dtype)
        cols.flat[::7] = -0.0
        want = _fold_impl(np, cols, output_size=(h, w), kernel=k, dilation=d, padding=pad,
                          stride=s)
        got = windows.folder(geometry, np.dtype(dtype), tables)(cols)
        assert got.shape == want.shape and got.dtype == want.dtype
        assert got.tobytes() == want.tobytes(), (n, c, h, w, k, d, s, pad)


def test_tables_are_chosen_for_short_rows_and_disjoint_windows() -> None:
    """Index tables where rows are no longer than a vector or windows are disjoint (and the
    tables small); long rows of overlapping windows go by rows. Both give numpy's bits on
    images larger than the random ones above, a NaN and infinities among the values."""
    lanes = llvm_math.lanes("float32")
    rng = np.random.default_rng(7)
    cases = [((2, 3, 4, 4), (3, 3), (1, 1), (1, 1, 1, 1), True),
             ((2, 3, 20, 20), (2, 2), (2, 2), (0, 0, 0, 0), True),
             ((1, 2, 40, 3 * lanes), (3, 3), (1, 1), (1, 1, 1, 1), False),
             ((1, 2, 9, 2 * lanes), (3, 3), (2, 2), (1, 1, 1, 1), True),  # rows of lanes
             ((1, 1, 400, 400), (2, 2), (2, 2), (0, 0, 0, 0), False)]  # too big a table
    for (n, c, h, w), k, s, pad, tabled in cases:
        out = (_out_len(h, k[0], 1, s[0], pad[0], pad[1]),
               _out_len(w, k[1], 1, s[1], pad[2], pad[3]))
        geometry = windows.Geometry(n * c, h, w, k, (1, 1), pad, s, out)
        assert geometry.uses_tables(np.dtype(np.float32)) is tabled, (h, w, k, s)
        x = rng.standard_normal((n, c, h, w)).astype(np.float32)
        x.flat[::11] = np.nan
        x.flat[3::13] = -np.inf
        for way in (None, not tabled):
            want = _unfold_impl(np, x, kernel=k, dilation=(1, 1), padding=pad, stride=s,
                                pad_value=-np.inf)
            got = windows.unfolder(geometry, np.dtype(np.float32), -np.inf, way)(x)
            assert got.tobytes() == want.tobytes(), (h, w, way)
            want = _fold_impl(np, got, output_size=(h, w), kernel=k, dilation=(1, 1),
                              padding=pad, stride=s)
            back = windows.folder(geometry, np.dtype(np.float32), way)(got)
            assert back.tobytes() == want.tobytes(), (h, w, way)


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
    # planner.native: the program without native runs
    program = program.plain_program() if hasattr(program, "plain_program") else program
    native = {getattr(v, "__qualname__", "") for v in program.__globals__.values()
              if getattr(v, "__module__", "") == "codegen.windows"}
    assert {"unfolder.<locals>.unfold", "folder.<locals>.fold"} <= native
    for a, b in zip(models[0].parameters(), models[1].parameters(), strict=True):
        np.testing.assert_allclose(b.detach().numpy(), a.detach().numpy(), rtol=1e-5,
                                   atol=1e-6)


@pytest.mark.parametrize("op", ["argmax", "argmin"])
def test_arg_reducers_give_numpys_indices(op: str) -> None:
    rng = np.random.default_rng(4)
    for t in range(150):
        shape = tuple(int(v) for v in rng.integers(1, 6, int(rng.integers(1, 5))))
        axis = int(rng.integers(0, len(shape)))
        dtype = (np.float32, np.float64)[t % 2]
        x = rng.integers(-3, 3, shape).astype(dtype)  # ties: the first one wins
        if t % 3 == 0:
            x.flat[::4] = np.nan  # the first NaN wins
        if t % 5 == 0:
            x.flat[::3] = -0.0
        for keepdim in (False, True):
            want = getattr(np, op)(x, axis=axis, keepdims=keepdim)
            got = windows.arg_reducer(op, shape, axis, np.dtype(dtype), keepdim)(x)
            assert got.dtype == np.int64 and got.shape == want.shape
            np.testing.assert_array_equal(got, want, err_msg=f"{shape} {axis} {keepdim}")


def test_compiled_argmax_uses_generated_code() -> None:
    x = rt.tensor(np.random.default_rng(5).standard_normal((3, 5, 4)).astype(np.float32))

    def step(x: rt.Tensor) -> tuple[rt.Tensor, rt.Tensor]:
        return x.argmax(1, keepdim=True), rt.argmin(x * 2, dim=-1)

    compiled = planner.compile(step)
    for a, b in zip(compiled(x), step(x), strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    program = compiled.plan.executable.program()
    native = [v for v in program.__globals__.values()
              if getattr(v, "__qualname__", "") == "arg_reducer.<locals>.reduce"]
    assert len(native) == 2


def test_axis_summer_gives_numpys_bits() -> None:
    rng = np.random.default_rng(6)
    checked = 0
    for t in range(500):
        shape = tuple(int(v) for v in rng.integers(1, 10, int(rng.integers(2, 6))))
        axis = int(rng.integers(0, len(shape) - 1))
        if int(np.prod(shape[axis + 1:])) < 2:
            continue
        dtype = (np.float32, np.float64)[t % 2]
        x = (rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 4, shape)).astype(dtype)
        if t % 5 == 0:
            x.flat[::3] = -0.0  # numpy starts from add's identity: a sum of -0.0s is +0.0
        if t % 7 == 0:
            x.flat[::5] = np.nan
        if t % 11 == 0:
            x[...] = -0.0
        for keepdim in (False, True):
            want = np.add.reduce(x, axis=axis, keepdims=keepdim)
            got = windows.axis_summer(shape, axis, np.dtype(dtype), keepdim)(x)
            assert got.shape == want.shape and got.dtype == want.dtype
            assert got.tobytes() == want.tobytes(), (shape, axis, keepdim)
            checked += 1
    assert checked > 300
    with pytest.raises(ValueError, match="two or more elements after it"):
        windows.axis_summer((3, 4, 1), 1, np.dtype(np.float32), False)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_row_scatter_gives_np_add_at_bits(dtype: type) -> None:
    """An embedding's backward: rows added at their indices in order (repeats accumulate,
    negative indices count from the end, a row of -0.0s into zeros gives +0.0), as
    np.add.at does, over shapes with rows of any width and index arrays of any shape."""
    rng = np.random.default_rng(3)
    for n, width, idx_shape in ((1, 8, (5,)), (7, 9, (3, 4)), (50, 24, (1024,)),
                                (103, 128, (16, 64)), (4, 33, (0,))):
        g = rng.standard_normal((*idx_shape, width)).astype(dtype)
        g.flat[::6] = -0.0
        index = rng.integers(-n, n, idx_shape)
        want = np.zeros((n, width), dtype)
        np.add.at(want, index, g)
        got = windows.row_scatterer(int(np.prod(idx_shape)), n, width, np.dtype(dtype))(
            g, index)
        assert got is not None and got.shape == want.shape and got.dtype == want.dtype
        assert got.tobytes() == want.tobytes(), (n, width, idx_shape)


def test_row_scatter_declines_what_it_cannot_do() -> None:
    """None (the caller falls back to numpy, which raises its IndexError) for an index out
    of range either way, and for arguments of another dtype, shape or layout."""
    scatter = windows.row_scatterer(4, 5, 8, np.dtype(np.float32))
    g = np.ones((4, 8), np.float32)
    assert scatter(g, np.array([0, 1, 2, 4])) is not None
    assert scatter(g, np.array([0, 1, 2, -5])) is not None
    for index in (np.array([0, 1, 2, 5]), np.array([0, -6, 1, 2])):
        assert scatter(g, index) is None
    assert scatter(g.astype(np.float64), np.arange(4)) is None
    assert scatter(g, np.arange(4, dtype=np.int32)) is None
    assert scatter(np.ones((8, 4), np.float32).T, np.arange(4)) is None
    assert scatter(np.ones((4, 9), np.float32), np.arange(4)) is None
    assert scatter(g, np.arange(8)[::2]) is None


def test_compiled_embedding_backward_runs_generated_code_and_equals_eager() -> None:
    """A compiled embedding step (its backward a row scatter) gives eager mode's gradient
    bit for bit, with repeated indices, and still raises PyTorch's error for a bad index."""
    rng = np.random.default_rng(4)
    weight = rng.standard_normal((11, 16)).astype(np.float32)
    emb = rt.nn.Embedding(11, 16)
    with rt.no_grad():
        emb.weight.copy_(rt.tensor(weight))
    up = rt.tensor(rng.standard_normal((4, 6, 16)).astype(np.float32))

    def step(idx: rt.Tensor) -> rt.Tensor:
        emb.weight.grad = None
        loss = (emb(idx) * up).sum()
        loss.backward()
        return emb.weight.grad.clone()

    idx = rt.tensor(rng.integers(0, 11, (4, 6)))
    want = step(idx).numpy()
    compiled = planner.compile(step)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(2):
            got = compiled(idx).numpy()
            assert got.tobytes() == want.tobytes()
    with pytest.raises(IndexError, match="index out of range in self"):
        compiled(rt.tensor(np.full((4, 6), 11)))
