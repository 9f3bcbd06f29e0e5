"""Backward node names (``grad_fn.name()``, the type's name, the repr) against torch's for
the same call, over ops whose node an earlier sweep found named otherwise; and the ops that
returned their input itself where PyTorch returns a view of its own (squeeze, expand, t)."""

from __future__ import annotations

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")


def _t(m, shape=(3, 4), seed=0, positive=False):
    a = np.random.default_rng(seed).standard_normal(shape)
    if positive:
        a = np.abs(a) + 0.5
    return m.tensor(a, dtype=m.float64, requires_grad=True)


def _spd(m):
    a = np.random.default_rng(3).standard_normal((3, 3))
    return m.tensor(a @ a.T + 3 * np.eye(3), dtype=m.float64, requires_grad=True)


CALLS = {
    "addcdiv": lambda m, x, y: m.addcdiv(x, x, y),
    "aminmax": lambda m, x, y: m.aminmax(x, dim=0),
    "cdist": lambda m, x, y: m.cdist(x, y),
    "dist": lambda m, x, y: m.dist(x, y),
    "clamp_tensor": lambda m, x, y: m.clamp(x, min=y),
    "clamp_min_tensor": lambda m, x, y: x.clamp_min(y),
    "clamp_max_number": lambda m, x, y: m.clamp_max(x, 0.5),
    "clip": lambda m, x, y: m.clip(x, y, None),
    "cross": lambda m, x, y: m.cross(x[:, :3], y[:, :3], dim=1),
    "diag_2d": lambda m, x, y: m.diag(x),
    "diag_embed": lambda m, x, y: m.diag_embed(x),
    "exp2": lambda m, x, y: m.exp2(x),
    "fill_number": lambda m, x, y: m.fill(x, 0),
    "fill_tensor": lambda m, x, y: m.fill(x, m.tensor(1.0, dtype=m.float64)),
    "fmax": lambda m, x, y: m.fmax(x, y),
    "fmin": lambda m, x, y: m.fmin(x, y),
    "fmod_tensor": lambda m, x, y: m.fmod(x, y),
    "fmod_number": lambda m, x, y: m.fmod(x, 2.0),
    "remainder_tensor": lambda m, x, y: x % y,
    "remainder_number": lambda m, x, y: m.remainder(x, 2.0),
    "frac": lambda m, x, y: x.frac(),
    "kron": lambda m, x, y: m.kron(x, y),
    "kthvalue": lambda m, x, y: m.kthvalue(x, 2),
    "mode": lambda m, x, y: m.mode(x),
    "median_dim": lambda m, x, y: m.median(x, 0),
    "nanmedian_dim": lambda m, x, y: m.nanmedian(x, 1),
    "ldexp": lambda m, x, y: m.ldexp(x, m.tensor(2)),
    "logaddexp2": lambda m, x, y: m.logaddexp2(x, y),
    "nan_to_num": lambda m, x, y: x.nan_to_num(),
    "nansum": lambda m, x, y: m.nansum(x, 0),
    "rot90": lambda m, x, y: m.rot90(x),
    "rrelu_eval": lambda m, x, y: m.nn.functional.rrelu(x),
    "rsub_tensor": lambda m, x, y: m.rsub(x, y),
    "rsub_number": lambda m, x, y: m.rsub(x, 2.0),
    "sinc": lambda m, x, y: x.sinc(),
    "std_mean": lambda m, x, y: m.std_mean(x, 0),
    "var_mean": lambda m, x, y: m.var_mean(x),
    "block_diag": lambda m, x, y: m.block_diag(x, y),
    "unsafe_chunk": lambda m, x, y: m.unsafe_chunk(x, 2),
    "slice_copy": lambda m, x, y: m.slice_copy(x, 1, 0, 2),
    "t_copy": lambda m, x, y: m.t_copy(x),
    "alias_copy": lambda m, x, y: m.alias_copy(x),
    "unbind_copy": lambda m, x, y: m.unbind_copy(x),
    "detach_copy": lambda m, x, y: m.detach_copy(x),
    "squeeze_nothing": lambda m, x, y: x.squeeze(),
    "torch_squeeze_nothing": lambda m, x, y: m.squeeze(x, 0),
    "torch_broadcast_to_same": lambda m, x, y: m.broadcast_to(x, (3, 4)),
    "squeeze_copy_nothing": lambda m, x, y: m.squeeze_copy(x),
    "broadcast_to_same": lambda m, x, y: x.broadcast_to((3, 4)),
    "squeeze_dim_nothing": lambda m, x, y: x.squeeze(0),
    "expand_same": lambda m, x, y: x.expand(3, 4),
    "expand_as_same": lambda m, x, y: x.expand_as(y),
    "t_1d": lambda m, x, y: x[0].t(),
    "unfold": lambda m, x, y: x.unfold(1, 2, 1),
    "glu": lambda m, x, y: m.nn.functional.glu(x),
    "pdist": lambda m, x, y: m.nn.functional.pdist(x),
    "pairwise_distance": lambda m, x, y: m.nn.functional.pairwise_distance(x, y),
    "vector_norm": lambda m, x, y: m.linalg.vector_norm(x, 3),
    "matrix_norm": lambda m, x, y: m.linalg.matrix_norm(x),
    "i0e": lambda m, x, y: m.special.i0e(x),
    "inv": lambda m, x, y: m.linalg.inv(_spd(m)),
    "inverse": lambda m, x, y: m.inverse(_spd(m)),
    "cholesky": lambda m, x, y: m.linalg.cholesky(_spd(m)),
    "floor_divide": lambda m, x, y: m.floor_divide(x, y),
}


