"""A scenario several claims share under other names runs once; every name gets its result."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgespec.reproduce.dsd.runs import DsdPlan, plan_scenarios, run_dsd
from edgespec.reproduce.dsd.summary import DsdRunJob
from edgespec.reproduce.jobs import distinct_jobs, scenario_key


def test_distinct_jobs_keep_the_first_of_each_key_and_map_every_job_to_it() -> None:
    jobs = ["a1", "b1", "a2", "c1", "b2", "a3"]
    distinct, which = distinct_jobs(jobs, lambda job: job[0])
    assert distinct == ["a1", "b1", "c1"]
    assert which == [0, 1, 0, 2, 1, 0]


def test_a_scenario_key_leaves_out_the_name_and_nothing_else() -> None:
    data: dict[str, Any] = {"name": "x", "seed": 1, "policies": {"window": {"kind": "awc"}}}
    assert scenario_key(data) == scenario_key({**data, "name": "y"})
    assert scenario_key(data) != scenario_key({**data, "seed": 2})
    nested = {**data, "policies": {"window": {"kind": "static"}}}
    assert scenario_key(data) != scenario_key(nested)


def test_the_dsd_runs_that_are_one_scenario_run_once() -> None:
    """The quick plan names a stack's scenario also in Table 2 (stack-s4 is table-…-awc),
    and the FCFS batching baseline is the JSQ routing run: 6 of each mode's 37."""
    jobs = [DsdRunJob(data, 40.0, False) for data in plan_scenarios(DsdPlan.quick()).values()]
    distinct, _ = distinct_jobs(jobs, DsdRunJob.key)
    assert (len(jobs), len(distinct)) == (37, 31)
    other_horizon = [DsdRunJob(job.data, 30.0, False) for job in jobs[:1]]
    assert len(distinct_jobs([*jobs[:1], *other_horizon], DsdRunJob.key)[0]) == 2


@dataclass
class _Labelling:
    """An executor that runs nothing: each job's result is its key, and it counts jobs."""

    keys: list[str] = field(default_factory=list)

    def map_unordered(
        self, fn: Callable[[Any], Any], items: Sequence[Any]
    ) -> Iterator[tuple[int, Any]]:
        for index, job in enumerate(items):
            self.keys.append(job.key())
            yield index, job.key()


def test_every_dsd_run_name_gets_the_result_of_its_scenario(tmp_path: Path) -> None:
    executor = _Labelling()
    results, files = run_dsd(DsdPlan.quick(), executor, tmp_path, progress=False)
    assert len(executor.keys) == len(set(executor.keys)) == 2 * 31  # each scenario once
    assert len(files) == 2 * 37  # every name still has its scenario file
    for res in results:
        scenarios = plan_scenarios(res.plan)
        assert set(res.runs) == set(scenarios)
        for name, data in scenarios.items():
            job = DsdRunJob(data, res.plan.setup.duration_s, res.plan.setup.compat)
            assert res.runs[name] == job.key()  # type: ignore[comparison-overlap]
