"""Build the bundle with its own Makefile and run its self-test on the host."""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path


class BuildError(Exception):
    """The bundle did not build; the message holds the compiler's first error line."""


@dataclass(frozen=True)
class SelftestResult:
    passed: bool
    exit_code: int
    max_errors: tuple[float, ...]  # per output, as the self-test printed them
    output: str


def build(bundle_dir: Path, extra_cflags: str = "-Werror", timeout_s: float = 900) -> None:
    """`make all` in `bundle_dir` with `extra_cflags`; raise BuildError with the first error line."""
    proc = subprocess.run(
        ["make", "-s", "all", f"EXTRA_CFLAGS={extra_cflags}"],
        cwd=bundle_dir, capture_output=True, text=True, timeout=timeout_s,
    )
    if proc.returncode != 0:
        errors = [line for line in proc.stderr.splitlines() if "error" in line] or proc.stderr.splitlines()
        raise BuildError(errors[0] if errors else f"make exited with {proc.returncode}")


def run_selftest(bundle_dir: Path, timeout_s: float = 600) -> SelftestResult:
    proc = subprocess.run(["./selftest"], cwd=bundle_dir, capture_output=True, text=True, timeout=timeout_s)
    errors = tuple(float(x) for x in re.findall(r"max abs error (\S+)", proc.stdout))
    return SelftestResult(proc.returncode == 0, proc.returncode, errors, proc.stdout)
