"""One build configuration (issue 14 item 3): the profile's compiler flags reach the Makefile, the
CMakeLists.txt and the emulated self-test's build alike, so the code QEMU measures is compiled as the library
that ships. No TVM: the build files are written from a BuildConfig made from a profile file."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

import target
from packager.build_files import write_cmakelists, write_makefile
from backends.cortex_m.bundle_files import write_cortex_m_support
from backends.cortex_m.bundle_files.support import BOARD_SOURCES, bundle_sources
from tvm_ext.compile.pipeline import build_config

BOARD_FLAGS = ("-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16", "-O1", "-DMY_BOARD_FLAG=1",
               "-ffunction-sections", "-fdata-sections")


def board_profile(tmp_path: Path, cflags: tuple[str, ...] = BOARD_FLAGS) -> target.Profile:
    """A user's cortex-m4f board whose cflags differ from the built-in's (-O1 and a define)."""
    path = tmp_path / "my_board.toml"
    path.write_text(f'extends = "cortex-m4f"\nname = "my-board"\ncflags = {json.dumps(list(cflags))}\n')
    return target.load_profile(path)


def write_build_files(out: Path, profile: target.Profile) -> Path:
    """Write the bundle's three kinds of build files for model "tiny", with empty sources for `make -n`;
    return `out`."""
    config = build_config(profile)
    out.mkdir(parents=True, exist_ok=True)
    (out / "Makefile").write_text(write_makefile("tiny", config))
    (out / "CMakeLists.txt").write_text(write_cmakelists("tiny", config))
    write_cortex_m_support(out, "tiny", config)
    for source in [*bundle_sources("tiny"), "tiny.h"]:
        (out / source).write_text("")
    return out


def qemu_compile_lines(out: Path) -> list[list[str]]:
    """The compiler commands `make cortex-m-elf` would run (dry run), each split into words."""
    dry = subprocess.run(["make", "-n", "-C", str(out), "-f", "cortex_m/qemu-test.mk", "cortex-m-elf"],
                         capture_output=True, text=True, check=True).stdout
    return [shlex.split(line) for line in dry.splitlines() if " -c " in line]


def test_every_build_file_compiles_with_the_profiles_flags(tmp_path: Path) -> None:
    profile = board_profile(tmp_path)
    write_build_files(tmp_path / "out", profile)
    flags = " ".join(profile.cflags)
    makefile = (tmp_path / "out" / "Makefile").read_text()
    assert f"CFLAGS = -std=c99 {flags}\n" in makefile
    cmake = (tmp_path / "out" / "CMakeLists.txt").read_text()
    assert " ".join(f'"{flag}"' for flag in profile.cflags) in cmake
    for support_file in ("qemu-test.mk", "CMakeLists.txt"):
        text = (tmp_path / "out" / "cortex_m" / support_file).read_text()
        assert flags in text, support_file
        assert "-O2" not in text, f"cortex_m/{support_file} still has an optimisation level of its own"


@pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")
def test_a_profile_flag_change_reaches_the_qemu_builds_compile_lines(tmp_path: Path) -> None:
    builtin_lines = qemu_compile_lines(write_build_files(tmp_path / "builtin", target.load_profile("cortex-m4f")))
    board_lines = qemu_compile_lines(write_build_files(tmp_path / "board", board_profile(tmp_path)))
    assert len(board_lines) == len(bundle_sources("tiny")) + len(BOARD_SOURCES)  # the bundle's, then ours
    for words in board_lines:
        assert words[0] == "arm-none-eabi-gcc"
        position = words.index(BOARD_FLAGS[0])
        assert tuple(words[position:position + len(BOARD_FLAGS)]) == BOARD_FLAGS, words
        assert "-O2" not in words
    for words in builtin_lines:
        assert "-O2" in words and "-DMY_BOARD_FLAG=1" not in words


def test_the_host_check_build_keeps_the_profiles_portable_flags() -> None:
    """A profile whose compiler makes no host programs (hifi4: xt-clang) has its self-test built on the host
    with the profile's optimisation level and defines, not a fixed -O2 nor the Xtensa machine flags."""
    host = build_config(target.load_profile("hifi4")).on_host().make_variables()
    assert host["CC"] == ("cc",) and host["LDFLAGS"] == ()
    assert host["CFLAGS"] == ("-std=c99", "-DHIFI4", "-O3", "-ffunction-sections", "-fdata-sections")
