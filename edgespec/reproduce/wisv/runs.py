"""``edgespec reproduce wisv``: the simulator runs behind Table I, Fig. 4 and Fig. 5.

Every (method, γ, rate, RTT) of Fig. 4 is one run (Table I is its RTT 50 ms part, without
SH), plus Fig. 5's ablation: WISV FH with the head trained without the CSI-aware relabelling
(the runtime's shipped head, ``keep-critical``), at RTT 50 ms, when its table exists.
Each run is reduced to a :class:`WisvRunSummary` in the paper's units: latency per answer,
AAL as the paper counts it (committed tokens per round, the target's token included),
rounds per answer, throughput (tokens per answer / latency).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from edgespec.errors import UserInputError
from edgespec.metrics.types import SystemMetrics
from edgespec.policies.semantic.csi import ChannelState
from edgespec.reproduce.jobs import RunJob, run_all, write_scenario
from edgespec.reproduce.left_out import cut
from edgespec.reproduce.wisv.head_tables import HeadTable, head_table
from edgespec.reproduce.wisv.setup import (
    ABLATION_TABLE,
    ABLATION_TABLES,
    GAMMAS,
    METHODS,
    RATES_MBPS,
    RTTS_MS,
    TABLE,
    TABLE_COMMAND,
    WisvSetup,
    scenario,
)
from edgespec.sim.model.reject_table import (
    RejectShareTable,
    load_reject_table,
    table_path,
)
from edgespec.sweeps.executor import SweepExecutor
from edgespec.sweeps.progress import progress_bar

ABLATION = "fh-no-relabelling"
"""The ablation's method key: FH with the head trained without the CSI-aware relabelling."""
CALIBRATED = "fh-calibrated"
"""The named mode's runs' method key: WISV FH with the calibrated head (one reject share a
link, :mod:`~edgespec.reproduce.wisv.calibrated`), RTT 50 ms."""


@dataclass(frozen=True, slots=True)
class WisvPlan:
    """How much to run: the full reproduction or ``--quick`` (CI)."""

    setup: WisvSetup
    answers: int
    """How many answers each run is sized for."""

    @staticmethod
    def full() -> WisvPlan:
        return WisvPlan(WisvSetup(), 500)

    @staticmethod
    def quick_plan() -> WisvPlan:
        return WisvPlan(WisvSetup(), 100)


def left_out(plan: WisvPlan) -> list[str]:
    """What ``plan`` leaves out of :meth:`WisvPlan.full`, read off the two plans: the
    answers every run is sized for (empty for the full plan)."""
    full = WisvPlan.full()
    if plan.answers == full.answers:
        return []
    return [cut("every run (V1–V4, Fig. 5's ablation): sized for", plan.answers, full.answers,
                "answer")]  # fmt: skip


@dataclass(frozen=True, slots=True)
class Tables:
    """The reject-share tables the WISV runs read: the head's (``main``) and, when it
    exists, the ablation head's; ``names``: how the scenario files name them (a bundled
    table by its name, so a run folder's scenarios load on any clone; a file by its
    absolute path)."""

    main: Path
    ablation: Path | None
    names: tuple[str, str | None] = (TABLE, None)

    @staticmethod
    def find(main: str = TABLE, ablation: Sequence[str] = ABLATION_TABLES) -> Tables:
        """The bundled tables (the first of ``ablation`` that exists, if any); without the
        head's a :class:`UserInputError` naming the command that writes it."""
        path = table_path(main)
        if not path.is_file():
            raise UserInputError(
                f"the decision head's reject shares are needed: {path} "
                f"does not exist; run `{TABLE_COMMAND}` first"
            )
        other = next((n for n in ablation if table_path(n).is_file()), None)
        return Tables(
            path.resolve(),
            None if other is None else table_path(other).resolve(),
            (_named(main), None if other is None else _named(other)),
        )


def _named(name: str) -> str:
    """How a scenario names table ``name``: itself where it is a bundled table's name
    (:func:`~edgespec.sim.model.reject_table.table_path`'s rule), else the file's absolute
    path (a relative one would be read against the scenario's folder)."""
    path = Path(name)
    bundled = path.suffix != ".json" and len(path.parts) == 1
    return name if bundled else str(path.resolve())


def run_name(method: str, gamma: int, rate_mbps: float, rtt_ms: float) -> str:
    return f"{method}-g{gamma}-{rate_mbps:g}mbps-rtt{rtt_ms:g}"


@dataclass(frozen=True, slots=True)
class WisvRunSummary:
    """One run in the paper's units (module docstring); ``aal_accepted`` is edgespec's
    AAL (accepted drafts per round)."""

    latency_s: float
    committed_per_round: float
    rounds_per_answer: float
    throughput_tokens_per_s: float
    answers: int
    aal_accepted: float

    @staticmethod
    def of(metrics: SystemMetrics) -> WisvRunSummary:
        n, rounds = metrics.num_requests, metrics.num_rounds
        if n == 0 or rounds == 0 or metrics.e2e is None:
            raise RuntimeError("a WISV run finished no answer: its simulated time is too short")
        latency = metrics.e2e.mean_s
        tokens = metrics.num_output_tokens / n
        return WisvRunSummary(
            latency,
            metrics.num_output_tokens / rounds,
            rounds / n,
            tokens / latency,
            n,
            metrics.aal or 0.0,
        )


