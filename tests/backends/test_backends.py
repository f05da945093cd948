"""The backend seam (backends/): each profile names its backend, and nothing outside the backends (and the
profile that names them) asks which instruction set a core has."""

from __future__ import annotations

import pickle
import re

import pytest

from backends import backend_of
from conftest import REPO
from target import load_profile
from target.loading import profile_names

ISA_TEST = re.compile(r"\b(simd|arch)(\s*(==|!=|\bin\b)|\.startswith)|[\"'](simd|arch)[\"']\s*\]|get\([\"'](simd|arch)[\"']")
"""A comparison of a profile's `simd` or `arch` field, or of a variable or dict entry holding one: an
instruction-set test."""

OUTSIDE_THE_BACKENDS = ("tvm_ext", "packager", "emulator", "memory_planner", "printable", "scripts")
"""The code that must ask a backend object instead (target/ derives the backend's name and registers TVM tags)."""


def test_no_isa_test_outside_the_backends() -> None:
    found = [f"{path.relative_to(REPO)}:{number}: {line.strip()}"
             for folder in OUTSIDE_THE_BACKENDS for path in sorted((REPO / folder).rglob("*.py"))
             for number, line in enumerate(path.read_text().splitlines(), 1) if ISA_TEST.search(line)]
    assert not found, "\n".join(found)


SEAM_MODULES = r"(?!backend\b|schedules\b|code_price\b)"
"""The modules of package `backends` that are the seam, not a family: the Backend record, the schedules' lookup and
the one price of code (`backends.code_price`) every family's choices and the compiler's share."""
FAMILY_IMPORT = re.compile(rf"^\s*(from\s+backends(\.{SEAM_MODULES}\w+|\s+import\s+(?!backend_of\b|BACKENDS\b)\w+)"
                           rf"|import\s+backends\.{SEAM_MODULES}\w+)")
"""An import of one family's backend (`backends.cortex_m`, `backends.riscv`, ...) rather than of the seam
(`backends.backend`, `backends.schedules`, `backends.code_price`, `backends.backend_of`)."""

SEAM_USERS = ("packager", "tvm_ext")
"""The code that reaches a family's support files, build and runner only through the seam's objects."""


def test_the_packager_and_the_compiler_import_no_family_backend() -> None:
    """The runner (`Backend.emulated_runner`) writes, builds, runs and measures; the packager and the compiler
    name none of its files, so a new family needs no change there."""
    found = [f"{path.relative_to(REPO)}:{number}: {line.strip()}"
             for folder in SEAM_USERS for path in sorted((REPO / folder).rglob("*.py"))
             for number, line in enumerate(path.read_text().splitlines(), 1) if FAMILY_IMPORT.search(line)]
    assert not found, "\n".join(found)


@pytest.mark.parametrize("line", ["from backends.cortex_m.bundle_files import CROSS_BUILD_DIR",
                                  "    from backends.riscv.selftest import run_riscv_selftest",
                                  "import backends.cortex_m.bundle_files.support as support",
                                  "from backends import cortex_m"])
def test_a_family_import_is_recognised(line: str) -> None:
    assert FAMILY_IMPORT.search(line)


@pytest.mark.parametrize("line", ["from backends.backend import EmulatedRunner", "from backends import backend_of",
                                  "from backends.schedules import kernel_schedules_of",
                                  "from backends.code_price import INSTRUCTIONS_PER_BYTE"])
def test_a_seam_import_is_not_a_family_import(line: str) -> None:
    assert not FAMILY_IMPORT.search(line)


@pytest.mark.parametrize("name", profile_names())
def test_each_emulated_profile_has_a_runner_of_its_backend(name: str) -> None:
    """Every profile that names one of our QEMU boards self-tests on it (Cortex-M and RISC-V alike)."""
    profile = load_profile(name)
    runner = backend_of(profile).emulated_runner(profile)
    assert (runner is not None) == (profile.qemu_board is not None)
    if runner is not None:
        assert runner.name == name and runner.board_name == profile.qemu_board
        assert runner.manifest_key == profile.backend


