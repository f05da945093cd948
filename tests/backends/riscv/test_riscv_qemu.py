"""Real runs under qemu-system-riscv32 -M virt: board programs with our RISC-V support (backends/riscv/) and the
shared int8 models' bundles, built for the RISC-V profiles and self-tested on the emulated machine.

Needs riscv64-unknown-elf-gcc with picolibc and qemu-system-riscv32 (scripts/install_deps.sh installs them).
Without them the tests skip with the reason, except under CI (env CI set), where a missing tool is a failure.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from backends.riscv.bundle_files import BOARD_SOURCES, SUPPORT_DIR, write_riscv_support
from backends.riscv.bundle_files.support import link_flags
from conftest import profile_build_config, writable_copy
from emulator.boards import EXIT_MARKER, RISCV_BOARDS, RISCV_TRAP_EXIT_CODE
from emulator.qemu import qemu_command, run_qemu
from emulator.tools import RISCV_BINUTILS_PREFIX, RISCV_TOOLS
from required_tools import require_tools
from spin_program import spin_counts, spin_main

require_tools(RISCV_TOOLS)

RUN_TIMEOUT_S = 60.0
PROFILES = ["rv32imc", "rv32imafc"]
VIRT = RISCV_BOARDS["virt"]

_SPIN_ASM = """\
    .text
    .global spin
    .type spin, @function
# spin(n): exactly 2 instructions per iteration (addi, bnez), n >= 1.
spin:
1:  addi a0, a0, -1
    bnez a0, 1b
    ret
"""

# RISC-V semihosting: the `slli x0, x0, 0x1f; ebreak; srai x0, x0, 7` sequence with the operation in a0 and its
# argument block in a1; under `qemu -semihosting` SYS_SYSTEM (0x12) runs a host command.
SEMIHOSTING_SYSTEM = """{
    static const char command[] = COMMAND;
    const uint32_t block[2] = {(uint32_t)(uintptr_t)command, sizeof command - 1u};
    register uint32_t a0 __asm__("a0") = 0x12u;
    register const uint32_t *a1 __asm__("a1") = block;
    __asm__ volatile(".option push\\n\\t.option norvc\\n\\tslli x0, x0, 0x1f\\n\\tebreak\\n\\tsrai x0, x0, 7\\n\\t"
                     ".option pop" : "+r"(a0) : "r"(a1) : "memory");
}"""


PRINT_A_FLOAT = 'printf("float %.2f\\n", (double)trips[1] / 4.0);'
"""A probe that prints trips[1] / 4 with two decimals: picolibc's printf formats floats."""


