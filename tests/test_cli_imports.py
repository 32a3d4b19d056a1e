"""The command line starts light: building its parser, and a whole ``edgespec sim`` run,
load neither torch nor transformers (4 s of imports on this machine, more than a default
simulation takes). Each check runs in a fresh interpreter, whose modules are its own."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

HEAVY = ("torch", "transformers", "grpc")

_PARSER = """
import json, sys
from edgespec.cli import build_parser
build_parser()
print(json.dumps(sorted(m for m in {heavy} if m in sys.modules)))
"""

_SIM = """
import json, sys
from edgespec.cli import main
code = main(["sim", "--quiet", "--no-plots", "duration_s=1", "--out", {out!r}])
assert code == 0, code
print(json.dumps(sorted(m for m in {heavy} if m in sys.modules)))
"""


def _loaded(script: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    loaded: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return loaded


def test_the_parser_loads_no_model_library() -> None:
    assert _loaded(_PARSER.format(heavy=HEAVY)) == []


def test_a_simulation_loads_no_model_library(tmp_path: Path) -> None:
    assert _loaded(_SIM.format(heavy=HEAVY, out=str(tmp_path / "run"))) == []
