"""Differential sweep against torch 2.13 (issue 11, items 3 and 5): lr schedulers,
optimizers, gradient clipping, data loading and checkpoints. Each test here failed before its
fix."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import runtime as rt

torch = pytest.importorskip("torch")


def _sgd(lib: Any) -> Any:
    groups = [{"params": [lib.nn.Parameter(lib.zeros(2))], "lr": 0.1},
              {"params": [lib.nn.Parameter(lib.zeros(2))], "lr": 0.05}]
    return lib.optim.SGD(groups, lr=0.1, momentum=0.9)


def _nested_sequential(lib: Any, opt: Any) -> Any:
    s = lib.optim.lr_scheduler
    inner = s.SequentialLR(opt, [s.ConstantLR(opt, 0.5, 2), s.ExponentialLR(opt, 0.8)], [2])
    return s.SequentialLR(opt, [inner, s.StepLR(opt, 2, 0.5)], milestones=[6])


@pytest.mark.filterwarnings("ignore:Detected call of:UserWarning")  # torch's too
def test_sequential_lr_nested_undoes_the_inner_schedulers_first_steps() -> None:
    """A SequentialLR of a SequentialLR: torch moves back the inner one's schedulers (not the
    inner one's own epoch), so the first value is the inner ConstantLR's factor."""
    got = []
    for lib in (torch, rt):
        opt = _sgd(lib)
        sched = _nested_sequential(lib, opt)
        lrs = [sched.get_last_lr()]
        for _ in range(12):
            opt.step()
            sched.step()
            lrs.append(sched.get_last_lr())
        got.append(lrs)
    np.testing.assert_allclose(got[1], got[0], rtol=1e-12)
    assert got[1][0] == pytest.approx([0.05, 0.025])


@pytest.mark.parametrize(("dtype", "norm_type"), [("float16", 2.0), ("float16", 3.5),
                                                  ("float16", 0.5), ("bfloat16", 3.5)])
def test_clip_grad_norm_of_half_gradients_reduces_in_float32(dtype: str,
                                                             norm_type: float) -> None:
    """torch's vector_norm of a float16 or bfloat16 tensor accumulates in float32: a float16
    gradient of 300 has a finite 2-norm (its square overflowed float16: inf, and clipping by
    it zeroed every gradient)."""
    grads = [[300.0, 200.0, 1e-4], [3.0, -250.0]]
    out = []
    for lib in (torch, rt):
        ps = []
        for g in grads:
            p = lib.nn.Parameter(lib.ones(len(g), dtype=getattr(lib, dtype)))
            p.grad = lib.tensor(g, dtype=getattr(lib, dtype))
            ps.append(p)
        total = lib.nn.utils.clip_grad_norm_(ps, 1.0, norm_type)
        out.append((str(total.dtype).split(".")[-1], total.float().item(),
                    [p.grad.float().tolist() for p in ps]))
    assert out[1][0] == out[0][0]
    assert np.isfinite(out[1][1])
    assert out[1][1] == out[0][1]
    for a, b in zip(out[1][2], out[0][2], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-3)


@pytest.mark.parametrize("dtype", ["uint16", "uint32", "uint64"])
def test_load_reads_torch_files_of_unsigned_dtypes(dtype: str) -> None:
    """torch.save writes uint16/32/64 tensors with _rebuild_tensor_v3 over an untyped
    storage (bytes); rt.load refused those files. Loaded: values, dtype, a view's layout and
    the storage its views share, as torch.load's."""
    import io

    t = torch.tensor([[1, 2, 3], [4, 5, 60000]]).to(getattr(torch, dtype))
    buf = io.BytesIO()
    torch.save({"t": t, "v": t[:, 1:], "w": t.t(),
                "p": torch.nn.Parameter(t, requires_grad=False)}, buf)
    buf.seek(0)
    got = rt.load(buf)
    assert got["t"].dtype == getattr(rt, dtype)
    assert got["t"].tolist() == t.tolist() and got["v"].tolist() == t[:, 1:].tolist()
    assert got["w"].tolist() == t.t().tolist() and tuple(got["w"].stride()) == (1, 3)
    assert isinstance(got["p"], rt.nn.Parameter) and got["p"].tolist() == t.tolist()
    got["t"].add_(1)
    assert got["v"].tolist() == [[3, 4], [6, 60001]]


