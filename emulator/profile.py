"""Run a bundle's PROFILING build on its emulated board: the instructions of each kernel call of one inference.

The profiling build (`make -f cortex_m/qemu-test.mk cortex-m-profile-elf`, see backends.cortex_m.bundle_files.support) is
the self-test, from the same objects compiled as the shipped code, except that its run function is
cortex_m/<model>_model_profiled.c: each kernel call sits between a start and a reading of the board's
instruction counter (cortex_m/lp_icount.h), and cortex_m/lp_call_profile.c prints each count, and once the
count of an empty start/reading pair. A call's instructions here are its count less that empty count: the
kernel's own instructions with the call's argument set-up, as the shipped run function executes them (up to
the few register moves the counter's calls make the compiler add around each call).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from emulator.boards import Board, RiscvBoard
from emulator.qemu import run_qemu
from emulator import selftest  # the module: selftest imports backends, whose runners import this one
from backends.cortex_m.bundle_files.support import PROFILE_ELF, QEMU_TEST_MAKEFILE

_EMPTY_REGION = re.compile(r"^profile: empty region (\d+)$", re.MULTILINE)
_CALL = re.compile(r"^profile: call (\d+) (\d+)$", re.MULTILINE)
"""The lines cortex_m/lp_call_profile.c prints."""


class CallProfileError(RuntimeError):
    """The profiling build did not pass its self-test, or printed no count for some call (a failed build is
    emulator.selftest's EmulatedBuildError)."""


@dataclass(frozen=True)
class CallProfile:
    """Instructions (QEMU -icount, not cycles) of each kernel call of one inference, in call order, with the
    counter's own instructions (`empty_region`, the count of an empty start/reading pair) taken off."""

    instructions: tuple[int, ...]
    empty_region: int


def read_call_profile(stdout: str) -> CallProfile:
    """The per-call counts of the first inference in the profiling build's output: the self-test runs one per
    case, each printing one empty-region count and then one count per call 0..N-1; the first is case 0's, the
    inference whose total the self-test reports."""
    inferences = [part for part in re.split(r"(?m)^(?=profile: empty region )", stdout)
                  if part.startswith("profile: empty region ")]
    first = inferences[0] if inferences else ""
    empty = _EMPTY_REGION.findall(first)
    counted = {int(step): int(count) for step, count in _CALL.findall(first)}
    if len(empty) != 1 or sorted(counted) != list(range(len(counted))):
        raise CallProfileError(f"the profiling build printed {len(empty)} empty-region counts and counts for "
                               f"calls {sorted(counted)} for its first inference, not one and calls 0 to N-1")
    overhead = int(empty[0])
    return CallProfile(tuple(counted[step] - overhead for step in range(len(counted))), overhead)


def profile_output(out_dir: Path, board: Board | RiscvBoard, timeout_s: float = 600.0,
                   makefile: str = QEMU_TEST_MAKEFILE, goal: str = "cortex-m-profile-elf",
                   elf: str = PROFILE_ELF) -> str:
    """Build OUT/'s profiling build (`make -f makefile goal`, which builds OUT/`elf`: Cortex-M's unless given), run
    it on `board` and return what it printed (`read_call_profile` reads the counts); CallProfileError unless it
    ended with exit status 0."""
    selftest.make_cross(out_dir, goal, makefile=makefile)
    result = run_qemu(Path(out_dir) / elf, board, timeout_s)
    if result.exit_status != 0:
        raise CallProfileError(f"the profiling build of {out_dir} ended with {result.ending()} on {board.name}")
    return result.stdout
