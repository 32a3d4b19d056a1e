"""Scenario input that once gave a traceback, a silently ignored value or a misleading
error: each is now one line on stderr naming where, with exit code 2."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from edgespec.cli import main
from edgespec.sim.setup.scenario import scenario_from_dict
from edgespec.sim.setup.workload_config import MAX_POISSON_ARRIVALS

_SCENARIO = """\
name: tiny
duration_s: 1.0
slo_classes: {a: 2.0, b: 4.0}
auto_topology:
  devices: [{count: 2, slo_mix: {a: 1.0}}]
acceptance: {kind: iid}
"""
_LINE = '"prompt_tokens": 5, "output_tokens": 3'


def _sim(tmp_path: Path, capsys: pytest.CaptureFixture[str], *overrides: str) -> tuple[int, str]:
    scenario = tmp_path / "tiny.yaml"
    scenario.write_text(_SCENARIO)
    out = ["--out", str(tmp_path / "run"), "--quiet", "--no-plots"]
    code = main(["sim", str(scenario), *overrides, *out])
    return code, capsys.readouterr().err


def _sim_trace(tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str) -> tuple[int, str]:
    """:func:`_sim` on a trace workload whose file ``t.jsonl`` holds ``text``."""
    trace = tmp_path / "t.jsonl"
    trace.write_text(text)
    return _sim(tmp_path, capsys, f"workload={{kind: trace, trace: {trace}}}")


@pytest.mark.parametrize(
    ("mix", "total"),
    [("{a: 1e308}", "1e+308"), ("{a: 1e308, b: 1e308}", "inf")],
)
def test_slo_shares_too_large_to_apportion_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], mix: str, total: str
) -> None:
    """Was an OverflowError traceback from the class apportionment."""
    code, err = _sim(tmp_path, capsys, f"auto_topology.devices.0.slo_mix={mix}")
    assert (code, err) == (
        2,
        "edgespec sim: config field 'auto_topology.devices[0].slo_mix': shares too large: "
        f"2 devices x their sum ({total}) is not a finite number; the shares are relative "
        "weights, e.g. fractions of 1\n",
    )


@pytest.mark.parametrize(
    ("arrival", "shown"),
    [
        ("NaN", "nan"),  # was accepted: the request silently never arrived
        ("Infinity", "inf"),  # likewise
        ("1" + "0" * 400, "1000000000000000000000000000000000000... (401 characters)"),
    ],
)
def test_a_trace_arrival_must_be_finite(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], arrival: str, shown: str
) -> None:
    code, err = _sim_trace(tmp_path, capsys, f'{{"arrival_ms": {arrival}, {_LINE}}}\n')
    assert (code, err) == (
        2,
        f"edgespec sim: config field 'workload.trace': {tmp_path / 't.jsonl'}:1: arrival_ms: "
        f"expected a finite number >= 0, got {shown}\n",
    )


def test_a_trace_integer_of_too_many_digits_is_named_at_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Was a ValueError traceback from json.loads (Python converts at most 4,300 digits)."""
    code, err = _sim_trace(
        tmp_path, capsys, f'{{"arrival_ms": 0, {_LINE}}}\n{{"arrival_ms": 1{"0" * 5000}}}\n'
    )
    assert (code, err) == (
        2,
        f"edgespec sim: config field 'workload.trace': {tmp_path / 't.jsonl'}:2: invalid JSON: "
        "Exceeds the limit (4300 digits) for integer string conversion: value has 5001 digits\n",
    )


