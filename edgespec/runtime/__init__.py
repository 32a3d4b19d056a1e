"""The real runtime: gRPC verification server, engine, edge drafters, model backends.

Only :mod:`edgespec.runtime.transport` imports grpc; everything else (engine, server
scheduler, drafter loop, backends) is usable in-process, e.g. by
:func:`edgespec.runtime.drafter.speculative_generate`.
"""
