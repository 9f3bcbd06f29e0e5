"""A GPU plan replayed as a CUDA graph (planner.cuda_graph), on the fake CuPy.

The fake CuPy runs everything at once on the host, so it cannot record a graph; the backend
here stands in for CuPy's stream capture as faithfully as the runner can tell: the capture
runs the program once, and each launch runs it again over the same input buffers and stores
every result into the arrays the capture returned (a graph writes the same addresses at every
replay). Real CUDA graphs are checked by ``benchmarks.gpu`` on a GPU."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import planner
import runtime as rt
from planner import cuda_graph
from planner.steps import recorded_draws
from tests.fakecuda import REAL_CUPY, fake_cuda_fixture  # noqa: F401


class RecordingGraphs:
    """A capture backend that records by running: see the module's docstring. The program a
    graph records is pure (it reads its inputs and makes new arrays); what it changes in
    place are the stores its last segment makes, so a launch of the first segment runs the
    program again, and one of the last makes the stores."""

    def __init__(self, xp: Any, fail: BaseException | None = None) -> None:
        self.xp = xp
        self.fail = fail
        self.launches = 0
        self.segments = 1

    def capture(self, fn: Any, stores: Any) -> tuple[cuda_graph.Captured, Any]:
        if self.fail is not None:
            raise self.fail
        self.segments = 1
        out = fn()
        pairs = stores(out)
        # a graph's random draws read the input buffers the capture gave them
        draws = getattr(recorded_draws, "buffer", None)
        return cuda_graph.Captured([(fn, out, pairs, draws)] * self.segments, ()), out

    def split(self) -> int:
        self.segments += 1
        return self.segments - 1

    def launch(self, captured: cuda_graph.Captured, segment: int) -> None:
        fn, out, pairs, draws = captured.graphs[segment]
        if segment == 0:
            self.launches += 1
            recorded_draws.buffer = draws
            try:
                self._store(out, fn())
            finally:
                recorded_draws.buffer = None
        if segment == len(captured.graphs) - 1:
            for dst, src in pairs:
                dst[...] = src

    def _store(self, old: Any, new: Any) -> None:
        if isinstance(old, (tuple, list)):
            for o, n in zip(old, new, strict=True):
                self._store(o, n)
        elif isinstance(old, dict):
            for k in old:
                self._store(old[k], new[k])
        elif isinstance(old, self.xp.ndarray):
            assert old is not new
            old[...] = new

class CountingGraphs:
    """CuPy's real stream capture (``BACKPLAN_REAL_CUPY=1``, on a GPU), its launches of a
    graph's first segment counted as ``RecordingGraphs`` counts them."""

    def __init__(self, xp: Any) -> None:
        self.xp = xp
        self.inner = cuda_graph.CupyGraphs(xp)
        self.launches = 0

    def capture(self, fn: Any, stores: Any) -> tuple[cuda_graph.Captured, Any]:
        return self.inner.capture(fn, stores)

    def split(self) -> int:
        return self.inner.split()

    def launch(self, captured: cuda_graph.Captured, segment: int) -> None:
        self.launches += segment == 0
        self.inner.launch(captured, segment)