def build_program(out: Path, profile: str, trips: tuple[int, ...] = (1000, 2000, 50000), status: int = 0,
                  probe: str = "") -> Path:
    """The spin program for `profile`'s flags with OUT/riscv/: main prints a float (picolibc's printf), runs
    `probe` and returns `status`."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "spin.S").write_text(_SPIN_ASM)
    (out / "main.c").write_text(spin_main(trips, PRINT_A_FLOAT + probe, status))
    write_riscv_support(out, VIRT)
    config = profile_build_config(profile)
    elf = out / "spin.elf"
    built = subprocess.run(
        [config.cc, *config.compile_flags, "-Werror", "-Wconversion", "-Wshadow", f"-I{SUPPORT_DIR}",
         *link_flags(config),
         "-T", f"{SUPPORT_DIR}/link.ld", "main.c", "spin.S", *BOARD_SOURCES, "-o", str(elf)],
        cwd=out, capture_output=True, text=True, check=False)
    assert built.returncode == 0, built.stderr
    return elf


@pytest.mark.parametrize("profile", PROFILES)
def test_instruction_count_grows_by_exactly_the_loop_instructions(tmp_path: Path, profile: str) -> None:
    result = run_qemu(build_program(tmp_path, profile, status=3), VIRT, RUN_TIMEOUT_S)
    counts = spin_counts(result.stdout)
    assert result.exit_status == 3 and result.ending() == "exit status 3", result.stdout + result.stderr
    assert counts[2000] - counts[1000] == 2 * 1000
    assert counts[50000] - counts[1000] == 2 * 49000
    assert "trips 2000 instructions" in result.stdout and "float 500.00" in result.stdout  # picolibc's printf
    assert run_qemu(tmp_path / "spin.elf", VIRT, RUN_TIMEOUT_S).stdout == result.stdout  # the same, run to run


@pytest.mark.slow
def test_the_counter_counts_past_32_bits_exactly(tmp_path: Path) -> None:
    """minstret under -icount is 128 ticks per instruction: 4e7 instructions carry into minstreth."""
    long_run = 20_000_000  # 4e7 instructions: 5.1e9 ticks, more than 2^32
    result = run_qemu(build_program(tmp_path, "rv32imc", trips=(1000, 2000, long_run)), VIRT, 300)
    counts = spin_counts(result.stdout)
    assert counts[long_run] - counts[1000] == 2 * (long_run - 1000)


def test_a_trap_names_itself_and_ends_with_its_status(tmp_path: Path) -> None:
    elf = build_program(tmp_path, "rv32imc", probe='__asm__ volatile("unimp");')
    result = run_qemu(elf, VIRT, RUN_TIMEOUT_S)
    assert result.exit_status == RISCV_TRAP_EXIT_CODE and result.ending() == "a trap", result.stdout
    assert re.search(r"\nlp: trap mcause=2 mepc=0x8[0-9a-f]{7}\n\Z", result.stdout)  # 2: illegal instruction


def test_semihosting_reaches_nothing_on_the_host(tmp_path: Path) -> None:
    touched = tmp_path / "system-ran"
    command = '"touch ' + str(touched) + '"'
    elf = build_program(tmp_path, "rv32imc", probe=SEMIHOSTING_SYSTEM.replace("COMMAND", command))
    result = run_qemu(elf, VIRT, RUN_TIMEOUT_S)
    assert not touched.exists()
    assert result.exit_status == RISCV_TRAP_EXIT_CODE and "lp: trap mcause=3 " in result.stdout  # a breakpoint


def test_the_virt_command_gives_no_semihosting_no_network_and_runs_sandboxed() -> None:
    command = qemu_command(VIRT)
    assert command[0] == "qemu-system-riscv32" and command[command.index("-M") + 1] == "virt"
    assert command[command.index("-bios") + 1] == "none"  # no firmware: our code is the first to run
    assert not any("semihosting" in word for word in command), command
    assert command[command.index("-nic") + 1] == "none" and "-nodefaults" in command
    assert "spawn=deny" in command[command.index("-sandbox") + 1] and "-no-reboot" in command


def elf_header(path: Path) -> str:
    """`riscv64-unknown-elf-readelf -h` of an ELF file, or of each member of an archive."""
    return subprocess.run([f"{RISCV_BINUTILS_PREFIX}readelf", "-h", str(path)], capture_output=True, text=True,
                          check=True).stdout


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("model", ["tflm/hello_world_int8.tflite", "mlperf_tiny/ad01_int8.tflite"])
def test_a_shared_int8_model_passes_its_selftest_bit_exact_on_virt(compiled, tmp_path: Path, profile: str,
                                                                  model: str) -> None:
    bundle = writable_copy(compiled(model, profile), tmp_path)
    # the library is the RISC-V compiler's: every member's machine (`ar t` would list a host archive too)
    assert set(re.findall(r"Machine:\s+(.+)", elf_header(bundle.library))) == {"RISC-V"}
    # the compile's own self-test ran on virt (backends.riscv.runner)
    assert bundle.selftest.passed and bundle.selftest.where == "virt", bundle.selftest.output[-2000:]
    output = bundle.selftest.output
    assert output.endswith("selftest: PASS\n") and "(bit-identical)" in output
    assert "max abs error 0 " in output and bundle.selftest.instructions
    assert f"{EXIT_MARKER}0" not in output  # the marker is read off, not left in the output
    runner = profile_build_config(profile).emulated
    header = elf_header(runner.build(bundle.out_dir))  # the shipped folder rebuilds its self-test ELF
    assert ("single-float ABI" in header) == (profile == "rv32imafc") and "RVC" in header


@pytest.mark.parametrize("profile", PROFILES)
def test_an_int8_fully_connected_layer_multiplies_paired_weights(compiled, profile: str) -> None:
    """ad01's FULLY_CONNECTED kernels (every one of a multiple of 8 output channels, per-tensor quantized) are each
    one call of the shared row helper (backends.cortex_m.schedules.fc_rows, RISCV_FC_ROWS), which accumulates eight
    channels at a time by the loop of the RV32 MAC of paired weights, their weights packed two channels to an int32
    word at compile time (tvm_ext.kernels.dense.pair_weights); the bundle's internal header defines the helper once,
    out of line (backends/riscv/helpers); none is left to the int8 window MAC, no kernel keeps a loop. The ten
    layers' calls share fewer kernels (those equal but for the helper's multiplier and shift pass them in
    `constants`: tvm_ext.transform.share_constant_variants)."""
    bundle = compiled("mlperf_tiny/ad01_int8.tflite", profile)
    kernels = (bundle.out_dir / "ad01_int8_kernels.c").read_text()
    internal = (bundle.out_dir / "ad01_int8_internal.h").read_text()
    fc_kernels = re.findall(r"^void (ad01_int8_fully_connected\w*)\(", kernels, re.M)
    assert len(re.findall(r"ad01_int8_fc_rows_s8x8(_b16)?\(", kernels)) == len(fc_kernels) < 10
    assert sum(call.kernel in fc_kernels for call in bundle.plan.calls) == 10
    assert "ad01_int8_mac_s8x8(" not in kernels and "for (" not in kernels
    assert "AD01_INT8_OUT_OF_LINE static int32_t ad01_int8_fc_rows_any(" in internal
    symbols = subprocess.run([f"{RISCV_BINUTILS_PREFIX}nm", str(bundle.library)], capture_output=True, text=True,
                             check=True).stdout
    assert len(re.findall(r" t ad01_int8_fc_rows_any(\.[\w.]+)?$", symbols, re.M)) == 1, symbols  # one copy, linked
    assert "ad01_int8_mac_s8x8_pairs_loop(acc, x, w, row_len, 1);" in internal  # four inputs a pass


@pytest.mark.parametrize("profile", PROFILES)
def test_an_int8_1x1_convolution_multiplies_paired_weights(compiled, profile: str) -> None:
    """kws's 1x1 CONV_2D kernels (64 output channels, unpadded) take their weights paired two channels to an int32
    word (tvm_ext.transform.int8.conv) and accumulate two pixels at a time, every channel tile of a pair in one call
    of the fused pair helper (its two-pixel MAC of paired weights; the odd row's last pixel's tiles in one call of
    the fused one-pixel helper): no call of the window MACs is left in them."""
    bundle = compiled("mlperf_tiny/kws_ref_model.tflite", profile)
    kernels = (bundle.out_dir / "kws_ref_model_kernels.c").read_text()
    conv = kernels[kernels.index("void kws_ref_model_conv_2d_1x1"):]
    conv = conv[:conv.index("\n}\n")]
    assert "kws_ref_model_pair_tiles_s8x8(" in conv and "kws_ref_model_conv_tiles_s8x8(" in conv
    assert "kws_ref_model_mac_s8x2x8_row(" not in conv and "kws_ref_model_mac_s8x8(" not in conv
    assert "kws_ref_model_mac_s8x2x8(" not in conv
    internal = (bundle.out_dir / "kws_ref_model_internal.h").read_text()
    assert "static inline int32_t kws_ref_model_mac_s8x2x8_pairs(int32_t *acc_a, int32_t *acc_b" in internal
