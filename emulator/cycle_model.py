"""An estimate of a Cortex-M core's cycles from QEMU's instruction counts, for report.md's estimated times.

QEMU -icount counts instructions, not cycles. Per core, `CORE_CYCLES` gives the cycles of five instruction
classes at zero wait states, from the core's Technical Reference Manual (docs/cycle_model.md cites each table),
and `KERNEL_MIX` the share of each class in the inner loops of our kernels (an assumption, stated in the same
document): cycles per instruction is their weighted sum, and a call's estimated time is its instructions times
that, divided by the profile's `clock_hz`. It ignores flash and SRAM wait states, caches, the Cortex-M7's dual
issue, pipeline interlocks, the real instruction mix of each kernel and interrupts: an estimate, never a
measurement, and labelled so wherever it is shown.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

INSTRUCTION_CLASSES = ("alu", "load", "store", "multiply", "branch")
"""Data processing; single loads; single stores; multiplies and multiply-accumulates; taken branches."""

KERNEL_MIX = MappingProxyType({"alu": 0.45, "load": 0.25, "store": 0.05, "multiply": 0.15, "branch": 0.10})
"""The assumed share of each class in a kernel's executed instructions (docs/cycle_model.md says why)."""

CORE_CYCLES = MappingProxyType({
    # Cortex-M0+ TRM (DDI 0484): 2-stage pipeline; loads and stores 2, the single-cycle multiplier, B 2.
    "cortex-m0plus": MappingProxyType({"alu": 1, "load": 2, "store": 2, "multiply": 1, "branch": 2}),
    # Cortex-M4 TRM (DDI 0439, table 3-1): LDR/STR 2, MUL/MLA/SMLAD 1, a taken branch 1 + P (P 1-3: 2 here).
    "cortex-m4": MappingProxyType({"alu": 1, "load": 2, "store": 2, "multiply": 1, "branch": 3}),
    # Cortex-M7 TRM (DDI 0489): 6-stage dual-issue pipeline, single-cycle loads from TCM, predicted branches;
    # no per-instruction table is published: each class 1, a taken branch 2 (dual issue ignored: pessimistic).
    "cortex-m7": MappingProxyType({"alu": 1, "load": 1, "store": 1, "multiply": 1, "branch": 2}),
    # Cortex-M33 TRM (100230): 3-stage pipeline as the Cortex-M4's; no per-instruction table is published:
    # the Cortex-M4's costs, a taken branch 2 (its branch target is fetched a stage earlier).
    "cortex-m33": MappingProxyType({"alu": 1, "load": 2, "store": 2, "multiply": 1, "branch": 2}),
    # Cortex-M55 TRM (101051): no per-instruction table for its scalar pipeline: taken as the Cortex-M33's
    # (Helium's beat-wise vector instructions are not in the mix: our kernels are scalar).
    "cortex-m55": MappingProxyType({"alu": 1, "load": 2, "store": 2, "multiply": 1, "branch": 2}),
})


@dataclass(frozen=True)
class CycleEstimate:
    """Estimated cycles per instruction of one core, and its clock in hertz: time = instructions x cpi / clock."""

    core: str
    cycles_per_instruction: float
    clock_hz: int

    def microseconds(self, instructions: int) -> float:
        """The estimated time of `instructions` executed instructions, in microseconds."""
        return instructions * self.cycles_per_instruction / self.clock_hz * 1e6

    def describe(self) -> str:
        """One line saying what the figure is: an estimate, and from what."""
        return (f"estimate, not a measurement: QEMU's instruction count x {self.cycles_per_instruction:.2f} cycles "
                f"per instruction ({self.core}'s TRM cycle costs and an assumed kernel instruction mix, no wait "
                f"states, caches or stalls: docs/cycle_model.md) at {self.clock_hz / 1e6:g} MHz")


def cycle_estimate(core: str, clock_hz: int | None) -> CycleEstimate | None:
    """The estimate for `core` (a profile's `cpu`) at `clock_hz`; None without a clock or a cycle table."""
    if clock_hz is None or core not in CORE_CYCLES:
        return None
    costs = CORE_CYCLES[core]
    return CycleEstimate(core, sum(KERNEL_MIX[kind] * costs[kind] for kind in INSTRUCTION_CLASSES), clock_hz)
