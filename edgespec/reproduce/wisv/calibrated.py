"""WISV's named mode *calibrated head*: SEED-NOTES §3.3's stand-in for the paper's decision
head, beside the Gemma pair's, never in the headline.

The paper's head (Llama-3.2-1B/3.1-8B hidden states, its critical-mismatch labels) cannot
be simulated; its effect can. Here the head accepts a mismatch with one probability per
link, 1 − r, its reject share r fitted once per link so that the expected committed tokens
a round (:func:`~edgespec.sim.model.semantic.expected_committed`, i.i.d. α = 0.9) equal
Table I's WISV FH AAL at :data:`FIT_GAMMA` (the window SEED-NOTES names). Those two cells a
link, AAL and rounds at γ = 64, are then settings; every other WISV FH cell of Table I
(AAL and rounds at γ = 10–32, latency and throughput at every γ) is out of sample and
judged as the paper's mode judges its cells (±25 %): they test whether one share a link,
with the round time fitted to greedy (18.91 ms a drafted token + the link), gives Table
I's shape over γ and its latencies, which the Gemma head's shares (2–5× lower) cannot.
"""

from __future__ import annotations

from dataclasses import replace

from edgespec.reproduce.claims import Cause, ClaimRow, Reason, headline
from edgespec.reproduce.report_file import markdown_table
from edgespec.reproduce.wisv.expected import bisected_share
from edgespec.reproduce.wisv.runs import CALIBRATED, WisvResults
from edgespec.reproduce.wisv.setup import GAMMAS, RATES_MBPS, WisvSetup
from edgespec.reproduce.wisv.table_i import CELL, METRICS, TABLE_I, cell_row
from edgespec.sim.model.semantic import expected_committed

FIT_GAMMA = 64
"""The window whose Table I WISV AAL fixes each link's reject share (SEED-NOTES §3.3)."""
TAG = "[calibrated head] "


def fitted_share(alpha: float, committed: float, gamma: int) -> float:
    """The reject share r at which a WISV round at window ``gamma`` commits ``committed``
    tokens in expectation (i.i.d. ``alpha``): committed falls as r rises, from a round that
    accepts every mismatch (r = 0) to greedy's (r = 1); a value outside that range is an
    error."""
    most, least = expected_committed(alpha, 0.0, gamma), expected_committed(alpha, 1.0, gamma)
    if not least <= committed <= most:
        raise ValueError(f"{committed} committed tokens a round at γ = {gamma} is outside "
                         f"what any reject share gives ({least:.3f}–{most:.3f})")  # fmt: skip
    return bisected_share(lambda share: expected_committed(alpha, share, gamma) > committed)


def calibrated_shares(setup: WisvSetup) -> dict[float, float]:
    """Each link's fitted reject share (rate in Mbit/s → r)."""
    return {
        rate: fitted_share(setup.alpha, TABLE_I[("fh", rate)][FIT_GAMMA][1], FIT_GAMMA)
        for rate in RATES_MBPS
    }


def calibrated_rows(res: WisvResults) -> list[ClaimRow]:
    """The named mode's rows: per link, the two fitted cells (a setting) and the WISV FH
    cells out of sample (judged, each within ±25 %)."""
    shares = calibrated_shares(res.plan.setup)
    rows = []
    for rate in RATES_MBPS:
        r = shares[rate]
        fit = (f"the reject share {r:.4f} is fitted in expectation to Table I's WISV AAL at "
               f"γ = {FIT_GAMMA}, {rate:g} Mbit/s (α = {res.plan.setup.alpha:g}; an answer's "
               "last round, cut at its end, commits fewer)")  # fmt: skip
        why = Reason(Cause.MODELLING, f"one reject share a link ({r:.4f}, fitted at γ = "
                     f"{FIT_GAMMA}) and i.i.d. α in place of the paper's head")  # fmt: skip
        out = tuple(g for g in GAMMAS if g != FIT_GAMMA)
        for metric in METRICS:
            fitted = metric in ("AAL", "rounds")
            row = cell_row(res, "V1" if fitted else "V2", "fh", rate, metric, CELL, why,
                           gammas=out if fitted else GAMMAS, runs_of=CALIBRATED)  # fmt: skip
            rows.append(_tagged(row))
        for metric in ("AAL", "rounds"):
            row = cell_row(res, "V1", "fh", rate, metric, CELL, why, fit, gammas=(FIT_GAMMA,),
                           runs_of=CALIBRATED)  # fmt: skip
            rows.append(_tagged(row))
    return rows


def _tagged(row: ClaimRow) -> ClaimRow:
    return replace(row, what=TAG + row.what)


def calibrated_markdown(rows: list[ClaimRow]) -> str:
    """REPORT.md's section of the named mode: what it is, its count, its rows."""
    return "\n".join([
        "## Named mode: calibrated head (not in the headline)", "",
        "SEED-NOTES §3.3's stand-in for the paper's head: WISV FH accepting a mismatch with "
        f"one probability a link, its reject share fitted to Table I's WISV AAL at γ = "
        f"{FIT_GAMMA} (those cells are settings); every other WISV FH cell is out of sample. "
        "The headline above judges the Gemma pair's head, as the paper defines WISV.", "",
        f"{headline(rows)}.", "", markdown_table(rows), "",
    ])  # fmt: skip
