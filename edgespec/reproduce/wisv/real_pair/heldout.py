"""The shipped WISV default's held-out check on the real pair: answer agreement with
target-only decoding and speed against exact SD, per threshold and channel, prompt by
prompt and resumable (``edgespec reproduce wisv-heldout [--quick] --out DIR``).

It runs the first GSM8K **test** prompts (never used in training: the capture reads the
train split only) through the pair of
:func:`~edgespec.reproduce.wisv.real_pair.report.load_real_pair`. Per prompt it decodes
target-only once (the reference answer), runs exact greedy SD (T = 0) and WISV at the
plan's thresholds on both reported channels (:data:`~.runs.CHANNELS`), in process at
γ = 8 with the FH upload, exactly as V5 does (:func:`~.answers.answer_run`). The full
check (:data:`~.heldout_plan.FULL`) runs 50 prompts, target-only, exact SD and WISV at
T = 1, 2, 4, 8 and 12 on every one; the quick one (:data:`~.heldout_plan.QUICK`) 2
prompts at T = 12, and its REPORT.md ends with what it leaves out. Each
prompt's record is one JSON line of ``DIR/heldout.jsonl``; a rerun of the same plan skips
the prompts already there, so an interrupted run continues (the folder records its plan:
:mod:`~.heldout_folder`). :func:`table` summarises the lines: per
threshold and channel, agreement, token-identical share, tokens/s and its ratio to exact
SD's on the same prompts (*speed-up*), rounds per answer. ``DIR/gemma3-270m-agreement.json``
is the file :mod:`edgespec.policies.semantic.agreement` reads (the bundled copy is
``edgespec/data/wisv/``).

``--head H.json`` runs another head in place of the shipped one (a candidate: T = 0 does
not read it, so its exact-SD rows equal the shipped head's), ``--prompts N`` the first N
prompts only, ``--lossy-prompts N`` the thresholds above 0 on the first N. Every record
names its head (file and SHA-256), and a run into a folder holding another head's records
stops and names both.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from edgespec.output_paths import write_text_atomically
from edgespec.reproduce.printed import print_left_out
from edgespec.reproduce.report_file import left_out_markdown
from edgespec.reproduce.wisv.real_pair.heldout_folder import (
    RECORDS_FILE,
    HeldoutPlan,
    claim_heldout_folder,
    end_at_whole_line,
    head_identity,
    read_records,
)
from edgespec.reproduce.wisv.real_pair.heldout_plan import check_plan, left_out

if TYPE_CHECKING:  # the models' modules load only for a run, not for a summary
    from edgespec.reproduce.wisv.real_pair.answers import AnswerRun, Pair, PromptCase


def prompt_record(
    pair: Pair, case: PromptCase, thresholds: Sequence[int], window: int, max_new: int
) -> dict[str, Any]:
    """One prompt's runs: exact SD and WISV at every threshold > 0 on both channels."""
    from edgespec.reproduce.wisv.real_pair.answers import answer_run, run_dict
    from edgespec.reproduce.wisv.real_pair.runs import CHANNELS, REPORTED_RTT_S
    from edgespec.runtime.edge.semantic import SemanticRequest
    from edgespec.runtime.server.engine import VerificationEngine
    from edgespec.runtime.server.semantic import semantic_rules
    from edgespec.runtime.wire.inprocess import LocalVerifier

    rules = semantic_rules(pair.head, None, target_hidden_size=pair.target_hidden_size)
    verifier = LocalVerifier(VerificationEngine(pair.backend, rules=rules))
    runs: list[dict[str, Any]] = []

    def add(threshold: int, channel: str, run: AnswerRun) -> None:
        runs.append({"threshold": threshold, "channel": channel, **run_dict(run)})

    exact = answer_run(verifier, pair, case, window, None, max_new, f"exact-{case.index}")
    add(0, "either", exact)
    for threshold in (t for t in thresholds if t > 0):
        for channel, rate in CHANNELS.items():
            request = SemanticRequest(threshold, rate, 0.0, REPORTED_RTT_S, "fh")
            sid = f"T{threshold}-{channel}-{case.index}"
            add(threshold, channel, answer_run(verifier, pair, case, window, request, max_new, sid))
    return {
        "prompt": case.index,
        "answer": case.answer,
        "target_only": {"tokens": len(case.reference), "seconds": round(case.seconds, 4)},
        "runs": runs,
    }


