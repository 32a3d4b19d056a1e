"""The pieces every ``edgespec reproduce`` shares: a picklable run job, running a list of
jobs through a sweep executor (a scenario that several claims share, under other names,
run once), and writing the scenario files a report links to."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from edgespec.config import dump_yaml
from edgespec.metrics.types import SystemMetrics
from edgespec.output_paths import write_text_atomically
from edgespec.reproduce.folder import SCENARIO_MARK
from edgespec.sim.commands.run import run_scenario_dict
from edgespec.sweeps.executor import SweepExecutor

J = TypeVar("J")


@dataclass(frozen=True, slots=True)
class RunJob:
    """One simulator run of a scenario dict; its metrics."""

    data: dict[str, Any]

    def __call__(self) -> SystemMetrics:
        metrics: SystemMetrics = run_scenario_dict(self.data)
        return metrics


def call(job: Callable[[], Any]) -> Any:
    """Module-level, so process pools can pickle it."""
    return job()


def run_all(
    executor: SweepExecutor,
    jobs: Sequence[Callable[[], Any]],
    advance: Callable[[], None] = lambda: None,
) -> list[Any]:
    """Every job's result, in the jobs' order (``advance`` after each finishes)."""
    results: list[Any] = [None] * len(jobs)
    for index, value in executor.map_unordered(call, jobs):
        results[index] = value
        advance()
    return results


def scenario_key(data: Mapping[str, Any]) -> str:
    """Scenario ``data`` as canonical text without its name: two scenarios with the same
    key are the same simulation (a name labels a run and its progress line, nothing else)."""
    return json.dumps({k: v for k, v in data.items() if k != "name"}, sort_keys=True, default=repr)


def distinct_jobs(jobs: Sequence[J], key: Callable[[J], str]) -> tuple[list[J], list[int]]:
    """The jobs whose ``key`` is new, in order, and for each job the index of the one among
    them that gives its result."""
    first: dict[str, int] = {}
    distinct: list[J] = []
    which = []
    for job in jobs:
        index = first.setdefault(key(job), len(distinct))
        if index == len(distinct):
            distinct.append(job)
        which.append(index)
    return distinct, which


def write_scenario(folder: Path, name: str, data: dict[str, Any]) -> str:
    """Write ``data`` as ``folder/name.yaml`` after the mark that it is the run's
    (:data:`~edgespec.reproduce.folder.SCENARIO_MARK`); the path relative to the run
    folder."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.yaml"
    write_text_atomically(path, SCENARIO_MARK + dump_yaml(data, sort_keys=False))
    return f"{folder.name}/{path.name}"
