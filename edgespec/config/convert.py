"""A mapping into a frozen config dataclass, by its type hints: every value converted and
checked against its field's type, an unknown field named with the closest known one, the
dataclass's own ``validate()`` run after construction."""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, NoReturn, TypeVar

from edgespec.config.errors import ConfigError, describe_value, yaml_word
from edgespec.config.files import read_yaml_file
from edgespec.config.locate import located_in
from edgespec.config.overrides import apply_overrides
from edgespec.config.spec import POLICY_KIND, PolicySpec
from edgespec.errors import did_you_mean

T = TypeVar("T")


def _join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def _convert(tp: Any, value: Any, path: str) -> Any:
    """``value`` as config type ``tp`` (at ``path`` for its errors)."""
    origin = typing.get_origin(tp)
    if tp is Any:
        return value
    if origin in (typing.Union, types.UnionType):
        return _convert_union(tp, value, path)
    if origin is Literal:
        if value not in typing.get_args(tp):
            given = yaml_word(value) or repr(value)
            raise ConfigError(path, f"must be one of {list(typing.get_args(tp))}, got {given}")
        return value
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return from_dict(tp, value, path)
    if origin in (tuple, Sequence) or tp is tuple:
        return _convert_sequence(tp, value, path)
    if origin in (dict, Mapping) or tp is dict:
        return _convert_mapping(tp, value, path)
    return _convert_scalar(tp, value, path)


def _convert_union(tp: Any, value: Any, path: str) -> Any:
    args = typing.get_args(tp)
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
    raise ConfigError(path, f"{describe_value(value)} matches none of {tp}")


def _convert_sequence(tp: Any, value: Any, path: str) -> tuple[Any, ...]:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise ConfigError(path, f"expected a list, got {describe_value(value)}")
    if origin is tuple and args and args[-1] is not Ellipsis:
        if len(args) != len(value):
            raise ConfigError(path, f"expected {len(args)} items, got {len(value)}")
        return tuple(
            _convert(a, v, _join(path, i)) for i, (a, v) in enumerate(zip(args, value, strict=True))
        )
    item_tp = args[0] if args else Any
    return tuple(_convert(item_tp, v, _join(path, i)) for i, v in enumerate(value))


def _convert_mapping(tp: Any, value: Any, path: str) -> Mapping[Any, Any]:
    if not isinstance(value, Mapping):
        raise ConfigError(path, f"expected a mapping, got {describe_value(value)}")
    args = typing.get_args(tp)
    key_tp, val_tp = args if args else (Any, Any)
    return types.MappingProxyType(
        {
            _convert(key_tp, k, path): _convert(val_tp, v, _join(path, str(k)))
            for k, v in value.items()
        }
    )


_SCALARS: dict[Any, tuple[str, Any]] = {
    bool: ("true/false", lambda v: isinstance(v, bool)),
    int: ("an integer", lambda v: isinstance(v, int) and not isinstance(v, bool)),
    float: ("a number", lambda v: isinstance(v, int | float) and not isinstance(v, bool)),
    str: ("a string", lambda v: isinstance(v, str)),
    Path: ("a path", lambda v: isinstance(v, str | Path)),
}
"""Each scalar config type: what a value must be, and the check (then converted by the
type itself: an int given for a float is that float, a string given for a path a Path)."""


def _convert_scalar(tp: Any, value: Any, path: str) -> Any:
    if tp not in _SCALARS:
        raise ConfigError(path, f"unsupported config type {tp}")
    expected, accepts = _SCALARS[tp]
    if not accepts(value):
        raise ConfigError(path, f"expected {expected}, got {describe_value(value)}")
    return tp(value) if tp in (float, Path) else value


@functools.cache
def _type_hints(cls: type) -> dict[str, Any]:
    """``cls``'s resolved field types (resolving them is most of a small config's checking:
    a sweep checks every point's scenario)."""
    return typing.get_type_hints(cls)


def from_dict(cls: type[T], data: Any, path: str = "", others: Sequence[str] = ()) -> T:
    """Build dataclass ``cls`` from a mapping, validating names, types and ranges;
    ``others``: keys valid there that another reader reads (named among the known ones
    when a key is unknown, and not read here)."""
    if not isinstance(data, Mapping):
        raise ConfigError(path, f"expected a mapping, got {describe_value(data)}")
    hints = _type_hints(typing.cast(type, cls))
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}  # type: ignore[arg-type]
    unknown = [key for key in data if key not in fields and key not in others]  # null: None
    if unknown:
        _refuse_unknown(path, unknown[0], sorted([*fields, *others]))  # the first given
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


def _refuse_unknown(path: str, key: object, known: list[str]) -> NoReturn:
    """Refuse the unknown field ``key`` at ``path``: named as written (a YAML key ``1`` is
    ``1``, not a list index), a key that is not a string said to be one where a field
    name is expected, a string ending with the closest known name."""
    if isinstance(key, str):
        raise ConfigError(
            _join(path, key), f"unknown field; known: {known}{did_you_mean(key, known)}"
        )
    raise ConfigError(
        _join(path, _key_text(key)),
        f"{_key_kind(key)} where a field name is expected; known: {known}",
    )


