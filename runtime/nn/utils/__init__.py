"""`runtime.nn.utils`: gradient clipping, as in `torch.nn.utils`."""

from runtime.nn.utils.clip_grad import clip_grad_norm_, clip_grad_value_

__all__ = ["clip_grad_norm_", "clip_grad_value_"]
