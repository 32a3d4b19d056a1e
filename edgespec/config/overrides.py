"""``key.path=value`` overrides: parsed as YAML values and applied to a config mapping
(a deep copy; a numeric segment indexes a list), and written from CLI flags."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from edgespec.config.errors import ConfigError, OverrideError
from edgespec.config.yaml_text import MAX_DEPTH, dump_yaml, load_yaml


def key_path(text: str, key: str, what: str = "override") -> list[str]:
    """``key`` (stripped) split at dots; an empty key or segment, or more than
    :data:`~edgespec.config.yaml_text.MAX_DEPTH` segments, is an OverrideError."""
    keys = key.strip().split(".")
    if any(not part.strip() for part in keys):
        problem = "empty key segment" if key.strip() else "empty key"
        raise OverrideError(shown(text), problem, what)
    if len(keys) > MAX_DEPTH:
        raise OverrideError(shown(text), f"key path deeper than {MAX_DEPTH} levels", what)
    return keys


def shown(text: str, limit: int = 80) -> str:
    """``text`` as an error quotes it: whole, or its start when longer than ``limit``."""
    return text if len(text) <= limit else f"{text[: limit - 3]}... ({len(text)} characters)"


def value_text(value: Any) -> str:
    """``value`` as an override types it: YAML flow text on one line, which
    :func:`parse_override` reads back as ``value``: ``null``, ``true``, ``2.5``, ``fcfs``,
    ``'1'`` (a string that would read as another value, quoted), ``[1, 2]``, ``{k: 1}``."""
    dumped = dump_yaml(value, default_flow_style=True, width=math.inf, allow_unicode=True)
    return dumped.removesuffix("\n...\n").strip()


def parse_override(text: str) -> tuple[list[str], Any]:
    """``servers.count=4`` → (['servers', 'count'], 4). Values are parsed as YAML
    (:func:`~edgespec.config.yaml_text.load_yaml`, nested under the key path); a value that
    does not parse is an OverrideError quoting the override as typed."""
    key, sep, raw = text.partition("=")
    if not sep:
        raise OverrideError(shown(text), "must look like key.path=value")
    keys = key_path(text, key)
    try:
        value = load_yaml(raw, outer_depth=len(keys)) if raw.strip() else ""
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise OverrideError(shown(text), f"cannot parse the value: {problem}") from exc
    return keys, value


def check_repeats(overrides: Sequence[str]) -> None:
    """Refuse a key that one command's overrides set twice (the earlier value would be
    silently lost), and a section given whole after an override inside it (which it would
    replace). A field after its whole section refines it (``workload={...}
    workload.rate_per_s=3``): that order is kept. An OverrideError quoting the later one."""
    given: dict[tuple[str, ...], str] = {}  # every key and key prefix → its first override
    for text in overrides:
        keys = tuple(key_path(text, text.partition("=")[0]))
        earlier = given.get(keys)
        if earlier is not None:
            name, first = shown(".".join(keys)), shown(earlier)
            if tuple(key_path(earlier, earlier.partition("=")[0])) == keys:
                problem = f"{name} is given twice (first as {first!r}); give it once"
            else:
                problem = (
                    f"{name} given whole would replace the earlier {first!r} inside it; "
                    f"give {name} first"
                )
            raise OverrideError(shown(text), problem)
        for end in range(1, len(keys) + 1):
            given.setdefault(keys[:end], text)


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