def _key_text(key: object) -> str:
    """A mapping key that is not a string as YAML writes it: ``1``, ``true``, ``null``."""
    return yaml_word(key) or str(key)


def _key_kind(key: object) -> str:
    """What a key that is not a string is: ``a number``, ``true/false``, ``null``, ..."""
    if isinstance(key, bool):
        return "true/false"
    if isinstance(key, int | float):
        return "a number"
    return "null" if key is None else f"a {type(key).__name__}"


def load_config(cls: type[T], path: str | Path | None = None, overrides: Sequence[str] = ()) -> T:
    """Load ``cls`` from an optional YAML file plus CLI overrides; defaults fill the rest,
    a policy given its params alone its default name too (:func:`default_policy_names`).
    An error at a field the file gives (and no override sets) starts with ``file:line``."""
    if path is None:
        return from_dict(cls, default_policy_names(cls, apply_overrides({}, overrides)))
    file = read_yaml_file(path)
    with located_in(file, overrides):
        return from_dict(cls, default_policy_names(cls, apply_overrides(file.data, overrides)))


def default_policy_names(
    cls: type,
    data: dict[str, Any],
    registered: Mapping[str, Iterable[str]] | None = None,
    path: str = "",
) -> dict[str, Any]:
    """``data`` (a mapping for dataclass ``cls``, at ``path``) with the default policy's
    name put in each policy field (a :class:`PolicySpec`) given without a name, in ``cls``
    and in its sections (``policies.window``): only its params (``window.params.gamma=3``)
    set the default policy's params. A policy field without a default (``None``: no
    policy runs) given only params is refused at the field: its name is required, and
    the policy kind its metadata names (:data:`~edgespec.config.spec.POLICY_KIND`) has
    the names ``registered`` lists for it (the policy registry's, by kind). ``data`` is
    changed in place (a caller's own copy) and returned."""
    hints = _type_hints(cls)
    for field in dataclasses.fields(cls):
        given, tp = data.get(field.name), _not_none(hints[field.name])
        if not isinstance(given, dict):
            continue
        where = _join(path, field.name)
        if tp is PolicySpec:
            _name_policy(where, field, given, registered or {})
        elif dataclasses.is_dataclass(tp) and isinstance(tp, type):
            default_policy_names(tp, given, registered, where)
    return data


def _name_policy(
    where: str,
    field: dataclasses.Field[Any],
    given: dict[str, Any],
    registered: Mapping[str, Iterable[str]],
) -> None:
    """Name the policy ``given`` (at ``where``) without a name: its field's default, or a
    refusal saying that the name is required. A key other than ``params`` beside it is
    left for :func:`from_dict` to name (``nmae``: did you mean ``name``)."""
    if "name" in given:
        return
    default = field.default
    if field.default_factory is not dataclasses.MISSING:
        default = field.default_factory()
    if isinstance(default, PolicySpec):
        given["name"] = default.name
        return
    if set(given) - {"params"}:
        return
    kind = field.metadata.get(POLICY_KIND)
    names = sorted(registered.get(kind, ())) if kind is not None else []
    what = "policy" if kind is None else f"{kind} policy"
    known = f"; known: {names}" if names else ""
    raise ConfigError(where, f"name is required: no {what} runs here by default{known}")


def field_type(cls: type, keys: Sequence[str]) -> Any:
    """The declared type of the field at override key path ``keys`` in dataclass ``cls``
    (a numeric segment an item of a tuple, any segment a value of a mapping; ``X | None``
    read as ``X``), or ``None`` where no type is declared there: an unknown field, a
    value typed ``Any`` (a policy's params)."""
    tp: Any = cls
    for key in keys:
        tp = _not_none(tp)
        origin, args = typing.get_origin(tp), typing.get_args(tp)
        if dataclasses.is_dataclass(tp) and isinstance(tp, type):
            names = {f.name for f in dataclasses.fields(tp) if f.init}
            tp = _type_hints(tp)[key] if key in names else None
        elif origin in (dict, Mapping) and args:
            tp = args[1]
        elif origin in (tuple, Sequence) and args and key.isascii() and key.isdigit():
            variadic = len(args) == 1 or args[-1] is Ellipsis
            tp = args[0] if variadic else (args[int(key)] if int(key) < len(args) else None)
        else:
            return None
        if tp is None or tp is Any:
            return None
    return _not_none(tp)


def _not_none(tp: Any) -> Any:
    """``X`` for ``X | None``; any other type as it is."""
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(options) == 1:
            return options[0]
    return tp


def type_text(tp: Any) -> str:
    """A config type as an error names it: ``float``, ``a list``, ``one of ['a', 'b']``."""
    origin = typing.get_origin(tp) or tp
    if dataclasses.is_dataclass(origin):
        return "a section"
    if origin in (tuple, Sequence):
        return "a list"
    if origin in (dict, Mapping):
        return "a mapping"
    if origin is Literal:
        return f"one of {list(typing.get_args(tp))}"
    return tp.__name__ if isinstance(tp, type) else str(tp).replace("typing.", "")
