"""More tutorial scripts ported from PyTorch by changing the import: a VQ-VAE (straight-through
estimator, codebook and commitment losses), DANN's gradient reversal layer, the DQN tutorial's
optimisation step (a target network, gather, SmoothL1, in-place gradient clipping), a
Siamese network with a triplet margin loss, the BiLSTM-CRF tutorial's forward algorithm, a
Newton step through Hessian-vector products (autograd.functional.hvp), CTC for a small
acoustic model and a super-resolution net (PixelShuffle) with a Gaussian NLL head. As in
tests/runtime/test_scripts_more_models.py, each equals PyTorch from the same weights and
data; the compiled runs are in tests/planner/test_scripts_compiled_more_scripts.py."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

import runtime as rt
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


# ---- VQ-VAE: nearest codebook vectors, the straight-through gradient ----------------------

def vqvae(lib: ModuleType, weights: Weights | None, wrap: Callable[[Step], Step],
          tmp: Path) -> Run:
    nn, F = lib.nn, lib.nn.functional

    class VectorQuantizer(nn.Module):
        def __init__(self, num_embeddings: int, dim: int, beta: float = 0.25) -> None:
            super().__init__()
            self.embedding = nn.Embedding(num_embeddings, dim)
            self.embedding.weight.data.uniform_(-1 / num_embeddings, 1 / num_embeddings)
            self.beta = beta

        def forward(self, z: Any) -> tuple[Any, Any, Any]:
            flat = z.reshape(-1, z.size(-1))
            d = (flat.pow(2).sum(1, keepdim=True) - 2 * flat @ self.embedding.weight.t()
                 + self.embedding.weight.pow(2).sum(1))
            indices = d.argmin(1)
            z_q = self.embedding(indices).view_as(z)
            loss = F.mse_loss(z_q, z.detach()) + self.beta * F.mse_loss(z_q.detach(), z)
            z_q = z + (z_q - z).detach()  # straight-through estimator
            return z_q, loss, indices

    class VQVAE(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.encoder = nn.Sequential(nn.Linear(8, 6), nn.ReLU(), nn.Linear(6, 3))
            self.vq = VectorQuantizer(5, 3)
            self.decoder = nn.Sequential(nn.Linear(3, 6), nn.ReLU(), nn.Linear(6, 8))

        def forward(self, x: Any) -> tuple[Any, Any, Any]:
            z_q, vq_loss, indices = self.vq(self.encoder(x))
            return self.decoder(z_q), vq_loss, indices

    model = VQVAE()
    w0 = start(lib, model, weights)
    opt = lib.optim.Adam(model.parameters(), lr=1e-2)

    def step(x: Any) -> tuple[Any, Any]:
        opt.zero_grad()
        recon, vq_loss, indices = model(x)
        loss = F.mse_loss(recon, x) + vq_loss
        loss.backward()
        opt.step()
        return loss, indices

    step = wrap(step)
    losses, codes = [], []
    for (x,) in batches(60, STEPS, lambda r: (r.standard_normal((6, 8)).astype(np.float32),)):
        loss, indices = step(lib.from_numpy(x))
        losses.append(loss.item())
        codes.append(indices.numpy().copy())
    return finish(lib, model, tmp, w0, losses, codes=np.stack(codes))


# ---- DANN: a gradient reversal layer between the features and the domain classifier -------

def dann(lib: ModuleType, weights: Weights | None, wrap: Callable[[Step], Step],
         tmp: Path) -> Run:
    nn, F = lib.nn, lib.nn.functional

    class GradientReversal(lib.autograd.Function):
        @staticmethod
        def forward(ctx: Any, x: Any, alpha: float) -> Any:
            ctx.alpha = alpha
            return x.view_as(x)

        @staticmethod
        def backward(ctx: Any, grad_output: Any) -> tuple[Any, None]:
            return grad_output.neg() * ctx.alpha, None

    features = nn.Sequential(nn.Linear(5, 8), nn.ReLU())
    label_head = nn.Linear(8, 3)
    domain_head = nn.Sequential(nn.Linear(8, 4), nn.ReLU(), nn.Linear(4, 1))
    model = nn.ModuleDict({"f": features, "y": label_head, "d": domain_head})
    w0 = start(lib, model, weights)
    opt = lib.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    def step(xs: Any, ys: Any, xt: Any, alpha: Any) -> tuple[Any, Any]:
        opt.zero_grad()
        fs, ft = features(xs), features(xt)
        class_loss = F.cross_entropy(label_head(fs), ys)
        domain_logits = domain_head(GradientReversal.apply(lib.cat([fs, ft]), alpha))
        domain = lib.cat([lib.zeros(xs.size(0), 1), lib.ones(xt.size(0), 1)])
        domain_loss = F.binary_cross_entropy_with_logits(domain_logits, domain)
        (class_loss + domain_loss).backward()
        opt.step()
        return class_loss, domain_loss

    def data(r: np.random.Generator) -> tuple[np.ndarray, ...]:
        return (r.standard_normal((4, 5)).astype(np.float32), r.integers(0, 3, 4),
                (r.standard_normal((4, 5)) + 0.5).astype(np.float32))

    step = wrap(step)
    losses = []
    for i, d in enumerate(batches(61, STEPS, data)):
        p = i / STEPS
        alpha = 2.0 / (1.0 + np.exp(-10 * p)) - 1  # the paper's schedule
        class_loss, domain_loss = step(*tensors(lib, d), float(alpha))
        losses += [class_loss.item(), domain_loss.item()]
    return finish(lib, model, tmp, w0, losses)


# ---- the DQN tutorial's optimize_model: a target network, soft updates ---------------------

def dqn(lib: ModuleType, weights: Weights | None, wrap: Callable[[Step], Step],
        tmp: Path) -> Run:
    nn = lib.nn

    def net() -> Any:
        return nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU(),
                             nn.Linear(16, 2))

    policy_net, target_net = net(), net()
    both = nn.ModuleDict({"policy": policy_net, "target": target_net})
    w0 = start(lib, both, weights)
    target_net.load_state_dict(policy_net.state_dict())
    optimizer = lib.optim.AdamW(policy_net.parameters(), lr=1e-3, amsgrad=True)
    GAMMA, TAU = 0.99, 0.005

    def optimize_model(state: Any, action: Any, reward: Any, next_state: Any,
                       non_final_mask: Any) -> Any:
        state_action_values = policy_net(state).gather(1, action)
        next_state_values = lib.zeros(state.size(0))
        with lib.no_grad():
            best = target_net(next_state).max(1).values
            next_state_values = lib.where(non_final_mask, best, next_state_values)
        expected = (next_state_values * GAMMA) + reward
        criterion = nn.SmoothL1Loss()
        loss = criterion(state_action_values, expected.unsqueeze(1))
        optimizer.zero_grad()
        loss.backward()
        lib.nn.utils.clip_grad_value_(policy_net.parameters(), 100)
        optimizer.step()
        return loss

    def soft_update() -> None:
        target_net_state_dict = target_net.state_dict()
        policy_net_state_dict = policy_net.state_dict()
        for key in policy_net_state_dict:
            target_net_state_dict[key] = (policy_net_state_dict[key] * TAU
                                          + target_net_state_dict[key] * (1 - TAU))
        target_net.load_state_dict(target_net_state_dict)

    def data(r: np.random.Generator) -> tuple[np.ndarray, ...]:
        return (r.standard_normal((8, 4)).astype(np.float32), r.integers(0, 2, (8, 1)),
                r.random(8).astype(np.float32), r.standard_normal((8, 4)).astype(np.float32),
                r.random(8) > 0.2)

    optimize_model = wrap(optimize_model)
    losses = []
    for d in batches(62, STEPS, data):
        losses.append(optimize_model(*tensors(lib, d)).item())
        soft_update()
    return finish(lib, both, tmp, w0, losses)


# ---- a Siamese embedding net trained with TripletMarginLoss --------------------------------

def triplet(lib: ModuleType, weights: Weights | None, wrap: Callable[[Step], Step],
            tmp: Path) -> Run:
    nn, F = lib.nn, lib.nn.functional
    embed = nn.Sequential(nn.Linear(6, 8), nn.PReLU(), nn.Linear(8, 4))
    w0 = start(lib, embed, weights)
    opt = lib.optim.Adagrad(embed.parameters(), lr=0.05)
    criterion = nn.TripletMarginLoss(margin=0.5, p=2, swap=True)

    def step(anchor: Any, positive: Any, negative: Any) -> tuple[Any, Any]:
        opt.zero_grad()
        a, p, n = (F.normalize(embed(t), dim=1) for t in (anchor, positive, negative))
        loss = criterion(a, p, n) + 0.1 * F.cosine_embedding_loss(
            a, n, -lib.ones(a.size(0)), margin=0.2)
        loss.backward()
        opt.step()
        return loss, F.pairwise_distance(a, p).mean()

    def data(r: np.random.Generator) -> tuple[np.ndarray, ...]:
        a = r.standard_normal((5, 6))
        return tuple(v.astype(np.float32) for v in
                     (a, a + 0.3 * r.standard_normal(a.shape), r.standard_normal(a.shape)))

    step = wrap(step)
    losses = []
    for d in batches(63, STEPS, data):
        loss, dist = step(*tensors(lib, d))
        losses += [loss.item(), dist.item()]
    return finish(lib, embed, tmp, w0, losses)


# ---- the BiLSTM-CRF tutorial: the forward algorithm against the gold path's score ----------

CRF_TAGS, CRF_T = 4, 5


def bilstm_crf(lib: ModuleType, weights: Weights | None, wrap: Callable[[Step], Step],
               tmp: Path) -> Run:
    nn = lib.nn

    class BiLSTM_CRF(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.word_embeds = nn.Embedding(10, 5)
            self.lstm = nn.LSTM(5, 3, num_layers=1, bidirectional=True)
            self.hidden2tag = nn.Linear(6, CRF_TAGS)
            self.transitions = nn.Parameter(lib.randn(CRF_TAGS, CRF_TAGS))

        def _get_lstm_features(self, sentence: Any) -> Any:
            embeds = self.word_embeds(sentence).view(len(sentence), 1, -1)
            lstm_out, _ = self.lstm(embeds)
            return self.hidden2tag(lstm_out.view(len(sentence), 6))

        def _forward_alg(self, feats: Any) -> Any:
            forward_var = lib.zeros(1, CRF_TAGS)
            for feat in feats:  # vectorised over tags: logsumexp of every transition
                next_tag_var = forward_var + self.transitions + feat.view(-1, 1)
                forward_var = lib.logsumexp(next_tag_var, dim=1).view(1, -1)
            return lib.logsumexp(forward_var, dim=1)[0]

        def _score_sentence(self, feats: Any, tags: Any) -> Any:
            score = lib.zeros(())
            for i, feat in enumerate(feats):
                if i > 0:
                    score = score + self.transitions[tags[i], tags[i - 1]]
                score = score + feat[tags[i]]
            return score

        def neg_log_likelihood(self, sentence: Any, tags: Any) -> Any:
            feats = self._get_lstm_features(sentence)
            return self._forward_alg(feats) - self._score_sentence(feats, tags)

    model = BiLSTM_CRF()
    w0 = start(lib, model, weights)
    optimizer = lib.optim.SGD(model.parameters(), lr=0.01, weight_decay=1e-4)

    def step(sentence: Any, tags: Any) -> Any:
        model.zero_grad()
        loss = model.neg_log_likelihood(sentence, tags)
        loss.backward()
        optimizer.step()
        return loss

    def data(r: np.random.Generator) -> tuple[np.ndarray, ...]:
        return r.integers(0, 10, CRF_T), r.integers(0, CRF_TAGS, CRF_T)

    step = wrap(step)
    losses = [step(*tensors(lib, d)).item() for d in batches(64, STEPS, data)]
    return finish(lib, model, tmp, w0, losses)


# ---- a Newton step through Hessian-vector products (conjugate gradient) -------------------

def newton_cg(lib: ModuleType, weights: Weights | None, wrap: Callable[[Step], Step],
              tmp: Path) -> Run:
    r = np.random.default_rng(65)
    x = lib.from_numpy(r.standard_normal((12, 3)).astype(np.float64))
    y = lib.from_numpy((r.random(12) > 0.5).astype(np.float64))
    w = lib.from_numpy(np.zeros(3)) if weights is None else lib.from_numpy(weights["w"].copy())
    w0 = {"w": w.numpy().copy()}

    def loss_fn(w: Any) -> Any:
        logits = x @ w
        return lib.nn.functional.binary_cross_entropy_with_logits(logits, y) + 0.05 * w.dot(w)

    def newton_step(w: Any) -> tuple[Any, Any]:
        loss, grad = lib.autograd.functional.vjp(loss_fn, w)
        direction, residual = lib.zeros_like(w), -grad
        p = residual.clone()
        for _ in range(3):  # conjugate gradient on H d = -g
            _, hp = lib.autograd.functional.hvp(loss_fn, w, p)
            alpha = residual.dot(residual) / p.dot(hp)
            direction = direction + alpha * p
            new_residual = residual - alpha * hp
            p = new_residual + new_residual.dot(new_residual) / residual.dot(residual) * p
            residual = new_residual
        return loss, w + direction

    newton_step = wrap(newton_step)
    losses = []
    for _ in range(STEPS):
        loss, w = newton_step(w)
        losses.append(loss.item())
    hessian = lib.autograd.functional.hessian(loss_fn, w)
    return Run(w0, losses, {"w": w.numpy(), "hessian": hessian.numpy()})


# ---- CTC for a tiny acoustic model: log_softmax over time, CTCLoss -------------------------

CTC_T, CTC_C = 8, 5


def ctc(lib: ModuleType, weights: Weights | None, wrap: Callable[[Step], Step],
        tmp: Path) -> Run:
    nn = lib.nn
    model = nn.ModuleDict({"rnn": nn.GRU(3, 6, bidirectional=True), "fc": nn.Linear(12, CTC_C)})
    w0 = start(lib, model, weights)
    opt = lib.optim.Adam(model.parameters(), lr=1e-2)
    criterion = nn.CTCLoss(blank=0, zero_infinity=True)

    def step(x: Any, targets: Any, input_lengths: Any, target_lengths: Any) -> Any:
        opt.zero_grad()
        out, _ = model["rnn"](x)
        log_probs = model["fc"](out).log_softmax(2)  # (T, N, C)
        loss = criterion(log_probs, targets, input_lengths, target_lengths)
        loss.backward()
        opt.step()
        return loss

    def data(r: np.random.Generator) -> tuple[np.ndarray, ...]:
        return (r.standard_normal((CTC_T, 3, 3)).astype(np.float32),
                r.integers(1, CTC_C, (3, 3)), np.array([8, 7, 6]), np.array([3, 2, 1]))

    step = wrap(step)
    losses = [step(*tensors(lib, d)).item() for d in batches(66, STEPS, data)]
    return finish(lib, model, tmp, w0, losses)


# ---- super-resolution: sub-pixel convolution (PixelShuffle), a Gaussian NLL ----------------

def super_resolution(lib: ModuleType, weights: Weights | None, wrap: Callable[[Step], Step],
                     tmp: Path) -> Run:
    nn, F = lib.nn, lib.nn.functional

    class Net(nn.Module):
        def __init__(self, upscale_factor: int = 2) -> None:
            super().__init__()
            self.conv1 = nn.Conv2d(1, 8, 5, 1, 2)
            self.conv2 = nn.Conv2d(8, 2 * upscale_factor ** 2, 3, 1, 1)
            self.pixel_shuffle = nn.PixelShuffle(upscale_factor)

        def forward(self, x: Any) -> tuple[Any, Any]:
            out = self.pixel_shuffle(self.conv2(F.relu(self.conv1(x))))
            mean, log_var = out.chunk(2, dim=1)
            return mean, F.softplus(log_var) + 1e-3

    model = Net()
    w0 = start(lib, model, weights)
    opt = lib.optim.Adam(model.parameters(), lr=1e-3)
    criterion = nn.GaussianNLLLoss()

    def step(low: Any, high: Any) -> Any:
        opt.zero_grad()
        mean, var = model(low)
        loss = criterion(mean, high, var)
        loss.backward()
        opt.step()
        return loss

    def data(r: np.random.Generator) -> tuple[np.ndarray, ...]:
        high = r.random((2, 1, 8, 8)).astype(np.float32)
        return high.reshape(2, 1, 4, 2, 4, 2).mean((3, 5)), high

    step = wrap(step)
    losses = [step(*tensors(lib, d)).item() for d in batches(67, STEPS, data)]
    return finish(lib, model, tmp, w0, losses)


SCRIPTS: dict[str, Callable[..., Run]] = {
    "vqvae": vqvae,
    "dann": dann,
    "dqn": dqn,
    "triplet": triplet,
    "bilstm_crf": bilstm_crf,
    "newton_cg": newton_cg,
    "ctc": ctc,
    "super_resolution": super_resolution,
}


@pytest.mark.parametrize("name", list(SCRIPTS))
def test_script_equals_pytorch(name: str, tmp_path: Path, torch_one_thread: ModuleType  # noqa: F811
                               ) -> None:
    equals_pytorch(SCRIPTS, name, torch_one_thread, tmp_path)


@pytest.mark.parametrize("pos_weight", [None, 2.0])
def test_bce_with_logits_second_derivative_at_zero_logits(pos_weight: float | None) -> None:
    """Logistic regression from zero weights: the Hessian at zero logits is sigmoid' = 1/4
    (it was 0: the loss was written with abs and maximum, whose kinks sit at 0)."""
    torch = pytest.importorskip("torch")
    out = []
    for lib in (torch, rt):
        x = lib.tensor([0.0, 0.0, 1.0, -40.0, 40.0], dtype=lib.float64, requires_grad=True)
        y = lib.tensor([1.0, 0.0, 1.0, 0.3, 0.7], dtype=lib.float64)
        pw = None if pos_weight is None else lib.tensor(pos_weight, dtype=lib.float64)
        loss = lib.nn.functional.binary_cross_entropy_with_logits(x, y, reduction="none",
                                                                  pos_weight=pw)
        (g,) = lib.autograd.grad(loss.sum(), x, create_graph=True)
        (h,) = lib.autograd.grad(g.sum(), x)
        out.append([t.detach().numpy() for t in (loss, g, h)])
    for got, want in zip(out[1], out[0], strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-16)


@pytest.mark.parametrize("loss", ["soft_margin_loss", "multilabel_soft_margin_loss"])
def test_soft_margin_second_derivative_at_zero(loss: str) -> None:
    """log(1 + exp(-y x)) at y x = 0: its second derivative is 1/4 (0 before, as for BCE)."""
    torch = pytest.importorskip("torch")
    out = []
    for lib in (torch, rt):
        x = lib.tensor([[0.0, -0.0, 1.0, -3.0]], dtype=lib.float64, requires_grad=True)
        y = lib.tensor([[1.0, -1.0, 1.0, -1.0]], dtype=lib.float64)
        target = y if loss == "soft_margin_loss" else (y > 0).double()
        value = getattr(lib.nn.functional, loss)(x, target)
        (g,) = lib.autograd.grad(value, x, create_graph=True)
        (h,) = lib.autograd.grad(g.sum(), x)
        out.append([t.detach().numpy() for t in (value, g, h)])
    for got, want in zip(out[1], out[0], strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-16)
