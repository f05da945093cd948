"""Hostile profile values (issue 26, section 2): text that tries to run `touch MARKER` through the Makefile, the
qemu-test.mk fragment, the CMakeLists.txt files or the shell their recipes run. Tests build profiles from these
in their own tmp_path; MARKER is replaced by a path there, which must never appear."""

from __future__ import annotations

import json
from pathlib import Path

MARKER = "MARKER"
"""Replaced by the marker file's path in every payload."""

FLAG_INJECTIONS: dict[str, str] = {
    "make-shell-function": "-O2 $(shell touch MARKER)",
    "make-double-dollar": "-O2$$(touch MARKER)",
    "newline-recipe": "-O2\n\ttouch MARKER",
    "backslash-newline": "-O2\\\n\ttouch MARKER",
    "cmake-execute-process": '-O2")\nexecute_process(COMMAND touch MARKER)\nmessage("',
    "cmake-variable": "-O2${CMAKE_COMMAND}",
    "shell-semicolon": "-O2;touch MARKER",
    "shell-backticks": "-O2`touch MARKER`",
    "shell-command-substitution": "-DX=$(touch MARKER)",
    "hash-comment": "-O2 # $(shell touch MARKER)",
    "space-separated-words": "-O2 -o MARKER",
}
"""Flag values: each goes into a list field (cflags, ldflags, a unit's cflags)."""

TOOL_INJECTIONS: dict[str, str] = {
    "shell-semicolon": "touch MARKER; cc",
    "make-shell-function": "$(shell touch MARKER)cc",
    "newline-recipe": "cc\n\ttouch MARKER",
    "shell-backticks": "`touch MARKER`cc",
    "cmake-execute-process": 'cc")\nexecute_process(COMMAND touch MARKER)\nmessage("cc',
    "relative-path": "../../usr/bin/cc",
    "another-program": "/bin/sh",
}
"""Values of a tool field (c_compiler, binutils_prefix, a unit's c_compiler)."""

DEFINE_INJECTIONS: tuple[str, ...] = (
    "-DLP_PWN_SHELL=$(shell touch MARKER)",
    "-DLP_PWN_DOLLARS=$$(touch MARKER)",
    "-DLP_PWN_BACKTICKS=`touch MARKER`",
    "-DLP_PWN_SEMICOLON=1;touch MARKER",
    "-DLP_PWN_SUBSTITUTION=$(touch MARKER)",
    "-DLP_PWN_HASH=1 # $(shell touch MARKER)",
    "-DLP_PWN_QUOTES='x' \"y\"",
    "-DLP_PWN_CMAKE=${CMAKE_COMMAND}",
)
"""Flags a compiler takes (unused macros whose values hold make, shell and CMake syntax): a bundle built with them
in a Profile made in Python (past the loader's grammar) compiles, ships, and must still run nothing. (No
backslash: CMake cannot pass one on unchanged, and packager.cmake_text refuses it.)"""


def with_marker(text: str, marker: Path) -> str:
    return text.replace(MARKER, str(marker))


def write_profile(path: Path, fields: dict) -> Path:
    """A JSON profile file at `path` with `fields`; returns `path`."""
    path.write_text(json.dumps(fields))
    return path
