"""`edgespec train WHAT`: what each trainer produces, and the module that trains it.

``draft`` (:mod:`edgespec.learn.drafts.command`) and ``feature-draft``
(:mod:`edgespec.learn.drafts.feature_command`, on ``text-shards``): draft models;
``stop-predictor`` (:mod:`edgespec.learn.stop.command`): the rejection predictor;
``awc-data`` and ``awc`` (:mod:`edgespec.learn.awc.command`): AWC's dataset and WC-DNN;
``wisv-data`` and ``wisv`` (:mod:`edgespec.learn.wisv.command`): WISV's mismatch dataset
and decision head.
"""

from __future__ import annotations

import argparse
from types import ModuleType

from edgespec.learn.awc import command as awc_command
from edgespec.learn.drafts import command as draft_command
from edgespec.learn.drafts import feature_command, text_shards
from edgespec.learn.stop import command as stop_command
from edgespec.learn.wisv import command as wisv_command

# WHAT → the module whose run(args) trains it (each adds its own subparser).
TRAINERS: dict[str, ModuleType] = {
    "draft": draft_command,
    "feature-draft": feature_command,
    "text-shards": text_shards,
    "stop-predictor": stop_command,
    "awc-data": awc_command,
    "awc": awc_command,
    "wisv-data": wisv_command,
    "wisv": wisv_command,
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="what", metavar="WHAT", required=True)
    for module in dict.fromkeys(TRAINERS.values()):
        module.add_arguments(sub)
    for trainer in sub.choices.values():  # its errors say "edgespec train WHAT:", as argparse's
        trainer.set_defaults(subparser=trainer)


def run(args: argparse.Namespace) -> int:
    status: int = TRAINERS[args.what].run(args)
    return status
