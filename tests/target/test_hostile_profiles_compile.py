"""A hostile profile runs nothing (issue 26, sections 2 and 4), end to end: a profile file whose fields hold make,
CMake or shell syntax is refused in one line before any make runs; a compiler or binutils that are not
installed are named before any make runs (the early one of --jobs 2 included); a profile that is no text file,
or a model file given as --target, is one line and exit 2; and a Profile made in Python past the loader, with
flags full of make, shell and CMake syntax, gives a bundle that compiles, ships, and runs nothing when its
Makefile, qemu-test.mk and CMakeLists.txt are built again. A valid custom profile still compiles and builds."""

from __future__ import annotations

import dataclasses
import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import target
import tvm_ext
from conftest import REPO, models_dir, run_cli
from emulator.tools import missing_tools
from hostile_profiles import DEFINE_INJECTIONS, FLAG_INJECTIONS, TOOL_INJECTIONS, with_marker, write_profile
from backends.cortex_m.bundle_files.support import QEMU_TEST_MAKEFILE
from tvm_ext.compile import CompileError

MODEL = "tflm/hello_world_float.tflite"
ERROR_PREFIX = "tvm_ext.compile: error: "
needs_cortex_m = pytest.mark.skipif(bool(missing_tools()) and not os.environ.get("CI"),
                                    reason="needs arm-none-eabi-gcc and qemu-system-arm")


def model_path() -> Path:
    return models_dir() / MODEL


def assert_one_line_exit_2(proc: subprocess.CompletedProcess, out: Path, *expected: str) -> str:
    assert proc.returncode == 2, proc.stderr[-3000:]
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{ERROR_PREFIX}hello_world_float.tflite: "), proc.stderr
    assert all(text in lines[0] for text in expected), lines[0]
    assert not out.exists() and not list(out.parent.glob(f".{out.name}.*"))
    return lines[0]


# Each field that reaches make or CMake, with its make and its CMake injection (the issue's three forms and a
# hostile compiler); a unit's fields go into `units`.
FIELD_CASES = {
    "cflags-make": ("cflags", [FLAG_INJECTIONS["make-shell-function"]]),
    "cflags-newline": ("cflags", [FLAG_INJECTIONS["newline-recipe"]]),
    "cflags-cmake": ("cflags", [FLAG_INJECTIONS["cmake-execute-process"]]),
    "ldflags-make": ("ldflags", [FLAG_INJECTIONS["make-shell-function"]]),
    "ldflags-shell": ("ldflags", [FLAG_INJECTIONS["shell-semicolon"]]),
    "c_compiler": ("c_compiler", TOOL_INJECTIONS["shell-semicolon"]),
    "binutils_prefix": ("binutils_prefix", TOOL_INJECTIONS["make-shell-function"]),
    "unit-cflags": ("units", [{"name": "host", "c_compiler": "cc", "cflags": [FLAG_INJECTIONS["shell-backticks"]]}]),
    "unit-c_compiler": ("units", [{"name": "host", "c_compiler": TOOL_INJECTIONS["newline-recipe"],
                                   "cflags": ["-O2"]}]),
}


def marked(value, marker: Path):
    """`value` (a payload, or a list or table of them) with MARKER replaced by `marker`."""
    if isinstance(value, str):
        return with_marker(value, marker)
    if isinstance(value, list):
        return [marked(item, marker) for item in value]
    return {key: marked(item, marker) for key, item in value.items()}


@pytest.mark.parametrize("case", FIELD_CASES)
def test_a_profile_file_with_injections_is_refused_before_anything_runs(tmp_path, case):
    """The compile, through the Python API with --jobs 2 (an early make would start beside the planning)."""
    marker = tmp_path / "marker"
    field, value = FIELD_CASES[case]
    for base in ("lowpower", "cortex-m4f"):
        profile = write_profile(tmp_path / f"{case}.json", {"extends": base, "name": "hostile",
                                                            field: marked(value, marker)})
        stages: list[str] = []
        with pytest.raises(CompileError) as refused:
            tvm_ext.compile(model_path(), target=str(profile), out=tmp_path / "out", jobs=2, log=stages.append)
        assert str(refused.value).startswith(f"hello_world_float.tflite: {profile}: field '{field}'")
        assert stages == [] and not marker.exists()


