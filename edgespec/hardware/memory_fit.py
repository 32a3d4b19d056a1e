"""Whether a server's model and KV budget fit its accelerator's memory: the weights
(:attr:`~edgespec.hardware.presets.ModelArchitecture.weight_bytes`) and ``kv_budget_tokens``
tokens of KV (:attr:`~edgespec.hardware.presets.ModelArchitecture.kv_bytes_per_token`)
against the card's ``memory_gb``. The simulator keeps whatever KV budget it is given; a
budget the card cannot hold simulates a server that cannot exist, so ``edgespec sim`` says
so before it runs (:func:`memory_fit_warning`). Activations and the runtime's own memory
are not counted: a budget that fits here may still be too large by them."""

from __future__ import annotations

from edgespec.hardware.presets import HardwareSpec, ModelArchitecture

GB = 1e9


def kv_tokens_that_fit(model: ModelArchitecture, hardware: HardwareSpec) -> int:
    """The KV tokens ``hardware``'s memory holds beside ``model``'s weights (0: none)."""
    spare = hardware.memory_gb * GB - model.weight_bytes
    return max(0, int(spare // model.kv_bytes_per_token))


def memory_fit_warning(
    pool: str, model: ModelArchitecture, hardware: HardwareSpec, kv_budget_tokens: int
) -> str | None:
    """The line said for server pool ``pool`` when its weights and KV budget are more than
    its card's memory, else ``None``."""
    weights, kv = model.weight_bytes, kv_budget_tokens * model.kv_bytes_per_token
    if weights + kv <= hardware.memory_gb * GB:
        return None
    return (
        f"warning: server pool {pool!r}: {model.name}'s weights ({weights / GB:.1f} GB) and "
        f"kv_budget_tokens {kv_budget_tokens:,} ({kv / GB:.1f} GB at "
        f"{model.kv_bytes_per_token:,} bytes a token) need {(weights + kv) / GB:.1f} GB, over "
        f"{hardware.name}'s {hardware.memory_gb:g} GB: the simulated server keeps more KV "
        f"than the card holds (at most {kv_tokens_that_fit(model, hardware):,} tokens beside "
        "the weights)"
    )
