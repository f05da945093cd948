"""The profile as a resource constraint: does a planned model fit the device's SRAM and flash?

The SRAM check counts everything one inference holds in RAM (`RamUse`): the planned arena (activations and
scratch), the model's inputs and outputs where they are the caller's buffers outside the arena, the model's
state (static buffers kept from run to run), and the stack of one `<model>_run` call: measured on the
emulated board (`emulator.stack`: GCC's -fstack-usage frames along the linked ELF's deepest call chain) where
the profile has one and the bundle is built, else counted (`StackBound`): the profile's documented bound
`stack_bound_bytes` for the frames' scalars and saved registers, plus the largest local arrays one kernel keeps
on the stack (a depthwise kernel's band: up to 2 KB, which no profile's bound holds).
Other static data of the caller's program is not the model's and is not counted. The flash (`FlashUse`) is what
the model puts there: its weights, the code (and read-only data) of its kernels and run function, and the
initial image of its static data, as the linked self-test of an emulated board measures them; a bundle not
built for one has its weights alone counted, and says so.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace

from target.profile import Profile


@dataclass(frozen=True)
class Overrun:
    """One limit of a profile that a model exceeds: `memory` ("SRAM" or "flash"), the bytes it needs and the
    bytes the profile has."""

    memory: str
    needed_bytes: int
    available_bytes: int

    @property
    def excess_bytes(self) -> int:
        """By how many bytes the need exceeds the limit (> 0)."""
        return self.needed_bytes - self.available_bytes


class ResourceError(ValueError):
    """A model that does not fit its profile; the message is one line naming the model, limit, need and excess,
    and `overruns` gives each limit exceeded as data (SRAM before flash)."""

    def __init__(self, message: str, overruns: tuple[Overrun, ...]) -> None:
        super().__init__(message)
        self.overruns = overruns


class StackSource(str, enum.Enum):
    """Where the stack bytes of a RamUse come from (the value is how a refusal words it)."""

    MEASURED = "measured on the emulated board"
    BOUND = "the profile's stack_bound_bytes"
    PENDING = "not yet counted: measured after the build"


class FlashSource(str, enum.Enum):
    """What the bytes of a FlashUse count (the value is how a refusal words it)."""

    MEASURED = "measured in the emulated board's linked self-test"
    PENDING = "code not yet counted: measured after the build"
    WEIGHTS_ONLY = "code not counted: not built and measured on an emulated board"


@dataclass(frozen=True)
class FlashUse:
    """What a bundle puts in flash, in bytes: its weights, the code of its kernels and run function with their
    read-only data, and the initial image of its static data (`.data`, copied to RAM at start-up).

    MEASURED: every part is the bundle's objects' share of the linked ELF (emulator.sizes.read_sizes: the
    weights with their alignment padding). Otherwise the weights are the plan's and the code and data are 0:
    PENDING before an emulated build (checked again once it is measured), WEIGHTS_ONLY for a bundle not built
    for an emulated board (--no-build, or a host profile, whose host objects say nothing of the device's code).
    """

    weights_bytes: int
    code_bytes: int
    data_bytes: int
    source: FlashSource

    @classmethod
    def weights_only(cls, weights_bytes: int, source: FlashSource) -> FlashUse:
        """The flash of a bundle whose code is not measured (`source` PENDING or WEIGHTS_ONLY)."""
        return cls(weights_bytes, 0, 0, source)

    @property
    def measured(self) -> bool:
        """Whether the code and data are counted."""
        return self.source is FlashSource.MEASURED

    @property
    def total_bytes(self) -> int:
        """The sum of the parts (bytes)."""
        return self.weights_bytes + self.code_bytes + self.data_bytes

    def what(self) -> str:
        """What the total counts, as a refusal's subject: "weights + code" or "weights"."""
        return "weights + code" if self.measured else "weights"

    def parts(self) -> str:
        """The parts in words, e.g. "weights 233,616 B + code 101,492 B + data 0 B measured in the emulated
        board's linked self-test", or "code not yet counted: measured after the build"."""
        if self.measured:
            return (f"weights {self.weights_bytes:,} B + code {self.code_bytes:,} B + data {self.data_bytes:,} B "
                    f"{self.source.value}")
        return self.source.value

    def manifest_entry(self) -> dict[str, object]:
        """JSON-ready parts (bytes) and what was counted ("measured", "pending" or "weights_only")."""
        return {"flash_weights_bytes": self.weights_bytes, "flash_code_bytes": self.code_bytes,
                "flash_data_bytes": self.data_bytes, "flash_counted": self.source.name.lower()}


@dataclass(frozen=True)
class StackBound:
    """The stack of one run call counted where nothing measures it, in bytes: `frames_bytes` (the profile's
    `stack_bound_bytes`: the run function's and a kernel's frames, their scalars, saved registers and the
    helpers' small fixed arrays) plus `kernel_arrays_bytes`, the local arrays of the kernel that declares the
    most (`kernel`; None when no kernel declares any: memory_planner.plan.KernelCall.stack_array_bytes).

    Why a sum: one kernel runs at a time, below the run function, so the deepest chain is the run function's
    frame and one kernel's (with the helpers it calls); a kernel's local arrays are the one part of its frame
    that grows with the layer (a band of the window's rows), so they are counted from the kernel itself and the
    profile's bound is left the part that does not grow."""

    frames_bytes: int
    kernel_arrays_bytes: int = 0
    kernel: str | None = None

    @property
    def bytes(self) -> int:
        """The counted stack (bytes)."""
        return self.frames_bytes + self.kernel_arrays_bytes

    def parts(self) -> str:
        """The sum in words, e.g. "frames 1,024 B (the profile's stack_bound_bytes) + 1,291 B of the kernel
        net_depthwise's stack arrays"."""
        arrays = (f" + {self.kernel_arrays_bytes:,} B of the kernel {self.kernel}'s stack arrays"
                  if self.kernel is not None else " + no kernel stack arrays")
        return f"frames {self.frames_bytes:,} B (the profile's stack_bound_bytes){arrays}"

    def manifest_entry(self) -> dict[str, object]:
        """JSON-ready parts and sum (bytes)."""
        return {"bytes": self.bytes, "frames_bytes": self.frames_bytes,
                "kernel_arrays_bytes": self.kernel_arrays_bytes, "kernel": self.kernel}


@dataclass(frozen=True)
class RamUse:
    """Everything one inference of a bundle holds in SRAM, in bytes.

    `input_bytes` and `output_bytes` are the caller's buffers outside the arena (0 when they were planned into
    it, `--io-in-arena`); `state_bytes` the model's static state; `stack_bytes` the stack of one run call, as
    `stack_source` says (0 while PENDING: the emulated build measures it, and the fit is checked again then).
    `faster_arena_bytes`: the part of `arena_bytes` in the faster RAM regions of a profile that lists several
    (target.memory_region); the rest is in the last region, with everything else. `stack_bound`: the stack as
    counted without a measurement (what `stack_bytes` is when BOUND; beside a measured one, the figure a
    --no-build compile counts), None where the caller counted none.
    """

    arena_bytes: int
    input_bytes: int
    output_bytes: int
    state_bytes: int
    stack_bytes: int
    stack_source: StackSource
    faster_arena_bytes: int = 0
    stack_bound: StackBound | None = None

    @property
    def total_bytes(self) -> int:
        """The sum of the parts (bytes)."""
        return self.arena_bytes + self.input_bytes + self.output_bytes + self.state_bytes + self.stack_bytes

    def parts(self) -> str:
        """The parts in words, e.g. "arena 10,048 B + inputs 490 B + outputs 12 B + state 0 B + stack 212 B
        measured on the emulated board"."""
        counted = (f"arena {self.arena_bytes:,} B + inputs {self.input_bytes:,} B + outputs {self.output_bytes:,} B"
                   f" + state {self.state_bytes:,} B")
        if self.stack_source is StackSource.PENDING:
            return f"{counted}; stack {self.stack_source.value}"
        if self.stack_source is StackSource.BOUND and self.stack_bound is not None:
            return f"{counted} + stack {self.stack_bytes:,} B counted: {self.stack_bound.parts()}"
        return f"{counted} + stack {self.stack_bytes:,} B {self.stack_source.value}"

    def with_stack(self, stack_bytes: int, source: StackSource) -> RamUse:
        """The same use with the stack `stack_bytes` from `source`."""
        return replace(self, stack_bytes=stack_bytes, stack_source=source)

    def manifest_entry(self) -> dict[str, object]:
        """JSON-ready parts and total (bytes), the stack's source and its counted bound (`stack_bound`: bytes,
        frames_bytes, kernel_arrays_bytes, kernel; where one was counted)."""
        bound = {} if self.stack_bound is None else {"stack_bound": self.stack_bound.manifest_entry()}
        return {"arena_bytes": self.arena_bytes, "input_bytes_outside_arena": self.input_bytes,
                "output_bytes_outside_arena": self.output_bytes, "state_bytes": self.state_bytes,
                "stack_bytes": self.stack_bytes, "stack_source": self.stack_source.name.lower(), **bound,
                "total_ram_bytes": self.total_bytes}


def _overrun_text(what_needs: str, overrun: Overrun, memory_words: str, profile: Profile) -> str:
    """`overrun` in words: "<what_needs> N B of <memory_words> but <profile> has M B (K B over)"."""
    return (f"{what_needs} {overrun.needed_bytes:,} B of {memory_words} but {profile.name} has "
            f"{overrun.available_bytes:,} B ({overrun.excess_bytes:,} B over)")


def _flash_overrun(flash: int | FlashUse, profile: Profile) -> tuple[Overrun, str] | None:
    """The flash overrun of `flash` (a FlashUse, or bytes the caller counted as weights + code) and its words,
    None when it fits."""
    needed = flash.total_bytes if isinstance(flash, FlashUse) else flash
    if needed <= profile.flash_bytes:
        return None
    overrun = Overrun("flash", needed, profile.flash_bytes)
    if isinstance(flash, FlashUse):
        return overrun, _overrun_text(f"{flash.what()} need", overrun, f"flash ({flash.parts()})", profile)
    return overrun, _overrun_text("weights + code need", overrun, "flash", profile)


def check_fits(profile: Profile, model_name: str, ram: RamUse, flash_bytes: int | FlashUse) -> None:
    """Raise ResourceError unless ram.total_bytes <= profile.sram_bytes and the flash (`flash_bytes`: a
    FlashUse, or the bytes a caller counted as weights + code) <= profile.flash_bytes.

    A model exactly at a limit fits. The line names every part of the RAM and of a FlashUse, and both limits
    when both are exceeded, e.g. "kws_ref_model: RAM needs 10,762 B of SRAM (arena 10,048 B + inputs 490 B +
    outputs 12 B + state 0 B + stack 212 B measured on the emulated board) but my-board has 10,400 B (362 B
    over)", "person_detect: weights + code need 335,108 B of flash (weights 233,616 B + code 101,492 B + data
    0 B measured in the emulated board's linked self-test) but cortex-m0plus has 262,144 B (72,964 B over)".
    """
    overruns: list[tuple[Overrun, str]] = []
    if ram.total_bytes > profile.sram_bytes:
        sram = Overrun("SRAM", ram.total_bytes, profile.sram_bytes)
        overruns.append((sram, _overrun_text("RAM needs", sram, f"SRAM ({ram.parts()})", profile)))
    last = profile.memory_regions[-1]
    if len(profile.memory_regions) > 1 and ram.total_bytes - ram.faster_arena_bytes > last.bytes:
        region = Overrun("SRAM", ram.total_bytes - ram.faster_arena_bytes, last.bytes)
        overruns.append((region, f"RAM needs {region.needed_bytes:,} B in the last region {last.name} ({ram.parts()}, "
                                 f"less {ram.faster_arena_bytes:,} B of arena in faster regions) but {profile.name}'s "
                                 f"{last.name} has {region.available_bytes:,} B ({region.excess_bytes:,} B over)"))
    flash = _flash_overrun(flash_bytes, profile)
    if flash is not None:
        overruns.append(flash)
    if overruns:
        raise ResourceError(f"{model_name}: {'; '.join(text for _, text in overruns)}",
                            tuple(overrun for overrun, _ in overruns))


def check_flash_fits(profile: Profile, model_name: str, flash_bytes: int) -> None:
    """Raise ResourceError unless flash_bytes <= profile.flash_bytes (the flash half of check_fits, for a caller
    that knows no RAM yet), e.g. "ad01: weights + code need 265,864 B of flash but cortex-m0plus has 262,144 B
    (3,720 B over)"."""
    flash = _flash_overrun(flash_bytes, profile)
    if flash is not None:
        overrun, text = flash
        raise ResourceError(f"{model_name}: {text}", (overrun,))


def check_io_fits(profile: Profile, model_name: str, input_bytes: int, output_bytes: int, state_bytes: int,
                  io_in_arena: bool) -> None:
    """Raise ResourceError when the model's inputs, outputs and state alone need more SRAM than the profile has,
    whatever the memory plan: checked before the compile starts (the bundle's RAM is the arena and these).

    The inputs and outputs are the caller's buffers, all held at once; with `io_in_arena` the arena holds them,
    an input's bytes may serve an output once read, but every input is live when a run starts and every output
    when it ends: the larger of the two sums. The state (TFLite variable tensors) stays from run to run. A model
    exactly at the limit passes, e.g. "big: inputs, outputs and state need 1,048,576 B of SRAM but lowpower has
    524,288 B (524,288 B over)".
    """
    io_bytes = max(input_bytes, output_bytes) if io_in_arena else input_bytes + output_bytes
    needed = io_bytes + state_bytes
    if needed > profile.sram_bytes:
        overrun = Overrun("SRAM", needed, profile.sram_bytes)
        raise ResourceError(
            f"{model_name}: {_overrun_text('inputs, outputs and state need', overrun, 'SRAM', profile)}", (overrun,))


@dataclass(frozen=True)
class Headroom:
    """How a bundle fits `profile`: every part of the RAM one inference holds (`ram`) against its SRAM, and what
    the model puts in flash (`flash`, which says whether its code was counted) against its flash. A headroom is
    negative when a limit is exceeded (check_fits would have raised)."""

    profile: Profile
    ram: RamUse
    flash: FlashUse

    @property
    def flash_used_bytes(self) -> int:
        """The flash the model takes, as far as counted (bytes)."""
        return self.flash.total_bytes

    @property
    def sram_headroom_bytes(self) -> int:
        """The SRAM the whole RAM leaves (bytes)."""
        return self.profile.sram_bytes - self.ram.total_bytes

    @property
    def flash_headroom_bytes(self) -> int:
        """The flash the model leaves (bytes)."""
        return self.profile.flash_bytes - self.flash_used_bytes

    def manifest_entry(self) -> dict[str, object]:
        """What the manifest records about the fit: the profile, each limit, the use and what is left (bytes)."""
        return {
            "profile": self.profile.name,
            "profile_source": self.profile.source,
            "memory_source": self.profile.memory_source,
            "sram_bytes": self.profile.sram_bytes,
            **self.ram.manifest_entry(),
            "sram_headroom_bytes": self.sram_headroom_bytes,
            "flash_bytes": self.profile.flash_bytes,
            "flash_used_bytes": self.flash_used_bytes,
            "flash_headroom_bytes": self.flash_headroom_bytes,
            **self.flash.manifest_entry(),
        }
