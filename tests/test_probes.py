"""docs/probes/*.c: the C programs docs/PERFORMANCE.md quotes numbers from compile cleanly
(``cc -O2 -Wall -Werror``) and are named in that doc with the command that builds them.

They are not run here: each times millions of steps (seconds to a minute of CPU), and
their numbers are measurements of the machine, not results to assert.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROBES = sorted((ROOT / "docs" / "probes").glob("*.c"))


def test_probes_exist() -> None:
    assert [p.name for p in PROBES] == ["chase.c", "fleet_core.c"]


@pytest.mark.parametrize("probe", PROBES, ids=lambda p: p.name)
def test_probe_compiles_without_warnings(probe: Path, tmp_path: Path) -> None:
    cc = shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler on this machine")
    done = subprocess.run(
        [cc, "-O2", "-Wall", "-Werror", "-o", str(tmp_path / probe.stem), str(probe), "-lm"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / probe.stem).is_file()


@pytest.mark.parametrize("probe", PROBES, ids=lambda p: p.name)
def test_probe_is_quoted_with_its_build_command(probe: Path) -> None:
    doc = (ROOT / "docs" / "PERFORMANCE.md").read_text(encoding="utf-8")
    command = f"cc -O2 -o {probe.stem} docs/probes/{probe.name}"
    assert command in doc, f"docs/PERFORMANCE.md does not quote `{command}`"
    assert command in probe.read_text(encoding="utf-8"), f"{probe.name}'s header lacks it"
