"""More tutorial scripts ported from PyTorch by changing the import, each a recipe beyond a
plain training loop: a physics-informed network (second derivatives through autograd.grad),
MAML's inner loop (create_graph through an SGD step written by hand), neural style transfer
(LBFGS on the image, Gram matrices), knowledge distillation (KLDivLoss over temperatures), a
SimCLR contrastive loss, a spectrally normalised critic, stochastic weight averaging with
update_bn, bfloat16 autocast with a GradScaler, gradient hooks, OneCycleLR cycling momentum
and a custom Function with mark_dirty and once_differentiable. As in
tests/runtime/test_scripts_more_models.py, each equals PyTorch from the same weights and data.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from tests.runtime.test_scripts_more_models import equals_pytorch, finish
from tests.runtime.test_scripts_training import (
    Run,
    Step,
    Weights,
    batches,
    start,
    tensors,
    torch_one_thread,  # noqa: F401  (a fixture)
)

STEPS = 4


# ---- a physics-informed network: u'' = -pi^2 sin(pi x), u(0) = u(1) = 0 -------------------

def pinn(lib: ModuleType, weights: Weights | None, wrap: Callable[[Step], Step],
         tmp: Path) -> Run:
    nn = lib.nn
    model = nn.Sequential(nn.Linear(1, 8), nn.Tanh(), nn.Linear(8, 8), nn.Tanh(),
                          nn.Linear(8, 1))
    w0 = start(lib, model, weights)
    opt = lib.optim.Adam(model.parameters(), lr=1e-2)
    boundary = lib.tensor([[0.0], [1.0]])

    def step(x: Any) -> tuple[Any, Any]:
        opt.zero_grad()
        x = x.clone().requires_grad_(True)
        u = model(x)
        (du,) = lib.autograd.grad(u, x, grad_outputs=lib.ones_like(u), create_graph=True)
        (d2u,) = lib.autograd.grad(du.sum(), x, create_graph=True)
        residual = d2u + np.pi ** 2 * lib.sin(np.pi * x)
        pde = residual.pow(2).mean()
        loss = pde + model(boundary).pow(2).mean()
        loss.backward()
        opt.step()
        return loss, pde

    step = wrap(step)
    losses = []
    for (x,) in batches(40, STEPS, lambda r: (r.random((8, 1)).astype(np.float32),)):
        loss, pde = step(lib.from_numpy(x))
        losses += [loss.item(), pde.item()]
    return finish(lib, model, tmp, w0, losses)


# ---- MAML: an inner SGD step written by hand, the outer loss through it --------------------

def maml(lib: ModuleType, weights: Weights | None, wrap: Callable[[Step], Step],
         tmp: Path) -> Run:
    nn, F = lib.nn, lib.nn.functional
    model = nn.Sequential(nn.Linear(1, 8), nn.ReLU(), nn.Linear(8, 1))
    w0 = start(lib, model, weights)
    meta_opt = lib.optim.Adam(model.parameters(), lr=1e-2)

    def forward(x: Any, params: list[Any]) -> Any:
        return F.linear(F.relu(F.linear(x, params[0], params[1])), params[2], params[3])

    def step(xs: Any, ys: Any, xq: Any, yq: Any) -> Any:
        meta_opt.zero_grad()
        total = 0.0
        for task in range(xs.size(0)):
            params = list(model.parameters())
            inner = F.mse_loss(forward(xs[task], params), ys[task])
            grads = lib.autograd.grad(inner, params, create_graph=True)
            fast = [p - 0.1 * g for p, g in zip(params, grads)]
            total = total + F.mse_loss(forward(xq[task], fast), yq[task])
        meta_loss = total / xs.size(0)
        meta_loss.backward()
        meta_opt.step()
        return meta_loss

    def data(r: np.random.Generator) -> tuple[np.ndarray, ...]:
        amp, phase = r.uniform(0.5, 2, (3, 1, 1)), r.uniform(0, 3, (3, 1, 1))
        xs, xq = r.uniform(-3, 3, (3, 5, 1)), r.uniform(-3, 3, (3, 5, 1))
        return tuple(a.astype(np.float32) for a in (xs, amp * np.sin(xs + phase), xq,
                                                     amp * np.sin(xq + phase)))

    step = wrap(step)
    losses = [step(*tensors(lib, d)).item() for d in batches(41, STEPS, data)]
    return finish(lib, model, tmp, w0, losses)


# ---- neural style transfer: LBFGS optimises the image, Gram-matrix style losses ------------

def style_transfer(lib: ModuleType, weights: Weights | None, wrap: Callable[[Step], Step],
                   tmp: Path) -> Run:
    nn, F = lib.nn, lib.nn.functional
    cnn = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.Conv2d(4, 4, 3, padding=1),
                        nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(4, 6, 3, padding=1), nn.ReLU())
    w0 = start(lib, cnn, weights)
    cnn.eval().requires_grad_(False)

    def gram_matrix(x: Any) -> Any:
        a, b, c, d = x.size()
        features = x.view(a * b, c * d)
        return lib.mm(features, features.t()).div(a * b * c * d)

    def features(img: Any) -> list[Any]:
        out = []
        for i, layer in enumerate(cnn):
            img = layer(img)
            if i in (1, 3, 6):
                out.append(img)
        return out

    r = np.random.default_rng(42)
    content_img = lib.from_numpy(r.random((1, 3, 8, 8)).astype(np.float32))
    style_img = lib.from_numpy(r.random((1, 3, 8, 8)).astype(np.float32))
    content_target = features(content_img)[1].detach()
    style_targets = [gram_matrix(f).detach() for f in features(style_img)]
    input_img = content_img.clone().requires_grad_(True)
    optimizer = lib.optim.LBFGS([input_img], lr=0.5, max_iter=4, history_size=5)

    def closure() -> Any:
        with lib.no_grad():
            input_img.clamp_(0, 1)
        optimizer.zero_grad()
        feats = features(input_img)
        style_score = sum(F.mse_loss(gram_matrix(f), t) for f, t in zip(feats, style_targets))
        content_score = F.mse_loss(feats[1], content_target)
        loss = 1e3 * style_score + content_score
        loss.backward()
        return loss

    closure = wrap(closure)
    losses = [optimizer.step(closure).item() for _ in range(STEPS)]
    final = closure().item()  # clamps the image, as the tutorial ends
    return Run(w0, losses, {"image": input_img.detach().numpy(), "final": final,
                            "iterations": optimizer.state[input_img]["n_iter"]})


# ---- knowledge distillation: a frozen teacher, KL divergence at a temperature -------------

def distillation(lib: ModuleType, weights: Weights | None, wrap: Callable[[Step], Step],
                 tmp: Path) -> Run:
    nn, F = lib.nn, lib.nn.functional
    teacher = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 4))
    student = nn.Sequential(nn.Linear(5, 6), nn.ReLU(), nn.Linear(6, 4))
    both = nn.ModuleDict({"teacher": teacher, "student": student})
    w0 = start(lib, both, weights)
    opt = lib.optim.NAdam(student.parameters(), lr=1e-2)
    kl = nn.KLDivLoss(reduction="batchmean", log_target=True)
    T, soft_weight = 2.0, 0.7

    def step(x: Any, y: Any) -> Any:
        opt.zero_grad()
        with lib.no_grad():
            teacher_logits = teacher(x)
        student_logits = student(x)
        soft = kl(F.log_softmax(student_logits / T, dim=-1),
                  F.log_softmax(teacher_logits / T, dim=-1)) * T ** 2
        loss = soft_weight * soft + (1 - soft_weight) * F.cross_entropy(student_logits, y)
        loss.backward()
        opt.step()
        return loss

    def data(r: np.random.Generator) -> tuple[np.ndarray, ...]:
        return r.standard_normal((6, 5)).astype(np.float32), r.integers(0, 4, 6)

    teacher.eval()
    student.train()
    step = wrap(step)
    losses = [step(*tensors(lib, d)).item() for d in batches(43, STEPS, data)]
    return finish(lib, both, tmp, w0, losses)


# ---- SimCLR: NT-Xent over two views, the diagonal masked out ------------------------------

def simclr(lib: ModuleType, weights: Weights | None, wrap: Callable[[Step], Step],
           tmp: Path) -> Run:
    nn, F = lib.nn, lib.nn.functional
    encoder = nn.Sequential(nn.Linear(6, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 4))
    w0 = start(lib, encoder, weights)
    opt = lib.optim.SGD(encoder.parameters(), lr=0.3, momentum=0.9, weight_decay=1e-4)

    def info_nce(z1: Any, z2: Any, temperature: float = 0.5) -> Any:
        z = F.normalize(lib.cat([z1, z2], dim=0), dim=1)
        sim = z @ z.T / temperature
        n = z1.size(0)
        sim = sim.masked_fill(lib.eye(2 * n, dtype=lib.bool), float("-inf"))
        targets = lib.cat([lib.arange(n, 2 * n), lib.arange(0, n)])
        return F.cross_entropy(sim, targets)

    def step(view1: Any, view2: Any) -> Any:
        opt.zero_grad()
        loss = info_nce(encoder(view1), encoder(view2))
        loss.backward()
        opt.step()
        return loss

    def data(r: np.random.Generator) -> tuple[np.ndarray, ...]:
        x = r.standard_normal((5, 6))
        return tuple((x + 0.1 * r.standard_normal(x.shape)).astype(np.float32) for _ in "ab")

    step = wrap(step)
    encoder.train()
    losses = [step(*tensors(lib, d)).item() for d in batches(44, STEPS, data)]
    return finish(lib, encoder, tmp, w0, losses)


# ---- a spectrally normalised critic (parametrizations.spectral_norm) -----------------------

def sn_critic(lib: ModuleType, weights: Weights | None, wrap: Callable[[Step], Step],
              tmp: Path) -> Run:
    nn = lib.nn
    sn = nn.utils.parametrizations.spectral_norm
    critic = nn.Sequential(sn(nn.Linear(3, 8)), nn.LeakyReLU(0.1), sn(nn.Linear(8, 1)))
    w0 = start(lib, critic, weights)
    # eps: with beta1 = 0, Adam divides a gradient by its own size, so the rounding noise of
    # one that cancels to about 0 (bias[0]'s here) moved that weight by up to lr, differently
    # under each BLAS (MKL on an Intel CPU gave 0.003 apart after 4 steps)
    opt = lib.optim.Adam(critic.parameters(), lr=1e-2, betas=(0.0, 0.9), eps=1e-5)

    def step(real: Any, fake: Any) -> Any:
        opt.zero_grad()
        loss = nn.functional.relu(1 - critic(real)).mean() + \
            nn.functional.relu(1 + critic(fake)).mean()  # hinge loss
        loss.backward()
        opt.step()
        return loss

    def data(r: np.random.Generator) -> tuple[np.ndarray, ...]:
        return (r.standard_normal((6, 3)).astype(np.float32) + 1,
                r.standard_normal((6, 3)).astype(np.float32))

    step = wrap(step)
    critic.train()
    losses = [step(*tensors(lib, d)).item() for d in batches(45, STEPS, data)]
    critic.eval()
    with lib.no_grad():
        sigma = lib.linalg.matrix_norm(critic[0].weight, ord=2).item()
        out = critic(lib.ones(2, 3))
    return finish(lib, critic, tmp, w0, losses, sigma=sigma, eval=out.numpy())


# ---- stochastic weight averaging: AveragedModel, SWALR, update_bn --------------------------

def swa(lib: ModuleType, weights: Weights | None, wrap: Callable[[Step], Step],
        tmp: Path) -> Run:
    nn = lib.nn
    swa_utils = import_module(f"{lib.__name__}.optim.swa_utils")
    model = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 1))
    w0 = start(lib, model, weights)
    opt = lib.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    swa_model = swa_utils.AveragedModel(model)
    swa_scheduler = swa_utils.SWALR(opt, swa_lr=0.02, anneal_epochs=2)

    def step(x: Any, y: Any) -> Any:
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss

    def data(r: np.random.Generator) -> tuple[np.ndarray, ...]:
        x = r.standard_normal((6, 4)).astype(np.float32)
        return x, x[:, :1] * 2 - x[:, 1:2]

    step = wrap(step)
    model.train()
    losses = []
    loader = [tuple(tensors(lib, d)) for d in batches(46, 2, data)]
    for epoch in range(STEPS):
        for x, y in loader:
            losses.append(step(x, y).item())
        if epoch >= 1:
            swa_model.update_parameters(model)
            swa_scheduler.step()
    swa_utils.update_bn(loader, swa_model)
    swa_model.eval()
    with lib.no_grad():
        out = swa_model(loader[0][0])
    return finish(lib, swa_model, tmp, w0, losses, eval=out.numpy(),
                  lr=opt.param_groups[0]["lr"])


# ---- bfloat16 autocast on the CPU with a GradScaler ----------------------------------------

def autocast_scaler(lib: ModuleType, weights: Weights | None, wrap: Callable[[Step], Step],
                    tmp: Path) -> Run:
    nn = lib.nn
    model = nn.Sequential(nn.Linear(6, 16), nn.GELU(), nn.LayerNorm(16), nn.Linear(16, 3))
    w0 = start(lib, model, weights)
    opt = lib.optim.AdamW(model.parameters(), lr=1e-2)
    scaler = lib.amp.GradScaler("cpu", init_scale=2.0 ** 8, growth_interval=2)

    def step(x: Any, y: Any) -> Any:
        opt.zero_grad()
        with lib.autocast(device_type="cpu", dtype=lib.bfloat16):
            logits = model(x)
            assert logits.dtype == lib.bfloat16
            loss = nn.functional.cross_entropy(logits, y)
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(opt)
        scaler.update()
        return loss

    def data(r: np.random.Generator) -> tuple[np.ndarray, ...]:
        return r.standard_normal((8, 6)).astype(np.float32), r.integers(0, 3, 8)

    step = wrap(step)
    losses = [step(*tensors(lib, d)).item() for d in batches(47, STEPS, data)]
    return finish(lib, model, tmp, w0, losses, scale=scaler.get_scale())


# ---- gradient hooks: a tensor hook clamps, module backward hooks record -------------------

def grad_hooks(lib: ModuleType, weights: Weights | None, wrap: Callable[[Step], Step],
               tmp: Path, module_hook: bool = True) -> Run:
    nn = lib.nn
    model = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))
    w0 = start(lib, model, weights)
    for p in model.parameters():
        p.register_hook(lambda g: g.clamp(-0.05, 0.05))
    norms: list[float] = []
    if module_hook:
        model[2].register_full_backward_hook(
            lambda mod, gin, gout: norms.append(gout[0].norm().item()))
    opt = lib.optim.Adamax(model.parameters(), lr=1e-2)

    def step(x: Any, y: Any) -> tuple[Any, Any]:
        opt.zero_grad()
        hidden = model[1](model[0](x))
        hidden.retain_grad()
        loss = nn.functional.cross_entropy(model[2](hidden), y)
        loss.backward()
        opt.step()
        return loss, hidden.grad

    def data(r: np.random.Generator) -> tuple[np.ndarray, ...]:
        return r.standard_normal((5, 4)).astype(np.float32), r.integers(0, 2, 5)

    step = wrap(step)
    losses, hidden_grads = [], []
    for d in batches(48, STEPS, data):
        loss, g = step(*tensors(lib, d))
        losses.append(loss.item())
        hidden_grads.append(g.numpy())
    return finish(lib, model, tmp, w0, losses, norms=np.array(norms),
                  hidden_grad=np.stack(hidden_grads),
                  grad=model[0].weight.grad.numpy())


# ---- OneCycleLR: the learning rate and SGD's momentum cycle every batch --------------------

def one_cycle(lib: ModuleType, weights: Weights | None, wrap: Callable[[Step], Step],
              tmp: Path) -> Run:
    nn = lib.nn
    model = nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 1))
    w0 = start(lib, model, weights)
    opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, nesterov=True)
    sched = lib.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=2 * STEPS + 1,
                                              pct_start=0.3, anneal_strategy="cos")

    def step(x: Any, y: Any) -> Any:
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss

    def data(r: np.random.Generator) -> tuple[np.ndarray, ...]:
        x = r.standard_normal((6, 3)).astype(np.float32)
        return x, np.abs(x).sum(1, keepdims=True)

    step = wrap(step)
    losses, lrs, momenta = [], [], []
    for d in batches(49, 2 * STEPS, data):
        losses.append(step(*tensors(lib, d)).item())
        sched.step()
        lrs.append(opt.param_groups[0]["lr"])
        momenta.append(opt.param_groups[0]["momentum"])
    return finish(lib, model, tmp, w0, losses, lrs=np.array(lrs), momenta=np.array(momenta))


# ---- a custom Function: in place (mark_dirty), once_differentiable, unmaterialised grads ---

def custom_inplace(lib: ModuleType, weights: Weights | None, wrap: Callable[[Step], Step],
                   tmp: Path) -> Run:
    nn = lib.nn
    function = import_module(f"{lib.__name__}.autograd.function")

    class ScaledReLU_(lib.autograd.Function):
        """relu in place, times a scale; the output saved for the backward."""

        @staticmethod
        def forward(ctx: Any, x: Any, scale: float) -> Any:
            x.clamp_(min=0).mul_(scale)
            ctx.mark_dirty(x)
            ctx.save_for_backward(x)
            ctx.scale = scale
            return x

        @staticmethod
        @function.once_differentiable
        def backward(ctx: Any, grad: Any) -> tuple[Any, None]:
            (out,) = ctx.saved_tensors
            return grad * (out > 0).to(grad.dtype) * ctx.scale, None

    class SplitSum(lib.autograd.Function):
        """Two outputs, often only one used: its gradient arrives as None."""

        @staticmethod
        def forward(ctx: Any, x: Any) -> tuple[Any, Any]:
            ctx.set_materialize_grads(False)
            return x[:, :4].clone(), x[:, 4:].sum(1)

        @staticmethod
        def backward(ctx: Any, g_head: Any, g_tail: Any) -> Any:
            parts = [lib.zeros(g_head.size(0), 4) if g_head is None else g_head]
            rows = parts[0].size(0)
            parts.append(lib.zeros(rows, 4) if g_tail is None
                         else g_tail.unsqueeze(1).expand(rows, 4))
            return lib.cat(parts, dim=1)

    model = nn.Sequential(nn.Linear(3, 8), nn.Linear(4, 2))
    w0 = start(lib, model, weights)
    opt = lib.optim.RAdam(model.parameters(), lr=1e-2)

    def step(x: Any, y: Any, use_tail: bool) -> Any:
        opt.zero_grad()
        h = ScaledReLU_.apply(model[0](x), 1.5)
        head, tail = SplitSum.apply(h)
        out = model[1](head)
        loss = nn.functional.mse_loss(out, y)
        if use_tail:
            loss = loss + 0.1 * tail.mean()
        loss.backward()
        opt.step()
        return loss

    def data(r: np.random.Generator) -> tuple[np.ndarray, ...]:
        return r.standard_normal((4, 3)).astype(np.float32), \
            r.standard_normal((4, 2)).astype(np.float32)

    step = wrap(step)
    losses = [step(*tensors(lib, d), i % 2 == 0).item()
              for i, d in enumerate(batches(50, STEPS, data))]
    return finish(lib, model, tmp, w0, losses)


SCRIPTS: dict[str, Callable[..., Run]] = {
    "pinn": pinn,
    "maml": maml,
    "style_transfer": style_transfer,
    "distillation": distillation,
    "simclr": simclr,
    "sn_critic": sn_critic,
    "swa": swa,
    "autocast_scaler": autocast_scaler,
    "grad_hooks": grad_hooks,
    "tensor_hooks": lambda *a: grad_hooks(*a, module_hook=False),
    "one_cycle": one_cycle,
    "custom_inplace": custom_inplace,
}


@pytest.mark.parametrize("name", list(SCRIPTS))
def test_script_equals_pytorch(name: str, tmp_path: Path, torch_one_thread: ModuleType  # noqa: F811
                               ) -> None:
    equals_pytorch(SCRIPTS, name, torch_one_thread, tmp_path)