@pytest.mark.parametrize("name", profile_names())
def test_each_builtin_profile_names_the_backend_of_its_core(name: str) -> None:
    profile = load_profile(name)
    expected = "cortex_m" if name.startswith("cortex-m") else "riscv" if name.startswith("rv32") else "generic_c"
    assert profile.backend == expected
    assert backend_of(profile).name == expected
    assert (backend_of(profile).helper_library is not None) == (expected in ("cortex_m", "riscv"))


@pytest.mark.parametrize("name", profile_names())
def test_dsp_cores_and_riscv_cores_get_mac_helper_schedules(name: str) -> None:
    """Arm cores with the DSP extension, Helium ("mve") cores included: Armv8.1-M with MVE has it; and RISC-V
    cores, whose reductions call the RV32 window MAC (backends.riscv.schedules)."""
    from backends.schedules import kernel_schedules_of

    profile = load_profile(name)
    expected = profile.simd in ("dsp", "mve") or profile.backend == "riscv"
    assert (kernel_schedules_of(profile).mac is not None) == expected


@pytest.mark.parametrize("name", profile_names())
def test_dsp_and_riscv_cores_have_kernel_kind_targets(name: str) -> None:
    """report.md's speed targets are those of the DSP extension's kernels (backends.cortex_m.kind_targets) on
    the cores that have it, RV32IM's (backends.riscv.kind_targets) on the RISC-V ones, none elsewhere."""
    from backends.cortex_m.kind_targets import DSP_TARGETS
    from backends.riscv.kind_targets import RV32_TARGETS
    from packager.kernel_kinds import KINDS

    profile = load_profile(name)
    targets = backend_of(profile).kind_targets(profile)
    expected = RV32_TARGETS if profile.backend == "riscv" else DSP_TARGETS if profile.simd in ("dsp", "mve") else None
    assert targets is expected
    assert targets is None or set(targets) == set(KINDS)  # a target for every kind


@pytest.mark.parametrize("line", ['return DSP_TARGETS if simd in ("dsp", "mve") else None',
                                  'targets=kind_targets(self.profile.get("simd"))', 'if profile.arch == "rv32imc":',
                                  'if facts["simd"] == "dsp":', 'profile.arch.startswith("armv")'])
def test_an_isa_test_is_recognised(line: str) -> None:
    assert ISA_TEST.search(line)


@pytest.mark.parametrize("name", [name for name in profile_names() if name.startswith("cortex-m")])
def test_a_helium_core_defines_the_helpers_with_mve_bodies_and_takes_no_q15_pairs(name: str) -> None:
    """TFLite Micro's per-target override: the kernels call the same helpers on every Cortex-M core (their calls
    record the backend's library); the bundle of a core with MVE (`simd = "mve"`) defines them with Helium's
    bodies, and its pixel pairs read int8 lanes unwidened. Every other core's bundle is as before."""
    from backends.cortex_m.helpers import CORTEX_M_HELPERS, HELIUM_HELPERS
    from backends.cortex_m.schedules import DUAL_MAC_SCHEDULES, FPU_DUAL_MAC_SCHEDULES, HELIUM_MAC_SCHEDULES
    from backends.schedules import kernel_schedules_of

    profile = load_profile(name)
    helium = profile.simd == "mve"
    # a subgraph's C generated in a worker process records a copy of the library (pickled back)
    for recorded in (CORTEX_M_HELPERS, pickle.loads(pickle.dumps(CORTEX_M_HELPERS))):
        assert backend_of(profile).bundle_helper_libraries(profile, (recorded,)) == (
            (HELIUM_HELPERS,) if helium else (CORTEX_M_HELPERS,))
    assert ("vmladavaq_s8" in HELIUM_HELPERS.c_text("m")) and ("vmladavaq" not in CORTEX_M_HELPERS.c_text("m"))
    mac = kernel_schedules_of(profile).mac
    # a DSP core with a scalar FPU: the same integer schedules, its float reductions the scalar FPU's helpers
    dsp = FPU_DUAL_MAC_SCHEDULES if profile.hardware_float else DUAL_MAC_SCHEDULES
    assert mac is (HELIUM_MAC_SCHEDULES if helium else dsp if profile.simd == "dsp" else None)
