"""On Helium cores, the bundle's choice of the kernels that call the fused channel tiles' one out-of-line copy
instead of inlining them.

``conv_tiles`` makes each pixel's loop over its channel tiles one call of ``<prefix>_conv_tiles_s8`` (``_b16``),
inlined (``always_inline``: the window's sizes constants, the dual MAC's row loop and tail resolved at compile
time). Every kernel then holds its own copy of the tiles: 226-388 B measured per kernel, where a DSP core's kernels
call one shared helper (cortex-m4f's ``pair_tiles_any``), so a model of many small 1x1 layers had more code on
cortex-m55 than on cortex-m4f (densenet_bc_32 14,480 B against 12,144). The bundle's one out-of-line copy,
``<prefix>_conv_tiles_shared_s8`` (``_b16``; ``helium_conv_tiles.h.in``: the same contract, its sizes read at run
time), already served the calls ``common_tails`` merges. ``shared_conv_tiles`` gives it the kernels whose inlined
code weighs more than the copy's calls cost (``ConvTilesUse.gain``: INLINED_BYTES at the schedules' one price of
code, ``code_price.INSTRUCTIONS_PER_BYTE``, less ``extra_instructions``), the best-paying first, the prefix whose
gains most exceed the copy's own COPY_BYTES; the others keep the helper inlined. Only kernels whose calls all have
one window but for their channels (``ConvTilesUse.row_window``: the same sizes) share a copy, and none joins a copy the bundle
holds already: gcc specializes the copy on the sizes all its callers pass (a constant row length: the dual MAC's
row loop resolved; it can because the copy is static in the bundle's internal header and every caller is in the
one kernels translation unit: a build splitting the kernels over several files would lose it), and callers of different sizes make it generic, its row loop shuffling registers at every
vector. Measured on cortex-m55, densenet_bc_32's fourteen 1x1 kernels of several row lengths calling the copy its
3x3 kernels' merged calls held: every caller slower, 21,178,165 -> 22,543,045 instructions (the 1x1 kernels some
100 instructions a tile more, the 3x3 ones 14 %), for 772 B less code. Made per form (bias type, with or without
a lookup table; one copy each) from every kernel scheduled first with the helper inlined (``conv_tiles_uses``), and
passed back into their schedules (``HeliumMacSchedules.conv_tiles``, ``helium_bundle_choice``). The same sums in the same order either way:
bit-exact.

Where the bundle's border pixels call the table form's copy (``outlined_borders``: generic over their windows),
``generic_conv_tiles`` lets every kernel of that form call it or its generic twin (kept from gcc's interprocedural
passes) where that pays by itself (``generic_gain``): inlined over several rows that end in a predicated vector, the
tiles spill, and the copy runs them faster (cortex-m55 yolo_tiny_64x96_w9 8,732,606 -> 6,977,265 instructions, code
9,384 -> 6,572 B, cortex-m4f's 8,412).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from tvm import tirx

from backends.code_price import INSTRUCTIONS_PER_BYTE, code_gain
from backends.cortex_m.schedules.conv_tiles import (_CHANNELS, _ROW_LEN, _ROWS, _X_ROW_STRIDE, HELIUM_SHARED_TILES_OPS,
                                                    HELIUM_TILES_OPS, TILE, op_executions)

LANES = 16
"""The int8 lanes of one vector of the dual MAC's row loop."""
INLINED_BYTES = 280
"""A kernel's code more with the fused tiles inlined than with its call of the copy (bytes), about the typical
measured on cortex-m55 (arm-none-eabi-gcc 12.2 -O2, nm; most 278-298): vit3h_28's 1x60 fully connected kernels
354 / 66 (int16 biases), ds_cnn_w30_49x10's 30 -> 12 head 312 / 32, yolo_tiny_64_odd's 1x1 kernels 396 / 98 and
332 / 100, tcn_61x20_c36's 1x3 ones 368 / 90 to 558 / 154; the least vit3h_28's 4x4 stride-4 stem 372 / 146."""
COPY_BYTES = 400
"""The copy's own code (bytes, once per bundle and bias type), about the most measured likewise: 286-406 B with
int32 biases, 328-346 B with int16 ones."""
CALL_INSTRUCTIONS = 40
"""Instructions more per call of the copy than inlined (its arguments, its sizes' tests at run time)."""
VECTOR_INSTRUCTIONS = 3
"""Instructions more per vector of a tile's window in the copy specialized on its callers' one window (its row
loop's counter and branch). With CALL_INSTRUCTIONS, about the most measured per pixel on cortex-m55, every kernel
inlining / calling the copy: vit3h_28's 49-row fully connected kernels of 60 inputs (4 vectors a tile), 60 channels
64,808 / 72,591, 100 channels 107,488 / 120,122, of 240 inputs (15 vectors) and 60 channels 85,438 / 116,203,
its 4x4x3 stem 86,136 / 93,968; yolo_tiny_64_odd's 8x8 1x1 kernel of 36 inputs and 12 channels 15,987 / 20,343,
its 4x4 one of 72 inputs 4,627 / 5,750; tcn_61x20_c36's 1x3 kernels 60,470 / 60,537 to 110,092 / 108,890 (faster
out of line)."""

