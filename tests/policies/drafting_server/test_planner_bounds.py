"""The planner's speculation lengths are bounded (planning searches every l up to
``max_spec_len``: 2560 took minutes), in the planner and in the ``pipeline:`` scenario; so
is the output length it plans for (its DP tables grow with it: 10**9 asked for 87 GiB)."""

from __future__ import annotations

import pytest

from edgespec.config import ConfigError
from edgespec.policies.drafting_server.planner import MAX_OUTPUT_LEN, PipelinePlanner
from edgespec.policies.params import MAX_GAMMA, PolicyParamError
from edgespec.sim.drafting_server.scenario import pipeline_scenario_from_dict
from tests.policies.drafting_server.helpers import paper_costs


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_spec_len": 2560}, "max_spec_len must be in [1, 256], got 2560"),
        ({"max_spec_len": 0}, "max_spec_len must be in [1, 256], got 0"),
        ({"spec_len": 257}, "spec_len must be in [1, 256], got 257"),
        ({"spec_len": 0}, "spec_len must be in [1, 256], got 0"),
        ({"output_len": 10**9}, "output_len must be in [1, 32768], got 1000000000"),
        ({"output_len": 0}, "output_len must be in [1, 32768], got 0"),
        ({"static_batch_size": 0}, "static_batch_size must be >= 1, got 0"),
        (
            {"batching": "greedy"},
            "batching must be one of ('dp', 'max', 'static', 'heuristic', 'none'), got 'greedy'",
        ),
        ({"bandwidth": "fair"}, "bandwidth must be 'optimal' or 'uniform', got 'fair'"),
    ],
)
def test_planner_parameters_are_bounded(options: dict[str, int], message: str) -> None:
    with pytest.raises(PolicyParamError) as error:
        PipelinePlanner(paper_costs(), **options)  # type: ignore[arg-type]
    assert (error.value.param, str(error.value)) == (next(iter(options)), message)


def test_the_bound_itself_is_accepted() -> None:
    planner = PipelinePlanner(
        paper_costs(), max_spec_len=MAX_GAMMA, spec_len=MAX_GAMMA, output_len=MAX_OUTPUT_LEN
    )
    assert (planner.max_spec_len, planner.spec_len, planner.output_len) == (256, 256, 32768)


@pytest.mark.parametrize(
    ("override", "message"),
    [
        (
            "pipeline.planner.max_spec_len=2560",
            "config field 'pipeline.planner.max_spec_len': must be <= 256, got 2560",
        ),
        (
            "pipeline.planner.spec_len=300",
            "config field 'pipeline.planner.spec_len': must be <= 256, got 300",
        ),
    ],
)
def test_the_scenario_names_the_field(override: str, message: str) -> None:
    with pytest.raises(ConfigError) as error:
        pipeline_scenario_from_dict({"pipeline": {}}, [override])
    assert str(error.value) == message
