"""The build files quote every word a profile gives them (issue 26, section 2: defence in depth behind the
loader's grammar). `packager.make_text` and `packager.cmake_text` are checked with hostile words that real make,
/bin/sh and CMake must hand back unchanged, one word each, while running nothing; then the bundle's Makefile,
qemu-test.mk, unit rules and CMakeLists.txt are written from a Profile made in Python (past the loader) whose
flags hold make, shell and CMake syntax, and built with a compiler that records what it was given."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import target
from hostile_profiles import FLAG_INJECTIONS, with_marker
from packager.build import make_command
from packager.build_files import BuildConfig, write_cmakelists, write_makefile
from packager.cmake_text import cmake_argument, cmake_quoted
from backends.cortex_m.bundle_files import write_cortex_m_support
from backends.cortex_m.bundle_files.support import QEMU_TEST_MAKEFILE, board_header, bundle_sources
from packager.make_text import make_words
from packager.unit_libraries import UnitBuild, kernel_sources
from tvm_ext.compile.pipeline import build_config

needs_make = pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")
needs_cmake = pytest.mark.skipif(shutil.which("cmake") is None, reason="needs CMake")


def hostile_words(marker: Path) -> list[str]:
    """Words that mean something to make, the shell or CMake, each trying to create `marker`."""
    return [with_marker(word, marker) for word in (
        "$(shell touch MARKER)", "$$(touch MARKER)", "`touch MARKER`", "a;touch MARKER", "a && touch MARKER",
        "${CMAKE_COMMAND}", "$ENV{HOME}", '")', "execute_process(COMMAND touch MARKER)", "#", "a#b", "a\\#b",
        "a\\\\#b", "\\", "a\\", "a b", "'", '"', "*", "~", "%", "a$", "$", "(x)", "a;b", "\\;", "$$", "café",
        "a[b", "c]", "$<1:x>",
    )]


def passable_by_cmake(word: str) -> bool:
    """Whether `cmake_quoted` takes `word` (packager.cmake_text: no backslash, square bracket or `$<`)."""
    return not any(text in word for text in ("\\", "[", "]", "$<"))


def dump_words_recipe() -> str:
    """A recipe that writes the words of $(WORDS), as the shell split them, to words.json."""
    return f"\t@{sys.executable} -c 'import json, sys; print(json.dumps(sys.argv[1:]))' $(WORDS) > words.json\n"


@needs_make
@pytest.mark.parametrize("assignment", ["=", ":=", "?="])
def test_make_words_reach_the_shell_as_the_same_words_and_run_nothing(tmp_path, assignment):
    marker = tmp_path / "marker"
    words = hostile_words(marker)
    (tmp_path / "Makefile").write_text(f"WORDS {assignment} {make_words(words)}\nall:\n{dump_words_recipe()}")
    subprocess.run(["make", "-s", "all"], cwd=tmp_path, check=True, capture_output=True)
    assert json.loads((tmp_path / "words.json").read_text()) == words
    assert not marker.exists()


@needs_make
def test_make_words_for_a_target_specific_variable_and_on_the_command_line(tmp_path):
    """The unit rules' `obj.o: CFLAGS = ...` and `make VAR=...` (the host check build's variables)."""
    marker = tmp_path / "marker"
    words = hostile_words(marker)
    (tmp_path / "Makefile").write_text(f"all: WORDS = {make_words(words, 'rule')}\nall:\n{dump_words_recipe()}")
    subprocess.run(["make", "-s", "all"], cwd=tmp_path, check=True, capture_output=True)
    assert json.loads((tmp_path / "words.json").read_text()) == words
    (tmp_path / "words.json").unlink()
    (tmp_path / "Makefile").write_text(f"WORDS = x\nall:\n{dump_words_recipe()}")
    subprocess.run(make_command("all", {"WORDS": tuple(words)}), cwd=tmp_path, check=True, capture_output=True)
    assert json.loads((tmp_path / "words.json").read_text()) == words
    assert not marker.exists()


@pytest.mark.parametrize("word", ["-O2\n\ttouch marker", "a\rb", "a\0b", "a\tb", "\x1b]0;title\x07"])
def test_make_and_cmake_refuse_a_control_character(word):
    with pytest.raises(ValueError):
        make_words([word])
    with pytest.raises(ValueError):
        cmake_quoted(word)


def test_safe_words_keep_their_bytes():
    flags = ("-mcpu=cortex-m4", "-mfloat-abi=hard", "-O2", "-DX=1", "-Wl,--gc-sections", "--specs=nano.specs",
             "-Icortex_m", "/usr/bin/arm-none-eabi-gcc")
    assert make_words(flags) == make_words(flags, "rule") == make_words(flags, "command line") == " ".join(flags)
    assert [cmake_argument(flag) for flag in flags] == list(flags)
    assert cmake_quoted("-O2") == '"-O2"' and cmake_quoted("-O2", "-g") == '"-O2;-g"'


RECORDING_COMPILER = """#!{python}
# Records its arguments (for a bundle source), then compiles with the host's cc without the words in $LP_DROP;
# for a Cortex-M compile (-mcpu=) it writes an empty object instead.
import json, os, subprocess, sys
args = sys.argv[1:]
if any("tiny_" in arg or "probe.c" in arg for arg in args):
    with open({log!r}, "a") as log:
        log.write(json.dumps(args) + "\\n")
