"""The command line's argparse value types: a bad value is argparse's usage error, the flag
named, exit status 2, caught before any work starts (counts, seeds, token ids, CPU lists,
numbers in a range). The flags several subcommands share are in :mod:`edgespec.arguments`;
how a client reaches a server (its address, CA file, certificate name) in
:mod:`edgespec.server_access_types`; output paths in :mod:`edgespec.output_paths`."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

from edgespec.core.wire_limits import SEED_LIMIT, UINT32_LIMIT


def positive_int(text: str) -> int:
    """An integer >= 1 (``--workers``, ``--threads``)."""
    return _int_at_least(text, 1)


def int_at_most(limit: int, why: str = "", minimum: int = 1) -> Callable[[str], int]:
    """An argparse type: an integer in ``[minimum, limit]``; over it, the message gives the
    limit, then ``why`` (e.g. ``" (each client is a process)"``)."""

    def parse(text: str) -> int:
        value = _int_at_least(text, minimum)
        if value > limit:
            raise argparse.ArgumentTypeError(f"must be <= {limit:,}{why}, got {value}")
        return value

    return parse


MAX_REPETITIONS = 1_000
"""The most repetitions a ``--runs``, ``--warmup`` (``edgespec profile``, ``calibrate``) or
``--repeats`` (``bench prefix``) flag asks for: each is one more pass of every measured
configuration, so a mistyped count (10**9) would run for days; 1,000 is far past where a
median or minimum stops changing."""

repetitions = int_at_most(MAX_REPETITIONS, " (passes per measurement)")
"""``--runs``, ``--repeats``: an integer in ``[1, MAX_REPETITIONS]``."""

warmup_repetitions = int_at_most(MAX_REPETITIONS, " (passes per measurement)", minimum=0)
"""``--warmup``: an integer in ``[0, MAX_REPETITIONS]``."""

MAX_THREADS = 256
"""The most torch intra-op threads a ``--threads`` flag asks for: threads beyond the CPUs
only slow torch down (1,024 on 2 cores: 9x slower), and 100,000 hang it."""

torch_threads = int_at_most(MAX_THREADS)
"""``--threads``: an integer in ``[1, MAX_THREADS]``."""


MAX_SYNTHETIC_LAYERS = 32
"""The most ``--synthetic-layers`` (``bench serve``, ``bench prefix``; default 12): with
:data:`MAX_SYNTHETIC_HIDDEN`, the largest synthetic target has about 1.2 B parameters,
4.9 GB in fp32 (held by the bench, and by ``bench serve``'s server once more, after a copy
on disk), already over 4 times gemma3-270m; 64 layers of hidden 8192 would be 155 GB."""

MAX_SYNTHETIC_HIDDEN = 2048
"""The largest ``--synthetic-hidden`` (default 512): see :data:`MAX_SYNTHETIC_LAYERS`
(a layer's weights grow with its square: 9 × hidden² parameters)."""

synthetic_layers = int_at_most(MAX_SYNTHETIC_LAYERS, " (the synthetic target is held in memory)")
"""``--synthetic-layers``: an integer in ``[1, MAX_SYNTHETIC_LAYERS]``."""


def synthetic_hidden(text: str) -> int:
    """``--synthetic-hidden``: an integer in ``[8, MAX_SYNTHETIC_HIDDEN]``, a multiple of 8
    (:func:`edgespec.runtime.testing.synthetic_target` has 4 attention heads, whose size
    rotary embeddings need even)."""
    value = int_at_most(MAX_SYNTHETIC_HIDDEN, " (the synthetic target is held in memory)")(text)
    if value % 8:
        raise argparse.ArgumentTypeError(
            f"must be a multiple of 8 (4 attention heads of an even size), got {value}"
        )
    return value


def non_negative_int(text: str) -> int:
    """An integer >= 0 (``--warmup``)."""
    return _int_at_least(text, 0)


def seed_int(text: str) -> int:
    """A seed: an integer ``0 <= seed < 2**63`` (:data:`~edgespec.core.wire_limits.SEED_LIMIT`)."""
    value = _int(text)
    if not 0 <= value < SEED_LIMIT:
        raise argparse.ArgumentTypeError(f"must be in [0, 2**63), got {value}")
    return value


def _int_at_least(text: str, minimum: int) -> int:
    value = _int(text)
    if value < minimum:
        raise argparse.ArgumentTypeError(f"must be >= {minimum}, got {value}")
    return value


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None


def logit_bias_pairs(text: str) -> tuple[tuple[int, float], ...]:
    """``--logit-bias``: comma-separated ``ID:BIAS`` pairs (``506:-100,107:2.5``), each id an
    integer >= 0 and each bias a number; their ranges (each token once, biases in
    [-100, 100], at most 300) are checked with the rest of the sampling."""
    pairs = []
    for item in text.split(","):
        token, sep, bias = item.partition(":")
        try:
            pair = (int(token), float(bias))
        except ValueError:
            sep = ""
        if not sep or pair[0] < 0:
            raise argparse.ArgumentTypeError(
                f"expected comma-separated ID:BIAS pairs (a token id >= 0, a number), got "
                f"{item!r} in {text!r}"
            )
        pairs.append(pair)
    return tuple(pairs)


def token_ids(text: str) -> tuple[int, ...]:
    """``--prompt-ids``: comma-separated token ids, each an integer in ``[0, 2**32)`` (the
    wire carries them as uint32; whether each is in the target's vocabulary, the server
    checks)."""
    try:
        ids = tuple(int(t) for t in text.split(","))
    except ValueError:
        ids = ()
    if not ids or min(ids) < 0:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated token ids (integers >= 0), got {text!r}"
        )
    if max(ids) >= UINT32_LIMIT:
        position = next(i for i, t in enumerate(ids) if t >= UINT32_LIMIT)
        raise argparse.ArgumentTypeError(
            f"token {position} (id {ids[position]}) is over 2**32 - 1, the largest id the "
            "wire carries"
        )
    return ids


