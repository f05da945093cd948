"""Real runs under qemu-system-arm: a hand-written tiny bundle and instruction-count probes on every board.

Needs the arm-none-eabi toolchain and QEMU (scripts/install_deps.sh installs them). Without them the tests
skip with the reason, except under CI (env CI set), where a missing tool is a failure: CI must run these.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import numpy as np
import pytest

from backends.backend import EmulatedBuildError
from emulator.boards import FAULT_EXIT_CODES, CortexMTarget
from emulator.qemu import run_qemu
from emulator.selftest import run_selftest
from emulator.sizes import read_sizes
from emulator.tools import REQUIRED_TOOLS
from backends.cortex_m.bundle_files import (QEMU_TEST_CMAKE_INCLUDE, QEMU_TEST_MAKE_INCLUDE, SELFTEST_ELF, profiled_model_source,
                               write_cortex_m_support)
from conftest import profile_build_config, profile_target
from required_tools import require_tools
from spin_program import spin_counts, spin_main
from backends.cortex_m.bundle_files.support import BOARD_SOURCES, SUPPORT_DIR, selftest_compile_flags, selftest_link_flags

require_tools(REQUIRED_TOOLS)

N = 16
RUN_TIMEOUT_S = 60.0
TARGETS = ["cortex-m0plus", "cortex-m33", "cortex-m4f", "cortex-m7", "cortex-m55"]  # the profiles with a QEMU board

_TINY_HEADER = """\
#ifndef TINY_H
#define TINY_H
#include <stdint.h>
#define TINY_N 16
/* y = x . wf (float), acc = q . wq (int8 products summed in int32); 0, or -1 for a NULL argument. */
int tiny_run(const float *x, const int8_t *q, float *y, int32_t *acc);
#endif
"""

_TINY_KERNELS = """\
#include <stdint.h>
void tiny_dot_f32(const float *a, const float *b, int n, float *out)
{
    float sum = 0.0f;
    for (int i = 0; i < n; ++i) {
        sum += a[i] * b[i];
    }
    *out = sum;
}
void tiny_dot_s8(const int8_t *a, const int8_t *b, int n, int32_t *out)
{
    int32_t sum = 0;
    for (int i = 0; i < n; ++i) {
        sum += (int32_t)a[i] * (int32_t)b[i];
    }
    *out = sum;
}
"""

_TINY_MODEL = """\
#include "tiny.h"
extern const float tiny_wf[TINY_N];
extern const int8_t tiny_wq[TINY_N];
void tiny_dot_f32(const float *a, const float *b, int n, float *out);
void tiny_dot_s8(const int8_t *a, const int8_t *b, int n, int32_t *out);
static int8_t tiny_arena[TINY_N];
int tiny_run(const float *x, const int8_t *q, float *y, int32_t *acc)
{
    if (!x || !q || !y || !acc) {
        return -1;
    }
    for (int i = 0; i < TINY_N; ++i) {
        tiny_arena[i] = q[i];
    }
    tiny_dot_f32(x, tiny_wf, TINY_N, y);
    tiny_dot_s8(tiny_arena, tiny_wq, TINY_N, acc);
    return 0;
}
"""

# Paints the free stack below main's SP, runs the model, and finds the lowest byte it touched: a measured
# stack use to hold the static -fstack-usage figure against. The two helpers are leaves with no frame, so
# their SP is main's SP at the call. A second inference is the one whose instructions are counted.
_TINY_SELFTEST = """\
#include <stdio.h>
#include "tiny.h"
#include "tiny_expected.h"
#ifdef LP_ICOUNT
#include "lp_icount.h"
#define STACK_PAINT_BYTES 512u
#define STACK_PAINT 0xA5u
void __attribute__((noinline)) paint_stack(void)
{
    volatile uint8_t *sp;
    __asm__ volatile("mov %0, sp" : "=r"(sp));
    for (uint32_t i = 1; i <= STACK_PAINT_BYTES; ++i) {
        sp[-(int32_t)i] = STACK_PAINT;
    }
}
uint32_t __attribute__((noinline)) stack_used(void)
{
    volatile uint8_t *sp;
    __asm__ volatile("mov %0, sp" : "=r"(sp));
    uint32_t depth = STACK_PAINT_BYTES;
    while (depth > 0u && sp[-(int32_t)depth] == STACK_PAINT) {
        --depth;
    }
    return depth;
}
#endif
int main(void)
{
    static const float x[TINY_N] = {TINY_X};
    static const int8_t q[TINY_N] = {TINY_Q};
    float y = 0.0f;
    int32_t acc = 0;
#ifdef LP_ICOUNT
    paint_stack();
    int status = tiny_run(x, q, &y, &acc);
    const uint32_t stack_bytes = stack_used();
    const uint32_t start = lp_icount_start();
    status |= tiny_run(x, q, &y, &acc);
    const uint64_t instructions = lp_icount_elapsed(start);
    printf("stack bytes used by tiny_run: %lu\\n", (unsigned long)stack_bytes);
    lp_icount_report(instructions);
#else
    const int status = tiny_run(x, q, &y, &acc);
#endif
    TINY_PROBE
    printf("y=%.9g acc=%ld\\n", (double)y, (long)acc);
    const int failed = status != 0 || y != TINY_EXPECTED_Y || acc != TINY_EXPECTED_ACC;
    printf("selftest: %s\\n", failed ? "FAIL" : "PASS");
    return failed;
}
"""

_SPIN_ASM = """\
    .syntax unified
    .thumb
    .text
    .global spin
    .type spin, %function
    .thumb_func
