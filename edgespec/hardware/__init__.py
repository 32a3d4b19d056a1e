"""What a forward pass costs: the bundled presets and profiles, and the cost models built
from them.

* :mod:`.presets` — model architectures and accelerators, the bundled presets' loaders;
* :mod:`.profile_source` — where a profile is read from: a YAML file or a bundled preset;
* :mod:`.profile_info` — what a profile says of itself (role, clock, model, measured
  range) and its numbers, checked; a profile refused for another role, or said to be used
  beyond what it measured;
* :mod:`.memory_fit` — whether a server's weights and KV budget fit its card's memory;
* :mod:`.cost_models` — roofline, WISP Eq. 19, Zhu Eq. 17 and lookup cost models;
* :mod:`.batch_pricing` — how a batched pass is priced from its entries' shapes;
* :mod:`.wisp` — WISP batching's parameters: a profile or Eq. 19's coefficients;
* :mod:`.drafting_server` — the drafting server's cost inputs (Zhu et al.);
* :mod:`.drafting_plan` — the system and planner part of a ``pipeline:`` scenario, and the
  costs, planner and checked plan both hosts build from it, and its profiles' range
  warnings;
* :mod:`.scenario_system` — which simulator a scenario is for (its ``system:`` key), read
  alike by ``edgespec sim`` and ``edgespec drafting-server --plan``.
"""
