"""rt.autograd.functional (jacobian, hessian, vjp, jvp, hvp, vhp) against hand values and torch."""

from __future__ import annotations

import numpy as np
import pytest

import runtime as rt

AF = rt.autograd.functional
X = [0.5, -1.0, 2.0]
W = [[1.0, 2.0, 0.5], [-1.0, 0.0, 3.0]]


def npa(t):
    return t.detach().numpy()


def t64(data, lib=rt):
    return lib.tensor(data, dtype=lib.float64)


@pytest.mark.parametrize("vectorize", [False, True])
def test_jacobian_and_hessian_hand_values(vectorize):
    x = t64(X)
    jac = AF.jacobian(lambda a: a * a, x, vectorize=vectorize)
    np.testing.assert_allclose(npa(jac), np.diag(2 * np.array(X)))
    hes = AF.hessian(lambda a: (a ** 3).sum(), x, vectorize=vectorize)
    np.testing.assert_allclose(npa(hes), np.diag(6 * np.array(X)))
    # several inputs and outputs: tuples of tuples, outputs outside
    (j_xx, j_xw), (j_sx, j_sw) = AF.jacobian(lambda a, w: (w @ a, a.sum()), (x, t64(W)),
                                             vectorize=vectorize)
    np.testing.assert_allclose(npa(j_xx), W)
    assert j_xw.shape == (2, 2, 3) and j_sx.shape == (3,) and j_sw.shape == (2, 3)
    np.testing.assert_allclose(npa(j_sw), np.zeros((2, 3)))
    np.testing.assert_allclose(npa(j_xw)[1, 1], X)


def test_products_hand_values():
    x, v = t64(X), t64([1.0, 0.0, 2.0])
    out, vj = AF.vjp(lambda a: a * a, x, v)
    np.testing.assert_allclose(npa(vj), 2 * np.array(X) * [1.0, 0.0, 2.0])
    np.testing.assert_allclose(npa(out), np.square(X))
    _, jv = AF.jvp(lambda a: a.exp(), x, v)
    np.testing.assert_allclose(npa(jv), np.exp(X) * [1.0, 0.0, 2.0])
    for fn in (AF.hvp, AF.vhp):
        val, hv = fn(lambda a: (a ** 3).sum(), x, v)
        np.testing.assert_allclose(npa(hv), 6 * np.array(X) * [1.0, 0.0, 2.0])
        assert not hv.requires_grad and not val.requires_grad


def test_create_graph_lets_gradients_flow_to_the_inputs():
    x = rt.tensor(X, dtype=rt.float64, requires_grad=True)
    _, hv = AF.hvp(lambda a: (a ** 4).sum(), x, t64([1.0, 1.0, 1.0]), create_graph=True)
    hv.sum().backward()  # d/dx sum(12 x^2) = 24 x
    np.testing.assert_allclose(npa(x.grad), 24 * np.array(X))
    jac = AF.jacobian(lambda a: a.sin(), x, create_graph=True)
    assert jac.requires_grad
    assert not AF.jacobian(lambda a: a.sin(), x).requires_grad


def test_strict_and_argument_errors():
    x = t64(X)
    with pytest.raises(RuntimeError, match=r"^Output 0 of the user-provided function is "
                       r"independent of input 1\. This is not allowed in strict mode\.$"):
        AF.jacobian(lambda a, b: a * 2, (x, x), strict=True)
    with pytest.raises(RuntimeError, match=r"^While computing the hessian, found that the jacobian "
                       r"of the user-provided function with respect to input 0 is independent"):
        AF.vhp(lambda a: a.sum(), x, x, strict=True)
    with pytest.raises(RuntimeError, match=r"^The vector v can only be None if the user-provided "
                       r"function returns a single Tensor with a single element\.$"):
        AF.vjp(lambda a: a * 2, x)
    with pytest.raises(RuntimeError, match=r"^v has invalid size: should be torch.Size\(\[3\]\) "
                       r"but got torch.Size\(\[2\]\)\.$|^v has invalid size"):
        AF.jvp(lambda a: a * 2, x, t64([1.0, 2.0]))
    with pytest.raises(RuntimeError, match=r"^The Tensor returned by the function given to hessian "
                       r"should contain a single element$"):
        AF.hessian(lambda a: a * 2, x)
    with pytest.raises(TypeError, match=r"^The inputs given to jacobian must be either a Tensor or "
                       r"a tuple of Tensors but the value at index 1 has type <class 'int'>\.$"):
        AF.jacobian(lambda a, b: a, (x, 3))
    with pytest.raises(NotImplementedError, match="only implemented for `vectorize=True`"):
        AF.jacobian(lambda a: a * 2, x, strategy="forward-mode")
    with pytest.raises(RuntimeError, match="`strict=True` and `vectorized=True` are not supported"):
        AF.jacobian(lambda a: a * 2, x, strict=True, vectorize=True)
    fwd = AF.jacobian(lambda a: a * a, x, strategy="forward-mode", vectorize=True)
    np.testing.assert_allclose(npa(fwd), np.diag(2 * np.array(X)))


def test_functional_matches_torch():
    torch = pytest.importorskip("torch")

    def run(lib):
        F = lib.autograd.functional
        x, w = t64(X, lib), t64(W, lib)

        def f(a, b):
            return (b @ a).tanh()

        def s(a, b):
            return (b @ a).sigmoid().sum() + (a ** 4).sum()

        res = [F.jacobian(f, (x, w)), F.jacobian(f, (x, w), vectorize=True),
               F.hessian(s, (x, w)), F.vjp(f, (x, w), t64([1.0, -2.0], lib))[1],
               F.jvp(f, (x, w), (x, w))[1], F.hvp(s, (x, w), (x, w))[1],
               F.vhp(s, (x, w), (x, w))[1]]
        flat = []

        def walk(r):
            if isinstance(r, (tuple, list)):
                for e in r:
                    walk(e)
            else:
                flat.append(r.detach().numpy())

        walk(res)
        return flat

    ours, ref = run(rt), run(torch)
    assert len(ours) == len(ref)
    for a, b in zip(ours, ref):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
