"""The simulator counts the requests that arrived inside a run and had not finished at its
end (``num_unfinished_requests``: no per-request statistic counts them), those of them with
an SLO target, those already sure to miss it, and the SLO attainment over every arrival
between its bounds. The oracle is the same run drained: its arrivals stopped at the end of
the first and run on until every request finished, its events up to that end are the
first run's, so the requests it finishes beyond the first run's are exactly those left
unfinished, with the outcomes they would have had. In every handler set, a Poisson fleet
whose devices queue arrivals, a sharded run and ``edgespec sim``."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from edgespec.cli import main
from edgespec.config import apply_overrides
from edgespec.core.types import Request, RequestRecord
from edgespec.core.unfinished import UnfinishedClass, UnfinishedCount, already_missed
from edgespec.metrics.accumulator import MetricsAccumulator
from edgespec.metrics.formatting import percent
from edgespec.metrics.summary import print_summary
from edgespec.metrics.types import SystemMetrics
from edgespec.sim.setup.scenario import scenario_from_dict
from edgespec.sim.shards import simulate_sharded
from edgespec.sim.simulator import run_scenario, simulate
from edgespec.sweeps.executor import SerialExecutor
from tests.sim.helpers import tiny_scenario
from tests.sim.test_shards import pinned

END_S = 4.0
DRAINED_S = 400.0

POISSON = {"kind": "poisson", "rate_per_s": 9.0, "prompt_tokens": [40, 300],
           "output_tokens": [30, 120]}  # fmt: skip
"""More arrivals than 12 devices serve at once: busy devices queue theirs."""


def _drained(data: dict[str, Any]) -> tuple[RequestRecord, ...]:
    """The requests that arrived before ``END_S``, each run to its end."""
    drained = apply_overrides(data, [f"duration_s={DRAINED_S}",
                                     f"workload.arrivals_until_s={END_S}"])  # fmt: skip
    return simulate(scenario_from_dict(drained)).requests


def _finished_when_drained(data: dict[str, Any]) -> int:
    return len(_drained(data))


def _check_against_drained(data: dict[str, Any], metrics: SystemMetrics) -> list[RequestRecord]:
    """The unfinished requests' counts and attainment bounds against their drained outcomes
    (returned: the unfinished requests with a target, drained)."""
    finished = {r.request_id for r in simulate(scenario_from_dict(data)).requests}
    drained = _drained(data)
    late = [r for r in drained if r.request_id not in finished]
    with_target = [r for r in late if r.slo_tokens_per_s is not None]
    # sure to miss: all its tokens at the run's end would still be too slow; each did miss
    sure = [r for r in with_target if r.num_output_tokens / (END_S - r.arrival_s)
            <= (r.slo_tokens_per_s or 0.0)]  # fmt: skip
    assert not any(r.slo_met for r in sure)
    assert (metrics.num_unfinished_with_target, metrics.num_unfinished_missed) == (
        len(with_target), len(sure))  # fmt: skip
    least, most = metrics.slo_attainment_at_least, metrics.slo_attainment_at_most
    _check_bounds(least, most, drained, finished, with_target, sure)
    for stats in metrics.slo_classes:  # and class by class
        mine = stats.slo_class
        assert (stats.num_unfinished_with_target, stats.num_unfinished_missed) == (
            sum(r.slo_class == mine for r in with_target),
            sum(r.slo_class == mine for r in sure),
        )

        def of(records: Sequence[RequestRecord], mine: str = mine) -> list[RequestRecord]:
            return [r for r in records if r.slo_class == mine]

        _check_bounds(stats.attainment_at_least, stats.attainment_at_most, of(drained),
                      finished, of(with_target), of(sure))  # fmt: skip
    return with_target


def _check_bounds(
    least: float | None,
    most: float | None,
    drained: Sequence[RequestRecord],
    finished: set[str],
    with_target: list[RequestRecord],
    sure: list[RequestRecord],
) -> None:
    """Bounds over ``drained``'s arrivals with a target (none: no bounds): the drained
    attainment between them, the lower its finished hits, the upper those and the
    unfinished not sure to miss."""
    arrived = [r for r in drained if r.slo_tokens_per_s is not None]
    if not arrived:
        assert least is most is None
        return
    assert least is not None and most is not None
    attainment = sum(bool(r.slo_met) for r in arrived) / len(arrived)
    assert least <= attainment <= most
    num_met = sum(bool(r.slo_met) for r in arrived if r.request_id in finished)
    assert least == pytest.approx(num_met / len(arrived), rel=1e-12)
    assert most == pytest.approx((num_met + len(with_target) - len(sure)) / len(arrived))


@pytest.mark.parametrize(
    "overrides",
    [[], ["fast_path=false"], ["mode=fused"], ["mode=centralized"], ["policies.window.name=awc"]],
    ids=["fast", "reference", "fused", "centralized", "awc"],
)
@pytest.mark.parametrize("workload", ["closed_loop", "poisson"])
def test_the_unfinished_are_those_a_drained_run_finishes_beyond(
    overrides: list[str], workload: str
) -> None:
    data = apply_overrides(tiny_scenario(duration_s=END_S), overrides)
    if workload == "poisson":  # a fast class that the queued requests can no longer meet
        data["workload"], data["slo_classes"] = POISSON, {"slow": 2.0, "fast": 40.0}
    metrics = run_scenario(scenario_from_dict(data))
    listed = simulate(scenario_from_dict(data))
    unfinished = _finished_when_drained(data) - metrics.num_requests
    assert unfinished > 0 and metrics.num_unfinished_requests == unfinished
    assert listed.num_unfinished_requests == unfinished
    late = _check_against_drained(data, metrics)
    if workload == "poisson":  # more than the 12 devices run: some waited for theirs
        assert unfinished > 12
        # the bounds are apart: some unfinished requests were sure to miss, some met
        assert metrics.num_unfinished_missed and any(r.slo_met for r in late)


def test_a_sharded_run_sums_its_shards() -> None:
    data = pinned()
    whole = run_scenario(scenario_from_dict(data))
    sharded = simulate_sharded(data, 2, SerialExecutor())
    assert whole.num_unfinished_requests is not None and whole.num_unfinished_requests > 0
    assert sharded.metrics.num_unfinished_requests == whole.num_unfinished_requests
    fields = ("num_unfinished_with_target", "num_unfinished_missed", "slo_attainment_at_least",
              "slo_attainment_at_most")  # fmt: skip
    assert [getattr(sharded.metrics, f) for f in fields] == [getattr(whole, f) for f in fields]


def _request(slo_class: str, speed: float) -> RequestRecord:
    """A finished request of 10 tokens in 1 s whose class targets ``speed``."""
    return RequestRecord("r", "c", slo_class, 0, 0.0, 0.5, 1.0, 5, 10, 3, 6, 4, speed)


def _printed(metrics: SystemMetrics) -> dict[str, str]:
    """The summary's rows, label to value (columns two spaces or more apart)."""
    from io import StringIO

    from rich.console import Console

    out = StringIO()
    print_summary(metrics, Console(file=out, width=100, markup=False))
    rows = (re.split(r"(?<=\S)\s{2,}(?=\S)", line.rstrip(), maxsplit=1)
            for line in out.getvalue().splitlines())  # fmt: skip
    return {row[0]: row[1] for row in rows if len(row) == 2}