@ spin(n): exactly 2 instructions per iteration (subs, bne), n >= 1.
spin:
1:  subs r0, r0, #1
    bne 1b
    bx lr
"""

def _tiny_data() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Inputs and weights; floats are multiples of 1/8 so every sum is exact in float32 in any order."""
    rng = np.random.default_rng(7)
    x = (rng.integers(-64, 64, N) / 8).astype(np.float32)
    wf = (rng.integers(-64, 64, N) / 8).astype(np.float32)
    q = rng.integers(-128, 128, N).astype(np.int8)
    wq = rng.integers(-128, 128, N).astype(np.int8)
    q[0], wq[0] = -128, -128  # the extreme int8 product
    return x, wf, q, wq


def _c_list(values: np.ndarray) -> str:
    return ", ".join(f"{v!r}f" if isinstance(v, float) else str(v) for v in values.tolist())


def write_tiny_bundle(out: Path, target: CortexMTarget, wrong_expectation: bool = False, probe: str = "") -> None:
    """The tiny bundle in issue 3's layout, its expected outputs from numpy, and the Cortex-M support."""
    x, wf, q, wq = _tiny_data()
    expected_y = float(np.dot(x.astype(np.float64), wf.astype(np.float64)))
    expected_acc = int(np.dot(q.astype(np.int64), wq.astype(np.int64))) + (1 if wrong_expectation else 0)
    out.mkdir(parents=True, exist_ok=True)
    files = {
        "tiny.h": _TINY_HEADER,
        "tiny_kernels.c": _TINY_KERNELS,
        "tiny_model.c": _TINY_MODEL,
        "tiny_weights.c": (f"#include <stdint.h>\nconst float tiny_wf[16] = {{{_c_list(wf)}}};\n"
                           f"const int8_t tiny_wq[16] = {{{_c_list(wq)}}};\n"),
        "tiny_expected.h": (f"#define TINY_X {_c_list(x)}\n#define TINY_Q {_c_list(q)}\n"
                            f"#define TINY_EXPECTED_Y {expected_y!r}f\n#define TINY_EXPECTED_ACC {expected_acc}\n"
                            f"#define TINY_PROBE {probe}\n"),
        "selftest.c": _TINY_SELFTEST,
        "Makefile": f"all:\n\t@echo host build\n\n{QEMU_TEST_MAKE_INCLUDE}\n",
    }
    for name, text in files.items():
        (out / name).write_text(text)
    write_cortex_m_support(out, "tiny", profile_build_config(target.name))
    # Every bundle has its profiling build's run function (the packager writes it); the tiny one counts nothing.
    (out / profiled_model_source("tiny")).write_text(_TINY_MODEL)


