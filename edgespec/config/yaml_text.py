"""YAML text read the one way every config file, override and sweep reads it
(:func:`load_yaml`): PyYAML's safe loading with YAML 1.2 core-schema scalars, unique keys,
and bounds on what a text may make the loader build.

Scalars (plain, unquoted) resolve as YAML 1.2's core schema, not PyYAML's YAML 1.1: only
``true``/``false`` (any of ``true True TRUE``) are booleans (``yes``, ``no``, ``on``,
``off`` are strings); ``null``, ``~`` or nothing is null; an integer is decimal
(``017`` is 17), ``0o17`` octal or ``0x1F`` hex; a float has a dot or an exponent
(``1e3``, ``20e6``, ``.5``) or is ``.inf``/``.nan``; there is no sexagesimal (``1:30`` is a
string) and no timestamp (``2024-01-01`` is a string). Digits may be grouped with
underscores (``1_000``), as in Python. The ``<<`` merge key still merges.

Refused, each naming where in the text: a key given twice in one mapping; nesting deeper
than :data:`MAX_DEPTH` collections; more than :data:`MAX_NODES` nodes, an alias counted
as all it expands to (an alias bomb; a very long inline list too); aliases that refer to a
collection from inside it (a value that contains itself).

:func:`load_yaml_lines` also says where the text gives each key and list item
(:class:`KeyLines`), so that an error at a file's field can name its line."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

MAX_DEPTH = 100
"""How deep collections (mappings, lists) may nest, aliases expanded."""

MAX_NODES = 1_000_000
"""How many nodes (scalars, mappings, lists) a value may hold, aliases expanded."""

_DIGITS = r"[0-9](?:_?[0-9])*"
_CORE_SCALARS: list[tuple[str, str, list[str]]] = [
    ("null", r"~|null|Null|NULL|", ["~", "n", "N", ""]),
    ("bool", r"true|True|TRUE|false|False|FALSE", list("tTfF")),
    (
        "int",
        rf"[-+]?{_DIGITS}|0o[0-7](?:_?[0-7])*|0x[0-9a-fA-F](?:_?[0-9a-fA-F])*",
        list("-+0123456789"),
    ),
    (
        "float",
        rf"[-+]?(?:\.{_DIGITS}|{_DIGITS}(?:\.(?:{_DIGITS})?)?)(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN)",
        list("-+.0123456789"),
    ),
    ("merge", r"<<", ["<"]),
]


class YamlRefused(yaml.MarkedYAMLError):
    """YAML text the loader refuses though PyYAML would read it (module docstring)."""


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader with YAML 1.2 core scalars, unique keys and bounds on depth
    and expanded size (module docstring)."""

    def __init__(self, text: str, outer_depth: int = 0) -> None:
        super().__init__(text)
        self._outer = outer_depth  # collections around the text (an override's key path)
        self._depth = outer_depth  # collections open around the node being composed
        self._deepest = outer_depth  # the deepest any expanded node reached, so far
        self._total = 0  # nodes composed so far, aliases expanded
        self._sizes: dict[str, tuple[int, int]] = {}  # anchor: (nodes, levels below it)
        self._open: set[str] = set()  # anchors of collections being composed
        self._checked: set[int] = set()  # mapping nodes whose keys were checked
        self.alias_items: dict[tuple[int, int], int] = {}  # (list node, index): alias's line

    def fetch_flow_collection_start(self, token_class: Any) -> None:
        """Refuse a flow collection (``[``, ``{``) too deep while scanning, before PyYAML
        scans ahead of it (1,024 characters of pending keys, quadratic in their number)."""
        if self.flow_level + self._outer >= MAX_DEPTH:
            raise _refused(f"nested deeper than {MAX_DEPTH} levels", self.get_mark())
        super().fetch_flow_collection_start(token_class)  # type: ignore[misc]

    def compose_node(self, parent: Node | None, index: Any) -> Node:
        event = self.peek_event()  # type: ignore[no-untyped-call]
        if isinstance(event, yaml.AliasEvent):
            self._alias(event)
            mark = event.start_mark
            if isinstance(parent, SequenceNode) and mark is not None:  # the item's line:
                self.alias_items[id(parent), index] = mark.line + 1  # the alias's, not its node's
            return _composed(super().compose_node(parent, index))
        collection = isinstance(event, yaml.CollectionStartEvent)
        if collection and self._depth >= MAX_DEPTH:
            raise _refused(f"nested deeper than {MAX_DEPTH} levels", event.start_mark)
        self._count(1, event.start_mark)
        start, outer_deepest = self._total - 1, self._deepest
        self._deepest = self._depth = self._depth + collection
        if collection and event.anchor is not None:
            self._open.add(event.anchor)
        try:
            node = _composed(super().compose_node(parent, index))
        finally:
            self._depth -= collection
            self._open.discard(event.anchor or "")
        if event.anchor is not None:
            self._sizes[event.anchor] = (self._total - start, self._deepest - self._depth)
        self._deepest = max(self._deepest, outer_deepest)
        return node

    def _alias(self, event: yaml.AliasEvent) -> None:
        """Count what alias ``event`` expands to; refuse one inside its own anchor."""
        anchor, mark = event.anchor or "", event.start_mark
        if anchor in self._open:
            raise _refused(f"alias *{anchor} is inside the value it names", mark)
        nodes, levels = self._sizes.get(anchor, (0, 0))  # not there: PyYAML refuses it
        if self._depth + levels > MAX_DEPTH:
            problem = f"nested deeper than {MAX_DEPTH} levels once alias *{anchor} is expanded"
            raise _refused(problem, mark)
        self._deepest = max(self._deepest, self._depth + levels)
        self._count(nodes, mark)

    def _count(self, nodes: int, mark: Any) -> None:
        self._total += nodes
        if self._total > MAX_NODES:
            problem = (
                f"more than {MAX_NODES:,} nodes (values, lists and mappings; an alias counts "
                "as all it stands for), the most a YAML text may hold"
            )
            raise _refused(problem, mark)

    def flatten_mapping(self, node: MappingNode) -> None:
        """Refuse a key given twice in ``node`` (merged ``<<`` keys may be overridden),
        before merging mutates it, then merge."""
        if id(node) not in self._checked:
            self._checked.add(id(node))
            _check_unique_keys(self, node)
        super().flatten_mapping(node)

    def construct_yaml_int(self, node: ScalarNode) -> int:  # type: ignore[override]
        """A core-schema integer: decimal (leading zeros too), ``0o`` octal, ``0x`` hex."""
        text = str(self.construct_scalar(node)).replace("_", "")
        sign = -1 if text.startswith("-") else 1
        digits = text.lstrip("-+")
        base = {"0o": 8, "0x": 16}.get(digits[:2], 10)
        return sign * int(digits[2:] if base != 10 else digits, base)


