"""Config loading: YAML (plus ``key.path=value`` overrides) into frozen dataclasses.

Validation happens once, here, and every error names the offending field by its full
path (``servers[0].count``); an unknown field's error ends with the closest known field
(``(did you mean 'count'?)``). Loaded configs are frozen: nothing mutates them at run time.
Config dataclasses may define ``validate(self) -> None`` for cross-field checks; it is
called after construction and its ``ValueError`` is reported against the section.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar

import yaml

from edgespec.errors import UserInputError, did_you_mean

T = TypeVar("T")


class ConfigError(UserInputError, ValueError):
    """A config value that is missing, unknown or of the wrong type or range."""

    def __init__(self, path: str, message: str) -> None:
        self.path = path or "<root>"
        self.message = message  # what is wrong, without the field
        super().__init__(f"config field '{self.path}': {message}")

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as it is (its ``__init__`` takes other arguments than ``args``), so one
        raised in a sweep's worker process reaches the command line whole."""
        return (_rebuilt, (type(self), self.args, dict(self.__dict__)))


def _rebuilt(cls: type[ConfigError], args: tuple[Any, ...], state: dict[str, Any]) -> ConfigError:
    error = cls.__new__(cls)
    error.args = args
    error.__dict__.update(state)
    return error


class ConfigFileError(ConfigError):
    """A config file that is missing or not readable as what it should hold; the message
    starts with the file (and line), not with a config field."""

    def __init__(self, where: str, message: str) -> None:
        self.path, self.message = where, message
        UserInputError.__init__(self, f"{where}: {message}")


def at_field(exc: ConfigError, path: str) -> ConfigError:
    """``exc``, raised loading what the config field ``path`` names (a preset, a profile
    file), reported at ``path``: a file's error (:class:`ConfigFileError`: missing, not
    YAML) keeps its file and line; a field's error keeps its message, not its field (the
    loader's own name for it, e.g. ``hardware``)."""
    return ConfigError(path, str(exc) if isinstance(exc, ConfigFileError) else exc.message)


class RecordError(ConfigFileError):
    """A bad record of a data file (a JSONL line): the message starts with ``file:line``,
    then the record's field when one is at fault; ``path`` is ``file:line.field``."""

    def __init__(self, where: str, message: str, field: str = "") -> None:
        super().__init__(f"{where}: {field}" if field else where, message)
        self.path = f"{where}.{field}" if field else where


class OverrideError(ConfigError):
    """A ``key.path=value`` text that is malformed (no ``=``, an empty key segment); the
    message quotes it whole, after what gave it (an override, ``--sweep``)."""

    def __init__(self, text: str, message: str, what: str = "override") -> None:
        self.path, self.message = text, message
        UserInputError.__init__(self, f"{what} {text!r}: {message}")


def key_path(text: str, key: str, what: str = "override") -> list[str]:
    """``key`` (stripped) split at dots; an empty key or segment is an OverrideError."""
    keys = key.strip().split(".")
    if any(not part.strip() for part in keys):
        raise OverrideError(text, "empty key segment" if key.strip() else "empty key", what)
    return keys


def _join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def _describe(value: object) -> str:
    return f"{value!r} ({type(value).__name__})"


def _convert(tp: Any, value: Any, path: str) -> Any:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if tp is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        errors = []
        options = [a for a in args if a is not type(None)]
        for option in options:
            try:
                return _convert(option, value, path)
            except ConfigError as exc:
                errors.append(exc)
        if len(options) == 1:  # Optional[X]: X's own error says what is wrong
            raise errors[0]
        raise ConfigError(path, f"{_describe(value)} matches none of {tp}")
    if origin is Literal:
        if value not in args:
            raise ConfigError(path, f"must be one of {list(args)}, got {value!r}")
        return value
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return from_dict(tp, value, path)
    if origin in (tuple, Sequence) or tp is tuple:
        if isinstance(value, str) or not isinstance(value, Sequence):
            raise ConfigError(path, f"expected a list, got {_describe(value)}")
        if origin is tuple and args and args[-1] is not Ellipsis:
            if len(args) != len(value):
                raise ConfigError(path, f"expected {len(args)} items, got {len(value)}")
            return tuple(
                _convert(a, v, _join(path, i))
                for i, (a, v) in enumerate(zip(args, value, strict=True))
            )
        item_tp = args[0] if args else Any
        return tuple(_convert(item_tp, v, _join(path, i)) for i, v in enumerate(value))
    if origin in (dict, Mapping) or tp is dict:
        if not isinstance(value, Mapping):
            raise ConfigError(path, f"expected a mapping, got {_describe(value)}")
        key_tp, val_tp = args if args else (Any, Any)
        return types.MappingProxyType(
            {
                _convert(key_tp, k, path): _convert(val_tp, v, _join(path, str(k)))
                for k, v in value.items()
            }
        )
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(path, f"expected true/false, got {_describe(value)}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(path, f"expected an integer, got {_describe(value)}")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ConfigError(path, f"expected a number, got {_describe(value)}")
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise ConfigError(path, f"expected a string, got {_describe(value)}")
        return value
    if tp is Path:
        if not isinstance(value, str | Path):
            raise ConfigError(path, f"expected a path, got {_describe(value)}")
        return Path(value)
    raise ConfigError(path, f"unsupported config type {tp}")


def from_dict(cls: type[T], data: Any, path: str = "") -> T:
    """Build dataclass ``cls`` from a mapping, validating names, types and ranges."""
    if not isinstance(data, Mapping):
        raise ConfigError(path, f"expected a mapping, got {_describe(data)}")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}  # type: ignore[arg-type]
    unknown = sorted(set(data) - set(fields))
    if unknown:
        hint = did_you_mean(str(unknown[0]), fields)
        raise ConfigError(_join(path, unknown[0]), f"unknown field; known: {sorted(fields)}{hint}")
    kwargs: dict[str, Any] = {}
    for name, field in fields.items():
        if name in data:
            kwargs[name] = _convert(hints[name], data[name], _join(path, name))
        elif field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
            raise ConfigError(_join(path, name), "required field is missing")
    try:
        obj = cls(**kwargs)
        validate = getattr(obj, "validate", None)
        if callable(validate):
            validate()
    except ConfigError:
        raise
    except ValueError as exc:
        raise ConfigError(path, str(exc)) from exc
    return obj


