"""How many concurrent streaming clients an ``edgespec draft --serve-openai`` endpoint
serves, and how long each waits for its first token (docs/DEPLOY.md, "Sizing a device's
endpoint"). ``--make-tiny DIR`` first saves the test suite's tiny Llama with a word-level
tokenizer (``w0`` … ``w63``) to serve and draft with, its chat template the suite's too (the
messages' contents joined, so a chat reply is the completion of the same words):

    python benchmarks/probes/openai_concurrency.py --make-tiny /tmp/oai/tiny
    edgespec serve --target /tmp/oai/tiny --port 50071 --threads 1 &
    edgespec draft --server 127.0.0.1:50071 --draft /tmp/oai/tiny --serve-openai 127.0.0.1:8071 &
    python benchmarks/probes/openai_concurrency.py --url http://127.0.0.1:8071 \\
        --model /tmp/oai/tiny --clients 4,8,16,24 --json OUT.json

Each client count's row is printed as it finishes; ``--json`` also writes them, with the
command and host (:mod:`probe_json`).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from probe_json import add_json_option, finish

CHAT_TEMPLATE = "{% for m in messages %}{{ m['content'] }} {% endfor %}"
"""The messages' contents, each followed by a space (tests/runtime/openai_api/conftest.py's)."""


def make_tiny(out: str) -> None:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    from edgespec.runtime.testing import tiny_llama

    core = Tokenizer(models.WordLevel({f"w{i}": i for i in range(64)}, unk_token="w0"))
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    core.decoder = decoders.Fuse()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, unk_token="w0")  # type: ignore[no-untyped-call]
    tokenizer.chat_template = CHAT_TEMPLATE
    tiny_llama(0).save_pretrained(out)
    tokenizer.save_pretrained(out)


def one(url: str, model: str, index: int, max_tokens: int) -> tuple[int, float, float]:
    """One streaming completion: its status, seconds to the first event, seconds in all."""
    body = {"model": model, "prompt": f"w{index % 60 + 1} w2 w3 w4", "max_tokens": max_tokens,
            "stream": True}  # fmt: skip
    request = urllib.request.Request(f"{url}/v1/completions", data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})  # fmt: skip
    start = time.perf_counter()
    try:
        with urllib.request.urlopen(request, timeout=300) as response:
            response.readline()
            first = time.perf_counter() - start
            response.read()
            return response.status, first, time.perf_counter() - start
    except urllib.error.HTTPError as exc:
        exc.read()
        elapsed = time.perf_counter() - start
        return exc.code, elapsed, elapsed


def run(url: str, model: str, clients: int, max_tokens: int) -> dict[str, Any]:
    with ThreadPoolExecutor(clients) as pool:
        results = list(pool.map(lambda i: one(url, model, i, max_tokens), range(clients)))
    served = [r for r in results if r[0] == 200]
    ttft = sorted(r[1] for r in served)
    return {
        "clients": clients,
        "served": len(served),
        "refused_429": sum(r[0] == 429 for r in results),
        "ttft_p50_s": round(statistics.median(ttft), 3) if ttft else None,
        "ttft_max_s": round(ttft[-1], 3) if ttft else None,
        "e2e_max_s": round(max(r[2] for r in served), 3) if served else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--make-tiny", metavar="DIR")
    parser.add_argument("--url", default="http://127.0.0.1:8071")
    parser.add_argument("--model", default="/tmp/oai/tiny")
    parser.add_argument("--clients", default="4,8,16,24")
    parser.add_argument("--max-tokens", type=int, default=32)
    add_json_option(parser)
    args = parser.parse_args()
    if args.make_tiny:
        make_tiny(args.make_tiny)
        return
    rows = []
    for clients in (int(c) for c in args.clients.split(",")):
        rows.append(run(args.url, args.model, clients, args.max_tokens))
        print(json.dumps(rows[-1]), flush=True)
    finish(args.json, "openai_concurrency.py", sys.argv[1:], {"rows": rows})


if __name__ == "__main__":
    main()
