"""Read the static C and build-file templates shipped in a package's `templates/` folder (package data)."""

from __future__ import annotations

from importlib import resources
from string import Template

from packager.c_text import macro_prefix

TEMPLATE_DOC_OPEN, TEMPLATE_DOC_CLOSE = "/**", "*/\n"
"""A C helper template's leading documentation comment: from its first bytes to the first comment end at a line
end. It states the helpers' contracts for maintainers; bundles do not copy it."""


def template_text(package: str, file_name: str) -> str:
    """The text of `<package>/templates/<file_name>`, read with importlib.resources (works from a wheel too)."""
    return resources.files(package).joinpath("templates", file_name).read_text(encoding="utf-8")


def helper_template_c(package: str, file_name: str, prefix: str) -> str:
    """The C a bundle of prefix `prefix` defines from the hand-written helper template
    `<package>/templates/<file_name>`: its leading documentation comment (TEMPLATE_DOC_OPEN .. TEMPLATE_DOC_CLOSE)
    left out, `${prefix}` the prefix and `${PREFIX}` its macro prefix (`packager.c_text.macro_prefix`)."""
    text = template_text(package, file_name)
    if text.startswith(TEMPLATE_DOC_OPEN):
        text = text[text.index(TEMPLATE_DOC_CLOSE) + len(TEMPLATE_DOC_CLOSE):]
    return Template(text).substitute(prefix=prefix, PREFIX=macro_prefix(prefix))