def parse_override(text: str) -> tuple[list[str], Any]:
    """``servers.count=4`` → (['servers', 'count'], 4). Values are parsed as YAML."""
    key, sep, raw = text.partition("=")
    if not sep:
        raise OverrideError(text, "must look like key.path=value")
    keys = key_path(text, key)
    try:
        value = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(key.strip(), f"cannot parse value {raw!r}: {problem}") from exc
    return keys, value


def apply_overrides(data: Mapping[str, Any], overrides: Sequence[str]) -> dict[str, Any]:
    """Return a deep copy of ``data`` with each ``key.path=value`` override applied.

    A numeric path segment indexes a list (``devices.0.count=50``); the item must exist.
    Missing mapping keys are created. An override that switches a policy (a mapping with
    ``name`` and ``params``, as a :class:`PolicySpec` is written) to another ``name`` drops
    the old policy's ``params``: the new one starts from its own defaults, plus whatever
    params the same overrides set for it, before or after its name.
    """
    result: dict[str, Any] = _deep_copy(data)
    applied: list[tuple[list[str], Any]] = []
    for text in overrides:
        keys, value = parse_override(text)
        spec = _at(result, keys[:-1]) if keys[-1] == "name" and len(keys) > 1 else None
        if isinstance(spec, dict) and "params" in spec and spec.get("name") != value:
            del spec["params"]
            params = [*keys[:-1], "params"]
            for earlier, earlier_value in applied:  # set for the new policy already
                if earlier[: len(params)] == params:
                    _set(result, earlier, earlier_value)
        _set(result, keys, value)
        applied.append((keys, value))
    return result


def _at(node: Any, keys: Sequence[str]) -> Any:
    """The value at ``keys`` (list items by index), or ``None`` where there is none."""
    for key in keys:
        if isinstance(node, list) and key.isascii() and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        elif isinstance(node, dict):
            node = node.get(key)
        else:
            return None
    return node


def _set(result: dict[str, Any], keys: Sequence[str], value: Any) -> None:
    node: Any = result
    for i, key in enumerate(keys):
        where = ".".join(keys[: i + 1])
        last = i == len(keys) - 1
        if isinstance(node, list):
            if not (key.isascii() and key.isdigit()) or int(key) >= len(node):
                raise ConfigError(where, f"list index must be 0..{len(node) - 1}, got {key!r}")
            if last:
                node[int(key)] = value
            else:
                node = node[int(key)]
        elif isinstance(node, dict):
            if last:
                node[key] = value
            else:
                if node.get(key) is None:
                    node[key] = {}
                node = node[key]
        else:
            raise ConfigError(where, "cannot override inside a value that is not a mapping or list")


def overrides_from_flags(values: Mapping[str, Any]) -> list[str]:
    """``key.path=value`` overrides for the CLI flags that were given (``None`` = not given).

    Values are JSON-encoded, which YAML parses back to the same value.
    """
    return [f"{key}={json.dumps(value)}" for key, value in values.items() if value is not None]


def _deep_copy(data: Any) -> Any:
    if isinstance(data, Mapping):
        return {k: _deep_copy(v) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [_deep_copy(v) for v in data]
    return data


def read_yaml(path: str | Path) -> dict[str, Any]:
    """Read a YAML mapping, with errors that name the file."""
    file = Path(path)
    if not file.is_file():
        raise ConfigFileError(str(file), "file not found")
    try:
        data = yaml.safe_load(file.read_text())
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


def load_config(cls: type[T], path: str | Path | None = None, overrides: Sequence[str] = ()) -> T:
    """Load ``cls`` from an optional YAML file plus CLI overrides; defaults fill the rest."""
    data = read_yaml(path) if path is not None else {}
    return from_dict(cls, apply_overrides(data, overrides))


# --- a config field shared by the simulator's scenarios and the runtime's configs
# (edgespec.runtime.server.config)


@dataclasses.dataclass(frozen=True, slots=True)
class PolicySpec:
    """A policy by registry name plus its keyword parameters."""

    name: str
    params: Mapping[str, Any] = dataclasses.field(
        default_factory=lambda: types.MappingProxyType({})
    )
