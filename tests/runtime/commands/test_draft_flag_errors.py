"""``edgespec draft``: the exact message and exit code of flag mistakes (before any model
loads or server is asked), and which flags reach the client and the request (a fake
:class:`RemoteVerifier` records them, for the server-side baselines)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from edgespec.cli import main
from edgespec.policies import registry
from edgespec.runtime.messages import ServerHealth
from edgespec.runtime.wire import grpc_client
from tests.runtime.tls_certs import make_ca

BASE = ["draft", "--server", "127.0.0.1:1", "--draft", "ngram"]


class FakeVerifier:
    """Records what the draft command builds and asks; streams the prompt back."""

    made: ClassVar[list[FakeVerifier]] = []

    def __init__(
        self,
        address: str,
        auth_token: str | None,
        tls_ca: str | None,
        timeout_s: float,
        max_message_bytes: int,
        tls_server_name: str | None,
        close_timeout_s: float,
    ) -> None:
        self.address, self.auth_token, self.tls_ca = address, auth_token, tls_ca
        self.timeout_s, self.max_message_bytes = timeout_s, max_message_bytes
        self.close_timeout_s = close_timeout_s
        self.asked: list[tuple[Any, bool, int]] = []
        FakeVerifier.made.append(self)

    def vocab_size(self) -> int:
        return 64

    def check_credentials(self) -> None:
        pass  # it takes any token

    def target_name(self) -> str | None:
        return None

    def max_context_tokens(self) -> int | None:
        return None  # an older server's Health: the context is left to OpenSession

    def max_draft_tokens(self) -> int | None:
        return None  # an older server's Health: blocks are left to Verify

    def describe(self) -> ServerHealth:
        """Its Health: the facts above, in the one call the command makes."""
        return ServerHealth(True, self.vocab_size(), self.target_name(), self.max_draft_tokens(),
                            self.max_context_tokens(), None, None)  # fmt: skip

    def generate(
        self, spec: Any, fused: bool = False, gamma: int = 4, *callbacks: Any
    ) -> Iterator[Any]:
        self.asked.append((spec, fused, gamma))
        yield spec.prompt_token_ids


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> list[FakeVerifier]:
    FakeVerifier.made = []
    monkeypatch.setattr(grpc_client, "RemoteVerifier", FakeVerifier)
    return FakeVerifier.made


def test_baseline_requests_carry_the_flags(
    fake: list[FakeVerifier], capsys: pytest.CaptureFixture[str], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    monkeypatch.chdir(tmp_path)
    make_ca(tmp_path, "ca")  # --tls-ca holds a certificate, checked as the flags are parsed
    args = ["draft", "--server", "h:1", "--prompt-ids", "4, 5,6", "--mode", "fused"]
    args += ["--seed", "11", "--max-new-tokens", "7", "--temperature", "0.5", "--top-p", "0.9"]
    args += ["--top-k", "40", "--min-p", "0.05", "--ignore-eos", "--repetition-penalty", "1.2"]
    args += ["--frequency-penalty", "-0.5", "--presence-penalty", "2"]
    args += ["--stop-token-ids", "9,1", "--min-tokens", "3", "--logit-bias", "8:-100,2:1.5"]
    args += ["--auth-token", "tok", "--tls-ca", "ca.pem", "--set", "slo_class=gold"]
    args += ["--set", "request_timeout_s=9", "--set", "client_id=edge-7"]
    args += ["--max-message-bytes", "8388608"]
    assert main(args) == 0
    assert capsys.readouterr().out == "[4, 5, 6] \n"
    (client,) = fake
    assert (client.address, client.auth_token, client.tls_ca, client.timeout_s) == (
        "h:1",
        "tok",
        "ca.pem",
        9.0,
    )
    assert (client.max_message_bytes, client.close_timeout_s) == (8388608, 2.0)  # close: ≤ 2 s
    ((spec, fused, gamma),) = client.asked
    assert (fused, gamma) == (True, 4)  # the default static window's γ
    assert spec.prompt_token_ids == (4, 5, 6)
    assert (spec.client_id, spec.slo_class) == ("edge-7", "gold")
    assert spec.session_id.startswith("edge-7-") and len(spec.session_id) == len("edge-7-") + 12
    s = spec.sampling
    assert (s.seed, s.max_new_tokens, s.temperature, s.top_p) == (11, 7, 0.5, 0.9)
    assert (s.top_k, s.min_p, s.ignore_eos) == (40, 0.05, True)
    assert (s.repetition_penalty, s.frequency_penalty, s.presence_penalty) == (1.2, -0.5, 2.0)
    assert (s.stop_token_ids, s.min_tokens) == ((1, 9), 3)  # ascending, as the wire takes them
    assert s.logit_bias == ((2, 1.5), (8, -100.0))  # ascending too


def test_window_params_alone_set_the_default_static_window(fake: list[FakeVerifier]) -> None:
    """Was ``config field 'window.name': required field is missing``."""
    args = ["draft", "--prompt-ids", "1", "--mode", "fused", "--set", "window.params.gamma=3"]
    assert main(args) == 0
    ((_, fused, gamma),) = fake[0].asked
    assert (fused, gamma) == (True, 3)


def test_centralized_mode_and_gamma(fake: list[FakeVerifier]) -> None:
    args = ["draft", "--prompt-ids", "1", "--mode", "centralized", "--gamma", "6"]
    assert main(args) == 0
    ((spec, fused, gamma),) = fake[0].asked
    assert (fused, gamma, fake[0].address) == (False, 6, "127.0.0.1:50051")
    assert (spec.sampling.seed, spec.sampling.max_new_tokens, spec.slo_class) == (
        None,
        64,
        "default",
    )


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["--prompt-ids", "1", "--window", "static", "--gamma", "2"],
            "give --window or --gamma (a static window), not both",
        ),
        (
            ["--prompt-ids", "1", "--stop-threshold", "0.5"],
            "--stop-threshold needs --stop-predictor",
        ),
        (  # no drafted round would cross the link
            ["--serve-openai", "127.0.0.1:0", "--mode", "centralized", "--link-rtt-ms", "30"],
            "--link-rtt-ms: the emulated link needs --mode distributed, not centralized",
        ),
        (
            ["--prompt-ids", "1", "--stop-predictor", "bundled", "--mode", "fused"],
            "--stop-predictor: needs --mode distributed, got fused",
        ),
        (
            ["--prompt-ids", "1", "--stop-predictor", "bundled", "--stop-threshold", "2"],
            "--stop-threshold: threshold must be in [0, 1], got 2.0",
        ),
        (
            ["--prompt-ids", "1", "--routing", "nosuch", "--server", "127.0.0.1:2"],
            f"--routing: unknown routing policy 'nosuch'; known: {sorted(registry.ROUTING)}",
        ),
        (  # was "config field 'window'": the policy is built from window.name and params
            ["--prompt-ids", "1", "--window", "nosuch"],
            f"--window: unknown window policy 'nosuch'; known: {sorted(registry.WINDOW)}",
        ),
        (  # was "--window: ...": --window names the policy, --set gave its params
            ["--prompt-ids", "1", "--window", "static", "--set", "window.params.gamma=-1"],
            "config field 'window.params.gamma': window policy 'static': gamma must be >= 1, "
            "got -1",
        ),
        (
            ["--prompt-ids", "1", "--window", "static", "--set", "window.params.gama=3"],
            "config field 'window.params': window policy 'static' has no parameter(s) ['gama']; "
            "known: ['fused', 'gamma'] (did you mean 'gamma'?)",
        ),
        (
            ["--prompt-ids", "1", "--gamma", "0"],
            "--gamma: window policy 'static': gamma must be >= 1, got 0",
        ),
        (
            ["--prompt-ids", "1", "--request-timeout-s", "0"],
            "--request-timeout-s: must be a finite number > 0, got 0.0",
        ),
        (
            ["--prompt-ids", "1", "--progress-timeout-s", "-5"],
            "--progress-timeout-s: must be a finite number > 0, got -5.0",
        ),
        (
            ["--prompt-ids", "1", "--max-reconnects", "-1"],
            "--max-reconnects: must be >= 0, got -1",
        ),
        (
            ["--prompt-ids", "1", "--draft", "nosuchdraft"],
            "--draft: unknown model 'nosuchdraft': known names are gemma3-270m, "
            "gemma3-270m-draft, or give a path to a local Hugging Face model directory or "
            ".gguf file",
        ),
        (
            ["--serve-openai", "127.0.0.1:0", "--openai-max-queued", "-1"],
            "--openai-max-queued: must be >= 0, got -1",
        ),
        (
            ["--prompt-ids", "1", "--top-p", "0.5"],
            "--top-p: 0.5 does nothing at temperature 0 (greedy): give a temperature > 0 to "
            "sample with top_p",
        ),
        (
            ["--prompt-ids", "1", "--temperature", "0.5", "--top-p", "0"],
            "--top-p: must be in (0, 1], got 0",
        ),
        (  # the endpoint's requests carry their own
            ["--serve-openai", "127.0.0.1:0", "--temperature", "0.7", "--top-p", "0.9"],
            "--top-p 0.9: the endpoint (--serve-openai) takes each request's own top_p; drop "
            "--top-p",
        ),
        (
            ["--prompt-ids", "1", "--top-k", "40"],
            "--top-k: 40 does nothing at temperature 0 (greedy): give a temperature > 0 to "
            "sample with top_k",
        ),
        (
            ["--prompt-ids", "1", "--min-p", "0.1"],
            "--min-p: 0.1 does nothing at temperature 0 (greedy): give a temperature > 0 to "
            "sample with min_p",
        ),
        (
            ["--prompt-ids", "1", "--temperature", "0.5", "--top-k", "-3"],
            "--top-k: must be a whole number in [0, 2**32) (0: every token), got -3",
        ),
        (
            ["--prompt-ids", "1", "--temperature", "0.5", "--min-p", "2"],
            "--min-p: must be in [0, 1] (0: no cut), got 2",
        ),
        (
            ["--serve-openai", "127.0.0.1:0", "--temperature", "0.7", "--top-k", "40"],
            "--top-k 40: the endpoint (--serve-openai) takes each request's own top_k; drop "
            "--top-k",
        ),
        (
            ["--serve-openai", "127.0.0.1:0", "--temperature", "0.7", "--min-p", "0.05"],
            "--min-p 0.05: the endpoint (--serve-openai) takes each request's own min_p; drop "
            "--min-p",
        ),
        (
            ["--serve-openai", "127.0.0.1:0", "--ignore-eos"],
            "--ignore-eos: the endpoint (--serve-openai) takes each request's own ignore_eos; "
            "drop --ignore-eos",
        ),
        (
            ["--prompt-ids", "1", "--repetition-penalty", "0"],
            "--repetition-penalty: must be in [1.175e-38, 3.403e+38] (float32's normal range; "
            "1: off), got 0",
        ),
        (
            ["--prompt-ids", "1", "--presence-penalty", "2.5"],
            "--presence-penalty: must be in [-2, 2] (0: off), got 2.5",
        ),
        (
            ["--serve-openai", "127.0.0.1:0", "--frequency-penalty", "0.5"],
            "--frequency-penalty 0.5: the endpoint (--serve-openai) takes each request's own "
            "frequency_penalty; drop --frequency-penalty",
        ),
        (
            ["--prompt-ids", "1", "--max-new-tokens", "4", "--min-tokens", "5"],
            "--min-tokens: must be in [0, max_new_tokens = 4], got 5",
        ),
        (
            ["--prompt-ids", "1", "--logit-bias", "3:1,3:2"],
            "--logit-bias: names token 3 more than once",
        ),
        (
            ["--prompt-ids", "1", "--logit-bias", "3:101"],
            "--logit-bias: biases must be in [-100, 100], got 101",
        ),
        (
            ["--serve-openai", "127.0.0.1:0", "--logit-bias", "3:1"],
            "--logit-bias: the endpoint (--serve-openai) takes each request's own logit_bias; "
            "drop --logit-bias",
        ),
        (
            ["--prompt-ids", "1", "--stop-token-ids", "3,3"],
            "--stop-token-ids: names token 3 more than once",
        ),
        (
            ["--serve-openai", "127.0.0.1:0", "--stop-token-ids", "3"],
            "--stop-token-ids: the endpoint (--serve-openai) takes each request's own "
            "stop_token_ids; drop --stop-token-ids",
        ),
        (
            ["--prompt-ids", "1", *[x for s in "abcde" for x in ("--stop", s)]],
            "--stop: takes at most 4 sequences, got 5",
        ),
        (
            ["--prompt-ids", "1", "--stop", ""],
            "--stop: must be non-empty strings, got ['']",
        ),
        (
            ["--prompt-ids", "1", "--stop", "x" * 257],
            "--stop: a stop sequence has at most 256 characters, got 257",
        ),
        (
            ["--serve-openai", "127.0.0.1:0", "--stop", "\n"],
            "--stop: the endpoint (--serve-openai) takes each request's own stop; drop --stop",
        ),
        (  # was ignored: greedy decoding draws nothing
            ["--prompt-ids", "1", "--seed", "3"],
            "--seed 3 is for sampling (--temperature > 0); greedy decoding draws nothing",
        ),
        (  # was ignored: the endpoint never read it
            ["--serve-openai", "127.0.0.1:0", "--temperature", "0.7", "--seed", "3"],
            "--seed 3: the endpoint (--serve-openai) takes each request's own seed; drop --seed",
        ),
    ],
)
def test_flag_mistakes_exit_2_before_any_request(
    fake: list[FakeVerifier], flags: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([*BASE, *flags]) == 2
    assert capsys.readouterr().err.strip() == f"edgespec draft: {message}"
    assert all(not v.asked for v in fake)


def test_stop_without_a_tokenizer_is_refused_before_the_first_token(
    fake: list[FakeVerifier], capsys: pytest.CaptureFixture[str]
) -> None:
    """A stop sequence is found in the text: with token ids, the ``ngram`` draft and a
    server that names no target, there is none, and ``--stop`` is refused (exit 2) once
    the server has said so, before any generation."""
    assert main([*BASE, "--prompt-ids", "1", "--stop", "\n"]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "edgespec draft: --stop: stop sequences need a tokenizer: the draft has none, and the "
        "server does not name its target (--tokenizer MODEL)"
    )
    assert all(not v.asked for v in fake)


@pytest.mark.parametrize("mode", [["--prompt-ids", "1"], ["--serve-openai", "127.0.0.1:0"]])
def test_a_draft_folder_without_config_json_names_the_flag(
    fake: list[FakeVerifier], mode: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Was ``edgespec draft: model directory '...' has no config.json ...``: the flag that
    named the folder was not said (and with ``--serve-openai`` only once the server had
    answered)."""
    empty = tmp_path / "my-draft"
    empty.mkdir()
    assert main([*BASE, *mode, "--draft", str(empty)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"edgespec draft: --draft: model directory {str(empty)!r} has no config.json "
        "(expected a Hugging Face model saved with save_pretrained)"
    )
    assert not fake


@pytest.mark.parametrize("ids", ["1,x", "1,,2", "-1", "3,-7", ""])
@pytest.mark.parametrize("command", [["draft"], ["drafting-server", "--server", "127.0.0.1:1"]])
def test_prompt_ids_that_are_no_token_ids_are_a_usage_error(
    ids: str, command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stop:
        main([*command, "--prompt-ids", ids])
    assert stop.value.code == 2
    assert (
        f"argument --prompt-ids: expected comma-separated token ids (integers >= 0), got {ids!r}"
        in capsys.readouterr().err
    )


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("0", "must be >= 1, got 0"),
        ("-2", "must be >= 1, got -2"),
        ("x", "expected an integer, got 'x'"),
    ],
)
def test_a_cap_per_client_under_one_is_a_usage_error(
    value: str, why: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["draft", "--serve-openai", "127.0.0.1:0", "--openai-max-per-client", value])
    assert stop.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"edgespec draft: error: argument --openai-max-per-client: {why}"
    )