drop = set(json.loads(os.environ.get("LP_DROP", "[]")))
if any(arg.startswith("-mcpu=") for arg in args):
    if "-o" in args:
        open(args[args.index("-o") + 1], "w").close()
    sys.exit(0)
sys.exit(subprocess.run(["cc", *(arg for arg in args if arg not in drop)]).returncode)
"""


def recording_compiler(folder: Path) -> tuple[Path, Path]:
    """A compiler named `recording-cc` in `folder` and the file it logs each bundle compile's arguments to."""
    compiler, log = folder / "recording-cc", folder / "compiles.jsonl"
    compiler.write_text(RECORDING_COMPILER.format(python=sys.executable, log=str(log)))
    compiler.chmod(0o755)
    return compiler, log


def compiles(log: Path) -> list[list[str]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


@needs_cmake
def test_cmake_quoted_flags_reach_the_compiler_as_the_same_words_and_run_nothing(tmp_path, monkeypatch):
    marker = tmp_path / "marker"
    words = [f"-D{word}" for word in hostile_words(marker) if passable_by_cmake(word)]
    for word in hostile_words(marker):
        if not passable_by_cmake(word):
            with pytest.raises(ValueError):
                cmake_quoted(word)
    compiler, log = recording_compiler(tmp_path)
    source = tmp_path / "src"
    source.mkdir()
    (source / "probe.c").write_text("int probe;\n")
    (source / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.13)\nproject(probe C)\nadd_library(probe STATIC probe.c)\n"
        f"target_compile_options(probe PRIVATE {' '.join(map(cmake_argument, words[:10]))} "
        f"{' '.join(map(cmake_quoted, words[10:20]))})\n"
        f"set_source_files_properties(probe.c PROPERTIES COMPILE_OPTIONS {cmake_quoted(*words[20:])})\n")
    monkeypatch.setenv("LP_DROP", json.dumps(words))
    monkeypatch.setenv("CC", str(compiler))
    for command in (["cmake", "-S", "src", "-B", "build"], ["cmake", "--build", "build"]):
        proc = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    (compile_args,) = [args for args in compiles(log) if any(arg.endswith("probe.c") for arg in args)]
    assert [arg for arg in compile_args if arg in words] == words
    assert not marker.exists()


def hostile_profile(base: str, marker: Path, compiler: Path) -> target.Profile:
    """`base` as a Profile made in Python (no loader grammar) compiled by `compiler`, with every one-line flag
    injection in its cflags and ldflags."""
    injections = [with_marker(text, marker) for text in FLAG_INJECTIONS.values() if "\n" not in text]
    profile = target.load_profile(base)
    return dataclasses.replace(profile, c_compiler=str(compiler), cflags=(*profile.cflags, *injections),
                               ldflags=(*profile.ldflags, *injections))


