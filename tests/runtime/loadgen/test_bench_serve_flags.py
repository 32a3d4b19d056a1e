"""``edgespec bench serve``'s flags checked before anything starts (one line, exit 2, said
as ``edgespec bench serve:`` as its progress lines are; it was ``edgespec bench:``): the SLO
mix, the session timeout, a model draft, the own server's batching and its ``--profile``,
and the flags of the bench's own server refused with ``--server``; and a load whose every
request failed is one line and exit 1, its Markdown quoting each error code's first
message."""

from __future__ import annotations

import argparse
import json
import re
import time
from pathlib import Path

import pytest

from edgespec.cli import main
from edgespec.policies.registry import BATCHING

OTHER = ["--server", "127.0.0.1:1"]
TIMEOUT = "--session-timeout-s must be a finite number > 0, got"


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--slo-mix", "a=b:5:1"], "--slo-mix: class name 'a=b' has a '=' or '.', which the "
                                   "bench's own server's --slo-class cannot take"),
        (["--slo-mix", "a.b:5:1"], "--slo-mix: class name 'a.b' has a '=' or '.', which the "
                                   "bench's own server's --slo-class cannot take"),
        (["--slo-mix", ""], "--slo-mix needs at least one NAME:TOKENS_PER_S:SHARE item"),
        ([*OTHER, "--slo-mix", ""], "--slo-mix needs at least one NAME:TOKENS_PER_S:SHARE item"),
        (["--session-timeout-s", "-1"], f"{TIMEOUT} -1"),
        (["--session-timeout-s", "nan"], f"{TIMEOUT} nan"),
        (["--session-timeout-s", "inf"], f"{TIMEOUT} inf"),
        ([*OTHER, "--session-timeout-s", "5"],
         "--session-timeout-s sets the bench's own server (no --server)"),
        ([*OTHER, "--target", "synthetic"], "--target sets the bench's own server (no --server)"),
        ([*OTHER, "--synthetic-layers", "2"],
         "--synthetic-layers sets the bench's own server (no --server)"),
        ([*OTHER, "--batching", "wisp"], "--batching sets the bench's own server (no --server)"),
        ([*OTHER, "--server-threads", "2"],
         "--server-threads sets the bench's own server (no --server)"),
        ([*OTHER, "--log-dir", "logs"], "--log-dir sets the bench's own server (no --server)"),
        (["--metrics-url", "http://127.0.0.1:1/metrics"],
         "--metrics-url is for a --server of yours (the bench's own server's page is read "
         "without it)"),
        (["--draft", "/nonexistent/draft"],
         "--draft: model path '/nonexistent/draft' does not exist"),
        ([*OTHER, "--draft", "./no-such-draft"],
         "--draft: model path 'no-such-draft' does not exist"),
        (["--max-queued", "4"], "--max-queued applies to --arrivals poisson only"),
        # the bench's own server verifies at most 32 draft tokens a round: refused before it starts
        (["--gamma", "33"], "--gamma 33 exceeds the server's max_draft_tokens 32"),
        (["--arrivals", "poisson", "--rate", "2", "--max-queued", "0"],
         "--max-queued must be ≥ 1, got 0"),
        # each client is a thread with a session on the server: bounded while parsed
        (["--clients", "4097"], "--clients must be ≤ 4,096, got 4097"),
        # was "got None"
        (["--arrivals", "poisson"], "--arrivals poisson needs --rate (arrivals per second)"),
        # was the bench's server's exit 2 once the target was built, advising a flag the
        # bench lacked: "config field 'batching.params.profile': wisp batching needs ..."
        (["--batching", "wisp"],
         "--batching wisp needs --profile NAME_OR_FILE: WISP's Eq. 19 coefficients from a "
         "'kind: wisp' profile (a bundled name such as a100-qwen3-32b, or the YAML 'edgespec "
         "profile --out' writes)"),
        (["--batching", "fcfs", "--profile", "a100-qwen3-32b"],
         "--profile configures the wisp batching policy; --batching is 'fcfs' (add --batching "
         "wisp)"),
        (["--profile", "a100-qwen3-32b"],
         "--profile configures the wisp batching policy; --batching is 'fcfs' (add --batching "
         "wisp)"),
        (["--batching", "edf"],
         f"--batching: unknown batching policy 'edf'; known: {sorted(BATCHING)}"),
        ([*OTHER, "--profile", "a100-qwen3-32b"],
         "--profile sets the bench's own server (no --server)"),
        (["--auth-token", "t"], "--auth-token is for a --server of yours (the bench's own is "
                                "plaintext)"),
        (["--tls-server-name", "x"], "--tls-server-name is for a --server of yours (the "
                                     "bench's own is plaintext)"),
    ],
)  # fmt: skip
def test_flag_mistakes_are_one_line_before_anything_starts(
    flags: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    t0 = time.monotonic()
    assert main(["bench", "serve", *flags]) == 2
    assert capsys.readouterr().err == f"edgespec bench serve: {message}\n"
    assert time.monotonic() - t0 < 5  # no server, no client process


def test_a_profile_that_is_not_one_is_refused_before_the_server_starts(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The profile is loaded as ``edgespec serve`` loads it (one check), naming the flag."""
    t0 = time.monotonic()
    assert main(["bench", "serve", "--batching", "wisp", "--profile", "nosuch"]) == 2
    assert time.monotonic() - t0 < 5
    err = capsys.readouterr().err
    assert err.startswith(
        "edgespec bench serve: --profile: no hardware/profiles preset named "
        "'nosuch'; known: ['a100-qwen3-14b-scaled', 'a100-qwen3-32b', "
    )
    assert err.count("\n") == 1


def test_every_request_failed_is_one_line_and_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--max-new-tokens`` past the target's context: every request is refused; the report
    quotes the refusal, its JSON holds the run's tag, and the exit is 1."""
    from tests.runtime.loadgen.test_bench_serve import _secured_server

    out = tmp_path / "r.json"
    with _secured_server() as server:
        rc = main(["bench", "serve", "--server", f"127.0.0.1:{server.port}", "--auth-token",
                   "tok-a", "--clients", "1", "--procs", "1", "--duration-s", "1",
                   "--max-new-tokens", "5000", "--json", str(out)])  # fmt: skip
    captured = capsys.readouterr()
    run = json.loads(out.read_text())["runs"][0]
    started = run["requests"]["started"]
    assert rc == 1 and started >= 1 and run["requests"]["failed"] == started
    assert re.fullmatch(r"[0-9a-f]{8}", run["run_tag"])
    assert f"## edgespec bench serve (run {run['run_tag']}): " in captured.out
    refusal = "exceeds the target's context of 4096"
    assert re.search(rf'errors by gRPC code: INVALID_ARGUMENT {started} \(first: "prompt '
                     rf'\(\d+ tokens\) \+ max_new_tokens \(5000\) {refusal}"\)',
                     captured.out)  # fmt: skip
    last = captured.err.strip().splitlines()[-1]
    assert re.fullmatch(rf"edgespec bench serve: every request failed \(distributed: {started} of "
                        rf"{started}\): INVALID_ARGUMENT: prompt \(\d+ tokens\) \+ max_new_tokens "
                        rf"\(5000\) {refusal}", last)  # fmt: skip


def test_a_gamma_over_your_servers_limit_is_one_line_before_any_request(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Its Health says max_draft_tokens 4: --gamma 5 is refused before a client process
    starts (every request would fail at the server); centralized mode drafts nothing."""
    from tests.runtime.loadgen.test_bench_serve import _secured_server

    with _secured_server(max_draft_tokens=4) as server:
        flags = ["bench", "serve", "--server", f"127.0.0.1:{server.port}", "--auth-token",
                 "tok-a", "--clients", "1", "--procs", "1", "--duration-s", "1", "--gamma", "5",
                 "--max-new-tokens", "2", "--no-check"]  # fmt: skip
        t0 = time.monotonic()
        assert main(flags) == 2
        assert time.monotonic() - t0 < 5  # no client process started
        assert capsys.readouterr().err == (
            "edgespec bench serve: --gamma 5 exceeds the server's max_draft_tokens 4\n"
        )
        assert main([*flags, "--mode", "centralized"]) == 0
        assert server.service.stats().num_rejected == 0


@pytest.mark.parametrize("kept", [False, True])
def test_a_server_that_does_not_start_quotes_its_log(tmp_path: Path, kept: bool) -> None:
    """The end of the server's log is in the error; its path only when the log is kept (the
    bench's temporary directory is gone by the time the user reads it)."""
    from edgespec.errors import UserInputError
    from edgespec.runtime.loadgen.server_process import ServerProcess, free_port

    log = tmp_path / "server.log"
    with pytest.raises(UserInputError) as err:
        ServerProcess(["--no-such-flag"], free_port(), log, log_kept=kept).start()
    where = f" ({log})" if kept else ""
    head, tail = str(err.value).split("\n", 1)
    assert (
        head == f"the verification server exited (2) before it served; the end of its log{where}:"
    )
    assert tail.endswith("edgespec serve: error: unrecognized arguments: --no-such-flag")


ACCESS = (["--auth-token"], ["--tls-ca"], ["--tls-server-name"])


def _access_flags(*command: str) -> dict[str, tuple[object, ...]]:
    """The help, type and metavar of each of ``edgespec COMMAND``'s :data:`ACCESS` flags."""
    from edgespec.cli import build_parser

    parser = build_parser()
    for name in command:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[name]
    return {a.option_strings[0]: (a.help, a.type, a.metavar) for a in parser._actions
            if a.option_strings[:1] in ACCESS}  # fmt: skip


def test_the_server_access_flags_are_the_ones_draft_has() -> None:
    """``bench serve`` had its own copies of ``--auth-token``, ``--tls-ca`` and
    ``--tls-server-name``, with other help (``--server's CA``): one copy now, shared."""
    shared = _access_flags("draft")
    assert len(shared) == 3 and _access_flags("bench", "serve") == shared


def test_the_sampling_flags_are_every_requests_sampling() -> None:
    """Ids given in any order go ascending, as the wire takes them (a SamplingParams of
    unsorted stop ids was a ValueError traceback); flags not given keep its defaults."""
    from edgespec.core.types import SamplingParams
    from edgespec.runtime.commands.bench_serve import add_arguments, load_spec

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    args = parser.parse_args(["--stop-token-ids", "9,1", "--logit-bias", "7:2,5:-100",
                              "--repetition-penalty", "1.2", "--max-new-tokens", "12"])  # fmt: skip
    assert load_spec(args).request_sampling == SamplingParams(
        max_new_tokens=12, stop_token_ids=(1, 9), logit_bias=((5, -100.0), (7, 2.0)),
        repetition_penalty=1.2,
    )  # fmt: skip


def test_a_metrics_url_that_cannot_be_read_is_one_line_before_any_request(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Nothing listening, no scheme, or a page that is no Prometheus page: one line naming
    the flag, exit 2, before a client process starts (was a 71-line traceback)."""
    import http.server
    import threading

    from tests.runtime.loadgen.test_bench_serve import _secured_server

    (tmp_path / "index.html").write_text("<!DOCTYPE HTML><html></html>\n")

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, directory=str(tmp_path), **kwargs)  # type: ignore[misc, arg-type]

        def log_message(self, *args: object) -> None:
            pass

    html = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=html.serve_forever, daemon=True).start()
    pages = {
        "http://127.0.0.1:1/metrics": "Connection refused",
        "127.0.0.1:9/metrics": "unknown url type",
        f"http://127.0.0.1:{html.server_address[1]}/": "invalid metric name",
    }
    try:
        with _secured_server() as server:
            for url, why in pages.items():
                flags = ["bench", "serve", "--server", f"127.0.0.1:{server.port}",
                         "--auth-token", "tok-a", "--metrics-url", url, "--clients", "1",
                         "--procs", "1", "--duration-s", "1", "--no-check"]  # fmt: skip
                assert main(flags) == 2
                err = capsys.readouterr().err.strip().splitlines()
                assert len(err) == 1 and err[0].startswith(
                    f"edgespec bench serve: --metrics-url {url}: cannot read a Prometheus page: "
                ), err
                assert why in err[0]
                assert server.service is not None and server.service.stats().num_sessions == 0
    finally:
        html.shutdown()


def test_a_metrics_page_gone_after_the_load_keeps_the_report(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Read before the load, unreadable after it: the run's report stands (the server's
    counters not compared) and a line says why; it threw the finished run away."""
    from edgespec.runtime.loadgen import session
    from edgespec.runtime.loadgen.scrape import ScrapeError
    from tests.runtime.loadgen.test_bench_serve import _secured_server

    calls: list[str] = []

    def once(url: str, timeout_s: float = 10.0) -> dict[str, float]:
        calls.append(url)
        if len(calls) > 1:
            raise ScrapeError(f"--metrics-url {url}: cannot read a Prometheus page: gone")
        return {}

    monkeypatch.setattr(session, "scrape", once)
    with _secured_server() as server:
        flags = ["bench", "serve", "--server", f"127.0.0.1:{server.port}", "--auth-token",
                 "tok-a", "--metrics-url", "http://127.0.0.1:1/metrics", "--clients", "1",
                 "--procs", "1", "--duration-s", "1", "--max-new-tokens", "2",
                 "--no-check"]  # fmt: skip
        assert main(flags) == 0
    captured = capsys.readouterr()
    assert len(calls) == 2
    assert (
        "--metrics-url http://127.0.0.1:1/metrics: cannot read a Prometheus page: gone; the "
        "server's counters are not compared" in captured.err
    )
    assert "goodput" in captured.out


def test_two_modes_whose_second_has_no_goodput_still_report_and_write_the_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every request refused in both modes: the goodput ratio has nothing to divide by, so
    it is n/a (null in the JSON); it crashed formatting None and wrote no JSON."""
    from tests.runtime.loadgen.test_bench_serve import _secured_server

    out = tmp_path / "r.json"
    with _secured_server() as server:
        rc = main(["bench", "serve", "--server", f"127.0.0.1:{server.port}", "--auth-token",
                   "tok-a", "--clients", "1", "--procs", "1", "--duration-s", "1",
                   "--max-new-tokens", "5000", "--mode", "distributed,centralized",
                   "--json", str(out)])  # fmt: skip
    captured = capsys.readouterr()
    assert rc == 1
    assert "goodput distributed / centralized: n/a (centralized: no goodput)" in captured.out
    data = json.loads(out.read_text())
    assert data["goodput_ratio"] is None and len(data["runs"]) == 2