def test_a_tree_drafter_holds_24_nodes_unless_told() -> None:
    from edgespec.runtime.edge.draft_backends import make_drafter
    from tests.models.tiny import tiny_target

    model = tiny_target()
    assert make_drafter("d", model, 48, tree="2,1").max_nodes == 24
    assert make_drafter("d", model, 48, tree="2,1", tree_max_nodes=5).max_nodes == 5


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--tree", "1,,2"], "--tree: tree branching has an empty entry in '1,,2' (one integer "
         "per depth)"),
        (["--tree", "2,1,"], "--tree: tree branching has an empty entry in '2,1,' (one integer "
         "per depth)"),
        (["--tree", "1,1,1,1,1"],  # the default γ: no --gamma given
         "--tree 1,1,1,1,1 has 5 depths, more than window.params.gamma 4"),
        (["--tree", "2,2,2", "--gamma", "2"], "--tree 2,2,2 has 3 depths, more than --gamma 2"),
        (["--tree", "1,1,1", "--window", "dynamic",
          "--set", "window.params={initial_gamma: 2, max_gamma: 2}"],
         "--tree 1,1,1 has 3 depths, more than the dynamic window's max_gamma 2"),
    ],
)  # fmt: skip
def test_a_tree_with_an_empty_or_undrafted_depth_is_one_line(
    flags: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["draft", "--prompt-ids", "5,6", "--draft", "some/model", *flags]) == 2
    assert capsys.readouterr().err == f"edgespec draft: {message}\n"