def write_tiny_bundle(out: Path, config: BuildConfig) -> None:
    """The build files of a model "tiny" for `config`, with C sources that compile."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "Makefile").write_text(write_makefile("tiny", config))
    (out / "CMakeLists.txt").write_text(write_cmakelists("tiny", config))
    if config.emulated:
        write_cortex_m_support(out, "tiny", config)
    sources = {*bundle_sources("tiny"), *kernel_sources("tiny", config.units)}
    for source in sources:
        (out / source).write_text("int main(void) { return 0; }\n" if source == "selftest.c" else
                                  f"int {source.removesuffix('.c')}_symbol;\n")
    (out / "tiny.h").write_text("")


@needs_make
@pytest.mark.parametrize("base", ["lowpower", "cortex-m4f"])
def test_the_bundles_makefiles_hand_every_hostile_flag_to_the_compiler_and_run_nothing(tmp_path, monkeypatch, base):
    marker = tmp_path / "marker"
    compiler, log = recording_compiler(tmp_path)
    profile = hostile_profile(base, marker, compiler)
    injections = [flag for flag in profile.cflags if flag not in target.load_profile(base).cflags]
    monkeypatch.setenv("LP_DROP", json.dumps(injections))
    config = build_config(profile)
    out = tmp_path / "out"
    write_tiny_bundle(out, config)
    goals = [["make", "-s", "lib"]]
    if config.emulated:
        goals.append(["make", "-s", "-f", QEMU_TEST_MAKEFILE, "cortex-m-elf"])
    for goal in goals:
        subprocess.run(goal, cwd=out, capture_output=True)
        assert not marker.exists(), goal
    library_compiles = [args for args in compiles(log) if "-c" in args]
    assert library_compiles, "the recording compiler never ran"
    for args in library_compiles:
        assert [arg for arg in args if arg in injections] == injections, args


@needs_make
@needs_cmake
def test_a_compute_units_rules_and_the_cmake_build_run_nothing(tmp_path, monkeypatch):
    """A profile whose unit compiles with hostile flags: the Makefile's target-specific rules and the
    CMakeLists.txt's per-source options hand them over as words; configuring and building runs nothing."""
    marker = tmp_path / "marker"
    compiler, log = recording_compiler(tmp_path)
    profile = hostile_profile("lowpower", marker, compiler)
    injections = [flag for flag in profile.cflags if flag != "-O2"]
    monkeypatch.setenv("LP_DROP", json.dumps(injections))
    monkeypatch.setenv("CC", str(compiler))
    config = dataclasses.replace(build_config(profile), units=(UnitBuild("host", str(compiler), profile.cflags),))
    out = tmp_path / "out"
    write_tiny_bundle(out, config)
    subprocess.run(["make", "-s", "all"], cwd=out, capture_output=True)
    make_compiles = compiles(log)
    unit_compiles = [args for args in make_compiles if "tiny_kernels_host.c" in args]
    assert unit_compiles and [arg for arg in unit_compiles[0] if arg in injections] == injections
    for command in (["cmake", "-S", "out", "-B", "build"], ["cmake", "--build", "build"]):
        subprocess.run(command, cwd=tmp_path, capture_output=True)
    cmake_compiles = compiles(log)[len(make_compiles):]
    (unit_compile,) = [args for args in cmake_compiles if any(arg.endswith("tiny_kernels_host.c") for arg in args)]
    assert [arg for arg in unit_compile if arg in injections] == injections * 2  # the profile's, then the unit's
    assert not marker.exists()


@needs_cmake
def test_a_newline_in_a_flag_cannot_reach_a_cmakelists(tmp_path):
    """The issue's `")` + newline + execute_process(...): refused by the writer, whatever made the profile."""
    marker = tmp_path / "marker"
    flag = with_marker(FLAG_INJECTIONS["cmake-execute-process"], marker)
    config = BuildConfig(cflags=("-O2", flag))
    try:
        text = write_cmakelists("tiny", config)
    except ValueError:
        return
    (tmp_path / "CMakeLists.txt").write_text(text)
    subprocess.run(["cmake", "-S", ".", "-B", "build"], cwd=tmp_path, capture_output=True)
    assert not marker.exists()
    pytest.fail("a flag with a newline was written into CMakeLists.txt")


@needs_make
def test_a_hostile_profile_name_stays_inside_its_comments(tmp_path):
    """lp_board.h, qemu-test.mk and the Cortex-M CMakeLists.txt name the profile in a comment: a name that
    ends the C comment, or starts a make line, is escaped or refused, whatever made the profile."""
    marker = tmp_path / "marker"
    m4f = target.load_profile("cortex-m4f")
    c_name = build_config(dataclasses.replace(m4f, name="x */ int pwned; /* y"))
    first_line = board_header(c_name.emulated.target).splitlines()[0]
    assert first_line.startswith("/* ") and first_line.endswith(" */") and first_line.count("*/") == 1, first_line
    make_name = build_config(dataclasses.replace(m4f, name=f"x\n$(shell touch {marker})\n#"))
    try:
        write_tiny_bundle(tmp_path / "out", make_name)
    except ValueError:
        return
    subprocess.run(["make", "-n", "-f", QEMU_TEST_MAKEFILE, "cortex-m-elf"], cwd=tmp_path / "out",
                   capture_output=True)
    assert not marker.exists()
    pytest.fail("a profile name with a newline was written into qemu-test.mk")
