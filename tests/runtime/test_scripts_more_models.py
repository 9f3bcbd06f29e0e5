"""More tutorial scripts ported from PyTorch by changing the import, each a model kind of its
own: a DCGAN step toggling the critic's ``requires_grad``, WGAN-GP's gradient penalty (double
backward), a custom ``autograd.Function``, padded and masked RNN classifiers, a
TransformerEncoder classifier with a key padding mask, a 1-d ResNet with BatchNorm in train
then eval mode, activation checkpointing, a weight-tied language model and a convolutional
VAE. As in tests/runtime/test_scripts_training.py, each script is written once against a
library, starts from the same weights and data in both, draws no random numbers, and its
losses, final parameters and evaluation equal PyTorch's; the compiled runs are in
tests/planner/test_scripts_compiled_more_scripts.py."""

from __future__ import annotations

from collections.abc import Callable
from importlib import import_module
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

import runtime as rt
from tests.runtime.test_scripts_training import (
    Run,
    Step,
    Weights,
    as_is,
    assert_runs_equal,
    batches,
    numpy_state,
    save_and_load,
    start,
    tensors,
    torch_one_thread,  # noqa: F401  (a fixture)
)

STEPS = 4


def assert_runs_match(got: Run, want: Run, rtol: float, atol: float) -> None:
    """assert_runs_equal, with texts (an error's message) compared as they are."""
    texts = {k for k, v in want.extra.items() if isinstance(v, str)}
    assert {k: got.extra.get(k) for k in texts} == {k: want.extra[k] for k in texts}
    strip = lambda run: Run(run.weights, run.losses,  # noqa: E731
                            {k: v for k, v in run.extra.items() if k not in texts})
    assert_runs_equal(strip(got), strip(want), rtol, atol)


def finish(lib: ModuleType, model: Any, tmp: Path, w0: Weights, losses: list[float],
           **extra: Any) -> Run:
    """The run a script leaves: its final parameters and buffers are compared too."""
    save_and_load(lib, model, tmp)
    extra.update({f"final.{k}": v for k, v in numpy_state(model).items()})
    return Run(w0, losses, extra)


# ---- DCGAN: the critic frozen (requires_grad_(False)) for the generator's update ----------

