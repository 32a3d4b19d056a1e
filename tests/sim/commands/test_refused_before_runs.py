"""What ``edgespec sim`` refuses before any run (edgespec/sim/commands/checks.py and the
checks it calls): a cost-model kind beside a profile of another kind, a sweep point that
its run would refuse while being built, its fleet included (named with its index and
overrides), a wireless device without an uplink rate, a link or SLO
class that the command line adds and no device pool uses, and the default slo_mix beside
slo_classes without its class. Each one line, exit status 2, no run folder, nothing run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from edgespec.cli import main
from edgespec.config import ConfigError
from edgespec.sim.commands.checks import check_added_entries
from edgespec.sim.setup.scenario import scenario_from_dict
from tests.sim.helpers import tiny_scenario

QUIET = ["--quiet", "--no-plots"]
PROFILES = (
    "['a100-qwen3-14b-scaled', 'a100-qwen3-32b', 'edge-50tps', 'generic-cpu-gemma3-270m', "
    "'rtx3080-llama-68m-zhu', 'rtx3080-tinyllama-1.1b-zhu', 'rtx4500-llama2-13b-zhu', "
    "'rtx4500-llama2-7b-zhu', 'wisv-edge-verify', 'wisv-ue-draft']"
)


@pytest.fixture
def never_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any run is a failure (a sweep's, or a plain run's fleet built): each refusal here
    comes before the first."""

    def never(*args: Any) -> None:
        raise AssertionError("a run started")

    monkeypatch.setattr("edgespec.sim.commands.run.run_scenario_dict", never)
    monkeypatch.setattr("edgespec.sim.setup.build.build_fleet", never)


def _refused(argv: list[str], out: Path, capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["sim", *argv, *QUIET, "--out", str(out)]) == 2
    said = capsys.readouterr()
    assert said.out == "" and not out.exists()
    return said.err


@pytest.mark.parametrize(
    ("kind", "profile", "found"),
    [("zhu", "a100-qwen3-32b", "wisp"), ("lookup", "a100-qwen3-32b", "wisp")],
)
def test_a_cost_model_kind_beside_a_profile_of_another_kind_is_refused(
    kind: str,
    profile: str,
    found: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    never_run: None,
) -> None:
    """It ran as the profile's kind, and scenario.yaml said the other (the default
    scenario's server pool: ``{kind: wisp, profile: a100-qwen3-32b}``)."""
    err = _refused([f"auto_topology.servers.0.cost_model.kind={kind}"], tmp_path / "o", capsys)
    assert err == (
        f"edgespec sim: config field 'auto_topology.servers[0].cost_model.kind': {profile!r} "
        f"is a {found!r} profile, not a {kind!r} one; give kind: {found}, or a {kind!r} "
        "profile\n"
    )


@pytest.fixture
def roofline_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A tiny scenario on roofline servers with ShareGPT's lengths."""
    monkeypatch.chdir(tmp_path)
    data = tiny_scenario(duration_s=1.0)
    data["workload"] = {"kind": "closed_loop", "think_time_s": 0.5}
    data["policies"]["window"] = {"name": "static"}
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.mark.parametrize(
    ("sweep", "refusal"),
    [
        (
            "policies.window.params.gamma=2,4,0",
            "config field 'policies.window.params.gamma': at sweep point 3 of 3 "
            "(policies.window.params.gamma=0): window policy 'static': gamma must be >= 1, "
            "got 0",
        ),
        (
            "workload.dataset=sharegpt,nope",
            "config field 'workload.dataset': at sweep point 2 of 2 (workload.dataset=nope): "
            "no length table 'nope'; known: ['gsm8k', 'humaneval', 'sharegpt']",
        ),
        (
            "policies.batching.name=fcfs,wisp",
            "tiny.yaml:33: config field 'policies.batching.params.profile': at sweep point 2 "
            "of 2 (policies.batching.name=wisp): wisp batching needs Eq. 19 coefficients: "
            "give a profile (or a_s, b_compute_s, b_read_s, c_s), or a server pool with a "
            "wisp cost model",
        ),
        (
            "auto_topology.servers.0.cost_model={kind: wisp, profile: a100-qwen3-32b},"
            "{kind: wisp, profile: nope}",
            "config field 'auto_topology.servers[0].cost_model.profile': at sweep point 2 of 2 "
            "(auto_topology.servers.0.cost_model={kind: wisp, profile: nope}): no "
            f"hardware/profiles preset named 'nope'; known: {PROFILES}",
        ),
    ],
)
def test_a_sweep_point_its_run_would_refuse_is_refused_before_any_run(
    sweep: str,
    refusal: str,
    roofline_file: Path,
    capsys: pytest.CaptureFixture[str],
    never_run: None,
) -> None:
    """Each was found only when its run started, after the points before it ran, and the
    folder with their results was removed."""
    err = _refused([str(roofline_file.name), "--sweep", sweep], roofline_file.parent / "o", capsys)
    assert err == f"edgespec sim: {refusal}\n"


WIRELESS_ZERO = "device 0's uplink rate is 0 bit/s (channel gain 0); every device needs a rate > 0"


