"""The interface every processor family's backend implements: plain data, no TVM import.

A backend is one folder under `backends/` (`generic_c`, `cortex_m`). It provides
- `Backend` (its `__init__.py`, no TVM): its name, the C helper library its kernels may call
  (`HelperLibrary`: the text `<model>_internal.h` defines them with), its runner (the emulated target a
  profile's self-test runs on, or None: the host) and its kernels' speed targets per kernel kind;
- `KernelSchedules` (its `schedules` for the compiler, which may import TVM): for one profile's core, the
  accumulator tiles of MAC kernels and, where the family accelerates MAC kernels with helpers, their
  schedules (`MacSchedules`). `generic_c` is the portable path every other backend must match bit for bit.

A profile names its backend (`target.profile.Profile.backend`); `backends.backend_of` and
`backends.schedules.kernel_schedules_of` give its objects. Nothing outside `backends/` asks which
instruction set a core has: it asks these objects.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional, Protocol

if TYPE_CHECKING:  # annotations only: this module stays free of TVM and of the emulator
    from tvm import s_tir, tirx

    from emulator.boards import CortexMTarget
    from packager.kernel_kinds import KernelKind
    from target.profile import Profile


@dataclass(frozen=True)
class HelperLibrary:
    """A backend's hand-written C helpers, defined `static inline` in the bundle's `<model>_internal.h` when a
    kernel calls one: `c_text(prefix)` is their definitions for the bundle `prefix`."""

    name: str
    c_text: Callable[[str], str]


@dataclass(frozen=True)
class Backend:
    """One processor family: its `name` (the folder under `backends/`, the profile's `backend`), the C
    helpers its kernels may call (None: none; the library their calls record), `emulated_target(profile)`:
    the emulated core and board that run the profile's self-test, or None when it runs on the host,
    `kind_targets(profile)`: the instructions per unit each kernel kind should take on the profile's core
    (`packager.kernel_kinds`; None: no targets, report.md then marks no call), and `helpers_of(profile)`: the
    library that defines those helpers in a bundle for `profile`, with the same names and contracts and the
    bodies of the profile's core (TFLite Micro's per-target kernel override; None: `helper_library` on every
    core)."""

    name: str
    helper_library: Optional[HelperLibrary]
    emulated_target: Callable[[Profile], Optional[CortexMTarget]]
    kind_targets: Callable[[Profile], Optional[Mapping[KernelKind, float]]]
    helpers_of: Optional[Callable[[Profile], Optional[HelperLibrary]]] = None

    def bundle_helper_libraries(self, profile: Profile, called: tuple[HelperLibrary, ...]
                                ) -> tuple[HelperLibrary, ...]:
        """The libraries a bundle for `profile` defines, given those its kernels' calls recorded (`called`):
        this backend's `helper_library` as `helpers_of(profile)` implements it, any other as it is."""
        if self.helpers_of is None:
            return called
        own = self.helpers_of(profile)
        return tuple(own if library == self.helper_library and own is not None else library for library in called)



def no_kind_targets(profile: Profile) -> None:
    """The `Backend.kind_targets` of a backend that sets no speed targets for its kernels."""
    return None
class MacSchedules(Protocol):
    """A backend's MAC-helper schedules: the scheduled int8/int16 MAC kernels (CONV_2D, DEPTHWISE_CONV_2D,
    FULLY_CONNECTED, an SVDF's TE extern stage) whose reductions become calls of its C helpers
    (`tvm_ext.schedule.kernel_schedule.inline_intermediates`, `tvm_ext.schedule.border_split`). Each replacement computes exactly
    what it replaces (integer sums, bit-exact); None or False where it does not fit."""

    def extern_calls(self, func: tirx.PrimFunc) -> tirx.PrimFunc:
        """A function of one TE extern stage with the loops in the helpers' forms as their calls."""

    def flatten_odd_pixel_rows(self, sch: s_tir.Schedule, block, loops: list,
                               first_reduce: int) -> Optional[tuple[list, int]]:
        """The reduction's loops with odd-width pixel rows fused into one pixel loop, or None."""

    def pays_two_pixels(self, sch: s_tir.Schedule, block, loops: list, first_reduce: int) -> bool:
        """Whether the channel-tiled reduction `block` accumulates two output pixels per helper call."""

    def helper_call(self, sch: s_tir.Schedule, block, loops: list, first_reduce: int) -> bool:
        """Replace the tiled reduction `block` by a helper call where one fits; whether it did."""

    def pair_odd_pixel_row(self, func: tirx.PrimFunc, block_name: str, first_reduction: int) -> tirx.PrimFunc:
        """`func` with the odd-length pixel row of `block_name` computed in pairs plus one last pixel."""

    def replacement(self, realize: s_tir.SBlockRealize, loops: list,
                    outlined_depthwise: bool = False) -> Optional[s_tir.SBlockRealize]:
        """A helper's call block computing what the reduction `loops` around `realize` compute, or None."""

    def window_buffer(self, loops: list, first_reduction: int) -> tirx.Buffer:
        """The scratch buffer a border pixel copies its window into."""

    def has_short_rows(self, loops: list, first_reduction: int) -> bool:
        """Whether the window's rows are short enough that copying it once pays."""

    def windowed_border(self, realize: s_tir.SBlockRealize, guard, loops: list, first_reduction: int,
                        test_depth: Optional[int], window: tirx.Buffer):
        """The pixel's window copy and the helper's call on it (raises KeyError for unknown index forms)."""

    def paired_pixel_body(self, pixel_body: tirx.Stmt, realize: s_tir.SBlockRealize, loops: list,
                          first_reduction: int, pixel: tirx.Var):
        """(two interior pixels' statements as one helper call per channel tile, their scratch buffers) or None."""

    def pair_tests(self, pixel: tirx.Var, low: int, pairs: int) -> tuple[tirx.Expr, tirx.Expr]:
        """The tests that select the paired interior pixels of a row."""


@dataclass(frozen=True)
class KernelSchedules:
    """What a backend's schedules give the kernels of one profile's core (`tvm_ext.schedule.kernel_schedule`):
    `output_channel_tile` accumulators of an integer MAC kernel, the tiles a float MAC kernel tries widest
    first (`float_channel_tiles`, () for none: it keeps the integer tile), and the MAC helpers' schedules
    (`mac`, None where the core has none)."""

    output_channel_tile: int
    float_channel_tiles: tuple[int, ...]
    mac: Optional[MacSchedules]
