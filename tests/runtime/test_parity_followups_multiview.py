"""split, chunk and unbind as PyTorch's multi-output views: one backward node whose outputs
are 0..n-1, and PyTorch's errors for writing one in place while grad is recorded."""

from __future__ import annotations

import pytest

import runtime as rt

torch = pytest.importorskip("torch")

SPLITS = {
    "split": lambda x: x.split(2),
    "split_sizes": lambda x: x.split([1, 3]),
    "split_with_sizes": lambda x: x.split_with_sizes([3, 1]),
    "chunk": lambda x: x.chunk(3, 1),
    "unbind": lambda x: x.unbind(1),
    "torch_split": lambda x: (torch if isinstance(x, torch.Tensor) else rt).split(x, 3, -1),
    "unsafe_split": lambda x: x.unsafe_split(2),
    "unsafe_chunk": lambda x: x.unsafe_chunk(2),
    "tensor_split": lambda x: x.tensor_split(3, 1),
}


def _outcome(fn):
    try:
        return ("ok", fn())
    except RuntimeError as e:
        return ("error", str(e))


@pytest.mark.parametrize("name", sorted(SPLITS))
def test_nodes_output_nr_and_inplace_match_torch(name):
    got = []
    for m in (torch, rt):
        x = m.arange(24.0).reshape(4, 6).requires_grad_()
        outs = SPLITS[name](x * 1)
        record = ([o.grad_fn.name() for o in outs], [o.output_nr for o in outs],
                  outs[0].grad_fn is outs[-1].grad_fn, [o._version for o in outs])
        written = _outcome(lambda: outs[1].add_(1).grad_fn.name())
        got.append((record, written))
    assert got[0] == got[1]


@pytest.mark.parametrize("name", ["split", "chunk", "unbind", "split_sizes"])
def test_gradients_with_unused_outputs_match_torch(name):
    got = []
    for m in (torch, rt):
        x = m.arange(24.0, dtype=m.float64).reshape(4, 6).requires_grad_()
        outs = SPLITS[name](x * 1)
        loss = outs[0].pow(2).sum() + 3 * outs[-1].sum()
        (g,) = m.autograd.grad(loss, x, create_graph=True)
        (gg,) = m.autograd.grad(g.sum(), x)
        got.append((g.tolist(), gg.tolist()))
    assert got[0] == got[1]


def test_gradcheck_unbind_and_split():
    x = rt.randn(3, 4, dtype=rt.float64, requires_grad=True)
    assert rt.autograd.gradcheck(lambda t: rt.stack([u * i for i, u in enumerate(t.unbind(1))]), [x])
    assert rt.autograd.gradcheck(lambda t: t.split([1, 2], 0)[1].exp(), [x])


CASES = {
    "leaf_split": lambda m: m.ones(4, 3, requires_grad=True).split(2)[0].mul_(2),
    "view_of_output": lambda m: (m.ones(4, 3, requires_grad=True) * 1).unbind(0)[1][0:2].add_(1),
    "no_grad_base_grad_other": lambda m: m.ones(4, 3).split(2)[0].add_(
        m.ones(3, requires_grad=True)),
    "no_grad_base": lambda m: m.ones(4, 3).split(2)[0].add_(1).sum(),
    "under_no_grad": lambda m: _under_no_grad(m),
    "base_written": lambda m: _base_written(m),
    "written_under_no_grad": lambda m: _written_under_no_grad(m),
    "advanced_setitem": lambda m: _setitem(m),
}


def _under_no_grad(m):
    a = (m.ones(4, 3, requires_grad=True) * 1).split(2)[0]
    with m.no_grad():
        a.add_(1)
    return a.sum().item()


def _base_written(m):
    y = m.ones(4, 3, requires_grad=True) * 1
    a, _ = y.split(2)
    y.add_(1)
    return a.grad_fn


def _written_under_no_grad(m):
    a, _ = (m.ones(4, 3, requires_grad=True) * 1).split(2)
    with m.no_grad():
        a.add_(1)
    return a.grad_fn


def _setitem(m):
    a, _ = (m.ones(4, 3, requires_grad=True) * 1).chunk(2)
    a[m.tensor([0, 1])] = 5.0  # index_put_ on the output itself


@pytest.mark.parametrize("case", sorted(CASES))
def test_errors_match_torch(case):
    got = []
    for m in (torch, rt):
        kind, value = _outcome(lambda: CASES[case](m))
        got.append((kind, value if kind == "error" else None))
    assert got[0] == got[1]


def test_unsafe_pieces_are_not_views_of_their_input():
    got = []
    for m in (torch, rt):
        y = m.ones(4, 3, requires_grad=True) * 1
        a, b = y.unsafe_split(2)
        a.add_(1)
        got.append((y._version, a._version, b._version, a.grad_fn.name(), y.tolist()))
    assert got[0] == got[1]


@pytest.mark.parametrize("key", [0, (slice(None),), (0, slice(1, None)), (slice(0, 1),), (None,),
                                 (Ellipsis,), (slice(None), 1), (Ellipsis, 0),
                                 (slice(None, None, 2),)])
def test_indexed_assignment_names_the_written_view_as_torch(key):
    got = []
    for m in (torch, rt):
        a, _ = (m.ones(4, 3, requires_grad=True) * 1).chunk(2)

        def write(a=a):
            a[key] = 5.0

        got.append(_outcome(write))
    assert got[0] == got[1]
