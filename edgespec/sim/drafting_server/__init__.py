"""The drafting-server simulator: Zhu et al.'s edge drafting server (seed 001, §II) as
events, the system the runtime serves as ``edgespec drafting-server``; a scenario chooses
it with ``system: drafting_server`` (:mod:`edgespec.sim.setup.system`).

K users upload their prompts over an OFDMA uplink (Eqs. 15–16); a small base station
(SBS) runs one draft model and drafts for the users in batches, one batch at a time
(Eq. 19); a macro base station (MBS) verifies (Eq. 18). A planner's
:class:`edgespec.policies.drafting_server.planner.PipelinePlan` (batches, speculation
length, bandwidth shares; the paper pipelines drafting with verification) runs as events
on :class:`edgespec.sim.kernel.EventQueue`.

Modules, by responsibility:

* :mod:`.stages` — stage durations (Eqs. 13, 14, 17–19) with the paper's expected L in
  the KV lengths, in every acceptance mode;
* :mod:`.outcomes` — what a drafted block commits: ``expected`` (L tokens, Eq. 7),
  ``iid`` or ``trace`` acceptance, optionally cut short by a stop predictor;
* :mod:`.verifier` — the MBS's schedule: the plan's batch-per-pass order, or a registered
  batching policy over per-session blocks;
* :mod:`.uplink` — each user's upload time (Eq. 15);
* :mod:`.engine` — the entities and events, :func:`.engine.simulate_pipeline`;
* :mod:`.result` — :class:`.result.PipelineSimResult`;
* :mod:`.scenario`, :mod:`.build`, :mod:`.report`, :mod:`.command` — the scenario form
  (``system: drafting_server`` and its ``pipeline:`` section), its assembly, the printed
  report and ``edgespec sim``'s dispatch.
"""
