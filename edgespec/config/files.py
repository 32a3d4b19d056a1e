"""Config and data files: a YAML mapping and JSONL records, with errors naming the file
(and line). YAML text is read as :func:`.yaml_text.load_yaml` reads it (YAML 1.2 core
scalars, unique keys, bounded depth and size); a file's text must be UTF-8. All are
bounded while read: a YAML file at :data:`MAX_YAML_BYTES`, a JSONL line at
:data:`MAX_JSONL_LINE_BYTES`, other text at :data:`MAX_TEXT_BYTES`."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from edgespec.config.errors import ConfigFileError, RecordError, yaml_word
from edgespec.config.overrides import shown
from edgespec.config.yaml_text import KeyLines, YamlRefused, load_yaml, load_yaml_lines

__all__ = [
    "MAX_JSONL_LINE_BYTES",
    "MAX_TEXT_BYTES",
    "MAX_YAML_BYTES",
    "YamlFile",
    "load_yaml",
    "read_jsonl",
    "read_text",
    "read_yaml",
    "read_yaml_file",
]

MAX_YAML_BYTES = 64 * 2**20
"""The largest YAML file :func:`read_yaml` reads (64 MiB): the ones edgespec ships and
writes (scenarios, presets, profiles, reproduction jobs) are a few kB; a larger file is
refused after reading at most one byte more, never read whole."""

MAX_TEXT_BYTES = 256 * 2**20
"""The largest file :func:`read_text` reads unless its caller says otherwise (256 MiB):
the files read through it (reject-share and agreement tables, latency samples, WC-DNN,
stop-predictor and WISV decision-head weights) are at most a few MB (the bundled WC-DNN,
width 64: 354 kB; a WC-DNN file grows with the square of ``--width``, about 90 MB at width
1024; a WISV head at width 1024 about 10 MB); a larger file is refused after reading at
most one byte more, never read whole."""

MAX_JSONL_LINE_BYTES = 64 * 2**20
"""The longest line :func:`read_jsonl` reads (64 MiB, its ``\\n`` not counted): a
trace record is a few kB; a longer line is refused after reading at most one byte more."""


def _check_file(file: Path, what: str) -> None:
    """A ConfigFileError unless ``file`` is a file: ``"<what> not found"`` or, for a
    folder, ``"is a directory, not <what>"``; for a device, pipe or socket (``/dev/zero``
    never ends), ``"is not a regular file (...)"``."""
    if file.is_dir():
        raise ConfigFileError(str(file), f"is a directory, not {_a(what)}")
    if file.exists() and not file.is_file():
        raise ConfigFileError(str(file), "is not a regular file (a device, pipe or socket)")
    if not file.is_file():
        raise ConfigFileError(str(file), f"{what} not found")


def _a(what: str) -> str:
    """``what`` with its article: ``a file``, ``an agreement table``."""
    if what.startswith(("a ", "an ")):
        return what
    return f"{'an' if what[:1].lower() in ('a', 'e', 'i', 'o', 'u') else 'a'} {what}"


def _decoded(file: Path, data: bytes, offset: int = 0) -> str:
    """``data`` (found at byte ``offset`` of ``file``) as UTF-8 text, or a ConfigFileError
    naming the first byte that is not."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        byte = f"byte 0x{data[exc.start]:02x} at offset {offset + exc.start}"
        raise ConfigFileError(str(file), f"not UTF-8 text ({byte})") from None


def read_text(path: str | Path, what: str = "file", max_bytes: int | None = None) -> str:
    """The UTF-8 text of file ``path``; a ConfigFileError when it is missing, a folder, not
    UTF-8 (``"<what> not found"``) or larger than ``max_bytes`` (:data:`MAX_TEXT_BYTES`
    when ``None``), found reading one byte past the limit."""
    file = Path(path)
    _check_file(file, what)
    limit = MAX_TEXT_BYTES if max_bytes is None else max_bytes
    return _decoded(file, _read_at_most(file, limit, _a(what)))


def _read_at_most(file: Path, limit: int, what: str) -> bytes:
    """The bytes of ``file``, read at most ``limit + 1`` of them: a ConfigFileError when
    there are more than ``limit`` (``what`` is the kind of file, for the message)."""
    with file.open("rb") as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise ConfigFileError(str(file), f"larger than {_size(limit)}, the limit for {what}")
    return data


def _size(limit: int) -> str:
    """``limit`` bytes in words: ``64 MiB`` for whole MiB, else ``10 bytes``."""
    return f"{limit // 2**20} MiB" if limit and limit % 2**20 == 0 else f"{limit:,} bytes"


@dataclass(frozen=True, slots=True)
class YamlFile:
    """A YAML file as read once: its mapping, and the line that gives each of its keys
    (what :func:`edgespec.config.located_in` names an error's field by)."""

    path: Path
    data: dict[str, Any]
    lines: KeyLines


def read_yaml(path: str | Path) -> dict[str, Any]:
    """Read a YAML mapping, with errors that name the file; a file over
    :data:`MAX_YAML_BYTES` is refused."""
    return read_yaml_file(path).data


def read_yaml_file(path: str | Path) -> YamlFile:
    """Read a YAML mapping as :func:`read_yaml` does, keeping where it gives each key."""
    file = Path(path)
    _check_file(file, "file")
    text = _decoded(file, _read_at_most(file, MAX_YAML_BYTES, "a YAML file"))
    try:
        data, lines = load_yaml_lines(text)
    except yaml.YAMLError as exc:
        raise ConfigFileError(*_yaml_problem(file, exc)) from exc
    if data is None:
        return YamlFile(file, {}, lines)
    if not isinstance(data, dict):
        got = yaml_word(data) or type(data).__name__  # `true` as written, not bool
        raise ConfigFileError(str(file), f"top level must be a mapping, got {got}")
    return YamlFile(file, data, lines)


