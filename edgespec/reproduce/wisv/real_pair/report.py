"""``edgespec reproduce wisv-real-pair``: load the pair, run V5 and V6, write the run
folder (REPORT.md with the claims and both tables, results.json), print the claims."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from edgespec.output_paths import write_text_atomically
from edgespec.reproduce.wisv.real_pair.answers import Pair
from edgespec.reproduce.wisv.real_pair.choices import DRAFT, TARGET
from edgespec.reproduce.wisv.real_pair.runs import Plan, left_out

Prompts = list[tuple[int, list[int]]]
Loader = Callable[[Plan], tuple[Pair, Prompts, dict[str, Any]]]
"""Loads the pair and encodes the plan's prompts; returns them and what the results
record about the pair (names, the head's held-out reject shares)."""


def _wisv_data() -> Path:
    return Path(__file__).resolve().parents[3] / "data" / "wisv"


def shipped_head_path() -> Path:
    """The bundled pair's shipped decision head."""
    return _wisv_data() / f"{TARGET}-head.json"


def load_real_pair(
    plan: Plan, head_path: Path | None = None
) -> tuple[Pair, Prompts, dict[str, Any]]:
    """Gemma 3 270M, the bundled draft, the shipped head (or ``head_path``); the first
    ``plan.prompts`` GSM8K test prompts, framed and encoded as the capture does."""
    from edgespec.datasets.prompts import load_prompts
    from edgespec.learn.drafts.distill_data import encode_prompt
    from edgespec.learn.wisv.answers import framed_prompt
    from edgespec.learn.wisv.capture import TextOutcome
    from edgespec.models.loading import load_model
    from edgespec.runtime.backends.attention_mask import attention_layout
    from edgespec.runtime.backends.mask_check_cache import checked_target
    from edgespec.runtime.backends.transformers_backend import eos_ids
    from edgespec.runtime.edge.draft_backends import make_drafter
    from edgespec.runtime.server.semantic import load_semantic_head

    head = load_semantic_head(head_path or shipped_head_path())
    target = load_model(TARGET, require_tokenizer=True)
    draft = load_model(DRAFT, target=target)
    tokenizer = target.tokenizer
    backend = checked_target(target.model, target.weight_files)
    pair = Pair(
        target=target.model,
        backend=backend,
        drafter=make_drafter(DRAFT, draft.model, backend.vocab_size),
        head=head,
        outcome=TextOutcome(tokenizer),
        eos=eos_ids(target.model),
        layout=attention_layout(target.model),
        target_hidden_size=int(target.model.config.get_text_config().hidden_size),
    )
    prompts = []
    for p in load_prompts("gsm8k", "test", plan.prompts):
        index = int(p.prompt_id.rsplit("-", 1)[1])
        ids = encode_prompt(tokenizer, framed_prompt(p.text), plan.max_prompt_tokens)
        prompts.append((index, ids))
    acceptance = json.loads((_wisv_data() / f"{TARGET}-acceptance.json").read_text())
    metrics = json.loads((_wisv_data() / f"{TARGET}-metrics.json").read_text())
    trained_on = metrics["dataset"]  # the head's training data, as edgespec train wisv saw it
    about = {
        "target": TARGET,
        "draft": DRAFT,
        "head": str(shipped_head_path().relative_to(_wisv_data().parents[2])),
        "reject_share": acceptance["reject_share"],
        "labels": metrics.get("labels", "base"),
        "critical_share": trained_on["critical_share"],
        "train_agreement": trained_on["agreement"],
    }
    return pair, prompts, about


def run_all(
    plan: Plan, load: Loader, progress: bool
) -> dict[str, Any]:  # fmt: skip
    """Load, run target-only, V5 and V6; the results dict (:mod:`.claims` reads it)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from edgespec.reproduce.wisv.real_pair.answers import target_only, target_only_dict
    from edgespec.reproduce.wisv.real_pair.runs import run_v5, run_v6

    start = time.perf_counter()
    pair, prompts, about = load(plan)
    load_s = time.perf_counter() - start
    v5_runs = len(prompts) * (1 + 2 * (len(plan.thresholds) - 1))
    v6_runs = plan.v6_prompts * len(plan.v6_rates_mbps) * len(plan.v6_windows) * 2
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
               TimeElapsedColumn())  # fmt: skip
    with Progress(*columns, disable=not progress) as bar:
        task = bar.add_task("wisv-real-pair", total=len(prompts) + v5_runs + v6_runs)

        def tick(label: str) -> None:
            bar.update(task, advance=1, description=label)

        clock = time.perf_counter()
        cases = target_only(pair, prompts, plan.max_new_tokens, tick)
        seconds = {"load": load_s, "target_only": time.perf_counter() - clock}
        clock = time.perf_counter()
        v5 = run_v5(pair, cases, plan, tick)
        seconds["v5"] = time.perf_counter() - clock
        clock = time.perf_counter()
        v6 = run_v6(pair, cases[: plan.v6_prompts], plan, tick)
        seconds["v6"] = time.perf_counter() - clock
    seconds["total"] = time.perf_counter() - start
    return {
        "plan": {k: getattr(plan, k) for k in plan.__dataclass_fields__},
        "head": about,
        "prompts": [index for index, _ in prompts],
        "target_only": target_only_dict(cases),
        "v5": v5,
        "v6": v6,
        "seconds": {k: round(v, 1) for k, v in seconds.items()},
    }


def _num(value: Any, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def v5_table(results: dict[str, Any]) -> str:
    """Fig. 3's curve: threshold × channel → agreement, AAL, rounds, tokens/s and the
    speed-up (tokens/s over exact SD's, T = 0, on the same prompts)."""
    head = (
        "| T (τ = T/16) | channel | agreement | token-identical | AAL | rounds/answer | "
        "tokens/answer | accepted mismatches/answer | tokens/s | speed-up over exact SD |"
    )
    lines = [head, "|---|---|---|---|---|---|---|---|---|---|"]
    cells = results["v5"]["cells"]
    exact = next((c["tokens_per_s"] for c in cells if c["threshold"] == 0), None)
    for c in sorted(cells, key=lambda c: (c["channel"] != "poor", c["threshold"])):
        shared = " (shared)" if c.get("shared") else ""
        rate = c["tokens_per_s"]
        speedup = rate / exact if rate is not None and exact else None
        lines.append(
            f"| {c['threshold']} | {c['channel']} ({c['uplink_mbps']:g} Mbit/s){shared} | "
            f"{_num(c['agreement'], '.1%')} | {_num(c['identical'], '.0%')} | "
            f"{_num(c['aal'], '.2f')} | {_num(c['rounds'], '.1f')} | "
            f"{_num(c['tokens_per_answer'], '.1f')} | {_num(c['accepted_mismatches'], '.1f')} | "
            f"{_num(rate, '.2f')} | {_num(speedup, '.2f')}x |"
        )
    t = results["target_only"]
    ratio = t["tokens_per_s"] / exact if t["tokens_per_s"] is not None and exact else None
    lines.append(
        f"| target-only | — | 100% | 100% | — | — | {_num(t['tokens_per_answer'], '.1f')} | — | "
        f"{_num(t['tokens_per_s'], '.2f')} | {_num(ratio, '.2f')}x |"
    )
    return "\n".join(lines)


def v6_table(results: dict[str, Any]) -> str:
    """Latency per answer by uplink rate × window, greedy SD and WISV."""
    lines = [
        "| uplink | γ | method | latency/answer s | ms/token | AAL | rounds/answer | "
        "tokens/answer | agreement | upload | exchanges/round |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    cells = sorted(results["v6"]["cells"], key=lambda c: (c["uplink_mbps"], c["window"]))
    for c in cells:
        method = "greedy SD" if c["method"] == "greedy" else f"WISV T={c['threshold']}"
        upload = ", ".join(u.upper() for u in c["upload"]) or "—"
        lines.append(
            f"| {c['uplink_mbps']:g} Mbit/s | {c['window']} | {method} | "
            f"{_num(c['latency_s'], '.2f')} | {_num(c['latency_per_token_ms'], '.0f')} | "
            f"{_num(c['aal'], '.2f')} | {_num(c['rounds'], '.1f')} | "
            f"{_num(c['tokens_per_answer'], '.1f')} | {_num(c['agreement'], '.0%')} | {upload} | "
            f"{_num(c['exchanges_per_round'], '.2f')} |"
        )
    return "\n".join(lines)


def reproduce(
    out: Path,
    *,
    quick: bool,
    workers: int,
    progress: bool,
    command: str,
    load: Loader | None = None,
) -> list[Any]:
    """Run V5 and V6 on the pair ``load`` gives (default :func:`load_real_pair`), write
    the run folder, print the table; returns the claim rows. One process owns the models
    (``workers`` is 1: the command refuses more)."""
    from edgespec.reproduce.printed import print_claims

    plan = Plan.quick() if quick else Plan.full()
    results = run_all(plan, load or load_real_pair, progress)
    results["command"] = command
    results["quick"] = quick
    out.mkdir(parents=True, exist_ok=True)
    write_text_atomically(out / "results.json", json.dumps(results, indent=1) + "\n")
    rows = write_outputs(out, results)
    print_claims(rows, quick=quick, left_out=left_out(plan))
    print(f"report: {out / 'REPORT.md'}")
    return rows


def write_outputs(out: Path, results: dict[str, Any]) -> list[Any]:
    """REPORT.md in ``out`` from a results dict (:func:`run_all`'s, with ``command`` and
    ``quick``): the claims, the chosen inputs, the V5 and V6 tables and, for a quick run,
    what it leaves out; returns the rows."""
    from edgespec.reproduce.report_file import write_report
    from edgespec.reproduce.wisv.real_pair.choices import choices
    from edgespec.reproduce.wisv.real_pair.claims import all_rows, chosen_threshold

    quick = bool(results["quick"])
    plan = Plan.from_dict(results["plan"])
    full = Plan.full()
    shortened = (
        f"{plan.prompts} prompts instead of {full.prompts} (V6: {plan.v6_prompts} instead of "
        f"{full.v6_prompts})"
        if quick
        else ""
    )
    rows = all_rows(results, shortened)
    title = "WISV (seed 003) on the real pair: V5 and V6" + (" — quick" if quick else "")
    command = str(results["command"])
    chosen = chosen_threshold(results)
    tables = [
        "",
        "## V5: Fig. 3's curve on this pair",
        "",
        f"Held-out GSM8K test prompts ({plan.prompts}), static γ = {plan.v5_window}, in "
        "process. The largest threshold whose agreement drop is ≤ 1 pt on both channels: "
        f"{'none' if chosen is None else chosen}.",
        "",
        v5_table(results),
        "",
        "## V6: latency per answer against the window (emulated link)",
        "",
        v6_table(results),
        "",
        "Wall time: " + ", ".join(f"{k} {v:g} s" for k, v in results["seconds"].items()) + ".",
        "",
    ]
    write_report(out / "REPORT.md", title, command, rows, choices(plan), ["results.json"],
                 quick=quick, appendix="\n".join(tables), left_out=left_out(plan))  # fmt: skip
    return rows
