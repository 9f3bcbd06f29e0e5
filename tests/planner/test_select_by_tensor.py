"""``x[i]`` with a 0-d integer tensor ``i`` in a compiled step: eager mode reads ``i`` as an int
(PyTorch's select), so the result is a view of ``x``; a capture cannot read ``i``, so the plan's
is a copy. Where the difference shows (``x`` written in place before the result is read, or a
write through the result), the step runs eagerly, saying why; elsewhere it replays.

The step fuzzer found the first: ``v = p[v1 % 4]`` with ``v1 = x.argmax()``, returned after the
optimizer's update of ``p``, gave the value before the update.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import planner
import runtime as rt


def _param_step(expr: str):
    p = rt.nn.Parameter(rt.tensor([1.0, 2.0, 3.0, 4.0]))
    opt = rt.optim.SGD([p], lr=0.1)

    def step(x, i):
        v = eval(expr, {}, {"p": p, "i": i, "x": x})
        loss = (p ** 2).sum() + x.sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        return v.detach()

    return step, p


def _run(step, calls, *args):
    return [step(*args).numpy().copy() for _ in range(calls)]


@pytest.mark.parametrize("expr", ["p[i]", "p[i % 4]", "p.view(2, 2)[i // 2, 0]",
                                  "p[None, i]", "p.view(2, 2)[1, i // 2]", "p[i, ...]"])
def test_a_select_read_after_its_base_is_updated_runs_eagerly(expr):
    eager, p_eager = _param_step(expr)
    step, p = _param_step(expr)
    compiled = planner.compile(step)
    x, i = rt.zeros(2), rt.tensor(2)
    want = _run(eager, 3, x, i)
    with pytest.warns(RuntimeWarning, match="runs eagerly: a tensor indexed by .* whose base "
                                            "was written in place since"):
        got = _run(compiled, 3, x, i)
    for a, b in zip(want, got):
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(p_eager.detach().numpy(), p.detach().numpy())
    # the value returned is eager mode's: a view of the updated parameter
    assert np.shares_memory(compiled(x, i).numpy(), p.detach().numpy())


def test_an_int_index_still_replays():
    step, p = _param_step("p[2]")
    compiled = planner.compile(step)
    x, i = rt.zeros(2), rt.tensor(2)
    eager, _ = _param_step("p[2]")
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        got = _run(compiled, 3, x, i)
    np.testing.assert_array_equal(got, _run(eager, 3, x, i))
    assert compiled.captures == 1


def test_a_write_through_a_select_runs_eagerly():
    def step(x):
        h = x * 2
        i = h.sum(1).argmax()
        v = h[i]
        v.mul_(10)  # writes row i of h in eager mode
        return h.sum(), v.sum()

    x = rt.randn(4, 3, generator=rt.Generator().manual_seed(0))
    compiled = planner.compile(step)
    with pytest.warns(RuntimeWarning, match="an in-place write to a tensor indexed by"):
        got = compiled(x)
    want = step(x)
    for a, b in zip(want, got):
        assert float(a) == float(b)


def test_selects_read_before_any_write_replay():
    """A 0-d index tensor picking a row of a computed value and of a weight, both read before
    the optimizer's update: the plan's copies equal eager mode's views, and it replays."""

    def make():
        rt.manual_seed(0)
        m = rt.nn.Linear(4, 3)
        opt = rt.optim.SGD(m.parameters(), lr=0.1)

        def step(x, y):
            out = m(x)
            i = out.sum(1).argmax()
            row = out[i]
            w0 = m.weight[i % 3]
            loss = (row ** 2).sum() + (w0 * 0.5).sum() + ((out - y) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            return loss.detach(), row.detach()

        return step, m

    g = rt.Generator().manual_seed(1)
    x, y = rt.randn(5, 4, generator=g), rt.randn(5, 3, generator=g)
    eager, m_eager = make()
    step, m = make()
    compiled = planner.compile(step)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        for _ in range(3):
            want, got = eager(x, y), compiled(x, y)
            for a, b in zip(want, got):
                np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(m_eager.weight.detach().numpy(), m.weight.detach().numpy(),
                               rtol=1e-5, atol=1e-6)
    assert compiled.captures == 1
