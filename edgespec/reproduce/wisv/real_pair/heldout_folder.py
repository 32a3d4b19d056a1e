"""The held-out check's run folder (``edgespec reproduce wisv-heldout --out DIR``, the
check itself is :mod:`~edgespec.reproduce.wisv.real_pair.heldout`).

* ``heldout.jsonl`` (:data:`RECORDS_FILE`), one JSON line per prompt, appended as each
  finishes: :func:`read_records` reads it back. A torn last line (no newline at its end,
  not JSON: a run stopped while appending it) is dropped, said on stderr in one line, and
  its prompt runs again (:func:`end_at_whole_line`); any other line that is not a record
  is refused naming FILE:LINE.
* ``heldout-plan.json`` (:data:`PLAN_FILE`): the :class:`HeldoutPlan` the check was
  started under, written when it starts. :func:`claim_heldout_folder` continues a folder
  of the same plan, refuses one of another plan naming what differs (its records would be
  summarised as this plan's), and claims any other folder as every reproduction does
  (:func:`~edgespec.output_paths.claim_folder`): one holding a file this check writes
  (:data:`HELDOUT_FILES`: another reproduction's ``REPORT.md``, a check from before plans
  were recorded) is refused unless ``--overwrite``, which removes those files first.
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from edgespec.errors import UserInputError
from edgespec.learn.run_settings import read_settings, write_settings
from edgespec.output_paths import claim_folder
from edgespec.policies.semantic.agreement import AGREEMENT_FILE

RECORDS_FILE = "heldout.jsonl"
PLAN_FILE = "heldout-plan.json"
HELDOUT_FILES = (RECORDS_FILE, PLAN_FILE, "REPORT.md", AGREEMENT_FILE)
"""Every file the check writes in its folder: what ``--overwrite`` removes, and what an
``--out`` that is not a check of the same plan must not hold without it."""
RUN_KEYS = ("prompt", "threshold", "channel", "agrees", "identical", "tokens", "rounds",
            "seconds")  # fmt: skip
"""What every run of a record holds (:func:`~.heldout.table` reads them)."""


def head_identity(head: Path | None) -> dict[str, str]:
    """The head a record was made with: its file and SHA-256 (``None``: the shipped one)."""
    import hashlib

    from edgespec.reproduce.wisv.real_pair.report import shipped_head_path

    path = head or shipped_head_path()
    return {"file": str(path), "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}


@dataclass(frozen=True, slots=True)
class HeldoutPlan:
    """What a check runs: quick or full, its prompts, the thresholds above 0, on how many
    prompts they run (``None``: all), the head (:func:`head_identity`'s file and SHA-256)
    and the command that started it."""

    quick: bool
    num_prompts: int
    thresholds: tuple[int, ...]
    lossy_prompts: int | None
    head_file: str
    head_sha256: str
    command: str

    @staticmethod
    def read(path: Path) -> HeldoutPlan:
        """The plan in ``path``; a :class:`UserInputError` naming it when it is not one
        (:func:`~edgespec.learn.run_settings.read_settings` reads it, as every settings
        record)."""
        data = read_settings(path) or {}
        try:
            lossy = data["lossy_prompts"]
            return HeldoutPlan(bool(data["quick"]), int(data["num_prompts"]),
                               tuple(int(t) for t in data["thresholds"]),
                               None if lossy is None else int(lossy), str(data["head_file"]),
                               str(data["head_sha256"]), str(data["command"]))  # fmt: skip
        except (ValueError, TypeError, KeyError) as exc:
            raise UserInputError(f"{path}: not a held-out check's plan ({exc!r})") from None

    def differences(self, other: HeldoutPlan) -> list[str]:
        """How this plan differs from ``other``, one phrase each ("X, not Y": this, other)."""

        def lossy(plan: HeldoutPlan) -> str:
            return "all" if plan.lossy_prompts is None else str(plan.lossy_prompts)

        found = []
        if self.quick != other.quick:
            found.append("the quick check, not the full one" if self.quick else
                         "the full check, not the quick one")  # fmt: skip
        if self.num_prompts != other.num_prompts:
            plural = "s" if self.num_prompts != 1 else ""
            found.append(f"{self.num_prompts} prompt{plural}, not {other.num_prompts}")
        if self.thresholds != other.thresholds:
            shown = (", ".join(map(str, p.thresholds)) for p in (self, other))
            found.append("T = {}, not T = {}".format(*shown))
        if self.lossy_prompts != other.lossy_prompts:
            found.append(f"lossy prompts {lossy(self)}, not {lossy(other)}")
        if self.head_sha256 != other.head_sha256:
            found.append(f"head {self.head_file}, not {other.head_file}")
        return found


def claim_heldout_folder(
    out: Path | None, default: Path, plan: HeldoutPlan, overwrite: bool
) -> Path:
    """The check's folder, before any model loads: ``out`` continued when it holds a check
    of ``plan`` (a :class:`UserInputError` naming the differences when another plan's),
    else claimed (:func:`~edgespec.output_paths.claim_folder` over :data:`HELDOUT_FILES`)
    and ``plan`` written into it."""
    if out is not None and (out / PLAN_FILE).is_file() and not overwrite:
        theirs = HeldoutPlan.read(out / PLAN_FILE)
        if differs := theirs.differences(plan):
            raise UserInputError(
                f"--out {out} holds a check started under another plan ({'; '.join(differs)}: "
                f"`{theirs.command}`): rerun that command to continue it, give another --out, "
                "or --overwrite to start again"
            )
        return out
    folder = claim_folder(out, default, HELDOUT_FILES, overwrite)
    write_settings(folder / PLAN_FILE, asdict(plan))
    return folder


def _problem(record: Any) -> str | None:
    """What makes ``record`` no held-out record (``None``: nothing)."""
    if not isinstance(record, dict):
        return "not a JSON object"
    if not isinstance(record.get("prompt"), int) or isinstance(record["prompt"], bool):
        return 'no integer "prompt"'
    target = record.get("target_only")
    if not isinstance(target, dict) or not {"tokens", "seconds"} <= target.keys():
        return 'no "target_only" with "tokens" and "seconds"'
    runs = record.get("runs")
    if not isinstance(runs, list) or not runs:
        return 'no "runs" list'
    for position, run in enumerate(runs):
        if not isinstance(run, dict):
            return f"run {position} is not a JSON object"
        if missing := [k for k in RUN_KEYS if k not in run]:
            return f'run {position} has no "{missing[0]}"'
    if not isinstance(record.get("head", {}), dict):
        return '"head" is not an object'
    return None


def read_records(
    path: Path, head: dict[str, str] | None = None
) -> tuple[dict[int, dict[str, Any]], int | None]:
    """The records in ``path`` by prompt, and the number of its torn last line (``None``:
    none); a :class:`UserInputError` naming FILE:LINE for any other line that is not a
    record, and, with ``head``, for a record made with another head (one naming none was
    made with the shipped head)."""
    if not path.is_file():
        return {}, None
    *whole, tail = path.read_bytes().split(b"\n")
    lines = [*whole, tail] if tail.strip() else whole
    shipped = None if head is None else head_identity(None)["sha256"]
    records: dict[int, dict[str, Any]] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as exc:
            if number == len(whole) + 1:  # no newline after it: an append cut short
                return records, number
            reason = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
            raise UserInputError(f"{path}:{number}: not JSON ({reason})") from None
        if (problem := _problem(record)) is not None:
            raise UserInputError(f"{path}:{number}: not a held-out record: {problem}")
        made_with = record.get("head") or {}
        if head is not None and made_with.get("sha256", shipped) != head["sha256"]:
            raise UserInputError(
                f"{path}:{number} holds prompt {record['prompt']} run with "
                f"{made_with.get('file', 'the shipped head')}, not {head['file']}: choose "
                "another --out for another head"
            )
        records[record["prompt"]] = record
    return records, None


def end_at_whole_line(path: Path, torn_line: int | None) -> None:
    """Make ``path`` end with a newline before records are appended: a torn last line
    (``torn_line``, :func:`read_records`) is cut off and said on stderr; a whole record
    missing only its newline gets it."""
    if not path.is_file():
        return
    data = path.read_bytes()
    if torn_line is not None:
        with path.open("r+b") as fh:
            fh.truncate(data.rfind(b"\n") + 1)
        print(f"edgespec reproduce wisv-heldout: {path}:{torn_line}: dropped a torn last line "
              "(a run stopped while writing it); its prompt runs again",
              file=sys.stderr, flush=True)  # fmt: skip
    elif data and not data.endswith(b"\n"):
        with path.open("ab") as fh:
            fh.write(b"\n")
