"""The setup row ``edgespec bench serve`` heads its report with: the bench's own server's
batching policy (and wisp's profile) is in it; a run of ``--batching wisp`` and one of
``fcfs`` read the same without it."""

from __future__ import annotations

import argparse

from edgespec.runtime.loadgen.session import setup_row
from edgespec.runtime.loadgen.spec import LoadSpec, SloShare

LOAD = LoadSpec(1, 1, "closed", None, 0.5, 0.5, (SloShare("a", None, 1.0),), 8, 4, "ngram", 0)


def _args(**given: object) -> argparse.Namespace:
    flags = {"server": None, "backend": "transformers", "batching": "fcfs", "profile": None,
             "prompts": "synthetic", "faults": None}  # fmt: skip
    return argparse.Namespace(**(flags | given))


def test_the_own_servers_batching_and_profile_are_shown() -> None:
    assert setup_row(_args(), LOAD, "synthetic")["batching"] == "fcfs"
    wisp = _args(batching="wisp", profile="a100-qwen3-32b")
    assert setup_row(wisp, LOAD, "synthetic")["batching"] == "wisp (profile a100-qwen3-32b)"


def test_a_server_of_yours_is_said_to_batch_as_it_does() -> None:
    row = setup_row(_args(server="127.0.0.1:50051", batching=None), LOAD, "synthetic")
    assert row["batching"] == "the server's" and row["backend"] == "the server's"
