"""On DSP cores, two neighbouring pixel pairs of a short-window convolution as one call of the fused quad-tiles
helper.

After ``pair_tiles`` a convolution's pixel pairs run one call of ``<prefix>_pair_tiles_s8`` each, in a loop over
the pairs: per pair the helper widens both windows once, then per output channel (or pair of channels) sums them
and requantizes both pixels. Over a short window (a 1x1 convolution on 8 or 16 input channels) the per-channel
work beside the MACs dominates: each channel's weights are loaded and widened once per pair, its multiplier and
shift read once per pair, each sum doubled before its rounding high multiply; and the 2x2 pass's pointers and
sums leave gcc too few registers (the eight-input form reloads half the widened inputs from the stack per
channel). ``quad_tiles_calls`` replaces a loop of such calls by a loop of half as many calls of
``<prefix>_quad_tiles_s8`` (``backends.cortex_m.helpers.quad_tiles_c``: two pairs, four pixels, per call; an odd
last pair keeps its pair call), where the window is short enough that the quad pays (``pays_four_pixels``, a cost
model of the two helpers' instructions per channel from the window's groups of four inputs) and its widened inputs'
scratch small enough (QUAD_SCRATCH_WORDS_MAX: the kernel's own buffer, twice the pair's). Its helper widens the four
windows once (doubled), then per channel widens the weights once for four pixels and starts the four sums at twice
the bias (the doubled sums the rounding takes).

A loop qualifies when its body is one fused pair-tiles call of the "double_small" epilogue (``PAIR_TILES_OPS``) of
constant sizes, its windows whole groups of four inputs, its loop of at least two pairs from a constant, and per
iteration only its inputs and outputs move, by two pixels' strides (the four pixels evenly spaced, as a 1x1
convolution's pairs along a row; proved by TVM's integer analysis over the enclosing loops' ranges), the inputs
another buffer than the outputs. An odd count's last quad starts a pair early (that pair's outputs computed twice,
the same values). Each output keeps its sum and rounding: bit-exact.

Measured under QEMU on cortex-m4f (self-tests bit-exact), the helper inlined into each kernel (its sizes constants
there): person_detect's 48x48x8 -> 16 1x1 convolution 856,535 -> 727,758 instructions (2.9 -> 2.5 per MAC),
vww_96_int8's 24x24x16 -> 32 685,104 -> 506,050 (2.3 -> 1.7); whole models vww_96_int8 13,652,645 -> 13,381,679,
efficientnet_lite_w030_112_int8 32,131,239 -> 30,779,977, mobilenet_v2_050_64_int8 15,024,339 -> 14,138,217,
mobilenet_v3s_min_050_80_int8 6,729,553 -> 6,575,451; but code +696, +1,616, +1,844, +1,688 B (about 400 B per
kernel). Out of line, one copy for every kernel, its sizes and bias type are arguments: then its loop state (13
values beside the assembly's 10 registers) goes to the stack and the eight-input layer took 982,006 instructions,
slower than the pair's 856,535. So the quad is the bundle's choice, priced (``quad_kernels``, the DSP cores'
``KernelSchedules.bundle_choice``): each kernel's instructions saved per inference (``quad_uses``: the cost model's
estimate over its loops' pairs and its calls) against its inlined code (QUAD_FIRST_LOOP_BYTES for the bundle's first
loop of quads, QUAD_FURTHER_LOOP_BYTES for each other), taken wherever they pay the schedules' one price of code
(``code_price.INSTRUCTIONS_PER_BYTE``), the best-paying per byte first within the bundle's code budget
(``quad_code_budget``: QUAD_BYTES_PER_KERNEL per kernel), a kernel the budget cannot hold passed over. On cortex-m4f
(main before the first/further pricing -> now): efficientnet_lite_w030_112_int8 31,047,434 -> 30,907,374
instructions (+64 B of code), mobilenet_v2_050_64_int8 14,452,227 -> 14,272,593 (+280 B); vww_96_int8 and
person_detect keep their one loop; pretrainedResnet_quant takes none (priced alone: 16,319,359 instructions for
+492 B, past its code at issue 29's filing); mobilenet_v3s_min_050_80_int8's loops do not pay the first loop together.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Optional

from tvm import s_tir, tirx

from backends.bias_forms import by_bias
from backends.cortex_m.helpers import QUAD_TILES_HELPERS
from backends.cortex_m.helpers.quad_tiles_c import QUAD_PIXELS, quad_scratch_words, quad_tiles_helper_name
from backends.code_price import INSTRUCTIONS_PER_BYTE
from backends.cortex_m.schedules.conv_tiles import LoopOffsets, call_of, executions, pointee
from backends.cortex_m.schedules.pair_tiles import PAIR_TILES_OPS
from tvm_ext.tir.helper_access import Arg, Axis, HelperAccess, PointerAccess
from tvm_ext.tir.helper_calls import register_helper_call
from tvm_ext.tir.tir_walk import map_leaves, vars_read, with_root_loops_replaced

QUAD_TILES_OPS = by_bias("tvm_ext.quad_tiles_s8")
"""The fused quad helper's op per bias type (the pair helper's "double_small" epilogue)."""
_QUAD_OF_PAIR = {PAIR_TILES_OPS[bias]: op for bias, op in QUAD_TILES_OPS.items()}
# quad_tiles_s8(out, x, q, w, bias, multiplier, shift, zero_point, x_row_stride, rows, row_len, x_pixel_stride,
# out_pixel_stride, w_channel_stride, channels) (the pair call's arguments): out[p * out_pixel_stride + c] for p < 4
# and the epilogue's constants `channels` elements; x[p * x_pixel_stride + r * x_row_stride + k]; q the scratch of
# the four windows (2 * rows * row_len words); w `channels` runs of rows * row_len, w_channel_stride apart.
QUAD_TILES_ACCESS = HelperAccess((
    PointerAccess(0, (Axis(QUAD_PIXELS, Arg(12)), Axis(Arg(14), 1))),
    PointerAccess(1, (Axis(QUAD_PIXELS, Arg(11)), Axis(Arg(9), Arg(8)), Axis(Arg(10), 1))),
    PointerAccess(2, (Axis(Arg(9), Arg(10)), Axis(Arg(9), Arg(10)), Axis(2, Arg(10)), Axis(Arg(10), 1))),
    PointerAccess(3, (Axis(Arg(14), Arg(13)), Axis(Arg(9), Arg(10)), Axis(Arg(10), 1))),
    *(PointerAccess(pointer, (Axis(Arg(14), 1),)) for pointer in (4, 5, 6)),
))
for _bias, _op in QUAD_TILES_OPS.items():
    register_helper_call(_op, QUAD_TILES_HELPERS, functools.partial(quad_tiles_helper_name, bias=_bias),
                         QUAD_TILES_ACCESS)

QUAD_SCRATCH_WORDS_MAX = 32
"""The most words of widened inputs a quad call's scratch may take (128 B: a 1x1 convolution on 16 channels, twice
the pair's scratch of it): the kernel's own local array, on its stack (a "local" buffer: past
LOCAL_BUFFER_MAX_BYTES an ordinary one would become an arena scratch and grow the plan), which a longer window's
quads would grow where its pairs' is already large."""


