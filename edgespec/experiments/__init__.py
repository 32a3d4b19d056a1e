"""Experiments: parameter sweeps, capacity search, and reproduced tables/figures."""
