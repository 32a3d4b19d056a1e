"""The flags that secure a client command's connection to its verification server, shared
by ``edgespec draft``, ``edgespec drafting-server`` and ``edgespec bench serve`` (where
they apply to its ``--server`` only): ``--auth-token``, ``--tls-ca`` and
``--tls-server-name`` (each value checked as it is parsed), and :func:`check_tls_name`."""

from __future__ import annotations

import argparse

from edgespec.runtime.edge.config_access import NAME_NEEDS_CA
from edgespec.server_access_types import auth_token, ca_file, tls_server_name


def add_server_access_arguments(parser: argparse._ActionsContainer) -> None:
    """``--auth-token``, ``--tls-ca`` and ``--tls-server-name``, on ``parser`` or one of
    its argument groups."""
    parser.add_argument(
        "--auth-token",
        type=auth_token,
        help="token the server accepts (one of its --auth-token; default: none)",
    )
    parser.add_argument(
        "--tls-ca",
        type=ca_file,
        metavar="PEM",
        help="connect over TLS, verifying the server with this CA certificate file (the "
        "server's own certificate when self-signed; default: plaintext)",
    )
    parser.add_argument(
        "--tls-server-name",
        type=tls_server_name,
        metavar="NAME",
        help="with --tls-ca: the name the server's certificate holds, when the --server "
        "address is not it, e.g. an IP address (default: the address's host)",
    )


def check_tls_name(args: argparse.Namespace) -> None:
    """A ``UserInputError`` for ``--tls-server-name`` without ``--tls-ca`` (the connection
    would be plaintext, the name ignored)."""
    from edgespec.errors import UserInputError

    if args.tls_server_name is not None and args.tls_ca is None:
        raise UserInputError(f"--tls-server-name: {NAME_NEEDS_CA.format(ca='--tls-ca')}")
