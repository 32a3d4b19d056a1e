"""Where the user gave a config field, so that its error says so: a field a YAML file
gives starts with ``file:line`` (:func:`located_in`), one a command's flag set names the
flag instead of the field (:func:`named_by_flags`); an error at a field a ``--set`` or
scenario override set, or at one nobody gave, keeps the field alone."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from edgespec.config.errors import (
    ConfigError,
    ConfigFileError,
    LocatedConfigError,
    OverrideError,
)
from edgespec.config.files import YamlFile, read_yaml_file
from edgespec.config.overrides import key_path

_SEGMENT = re.compile(r"\[(\d+)\]|([^.\[\]]+)")


def field_segments(path: str) -> list[str | int]:
    """A config error's field path as keys and list indices: ``a.b[0].c`` → a, b, 0, c."""
    return [int(index) if index else key for index, key in _SEGMENT.findall(path)]


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
def located_in(file: YamlFile | Path, overrides: Sequence[str] = ()) -> Iterator[None]:
    """A config field's error raised inside, at a field ``file`` gives and no override
    sets, raised again starting with ``file:line`` (:class:`LocatedConfigError`): the line
    of the field's key, or of its nearest given parent's (a required field missing). The
    lines are those of the file as it was read (:func:`~edgespec.config.read_yaml_file`);
    a :class:`~pathlib.Path` is read when an error needs its lines (an unreadable one:
    the field alone)."""
    try:
        yield
    except (ConfigFileError, LocatedConfigError, OverrideError):  # not at a field
        raise
    except ConfigError as exc:
        if exc.path == "<root>" or _overridden(exc.path, overrides):
            raise
        try:
            read = file if isinstance(file, YamlFile) else read_yaml_file(file)
        except ConfigError:  # the file changed since it was read: the field alone
            raise exc from None
        line = read.lines.line(field_segments(exc.path))
        if line is None:
            raise
        raise LocatedConfigError(f"{read.path}:{line}", exc.path, exc.message) from None


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
