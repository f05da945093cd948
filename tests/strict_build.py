"""Builds a copy of a bundle with the strictest warnings and the sanitizers, and runs its self-test.

Issue 8's bar for generated C: no warning under -Wall -Wextra -Wconversion -Wshadow -Werror with gcc, and
a self-test that passes under AddressSanitizer and UndefinedBehaviorSanitizer (which stop at the first
finding: no recovery).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

SANITIZE = "-fsanitize=address,undefined -fno-sanitize-recover=all"
STRICT_WARNINGS = "-Wconversion -Wshadow -Werror"  # on top of the Makefile's -Wall -Wextra


def strict_sanitized_selftest(bundle_dir: Path, work_dir: Path, extra_cflags: str = "") -> subprocess.CompletedProcess:
    """Copy ``bundle_dir`` into ``work_dir``, build it with gcc, the strict warnings and the sanitizers, and
    run its self-test; a failed build raises ``CalledProcessError`` with the compiler's messages."""
    copy = work_dir / bundle_dir.name
    shutil.copytree(bundle_dir, copy)  # creates work_dir too
    subprocess.run(["make", "-s", "clean"], cwd=copy, check=True)
    flags = f"{STRICT_WARNINGS} {SANITIZE} {extra_cflags}".strip()
    subprocess.run(["make", "-s", "all", "CC=gcc", f"EXTRA_CFLAGS={flags}", f"LDFLAGS={SANITIZE}"],
                   cwd=copy, check=True, capture_output=True, text=True)
    return subprocess.run(["./selftest"], cwd=copy, capture_output=True, text=True)
