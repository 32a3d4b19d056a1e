"""Where the user gave a config field, so that its error says so: a field a YAML file
gives starts with ``file:line`` (:func:`located_in`), one a command's flag set names the
flag instead of the field (:func:`named_by_flags`); an error at a field a ``--set`` or
scenario override set, or at one nobody gave, keeps the field alone."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from edgespec.config.errors import ConfigError, ConfigFileError, LocatedConfigError
from edgespec.config.files import MAX_YAML_BYTES, read_text
from edgespec.config.overrides import key_path

_SEGMENT = re.compile(r"\[(\d+)\]|([^.\[\]]+)")


def field_segments(path: str) -> list[str | int]:
    """A config error's field path as keys and list indices: ``a.b[0].c`` → a, b, 0, c."""
    return [int(index) if index else key for index, key in _SEGMENT.findall(path)]


def field_line(text: str, path: str) -> int | None:
    """The 1-based line of YAML ``text`` where field ``path`` (a :class:`ConfigError`'s)
    is given: its key's line, or its nearest given parent's when the field itself is not
    given (a required field missing); ``None`` when not even its first key is given, or
    when ``text`` is no YAML mapping."""
    try:
        node: Node | None = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return None
    line = None
    for segment in field_segments(path):
        if isinstance(node, MappingNode) and isinstance(segment, str):
            key, node = next(
                ((k, v) for k, v in node.value if isinstance(k, ScalarNode) and k.value == segment),
                (None, None),
            )
            if key is None:
                break
            line = key.start_mark.line + 1
        elif isinstance(node, SequenceNode) and isinstance(segment, int):
            if segment >= len(node.value):
                break
            node = node.value[segment]
            line = node.start_mark.line + 1
        else:
            break
    return line


def _overridden(path: str, overrides: Sequence[str]) -> bool:
    """Whether an override sets field ``path``, a field inside it or a section around it."""
    field = [str(segment) for segment in field_segments(path)]
    for override in overrides:
        keys = key_path(override, override.partition("=")[0])
        common = min(len(keys), len(field))
        if keys[:common] == field[:common]:
            return True
    return False


@contextmanager
def located_in(file: Path, overrides: Sequence[str] = ()) -> Iterator[None]:
    """A config field's error raised inside, at a field ``file`` gives and no override
    sets, raised again starting with ``file:line`` (:class:`LocatedConfigError`)."""
    try:
        yield
    except (ConfigFileError, LocatedConfigError):
        raise
    except ConfigError as exc:
        if exc.path == "<root>" or _overridden(exc.path, overrides):
            raise
        try:
            line = field_line(read_text(file, "YAML file", MAX_YAML_BYTES), exc.path)
        except ConfigError:  # the file changed since it was read: the field alone
            raise exc from None
        if line is None:
            raise
        raise LocatedConfigError(f"{file}:{line}", exc.path, exc.message) from None


@contextmanager
def named_by_flags(flags: Mapping[str, str]) -> Iterator[None]:
    """A config field's error raised inside, at a field a flag set or inside one
    (``flags``: override key → flag, ``{"batching.name": "--batching"}``), raised again
    naming the flag, not the field (:class:`LocatedConfigError`): the user typed the flag;
    its message is the error's ``flag_message`` where it has one (other fields named by
    their flags too)."""
    try:
        yield
    except (ConfigFileError, LocatedConfigError):
        raise
    except ConfigError as exc:
        field = [str(segment) for segment in field_segments(exc.path)]
        for key, flag in flags.items():
            keys = key.split(".")
            if field[: len(keys)] == keys:
                message = exc.message if exc.flag_message is None else exc.flag_message
                raise LocatedConfigError(flag, exc.path, message, named_field=False) from None
        raise
