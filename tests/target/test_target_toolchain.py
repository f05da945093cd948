"""The profiles' compiler flags against the compilers themselves.

The compiler is the independent reference: its predefined macros and its -march say what the flags really
select, which must be what the profile states (fpu, simd, arch). Profiles whose compiler is not installed are
skipped with the reason (hifi4's xt-clang is never on this machine).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

import target

# GCC calls Armv6-M with the SVC instruction "armv6s-m"; every Cortex-M0+ has it.
GCC_ARCH_NAMES = {"armv6s-m": "armv6-m"}

PROGRAM = """
#include <stdint.h>
volatile float scale = 0.5f;
int32_t requantize(int32_t acc) { return (int32_t)((float)acc * scale); }
int main(void) { return requantize(6) == 3 ? 0 : 1; }
"""


def _compiler_of(name: str) -> target.Profile:
    profile = target.load_profile(name)
    if shutil.which(profile.c_compiler) is None:
        pytest.skip(f"{profile.c_compiler} (the {name} profile's compiler) is not installed")
    return profile


def _predefined_macros(profile: target.Profile) -> dict[str, str]:
    listing = subprocess.run(
        [profile.c_compiler, *profile.cflags, "-dM", "-E", "-x", "c", "/dev/null"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    macros = {}
    for line in listing.splitlines():
        _, name, *value = line.split(maxsplit=2)
        macros[name] = value[0] if value else ""
    return macros


ARM_PROFILES = [name for name in target.profile_names() if target.load_profile(name).arch.startswith("armv")]


@pytest.mark.parametrize("name", ARM_PROFILES)
def test_arm_flags_select_the_fpu_and_simd_the_profile_states(name):
    profile = _compiler_of(name)
    macros = _predefined_macros(profile)
    fp_formats = int(macros.get("__ARM_FP", "0"))  # bit 2: single, bit 3: double (ACLE)
    assert bool(fp_formats & 4) == profile.hardware_float
    assert bool(fp_formats & 8) == profile.hardware_double
    assert ("__ARM_PCS_VFP" in macros) == profile.hardware_float  # hard-float calling convention
    assert ("__ARM_FEATURE_DSP" in macros) == (profile.simd in ("dsp", "mve"))
    assert ("__ARM_FEATURE_MVE" in macros) == (profile.simd == "mve")


@pytest.mark.parametrize("name", ARM_PROFILES)
def test_arm_flags_select_the_profile_architecture(name):
    profile = _compiler_of(name)
    options = subprocess.run(
        [profile.c_compiler, *profile.cflags, "-Q", "--help=target"], capture_output=True, text=True, check=True
    ).stdout
    march = next(line.split()[1] for line in options.splitlines() if line.strip().startswith("-march="))
    base = march.split("+")[0]
    assert GCC_ARCH_NAMES.get(base, base) == profile.arch


@pytest.mark.parametrize("name", target.profile_names())
def test_flags_compile_and_link_a_program(name, tmp_path: Path):
    profile = _compiler_of(name)
    source = tmp_path / "program.c"
    source.write_text(PROGRAM)
    # Bare-metal links need a syscall stub library; the bundle's own link adds its startup code instead.
    stubs = ["--specs=nosys.specs"] if profile.binutils_prefix == "arm-none-eabi-" else []
    executable = tmp_path / "program"
    subprocess.run(
        [
            profile.c_compiler,
            "-std=c99",
            "-Wall",
            "-Wextra",
            "-Werror",
            *profile.cflags,
            str(source),
            *profile.ldflags,
            *stubs,
            "-o",
            str(executable),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    if profile.qemu_board is None and profile.binutils_prefix == "":
        assert subprocess.run([str(executable)], check=False).returncode == 0  # host build: run it


@pytest.mark.parametrize("name", target.profile_names())
def test_binutils_of_the_profile_are_installed_beside_its_compiler(name):
    profile = _compiler_of(name)
    for tool in ("ar", "size", "objcopy"):
        assert shutil.which(profile.tool(tool)), f"{profile.tool(tool)} missing beside {profile.c_compiler}"


def test_every_emulated_board_exists_in_the_installed_qemu():
    if shutil.which("qemu-system-arm") is None:
        pytest.skip("qemu-system-arm is not installed")
    machines = subprocess.run(["qemu-system-arm", "-M", "help"], capture_output=True, text=True, check=True).stdout
    known = {line.split()[0] for line in machines.splitlines()[1:] if line.strip()}
    boards = {target.load_profile(name).qemu_board for name in target.profile_names()} - {None}
    assert boards <= known
