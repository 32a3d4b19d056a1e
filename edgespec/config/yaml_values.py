"""YAML text to values, the one way every config, override and sweep is read.

PyYAML follows YAML 1.1, where a float needs a dot and a signed exponent: ``1e12``,
``20e6`` and ``1.0e12`` are strings there, and a config field that wants a number then
refuses what a user means as one. :func:`load_yaml` reads them as YAML 1.2 (and JSON, and
Python) do: a number with an exponent, with or without a dot or a sign, is a float.
Everything else is PyYAML's safe loading, unchanged.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

_EXPONENT_FLOAT = re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$")


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader, with exponent floats resolved as floats (module docstring)."""


_Loader.add_implicit_resolver("tag:yaml.org,2002:float", _EXPONENT_FLOAT, list("-+0123456789"))


def load_yaml(text: str) -> Any:
    """The value of YAML ``text`` (safe loading; ``1e12`` is a float, module docstring)."""
    return yaml.load(text, Loader=_Loader)  # a SafeLoader: no arbitrary objects