@pytest.mark.parametrize(
    ("argv", "refusal"),
    [
        (
            ["wisv", "duration_s=1", "--sweep", "links.default.bandwidth_mbps=20,1e-7"],
            "config field 'links': at sweep point 2 of 2 (links.default.bandwidth_mbps=1.0e-07): "
            "a semantic device's link: uplink rate must be a finite number >= 1 bit/s, got "
            "0.09999999999999999",
        ),
        (
            ["duration_s=1", "--sweep", "links.default.wireless.path_loss_db=-60,-4000"],
            "config field 'links.default.wireless': at sweep point 2 of 2 "
            f"(links.default.wireless.path_loss_db=-4000): {WIRELESS_ZERO}",
        ),
    ],
)
def test_a_sweep_point_whose_fleet_its_run_would_refuse_is_refused_before_any_run(
    argv: list[str],
    refusal: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    never_run: None,
) -> None:
    """The pre-check built each point short of its fleet: a device's link that semantic
    verification's head cannot describe (or a wireless one with no rate) was found when
    that point's run started, after the points before it ran, without the point named."""
    assert _refused(argv, tmp_path / "o", capsys) == f"edgespec sim: {refusal}\n"


def test_a_wireless_device_without_an_uplink_rate_is_refused_at_its_link(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Was a traceback: ``ValueError: uplink rate must be > 0``."""
    argv = ["duration_s=1", "links.default.wireless={path_loss_db: -4000}"]
    assert _refused(argv, tmp_path / "o", capsys) == (
        f"edgespec sim: config field 'links.default.wireless': {WIRELESS_ZERO}\n"
    )


@pytest.mark.parametrize(
    ("argv", "refusal"),
    [
        (
            ["links.defualt.rtt_ms=500"],
            "override 'links.defualt.rtt_ms=500': adds link 'defualt', which no device pool "
            "uses; the pools' links: ['default'] (did you mean 'default'?)",
        ),
        (
            ["slo_classes.platnum=1"],
            "override 'slo_classes.platnum=1': adds SLO class 'platnum', which no device "
            "pool's slo_mix names; their classes: ['bronze', 'gold', 'platinum', 'silver'] "
            "(did you mean 'platinum'?)",
        ),
        (
            ["--sweep", "links.defualt.rtt_ms=10,50"],
            "--sweep 'links.defualt.rtt_ms=10': adds link 'defualt', which no device pool "
            "uses; the pools' links: ['default'] (did you mean 'default'?)",
        ),
        (
            ["links={default: {rtt_ms: 5}, wan: {rtt_ms: 50}}"],
            "override 'links={default: {rtt_ms: 5}, wan: {rtt_ms: 50}}': adds link 'wan', "
            "which no device pool uses; the pools' links: ['default']",
        ),
    ],
)
def test_a_link_or_class_the_command_line_adds_unused_is_refused(
    argv: list[str],
    refusal: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    never_run: None,
) -> None:
    """``links.defualt.rtt_ms=500`` ran exactly as the default scenario."""
    assert _refused(argv, tmp_path / "o", capsys) == f"edgespec sim: {refusal}\n"


def test_an_added_entry_that_a_pool_uses_and_a_files_unused_one_are_taken(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tiny_scenario(duration_s=0.5)
    data["slo_classes"]["spare"] = 3.0  # defined, used by no pool (a reproduction does so)
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(data))
    argv = ["sim", str(path), *QUIET, "slo_classes.spare=4", "links.lan.rtt_ms=1"]
    used = ["auto_topology.devices.0.link=lan", "--out", str(tmp_path / "o")]
    assert main([*argv, *used]) == 0
    assert capsys.readouterr().err == ""


def test_a_trace_workloads_requests_may_name_an_added_class(tmp_path: Path) -> None:
    data = tiny_scenario(workload={"kind": "trace", "trace": str(tmp_path / "t.jsonl")})
    overrides = ["slo_classes.gold=6"]
    check_added_entries(data, overrides, scenario_from_dict(data, overrides))  # no error
    overrides = ["links.wan2.rtt_ms=6"]  # a link still is: the pools alone use links
    with pytest.raises(ConfigError, match="adds link 'wan2', which no device pool uses"):
        check_added_entries(data, overrides, scenario_from_dict(data, overrides))


def test_the_default_slo_mix_beside_slo_classes_without_its_class_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: ``config field 'auto_topology.devices[0].slo_mix.default': unknown SLO class;
    known: ['gold']``, at fields the file does not have."""
    path = tmp_path / "gold.yaml"
    path.write_text("slo_classes: {gold: 6, silver: 4}\n")
    assert _refused([str(path)], tmp_path / "o", capsys) == (
        "edgespec sim: config field 'auto_topology.devices[0].slo_mix': not given, so its "
        "devices are all of SLO class 'default', which slo_classes does not have (its "
        "classes: ['gold', 'silver']); give the pool an slo_mix over those classes (e.g. "
        "{gold: 1}) or add a 'default' class to slo_classes\n"
    )
    path.write_text("slo_classes: {}\n")
    assert _refused([str(path)], tmp_path / "o", capsys) == (
        "edgespec sim: config field 'auto_topology.devices[0].slo_mix': not given, so its "
        "devices are all of SLO class 'default', which slo_classes, empty, does not have; add "
        "a 'default' class to slo_classes\n"
    )
    path.write_text("slo_classes: {gold: 6}\nauto_topology:\n  devices:\n    - {count: 3}\n")
    assert _refused([str(path)], tmp_path / "o", capsys).startswith(
        f"edgespec sim: {path}:4: config field 'auto_topology.devices[0].slo_mix': not given"
    )
    path.write_text(  # a mix the file gives: its class is named as before
        "slo_classes: {gold: 6}\nauto_topology:\n  devices:\n    - {slo_mix: {default: 1}}\n"
    )
    assert _refused([str(path)], tmp_path / "o", capsys) == (
        f"edgespec sim: {path}:4: config field 'auto_topology.devices[0].slo_mix.default': "
        "unknown SLO class; known: ['gold']; give the pool an slo_mix over those (e.g. "
        "{gold: 1}) or add a 'default' class to slo_classes (slo_classes.default=TOK_S adds "
        "one to the others; slo_classes={...} replaces them all)\n"
    )
