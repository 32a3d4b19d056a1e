"""The real runtime: gRPC verification server, engine, edge drafters, model backends.

Only :mod:`edgespec.runtime.wire.grpc_common`, :mod:`~edgespec.runtime.wire.grpc_server` and
:mod:`~edgespec.runtime.wire.grpc_client` import grpc; everything else (engine, server
scheduler, drafter loop, backends) is usable in-process, e.g. by
:func:`edgespec.runtime.wire.inprocess.speculative_generate`.
"""
