"""From a scenario file to the simulator's parts, validated before anything runs.

Modules, by responsibility:

* :mod:`.scenario` — :class:`.scenario.Scenario` (YAML → frozen dataclasses), its checks
  and the bundled scenarios; :mod:`.scenario_checks` — its ``auto_topology`` pools';
  :mod:`.centralized_fields` — the fields ``mode: centralized`` leaves unused, refused;
  :mod:`.workload_config` — the ``workload:`` and ``dsdsim_compat:`` sections;
  :mod:`.system` — which simulator a scenario is for (``system:``); a scenario file's own
  paths are read against its folder by :mod:`edgespec.config.file_paths`;
* :mod:`.pools`, :mod:`.cells`, :mod:`.topology`, :mod:`.wireless` — the pools, the cells
  they are pinned in, their expansion into entities, a wireless link's uplinks;
* :mod:`.workload` — request traces; :mod:`.lengths` — length tables;
  :mod:`.trace_fields` — the fields a trace line may have, and the refusal of any other;
* :mod:`.sources` — the data files a scenario names, loaded; :mod:`.resolve` — everything
  it names, resolved once; :mod:`.build` — the run's parts built from that.
"""
