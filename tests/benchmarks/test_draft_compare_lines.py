"""benchmarks/draft_compare.py reads every speed-up line ``edgespec draft --compare``
writes (its own ``speedup_lines``): identical, differing and sampled outputs."""

from __future__ import annotations

import pytest

from edgespec.runtime.commands.draft_compare import speedup_lines
from tests.benchmarks.scripts import load_script


@pytest.mark.parametrize(
    ("outputs", "differ", "sampled"),
    [
        ("identical", None, False),
        ("differ from token 7", "7", False),
        ("sampled (two draws of the target's distribution, not compared token by token)",
         None, True),
    ],
)  # fmt: skip
def test_each_compare_line_is_read(outputs: str, differ: str | None, sampled: bool) -> None:
    script = load_script("draft_compare.py", "draft_compare_script")
    line = speedup_lines(12.5, 10.0, "lossy", outputs)[0]
    said = script.SPEEDUP.search(line).groupdict()
    assert (said["ratio"], said["spec"], said["central"], said["numerics"]) == (
        "1.25", "12.5", "10.0", "lossy")  # fmt: skip
    assert (said["differ"], said["sampled"] is not None) == (differ, sampled)
