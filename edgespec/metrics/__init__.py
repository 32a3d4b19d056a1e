"""Metrics: pure aggregation of run records (summary, accumulator) and their sinks."""

from edgespec.metrics.accumulator import MetricsAccumulator
from edgespec.metrics.summary import summarize
from edgespec.metrics.types import SystemMetrics

__all__ = ["MetricsAccumulator", "SystemMetrics", "summarize"]
