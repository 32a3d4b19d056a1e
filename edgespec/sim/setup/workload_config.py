"""A scenario's ``workload:`` section (:class:`WorkloadConfig`, its checks) and its
``dsdsim_compat:`` section (:class:`DsdSimCompat`, DSD-Sim's simplifications by name); the
rest of a scenario is :mod:`edgespec.sim.setup.scenario`'s."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from edgespec.config import ConfigError, applies_only
from edgespec.config.overrides import shown

MAX_DURATION_S = 1e7
"""The longest simulated run (116 days): past it a run's clock loses the microseconds its
events are timed in."""
MAX_POISSON_ARRIVALS = 10_000_000
"""The most arrivals a Poisson workload may expect (``rate_per_s`` × its arrival window).
A device busy with a request queues every arrival that reaches it, about 330 bytes each
(measured: an overloaded one-device run's peak RSS grew 158 MiB from 500,000 to 1,000,000
arrivals), so an overloaded run holds at most ~3.3 GB of queued arrivals (at 10^8 it was
~33 GB, more than the machine); a run of more would also take the simulator hours."""


MAX_RECORD_TOKENS = 2**31 - 1
"""The most tokens a request's prompt or output may have, in a trace record or an inline
length table (a context longer than any model's; the cost models' arithmetic stays finite
below it)."""
MAX_THINK_CV = 100.0
"""The largest lognormal think-time CV (σ² = ln(1 + cv²) ≈ 9.2 there; a CV past 1e154
overflowed mid-run)."""


def positive(where: str, value: float) -> None:
    """``value`` must be a finite number > 0 (``ConfigError`` at ``where``)."""
    if not value > 0 or math.isinf(value):
        raise ConfigError(where, f"must be a finite number > 0, got {value}")


def non_negative(where: str, value: float) -> None:
    """``value`` must be a finite number >= 0 (``ConfigError`` at ``where``)."""
    if not (math.isfinite(value) and value >= 0):
        raise ConfigError(where, f"must be a finite number >= 0, got {value}")


def check_kind_fields(
    section: str,
    kind: str,
    config: object,
    default: object,
    field_kinds: Mapping[str, tuple[str, ...]],
) -> None:
    """Each field of ``config`` (a section of kind ``kind``) that ``field_kinds`` lists
    keeps its value in ``default`` unless ``kind`` is one that uses it."""
    for name, kinds in field_kinds.items():
        if kind not in kinds:
            to = "kind: " + " or ".join(kinds)
            value, was = getattr(config, name), getattr(default, name)
            applies_only(f"{section}.{name}", value, was, to, f"kind is {kind}")


@dataclass(frozen=True, slots=True)
class WorkloadConfig:
    """Where requests come from.

    ``closed_loop``: every device issues a request, waits for it, thinks ``think_time_s``
    on average, repeats; first requests start uniformly over [0, ``ramp_s``). The think
    time is exponential, or with ``think_distribution: lognormal`` lognormal with
    coefficient of variation ``think_cv`` (DSD-Sim's think model); either is raised to
    ``think_min_s``. ``poisson``: arrivals at ``rate_per_s`` in total,
    each to a uniformly random device. ``trace``: replay the JSONL file ``trace``.
    Lengths (closed loop, Poisson) are paired (prompt, output) samples from the length
    table ``dataset`` (``edgespec/data/lengths/<dataset>.json``) unless ``prompt_tokens``
    and ``output_tokens`` give a table inline.
    """

    kind: Literal["closed_loop", "poisson", "trace"] = "closed_loop"
    dataset: str = "sharegpt"
    prompt_tokens: tuple[int, ...] | None = None
    output_tokens: tuple[int, ...] | None = None
    rate_per_s: float = 10.0
    think_time_s: float = 0.0
    think_distribution: Literal["exponential", "lognormal"] = "exponential"
    think_cv: float = 0.6
    think_min_s: float = 0.0
    ramp_s: float = 1.0
    arrivals_until_s: float | None = None
    """No closed-loop or Poisson request arrives after this (default: ``duration_s``); the
    run goes on to ``duration_s`` and the requests in flight drain."""
    trace: str | None = None
    max_output_tokens: int | None = None


@dataclass(frozen=True, slots=True)
class DsdSimCompat:
    """DSD-Sim's simplifications (its ``src/sim.py``), each by name, for reproducing the
    numbers its simulator gave rather than the physics (``dsdsim_compat:`` in a scenario;
    such a run takes the reference handler set):

    - ``one_pass_drafting``: a round's γ draft tokens cost one draft pass (DSD-Sim asks its
      predictor for one iteration per round), not γ;
    - ``fixed_rounds``: a round advances the request by the γ tokens it drafted whatever
      the target accepted, no bonus token; a request ends after ⌈output/γ⌉ rounds
      (a cloud-only round, which drafts nothing, advances one token);
    - ``unqueued_fused``: a fused round neither queues nor batches on its target: it runs
      alone at once, at its own cost (its draft pass + a one-entry verification), beside
      whatever batch the target is running (DSD-Sim's ``fused_execute``).

    A centralized scenario refuses the section: it drafts and fuses nothing
    (:mod:`edgespec.sim.setup.centralized_fields`).
    """

    one_pass_drafting: bool = True
    fixed_rounds: bool = True
    unqueued_fused: bool = True


_SAMPLED = ("closed_loop", "poisson")
WORKLOAD_FIELD_KINDS: dict[str, tuple[str, ...]] = {
    "dataset": _SAMPLED,
    "prompt_tokens": _SAMPLED,
    "output_tokens": _SAMPLED,
    "max_output_tokens": _SAMPLED,
    "arrivals_until_s": _SAMPLED,
    "rate_per_s": ("poisson",),
    "think_time_s": ("closed_loop",),
    "think_distribution": ("closed_loop",),
    "think_cv": ("closed_loop",),
    "think_min_s": ("closed_loop",),
    "ramp_s": ("closed_loop",),
    "trace": ("trace",),
}
"""The workload kinds that use each field; under any other kind it must keep its default."""


def validate_workload(wl: WorkloadConfig, duration_s: float) -> None:
    """Every workload field in range (``ConfigError`` naming the first that is not), and
    none that the workload's kind does not use set (:data:`WORKLOAD_FIELD_KINDS`)."""
    if wl.kind == "trace" and wl.trace is None:
        raise ConfigError("workload.trace", "workload kind 'trace' needs a trace file")
    if wl.kind == "poisson":
        positive("workload.rate_per_s", wl.rate_per_s)
        window_s = duration_s if wl.arrivals_until_s is None else wl.arrivals_until_s
        if wl.rate_per_s * window_s > MAX_POISSON_ARRIVALS:
            raise ConfigError(
                "workload.rate_per_s",
                f"{wl.rate_per_s:g} per s over {window_s:g} s of arrivals expects "
                f"{wl.rate_per_s * window_s:.3g} requests; at most {MAX_POISSON_ARRIVALS:,} "
                "(a device that cannot keep up queues them, ~330 bytes each)",
            )
    for name in ("ramp_s", "think_time_s", "think_min_s"):
        non_negative(f"workload.{name}", getattr(wl, name))
    if wl.arrivals_until_s is not None:
        non_negative("workload.arrivals_until_s", wl.arrivals_until_s)
        if wl.arrivals_until_s > duration_s:
            raise ConfigError(
                "workload.arrivals_until_s",
                f"must be <= duration_s ({duration_s}), got {wl.arrivals_until_s}",
            )
    positive("workload.think_cv", wl.think_cv)
    if wl.think_cv > MAX_THINK_CV:
        raise ConfigError("workload.think_cv", f"must be <= {MAX_THINK_CV:g}, got {wl.think_cv}")
    _check_inline_lengths(wl)
    if wl.max_output_tokens is not None and wl.max_output_tokens < 1:
        raise ConfigError("workload.max_output_tokens", f"must be >= 1, got {wl.max_output_tokens}")
    _check_used(wl)


def _check_inline_lengths(wl: WorkloadConfig) -> None:
    """An inline length table: both lists or neither, each non-empty, of one length, each
    entry in range."""
    prompts, outputs = wl.prompt_tokens, wl.output_tokens
    for name, given, other in (("prompt_tokens", prompts, outputs),
                               ("output_tokens", outputs, prompts)):  # fmt: skip
        if given is not None and not given:
            raise ConfigError(f"workload.{name}", "is empty: give at least one length, "
                              "or leave both prompt_tokens and output_tokens out for "
                              "dataset's")  # fmt: skip
        if given is None and other is not None:
            raise ConfigError(f"workload.{name}", "is missing: an inline length table "
                              "needs both prompt_tokens and output_tokens")  # fmt: skip
    if prompts is None or outputs is None:
        return
    if len(prompts) != len(outputs):
        raise ConfigError(
            "workload.output_tokens",
            f"has {len(outputs)} entries but prompt_tokens has {len(prompts)}",
        )
    for name, values in (("prompt_tokens", prompts), ("output_tokens", outputs)):
        for i, n in enumerate(values):  # a prompt of 0 tokens: one the runtime refuses
            if not 1 <= n <= MAX_RECORD_TOKENS:
                raise ConfigError(f"workload.{name}[{i}]", f"must be in [1, "
                                  f"{MAX_RECORD_TOKENS:,}], got {shown(str(n), 20)}")  # fmt: skip


def _check_used(wl: WorkloadConfig) -> None:
    """Refuse a field the workload's kind (or its think distribution) does not use."""
    default = WorkloadConfig()
    check_kind_fields("workload", wl.kind, wl, default, WORKLOAD_FIELD_KINDS)
    if wl.kind == "closed_loop" and wl.think_distribution != "lognormal":
        applies_only(
            "workload.think_cv",
            wl.think_cv,
            default.think_cv,
            "think_distribution: lognormal",
            f"think_distribution is {wl.think_distribution}",
        )