def test_the_command_line_refuses_the_issues_profile_in_one_line(tmp_path):
    marker = tmp_path / "marker"
    profile = write_profile(tmp_path / "evil.json", {
        "extends": "lowpower", "name": "evil", "cflags": ["-O2", f"$(shell touch {marker})"]})
    out = tmp_path / "out"
    proc = run_cli(str(model_path()), "--target", str(profile), "-o", str(out), "--jobs", "2")
    assert_one_line_exit_2(proc, out, str(profile), "field 'cflags'")
    assert not marker.exists()


@pytest.mark.parametrize("kind", ["model file", "non-UTF-8", "FIFO", "folder", "device"])
def test_a_target_that_is_no_profile_text_file_is_one_line_and_exit_2(tmp_path, kind):
    """Section 4: `--target` pointing at a model file, a profile that is not UTF-8; and the files a loader must
    not block on or read forever (run with a timeout: a blocking loader fails, it does not hang the suite)."""
    target_path = {"model file": str(model_path()), "device": str(tmp_path / "zero.toml")}.get(
        kind, str(tmp_path / "board.toml"))
    if kind == "non-UTF-8":
        Path(target_path).write_bytes('extends = "lowpower"\nname = "caf\u00e9"\n'.encode("latin-1"))
    elif kind == "FIFO":
        os.mkfifo(target_path)
    elif kind == "folder":
        os.mkdir(target_path)
    elif kind == "device":
        os.symlink("/dev/zero", target_path)
    out = tmp_path / "out"

    def limit_memory() -> None:  # a command that reads /dev/zero fails here instead of exhausting the machine
        resource.setrlimit(resource.RLIMIT_DATA, (4 * 2**30, 4 * 2**30))

    try:
        proc = subprocess.run([sys.executable, "-m", "tvm_ext.compile", str(model_path()), "--target", target_path,
                               "-o", str(out)], cwd=REPO, capture_output=True, text=True, timeout=120,
                              preexec_fn=limit_memory)
    except subprocess.TimeoutExpired:
        pytest.fail(f"--target {kind} did not end within 120 s")
    assert_one_line_exit_2(proc, out, target_path, "not a profile file")


def missing_tool_profile(field: str, marker: Path) -> target.Profile:
    """lowpower, made in Python, with a compiler or binutils that are not installed (one holds shell syntax)."""
    profile = target.load_profile("lowpower")
    if field == "c_compiler":
        return dataclasses.replace(profile, c_compiler="/nonexistent/bin/cc")
    if field == "hostile c_compiler":
        return dataclasses.replace(profile, c_compiler=f"touch {marker}; cc")
    return dataclasses.replace(profile, binutils_prefix="/nonexistent/bin/")


@pytest.mark.parametrize(("field", "named"), [("c_compiler", "C compiler /nonexistent/bin/cc"),
                                              ("hostile c_compiler", "C compiler touch"),
                                              ("binutils_prefix", "archiver /nonexistent/bin/ar")])