def test_a_tree_as_deep_as_the_window_reaches_is_kept() -> None:
    from edgespec.policies.window import DynamicWindow, StaticWindow
    from edgespec.runtime.commands.draft_checks import check_tree_depth

    check_tree_depth("2,2,1,1", StaticWindow(4))
    check_tree_depth("2,1,1,1,1,1,1,1", DynamicWindow())  # up to its max_gamma 8
    check_tree_depth(None, StaticWindow(1))


@pytest.mark.parametrize(
    ("flags", "warned"),
    [(["--progress-timeout-s", "5"], True), (["--progress-timeout-s", "5",
      "--request-timeout-s", "5"], False), ([], False)],
)  # fmt: skip
def test_a_progress_budget_below_the_request_timeout_is_said(
    fake: list[FakeVerifier], flags: list[str], warned: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each sending of a call waits at most what is left of the progress budget: below the
    request timeout, a slower call gives its request up, which the run says once, first."""
    assert main([*BASE, "--prompt-ids", "1", "--mode", "centralized", *flags]) == 0
    lines = capsys.readouterr().err.splitlines()
    warning = ("edgespec draft: warning: --progress-timeout-s 5 is below --request-timeout-s "
               "30: a verification call slower than 5 s gives its request up, and "
               "--request-timeout-s never applies")  # fmt: skip
    assert (lines[0] == warning) == warned
    assert sum("warning" in line for line in lines) == warned


def test_a_stop_token_outside_the_servers_vocabulary_is_refused_before_the_draft_loads(
    fake: list[FakeVerifier], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server refused it only at the first open, after the draft's load (5.5 s for the
    bundled draft): now once its Health gives the vocabulary, exit 2, nothing loaded."""
    from edgespec.runtime.commands import draft as draft_command

    def never(*args: Any) -> None:
        raise AssertionError("the draft loaded")

    monkeypatch.setattr(draft_command, "_load_draft", never)
    args = ["draft", "--server", "h:1", "--draft", "gemma3-270m-draft", "--prompt-ids", "1"]
    assert main([*args, "--stop-token-ids", "3,64"]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "edgespec draft: --stop-token-ids: 64 is outside the server's vocabulary [0, 64)"
    )
    assert all(not v.asked for v in fake)
