"""Docs that match the code: README.md and docs/*.md checked against the CLI parsers, the
repository, the Makefile and the config schemas. One test per doc and check, so a failure
names the file; it lists every ``FILE:LINE: what`` found.

Read (tests/doc_snippets.py): fenced code blocks (``\\`` continuations joined, ``#`` comments
dropped, ``$VAR`` expanded from ``VAR=...`` lines above), code indented 4+ spaces after a
blank line, and inline code spans (which may wrap across lines).

1. Commands: in every ``edgespec ...`` command (also after ``/usr/bin/time`` and the like,
   and after ``&&``), the subcommand (``train WHAT``) and any positional with choices
   (``bench sim``, ``reproduce wisp``) exist, and every ``-flag`` is an option of the
   (sub)command it follows in the parser ``edgespec.cli.build_parser`` builds. The same for
   ``python -m edgespec.MODULE ...`` when MODULE has a ``build_parser()``; otherwise the
   module must exist. Values are not checked, so placeholders (``N``, ``FILE``) pass;
   ``...``, ``…`` and ``<seed>`` are skipped, the brackets of optional parts (``[--quick]``)
   dropped, and ``draft|trace`` checks both.
2. Paths: every word in code that starts with ``edgespec/``, ``tests/``, ``docs/`` or
   ``.ci/`` exists (trailing ``.``/``:`` dropped); for a pytest node id ``path::name`` the
   file also defines ``name``. Skipped: words with a placeholder (``<time>``, ``*``, ``{a,b}``,
   ``…``); paths under runs/, /tmp, ../shared, ~ and the like lack those prefixes. Relative
   Markdown links ``[text](target#anchor)`` resolve from the doc's folder, and the anchor is
   a heading there (GitHub's slugs).
3. Python names: a dotted ``edgespec.a.b`` (module, or module plus attribute) is defined in
   the source (tests/doc_snippets.name_problem; nothing imported); the gRPC package names of
   edgespec/runtime/proto/*.proto are not Python.
4. ``make X``: X is a target of the Makefile.
5. Overrides: each ``key.path=value`` a command quotes (``sim``, ``bench sim``, ``--sweep``,
   ``--capacity``, the ``--set`` of ``serve`` and ``draft``) validates as the CLI validates
   it: tests/test_docs_overrides.py.
6. ``edgespec sim`` flags that act in some run kinds only (``--rounds``, ``--lo``,
   ``--workers``, ...: edgespec/sim/commands/flags.py) are quoted with one of them.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from edgespec.sim.commands.flags import APPLIES, MODES, PLAIN
from tests.doc_checks import DOCS, IDS, ROOT
from tests.doc_checks import doc_snippets as _snippets
from tests.doc_checks import parsed_commands as _parsed
from tests.doc_checks import report as _report
from tests.doc_overrides import sim_overrides as _sim_overrides
from tests.doc_snippets import link_problem, name_problem

_PATH = re.compile(r"(?<![\w./~-])(?:edgespec|tests|docs|benchmarks|\.ci)/[^\s`'\"(),;\]]*")
_PLACEHOLDER_PATH = re.compile(r"[<*{…]|\.\.\.")
_NAME = re.compile(r"(?<![\w./-])edgespec(?:\.\w+)+")
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_MAKE = re.compile(r"(?<![\w-])make\s+([A-Za-z_][\w-]*)")
_TARGET = re.compile(r"^([A-Za-z_][\w.-]*)\s*:(?!=)", re.MULTILINE)


def test_the_checks_have_material() -> None:
    """The readers find what the checks below run on (no silent pass on an empty list)."""
    assert len(DOCS) > 5
    chains = {parsed.chain for doc in DOCS for _, parsed in _parsed(doc)}
    assert {("sim",), ("bench", "sim"), ("train", "draft"), ("serve",), ("draft",)} <= chains
    assert _sim_overrides(next(p for _, p in _parsed(DOCS[0]) if p.values.get("sweep")))
    assert any(_PATH.search(s.text) for s in _snippets(DOCS[0]))


@pytest.mark.parametrize("doc", DOCS, ids=IDS)
def test_commands_parse(doc: Path) -> None:
    problems = [(s.line, p) for s, parsed in _parsed(doc) for p in parsed.problems]
    assert not problems, _report(doc, problems)


@pytest.mark.parametrize("doc", DOCS, ids=IDS)
def test_sim_flags_are_quoted_where_they_act(doc: Path) -> None:
    """An ``edgespec sim`` flag of some run kinds only (sim_flags.APPLIES) is quoted with one."""
    problems = []
    for snippet, parsed in _parsed(doc):
        if parsed.chain == ("sim",):
            kind = next((flag for flag, dest in MODES.items() if dest in parsed.values), PLAIN)
            problems += [
                (snippet.line, f"`{flag}` has no effect in {kind}")
                for flag, (dest, kinds) in APPLIES.items()
                if dest in parsed.values and kind not in kinds
            ]
    assert not problems, _report(doc, problems)


def _path_problem(word: str) -> str | None:
    path, _, node = word.rstrip(".:").partition("::")
    if _PLACEHOLDER_PATH.search(word) or not path:
        return None
    if not (ROOT / path).exists():
        return f"`{path}` does not exist"
    name = node.split("::")[-1].split("[")[0]
    if name and not re.search(
        rf"^\s*(?:async )?(?:def|class) {re.escape(name)}\b",
        (ROOT / path).read_text(),
        re.MULTILINE,
    ):
        return f"`{path}` defines no `{name}`"
    return None


@pytest.mark.parametrize("doc", DOCS, ids=IDS)
def test_paths_exist(doc: Path) -> None:
    problems = []
    for snippet in _snippets(doc):
        for match in _PATH.finditer(snippet.text):
            if (problem := _path_problem(match.group(0))) is not None:
                problems.append((snippet.line, problem))
    for number, line in enumerate(doc.read_text().splitlines(), start=1):
        for target in _LINK.findall(line):
            if (problem := link_problem(doc, target)) is not None:
                problems.append((number, problem))
    assert not problems, _report(doc, problems)


@pytest.mark.parametrize("doc", DOCS, ids=IDS)
def test_python_names_exist(doc: Path) -> None:
    protos = "".join(p.read_text() for p in (ROOT / "edgespec/runtime/proto").glob("*.proto"))
    packages = re.findall(r"^package ([\w.]+);", protos, re.MULTILINE)
    problems = [
        (snippet.line, problem)
        for snippet in _snippets(doc)
        for name in _NAME.findall(snippet.text)
        if not any(name == p or name.startswith(p + ".") for p in packages)
        and (problem := name_problem(ROOT, name)) is not None
    ]
    assert not problems, _report(doc, problems)


@pytest.mark.parametrize("doc", DOCS, ids=IDS)
def test_make_targets_exist(doc: Path) -> None:
    targets = set(_TARGET.findall((ROOT / "Makefile").read_text()))
    problems = [
        (s.line, f"`make {target}`: no such Makefile target")
        for s in _snippets(doc)
        for target in _MAKE.findall(s.text)
        if target not in targets
    ]
    assert not problems, _report(doc, problems)


@pytest.mark.parametrize("doc", DOCS, ids=IDS)
def test_every_tool_is_quoted_as_an_edgespec_subcommand(doc: Path) -> None:
    """No ``python -m edgespec.…`` module command: every tool is an ``edgespec`` subcommand."""
    lines = doc.read_text().splitlines()
    found = [
        (n, "`python -m edgespec` command")
        for n, line in enumerate(lines, 1)
        if "python -m edgespec" in line
    ]
    assert not found, _report(doc, found)


_CURL_PORT = re.compile(r"\bcurl\s[^\n]*?https?://[^/\s:]+:(\d+)")
_LISTENS = re.compile(r"--(?:port|prometheus-port)\s+(\d+)|--serve-openai\s+\S*:(\d+)")


@pytest.mark.parametrize("doc", DOCS, ids=IDS)
def test_every_curl_port_is_one_a_command_of_the_page_listens_on(doc: Path) -> None:
    """A ``curl`` to a port no command on the page starts (``--port``, ``--prometheus-port``,
    ``--serve-openai``) is refused when copied: DEPLOY.md's chat example curled 50070."""
    text = doc.read_text()
    listened = {a or b for a, b in _LISTENS.findall(text)}
    found = [
        (
            text.count("\n", 0, m.start()) + 1,
            f"curl to port {m[1]}, which no command here listens on",
        )
        for m in _CURL_PORT.finditer(text)
        if m[1] not in listened
    ]
    assert not found, _report(doc, found)


