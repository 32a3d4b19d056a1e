"""Where the user gave a field, in its error (edgespec.config.locate): a file's ``file:line``,
or the flag that set it; from a file: the line that gives the field, or its nearest given
parent, in the file as it was read (edgespec.config.read_yaml_file); not for a field an
override (or a sweep's point) set."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from edgespec.cli import main
from edgespec.config import (
    ConfigError,
    LocatedConfigError,
    OverrideError,
    located_in,
    named_by_flags,
    read_yaml_file,
)
from edgespec.config.locate import field_segments
from edgespec.config.yaml_text import load_yaml_lines
from edgespec.policies.registry import BATCHING
from tests.sim.helpers import tiny_scenario

TEXT = """\
name: x
auto_topology:
  devices:
    - name: orin
      count: 3
    - {name: pi, count: 2}
policies:
  batching: {name: fcfs}
"""


def test_a_field_path_splits_into_keys_and_indices() -> None:
    assert field_segments("auto_topology.devices[1].count") == [
        "auto_topology",
        "devices",
        1,
        "count",
    ]


@pytest.mark.parametrize(
    ("path", "line"),
    [
        ("name", 1),
        ("auto_topology.devices[0].count", 5),
        ("auto_topology.devices[1]", 6),
        ("auto_topology.devices[1].count", 6),  # a flow mapping on one line
        ("policies.batching.name", 8),
        ("auto_topology.devices[0].server_pools", 4),  # not given: its list entry's line
        ("auto_topology.devices[7].count", 3),  # no such entry: the list's key
        ("policies.window.name", 7),  # not given: the section's key
        ("workload.kind", None),  # not even its first key is given
    ],
)
def test_the_line_is_the_fields_own_or_its_nearest_given_parents(
    path: str, line: int | None
) -> None:
    assert load_yaml_lines(TEXT)[1].line(field_segments(path)) == line


MERGED = """\
defaults: &pool
  count: 3
  link: wan
devices:
  - &first
    <<: *pool
    name: orin
    link: lan
  - *first
"""


@pytest.mark.parametrize(
    ("path", "line"),
    [
        ("devices[0].count", 2),  # a merge brings it: its line in the anchored mapping
        ("devices[0].link", 8),  # the mapping's own key overrides the merged one
        ("devices[1]", 9),  # an alias as a list item: the alias's line
        ("devices[1].count", 9),  # inside what an alias repeats: the alias's line
    ],
)
def test_merged_keys_and_aliases_have_the_lines_that_give_them(path: str, line: int) -> None:
    assert load_yaml_lines(MERGED)[1].line(field_segments(path)) == line


@pytest.mark.parametrize("where", ["read", "path"])
def test_an_error_at_a_field_the_file_gives_names_the_file_and_line(
    tmp_path: Path, where: str
) -> None:
    """From the file as read, or, given its path, as read when the error is raised."""
    file = tmp_path / "s.yaml"
    file.write_text(TEXT)
    read = read_yaml_file(file) if where == "read" else file
    with pytest.raises(LocatedConfigError) as raised, located_in(read, ["seed=3"]):
        raise ConfigError("auto_topology.devices[0].count", "must be >= 1, got -3")
    assert str(raised.value) == (
        f"{file}:5: config field 'auto_topology.devices[0].count': must be >= 1, got -3"
    )
    assert (raised.value.path, raised.value.message) == (
        "auto_topology.devices[0].count",
        "must be >= 1, got -3",
    )


def test_the_lines_are_those_of_the_file_as_read(tmp_path: Path) -> None:
    file = tmp_path / "s.yaml"
    file.write_text(TEXT)
    read = read_yaml_file(file)
    file.write_text("# edited since\n" + TEXT)
    with pytest.raises(LocatedConfigError) as raised, located_in(read):
        raise ConfigError("policies.batching.name", "unknown")
    assert str(raised.value) == f"{file}:8: config field 'policies.batching.name': unknown"


def test_an_override_text_error_is_kept_as_it_is(tmp_path: Path) -> None:
    """Its path is the text, not a field: neither looked up in the file nor in the
    overrides (a malformed one among them)."""
    file = tmp_path / "s.yaml"
    file.write_text(TEXT)
    error = OverrideError("name..x=1,2", "empty key segment", "--sweep")
    with pytest.raises(ConfigError) as raised, located_in(file, ["name..x=1,2"]):
        raise error
    assert raised.value is error


@pytest.mark.parametrize(
    "override",
    ["auto_topology.devices.0.count=-3", "auto_topology.devices=[]", "auto_topology={}"],
)
def test_an_error_at_a_field_an_override_set_keeps_the_field_alone(
    tmp_path: Path, override: str
) -> None:
    file = tmp_path / "s.yaml"
    file.write_text(TEXT)
    error = ConfigError("auto_topology.devices[0].count", "must be >= 1, got -3")
    with pytest.raises(ConfigError) as raised, located_in(file, [override]):
        raise error
    assert raised.value is error


def test_sim_names_the_line_of_a_bad_field_and_of_a_bad_policy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The policy's error is found resolving the policies, after the scenario's checks."""
    data = tiny_scenario(duration_s=2.0)
    file = tmp_path / "s.yaml"
    file.write_text(yaml.safe_dump({**data, "seed": -1}, sort_keys=False))
    line = file.read_text().splitlines().index("seed: -1") + 1
    assert main(["sim", str(file), "--quiet", "--no-plots"]) == 2
    assert capsys.readouterr().err == (
        f"edgespec sim: {file}:{line}: config field 'seed': must be >= 0, got -1\n"
    )
    data["policies"] = {"batching": {"name": "nope"}}
    file.write_text(yaml.safe_dump(data, sort_keys=False))
    line = file.read_text().splitlines().index("    name: nope") + 1
    assert main(["sim", str(file), "--quiet", "--no-plots"]) == 2
    assert capsys.readouterr().err == (
        f"edgespec sim: {file}:{line}: config field 'policies.batching.name': unknown "
        f"batching policy 'nope'; known: {sorted(BATCHING)}\n"
    )
    assert main(["sim", str(file), "policies.batching.name=nope2", "--quiet"]) == 2
    assert capsys.readouterr().err.startswith(
        "edgespec sim: config field 'policies.batching.name': unknown batching policy 'nope2'"
    )