def _refused(problem: str, mark: Any) -> YamlRefused:
    return YamlRefused(None, None, problem, mark)


def _composed(node: Node | None) -> Node:
    assert node is not None  # a node event was next: PyYAML composes a node from it
    return node


def _check_unique_keys(loader: _Loader, node: MappingNode) -> None:
    first: dict[Any, Any] = {}  # key: where it is first
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = loader.construct_object(key_node)
        try:
            mark = first.setdefault(key, key_node.start_mark)
        except TypeError:  # an unhashable key: PyYAML refuses it, naming it
            continue
        if mark is not key_node.start_mark:
            where = f"line {mark.line + 1}, column {mark.column + 1}"
            problem = f"duplicate key {key!r} (first at {where})"
            raise _refused(problem, key_node.start_mark)


_Loader.yaml_implicit_resolvers = {}  # not PyYAML's YAML 1.1 ones: the core schema's
for _name, _pattern, _first in _CORE_SCALARS:
    _Loader.add_implicit_resolver(
        f"tag:yaml.org,2002:{_name}", re.compile(f"^(?:{_pattern})$"), _first
    )
_Loader.add_constructor("tag:yaml.org,2002:int", _Loader.construct_yaml_int)


class _Dumper(yaml.SafeDumper):
    """PyYAML's safe dumper, quoting a string exactly when :func:`load_yaml` would read it
    plain as something else (``'0o17'``; PyYAML's own resolvers follow YAML 1.1)."""


