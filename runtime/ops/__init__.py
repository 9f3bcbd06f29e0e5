"""The op registry, its primitives, and the functions built on them."""

from . import functional  # noqa: I001 - first: composite and prims build on it
from . import composite, prims
from .registry import REGISTRY, Primitive, register

__all__ = ["REGISTRY", "Primitive", "composite", "functional", "prims", "register"]