GENERIC_TILE_INSTRUCTIONS = 50
"""Instructions more per tile of four channels of a pixel in a copy generic over its callers' windows (its sizes
read at run time, kept from gcc's interprocedural passes: ``helium_conv_tiles.h.in``) than inlined, about the most
measured on cortex-m55 where the inlined tiles do not spill (``ConvTilesUse.spills_inlined``): densenet_bc_k8_l6_32's
1x1 kernels of 8 tiles 52 (32x32x32 over 64 inputs 360,482 -> 790,557 instructions), its 3x3 32x32x16 over 16
inputs 46 (314,016 -> 503,647); yolo_tiny_80's 3x3 LEAKY_RELU kernels over rows of 120 and 240 inputs 15 and 29
(10x10x80 693,401 -> 724,109, 5x5x160 515,925 -> 545,392)."""


@dataclass(frozen=True)
class ConvTilesUse:
    """A kernel's use of the fused tiles (one inlined call, scheduled first)."""

    kernel: str
    """The kernel's (PrimFunc's) name."""
    calls: int
    """Its calls per inference."""
    pixels: int
    """The fused call's executions per call of the kernel (the loops around it)."""
    tiles: int
    """Channel tiles of four per pixel."""
    vectors: int
    """Vectors of LANES a tile's window reads (each row's, the last one's predicated)."""
    window: tuple[int, ...] = ()
    """The call's sizes (input row stride, 0 for one row: never read; weights' channel stride, rows, row length,
    channels): kernels share a copy only where these agree but for the channels (`row_window`)."""

    @property
    def row_window(self) -> tuple[int, ...]:
        """The window's sizes but its channels: what gcc specializes the copy's row loop on where its callers
        agree. The channels only count the copy's tiles, read at run time for no measured cost: cortex-m55
        vit2h_d30_b1_24x16_tanh_int8's 30 -> 54 fully connected kernel calling the copy of its four 30 -> 30
        ones, 516,789 -> 516,713 instructions for 244 B less code."""
        return self.window[:-1]

    @property
    def rows(self) -> int:
        """The rows of the call's window (1 where its sizes are not known)."""
        return self.window[_ROWS - _X_ROW_STRIDE] if self.window else 1

    @property
    def spills_inlined(self) -> bool:
        """Whether the tiles inlined with this window run slower than the generic copy: a window of several rows,
        each ending in a predicated vector (its length not a whole number of half vectors: the dual MAC's tail
        neither none nor its eight unpredicated lanes), where gcc keeps the row loop's pointers, the four
        accumulators and the predicate in no register allocation, moving them at every vector. Measured on
        cortex-m55, every such kernel faster calling the copy (yolo_tiny_64x96_w9's 3x3 LEAKY_RELU kernels over
        rows of 27 to 273 inputs: 8x12x61 over 273 1,816,676 -> 1,063,372 instructions, 16x24x37 over 57 1,503,232
        -> 1,058,524; resnet18_w9_64's 3x3 over 27, 54 and 108 but one: 16x16x9 235,586 -> 200,770, its 4x4x36
        over 108 44,356 -> 51,490)."""
        return self.rows > 1 and self.window[_ROW_LEN - _X_ROW_STRIDE] % (LANES // 2) != 0

    def extra_instructions(self) -> int:
        """The instructions per inference the kernel's calls of the copy would add (CALL_INSTRUCTIONS a pixel,
        VECTOR_INSTRUCTIONS per vector of each tile)."""
        return self.calls * self.pixels * (CALL_INSTRUCTIONS + VECTOR_INSTRUCTIONS * self.tiles * self.vectors)

    def gain(self, instructions_per_byte: int = INSTRUCTIONS_PER_BYTE) -> int:
        """What calling the copy instead of inlining saves, in instructions per inference: INLINED_BYTES at
        ``instructions_per_byte`` each, less ``extra_instructions``."""
        return code_gain(INLINED_BYTES, self.extra_instructions(), instructions_per_byte)


SPILL_VECTOR_INSTRUCTIONS = 10
"""Instructions more per vector of a tile's window where the inlined tiles spill (``ConvTilesUse.spills_inlined``:
gcc moving the row loop's pointers, the accumulators and the predicate at every vector) than in the copy generic over
its callers' windows, about the least measured on cortex-m55 (inlined / calling the generic copy, per pixel's tile,
GENERIC_TILE_INSTRUCTIONS added back): yolo_tiny_64x96_w9's 8x12x61 kernel over 3 rows of 273 inputs (54 vectors a
tile) 1,816,676 / 1,063,372, 10 a vector; its 16x24x37 over 3 rows of 57 (12 vectors) 1,503,232 / 1,058,524, 14;
resnet18_w9_64's 16x16x9 over 3 rows of 27 (6 vectors) 235,586 / 200,770, 16. Its 4x4x36 over 3 rows of 108 ran
slower in the copy (44,356 / 51,490: 50 a tile, as a window that does not spill)."""


def generic_tile_instructions(use: ConvTilesUse, spilling: bool = False) -> int:
    """Instructions more per tile of four channels of a pixel in the copy generic over its callers' windows than
    inlined: GENERIC_TILE_INSTRUCTIONS, less SPILL_VECTOR_INSTRUCTIONS per vector of the tile's window where the
    inlined tiles spill (``ConvTilesUse.spills_inlined``) or, with ``spilling``, where the kernel's other calls do
    (its border pixels' copied window of one row, in a kernel whose interior spills: every call of such a kernel
    runs in the generic copy): negative where the copy runs faster, by as much as the window is larger."""
    spills = use.spills_inlined or spilling
    return GENERIC_TILE_INSTRUCTIONS - (SPILL_VECTOR_INSTRUCTIONS * use.vectors if spills else 0)


def generic_gain(use: ConvTilesUse, instructions_per_byte: int = INSTRUCTIONS_PER_BYTE, spilling: bool = False) -> int:
    """What calling a copy generic over its callers' windows saves instead of inlining, in instructions per
    inference: INLINED_BYTES at ``instructions_per_byte`` each, less ``generic_tile_instructions`` per tile of each
    pixel of each call (review F2: a spilling kernel's copy had been priced free whatever the kernel's size; now its
    price scales with its pixels, tiles and vectors: yolo_tiny_64x96_w9's 32x48x19 kernel over 27 inputs, every call
    of the generic copy, 1,911,139 -> 1,775,126 instructions on cortex-m55)."""
    per_tile = generic_tile_instructions(use, spilling)
    return code_gain(INLINED_BYTES, use.calls * use.pixels * use.tiles * per_tile, instructions_per_byte)


def conv_tiles_uses(kernels: Mapping[str, tirx.PrimFunc], calls: Mapping[str, int]
                    ) -> tuple[dict[str, tuple[ConvTilesUse, ...]], frozenset[str]]:
    """Per form (bias type, with or without a table: ``conv_tiles.HELIUM_TILES_OPS``' keys), the kernels of
    ``kernels`` (name -> PrimFunc, scheduled with the fused tiles inlined) that call the inlined tiles with constant
    sizes (their calls per inference, ``calls``: name -> calls, a kernel not in it counting once); and the forms whose
    copy the bundle holds already (a kernel calls it)."""
    bias_of = {op: bias for bias, op in HELIUM_TILES_OPS.items()}
    shared_bias_of = {op: bias for bias, op in HELIUM_SHARED_TILES_OPS.items()}
    uses: dict[str, list[ConvTilesUse]] = {}
    present: set[str] = set()
    for name, func in kernels.items():
        for call, pixels in op_executions(func.body, set(bias_of) | set(shared_bias_of)):
            if call.op.name in shared_bias_of:
                present.add(shared_bias_of[call.op.name])
                continue
            sizes = call.args[_X_ROW_STRIDE:_CHANNELS + 1]  # a table form's table after them
            if not all(isinstance(size, tirx.IntImm) for size in sizes):
                continue
            window = tuple(int(size) for size in sizes)
            rows, row_len, channels = (window[index - _X_ROW_STRIDE] for index in (_ROWS, _ROW_LEN, _CHANNELS))
            window = (0, *window[1:]) if rows == 1 else window  # one row: its input's row stride never read
            use = ConvTilesUse(name, calls.get(name, 1), pixels, -(-channels // TILE), rows * -(-row_len // LANES),
                               window)
            uses.setdefault(bias_of[call.op.name], []).append(use)
    return {bias: tuple(found) for bias, found in uses.items()}, frozenset(present)


def shared_conv_tiles(uses: Mapping[str, tuple[ConvTilesUse, ...]], present: frozenset[str] = frozenset(),
                      instructions_per_byte: int = INSTRUCTIONS_PER_BYTE) -> frozenset[str]:
    """The kernels that call the copy, from the bundle's ``uses`` (``conv_tiles_uses``) per bias type, none where
    the bias type is in ``present`` (the bundle holds that copy already, specialized on its callers' sizes): among
    the kernels whose every call has one bias type and one window but for its channels (``ConvTilesUse.row_window``),
    per such window, each
    kernel's gain (``ConvTilesUse.gain``, summed over its calls), the kernels sorted by gain, the best-paying first,
    and the prefix whose gains most exceed the copy's COPY_BYTES at ``instructions_per_byte``; the window whose
    prefix pays most calls the copy."""
    keys: dict[str, set[tuple[str, tuple[int, ...]]]] = {}
    for bias, found in uses.items():
        for use in found:
            keys.setdefault(use.kernel, set()).add((bias, use.row_window))
    chosen: set[str] = set()
    for bias in sorted(set(uses) - present):
        groups: dict[tuple[int, ...], dict[str, int]] = {}
        for use in uses[bias]:
            if keys[use.kernel] == {(bias, use.row_window)}:
                gains = groups.setdefault(use.row_window, {})
                gains[use.kernel] = gains.get(use.kernel, 0) + use.gain(instructions_per_byte)
        best, best_kernels = 0, ()
        for window, gains in sorted(groups.items()):
            ranked = sorted(gains, key=lambda kernel: (-gains[kernel], kernel))
            total = -COPY_BYTES * instructions_per_byte
            for count, kernel in enumerate(ranked, 1):
                total += gains[kernel]
                if total > best:
                    best, best_kernels = total, ranked[:count]
        chosen.update(best_kernels)
    return frozenset(chosen)


def generic_conv_tiles(uses: Mapping[str, tuple[ConvTilesUse, ...]], forms: frozenset[str],
                       outlined: frozenset[str] = frozenset(),
                       instructions_per_byte: int = INSTRUCTIONS_PER_BYTE) -> tuple[frozenset[str], frozenset[str]]:
    """Of the forms ``forms`` (whose copy the bundle holds generic over its callers' windows already:
    ``outlined_borders``' table forms, which its border pixels call with one row), from the bundle's ``uses``
    (``conv_tiles_uses``), the kernels whose calls all have one such form and whose inlined tiles weigh more than
    calling a copy costs (``generic_gain``, summed over their calls, a kernel's call of one row spilling with its
    others; a call of one row in a kernel of ``outlined``, whose border pixels call the copy already, neither: that
    call): those whose windows have one row call that
    copy (nothing to pay but their calls: its callers keep agreeing on their one row); those of several rows call the
    form's generic copy (GENERIC_CONV_TILES_LUT_OPS, kept from gcc's interprocedural passes), the best-paying first,
    the prefix whose gains most exceed its COPY_BYTES at ``instructions_per_byte``. Returns (the kernels calling the
    shared copy, those calling the generic one)."""
    forms_of: dict[str, set[str]] = {}
    spilling: set[str] = set()
    for bias, found in uses.items():
        for use in found:
            forms_of.setdefault(use.kernel, set()).add(bias)
            if use.spills_inlined:
                spilling.add(use.kernel)
    shared: set[str] = set()
    generic: set[str] = set()
    for bias in sorted(set(uses) & forms):
        gains: dict[str, int] = {}
        rows: dict[str, int] = {}
        for use in uses[bias]:
            if forms_of[use.kernel] == {bias}:
                if use.rows > 1:
                    gain = generic_gain(use, instructions_per_byte)
                elif use.kernel in outlined:
                    gain = 0
                else:
                    gain = generic_gain(use, instructions_per_byte, use.kernel in spilling)
                gains[use.kernel] = gains.get(use.kernel, 0) + gain
                rows[use.kernel] = max(rows.get(use.kernel, 1), use.rows)
        shared.update(kernel for kernel, gain in gains.items() if gain > 0 and rows[kernel] == 1)
        ranked = sorted((kernel for kernel in gains if rows[kernel] > 1), key=lambda kernel: (-gains[kernel], kernel))
        best, best_count, total = 0, 0, -COPY_BYTES * instructions_per_byte
        for count, kernel in enumerate(ranked, 1):
            total += gains[kernel]
            if total > best:
                best, best_count = total, count
        generic.update(ranked[:best_count])
    return frozenset(shared), frozenset(generic)
