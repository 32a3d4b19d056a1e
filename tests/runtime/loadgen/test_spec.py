"""``edgespec bench serve``'s load settings: the list flags' parsers and LoadSpec's checks,
each mistake with its exact message."""

from __future__ import annotations

import pytest

from edgespec.errors import UserInputError
from edgespec.runtime.loadgen.spec import (
    Fault,
    LoadSpec,
    SloShare,
    check_own_server_classes,
    parse_faults,
    parse_modes,
    parse_slo_mix,
)

MIX = (SloShare("default", None, 1.0),)


def _spec(**kw: object) -> LoadSpec:
    base: dict[str, object] = dict(num_clients=8, num_procs=4, arrivals="closed",
                                   rate_per_s=None, duration_s=10.0, drain_s=5.0, slo_mix=MIX,
                                   max_new_tokens=16, gamma=4, draft="ngram", seed=0)  # fmt: skip
    return LoadSpec(**(base | kw))  # type: ignore[arg-type]


def test_slo_mix_shares_are_normalised_and_none_means_no_target() -> None:
    mix = parse_slo_mix("fast:20:1, slow:none:3")
    assert mix == (SloShare("fast", 20.0, 0.25), SloShare("slow", None, 0.75))
    # spaces around a part are not the name's (the server's --slo-class strips them)
    assert parse_slo_mix("fast :20: 1") == (SloShare("fast", 20.0, 1.0),)


@pytest.mark.parametrize("name", ["a=b", "a.b"])
def test_own_server_class_names_take_no_equals_or_dot(name: str) -> None:
    check_own_server_classes(parse_slo_mix("my class:5:1"))
    with pytest.raises(UserInputError) as err:
        check_own_server_classes(parse_slo_mix(f"ok:5:1,{name}:5:1"))
    assert str(err.value) == (
        f"--slo-mix: class name {name!r} has a '=' or '.', which the bench's own server's "
        "--slo-class cannot take"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("fast:20", "--slo-mix expects NAME:TOKENS_PER_S:SHARE items (TOKENS_PER_S a number or "
                    "none), got 'fast:20'"),
        ("fast:x:1", "--slo-mix: 'fast:x:1' has a value that is not a number"),
        ("fast:-1:1", "--slo-mix: fast's target must be > 0 or none, got -1.0"),
        ("fast:5:0", "--slo-mix: fast's share must be > 0, got 0.0"),
        ("a:5:1,a:6:1", "--slo-mix names the class 'a' twice"),
        (" , ", "--slo-mix needs at least one NAME:TOKENS_PER_S:SHARE item"),
    ],
)  # fmt: skip
def test_slo_mix_mistakes(text: str, message: str) -> None:
    with pytest.raises(UserInputError) as err:
        parse_slo_mix(text)
    assert str(err.value) == message


def test_faults_are_sorted_by_time_with_counts() -> None:
    faults = parse_faults("restart-server@30,kill-clients@10:3")
    assert faults == (Fault("kill-clients", 10.0, 3), Fault("restart-server", 30.0, 1))
    assert parse_faults("") == ()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("reboot@3", "--faults expects KIND@SECONDS[:COUNT] items, KIND one of kill-clients, "
                     "restart-server; got 'reboot@3'"),
        ("kill-clients", "--faults expects KIND@SECONDS[:COUNT] items, KIND one of "
                         "kill-clients, restart-server; got 'kill-clients'"),
        ("kill-clients@soon", "--faults: 'kill-clients@soon' has a time or count that is not "
                              "a number"),
        ("kill-clients@0", "--faults: 'kill-clients@0' needs a time > 0 and a count ≥ 1"),
        ("restart-server@5:2", "--faults: 'restart-server@5:2': restart-server takes no count"),
        # a colon with no count after it is a mistake, not the default count (was accepted)
        ("restart-server@2:", "--faults: 'restart-server@2:' has a time or count that is not "
                              "a number"),
        ("kill-clients@2:", "--faults: 'kill-clients@2:' has a time or count that is not "
                            "a number"),
    ],
)  # fmt: skip
def test_fault_mistakes(text: str, message: str) -> None:
    with pytest.raises(UserInputError) as err:
        parse_faults(text)
    assert str(err.value) == message


def test_modes() -> None:
    assert parse_modes("distributed,centralized") == ("distributed", "centralized")
    with pytest.raises(UserInputError, match="--mode expects distinct items of distributed, "):
        parse_modes("distributed,distributed")
    with pytest.raises(UserInputError, match="got 'fused'"):
        parse_modes("fused")


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"num_procs": 9}, "--procs must be in 1..--clients (8), got 9"),
        ({"num_clients": 0, "num_procs": 0}, "--clients must be ≥ 1, got 0"),
        ({"arrivals": "poisson"}, "--arrivals poisson needs --rate (arrivals per second)"),
        ({"arrivals": "poisson", "rate_per_s": -1.0}, "--arrivals poisson needs --rate > 0, "
                                                      "got -1.0"),
        ({"rate_per_s": 2.0}, "--rate applies to --arrivals poisson only"),
        ({"max_queued": 8}, "--max-queued applies to --arrivals poisson only"),
        ({"arrivals": "poisson", "rate_per_s": 2.0}, "--max-queued must be ≥ 1, got None"),
        ({"arrivals": "poisson", "rate_per_s": 2.0, "max_queued": 0},
         "--max-queued must be ≥ 1, got 0"),
        ({"duration_s": 0.0}, "--duration-s must be a number > 0, got 0.0"),
        ({"faults": (Fault("restart-server", 10.0),)},
         "--faults: restart-server@10 is not before the end of the run (--duration-s 10)"),
        ({"faults": (Fault("kill-clients", 2.0, 5),)},
         "--faults: kill-clients@2:5 kills more client processes than --procs 4"),
    ],
)  # fmt: skip
def test_load_spec_mistakes(changes: dict[str, object], message: str) -> None:
    with pytest.raises(UserInputError) as err:
        _spec(**changes)
    assert str(err.value) == message
