"""What tests/test_docs.py reads out of the Markdown docs: code lines, inline code spans,
the ``edgespec ...`` command lines in them, a flag-level walk of the real CLI parser, and
where a dotted ``edgespec.x.y`` name or a link would point."""

from __future__ import annotations

import argparse
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

_FENCE = re.compile(r"^\s*(```|~~~)")
_INLINE = re.compile(r"(`+)(.+?)\1", re.DOTALL)
_ASSIGN = re.compile(r"^([A-Za-z_]\w*)=(.*)$", re.DOTALL)
_OPERATORS = {"&&", "||", ";", "|", ">", ">>", "<", "2>&1"}
# Tokens that stand for something left out: "...", "…", "<seed>".
_ELIDED = re.compile(r"^(\.\.\.|…)$|[<>]")


@dataclass(frozen=True)
class Snippet:
    """A logical code line (continuations joined) or an inline code span, and where it starts."""

    line: int
    text: str
    code: bool


def _strip_comment(text: str) -> str:
    """``text`` up to an unquoted ``#`` that starts a word (as the shell reads it)."""
    quote = ""
    for i, ch in enumerate(text):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or text[i - 1].isspace()):
            return text[:i]
    return text


def snippets(markdown: str) -> list[Snippet]:
    """Fenced code lines, indented code lines (4+ spaces after a blank line) and inline code
    spans (which may wrap across lines within a paragraph)."""
    out: list[Snippet] = []
    prose: list[tuple[int, str]] = []
    fenced = indented = False
    pending: tuple[int, str] | None = None  # a code line continued with "\"
    previous_blank = True
    for number, line in enumerate(markdown.splitlines(), start=1):
        if _FENCE.match(line):
            fenced = not fenced
            prose.append((number, ""))
            continue
        indented = (indented or previous_blank) and line.startswith("    ") and bool(line.strip())
        previous_blank = not line.strip()
        if not (fenced or indented):
            prose.append((number, line))
            continue
        prose.append((number, ""))
        start, text = pending if pending else (number, "")
        text += line.strip()
        if text.endswith("\\"):
            pending = (start, text[:-1] + " ")
        else:
            pending = None
            out.append(Snippet(start, text, code=True))
    for start, paragraph in _paragraphs(prose):
        for match in _INLINE.finditer(paragraph):
            first = start + paragraph.count("\n", 0, match.start())
            out.append(Snippet(first, " ".join(match.group(2).split()), code=False))
    return out


def _paragraphs(lines: list[tuple[int, str]]) -> Iterator[tuple[int, str]]:
    block: list[tuple[int, str]] = []
    for number, text in [*lines, (0, "")]:
        if text.strip():
            block.append((number, text))
        elif block:
            yield block[0][0], "\n".join(t for _, t in block)
            block = []