@pytest.mark.parametrize(("name", "kwargs"), [("Adam", {}), ("Adam", {"amsgrad": True}),
                                              ("AdamW", {"weight_decay": 0.1}),
                                              ("Adamax", {}), ("NAdam", {})])
def test_tensor_lr_step_size_in_the_lr_dtype(name: str, kwargs: dict[str, Any]) -> None:
    """A float32 tensor lr with float64 parameters: torch's step size (lr / the bias
    correction, a Python float) is a float32 tensor, rounded there; it was computed in
    float64 (the parameters moved by 1e-9 more or less than torch's)."""
    out = []
    for lib in (torch, rt):
        rng = np.random.default_rng(0)
        p = lib.nn.Parameter(lib.tensor(rng.standard_normal((3, 4)), dtype=lib.float64))
        opt = getattr(lib.optim, name)([p], lr=lib.tensor(0.0123), **kwargs)
        for _ in range(4):
            p.grad = lib.tensor(rng.standard_normal((3, 4)), dtype=lib.float64)
            opt.step()
        out.append(p.detach().numpy().copy())
    np.testing.assert_array_equal(out[1], out[0])


def test_safetensors_save_lays_dtypes_out_as_the_reference_writer() -> None:
    """safetensors orders tensors by its Dtype enum, descending (U64, I64, F64, F32, U32,
    I32, BF16, F16, U16, I16, I8, U8, BOOL), then by name; rt sorted by item size then name,
    so a file of mixed 8-, 4- and 2-byte dtypes differed from safetensors.torch.save's."""
    st_torch = pytest.importorskip("safetensors.torch")
    import runtime.safetensors as rs

    names = ["float64", "int64", "uint64", "float32", "int32", "uint32", "float16",
             "bfloat16", "int16", "uint16", "int8", "uint8", "bool"]
    ours = rs.save({n: rt.zeros(2, dtype=getattr(rt, n)) for n in names}, metadata={"a": "b"})
    theirs = st_torch.save({n: torch.zeros(2, dtype=getattr(torch, n)) for n in names},
                           metadata={"a": "b"})
    assert ours == theirs


def test_save_keeps_a_state_dicts_metadata() -> None:
    """torch.save keeps an OrderedDict's attributes: a state_dict's ``_metadata`` (each
    module's version, which load_state_dict hands to _load_from_state_dict). rt.save
    dropped it."""
    import io

    got = []
    for lib in (torch, rt):
        lib.manual_seed(0)
        model = lib.nn.Sequential(lib.nn.Linear(2, 2), lib.nn.BatchNorm1d(2))
        buf = io.BytesIO()
        lib.save({"model": model.state_dict()}, buf)
        buf.seek(0)
        loaded = lib.load(buf)["model"]
        got.append(getattr(loaded, "_metadata", None))
        model.load_state_dict(loaded)
    assert got[1] == got[0]
    assert got[1][""] == {"version": 1} and got[1]["1"] == {"version": 2}


def test_save_into_a_missing_folder_raises_torchs_error(tmp_path: Any) -> None:
    for lib in (torch, rt):
        with pytest.raises(RuntimeError, match=r"^Parent directory .*nope does not exist\.$"):
            lib.save({"a": lib.ones(1)}, tmp_path / "nope" / "x.pt")
    assert not (tmp_path / "nope").exists()


