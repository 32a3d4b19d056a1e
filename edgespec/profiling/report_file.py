"""A profile's ``NAME-report.json`` read back for ``edgespec profile --residuals``: read
bounded (:data:`MAX_REPORT_BYTES`) and checked, field by field, before anything uses it;
what is wrong said in one line naming the flag, the file and the field."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any, TypeGuard

from edgespec.config import ConfigFileError, read_text
from edgespec.errors import UserInputError
from edgespec.output_paths import shown_names
from edgespec.profiling.fit import WISP_TERMS

SAMPLES_FORMAT = "edgespec-profile-samples"
"""The ``format`` of a profile's samples file (:mod:`edgespec.profiling.samples`)."""

MAX_REPORT_BYTES = 128 * 2**20
"""The largest report ``--residuals`` reads (128 MiB), found reading one byte past it: one
of the full grid at the default 3 runs is about 0.16 MB (504 samples of ~320 bytes as
``edgespec profile`` writes them, 658 at most), at the most ``--runs`` (1,000) about 55 MB
with the drafter's samples; the cap is over twice that."""

MAX_KEYS_SHOWN = 4
"""How many of a JSON object's keys the refusal of a file that is no report names."""


def read_report(path: Path) -> dict[str, Any]:
    """The ``NAME-report.json`` at ``path``, checked: a JSON object with the Eq. 19 fit's
    coefficients (``wisp``) and its samples (:func:`check_sample`); otherwise a
    :class:`UserInputError` naming the flag, the file and what is wrong."""
    where = f"--residuals {path}"
    if path.is_dir():
        raise UserInputError(f"{where}: a folder; give a profile's NAME-report.json")
    if not path.exists():
        raise UserInputError(f"{where}: no such file")
    try:  # at most MAX_REPORT_BYTES + 1 bytes read; a device or pipe is refused
        report = json.loads(read_text(path, "profile report", MAX_REPORT_BYTES))
    except ConfigFileError as exc:
        raise UserInputError(f"{where}: {exc.message}") from None
    except json.JSONDecodeError as exc:
        raise UserInputError(f"{where}:{exc.lineno}: not valid JSON ({exc.msg})") from exc
    except RecursionError:
        raise UserInputError(f"{where}: not valid JSON (nested too deeply)") from None
    except ValueError:  # an integer of more digits than Python converts
        digits = f"{sys.get_int_max_str_digits():,}"
        raise UserInputError(
            f"{where}: not valid JSON (an integer of over {digits} digits)"
        ) from None
    if not isinstance(report, dict):
        raise UserInputError(f"{where}: a JSON {type(report).__name__}, not a profile report")
    if "wisp" not in report:
        raise UserInputError(
            f"{where}: {_what_it_is(report)}; give the NAME-report.json that edgespec "
            "profile writes (its 'wisp' entry holds the Eq. 19 fit)"
        )
    coefficients = report["wisp"].get("coefficients") if isinstance(report["wisp"], dict) else None
    if not isinstance(coefficients, dict):
        raise UserInputError(f"{where}: 'wisp' has no 'coefficients' object")
    for term in WISP_TERMS:
        if not _is_number(coefficients.get(term)):
            got = coefficients.get(term, "missing")
            raise UserInputError(f"{where}: wisp.coefficients.{term} is {got!r}, not a number")
    samples = report.get("samples")
    if not isinstance(samples, list) or not samples:
        got = "missing" if samples is None else "empty" if samples == [] else "not a list"
        raise UserInputError(f"{where}: 'samples' is {got}; it lists the report's timed batches")
    for index, sample in enumerate(samples):
        problem = check_sample(sample)
        if problem is not None:
            raise UserInputError(f"{where}: samples[{index}]: {problem}")
    return report


def _what_it_is(document: dict[str, Any]) -> str:
    """A JSON object that is not a profile report, said plainly: a samples file (timed runs,
    no fit), else the object by its first keys (each cut to 40 characters)."""
    if document.get("format") == SAMPLES_FORMAT:
        return "a samples file: timed runs, no fit"
    if not document:
        return "an empty JSON object, not a profile report"
    keys = shown_names([repr(key[:40]) for key in document], MAX_KEYS_SHOWN)
    return f"a JSON object with keys {keys}, not a profile report"


def _is_number(value: object) -> TypeGuard[float]:
    """A finite JSON number (not a bool)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return math.isfinite(value)


def _is_entry(entry: object) -> bool:
    """``[L_new >= 1, L_cached >= 0]``, integers."""
    if not isinstance(entry, list) or len(entry) != 2:
        return False
    new, cached = entry
    return _is_int(new) and _is_int(cached) and new >= 1 and cached >= 0


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def check_sample(sample: object) -> str | None:
    """What is wrong with one report sample, or None: an object with an integer ``config``,
    string ``category``, ``split`` ``train`` or ``test``, ``entries`` a non-empty list of
    ``[L_new >= 1, L_cached >= 0]`` integer pairs and ``time_s`` > 0."""
    if not isinstance(sample, dict):
        return f"a JSON {type(sample).__name__}, not an object"
    if not _is_int(sample.get("config")):
        return f"config is {sample.get('config', 'missing')!r}, not an integer"
    if not isinstance(sample.get("category"), str):
        return f"category is {sample.get('category', 'missing')!r}, not a string"
    if sample.get("split") not in ("train", "test"):
        return f"split is {sample.get('split', 'missing')!r}, not 'train' or 'test'"
    entries = sample.get("entries")
    pairs = "the batch's [L_new >= 1, L_cached >= 0] pairs"
    if entries is None:
        return f"no entries ({pairs})"
    if not isinstance(entries, list) or not entries or not all(map(_is_entry, entries)):
        shown = repr(entries)
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        return f"entries is {shown}, not a non-empty list of {pairs}"
    time_s = sample.get("time_s")
    if not _is_number(time_s) or time_s <= 0:
        return f"time_s is {sample.get('time_s', 'missing')!r}, not a number > 0"
    return None