@pytest.fixture(name="graphs")
def graphs_fixture(fake_cuda: Any, monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    made: list[Any] = []

    def backend_for(xp: Any) -> Any:
        made.append(CountingGraphs(xp) if REAL_CUPY else RecordingGraphs(xp))
        return made[-1]

    monkeypatch.setattr(cuda_graph, "backend_for", backend_for)
    return made


def _model(device: str, seed: int = 0) -> Any:
    rt.manual_seed(seed)
    model = rt.nn.Sequential(rt.nn.Linear(6, 8), rt.nn.Tanh(), rt.nn.Linear(8, 3))
    return model.to(device)


def _batches(n: int) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(0)
    return [(rng.standard_normal((5, 6)).astype(np.float32), rng.integers(0, 3, 5))
            for _ in range(n)]


def _train(device: str, optimizer: str, compiled: bool, steps: int = 6,
           **options: Any) -> tuple[list[np.ndarray], dict[str, np.ndarray], Any]:
    model = _model(device)
    opt = (rt.optim.Adam(model.parameters(), lr=0.01) if optimizer == "adam"
           else rt.optim.SGD(model.parameters(), lr=0.1, momentum=0.9))

    def step(x: Any, y: Any) -> Any:
        opt.zero_grad()
        loss = rt.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss

    run = planner.compile(step, **options) if compiled else step
    losses = []
    for x, y in _batches(steps):  # a new batch every call: copied into the graph's buffers
        losses.append(run(rt.tensor(x, device=device), rt.tensor(y, device=device)))
    params = {k: v.detach().cpu().numpy() for k, v in model.state_dict().items()}
    return [loss.detach().cpu().numpy() for loss in losses], params, run


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_a_training_loop_replays_one_graph_and_equals_eager(graphs: list[Any],
                                                            optimizer: str) -> None:
    want, want_params, _ = _train("cpu", optimizer, compiled=False)
    got, got_params, step = _train("cuda", optimizer, compiled=True, backend="interpreter")
    runner = step.plan.executable.graph_runner()
    assert runner is not None and runner.off is None, runner and runner.off
    assert runner.captures == 1 and runner.replays == len(want) - cuda_graph.WARM_CALLS
    assert graphs[-1].launches == runner.replays
    # the class targets' check splits the graph: the parameters' new values, stored by its
    # last segment into the parameters themselves (no write-back copy), once it has passed
    graph = runner.graph
    assert len(graph.captured.graphs) == 2 and [c[0] for c in graph.checks] == [1]
    assert len(graph.stored) >= 4  # 2 weights, 2 biases (and SGD's momentum buffers)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    for k in want_params:
        np.testing.assert_allclose(got_params[k], want_params[k], rtol=1e-5, atol=1e-6)
    assert "CUDA graph: on" in step.plan.summary()


def test_returned_tensors_and_new_grads_are_the_calls_own(graphs: list[Any]) -> None:
    """What a replay returns or makes new (a loss, an output, a .grad) is a copy: the next
    replay, which writes the same buffers, leaves it as it was. Optimizer state is updated in
    place, as eager mode updates it."""
    model = _model("cuda")
    opt = rt.optim.Adam(model.parameters(), lr=0.01)

    @planner.compile(backend="interpreter")
    def step(x: Any, y: Any) -> Any:
        opt.zero_grad()
        loss = rt.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        return loss, model(x).detach()

    kept, moments = [], []
    for x, y in _batches(5):
        loss, out = step(rt.tensor(x, device="cuda"), rt.tensor(y, device="cuda"))
        tensors = (loss, out, model[0].weight.grad)
        kept.append(([t.detach().cpu().numpy().copy() for t in tensors], tensors))
        moments.append(opt.state[model[0].weight]["exp_avg"])
    assert step.plan.executable.graph_runner().replays == 4
    for values, tensors in kept:
        for value, tensor in zip(values, tensors, strict=True):
            np.testing.assert_array_equal(tensor.detach().cpu().numpy(), value)
    assert all(m is moments[0] for m in moments)


def test_a_parameter_given_new_storage_is_captured_again(graphs: list[Any]) -> None:
    model = _model("cuda")
    opt = rt.optim.SGD(model.parameters(), lr=0.1)
    eager_model = _model("cpu")
    eager_opt = rt.optim.SGD(eager_model.parameters(), lr=0.1)

    def make(m: Any, o: Any) -> Any:
        def step(x: Any, y: Any) -> Any:
            o.zero_grad()
            loss = rt.nn.functional.cross_entropy(m(x), y)
            loss.backward()
            o.step()
            return loss
        return step

    step = planner.compile(make(model, opt), backend="interpreter")
    eager = make(eager_model, eager_opt)
    for i, (x, y) in enumerate(_batches(6)):
        if i == 3:  # new storage for a parameter: the graph read the old one
            with rt.no_grad():
                new = rt.full((3,), 0.5)
                model[2].bias.data = new.to("cuda")
                eager_model[2].bias.data = new.clone()
        got = step(rt.tensor(x, device="cuda"), rt.tensor(y, device="cuda"))
        want = eager(rt.tensor(x), rt.tensor(y))
        np.testing.assert_allclose(got.detach().cpu().numpy(), want.detach().numpy(),
                                   rtol=1e-5, atol=1e-6)
    runner = step.plan.executable.graph_runner()
    assert runner.off is None and runner.captures == 2
    np.testing.assert_allclose(model[2].bias.cpu().detach().numpy(),
                               eager_model[2].bias.detach().numpy(), rtol=1e-5, atol=1e-6)


def _dropout_training(compiled: bool, **options: Any) -> tuple[list[Any], Any, Any]:
    """Six SGD steps of an MLP with dropout on cuda, the generators seeded first: the losses
    and a draw made after them, the last layer's weight, the step."""
    model = _model("cuda")
    opt = rt.optim.SGD(model.parameters(), lr=0.1)
    rt.manual_seed(7)

    def step(x: Any, y: Any) -> Any:
        opt.zero_grad()
        h = rt.nn.functional.dropout(model(x), 0.4)
        loss = rt.nn.functional.cross_entropy(h, y)
        loss.backward()
        opt.step()
        return loss

    run = planner.compile(step, **options) if compiled else step
    losses = [float(run(rt.tensor(x, device="cuda"), rt.tensor(y, device="cuda")).item())
              for x, y in _batches(6)]
    after = rt.rand(4, device="cuda").cpu().numpy()
    return [*losses, *after], model[2].weight.detach().cpu().numpy(), run


def test_a_plan_drawing_random_numbers_draws_anew_at_each_replay(graphs: list[Any]) -> None:
    """Each draw is an input buffer of the graph: a replay draws from the call's generator, in
    the program's order, and copies it in, so the graph's steps equal eager mode's and the
    program's (the same generator stream), and each call's mask is new."""
    want, want_w, _ = _dropout_training(compiled=False)
    plain, plain_w, plain_step = _dropout_training(compiled=True, backend="interpreter",
                                                   cuda_graphs=False)
    got, got_w, step = _dropout_training(compiled=True, backend="interpreter")
    runner = step.plan.executable.graph_runner()
    assert runner.off is None and runner.captures == 1 and runner.replays == 5
    assert len(runner.graph.draws) == 1 and plain_step.plan.executable.graph_runner() is None
    assert len(set(want[:6])) == 6  # each call drew anew
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got, plain, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(got_w, want_w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got_w, plain_w, rtol=1e-6, atol=1e-7)
    # (the last 4 values: a draw after the steps; the generator is where eager leaves it)
    assert "CUDA graph: on" in step.plan.summary()


def test_a_failed_capture_leaves_the_program(graphs: list[Any],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cuda_graph, "backend_for", lambda xp: RecordingGraphs(
        xp, fail=RuntimeError("operation not permitted when stream is capturing")))
    want, want_params, _ = _train("cpu", "sgd", compiled=False)
    got, got_params, step = _train("cuda", "sgd", compiled=True, backend="interpreter")
    runner = step.plan.executable.graph_runner()
    assert runner.off is not None and "not permitted" in runner.off and runner.replays == 0
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_cuda_graphs_false_runs_the_program(graphs: list[Any]) -> None:
    _, _, step = _train("cuda", "sgd", compiled=True, backend="interpreter", cuda_graphs=False)
    assert step.plan.executable.graph_runner() is None and not graphs
    assert "CUDA graph: off (not asked for)" in step.plan.summary()


def test_the_environment_switches_graphs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(cuda_graph.ENV, "0")
    assert cuda_graph.enabled(None) is False and cuda_graph.enabled(True) is True
    monkeypatch.setenv(cuda_graph.ENV, "yes")
    with pytest.raises(ValueError, match="BACKPLAN_CUDA_GRAPHS must be 0 or 1"):
        cuda_graph.enabled(None)
    with pytest.raises(TypeError, match="cuda_graphs must be True, False or None"):
        planner.compile(lambda x: x, cuda_graphs="yes")(rt.ones(1))


def test_a_cpu_plan_has_no_graph_runner() -> None:
    x = rt.ones(4, requires_grad=True)

    @planner.compile
    def step(x: Any) -> Any:
        x.grad = None
        (x * 2).sum().backward()

    step(x)
    step(x)
    assert step.plan.executable.graph_runner() is None
    assert "CUDA graph" not in step.plan.summary()


@pytest.mark.parametrize("bad", ["target", "token"])
def test_an_index_out_of_range_raises_and_writes_nothing(graphs: list[Any], bad: str) -> None:
    """A check of values (a class target, an embedding's index) cannot run inside a graph:
    it is made around each launch, and raises as eager mode does, before any write-back."""
    rt.manual_seed(0)
    emb = rt.nn.Embedding(7, 4).to("cuda")
    head = rt.nn.Linear(4, 3).to("cuda")
    opt = rt.optim.SGD([*emb.parameters(), *head.parameters()], lr=0.1)

    @planner.compile(backend="interpreter")
    def step(tokens: Any, y: Any) -> Any:
        opt.zero_grad()
        loss = rt.nn.functional.cross_entropy(head(emb(tokens)), y)
        loss.backward()
        opt.step()
        return loss

    tokens, y = rt.tensor([0, 3, 6, 2], device="cuda"), rt.tensor([0, 2, 1, 1], device="cuda")
    for _ in range(3):
        step(tokens, y)
    assert step.plan.executable.graph_runner().replays == 2
    before = [p.detach().cpu().numpy().copy() for p in (emb.weight, head.weight)]
    if bad == "target":
        bad_y = rt.tensor([0, 2, 5, 1], device="cuda")
        with pytest.raises(IndexError, match="Target 5 is out of bounds"):
            step(tokens, bad_y)
    else:
        with pytest.raises(IndexError, match="index out of range"):
            step(rt.tensor([0, 9, 6, 2], device="cuda"), y)
    after = [p.detach().cpu().numpy() for p in (emb.weight, head.weight)]
    for b, a in zip(before, after, strict=True):
        np.testing.assert_array_equal(a, b)
    runner = step.plan.executable.graph_runner()
    replays = runner.replays
    step(tokens, y)  # and the next call replays as before
    assert runner.off is None and runner.replays == replays + 1


def test_a_plan_of_few_launches_runs_its_program(graphs: list[Any]) -> None:
    x = rt.ones(16, device="cuda", requires_grad=True)

    @planner.compile(backend="interpreter")
    def step(x: Any) -> Any:
        x.grad = None
        loss = (x * 2).sum()
        loss.backward()
        return loss

    for _ in range(4):
        step(x)
    runner = step.plan.executable.graph_runner()
    assert runner.off is not None and "fewer than a graph pays for" in runner.off


def test_blas_reads_each_layout_as_cublas_needs() -> None:
    """planner.cuda_blas' reading of a row-major matrix for column-major cuBLAS: ("N", ld)
    for rows of contiguous elements, ("T", ld) for a transposed view, None for a copy; and
    the one batch stride of batched operands."""
    from planner.cuda_blas import _batch_stride, _layout

    a = np.zeros((6, 4), np.float32)
    assert _layout(a) == ("N", 4)
    assert _layout(a.T) == ("T", 4)
    assert _layout(np.zeros((6, 8), np.float32)[:, :4]) == ("N", 8)  # a column slice
    assert _layout(np.zeros((6, 8), np.float32)[:, ::2]) is None  # strided columns: a copy
    assert _layout(np.zeros((1, 4), np.float32)) == ("N", 4)
    assert _layout(np.zeros((6, 1), np.float32)) == ("N", 1)
    b = np.zeros((3, 5, 6, 4), np.float32)
    assert _batch_stride(b, 15) == 24
    assert _batch_stride(b.transpose(0, 1, 3, 2), 15) == 24
    assert _batch_stride(a, 1) == 0
    qkv = np.zeros((16, 64, 3, 4, 32), np.float32)[:, :, 0].transpose(0, 2, 1, 3)
    assert _batch_stride(qkv, 64) is None  # heads and batch not one stride apart: a copy
    assert _batch_stride(np.broadcast_to(a, (5, 6, 4)), 5) == 0


def test_blas_concatenates_by_slices_as_numpy_does() -> None:
    from planner.cuda_blas import _concatenate

    xp = type("xp", (), {"ndarray": np.ndarray, "empty": staticmethod(np.empty)})
    parts = [np.arange(6.0).reshape(2, 3), np.arange(3.0).reshape(1, 3) + 10,
             np.arange(9.0).reshape(3, 3)]
    np.testing.assert_array_equal(_concatenate(xp, parts, 0), np.concatenate(parts, 0))
    cols = [np.ones((2, 1)), np.zeros((2, 4)), np.full((2, 2), 3.0)]
    np.testing.assert_array_equal(_concatenate(xp, cols, -1), np.concatenate(cols, -1))
    assert _concatenate(xp, [np.ones(2), np.ones((2, 2))], 0) is None  # CuPy's own: raises
    assert _concatenate(xp, parts, None) is None
