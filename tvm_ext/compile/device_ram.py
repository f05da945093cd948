"""The RAM one inference of a planned bundle holds on its device (target.RamUse), the flash it takes
(target.FlashUse), and the fit checks on them (each a target check whose ResourceError becomes the compile's
DoesNotFitError).

The stack is counted as the profile allows: a bundle built for an emulated board has its run call's stack
measured after the build (`emulator.stack`), so the check before the build counts the other parts alone
(StackSource.PENDING) and `with_measured_stack` checks again with the measured figure; any other bundle
counts its bound (`planned_stack`: the profile's documented `stack_bound_bytes` for the frames plus the largest
local arrays one of its kernels keeps on the stack), which a measured RamUse carries beside its measurement. The flash is counted likewise: the weights alone
before the build (FlashSource.PENDING), then the bundle's objects in the linked self-test of the emulated board,
code and data included (`with_measured_flash`); a bundle not built for an emulated board has its weights alone
counted (FlashSource.WEIGHTS_ONLY), and its manifest says so.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from memory_planner.api import MemoryPlan
from memory_planner.from_plan import io_bytes_outside
from memory_planner.plan import ExecutionPlan
from target.profile import Profile
from target.resources import (FlashSource, FlashUse, RamUse, ResourceError, StackBound, StackSource, check_fits,
                              check_io_fits)
from tvm_ext.compile import DoesNotFitError

MEASURED_STACK_KEY = "stack_peak_bytes"
"""The emulated self-test's measurement (emulator.sizes.read_sizes) that is the run call's stack, in bytes."""

MEASURED_FLASH_KEY = "bundle_flash"
"""The emulated self-test's measurement (emulator.sizes.read_sizes) of the flash the bundle's objects take, by
kind ("code", "weights", "data"; bytes)."""


def planned_ram(plan: ExecutionPlan, memory: MemoryPlan, profile: Profile, stack_measured_later: bool,
                other_arenas_bytes: int = 0) -> RamUse:
    """The RAM of `plan` placed by `memory`: the arena (with `other_arenas_bytes`, the arenas of the faster RAM
    regions when the profile lists several: memory_planner.regions), the inputs and outputs outside it, the
    state, and the stack: PENDING when `stack_measured_later` (an emulated build follows), else its counted bound
    (`planned_stack`), which the RamUse carries either way."""
    inputs, outputs = io_bytes_outside(plan, memory)
    state = sum(tensor.nbytes for tensor in plan.states())
    arena = memory.arena_bytes + other_arenas_bytes
    bound = planned_stack(plan, profile)
    if stack_measured_later:
        return RamUse(arena, inputs, outputs, state, 0, StackSource.PENDING, other_arenas_bytes, bound)
    return RamUse(arena, inputs, outputs, state, bound.bytes, StackSource.BOUND, other_arenas_bytes, bound)


def planned_stack(plan: ExecutionPlan, profile: Profile) -> StackBound:
    """The stack of one run call of `plan` counted without building it (target.StackBound): the profile's
    `stack_bound_bytes` for the frames, plus the most bytes of local arrays one called kernel's C declares
    (KernelCall.stack_array_bytes; the first such kernel in call order names it)."""
    deepest = max(plan.calls, key=lambda call: call.stack_array_bytes, default=None)
    if deepest is None or deepest.stack_array_bytes == 0:
        return StackBound(profile.stack_bound_bytes)
    return StackBound(profile.stack_bound_bytes, deepest.stack_array_bytes, deepest.kernel)


def with_measured_stack(ram: RamUse, measured: dict[str, object]) -> RamUse:
    """`ram` with the stack the emulated self-test measured (`measured`, its manifest entry); unchanged when
    there is no measurement (a host self-test)."""
    stack = measured.get(MEASURED_STACK_KEY)
    return ram if stack is None else ram.with_stack(int(stack), StackSource.MEASURED)


def planned_flash(plan: ExecutionPlan, measured_later: bool) -> FlashUse:
    """The flash of `plan` before any build: its weights (each constant once), the code PENDING when
    `measured_later` (an emulated build follows), else not counted (WEIGHTS_ONLY)."""
    source = FlashSource.PENDING if measured_later else FlashSource.WEIGHTS_ONLY
    return FlashUse.weights_only(plan.weight_bytes(), source)


def with_measured_flash(flash: FlashUse, measured: dict[str, object]) -> FlashUse:
    """`flash` as the emulated self-test measured it (`measured`, its manifest entry): weights, code and data of
    the bundle's objects; WEIGHTS_ONLY when there is no measurement (a host self-test)."""
    parts = measured.get(MEASURED_FLASH_KEY)
    if not isinstance(parts, dict):
        return FlashUse.weights_only(flash.weights_bytes, FlashSource.WEIGHTS_ONLY)
    return FlashUse(int(parts["weights"]), int(parts["code"]), int(parts["data"]), FlashSource.MEASURED)


@contextlib.contextmanager
def _refused() -> Iterator[None]:
    """A target.ResourceError raised inside becomes DoesNotFitError, its line unchanged."""
    try:
        yield
    except ResourceError as err:
        raise DoesNotFitError(str(err), err.overruns) from err


def refuse_unless_fits(profile: Profile, model_name: str, ram: RamUse, flash: FlashUse) -> None:
    """DoesNotFitError (one line: every part of the RAM and of the flash counted, the limit, the excess) unless
    `ram` and `flash` fit `profile` (target.check_fits)."""
    with _refused():
        check_fits(profile, model_name, ram, flash)


def check_ram_for_io(file_name: str, profile: Profile, input_bytes: int, output_bytes: int, state_bytes: int,
                     io_in_arena: bool) -> None:
    """DoesNotFitError when the model's inputs, outputs and state alone need more SRAM than the profile has
    (`target.check_io_fits`): refused before any compile work."""
    with _refused():
        check_io_fits(profile, file_name, input_bytes, output_bytes, state_bytes, io_in_arena)
