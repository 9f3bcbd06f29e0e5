"""`runtime.optim`: optimizers in the shape of `torch.optim` (updates are in-place tensor ops)."""

from runtime.optim import lr_scheduler, swa_utils
from runtime.optim.adafactor import Adafactor
from runtime.optim.adagrad import Adagrad
from runtime.optim.adam import Adam, AdamW
from runtime.optim.adam_family import Adadelta, Adamax, NAdam, RAdam
from runtime.optim.asgd import ASGD
from runtime.optim.lbfgs import LBFGS
from runtime.optim.muon import Muon
from runtime.optim.optimizer import Optimizer
from runtime.optim.rmsprop import RMSprop
from runtime.optim.rprop import Rprop
from runtime.optim.sgd import SGD
from runtime.optim.stateless import swap_in_optimizer_params_and_state

__all__ = ["ASGD", "SGD", "Adadelta", "Adafactor", "Adagrad", "Adam", "AdamW", "Adamax", "LBFGS",
           "Muon", "NAdam", "Optimizer", "RAdam", "RMSprop", "Rprop", "lr_scheduler", "swa_utils",
           "swap_in_optimizer_params_and_state"]
