"""The command's integration options (issue 32, items 6 and 7): `--name`, `--version`, `--list-targets`, a usage
line naming the command as invoked, and `--no-build` (a complete bundle, marked untested, for a toolchain not
installed here)."""

from __future__ import annotations

import filecmp
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import target
from conftest import REPO, example_model, run_cli
from tvm_ext.compile import tvm_ext_version

CONSOLE_SCRIPT = Path(sys.executable).parent / "tvm-ext-compile"


def test_the_usage_line_names_the_command_as_invoked():
    assert run_cli("--help").stdout.startswith("usage: python -m tvm_ext.compile ")
    installed = subprocess.run([str(CONSOLE_SCRIPT), "--help"], cwd=REPO, capture_output=True, text=True, check=True)
    assert installed.stdout.startswith("usage: tvm-ext-compile ")


def test_version_and_list_targets():
    version = run_cli("--version")
    assert version.returncode == 0 and version.stdout == f"python -m tvm_ext.compile {tvm_ext_version()}\n"
    listed = run_cli("--list-targets")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert len(lines) == len(target.profile_names())
    for line, name in zip(lines, target.profile_names()):
        assert line.split()[0] == name and line.endswith(target.load_profile(name).description)


def test_name_sets_the_bundles_c_prefix(tmp_path, cli_in_process):
    out = tmp_path / "out"
    proc = cli_in_process("--example", "--name", "keywords", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert {"keywords.h", "libkeywords.a", "keywords_model.c"} <= {path.name for path in out.iterdir()}
    assert "keywords_run(" in (out / "keywords.h").read_text()


@pytest.mark.parametrize("name", ["int", "my-model", "9lives", "stdint", "lp_x", "_x", "x" * 129, "caf\u00e9"])
def test_a_name_that_is_no_usable_c_prefix_is_refused_in_one_line(tmp_path, name):
    proc = run_cli("--example", "--name", name, "-o", str(tmp_path / "out"))
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "--name" in proc.stderr and "C prefix" in proc.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.skipif(shutil.which("xt-clang") is not None, reason="needs a machine without xt-clang")
def test_no_build_gives_an_untested_bundle_for_a_toolchain_not_installed_here(tmp_path, cli_in_process):
    out = tmp_path / "hifi4"
    refused = cli_in_process("--example", "--target", "hifi4", "-o", str(out))
    assert refused.returncode == 2 and "xt-clang is not installed here" in refused.stderr  # before any stage
    assert "[tvm_ext] check" not in refused.stdout
    proc = cli_in_process("--example", "--target", "hifi4", "--no-build", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "untested (--no-build)" in proc.stdout.splitlines()[-1]
    names = {path.name for path in out.iterdir()}
    assert {"example_kws_cnn.h", "example_kws_cnn_kernels.c", "selftest.c", "Makefile", "CMakeLists.txt",
            "manifest.json", "report.md", "report.html", "README.md", "example_kws_cnn.tar.gz"} <= names
    assert not any(name.endswith((".a", ".o")) for name in names)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["selftest"]["passed"] is None and "--no-build" in manifest["selftest"]["untested"]
    assert "**Untested**" in (out / "report.md").read_text()
    assert "**Untested**" in (out / "README.md").read_text()


def test_a_no_build_bundle_is_the_built_ones_sources_and_passes_its_self_test_when_built(compiled, tmp_path,
                                                                                         cli_in_process):
    built = compiled(example_model)
    out = tmp_path / "untested"
    proc = cli_in_process("--example", "--no-build", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    sources = [path.name for path in built.out_dir.iterdir()
               if path.suffix in (".c", ".h") or path.name in ("Makefile", "CMakeLists.txt", "memory_plan.svg")]
    assert filecmp.cmpfiles(out, built.out_dir, sources, shallow=False)[0] == sources
    check = subprocess.run(["make", "-s", "check"], cwd=out, capture_output=True, text=True)
    assert check.returncode == 0 and "selftest: PASS" in check.stdout, check.stdout + check.stderr
