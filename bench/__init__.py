"""Benchmarks: each prints its measurements as ratios against a baseline measured in the same run."""
