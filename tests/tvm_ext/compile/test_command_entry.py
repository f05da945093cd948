"""The command's two entries, `tvm-ext-compile` (the console script) and `python -m tvm_ext.compile`, work from
any working directory, and `--example` leaves no temporary folder behind.

`python -m` puts the working directory first on the import path: a `target/` folder there (every Rust and
Maven project has one) would otherwise shadow our top-level `target` package, and likewise `packager/` and
`memory_planner/`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ENTRIES = {
    "console_script": [str(Path(sys.executable).parent / "tvm-ext-compile")],
    "python_m": [sys.executable, "-m", "tvm_ext.compile"],
}


def folder_shadowing_our_packages(folder: Path) -> Path:
    """`folder` holding junk `target`, `packager` and `memory_planner` packages that fail when imported."""
    for package in ("target", "packager", "memory_planner"):
        (folder / package).mkdir(parents=True)
        (folder / package / "__init__.py").write_text(f"raise ImportError('the working directory {package}/')\n")
    return folder


@pytest.mark.parametrize("entry", ENTRIES, ids=str)
def test_command_works_from_a_folder_holding_target_packager_and_memory_planner(entry, tmp_path):
    cwd = folder_shadowing_our_packages(tmp_path / "rust_project")
    proc = subprocess.run([*ENTRIES[entry], "--example", "-o", "bundle"], cwd=cwd, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert (cwd / "bundle" / "libexample_kws_cnn.a").is_file()


def test_example_leaves_no_temporary_folder(tmp_path):
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    proc = subprocess.run([*ENTRIES["python_m"], "--example", "-o", str(tmp_path / "out")], capture_output=True,
                          text=True, timeout=600, env={**os.environ, "TMPDIR": str(temporary)})
    assert proc.returncode == 0, proc.stderr
    # (a runtime library keeps a small `.ses` file there: a file, not a folder of ours)
    assert [path for path in temporary.iterdir() if path.is_dir()] == []