def dcgan(lib: ModuleType, weights: Weights | None, wrap: Callable[[Step], Step],
          tmp: Path) -> Run:
    nn = lib.nn
    netG = nn.Sequential(nn.ConvTranspose2d(3, 4, 4, 1, 0, bias=False), nn.BatchNorm2d(4),
                         nn.ReLU(True), nn.ConvTranspose2d(4, 1, 4, 2, 1, bias=False), nn.Tanh())
    netD = nn.Sequential(nn.Conv2d(1, 4, 4, 2, 1, bias=False), nn.LeakyReLU(0.2, inplace=True),
                         nn.Conv2d(4, 1, 4, 1, 0, bias=False), nn.Flatten())
    both = nn.ModuleDict({"G": netG, "D": netD})
    w0 = start(lib, both, weights)
    optD = lib.optim.Adam(netD.parameters(), lr=2e-3, betas=(0.5, 0.999))
    optG = lib.optim.Adam(netG.parameters(), lr=2e-3, betas=(0.5, 0.999))
    criterion = nn.BCEWithLogitsLoss()

    def set_requires_grad(net: Any, flag: bool) -> None:
        for p in net.parameters():
            p.requires_grad_(flag)

    def step(real: Any, noise: Any) -> tuple[Any, Any]:
        set_requires_grad(netD, True)
        optD.zero_grad()
        fake = netG(noise)
        ones, zeros = lib.ones(real.size(0), 1), lib.zeros(real.size(0), 1)
        lossD = 0.5 * (criterion(netD(real), ones) + criterion(netD(fake.detach()), zeros))
        lossD.backward()
        optD.step()
        set_requires_grad(netD, False)  # D's parameters get no gradient from G's loss
        optG.zero_grad()
        lossG = criterion(netD(fake), ones)
        lossG.backward()
        optG.step()
        return lossD, lossG

    def data(r: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        return (np.tanh(r.standard_normal((4, 1, 8, 8))).astype(np.float32),
                r.standard_normal((4, 3, 1, 1)).astype(np.float32))

    step = wrap(step)
    both.train()
    losses = []
    for d in batches(10, STEPS, data):
        lossD, lossG = step(*tensors(lib, d))
        losses += [lossD.item(), lossG.item()]
    assert not any(p.requires_grad for p in netD.parameters())
    set_requires_grad(netD, True)
    return finish(lib, both, tmp, w0, losses)


# ---- WGAN-GP: the gradient penalty's double backward (create_graph=True) ------------------

def wgan_gp(lib: ModuleType, weights: Weights | None, wrap: Callable[[Step], Step],
            tmp: Path) -> Run:
    nn = lib.nn
    netG = nn.Sequential(nn.Linear(2, 8), nn.ReLU(), nn.Linear(8, 3))
    netD = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 8), nn.Softplus(),
                         nn.Linear(8, 1))
    both = nn.ModuleDict({"G": netG, "D": netD})
    w0 = start(lib, both, weights)
    optD = lib.optim.Adam(netD.parameters(), lr=1e-3, betas=(0.0, 0.9))
    optG = lib.optim.RMSprop(netG.parameters(), lr=1e-3)

    def gradient_penalty(real: Any, fake: Any, alpha: Any) -> Any:
        interpolates = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
        d_interpolates = netD(interpolates)
        gradients = lib.autograd.grad(outputs=d_interpolates, inputs=interpolates,
                                      grad_outputs=lib.ones_like(d_interpolates),
                                      create_graph=True, retain_graph=True)[0]
        return ((gradients.norm(2, dim=1) - 1) ** 2).mean()

    def step(real: Any, noise: Any, alpha: Any) -> tuple[Any, Any, Any]:
        optD.zero_grad()
        fake = netG(noise).detach()
        gp = gradient_penalty(real, fake, alpha)
        lossD = netD(fake).mean() - netD(real).mean() + 10 * gp
        lossD.backward()
        optD.step()
        optG.zero_grad()
        lossG = -netD(netG(noise)).mean()
        lossG.backward()
        optG.step()
        return lossD, lossG, gp

    def data(r: np.random.Generator) -> tuple[np.ndarray, ...]:
        return (r.standard_normal((5, 3)).astype(np.float32) + 1,
                r.standard_normal((5, 2)).astype(np.float32),
                r.random((5, 1)).astype(np.float32))

    step = wrap(step)
    losses = []
    for d in batches(11, STEPS, data):
        lossD, lossG, gp = step(*tensors(lib, d))
        losses += [lossD.item(), lossG.item(), gp.item()]
    return finish(lib, both, tmp, w0, losses)


# ---- a custom autograd.Function: the tutorial's LinearFunction and a top-1 with its index --

