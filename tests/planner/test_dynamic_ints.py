"""A Python int argument that changes between calls (a step counter, an epoch, an index
passed per call) becomes an input of the plan at its second value, as torch.compile's
automatic dynamic makes it: two captures in all, not one per value until the
recompile_limit made every later call eager. It stands for the int it is: promoted as a
Python int (an int32 tensor plus it stays int32), turned into a float where Python would
(``n / 2``, ``n * 0.1``), and a number computed from it that the step returns is the
Python number at each call. Where the step needs its value in Python (``range(n)``,
``x[:n]``, ``if n``) it is captured as a constant per value, as before; a bool stays a
constant, as in torch.compile."""

from __future__ import annotations

import logging
import warnings
from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt
from runtime import nn

F = nn.functional
COUNTS = [0, 3, 1, 7, 2, 12, 5, 100, -4]


def _train(compiled: bool, counts: list[int]) -> tuple[list[Any], list[np.ndarray], Any]:
    rt.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 6), nn.Tanh(), nn.Linear(6, 2))
    opt = rt.optim.AdamW(model.parameters(), lr=1e-2)
    rng = np.random.default_rng(0)
    xs = rt.from_numpy(rng.standard_normal((4, 8, 4)).astype(np.float32))
    y = rt.from_numpy(rng.standard_normal((8, 2)).astype(np.float32))

    def step(xs: Any, y: Any, it: int) -> Any:
        opt.zero_grad()
        out = model(xs[it % 4])  # the batch the counter picks, read at each call
        warm = (it + 1) / 10  # a Python float from the int
        loss = F.mse_loss(out, y) * (1 + it * 0.1) + (out ** 2).mean() * warm
        loss.backward()
        opt.step()
        return loss.detach(), it + 1, it // 3, -it, it / 4

    if compiled:
        step = planner.compile(step)
    results = [step(xs, y, it) for it in counts]
    return results, [p.detach().numpy().copy() for p in model.parameters()], step


def test_a_step_counter_is_an_input_after_its_second_value() -> None:
    want = _train(False, COUNTS)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no fallback, no recompile_limit
        got = _train(True, COUNTS)
    assert got[2].captures == 2  # the first value's constant plan, then the input's
    for g, w in zip(got[0], want[0], strict=True):
        np.testing.assert_allclose(g[0].numpy(), w[0].numpy(), rtol=2e-5, atol=1e-6)
        assert g[1:] == w[1:]
        assert [type(v) for v in g[1:]] == [int, int, int, float]
    for g, w in zip(got[1], want[1], strict=True):
        np.testing.assert_allclose(g, w, rtol=2e-5, atol=1e-5)


def test_an_int_promotes_as_a_python_int() -> None:
    """An int32 tensor plus the int stays int32, a float32 one times it float32, a float64
    one divided by ``n / 3`` float64 with ``n / 3`` the Python float (not float32's)."""
    def step(i: Any, f: Any, d: Any, n: int) -> Any:
        return i + n, i * n // 2, f * n, d / (n / 3), d * (n % 3 - n), (i > n).sum()

    compiled = planner.compile(step)
    i = rt.arange(6, dtype=rt.int32)
    f, d = rt.arange(6.0) / 7, rt.arange(6, dtype=rt.float64) / 7
    for n in (1, 2, 5, 7, -3, 2 ** 40):
        got, want = compiled(i, f, d, n), step(i, f, d, n)
        for g, w in zip(got, want, strict=True):
            assert g.dtype == w.dtype
            np.testing.assert_array_equal(g.numpy(), w.numpy())
    assert compiled.captures == 2


def test_an_int_index_out_of_range_raises_at_a_replay() -> None:
    w = rt.ones(4, 3, requires_grad=True)

    def step(x: Any, n: int) -> Any:
        (grad,) = rt.autograd.grad((w[n] * x).sum(), [w])
        return grad

    compiled = planner.compile(step)
    x = rt.arange(3.0)
    for n in (0, 1, -1, 3, -4):
        np.testing.assert_array_equal(compiled(x, n).numpy(), step(x, n).numpy())
    assert compiled.captures == 2
    for n in (4, -5):
        with pytest.raises(IndexError, match=f"index {n} is out of bounds for dimension 0 "
                                             "with size 4"):
            compiled(x, n)


