"""A session asking for the target's hidden states (``return_hidden``) is refused at open
when the target's logits are not its ``lm_head`` over its body's last hidden state: a pass
that returns hidden states takes the head apart so, for its whole batch, and on a Granite
target (``logits_scaling``) every session in a batch beside such a session got logits
scaled by 8 (its sampling, logit bias and logprobs changed); on a GPT-NeoX one (no
``.model``) every such batch raised. A server given a semantic head on such a target does
not start."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from transformers import GPTNeoXConfig, GPTNeoXForCausalLM, GraniteConfig, GraniteForCausalLM

from edgespec.core.types import SamplingParams
from edgespec.runtime.backends.lm_head import hidden_head_problem
from edgespec.runtime.backends.transformers_backend import TransformersTarget
from edgespec.runtime.errors import ErrorCode, RequestError
from edgespec.runtime.messages import SemanticSpec, SessionSpec
from edgespec.runtime.server.engine import VerificationEngine
from edgespec.runtime.server.engine_checks import check_session_spec
from edgespec.runtime.server.semantic import semantic_rules
from tests.models.tiny import tiny_target
from tests.runtime.semantic_helpers import constant_head

SMALL = {"vocab_size": 64, "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
         "num_attention_heads": 4, "max_position_embeddings": 128}  # fmt: skip


def _granite() -> Any:
    torch.manual_seed(0)
    config = GraniteConfig(**SMALL, num_key_value_heads=2, logits_scaling=8.0)
    return GraniteForCausalLM(config).eval()


def _neox() -> Any:
    torch.manual_seed(0)
    return GPTNeoXForCausalLM(GPTNeoXConfig(**SMALL)).eval()


def test_the_problem_names_the_scale_or_the_missing_parts() -> None:
    assert hidden_head_problem(_granite()) == (
        "the target (granite) scales its logits (logits_scaling 8.0), which its passes that "
        "return hidden states do not"
    )
    assert hidden_head_problem(_neox()) == (
        "the target (gpt_neox) has no .model body and .lm_head to take them from"
    )
    assert hidden_head_problem(tiny_target()) is None


@pytest.mark.parametrize("model", [_granite, _neox])
def test_return_hidden_is_refused_at_open_on_such_a_target(model: Any) -> None:
    backend = TransformersTarget(model(), eos_token_ids=frozenset(), numerics="lossy",
                                 check_masks=False)  # fmt: skip
    spec = SessionSpec("s", "c", (1, 2, 3), SamplingParams(max_new_tokens=4), return_hidden=True)
    with pytest.raises(RequestError) as info:
        check_session_spec(spec, backend, {"exact"}, 1 << 16)
    assert info.value.code is ErrorCode.INVALID_ARGUMENT
    assert info.value.message == f"return_hidden: {backend.hidden_state_problem}"
    plain = SessionSpec("p", "c", (1, 2, 3), SamplingParams(max_new_tokens=4))
    check_session_spec(plain, backend, {"exact"}, 1 << 16)  # served as before


def test_a_rule_that_reads_hidden_states_is_refused_at_open_on_such_a_target() -> None:
    """A semantic session's passes return hidden states too: the same head taken apart."""
    backend = TransformersTarget(_granite(), eos_token_ids=frozenset(), numerics="lossy",
                                 check_masks=False)  # fmt: skip
    engine = VerificationEngine(backend, rules=semantic_rules(constant_head(-20.0)))
    spec = SessionSpec("s", "c", (1, 2, 3), SamplingParams(max_new_tokens=4),
                       verification_rule="semantic",
                       semantic=SemanticSpec(threshold=12, uplink_bps=20e6))  # fmt: skip
    with pytest.raises(RequestError) as info:
        engine.open_session(spec)
    assert info.value.code is ErrorCode.INVALID_ARGUMENT
    assert info.value.message == (
        f"verification rule 'semantic' reads hidden states: {backend.hidden_state_problem}"
    )
    engine.open_session(SessionSpec("p", "c", (1, 2, 3), SamplingParams(max_new_tokens=4)))


def test_a_server_with_a_semantic_head_on_such_a_target_does_not_start() -> None:
    """Each semantic session was refused at open, on a server that had started and said it
    served the semantic rule: the head is refused at start, naming why."""
    from edgespec.config import ConfigError, from_dict
    from edgespec.runtime.commands.serve_service import build_service
    from edgespec.runtime.commands.serve_target import LoadedTarget
    from edgespec.runtime.server.config import ServerConfig

    backend = TransformersTarget(_granite(), eos_token_ids=frozenset(), numerics="lossy",
                                 check_masks=False)  # fmt: skip
    target = LoadedTarget(backend, 32, None, None)
    config = from_dict(ServerConfig, {})
    head = constant_head(-20.0)
    with pytest.raises(ConfigError) as info:
        build_service(config, None, target, head, None, None, None, False, print, print)
    assert str(info.value) == (
        "config field 'semantic_head': the semantic rule reads hidden states: "
        f"{backend.hidden_state_problem}"
    )
