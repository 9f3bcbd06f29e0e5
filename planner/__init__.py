"""Static-graph backward planner: capture, passes, fusion, scheduling and compile (upcoming)."""
