"""Static-graph backward planner: capture a training step, plan it, replay it.

``planner.compile(step)`` captures the step's forward, backward and optimizer update into one
NetworkX DAG of primitives, prunes and simplifies it, schedules it into a Plan, and replays the
plan on later calls whose guards match.
"""

from .compile import CompiledStep, CompileError, compile
from .explain import explain
from .optimized_module import OptimizedModule
from .plan import Plan

__all__ = ["CompileError", "CompiledStep", "OptimizedModule", "Plan", "compile", "explain"]
