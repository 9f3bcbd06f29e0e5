"""Benchmarks and example training jobs for the runtime (and, later, the compiler)."""