def custom_function(lib: ModuleType, weights: Weights | None, wrap: Callable[[Step], Step],
                    tmp: Path) -> Run:
    nn = lib.nn
    Function = lib.autograd.Function

    class LinearFunction(Function):
        @staticmethod
        def forward(ctx: Any, input: Any, weight: Any, bias: Any = None) -> Any:
            ctx.save_for_backward(input, weight, bias)
            output = input.mm(weight.t())
            if bias is not None:
                output += bias.unsqueeze(0).expand_as(output)
            return output

        @staticmethod
        def backward(ctx: Any, grad_output: Any) -> tuple[Any, Any, Any]:
            input, weight, bias = ctx.saved_tensors
            grad_input = grad_weight = grad_bias = None
            if ctx.needs_input_grad[0]:
                grad_input = grad_output.mm(weight)
            if ctx.needs_input_grad[1]:
                grad_weight = grad_output.t().mm(input)
            if bias is not None and ctx.needs_input_grad[2]:
                grad_bias = grad_output.sum(0)
            return grad_input, grad_weight, grad_bias

    class MaxWithIndex(Function):
        """The row maximum and where it is; the index is not differentiable."""

        @staticmethod
        def forward(ctx: Any, x: Any) -> tuple[Any, Any]:
            values, idx = x.max(dim=1)
            ctx.mark_non_differentiable(idx)
            ctx.save_for_backward(idx)
            ctx.shape = x.shape
            return values, idx

        @staticmethod
        def backward(ctx: Any, grad_values: Any, grad_idx: Any) -> Any:
            (idx,) = ctx.saved_tensors
            grad = grad_values.new_zeros(ctx.shape)
            return grad.scatter(1, idx.unsqueeze(1), grad_values.unsqueeze(1))

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w1, self.b1 = nn.Parameter(lib.randn(6, 4) * 0.5), nn.Parameter(lib.zeros(6))
            self.w2 = nn.Parameter(lib.randn(3, 6) * 0.5)

        def forward(self, x: Any) -> tuple[Any, Any]:
            h = LinearFunction.apply(x, self.w1, self.b1).tanh()
            out = LinearFunction.apply(h, self.w2)
            values, idx = MaxWithIndex.apply(out)
            return values, idx

    model = Net()
    w0 = start(lib, model, weights)
    opt = lib.optim.SGD(model.parameters(), lr=0.1, momentum=0.5)

    def step(x: Any) -> tuple[Any, Any]:
        opt.zero_grad()
        values, idx = model(x)
        loss = (values - 1).pow(2).mean()
        loss.backward()
        opt.step()
        return loss, idx

    step = wrap(step)
    losses, picks = [], []
    for (x,) in batches(12, STEPS, lambda r: (r.standard_normal((5, 4)).astype(np.float32),)):
        loss, idx = step(lib.from_numpy(x))
        assert not idx.requires_grad
        losses.append(loss.item())
        picks.append(idx.numpy().copy())
    x = lib.from_numpy(batches(13, 1, lambda r: (r.standard_normal((2, 4)),))[0][0]
                       .astype(np.float32)).requires_grad_()
    values, _ = model(x)
    node = values.grad_fn  # the Function's own node class, as PyTorch's FunctionMeta makes it
    assert type(node).__name__ == node.name() == "MaxWithIndexBackward"
    assert isinstance(node, MaxWithIndex._backward_cls)
    assert type(node.next_functions[0][0]).__name__ == "LinearFunctionBackward"
    (gx,) = lib.autograd.grad(values.sum(), x)  # the weights need no gradient here
    return finish(lib, model, tmp, w0, losses, picks=np.stack(picks), gx=gx.numpy())


# ---- RNN classifiers on padded batches: masked mean and the last valid step ---------------

RNN_V, RNN_T = 9, 6