def _split_words(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError:  # an inline span cut off inside a quote
        return text.split()


def commands(found: list[Snippet]) -> list[tuple[Snippet, str, list[str]]]:
    """Each ``edgespec ...`` or ``python -m edgespec.MODULE ...`` command in the snippets:
    (snippet, "edgespec" or the module, arguments), with shell comments dropped, ``$VAR``
    expanded from ``VAR=...`` lines earlier in the doc, cut at ``&&``, ``|``, ``;``."""
    variables: dict[str, str] = {}
    out: list[tuple[Snippet, str, list[str]]] = []
    for snippet in found:
        text = _strip_comment(snippet.text)
        assign = _ASSIGN.match(text.strip())
        if snippet.code and assign:
            words = _split_words(assign.group(2))
            variables[assign.group(1)] = words[0] if words else ""
            continue
        text = re.sub(r"\$\{?(\w+)\}?", lambda m: variables.get(m.group(1), m.group(0)), text)
        words = _split_words(text)
        for i, word in enumerate(words):
            if word == "edgespec":
                program, rest = word, words[i + 1 :]
            elif word == "-m" and words[i + 1 : i + 2] and words[i + 1].startswith("edgespec."):
                program, rest = words[i + 1], words[i + 2 :]
            else:
                continue
            argv: list[str] = []
            for arg in rest:
                if arg in _OPERATORS:
                    break
                argv.append(arg)
            out.append((snippet, program, argv))
    return out


@dataclass
class Parsed:
    """A command line walked through the parser: the subcommand chain, the values each option
    and positional got (by dest), and what does not match the parser."""

    chain: tuple[str, ...] = ()
    values: dict[str, list[str]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def _is_flag(word: str) -> bool:
    return len(word) > 1 and word[0] == "-" and not word[1].isdigit()


def _unbracket(word: str) -> str:
    """``word`` without the brackets that mark an optional part: ``[--quick]``, ``[--out``,
    ``DIR]]``; balanced ones that belong to a value stay (``traces=[a.jsonl]``)."""
    if word.startswith("[") and (word[1:2] == "-" or word.count("[") > word.count("]")):
        word = word[1:]
    while word.endswith("]") and word.count("]") > word.count("["):
        word = word[:-1]
    return word


def walk(parser: argparse.ArgumentParser, argv: list[str], parsed: Parsed) -> list[Parsed]:
    """Check ``argv`` against ``parser`` without converting values (they may be placeholders
    like ``N`` or ``FILE``): every flag must be an option of the (sub)command it follows, a
    subcommand or a positional with ``choices`` must be one of them (``a|b``: each of a and b,
    ``<seed>``: skipped). Brackets marking optional parts are dropped. Returns one Parsed per
    alternative subcommand."""
    words = [w for w in map(_unbracket, argv) if w]
    positionals = [a for a in parser._actions if not a.option_strings]
    name = parser.prog
    i = 0
    while i < len(words):
        word = words[i]
        i += 1
        if _is_flag(word):
            flag, eq, value = word.partition("=")
            action = parser._option_string_actions.get(flag)
            if action is None:
                parsed.problems.append(f"{flag} is not an option of `{name}`")
                if not eq and i < len(words) and not _is_flag(words[i]):
                    i += 1  # its value, most likely: not reported again as an argument
                continue
            taken = [value] if eq else []
            want = action.nargs
            if not eq and want != 0:
                n = want if isinstance(want, int) else 1 if want is None else len(words)
                while i < len(words) and len(taken) < n and not _is_flag(words[i]):
                    if want == "?" and taken:
                        break
                    taken.append(words[i])
                    i += 1
            parsed.values.setdefault(action.dest, []).extend(taken)
            continue
        if not positionals:
            if not _ELIDED.search(word):
                parsed.problems.append(f"`{name}` takes no argument {word!r}")
            continue
        action = positionals[0]
        if action.nargs in (None, 1, argparse.PARSER):
            positionals.pop(0)
        if _ELIDED.search(word):
            continue
        choices = action.choices
        if choices is not None:
            for alternative in word.split("|"):
                if alternative not in choices:
                    parsed.problems.append(
                        f"{alternative!r} is not one of `{name}`'s {sorted(choices)}"
                    )
        if isinstance(action, argparse._SubParsersAction):
            out: list[Parsed] = []
            for alternative in word.split("|"):
                if alternative in action.choices:
                    child = Parsed(
                        (*parsed.chain, alternative), dict(parsed.values), list(parsed.problems)
                    )
                    out += walk(action.choices[alternative], words[i:], child)
            return out or [parsed]
        parsed.values.setdefault(action.dest, []).append(word)
    return [parsed]


def module_file(root: Path, module: str) -> Path | None:
    """The source file of ``module`` under ``root``, if there is one."""
    base = root / module.replace(".", "/")
    return next((f for f in (base.with_suffix(".py"), base / "__init__.py") if f.is_file()), None)


def name_problem(root: Path, name: str) -> str | None:
    """Why the dotted ``name`` (``edgespec.a.b``, ``edgespec.a.Class.method``) is not defined:
    after the longest prefix that is a module, the next part is defined or imported at the
    top of that module, and any further part is a word in it. Read from the source, so
    nothing is imported."""
    parts = name.split(".")
    for k in range(len(parts), 0, -1):
        file = module_file(root, ".".join(parts[:k]))
        if file is not None:
            break
    if file is None or k == len(parts):
        return None if file else f"`{name}`: no such module"
    text = file.read_text()
    first, rest = parts[k], parts[k + 1 :]
    defined = (
        rf"^(?:(?:async )?def |class )?{first}\b\s*[(:=]|^(?:from|import) .*\b{first}\b"
        rf"|^from [\w.]+ import \([^)]*\b{first}\b"  # a name in a parenthesised import
    )
    if not re.search(defined, text, re.MULTILINE):
        return f"`{name}`: {'.'.join(parts[:k])} defines no `{first}`"
    missing = [part for part in rest if not re.search(rf"\b{part}\b", text)]
    return f"`{name}`: no `{missing[0]}` in {file.relative_to(root)}" if missing else None


def _slug(heading: str) -> str:
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def link_problem(doc: Path, target: str) -> str | None:
    """Why a Markdown link target in ``doc`` does not resolve: the file, relative to the
    doc's folder, and the ``#anchor`` among its headings (GitHub's slugs)."""
    if re.match(r"[a-z]+:", target):  # http:, mailto:
        return None
    file, _, anchor = target.partition("#")
    path = (doc.parent / file).resolve() if file else doc
    if not path.exists():
        return f"link target `{target}` does not exist"
    if anchor and path.suffix == ".md":
        headings = re.findall(r"^#+\s+(.*)$", path.read_text(), re.MULTILINE)
        if anchor not in {_slug(h) for h in headings}:
            return f"link target `{target}`: no such heading in {path.name}"
    return None
