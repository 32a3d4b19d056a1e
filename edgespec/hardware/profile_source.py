"""Where a cost-model profile is read from: a YAML file or a bundled preset
(``edgespec/data/hardware/profiles/``), and what a name that is neither is, said plainly
(:func:`edgespec.hardware.cost_models.load_profile` reads through this; ``edgespec
calibrate --profile`` refuses with the same words)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from edgespec.config import ConfigFileError, read_yaml
from edgespec.hardware.presets import available, load_named

PROFILE_SUFFIXES = (".yaml", ".yml")
"""A profile file's suffixes: a name ending in one is read as a file, never as a preset."""

PROFILE_PRESETS = "hardware/profiles"
"""The bundled profiles' kind of preset (:func:`edgespec.hardware.presets.available`)."""


def profile_mapping(name_or_path: str) -> tuple[dict[str, Any], str]:
    """The profile's mapping, and where it came from (the file, or the preset's name) for
    errors: a ``.yaml`` or ``.yml`` path is read as a file, a bundled preset's name as that
    preset; a name that looks like a file (it exists, or has a suffix or a folder) is
    refused as one (:func:`not_a_profile_file`, a :class:`ConfigFileError` naming it);
    any other name is no preset, refused listing the presets."""
    path = Path(name_or_path)
    if path.suffix in PROFILE_SUFFIXES:
        return read_yaml(path), str(path)
    if name_or_path not in available(PROFILE_PRESETS) and _looks_like_a_file(name_or_path):
        raise ConfigFileError(str(path), not_a_profile_file(path))
    return load_named(PROFILE_PRESETS, name_or_path), name_or_path


def not_a_profile_file(path: Path) -> str:
    """What ``path`` (not ending in .yaml or .yml) is, instead of a profile file: ``file
    not found`` (as :func:`edgespec.config.read_yaml` says of a missing .yaml), else a
    folder, a file of another suffix or one without a suffix, and the suffixes taken."""
    if not path.exists():
        return "file not found"
    if path.is_dir():
        what = "a folder"
    elif path.suffix:
        what = f"a {path.suffix} file"
    else:
        what = "a file without a suffix"
    return f"{what}; a profile is a {' or '.join(PROFILE_SUFFIXES)} file"


def _looks_like_a_file(text: str) -> bool:
    """``text`` names a file rather than a preset: it has a suffix or a folder, or exists
    (a preset's name, dots and all, is tried as the preset first)."""
    seps = (os.sep, os.altsep or os.sep)
    return bool(Path(text).suffix) or any(sep in text for sep in seps) or Path(text).exists()
