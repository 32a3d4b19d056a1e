"""Config errors: each names the offending field by its full path (``servers[0].count``),
or the file and line of a data file's bad record, or the override text at fault."""

from __future__ import annotations

from typing import Any

from edgespec.errors import UserInputError


def yaml_word(value: object) -> str | None:
    """YAML's own word for ``None``, ``True`` or ``False`` (``null``, ``true``, ``false``:
    as the user wrote them; a field left empty is null too); ``None`` for any other value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return None


def as_written(value: object) -> str:
    """A value from a YAML or JSON file as an error quotes it: ``null``, ``true`` and
    ``false`` as the file writes them (:func:`yaml_word`), any other as Python's ``repr``
    (``'abc'``, ``2.5``, ``[1, 2]``)."""
    return yaml_word(value) or repr(value)


def describe_value(value: object) -> str:
    """A given value as an error quotes it: ``'abc' (str)``, ``2.5 (float)``; ``null``,
    ``true`` and ``false`` as YAML writes them (:func:`yaml_word`), not as Python's
    ``None (NoneType)`` or ``True (bool)``. Config fields' and policy parameters' errors
    alike."""
    word = yaml_word(value)
    return f"{value!r} ({type(value).__name__})" if word is None else word


class ConfigError(UserInputError, ValueError):
    """A config value that is missing, unknown or of the wrong type or range.
    ``flag_message``: the message in a command's terms (other fields named by their
    flags), shown instead when a flag set the field (:func:`edgespec.config.named_by_flags`);
    ``None``: ``message`` reads the same either way."""

    flag_message: str | None = None

    def __init__(self, path: str, message: str, *, flag_message: str | None = None) -> None:
        self.path = path or "<root>"
        self.message = message  # what is wrong, without the field
        self.flag_message = flag_message
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


def applies_only(
    where: str, value: object, default: object, to: str, actual: str, remedy: str = ""
) -> None:
    """A field its kind does not use must keep its default ``default``: a ``ConfigError``
    at ``where`` otherwise, e.g. ``applies only to kind: poisson (kind is closed_loop)``
    (``to`` = ``"kind: poisson"``, ``actual`` = ``"kind is closed_loop"``), then
    ``; remedy`` when one is given (what to do)."""
    if value != default:  # NaN is never the default
        said = f"applies only to {to} ({actual})"
        raise ConfigError(where, f"{said}; {remedy}" if remedy else said)


class ConfigFileError(ConfigError):
    """A config file that is missing or not readable as what it should hold; the message
    starts with the file (and line), not with a config field."""

    def __init__(self, where: str, message: str) -> None:
        self.path, self.message = where, message
        UserInputError.__init__(self, f"{where}: {message}")


class LocatedConfigError(ConfigError):
    """A config field's error with where the user gave that field: ``file:line: config
    field 'path': message`` for a file (:func:`edgespec.config.locate.located_in`),
    ``--flag: message`` for a flag, whose name the user typed instead of the field's
    (``named_field=False``, :func:`edgespec.config.locate.named_by_flags`)."""

    def __init__(self, where: str, path: str, message: str, named_field: bool = True) -> None:
        self.path, self.message, self.where = path, message, where
        field = f"config field '{path}': " if named_field else ""
        if not named_field and message.startswith(f"{where} "):  # it names the flag itself
            UserInputError.__init__(self, message)
        else:
            UserInputError.__init__(self, f"{where}: {field}{message}")


def at_field(exc: ConfigError, path: str, source: str | None = None) -> ConfigError:
    """``exc``, raised loading what the config field ``path`` names (a preset, a profile
    file), reported at ``path``: a file's error (:class:`ConfigFileError`: missing, not
    YAML) keeps its file and line; an error at a field of ``source`` (the file or preset
    name ``path`` gave) keeps that field (``FILE.a_s: required field is missing``); another
    field's error keeps its message, not its field (the loader's own name for it, e.g.
    ``hardware``)."""
    if isinstance(exc, ConfigFileError):
        return ConfigError(path, str(exc))
    if source is not None and exc.path.startswith(f"{source}."):
        return ConfigError(path, f"{exc.path}: {exc.message}")
    return ConfigError(path, exc.message)


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


def in_context(exc: ConfigError, context: str) -> ConfigError:
    """``exc`` with ``context``, which of a command's runs it is (``at hi=2000``, ``at sweep
    point 3 of 4 (seed=2)``), between its field (or file) and its message: ``config field
    'seed': at hi=2000: must be >= 0, got -1``. A located error (it names a line), an
    override's and a record's are returned as they are."""
    if isinstance(exc, LocatedConfigError | OverrideError | RecordError):
        return exc
    if isinstance(exc, ConfigFileError):
        return ConfigFileError(exc.path, f"{context}: {exc.message}")
    flag = None if exc.flag_message is None else f"{context}: {exc.flag_message}"
    return ConfigError(exc.path, f"{context}: {exc.message}", flag_message=flag)