@pytest.mark.filterwarnings("ignore:Detected call of:UserWarning")  # torch's too
def test_multisteplr_state_dict_survives_a_checkpoint() -> None:
    """MultiStepLR keeps its milestones as a Counter, which torch.save/torch.load keep:
    rt.save made it a dict (a resumed scheduler's step(epoch) then raised AttributeError:
    no elements()), and rt.load refused a torch file holding one (collections.Counter)."""
    import io

    got = []
    for lib in (torch, rt):
        opt = lib.optim.SGD([lib.nn.Parameter(lib.zeros(1))], lr=0.1)
        sched = lib.optim.lr_scheduler.MultiStepLR(opt, [2, 2, 5])
        buf = io.BytesIO()
        lib.save(sched.state_dict(), buf)  # torch's file or ours, read by rt.load
        buf.seek(0)
        state = rt.load(buf)
        assert type(state["milestones"]).__name__ == "Counter"
        assert dict(state["milestones"]) == {2: 2, 5: 1}
        ropt = rt.optim.SGD([rt.nn.Parameter(rt.zeros(1))], lr=0.1)
        resumed = rt.optim.lr_scheduler.MultiStepLR(ropt, [1])
        resumed.load_state_dict(state)
        with pytest.warns(UserWarning, match="The epoch parameter"):
            resumed.step(6)
        got.append(resumed.get_last_lr())
    assert got[0] == got[1] == [pytest.approx(1e-4)]


_FLAGS = ("foreach", "maximize", "capturable", "differentiable", "fused",
          "decoupled_weight_decay", "amsgrad", "nesterov", "centered")


@pytest.mark.parametrize(("name", "numbers"), [
    ("SGD", ()), ("Adam", ("step",)), ("AdamW", ("step",)), ("RMSprop", ("step",)),
    ("Adagrad", ("step",)), ("Adadelta", ("step",)), ("Adamax", ("step",)),
    ("NAdam", ("step", "mu_product")), ("RAdam", ("step",)), ("ASGD", ("step", "eta", "mu")),
    ("Rprop", ("step",))])
def test_load_state_dict_of_an_older_torch_fills_what_it_lacks(
        name: str, numbers: tuple[str, ...]) -> None:
    """A state dict from an older PyTorch lacks the newer flags (maximize, foreach,
    capturable, differentiable, fused, decoupled_weight_decay...) and keeps "step" as a
    number: torch's load_state_dict ends with __setstate__, which sets the flags' defaults
    and makes those numbers tensors. rt's step raised KeyError('maximize')."""
    out = []
    for lib in (torch, rt):
        kwargs = {"momentum": 0.9} if name == "SGD" else {}
        p = lib.nn.Parameter(lib.ones(3))
        p.grad = lib.ones(3) * 0.5
        opt = getattr(lib.optim, name)([p], **kwargs)
        opt.step()
        state = opt.state_dict()
        for flag in _FLAGS:
            state["param_groups"][0].pop(flag, None)
        for key in numbers:
            state["state"][0][key] = float(state["state"][0][key])
        q = lib.nn.Parameter(lib.ones(3))
        q.grad = lib.ones(3) * 0.5
        loaded = getattr(lib.optim, name)([q], **kwargs)
        loaded.load_state_dict(state)
        loaded.step()
        group = {k: v for k, v in loaded.param_groups[0].items() if k != "params"}
        kinds = {k: (type(v).__name__, str(v.dtype).split(".")[-1])
                 for k, v in loaded.state[q].items() if k in numbers}
        out.append((group, kinds, q.tolist()))
    assert out[1][0] == out[0][0]
    assert out[1][1] == out[0][1]
    np.testing.assert_allclose(out[1][2], out[0][2], rtol=1e-6)


