"""Every policy kind has a Protocol in edgespec.policies.interfaces and a registry by
name: Zhu's planner and WISV's decision head are taken by name like routing, batching
and window policies, and satisfy their Protocols."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from edgespec.config import ConfigError, PolicySpec
from edgespec.hardware.drafting_server import GB, zhu_stage
from edgespec.policies.drafting_server.costs import PipelineCosts
from edgespec.policies.drafting_server.planner import PipelinePlanner, observe_tasks
from edgespec.policies.interfaces import DraftingPlanner, SemanticHead
from edgespec.policies.registry import KINDS, build_policy_at
from edgespec.policies.semantic.head import DecisionHead


def test_every_kind_is_registered() -> None:
    assert sorted(KINDS) == ["batching", "head", "planner", "routing", "stop", "window"]
    assert sorted(KINDS["planner"]) == ["zhu"] and sorted(KINDS["head"]) == ["wisv"]


def _head_file(tmp_path: Path) -> str:
    d_in, width = 2 + 3 + 2, 4
    rng = np.random.default_rng(0)
    head = DecisionHead(
        2,
        3,
        np.zeros(d_in),
        np.ones(d_in),
        rng.normal(size=(d_in, width)),
        np.zeros(width),
        rng.normal(size=(width, 1)),
        np.zeros(1),
    )
    path = tmp_path / "head.json"
    path.write_text(json.dumps(head.to_json()))
    return str(path)


def test_the_head_is_taken_by_name_and_is_a_semantic_head(tmp_path: Path) -> None:
    spec = PolicySpec("wisv", {"path": _head_file(tmp_path)})
    head = build_policy_at("semantic_head", "head", spec)
    assert isinstance(head, SemanticHead)
    assert (head.draft_hidden, head.target_hidden, head.num_csi) == (2, 3, 2)
    x = head.inputs(np.ones((3, 2)), np.ones((3, 3)), (0.5, 0.5))
    assert x.shape == (3, 7)
    assert head.rejects(x, 0).tolist() == [True, True, True]  # T = 0 rejects every mismatch
    assert head.rejects(x, 16).tolist() == [False, False, False]  # T = 16 accepts each


def test_the_planner_is_taken_by_name_and_is_a_drafting_planner() -> None:
    draft, draft_stage = zhu_stage("rtx3080-tinyllama-1.1b-zhu")
    verify, verify_stage = zhu_stage("rtx4500-llama2-7b-zhu")
    costs = PipelineCosts(draft, verify, draft_stage, verify_stage, 24 * GB, 0.8)
    spec = PolicySpec("zhu", {"costs": costs, "spec_len": 2})
    planner = build_policy_at("pipeline.planner", "planner", spec)
    assert isinstance(planner, DraftingPlanner) and planner == PipelinePlanner(costs, spec_len=2)
    obs = observe_tasks([4, 8], [16, 16], [2.0, 2.0], 1e6)
    assert planner.plan(obs) == PipelinePlanner(costs, spec_len=2).plan(obs)
    bad = PolicySpec("zhu", {"costs": costs, "batching": "x"})
    with pytest.raises(ConfigError) as error:
        build_policy_at("pipeline.planner", "planner", bad)
    assert str(error.value).startswith(
        "config field 'pipeline.planner.params.batching': planner policy 'zhu': "
        "batching must be one of"
    )
