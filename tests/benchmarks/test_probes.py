"""benchmarks/probes/: the C programs docs/PERFORMANCE.md quotes numbers from compile cleanly
(``cc -O2 -Wall -Werror``) and are named in that doc with the command that builds them;
the Python probe's four state layouts simulate the same events, and its calendar queue
pops in the order a heap does.

The probes' timings are not run here: each times millions of steps (seconds to minutes of
CPU), and their numbers are measurements of the machine, not results to assert.
"""

from __future__ import annotations

import heapq
import shutil
import subprocess
from pathlib import Path
from types import ModuleType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.benchmarks.scripts import load_script

ROOT = Path(__file__).resolve().parents[2]
PROBES = sorted((ROOT / "benchmarks" / "probes").glob("*.c"))
HELPERS = ["probe_json.py"]  # imported by the probes (their --json), run by none
PYTHON_PROBES = sorted(
    p for p in (ROOT / "benchmarks" / "probes").glob("*.py") if p.name not in HELPERS
)


def test_probes_exist() -> None:
    assert [p.name for p in PROBES] == ["chase.c", "fleet_core.c"]
    assert sorted(p.name for p in PYTHON_PROBES) == [
        "checkpoint_size.py",
        "cold_start.py",
        "distill_speed.py",
        "exactness_probe.py",
        "first_pass.py",
        "fleet_core.py",
        "head_speed.py",
        "hybrid_rules.py",
        "mixed_batch_ab.py",
        "openai_concurrency.py",
        "pass_ops.py",
        "row_products.py",
        "target_load.py",
        "tokenizer_load.py",
        "tree_bound.py",
        "warm_start.py",
    ]
    assert all((ROOT / "benchmarks" / "probes" / name).is_file() for name in HELPERS)


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
    command = f"cc -O2 -o {probe.stem} benchmarks/probes/{probe.name}"
    assert command in doc, f"docs/PERFORMANCE.md does not quote `{command}`"
    assert command in probe.read_text(encoding="utf-8"), f"{probe.name}'s header lacks it"


def _python_probe() -> ModuleType:
    return load_script("probes/fleet_core.py", "fleet_core_probe")


PROBE = _python_probe()


@pytest.mark.parametrize("probe", PYTHON_PROBES, ids=lambda p: p.name)
def test_python_probe_is_quoted_with_its_command(probe: Path) -> None:
    docs = {p.name: p.read_text(encoding="utf-8") for p in (ROOT / "docs").glob("*.md")}
    command = f"python benchmarks/probes/{probe.name}"
    assert any(command in doc for doc in docs.values()), f"no doc in docs/ quotes `{command}`"
    assert command in probe.read_text(encoding="utf-8"), f"{probe.name}'s docstring lacks it"


@pytest.mark.parametrize(("devices", "seed"), [(500, 0), (500, 7), (2000, 1)])
def test_python_probe_layouts_simulate_the_same_rounds(devices: int, seed: int) -> None:
    rounds = {name: run(devices, devices // 50, 2.0, seed) for name, run in PROBE.VARIANTS.items()}
    assert list(rounds) == ["objects", "arrays", "flat", "calendar"]
    assert rounds["objects"] > 5 * devices  # the fleet has run several rounds per device
    assert len(set(rounds.values())) == 1, rounds


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    st.lists(
        st.tuples(st.integers(0, 400), st.integers(0, 5), st.booleans()),
        min_size=1,
        max_size=80,
    ),
    st.sampled_from([0.001, 0.01, 0.05, 1.0]),
)
def test_calendar_pops_in_heap_order(steps: list[tuple[int, int, bool]], width_s: float) -> None:
    """Pushes (with tied times and ids) interleaved with pops, never into the past: the
    calendar gives what a heap of the same tuples gives."""
    calendar = PROBE.Calendar(width_s)
    heap: list[tuple[float, int]] = []
    now = 0.0
    for ticks, ident, pop in steps:
        if pop and heap:
            expected = heapq.heappop(heap)
            assert calendar.first() == expected[0]
            assert calendar.pop() == expected
            now = expected[0]
        else:
            event = (now + ticks / 1000, ident)
            heapq.heappush(heap, event)
            calendar.push(event)
    while heap:
        assert calendar.pop() == heapq.heappop(heap)
    assert calendar.first() == float("inf")