FLAGS = {"max_new_tokens": "--max-new-tokens", "window": "--gamma", "tree": "--tree"}


@pytest.mark.parametrize(
    ("path", "message", "shown"),
    [
        ("max_new_tokens", "must be >= 1, got 0", "--max-new-tokens: must be >= 1, got 0"),
        ("window.params.gamma", "must be >= 1, got 0", "--gamma: must be >= 1, got 0"),
        ("tree", "--tree 1,1 has 2 depths", "--tree 1,1 has 2 depths"),  # it names the flag
    ],
)
def test_an_error_at_a_field_a_flag_set_names_the_flag(path: str, message: str, shown: str) -> None:
    with pytest.raises(LocatedConfigError) as raised, named_by_flags(FLAGS):
        raise ConfigError(path, message)
    assert (str(raised.value), raised.value.path, raised.value.message) == (shown, path, message)


def test_an_error_in_the_flags_terms_is_shown_so_where_a_flag_set_the_field() -> None:
    """A message naming another field reads in the flags' terms after a flag (not
    ``--tree: needs tree_min_prob``), and in the fields' terms otherwise."""
    error = ConfigError("tree", "needs tree_min_prob", flag_message="needs --tree-min-prob")
    with pytest.raises(LocatedConfigError) as raised, named_by_flags(FLAGS):
        raise error
    assert (str(raised.value), raised.value.message) == (
        "--tree: needs --tree-min-prob",
        "needs --tree-min-prob",
    )
    with pytest.raises(ConfigError) as kept, named_by_flags({}):
        raise error
    assert str(kept.value) == "config field 'tree': needs tree_min_prob"


@pytest.mark.parametrize("path", ["temperature", "max_new", "tree_min_prob"])
def test_an_error_at_another_field_keeps_the_field(path: str) -> None:
    error = ConfigError(path, "bad")
    with pytest.raises(ConfigError) as raised, named_by_flags(FLAGS):
        raise error
    assert raised.value is error


def test_a_file_located_error_is_kept_as_it_is(tmp_path: Path) -> None:
    """A field the file gives and no flag sets: located_in ran first, inside."""
    error = LocatedConfigError("c.yaml:3", "max_new_tokens", "must be >= 1, got 0")
    with pytest.raises(ConfigError) as raised, named_by_flags(FLAGS):
        raise error
    assert raised.value is error