def test_safe_open_checks_framework_and_index_count_as_the_package(tmp_path: Any) -> None:
    """safetensors.safe_open refuses an unknown framework (SafetensorError), and a slice
    indexed by a tuple of more indices than the tensor has dimensions raises its IndexError
    (a 0-d tensor's too: rt gave torch's 0-dim indexing texts)."""
    safetensors = pytest.importorskip("safetensors")
    st_torch = pytest.importorskip("safetensors.torch")
    import runtime.safetensors as rs

    path = tmp_path / "a.safetensors"
    st_torch.save_file({"s": torch.tensor(3.0), "v": torch.arange(4.0)}, path)
    for mod in (safetensors, rs):
        with pytest.raises(Exception, match="^framework bogus is invalid$") as info:
            mod.safe_open(path, "bogus")
        assert type(info.value).__name__ == "SafetensorError"
        with mod.safe_open(path, "pt") as f:
            for name, index in (("s", (0,)), ("s", (slice(None),)), ("v", (0, 1)),
                                ("s", (None, 0))):
                dim = 0 if name == "s" else 1
                with pytest.raises(IndexError,
                                   match=f"^too many indices for tensor of dimension {dim}$"):
                    f.get_slice(name)[index]
            assert f.get_slice("v")[1:3].tolist() == [1.0, 2.0]


def test_stack_dataset_fetches_a_batch_through_its_datasets_getitems() -> None:
    """torch's StackDataset has __getitems__: a DataLoader fetches a batch with one call to
    each stacked dataset's __getitems__ (rt called __getitem__ per sample), dict form too;
    a nested dataset giving the wrong number of samples is torch's ValueError."""
    got = []
    for lib in (torch, rt):
        calls: list[Any] = []

        class Batched(lib.utils.data.Dataset):  # type: ignore[name-defined, misc]
            def __init__(self, size: int = 6) -> None:
                self.size = size

            def __len__(self) -> int:
                return 6

            def __getitem__(self, i: int) -> int:
                calls.append(("one", i))
                return i

            def __getitems__(self, idx: list[int]) -> list[int]:
                calls.append(("many", list(idx)))
                return [i * 10 for i in idx][:self.size]

        data = lib.utils.data
        tuples = [[c.tolist() for c in b] for b in data.DataLoader(
            data.StackDataset(Batched(), list(range(6))), batch_size=4)]
        dicts = [{k: v.tolist() for k, v in b.items()} for b in data.DataLoader(
            data.StackDataset(a=Batched(), b=Batched()), batch_size=4)]
        with pytest.raises(ValueError, match="^Nested dataset's output size mismatch. "
                                             "Expected 2, got 1$"):
            data.StackDataset(Batched(1)).__getitems__([0, 1])
        got.append((tuples, dicts, calls))
    assert got[1] == got[0]
    assert ("one", 0) not in got[1][2]


def test_public_helpers_torch_has() -> None:
    """ConcatDataset.cumsum and its deprecated cummulative_sizes (FutureWarning),
    SequentialLR.recursive_undo, Adagrad.share_memory: torch's public names, missing here."""
    import warnings

    got = []
    for lib in (torch, rt):
        concat = lib.utils.data.ConcatDataset([[1, 2], [3]])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            sizes = concat.cummulative_sizes
        opt = lib.optim.SGD([lib.nn.Parameter(lib.ones(1))], lr=0.1)
        s = lib.optim.lr_scheduler
        seq = s.SequentialLR(opt, [s.ConstantLR(opt, 0.5, 2), s.ExponentialLR(opt, 0.9)], [2])
        seq.recursive_undo()
        adagrad = lib.optim.Adagrad([lib.nn.Parameter(lib.ones(2))])
        adagrad.share_memory()
        got.append((sizes, lib.utils.data.ConcatDataset.cumsum([[1], [2, 3], []]),
                    [(w.category, str(w.message)) for w in caught],
                    [x.last_epoch for x in seq._schedulers], seq.last_epoch))
    assert got[1] == got[0]


class _Point:
    def __init__(self, x: int) -> None:
        self.x = x


class _Row(list):  # type: ignore[type-arg]
    pass