def masked_rnn(lib: ModuleType, weights: Weights | None, wrap: Callable[[Step], Step],
               tmp: Path, kind: str = "LSTM", bidirectional: bool = False) -> Run:
    nn, F = lib.nn, lib.nn.functional

    class Classifier(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = nn.Embedding(RNN_V, 5, padding_idx=0)
            self.rnn = getattr(nn, kind)(5, 6, batch_first=True, bidirectional=bidirectional)
            width = 12 if bidirectional else 6
            self.head = nn.Linear(2 * width, 3)

        def forward(self, tokens: Any, lengths: Any) -> Any:
            out, _ = self.rnn(self.emb(tokens))  # padded positions run too: masked below
            mask = (lib.arange(tokens.size(1)).unsqueeze(0) < lengths.unsqueeze(1))
            mask = mask.unsqueeze(-1).to(out.dtype)
            mean = (out * mask).sum(1) / mask.sum(1)
            index = (lengths - 1).view(-1, 1, 1).expand(-1, 1, out.size(2))
            last = out.gather(1, index).squeeze(1)
            return self.head(lib.cat([mean, last], dim=1))

    model = Classifier()
    w0 = start(lib, model, weights)
    opt = lib.optim.Adam(model.parameters(), lr=1e-2)

    def step(tokens: Any, lengths: Any, y: Any) -> Any:
        opt.zero_grad()
        loss = F.cross_entropy(model(tokens, lengths), y)
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        opt.step()
        return loss

    def data(r: np.random.Generator) -> tuple[np.ndarray, ...]:
        lengths = r.integers(1, RNN_T + 1, 4)
        tokens = r.integers(1, RNN_V, (4, RNN_T))
        tokens[np.arange(RNN_T) >= lengths[:, None]] = 0
        return tokens, lengths, r.integers(0, 3, 4)

    step = wrap(step)
    model.train()
    losses = [step(*tensors(lib, d)).item() for d in batches(14, STEPS, data)]
    model.eval()
    with lib.no_grad():
        logits = model(*tensors(lib, batches(15, 1, data)[0][:2]))
    return finish(lib, model, tmp, w0, losses, eval=logits.numpy())


# ---- nn.TransformerEncoder classifier: a CLS token, key_padding_mask, final norm ----------

TF_V, TF_T, TF_D = 10, 5, 8


def encoder_classifier(lib: ModuleType, weights: Weights | None, wrap: Callable[[Step], Step],
                       tmp: Path) -> Run:
    nn = lib.nn

    class Classifier(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.emb = nn.Embedding(TF_V, TF_D, padding_idx=0)
            self.cls = nn.Parameter(lib.zeros(1, 1, TF_D))
            self.pos = nn.Parameter(lib.randn(1, TF_T + 1, TF_D) * 0.02)
            layer = nn.TransformerEncoderLayer(TF_D, nhead=2, dim_feedforward=16, dropout=0.0,
                                               activation="gelu", batch_first=True)
            self.encoder = nn.TransformerEncoder(layer, num_layers=2, norm=nn.LayerNorm(TF_D),
                                                 enable_nested_tensor=False)
            self.head = nn.Linear(TF_D, 2)

        def forward(self, tokens: Any) -> Any:
            x = self.emb(tokens)
            x = lib.cat([self.cls.expand(x.size(0), -1, -1), x], dim=1) + self.pos
            pad = lib.cat([lib.zeros(tokens.size(0), 1, dtype=lib.bool), tokens == 0], dim=1)
            return self.head(self.encoder(x, src_key_padding_mask=pad)[:, 0])

    model = Classifier()
    w0 = start(lib, model, weights)
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2 and n not in ("cls", "pos")]
    rest = [p for n, p in model.named_parameters() if p.dim() < 2 or n in ("cls", "pos")]
    # SGD: the key projection's bias gets a gradient of rounding noise only (softmax ignores a
    # score added to a whole row), which Adam's normalisation would blow up to lr-sized steps
    opt = lib.optim.SGD([{"params": decay, "weight_decay": 0.05},
                         {"params": rest, "weight_decay": 0.0}], lr=0.1, momentum=0.9)
    criterion = nn.CrossEntropyLoss(label_smoothing=0.1)

    def step(tokens: Any, y: Any) -> Any:
        opt.zero_grad(set_to_none=True)
        loss = criterion(model(tokens), y)
        loss.backward()
        opt.step()
        return loss

    def data(r: np.random.Generator) -> tuple[np.ndarray, ...]:
        tokens = r.integers(1, TF_V, (3, TF_T))
        tokens[np.arange(TF_T) >= r.integers(1, TF_T + 1, (3, 1))] = 0
        return tokens, r.integers(0, 2, 3)

    step = wrap(step)
    model.train()
    losses = [step(*tensors(lib, d)).item() for d in batches(16, STEPS, data)]
    model.eval()
    with lib.no_grad():
        probs = model(lib.from_numpy(batches(17, 1, data)[0][0])).softmax(-1)
    return finish(lib, model, tmp, w0, losses, eval=probs.numpy())


# ---- a 1-d ResNet: BatchNorm1d (one with a cumulative average) trained, then evaluated -----

def resnet1d(lib: ModuleType, weights: Weights | None, wrap: Callable[[Step], Step],
             tmp: Path) -> Run:
    nn, F = lib.nn, lib.nn.functional

    class BasicBlock(nn.Module):
        expansion = 1

        def __init__(self, planes: int, momentum: float | None) -> None:
            super().__init__()
            self.conv1 = nn.Conv1d(planes, planes, 3, padding=1, bias=False)
            self.bn1 = nn.BatchNorm1d(planes, momentum=momentum)
            self.conv2 = nn.Conv1d(planes, planes, 3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm1d(planes, momentum=momentum)

        def forward(self, x: Any) -> Any:
            identity = x
            out = F.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            out += identity
            return F.relu(out)

    model = nn.Sequential(nn.Conv1d(2, 4, 5, padding=2), BasicBlock(4, 0.1),
                          BasicBlock(4, None), nn.AdaptiveAvgPool1d(1), nn.Flatten(),
                          nn.Linear(4, 2))
    w0 = start(lib, model, weights)
    opt = lib.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-4)
    criterion = nn.CrossEntropyLoss()

    def step(x: Any, y: Any) -> Any:
        opt.zero_grad()
        loss = criterion(model(x), y)
        loss.backward()
        opt.step()
        return loss

    def data(r: np.random.Generator) -> tuple[np.ndarray, ...]:
        return r.standard_normal((4, 2, 10)).astype(np.float32), r.integers(0, 2, 4)

    step = wrap(step)
    losses = []
    test = tensors(lib, batches(19, 1, data)[0])
    for d in batches(18, STEPS, data):
        model.train()
        losses.append(step(*tensors(lib, d)).item())
        model.eval()
        with lib.no_grad():
            losses.append(criterion(model(test[0]), test[1]).item())
    assert not model.training and all(not m.training for m in model.modules())
    with lib.no_grad():
        out = model(test[0])
    assert not out.requires_grad
    return finish(lib, model, tmp, w0, losses, eval=out.numpy())


# ---- activation checkpointing: torch.utils.checkpoint in a training loop ------------------

def checkpointed(lib: ModuleType, weights: Weights | None, wrap: Callable[[Step], Step],
                 tmp: Path, use_reentrant: bool = False) -> Run:
    nn = lib.nn
    checkpoint = import_module(f"{lib.__name__}.utils.checkpoint")

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.norm = nn.LayerNorm(6)
            self.ff = nn.Sequential(nn.Linear(6, 12), nn.GELU(), nn.Linear(12, 6))

        def forward(self, x: Any) -> Any:
            return x + self.ff(self.norm(x))

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inp = nn.Linear(3, 6)
            self.blocks = nn.ModuleList([Block() for _ in range(3)])
            self.tail = nn.Sequential(nn.Linear(6, 6), nn.Tanh(), nn.Linear(6, 6), nn.ReLU())
            self.out = nn.Linear(6, 1)

        def forward(self, x: Any) -> Any:
            h = self.inp(x)
            for block in self.blocks:
                h = checkpoint.checkpoint(block, h, use_reentrant=use_reentrant)
            h = checkpoint.checkpoint_sequential(self.tail, 2, h, use_reentrant=use_reentrant)
            return self.out(h)

    model = Net()
    w0 = start(lib, model, weights)
    opt = lib.optim.Adam(model.parameters(), lr=1e-2)

    def step(x: Any, y: Any) -> Any:
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        return loss

    def data(r: np.random.Generator) -> tuple[np.ndarray, ...]:
        x = r.standard_normal((6, 3)).astype(np.float32)
        return x, np.sin(x.sum(1, keepdims=True)).astype(np.float32)

    step = wrap(step)
    model.train()
    losses = [step(*tensors(lib, d)).item() for d in batches(20, STEPS, data)]
    return finish(lib, model, tmp, w0, losses)


# ---- a weight-tied language model: the embedding is the output projection -----------------

LM_V, LM_T = 11, 5


def tied_lm(lib: ModuleType, weights: Weights | None, wrap: Callable[[Step], Step],
            tmp: Path) -> Run:
    nn, F = lib.nn, lib.nn.functional

    class LM(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.encoder = nn.Embedding(LM_V, 6)
            self.rnn = nn.GRU(6, 6, batch_first=True)
            self.decoder = nn.Linear(6, LM_V)
            self.decoder.weight = self.encoder.weight  # tied

        def forward(self, x: Any) -> Any:
            out, _ = self.rnn(self.encoder(x))
            return self.decoder(out)

    model = LM()
    w0 = start(lib, model, weights)
    assert model.decoder.weight is model.encoder.weight
    assert len(list(model.parameters())) == 6  # the tied weight once
    opt = lib.optim.SGD(model.parameters(), lr=0.5)

    def step(x: Any, y: Any) -> Any:
        opt.zero_grad()
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, LM_V), y.reshape(-1))
        loss.backward()
        opt.step()
        return loss

    step = wrap(step)
    losses, grads = [], []
    for (d,) in batches(21, STEPS, lambda r: (r.integers(0, LM_V, (3, LM_T + 1)),)):
        losses.append(step(lib.from_numpy(d[:, :-1]), lib.from_numpy(d[:, 1:])).item())
        grads.append(model.encoder.weight.grad.numpy().copy())
    assert model.decoder.weight is model.encoder.weight
    run = finish(lib, model, tmp, w0, losses, grad=np.stack(grads))
    assert model.decoder.weight is model.encoder.weight  # load_state_dict keeps the tie
    return run