def _yaml_problem(file: Path, exc: yaml.YAMLError) -> tuple[str, str]:
    """``(file:line:column, what is wrong)`` for a YAML syntax error, on one line."""
    mark = getattr(exc, "problem_mark", None)
    if not isinstance(exc, yaml.MarkedYAMLError) or mark is None:
        return str(file), f"invalid YAML: {' '.join(str(exc).split())}"
    where = f"{file}:{mark.line + 1}:{mark.column + 1}"
    if isinstance(exc, YamlRefused):
        return where, str(exc.problem)
    problem = f"invalid YAML: {exc.problem}"
    if exc.context is not None and exc.context_mark is not None:
        start = exc.context_mark
        problem += f" ({exc.context} at line {start.line + 1}, column {start.column + 1})"
    return where, problem


class DuplicateKeyError(ValueError):
    """A JSON object names a key twice (:func:`read_jsonl` refuses it, as YAML does)."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json.loads``' object hook: the object, unless a key comes twice."""
    obj = dict(pairs)
    if len(obj) < len(pairs):
        keys = [key for key, _ in pairs]
        twice = next(key for i, key in enumerate(keys) if key in keys[:i])
        raise DuplicateKeyError(f"duplicate key {shown(repr(twice), 40)} in a JSON object")
    return obj


def read_jsonl(path: str | Path, what: str = "file") -> Iterator[tuple[str, Any]]:
    """Yield ``(where, object)`` for each non-blank line of a JSONL file, ``where`` being
    ``path:line`` for error messages (the path as given, so two ``trace.jsonl`` in two
    folders are told apart); a missing file, a folder, text that is not UTF-8, a line longer
    than :data:`MAX_JSONL_LINE_BYTES` or a bad line is a ConfigFileError. A first line
    that is not JSON says what the file is instead where that is plain
    (:func:`_not_json_lines`: a JSON document over several lines, YAML)."""
    file = Path(path)
    _check_file(file, what)
    limit, offset, first = MAX_JSONL_LINE_BYTES, 0, True
    with file.open("rb") as fh:
        for line_no, data in enumerate(iter(lambda: fh.readline(limit + 1), b""), start=1):
            where = f"{file}:{line_no}"
            if len(data) > limit and data[limit:] != b"\n":
                problem = f"line longer than {_size(limit)}, the limit for a JSONL line"
                raise ConfigFileError(where, problem)
            line = _decoded(file, data, offset)
            offset += len(data)
            if not line.strip():
                continue
            try:
                record = json.loads(line, object_pairs_hook=_unique_keys)
            except DuplicateKeyError as exc:
                raise RecordError(where, str(exc)) from exc
            except json.JSONDecodeError as exc:
                instead = _not_json_lines(file) if first else None
                raise RecordError(where, instead or f"invalid JSON: {exc.msg}") from exc
            except ValueError as exc:  # an integer of more digits than Python converts
                raise RecordError(where, f"invalid JSON: {str(exc).split(';')[0]}") from exc
            except RecursionError as exc:
                raise RecordError(where, "invalid JSON: nested too deeply") from exc
            first = False
            yield where, record


NOT_JSON_LINES = "not JSON Lines (one JSON object per line)"
_YAML_KEY = re.compile(r"""(?:[A-Za-z_][\w.-]*|"[^"\n]*"|'[^'\n]*')[ \t]*:(?:[ \t]|$)""")
"""A YAML mapping's ``key: value`` (or ``key:``) line; a JSON line never starts so."""


def _not_json_lines(file: Path) -> str | None:
    """What ``file``, whose first line is not JSON, is instead, when that is plain: one JSON
    document over several lines (a pretty-printed summary, a model's config.json: tried
    whole when at most :data:`MAX_JSONL_LINE_BYTES`, never read past one byte more), or YAML
    (its first line that is not blank, a ``#`` comment or ``---`` is ``key: value``);
    ``None`` for anything else, a JSONL file with a broken first line."""
    with file.open("rb") as fh:
        data = fh.read(MAX_JSONL_LINE_BYTES + 1)
    text = data.decode("utf-8", "replace")
    if len(data) <= MAX_JSONL_LINE_BYTES:
        try:
            document = json.loads(text)
        except (ValueError, RecursionError):  # not one JSON document either
            pass
        else:
            return f"a JSON document over several lines ({_looks_like(document)}), {NOT_JSON_LINES}"
    first = next((line for line in text[:65536].splitlines() if _yaml_content(line)), "")
    return f"YAML (lines of key: value), {NOT_JSON_LINES}" if _YAML_KEY.match(first) else None


def _yaml_content(line: str) -> bool:
    """Whether ``line`` of a YAML file says something: not blank, a comment or a marker."""
    return bool(line.strip()) and not line.startswith(("#", "---", "%YAML"))


def _looks_like(document: Any) -> str:
    """A JSON document over several lines (an object or a list) in a few words: ``an object
    with keys 'a', 'b'``, ``a list of 3 items``."""
    if isinstance(document, dict):
        keys = [shown(repr(key), 40) for key in document]
        more = f" and {len(keys) - 5} more" if len(keys) > 5 else ""
        return f"an object with keys {', '.join(keys[:5])}{more}" if keys else "an empty object"
    return f"a list of {len(document)} item{'' if len(document) == 1 else 's'}"