def test_an_accumulator_counts_them_only_when_told() -> None:
    told = MetricsAccumulator()
    told.add_request(_request("a", 8.0))  # met
    told.add_request(_request("a", 12.0))  # missed
    told.add_unfinished(UnfinishedCount(3, (UnfinishedClass("a", 8.0, 2, 1),)))
    told.add_unfinished(UnfinishedCount(0))
    merged = MetricsAccumulator()
    merged.merge(told)
    merged.merge(MetricsAccumulator())
    metrics = merged.finish(1.0, 1)
    assert metrics.slo_attainment == 0.5
    assert (metrics.num_unfinished_requests, metrics.num_unfinished_with_target,
            metrics.num_unfinished_missed) == (3, 2, 1)  # fmt: skip
    # of 4 arrivals with a target: 1 met; the one unfinished not sure to miss may meet
    assert (metrics.slo_attainment_at_least, metrics.slo_attainment_at_most) == (0.25, 0.5)
    none = MetricsAccumulator().finish(1.0, 1)
    assert none.num_unfinished_requests is none.slo_attainment_at_least is None
    (a,) = metrics.slo_classes  # the class's own: 2 finished, 2 unfinished, 1 sure to miss
    assert (a.num_with_target, a.num_met, a.num_unfinished_with_target,
            a.num_unfinished_missed) == (2, 1, 2, 1)  # fmt: skip
    assert (a.attainment_at_least, a.attainment_at_most) == (0.25, 0.5)  # the run's alike
    lines = _printed(metrics)
    assert lines["  a"] == "50.0% (1/2), 25.0% to 50.0%"  # its targets differ: none shown
    only_unfinished = MetricsAccumulator()  # a class none of whose requests finished
    only_unfinished.add_unfinished(UnfinishedCount(2, (UnfinishedClass("b", 4.0, 2, 1),)))
    assert _printed(only_unfinished.finish(1.0, 1))["  b ≥4 tok/s"] == "- (0/0), 0.0% to 50.0%"
    untold = MetricsAccumulator()
    untold.add_request(_request("a", 8.0))
    (b,) = untold.finish(1.0, 1).slo_classes
    assert (b.attainment, b.attainment_at_least, b.attainment_at_most) == (1.0, None, None)
    with pytest.raises(ValueError, match=r"class 'a' need 0 <= num_missed <= num_with_target, "
                       r"got 2, 1"):  # fmt: skip
        UnfinishedClass("a", 8.0, 1, 2)
    with pytest.raises(ValueError, match=r"0 <= num_with_target <= num_requests, got 2, 1"):
        UnfinishedCount(1, (UnfinishedClass("a", 8.0, 2, 0),))
    with pytest.raises(ValueError, match=r"got 0, -1"):
        UnfinishedCount(-1)


