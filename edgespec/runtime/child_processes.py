"""The context the program's own child processes start in: the drafters of `edgespec
calibrate`'s real run, `edgespec bench serve`'s load clients and the WISP serving
reproduction's clients.

Each child is forked from a fork server (:mod:`multiprocessing`'s ``forkserver``) that has
imported torch and the modules given once, instead of being spawned as a fresh interpreter
that imports them itself (a second or more of CPU per child, paid again for every client and
every run). The fork server is a single-threaded process of its own, started by the first
child's start, so a child never inherits the parent's threads (a gRPC server's, torch's);
it holds the parent's working folder and environment as they were then, which the program
does not change while it runs. The modules it imports are fixed by its first start: a later
caller's children import what is missing themselves. Where there is no fork server (not
POSIX), children are spawned."""

from __future__ import annotations

import multiprocessing
from multiprocessing.context import ForkServerContext, SpawnContext

PRELOADED = ("torch", "edgespec.runtime.edge.drafter", "edgespec.runtime.wire.grpc_client")
"""What every fork server imports: what each of these children imports first."""


def child_context(*modules: str) -> ForkServerContext | SpawnContext:
    """The context to start children in: a fork server importing :data:`PRELOADED` and
    ``modules`` (the module of the children's target, what it unpickles) when it starts."""
    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context: ForkServerContext = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([*PRELOADED, *modules])
    return context
