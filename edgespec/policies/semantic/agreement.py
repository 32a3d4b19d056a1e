"""The bundled WISV head's measured answer agreement: its shipped default threshold and
what a more permissive one costs, from a held-out run on the real pair.

``edgespec/data/wisv/gemma3-270m-agreement.json`` is written by ``edgespec reproduce
wisv-heldout`` (:mod:`edgespec.reproduce.wisv.real_pair.heldout`) from its held-out run
(GSM8K test prompts never used in training): per threshold T and reported channel
(``poor`` 20 Mbit/s, ``good`` 500 Mbit/s; ``either`` for T = 0, which never reads the
channel), the prompts run, the share whose final answer agrees with target-only
decoding, and tokens/s over exact greedy SD's (the speed-up). The shipped default is the
largest measured T whose agreement is at least :data:`REQUIRED_AGREEMENT` on both
channels: a semantic session of the bundled pair's draft without a threshold gets it
(:func:`shipped_default`, and is told :func:`default_note`). :func:`agreement_note` is what
a user asking for a larger T is told. Both hold for the head the run measured (the file's
``head.sha256``) alone: a drafter takes the default, and says the notes, only from a server
whose Health names that head (:func:`measured_head`); from another it needs a threshold
(:func:`unmeasured_default`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from edgespec.config import ConfigFileError, read_text
from edgespec.policies.semantic.head import THRESHOLD_STEPS

REQUIRED_AGREEMENT = 0.95
"""The shipped default keeps the target's final answer on at least this share."""
AGREEMENT_FILE = "gemma3-270m-agreement.json"


@dataclass(frozen=True, slots=True)
class Measured:
    """One threshold × channel of the held-out run."""

    threshold: int
    channel: str
    prompts: int
    agreement: float
    speedup: float | None


@dataclass(frozen=True, slots=True)
class AgreementTable:
    """The held-out run's cells and the default it implies."""

    source: str
    cells: tuple[Measured, ...]
    head_sha256: str | None = None
    """The SHA-256 of the decision head the run measured (``None``: the file does not say)."""

    def at(self, threshold: int) -> tuple[Measured, ...]:
        return tuple(c for c in self.cells if c.threshold == threshold)

    @property
    def default_threshold(self) -> int:
        """The largest measured T whose every channel agrees on ≥ 95% (0 when none)."""
        kept = [
            t
            for t in sorted({c.threshold for c in self.cells})
            if self.at(t) and all(c.agreement >= REQUIRED_AGREEMENT for c in self.at(t))
        ]
        return max(kept, default=0)

    @staticmethod
    def from_json(data: dict[str, Any], source: str) -> AgreementTable:
        cells = tuple(
            Measured(
                int(c["threshold"]),
                str(c["channel"]),
                int(c["prompts"]),
                float(c["agreement"]),
                None if c.get("speedup") is None else float(c["speedup"]),
            )
            for c in data["cells"]
        )
        head = data.get("head")
        sha256 = head.get("sha256") if isinstance(head, dict) else None
        return AgreementTable(source, cells, sha256 if isinstance(sha256, str) else None)


def bundled_path() -> Path:
    return Path(str(resources.files("edgespec") / "data" / "wisv" / AGREEMENT_FILE))


def load_agreement(path: Path | None = None) -> AgreementTable | None:
    """The measured table (the bundled one by default); ``None`` when there is none. A file
    that is not UTF-8 JSON is a :class:`ConfigFileError` naming it."""
    path = bundled_path() if path is None else path
    if not path.is_file():
        return None
    text = read_text(path, "agreement table")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigFileError(f"{path}:{exc.lineno}", f"not JSON ({exc.msg})") from exc
    return AgreementTable.from_json(data, str(path))


BUNDLED_DRAFT_PREFIX = "gemma3-270m"
"""Drafts of the bundled pair (``gemma3-270m-draft``): the pair the bundled head and its
measured agreement are for."""


def bundled_pair(draft: str) -> bool:
    """Whether ``draft`` (a drafter name) is the bundled pair's draft."""
    return draft.startswith(BUNDLED_DRAFT_PREFIX)


