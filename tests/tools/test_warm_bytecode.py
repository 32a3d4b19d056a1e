"""tools/warm_bytecode.py (run by ``make`` as it creates .venv): every module it names is
installed under that name (a typo would warm nothing, silently), and run where bytecode is
not written it says so and exits 2 instead of spending 20 s for nothing."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "tools" / "warm_bytecode.py"


def test_every_module_it_warms_is_installed_under_its_name() -> None:
    spec = importlib.util.spec_from_file_location("warm_bytecode", TOOL)
    assert spec is not None and spec.loader is not None
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)  # defines MODULES, imports nothing of them
    missing = [name for name in tool.MODULES if importlib.util.find_spec(name) is None]
    assert missing == []
    assert "transformers.models.gemma3.modeling_gemma3" in tool.MODULES


def test_it_refuses_to_run_where_no_bytecode_is_written() -> None:
    done = subprocess.run(
        [sys.executable, "-B", str(TOOL)],
        capture_output=True, text=True, check=False, timeout=60,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr == "warm_bytecode: PYTHONDONTWRITEBYTECODE is set: run it emptied\n"