def test_tools_that_are_not_installed_are_named_before_any_make_runs(tmp_path, monkeypatch, field, named):
    """Before the model check, so no make (not the early one of --jobs 2) ever starts with them."""
    marker = tmp_path / "marker"
    started: list[list[str]] = []
    real_popen = subprocess.Popen

    def recorded_popen(command, *args, **kwargs):
        started.append(list(command) if not isinstance(command, str) else [command])
        return real_popen(command, *args, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", recorded_popen)
    stages: list[str] = []
    with pytest.raises(CompileError) as refused:
        tvm_ext.compile(model_path(), target=missing_tool_profile(field, marker), out=tmp_path / "out", jobs=2,
                        log=stages.append)
    assert named in str(refused.value) and "is not installed here" in str(refused.value)
    assert stages == [] and not any(command[0] == "make" for command in started)
    assert not marker.exists()


def injected_profile(base: str, marker: Path) -> target.Profile:
    """`base` made in Python (past the loader's grammar) with DEFINE_INJECTIONS in its cflags and ldflags."""
    profile = target.load_profile(base)
    defines = tuple(with_marker(flag, marker) for flag in DEFINE_INJECTIONS)
    return dataclasses.replace(profile, name=f"{base}-injected", cflags=(*profile.cflags, *defines),
                               ldflags=(*profile.ldflags, *defines))


def rebuild(bundle: Path, commands: list[list[str]], work: Path) -> None:
    """Run each build command on a copy of the shipped bundle (in `work`); each must succeed."""
    copy = work / "shipped"
    shutil.copytree(bundle, copy)
    for command in commands:
        proc = subprocess.run(command, cwd=copy, capture_output=True, text=True, timeout=900)
        assert proc.returncode == 0, (command, proc.stdout[-2000:], proc.stderr[-2000:])


def test_a_bundle_of_injected_flags_runs_nothing_when_compiled_or_built_again_on_the_host(tmp_path):
    marker = tmp_path / "marker"
    bundle = tvm_ext.compile(model_path(), target=injected_profile("lowpower", marker), out=tmp_path / "out", jobs=2)
    assert bundle.selftest.passed and not marker.exists()
    rebuild(bundle.out_dir, [["make", "-s", "clean"], ["make", "-s", "all"], ["make", "-s", "check"],
                             ["cmake", "-S", ".", "-B", "build-cmake"], ["cmake", "--build", "build-cmake"],
                             ["ctest", "--test-dir", "build-cmake"]], tmp_path)
    assert not marker.exists()


@needs_cortex_m
def test_a_bundle_of_injected_flags_runs_nothing_when_compiled_or_built_again_for_cortex_m(tmp_path):
    marker = tmp_path / "marker"
    bundle = tvm_ext.compile(model_path(), target=injected_profile("cortex-m4f", marker), out=tmp_path / "out",
                             jobs=2)
    assert bundle.selftest.passed and not marker.exists()
    toolchain = f"-DCMAKE_TOOLCHAIN_FILE={tmp_path / 'shipped' / 'cortex_m' / 'arm-none-eabi.cmake'}"
    rebuild(bundle.out_dir, [["make", "-s", "clean"], ["make", "-s", "lib"],
                             ["make", "-s", "-f", QEMU_TEST_MAKEFILE, "cortex-m-elf"],
                             ["cmake", "-S", ".", "-B", "build-lib", toolchain], ["cmake", "--build", "build-lib"],
                             ["cmake", "-S", "cortex_m", "-B", "build-elf", toolchain],
                             ["cmake", "--build", "build-elf"]], tmp_path)
    assert not marker.exists()


def test_a_valid_custom_profile_with_ordinary_flags_compiles_and_its_bundle_builds(tmp_path, cli_in_process):
    profile = write_profile(tmp_path / "my-host.json", {
        "extends": "lowpower", "name": "my-host", "cflags": ["-O1", "-DMY_BOARD_REV=2", "-fno-common"],
        "ldflags": ["-Wl,--as-needed"], "alignment_bytes": 32, "description": "my host (rev. 2)"})
    out = tmp_path / "out"
    proc = cli_in_process(str(model_path()), "--target", str(profile), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert "CFLAGS = -std=c99 -O1 -DMY_BOARD_REV=2 -fno-common\n" in (out / "Makefile").read_text()
    rebuild(out, [["make", "-s", "clean"], ["make", "-s", "check"], ["cmake", "-S", ".", "-B", "build-cmake"],
                  ["cmake", "--build", "build-cmake"]], tmp_path)
