"""A load's client ids carry the run's tag (``TAG.client-000``): two runs on one server,
or a killed run's sessions still open there, never share the server's per-client quotas
(``max_sessions_per_client``, ``max_queued_per_client`` count by client id without auth);
every id stays within the server's identifier bound."""

from __future__ import annotations

from edgespec.runtime.loadgen.run import LoadRun
from edgespec.runtime.loadgen.spec import MAX_CLIENTS, LoadSpec, ServerAccess, SloShare
from edgespec.runtime.validation import MAX_IDENTIFIER_CHARS, check_identifier

MIX = (SloShare("default", None, 1.0),)


def _ids(num_clients: int, num_procs: int, tag: str) -> list[tuple[str, ...]]:
    load = LoadSpec(num_clients, num_procs, "closed", None, 1.0, 1.0, MIX, 8, 4, "ngram", 0)
    run = LoadRun(load, ServerAccess("127.0.0.1:1"), ((1,),), 64, say=lambda _: None,
                  run_tag=tag)  # fmt: skip
    return [run._client_ids(index) for index in range(num_procs)]


def test_two_runs_never_share_a_client_id() -> None:
    first, second = _ids(5, 2, "0a1b2c3d"), _ids(5, 2, "feedc0de")
    assert first == [
        ("0a1b2c3d.client-000", "0a1b2c3d.client-002", "0a1b2c3d.client-004"),
        ("0a1b2c3d.client-001", "0a1b2c3d.client-003"),
    ]
    assert second[0][0] == "feedc0de.client-000"
    assert not {i for ids in first for i in ids} & {i for ids in second for i in ids}


def test_client_and_request_ids_fit_the_servers_bound() -> None:
    """The most clients a load takes: the longest client id, and a request id of it with a
    billion incarnations and requests, are well within the 128 characters the server takes."""
    ids = _ids(MAX_CLIENTS, 4, "0a1b2c3d")
    longest = max((i for group in ids for i in group), key=lambda i: (len(i), i))
    assert longest == "0a1b2c3d.client-4095"
    request_id = f"{longest}.{10**9}.{10**9}"
    assert len(request_id) == 42 <= MAX_IDENTIFIER_CHARS
    check_identifier("client_id", longest)
    check_identifier("session_id", request_id)