def test_an_override_longer_than_a_file_name_is_an_override(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An override over 255 bytes was taken for a scenario file: 'File name too long'."""
    tokens = "[" + ",".join(["7"] * 200) + "]"
    override = f"workload.prompt_tokens={tokens}"
    assert len(override) > 255
    code, err = _sim(tmp_path, capsys, override, "workload.output_tokens=[1]")
    assert (code, err) == (
        2,
        "edgespec sim: config field 'workload.output_tokens': has 1 entries but "
        "prompt_tokens has 200\n",
    )
    first = ["sim", override, "workload.output_tokens=[1]", "--out", str(tmp_path / "r2")]
    assert main(first) == 2  # as the first argument too
    assert capsys.readouterr().err.startswith(
        "edgespec sim: config field 'workload.output_tokens': has 1 entries"
    )


def test_a_trace_key_given_twice_is_refused_not_overwritten(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The last value was kept silently (YAML files refuse a duplicate key)."""
    code, err = _sim_trace(tmp_path, capsys, f'{{"arrival_ms": 0, "arrival_ms": 5, {_LINE}}}\n')
    assert (code, err) == (
        2,
        f"edgespec sim: config field 'workload.trace': {tmp_path / 't.jsonl'}:1: duplicate key "
        "'arrival_ms' in a JSON object\n",
    )


def test_a_trace_token_count_is_bounded(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A prompt of 10**400 tokens was an OverflowError traceback in the cost model."""
    code, err = _sim_trace(
        tmp_path,
        capsys,
        f'{{"arrival_ms": 0, "prompt_tokens": 1{"0" * 400}, "output_tokens": 3}}\n',
    )
    assert (code, err) == (
        2,
        f"edgespec sim: config field 'workload.trace': {tmp_path / 't.jsonl'}:1: prompt_tokens: "
        "expected an integer in [1, 2,147,483,647], got 1000000000000000000000000000000000000... "
        "(401 characters)\n",
    )


def test_a_device_or_folder_is_named_as_such_not_as_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """/dev/zero was 'not found' as a scenario and 'no such trace file' as a trace, and a
    folder given as a trace was 'no such trace file'."""
    assert main(["sim", "/dev/zero", "--quiet"]) == 2
    assert capsys.readouterr().err == (
        "edgespec sim: /dev/zero: is not a regular file (a device, pipe or socket)\n"
    )
    for trace, problem in (
        ("/dev/zero", "is not a regular file (a device, pipe or socket)"),
        (str(tmp_path), "is a directory, not a trace file"),
    ):
        code, err = _sim(tmp_path, capsys, f"workload={{kind: trace, trace: {trace}}}")
        assert (code, err) == (
            2,
            f"edgespec sim: config field 'workload.trace': {trace}: {problem}\n",
        )


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (  # was accepted: arrivals drawn lazily, the run went on until killed
            ("workload={kind: poisson, rate_per_s: 1e308}",),
            "workload.rate_per_s': 1e+308 per s over 1 s of arrivals expects 1e+308 requests; "
            "at most 10,000,000 (a device that cannot keep up queues them, ~330 bytes each)",
        ),
        (  # was accepted up to 10^8: ~330 bytes per arrival an overloaded device queues
            ("duration_s=2000", "workload={kind: poisson, rate_per_s: 6000}"),
            "workload.rate_per_s': 6000 per s over 2000 s of arrivals expects 1.2e+07 "
            "requests; at most 10,000,000 (a device that cannot keep up queues them, ~330 bytes "
            "each)",
        ),
        (  # likewise: a closed loop's clock past 1e7 s loses the microseconds of its events
            ("duration_s=1e308",),
            "duration_s': must be at most 1e+07 s, got 1e+308",
        ),
        (  # was "got 1e+07", the limit's own figure
            ("duration_s=10000001",),
            "duration_s': must be at most 1e+07 s, got 10000001.0",
        ),
    ],
)
def test_a_run_too_long_to_finish_is_refused(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    overrides: tuple[str, ...],
    message: str,
) -> None:
    code, err = _sim(tmp_path, capsys, *overrides)
    assert (code, err) == (2, f"edgespec sim: config field '{message}\n")


def test_the_longest_poisson_run_allowed_is_accepted() -> None:
    """At the bound exactly: 10,000 per s over 1,000 s (validation only; not run)."""
    longest = {"duration_s": 1e3, "workload": {"kind": "poisson", "rate_per_s": 1e4}}
    scenario = scenario_from_dict(yaml.safe_load(_SCENARIO) | longest)
    assert scenario.workload.rate_per_s * scenario.duration_s == MAX_POISSON_ARRIVALS
