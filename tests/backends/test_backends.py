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


@pytest.mark.parametrize("name", profile_names())
def test_each_builtin_profile_names_the_backend_of_its_core(name: str) -> None:
    profile = load_profile(name)
    expected = "cortex_m" if name.startswith("cortex-m") else "riscv" if name.startswith("rv32") else "generic_c"
    assert profile.backend == expected
    assert backend_of(profile).name == expected
    assert (backend_of(profile).helper_library is not None) == (expected == "cortex_m")


@pytest.mark.parametrize("name", profile_names())
def test_only_dsp_cores_get_the_mac_helper_schedules(name: str) -> None:
    """Cores with the DSP extension, Helium ("mve") cores included: Armv8.1-M with MVE has it."""
    from backends.schedules import kernel_schedules_of

    profile = load_profile(name)
    assert (kernel_schedules_of(profile).mac is not None) == (profile.simd in ("dsp", "mve"))


@pytest.mark.parametrize("name", profile_names())
def test_only_dsp_cores_have_kernel_kind_targets(name: str) -> None:
    """report.md's speed targets are those of the DSP extension's kernels (backends.cortex_m.kind_targets)."""
    from backends.cortex_m.kind_targets import DSP_TARGETS

    profile = load_profile(name)
    targets = backend_of(profile).kind_targets(profile)
    assert targets is (DSP_TARGETS if profile.simd in ("dsp", "mve") else None)


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
    from backends.cortex_m.schedules import DUAL_MAC_SCHEDULES, HELIUM_MAC_SCHEDULES
    from backends.schedules import kernel_schedules_of

    profile = load_profile(name)
    helium = profile.simd == "mve"
    # a subgraph's C generated in a worker process records a copy of the library (pickled back)
    for recorded in (CORTEX_M_HELPERS, pickle.loads(pickle.dumps(CORTEX_M_HELPERS))):
        assert backend_of(profile).bundle_helper_libraries(profile, (recorded,)) == (
            (HELIUM_HELPERS,) if helium else (CORTEX_M_HELPERS,))
    assert ("vmladavaq_s8" in HELIUM_HELPERS.c_text("m")) and ("vmladavaq" not in CORTEX_M_HELPERS.c_text("m"))
    mac = kernel_schedules_of(profile).mac
    assert mac is (HELIUM_MAC_SCHEDULES if helium else DUAL_MAC_SCHEDULES if profile.simd == "dsp" else None)