def make(bundle: Path, goal: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["make", "-s", "-C", str(bundle), goal], capture_output=True, text=True, check=False)


def build_tiny(out: Path, target: CortexMTarget, **options: object) -> Path:
    write_tiny_bundle(out, target, **options)
    built = make(out, "cortex-m-elf")
    assert built.returncode == 0, built.stderr
    return out / SELFTEST_ELF


@pytest.fixture(scope="module", params=TARGETS)
def tiny_build(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[CortexMTarget, Path]:
    target = profile_target(request.param)
    out = tmp_path_factory.mktemp(f"tiny-{target.name}")
    return target, build_tiny(out, target)


def test_tiny_bundle_passes_its_selftest_on_its_board(tiny_build: tuple[CortexMTarget, Path]) -> None:
    target, elf = tiny_build
    result = run_qemu(elf, target.board, RUN_TIMEOUT_S)
    x, wf, q, wq = _tiny_data()
    assert result.exit_status == 0, result.stdout + result.stderr
    assert f"acc={int(np.dot(q.astype(np.int64), wq.astype(np.int64)))}" in result.stdout
    assert result.instructions is not None and result.instructions > 2 * N


def test_instruction_count_is_the_same_run_to_run(tiny_build: tuple[CortexMTarget, Path]) -> None:
    target, elf = tiny_build
    first, second = (run_qemu(elf, target.board, RUN_TIMEOUT_S) for _ in range(2))
    assert first.instructions == second.instructions
    assert first.stdout == second.stdout


def test_static_stack_peak_matches_the_painted_stack_measurement(tiny_build: tuple[CortexMTarget, Path]) -> None:
    target, elf = tiny_build
    build_dir = elf.parent
    measured = re.search(r"stack bytes used by tiny_run: (\d+)", run_qemu(elf, target.board, RUN_TIMEOUT_S).stdout)
    sizes = read_sizes(elf, sorted(build_dir.rglob("*.su")), stack_roots={"tiny": "tiny_run"})
    assert measured is not None
    assert sizes["stack_peak_chain"][:2] in (["tiny_run", "tiny_dot_f32"], ["tiny_run", "tiny_dot_s8"])
    if sizes["stack_peak_exact"]:
        assert sizes["stack_peak_bytes"] == int(measured.group(1))
    else:  # soft float: libgcc's helpers have no .su; their disassembled frames are upper bounds
        assert all(name.startswith("__") for name in sizes["stack_estimated_functions"])
        assert sizes["stack_peak_bytes"] >= int(measured.group(1))


def object_text_bytes(objects: list[Path]) -> int:
    """Sum of the .text* section sizes `arm-none-eabi-size -A` gives the (unlinked) object files."""
    total = 0
    for obj in objects:
        listing = subprocess.run(["arm-none-eabi-size", "-A", "-d", str(obj)], capture_output=True, text=True,
                                 check=True).stdout
        total += sum(int(fields[1]) for fields in map(str.split, listing.splitlines())
                     if len(fields) == 3 and fields[0].startswith(".text"))
    return total


def tiny_objects(build_dir: Path) -> list[Path]:
    objects = [path for path in build_dir.rglob("tiny_*") if path.suffix in (".o", ".obj")
               and path.name.split(".")[0] in TINY_SOURCES]
    assert len(objects) == len(TINY_SOURCES)
    return objects


TINY_SOURCES = ("tiny_kernels", "tiny_model")


def test_sizes_agree_with_berkeley_size_and_the_c_declarations(tiny_build: tuple[CortexMTarget, Path]) -> None:
    _, elf = tiny_build
    sizes = read_sizes(elf, [], arena_symbol="tiny_arena", bundle_sources=TINY_SOURCES,
                       bundle_weight_sources=("tiny_weights",))
    text, data, bss = (int(v) for v in subprocess.run(
        ["arm-none-eabi-size", "-B", "-d", str(elf)], capture_output=True, text=True, check=True,
    ).stdout.splitlines()[1].split()[:3])
    assert sizes["weights_bytes"] == N * 4 + N  # const float tiny_wf[16] and const int8_t tiny_wq[16]
    assert sizes["bundle_code_bytes"] == object_text_bytes(tiny_objects(elf.parent))  # nothing gc'd
    # the flash of the bundle's own objects: its code, its weights (what the compile's flash check counts)
    assert sizes["bundle_flash"] == {"code": sizes["bundle_code_bytes"], "weights": N * 4 + N, "data": 0}
    assert sizes["arena_bytes"] == N
    nm = subprocess.run(["arm-none-eabi-nm", str(elf)], capture_output=True, text=True, check=True).stdout
    address = {fields[2]: int(fields[0], 16) for fields in map(str.split, nm.splitlines()) if len(fields) == 3}
    ram_span = address["__bss_end__"] - address["__data_start__"]  # from the linker script's own symbols
    assert sizes["static_ram_bytes"] == ram_span
    assert sizes["other_static_ram_bytes"] == ram_span - N
    assert sizes["flash_bytes"] == text + data
    assert sizes["bss_bytes"] == bss


def test_run_selftest_gives_the_manifest_its_verdict_instructions_and_bytes(tmp_path: Path) -> None:
    target = profile_target("cortex-m7")
    write_tiny_bundle(tmp_path, target)
    entry = run_selftest(tmp_path, "tiny", target, RUN_TIMEOUT_S, arena_symbol="tiny_arena").manifest_entry()
    assert entry["board"] == "mps2-an500" and entry["selftest_exit_code"] == 0
    assert "not cycles" in entry["instructions_note"]
    assert entry["instructions_per_inference"] == run_qemu(tmp_path / SELFTEST_ELF, target.board).instructions
    assert entry["arena_bytes"] == N and entry["weights_bytes"] == N * 4 + N
    assert entry["stack_peak_chain"][0] == "tiny_run"


def test_run_selftest_names_the_compiler_error_of_a_broken_bundle(tmp_path: Path) -> None:
    target = profile_target("cortex-m4f")
    write_tiny_bundle(tmp_path, target)
    (tmp_path / "tiny_kernels.c").write_text("void tiny_dot_f32(void) { undeclared_thing(); }\n")
    with pytest.raises(EmulatedBuildError, match="tiny_kernels.c.*undeclared_thing"):
        run_selftest(tmp_path, "tiny", target, RUN_TIMEOUT_S)


@pytest.mark.parametrize("target_name", ["cortex-m4f", "cortex-m0plus"])
def test_a_failing_selftest_gives_a_nonzero_status_through_make(tmp_path: Path, target_name: str) -> None:
    target = profile_target(target_name)
    elf = build_tiny(tmp_path, target, wrong_expectation=True)
    assert run_qemu(elf, target.board, RUN_TIMEOUT_S).exit_status == 1
    assert make(tmp_path, "qemu-test").returncode != 0


# The address goes through a volatile so the compiler cannot see it is unaligned (and split the load).
UNALIGNED_LOAD = "{ volatile uintptr_t a = (uintptr_t)&x[1] + 1u; (void)*(volatile uint32_t *)a; }"


@pytest.mark.parametrize(("target_name", "probe", "fault"), [
    ("cortex-m4f", '__asm__ volatile("udf #0");', "UsageFault"),
    ("cortex-m4f", "(void)*(volatile uint32_t *)0xF0000000u;", "BusFault"),
    ("cortex-m33", '__asm__ volatile("udf #0");', "UsageFault"),
    ("cortex-m0plus", '__asm__ volatile("udf #0");', "HardFault"),  # ARMv6-M escalates every fault
    # an unaligned word load faults on a Cortex-M0+, so it must on the M3 board that runs its code too
    ("cortex-m0plus", UNALIGNED_LOAD, "HardFault"),
    ("cortex-m4f", UNALIGNED_LOAD, None),  # allowed on ARMv7-M
    ("cortex-m55", '__asm__ volatile("udf #0");', "UsageFault"),
    ("cortex-m55", "(void)*(volatile uint32_t *)0xF0000000u;", "BusFault"),
    # Helium runs: the startup code's CPACR write enables MVE with the FPU (without it: a UsageFault, NOCP)
    ("cortex-m55", '__asm__ volatile("vmov.i32 q0, #1\\n\\tvaddv.s32 r0, q0" ::: "r0", "q0");', None),
])
def test_a_fault_exits_with_its_own_status(tmp_path: Path, target_name: str, probe: str, fault: str | None) -> None:
    target = profile_target(target_name)
    result = run_qemu(build_tiny(tmp_path, target, probe=probe), target.board, RUN_TIMEOUT_S)
    if fault is None:
        assert result.exit_status == 0, result.stdout
    else:
        assert result.exit_status == FAULT_EXIT_CODES[fault] and result.ending() == f"a {fault}"
        assert f"\nlp: {fault}\n" in result.stdout


def test_cortex_m0plus_code_is_armv6m_soft_float_and_runs_on_the_m3_board(tmp_path: Path) -> None:
    target = profile_target("cortex-m0plus")
    elf = build_tiny(tmp_path, target)
    attributes = subprocess.run(["arm-none-eabi-readelf", "-A", str(elf)], capture_output=True, text=True,
                                check=True).stdout
    symbols = subprocess.run(["arm-none-eabi-nm", str(elf)], capture_output=True, text=True, check=True).stdout
    assert re.search(r"Tag_CPU_arch: v6S?-M", attributes)
    assert "Tag_FP_arch" not in attributes
    assert "__aeabi_fmul" in symbols  # float arithmetic in software
    assert target.board.core == "cortex-m3"
    assert run_qemu(elf, target.board, RUN_TIMEOUT_S).exit_status == 0


@pytest.mark.parametrize("target_name", TARGETS)
def test_our_support_sources_compile_without_a_warning(tmp_path: Path, target_name: str) -> None:
    config = profile_build_config(target_name)
    support = tmp_path / SUPPORT_DIR
    write_cortex_m_support(tmp_path, "tiny", config)
    for source in (*BOARD_SOURCES, f"{SUPPORT_DIR}/lp_call_profile.c"):
        compiled = subprocess.run(
            [config.cc, *selftest_compile_flags(config), "-Werror", "-Wconversion", "-Wshadow",
             f"-I{support}", "-c", str(tmp_path / source), "-o", str(tmp_path / f"{Path(source).name}.o")],
            capture_output=True, text=True, check=False)
        assert compiled.returncode == 0, compiled.stderr


def _build_spin(out: Path, target: CortexMTarget, trips: tuple[int, ...]) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    (out / "spin.S").write_text(_SPIN_ASM)
    (out / "main.c").write_text(spin_main(trips))
    config = profile_build_config(target.name)
    write_cortex_m_support(out, "spin", config)
    support = out / SUPPORT_DIR
    elf = out / "spin.elf"
    subprocess.run(
        [config.cc, *selftest_compile_flags(config), f"-I{support}", "-T", str(support / "link.ld"),
         *selftest_link_flags(config), str(out / "main.c"), str(out / "spin.S"),
         *(str(out / source) for source in BOARD_SOURCES), "-o", str(elf)],
        check=True, cwd=out,
    )
    return elf


def run_spin(elf: Path, target: CortexMTarget, timeout_s: float = RUN_TIMEOUT_S) -> dict[int, int]:
    """Instructions measured around spin(n), by trip count n."""
    result = run_qemu(elf, target.board, timeout_s)
    assert result.exit_status == 0, result.stdout
    return spin_counts(result.stdout)


@pytest.mark.parametrize("target_name", TARGETS)
def test_instruction_count_grows_by_exactly_the_loop_instructions(tmp_path: Path, target_name: str) -> None:
    target = profile_target(target_name)
    counts = run_spin(_build_spin(tmp_path, target, (1000, 2000, 50000)), target)
    assert counts.keys() == {1000, 2000, 50000}
    assert counts[2000] - counts[1000] == 2 * 1000
    assert counts[50000] - counts[1000] == 2 * 49000


def handler_instructions(elf: Path, function: str) -> int:
    """Instructions a straight-line function executes: its disassembly up to its `bx lr`."""
    listing = subprocess.run(["arm-none-eabi-objdump", "-d", "--no-show-raw-insn", f"--disassemble={function}",
                              str(elf)], capture_output=True, text=True, check=True).stdout
    mnemonics = re.findall(r"^\s*[0-9a-f]+:\s+([a-z]\S*)", listing, flags=re.MULTILINE)
    executed = mnemonics[:mnemonics.index("bx") + 1]
    assert not any(re.fullmatch(r"b(?:eq|ne|cs|cc|mi|pl|hi|ls|ge|lt|gt|le)?(?:\.[nw])?", m) for m in executed)
    return len(executed)


@pytest.mark.slow
@pytest.mark.parametrize("target_name", ["cortex-m4f", "cortex-m33"])  # timer0 is IRQ 8 on the AN386, 3 on the AN505
def test_instruction_count_survives_timer_wraps(tmp_path: Path, target_name: str) -> None:
    target = profile_target(target_name)
    long_run = 900_000_000  # 1.8e9 instructions: one wrap of the 32-bit timer on either board
    elf = _build_spin(tmp_path, target, (1000, long_run))
    counts = run_spin(elf, target, timeout_s=300)
    one_wrap = handler_instructions(elf, "Timer0_Handler")  # the handler runs once and is counted too
    # QEMU may charge taking the interrupt as one more instruction (seen on the AN505, not on the AN386)
    assert counts[long_run] - counts[1000] - 2 * (long_run - 1000) in (one_wrap, one_wrap + 1)


@pytest.mark.slow
def test_the_system_counter_counts_past_32_bits_exactly(tmp_path: Path) -> None:
    """mps3-an547 counts with the SSE-300's 64-bit system counter (4.096 ticks per instruction): a run of
    1.2e9 instructions carries into its high word, and the count stays exact."""
    target = profile_target("cortex-m55")
    assert target.board.counter is not None
    long_run = 600_000_000  # 1.2e9 instructions: 4.9e9 ticks, more than 2^32
    # three trip counts keep main's loop a loop: two would be unrolled into call sites of their own overheads
    counts = run_spin(_build_spin(tmp_path, target, (1000, 2000, long_run)), target, timeout_s=300)
    assert counts[2000] - counts[1000] == 2 * 1000
    assert counts[long_run] - counts[1000] == 2 * (long_run - 1000)


def configure_tiny_cmake(bundle: Path) -> Path:
    """Give the tiny bundle in `bundle` a CMakeLists.txt (its library, and cortex_m/'s targets through
    QEMU_TEST_CMAKE_INCLUDE) and configure it; return the build folder."""
    (bundle / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.16)\nproject(tiny C)\n"
        "add_library(tiny STATIC tiny_kernels.c tiny_model.c tiny_weights.c)\n"
        f"{QEMU_TEST_CMAKE_INCLUDE}\n"
    )
    build = bundle / "build"
    subprocess.run(["cmake", "-S", str(bundle), "-B", str(build)], check=True, capture_output=True)
    return build


@pytest.mark.slow
def test_cmake_qemu_test_target_builds_and_runs_the_selftest(tmp_path: Path) -> None:
    target = profile_target("cortex-m4f")
    write_tiny_bundle(tmp_path, target)
    build = configure_tiny_cmake(tmp_path)
    host = subprocess.run(["cmake", "--build", str(build)], capture_output=True, text=True)
    assert host.returncode == 0, host.stdout + host.stderr
    assert not (build / "cortex_m" / "selftest.elf").exists()  # the host build leaves the cross build out
    run = subprocess.run(["cmake", "--build", str(build), "--target", "qemu-test"], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "instructions per inference (QEMU -icount, not cycles):" in run.stdout
    elf = build / "cortex_m" / "selftest.elf"
    sizes = read_sizes(elf, sorted((build / "cortex_m").rglob("*.su")), stack_roots={"tiny": "tiny_run"},
                       bundle_sources=TINY_SOURCES)
    assert sizes["bundle_code_bytes"] == object_text_bytes(tiny_objects(build / "cortex_m"))
    assert sizes["stack_peak_exact"] and sizes["stack_peak_chain"][0] == "tiny_run"