# ---- a convolutional VAE: reparameterisation with the noise passed in, beta * KL ----------

def conv_vae(lib: ModuleType, weights: Weights | None, wrap: Callable[[Step], Step],
             tmp: Path) -> Run:
    nn, F = lib.nn, lib.nn.functional

    class VAE(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.enc = nn.Sequential(nn.Conv2d(1, 4, 3, stride=2, padding=1), nn.ReLU(),
                                     nn.Flatten(), nn.Linear(4 * 4 * 4, 2 * 2))
            self.dec = nn.Sequential(nn.Linear(2, 4 * 4 * 4), nn.ReLU(),
                                     nn.Unflatten(1, (4, 4, 4)),
                                     nn.ConvTranspose2d(4, 1, 4, stride=2, padding=1))

        def forward(self, x: Any, eps: Any) -> tuple[Any, Any, Any]:
            mu, logvar = self.enc(x).chunk(2, dim=1)
            z = mu + eps * lib.exp(0.5 * logvar)
            return self.dec(z), mu, logvar

    model = VAE()
    w0 = start(lib, model, weights)
    opt = lib.optim.Adam(model.parameters(), lr=3e-3)

    def step(x: Any, eps: Any, beta: float) -> tuple[Any, Any]:
        opt.zero_grad()
        recon, mu, logvar = model(x, eps)
        rec = F.mse_loss(lib.sigmoid(recon), x, reduction="sum") / x.size(0)
        kld = lib.mean(-0.5 * lib.sum(1 + logvar - mu ** 2 - logvar.exp(), dim=1), dim=0)
        loss = rec + beta * kld
        loss.backward()
        opt.step()
        return loss, kld

    def data(r: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        return (r.random((3, 1, 8, 8)).astype(np.float32),
                r.standard_normal((3, 2)).astype(np.float32))

    step = wrap(step)
    model.train()
    losses = []
    for i, d in enumerate(batches(22, STEPS, data)):
        loss, kld = step(*tensors(lib, d), min(1.0, 0.25 * (i + 1)))  # KL annealing
        losses += [loss.item(), kld.item()]
    return finish(lib, model, tmp, w0, losses)


SCRIPTS: dict[str, Callable[..., Run]] = {
    "dcgan": dcgan,
    "wgan_gp": wgan_gp,
    "custom_function": custom_function,
    "masked_lstm": masked_rnn,
    "masked_bigru": lambda *a: masked_rnn(*a, kind="GRU", bidirectional=True),
    "encoder_classifier": encoder_classifier,
    "resnet1d": resnet1d,
    "checkpointed": checkpointed,
    "checkpointed_reentrant": lambda *a: checkpointed(*a, use_reentrant=True),
    "tied_lm": tied_lm,
    "conv_vae": conv_vae,
}


def equals_pytorch(scripts: dict[str, Any], name: str, torch: ModuleType, tmp: Path) -> None:
    """Script ``name`` of ``scripts`` run by ``torch`` from seed 0, then by the runtime from
    the same weights and data: the runs match."""
    torch.manual_seed(0)
    want = scripts[name](torch, None, as_is, tmp)
    got = scripts[name](rt, want.weights, as_is, tmp)
    assert_runs_match(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("name", list(SCRIPTS))
def test_script_equals_pytorch(name: str, tmp_path: Path, torch_one_thread: ModuleType  # noqa: F811
                               ) -> None:
    equals_pytorch(SCRIPTS, name, torch_one_thread, tmp_path)
