"""How a ``DrafterConfig`` reaches its verification servers, checked once as it is built:
their addresses, the CA that secures them and the name their certificates hold, and the
routing policy that picks one per request."""

from __future__ import annotations

from edgespec.config import ConfigError
from edgespec.errors import did_you_mean
from edgespec.policies.registry import ROUTING
from edgespec.server_access_types import (
    ca_file_problem,
    server_address_problem,
    tls_server_name_problem,
)

NAME_NEEDS_CA = "names the server's TLS certificate: needs {ca} (TLS; without it, plaintext)"
"""Why a ``tls_server_name`` without a ``tls_ca`` is refused (it was ignored: the
connection was plaintext); ``{ca}``: the CA as the field or the flag."""


def check_server_access(
    servers: tuple[str, ...], tls_ca: str | None, tls_server_name: str | None, routing: str
) -> None:
    """A :class:`ConfigError` for the first of ``servers`` that is no ``host:port``, a
    ``tls_ca`` that is no CA file, a ``tls_server_name`` that is no host name or is given
    without ``tls_ca``, or an unknown ``routing`` policy."""
    for address in servers:
        if (problem := server_address_problem(address)) is not None:
            raise ConfigError("server", problem)
    if tls_ca is not None and (problem := ca_file_problem(tls_ca)):
        raise ConfigError("tls_ca", problem)
    if tls_server_name is not None:
        if (problem := tls_server_name_problem(tls_server_name)) is not None:
            raise ConfigError("tls_server_name", problem)
        if tls_ca is None:
            raise ConfigError("tls_server_name", NAME_NEEDS_CA.format(ca="tls_ca"),
                              flag_message=NAME_NEEDS_CA.format(ca="--tls-ca"))  # fmt: skip
    if routing not in ROUTING:
        raise ConfigError(
            "routing.name",
            f"unknown routing policy {routing!r}; known: {sorted(ROUTING)}"
            + did_you_mean(routing, ROUTING),
        )
