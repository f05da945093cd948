"""A test module's host programs (cross compilers, QEMU): skipped without them, except under CI."""

from __future__ import annotations

import os

import pytest

from emulator.tools import missing_tools


def require_tools(tools: tuple[str, ...]) -> None:
    """Called at a test module's top: skip the whole module, naming what is missing, when any of `tools` is not
    on PATH; under CI (env CI set), where they must be installed, fail instead."""
    missing = missing_tools(tools)
    if missing:
        reason = f"missing {', '.join(missing)}: run scripts/install_deps.sh (CI must have them)"
        if os.environ.get("CI"):
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason, allow_module_level=True)