def pair_instructions_per_channel(groups: int) -> float:
    """About what the pair helper spends per output channel and pixel over a window of ``groups`` groups of four
    inputs (cortex-m4f, gcc 12.2 -O2, read from its code): the eight-input form's 42 per channel of two pixels;
    else per pair of channels 14 to start, 67 per four groups in its assembly loop, 17 per group left, 58 to
    requantize four outputs."""
    if groups == 2:
        return 42 / 2
    return (14 + 67 * (groups // 4) + 17 * (groups % 4) + 58) / 4


def quad_instructions_per_channel(groups: int) -> float:
    """About what the quad helper spends per output channel and pixel (read from its code likewise): 15 per group
    (its assembly group, two per loop iteration and 3 per iteration's loop), 43 to start the sums and requantize
    four outputs."""
    return (15 * groups + 3 * (max(groups - 1, 0) // 2) + 43) / QUAD_PIXELS


def pays_four_pixels(rows: int, row_len: int) -> bool:
    """Whether a pair call's window (``rows`` x ``row_len`` inputs) runs faster as quads: whole groups of four
    inputs, a scratch within QUAD_SCRATCH_WORDS_MAX, and the quad's estimate below the pair's."""
    if rows <= 0 or row_len <= 0 or row_len % 4 != 0 or quad_scratch_words(rows, row_len) > QUAD_SCRATCH_WORDS_MAX:
        return False
    groups = rows * row_len // 4
    return quad_instructions_per_channel(groups) < pair_instructions_per_channel(groups)


def _constant_ints(args) -> Optional[list[int]]:
    """``args`` as ints where each is a constant, else None."""
    values = [int(arg) if isinstance(arg, tirx.IntImm) else None for arg in args]
    return None if None in values else values


def quad_tiles_loop(loop: tirx.For, enclosing: tuple, scratch: list, replaced_scratch: list) -> Optional[tirx.Stmt]:
    """The loop of quad calls (and an odd last pair's call) computing what ``loop`` (inside the loops
    ``enclosing``), a loop over pair-tiles calls of the module docstring's form, computes; else None. The quads'
    scratch is the first buffer of ``scratch`` holding enough words, else a new one appended to it; the pair
    call's scratch pointer is appended to ``replaced_scratch``."""
    call = call_of(loop.body, tuple(_QUAD_OF_PAIR))
    if call is None or not isinstance(loop.extent, tirx.IntImm) or not isinstance(loop.min, tirx.IntImm) \
            or int(loop.extent) < 2:
        return None
    out, x, q, w, bias, multiplier, shift, zero_point, *sizes = call.args
    sizes = _constant_ints(sizes)
    if sizes is None:
        return None
    x_row_stride, rows, row_len, x_pixel_stride, out_pixel_stride, w_channel_stride, channels = sizes
    if not pays_four_pixels(rows, row_len):
        return None
    loads = [pointee(arg) for arg in (out, x, w, bias, multiplier, shift)]
    if None in loads or loads[0].source.same_as(loads[1].source):
        return None
    offsets = LoopOffsets((*enclosing, loop))
    var = loop.loop_var
    steps = [offsets.step(load, var) for load in loads]
    if None in steps[:2] or any(step != 0 for step in steps[2:]) or var in vars_read(zero_point):
        return None
    if steps[0] != 2 * out_pixel_stride or steps[1] != 2 * x_pixel_stride or out_pixel_stride < channels:
        return None  # the quad's four pixels are evenly spaced, their outputs apart
    words = quad_scratch_words(rows, row_len)
    buffer = next((held for held in scratch if int(held.shape[0]) >= words), None)
    if buffer is None:  # int32: 4-byte aligned for LDRD
        buffer = tirx.decl_buffer((words,), "int32", name="quad_q15", scope="local")
        scratch.append(buffer)
    replaced_scratch.append(q)
    dtype = str(var.ty.dtype)
    quad = tirx.Var(f"{var.name}_quad", dtype)
    pairs = int(loop.extent)
    # an odd count's last quad starts one pair early: that pair's outputs are computed again, the same values
    first = loop.min + tirx.Min(quad * 2, tirx.const(pairs - 2, dtype)) if pairs % 2 else loop.min + quad * 2

    def at_first(arg):
        return map_leaves(arg, lambda n: first if n.same_as(var) else n)

    args = [at_first(out), at_first(x), buffer.access_ptr("rw"), w, bias, multiplier, shift, zero_point,
            x_row_stride, rows, row_len, x_pixel_stride, out_pixel_stride, w_channel_stride, channels]
    quad_call = tirx.call_intrin("int32", _QUAD_OF_PAIR[call.op.name], *args)
    old = loop.body.block
    block = s_tir.SBlock([], old.reads, old.writes, "quad_tiles", tirx.Evaluate(quad_call))
    return tirx.For(quad, tirx.const(0, dtype), tirx.const((pairs + 1) // 2, dtype), tirx.ForKind.SERIAL,
                    s_tir.SBlockRealize([], True, block))


def quad_tiles_calls(func: tirx.PrimFunc) -> tirx.PrimFunc:
    """``func`` (a scheduled kernel after its pair-tiles calls) with each loop over pair-tiles calls of the module
    docstring's form replaced by its quad calls, the quads' scratch buffers the kernel's own and a pair scratch no
    call reads any more dropped; any other function unchanged."""
    scratch: list = []
    replaced_scratch: list = []
    replaced = with_root_loops_replaced(
        func, functools.partial(quad_tiles_loop, scratch=scratch, replaced_scratch=replaced_scratch), enclosing=True)
    if not scratch:
        return func
    realize = replaced.body
    root = realize.block
    still_read = vars_read(root.body)
    dropped = {var for pointer in replaced_scratch for var in vars_read(pointer)}

    def kept(buffer: tirx.Buffer) -> bool:
        """Whether ``buffer`` is still read, or was no pair scratch a quad replaced."""
        data = vars_read(buffer.data)
        return not any(var.same_as(other) for var in data for other in dropped) \
            or any(var.same_as(other) for var in data for other in still_read)

    block = s_tir.SBlock(root.iter_vars, root.reads, root.writes, root.name_hint, root.body, root.init,
                         [*(buffer for buffer in root.alloc_buffers if kept(buffer)), *scratch], root.match_buffers,
                         root.annotations)
    return replaced.with_body(s_tir.SBlockRealize(realize.iter_values, realize.predicate, block))


QUAD_FIRST_LOOP_BYTES = 500
"""The code a bundle's first loop of quad calls adds (the helper inlined there, its pair call's code gone), bytes:
measured on cortex-m4f (arm-none-eabi-gcc 12.2 -O2, the manifest's bundle_code_bytes against no quads),
pretrainedResnet_quant's one loop (a 1x1 at stride 2, 16 -> 32 channels) +504 B, vww_96_int8's 24x24x16 -> 32 alone
+516 B, person_detect's alone +524 B."""
QUAD_FURTHER_LOOP_BYTES = 340
"""The code each further loop of quad calls adds, bytes: measured likewise, two loops vww_96_int8 and person_detect
+696 B, mobilenet_v2_050_64_int8 +664 B, efficientnet_lite_w030_112_int8 +904 B; every eligible loop
efficientnet's 6 +1,616 B, mobilenet_v2's 7 +1,844 B, mobilenet_v3s_min_050_80_int8's 4 +1,688 B: 180-340 B a
further loop, counted at the most seen."""


@dataclass(frozen=True)
class QuadUse:
    """A kernel's loops of pair calls that would take the quad: what they save and cost."""

    kernel: str
    """The kernel's (PrimFunc's) name."""
    saved: int
    """The instructions per inference the quads save (``quad_saved_instructions`` over its loops, times its calls)."""
    loops: int
    """Its loops of pair calls the quad would replace (each inlines the helper once)."""

    def code_bytes(self) -> int:
        """The code the quads add as further loops, bytes: QUAD_FURTHER_LOOP_BYTES per loop (the bundle's first
        loop's extra is charged by ``quad_kernels``)."""
        return self.loops * QUAD_FURTHER_LOOP_BYTES

    def pays(self, instructions_per_byte: int) -> bool:
        """Whether the instructions saved per byte of code added (``code_bytes``) reach ``instructions_per_byte``."""
        return self.saved >= self.code_bytes() * instructions_per_byte


def quad_saved_instructions(pairs: int, rows: int, row_len: int, channels: int) -> int:
    """The instructions a loop of ``pairs`` pair calls (each over ``channels`` output channels and a window of
    ``rows`` x ``row_len`` inputs) saves as quads (half as many calls, rounded up), by the helpers' cost model
    (``pair_instructions_per_channel``, ``quad_instructions_per_channel``)."""
    groups = rows * row_len // 4
    pair = pairs * 2 * channels * pair_instructions_per_channel(groups)
    quad = -(-pairs // 2) * QUAD_PIXELS * channels * quad_instructions_per_channel(groups)
    return round(pair - quad)


def quad_uses(kernels: Mapping[str, tirx.PrimFunc], calls: Mapping[str, int]) -> tuple[QuadUse, ...]:
    """Per kernel of ``kernels`` (name -> PrimFunc, scheduled with pair calls and no quads) with loops the quad
    takes (``quad_tiles_loop``), what they save per inference (``calls``: name -> calls per inference; a kernel not
    in it counts once) and how many there are; in the kernels' order."""
    uses = []
    for name, func in kernels.items():
        found: list[tuple[tirx.For, tuple]] = []

        def record(loop: tirx.For, enclosing: tuple, found=found) -> Optional[tirx.Stmt]:
            """``loop`` itself (not visited further) where the quad takes it, recorded in ``found``; else None."""
            if quad_tiles_loop(loop, enclosing, [], []) is None:
                return None
            found.append((loop, enclosing))
            return loop

        with_root_loops_replaced(func, record, enclosing=True)
        if not found:
            continue
        saved = 0
        for loop, enclosing in found:
            sizes = _constant_ints(call_of(loop.body, tuple(_QUAD_OF_PAIR)).args[8:])
            _, rows, row_len, _, _, _, channels = sizes
            saved += executions(enclosing) * quad_saved_instructions(int(loop.extent), rows, row_len, channels)
        uses.append(QuadUse(name, saved * calls.get(name, 1), len(found)))
    return tuple(uses)


QUAD_BYTES_PER_KERNEL = 25
"""The most code a bundle's quads may add per kernel of the bundle, bytes: some 5 % of a kernel's code (the shared
and zoo models' bundles on cortex-m4f: 430-660 B per kernel), so a bundle's code stays within a few percent of its
code without quads whatever the price says. Issue 29's rule is that no model's code grows past its code at the
issue's filing; the least room among the models with a paying kernel is pretrainedResnet_quant's (6,388 B without
quads against 6,728 B at filing: 340 B, less than any first loop), and a model of the same kinds brought later has no
more room than its share of the savings since. Priced alone, its one loop (74,487 instructions saved for +492 B)
took the model to 6,880 B."""


def quad_code_budget(kernels: int) -> int:
    """The most code (bytes) the quads of a bundle of ``kernels`` kernels may add (QUAD_BYTES_PER_KERNEL each)."""
    return QUAD_BYTES_PER_KERNEL * kernels


def quad_kernels(uses: tuple[QuadUse, ...], instructions_per_byte: int = INSTRUCTIONS_PER_BYTE,
                 code_budget: Optional[int] = None) -> frozenset[str]:
    """The kernels of ``uses`` that take the quad: each whose instructions saved pay the further loops' code it adds
    at ``instructions_per_byte`` (``QuadUse.pays``), the best-paying per byte first while the code added (the first
    loop's extra, QUAD_FIRST_LOOP_BYTES - QUAD_FURTHER_LOOP_BYTES, and each kernel's further loops) stays within
    ``code_budget`` bytes (None: no bound; a kernel over it is passed over, not the end of the choice), where
    together they also pay the first loop's extra code; none otherwise (no fewer of them pay more)."""
    first_extra = QUAD_FIRST_LOOP_BYTES - QUAD_FURTHER_LOOP_BYTES
    ranked = sorted((use for use in uses if use.pays(instructions_per_byte)),
                    key=lambda use: (-use.saved / use.code_bytes(), use.kernel))
    chosen: list[QuadUse] = []
    spent = first_extra
    for use in ranked:
        if code_budget is not None and spent + use.code_bytes() > code_budget:
            continue
        chosen.append(use)
        spent += use.code_bytes()
    surplus = sum(use.saved - use.code_bytes() * instructions_per_byte for use in chosen)
    if not chosen or surplus < first_extra * instructions_per_byte:
        return frozenset()
    return frozenset(use.kernel for use in chosen)
