"""The interface every processor family's backend implements: plain data, no TVM import.

A backend is one folder under `backends/` (`generic_c`, `cortex_m`). It provides
- `Backend` (its `__init__.py`, no TVM): its name, the C helper library its kernels may call
  (`HelperLibrary`: the text `<model>_internal.h` defines them with), its runner (`EmulatedRunner`: what
  writes, builds, runs and measures a profile's self-test on an emulated board, or None: the host) and its
  kernels' speed targets per kernel kind;
- `KernelSchedules` (its `schedules` for the compiler, which may import TVM): for one profile's core, the
  accumulator tiles of MAC kernels and, where the family accelerates MAC kernels with helpers, their
  schedules (`MacSchedules`). `generic_c` is the portable path every other backend must match bit for bit.

A profile names its backend (`target.profile.Profile.backend`); `backends.backend_of` and
`backends.schedules.kernel_schedules_of` give its objects. Nothing outside `backends/` asks which
instruction set a core has: it asks these objects.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Protocol

from backends.code_price import THUMB2_KERNEL_CODE, KernelCode

if TYPE_CHECKING:  # annotations only: this module stays free of TVM, of the emulator and of the packager
    from tvm import s_tir, tirx

    from packager.build_files import BuildConfig
    from packager.kernel_kinds import KernelKind
    from target.profile import Profile


@dataclass(frozen=True)
class HelperLibrary:
    """A backend's hand-written C helpers, defined `static inline` in the bundle's `<model>_internal.h` when a
    kernel calls one: `c_text(prefix)` is their definitions for the bundle `prefix`."""

    name: str
    c_text: Callable[[str], str]
    needs: tuple["HelperLibrary", ...] = ()
    """The libraries whose helpers this one's use: a kernel's call of one of its helpers records them too (a bundle
    defines them before it: the libraries come in their names' order)."""
    roundings: tuple[str, ...] = ()
    """The `packager.fixed_point_c` helpers this one's C calls: a bundle whose kernels call one of its helpers defines
    them (before every library), whether or not a kernel calls them itself."""
    family: Optional[str] = field(kw_only=True)
    """The processor family (its `Backend.name`) whose bundles alone may define this library, or None: portable C
    that any family's bundle may define beside its own. Each family's libraries may define the names another
    family's define, with other contracts (Cortex-M's requantization epilogue and RV32's stand-in for it: each
    family's kernels call `<prefix>_requantize_small_s8`), so `Backend.bundle_helper_libraries` refuses a library
    of another family; a portable library defines no name any other library defines."""


class ForeignHelperLibraryError(RuntimeError):
    """A bundle's kernels recorded a helper library of another processor family than the bundle's backend."""


class EmulatedBuildError(RuntimeError):
    """The self-test ELF did not build for the emulated board; the message ends with the compiler's last lines."""


@dataclass(frozen=True)
class EmulatedRun:
    """One run of a bundle's self-test on an emulated board, as the packager judges and records it.

    `exit_status` is the one the program's exit marker reported (None: it printed none), `ending` says how it
    ended in a few words ("exit status 0", "a HardFault", "a trap"), `stdout` is what it printed before the
    marker, `where` the board's name (the verdict's "on ..."), `instructions` those of one inference (QEMU
    -icount, not cycles; None: not printed); `measurements` the manifest's entry for the run (JSON-ready: the
    target, board, exit status, instructions, code/weights/data/bss bytes, the run call's stack peak; {} for
    a program run without measuring it).
    """

    exit_status: Optional[int]
    ending: str
    stdout: str
    where: str
    instructions: Optional[int]
    measurements: dict[str, Any] = field(default_factory=dict)


class EmulatedRunner(Protocol):
    """What runs a profile's self-test on an emulated board: a backend's `Backend.emulated_runner(profile)`.

    It writes its support files into the bundle's folder OUT (startup code, linker script, the self-test
    ELF's Make and CMake files), gives the lines the bundle's Makefile and CMakeLists.txt add for them,
    builds the self-test ELF (with the bundle's own `BuildConfig`, so that what runs is what ships), runs it
    and measures it. Every text is its own: the packager pastes the lines it gives, never names its files.
    """

    name: str  # the core class the code is compiled for (the profile's name)
    manifest_key: str  # the manifest's key of `EmulatedRun.measurements` (the backend's name)
    build_dir: str  # the folder, relative to OUT/, of the ELF build's objects and ELF: removed once finished
    # (the object of OUT/<stem>.c is build_dir/<stem>.o, with its -fstack-usage file build_dir/<stem>.su)

    @property
    def board_name(self) -> str:
        """The emulated board's name (QEMU's -M argument)."""

    def support_files(self, out_dir: Path, model: str, config: BuildConfig) -> list[Path]:
        """Write the support files into OUT/ for model `model` built as `config` says; return their paths."""

    def build_rule_files(self, model: str, config: BuildConfig) -> dict[str, str]:
        """The support files (path relative to OUT/ -> text) that the bundle's Makefile includes, which the
        compiler writes early, before the others (`tvm_ext.compile.early_objects`)."""

    def makefile_lines(self) -> list[str]:
        """The lines that end the bundle's Makefile: its `qemu-test` target and `check` on it."""

    def cmake_lines(self) -> list[str]:
        """The lines of the bundle's CMakeLists.txt's self-test block (indented), with the `qemu-test` target."""

    def toolchain_file(self) -> Optional[str]:
        """The CMake toolchain file the bundle ships for its compiler, relative to OUT/; None: none."""

    def profiled_model_source(self, model: str) -> Optional[str]:
        """The profiling build's run function's file, relative to OUT/ (`<model>_model.c` with each kernel call
        counted), None when the runner has no profiling build."""

    def build(self, out_dir: Path, jobs: int = 1) -> Path:
        """Build OUT/'s self-test ELF, `jobs` compilers at once; its path. EmulatedBuildError on failure."""

    def run(self, out_dir: Path, model: str, timeout_s: float = 600.0, members: tuple[str, ...] = ()) -> EmulatedRun:
        """Run and measure model `model`'s self-test ELF (built first when `build` has not built it yet); the
        stack peak is that of `<model>_run`, or of a bundle of several models (`members`: `model` is the
        bundle's name) the deepest of its members' run functions'."""

    def run_program(self, elf: Path, timeout_s: float = 600.0) -> EmulatedRun:
        """Run the board program `elf` (built as `build` builds, from other sources) without measuring it;
        RuntimeError when QEMU itself fails or the run times out."""

    def board_sources(self) -> tuple[str, ...]:
        """The files, relative to OUT/, that every program for the board compiles alike whatever the model
        (startup code, console, system calls, instruction counter, the profiling build's per-call report): their
        objects may be kept across bundles (packager.board_objects)."""

    def cross_compile_command(self, config: BuildConfig) -> tuple[str, ...]:
        """The compiler and every flag the ELF build compiles each of its files with, for `config`."""

    def call_profile_output(self, out_dir: Path) -> Optional[str]:
        """What the profiling build printed (emulator.profile.read_call_profile reads an inference's counts from
        it: a bundle of several models has one part per model); None when the runner has no profiling build.
        RuntimeError when that build fails its run."""


@dataclass(frozen=True)
class Backend:
    """One processor family: its `name` (the folder under `backends/`, the profile's `backend`), the C
    helpers its kernels may call (None: none; the library their calls record), `emulated_runner(profile)`: what
    runs the profile's self-test on an emulated board (`EmulatedRunner`), or None when it runs on the host,
    `kind_targets(profile)`: the instructions per unit each kernel kind should take on the profile's core
    (`packager.kernel_kinds`; None: no targets, report.md then marks no call), and `helpers_of(profile)`: the
    library that defines those helpers in a bundle for `profile`, with the same names and contracts and the
    bodies of the profile's core (TFLite Micro's per-target kernel override; None: `helper_library` on every
    core), and `rounding_forms`: the `packager.fixed_point_c` helpers its bundles define in a form of their own
    (a rounding -> its form, one of that module's FORMS: the same C name, contract and results), and
    `weights_block`: whether a one-model bundle stores its weights as the members of one struct, which the run
    function addresses from one base pointer (`packager.weights_block`: for an instruction set that builds each
    array's address in 8 B, as RISC-V's auipc+addi)."""

    name: str
    helper_library: Optional[HelperLibrary]
    emulated_runner: Callable[[Profile], Optional[EmulatedRunner]]
    kind_targets: Callable[[Profile], Optional[Mapping[KernelKind, float]]]
    helpers_of: Optional[Callable[[Profile], HelperLibrary]] = None
    rounding_forms: Mapping[str, str] = field(default_factory=dict, compare=False)
    weights_block: bool = False

    def bundle_helper_libraries(self, profile: Profile, called: tuple[HelperLibrary, ...]
                                ) -> tuple[HelperLibrary, ...]:
        """The libraries a bundle for `profile` defines, given those its kernels' calls recorded (`called`):
        this backend's `helper_library` as `helpers_of(profile)` implements it, any other as it is.
        ForeignHelperLibraryError (our bug: exit 3) where one is of another family (`HelperLibrary.family`): its C
        may define this family's names with other contracts, so the bundle would not build or, worse, would call
        the other contract."""
        foreign = sorted(library.name for library in called if library.family not in (None, self.name))
        if foreign:
            raise ForeignHelperLibraryError(f"a {self.name} bundle's kernels call helpers of another family's "
                                            f"libraries ({', '.join(foreign)}): a schedule of this backend "
                                            f"emitted another family's helper call")
        if self.helpers_of is None:
            return called
        own = self.helpers_of(profile)
        return tuple(own if library == self.helper_library else library for library in called)

    def bundle_roundings(self, called: tuple[str, ...]) -> tuple[str, ...]:
        """The `packager.fixed_point_c` helpers a bundle defines, given those its kernels call (`called`): each in
        this backend's form where `rounding_forms` names one."""
        return tuple(self.rounding_forms.get(rounding, rounding) for rounding in called)


def no_kind_targets(profile: Profile) -> None:
    """The `Backend.kind_targets` of a backend that sets no speed targets for its kernels."""
    return None


class MacSchedules(Protocol):
    """A backend's MAC-helper schedules: the scheduled int8/int16 MAC kernels (CONV_2D, DEPTHWISE_CONV_2D,
    FULLY_CONNECTED, an SVDF's TE extern stage) whose reductions become calls of its C helpers
    (`tvm_ext.schedule.kernel_schedule.inline_intermediates`, `tvm_ext.schedule.border_split`). Each replacement computes exactly
    what it replaces (integer sums, bit-exact); None or False where it does not fit. Optional (read with getattr;
    absent or None: not done): `paired_windows(pixel_body, realize, guard, loops, first_reduction, test_depth,
    pixel, scratch=None)`, two neighbouring pixels of a padded convolution's row, on the border, with their windows
    copied and one two-pixel call per channel tile (`backends.cortex_m.schedules.border_window.paired_windows`);
    `branch_accumulators` (a bool), each branch of a split border its own accumulators
    (`tvm_ext.schedule.border_split`); `collapses_border(image_dtypes, window)` (a frozenset of the image's element
    types, the window's taps per axis, rows first -> bool), whether the backend's later pass makes the border
    rectangles of such a
    depthwise window one helper call (so `border_split` cuts its border into rectangles however many: they do not
    grow the code); `whole_channel_tile` (a bool), an integer reduction of exactly the
    profile's tile of output channels taken as one tile, so it reaches the helpers (else its scalar loop nest);
    `keeps_scalar(sch, block, loops, first_reduce)` (-> bool), whether an integer reduction is not tiled to output
    channels at all and keeps its scalar loop nest (a row shorter than the helpers' group of inputs);
    `flat_elements` (a bool), an elementwise block's loop nest fused into one loop (`tvm_ext.schedule.flat_elements`);
    `windows_without_interior` (a bool), a padded convolution of no interior pixel copies every pixel's window
    (`windowed_border`) rather than keeping its guarded loops (`tvm_ext.schedule.border_split`)."""

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

    def window_buffer(self, loops: list, first_reduction: int, realize: s_tir.SBlockRealize) -> tirx.Buffer:
        """The scratch buffer a border pixel copies its window into (the update block `realize`'s weights may
        ask for a longer one: `KernelSchedules.conv_weight_length`)."""

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

    def epilogue_calls(self, func: tirx.PrimFunc) -> tirx.PrimFunc:
        """The scheduled kernel `func` with its requantization epilogues as helper calls where the core has one."""

    def channel_tiles(self, sch: s_tir.Schedule, block) -> tuple[int, ...]:
        """The output-channel tiles the integer MAC reduction `block` tries, widest first, before the profile's
        `KernelSchedules.output_channel_tile` (() for none of its own). Unlike the profile's tile, which a kernel
        of exactly that many channels keeps untiled, a tile of the core's own may hold all of a kernel's channels."""


@dataclass(frozen=True)
class AddValuesChoice:
    """One int8 ADD's or SUB's choice of the backend's values kernel (`KernelSchedules.int8_add_values`) over the
    generic one, for its price (`KernelSchedules.int8_add_values_pays`): its output `elements`, whether the generic
    kernel would table an operand's rescale there (`generic_tables`: `tvm_ext.kernels.elementwise.TABLED_ELEMENTS`
    elements and more) and the flash bytes the values kernel adds beyond the generic kernel's (`added_bytes`: its
    tables not granted to an earlier layer and its constant terms, less the generic kernel's tables; may be
    negative), as `tvm_ext.transform.int8.binary.values_call` counts them."""

    elements: int
    generic_tables: bool
    added_bytes: int


@dataclass(frozen=True)
class KernelSchedules:
    """What a backend's schedules give the kernels of one profile's core (`tvm_ext.schedule.kernel_schedule`):
    `output_channel_tile` accumulators of an integer MAC kernel, the tiles a float MAC kernel tries widest
    first (`float_channel_tiles`, () for none: it keeps the integer tile), the MAC helpers' schedules
    (`mac`, None where the core has none), and whether the int8 lowering gives FULLY_CONNECTED and CONV_2D
    kernels their weights packed two channels to an int32 word (`paired_weights`: `tvm_ext.kernels.dense.pair_weights`,
    for a core whose helper multiplies an input by both at once; False keeps TFLite's [O, K] int8 weights)."""

    output_channel_tile: int
    float_channel_tiles: tuple[int, ...]
    mac: Optional[MacSchedules]
    paired_weights: bool = False
    padded_pairs_pay: Optional[Callable[[int, int, int, int], bool]] = None
    """Whether the int8 lowering pads a CONV_2D's output channels that `tvm_ext.kernels.dense.PAIRED_TILE` does not
    divide to whole tiles of it with zero weight rows and gives it `paired_weights` too, given its output channels,
    its window's taps and inputs (taps times input channels) and its MACs (more than one output pixel, int8 input
    that the backend's few-channel kernel does not take, the flash budget granting the padded words), instead of
    `dense_unit_tile`'s padding and its unpaired tiles: for a core whose paired MAC takes a padded channel for less
    than the narrower tiles' unpaired one; None: never."""
    helper_min_macs: int = 0
    """The fewest MACs of one inference (the model's, `tvm_ext.transform.int8.graph_macs`) at which a quantized
    model's MAC kernels take `paired_weights`, their tiles and the MAC helpers: below, each is TVM's loop nest with one
    accumulator and no helper (`tvm_ext.layers.PLAIN_MAC_KERNELS_ATTR`), where even one helper's copy costs more code
    than all its MACs save pay at the one price of code. 0: always the helpers (and a model whose MACs
    `graph_macs` does not count)."""
    float_tile_min_macs: int = 0
    """The fewest MACs of one call (the kernel's count, `tvm_ext.plan.macs`) at which a float MAC kernel takes a tile
    of accumulators (`float_channel_tiles`, or the integer tile); below, one accumulator (`tvm_ext.lower`'s
    ScheduleKernels): for a core without an FPU, where each MAC is two library calls and the tile's unrolled calls
    cost more code than the instructions they save pay at the one price of code, and for a Helium core, whose float
    tile inlines its helpers in each kernel. 0: every float MAC kernel takes its tile."""
    stacked_rows: bool = False
    """Whether the int8 lowering gives a FULLY_CONNECTED kernel of one input row its weights stacked two channels to
    an int16 half (`tvm_ext.kernels.dense.stack_rows`) where the weights allow it, for a core whose helper
    multiplies an input pair by both channels' halves at once (the same bytes as TFLite's [O, K])."""
    tiled_rows: bool = False
    """Whether the int8 lowering gives a FULLY_CONNECTED kernel of several int8 input rows its weights in tiles of
    eight channels, input after input (`tvm_ext.kernels.dense.tile_rows`: the same bytes as TFLite's [O, K]), and a
    CONV_2D whose output channels are padded to whole tiles of eight its OHWI weights so (each window one row), for a
    core whose tile MAC then reads each input's eight weights at constant offsets, with no channel stride
    (`backends.riscv.schedules.mac.tiled_mac_replacement`)."""
    tiled_convs_pay: Optional[Callable[[tuple[tuple[int, int], ...]], frozenset[int]]] = None
    """Which of a model's CONV_2D kernels `tiled_rows` takes (those whose output channels are padded to whole tiles of
    eight), given each one's (window inputs, channel tiles' calls per inference: output pixels times tiles of eight)
    in order: the indices where the core's tiled MAC saves what its calls and its one copy cost; None: every one."""
    max_pool_runs: bool = False
    """Whether the int8 lowering writes int8 MAX_POOL_2D as runs over a pixel's channels
    (`tvm_ext.kernels.copy_runs.max_pool2d_runs`), for a core whose helpers take a run's maximum a word at a time."""
    conv_weight_length: Optional[Callable[[int, int, int, bool], int]] = None
    """The length (elements) each output channel's int8 CONV_2D weights take, given the window (KH, KW, input
    channels) and whether the convolution pads its input: more than KH * KW * I where the core's MAC helper runs a
    copied window of that many elements without a scalar tail (the int8 lowering pads each channel's OHWI weights
    with zeros to it, `tvm_ext.transform.int8.conv`; the schedule then reads the padding from the weights' shape).
    None: never padded."""
    pad_runs: bool = False
    """Whether the int8 lowering writes PAD and TRANSPOSE as runs (`tvm_ext.kernels.copy_runs.pad_runs`: the input's
    rows copied whole, the padding filled; `transpose_runs`: the trailing axes kept in place copied whole), for a core
    whose helper copies a run a word at a time."""
    word_runs: bool = False
    """Whether a CONCATENATION's kernel copies a run of 3 bytes more than whole words with one byte more, which the
    copies after it overwrite (`tvm_ext.kernels.copy_runs.concatenate_runs`), for a core whose copy helper moves an
    unaligned word in one load and one store (a pixel of 3 channels one word, not a halfword and a byte)."""
    kernel_code: KernelCode = THUMB2_KERNEL_CODE
    """The core's estimate of a kernel's code from its TIR, for the price of kernels shared across their constants
    (`tvm_ext.transform.share_constant_variants.kernel_bytes`)."""
    int8_add: Optional[Callable[..., Any]] = None
    """The core's own kernel of int8 ADD (operands and keywords as `tvm_ext.kernels.add_int8`'s), which the int8
    lowering writes for an ADD of two computed operands, or None: the generic kernel. It returns a TE tensor, or
    None where it does not fit that ADD (the generic kernel then)."""
    int8_add_pays: Optional[Callable[[Sequence[Any]], bool]] = None
    """Whether `int8_add` pays in a model, given each of its int8 ADDs of two computed operands of one shape (they
    share the kernel's out-of-line helpers) as a `tvm_ext.transform.int8.add.ComputedAdd` (`computed_adds`: output
    elements, whether both operands are elementwise kernels' results, with which a generic ADD fuses, TFLite's
    multipliers and rounding, so the price counts only the ADDs `int8_add` takes): where not, every ADD of the model
    takes the generic kernel; None: `int8_add` wherever it fits."""
    int8_add_values: Optional[Callable[..., Any]] = None
    """The core's own kernel of int8 ADD and SUB of two computed operands of one shape from their rescaled values,
    doubled, tabled at compile time or an exact shift (`tvm_ext.transform.int8.binary.values_call`: operands lhs, rhs
    and the tabled ones' int32[256] tables; keywords multiplier, right, bias (`tvm_ext.kernels.elementwise.
    add_from_values`), lhs_scale, rhs_scale and activation), which the int8 lowering writes where the output stage
    fits and the flash holds the tables (it returns a TE tensor), or None: the generic kernel."""
    int8_add_values_pays: Optional[Callable[[AddValuesChoice], bool]] = None
    """Whether `int8_add_values` pays for one ADD or SUB, given its `AddValuesChoice`
    (output elements, whether the generic kernel tables an operand there, the flash bytes the kernel's tables and
    constant terms add beyond the generic kernel's tables): where not, that layer takes the generic kernel; None:
    `int8_add_values` wherever it fits."""
    int8_add_values_first: Optional[Callable[[Sequence[Any]], bool]] = None
    """Whether the int8 lowering tries `int8_add_values` before `int8_add` on the ADDs of two computed operands of
    one shape (both apply there) in a model, given each such ADD as `int8_add_pays` takes them: a core whose kernel
    from values tabled at compile time may take less code than its own ADD, priced per model (Helium's:
    `backends.cortex_m.schedules.helium_add_values.values_first_pays`); `int8_add` where the flash does not grant the
    tables. None: `int8_add` first."""
    dense_unit_tile: int = 0
    """The channel tile (a multiple of `output_channel_tile`) to which the int8 lowering pads a FULLY_CONNECTED's
    or a CONV_2D's (int8 or 16x8) output channels with zero weight rows where it does not divide them, for a core whose MAC helper
    computes whole tiles (`tvm_ext.kernels.dense.fully_connected_int8`'s and `tvm_ext.kernels.conv.conv2d_int8`'s
    `units`; `tvm_ext.transform.int8.conv` says which convolutions); 0: never padded."""
    one_pixel_rows_pay: Optional[Callable[[int, int, tuple[tuple[int, int], ...]], bool]] = None
    """Whether the int8 lowering writes a CONV_2D whose 1x1 window reads its whole one-pixel input as a one-row
    FULLY_CONNECTED of `stacked_rows` weights (the same sums), given the row's length (input channels), the output
    channels (whole tiles of four: the stacked rows' tiles) and (row's length, output channels) of every such
    convolution of the model, in order (they share the helper): where the core's stacked rows save over its
    convolution tiles what their helper's code costs; None: never."""
    widened_rows_pay: Optional[Callable[[int, bool], bool]] = None
    """Whether the int8 lowering gives a FULLY_CONNECTED kernel of one input row its weights widened to int16
    (`tvm_ext.kernels.dense.widen_rows`, twice the bytes: the model's granted by the flash budget) instead of
    `stacked_rows`, given the MACs of every such layer of the model (they share the helpers) and whether some stacked
    rows stay beside them: where the core's widened-rows MAC saves over the stacked one what its helpers' code
    costs; None: never."""
    one_row_padding_pays: Optional[Callable[[int, int, int, int], bool]] = None
    """Whether the int8 lowering pads the output channels of a MAC layer of one output row (a CONV_2D of one output
    pixel, a FULLY_CONNECTED of one int8 row, whatever its channels) to `dense_unit_tile` too, given each channel's MACs
    (window taps times input channels, a row's inputs), its output channels, their padded count and the calls of its
    kernel per inference (the model's layers of its shape): where the instructions the core's MAC helper saves over
    the scalar loop nest pay the padded kernel's larger code (the loop runs once a call); None: such a layer is never
    padded."""
    int8_softmax: Optional[Callable[..., Any]] = None
    """The core's own kernel of int8 SOFTMAX over the last axis (operands and keywords as
    `tvm_ext.kernels.softmax_int8`'s), which the int8 lowering writes where it gives one (a TE tensor; None where it
    does not fit that SOFTMAX: the generic kernel then), or None: the generic kernel."""
    int8_batch_matmul: Optional[Callable[..., Any]] = None
    """The core's own kernel of int8 BATCH_MATMUL (operands and keywords as `tvm_ext.kernels.batch_matmul_int8`'s),
    which the int8 lowering writes where it gives one (a TE tensor; None where it does not fit that product: the
    generic kernel then), or None: the generic kernel."""
    int8_window_sums: Optional[tuple[str, str, str, str, str, str, str]] = None
    """The core's word ops of int8 window sums (`tvm_ext.kernels.window_sums.WordOps`: a word load, two 16-bit
    pair additions, the pairs' store as int16 in channel order and as the averages of 2^shift taps, a half's
    rescaling where it lies, registered helper calls), with which the int8 lowering writes AVERAGE_POOL_2D, MEAN and SUM as
    sums four channels a word where they fit (the generic kernels elsewhere), or None: the generic kernels."""
    few_channel_conv: Optional[Callable[..., Any]] = None
    """The core's own kernel of an int8 CONV_2D whose window reads few input channels (an RGB stem; a
    DEPTHWISE_CONV_2D of one input channel too: operands and keywords as `tvm_ext.kernels.conv2d_int8`'s), which the
    int8 lowering writes where it gives one (a TE tensor; None where it does not fit that convolution, such as one
    of more input channels than the core's rule takes: the generic kernel then), or None: the generic kernel."""
    few_channel_depthwise: Optional[Callable[..., Any]] = None
    """The core's own kernel of an int8 DEPTHWISE_CONV_2D whose channels are not whole tiles of four (operands and
    keywords as `tvm_ext.kernels.depthwise_conv2d_int8`'s), which the int8 lowering writes where it gives one (a TE
    tensor; None where it does not fit that layer: the generic kernel then), or None: the generic kernel."""
    depthwise_pixel_tiles: Optional[Callable[..., bool]] = None
    """Whether `few_channel_depthwise`, where a layer's operands fit it, takes it with the tiles that read its even
    channel count's weights widened to int16: (input (H, W, C), window (KH, KW), strides, padding (top, left,
    bottom, right), dilation, a channel's stored bias bytes) -> bool, the kernel's own choice
    (`backends.cortex_m.schedules.depthwise_runs.pixel_tiles_take`); None: never (such weights stay int8)."""
    depthwise_rows_take: Optional[Callable[..., bool]] = None
    """Whether `few_channel_depthwise`, where a layer's operands fit it, takes it with a kernel that reads its
    weights as they are (int8), so that the lowering keeps them int8 where it would widen whole tiles of four
    channels for the DSP depthwise tiles: arguments as `depthwise_pixel_tiles`'s, the kernel's own choice
    (`backends.cortex_m.schedules.depthwise_rows.rows_take`); None: never."""
    qlinear_conv: Optional[Callable[..., Any]] = None
    """The core's own kernel of onnxruntime's QLinearConv of one NCHW int8 image by int8 weights of zero point 0
    (`backends.cortex_m.schedules.helium_qlinear.helium_qlinear_conv`: x, w, bias, multiplier and its keywords),
    which the int8 lowering writes for such a QLinearConv with constant scales whose multipliers
    `qlinear_conv_fits` accepts, or None: the generic kernel (`tvm_ext.kernels.onnx_qlinear.qlinear_conv2d`)."""
    qlinear_conv_fits: Optional[Callable[[Any, bool, int], bool]] = None
    """Whether `qlinear_conv` takes a QLinearConv of these float32 multipliers (a numpy array, one per output channel),
    pointwise or not (1x1, stride 1, unpadded, one group) and of output rows this wide (pixels)."""
    qlinear_channels_last: bool = False
    """Whether the generic QLinearConv kernel reads an NHWC copy of its input where the copy pays
    (`tvm_ext.transform.qlinear_channels_last`): on cores whose MAC helpers load four int8 channels a word (the DSP
    cores without MVE); a scalar core's (rv32imc: tv_mnasnet_a020_56x40 -0.4 % instructions for 5.7 KB more code)
    does not pay its code."""
    qlinear_unrolled_taps: int = 0
    """The most window taps of a depthwise QLinearConv over an unpadded input (the padded copy before it) whose generic
    kernel sums its window as one expression of its taps instead of a reduction over the window's rows and columns
    (`tvm_ext.kernels.onnx_qlinear.sums_taps_unrolled`); 0: never. A core where it pays its code and keeps the code
    rule (a RISC-V bundle no larger than cortex-m4f's) sets it."""
    widened_depthwise_taps: int = 0
    """The most window taps of an int8 DEPTHWISE_CONV_2D (int8 data, depth multiplier 1, channels a multiple of 4)
    whose weights the int8 lowering widens to int16 (`tvm_ext.transform.int8.conv`), for a core whose depthwise
    helpers then read a tap's weights without widening them (twice the weights' bytes); 0: never widened."""
    channel_requantization: bool = False
    """Whether the int8 lowering gives an int8 CONV_2D's and DEPTHWISE_CONV_2D's requantization one multiplier and shift
    per output channel (constant arrays, 5 B a channel) even where every channel's are the same (per-tensor weights),
    for a core whose fast convolution helpers requantize from per-channel constants only
    (`tvm_ext.transform.int8.conv`); False: per-tensor requantization stays immediates in the kernel."""
    widened_16x8_weights: bool = False
    """Whether the int8 lowering widens a 16x8 CONV_2D's or FULLY_CONNECTED's int8 weights to int16 where its sums stay
    within int32 and the flash holds them (`tvm_ext.transform.int8.mac.widened_16x8`), for a core whose dual MAC then
    multiplies a word of int16 inputs by a word of weights as they are (twice the weights' bytes); False: never."""
    interleaved_gate_weights: bool = False
    """Whether the int8 lowering gives a recurrent cell's gate products (an LSTM's gates, an SVDF's feature product)
    their weights interleaved per tile of four units, padded to whole tiles and groups of four
    (`tvm_ext.kernels.extern_mac.interleave_weights`), for a core whose helper reads them so; False keeps TFLite's
    [unit, input] rows."""
    whole_gate_rows: bool = False
    """Whether the int8 lowering writes a recurrent cell's product (each LSTM gate's, an SVDF's feature product) that
    takes no interleaved weights as one block over all of its units in TFLite's [unit, input] rows, the units padded to
    whole tiles of four by zero rows (`tvm_ext.kernels.extern_mac.accumulate_rows`, `rows_padded`), for a core whose
    helper computes every tile in one call (Helium's rows MAC); False: a loop over tiles of four units, each tile's
    product its own block."""
    gate_loop_bytes: int = 0
    """The code of one LSTM gate's loop on this core (its products' calls and its units' requantizations and
    activation, bytes), which each gate rolled into one loop with others of its form saves where that pays at the
    price of code (`tvm_ext.kernels.lstm.rolls_gates`, `gate_groups`); 0: each gate keeps its own loop."""
    svdf_unit_rows: tuple[str, ...] = ()
    """The SVDF state types ("int8", "int16") whose time product and requantization the int8 lowering writes as one TE
    extern stage, unit after unit (`tvm_ext.kernels.svdf.svdf_output_rows`: each unit's rank filters' time weights in
    one row, its sum kept in one accumulator), for a core whose helper computes a row's dot product there; any other
    state: the TE compute (`svdf_output`), tiled by the schedules."""
    svdf_unit_rows_max_macs: Optional[int] = None
    """The most time-product MACs of one call (filters x memory x batch) at which an SVDF takes the unit rows
    (`svdf_unit_rows`), for a core where they save code but not instructions (no row helper: their scalar row loop
    against the tiled TE compute); None: at any size."""
    widened_gate_weights: bool = False
    """Whether a recurrent cell's interleaved weights (`interleaved_gate_weights`: an LSTM's gates', an SVDF's
    feature weights) are widened to int16 at compile time where the flash holds the extra byte per weight
    (`tvm_ext.transform.int8.lowering.widen_gate_weights`), for a core whose interleaved MAC then reads them without
    widening them in its loop; so are an int8 SVDF's time weights in unit rows (`svdf_unit_rows`) of whole groups of
    four, in SXTB16's lane order (`tvm_ext.kernels.extern_mac.lane_order`), for its row dot product."""
    scratch_free_form: Optional[Callable[[Any], Optional["ScratchFreeForm"]]] = None
    """A scheduled kernel's (PrimFunc's) form with less scratch (`ScratchFreeForm`), or None where it has none; the
    compile takes it for the kernels whose scratch makes the planned arena larger (`tvm_ext.compile.scratch_forms`).
    None: every kernel keeps its scratch."""
    bundle_choice: Optional[Callable[[Mapping[str, Any], Mapping[str, int]], Optional["BundleChoice"]]] = None
    """The choices made for the whole bundle from its kernels (name -> PrimFunc, scheduled with `mac`) and their
    calls per inference (name -> calls): the kernels to schedule again and the MAC schedules that carry their
    choices (`BundleChoice`), or None where nothing changes (`tvm_ext.lower.ScheduleKernels`). None: every
    kernel's schedule is its own."""


@dataclass(frozen=True)
class BundleChoice:
    """Choices a backend made from the facts of a whole bundle (`KernelSchedules.bundle_choice`): per kernel
    (PrimFunc name) whose schedule they change, the MAC schedules that carry its choices as data (e.g. which
    helper forms it calls one out-of-line copy of, shared with other kernels)."""

    kernels: Mapping[str, Any]


@dataclass(frozen=True)
class ScratchFreeForm:
    """A kernel's form without (some of) its scratch (`KernelSchedules.scratch_free_form`): the PrimFunc (`func`),
    the (dtype, bytes) of each scratch buffer it no longer has (`freed`), and an estimate of the instructions it
    adds per multiply-accumulate of the kernel (`extra_per_mac`)."""

    func: Any
    freed: tuple[tuple[str, int], ...]
    extra_per_mac: float
