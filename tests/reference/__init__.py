"""Naive loop-by-loop reference implementations used by the unit tests and benchmarks."""
