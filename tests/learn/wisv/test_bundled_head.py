"""The simulator's WISV reject-share tables are the runtime heads' own: every bundled
``edgespec/data/wisv/NAME-acceptance.json`` was built by ``edgespec train wisv`` from the
head beside it, ``NAME-head.json``, and records that file's SHA-256; the bundled head is
that file, byte for byte (retraining one without the other fails here)."""

from __future__ import annotations

import hashlib
import json

from edgespec.sim.model.reject_table import tables_dir


def test_every_bundled_table_was_built_from_the_bundled_head_beside_it() -> None:
    tables = sorted(tables_dir().glob("*-acceptance.json"))
    assert [t.name for t in tables] == [
        "gemma3-270m-acceptance.json",
        "gemma3-270m-kappa-critical-acceptance.json",
    ]
    for table in tables:
        head = json.loads(table.read_text())["head"]
        assert head["file"] == table.name.replace("-acceptance.json", "-head.json")
        digest = hashlib.sha256((tables_dir() / head["file"]).read_bytes()).hexdigest()
        assert digest == head["sha256"], f"{table.name}: its head file changed since"
