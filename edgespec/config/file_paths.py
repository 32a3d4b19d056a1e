"""A scenario file's own file paths, read against the file's folder.

A relative path that a scenario file gives at a field naming a file (a cost-model profile,
a trace, a reject-share table, a policy's weights: :data:`FILE_FIELDS`) names a file
beside the scenario, wherever the command runs from, so a folder of scenarios and the
files they name can be moved or copied whole (a reproduction's run folder). A bundled name
(no folder and none of :data:`FILE_SUFFIXES`: ``a100-qwen3-32b``, ``gsm8k``) and an absolute
path are kept as written; so is a path that an override gives (``key=value`` on the command
line): the user typed it, and it is read against the current folder. Read, a scenario's
paths are absolute (:func:`anchored`), so the ``scenario.yaml`` a run folder keeps (the
overrides' paths anchored to the current folder) names the same files from anywhere.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path, PurePath
from typing import Any

EACH = "*"
"""A :data:`FILE_FIELDS` key standing for every item of a list."""

FILE_FIELDS: tuple[tuple[str, ...], ...] = (
    ("auto_topology", "devices", EACH, "cost_model", "profile"),
    ("auto_topology", "servers", EACH, "cost_model", "profile"),
    ("policies", "batching", "params", "profile"),
    ("policies", "window", "params", "file"),
    ("workload", "trace"),
    ("acceptance", "traces", EACH),
    ("verification", "table"),
    ("stop_predictor", "policy", "params", "file"),
    ("pipeline", "draft_profile"),
    ("pipeline", "verify_profile"),
    ("pipeline", "simulation", "traces", EACH),
    ("pipeline", "verifier", "policy", "params", "profile"),
    ("pipeline", "stop_predictor", "policy", "params", "file"),
)
"""The scenario fields (both systems; read alike by ``edgespec sim`` and ``edgespec
drafting-server --plan``) that name a file or a bundled name, as key paths."""

FILE_SUFFIXES = (".yaml", ".yml", ".json", ".jsonl")
"""The suffixes of the files those fields name; a bundled name has none."""


def names_a_relative_file(text: str) -> bool:
    """``text`` is a relative path to a file (it has a folder or a file's suffix), not a
    bundled name or an absolute path."""
    path = PurePath(text)
    named = len(path.parts) > 1 or path.suffix in FILE_SUFFIXES
    return named and not path.is_absolute()


def anchored(data: Mapping[str, Any], folder: Path) -> Mapping[str, Any]:
    """``data`` (a scenario's mapping) with each relative file path at a
    :data:`FILE_FIELDS` field read against ``folder`` (a scenario file's own, or the
    current one for paths the overrides gave), made absolute; the rest as given (``data``
    itself is not changed)."""
    absolute = folder.resolve()
    for keys in FILE_FIELDS:
        data = _at(data, keys, absolute)
    return data


def _at(node: Any, keys: Sequence[str], folder: Path) -> Any:
    """``node`` with the value at ``keys`` anchored; where the key path does not run
    (absent, or not a mapping or list where one is due), ``node`` as it is: validation
    says what is wrong with it."""
    if not keys:
        return str(folder / node) if isinstance(node, str) and names_a_relative_file(node) else node
    key, rest = keys[0], keys[1:]
    if key == EACH:
        return [_at(item, rest, folder) for item in node] if isinstance(node, list) else node
    if isinstance(node, Mapping) and key in node:
        return {**node, key: _at(node[key], rest, folder)}
    return node