@pytest.mark.parametrize(
    ("arrival_s", "tokens", "target", "missed"),
    [(0.0, 40, 10.0, True), (0.0, 41, 10.0, False), (3.0, 10, 10.0, True), (3.5, 10, 10.0, False),
     (4.0, 1, 1e9, False)],
)  # fmt: skip
def test_already_missed_at_the_run_end(
    arrival_s: float, tokens: int, target: float, missed: bool
) -> None:
    """At 4 s: 40 tokens since 0 s reach 10 tok/s only finishing at the end, so any later
    finish misses; 41 could still meet it; a request arriving at the end never has."""
    request = Request("r", "c", arrival_s, 5, tokens)
    assert already_missed(request, target, 4.0) is missed


def test_edgespec_sim_writes_and_prints_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tiny_scenario(duration_s=END_S)
    scenario = tmp_path / "tiny.yaml"
    scenario.write_text(json.dumps(data))
    out = tmp_path / "run"
    assert main(["sim", str(scenario), "--out", str(out), "--quiet", "--no-plots"]) == 0
    written = json.loads((out / "metrics.json").read_text())
    unfinished = _finished_when_drained(data) - written["num_requests"]
    assert written["num_unfinished_requests"] == unfinished > 0
    lines = capsys.readouterr().out.splitlines()
    requests_row = next(line for line in lines if line.startswith("requests"))
    assert requests_row.split(maxsplit=1)[1].rstrip() == (
        f"{written['num_requests']} in 4 s, {unfinished} unfinished at the end"
    )
    arrivals_row = next(line for line in lines if line.startswith("  of every arrival"))
    least, most = written["slo_attainment_at_least"], written["slo_attainment_at_most"]
    assert arrivals_row.split(maxsplit=3)[3].rstrip() == (
        f"{percent(least)} to {percent(most)} ({written['num_unfinished_with_target']} "
        f"unfinished, {written['num_unfinished_missed']} missed)"
    )
    assert least < written["slo_attainment"] <= most
    for c in written["slo_classes"]:  # each class's row, its bounds where it has unfinished
        row = next(line for line in lines if line.startswith(f"  {c['slo_class']} "))
        finished = f"{percent(c['attainment'])} ({c['num_met']}/{c['num_with_target']})"
        bounds = f", {percent(c['attainment_at_least'])} to {percent(c['attainment_at_most'])}"
        shown = finished + (bounds if c["num_unfinished_with_target"] else "")
        assert row.split(" tok/s", 1)[1].strip() == shown
    assert any(c["num_unfinished_with_target"] for c in written["slo_classes"])