def plan_scenarios(
    plan: WisvPlan, tables: Tables, calibrated: Mapping[float, float]
) -> dict[str, dict[str, Any]]:
    """Every run of ``plan``: name → scenario dict; ``calibrated``: the named mode's reject
    share per link (rate in Mbit/s → share), its runs at RTT 50 ms."""
    s, runs = plan.setup, {}
    main, ablation = tables.names
    for rtt in RTTS_MS:
        for rate in RATES_MBPS:
            for method in METHODS:
                for gamma in GAMMAS:
                    name = run_name(method, gamma, rate, rtt)
                    runs[name] = scenario(
                        s, name=name, method=method, gamma=gamma, rate_mbps=rate,
                        rtt_ms=rtt, answers=plan.answers, table=main,
                    )  # fmt: skip
    if ablation is not None:
        for rate in RATES_MBPS:
            for gamma in GAMMAS:
                name = run_name(ABLATION, gamma, rate, 50.0)
                runs[name] = scenario(
                    s, name=name, method="fh", gamma=gamma, rate_mbps=rate, rtt_ms=50.0,
                    answers=plan.answers, table=ablation,
                )  # fmt: skip
    for rate, share in calibrated.items():
        for gamma in GAMMAS:
            name = run_name(CALIBRATED, gamma, rate, 50.0)
            runs[name] = scenario(
                s, name=name, method="fh", gamma=gamma, rate_mbps=rate, rtt_ms=50.0,
                answers=plan.answers, reject_share=round(share, 6),
            )  # fmt: skip
    return runs


def channel_shares(table: RejectShareTable, threshold: float) -> dict[str, float]:
    """The reject share a device on each of the two links gets (by its κ)."""
    return {
        f"{rate:g} Mbit/s": table.share(ChannelState(rate * 1e6).quality, threshold)
        for rate in RATES_MBPS
    }


@dataclass(frozen=True, slots=True)
class WisvResults:
    """Everything the claims read: run name → summary, the reject shares the runs used
    (table → link → share), how many held-out mismatches each table's shares come from
    (table → count; absent where the table does not say) and what else each table says
    (table → :class:`HeadTable`: the shares it gives on any channel, its labels' rule;
    absent: the rows that need it are judged without it)."""

    plan: WisvPlan
    runs: dict[str, WisvRunSummary]
    shares: dict[str, dict[str, float]]
    ablation: bool
    mismatches: dict[str, int] = field(default_factory=dict)
    heads: dict[str, HeadTable] = field(default_factory=dict)

    def get(
        self, method: str, gamma: int, rate_mbps: float, rtt_ms: float = 50.0
    ) -> WisvRunSummary:
        return self.runs[run_name(method, gamma, rate_mbps, rtt_ms)]


def results_dict(res: WisvResults) -> dict[str, Any]:
    """results.json: the setting, the reject shares and every run's summary."""
    return {
        "setup": res.plan.setup.to_dict(),
        "answers_per_run": res.plan.answers,
        "reject_shares": res.shares,
        "held_out_mismatches": res.mismatches,
        "heads": {name: head.to_dict() for name, head in res.heads.items()},
        "runs": {name: asdict(summary) for name, summary in sorted(res.runs.items())},
    }


def results_from_dict(data: Mapping[str, Any], plan: WisvPlan) -> WisvResults:
    """The inverse of :func:`results_dict`: a results.json read back as ``plan``'s results,
    so that the rows can be rebuilt without running anything. Results whose setup or
    answers per run are not ``plan``'s are refused, naming the first field that differs."""
    want = {**plan.setup.to_dict(), "answers_per_run": plan.answers}
    stored = {**data["setup"], "answers_per_run": data["answers_per_run"]}
    for key in sorted(want.keys() | stored.keys()):
        if want.get(key) != stored.get(key):
            raise ValueError(
                f"results for wisv: setup {key} is {stored.get(key)!r}, the plan's is "
                f"{want.get(key)!r}: these results are not this plan's"
            )
    runs = {name: WisvRunSummary(**summary) for name, summary in data["runs"].items()}
    ablation = any(name.startswith(f"{ABLATION}-") for name in runs)
    heads = {name: HeadTable.from_dict(head) for name, head in data["heads"].items()}
    shares = {name: dict(by_link) for name, by_link in data["reject_shares"].items()}
    return WisvResults(plan, runs, shares, ablation, dict(data["held_out_mismatches"]), heads)


def run_wisv(
    plan: WisvPlan,
    executor: SweepExecutor,
    scenario_dir: Path,
    progress: bool,
    tables: Tables,
    calibrated: Mapping[float, float],
) -> tuple[WisvResults, list[str]]:
    """Run every scenario of ``plan`` (``calibrated``: :func:`plan_scenarios`'); write each
    scenario file it ran."""
    scenarios = plan_scenarios(plan, tables, calibrated)
    names: Sequence[str] = list(scenarios)
    files = [write_scenario(scenario_dir, name, scenarios[name]) for name in names]
    jobs = [RunJob(scenarios[name]) for name in names]
    with progress_bar(progress) as bar:
        task = bar.add_task("reproduce wisv", total=len(jobs))
        values = run_all(executor, jobs, lambda: bar.advance(task))
    runs = {name: WisvRunSummary.of(m) for name, m in zip(names, values, strict=True)}
    paths = {TABLE: tables.main}
    if tables.ablation is not None:
        paths[ABLATION_TABLE] = tables.ablation
    read = {name: load_reject_table(str(path)) for name, path in paths.items()}
    threshold = plan.setup.threshold
    shares = {name: channel_shares(t, threshold) for name, t in read.items()}
    counts = {name: t.num_mismatches for name, t in read.items() if t.num_mismatches}
    heads = {name: head_table(paths[name], t, threshold) for name, t in read.items()}
    res = WisvResults(plan, runs, shares, tables.ablation is not None, counts, heads)
    return res, files
