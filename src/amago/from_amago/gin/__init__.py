"""AMAGO's gin files read without gin, and the one mapping of AMAGO's gin parameters onto amago's config.

``amago migrate-gin`` translates a gin file into amago settings, ``cli_utils.use_config`` binds AMAGO's
configurables from a script (:mod:`amago.from_amago.bindings`) and ``amago import-amago`` reads a run's
``ckpts/config.txt``; all three go through the same parser and the same mapping, so they cannot drift apart:

- :mod:`.syntax`: :func:`read_gin` and :func:`parse_gin`, the one gin reader (bindings, macros, references,
  includes);
- :mod:`.mapping`: :data:`CONFIGURABLES`, every ``@gin.configurable`` of AMAGO v3.3.0 and what each parameter
  became in amago (the tables are :mod:`.table_nets` and :mod:`.table_agents`, their records :mod:`.model`), and
  :data:`EXAMPLE_CONFIGURABLES`, the classes of AMAGO's example scripts with a counterpart (:mod:`.table_examples`:
  ``TMazeExploration``);
- :mod:`.migration`: :func:`migrate`, a parsed file as amago settings;
- :mod:`.output`: those settings as ``-o key=value`` text or a TOML config;
- :mod:`.reference`: the mapping as the Markdown tables of ``docs/migration-from-amago.md``.

Standard library only (no gin, no AMAGO, no torch).
"""

from __future__ import annotations

from amago.from_amago.gin.mapping import (
    ALL_CONFIGURABLES,
    BY_NAME,
    CONFIGURABLES,
    EXAMPLE_CONFIGURABLES,
    GIN_MAPPING,
    PICK_KEYS,
    REGISTRATIONS,
    ancestors,
    lookup,
    passed_by,
)
from amago.from_amago.gin.migration import Migration, Note, NoteReason, migrate
from amago.from_amago.gin.model import (
    AMAGO_VERSION,
    CONVERSIONS,
    Conversion,
    GinBinding,
    GinConfigurable,
    Kind,
    PickKey,
    Registration,
)
from amago.from_amago.gin.output import override_text, plain, to_toml
from amago.from_amago.gin.reference import (
    BEGIN_MARKER,
    END_MARKER,
    GIN_MAPPING_BLOCK,
    generated_text,
    gin_reference,
    mapping_counts,
    replace_generated,
)
from amago.from_amago.gin.syntax import (
    GinStatement,
    GinSyntaxError,
    Macro,
    Reference,
    parse_gin,
    read_gin,
    resolve_macros,
)

__all__ = [
    "ALL_CONFIGURABLES",
    "AMAGO_VERSION",
    "BEGIN_MARKER",
    "BY_NAME",
    "CONFIGURABLES",
    "CONVERSIONS",
    "END_MARKER",
    "EXAMPLE_CONFIGURABLES",
    "GIN_MAPPING",
    "GIN_MAPPING_BLOCK",
    "PICK_KEYS",
    "REGISTRATIONS",
    "Conversion",
    "GinBinding",
    "GinConfigurable",
    "GinStatement",
    "GinSyntaxError",
    "Kind",
    "Macro",
    "Migration",
    "Note",
    "NoteReason",
    "PickKey",
    "Reference",
    "Registration",
    "ancestors",
    "generated_text",
    "gin_reference",
    "lookup",
    "mapping_counts",
    "migrate",
    "override_text",
    "parse_gin",
    "passed_by",
    "plain",
    "read_gin",
    "replace_generated",
    "resolve_macros",
    "to_toml",
]
