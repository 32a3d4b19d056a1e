"""The model pair a head shipped in ``edgespec/data/wisv/`` was trained for, from the files
shipped beside it: a head file written before heads recorded their pair
(:class:`~edgespec.policies.semantic.head.TrainedFor`) is one of the bundled heads when its
SHA-256 is the one a bundled reject-share table names (``<name>-acceptance.json``'s
``head``), and the rollout captures the bundled heads were trained on
(``gemma3-270m-dataset.json``'s ``captures``) name one target and one draft."""

from __future__ import annotations

import hashlib
import json
from importlib import resources
from pathlib import Path

from edgespec.policies.semantic.head import TrainedFor

DATASET = "gemma3-270m-dataset.json"
"""The captures every bundled head was trained on (its ``about`` says so)."""


def bundled_dir() -> Path:
    """``edgespec/data/wisv/``."""
    return Path(str(resources.files("edgespec") / "data" / "wisv"))


def bundled_pair(head_file: str | Path) -> TrainedFor | None:
    """The pair ``head_file`` was trained for when it is a bundled head (by content, wherever
    it is), else ``None``; also ``None`` when the shipped files do not name one pair."""
    digest = hashlib.sha256(Path(head_file).read_bytes()).hexdigest()
    folder = bundled_dir()
    shipped = set()
    for table in sorted(folder.glob("*-acceptance.json")):
        head = json.loads(table.read_text(encoding="utf-8")).get("head")
        if isinstance(head, dict) and isinstance(head.get("sha256"), str):
            shipped.add(head["sha256"])
    if digest not in shipped:
        return None
    captures = json.loads((folder / DATASET).read_text(encoding="utf-8")).get("captures", [])
    pairs = {(c.get("target"), c.get("draft")) for c in captures if isinstance(c, dict)}
    if len(pairs) != 1:
        return None
    target, draft = pairs.pop()
    if not isinstance(target, str) or not isinstance(draft, str):
        return None
    return TrainedFor(target, draft)