def shipped_default(draft: str, table: AgreementTable | None) -> int | None:
    """The threshold a semantic session of ``draft`` gets without ``--threshold``: the
    bundled head's default for the bundled pair's draft, ``None`` for any other (no
    measured default: the user chooses)."""
    if table is None or not bundled_pair(draft):
        return None
    return table.default_threshold


def measured_head(table: AgreementTable | None, served_sha256: str | None) -> bool:
    """Whether the head a server serves (its Health's SHA-256) is the one ``table``
    measured: only then do its default and notes hold for that server."""
    return (
        table is not None and table.head_sha256 is not None and served_sha256 == table.head_sha256
    )


def unmeasured_default(table: AgreementTable, served_sha256: str | None, flag: str) -> str:
    """Why a session given the shipped default is refused by a server serving another head
    (or naming none): ``flag`` is how a threshold is given (``--threshold``)."""
    served = (
        "no head it names (it serves no semantic verification, or predates saying which)"
        if served_sha256 is None
        else f"another head (SHA-256 {served_sha256[:12]}...)"
    )
    measured = "no head it names" if table.head_sha256 is None else (
        f"the bundled head (SHA-256 {table.head_sha256[:12]}...)"
    )  # fmt: skip
    return (
        f"the shipped default threshold T = {table.default_threshold} was measured with "
        f"{measured}; the server serves {served}: give {flag}"
    )


def default_note(table: AgreementTable) -> str:
    """What a session given the shipped default is told: the agreement and speed-up
    measured there."""
    shown = table.at(table.default_threshold)
    where = ", ".join(
        f"{c.agreement:.0%} on the {c.channel} channel"
        + ("" if c.speedup is None else f" at {c.speedup:.2f}x exact SD's tokens/s")
        for c in shown
    )
    prompts = max((c.prompts for c in shown), default=0)
    return (
        f"WISV threshold T = {table.default_threshold}, the bundled Gemma 3 270M head's "
        f"shipped default (no --threshold given): it kept the target's final answer on {where} "
        f"({prompts} held-out GSM8K prompts; docs/REPRODUCE.md, WISV on the real pair)"
    )


def _measured_at(table: AgreementTable, threshold: int) -> str:
    """``T = t: the final answer agreed ... on X% on the poor channel (...), ...``."""
    where = ", ".join(
        f"{c.agreement:.0%} on the {c.channel} channel"
        + ("" if c.speedup is None else f" (speed-up {c.speedup:.2f}x over exact SD)")
        for c in table.at(threshold)
    )
    return f"T = {threshold}: the final answer agreed with target-only decoding on {where}"


def agreement_note(threshold: int, table: AgreementTable | None) -> str | None:
    """What a user asking for ``threshold`` above the shipped default is told: the
    measured agreement (and speed-up) there, or, for a T not measured, at the nearest
    measured T below and above it (agreement is not bound to be monotone in T, so both
    are shown); ``None`` at or below the default, or without a table."""
    if table is None or threshold <= table.default_threshold:
        return None
    thresholds = sorted({c.threshold for c in table.cells})
    below = [t for t in thresholds if t < threshold]
    above = [t for t in thresholds if t > threshold]
    shown = [threshold] if threshold in thresholds else below[-1:] + above[:1]
    parts = "; at ".join(_measured_at(table, t) for t in shown)
    measured = f"measured at {parts}" if shown == [threshold] else f"not measured; at {parts}"
    if threshold >= THRESHOLD_STEPS:  # p ≥ 16/16 is never reached by a probability below 1
        measured = f"every mismatch is accepted (the target corrects no draft token); {measured}"
    prompts = max((c.prompts for t in shown for c in table.at(t)), default=0)
    return (
        f"WISV threshold T = {threshold} is above the bundled Gemma 3 270M head's default "
        f"T = {table.default_threshold} (the largest that kept >= "
        f"{REQUIRED_AGREEMENT:.0%} of held-out GSM8K answers); {measured} ({prompts} "
        f"prompts; docs/REPRODUCE.md, WISV on the real pair)"
    )
