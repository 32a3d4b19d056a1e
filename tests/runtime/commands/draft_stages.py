"""``edgespec draft``'s stderr split into its start-up stage lines and the rest."""

from __future__ import annotations

import re

STAGE = re.compile(r"edgespec draft: \[ *\d+\.\d s\] (.*)")


def split_stages(err: str) -> tuple[list[str], list[str]]:
    """The start-up stage lines (their timings stripped), and stderr's other lines."""
    lines = err.strip().splitlines()
    stages = [m.group(1) for m in map(STAGE.fullmatch, lines) if m is not None]
    return stages, [line for line in lines if STAGE.fullmatch(line) is None]