def cpu_list(text: str) -> tuple[int, ...]:
    """``--cpus``: CPU numbers as ``0``, ``0,2`` or ``0-3`` (a comma list of numbers and
    ranges), each one this process may run on."""
    import os

    cpus: set[int] = set()
    try:
        for part in text.split(","):
            first, _, last = part.strip().partition("-")
            cpus.update(range(int(first), int(last or first) + 1))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected CPU numbers like 0 or 0,2 or 0-3, got {text!r}"
        ) from None
    allowed = os.sched_getaffinity(0)
    outside = sorted(cpus - allowed)
    if not cpus or outside:
        raise argparse.ArgumentTypeError(
            f"CPUs {outside or text!r} are not among this process's CPUs {sorted(allowed)}"
        )
    return tuple(sorted(cpus))


def positive_float(text: str) -> float:
    """A finite float > 0 (``--lr``; ``inf`` and ``nan`` are refused)."""
    value = _finite_float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {value:g}")
    return value


FLOAT32_MAX = 3.4028234663852886e38
"""The largest float32: an optimiser's settings are its tensors' (torch's Adam raised a
traceback on a larger ``--lr``)."""


def optimiser_rate(text: str) -> float:
    """``--lr``: a finite float > 0 that a float32 holds."""
    return _float32(positive_float(text))


def optimiser_decay(text: str) -> float:
    """``--weight-decay``: a finite float >= 0 that a float32 holds."""
    return _float32(non_negative_float(text))


def _float32(value: float) -> float:
    if value > FLOAT32_MAX:
        raise argparse.ArgumentTypeError(
            f"must be <= {FLOAT32_MAX:.4g} (a float32, as the optimiser holds it), got {value:g}"
        )
    return value


def seconds_at_most(limit: float) -> Callable[[str], float]:
    """An argparse type: a finite number of seconds > 0, at most ``limit``."""

    def parse(text: str) -> float:
        value = positive_float(text)
        if value > limit:
            raise argparse.ArgumentTypeError(f"must be <= {limit:,} s, got {value:g}")
        return value

    return parse


def non_negative_float(text: str) -> float:
    """A finite float >= 0 (``--weight-decay``; ``inf`` and ``nan`` are refused)."""
    value = _finite_float(text)
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {value:g}")
    return value


def _finite_float(text: str) -> float:
    """A number that is not ``nan``, ``inf`` or one too large for a float (``1e999``)."""
    value = _float(text)
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    return value


def open_fraction(text: str) -> float:
    """A share strictly between 0 and 1 (``--holdout``)."""
    value = _float(text)
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1 (exclusive), got {value:g}")
    return value


def _float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None


def text_problem(text: str) -> str | None:
    """Why ``text`` is no valid Unicode text (``None``: it is): a command line or input line
    that was not UTF-8 reaches Python with each bad byte as a lone surrogate (U+DC80..
    U+DCFF, ``surrogateescape``), which a tokenizer refuses with a TypeError."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        code = ord(text[exc.start])
        what = f"byte 0x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"U+{code:04X}"
        return f"is not valid UTF-8 text ({what} at character {exc.start})"
    return None


def utf8_text(text: str) -> str:
    """Text a tokenizer can read (``--prompt``, ``--system``): :func:`text_problem`."""
    if (problem := text_problem(text)) is not None:
        raise argparse.ArgumentTypeError(problem)
    return text