def test_collate_module_and_its_registry_as_torchs() -> None:
    """torch.utils.data._utils.collate: ``collate`` with a map of one's own, and
    ``default_collate_fn_map``, whose entries (added in place) every DataLoader's
    default_collate follows; a mutable mapping or sequence sample keeps its type (a copy
    updated). rt had no such module, and made a list subclass a list."""
    import collections
    import importlib

    got = []
    for lib in (torch, rt):
        collate = importlib.import_module(f"{lib.__name__}.utils.data._utils.collate")
        mapping = dict(collate.default_collate_fn_map)
        mapping[_Point] = lambda batch, *, collate_fn_map: sum(p.x for p in batch)
        custom = collate.collate([{"p": _Point(1), "t": lib.ones(2)},
                                  {"p": _Point(2), "t": lib.zeros(2)}], collate_fn_map=mapping)
        collate.default_collate_fn_map[_Point] = (
            lambda batch, *, collate_fn_map: [p.x for p in batch])
        try:
            batches = list(lib.utils.data.DataLoader([_Point(1), _Point(2), _Point(3)],
                                                     batch_size=2))
        finally:
            del collate.default_collate_fn_map[_Point]
        rows = lib.utils.data.default_collate([_Row([1, 2]), _Row([3, 4])])
        ddict = lib.utils.data.default_collate([collections.defaultdict(list, a=1)] * 2)
        got.append((custom["p"], custom["t"].tolist(), batches, type(rows).__name__,
                    [r.tolist() for r in rows], type(ddict).__name__, ddict.default_factory))
    assert got[1] == got[0]


def test_lr_scheduler_keeps_torchs_old_base_class_name() -> None:
    """torch.optim.lr_scheduler._LRScheduler, the base class's name before 2.0, which older
    schedulers subclass (a subclass of LRScheduler named _LRScheduler)."""
    got = []
    for lib in (torch, rt):
        class Half(lib.optim.lr_scheduler._LRScheduler):  # type: ignore[name-defined, misc]
            def get_lr(self) -> list[float]:
                return [base * 0.5 ** self.last_epoch for base in self.base_lrs]

        opt = lib.optim.SGD([lib.nn.Parameter(lib.zeros(1))], lr=0.1)
        sched = Half(opt)
        lrs = [sched.get_last_lr()]
        for _ in range(3):
            opt.step()
            sched.step()
            lrs.append(sched.get_last_lr())
        base = lib.optim.lr_scheduler._LRScheduler
        got.append((lrs, base.__name__, issubclass(base, lib.optim.lr_scheduler.LRScheduler)))
    assert got[1] == got[0]


def test_optimizer_required_default_as_torchs() -> None:
    """torch.optim.optimizer.required: an older custom optimizer's ``lr=required``; a group
    without it is torch's ValueError, a group that sets it is fine."""
    import importlib

    got = []
    for lib in (torch, rt):
        module = importlib.import_module(f"{lib.__name__}.optim.optimizer")

        class Plain(lib.optim.Optimizer):  # type: ignore[name-defined, misc]
            def __init__(self, params: Any, lr: Any = module.required) -> None:
                super().__init__(params, {"lr": lr})

        with pytest.raises(ValueError) as info:
            Plain([lib.nn.Parameter(lib.ones(1))])
        ok = Plain([{"params": [lib.nn.Parameter(lib.ones(1))], "lr": 0.5}])
        got.append((str(info.value), ok.param_groups[0]["lr"], repr(module.required)))
    assert got[1] == got[0]


