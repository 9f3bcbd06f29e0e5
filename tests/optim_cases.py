"""The optimizer and option combinations whose updates are compared bit for bit (eager
against PyTorch: tests/runtime/test_views_optim_bits.py; compiled against eager:
tests/planner/test_optimizer_bits.py), from the same float32 weights with the same
gradients each step."""

from __future__ import annotations

from typing import Any

import numpy as np

STEPS = 20
R = np.random.default_rng(1235)
W0 = [R.standard_normal((5, 4)).astype(np.float32), R.standard_normal(4).astype(np.float32)]
C = [R.standard_normal((5, 4)).astype(np.float32), R.standard_normal(4).astype(np.float32)]
SCALE = np.float32(0.3)

CASES: dict[str, tuple[str, dict[str, Any]]] = {
    "sgd": ("SGD", {"lr": 0.1}),
    "sgd_momentum": ("SGD", {"lr": 0.05, "momentum": 0.9}),
    "sgd_dampening": ("SGD", {"lr": 0.05, "momentum": 0.9, "dampening": 0.1,
                              "weight_decay": 0.01}),
    "sgd_nesterov": ("SGD", {"lr": 0.05, "momentum": 0.8, "nesterov": True}),
    "sgd_maximize": ("SGD", {"lr": 0.05, "momentum": 0.5, "maximize": True}),
    "adam": ("Adam", {"lr": 0.01}),
    "adam_wd": ("Adam", {"lr": 0.01, "weight_decay": 0.05, "betas": (0.8, 0.95)}),
    "adam_amsgrad": ("Adam", {"lr": 0.02, "amsgrad": True, "eps": 1e-6}),
    "adam_maximize": ("Adam", {"lr": 0.01, "maximize": True}),
    "adamw": ("AdamW", {"lr": 0.01}),
    "adamw_amsgrad": ("AdamW", {"lr": 0.01, "weight_decay": 0.1, "amsgrad": True}),
    "rmsprop": ("RMSprop", {"lr": 0.01}),
    "rmsprop_centered": ("RMSprop", {"lr": 0.01, "centered": True, "alpha": 0.9}),
    "rmsprop_momentum": ("RMSprop", {"lr": 0.01, "momentum": 0.9, "weight_decay": 0.01}),
    "rmsprop_centered_momentum": ("RMSprop", {"lr": 0.005, "momentum": 0.5,
                                              "centered": True}),
    "adagrad": ("Adagrad", {"lr": 0.1}),
    "adagrad_lr_decay": ("Adagrad", {"lr": 0.1, "lr_decay": 0.01, "weight_decay": 0.01}),
    "adagrad_initial": ("Adagrad", {"lr": 0.1, "initial_accumulator_value": 0.1,
                                    "eps": 1e-6}),
    "adamax": ("Adamax", {"lr": 0.02}),
    "adamax_wd": ("Adamax", {"lr": 0.02, "weight_decay": 0.05, "betas": (0.8, 0.99)}),
    "nadam": ("NAdam", {"lr": 0.01}),
    "nadam_wd": ("NAdam", {"lr": 0.01, "weight_decay": 0.05, "momentum_decay": 0.01}),
    "nadam_decoupled": ("NAdam", {"lr": 0.01, "weight_decay": 0.05,
                                  "decoupled_weight_decay": True}),
    "adadelta": ("Adadelta", {}),
    "adadelta_wd": ("Adadelta", {"lr": 0.5, "rho": 0.8, "weight_decay": 0.05, "eps": 1e-5}),
    "radam": ("RAdam", {"lr": 0.01}),
    "radam_wd": ("RAdam", {"lr": 0.01, "weight_decay": 0.05}),
    "radam_decoupled": ("RAdam", {"lr": 0.01, "weight_decay": 0.05,
                                  "decoupled_weight_decay": True}),
}


def gradient(w: np.ndarray, c: np.ndarray) -> np.ndarray:
    """A bounded, nonlinear pull of weights ``w`` towards ``c``: the same float32 bits in
    every run that reaches the same weights."""
    return (w - c) + SCALE * np.sin(np.float32(3) * w)
