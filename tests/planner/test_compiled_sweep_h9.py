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