def test_load_follows_add_safe_globals() -> None:
    """torch.serialization's allowlist (add_safe_globals, the safe_globals context,
    get_safe_globals, clear_safe_globals): a torch.save file holding an argparse.Namespace
    is refused, then loads once the caller marks the class safe (by itself or with its
    path), as torch.load(weights_only=True)."""
    import argparse
    import io

    buf = io.BytesIO()
    torch.save({"args": argparse.Namespace(lr=0.1, name="x"), "w": torch.ones(2)}, buf)
    data = buf.getvalue()
    with pytest.raises(rt.serialization.CheckpointError, match="argparse.Namespace"):
        rt.load(io.BytesIO(data))
    with rt.serialization.safe_globals([argparse.Namespace]):
        loaded = rt.load(io.BytesIO(data))
        assert argparse.Namespace in rt.serialization.get_safe_globals()
    assert loaded["args"] == argparse.Namespace(lr=0.1, name="x")
    assert loaded["w"].tolist() == [1.0, 1.0]
    assert argparse.Namespace not in rt.serialization.get_safe_globals()
    rt.serialization.add_safe_globals([(argparse.Namespace, "argparse.Namespace")])
    try:
        assert rt.load(io.BytesIO(data))["args"].lr == 0.1
    finally:
        rt.serialization.clear_safe_globals()
    assert rt.serialization.get_safe_globals() == []
    with pytest.raises(rt.serialization.CheckpointError):
        rt.load(io.BytesIO(data))


def test_load_reads_torch_tensors_and_parameters_with_attributes() -> None:
    """torch.save writes a parameter or tensor with Python attributes (``p.foo = 3``) by
    _rebuild_parameter_with_state / _rebuild_from_type_v2, which torch.load(weights_only)
    reads; rt.load refused the file. Their attributes come back; the tensor's own fields
    are not state a file may set."""
    import io

    p = torch.nn.Parameter(torch.ones(2))
    p.foo = 3
    t = torch.arange(3.0)
    t.tag = "hi"
    q = torch.nn.Parameter(torch.ones(1), requires_grad=False)
    q.z = {"x": [1, 2]}
    buf = io.BytesIO()
    torch.save({"p": p, "t": t, "q": q, "v": t[1:]}, buf)
    got = rt.load(io.BytesIO(buf.getvalue()))
    assert isinstance(got["p"], rt.nn.Parameter) and got["p"].foo == 3
    assert got["p"].requires_grad and got["p"].tolist() == [1.0, 1.0]
    assert type(got["t"]) is rt.Tensor and got["t"].tag == "hi"
    assert isinstance(got["q"], rt.nn.Parameter) and not got["q"].requires_grad
    assert got["q"].z == {"x": [1, 2]} and got["v"].tolist() == [1.0, 2.0]
    t2 = torch.ones(1)
    t2.shape_ = 1
    t2.__dict__["requires_grad_"] = 0  # a name a tensor already has
    buf = io.BytesIO()
    torch.save(t2, buf)
    with pytest.raises(rt.serialization.CheckpointError, match="requires_grad_"):
        rt.load(io.BytesIO(buf.getvalue()))


@pytest.mark.parametrize("workers", [0, 2])
def test_iterable_dataset_longer_than_its_len_warns_as_torch(workers: int) -> None:
    """len(loader) of an IterableDataset records the length it reported; each sample past it
    is torch's UserWarning (with its worker hint when workers load), as PyTorch's iterator."""
    import re
    import warnings

    got = []
    for lib in (torch, rt):
        class Stream(lib.utils.data.IterableDataset):  # type: ignore[name-defined, misc]
            def __iter__(self) -> Any:
                info = lib.utils.data.get_worker_info()
                start, step = (0, 1) if info is None else (info.id, info.num_workers)
                return iter(range(start, 7, step))

            def __len__(self) -> int:
                return 4

            def __repr__(self) -> str:
                return "Stream"

        loader = lib.utils.data.DataLoader(Stream(), batch_size=None, num_workers=workers)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            assert len(loader) == 4
            values = sorted(int(b) for b in loader)
        got.append((values, [re.sub(r"\s+", " ", str(w.message)) for w in caught
                             if w.category is UserWarning]))
    assert got[1] == got[0]
    assert len(got[1][1]) == 3


