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
5. Overrides: each ``key.path=value`` of ``edgespec sim`` (and each value of a ``--sweep``
   spec, and the ``--capacity`` key set to an integer) validates as the CLI validates it
   before running (``scenario_from_dict``) on the scenario file the command names when that
   is in the repository, else the bundled default (``bench sim``: bench.yaml); the literal
   overrides of one command together, and each on its own in its own field; policy names
   are registry names. An all-caps value (``N``, ``N/50``) only has to fit some type. The
   ``--set KEY=VALUE`` overrides of ``serve`` and ``draft`` validate against their configs.
6. ``edgespec sim`` flags that act in some run kinds only (``--rounds``, ``--lo``,
   ``--workers``, ...: edgespec/sim/commands/flags.py) are quoted with one of them.
"""

from __future__ import annotations

import argparse
import importlib
import re
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from edgespec.cli import build_parser
from edgespec.config import ConfigError, load_config, read_yaml
from edgespec.policies.registry import KINDS
from edgespec.runtime.edge.config import DrafterConfig
from edgespec.runtime.server.config import ServerConfig
from edgespec.sim.commands.flags import APPLIES, MODES, PLAIN
from edgespec.sim.drafting_server.scenario import pipeline_scenario_from_dict
from edgespec.sim.setup.scenario import (
    Scenario,
    bundled_scenarios,
    default_scenario_path,
    scenario_from_dict,
    scenario_path,
)
from edgespec.sim.setup.system import system_of
from edgespec.sweeps.grid import override_text, parse_grid
from tests.doc_snippets import (
    Parsed,
    Snippet,
    commands,
    link_problem,
    module_file,
    name_problem,
    snippets,
    walk,
)

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
IDS = [str(doc.relative_to(ROOT)) for doc in DOCS]

_PATH = re.compile(r"(?<![\w./~-])(?:edgespec|tests|docs|benchmarks|\.ci)/[^\s`'\"(),;\]]*")
_PLACEHOLDER_PATH = re.compile(r"[<*{…]|\.\.\.")
_NAME = re.compile(r"(?<![\w./-])edgespec(?:\.\w+)+")
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_MAKE = re.compile(r"(?<![\w-])make\s+([A-Za-z_][\w-]*)")
_TARGET = re.compile(r"^([A-Za-z_][\w.-]*)\s*:(?!=)", re.MULTILINE)
_PLACEHOLDER_VALUE = re.compile(r"[A-Z][A-Z0-9_]*(?:[/*+-]\d+)?")


@cache
def _snippets(doc: Path) -> list[Snippet]:
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
def _parsed(doc: Path) -> list[tuple[Snippet, Parsed]]:
    out = []
    for snippet, program, argv in commands(_snippets(doc)):
        parser = _parser(program)
        if parser is not None:
            out += [(snippet, parsed) for parsed in walk(parser, argv, Parsed())]
        elif module_file(ROOT, program) is None:
            out.append((snippet, Parsed(problems=[f"no module `{program}`"])))
    return out


def _report(doc: Path, problems: Sequence[tuple[int, str]]) -> str:
    name = doc.relative_to(ROOT)
    return "\n".join(f"{name}:{line}: {what}" for line, what in dict.fromkeys(problems))


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


Validate = Callable[[list[str]], object]


def _is_placeholder(text: str) -> bool:
    return bool(_PLACEHOLDER_VALUE.fullmatch(text.partition("=")[2].strip()))


def _owns(key: str, error: ConfigError) -> bool:
    """Whether ``error`` is about field ``key`` (or a parent or child of it), not about
    another field that the override only made inconsistent."""
    path = re.sub(r"\[(\d+)\]", r".\1", error.path)
    return path == key or path.startswith(key + ".") or key.startswith(path + ".")


def _own_error(validate: Validate, text: str) -> str | None:
    """The error ``text`` alone causes in its own field; for an all-caps placeholder value
    (``N``, ``N/50``), None when some value of some type fits."""
    key = text.partition("=")[0]
    tries = [text]
    if _is_placeholder(text):
        values: tuple[object, ...] = (1, 1.5, "x", True, [], {})
        tries = [override_text(key, v) for v in values]
    errors = []
    for attempt in tries:
        try:
            validate([attempt])
            return None
        except ConfigError as exc:
            if not _owns(key, exc):
                return None
            errors.append(str(exc))
    return errors[0]


def _override_problems(validate: Validate, texts: list[str]) -> list[str]:
    """Problems with a command's overrides: the literal ones must validate together (unless
    placeholders could make up the difference), and none may be wrong in its own field."""
    literal = [t for t in texts if not _is_placeholder(t)]
    try:
        validate(literal)
        texts = [t for t in texts if _is_placeholder(t)]
        joint = None
    except ConfigError as exc:
        joint = None if len(literal) < len(texts) else str(exc)
    own = [f"`{t}`: {e}" for t in texts if (e := _own_error(validate, t)) is not None]
    return own or ([f"`{' '.join(literal)}` together: {joint}"] if joint else [])


def _policy_names(scenario: Scenario) -> None:
    for kind in ("routing", "batching", "window"):
        name = getattr(scenario.policies, kind).name
        if name not in KINDS[kind]:
            raise ConfigError(f"policies.{kind}.name", f"unknown policy {name!r}")


@cache
def _scenario_validator(base: Path) -> Validate:
    data = read_yaml(base)

    def validate(texts: list[str]) -> None:
        if system_of(data) == "drafting_server":  # edgespec/sim/drafting_server
            pipeline_scenario_from_dict(data, texts)
        else:
            _policy_names(scenario_from_dict(data, texts))

    return validate


def _config_validator(cls: type[Any]) -> Validate:
    return lambda texts: load_config(cls, None, texts)


def _sim_overrides(parsed: Parsed) -> tuple[Path, list[str], list[str], list[str]] | None:
    """The scenario file, the overrides, the alternatives (each ``--sweep`` value, the
    ``--capacity`` key at an integer) and the malformed sweep specs of a parsed ``sim`` /
    ``bench sim`` line."""
    values = parsed.values
    if parsed.chain == ("bench", "sim"):
        bench = default_scenario_path().with_name("bench.yaml")
        return bench, values.get("overrides", []), [], []
    if parsed.chain != ("sim",):
        return None
    named = [a for a in values.get("args", []) if "=" not in a]
    base = default_scenario_path()
    if named and (ROOT / named[0]).is_file():
        base = ROOT / named[0]
    elif named and named[0] in bundled_scenarios():
        base = scenario_path(named[0])
    alternatives = [f"{key}=1" for key in values.get("capacity", [])]
    bad = []
    for spec in values.get("sweep", []):
        try:
            grid = parse_grid([spec]) if spec not in ("...", "…") else {}
        except ConfigError as exc:
            bad.append(f"`--sweep {spec}`: {exc}")
            continue
        alternatives += [override_text(k, v) for k, vs in grid.items() for v in vs]
    return base, [a for a in values.get("args", []) if "=" in a], alternatives, bad


CONFIGS: dict[tuple[str, ...], type[Any]] = {("serve",): ServerConfig, ("draft",): DrafterConfig}


@pytest.mark.parametrize("doc", DOCS, ids=IDS)
def test_overrides_are_config_fields(doc: Path) -> None:
    problems = []
    for snippet, parsed in _parsed(doc):
        found = _sim_overrides(parsed)
        if found is not None:
            base, texts, alternatives, bad = found
            validate = _scenario_validator(base)
            bad += _override_problems(validate, texts)
            bad += [f"`{t}`: {e}" for t in alternatives if (e := _own_error(validate, t))]
        elif parsed.chain in CONFIGS:
            sets = parsed.values.get("set", [])
            bad = _override_problems(_config_validator(CONFIGS[parsed.chain]), sets)
        else:
            continue
        problems += [(snippet.line, problem) for problem in bad]
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
