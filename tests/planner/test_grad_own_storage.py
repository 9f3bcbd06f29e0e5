"""A parameter's first .grad is memory of its own in eager mode (AccumulateGrad keeps the
incoming gradient only where nobody else can see it, and copies it otherwise), so a compiled
step must not let an in-place write to one .grad show through another tensor that the same
gradient value reached: the other input of an add, or the gradient argument of backward().
Before, the capture gave such tensors one storage, and a clipping loop's ``g.mul_(c)``
scaled a shared gradient once per parameter (found by the step fuzzer, seed 805418)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import planner
import runtime as rt

F = rt.nn.functional


def _twice(make):
    """The same step built twice: run eagerly and compiled (a fallback is an error)."""
    eager, compiled = make(), make()
    return eager, compiled, planner.compile(compiled[-1])


def _values(out):
    return [np.array(t.detach().numpy(), copy=True) for t in out]


def _run(eager, compiled, step, calls=3, args=()):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (create_graph's reference-cycle note, PyTorch's)
        warnings.filterwarnings("error", message="planner")  # a fallback fails the test
        for _ in range(calls):
            want = _values(eager[-1](*args()))
            got = _values(step(*args()))
            for w, g in zip(want, got, strict=True):
                np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-7)
    assert step.captures == 1


@pytest.mark.parametrize("shape", [(), (2,), (2, 3)])
def test_mul_of_each_grad_an_add_reached(shape):
    def make():
        a = rt.tensor(np.full(shape, 2.0, np.float32), requires_grad=True)
        b = rt.tensor(np.full(shape, 3.0, np.float32), requires_grad=True)

        def step(g):
            a.grad = None
            b.grad = None
            (a + b).backward(g * 1.0)
            for p in (a, b):
                p.grad.mul_(0.5)
            return a.grad.clone(), b.grad.clone()
        return a, b, step

    eager, compiled, step = _twice(make)
    _run(eager, compiled, step, args=lambda: (rt.ones(shape),))
    assert compiled[0].grad.tolist() == eager[0].grad.tolist() == np.full(shape, 0.5).tolist()
    assert compiled[1].grad.tolist() == np.full(shape, 0.5).tolist()


@pytest.mark.parametrize("optimizer", ["sgd", "adamw"])
def test_clip_grad_norm_with_a_shared_gradient(optimizer):
    # the fuzzer's program: v0 = p0 + p2; mse loss; clip_grad_norm_(params, 0.5); SGD
    def make():
        ps = [rt.tensor(np.float32(v), requires_grad=True) for v in (-0.7, 0.4, -1.0)]
        ps.append(rt.tensor(np.float32([0.1, 0.2, 0.3, 0.4]), requires_grad=True))
        opt = (rt.optim.SGD(ps, lr=0.1) if optimizer == "sgd"
               else rt.optim.AdamW(ps, lr=0.1))

        def step(x):
            v0 = (ps[0] + ps[2]) * x  # p0 and p2 get one gradient value
            loss = F.mse_loss(v0, v0.detach() * 0.5)
            opt.zero_grad()
            loss.backward()
            norm = rt.nn.utils.clip_grad_norm_(ps, 0.5)
            opt.step()
            return loss, norm, *ps
        return ps, step

    eager, compiled, step = _twice(make)
    _run(eager, compiled, step, calls=4, args=lambda: (rt.tensor(np.float32(1.0)),))


def test_backward_gradient_argument_is_not_written_through_grad():
    def make():
        p = rt.tensor(np.float32([2.0, 1.0]), requires_grad=True)

        def step(g):
            p.grad = None
            p.backward(g)
            p.grad.mul_(2)
            return p.grad.clone(), g
        return p, step

    eager, compiled, step = _twice(make)
    for _ in range(3):
        ge = rt.tensor(np.float32([1.0, 3.0]))
        gc = rt.tensor(np.float32([1.0, 3.0]))
        eager[-1](ge)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            step(gc)
        assert gc.tolist() == ge.tolist() == [1.0, 3.0]
        assert compiled[0].grad.tolist() == eager[0].grad.tolist() == [2.0, 6.0]


def test_grads_of_one_value_stay_apart_after_the_call():
    def make():
        a = rt.tensor(np.float32([2.0, 1.0]), requires_grad=True)
        b = rt.tensor(np.float32([3.0, 4.0]), requires_grad=True)

        def step(g):
            a.grad = None
            b.grad = None
            (a + b).backward(g * 1.0)
            return a.grad, b.grad
        return a, b, step

    eager, compiled, step = _twice(make)
    for _ in range(3):
        step(rt.ones(2))
        assert not np.shares_memory(compiled[0].grad.numpy(), compiled[1].grad.numpy())
    compiled[0].grad.mul_(2)
    assert compiled[1].grad.tolist() == [1.0, 1.0]


def test_create_graph_grads_of_one_value_stay_apart():
    def make():
        a = rt.tensor(np.float32([2.0, 1.0]), requires_grad=True)
        b = rt.tensor(np.float32([3.0, 4.0]), requires_grad=True)

        def step():
            a.grad = None
            b.grad = None
            (a * a + b).sum().backward(create_graph=True)
            pen = (a.grad * b.grad).sum()
            with rt.no_grad():
                a.grad.mul_(0.5)
            return pen.detach(), a.grad.detach().clone(), b.grad.detach().clone()
        return a, b, step

    eager, compiled, step = _twice(make)
    _run(eager, compiled, step, args=lambda: ())