def test_optimizer_repr_as_torchs() -> None:
    """torch's Optimizer repr puts a blank line between parameter groups (and none for an
    optimizer of one group)."""
    got = []
    for lib in (torch, rt):
        lin = lib.nn.Linear(2, 1)
        two = lib.optim.Adam([{"params": [lin.weight]}, {"params": [lin.bias], "lr": 0.1}],
                             betas=(0.8, 0.9))
        one = lib.optim.SGD(lin.parameters(), lr=0.1, momentum=0.9)
        got.append((repr(two), repr(one)))
    assert got[1] == got[0]


_TENSOR_LR_SCHEDULES = {
    "StepLR": lambda s, o: s.StepLR(o, 1, 0.5),
    "OneCycleLR": lambda s, o: s.OneCycleLR(o, 1.0, total_steps=5),
    "CyclicLR": lambda s, o: s.CyclicLR(o, 0.01, 0.1),
    "ReduceLROnPlateau": lambda s, o: s.ReduceLROnPlateau(o, patience=0),
    "CosineAnnealingWarmRestarts": lambda s, o: s.CosineAnnealingWarmRestarts(o, 2),
    "SequentialLR": lambda s, o: s.SequentialLR(o, [s.ConstantLR(o), s.ExponentialLR(o, 0.9)],
                                                [1]),
    "ChainedScheduler": lambda s, o: s.ChainedScheduler([s.ConstantLR(o),
                                                         s.ExponentialLR(o, 0.9)]),
}


@pytest.mark.parametrize("name", sorted(_TENSOR_LR_SCHEDULES))
def test_scheduler_fills_a_tensor_lr_in_place(name: str) -> None:
    """A tensor lr stays the optimizer's object: torch's schedulers fill it in place (their
    initial_lr, base_lrs and get_last_lr() are copies). rt replaced it by a new tensor, or
    by a float (OneCycleLR, CyclicLR, ReduceLROnPlateau): a compiled step reading that lr
    recompiled at every call."""
    import warnings

    got = []
    for lib in (torch, rt):
        lr = lib.tensor(0.1)
        opt = lib.optim.Adam([lib.nn.Parameter(lib.ones(1))], lr=lr)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sched = _TENSOR_LR_SCHEDULES[name](lib.optim.lr_scheduler, opt)
            for _ in range(2):
                opt.step()
                if name == "ReduceLROnPlateau":
                    sched.step(1.0)
                else:
                    sched.step()
        group = opt.param_groups[0]
        last = sched.get_last_lr()[0]
        got.append((group["lr"] is lr, round(float(group["lr"]), 10), type(last).__name__,
                    last is group["lr"], group.get("initial_lr") is lr))
    assert got[1] == got[0]
    assert got[1][0]


def test_safetensors_save_argument_errors_as_the_package() -> None:
    """safetensors.torch.save's errors for a non-dict, metadata that is not str to str, and a
    tensor name that is not a str (its binding's TypeErrors): rt raised its own texts (and a
    SafetensorError for a name)."""
    st_torch = pytest.importorskip("safetensors.torch")
    import runtime.safetensors as rs

    cases = [({"a": 1}, None), ({1: "a"}, None), ({"a": None}, None), (["x"], None),
             (None, {1: "t"}), (None, {None: "t"}), (None, "list")]
    for metadata, names in cases:
        got = []
        for lib, mod in ((torch, st_torch), (rt, rs)):
            if names == "list":
                tensors: Any = [lib.ones(1)]
            elif names is not None:
                tensors = {k: lib.ones(1) for k in names}
            else:
                tensors = {"a": lib.ones(1)}
            with pytest.raises(Exception) as info:
                mod.save(tensors, metadata=metadata)
            got.append((type(info.value).__name__,
                        str(info.value).replace("torch.Tensor", "runtime.Tensor")))
        assert got[1] == got[0], (metadata, names)
