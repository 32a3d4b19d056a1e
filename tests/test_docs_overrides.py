"""Docs that quote overrides quote config fields (check 5 of tests/test_docs.py): each
``key.path=value`` of ``edgespec sim`` (and each value of a ``--sweep`` spec, and the
``--capacity`` key set to an integer) validates as the CLI validates it before running
(``scenario_from_dict``) on the scenario file the command names when that is in the
repository, else the bundled default (``bench sim``: bench.yaml); the literal overrides of
one command together, and each on its own in its own field; policy names are registry
names. An all-caps value (``N``, ``N/50``) only has to fit some type. The ``--set
KEY=VALUE`` overrides of ``serve`` and ``draft`` validate against their configs."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.doc_checks import DOCS, IDS
from tests.doc_checks import parsed_commands as _parsed
from tests.doc_checks import report as _report
from tests.doc_overrides import CONFIGS
from tests.doc_overrides import config_validator as _config_validator
from tests.doc_overrides import override_problems as _override_problems
from tests.doc_overrides import own_error as _own_error
from tests.doc_overrides import scenario_validator as _scenario_validator
from tests.doc_overrides import sim_overrides as _sim_overrides


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
