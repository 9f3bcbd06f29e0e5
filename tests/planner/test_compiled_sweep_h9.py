"""h9's sweep of nn modules inside compiled code: ``Module.compile`` (torch's in-place
compile of a module's calls), equal to eager mode with no fallback."""

from __future__ import annotations

import copy
import pickle
import warnings

import numpy as np

import runtime as rt

nn = rt.nn
F = rt.nn.functional


def _net() -> nn.Module:
    rt.manual_seed(0)
    return nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.BatchNorm1d(8), nn.Linear(8, 3))


def test_module_compile_trains_as_eager() -> None:
    runs = []
    for compiled in (False, True):
        model = _net()
        opt = rt.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
        if compiled:
            assert model.compile() is None  # torch's: in place, nothing returned
        rng = np.random.RandomState(0)
        out = []
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for _ in range(4):
                x = rt.tensor(rng.randn(5, 6).astype(np.float32))
                y = rt.tensor(rng.randn(5, 3).astype(np.float32))
                opt.zero_grad()
                loss = F.mse_loss(model(x), y)
                loss.backward()
                opt.step()
                out.append(float(loss))
            model.eval()
            out.append(model(x).detach().numpy())
        out += [t.detach().numpy().copy() for t in model.state_dict().values()]
        runs.append(out)
        if compiled:  # the module's own state dict, no wrapper's prefix
            assert list(model.state_dict())[0] == "0.weight"
            assert model._compiled_call_impl.captures >= 1
    for got, want in zip(runs[1], runs[0], strict=True):
        np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6)


def test_module_compile_keeps_hooks_and_copies_uncompiled() -> None:
    model = nn.Sequential(nn.Linear(6, 8), nn.Tanh())
    model.compile()
    x = rt.randn(3, 6)
    plain = float(model(x).sum())
    handle = model.register_forward_hook(lambda mod, args, out: out * 2)
    np.testing.assert_allclose(float(model(x).sum()), 2 * plain, rtol=1e-5)
    np.testing.assert_allclose(float(model._call_impl(x).sum()), 2 * plain, rtol=1e-5)
    handle.remove()
    np.testing.assert_allclose(float(model(x).sum()), plain, rtol=1e-5)
    for other in (copy.deepcopy(model), pickle.loads(pickle.dumps(model))):
        assert other._compiled_call_impl is None
        np.testing.assert_allclose(float(other(x).sum()), plain, rtol=1e-6)


def test_compiled_celu_and_kept_axis_interpolate_match_torch_float64() -> None:
    """A compiled float64 step through celu (PyTorch's float32-rounded 1/alpha in its
    backward) and interpolate on an axis the factor keeps (PyTorch's copies): torch's value and
    gradient, with no fallback."""
    import pytest

    import planner

    torch = pytest.importorskip("torch")
    x0 = np.random.RandomState(0).randn(3, 1, 3, 4)
    for kw in (dict(scale_factor=(1.3, 1.7), mode="bilinear"),
               dict(scale_factor=(1.3, 1.2), mode="bicubic"),
               dict(scale_factor=(1.3, 1.7), mode="bilinear", antialias=True),
               dict(scale_factor=1.3, mode="nearest")):
        xx = x0 if kw["mode"] != "nearest" else x0[:, :, 0]
        t = torch.tensor(xx, requires_grad=True)
        want = torch.nn.functional.interpolate(torch.nn.functional.celu(t, 0.7), **kw)
        (want * want).sum().backward()

        def step(x: rt.Tensor, kw: dict = kw) -> rt.Tensor:
            x.grad = None
            y = F.interpolate(F.celu(x, 0.7), **kw)
            loss = (y * y).sum()
            loss.backward()
            return loss

        r = rt.tensor(xx, requires_grad=True)
        compiled = planner.compile(step)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for _ in range(2):
                loss = compiled(r)
        np.testing.assert_allclose(float(loss), float((want * want).sum()), rtol=1e-12)
        np.testing.assert_allclose(r.grad.numpy(), t.grad.numpy(), rtol=1e-12, atol=1e-13)