def _describe(m, call):
    x, y = _t(m), _t(m, seed=1, positive=True)
    out = call(m, x * 1, y)
    outs = out if isinstance(out, (tuple, list)) else (out,)
    return [(o.grad_fn and o.grad_fn.name(), type(o.grad_fn).__name__,
             repr(o).split("grad_fn=")[-1] if o.grad_fn is not None else None,
             o is x, o.output_nr) for o in outs if isinstance(o, (torch.Tensor, rt.Tensor))]


@pytest.mark.parametrize("name", sorted(CALLS))
def test_node_names_match_torch(name):
    assert _describe(rt, CALLS[name]) == _describe(torch, CALLS[name])


@pytest.mark.parametrize("name", ["squeeze_nothing", "expand_same", "t_1d"])
def test_new_views_share_storage_and_pass_gradient(name):
    x = rt.ones(3, 4, requires_grad=True)
    y = CALLS[name](rt, x * 1, x)
    assert y._base is not None
    y.sum().backward()
    assert x.grad.tolist() == ([[1.0] * 4] * 3 if name != "t_1d" else
                               [[1.0] * 4] + [[0.0] * 4] * 2)


def test_flatten_of_nothing_is_input_itself_as_torch():
    for m in (torch, rt):
        x = m.ones(3, 4)
        assert x.flatten(1) is x and x[0].flatten() is not x


@pytest.mark.parametrize("call", [
    lambda m, x: m.aminmax(x, dim=1),
    lambda m, x: m.std_mean(x, 0),
    lambda m, x: m.var_mean(x),
    lambda m, x: m.unbind_copy(x),
])
def test_one_node_outputs_pass_their_own_gradients(call):
    got = []
    for m in (torch, rt):
        x = _t(m)
        outs = call(m, x * 1)
        loss = sum((i + 1.5) * o.pow(2).sum() for i, o in enumerate(outs))
        (g,) = m.autograd.grad(loss, x, create_graph=True)
        (gg,) = m.autograd.grad(g.sum(), x)
        got.append((np.round(np.asarray(g.tolist()), 12).tolist(),
                    np.round(np.asarray(gg.tolist()), 10).tolist()))
    assert got[0] == got[1]
