"""rt.distributions on "cuda" without a GPU (the strict fake CuPy): values and gradients as on
the CPU, draws on the device and from that device's generator (rt.cuda.manual_seed)."""

from __future__ import annotations

import numpy as np
import pytest

import runtime as rt
import runtime.distributions as rd
from runtime.creation import default_generator
from tests.fakecuda import fake_cuda_fixture  # noqa: F401 - the fake_cuda fixture

pytestmark = pytest.mark.usefixtures("fake_cuda")


def _t(v, dev, grad=True):
    return rt.tensor(np.asarray(v, dtype=np.float64), dtype=rt.float64, device=dev,
                     requires_grad=grad)


def _host(x):
    return x.detach().cpu().numpy()


CASES = {
    "normal": (lambda a, b: rd.Normal(a, b), [[0.1, -1.0], [0.5, 2.0]], [0.3, 1.0]),
    "gamma": (lambda a, b: rd.Gamma(a, b), [[0.7, 3.0], [1.5, 0.4]], [0.4, 2.0]),
    "dirichlet": (lambda a: rd.Dirichlet(a), [[0.7, 3.0, 1.2]], [0.2, 0.5, 0.3]),
    "categorical": (lambda a: rd.Categorical(logits=a), [[0.3, -1.0, 2.0]], [0.0, 2.0]),
    "mvn": (lambda a, b: rd.MultivariateNormal(a, scale_tril=b),
            [[0.1, -1.0], [[1.0, 0.0], [-0.3, 0.8]]], [[0.4, 2.0], [1.0, 0.0]]),
    "mixture": (lambda a, b: rd.MixtureSameFamily(rd.Categorical(logits=a), rd.Normal(b, 1.0)),
                [[0.3, -1.0], [0.5, -0.5]], [0.4, 2.0]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_log_prob_entropy_and_gradients_on_cuda_equal_the_cpus(case):
    make, params, value = CASES[case]
    got = {}
    for dev in ("cpu", "cuda"):
        ps = [_t(p, dev) for p in params]
        d = make(*ps)
        lp = d.log_prob(_t(value, dev, grad=False))
        assert lp.device.type == dev
        out = [lp] + ([d.entropy()] if case != "mixture" else [])
        grads = rt.autograd.grad(sum(o.sum() for o in out), ps)
        got[dev] = [_host(o) for o in [*out, *grads]]
    for a, b in zip(got["cpu"], got["cuda"]):
        np.testing.assert_allclose(b, a, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("make", [lambda d: rd.Normal(_t([0.0, 1.0], d, False), 1.0),
                                  lambda d: rd.Gamma(_t([0.5, 3.0], d, False), 1.0),
                                  lambda d: rd.Poisson(_t([0.5, 3.0], d, False)),
                                  lambda d: rd.Categorical(_t([0.2, 0.8], d, False)),
                                  lambda d: rd.Dirichlet(_t([0.5, 3.0], d, False))])
def test_draws_on_cuda_come_from_the_gpus_generator(make):
    d = make("cuda")
    rt.manual_seed(0)
    a = d.sample((32,))  # enough draws that two samples differ (a categorical's too)
    assert a.device.type == "cuda"
    rt.cuda.manual_seed(0)
    default_generator.manual_seed(7)  # the CPU's generator plays no part
    b = d.sample((32,))
    np.testing.assert_array_equal(_host(a), _host(b))
    c = d.sample((32,))
    assert not np.array_equal(_host(b), _host(c))
