"""Issue 11's module plumbing against PyTorch 2.13: forward hooks and forward pre-hooks
(replacing inputs or outputs, with_kwargs, always_call when forward raises, prepend,
removal, handles as context managers), ModuleList, ModuleDict, ParameterList,
ParameterDict and Sequential (every method, their errors, reprs and state_dict keys); and
optimizer and scheduler state dicts saved by torch loaded here, the steps after equal to
torch's."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")


def _plain(o: Any) -> Any:
    if isinstance(o, (torch.Tensor, rt.Tensor)):
        return ("T", type(o).__name__, str(o.dtype).split(".")[-1], tuple(o.shape),
                o.detach().numpy().round(6).tolist())
    if isinstance(o, dict):
        return "D", type(o).__name__, [(k, _plain(v)) for k, v in o.items()]
    if isinstance(o, (list, tuple)):
        return type(o).__name__, [_plain(v) for v in o]
    if isinstance(o, (torch.nn.Module, rt.nn.Module)):
        return "M", type(o).__name__
    if type(o).__name__ in ("dict_keys", "odict_keys"):
        return "keys", list(o)
    return type(o).__name__, "fn" if callable(o) else o


def _outcome(lib: Any, code: str) -> str:
    scope = {"lib": lib, "np": np, "nn": lib.nn, "log": []}
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            exec(code, scope)  # noqa: S102 - the table below
    except Exception as e:  # noqa: BLE001 - the texts are compared
        return f"{type(e).__name__}: {e}".replace("torch", "X").replace("runtime", "X")
    texts = [str(w.message) for w in caught]
    return repr((_plain(scope.get("r")), _plain(scope["log"]), texts)).replace(
        "torch", "X").replace("runtime", "X")


L = ("m = nn.Linear(2, 2); m.weight.data.copy_(lib.tensor([[1., 2.], [3., -4.]])); "
     "m.bias.data.fill_(0.5); x = lib.ones(1, 2);")
CODES = [
    L + "h = m.register_forward_hook(lambda mod, i, o: log.append(('f', i, o.shape))); m(x); h.remove(); m(x); r = len(log)",
    L + "m.register_forward_hook(lambda mod, i, o: o * 0); r = m(x)",
    L + "m.register_forward_pre_hook(lambda mod, i: (i[0] * 2,)); r = m(x)",
    L + "m.register_forward_pre_hook(lambda mod, i: i[0] * 2); r = m(x)",
    L + "m.register_forward_pre_hook(lambda mod, a, k: ((a[0] * 2,), k), with_kwargs=True); r = m(x)",
    L + "m.register_forward_pre_hook(lambda mod, a, k: None, with_kwargs=True); r = m(input=x)",
    L + "m.register_forward_pre_hook(lambda mod, a, k: (a, k), with_kwargs=True); r = m(input=x)",
    L + "m.register_forward_pre_hook(lambda mod, a, k: 3, with_kwargs=True); r = m(x)",
    L + "m.register_forward_hook(lambda mod, a, k, o: log.append((a, k)), with_kwargs=True); m(input=x); r = log",
    L + "m.register_forward_hook(lambda mod, a, o: log.append(1)); m.register_forward_hook(lambda mod, a, o: log.append(2), prepend=True); m(x); r = log",
    L + "m.register_forward_pre_hook(lambda mod, a: log.append(1)); m.register_forward_pre_hook(lambda mod, a: log.append(2), prepend=True); m(x); r = log",
    "class M(nn.Module):\n  def forward(self, x): raise ValueError('boom')\nm = M(); m.register_forward_hook(lambda mod, a, o: log.append('always'), always_call=True); m.register_forward_hook(lambda mod, a, o: log.append('not'))\ntry: m(1)\nexcept ValueError as e: log.append(str(e))\nr = log",
    "class M(nn.Module):\n  def forward(self, x): raise ValueError('boom')\nm = M(); m.register_forward_hook(lambda mod, a, k, o: log.append(('always', o)), always_call=True, with_kwargs=True)\ntry: m(1)\nexcept ValueError as e: log.append(str(e))\nr = log",
    L + "h = m.register_forward_hook(lambda mod, a, o: None); r = (type(h).__name__, h.id >= 0); h.remove(); h.remove()",
    L + "with m.register_forward_hook(lambda mod, a, o: log.append(1)): m(x)\nm(x); r = log",
    "l = nn.ModuleList([nn.Linear(1, 1), nn.ReLU()]); l.append(nn.Tanh()); l.extend([nn.Sigmoid()]); l.insert(0, nn.Identity()); r = [type(x).__name__ for x in l] + [len(l), type(l[1:]).__name__, type(l[-1]).__name__]",
    "l = nn.ModuleList([nn.Linear(1, 1), nn.ReLU()]); del l[0]; r = ([type(x).__name__ for x in l], list(dict(l.named_modules())))",
    "l = nn.ModuleList([nn.Linear(1, 1)]); l[5]",
    "l = nn.ModuleList([nn.Linear(1, 1)]); l.append(3)",
    "l = nn.ModuleList([nn.Linear(1, 1)]); r = l.pop(0)",
    "l = nn.ModuleList([nn.Linear(1, 1), nn.ReLU()]); r = repr(l)",
    "l = nn.ModuleList([nn.Linear(1, 1)]) + nn.ModuleList([nn.ReLU()]); r = [type(x).__name__ for x in l]",
    "l = nn.ModuleList([nn.Linear(1, 1)]); l += [nn.ReLU()]; r = len(l)",
    "l = nn.ModuleList([nn.Linear(1, 1)]); l[0] = nn.ReLU(); r = repr(l)",
    "l = nn.ModuleList(); r = (len(l), list(l.state_dict()))",
    "l = nn.ModuleList([nn.Linear(1, 1), nn.Linear(1, 2)]); r = list(l.state_dict())",
    "l = nn.ModuleList([nn.Linear(1, 1)]); l()",
    "d = nn.ModuleDict({'a': nn.Linear(1, 1), 'b': nn.ReLU()}); d['c'] = nn.Tanh(); d.update({'e': nn.Identity()}); r = (list(d.keys()), [type(v).__name__ for v in d.values()], len(d), 'a' in d, list(d.state_dict()))",
    "d = nn.ModuleDict({'a': nn.Linear(1, 1)}); r = d.pop('a')",
    "d = nn.ModuleDict({'a': nn.Linear(1, 1)}); d['x']",
    "d = nn.ModuleDict({'a': nn.Linear(1, 1)}); d[1] = nn.ReLU()",
    "d = nn.ModuleDict([('b', nn.ReLU()), ('a', nn.Tanh())]); r = list(d)",
    "d = nn.ModuleDict({'a': nn.Linear(1, 1)}); d.update([('z', nn.ReLU())]); d.update(3)",
    "d = nn.ModuleDict({'a': nn.Linear(1, 1)}); r = repr(d)",
    "d = nn.ModuleDict({'a': nn.Linear(1, 1)}); d.clear(); r = len(d)",
    "d = nn.ModuleDict({'a.b': nn.Linear(1, 1)})",
    "d = nn.ModuleDict({'': nn.Linear(1, 1)})",
    "p = nn.ParameterList([nn.Parameter(lib.ones(1)), lib.zeros(2)]); r = [(type(x).__name__, x.requires_grad) for x in p] + [list(p.state_dict()), len(p)]",
    "p = nn.ParameterList([nn.Parameter(lib.ones(1))]); p.append(lib.ones(3)); p.extend([nn.Parameter(lib.ones(2))]); r = (list(dict(p.named_parameters())), repr(p))",
    "p = nn.ParameterList([1.5, 'x']); r = [type(v).__name__ for v in p]",
    "p = nn.ParameterList([nn.Parameter(lib.ones(1))]); p[0] = lib.zeros(2); r = (type(p[0]).__name__, p[0])",
    "p = nn.ParameterList([nn.Parameter(lib.ones(1))]); r = p[5]",
    "p = nn.ParameterList([nn.Parameter(lib.ones(1)), nn.Parameter(lib.ones(2))]); r = type(p[0:1]).__name__",
    "p = nn.ParameterDict({'a': nn.Parameter(lib.ones(1)), 'b': lib.zeros(2)}); p['c'] = lib.ones(3); r = (list(p.keys()), [type(v).__name__ for v in p.values()], list(p.state_dict()), repr(p))",
    "p = nn.ParameterDict({'a': nn.Parameter(lib.ones(1))}); r = (p.get('z', 5), 'a' in p, p.pop('a'), len(p))",
    "p = nn.ParameterDict({'a': nn.Parameter(lib.ones(1))}); r = p['z']",
    "p = nn.ParameterDict({'a': nn.Parameter(lib.ones(1))}); p.update({'b': lib.ones(2)}); r = (list(p), p.setdefault('q', lib.ones(1)))",
    "p = nn.ParameterDict({'a': nn.Parameter(lib.ones(1))}) | nn.ParameterDict({'b': nn.Parameter(lib.ones(2))}); r = list(p)",
    "p = nn.ParameterDict({'a': 3}); r = (type(p['a']).__name__, list(p.state_dict()))",
    "p = nn.ParameterDict({'a': nn.Parameter(lib.ones(1))}); r = (p.copy().keys(), list(p.items())[0][0], p.fromkeys(['x', 'y'], lib.ones(1)))",
    "s = nn.Sequential(nn.Linear(2, 2), nn.ReLU()); r = (list(s.state_dict()), type(s[0:1]).__name__, len(s))",
    "s = nn.Sequential(nn.Linear(2, 2), nn.ReLU()); s.append(nn.Tanh()); r = [type(m).__name__ for m in s]",
]


@pytest.mark.parametrize("code", CODES)
def test_modules_match_torch(code: str) -> None:
    assert _outcome(rt, code) == _outcome(torch, code)


def _to_rt(o: Any) -> Any:
    if isinstance(o, torch.Tensor):
        return rt.tensor(o.detach().numpy().copy())
    if isinstance(o, dict):
        return {k: _to_rt(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return type(o)(_to_rt(v) for v in o)
    return o


@pytest.mark.parametrize(("name", "kw"), [
    ("Adam", {"lr": 0.1, "amsgrad": True}), ("AdamW", {"lr": 0.1}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "nesterov": True}),
    ("RMSprop", {"lr": 0.01, "centered": True, "momentum": 0.5}),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.1})])
def test_an_optimizer_state_saved_by_torch_continues_here(name: str, kw: dict[str, Any]) -> None:
    init = np.random.default_rng(0).standard_normal((3, 2))
    tp = torch.nn.Parameter(torch.tensor(init))
    topt = getattr(torch.optim, name)([tp], **kw)
    for i in range(3):
        tp.grad = torch.ones_like(tp) * (i + 1)
        topt.step()
    rp = rt.nn.Parameter(rt.tensor(tp.detach().numpy().copy()))
    ropt = getattr(rt.optim, name)([rp], **kw)
    ropt.load_state_dict(_to_rt(topt.state_dict()))
    for i in range(3):
        tp.grad = torch.ones_like(tp) * (i + 5)
        topt.step()
        rp.grad = rt.ones_like(rp) * (i + 5)
        ropt.step()
    np.testing.assert_allclose(rp.detach().numpy(), tp.detach().numpy(), rtol=1e-12)


@pytest.mark.parametrize(("name", "kw"), [
    ("StepLR", {"step_size": 2}), ("OneCycleLR", {"max_lr": 1.0, "total_steps": 20}),
    ("CosineAnnealingWarmRestarts", {"T_0": 3}), ("ReduceLROnPlateau", {"patience": 1}),
    ("CyclicLR", {"base_lr": 0.1, "max_lr": 1.0, "step_size_up": 3})])
def test_a_schedule_saved_by_torch_continues_here(name: str, kw: dict[str, Any]) -> None:
    args = [1.0] if name == "ReduceLROnPlateau" else []
    tp = torch.nn.Parameter(torch.ones(1))
    topt = torch.optim.SGD([tp], lr=0.1, momentum=0.9)
    tsched = getattr(torch.optim.lr_scheduler, name)(topt, **kw)
    for _ in range(5):
        topt.step()
        tsched.step(*args)
    rp = rt.nn.Parameter(rt.ones(1))
    ropt = rt.optim.SGD([rp], lr=0.1, momentum=0.9)
    rsched = getattr(rt.optim.lr_scheduler, name)(ropt, **kw)
    ropt.load_state_dict(_to_rt(topt.state_dict()))
    rsched.load_state_dict(_to_rt(tsched.state_dict()))
    for _ in range(8):
        topt.step()
        tsched.step(*args)
        ropt.step()
        rsched.step(*args)
        assert ropt.param_groups[0]["lr"] == pytest.approx(topt.param_groups[0]["lr"],
                                                           rel=1e-12)
        assert ropt.param_groups[0]["momentum"] == topt.param_groups[0]["momentum"]
