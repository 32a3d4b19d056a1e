"""The drafting server's policies, Zhu et al. (seed 001): pipelined speculative decoding
over an edge drafting server (the simulator's :mod:`edgespec.sim.drafting_server`, the
runtime's ``edgespec drafting-server``).

``costs`` (Eqs. 7–14, 17–19: FLOPs, stage times, memory), ``latency`` (the pipeline
recursion, Eqs. 20–22, and the schemes it is compared with), ``batching`` (Algorithm 1's
DP and the baseline batch rules), ``exhaustive`` (the optimum for small K), ``bandwidth``
(Eqs. 15–16, 25–27) and ``planner`` (problem P: the policy object both hosts call,
:class:`edgespec.policies.interfaces.DraftingPlanner`, registered as ``zhu``).
Pure: numpy only.
"""
