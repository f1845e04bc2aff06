"""Benchmarks and the paper's experiments, run by ``nlndl bench``."""
