"""Errors caused by what a user gave (a config field, a file, a model name).

The CLI prints any :class:`UserInputError` as one line naming the problem and exits
with status 2, instead of a traceback.
"""

from __future__ import annotations


class UserInputError(Exception):
    """Bad user input; the message says exactly what and where."""