@pytest.mark.parametrize("use", ["range", "slice", "shape"])
def test_an_int_read_as_a_value_is_captured_as_a_constant(
        use: str, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="planner")
    w = rt.ones(6, requires_grad=True)

    def step(x: Any, n: int) -> Any:
        if use == "range":
            loss = sum((x[i] * w[i] for i in range(n)), rt.zeros(()))
        elif use == "slice":
            loss = (x[:n] * w[:n]).sum()
        else:
            loss = (x * w).sum() + rt.zeros(n).sum()
        (grad,) = rt.autograd.grad(loss, [w])
        return grad

    compiled = planner.compile(step)
    x = rt.arange(6.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        for n in (2, 3, 5, 2):
            np.testing.assert_array_equal(compiled(x, n).numpy(), step(x, n).numpy())
    assert any("as constants" in r.getMessage() for r in caplog.records)
    assert compiled.captures == 3  # a constant per distinct value (the input's try broke)


def test_a_bool_argument_stays_a_constant() -> None:
    def step(x: Any, flag: bool) -> Any:
        return x * flag + 1

    compiled = planner.compile(step)
    x = rt.arange(3.0)
    for flag in (True, False, True, False):
        got, want = compiled(x, flag), step(x, flag)
        assert got.dtype == want.dtype
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert compiled.captures == 2  # one per value, never an input


def test_an_int_past_int64_is_a_constant() -> None:
    def step(x: Any, n: int) -> Any:
        return x * n

    compiled = planner.compile(step)
    x = rt.arange(3, dtype=rt.float64)
    # (PyTorch's scalars past int64 are uint64s: 2 ** 70 and -(2 ** 64) are its OverflowError)
    for n in (1, 2, 2 ** 64 - 1, 3, 2 ** 63):
        np.testing.assert_array_equal(compiled(x, n).numpy(), step(x, n).numpy())
    assert compiled.captures == 4  # 1, then the input (2, 3), and each huge value
    for n in (2 ** 70, -(2 ** 64)):
        with pytest.raises(OverflowError):
            compiled(x, n)


@pytest.mark.parametrize(("dynamic", "captures"), [(None, 2), (True, 1), (False, 4)])
def test_the_dynamic_option_covers_ints(dynamic: bool | None, captures: int) -> None:
    def step(x: Any, n: int) -> Any:
        return (x * n).exp().sum()

    compiled = planner.compile(step, dynamic=dynamic)
    x = rt.arange(3.0) / 10
    for n in (1, 2, 3, -1):
        np.testing.assert_allclose(compiled(x, n).item(), step(x, n).item(), rtol=1e-6)
    assert compiled.captures == captures


@pytest.mark.parametrize("kind", [np.int64, np.int32, np.float32, np.float16, np.bool_])
def test_numpy_scalar_arguments_are_keyed_by_value(kind: Any) -> None:
    """A numpy scalar that is no Python int or float was keyed by its id, which a new scalar
    takes over from a freed one: a call with another value replayed the old value's plan,
    silently. It is keyed by its value (a constant of the plan, one capture per value)."""
    def step(x: Any, s: Any) -> Any:
        return (x * s).sum()

    compiled = planner.compile(step, recompile_limit=16)
    x = rt.arange(3.0)
    values = [kind(v) for v in (1, 2, 3, 1, 5, 0, 2)]
    for v in values:
        assert compiled(x, v).item() == step(x, v).item()
    assert compiled.captures == len({v.item() for v in values})


@pytest.mark.parametrize("use", ["isinstance", "type", "format", "str"])
def test_a_type_check_or_text_of_a_number_reads_it_as_a_value(use: str) -> None:
    """The stand-in of a number argument is a tensor: ``isinstance(n, int)`` would be False
    and ``f"{n}"`` its placeholder's text, a silently other branch. A step that checks a
    number type, or formats the number, has it as a constant (compiled equals eager)."""
    def step(x: Any, n: Any) -> Any:
        if use == "isinstance":
            scale = 2 if isinstance(n, int) else 3
        elif use == "type":
            scale = 2 if type(n) is float else 3
        elif use == "format":
            scale = len(f"{n}")
        else:
            scale = len(str(n))
        return (x * scale * n).sum()

    compiled = planner.compile(step)
    x = rt.arange(3.0)
    values = [1, 2, 10, 3] if use != "type" else [0.5, 1.5, 2.25, 3.0]
    for v in values:
        assert compiled(x, v).item() == step(x, v).item()


def test_a_type_check_of_another_value_keeps_numbers_inputs() -> None:
    """``isinstance(out, tuple)`` names no number type: the int stays an input."""
    def step(x: Any, n: int) -> Any:
        out = x * 2
        if isinstance(out, tuple):
            out = out[0]
        return (out * n).sum()

    compiled = planner.compile(step)
    x = rt.arange(3.0)
    for n in (1, 2, 3, 4, 5):
        assert compiled(x, n).item() == step(x, n).item()
    assert compiled.captures == 2
