"""A bundle for a profile of two RAM regions runs on QEMU's mps3-an547 with a linker script that places each
region's arena in its memory (issue 31, "Memory regions").

The profile extends cortex-m55 with an 8 KiB "dtcm" region (the board's DTCM at 0x20000000) before the rest of
the SRAM (the board's ISRAM at 0x21000000, where the self-test's RAM is). kws_ref_model's 8,000 B activations
then split over both arenas. The test rewrites the bundle's linker script as a user would (the DTCM region,
one output section per arena, one for the weights in the QSPI flash), defines the bundle's section macros on
the compiler's command line, and checks that the self-test is bit-exact under QEMU (with the poisoned-arena
build: every byte of both arenas that no live buffer holds is overwritten before each call) and that the
symbols landed exactly at their regions' origins (arm-none-eabi-nm: each arena's output section is the first
its memory holds, the weights' the first of the QSPI flash). A bundle of kws_ref_model and ad01_int8 on the same
profile and linker script shares one arena per region (the larger model's bytes in each), both self-tests
bit-exact on poisoned arenas.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

import tvm_ext
from backends.cortex_m.bundle_files import SELFTEST_ELF
from conftest import models_dir, two_region_profile
from emulator.boards import BOARDS
from emulator.tools import missing_tools

pytestmark = pytest.mark.skipif(bool(missing_tools()) and not os.environ.get("CI"),
                                reason="needs arm-none-eabi-gcc and qemu-system-arm: run scripts/install_deps.sh")

MODEL = "kws_ref_model"
PAIRED = "ad01_int8"  # the second model of the bundle of two
DTCM_ORIGIN, DTCM_BYTES = 0x20000000, 8_192  # mps3-an547's DTCM (emulator/boards.py), the part the profile lists
# The Cortex-M55 (1 MiB of SRAM) with part of its DTCM as a fast region before the rest of its SRAM.
PROFILE = two_region_profile("cortex-m55", "m55-two-regions", ("dtcm", DTCM_BYTES), ("sram", 1_048_576 - DTCM_BYTES))
SECTIONS = {"ARENA_DTCM": ".dtcm_arena", "ARENA_SRAM": ".sram_arena", "WEIGHTS": ".model_weights"}
"""Each section macro's suffix and the output section the test's linker script gives it."""


def _region_link_script(text: str) -> str:
    """The bundle's link.ld with the DTCM as a memory, each arena's section in its region (NOLOAD: the arenas
    need no initial value) and the weights' section in the QSPI flash, between two symbols."""
    text = text.replace("MEMORY\n{\n", f"MEMORY\n{{\n    DTCM (rw) : ORIGIN = 0x{DTCM_ORIGIN:08X}, LENGTH = 0x{DTCM_BYTES:X}\n")
    placed = (
        "    .dtcm_arena (NOLOAD) : ALIGN(32) { *(.dtcm_arena) } > DTCM\n"
        "    .sram_arena (NOLOAD) : ALIGN(32) { *(.sram_arena) } > RAM\n"
        "    .model_weights : ALIGN(32) { __model_weights_start__ = .; *(.model_weights) "
        "__model_weights_end__ = .; } > CONSTANTS\n\n"
    )
    assert "    .data : ALIGN(4)" in text
    return text.replace("    .data : ALIGN(4)", placed + "    .data : ALIGN(4)", 1)


def _symbols(elf: Path) -> dict[str, int]:
    """Every symbol's address in `elf`, by name (arm-none-eabi-nm)."""
    listing = subprocess.run(["arm-none-eabi-nm", str(elf)], capture_output=True, text=True, check=True).stdout
    return {fields[2]: int(fields[0], 16) for fields in (line.split() for line in listing.splitlines())
            if len(fields) == 3}


