"""What `edgespec draft --compare` shows a user on one machine, with the drafter and the
server sharing its CPUs and with each on CPUs of its own (``--cpus``: as on separate
devices), in one run, placements alternating prompt by prompt.

    .venv/bin/python -m benchmarks.draft_compare --json benchmarks/results/draft-compare.json
    .venv/bin/python -m benchmarks.draft_compare --draft-flag=--lookup \
        --server-backend transformers-lossy --json benchmarks/results/draft-compare-lossy.json
    .venv/bin/python -m benchmarks.draft_compare --backend llamacpp --draft ngram \
        --json benchmarks/results/draft-compare-llamacpp-ngram.json

Two servers of the bundled target (`edgespec serve --target gemma3-270m --backend B`, B the
``--server-backend``, by default the draft's ``--backend``), one on every CPU and one on the
last CPU alone (``--cpus N-1``, one torch thread), run side by side; each
prompt (the first ``--prompts`` of the held-out general set,
edgespec/data/prompts/general_test.jsonl) goes through `edgespec draft --compare` against
the shared server (drafter on every CPU) and then against the pinned one (drafter on the
other CPUs, ``--cpus 0-(N-2)``). Each invocation runs centralized then distributed decoding
of the same prompt and prints the speed-up of distributed over centralized tokens/s (the
baseline is the server's own decoding: on the exact ``transformers`` server, batch-invariant
kernels that pad every pass to 8 rows; on ``transformers-lossy``, the library's kernels, as
plain decoding runs). Outputs that differ (the command exits 1; lossy kernels may flip an
argmax) are recorded, not fatal; sampled outputs (``--draft-flag=--temperature=0.8``) are
two draws, not compared (``identical`` null). The JSON holds every prompt's figures per
placement, the server's numerics and backend, and the medians.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

PLACEMENTS = ("shared", "own_cpus")
EDGESPEC = str(Path(sys.executable).with_name("edgespec"))
PROMPTS = Path(__file__).resolve().parents[1] / "edgespec/data/prompts/general_test.jsonl"
SPEEDUP = re.compile(
    r"speed-up: (?P<ratio>[\d.]+)x \(distributed (?P<spec>[\d.]+) tok/s over centralized "
    r"(?P<central>[\d.]+) tok/s(?:, the server's (?P<numerics>\S+) kernels)?\); outputs "
    r"(?:identical|differ from token (?P<differ>\d+)|(?P<sampled>sampled))"
)


def _server(backend: str, port: int, cpus: str | None) -> subprocess.Popen[str]:
    argv = [EDGESPEC, "serve", "--target", "gemma3-270m", "--backend", backend, "--port", str(port)]
    if cpus is not None:
        argv += ["--cpus", cpus]
    process = subprocess.Popen(argv, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    assert process.stderr is not None
    for line in process.stderr:
        if line.rstrip().endswith("ready"):
            return process
    raise RuntimeError(f"edgespec serve on port {port} ended before it was ready")


def _compare(port: int, prompt: str, args: argparse.Namespace, cpus: str | None) -> dict[str, Any]:
    argv = [EDGESPEC, "draft", "--server", f"127.0.0.1:{port}", "--backend", args.backend,
            "--draft", args.draft, "--prompt", prompt, "--max-new-tokens",
            str(args.max_new_tokens), "--compare", *args.draft_flag]  # fmt: skip
    if cpus is not None:
        argv += ["--cpus", cpus]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    match = SPEEDUP.search(done.stderr)
    if done.returncode not in (0, 1) or match is None:  # 1: the outputs differ
        raise RuntimeError(f"edgespec draft exited {done.returncode}: {done.stderr}")
    said = match.groupdict()
    differ, sampled = said["differ"], said["sampled"] is not None
    return {
        **{k: float(said[k]) for k in ("ratio", "spec", "central")},
        "numerics": said["numerics"] or "",
        "identical": None if sampled else differ is None,  # sampled: two draws, not compared
        "first_difference": None if differ is None else int(differ),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", type=Path, required=True)
    parser.add_argument("--backend", default="transformers", choices=["transformers", "llamacpp"])
    parser.add_argument(
        "--server-backend",
        choices=["transformers", "transformers-lossy", "llamacpp", "llamacpp-lossy"],
        help="the servers' edgespec serve --backend (default: the draft's --backend)",
    )
    parser.add_argument("--draft", default="gemma3-270m-draft")
    parser.add_argument("--draft-flag", action="append", default=[], help="e.g. --lookup")
    parser.add_argument("--prompts", type=int, default=4)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    args = parser.parse_args()
    cpus = sorted(os.sched_getaffinity(0))
    server_cpus, drafter_cpus = str(cpus[-1]), ",".join(str(c) for c in cpus[:-1])
    lines = PROMPTS.read_text().splitlines()[: args.prompts]
    prompts = [json.loads(line)["prompt"] for line in lines]
    load_before = os.getloadavg()
    server_backend = args.server_backend or args.backend
    shared, own = _server(server_backend, 50811, None), _server(server_backend, 50812, server_cpus)
    rows: list[dict[str, Any]] = []
    try:
        for i, prompt in enumerate(prompts):
            row = {"prompt": i, "shared": _compare(50811, prompt, args, None)}
            row["own_cpus"] = _compare(50812, prompt, args, drafter_cpus)
            print(json.dumps(row), flush=True)
            rows.append(row)
    finally:
        for server in (shared, own):
            server.terminate()
            server.wait()
    report = {
        "command": " ".join(["python -m benchmarks.draft_compare", *sys.argv[1:]]),
        "date": time.strftime("%Y-%m-%d"),
        "cpus": len(cpus),
        "loadavg_1_5_15_min": {"before": load_before, "after": os.getloadavg()},
        "placements": {
            "shared": "drafter and server on every CPU",
            "own_cpus": f"server on CPU {server_cpus}, drafter on CPUs {drafter_cpus}",
        },
        "draft": [args.draft, *args.draft_flag],
        "backend": args.backend,
        "server_backend": server_backend,
        "server_numerics": sorted({r[p]["numerics"] for r in rows for p in PLACEMENTS}),
        "max_new_tokens": args.max_new_tokens,
        "all_identical": all(r[p]["identical"] is not False for r in rows for p in PLACEMENTS),
        "rows": rows,
        "median_speedup": {p: statistics.median(r[p]["ratio"] for r in rows) for p in PLACEMENTS},
        "median_tokens_per_s": {
            p: {k: statistics.median(r[p][k] for r in rows) for k in ("spec", "central")}
            for p in PLACEMENTS
        },
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report["median_speedup"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