def _rate(runs: Sequence[dict[str, Any]]) -> float:
    tokens = sum(int(r["tokens"]) for r in runs)
    return tokens / max(1e-9, sum(float(r["seconds"]) for r in runs))


def table(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (threshold, channel): prompts, agreement, identical, tokens/s, speed-up over
    exact SD's tokens/s on the same prompts, rounds per answer, tokens per answer."""
    cells: dict[tuple[int, str], list[dict[str, Any]]] = {}
    exact: dict[int, dict[str, Any]] = {}
    for record in records:
        for run in record["runs"]:
            cells.setdefault((run["threshold"], run["channel"]), []).append(run)
            if run["threshold"] == 0:
                exact[int(record["prompt"])] = run
    rows = []
    for (threshold, channel), runs in sorted(cells.items()):
        n = len(runs)
        rate = _rate(runs)
        baseline = _rate([exact[int(r["prompt"])] for r in runs if int(r["prompt"]) in exact])
        rows.append({
            "threshold": threshold,
            "channel": channel,
            "prompts": n,
            "agreement": sum(r["agrees"] for r in runs) / n,
            "identical": sum(r["identical"] for r in runs) / n,
            "tokens_per_s": rate,
            "speedup": rate / baseline if baseline > 0 else None,
            "rounds": sum(r["rounds"] for r in runs) / n,
            "tokens_per_answer": sum(r["tokens"] for r in runs) / n,
        })  # fmt: skip
    return rows


def target_only_rate(records: Sequence[dict[str, Any]]) -> tuple[float, float]:
    """Target-only decoding's tokens/s over the records, and its ratio to exact SD's."""
    tokens = sum(r["target_only"]["tokens"] for r in records)
    seconds = sum(r["target_only"]["seconds"] for r in records)
    exact = _rate([run for r in records for run in r["runs"] if run["threshold"] == 0])
    rate = tokens / max(1e-9, seconds)
    return rate, rate / exact if exact > 0 else 0.0


def agreement_json(
    rows: Sequence[dict[str, Any]], command: str, head: dict[str, str]
) -> dict[str, Any]:
    """The file :mod:`edgespec.policies.semantic.agreement` reads: the summary rows, the
    command that made them and the head they measured (``head``: its file and SHA-256, the
    file by its name only; a drafter holds the rows to a server serving that head)."""
    keep = ("threshold", "channel", "prompts", "agreement", "identical", "speedup", "rounds")
    cells = [{k: round(r[k], 4) if isinstance(r[k], float) else r[k] for k in keep} for r in rows]
    named = {"file": Path(head["file"]).name, "sha256": head["sha256"]}
    return {"command": command, "split": "GSM8K test", "window": 8, "head": named, "cells": cells}


def markdown(rows: Sequence[dict[str, Any]], target: tuple[float, float] | None = None) -> str:
    """The summary rows (and target-only's tokens/s and ratio) as docs/REPRODUCE.md shows
    them."""
    lines = [
        "| T | channel | prompts | agreement | token-identical | tokens/s | speed-up over "
        "exact SD | rounds/answer | tokens/answer |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        name = "exact SD (either)" if r["threshold"] == 0 else r["channel"]
        lines.append(
            f"| {r['threshold']} | {name} | {r['prompts']} | {r['agreement']:.0%} | "
            f"{r['identical']:.0%} | {r['tokens_per_s']:.2f} | {r['speedup']:.2f}x | "
            f"{r['rounds']:.1f} | {r['tokens_per_answer']:.1f} |"
        )
    if target is not None:
        lines.append(
            f"| — | target-only | — | 100% | 100% | {target[0]:.2f} | {target[1]:.2f}x | — | — |"
        )
    return "\n".join(lines)


def run(
    out: Path,
    prompts: int,
    thresholds: Sequence[int],
    lossy_prompts: int | None = None,
    head: Path | None = None,
) -> list[dict[str, Any]]:
    """Run (or continue) the check into ``out`` with ``head`` (``None``: the shipped one);
    the summary rows of :func:`table`. The thresholds above 0 run on the first
    ``lossy_prompts`` prompts only (all when None)."""
    from edgespec.reproduce.wisv.real_pair.answers import target_only
    from edgespec.reproduce.wisv.real_pair.report import load_real_pair
    from edgespec.reproduce.wisv.real_pair.runs import Plan

    plan = Plan(prompts=prompts, thresholds=(0, *thresholds), v6_prompts=0,
                v6_rates_mbps=(), v6_windows=())  # fmt: skip
    import torch

    torch.set_num_threads(1)
    identity = head_identity(head)
    done, torn_line = read_records(out, identity)
    end_at_whole_line(out, torn_line)  # before the models load: a bad file fails first
    if len(done) >= prompts:  # nothing left to run: no models to load
        return table(list(done.values()))
    pair, encoded, _ = load_real_pair(plan, head)
    out.parent.mkdir(parents=True, exist_ok=True)
    for position, (index, ids) in enumerate(encoded):
        if index in done:
            continue
        lossy = lossy_prompts is None or position < lossy_prompts
        case = target_only(pair, [(index, ids)], plan.max_new_tokens, lambda _: None)[0]
        at = plan.thresholds if lossy else (0,)
        record = prompt_record(pair, case, at, plan.v5_window, plan.max_new_tokens)
        record["head"] = identity
        with out.open("a") as fh:
            fh.write(json.dumps(record) + "\n")
        done[index] = record
        print(f"prompt {index}: {len(done)}/{prompts}", flush=True)
    return table(list(done.values()))


def _report(
    command: str, text: str, default: int, head: Path | None, omitted: Sequence[str], run: str
) -> str:
    """REPORT.md: the table and the default it gives, then what a quick or cut check
    (``run``) leaves out (``omitted``, :func:`~.heldout_plan.left_out`; none for the full
    check)."""
    which = "the shipped head" if head is None else f"the head {head}"
    closing = "".join(f"\n{line}" for line in left_out_markdown(omitted, run))
    return (
        "# WISV's shipped default: held-out agreement and speed (Gemma 3 270M pair)\n\n"
        f"`{command}`\n\nWith {which}.\n\n{text}\n\nDefault for this head: T = {default}, "
        "the largest measured threshold whose agreement is at least 95% on both channels.\n"
        f"{closing}"
    )


def reproduce(
    out: Path | None,
    *,
    quick: bool,
    command: str,
    head: Path | None = None,
    prompts: int | None = None,
    lossy_prompts: int | None = None,
    overwrite: bool = False,
) -> list[Any]:
    """``edgespec reproduce wisv-heldout``: run (or continue) the check into
    ``out/heldout.jsonl`` (:data:`~.heldout_plan.FULL` or :data:`~.heldout_plan.QUICK`;
    ``prompts``: the first that many of them; ``lossy_prompts``: the thresholds above 0 on
    the first that many) with ``head`` (``None``: the shipped one), write ``out/REPORT.md``
    (a quick check's ending with what it leaves out) and the agreement file
    ``out/gemma3-270m-agreement.json``, print the table (and that list); the summary rows.
    Refused before anything runs: :func:`~.heldout_plan.check_plan`, and an ``out``
    holding another plan's check or another run (:func:`~.heldout_folder.claim_heldout_folder`;
    ``overwrite``: its files removed first; ``None``: a new
    ``runs/reproduce-wisv-heldout-<time>``)."""
    from edgespec.policies.semantic.agreement import AGREEMENT_FILE, AgreementTable
    from edgespec.reproduce.command import default_folder

    check = check_plan(quick, prompts, lossy_prompts)
    identity = head_identity(head)
    plan = HeldoutPlan(quick, check.num_prompts, check.thresholds, check.lossy_prompts,
                       identity["file"], identity["sha256"], command)  # fmt: skip
    out = claim_heldout_folder(out, default_folder("wisv-heldout"), plan, overwrite)
    run(out / RECORDS_FILE, check.num_prompts, check.thresholds, check.lossy_prompts, head)
    records = list(read_records(out / RECORDS_FILE)[0].values())
    rows = table(records)
    text = markdown(rows, target_only_rate(records))
    data = agreement_json(rows, command, identity)
    default = AgreementTable.from_json(data, AGREEMENT_FILE).default_threshold
    write_text_atomically(out / AGREEMENT_FILE, json.dumps(data, indent=1) + "\n")
    omitted, cut_how = left_out(check), "quick run" if quick else "cut run"  # --prompts, say
    write_text_atomically(
        out / "REPORT.md", _report(command, text, default, head, omitted, cut_how)
    )
    print(text)
    print(f"default for this head: T = {default}; report: {out / 'REPORT.md'}")
    print_left_out(omitted, run=cut_how)
    return rows
