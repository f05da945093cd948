"""The device profile: what one processor and its memory offer a compiled model.

A `Profile` is plain data read from a TOML or JSON file (see `target.loading`). It is the single description
of a device that the rest of the compiler reads: the passes read `int8_rounding` and the `backend` that
`arch`, `simd` and `qemu_board` name (whose schedules read `arch`, `fpu` and `simd`); the
memory planner reads `alignment_bytes`; the resource check reads `sram_bytes` and `flash_bytes`; the build
files read `c_compiler`, `cflags`, `ldflags` and `binutils_prefix`; the emulator runs read `qemu_board`.

Units: every `*_bytes` field is a count of bytes (not KiB).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from target.compute_unit import ComputeUnit
from target.memory_region import RamRegion

Fpu = Literal["none", "single", "double"]
Simd = Literal["none", "dsp", "mve", "hifi"]
Int8Rounding = Literal["double", "single"]

FPU_VALUES: tuple[str, ...] = ("none", "single", "double")
# "dsp": the Armv7E-M / Armv8-M DSP extension (SIMD32 on packed 8/16-bit lanes, SMLAD...).
# "mve": Armv8.1-M Helium (M-profile Vector Extension; implies "dsp").
# "hifi": a Cadence Tensilica HiFi audio DSP's SIMD (the generation is in `cpu`, e.g. "hifi4").
SIMD_VALUES: tuple[str, ...] = ("none", "dsp", "mve", "hifi")
# "double": TFLite's default requantization, SaturatingRoundingDoublingHighMul then RoundingDivideByPOT
# (TFLM reference kernels, the golden). "single": one rounding of the 64-bit product (TFLITE_SINGLE_ROUNDING,
# CMSIS_NN_USE_SINGLE_ROUNDING). See ../shared/docs/int8-and-memory.md.
INT8_ROUNDING_VALUES: tuple[str, ...] = ("double", "single")

DEFAULT_SUBGRAPH_BYTES = 65_536  # 64 KiB: a Cortex-M7's DTCM on the STM32F746, a typical fast local memory

DEFAULT_STACK_BOUND_BYTES = 1_024
"""The stack of one `<model>_run` call the RAM check counts where it is not measured (a profile without an
emulated board, or a bundle not built), less the local arrays of its kernels, which are counted beside it
(target.StackBound): the frames of the run function and of one kernel with the helpers it calls, their scalars,
saved registers and the helpers' small fixed arrays. The run function calls its kernels one after another, so the
stack is one kernel's frame deep; over 4,805 bundles built for the emulated boards (session 21: every shared and
unseen model on every emulated profile), the measured stack less the largest kernel's local arrays was at most
816 B (cortex-m55, a Helium depthwise border helper's window)."""

DEFAULT_KERNEL_STACK_BYTES = 2_048
"""The most bytes of local arrays a schedule lets one kernel keep on its stack: the DSP cores' depthwise kernel
of channels not whole tiles of four (backends.cortex_m.schedules.depthwise_runs) takes a band of the window's rows
of at most half of it and its runs' phases within the other half."""

GENERIC_PROFILE_NAME = "lowpower"
TAG_PREFIX = "lowpower-"


class ProfileError(ValueError):
    """A profile that cannot be found or read; the message is one line naming the file and the field."""


@dataclass(frozen=True)
class Profile:
    """One device: its core, memories, numeric facts and toolchain.

    Fields:
        name: the profile's name, a lowercase identifier such as "cortex-m4f"; unique among profiles.
        description: one line for humans.
        cpu: the core as compilers and TVM name it (`-mcpu=` value, TVM `mcpu`): "cortex-m4", "hifi4",
            or "generic" for the portable C99 profile.
        arch: the instruction-set architecture: "armv6-m", "armv7e-m", "armv8-m.main", "armv8.1-m.main",
            "xtensa", or "c99" when no architecture is assumed.
        sram_bytes: RAM available to the model's arena, in bytes.
        flash_bytes: non-volatile memory for code and weights, in bytes.
        memory_source: the real board or part that `sram_bytes` and `flash_bytes` come from.
        fpu: floating-point hardware: "none" (float is emulated in software), "single" (float32 in
            hardware, double in software) or "double" (both in hardware).
        simd: the integer SIMD / DSP extension: one of SIMD_VALUES.
        alignment_bytes: alignment of the arena, of every buffer in it and of weight arrays (power of two).
        int8_rounding: the requantization rounding the int8 kernels must reproduce: "double" or "single".
        c_compiler: the C compiler command.
        cflags: flags to compile for this device (core, float ABI, FPU, optimisation, sections), in order.
        ldflags: flags to link for this device (repeat the core and float ABI for multilib selection).
        binutils_prefix: prefix of the matching binutils ("arm-none-eabi-" gives arm-none-eabi-ar,
            arm-none-eabi-size); "" for the host's.
        qemu_board: the `qemu-system-arm -M` board that runs this profile's code, or None.
        source: the file the profile was read from (for messages and the manifest).
        subgraph_bytes: the largest working set, in bytes (weights plus the activations its kernels read
            or write), of consecutive layers kept in one subgraph (tvm_ext.transform.PartitionSubgraphs):
            the size of the core's fast local memory (a TCM or its share of SRAM); a file that gives none
            gets DEFAULT_SUBGRAPH_BYTES.
        stack_bound_bytes: the stack of one run call's frames the RAM check counts where it is not measured on an
            emulated board, beside the largest local arrays of one of its kernels (target.resources.StackBound), in
            bytes; a file that gives none gets DEFAULT_STACK_BOUND_BYTES.
        kernel_stack_bytes: the most bytes of local arrays a schedule lets one kernel keep on its stack (a
            depthwise kernel's band, which the counted stack adds to stack_bound_bytes), in bytes; a file that
            gives none gets DEFAULT_KERNEL_STACK_BYTES.
        clock_hz: the core's clock in hertz, for report.md's estimated times (`emulator.cycle_model`); None
            when the file gives none (no time estimate then).
        units: the compute units the file lists (`target.compute_unit`), () when it lists none.
        ram_regions: the RAM regions the file lists, fastest first (`target.memory_region`; their bytes add up
            to `sram_bytes`), () when it lists none.
    """

    name: str
    description: str
    cpu: str
    arch: str
    sram_bytes: int
    flash_bytes: int
    memory_source: str
    fpu: Fpu
    simd: Simd
    alignment_bytes: int
    int8_rounding: Int8Rounding
    c_compiler: str
    cflags: tuple[str, ...]
    ldflags: tuple[str, ...]
    binutils_prefix: str
    qemu_board: str | None
    source: str
    subgraph_bytes: int = DEFAULT_SUBGRAPH_BYTES
    stack_bound_bytes: int = DEFAULT_STACK_BOUND_BYTES
    kernel_stack_bytes: int = DEFAULT_KERNEL_STACK_BYTES
    clock_hz: int | None = None
    units: tuple[ComputeUnit, ...] = ()
    ram_regions: tuple[RamRegion, ...] = ()

    @property
    def memory_regions(self) -> tuple[RamRegion, ...]:
        """The RAM regions arenas are planned in, fastest first: the listed ones, or the whole SRAM as one
        region ("sram") when the file lists none (one arena, as every profile had before regions)."""
        return self.ram_regions or (RamRegion("sram", self.sram_bytes),)

    @property
    def compute_units(self) -> tuple[ComputeUnit, ...]:
        """The units subgraphs are assigned to: the listed ones, or the profile's own core, running every
        operator kind at one instruction per MAC."""
        return self.units or (ComputeUnit(self.name.replace("-", "_").replace(".", "_"), self.c_compiler,
                                          self.cflags),)

    @property
    def backend(self) -> str:
        """The backend (a folder of `backends/`) that compiles for this core: "riscv" for a RISC-V
        architecture ("rv32..."); "cortex_m" for an Arm M-profile architecture ("armv..."), the DSP extension
        or a QEMU board (every other board we emulate is a Cortex-M); "generic_c", the portable C99 path, for
        any other core."""
        if self.arch.startswith("rv"):
            return "riscv"
        arm = self.arch.startswith("armv") or self.simd == "dsp" or self.qemu_board is not None
        return "cortex_m" if arm else "generic_c"

    @property
    def hardware_float(self) -> bool:
        """True when float32 arithmetic runs on an FPU (not in a software library)."""
        return self.fpu != "none"

    @property
    def hardware_double(self) -> bool:
        """True when float64 arithmetic runs on an FPU."""
        return self.fpu == "double"

    def tool(self, name: str) -> str:
        """The command of binutils tool `name` for this profile: tool("ar") -> "arm-none-eabi-ar" or "ar"."""
        return self.binutils_prefix + name

    @property
    def tvm_tag(self) -> str:
        """The TVM target tag this profile registers as: "lowpower" or "lowpower-<name>"."""
        return tvm_tag_of(self.name)


def tvm_tag_of(profile_name: str) -> str:
    """The TVM target tag of the profile named `profile_name`: "lowpower" or "lowpower-<name>"."""
    return profile_name if profile_name == GENERIC_PROFILE_NAME else TAG_PREFIX + profile_name
