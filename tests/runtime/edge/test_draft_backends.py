"""``make_drafter("ngram", ...)`` builds prompt lookup without importing the model
backends (torch, transformers): a load generator's n-gram client process paid ~1–3.5 s of
torch import for a drafter that never uses it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PROGRAM = """
import sys
from edgespec.runtime.edge.draft_backends import make_drafter
drafter = make_drafter("ngram", None, 64)
print(type(drafter).__name__, sorted(m for m in ("torch", "transformers") if m in sys.modules))
"""


def test_prompt_lookup_imports_no_model_backend() -> None:
    done = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True,
                          cwd=Path(__file__).parents[3], check=True, timeout=120)  # fmt: skip
    assert done.stdout == "NgramDrafter []\n"
