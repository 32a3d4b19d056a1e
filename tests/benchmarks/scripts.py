"""Loading a script of benchmarks/ (no package) as a module of its own in the tests."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def load_script(relative: str, name: str) -> ModuleType:
    """``benchmarks/RELATIVE`` as module ``name``, registered in ``sys.modules`` under it
    (its dataclasses look their module up by name; a probe may import another by it). Its
    folder joins ``sys.path``, as when Python runs the script, so that the probes' shared
    helper (``benchmarks/probes/probe_json.py``) imports by its name."""
    folder = str((BENCHMARKS / relative).parent)
    if folder not in sys.path:
        sys.path.append(folder)
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / relative)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