def _run_placed(out: Path, owner: str, poisoned: list[str]) -> dict[str, int]:
    """Build the bundle in `out` (its arenas and weights named by `owner`'s section macros) with the test's linker
    script and the poisoned-arena build of each model of `poisoned`, run its self-test under QEMU (which must
    pass) and return its ELF's symbols."""
    link = out / "cortex_m" / "link.ld"
    link.write_text(_region_link_script(link.read_text()))
    N = owner.upper()
    defines = " ".join([*(f"-D{model.upper()}_POISON_ARENA" for model in poisoned),
                        *(f"'-D{N}_{suffix}_SECTION=__attribute__((section(\"{section}\")))'"
                          for suffix, section in SECTIONS.items())])
    proc = subprocess.run(["make", "qemu-test", f"CORTEX_M_CC=arm-none-eabi-gcc {defines}"],
                          cwd=out, capture_output=True, text=True, timeout=600)
    passed = proc.returncode == 0 and "selftest: PASS\nlp: exit 0" in proc.stdout and "FAIL" not in proc.stdout
    compared = proc.stdout.count(" checksum ")  # one line per case and output, of every model
    assert passed and compared >= len(poisoned) and proc.stdout.count("(bit-identical)") == compared, \
        proc.stdout[-3000:] + proc.stderr[-3000:]
    return _symbols(out / SELFTEST_ELF)


def _assert_placed_at_origins(symbols: dict[str, int], owner: str, weight_symbol: str) -> None:
    """`owner`'s two arenas start exactly at their regions' origins (each the first output section of its memory),
    and every weight array (symbols matching `weight_symbol`) lies in the weights' section, the first of the QSPI
    flash."""
    board = BOARDS["mps3-an547"]
    assert symbols[f"{owner}_arena_dtcm"] == DTCM_ORIGIN
    assert symbols[f"{owner}_arena"] == board.ram.origin
    weights = [address for name, address in symbols.items() if re.fullmatch(weight_symbol, name)]
    assert weights and all(symbols["__model_weights_start__"] <= a < symbols["__model_weights_end__"] for a in weights)
    assert board.constants is not None and symbols["__model_weights_start__"] == board.constants.origin


@pytest.mark.slow
def test_two_region_arenas_land_in_their_regions_and_the_selftest_is_bit_exact(tmp_path: Path) -> None:
    profile = tmp_path / "m55_two_regions.toml"
    profile.write_text(PROFILE)
    out = tmp_path / "out"
    bundle = tvm_ext.compile(models_dir() / "mlperf_tiny" / f"{MODEL}.tflite", str(profile), out, build=False)
    regions = json.loads((out / "manifest.json").read_text())["memory_regions"]
    assert [r["region"] for r in regions] == ["dtcm", "sram"]
    assert all(r["buffers"] and r["arena_bytes"] > 0 for r in regions), regions  # both arenas hold buffers
    assert regions[0]["arena_bytes"] <= DTCM_BYTES and bundle.memory.arena_bytes == regions[1]["arena_bytes"]
    symbols = _run_placed(out, MODEL, [MODEL])
    _assert_placed_at_origins(symbols, MODEL, rf"{MODEL}_l\d+_weights")


@pytest.mark.slow
def test_two_models_share_each_regions_arena_placed_at_its_origin(tmp_path: Path) -> None:
    profile = tmp_path / "m55_two_regions.toml"
    profile.write_text(PROFILE)
    out = tmp_path / "out"
    models = [models_dir() / "mlperf_tiny" / f"{name}.tflite" for name in (MODEL, PAIRED)]
    bundle = tvm_ext.compile(models, str(profile), out, name="pair", build=False)
    regions = json.loads((out / "manifest.json").read_text())["memory_regions"]
    assert [r["region"] for r in regions] == ["dtcm", "sram"]
    for index, region in enumerate(regions):
        assert region["arena_bytes"] == max(region["models"].values())
        assert region["models"] == {m.name: m.bundle.regions[index].memory.arena_bytes for m in bundle.members}
    assert 0 < regions[0]["arena_bytes"] <= DTCM_BYTES
    symbols = _run_placed(out, "pair", [MODEL, PAIRED])
    _assert_placed_at_origins(symbols, "pair", rf"({MODEL}|{PAIRED})_l\d+_\w+")
