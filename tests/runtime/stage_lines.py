"""A command's stderr without its stage lines (``edgespec drafting-server: [  0.4 s]
loading the draft ... ...``: :class:`edgespec.runtime.commands.stages.Stages`), whose
seconds vary run to run; tests of what else it says compare the rest exactly."""

from __future__ import annotations

import re

STAGE = re.compile(r"^edgespec [a-z -]+: \[ *\d+\.\d s\] ")


def without_stages(text: str) -> str:
    """``text`` without its stage lines."""
    return "".join(line for line in text.splitlines(keepends=True) if not STAGE.match(line))


def stages(text: str) -> list[str]:
    """The stage lines of ``text``, each without its seconds (``loading the draft X ...``)."""
    return [STAGE.sub("", line) for line in text.splitlines() if STAGE.match(line)]
