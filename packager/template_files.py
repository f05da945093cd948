"""Read the static C and build-file templates shipped in a package's `templates/` folder (package data)."""

from __future__ import annotations

from importlib import resources
from collections.abc import Mapping
from string import Template
from typing import Optional

from packager.c_text import macro_prefix

TEMPLATE_DOC_OPEN, TEMPLATE_DOC_CLOSE = "/**", "*/\n"
"""A C helper template's leading documentation comment: from its first bytes to the first comment end at a line
end. It states the helpers' contracts for maintainers; bundles do not copy it."""


def template_text(package: str, file_name: str) -> str:
    """The text of `<package>/templates/<file_name>`, read with importlib.resources (works from a wheel too)."""
    return resources.files(package).joinpath("templates", file_name).read_text(encoding="utf-8")


OPTION_PREFIX = "option_"
"""A template's placeholders named `${option_...}` are the options a helper library may fill (C text it inserts
there); each one not given is empty, so a library that fills none defines the template's C as if it had none."""


def helper_template_c(package: str, file_name: str, prefix: str, options: Optional[Mapping[str, str]] = None) -> str:
    """The C a bundle of prefix `prefix` defines from the hand-written helper template
    `<package>/templates/<file_name>`: its leading documentation comment (TEMPLATE_DOC_OPEN .. TEMPLATE_DOC_CLOSE)
    left out, `${prefix}` the prefix, `${PREFIX}` its macro prefix (`packager.c_text.macro_prefix`) and each
    `${option_...}` placeholder the text `options` gives it (OPTION_PREFIX; empty where not given)."""
    text = template_text(package, file_name)
    if text.startswith(TEMPLATE_DOC_OPEN):
        text = text[text.index(TEMPLATE_DOC_CLOSE) + len(TEMPLATE_DOC_CLOSE):]
    template = Template(text)
    names = {match.group("named") or match.group("braced") for match in template.pattern.finditer(text)}
    filled = {name: "" for name in names if name and name.startswith(OPTION_PREFIX)}
    unknown = set(options or {}) - set(filled)
    if unknown:
        raise KeyError(f"{file_name} has no placeholder {sorted(unknown)[0]}")
    filled.update(options or {})
    return template.substitute(filled, prefix=prefix, PREFIX=macro_prefix(prefix))
