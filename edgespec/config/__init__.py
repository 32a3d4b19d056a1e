"""Config loading: YAML (plus ``key.path=value`` overrides) into frozen dataclasses.

Validation happens once, here, and every error names the offending field by its full
path (``servers[0].count``); an unknown field's error ends with the closest known field
(``(did you mean 'count'?)``). Loaded configs are frozen: nothing mutates them at run time.
Config dataclasses may define ``validate(self) -> None`` for cross-field checks; it is
called after construction and its ``ValueError`` is reported against the section.

Modules, by responsibility: :mod:`.errors` (the errors, each at its field, quoting a value
as YAML writes it), :mod:`.overrides` (``key.path=value``), :mod:`.files` (YAML and JSONL
files, UTF-8; a YAML file read with the line of each key), :mod:`.locate` (where a file
gives a field: its errors start with ``file:line``), :mod:`.yaml_text` (YAML text: YAML 1.2
core scalars, where ``1e12`` is a number and ``no`` a string; unique keys; bounded depth and
alias expansion; the line of each key), :mod:`.convert` (a mapping into a dataclass),
:mod:`.spec` (:class:`PolicySpec`, a policy field's kind), :mod:`.scenario_files` (the
scenario file a command line names: a file, or a bundled scenario by name, for ``edgespec
sim`` and ``edgespec drafting-server --plan`` alike), :mod:`.file_paths` (a scenario file's
own relative paths, read against its folder, by both alike).
"""

from edgespec.config.convert import (
    default_policy_names,
    field_type,
    from_dict,
    load_config,
    type_text,
)
from edgespec.config.errors import (
    ConfigError,
    ConfigFileError,
    LocatedConfigError,
    OverrideError,
    RecordError,
    applies_only,
    as_written,
    at_field,
    describe_value,
)
from edgespec.config.files import (
    YamlFile,
    load_yaml,
    read_jsonl,
    read_text,
    read_yaml,
    read_yaml_file,
)
from edgespec.config.locate import located_in, named_by_flags
from edgespec.config.overrides import (
    apply_overrides,
    check_repeats,
    key_path,
    overrides_from_flags,
    parse_override,
    value_text,
)
from edgespec.config.spec import POLICY_KIND, PolicySpec
from edgespec.config.yaml_text import dump_yaml

__all__ = [
    "POLICY_KIND",
    "ConfigError",
    "ConfigFileError",
    "LocatedConfigError",
    "OverrideError",
    "PolicySpec",
    "RecordError",
    "YamlFile",
    "applies_only",
    "apply_overrides",
    "as_written",
    "at_field",
    "check_repeats",
    "default_policy_names",
    "describe_value",
    "dump_yaml",
    "field_type",
    "from_dict",
    "key_path",
    "load_config",
    "load_yaml",
    "located_in",
    "named_by_flags",
    "overrides_from_flags",
    "parse_override",
    "read_jsonl",
    "read_text",
    "read_yaml",
    "read_yaml_file",
    "type_text",
    "value_text",
]
