"""``rt.linalg``: the linear-algebra names PyTorch keeps there (vector norms so far)."""

from .ops.reductions import vector_norm

__all__ = ["vector_norm"]
