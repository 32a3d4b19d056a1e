"""Compiles, once, the bytecode of what edgespec's commands import, as ``make`` creates .venv.

The packages are installed with ``--no-compile`` (compiling every file of every package
doubles the install), so Python compiles a module as it is first imported and caches it in
``__pycache__``, unless ``PYTHONDONTWRITEBYTECODE`` is set, as on machines whose environment
sets it: there every ``edgespec serve`` or ``draft`` compiled transformers' and torch's
modules afresh (``builtins.compile``: 12 of the 30 s a warm ``load_model("gemma3-270m")``
took). Run with that variable emptied, this imports the modules the commands and the
model loads import (without loading any model), so later runs read their bytecode.

    PYTHONDONTWRITEBYTECODE= .venv/bin/python tools/warm_bytecode.py
"""

from __future__ import annotations

import importlib
import sys
import time

MODULES = (
    "edgespec.cli",
    "edgespec.sim.simulator",
    "edgespec.runtime.commands.serve",
    "edgespec.runtime.commands.serve_target",
    "edgespec.runtime.commands.draft",
    "edgespec.runtime.openai_api.app",
    "edgespec.runtime.backends.transformers_backend",
    "edgespec.models.loading",
    "torch",
    "safetensors.torch",
    "transformers",
    "transformers.modeling_utils",
    "transformers.models.auto.modeling_auto",
    "transformers.models.auto.tokenization_auto",
    "transformers.models.gemma3.modeling_gemma3",
    "transformers.models.gemma.tokenization_gemma",
    "transformers.tokenization_utils_tokenizers",
    "transformers.generation",
)


def main() -> int:
    if sys.flags.dont_write_bytecode:
        print("warm_bytecode: PYTHONDONTWRITEBYTECODE is set: run it emptied", file=sys.stderr)
        return 2
    start = time.perf_counter()
    before = len(sys.modules)
    for name in MODULES:
        try:
            importlib.import_module(name)
        except ImportError as exc:  # an extra not installed: its modules are not used
            print(f"warm_bytecode: skipped {name}: {exc}", file=sys.stderr)
    spent = time.perf_counter() - start
    print(f"warm_bytecode: {len(sys.modules) - before} modules compiled or read in {spent:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
