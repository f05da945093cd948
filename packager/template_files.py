"""Read the static C and build-file templates shipped in a package's `templates/` folder (package data)."""

from __future__ import annotations

from importlib import resources


def template_text(package: str, file_name: str) -> str:
    """The text of `<package>/templates/<file_name>`, read with importlib.resources (works from a wheel too)."""
    return resources.files(package).joinpath("templates", file_name).read_text(encoding="utf-8")