_Dumper.yaml_implicit_resolvers = {}
for _name, _pattern, _first in _CORE_SCALARS:
    _Dumper.add_implicit_resolver(
        f"tag:yaml.org,2002:{_name}", re.compile(f"^(?:{_pattern})$"), _first
    )


def dump_yaml(value: Any, **options: Any) -> str:
    """``yaml.safe_dump(value, **options)`` whose text :func:`load_yaml` reads back as
    ``value``."""
    text: str = yaml.dump(value, Dumper=_Dumper, **options)
    return text


def load_yaml(text: str, outer_depth: int = 0) -> Any:
    """The value of YAML ``text`` (module docstring), as if nested ``outer_depth``
    collections deep (an override's key path), for :data:`MAX_DEPTH`."""
    loader = _Loader(text, outer_depth)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


def load_yaml_lines(text: str) -> tuple[Any, KeyLines]:
    """The value of YAML ``text``, as :func:`load_yaml` reads it, and where the text gives
    each of its keys and list items."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None, KeyLines({})
        value = loader.construct_document(node)
        return value, KeyLines(_key_lines(node, (), _Walk(loader.alias_items, set(), {})))
    finally:
        loader.dispose()


@dataclass(frozen=True, slots=True)
class KeyLines:
    """Where a YAML text gives each key and list item: ``lines`` maps a key path (keys as
    written, list items by index: ``("devices", 0, "count")``) to its 1-based line; a key
    a ``<<`` merge brings, to its line in the anchored mapping. The keys inside a value an
    alias repeats are mapped under its anchor only (a path through the alias gets the
    alias's line), so there are no more entries than pairs and items the text composes
    to, aliases not expanded."""

    lines: Mapping[tuple[str | int, ...], int]

    def line(self, path: Sequence[str | int]) -> int | None:
        """The line of ``path``, or of its deepest part the text gives (a required key
        missing: its mapping's key); ``None`` when not even its first key is given."""
        for end in range(len(path), 0, -1):
            found = self.lines.get(tuple(path[:end]))
            if found is not None:
                return found
        return None


@dataclass(frozen=True, slots=True)
class _Walk:
    """What :func:`_key_lines` carries through a walk: the lines of list items that are
    aliases (the loader's ``alias_items``), the collections walked and the lines found."""

    alias_items: Mapping[tuple[int, int], int]
    walked: set[int]
    lines: dict[tuple[str | int, ...], int]


def _key_lines(
    node: Node, path: tuple[str | int, ...], walk: _Walk
) -> dict[tuple[str | int, ...], int]:
    """``walk.lines`` with the key paths under ``node`` (at ``path``) added, in the text's
    order, so that a mapping's own key overrides the one a merge brought; a collection
    already walked (an alias's) is not walked again."""
    if id(node) in walk.walked:
        return walk.lines
    walk.walked.add(id(node))
    children: list[tuple[str | int, int, Node]] = []
    if isinstance(node, MappingNode):
        children = [
            (key.value, key.start_mark.line + 1, value)
            for key, value in node.value
            if isinstance(key, ScalarNode)
        ]
    elif isinstance(node, SequenceNode):
        children = [
            (index, walk.alias_items.get((id(node), index), item.start_mark.line + 1), item)
            for index, item in enumerate(node.value)
        ]
    for segment, line, value in children:
        walk.lines[(*path, segment)] = line
        _key_lines(value, (*path, segment), walk)
    return walk.lines
