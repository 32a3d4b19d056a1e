"""The docs the docs tests check (README.md and docs/*.md) and what they share: each doc's
snippets and its commands parsed by the parsers they name (both read once), and the
``FILE:LINE: what`` report of a doc's problems."""

from __future__ import annotations

import argparse
import importlib
from collections.abc import Sequence
from functools import cache
from pathlib import Path

from edgespec.cli import build_parser
from tests.doc_snippets import Parsed, Snippet, commands, module_file, snippets, walk

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
IDS = [str(doc.relative_to(ROOT)) for doc in DOCS]


@cache
def doc_snippets(doc: Path) -> list[Snippet]:
    """The snippets of ``doc`` (tests/doc_snippets.py)."""
    return snippets(doc.read_text())


@cache
def _parser(program: str) -> argparse.ArgumentParser | None:
    """The parser of ``edgespec`` or of ``python -m MODULE`` when MODULE has a
    ``build_parser()`` (None: the module builds its parser inside ``main``)."""
    if program in ("edgespec", "edgespec.cli"):
        return build_parser()
    file = module_file(ROOT, program)
    if file is None or "\ndef build_parser(" not in file.read_text():
        return None
    built: argparse.ArgumentParser = importlib.import_module(program).build_parser()
    return built


@cache
def parsed_commands(doc: Path) -> list[tuple[Snippet, Parsed]]:
    """Each command of ``doc`` parsed by the parser it names (problems when none)."""
    out = []
    for snippet, program, argv in commands(doc_snippets(doc)):
        parser = _parser(program)
        if parser is not None:
            out += [(snippet, parsed) for parsed in walk(parser, argv, Parsed())]
        elif module_file(ROOT, program) is None:
            out.append((snippet, Parsed(problems=[f"no module `{program}`"])))
    return out


def report(doc: Path, problems: Sequence[tuple[int, str]]) -> str:
    """The problems as ``FILE:LINE: what`` lines, each once."""
    name = doc.relative_to(ROOT)
    return "\n".join(f"{name}:{line}: {what}" for line, what in dict.fromkeys(problems))
