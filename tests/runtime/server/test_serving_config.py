"""The serving configs (edgespec.runtime.server.config): ServerConfig's own rules."""

from __future__ import annotations

import pytest

from edgespec.arguments import DevicePlacement
from edgespec.config import ConfigError, from_dict, load_config
from edgespec.runtime.edge.config import DrafterConfig
from edgespec.runtime.server.config import ServerConfig


def test_server_deadline_rule_and_prefix_cache() -> None:
    given = {"deadline_rule": "token_speed", "prefix_cache": False, "slo_classes": {"g": 4.0}}
    cfg = from_dict(ServerConfig, given)
    assert (cfg.deadline_rule, cfg.prefix_cache) == ("token_speed", False)
    with pytest.raises(ConfigError) as info:  # a rule no deadline would ever come from
        from_dict(ServerConfig, {**given, "slo_classes": {"g": None}})
    assert str(info.value) == (
        "config field 'deadline_rule': token_speed: no class has a token-speed target to set "
        "deadlines from (none: no deadline)"
    )
    assert (load_config(ServerConfig).deadline_rule, load_config(ServerConfig).prefix_cache) == (
        "pace",
        True,
    )
    with pytest.raises(ConfigError) as info:
        from_dict(ServerConfig, {"deadline_rule": "edf"})
    assert str(info.value) == (
        "config field 'deadline_rule': must be one of ['pace', 'token_speed'], got 'edf'"
    )
    with pytest.raises(ConfigError) as info:
        from_dict(ServerConfig, {"prefix_cache": "no"})
    assert str(info.value) == "config field 'prefix_cache': expected true/false, got 'no' (str)"
    with pytest.raises(ConfigError) as info:
        from_dict(DrafterConfig, {"routing": {"name": "jqs"}})
    assert str(info.value).endswith(" (did you mean 'jsq'?)")


@pytest.mark.parametrize("target", [0.0, -2.0, float("inf"), float("nan")])
def test_server_slo_targets_are_finite_and_positive(target: float) -> None:
    with pytest.raises(ConfigError) as info:
        from_dict(ServerConfig, {"slo_classes": {"gold": target}})
    assert str(info.value) == (
        f"config field 'slo_classes.gold': must be a finite number > 0 or null, got {target}"
    )


def test_server_device_and_dtype() -> None:
    """``dtype`` null (the default) follows ``device``: float32 on cpu, bfloat16 on cuda."""
    assert ServerConfig().placement() == DevicePlacement("cpu", "float32")
    cuda = from_dict(ServerConfig, {"device": "cuda:1"})
    assert (cuda.device, cuda.dtype, cuda.placement()) == (
        "cuda:1",
        None,
        DevicePlacement("cuda:1", "bfloat16"),
    )
    given = from_dict(ServerConfig, {"device": "cuda", "dtype": "float16"})
    assert given.placement() == DevicePlacement("cuda", "float16")
    with pytest.raises(ConfigError) as info:
        from_dict(ServerConfig, {"device": "gpu"})
    assert str(info.value) == (
        "config field 'device': expected cpu, cuda or cuda:N (N a GPU index), got 'gpu'"
    )
    with pytest.raises(ConfigError) as info:
        from_dict(ServerConfig, {"dtype": "int8"})
    assert str(info.value).startswith("config field 'dtype': ")
