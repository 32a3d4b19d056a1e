"""Config and data files: a YAML mapping and JSONL records, with errors naming the file
(and line); YAML text read the one way every config, override and sweep reads it
(:func:`load_yaml`).

PyYAML follows YAML 1.1, where a float needs a dot and a signed exponent: ``1e12``,
``20e6`` and ``1.0e12`` are strings there, and a config field that wants a number then
refuses what a user means as one. :func:`load_yaml` reads them as YAML 1.2 (and JSON, and
Python) do: a number with an exponent, with or without a dot or a sign, is a float.
Everything else is PyYAML's safe loading, unchanged."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from edgespec.config.errors import ConfigFileError, RecordError

_EXPONENT_FLOAT = re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$")


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader, with exponent floats resolved as floats (module docstring)."""


_Loader.add_implicit_resolver("tag:yaml.org,2002:float", _EXPONENT_FLOAT, list("-+0123456789"))


def load_yaml(text: str) -> Any:
    """The value of YAML ``text`` (safe loading; ``1e12`` is a float, module docstring)."""
    return yaml.load(text, Loader=_Loader)  # a SafeLoader: no arbitrary objects


def read_yaml(path: str | Path) -> dict[str, Any]:
    """Read a YAML mapping, with errors that name the file."""
    file = Path(path)
    if not file.is_file():
        raise ConfigFileError(str(file), "file not found")
    try:
        data = load_yaml(file.read_text())
    except yaml.YAMLError as exc:
        raise ConfigFileError(*_yaml_problem(file, exc)) from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigFileError(str(file), f"top level must be a mapping, got {type(data).__name__}")
    return data


def _yaml_problem(file: Path, exc: yaml.YAMLError) -> tuple[str, str]:
    """``(file:line:column, what is wrong)`` for a YAML syntax error, on one line."""
    mark = getattr(exc, "problem_mark", None)
    if not isinstance(exc, yaml.MarkedYAMLError) or mark is None:
        return str(file), f"invalid YAML: {' '.join(str(exc).split())}"
    where = f"{file}:{mark.line + 1}:{mark.column + 1}"
    problem = f"invalid YAML: {exc.problem}"
    if exc.context is not None and exc.context_mark is not None:
        start = exc.context_mark
        problem += f" ({exc.context} at line {start.line + 1}, column {start.column + 1})"
    return where, problem


def read_jsonl(path: str | Path, what: str = "file") -> Iterator[tuple[str, Any]]:
    """Yield ``(where, object)`` for each non-blank line of a JSONL file, ``where`` being
    ``name:line`` for error messages; a missing file or a bad line is a ConfigFileError."""
    file = Path(path)
    if not file.is_file():
        raise ConfigFileError(str(file), f"{what} not found")
    with file.open() as fh:
        for line_no, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            where = f"{file.name}:{line_no}"
            try:
                yield where, json.loads(line)
            except json.JSONDecodeError as exc:
                raise RecordError(where, f"invalid JSON: {exc.msg}") from exc
