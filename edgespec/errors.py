"""Errors caused by what a user gave (a config field, a file, a model name).

The CLI prints any :class:`UserInputError` as one line naming the problem and exits
with status 2, instead of a traceback. A message naming something unknown (a config
key, a policy, a scenario) ends with :func:`did_you_mean`'s suggestion when one is close;
a command's work that would not fit the target's context is refused, before it runs, in
:func:`check_fits_context`'s one wording.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class UserInputError(Exception):
    """Bad user input; the message says exactly what and where."""


class RunFailedError(Exception):
    """A run that failed for a reason outside its input (a sweep's worker process killed):
    the CLI prints it as one line, status 1; the message says what failed and where."""


class MissingPackageError(UserInputError, ImportError):
    """An optional package this use needs is not installed; the message names the package
    and the ``pip install`` that brings it. Still an :class:`ImportError` for callers that
    fall back without it."""


def did_you_mean(given: str, known: Iterable[str]) -> str:
    """``" (did you mean 'NAME'?)"`` for the known name closest to ``given``, or ``""``
    when none is close: the end of an "unknown ..." message, after its own text. The one
    known name that is ``given`` with a unit or qualifier added (``rate`` → ``rate_per_s``:
    names carry their units) comes first; else :func:`difflib.get_close_matches`'s."""
    names = [str(k) for k in known]
    extended = [name for name in names if name.startswith(f"{given}_")]
    close = extended if len(extended) == 1 else difflib.get_close_matches(given, names, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def check_fits_context(
    what: str, num_tokens: int, added: str, num_added: int, context: int, hint: str = ""
) -> None:
    """Refuse ``what`` (``num_tokens`` tokens) with ``added`` (``num_added`` more) beyond
    the target's ``context``: "WHAT (N tokens) + ADDED (M) exceeds the target's context of
    C tokens", then ``hint``."""
    if num_tokens + num_added > context:
        raise UserInputError(
            f"{what} ({num_tokens:,} tokens) + {added} ({num_added:,}) exceeds the target's "
            f"context of {context:,} tokens{hint}"
        )