_DATED = re.compile(r"\b20\d\d-\d\d-\d\d\b|\b\d\d:\d\d(?:[–-]\d\d:\d\d)? UTC\b|load average \d")


@pytest.mark.parametrize("doc", DOCS, ids=IDS)
def test_docs_are_a_reference_not_a_diary(doc: Path) -> None:
    """No dated sittings, clock times or load averages of runs (history stays in git)."""
    lines = doc.read_text().splitlines()
    found = [(n, "a dated run") for n, line in enumerate(lines, 1) if _DATED.search(line)]
    assert not found, _report(doc, found)


def test_performance_is_short_and_cites_its_results() -> None:
    """docs/PERFORMANCE.md stays a reference (≤ 250 lines) whose figures cite result files
    that exist (benchmarks/results/*.json)."""
    text = (ROOT / "docs" / "PERFORMANCE.md").read_text()
    assert len(text.splitlines()) <= 250
    cited = set(re.findall(r"benchmarks/results/([\w.-]+\.json)", text))
    cited |= set(re.findall(r"`([\w.-]+\.json)`", text))
    results = {p.name for p in (ROOT / "benchmarks" / "results").glob("*.json")}
    assert len(cited & results) >= 5
    assert cited <= results | {"shards.json"}, sorted(cited - results)  # a run folder's file
