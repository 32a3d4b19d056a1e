"""Request errors with a status code; :mod:`edgespec.runtime.wire.grpc_common` maps them onto gRPC
status codes."""

from __future__ import annotations

import enum
import re


class ErrorCode(enum.Enum):
    INVALID_ARGUMENT = "INVALID_ARGUMENT"
    NOT_FOUND = "NOT_FOUND"
    RESOURCE_EXHAUSTED = "RESOURCE_EXHAUSTED"
    FAILED_PRECONDITION = "FAILED_PRECONDITION"
    UNAUTHENTICATED = "UNAUTHENTICATED"
    UNAVAILABLE = "UNAVAILABLE"
    INTERNAL = "INTERNAL"
    CANCELLED = "CANCELLED"
    PERMISSION_DENIED = "PERMISSION_DENIED"
    # the server dropped what the call needed (a semantic follow-up's hidden rows evicted
    # under kv_budget_tokens) and committed nothing: the client plays the round again
    ABORTED = "ABORTED"


class RequestError(Exception):
    """A request the server refuses; ``message`` says what was wrong and where.
    ``counted``: the server has counted it (``edgespec_rejected_requests_total``), so a
    refusal passed up from the service to the gRPC servicer counts once."""

    def __init__(self, code: ErrorCode, message: str) -> None:
        super().__init__(f"{code.value}: {message}")
        self.code = code
        self.message = message
        self.counted = False

    @property
    def past_deadline(self) -> bool:
        """A call that outlived its deadline: the wire makes gRPC's ``DEADLINE_EXCEEDED`` an
        ``UNAVAILABLE`` that keeps its details (:data:`DEADLINE_EXCEEDED`)."""
        return self.code is ErrorCode.UNAVAILABLE and DEADLINE_EXCEEDED in self.message

    def client_line(self, command: str) -> str:
        """How a client command reports it: one line, with a hint when the server could
        not be reached: what its TLS handshake failed on (:data:`TLS_HINTS`), that a call
        outlived its deadline (:func:`deadline_hint`), else whether a server is there at
        all."""
        hint = ""
        if self.code is ErrorCode.UNAVAILABLE:
            unreached = UNREACHED_HINT
            if self.past_deadline:
                unreached = deadline_hint(TIMEOUT_FLAGS.get(command))
            hint = next((h for said, h in TLS_HINTS if said in self.message), unreached)
            hint = f" ({hint})"
        return f"edgespec {command}: {self}{hint}"


class ReplyTooLarge(RequestError):
    """The server sent a reply over this client's own gRPC message limit (gRPC's
    ``RESOURCE_EXHAUSTED`` on receipt, which reads as the server being busy): the server
    takes larger messages than the client. ``INVALID_ARGUMENT``: asking again gets the
    same reply."""

    def __init__(self, reply_bytes: int, limit_bytes: int) -> None:
        super().__init__(
            ErrorCode.INVALID_ARGUMENT,
            f"the verification server's reply is {reply_bytes:,} bytes, over the client's "
            f"gRPC message limit of {limit_bytes:,} (edgespec draft --max-message-bytes; the "
            "server's max_message_bytes is higher): set the two alike, or ask for a smaller "
            "reply (a shorter prompt, fewer logprobs)",
        )


UNREACHED_HINT = "is an `edgespec serve` running and reachable at the --server address?"
"""A client's hint for an ``UNAVAILABLE`` server that is no TLS handshake's failure."""

DEADLINE_EXCEEDED = "Deadline Exceeded"
"""What gRPC says of a call that outlived its deadline (mapped to ``UNAVAILABLE``)."""

TIMEOUT_FLAGS = {"draft": "--request-timeout-s", "drafting-server": "--timeout-s"}
"""The flag that sets each client command's call deadline."""


def deadline_hint(flag: str | None) -> str:
    """The hint for a call past its deadline (``flag`` sets the deadline, ``None``: none
    does): a server that took the call and did not answer in time is there, so "is an
    `edgespec serve` running" misled (a prompt whose first pass outlasts the deadline)."""
    longer = f"raise {flag}" if flag else "a longer deadline"
    return (
        "the server did not answer within the call's deadline: it is hung, or busy with a "
        f"pass that takes longer, such as a long prompt's first ({longer} to wait for it)"
    )


_NOT_SIGNED = "the server's certificate is not signed by the --tls-ca CA"
TLS_HINTS: tuple[tuple[str, str], ...] = (
    ("CERTIFICATE_VERIFY_FAILED: unable to get local issuer certificate", _NOT_SIGNED),
    ("CERTIFICATE_VERIFY_FAILED: self signed certificate", _NOT_SIGNED),
    ("CERTIFICATE_VERIFY_FAILED", "the server's certificate does not verify against the "
     "--tls-ca CA, for the reason just given"),
    ("Hostname Verification Check failed", "the server's certificate does not name the "
     "host it was checked for (--tls-server-name if given, else the host in --server): "
     "give a name it holds with --tls-server-name"),
    ("WRONG_VERSION_NUMBER", "the server does not speak TLS: drop --tls-ca, or serve with "
     "--tls-cert and --tls-key"),
    ("Socket closed", "a server that speaks TLS closes a plaintext client's connection: give "
     "--tls-ca if it serves with --tls-cert; else, " + UNREACHED_HINT),
)  # fmt: skip
"""What a client's TLS handshake failed on, as gRPC's status details say it (BoringSSL's
reason; gRPC's check of the certificate's names; a plaintext client's socket that a TLS
server closed), and the hint the client gives for it, the first that fits: the server is
up, so "is an `edgespec serve` running" misled."""


_CONTEXT_REFUSAL = re.compile(
    r"prompt \((\d+) tokens\) \+ max_new_tokens \((\d+)\) exceeds the target's context of "
    r"(\d+)"
)


def context_refusal(num_prompt_tokens: int, max_new_tokens: int, context: int) -> RequestError:
    """The server's refusal of a session whose prompt and output exceed its target's
    ``context`` (read back by :func:`context_refusal_numbers`)."""
    return RequestError(
        ErrorCode.INVALID_ARGUMENT,
        f"prompt ({num_prompt_tokens} tokens) + max_new_tokens ({max_new_tokens}) exceeds "
        f"the target's context of {context}",
    )


def context_refusal_numbers(exc: RequestError) -> tuple[int, int, int] | None:
    """The prompt tokens, ``max_new_tokens`` and context of a :func:`context_refusal`,
    ``None`` for any other error: a client words it in its own terms."""
    found = _CONTEXT_REFUSAL.search(exc.message)
    if exc.code is not ErrorCode.INVALID_ARGUMENT or found is None:
        return None
    prompt, max_new, context = (int(group) for group in found.groups())
    return prompt, max_new, context
