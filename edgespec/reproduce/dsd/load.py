"""The closed loop's think time, fitted once by Little's law to one stated Table 2 cell, and
what the same law says of every other cell under it (REPORT.md's Findings).

A closed loop of N drafts, each one conversation at a time followed by a think time Z,
completes X = N / (Z + R) conversations a second, R a conversation's time in the system;
R = TTFT + TPOT · (L − 1) for L output tokens. DSD prints N, X, TTFT and TPOT for every
Table 2 cell but no Z (its Section 5 describes trace timestamps or Poisson arrivals; DSD-Sim
ships Z = 1.7 s). :data:`FIT_CELL`'s Static column gives Z; every other cell is judged
against it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from edgespec.reproduce.dsd.paper import PAPER_TABLE2, TABLE_CONFIGS

FIT_CELL: tuple[str, str] = ("gsm8k", "C1")
"""Table 2's GSM8K C1 (600 drafts, RTT 10 ms), Static: the cell the think time is fitted to
(DSD's headline configuration, and the one with DSD-Sim's own length trace)."""
LENGTH_TABLES: dict[str, str] = {"gsm8k": "gsm8k", "humaneval": "humaneval", "cnndm": "sharegpt"}
"""Length table per dataset: GSM8K from DSD-Sim's own trace (``data/lengths/gsm8k.json``),
HumanEval from its canonical solutions; no CNN/DailyMail table can be built (the shared
prompt files hold no reference summaries), so CNN/DailyMail uses the long-output ShareGPT
table."""


@cache
def mean_output_tokens(dataset: str) -> float:
    """The mean output length of ``dataset``'s length table."""
    from edgespec.sim.setup.lengths import load_length_table

    outputs = load_length_table(LENGTH_TABLES[dataset]).output_tokens
    return sum(outputs) / len(outputs)


def conversation_s(ttft_ms: float, tpot_ms: float, output_tokens: float) -> float:
    """R = TTFT + TPOT · (L − 1): one conversation's time in the system."""
    return (ttft_ms + tpot_ms * (output_tokens - 1.0)) / 1e3


def cell_conversation_s(dataset: str, config: str, column: int = 0) -> float:
    """R of a printed Table 2 cell (``column`` 0/1/2: Static/Dynamic/AWC)."""
    printed = PAPER_TABLE2[(dataset, config)]
    return conversation_s(
        printed["ttft"][column], printed["tpot"][column], mean_output_tokens(dataset)
    )


@cache
def fitted_think_s() -> float:
    """Z = N / X − R over :data:`FIT_CELL`'s Static column (≈ 17.4 s)."""
    dataset, config = FIT_CELL
    drafts, _ = TABLE_CONFIGS[config]
    throughput = PAPER_TABLE2[FIT_CELL]["thr"][0]
    return drafts / throughput - cell_conversation_s(dataset, config)


def closed_loop_gain(before_ms: tuple[float, float], after_ms: tuple[float, float]) -> float:
    """Little's law: how a closed loop's throughput changes at the fitted think time, over
    :data:`FIT_CELL`'s answers, when its (TTFT, TPOT) in ms go from ``before_ms`` to
    ``after_ms``: (Z + R_before) / (Z + R_after) − 1."""
    think, length = fitted_think_s(), mean_output_tokens(FIT_CELL[0])
    before, after = conversation_s(*before_ms, length), conversation_s(*after_ms, length)
    return (think + before) / (think + after) - 1.0


FITTED_THROUGHPUT = (
    "shown, not judged: the think time is fitted to Table 2's GSM8K C1 Static throughput "
    "(load.py), and a closed loop of 600 drafts in this configuration cannot exceed "
    "600 drafts over that mean think time (Little's law: throughput ≤ drafts / think time), "
    "inside ±50% of the paper's"
)
"""Why a throughput in the fitted configuration (GSM8K, 600 drafts, RTT 10 ms) is a
setting: Little's law, X = N / (Z + R), with Z fitted there, leaves it almost no room."""


@dataclass(frozen=True, slots=True)
class LittleCell:
    """One printed Table 2 cell (Static) under the fitted think time: the throughput
    Little's law gives for its printed TTFT and TPOT, beside the printed one."""

    dataset: str
    config: str
    printed_per_s: float
    implied_per_s: float

    @property
    def gap(self) -> float:
        """printed / implied − 1."""
        return self.printed_per_s / self.implied_per_s - 1.0


def little_cells(think_s: float) -> list[LittleCell]:
    """Every Table 2 cell's Static column under ``think_s``."""
    cells = []
    for (dataset, config), printed in PAPER_TABLE2.items():
        drafts, _ = TABLE_CONFIGS[config]
        implied = drafts / (think_s + cell_conversation_s(dataset, config))
        cells.append(LittleCell(dataset, config, printed["thr"][0], implied))
    return cells
